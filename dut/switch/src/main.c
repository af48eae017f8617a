/* main.c -- ofswitch: command line, EAL and port setup, worker launch (the agent thread's
 * loop is agent_conn.c).
 *
 * Usage: ofswitch <EAL args> -- --dpid 0x1 --controller tcp:127.0.0.1:6653 [--controller ...]
 *          --port 1=<dpdk port name or id> [--port 2=...] [--workers N]
 *          [--lookup tuple|dtree|trie|simple] [--stats-sock PATH] [--idle-sleep-us N] [--mbufs N]
 *          [--max-flows N] [--echo-interval-ms N] [--fail-mode secure|standalone]
 *          [--cache-lines N] [--ctl-queue-kb N] [--stop-timeout-s N] [--no-pipe-cache]
 *          [--no-pipe-prog]
 *
 * --no-pipe-cache: every frame through every table's lookup (no pipeline cache, pipecache.h;
 * for A/B measurements). --no-pipe-prog: the pipeline cache without its compiled action
 * programs (a hit replays each hop's actions; for A/B measurements).
 *
 * --ctl-queue-kb: a controller connection's output queue limit (default 4096 KiB); a
 * controller that stops reading is dropped when its queue passes it (agent_conn.c).
 *
 * Stopping (issue 37 finding 4): SIGTERM/SIGINT set force_quit, which every thread polls; a
 * watchdog (alarm) armed by the first signal ends the process after --stop-timeout-s
 * (default 10) if the threads have not all stopped by then, with a message naming each
 * thread that did not (the agent, worker N on lcore L, or main's teardown) and exit code 3.
 * Test hook: env OFS_TEST_HANG_ON_STOP=agent makes the agent thread never return once it
 * has left its loop (dut/switch/tests/test_agent_limits.py checks the watchdog with it).
 *
 * --cache-lines: each worker's flow cache, in 64-byte lines (a power of 2, default
 * OFS_CACHE_LINES: 262144, 16 MiB per worker, from the EAL's -m memory; ofswitch.h).
 *
 * A port may be a vhost-user socket driven through librte_vhost directly (vhost_port.h):
 * --port 1=vhost:<socket path>[,client=0|1] (client=1, the default: the guest owns the socket).
 *
 * A port may also be the pcap replay feed (replay_port.h; built when DPDK has net_ring):
 * --port 1=replay:<pcap>[,loops=K][,copy=1] -- frames handed out from memory without copies
 * (or copied, copy=1, for workloads that rewrite headers), for benchmarks whose feed must not
 * be the limit (suites/switch/pipeline.py).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include "ofswitch.h"
#include "agent.h"
#include "flowarena.h"
#include "vhost_port.h"
#ifdef OFB_HAVE_REPLAY
#include "replay_port.h"
#endif



static struct ofs_agent_cfg agent_cfg;
static const char *port_specs[OFS_MAX_PORTS];
static uint32_t port_nums[OFS_MAX_PORTS];
static unsigned n_port_specs;
static unsigned n_mbufs_opt;     /* --mbufs: 0 = sized below */
static uint32_t max_flows_opt;   /* --max-flows: 0 = as many as the EAL memory holds */
static uint32_t cache_lines_opt = OFS_CACHE_LINES;  /* --cache-lines */

/* ---- stopping: every thread reports when it has stopped; a watchdog bounds the wait ---- */
#define OFS_STOP_EXIT 3
static unsigned stop_timeout_s = 10;                        /* --stop-timeout-s */
static volatile sig_atomic_t stop_armed;
static volatile sig_atomic_t agent_stopped;
static volatile sig_atomic_t worker_stopped[OFS_MAX_WORKERS];
static volatile sig_atomic_t teardown_done;

static void on_signal(int sig)
{
	(void)sig;
	ofs_dp.force_quit = true;
	if (!stop_armed && stop_timeout_s) {
		stop_armed = 1;
		alarm(stop_timeout_s);
	}
}

/* async-signal-safe writing of the watchdog's message */
static size_t put_str(char *b, size_t n, const char *s)
{
	while (*s)
		b[n++] = *s++;
	return n;
}
static size_t put_uint(char *b, size_t n, unsigned v)
{
	char d[12];
	int k = 0;
	do d[k++] = (char)('0' + v % 10); while ((v /= 10) && k < 12);
	while (k)
		b[n++] = d[--k];
	return n;
}

static void on_stop_timeout(int sig)
{
	(void)sig;
	char b[1024];
	size_t n = put_str(b, 0, "ofswitch: stop: not stopped ");
	n = put_uint(b, n, stop_timeout_s);
	n = put_str(b, n, " s after the signal:");
	if (!agent_stopped)
		n = put_str(b, n, " the agent thread (ofs-agent)");
	for (unsigned w = 0; w < ofs_dp.n_workers && n < sizeof(b) - 64; w++)
		if (!worker_stopped[w]) {
			n = put_str(b, n, " worker ");
			n = put_uint(b, n, w);
			n = put_str(b, n, " (lcore ");
			n = put_uint(b, n, ofs_dp.workers[w].lcore_id);
			n = put_str(b, n, ")");
		}
	if (agent_stopped && !teardown_done)
		n = put_str(b, n, " main's teardown (ports, EAL)");
	n = put_str(b, n, "; exiting\n");
	ssize_t r = write(2, b, n);
	(void)r;
	_exit(OFS_STOP_EXIT);
}

static void *agent_thread(void *cfg)
{
	void *r = ofs_agent_main(cfg);
	const char *hang = getenv("OFS_TEST_HANG_ON_STOP");
	if (hang && strcmp(hang, "agent") == 0)
		for (;;)
			sleep(1);   /* the test hook of the watchdog: a thread that never stops */
	agent_stopped = 1;
	return r;
}

static int worker_thread(void *arg)
{
	struct ofs_worker *wk = arg;
	int r = ofs_worker_main(wk);
	worker_stopped[wk->idx] = 1;
	return r;
}

static __rte_noreturn void usage(const char *why)
{
	fprintf(stderr, "ofswitch: %s\nusage: ofswitch <EAL args> -- --dpid HEX --controller "
		"tcp:HOST:PORT [--controller ...] --port OFPORT=DEVNAME|ID [...] [--workers N] "
		"[--lookup " OFS_LOOKUP_NAMES "] [--stats-sock PATH] [--idle-sleep-us N] [--mbufs N] "
		"[--max-flows N] [--echo-interval-ms N] [--fail-mode secure|standalone] "
		"[--cache-lines N] [--ctl-queue-kb N] [--stop-timeout-s N] [--no-pipe-cache] [--no-pipe-prog]\n", why);
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"dpid", 1, 0, 'd'}, {"controller", 1, 0, 'c'}, {"port", 1, 0, 'p'},
		{"workers", 1, 0, 'w'}, {"lookup", 1, 0, 'l'}, {"stats-sock", 1, 0, 's'},
		{"idle-sleep-us", 1, 0, 'i'}, {"echo-interval-ms", 1, 0, 'e'},
		{"fail-mode", 1, 0, 'f'}, {"mbufs", 1, 0, 'm'}, {"max-flows", 1, 0, 'M'},
		{"cache-lines", 1, 0, 'C'}, {"ctl-queue-kb", 1, 0, 'Q'},
		{"stop-timeout-s", 1, 0, 'T'}, {"no-pipe-cache", 0, 0, 'P'},
		{"no-pipe-prog", 0, 0, 'G'}, {0, 0, 0, 0}};
	int c;
	ofs_dp.dpid = 1;
	ofs_dp.n_workers = 1;
	/* One default with the profile schema and the launcher (dut/profiles/schema.py
	 * DEFAULT_LOOKUP): the classifier's tuples, where the switch is built with it. */
	ofs_dp.lookup_ops = ofs_lookup_find(OFS_LOOKUP_DEFAULT);
	agent_cfg.echo_interval_ms = 5000;  /* Open vSwitch's inactivity probe default */
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': ofs_dp.dpid = strtoull(optarg, NULL, 0); break;
		case 'c': {
			const char *s = optarg;
			if (agent_cfg.n_ctl == OFS_MAX_CONTROLLERS)
				usage("--controller: at most 4");
			struct ofs_controller_addr *a = &agent_cfg.ctl[agent_cfg.n_ctl++];
			if (strncmp(s, "tcp:", 4) == 0) s += 4;
			const char *colon = strrchr(s, ':');
			if (!colon || colon - s >= (int)sizeof(a->host))
				usage("--controller wants tcp:HOST:PORT");
			memcpy(a->host, s, (size_t)(colon - s));
			a->host[colon - s] = 0;
			a->port = (uint16_t)atoi(colon + 1);
			break;
		}
		case 'p': {
			char *eq = strchr(optarg, '=');
			if (!eq || n_port_specs == OFS_MAX_PORTS)
				usage("--port wants OFPORT=DEV");
			*eq = 0;
			port_nums[n_port_specs] = (uint32_t)atoi(optarg);
			if (port_nums[n_port_specs] < 1 || port_nums[n_port_specs] > 254)
				usage("--port: OpenFlow port numbers are 1..254");
			port_specs[n_port_specs++] = eq + 1;
			break;
		}
		case 'w': ofs_dp.n_workers = (unsigned)atoi(optarg); break;
		case 'l':
			if (!(ofs_dp.lookup_ops = ofs_lookup_find(optarg)))
				usage("--lookup: one of " OFS_LOOKUP_NAMES " (tuple and trie need the "
				      "switch built with dut/classifier)");
			break;
		case 's': agent_cfg.stats_sock = optarg; break;  /* argv lives as long as we do */
		case 'i': ofs_dp.idle_sleep_us = (unsigned)atoi(optarg); break;
		case 'e': agent_cfg.echo_interval_ms = (unsigned)atoi(optarg); break;
		case 'f':
			if (strcmp(optarg, "secure") && strcmp(optarg, "standalone"))
				usage("--fail-mode: 'secure' or 'standalone'");
			agent_cfg.fail_standalone = strcmp(optarg, "standalone") == 0;
			break;
		case 'm': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v < 4096 || v > (1ul << 24))
				usage("--mbufs wants a count in 4096..16777216");
			n_mbufs_opt = (unsigned)v;
			break;
		}
		case 'M': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || !*optarg || v > UINT32_MAX)
				usage("--max-flows wants a count (0: no cap)");
			max_flows_opt = (uint32_t)v;
			break;
		}
		case 'P':
			ofs_dp.pipe_cache_off = true;
			break;
		case 'G':
			ofs_dp.pipe_prog_off = true;
			break;
		case 'C': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || !*optarg || v < OFS_CACHE_LINES_MIN || v > OFS_CACHE_LINES_MAX ||
			    (v & (v - 1)))
				usage("--cache-lines wants a power of 2 in 64..67108864");
			cache_lines_opt = (uint32_t)v;
			break;
		}
		case 'Q': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || !*optarg || v < 64 || v > (1ul << 22))
				usage("--ctl-queue-kb wants KiB in 64..4194304");
			agent_cfg.ctl_queue_bytes = (size_t)v << 10;
			break;
		}
		case 'T': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || !*optarg || v > 3600)
				usage("--stop-timeout-s wants seconds in 0..3600 (0: no watchdog)");
			stop_timeout_s = (unsigned)v;
			break;
		}
		default: usage("unknown option");
		}
	}
	if (ofs_dp.n_workers < 1 || ofs_dp.n_workers > OFS_MAX_WORKERS)
		usage("--workers out of range");
	if (agent_cfg.n_ctl == 0) {  /* the default controller */
		strcpy(agent_cfg.ctl[0].host, "127.0.0.1");
		agent_cfg.ctl[0].port = 6653;
		agent_cfg.n_ctl = 1;
	}
	/* Refuse at start-up a backend that cannot index the switch's key (a classifier whose
	 * algorithm limits the key length), rather than at the first FLOW_MOD. */
	errno = 0;
	void *probe = ofs_dp.lookup_ops->create(ofs_dp.n_workers);
	if (!probe) {
		fprintf(stderr, "ofswitch: --lookup %s: the lookup structure cannot be created for "
			"the switch's %zu-byte flow key (%u workers): %s\n", ofs_dp.lookup_ops->name,
			(size_t)OFS_KEY_CLS_LEN, ofs_dp.n_workers,
			errno ? strerror(errno) : "out of memory");
		exit(2);
	}
	ofs_dp.lookup_ops->destroy(probe);
}

/* A vhost-user port on librte_vhost (vhost_port.h): no ethdev, the link is up while a guest
 * is attached. The MAC is net_vhost's scheme ("VHOST" + index). */
static void vhost_port_init(unsigned i)
{
	struct ofs_port *p = &ofs_dp.ports[i];
	char err[512];
	p->vhost = ofs_vhost_open(port_specs[i], ofs_dp.n_workers, err, sizeof(err));
	if (!p->vhost)
		rte_exit(EXIT_FAILURE, "port %u: %s\n", port_nums[i], err);
	p->ofport = port_nums[i];
	p->dpdk_id = UINT16_MAX;
	p->n_txq = 1;
	snprintf(p->name, sizeof(p->name), "vhost%u", port_nums[i]);
	const uint8_t mac[6] = {0x56, 0x48, 0x4f, 0x53, 0x54, (uint8_t)i};
	memcpy(p->mac, mac, 6);
	p->link_up = ofs_vhost_link_up(p->vhost);
	p->created_ns = ofs_now_ns();
	ofs_dp.port_by_of[p->ofport] = (int8_t)i;
}

static void port_init(unsigned i, struct rte_mempool *pool)
{
	struct ofs_port *p = &ofs_dp.ports[i];
	uint16_t id;
	const char *spec = port_specs[i];
	char *end;
	unsigned long v = strtoul(spec, &end, 10);
	bool replay = strncmp(spec, "replay:", 7) == 0;
	if (ofs_vhost_is_spec(spec)) {
		vhost_port_init(i);
		return;
	}
	if (replay) {
#ifdef OFB_HAVE_REPLAY
		char err[512];
		int r = ofb_replay_create(spec, ofs_dp.n_workers, (int)rte_socket_id(), err,
					  sizeof(err));
		if (r < 0)
			rte_exit(EXIT_FAILURE, "port %u: %s\n", port_nums[i], err);
		id = (uint16_t)r;
#else
		rte_exit(EXIT_FAILURE, "port %u: this ofswitch was built without the replay feed "
			 "(the replay port needs DPDK's net_ring library)\n", port_nums[i]);
#endif
	} else if (*end == 0)
		id = (uint16_t)v;
	else if (rte_eth_dev_get_port_by_name(spec, &id) != 0)
		rte_exit(EXIT_FAILURE, "port %u: no DPDK port named '%s'\n", port_nums[i], spec);
	if (!rte_eth_dev_is_valid_port(id))
		rte_exit(EXIT_FAILURE, "port %u: DPDK port %u invalid\n", port_nums[i], id);
	struct rte_eth_dev_info info;
	rte_eth_dev_info_get(id, &info);
	uint16_t ntx = (uint16_t)RTE_MIN((unsigned)info.max_tx_queues, ofs_dp.n_workers);
	if (ntx < ofs_dp.n_workers)
		rte_exit(EXIT_FAILURE, "port %u (%s): %u tx queues, %u workers need one each "
			 "(af_packet: add qpairs=N)\n", port_nums[i], spec, info.max_tx_queues,
			 ofs_dp.n_workers);
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(id, 1, ntx, &conf) < 0)
		rte_exit(EXIT_FAILURE, "port %u: configure failed\n", port_nums[i]);
	uint16_t nrx = 1024, ntxd = 1024;
	rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrx, &ntxd);
	if (rte_eth_rx_queue_setup(id, 0, nrx, rte_eth_dev_socket_id(id), NULL, pool) < 0)
		rte_exit(EXIT_FAILURE, "port %u: rx queue setup failed\n", port_nums[i]);
	for (uint16_t q = 0; q < ntx; q++)
		if (rte_eth_tx_queue_setup(id, q, ntxd, rte_eth_dev_socket_id(id), NULL) < 0)
			rte_exit(EXIT_FAILURE, "port %u: tx queue setup failed\n", port_nums[i]);
	rte_eth_promiscuous_enable(id);
	if (rte_eth_dev_start(id) < 0)
		rte_exit(EXIT_FAILURE, "port %u: start failed\n", port_nums[i]);
#ifdef OFB_HAVE_REPLAY
	if (replay && ofb_replay_arm(id) != 0)
		rte_exit(EXIT_FAILURE, "port %u: replay rx callback failed\n", port_nums[i]);
#endif
	p->ofport = port_nums[i];
	p->dpdk_id = id;
	p->n_txq = ntx;
	if (replay) {
		char dev_name[RTE_ETH_NAME_MAX_LEN];  /* net_ring_replayN: shown as replayN */
		if (rte_eth_dev_get_name_by_port(id, dev_name) != 0)
			snprintf(dev_name, sizeof(dev_name), "replay");
		const char *shown = strncmp(dev_name, "net_ring_", 9) == 0 ? dev_name + 9 : dev_name;
		snprintf(p->name, sizeof(p->name), "%.15s", shown);
	} else {
		snprintf(p->name, sizeof(p->name), "%s", spec);
	}
	struct rte_ether_addr mac;
	rte_eth_macaddr_get(id, &mac);
	memcpy(p->mac, mac.addr_bytes, 6);
	/* Link state as the PMD reports it, or for an af_packet/af_xdp port (whose PMD always
	 * says up) the kernel interface's; the agent polls it and sends PORT_STATUS on changes.
	 * A PMD that cannot tell counts as up. */
	const struct rte_devargs *da = rte_dev_devargs(info.device);
	ofs_port_set_kif(p, info.driver_name, da ? da->args : NULL);
	struct rte_eth_link link;
	int k = ofs_kif_link_up(p);
	/* attaching the PMD's XDP program or socket flaps a veth's carrier: give the kernel up to
	 * 1 s to bring it back before the first state is taken (a port whose peer really is down
	 * stays down, and the agent's tick reports every later change) */
	for (int t = 0; k == 0 && t < 100; t++) {
		rte_delay_us_sleep(10 * 1000);
		k = ofs_kif_link_up(p);
	}
	p->link_up = k >= 0 ? k == 1
			    : rte_eth_link_get_nowait(id, &link) != 0 ||
			      link.link_status == RTE_ETH_LINK_UP;
	p->created_ns = ofs_now_ns();
	ofs_dp.port_by_of[p->ofport] = (int8_t)i;
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed\n");
	argc -= ret;
	argv += ret;
	parse_args(argc, argv);
	signal(SIGALRM, on_stop_timeout);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	memset(ofs_dp.port_by_of, -1, sizeof(ofs_dp.port_by_of));
	ofs_dp.miss_send_len = 128;
	if (n_port_specs == 0)
		usage("at least one --port is needed");
	if (ofs_dp.n_workers > rte_lcore_count())
		rte_exit(EXIT_FAILURE, "--workers %u but only %u lcores\n", ofs_dp.n_workers,
			 rte_lcore_count());
	/* the pcap PMD in infinite_rx mode keeps its whole file in mbufs: room for 8k frames by
	 * default, --mbufs for more */
	unsigned nmbuf = n_mbufs_opt ? n_mbufs_opt
				     : 16384 * ofs_dp.n_workers + 4096 * n_port_specs + 8192;
	struct rte_mempool *pool = rte_pktmbuf_pool_create("ofs_pool", nmbuf, 256, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!pool)
		rte_exit(EXIT_FAILURE, "mbuf pool: %s\n", rte_strerror(rte_errno));
	/* The QSBR state first: a vhost-user port's detach waits for the workers' grace period
	 * (vhost_port.h), and a guest may attach and detach as soon as its port exists. */
	size_t qsz = rte_rcu_qsbr_get_memsize(ofs_dp.n_workers);
	ofs_dp.qsbr = rte_zmalloc("ofs_qsbr", qsz, RTE_CACHE_LINE_SIZE);
	if (!ofs_dp.qsbr || rte_rcu_qsbr_init(ofs_dp.qsbr, ofs_dp.n_workers) != 0)
		rte_exit(EXIT_FAILURE, "rcu init failed\n");
	for (unsigned i = 0; i < n_port_specs; i++)
		port_init(i, pool);
	ofs_dp.n_ports = n_port_specs;
	ofs_dp.pin_ring = rte_ring_create("ofs_pin", 4096, rte_socket_id(), RING_F_SC_DEQ);
	ofs_dp.pout_ring = rte_ring_create("ofs_pout", 1024, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
	/* flows in hugepage chunks (flowarena.h), grown as FLOW_MODs come, within the EAL's -m;
	 * the sanitizer build keeps one heap block per flow, so ASan sees each flow's lifetime
	 * and LeakSanitizer the cold parts it points to */
	ofs_arena_init(!OFS_ARENA_SANITIZED, ofs_dp.n_workers, max_flows_opt);
	if (!ofs_dp.pin_ring || !ofs_dp.pout_ring)
		rte_exit(EXIT_FAILURE, "rings init failed\n");
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		struct ofs_worker *wk = &ofs_dp.workers[w];
		wk->idx = w;
		wk->pool = pool;
		struct ofs_cache_line *cache = rte_zmalloc("ofs_cache",
			sizeof(*cache) * cache_lines_opt, RTE_CACHE_LINE_SIZE);
		uint64_t *dirty = rte_zmalloc("ofs_cache_dirty", cache_lines_opt / 8,
					      RTE_CACHE_LINE_SIZE);
		if (!cache || !dirty)
			rte_exit(EXIT_FAILURE, "flow cache: %u lines (%u MiB) per worker do not fit "
				 "in the EAL's memory (-m, or a smaller --cache-lines)\n",
				 cache_lines_opt, (unsigned)((uint64_t)cache_lines_opt * 64 >> 20));
		ofs_worker_set_cache(wk, cache, dirty, cache_lines_opt);
		for (unsigned p = 0; p < ofs_dp.n_ports; p++) {
			wk->txb[p] = rte_zmalloc("txb", RTE_ETH_TX_BUFFER_SIZE(OFS_BURST), 0);
			if (!wk->txb[p])
				rte_exit(EXIT_FAILURE, "tx buffer alloc failed\n");
			rte_eth_tx_buffer_init(wk->txb[p], OFS_BURST);
			wk->txq[p] = (struct ofs_txq){ .port_id = ofs_dp.ports[p].dpdk_id,
				.queue_id = (uint16_t)(w < ofs_dp.ports[p].n_txq ? w : 0),
				.stats = &wk->port_stats[p] };
			rte_eth_tx_buffer_set_err_callback(wk->txb[p], ofs_tx_unsent, &wk->txq[p]);
			if (p % ofs_dp.n_workers == w)
				wk->rx_ports[wk->n_rx_ports++] = (uint16_t)p;
		}
	}
	pthread_t agent;
	/* A control thread, not a plain pthread: DPDK pins it to the CPUs that are not worker
	 * lcores, so its wake-ups (messages, Packet-Ins, the 100 ms housekeeping tick) never
	 * preempt a busy-polling worker (with one worker on a dedicated core, a plain pthread
	 * inherited that core). */
	if (rte_ctrl_thread_create(&agent, "ofs-agent", NULL, agent_thread, &agent_cfg) != 0)
		rte_exit(EXIT_FAILURE, "agent thread\n");
	fprintf(stderr, "ofswitch: dpid 0x%llx, %u ports, %u workers, lookup %s\n",
		(unsigned long long)ofs_dp.dpid, ofs_dp.n_ports, ofs_dp.n_workers,
		ofs_dp.lookup_ops->name);
	unsigned w = 1, lc;
	RTE_LCORE_FOREACH_WORKER(lc) {
		if (w >= ofs_dp.n_workers)
			break;
		ofs_dp.workers[w].lcore_id = lc;
		rte_eal_remote_launch(worker_thread, &ofs_dp.workers[w], lc);
		w++;
	}
	ofs_dp.workers[0].lcore_id = rte_lcore_id();
	worker_thread(&ofs_dp.workers[0]);
	rte_eal_mp_wait_lcore();
	pthread_join(agent, NULL);
	for (unsigned i = 0; i < ofs_dp.n_ports; i++) {
		uint64_t rx = 0, tx = 0, drop = 0;
		for (unsigned k = 0; k < ofs_dp.n_workers; k++) {
			rx += ofs_dp.workers[k].port_stats[i].rx_packets;
			tx += ofs_dp.workers[k].port_stats[i].tx_packets;
			drop += ofs_dp.workers[k].port_stats[i].tx_dropped;
		}
		fprintf(stderr, "ofswitch: port %u (%s): rx %llu, tx %llu, tx_dropped %llu\n",
			ofs_dp.ports[i].ofport, ofs_dp.ports[i].name, (unsigned long long)rx,
			(unsigned long long)tx, (unsigned long long)drop);
		if (ofs_dp.ports[i].vhost) {
			ofs_vhost_close(ofs_dp.ports[i].vhost);
			continue;
		}
		rte_eth_dev_stop(ofs_dp.ports[i].dpdk_id);
		rte_eth_dev_close(ofs_dp.ports[i].dpdk_id);
	}
	fprintf(stderr, "ofswitch: stopped\n");
	rte_eal_cleanup();
	teardown_done = 1;
	return 0;
}
