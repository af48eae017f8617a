/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OFB_CLS_DFA_FLAT_H
#define OFB_CLS_DFA_FLAT_H 1

/*
 * The byte DFA (dfa.h) compiled for walks of many keys in lockstep (issue 42;
 * internal to the classifier library: dtree.c builds it from its DFA and asks
 * it before the DFA's own walk).
 * ===========================================================================
 *
 * Why: dfa.h's walk reads a node (16-64 bytes: thresholds, position, refs)
 * and computes its child with SSE, one key at a time: ~25 instructions per
 * step, CPU-bound (public ClassBench-ng acl1: 10.4 steps per key, 24 Mlps
 * batched where DPDK's rte_acl walks 16 keys per AVX-512 vector at 76).  Here
 * every step of every key is the same few operations on 32-bit lanes, so 8
 * (AVX2) or 16 (AVX-512) keys take a step together with gathers, branch-free
 * (rte_acl's idea, lib/acl: the transition word carries what the next index
 * needs; this layout and code are ours).
 *
 * Layout: one array of 64-bit entries.  An entry = (hdr << 32) | ref.
 *  - ref: bit 0 set = final (rank + 1 in the bits above, as dfa.h's refs; 0 =
 *    no rule); else bits 1-4 the key byte position read by the node it points
 *    to (keys <= 16 bytes) and bits 5-31 the node's first entry (index).
 *  - hdr: the node's three thresholds t0 t1 t2 (bytes 0-2) and a byte mask fm
 *    (byte 3).  With b = key[pos], the child is entry
 *        index + (b & fm) + (b > t0) + (b > t1) + (b > t2).
 *    A quad node (<= 4 intervals, fm = 0, unused thresholds 255) has <= 4
 *    entries; a full node (fm = 0xff, thresholds 255) has 256.
 * A dfa.h range node of k intervals becomes one quad node (k <= 4), a full
 * node (k > full_min, default 16), or a tree of quad nodes on the same byte
 * (chunks of ceil(k / 4) intervals: 2 levels up to 16); a path node becomes
 * a chain of quad nodes of <= 3 intervals, one per check.  A node's entries
 * are its children only (the thresholds and the byte read are in the
 * parent's entry), so nodes with equal entries are stored once (hash-consed
 * as they are laid out: public acl1 1292 -> 855 B per rule with the tree).  So a walk takes a
 * few more steps than dfa.h's (about 1.5x on acl1) but each is ~8 vector
 * instructions for 8/16 keys: one gather of the key bytes, one (AVX-512: two)
 * of the 64-bit entries.  The header of a node is in its parent's entry, so a
 * step needs one dependent load, not two.
 *
 * Walks (one file per instruction set, chosen per classifier at creation by
 * the classifier's SIMD path): dfa_flat.c scalar (32 keys interleaved, and
 * the single-key walk), dfa_flat_avx2.c (4 x 8 lanes), dfa_flat_avx512.c
 * (2 x 16 lanes).  Lanes whose walk ended are masked off; a vector steps
 * until its last lane ended.  A partitioned DFA's groups are walked at once
 * (issue 42: 2 on AVX2, 3 on AVX-512), each (group, vector) pair its own
 * chain of gathers: a step is latency-bound (gather -> index -> gather), so
 * 6 chains in flight instead of 2 take the 1k-10k generated sets' walks
 * 11-22 % faster on AVX-512, 4-9 % on AVX2 (gather-bound there);
 * experiments/classifier/2026-11-29-dfa1k.
 *
 * Invariants: immutable after build; read by any number of threads.  Limits:
 * keys of 1..16 bytes (else no flat form: dfa.h's walk answers); 2^27 entries
 * (1 GiB; over it the build returns NULL and dfa.h's walk answers).
 */

#include <stddef.h>
#include <stdint.h>

struct ofb_bdfa;
struct ofb_dflat;

enum { DFLAT_SCALAR = 0, DFLAT_AVX2 = 1, DFLAT_AVX512 = 2 };

/* From a built DFA; walk = DFLAT_*; full_min: range nodes of more intervals
 * become full nodes (0 = 16).  NULL when the key is longer than 16 bytes, the
 * entries pass 2^27 or memory runs out (the caller keeps dfa.h's walk). */
struct ofb_dflat *ofb_dflat_build(const struct ofb_bdfa *, unsigned walk, unsigned full_min,
                                  int no_vbmi);   /* no_vbmi: the AVX-512 walk gathers its key bytes (tests) */
void ofb_dflat_free(struct ofb_dflat *);
size_t ofb_dflat_bytes(const struct ofb_dflat *);
uint32_t ofb_dflat_lookup(const struct ofb_dflat *, const uint8_t *key);   /* = ofb_bdfa_lookup */
void ofb_dflat_lookup_batch(const struct ofb_dflat *, const uint8_t *const keys[], size_t n, uint32_t rank_out[]);

/* private to the dfa_flat*.c files */
struct ofb_dflat {
    const uint64_t *e;        /* entries */
    uint64_t *mem;
    size_t n, cap;            /* entries */
    uint32_t key_len, ngroups;
    uint64_t root[8];         /* the entry of each group's root */
    unsigned walk;
    unsigned vbmi;            /* AVX-512 walk: the CPU has AVX512-VBMI (key bytes by byte permutes, not a gather) */
};
#define DFLAT_CHUNK 32        /* keys per lockstep chunk (every walk) */
void ofb_dflat_batch_avx2(const struct ofb_dflat *, const uint8_t *const keys[], size_t n, uint32_t rank_out[]);
void ofb_dflat_batch_avx512(const struct ofb_dflat *, const uint8_t *const keys[], size_t n, uint32_t rank_out[]);
void ofb_dflat_batch_avx512_vbmi(const struct ofb_dflat *, const uint8_t *const keys[], size_t n, uint32_t rank_out[]);

/* one step of one key (every walk's reference) */
static inline uint64_t ofb_dflat_step(const uint64_t *e, uint64_t cur, const uint8_t *key)
{
    uint32_t r = (uint32_t)cur, h = (uint32_t)(cur >> 32);
    uint32_t b = key[(r >> 1) & 15];
    uint32_t i = (b & (h >> 24)) + (b > (h & 255)) + (b > ((h >> 8) & 255)) + (b > ((h >> 16) & 255));
    return e[(r >> 5) + i];
}

#endif
