/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OFB_CLS_DFA_H
#define OFB_CLS_DFA_H 1

/*
 * Byte-stride DFA ("bytedfa") over a rule set (internal to the classifier
 * library; classifier.h's OFB_CLS_ALGO_DFA = dtree.h's compiled tree with this
 * DFA in front of it, OURS' tables as the delta).
 * ===========================================================================
 *
 * Goal: ClassBench-like 5-tuple sets at DPDK rte_acl's batched rate on one
 * core without AVX-512: a lookup is a walk of at most key_len transitions per
 * group, one per key byte, with NO leaf check: the state reached names the
 * best matching rule (rte_acl's approach: 8-bit stride, rules merged into a
 * few tries whose final nodes name the match).
 *
 * Build (dfa.c).  Rules come in rank order (rank r < s: r beats s).  First
 * all of them go into ONE DFA; only when that passes DFA_ONE_STATES_PER_RULE
 * (4) states per rule + 4096 are they partitioned into groups (src-IP-
 * specific, dst-IP-specific, the rest, as dtree.h's choose_groups; a group
 * whose DFA would pass its memory is split in two by wildness, up to
 * DFA_MAX_GROUPS), one DFA each, all walked per key (a group's DFA cannot
 * prune by a better rule of another group: partitioned DFAs are 10-70x
 * bigger on the ClassBench-like sets).  Per DFA the key bytes are read
 * in an order of decreasing average care bits, and the DFA is built by layered
 * subset construction: a state at depth d is the sorted list of ranks of the
 * rules consistent with the bytes read so far, deduplicated by hash per
 * layer.  For a state, the byte values 0..255 are cut into elementary
 * intervals at the ends of the rules' ranges on the byte (prefix masks give
 * one range; any other mask makes every value its own interval), each
 * interval gets the list of rules accepting it, adjacent intervals with equal
 * children are merged.  Priority pruning: a child list is cut after its first
 * rule that wildcards every byte still to read ("done": it beats all later
 * ones whatever the rest of the key), and a list whose first rule is done is
 * final at once: the walk stops there with that rank.  After the last byte
 * every list is final (its first rank).  A state with one interval for all
 * 256 values is skipped (its parent points to its child): walks are often
 * shorter than key_len.
 *
 * Layout (what lookups read, one 2 MiB-aligned mapping advised MADV_HUGEPAGE,
 * OFB_CLS_HUGEPAGES=0: heap).  A reference is 32 bits: bit 0 set = final
 * (rank + 1 in the bits above, 0 = no rule of the group matches); else bits
 * 1-2 the node type and bits 3.. the node's offset in 16-byte units (8 GiB).
 *  - range16 (<= 16 intervals): bytes 0..14 thresholds (start of interval
 *    j+1 minus 1, xor 0x80 so a signed compare is unsigned; unused 0x7f),
 *    byte 15 the key byte position read, then one ref per interval, chosen by
 *    popcount(movemask(key byte > thresholds)) (SSE4; scalar: a loop).
 *  - range64 (<= 64 intervals): the same with 63 thresholds, position in
 *    byte 63, four compares (OFB_DFA_NARROW=1: two range16 levels instead).
 *  - full (> 64 intervals): position in byte 15, 256 refs indexed by the byte.
 *  - path (keys <= 16 bytes; OFB_DFA_PATHS=0 off): a chain of states that
 *    each send one aligned block [v, v | ~m] of one byte on and every other
 *    value to one place, up to 8 of them in one 64-byte node: positions[8],
 *    masks[8], values[8], length, refs[9]: one pshufb of the key, and, compare,
 *    movemask; the first failing check i goes to refs[i], all passing to
 *    refs[length] (the tails of specific rules: dst host bytes, exact ports).
 * A state whose 256 values all go to one child is no node (its parent points
 * to the child).  Identical nodes are stored once (hash of their bytes).
 * Batched lookups walk DFA_LANES (32) keys of a group interleaved: per step
 * one node (range16 and path computed from one 16-byte load and selected
 * without a branch on keys <= 16 bytes), the next node prefetched, lanes
 * leaving the walk when they reach a final ref (no branch).  The key is put
 * into a register from loads of the key (a 16-byte load of a freshly copied
 * key stalls on store forwarding: 17 % of the batch, measured with perf).

 * The answer is the best rule of the snapshot the DFA was built from, dead or
 * alive: the caller (dtree.c) checks it is live at the reader's version and
 * otherwise asks its tree (rare: only keys whose best rule was deleted since
 * the build).
 *
 * Measured (experiments/classifier/LOG.md "dfa", experiments/classifier/2026-11-24-dfa; AMD EPYC AVX2 VM, shared
 * 2-core box): ClassBench-like 100k, batched through the classifier, medians of
 * 3 on the AVX2 path: cb_acl 31.6 Mlps, cb_fw 34.1, cb_ipc 23.3 = 0.99 / 0.94 /
 * 0.77x rte_acl in the same runs (32.0, 36.1, 30.4; the run before 0.87 / 0.93
 * / 0.82): acl and fw at its rate within the noise, ipc short; one DFA of
 * 417 KB / 66 KB / 2.2 MB built in 12-41 ms, 4.4-5.1 steps per key.  These
 * generated sets are heavily shadowed (49-431 distinct answers over 65536
 * keys), which is what lets one DFA stay small.  Partitioned (OFB_DFA_GROUPS=4,
 * what less shadowed sets get): 8.28 / 6.26 / 7.05 Mlps = 0.17-0.24x rte_acl,
 * 29-42 MB, built in 0.65-1.6 s, 10-13 steps per key.  The walk is CPU-bound
 * first: ~20-25 cycles per step (18.6 Mlps on a 1k set held in L2).  The sets
 * now take priority by specificity (traces/rulesets.py, no rule shadowed
 * whole): dfa 6.7 / 4.7 (fw: over budget, the tree alone) / 5.9 Mlps, below
 * dtree's 10.9 / 5.0 / 7.3, above rte_acl's 2.4 on acl (fw/ipc: rte_acl does
 * not build in 8 GB); experiments/classifier/2026-11-24-specific.

 * Invariants: immutable after build.  Concurrency: built by any one thread,
 * then only read (by any number of threads).  Limits: key_len <= 255 bytes,
 * < 2^30 - 1 rules, nodes < 16 GiB; the build stops with a message in err
 * (returns NULL) once a group's build memory or the output passes max_bytes
 * and it cannot split further.  Byte order: bytes as given, most significant
 * bit first inside a byte (prefix masks are ranges).
 */

#include <stddef.h>
#include <stdint.h>

#define DFA_NONE UINT32_MAX

struct ofb_bdfa;

/* n rules in rank order: rw = per rank nwk value words (masked) then nwk mask
 * words, key bytes in memory order.  flags: OFB_BDFA_SIMD for the SSE4 range
 * step.  max_bytes: cap of one group's build memory and of the output (0 =
 * 1 GiB).  NULL with a message in err when it does not fit (*over_budget = 1:
 * more than DFA_STATES_PER_RULE (32) states per rule + 4096 over all groups
 * and attempts, or max_bytes; rule sets with arbitrary masks explode) or no
 * memory (*over_budget = 0). */
#define OFB_BDFA_SIMD 1u
#define OFB_BDFA_ONE 2u    /* only the first attempt (all rules in one DFA): past it, over budget */
#define OFB_BDFA_AUTO 4u   /* the classifier's default: the partitioned DFA at most DFA_AUTO_MAX_STATES (2^18)
                              states in all (a DFA that size walks faster than dtree's tree: generated cb_* 1k/10k
                              sets, 6-10 states per rule; the 100k sets need ~1-2M and walk slower), over budget past it */
/* tu: the dfa_* knobs of struct ofb_cls_tuning (classifier.h); NULL = defaults */
struct ofb_cls_tuning;
struct ofb_bdfa *ofb_bdfa_build(uint32_t key_len, uint32_t nwk, const uint64_t *rw, uint32_t n, unsigned flags,
                                uint64_t max_bytes, const struct ofb_cls_tuning *tu, int *over_budget, char *err,
                                size_t errlen);
void ofb_bdfa_free(struct ofb_bdfa *);
size_t ofb_bdfa_bytes(const struct ofb_bdfa *);
unsigned ofb_bdfa_groups(const struct ofb_bdfa *);
uint64_t ofb_bdfa_states(const struct ofb_bdfa *);   /* nodes laid out */
double ofb_bdfa_build_s(const struct ofb_bdfa *);

/* Best rank (any rule of the snapshot, dead or not) or DFA_NONE. */
uint32_t ofb_bdfa_lookup(const struct ofb_bdfa *, const uint8_t *key);
void ofb_bdfa_lookup_batch(const struct ofb_bdfa *, const uint8_t *const keys[], size_t n, uint32_t rank_out[]);

/* The laid-out nodes, read back (dfa_flat.c compiles them into its SIMD-walkable
 * form).  A ref: final (ofb_bdfa_ref_final: payload = rank + 1, 0 = none) or a
 * node; ofb_bdfa_decode describes a node: a range node (range16, range64,
 * full) as k intervals on key byte pos (interval j = [st[j], st[j+1]) with
 * st[0] = 0, st[k] = 256, child kid[j]); a path node as its checks. */
struct ofb_bdfa_node {
    unsigned is_path;
    unsigned pos, k;                 /* range node */
    uint16_t st[257];
    uint32_t kid[256];
    unsigned len;                    /* path node: check i (key[ppos[i]] & m[i]) == v[i] fails -> kid[i]; all pass -> kid[len] */
    uint8_t ppos[8], m[8], v[8];
};
static inline int ofb_bdfa_ref_final(uint32_t ref) { return ref & 1u; }
unsigned ofb_bdfa_key_len(const struct ofb_bdfa *);
uint32_t ofb_bdfa_root(const struct ofb_bdfa *, unsigned group);
void ofb_bdfa_decode(const struct ofb_bdfa *, uint32_t ref, struct ofb_bdfa_node *out);

#endif
