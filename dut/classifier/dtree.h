/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OFB_CLS_DTREE_H
#define OFB_CLS_DTREE_H 1

/*
 * Compiled decision tree for the bulk of a rule set (internal to the classifier
 * library; classifier.h's OFB_CLS_ALGO_DTREE puts it behind the public API with
 * OURS' tuple tables as the delta of rules inserted since the tree was built).
 * ===========================================================================
 *
 * Goal: ClassBench-like 5-tuple sets (prefixes, port ranges expanded to
 * prefixes, wildcards) at rte_acl's batched rate on one core, while the
 * library keeps what rte_acl cannot do (incremental updates that never block
 * lookups: classifier.c).
 *
 * Structure (HyperSplit-like).  Every key byte is a dimension.  A rule's
 * projection on byte d is the range [value_d & mask_d, value_d | ~mask_d]:
 * exact for prefix bytes (0xff, 0xf0, 0x00, ...), a superset for other masks
 * (the leaf checks the full value/mask, so any mask is correct).  A node
 * splits its region on one byte at one point (key byte <= point: child 0,
 * else child 1); a rule whose range straddles the point goes to both children.
 * The split is the byte and point that minimise max(rules left, rules right),
 * then their sum (per-byte 256-bucket histograms of the clipped range ends,
 * O(rules + 256) per byte and node).  A node stops splitting at <= DT_LEAF (16)
 * rules, when no split makes both children smaller, or at depth DT_MAX_DEPTH.
 * Leaves list their rules in rank order (priority desc, id asc): the first
 * live match in a leaf is that leaf's answer.
 *
 * Trees (CutSplit-like partition).  Rules that wildcard a byte on which most
 * others are specific are copied into both children of every split on it.  So
 * the rules are first partitioned into up to DT_MAX_TREES (4) groups
 * (dtree.c, choose_groups): greedily, the byte on which most ungrouped rules
 * are "small" (their range there spans < 16 values; only bytes where the small
 * rules take >= 64 distinct values count) takes those rules as a group, up to
 * 3 times or until < 5 % are left; the rest is the last group.  ClassBench-
 * like sets: src-IP-small, dst-IP-small, the rest (2-4 trees).  Each group
 * gets its own tree; a lookup walks all trees and takes the best rank (trees
 * in order of their best rank, skipped when they cannot beat the match).
 *
 * Layout.  The builder makes a binary tree (8-byte slots), then lays out
 * what lookups read: super nodes of 3 levels (7 splits, 8 children, 64 bytes:
 * dims, points, child refs), walked with one SSE4 pshufb of the key by the 7
 * dims and one signed compare (keys <= 16 bytes; OFB_DTREE_SIMD) or byte by
 * byte (scalar: OFB_CLS_SIMD=scalar, longer keys); two-line leaf headers
 * (count, entry index, a filter byte chosen per leaf and (value, mask) of each
 * of its <= 16 entries at that byte, their ranks); entries of 2 x nwk words (value, mask) in
 * leaf order.  A lookup reads the header, filters on one key byte, then reads
 * only the entries that pass.  Batched lookups walk DT_LANES (16) keys
 * interleaved, prefetching each key's next super node, its leaf header at the
 * walk's end, and its first candidate entry before the scan.  After the build
 * all of it moves into one 2 MiB-aligned mapping advised MADV_HUGEPAGE
 * (OFB_CLS_HUGEPAGES=0: heap).
 *
 * Measured (README.md "dtree"; measured/2026-11-24-dtree; AMD EPYC AVX2 VM,
 * shared 2-core box, load 1.3-5): ClassBench-like 100k, batched (32 keys per
 * call), cls-bench medians of 3 on the AVX2 path (classifier.c's dtree): cb_acl
 * 6.00 Mlps, cb_fw 3.48, cb_ipc 4.90; rte_acl in the same runs 32.1, 36.1,
 * 30.0: NOT its rate (5.4-10x short); OURS 3.75, 2.15, 3.51.  Where the
 * time goes (cb_acl): the walk alone (2 trees, ~6 super nodes each) 22.5
 * Mlps; the leaves (2 per key, in DRAM/L3: 20-40 MB of tree at 100k) take
 * the rest.  Copies per rule (leaves of 16): acl 3.0, ipc 3.7, fw 10.0
 * (with leaves of 8: 4.6, 6.7, 35.8 and fw built in 2.4 s); builds 0.27 /
 * 0.31 / 0.67 s.
 * Single lookups are latency-bound (~14 dependent misses): 1-2.7 Mlps, below
 * OURS' 3.4 on these sets.  Rules with arbitrary (non-prefix) masks get
 * superset ranges: the tree degrades towards long leaves (correct, slow).
 *
 * Invariants: immutable after build except each rule's del_v (one atomic
 * 64-bit store by the writer, ofb_dtree_kill).  A rule is live for a reader at
 * version v when add_v <= v < del_v.  Rank r < s means r beats s.
 *
 * Concurrency: built by the writer (or any thread) from a snapshot, published
 * by the caller with a release store; readers only read.  Freed by the caller
 * after every reader left (classifier.c's epoch reclamation).
 *
 * Limits: key_len 1..128 bytes (OFB_CLS_MAX_KEY_LEN); 2^31 leaves; once the
 * copies reach DT_MAX_COPIES x the rules the remaining nodes become (long)
 * leaves instead of splitting further; 2^32-2 rules; the SIMD walk needs
 * keys <= 16 bytes (longer keys walk scalar).  Out of memory: NULL and a
 * message in err.  Byte order: bytes as given, most significant first
 * inside a byte (prefix bytes are ranges); the library never reorders key
 * bytes.
 */

#include <stddef.h>
#include <stdint.h>

#define DT_NONE UINT32_MAX

struct ofb_dtree_rule {
    uint32_t prio, id;
    uint64_t handle;
    const uint64_t *value, *mask;   /* nwk words each, value already masked */
    uint64_t add_v, del_v;          /* live for readers at add_v <= v < del_v */
};

struct ofb_dtree;

/* Build from n rules (any order, distinct ids).  NULL on failure with a message
 * in err. */
#define OFB_DTREE_SIMD 1u   /* flag: SSE4.2/AVX2 lookups (keys <= 16 bytes; else scalar) */
#define OFB_DTREE_DFA 2u    /* flag: also build dfa.h's DFA over the same ranks; lookups ask it
                               first and walk the tree only when its answer is not live at v */
struct ofb_dtree *ofb_dtree_build(uint32_t key_len, const struct ofb_dtree_rule *rules, size_t n, unsigned flags,
                                  char *err, size_t errlen);
void ofb_dtree_free(struct ofb_dtree *);
size_t ofb_dtree_bytes(const struct ofb_dtree *);
uint32_t ofb_dtree_rules(const struct ofb_dtree *);
uint32_t ofb_dtree_trees(const struct ofb_dtree *);
uint64_t ofb_dtree_entries(const struct ofb_dtree *);  /* leaf entries (rule copies) */
size_t ofb_dtree_dfa_bytes(const struct ofb_dtree *);  /* the DFA's part of ofb_dtree_bytes (0 without) */
int ofb_dtree_dfa_over(const struct ofb_dtree *);      /* 1: OFB_DTREE_DFA asked, rules over the DFA's budget */

/* Best live rule for a key (key_len bytes) at version v: its rank, or DT_NONE. */
uint32_t ofb_dtree_lookup(const struct ofb_dtree *, const uint8_t *key, uint64_t v);
/* n keys (any n) at version v: ranks into rank_out. */
void ofb_dtree_lookup_batch(const struct ofb_dtree *, const uint8_t *const keys[], size_t n, uint64_t v,
                            uint32_t rank_out[]);
/* What a rank stands for. */
void ofb_dtree_rank_info(const struct ofb_dtree *, uint32_t rank, uint32_t *prio, uint32_t *id, uint64_t *handle);
/* Rule `id` is dead for readers at versions >= v (writer).  0, or -1 if not here. */
int ofb_dtree_kill(struct ofb_dtree *, uint32_t id, uint64_t v);
/* del_v of rule `id` (V_INF = alive), or 0 if not here (writer). */
uint64_t ofb_dtree_del_v(const struct ofb_dtree *, uint32_t id);
/* The rules (rank order) for a rebuild: the rank-th rule's fields; value and
 * mask point into the tree (writer). */
void ofb_dtree_rule_at(const struct ofb_dtree *, uint32_t rank, struct ofb_dtree_rule *out);
/* The live (at v) rule with this priority, value (masked) and mask words, the
 * lowest id of equals; 0 if none.  Linear in the rules (writer, delete by content). */
uint32_t ofb_dtree_find(const struct ofb_dtree *, uint32_t prio, const uint64_t *value, const uint64_t *mask,
                        uint64_t v);
/* classifier.c's publication stamp: a reader whose version is older than
 * min_v re-reads the version (see classifier.c, DTREE). */
void ofb_dtree_set_min_v(struct ofb_dtree *, uint64_t v);
uint64_t ofb_dtree_min_v(const struct ofb_dtree *);

#endif
