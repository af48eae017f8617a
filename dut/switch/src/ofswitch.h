/* ofswitch.h -- shared state of the ofbench OpenFlow 1.3 software switch (dut/switch).
 *
 * Goals: forward at DPDK speed through an OpenFlow 1.3 pipeline (multiple tables, groups,
 * meters) while an OpenFlow agent changes the tables at any time, never stopping forwarding.
 *
 * Threads and who may call what:
 *  - Worker lcores (1..N, the EAL main lcore is worker 0) own the rx queue 0 of a subset of
 *    ports and their own tx queue on every port. They only READ flows, tables, groups, meters
 *    config and ports; they WRITE only per-worker counters (struct ofs_worker), per-flow
 *    counters (plain adds: with one worker on the flow's hot line, with several each worker
 *    in its own array, flowarena.h, summed by the agent; a fast cache entry holds them until
 *    its line is flushed, struct ofs_cache_line), per-group counters (relaxed
 *    atomics, no locks), a flow's last_used_ns (idle timeouts), and meter buckets (one
 *    spinlock per meter, taken only by packets that hit that meter).
 *  - The agent thread (a DPDK control thread, ofs_agent_main) is the ONLY writer of flows, tables,
 *    groups and meters. Flow tables: see flowtable.h (staged incremental updates, one publish
 *    per commit, deferred frees). Groups and meters: objects in an id table (idtable.h, O(1)
 *    lookup by id) published with release stores; a replaced or removed object is freed after
 *    a QSBR grace period (ofs_defer_free). Workers report a quiescent state once per poll
 *    loop and go offline while they idle-sleep.
 *  - Workers hand packets for the controller to the agent through pin_ring (MP/SC); the agent
 *    hands PACKET_OUTs to worker 0 through pout_ring (SP/SC). So workers never touch the TCP
 *    socket and the agent never touches a NIC queue.
 *  - librte_vhost's event thread (vhost-user ports, vhost_port.h) only publishes or clears a
 *    port's guest device id; clearing waits for a QSBR grace period of the workers.
 *  - The agent does not poll: it sleeps in poll() on the controller sockets, the stats socket
 *    and agent_wake_fd (an eventfd) until a message, a 100 ms housekeeping tick (flow expiry,
 *    link state, keepalive, reconnects) or a Packet-In.  Before it sleeps it sets agent_sleeping and re-checks
 *    pin_ring; a worker that enqueued a Packet-In and sees agent_sleeping set clears it and
 *    writes the eventfd (ofs_wake_agent), so there is one wake-up per sleep at most and a
 *    busy datapath costs the agent's core ~10 wake-ups/s instead of a 2 ms poll's 500+.
 *
 * Flows live in the flow arena (flowarena.h: hugepage memory, 64-byte aligned slots); a packet
 * that hits the common flow (one output, nothing else) reads only its first cache line, which
 * carries the decoded output (fast_out), never the action bytes.
 *
 * Flow lookup: a wildcard lookup per table reached through struct ofs_lookup_ops (so dut/classifier
 * can replace the simple priority-sorted list), behind one exact-match flow cache per worker
 * (skewed 2-way over --cache-lines lines, struct ofs_cache_line).  The lookup structure of a
 * table is updated in place, incrementally (flowtable.h: a FLOW_MOD stages only the rules it
 * touches, a commit publishes them all at once), and what workers load per table is an immutable
 * struct ofs_table_view republished by every commit of that table: a serial number unique over the
 * process lifetime, the union of the table's flow masks ("fields used", as compacted key words) and
 * the lookup structure.  The cache key is the packet key ANDed with that union, compacted to the
 * used words, plus the serial: two packets equal there match exactly the same flows, so the cached
 * answer is the table's own answer.  An entry is tagged with the view it was computed under (epoch
 * serial, version); a commit needs no cache flush: a small commit keeps the epoch and its log lets
 * older entries be revalidated on their next hit (struct ofs_table_view), a large one opens a new
 * epoch whose entries start empty, and other tables' entries are untouched.  Views and removed
 * flows outlive every lookup of the burst that loaded them (QSBR, reclaimed without blocking the
 * agent); the lookup structure's own memory is protected by its reader protocol
 * (reader_enter/leave, once per poll loop and table used). Tables whose flows use more than
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
#include "idtable.h"

#define OFS_MAX_PORTS 16
#define OFS_N_TABLES 64
#define OFS_MAX_GROUPS OFS_IDT_CAP
#define OFS_MAX_METERS OFS_IDT_CAP
#define OFS_MAX_BANDS 8
#define OFS_MAX_BUCKETS 32
#define OFS_MAX_WORKERS 16
#define OFS_BURST 32
#define OFS_TX_DRAIN_US 100  /* partial tx buffers wait at most this long while busy */
#define OFS_MAX_PKT 9216
#define OFS_MAC_TABLE 4096  /* per worker, power of 2: fail-standalone MAC learning */
/* Rig measurements of a worker (issue 44, struct ofs_worker): log2 histograms, cumulative so a
 * client reads them before and after a trial and takes the difference (no reset message).
 * gap_hist[i]: loop passes that took [2^i, 2^(i+1)) x gap_floor_tsc (the last bucket: longer);
 * passes shorter than the floor (~15 us) are not counted. backlog_hist[i]: runs of 2^i..2^(i+1)-1
 * consecutive full rx bursts on one port (the ring held at least that many bursts). */
#define OFS_RIG_BUCKETS 16

struct ofs_flow_ctr;
/* A flow: one slot of the flow arena (flowarena.h: hugepage memory, 64-byte aligned slots).
 * The first cache line is all a packet that hits the flow reads or writes in the common case
 * (OFS_FLOW_HOT_END); the rest is read by packets with less common instructions or by the
 * agent. */
struct ofs_flow {
	/* ---- hot: the first cache line ---- */
	uint64_t packets, bytes;     /* one worker: its plain adds; several: unused (0) */
	struct ofs_flow_ctr *ctr;    /* per-worker counters (flowarena.h), worker w at
				      * ctr[w * ofs_arena_ctr_stride] */
	uint64_t cookie;
	const uint8_t *apply;        /* decoded instructions (point into insts) */
	uint32_t fast_out;           /* the common flow: apply-actions are one OUTPUT to this
				      * port (1..OFPP_MAX) and nothing else to do (no write,
				      * clear, metadata, goto, meter); 0: not that flow */
	uint32_t meter_id;           /* 0: none */
	uint16_t apply_len, write_len;
	uint16_t priority;
	uint16_t idle_timeout;
	uint8_t goto_table;          /* 0xff: none */
	uint8_t table_id;
	bool has_write_md, clear_actions;
	bool table_miss;             /* priority 0, no match field: Packet-Ins say NO_MATCH */
	bool in_arena;               /* from ofs_flow_alloc (agent-private) */
	bool replaced;               /* succ is set (release: succ first) */
	/* ---- cold ---- */
	const uint8_t *write;
	uint64_t last_used_ns;       /* written by workers when idle_timeout */
	uint16_t hard_timeout, flags;
	uint64_t md_value, md_mask;
	struct ofs_match match;
	/* raw wire forms, returned as-is by flow stats */
	uint8_t *match_raw; uint16_t match_raw_len;  /* padded ofp_match */
	uint8_t *insts; uint16_t insts_len;
	uint64_t created_ns;
	struct ofs_flow *next, **pprev;  /* agent-private list linkage */
	struct ofs_flow *hnext;      /* agent-private exact-match hash chain */
	struct ofs_flow *succ;       /* the MODIFY's copy that carries on this flow's counts
				      * (agent writes, then sets replaced; workers' counter
				      * flushes read it when replaced is set) */
	uint32_t hash;               /* of (priority, match) */
	uint32_t lookup_id;          /* the lookup backend's handle (agent-private) */
	uint32_t mgroup, mpos;       /* its mask group and place there (agent-private, flowtable.c) */
};
#define OFS_FLOW_HOT_END offsetof(struct ofs_flow, write)
_Static_assert(offsetof(struct ofs_flow, write) <= 64, "a flow's hot part is one cache line");

/* What workers load of one table (see "Flow lookup" above): immutable once published, replaced
 * by every commit of the table, freed after a QSBR grace period.
 *
 * Cache validity across commits: a view belongs to an epoch (serial) and has a version inside
 * it. A cached answer is tagged with (serial, version) of the view it was computed under. A
 * commit that keeps the table's mask union and changes at most OFS_VIEW_LOG flows stays in the
 * epoch (version + 1) and carries in log[] the changes of its recent versions: a cache entry
 * of an older version of the same epoch is revalidated against them instead of being dropped
 * (it stays valid unless its flow was removed, or an added flow matches its key with a
 * priority >= its flow's, or its version is older than the log). Any other commit (union
 * change, bulk change) opens a new epoch, whose serial no cache entry has. */
#define OFS_CK_WORDS 13      /* cacheable tables use at most this many key words */
#define OFS_VIEW_LOG 64      /* changes a view keeps for revalidation */
#define OFS_VERSION_BITS 24  /* cache tag = serial << OFS_VERSION_BITS | version */
struct ofs_change {
	uint32_t version;            /* the commit (inside the epoch) that made it */
	uint16_t priority;           /* added flow's */
	bool added;                  /* else removed */
	const struct ofs_flow *removed; /* compared with cached flows, never dereferenced */
	uint64_t v[OFS_CK_WORDS];    /* added flow's value and mask on the view's words */
	uint64_t m[OFS_CK_WORDS];
};
struct ofs_table_view {
	uint64_t serial;             /* the epoch: unique, never 0, < 2^40 */
	uint32_t version;            /* commits inside the epoch, < 2^OFS_VERSION_BITS */
	uint32_t log_base;           /* log[] holds every change of the versions > log_base */
	const void *lx;              /* the table's lookup structure (lives as long as the table) */
	bool cacheable;              /* false: n_words > OFS_CK_WORDS, or a mask-union transition */
	uint8_t n_words;             /* key words the flows' masks touch (may exceed OFS_CK_WORDS) */
	uint8_t word[OFS_KEY_WORDS]; /* which words, ascending */
	uint64_t mask[OFS_KEY_WORDS];/* union mask of word[i] */
	uint32_t n_log;
	struct ofs_change log[OFS_VIEW_LOG]; /* oldest first */
};

/* A table's wildcard lookup structure. The agent calls create/insert/remove/publish/destroy;
 * workers call lookup, lookup_burst and reader_enter/leave, on a structure reached through a
 * published view. insert/remove only stage a change: readers see the staged changes of a table
 * all at once at publish (and never a half-applied FLOW_MOD). */
struct ofs_lookup_ops {
	const char *name;
	/* An empty structure with n_readers reader slots (worker w uses slot w), or NULL. */
	void *(*create)(unsigned n_readers);
	/* Stage f (f->lookup_id is the backend's). 0, or -1 when out of memory (nothing staged). */
	int (*insert)(void *lx, struct ofs_flow *f);
	/* Stage f's removal (f was inserted, maybe still staged). Cannot fail. */
	void (*remove)(void *lx, struct ofs_flow *f);
	/* Reserve what the next publish needs for the flows staged so far (called by
	 * ofs_table_prepare; insert reserves for its own flow). 0, or -1 when out of memory.
	 * Optional (NULL: publish needs nothing). */
	int (*reserve)(void *lx);
	/* Make every staged change visible at once. With reserve/insert having succeeded it
	 * cannot fail; -1 (out of memory, a broken reservation) leaves nothing of it visible,
	 * and the next publish retries. */
	int (*publish)(void *lx);
	/* Highest-priority visible flow whose match covers key, or NULL. Lock-free, any worker. */
	struct ofs_flow *(*lookup)(const void *lx, const struct ofs_key *key);
	/* The same for n <= OFS_BURST keys at once (out[i] for keys[i]). */
	void (*lookup_burst)(const void *lx, const struct ofs_key *const keys[], unsigned n,
			     struct ofs_flow *out[]);
	/* Bracket a worker's lookups (memory the writer retires stays until it leaves). */
	void (*reader_enter)(const void *lx, unsigned reader);
	void (*reader_leave)(const void *lx, unsigned reader);
	void (*destroy)(void *lx);   /* no reader may be inside */
};
extern const struct ofs_lookup_ops ofs_lookup_simple;
#ifdef OFS_HAVE_CLASSIFIER
/* dut/classifier: "tuple" = its filtered merged tuples (OFB_CLS_ALGO_OURS), "dtree" = its
 * compiled decision tree, the tuples holding the flows added since the tree's build (OFB_CLS_
 * ALGO_DTREE; rebuilt on a thread), "trie" = document 003's hybrid H-Trie/SP-Trie (OFB_CLS_
 * ALGO_HYBRID; a publish rebuilds its delta trie, and now and then the whole trie) */
extern const struct ofs_lookup_ops ofs_lookup_tuple;
extern const struct ofs_lookup_ops ofs_lookup_dtree;
/* dtree's merge threshold (delta flows before a rebuild; 0 = the library's default): the
 * classifier reads no environment, so a test that wants frequent rebuilds sets this */
extern uint32_t ofs_cls_dtree_delta;
extern const struct ofs_lookup_ops ofs_lookup_trie;
/* One default with dut/profiles/schema.py DEFAULT_LOOKUP and the launcher. */
#define OFS_LOOKUP_DEFAULT "tuple"
#define OFS_LOOKUP_NAMES "tuple|dtree|trie|simple"
#else
#define OFS_LOOKUP_DEFAULT "simple"
#define OFS_LOOKUP_NAMES "simple"
#endif
/* The backend a --lookup name selects, NULL if unknown or not built in. */
const struct ofs_lookup_ops *ofs_lookup_find(const char *name);

struct ofs_table {
	struct ofs_table_view *view; /* published (RCU); NULL until the table's first flow */
	void *lx;                    /* lookup structure, created with the first flow, kept */
	/* ---- agent-private ---- */
	struct ofs_table_view *spare;/* the next view, allocated ahead so a commit cannot fail */
	struct ofs_table_view *spare_grow; /* the uncacheable view of a mask-union growth (idem) */
	uint32_t *mask_bits;         /* per key bit: how many flows' masks set it */
	uint64_t umask[OFS_KEY_WORDS];   /* union of the flows' masks (bits with a count) */
	bool umask_changed;          /* the union changed since the last publish: new epoch */
	uint32_t n_pend;             /* staged changes recorded for the next view's log ... */
	struct ofs_change *pend;     /* ... (OFS_VIEW_LOG of them; more: new epoch) */
	struct ofs_flow *flows;      /* list (doubly linked through next/pprev) */
	uint32_t n_flows;
	bool dirty;                  /* staged changes not yet published */
	/* hash of (priority, match) -> flow, so ADD/strict commands need no scan */
	struct ofs_flow **htab;
	uint32_t hsize;              /* power of two, 0 = none yet */
	/* flows grouped by mask, with their masked values packed: non-strict selection scans
	 * only the groups whose mask contains the request's, without touching the flows */
	struct ofs_mask_group *mgroups;
	uint32_t n_mgroups, cap_mgroups;
	uint32_t *mg_hash;           /* open addressing: mask hash -> group index + 1 */
	uint32_t mg_hash_size;       /* power of two */
};

struct ofs_bucket {
	uint16_t weight;
	uint32_t watch_port, watch_group;
	const uint8_t *actions; uint16_t actions_len;
	uint64_t packets, bytes;
};

struct ofs_group {
	uint32_t id;                 /* first: an idtable object (idtable.h) */
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
	uint32_t id;                 /* first: an idtable object (idtable.h) */
	uint16_t flags;
	uint16_t n_bands;
	struct ofs_band bands[OFS_MAX_BANDS];
	uint8_t *raw_bands; uint16_t raw_len;
	rte_spinlock_t lock;
	uint64_t last_ns;
	uint64_t packets, bytes;
	uint64_t created_ns;
};

_Static_assert(offsetof(struct ofs_group, id) == 0, "an idtable object starts with its id");
_Static_assert(offsetof(struct ofs_meter, id) == 0, "an idtable object starts with its id");

struct ofs_vhost;

struct ofs_port {
	uint32_t ofport;
	uint16_t dpdk_id;            /* an ethdev port; unused when vhost is set */
	uint16_t n_txq;
	char name[16];
	uint8_t mac[6];
	uint32_t config;             /* OFPPC_* */
	bool link_up;
	uint64_t created_ns;
	struct ofs_vhost *vhost;     /* a vhost-user port on librte_vhost (vhost_port.h), or NULL */
	char kif[16];                /* the kernel interface behind an af_packet/af_xdp port (its
				      * devargs' iface=), "": none; its link state is the
				      * kernel's (ofs_kif_link_up), the PMD always says up */
};

struct ofs_port_stats { uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_dropped, rx_dropped; };

/* One worker's tx queue on one port: what the tx buffer's error callback (ofs_tx_unsent)
 * needs to count what the queue did not take. */
struct ofs_txq {
	uint16_t port_id, queue_id;
	struct ofs_port_stats *stats;
};

/* Exact-match flow cache, one per worker: cache_mask + 1 64-byte lines (a power of 2,
 * --cache-lines, default OFS_CACHE_LINES: 16 MiB; ofs_worker_set_cache), skewed 2-way. An
 * entry is one line for a table of at most OFS_CK_LINE1_WORDS key words (tag, flow, words) and
 * two adjacent lines (an even index) for a wider one (the second repeats the tag and holds the
 * rest of the words). A key's entry sits at one of two indexes of its hash (ck_index): a hit
 * reads the entry's own line(s) and nothing else, so a packet that hits touches its frame,
 * this line and its flow's hot line (no bucket of signatures in front of the keys). The tag
 * tells entries of different tables and epochs apart; a line overwritten by another table's
 * entry shows a different tag, so a two-line entry whose second line was taken is a miss.
 *   x[0] of a first line: the flow (NULL: cached miss) | its priority << 48 (revalidation
 *   never reads the flow); pointers above 2^48 are not cached (ck_store).
 *   x[6] of the first line of a table of at most OFS_CK_FAST_WORDS words: the fast word.
 *   A fast entry's flow is the common flow (fast_out, no meter, no idle timeout): bits 56..63
 *   its output's ports[] index + 1 (0: not a fast entry), bits 32..55 packets and 0..31
 *   bytes counted here and not yet added to the flow. A hit on a fast entry forwards without
 *   reading the flow's line: the flow's counts are deferred. They reach the flow when the
 *   line is flushed: before the line is overwritten, when a count would overflow, by the
 *   sweep (every OFS_CTR_SWEEP_US) and by a full flush that the agent asks for before it
 *   reads counts (ofs_counters_sync). A flushed line's flow is valid: a removed flow is
 *   released only after every worker swept or fully flushed since the grace period that
 *   took it out of the views (ofs_counters_swept). A MODIFY's copy carries its
 *   predecessor's counts; what is flushed to the predecessor afterwards goes on to the
 *   copy (ofs_flow.succ). */
#ifndef OFS_CACHE_LINES         /* test_ofswitch_churn builds a tiny one: evictions everywhere */
#define OFS_CACHE_LINES 262144  /* the default per worker (16 MiB), power of 2: 100k entries
				 * fill 38 % of it, where 131072 lines (76 %) left 5 % of
				 * distinct frames missing (docs/results.md "Flow cache size") */
#endif
#define OFS_CACHE_LINES_MIN 64  /* --cache-lines range: a power of 2 in MIN..MAX */
#define OFS_CACHE_LINES_MAX (1u << 26)
#define OFS_CK_LINE1_WORDS 6    /* key words in an entry's first line */
#define OFS_CK_FAST_WORDS 5     /* at most this many: x[6] of the first line is the entry's
				 * fast word (below) */
#define OFS_CTR_SWEEP_US 100000 /* every fast entry's pending counts reach its flow within
				 * this (one sweep); the agent's reads sync (ofs_counters_sync).
				 * A flush costs the entry's line and the flow's: it pays when the
				 * entry was hit several times since the last one */
struct ofs_cache_line {
	uint64_t tag;                /* serial << OFS_VERSION_BITS | version of the view that
				      * answered; 0: empty */
	uint64_t x[7];               /* first line: flow|priority<<48, words 0..5; second
				      * line: words 6..12 */
} __rte_cache_aligned;
_Static_assert(sizeof(struct ofs_cache_line) == 64, "a cache entry's line is one cache line");
_Static_assert(OFS_CK_WORDS <= OFS_CK_LINE1_WORDS + 7, "a wide entry is two lines");

/* Pipeline cache (pipecache.h): per worker OFS_PC_SETS sets of OFS_PC_WAYS entries, an entry
 * the flows (hops) a frame of one key crossed, table after table; in front of each set one
 * line of signatures (struct ofs_pc_set), so a probe reads one line per set and an entry only
 * when its signature matches. w: the key's words (ofs_worker.pc_word, then the layout's two). */
#define OFS_PC_WAYS 8        /* entries per set (one signature line) */
#define OFS_PC_SETS 4096     /* 32768 entries, 4 MiB per worker */
#define OFS_PC_ENTRIES (OFS_PC_SETS * OFS_PC_WAYS)
#define OFS_PC_WORDS 8       /* key words with the layout's two */
#define OFS_PC_HOPS 5        /* tables a stored way crosses at most */
#define OFS_PC_DIRTY OFS_PC_ENTRIES /* programs with pending counts listed (each entry
				* once between flushes; more, by repeats: all flushed) */
struct ofs_pc_set {
	uint64_t gen;                /* the pc_gen its signatures are of; another: every way empty */
	uint32_t sig[OFS_PC_WAYS];   /* way i's key hash | 1; 0: empty */
	uint32_t next;               /* the way the next store into a full set takes */
} __rte_cache_aligned;
_Static_assert(sizeof(struct ofs_pc_set) == 64, "a set's signatures are one line");
struct ofs_pc_entry {
	uint8_t n_hops;
	uint8_t table[OFS_PC_HOPS];
	uint64_t w[OFS_PC_WORDS];    /* 7 in the first line: a short key's hit reads one line */
	struct ofs_flow *flow[OFS_PC_HOPS];  /* the last may be NULL: a miss, dropped */
} __rte_cache_aligned;
_Static_assert(sizeof(struct ofs_pc_entry) == 128, "a pipeline cache entry is two lines");
/* An entry's compiled action program (pipecache.h pc_compile; ofs_worker.pc_prog[i] beside
 * pc[i]): the net effect of its hops' apply-actions on a frame of the entry's key and layout.
 * kind 0: none (the hit replays every hop's actions). */
#define OFS_PC_TAGS 2        /* VLAN tags a compiled frame leaves with at most */
struct ofs_pc_prog {
	uint8_t kind;                /* 0: replay; 1: run this program */
	uint8_t n_dec_ttl;           /* IPv4 TTL decrements (each with its checksum word) */
	uint8_t tags_in, tags_out;   /* VLAN tags at rx (0/1) and at the output (0..2) */
	int8_t len_delta[OFS_PC_HOPS]; /* frame length at hop h minus the received length */
	uint8_t set_mac;             /* bit 0: eth_dst, bit 1: eth_src written */
	uint8_t out;                 /* 1: output to out_port; 0: the frame is dropped */
	bool idle;                   /* a hop's flow has an idle timeout (pend_used_ns) */
	uint32_t out_port;           /* OpenFlow port, or OFPP_IN_PORT */
	uint8_t eth_dst[6], eth_src[6];
	struct { uint16_t tpid, m, v; } tag[OFS_PC_TAGS]; /* outer first: TCI = (rx TCI & m) | v;
				      * tpid 0: the received tag's TPID */
	int16_t l3_ofs;              /* the received frame's IPv4 header (n_dec_ttl) */
	uint8_t max_grow;            /* the most bytes the way's pushes put in front at once */
	bool last_miss;              /* the last hop is a table miss (no flow): dropped */
	/* counts of the program's hits not yet added to the hops' flows (pipecache.h "Counts"):
	 * frames, their received bytes, the burst time of the last one */
	uint32_t pend_pk;
	uint64_t pend_by;
	uint64_t pend_used_ns;
} __rte_cache_aligned;
_Static_assert(sizeof(struct ofs_pc_prog) == 64, "a compiled program is one line");

struct ofs_worker {
	unsigned lcore_id;
	unsigned idx;                /* RCU thread id */
	size_t ctr_off;              /* its flow counters: f->ctr + ctr_off (flowarena.h) */
	uint16_t rx_ports[OFS_MAX_PORTS];
	uint16_t n_rx_ports;         /* indexes into ofs_dp.ports */
	struct rte_eth_dev_tx_buffer *txb[OFS_MAX_PORTS];
	struct ofs_txq txq[OFS_MAX_PORTS];   /* error-callback context of txb[] */
	struct ofs_port_stats port_stats[OFS_MAX_PORTS];
	uint64_t lookup_count[OFS_N_TABLES];
	uint64_t matched_count[OFS_N_TABLES];
	struct ofs_cache_line *cache;
	uint32_t cache_mask;         /* lines - 1 (ofs_worker_set_cache) */
	/* Counts held in cache entries (ofs_cache_line "fast entries"): bit i set = line i holds
	 * packets not yet added to its flow. The sweep flushes the ctr_words words once per
	 * OFS_CTR_SWEEP_US, a word at a time (ctr_sweep_word, due at ctr_next_tsc). */
	uint64_t *ctr_dirty;         /* ctr_words = lines / 64 */
	uint32_t ctr_words;
	uint32_t ctr_sweep_word;
	uint64_t ctr_next_tsc;
	/* read by the agent (atomics): lines with pending counts; sweeps completed (+2 for a
	 * full flush); the last ofs_dp.ctr_flush_seq this worker fully flushed for */
	uint32_t ctr_dirty_lines;
	uint64_t ctr_sweeps;
	uint64_t ctr_ack_seq;
	uint64_t cache_hits, cache_misses;
	uint64_t cache_revalidated;  /* hits on an entry of an older version (ck_revalidate) */
	uint64_t entered;            /* tables whose lookup structure this worker entered */
	/* pipeline cache (pipecache.h): NULL when it could not be allocated; on while the
	 * pipeline has two tables or more whose words fit (ofs_pc_refresh at each pipe_gen) */
	struct ofs_pc_entry *pc;     /* set s's ways: pc[s * OFS_PC_WAYS ...] */
	struct ofs_pc_set *pc_set;   /* set s's signatures */
	struct ofs_pc_prog *pc_prog;  /* pc[i]'s program (NULL: no memory, every hit replays) */
	uint32_t pc_set_mask;        /* OFS_PC_SETS - 1, or ofs_dp.pipe_test_sets - 1 */
	uint32_t pc_sig_mask;        /* ~0, or ofs_dp.pipe_test_sig_mask (forced collisions) */
	uint64_t pc_sig_checks;      /* entries read on a signature match that held another key */
	bool pc_on;
	bool pc_prog_on;             /* stores compile programs, hits run them (!pipe_prog_off) */
	uint8_t pc_n_words;
	uint8_t pc_word[OFS_PC_WORDS];
	uint64_t pc_mask_w[OFS_PC_WORDS];
	uint64_t pc_gen;             /* the ofs_dp.pipe_gen the words were computed at */
	uint64_t pc_hits, pc_stores;
	/* programs with pending counts (indexes into pc_prog, maybe repeated or flushed since):
	 * all flushed by every sweep's end and every full flush (pipecache.h "Counts") */
	uint32_t *pc_dirty;
	uint32_t pc_n_dirty;
	uint64_t pc_prog_hits;       /* hits that ran their entry's compiled program */
	uint64_t burst_now_ns;       /* ofs_now_ns() of the current burst, read at its first
				      * idle-timeout flow (last_used_ns); 0: not read yet */
	/* where the worker's time goes, in TSC cycles, as OVS-DPDK's pmd-stats-show counts it: a
	 * loop pass that received or sent something is busy, one that found nothing idle (its
	 * idle sleep included); the stats socket reports both, so a benchmark can tell whether
	 * the switch or its feed was the limit, and the switch's cycles per packet */
	uint64_t busy_tsc, idle_tsc;
	/* rig measurements (OFS_RIG_BUCKETS): written by this worker only, read by the stats
	 * socket; full_run[p]: the current run of full rx bursts on ports[p] */
	uint64_t gap_floor_tsc;
	uint64_t gap_hist[OFS_RIG_BUCKETS];
	uint64_t backlog_hist[OFS_RIG_BUCKETS];
	uint16_t full_run[OFS_MAX_PORTS];
	/* fail-standalone MAC learning (datapath.c standalone_forward): direct-mapped, this
	 * worker's own; an entry is mac (48 bits) | (ports[] index + 1) << 48, 0 = empty */
	uint64_t mac_learned[OFS_MAC_TABLE];
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
	struct ofs_idtable groups;   /* struct ofs_group by id (idtable.h: O(1) lookup by workers) */
	struct ofs_idtable meters;   /* struct ofs_meter by id */
	const struct ofs_lookup_ops *lookup_ops;
	struct rte_rcu_qsbr *qsbr;
	struct rte_ring *pin_ring, *pout_ring;
	uint16_t miss_send_len;
	uint16_t config_flags;
	/* fail-standalone mode with no controller connected (agent writes, workers read):
	 * received packets bypass the tables; each worker forwards as a learning switch
	 * (ofs_agent_cfg.fail_standalone) */
	bool standalone;
	unsigned idle_sleep_us;
	volatile bool force_quit;
	uint64_t ctr_flush_seq;      /* the agent's last full-flush request (ofs_counters_sync) */
	bool pipe_cache_off;         /* --no-pipe-cache (and the differential test): workers run
				      * every table (read at the next pipe_gen) */
	bool pipe_prog_off;          /* --no-pipe-prog (and the differential test): pipeline-cache
				      * hits replay every hop's actions, no compiled programs (read
				      * at the next pipe_gen) */
	uint32_t pipe_test_sets;     /* the differential test's forced conflicts: 0, or a power
				      * of two <= OFS_PC_SETS, the sets the workers use */
	uint32_t pipe_test_sig_mask; /* 0, or the signature bits kept (forced signature
				      * collisions); both read at the next pipe_gen */
	uint64_t pipe_gen;           /* views published so far (flowtable.c publish_view, release):
				      * the pipeline cache's generation (pipecache.h) */
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

/* Groups and meters by id: O(1), lock-free, any thread (idtable.h). */
static inline struct ofs_group *ofs_group_find(uint32_t id)
{
	return ofs_idt_find(&ofs_dp.groups, id);
}
static inline struct ofs_meter *ofs_meter_find(uint32_t id)
{
	return ofs_idt_find(&ofs_dp.meters, id);
}

/* datapath.c */
int ofs_worker_main(void *arg);
/* Worker: add every pending count of its pipeline-cache programs to their flows. */
void ofs_pc_flush_all(struct ofs_worker *w);
void ofs_wake_agent(void);
void ofs_tx_unsent(struct rte_mbuf **pkts, uint16_t n, void *txq);
void ofs_run_packet_out(struct ofs_worker *w, struct ofs_pout *po);
/* Give worker w its flow cache before it starts: `lines` lines (a power of 2 in
 * OFS_CACHE_LINES_MIN..MAX) at cache and their dirty bitmap (lines / 64 words) at dirty,
 * both zeroed, cache 64-byte aligned. */
void ofs_worker_set_cache(struct ofs_worker *w, struct ofs_cache_line *cache, uint64_t *dirty,
			  uint32_t lines);
/* Agent: every count the workers' cache entries hold is in its flow when this returns (each
 * running worker fully flushed once; a worker with nothing pending is not waited for). */
void ofs_counters_sync(void);
/* Agent: a snapshot of the workers' sweep counts, and whether every worker has swept (or
 * has nothing pending) since it was taken: then no cache entry holds counts of a flow that
 * was out of every view when the snapshot was taken. */
void ofs_counters_snapshot(uint64_t snap[OFS_MAX_WORKERS]);
bool ofs_counters_swept(const uint64_t snap[OFS_MAX_WORKERS]);

/* agent_conn.c: the agent thread (arg: struct ofs_agent_cfg *) */
#ifndef OFS_MAX_CONTROLLERS
#define OFS_MAX_CONTROLLERS 4
#endif
struct ofs_controller_addr { char host[64]; uint16_t port; };
struct ofs_agent_cfg {
	struct ofs_controller_addr ctl[OFS_MAX_CONTROLLERS];  /* --controller, each kept open */
	unsigned n_ctl;
	const char *stats_sock;
	unsigned echo_interval_ms;   /* keepalive: ECHO after this silence, close after 2x; 0 off */
	bool fail_standalone;        /* --fail-mode standalone (else secure) */
	size_t ctl_queue_bytes;      /* --ctl-queue-kb: a connection's output queue limit
				      * (0: OFS_CTL_QUEUE_DEFAULT); past it the connection is dropped */
};
#define OFS_CTL_QUEUE_DEFAULT (4u << 20)
void *ofs_agent_main(void *cfg);
/* agent_flows.c: validate an action list on its own (types, lengths, arguments, ports,
 * groups); prerequisites against the packet: ofs_actions_prereq. Returns 0 or OFS_ERR(). */
uint32_t ofs_actions_check(const uint8_t *a, size_t len, bool in_packet_out);
/* Set-field prerequisites (OF1.3.5 7.2.5, table 12) of an action list run on a packet that
 * ctx describes (a flow's match, or the fields of a PACKET_OUT's frame); ctx is updated with
 * the effect of the list (pushes, pops, set-fields) for what runs after it. action_set: the
 * list is a write-actions set (pops and pushes run before set-fields, whatever the order).
 * 0 or BAD_ACTION/MATCH_INCONSISTENT. */
uint32_t ofs_actions_prereq(const uint8_t *a, size_t len, struct ofs_match *ctx,
			    bool action_set);

#endif
