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
 * byte (scalar: OFB_CLS_SIMD=scalar, longer keys); and one contiguous block
 * per leaf (dtree.c, emit_leaf): count; two filter bytes (the key bytes where
 * the entries have the most distinct specific (value, mask) pairs) with, per
 * 16 entries, a mask column and a value column for each (16 + 16 bytes);
 * the entries' ranks (u32, rank order); the entries.  An entry is the rule's
 * value bytes and a 16-bit id into a mask table of the set's distinct masks
 * (round16(key_len + 2) bytes: 16 for 5-tuple keys; ClassBench-like 100k sets
 * have 900-1500 masks, the table stays in cache), or the value and mask words
 * (2 x nwk words) when a set has > 65536 distinct masks (OFB_DTREE_MID=0
 * forces it).  A leaf check filters the entries on the two key bytes (SSE2:
 * and + compare + movemask per column; scalar: SWAR, 8 entries per 64-bit
 * word), then checks only the passing entries in full, in rank order: the
 * first live one is the leaf's answer.  Batched lookups take DT_LANES (16)
 * keys and walk every tree for all of them interleaved (up to 64 chains),
 * prefetching each next super node and, at a walk's end, its leaf block's
 * head (count, filter columns, ranks: 2-3 lines); then filter every leaf and
 * prefetch its first candidate entry; then scan tree by tree.  After the build all of it moves into one
 * 2 MiB-aligned mapping advised MADV_HUGEPAGE (OFB_CLS_HUGEPAGES=0: heap).
 *
 * Measured (experiments/classifier/LOG.md "dtree", "Compact leaves"; experiments/classifier/2026-11-24-leaf; AMD
 * EPYC AVX2 VM, shared 2-core box): ClassBench-like 100k, batched (32 keys
 * per call), cls-bench medians of 3 on the AVX2 path (classifier.c's dtree):
 * cb_acl 9.97 Mlps, cb_fw 4.45, cb_ipc 7.14 (the first dtree, before compact
 * leaves, in the same runs: 7.29, 3.76, 5.86); rte_acl in the same runs 34.6,
 * 22.1 (best 36.0), 30.9: NOT its rate (3.5-5x short).  Where the time goes
 * (cb_acl, dtprobe): the walks alone 34-37 Mlps (27-29 ns per key, compute:
 * 2 trees x ~5 super nodes); the leaves add 25 ns per key when in L1/L2, 58
 * in L3, 70 cold (their latency is not hidden).  Tree bytes per rule: acl
 * 156, fw 353, ipc 175 (15-35 MB at 100k; rte_acl 105-112).  Copies per rule
 * (leaves of 16): acl 3.0, ipc 3.7, fw 10.0; builds 0.25 / 0.31 / 0.6-0.9 s.
 * Single lookups are latency-bound (~12 dependent misses): 1.6-3.8 Mlps, not
 * above OURS' 2.2-3.9 on these sets.  Rules with arbitrary (non-prefix) masks
 * get superset ranges: the tree degrades towards long leaves (correct, slow).
 * Those sets were shadowed (priority in generation order: 28-145 live answers);
 * with priority by specificity (traces/rulesets.py since 2026-11-24 13:10) the
 * tree is unchanged in speed (batched AVX2 10.2 / 4.5 / 6.8 Mlps, medians of 3)
 * while rte_acl falls to 2.05 on cb_acl (5 KB per rule) and does not build
 * fw/ipc in 8 GB, and OURS to 0.68 / 0.25 / 0.56 (docs/results.md).
 *
 * Kills (ofb_dtree_kill, ofb_dtree_del_v) find a rule's rank by id in a
 * direct table (4 bytes per id of the tree's id span) when the span is
 * < 4 x rules + 1024, else by binary search over (id, rank) pairs sorted by
 * id (OFB_DTREE_RID=0 forces the search: tests).
 *
 * Invariants: immutable after build except each rule's del_v (one atomic
 * 64-bit store by the writer, ofb_dtree_kill).  A rule is live for a reader at
 * version v when add_v <= v < del_v.  Rank r < s means r beats s.
 *
 * Concurrency: built by the writer (or any thread) from a snapshot, published
 * by the caller with a release store; readers only read.  Freed by the caller
 * after every reader left (classifier.c's epoch reclamation).
 *
 * Limits: key_len 1..128 bytes (OFB_CLS_MAX_KEY_LEN); leaf blocks <= 2 GiB
 * in all (refs hold 16-byte offsets in 27 bits: over it the build fails with
 * a message); 65536 distinct masks for 16-byte entries (more: (value, mask)
 * entries, slower); 2^31 super nodes; once the
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
#define OFB_DTREE_DFA_ONE 4u   /* with OFB_DTREE_DFA: the DFA only if all rules fit one DFA (else the tree alone) */
#define OFB_DTREE_DFA_AUTO 32u  /* with OFB_DTREE_DFA: one DFA, else the partitioned DFA within AUTO's state
                                   budget (dfa.h's OFB_BDFA_AUTO), else the tree alone */
#define OFB_DTREE_AVX2 8u      /* the DFA's lockstep walk (dfa_flat.h) on AVX2 */
#define OFB_DTREE_AVX512 16u   /* ... on AVX-512 (neither: scalar) */
struct ofb_cls_tuning;   /* classifier.h: the dtree_* and dfa_* knobs, no_hugepages; NULL = defaults */
struct ofb_dtree *ofb_dtree_build(uint32_t key_len, const struct ofb_dtree_rule *rules, size_t n, unsigned flags,
                                  const struct ofb_cls_tuning *tu, char *err, size_t errlen);
void ofb_dtree_free(struct ofb_dtree *);
size_t ofb_dtree_bytes(const struct ofb_dtree *);
uint32_t ofb_dtree_rules(const struct ofb_dtree *);
uint32_t ofb_dtree_trees(const struct ofb_dtree *);
uint64_t ofb_dtree_entries(const struct ofb_dtree *);  /* leaf entries (rule copies) */
size_t ofb_dtree_dfa_bytes(const struct ofb_dtree *);  /* the DFA's part of ofb_dtree_bytes (0 without) */
int ofb_dtree_dfa_over(const struct ofb_dtree *);      /* 1: OFB_DTREE_DFA asked, rules over the DFA's budget */

/* The rule partition dtree shares with dfa: partition.h (ofb_dt_partition). */

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
