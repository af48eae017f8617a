/* feed_ceiling -- the rate a feed can deliver on one lcore with no switch work: rx burst from
 * the feed's port, tx burst to a sink port (net_null), like testpmd's io forwarding, so a
 * benchmark can show beside the switch's rate what its feed alone reaches on the same core.
 *
 * Usage: feed_ceiling <EAL args incl. --vdev for non-replay ports> -- --rx SPEC --tx NAME
 *          [--seconds S] [--warmup S] [--mbufs N]
 * SPEC: a replay spec (dut/switch/src/replay_port.h: replay:<pcap>[,loops=K][,copy=0|1|stream]) or the
 * name of a DPDK port given with --vdev (e.g. net_pcap0 with infinite_rx=1, which keeps its
 * whole pcap in mbufs of the pool: --mbufs must exceed its frame count).
 * Prints one JSON line: {"mpps": R, "rx_packets": N, "tx_packets": M, "seconds": S}.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include "replay_port.h"

#define BURST 32

static int port_of(const char *spec, struct rte_mempool *pool)
{
	char err[512];
	uint16_t id;
	bool replay = ofb_replay_is_spec(spec);
	if (replay) {
		int p = ofb_replay_create(spec, 1, (int)rte_socket_id(), err, sizeof(err));
		if (p < 0)
			rte_exit(EXIT_FAILURE, "%s\n", err);
		id = (uint16_t)p;
	} else if (rte_eth_dev_get_port_by_name(spec, &id) != 0) {
		rte_exit(EXIT_FAILURE, "feed_ceiling: no DPDK port named '%s' (give it with --vdev)\n",
			 spec);
	}
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(id, 1, 1, &conf) < 0 ||
	    rte_eth_rx_queue_setup(id, 0, 1024, rte_eth_dev_socket_id(id), NULL, pool) < 0 ||
	    rte_eth_tx_queue_setup(id, 0, 1024, rte_eth_dev_socket_id(id), NULL) < 0 ||
	    rte_eth_dev_start(id) < 0)
		rte_exit(EXIT_FAILURE, "feed_ceiling: port %s: setup failed\n", spec);
	if (replay && ofb_replay_arm(id) != 0)
		rte_exit(EXIT_FAILURE, "feed_ceiling: port %s: rx callback failed\n", spec);
	return id;
}

int main(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);
	if (ret < 0)
		rte_exit(EXIT_FAILURE, "EAL init failed\n");
	argc -= ret;
	argv += ret;
	static const struct option opts[] = {{"rx", 1, 0, 'r'}, {"tx", 1, 0, 't'},
		{"seconds", 1, 0, 's'}, {"warmup", 1, 0, 'w'}, {"mbufs", 1, 0, 'm'}, {0, 0, 0, 0}};
	const char *rx_spec = NULL, *tx_spec = NULL;
	double seconds = 3.0, warmup = 0.5;
	unsigned n_mbufs = 32768;
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r': rx_spec = optarg; break;
		case 't': tx_spec = optarg; break;
		case 's': seconds = atof(optarg); break;
		case 'w': warmup = atof(optarg); break;
		case 'm': n_mbufs = (unsigned)strtoul(optarg, NULL, 10); break;
		default: rte_exit(2, "usage: feed_ceiling <EAL> -- --rx SPEC --tx NAME [--seconds S]\n");
		}
	}
	if (!rx_spec || !tx_spec || seconds <= 0 || n_mbufs < 4096)
		rte_exit(2, "usage: feed_ceiling <EAL> -- --rx SPEC --tx NAME [--seconds S]\n");
	struct rte_mempool *pool = rte_pktmbuf_pool_create("ceiling_pool", n_mbufs, 256, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!pool)
		rte_exit(EXIT_FAILURE, "mbuf pool: %s\n", rte_strerror(rte_errno));
	uint16_t rx = (uint16_t)port_of(rx_spec, pool);
	uint16_t tx = (uint16_t)port_of(tx_spec, pool);
	struct rte_mbuf *pkts[BURST];
	uint64_t hz = rte_get_tsc_hz(), t0 = rte_rdtsc();
	uint64_t t_start = t0 + (uint64_t)(warmup * (double)hz);
	uint64_t t_end = t_start + (uint64_t)(seconds * (double)hz);
	uint64_t n_rx = 0, n_tx = 0, now = t0;
	bool counting = false;
	while (now < t_end) {
		uint16_t n = rte_eth_rx_burst(rx, 0, pkts, BURST);
		uint16_t s = n ? rte_eth_tx_burst(tx, 0, pkts, n) : 0;
		if (s < n)
			rte_pktmbuf_free_bulk(pkts + s, n - s);
		now = rte_rdtsc();
		if (!counting && now >= t_start) {
			counting = true;
			n_rx = n_tx = 0;
			t_start = now;
		}
		n_rx += n;
		n_tx += s;
	}
	double secs = (double)(now - t_start) / (double)hz;
	printf("{\"mpps\": %.3f, \"rx_packets\": %llu, \"tx_packets\": %llu, \"seconds\": %.3f}\n",
	       (double)n_tx / secs / 1e6, (unsigned long long)n_rx, (unsigned long long)n_tx, secs);
	fflush(stdout);
	rte_eth_dev_stop(rx);
	rte_eth_dev_stop(tx);
	rte_eal_cleanup();
	return 0;
}
