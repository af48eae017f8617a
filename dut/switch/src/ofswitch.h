/* ofswitch.h -- shared state of the ofbench OpenFlow 1.3 software switch (dut/switch).
 *
 * Goals: forward at DPDK speed through an OpenFlow 1.3 pipeline (multiple tables, groups,
 * meters) while an OpenFlow agent changes the tables at any time, never stopping forwarding.
 *
 * Threads and who may call what:
 *  - Worker lcores (1..N, the EAL main lcore is worker 0) own the rx queue 0 of a subset of
 *    ports and their own tx queue on every port. They only READ flows, tables, groups, meters
 *    config and ports; they WRITE only per-worker counters (struct ofs_worker), per-flow and
 *    per-group counters (relaxed atomics, no locks), and meter buckets (one spinlock per
 *    meter, taken only by packets that hit that meter).
 *  - The agent thread (a DPDK control thread, ofs_agent_main) is the ONLY writer of flows, tables,
 *    groups and meters. It edits its private lists, then publishes a new read-only snapshot
 *    with an atomic pointer store, bumps ofs_dp.gen, calls rte_rcu_qsbr_synchronize() and only
 *    then frees what the old snapshot referenced. Workers report a quiescent state once per poll
 *    loop.
 *  - Workers hand packets for the controller to the agent through pin_ring (MP/SC); the agent
 *    hands PACKET_OUTs to worker 0 through pout_ring (SP/SC). So workers never touch the TCP
 *    socket and the agent never touches a NIC queue.
 *  - The agent does not poll: it sleeps in poll() on the controller socket, the stats socket
 *    and agent_wake_fd (an eventfd) until a message, a 100 ms housekeeping tick (flow expiry,
 *    link state) or a Packet-In.  Before it sleeps it sets agent_sleeping and re-checks
 *    pin_ring; a worker that enqueued a Packet-In and sees agent_sleeping set clears it and
 *    writes the eventfd (ofs_wake_agent), so there is one wake-up per sleep at most and a
 *    busy datapath costs the agent's core ~10 wake-ups/s instead of a 2 ms poll's 500+.
 *
 * Flow lookup: a wildcard lookup per table reached through struct ofs_lookup_ops (so
 * dut/classifier can replace the simple priority-sorted list), behind one exact-match flow cache
 * per worker (4-way set-associative, OFS_CACHE_SIZE buckets).  Every published index starts
 * with struct ofs_index_hdr: a serial number unique over the process lifetime and the union of
 * its flows' masks ("fields used", as compacted key words).  The cache key is the packet key
 * ANDed with that union, compacted to the used words, plus the serial: two packets equal there
 * match exactly the same flows of that index, so the cached answer is the index's own answer.
 * An entry is valid only for the very index it was computed from (serial compare), so a commit
 * needs no cache flush: a republished table gets a new serial and its old entries simply never
 * hit again, while other tables' entries stay hot.  The index (and the flows it points to)
 * outlives every lookup of the burst that loaded it, by RCU.  Tables whose flows use more than
 * OFS_CK_WORDS key words bypass the cache.
 *
 * Limits: OFS_MAX_PORTS ports (OpenFlow port numbers 1..254), OFS_N_TABLES tables,
 * OFS_MAX_GROUPS groups, OFS_MAX_METERS meters; single-segment mbufs are assumed for header
 * rewrites (multi-segment frames are linearised first).
 * Byte order: struct ofs_key is network order (see flowkey.h); everything else host order.
 */
#ifndef OFB_OFSWITCH_H
#define OFB_OFSWITCH_H

#include <stdint.h>
#include <stdbool.h>
#include <rte_common.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_rcu_qsbr.h>
#include <rte_spinlock.h>
#include <rte_ethdev.h>
#include "ofp13.h"
#include "flowkey.h"

#define OFS_MAX_PORTS 16
#define OFS_N_TABLES 64
#define OFS_MAX_GROUPS 1024
#define OFS_MAX_METERS 1024
#define OFS_MAX_BANDS 8
#define OFS_MAX_BUCKETS 32
#define OFS_MAX_WORKERS 16
#define OFS_BURST 32
#define OFS_CACHE_SIZE 8192 /* buckets per worker (x OFS_CACHE_WAYS entries), power of 2 */
#define OFS_MAX_PKT 9216

struct ofs_flow {
	/* ---- hot: what a cache hit touches, in the first cache line ---- */
	uint64_t packets, bytes;     /* written by workers */
	const uint8_t *apply;        /* decoded instructions (point into insts) */
	const uint8_t *write;
	uint16_t apply_len, write_len;
	uint16_t priority;
	uint8_t goto_table;          /* 0xff: none */
	uint8_t table_id;
	bool has_write_md, clear_actions;
	uint16_t idle_timeout;
	uint32_t meter_id;           /* 0: none */
	uint64_t last_used_ns;       /* written by workers when idle_timeout */
	uint64_t cookie;
	/* ---- cold ---- */
	uint16_t hard_timeout, flags;
	uint64_t md_value, md_mask;
	struct ofs_match match;
	/* raw wire forms, returned as-is by flow stats */
	uint8_t *match_raw; uint16_t match_raw_len;  /* padded ofp_match */
	uint8_t *insts; uint16_t insts_len;
	uint64_t created_ns;
	struct ofs_flow *next;       /* agent-private list linkage */
	struct ofs_flow *hnext;      /* agent-private exact-match hash chain */
	uint32_t hash;               /* of (priority, match) */
};

/* Every index a backend's build() returns starts with this header (see "Flow lookup" above).
 * Filled by ofs_index_hdr_init() on the agent thread before the index is published. */
#define OFS_CK_WORDS 7       /* cacheable tables use at most this many key words */
struct ofs_index_hdr {
	uint64_t serial;             /* unique per built index, never 0 */
	uint8_t n_words;             /* key words the flows' masks touch (may exceed OFS_CK_WORDS) */
	uint8_t word[OFS_KEY_WORDS]; /* which words, ascending */
	uint64_t mask[OFS_KEY_WORDS];/* union mask of word[i] */
};
void ofs_index_hdr_init(struct ofs_index_hdr *h, struct ofs_flow *const *flows, uint32_t n);

/* The wildcard lookup of one table. The agent calls everything but lookup; workers only call
 * lookup, on an index the agent published. */
struct ofs_lookup_ops {
	const char *name;
	/* Build a read-only index over flows[0..n) (any order). NULL on failure. */
	void *(*build)(struct ofs_flow *const *flows, uint32_t n);
	/* Highest-priority flow whose match covers key, or NULL. Lock-free, any worker. */
	struct ofs_flow *(*lookup)(const void *index, const struct ofs_key *key);
	void (*destroy)(void *index);
};
extern const struct ofs_lookup_ops ofs_lookup_simple;
#ifdef OFS_HAVE_CLASSIFIER
/* dut/classifier ("filtered merged tuples"); the profile calls it "trie" */
extern const struct ofs_lookup_ops ofs_lookup_trie;
#endif

struct ofs_table {
	void *index;                 /* published (RCU) */
	struct ofs_flow *flows;      /* agent-private list */
	uint32_t n_flows;
	bool dirty;                  /* agent: index must be rebuilt */
	/* agent-private hash of (priority, match) -> flow, so ADD/strict commands need no scan */
	struct ofs_flow **htab;
	uint32_t hsize;              /* power of two, 0 = none yet */
};

struct ofs_bucket {
	uint16_t weight;
	uint32_t watch_port, watch_group;
	const uint8_t *actions; uint16_t actions_len;
	uint64_t packets, bytes;
};

struct ofs_group {
	uint32_t id;
	uint8_t type;
	uint16_t n_buckets;
	struct ofs_bucket buckets[OFS_MAX_BUCKETS];
	uint8_t *raw_buckets; uint16_t raw_len;
	uint64_t packets, bytes;
	uint64_t created_ns;
	uint32_t ref_count;
};

struct ofs_band {
	uint16_t type;
	uint32_t rate, burst;
	uint8_t prec_level;
	double tokens, depth;
	uint64_t packets, bytes;
};

struct ofs_meter {
	uint32_t id;
	uint16_t flags;
	uint16_t n_bands;
	struct ofs_band bands[OFS_MAX_BANDS];
	uint8_t *raw_bands; uint16_t raw_len;
	rte_spinlock_t lock;
	uint64_t last_ns;
	uint64_t packets, bytes;
	uint64_t created_ns;
};

struct ofs_port {
	uint32_t ofport;
	uint16_t dpdk_id;
	uint16_t n_txq;
	char name[16];
	uint8_t mac[6];
	uint32_t config;             /* OFPPC_* */
	bool link_up;
	uint64_t created_ns;
};

struct ofs_port_stats { uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_dropped, rx_dropped; };

/* One worker's tx queue on one port: what the tx buffer's error callback (ofs_tx_unsent)
 * needs to count what the queue did not take. */
struct ofs_txq {
	uint16_t port_id, queue_id;
	struct ofs_port_stats *stats;
};

/* Exact-match flow cache: OFS_CACHE_SIZE buckets of OFS_CACHE_WAYS ways. A bucket (one cache
 * line) holds the ways' hash signatures and results; the compacted keys live in a parallel
 * array (ofs_worker.cache_keys, one 64-byte line per way: index serial + key words), touched
 * only when a signature matches. */
#define OFS_CACHE_WAYS 4
struct ofs_cache_entry {         /* one bucket */
	uint32_t sig[OFS_CACHE_WAYS];
	struct ofs_flow *flow[OFS_CACHE_WAYS];  /* NULL: cached miss */
	uint8_t valid;               /* bit per way */
} __rte_cache_aligned;
struct ofs_cache_keys {          /* the keys of one bucket */
	struct {
		uint64_t serial;     /* ofs_index_hdr.serial of the index that answered */
		uint64_t w[OFS_CK_WORDS];
	} way[OFS_CACHE_WAYS];
} __rte_cache_aligned;

struct ofs_worker {
	unsigned lcore_id;
	unsigned idx;                /* RCU thread id */
	uint16_t rx_ports[OFS_MAX_PORTS];
	uint16_t n_rx_ports;         /* indexes into ofs_dp.ports */
	struct rte_eth_dev_tx_buffer *txb[OFS_MAX_PORTS];
	struct ofs_txq txq[OFS_MAX_PORTS];   /* error-callback context of txb[] */
	struct ofs_port_stats port_stats[OFS_MAX_PORTS];
	uint64_t lookup_count[OFS_N_TABLES];
	uint64_t matched_count[OFS_N_TABLES];
	struct ofs_cache_entry *cache;
	struct ofs_cache_keys *cache_keys;
	uint64_t cache_hits, cache_misses;
	struct rte_mempool *pool;
} __rte_cache_aligned;

/* A packet for the controller (worker -> agent). */
struct ofs_pin {
	uint8_t reason, table_id;
	uint64_t cookie;
	uint32_t in_port;
	uint64_t metadata, tunnel_id;
	uint16_t total_len, data_len;
	uint8_t data[];
};

/* A PACKET_OUT (agent -> worker 0). */
struct ofs_pout {
	uint32_t in_port;
	uint16_t actions_len, data_len;
	uint8_t *actions;            /* points into buf */
	uint8_t *data;
	uint8_t buf[];
};

struct ofs_dp {
	uint64_t dpid;
	unsigned n_workers;
	struct ofs_worker workers[OFS_MAX_WORKERS];
	struct ofs_port ports[OFS_MAX_PORTS];
	unsigned n_ports;
	int8_t port_by_of[256];      /* OpenFlow port number -> ports[] index, -1 none */
	struct ofs_table tables[OFS_N_TABLES];
	struct ofs_group *groups[OFS_MAX_GROUPS];   /* published pointers, unordered */
	struct ofs_meter *meters[OFS_MAX_METERS];
	const struct ofs_lookup_ops *lookup_ops;
	volatile uint64_t gen;       /* bumped after every publish */
	struct rte_rcu_qsbr *qsbr;
	struct rte_ring *pin_ring, *pout_ring;
	uint16_t miss_send_len;
	uint16_t config_flags;
	unsigned idle_sleep_us;
	volatile bool force_quit;
	/* agent wake-up (see "The agent does not poll" above); agent_sleeping is only ever set
	 * by the agent loop after it opened agent_wake_fd, so unit tests never write to it */
	uint32_t agent_sleeping;
	int agent_wake_fd;
};
extern struct ofs_dp ofs_dp;

static inline int ofs_port_idx(uint32_t ofport)
{
	return ofport < 256 ? ofs_dp.port_by_of[ofport] : -1;
}

uint64_t ofs_now_ns(void);

/* datapath.c */
int ofs_worker_main(void *arg);
void ofs_wake_agent(void);
void ofs_tx_unsent(struct rte_mbuf **pkts, uint16_t n, void *txq);
void ofs_run_packet_out(struct ofs_worker *w, struct ofs_pout *po);
struct ofs_group *ofs_group_find(uint32_t id);
struct ofs_meter *ofs_meter_find(uint32_t id);

/* agent.c */
struct ofs_agent_cfg {
	char host[64];
	uint16_t port;
	const char *stats_sock;
};
void *ofs_agent_main(void *cfg);
/* Validate an action list. table_id is 0xff outside a flow. Returns 0 or OFS_ERR(). */
uint32_t ofs_actions_check(const uint8_t *a, size_t len, const struct ofs_match *m,
			   bool in_packet_out);

#endif
