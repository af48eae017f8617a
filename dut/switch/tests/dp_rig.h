/* dp_rig.h -- the datapath test rig shared by test_churn.c and test_pipecache.c: one EAL in
 * --no-huge/--no-shconf mode with a per-process file prefix, two net_ring ports (OpenFlow ports
 * 1 and 2: the test enqueues frames on port 1's rx ring and reads ports 1 and 2's tx rings),
 * the packet-in/out rings and QSBR the agent code expects, and one worker (ofs_dp.workers[0])
 * that receives on port 1 only, ready for rte_eal_remote_launch(ofs_worker_main, ...).
 * dp_rig_close() stops the ports, cleans the EAL up and removes its runtime directory, which
 * --no-shconf still leaves behind.
 *
 * Everything is static: each test includes it once (it is not a library). Errors end the
 * process with rte_exit naming what failed. */
#ifndef OFBENCH_SWITCH_TESTS_DP_RIG_H
#define OFBENCH_SWITCH_TESTS_DP_RIG_H

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include "../src/ofswitch.h"

struct dp_rig {
	struct rte_mempool *pool;
	struct rte_ring *rx[2], *tx[2];  /* port i+1's rx ring (frames in), tx ring (frames out) */
	uint16_t ids[2];                 /* their DPDK port ids */
	struct ofs_worker *w;
};

/* One OXM TLV (OpenFlow basic class) at p: field, value, optional mask of len bytes each. */
static size_t dp_oxm(uint8_t *p, int field, const void *val, const void *mask, int len)
{
	wr16(p, 0x8000); p[2] = (uint8_t)(field << 1 | (mask ? 1 : 0));
	p[3] = (uint8_t)(mask ? 2 * len : len);
	memcpy(p + 4, val, len);
	if (mask) memcpy(p + 4 + len, mask, len);
	return 4 + (mask ? 2 * len : len);
}

static int dp_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st; (void)flag; (void)f;
	remove(path);
	return 0;
}

static uint16_t dp_ring_port(const char *name, struct rte_ring **rx, struct rte_ring **tx)
{
	char n[64];
	snprintf(n, sizeof(n), "%.48s_rx", name);
	*rx = rte_ring_create(n, 4096, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(n, sizeof(n), "%.48s_tx", name);
	*tx = rte_ring_create(n, 8192, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!*rx || !*tx)
		rte_exit(EXIT_FAILURE, "rings\n");
	int id = rte_eth_from_rings(name, rx, 1, tx, 1, SOCKET_ID_ANY);
	if (id < 0)
		rte_exit(EXIT_FAILURE, "rte_eth_from_rings\n");
	return (uint16_t)id;
}

/* The EAL (program name prog, file prefix ofs-<tag>-<pid>), lookup backend, a pool of n_mbufs,
 * the two ports named <tag>1 and <tag>2, the agent's rings and QSBR, and worker 0 with a flow
 * cache of cache_lines lines (a power of two). */
static void dp_rig_init(struct dp_rig *r, const char *prog, const char *tag, const char *backend,
			unsigned n_mbufs, unsigned cache_lines)
{
	char prefix[64], n[64];
	snprintf(prefix, sizeof(prefix), "--file-prefix=ofs-%s-%d", tag, (int)getpid());
	char *eal[] = { (char *)prog, "--lcores=0@(0-1),1@(0-1)", "--no-huge", "-m", "512",
			"--no-pci", "--no-shconf", prefix, "--log-level=lib.eal:error", NULL };
	if (rte_eal_init(9, eal) < 0)
		rte_exit(EXIT_FAILURE, "EAL init\n");
	memset(ofs_dp.port_by_of, -1, sizeof(ofs_dp.port_by_of));
	if (!(ofs_dp.lookup_ops = ofs_lookup_find(backend)))
		rte_exit(EXIT_FAILURE, "backend %s: one of " OFS_LOOKUP_NAMES "\n", backend);
	ofs_dp.n_workers = 1;
	ofs_dp.miss_send_len = 128;
	snprintf(n, sizeof(n), "%s_pool", tag);
	r->pool = rte_pktmbuf_pool_create(n, n_mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					  SOCKET_ID_ANY);
	if (!r->pool)
		rte_exit(EXIT_FAILURE, "pool\n");
	for (unsigned i = 0; i < 2; i++) {
		char pn[sizeof(ofs_dp.ports[i].name)];
		snprintf(pn, sizeof(pn), "%.*s%u", (int)sizeof(pn) - 4, tag, i + 1);
		r->ids[i] = dp_ring_port(pn, &r->rx[i], &r->tx[i]);
		struct rte_eth_conf conf;
		memset(&conf, 0, sizeof(conf));
		if (rte_eth_dev_configure(r->ids[i], 1, 1, &conf) < 0 ||
		    rte_eth_rx_queue_setup(r->ids[i], 0, 1024, SOCKET_ID_ANY, NULL, r->pool) < 0 ||
		    rte_eth_tx_queue_setup(r->ids[i], 0, 1024, SOCKET_ID_ANY, NULL) < 0 ||
		    rte_eth_dev_start(r->ids[i]) < 0)
			rte_exit(EXIT_FAILURE, "port setup\n");
		struct ofs_port *p = &ofs_dp.ports[i];
		p->ofport = i + 1;
		p->dpdk_id = r->ids[i];
		p->n_txq = 1;
		p->link_up = true;
		memcpy(p->name, pn, sizeof(p->name));
		ofs_dp.port_by_of[i + 1] = (int8_t)i;
	}
	ofs_dp.n_ports = 2;
	snprintf(n, sizeof(n), "%s_pin", tag);
	ofs_dp.pin_ring = rte_ring_create(n, 1024, SOCKET_ID_ANY, RING_F_SC_DEQ);
	snprintf(n, sizeof(n), "%s_pout", tag);
	ofs_dp.pout_ring = rte_ring_create(n, 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(n, sizeof(n), "%s_qsbr", tag);
	ofs_dp.qsbr = rte_zmalloc(n, rte_rcu_qsbr_get_memsize(1), RTE_CACHE_LINE_SIZE);
	if (!ofs_dp.pin_ring || !ofs_dp.pout_ring || !ofs_dp.qsbr ||
	    rte_rcu_qsbr_init(ofs_dp.qsbr, 1) != 0)
		rte_exit(EXIT_FAILURE, "rings/qsbr\n");
	struct ofs_worker *w = r->w = &ofs_dp.workers[0];
	w->idx = 0;
	w->pool = r->pool;
	ofs_worker_set_cache(w, rte_zmalloc("c", sizeof(*w->cache) * cache_lines, RTE_CACHE_LINE_SIZE),
			     rte_zmalloc("d", cache_lines / 8, 0), cache_lines);
	for (unsigned p = 0; p < 2; p++) {
		w->txb[p] = rte_zmalloc("txb", RTE_ETH_TX_BUFFER_SIZE(OFS_BURST), 0);
		rte_eth_tx_buffer_init(w->txb[p], OFS_BURST);
		w->txq[p] = (struct ofs_txq){ .port_id = r->ids[p], .queue_id = 0,
					       .stats = &w->port_stats[p] };
		rte_eth_tx_buffer_set_err_callback(w->txb[p], ofs_tx_unsent, &w->txq[p]);
	}
	w->rx_ports[w->n_rx_ports++] = 0;  /* the worker receives on port 1 only */
}

static void dp_rig_close(struct dp_rig *r)
{
	for (unsigned i = 0; i < 2; i++) {
		rte_eth_dev_stop(r->ids[i]);
		rte_eth_dev_close(r->ids[i]);
	}
	char rundir[PATH_MAX];
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	nftw(rundir, dp_rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

#endif
