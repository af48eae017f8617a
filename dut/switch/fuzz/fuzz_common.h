/* fuzz_common.h -- what the switch's libFuzzer harnesses (fuzz_agent.c, fuzz_conn.c,
 * fuzz_datapath.c) share: the EAL's start-up and clean-up, the datapath's fixed settings, the
 * lookup backend, the net_null ports and worker 0.
 *
 * Design: each harness runs in one process for the whole run, with one EAL started once in
 * LLVMFuzzerInitialize: --no-huge --no-shconf --no-pci, one lcore, a unique --file-prefix
 * (ofb-<tag>-<pid>), its runtime folder removed right after init (it holds nothing, so not even
 * a killed run leaves it behind) and again at exit. The EAL pins the main lcore; a fuzzer
 * shares the machine, so the process's CPU set is given back after init. Ports are DPDK
 * net_null devices (--vdev net_nullN, one rx and one tx queue each) as OpenFlow ports 1..N;
 * worker 0 is the calling thread, with its flow cache of OFS_CACHE_LINES lines and a tx buffer
 * per port (no QSBR: the harnesses free at once, so a stale pointer is an ASan report).
 * Failure: fuzz_die() prints "<harness>: <what>" and aborts (a crash, never a finding to keep).
 * Included by one .c file each: every function is static (and unused ones are not an error).
 */
#ifndef OFS_FUZZ_COMMON_H
#define OFS_FUZZ_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rte_common.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include "../src/ofswitch.h"

static const char *fuzz_name = "fuzz";  /* the harness, in fuzz_die's messages */
static char fuzz_file_prefix[64];

static __rte_unused void fuzz_die(const char *what)
{
	fprintf(stderr, "%s: %s\n", fuzz_name, what);
	abort();
}

static void fuzz_eal_cleanup(void)
{
	char dir[128];
	rte_eal_cleanup();
	/* --no-shconf keeps no files there, but the runtime directory itself is created */
	snprintf(dir, sizeof(dir), "/var/run/dpdk/%s", fuzz_file_prefix);
	rmdir(dir);
}

/* The EAL for harness `name` (file prefix ofb-<tag>-<pid>, `mem_mb` MiB of heap, n_null
 * net_null ports), then the datapath's fixed settings: one worker, dpid, miss_send_len 128, no
 * port mapped yet. */
static __rte_unused void fuzz_eal_init(const char *name, const char *tag, char *argv0,
				       const char *mem_mb, unsigned n_null, uint64_t dpid)
{
	fuzz_name = name;
	snprintf(fuzz_file_prefix, sizeof(fuzz_file_prefix), "ofb-%s-%d", tag, (int)getpid());
	char vdev[8][16];
	char *eal[32] = { argv0, "--no-huge", "-m", (char *)mem_mb, "--no-pci", "--no-shconf",
			  "--file-prefix", fuzz_file_prefix, "--log-level", "*:error",
			  "--no-telemetry", "-l", "0" };
	int n = 13;
	if (n_null > RTE_DIM(vdev))
		fuzz_die("too many net_null ports");
	for (unsigned i = 0; i < n_null; i++) {
		snprintf(vdev[i], sizeof(vdev[i]), "net_null%u", i);
		eal[n++] = "--vdev";
		eal[n++] = vdev[i];
	}
	cpu_set_t cpus;  /* EAL pins the main lcore; a fuzzer shares the machine: give it back */
	sched_getaffinity(0, sizeof(cpus), &cpus);
	if (rte_eal_init(n, eal) < 0)
		fuzz_die("EAL init failed");
	sched_setaffinity(0, sizeof(cpus), &cpus);
	/* --no-shconf puts nothing in the runtime folder: remove it now, so that not even a
	 * killed run (libFuzzer's -max_total_time, a timeout, SIGKILL) leaves it behind */
	rmdir(rte_eal_get_runtime_dir());
	atexit(fuzz_eal_cleanup);
	memset(ofs_dp.port_by_of, -1, sizeof(ofs_dp.port_by_of));
	ofs_dp.dpid = dpid;
	ofs_dp.n_workers = 1;
	ofs_dp.miss_send_len = 128;
}

/* The tables' lookup backend: env OFS_FUZZ_LOOKUP (tuple|dtree|trie|simple) when from_env,
 * else the switch's default. */
static __rte_unused void fuzz_lookup_init(bool from_env)
{
	const char *lk = from_env ? getenv("OFS_FUZZ_LOOKUP") : NULL;
	ofs_dp.lookup_ops = ofs_lookup_find(lk && *lk ? lk : OFS_LOOKUP_DEFAULT);
	if (!ofs_dp.lookup_ops)
		fuzz_die("OFS_FUZZ_LOOKUP: not a lookup backend of this build (" OFS_LOOKUP_NAMES ")");
}

/* The n net_null ports (started, link up) as OpenFlow ports 1..n, receiving into pool. */
static __rte_unused void fuzz_ports_init(struct rte_mempool *pool, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char name[32];
		uint16_t id;
		snprintf(name, sizeof(name), "net_null%u", i);
		if (rte_eth_dev_get_port_by_name(name, &id) != 0)
			fuzz_die("net_null port missing");
		struct rte_eth_conf conf;
		memset(&conf, 0, sizeof(conf));
		if (rte_eth_dev_configure(id, 1, 1, &conf) != 0 ||
		    rte_eth_rx_queue_setup(id, 0, 64, rte_socket_id(), NULL, pool) != 0 ||
		    rte_eth_tx_queue_setup(id, 0, 64, rte_socket_id(), NULL) != 0 ||
		    rte_eth_dev_start(id) != 0)
			fuzz_die("net_null port setup failed");
		struct ofs_port *p = &ofs_dp.ports[i];
		p->ofport = i + 1;
		p->dpdk_id = id;
		p->n_txq = 1;
		snprintf(p->name, sizeof(p->name), "null%u", i);
		struct rte_ether_addr mac;
		rte_eth_macaddr_get(id, &mac);
		memcpy(p->mac, mac.addr_bytes, 6);
		p->link_up = true;
		p->created_ns = ofs_now_ns();
		ofs_dp.port_by_of[i + 1] = (int8_t)i;
	}
	ofs_dp.n_ports = n;
}

/* Worker 0 on the calling thread: its flow cache and a tx buffer on each of the n_ports. */
static __rte_unused void fuzz_worker_init(struct rte_mempool *pool, unsigned n_ports)
{
	struct ofs_worker *w = &ofs_dp.workers[0];
	w->idx = 0;
	w->lcore_id = rte_lcore_id();
	w->pool = pool;
	struct ofs_cache_line *cache = aligned_alloc(64, sizeof(*cache) * OFS_CACHE_LINES);
	uint64_t *dirty = calloc(OFS_CACHE_LINES / 64, sizeof(*dirty));
	if (!cache || !dirty)
		fuzz_die("flow cache alloc failed");
	memset(cache, 0, sizeof(*cache) * OFS_CACHE_LINES);
	ofs_worker_set_cache(w, cache, dirty, OFS_CACHE_LINES);
	for (unsigned p = 0; p < n_ports; p++) {
		w->txb[p] = rte_zmalloc("txb", RTE_ETH_TX_BUFFER_SIZE(OFS_BURST), 0);
		if (!w->txb[p])
			fuzz_die("tx buffer alloc failed");
		rte_eth_tx_buffer_init(w->txb[p], OFS_BURST);
		w->txq[p] = (struct ofs_txq){ .port_id = ofs_dp.ports[p].dpdk_id, .queue_id = 0,
					      .stats = &w->port_stats[p] };
		rte_eth_tx_buffer_set_err_callback(w->txb[p], ofs_tx_unsent, &w->txq[p]);
	}
}

#endif
