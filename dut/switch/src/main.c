/* main.c -- ofswitch: EAL and port setup, worker launch, and the agent's network loop.
 *
 * Usage: ofswitch <EAL args> -- --dpid 0x1 --controller tcp:127.0.0.1:6653
 *          --port 1=<dpdk port name or id> [--port 2=...] [--workers N]
 *          [--lookup trie|simple] [--stats-sock PATH] [--idle-sleep-us N] [--mbufs N]
 *
 * A port may also be the pcap replay feed of drivers/replay (built with it):
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
#ifdef OFB_HAVE_REPLAY
#include "replay.h"
#endif



static struct ofs_agent_cfg agent_cfg;
static const char *port_specs[OFS_MAX_PORTS];
static uint32_t port_nums[OFS_MAX_PORTS];
static unsigned n_port_specs;
static volatile int of_connected;
static unsigned n_mbufs_opt;     /* --mbufs: 0 = sized below */

static void on_signal(int sig)
{
	(void)sig;
	ofs_dp.force_quit = true;
}

static __rte_noreturn void usage(const char *why)
{
	fprintf(stderr, "ofswitch: %s\nusage: ofswitch <EAL args> -- --dpid HEX --controller "
		"tcp:HOST:PORT --port OFPORT=DEVNAME|ID [...] [--workers N] [--lookup trie|simple] "
		"[--stats-sock PATH] [--idle-sleep-us N] [--mbufs N]\n", why);
	exit(2);
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"dpid", 1, 0, 'd'}, {"controller", 1, 0, 'c'}, {"port", 1, 0, 'p'},
		{"workers", 1, 0, 'w'}, {"lookup", 1, 0, 'l'}, {"stats-sock", 1, 0, 's'},
		{"idle-sleep-us", 1, 0, 'i'}, {"mbufs", 1, 0, 'm'}, {0, 0, 0, 0}};
	int c;
	ofs_dp.dpid = 1;
	ofs_dp.n_workers = 1;
	/* One default with the profile schema and the launcher (dut/profiles/schema.py
	 * DEFAULT_LOOKUP): the classifier's, where the switch is built with it. */
#ifdef OFS_HAVE_CLASSIFIER
	ofs_dp.lookup_ops = &ofs_lookup_trie;
#else
	ofs_dp.lookup_ops = &ofs_lookup_simple;
#endif
	strcpy(agent_cfg.host, "127.0.0.1");
	agent_cfg.port = 6653;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': ofs_dp.dpid = strtoull(optarg, NULL, 0); break;
		case 'c': {
			const char *s = optarg;
			if (strncmp(s, "tcp:", 4) == 0) s += 4;
			const char *colon = strrchr(s, ':');
			if (!colon || colon - s >= (int)sizeof(agent_cfg.host))
				usage("--controller wants tcp:HOST:PORT");
			memcpy(agent_cfg.host, s, (size_t)(colon - s));
			agent_cfg.host[colon - s] = 0;
			agent_cfg.port = (uint16_t)atoi(colon + 1);
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
			if (strcmp(optarg, "simple") == 0) ofs_dp.lookup_ops = &ofs_lookup_simple;
#ifdef OFS_HAVE_CLASSIFIER
			else if (strcmp(optarg, "trie") == 0) ofs_dp.lookup_ops = &ofs_lookup_trie;
#endif
			else usage("--lookup: 'simple' or (with dut/classifier) 'trie'");
			break;
		case 's': agent_cfg.stats_sock = strdup(optarg); break;
		case 'i': ofs_dp.idle_sleep_us = (unsigned)atoi(optarg); break;
		case 'm': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v < 4096 || v > (1ul << 24))
				usage("--mbufs wants a count in 4096..16777216");
			n_mbufs_opt = (unsigned)v;
			break;
		}
		default: usage("unknown option");
		}
	}
	if (ofs_dp.n_workers < 1 || ofs_dp.n_workers > OFS_MAX_WORKERS)
		usage("--workers out of range");
}

static void port_init(unsigned i, struct rte_mempool *pool)
{
	struct ofs_port *p = &ofs_dp.ports[i];
	uint16_t id;
	const char *spec = port_specs[i];
	char *end;
	unsigned long v = strtoul(spec, &end, 10);
	bool replay = strncmp(spec, "replay:", 7) == 0;
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
			 "(drivers/replay needs DPDK's net_ring library)\n", port_nums[i]);
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
	struct rte_eth_link link;
	rte_eth_link_get_nowait(id, &link);
	/* Link state as the PMD reports it (af_packet/af_xdp: the interface's IFF_RUNNING); the
	 * agent polls it and sends PORT_STATUS on changes. A PMD that cannot tell counts as up. */
	p->link_up = rte_eth_link_get_nowait(id, &link) != 0 || link.link_status == RTE_ETH_LINK_UP;
	p->created_ns = ofs_now_ns();
	ofs_dp.port_by_of[p->ofport] = (int8_t)i;
}

/* ---- agent network loop --------------------------------------------------------------- */
/* Flow expiry and link-state checks run on this tick; between ticks the agent sleeps unless a
 * message or a Packet-In arrives (no fixed-interval polling: see ofswitch.h). */
#define AGENT_TICK_NS 100000000ull
static int connect_controller(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return -1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(agent_cfg.port) };
	if (inet_pton(AF_INET, agent_cfg.host, &a.sin_addr) != 1 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(s);
		return -1;
	}
	int one = 1;
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return s;
}

static bool send_all(int s, struct obuf *b)
{
	size_t o = 0;
	while (o < b->len) {
		ssize_t n = send(s, b->data + o, b->len - o, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR) continue;
			b->len = 0;
			return false;
		}
		o += (size_t)n;
	}
	b->len = 0;
	return true;
}

static int stats_listen(void)
{
	if (!agent_cfg.stats_sock)
		return -1;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", agent_cfg.stats_sock);
	unlink(a.sun_path);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s, 4) != 0) {
		fprintf(stderr, "ofswitch: stats socket %s: %s\n", a.sun_path, strerror(errno));
		close(s);
		return -1;
	}
	return s;
}

static void stats_answer(int ls)
{
	int c = accept(ls, NULL, NULL);
	if (c < 0)
		return;
	char buf[8192];
	size_t n = 0;
	uint64_t hits = 0, misses = 0;
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		hits += ofs_dp.workers[w].cache_hits;
		misses += ofs_dp.workers[w].cache_misses;
	}
	uint32_t flows = 0;
	for (int t = 0; t < OFS_N_TABLES; t++)
		flows += ofs_dp.tables[t].n_flows;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
		"{\"dpid\": %llu, \"of_connected\": %s, \"flows\": %u, \"cache_hits\": %llu, "
		"\"cache_misses\": %llu, \"ports\": [", (unsigned long long)ofs_dp.dpid,
		of_connected ? "true" : "false", flows, (unsigned long long)hits,
		(unsigned long long)misses);
	for (unsigned i = 0; i < ofs_dp.n_ports; i++) {
		uint64_t rx = 0, tx = 0;
		for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
			rx += ofs_dp.workers[w].port_stats[i].rx_packets;
			tx += ofs_dp.workers[w].port_stats[i].tx_packets;
		}
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
			"%s{\"port\": %u, \"rx_packets\": %llu, \"tx_packets\": %llu}",
			i ? ", " : "", ofs_dp.ports[i].ofport, (unsigned long long)rx,
			(unsigned long long)tx);
	}
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "]}\n");
	ssize_t wr = write(c, buf, n);
	(void)wr;
	close(c);
}

/* Poll link state; on a change update the port (workers read link_up) and send PORT_STATUS. */
static void check_links(struct obuf *out)
{
	for (unsigned i = 0; i < ofs_dp.n_ports; i++) {
		struct rte_eth_link link;
		if (rte_eth_link_get_nowait(ofs_dp.ports[i].dpdk_id, &link) != 0)
			continue;
		bool up = link.link_status == RTE_ETH_LINK_UP;
		if (up != ofs_dp.ports[i].link_up) {
			__atomic_store_n(&ofs_dp.ports[i].link_up, up, __ATOMIC_RELEASE);
			ofs_send_port_status(out, i, OFPPR_MODIFY);
		}
	}
}

void *ofs_agent_main(void *arg)
{
	(void)arg;
	struct obuf out;
	ob_init(&out);
	uint8_t *rx = malloc(1 << 17);
	size_t rx_len = 0;
	int ls = stats_listen();
	unsigned backoff_ms = 100;
	int s = -1;
	/* Packet-In doorbell (ofs_wake_agent); non-blocking so a burst of writes never stalls */
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0) {
		fprintf(stderr, "ofswitch: eventfd: %s\n", strerror(errno));
		ofs_dp.force_quit = true;
		return NULL;
	}
	ofs_dp.agent_wake_fd = efd;
	uint64_t last_expire = 0;
	while (!ofs_dp.force_quit) {
		if (s < 0) {
			s = connect_controller();
			if (s < 0) {
				/* keep answering stats while waiting for the controller */
				struct pollfd pf = { .fd = ls, .events = POLLIN };
				if (poll(&pf, ls >= 0 ? 1 : 0, (int)backoff_ms) > 0)
					stats_answer(ls);
				backoff_ms = backoff_ms * 2 > 4000 ? 4000 : backoff_ms * 2;
				continue;
			}
			backoff_ms = 100;
			rx_len = 0;
			ofs_agent_reset_session();
			ofs_send_hello(&out);
			send_all(s, &out);
			of_connected = 1;
			fprintf(stderr, "ofswitch: connected to controller %s:%u\n", agent_cfg.host,
				agent_cfg.port);
		}
		/* Sleep until a message, a Packet-In (the worker writes efd, see ofs_wake_agent) or
		 * the next housekeeping tick. agent_sleeping is stored (a full barrier) before the
		 * ring is checked, so a Packet-In enqueued in between is seen one way or the other. */
		uint64_t now = ofs_now_ns();
		uint64_t next_tick = last_expire + AGENT_TICK_NS;
		int timeout_ms = now >= next_tick ? 0 : (int)((next_tick - now + 999999) / 1000000);
		__atomic_store_n(&ofs_dp.agent_sleeping, 1, __ATOMIC_SEQ_CST);
		if (rte_ring_count(ofs_dp.pin_ring) > 0)
			timeout_ms = 0;
		struct pollfd pf[3] = { { .fd = s, .events = POLLIN }, { .fd = efd, .events = POLLIN },
					{ .fd = ls, .events = POLLIN } };
		int np = poll(pf, ls >= 0 ? 3 : 2, timeout_ms);
		__atomic_store_n(&ofs_dp.agent_sleeping, 0, __ATOMIC_RELAXED);
		if (np > 0 && (pf[1].revents & POLLIN)) {
			uint64_t cnt;
			ssize_t r = read(efd, &cnt, sizeof(cnt));
			(void)r;
		}
		bool close_it = false;
		if (np > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t n = recv(s, rx + rx_len, (1 << 17) - rx_len, 0);
			if (n <= 0) {
				close_it = true;
			} else {
				rx_len += (size_t)n;
				size_t o = 0;
				while (rx_len - o >= 8) {
					uint16_t ml = rd16(rx + o + 2);
					if (ml < 8) { close_it = true; break; }  /* unframeable */
					if (rx_len - o < ml) break;
					if (ofs_handle_msg(&out, rx + o, ml) < 0) close_it = true;
					o += ml;
					if (close_it) break;
				}
				memmove(rx, rx + o, rx_len - o);
				rx_len -= o;
				ofs_commit();
			}
		}
		if (ls >= 0 && np > 0 && (pf[2].revents & POLLIN))
			stats_answer(ls);
		/* packets for the controller */
		void *pins[64];
		unsigned n = rte_ring_sc_dequeue_burst(ofs_dp.pin_ring, pins, 64, NULL);
		for (unsigned i = 0; i < n; i++) {
			ofs_send_packet_in(&out, pins[i]);
			free(pins[i]);
		}
		now = ofs_now_ns();
		if (now - last_expire >= AGENT_TICK_NS) {
			last_expire = now;
			ofs_expire_flows(&out, now);
			ofs_commit();
			check_links(&out);
		}
		if (out.len && !send_all(s, &out))
			close_it = true;
		if (close_it) {
			if (out.len) send_all(s, &out);
			close(s);
			s = -1;
			of_connected = 0;
			fprintf(stderr, "ofswitch: controller session closed, reconnecting\n");
		}
	}
	if (s >= 0)
		close(s);
	if (ls >= 0) {
		close(ls);
		unlink(agent_cfg.stats_sock);
	}
	ofs_dp.agent_sleeping = 0;
	close(efd);
	ob_free(&out);
	free(rx);
	return NULL;
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed\n");
	argc -= ret;
	argv += ret;
	parse_args(argc, argv);
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
	for (unsigned i = 0; i < n_port_specs; i++)
		port_init(i, pool);
	ofs_dp.n_ports = n_port_specs;
	ofs_dp.pin_ring = rte_ring_create("ofs_pin", 4096, rte_socket_id(), RING_F_SC_DEQ);
	ofs_dp.pout_ring = rte_ring_create("ofs_pout", 1024, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
	size_t qsz = rte_rcu_qsbr_get_memsize(ofs_dp.n_workers);
	ofs_dp.qsbr = rte_zmalloc("ofs_qsbr", qsz, RTE_CACHE_LINE_SIZE);
	if (!ofs_dp.pin_ring || !ofs_dp.pout_ring || !ofs_dp.qsbr ||
	    rte_rcu_qsbr_init(ofs_dp.qsbr, ofs_dp.n_workers) != 0)
		rte_exit(EXIT_FAILURE, "rings/rcu init failed\n");
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		struct ofs_worker *wk = &ofs_dp.workers[w];
		wk->idx = w;
		wk->pool = pool;
		wk->cache = rte_zmalloc("ofs_cache", sizeof(*wk->cache) * OFS_CACHE_SIZE,
					RTE_CACHE_LINE_SIZE);
		wk->cache_keys = rte_zmalloc("ofs_cache_keys", sizeof(*wk->cache_keys) * OFS_CACHE_SIZE,
					     RTE_CACHE_LINE_SIZE);
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
		if (!wk->cache || !wk->cache_keys)
			rte_exit(EXIT_FAILURE, "flow cache alloc failed\n");
	}
	pthread_t agent;
	/* A control thread, not a plain pthread: DPDK pins it to the CPUs that are not worker
	 * lcores, so its 2 ms poll wake-ups and flow expiry never preempt a busy-polling worker
	 * (with one worker on a dedicated core, a plain pthread inherited that core). */
	if (rte_ctrl_thread_create(&agent, "ofs-agent", NULL, ofs_agent_main, &agent_cfg) != 0)
		rte_exit(EXIT_FAILURE, "agent thread\n");
	fprintf(stderr, "ofswitch: dpid 0x%llx, %u ports, %u workers, lookup %s\n",
		(unsigned long long)ofs_dp.dpid, ofs_dp.n_ports, ofs_dp.n_workers,
		ofs_dp.lookup_ops->name);
	unsigned w = 1, lc;
	RTE_LCORE_FOREACH_WORKER(lc) {
		if (w >= ofs_dp.n_workers)
			break;
		ofs_dp.workers[w].lcore_id = lc;
		rte_eal_remote_launch(ofs_worker_main, &ofs_dp.workers[w], lc);
		w++;
	}
	ofs_dp.workers[0].lcore_id = rte_lcore_id();
	ofs_worker_main(&ofs_dp.workers[0]);
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
		rte_eth_dev_stop(ofs_dp.ports[i].dpdk_id);
		rte_eth_dev_close(ofs_dp.ports[i].dpdk_id);
	}
	fprintf(stderr, "ofswitch: stopped\n");
	rte_eal_cleanup();
	return 0;
}
