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
 * O(rules + 256) per byte and node).  A node stops splitting at <= DT_LEAF
 * rules, when no split makes both children smaller, or at depth DT_MAX_DEPTH.
 * Leaves list their rules in rank order (priority desc, id asc): the first
 * live match in a leaf is that leaf's answer.
 *
 * Trees (CutSplit-like partition).  Rules that wildcard a byte on which most
 * others are specific are copied into both children of every split on it.  So
 * the rules are first partitioned into up to DT_MAX_TREES groups by which of
 * the two most discriminating 4-byte-aligned fields they are "small" in (see
 * dtree.c, group_of); each group gets its own tree, a lookup walks all trees
 * and takes the best rank (trees in order of their best rank, skipped when
 * they cannot beat the match found).
 *
 * Layout: one array of 8-byte slots; an inner slot holds (byte, point, index
 * of its two children, adjacent, 16-byte aligned), a leaf slot (entry start,
 * count).  Leaf entries are the rules' value and mask words (2 x nwk uint64,
 * nwk = key_len / 8 rounded up) plus the rule's rank.  Batched lookups walk
 * DT_LANES keys interleaved (prefetching each key's next slot) so the ~15-25
 * dependent loads per key overlap.
 *
 * Invariants: immutable after build except each rule's del_v (one atomic
 * 64-bit store by the writer, ofb_dtree_kill).  A rule is live for a reader at
 * version v when add_v <= v < del_v.  Rank r < s means r beats s.
 *
 * Concurrency: built by the writer (or any thread) from a snapshot, published
 * by the caller with a release store; readers only read.  Freed by the caller
 * after every reader left (classifier.c's epoch reclamation).
 *
 * Limits: key_len 1..128 bytes (OFB_CLS_MAX_KEY_LEN); up to 2^31 leaf entries
 * (the build fails with a message when the copies exceed DT_MAX_COPIES x the
 * rules); 2^32-2 rules.  Byte order: bytes as given, most significant first
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
struct ofb_dtree *ofb_dtree_build(uint32_t key_len, const struct ofb_dtree_rule *rules, size_t n, unsigned flags,
                                  char *err, size_t errlen);
void ofb_dtree_free(struct ofb_dtree *);
size_t ofb_dtree_bytes(const struct ofb_dtree *);
uint32_t ofb_dtree_rules(const struct ofb_dtree *);
uint32_t ofb_dtree_trees(const struct ofb_dtree *);
uint64_t ofb_dtree_entries(const struct ofb_dtree *);  /* leaf entries (rule copies) */

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
