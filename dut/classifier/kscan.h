/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OFB_CLS_KSCAN_H
#define OFB_CLS_KSCAN_H 1

/*
 * Key-block scan: document 003's condition at a quarter of keymap's memory
 * (internal to the classifier library; classifier.h's OFB_CLS_ALGO_KSCAN
 * puts it in front of OURS' tables, through keymap.c's wrapper, so it shares
 * KEYMAP's background rebuilds, versions and readers).
 * ==========================================================================
 *
 * Goal (issue 42, part 3): slide 19 at 1M rules (32-bit keys, 100 masks of
 * rand()|rand(), uniform keys) >= 10 Mlps batched at <= 1/4 of keymap's
 * ~2.7 KB per rule.  keymap stores one byte per key of the B cared-for bits
 * (2^31 bytes): that byte is the whole cost, and it cannot shrink with the
 * rule count.  Here the key space is cut into 2^h blocks by the key's high
 * cared-for bits only, and a block keeps its candidate rules (the set-pruning
 * trie of the document with one level of stride h, no leaf map): a lookup
 * reads the block's offset, then scans the block's candidates in rank order
 * with SIMD compares on the s = B - h low bits, and the first that matches
 * is the answer.
 *
 * Structure.  Keys are compressed to their B cared-for bits as in keymap.h
 * (4 table reads).  Masks get an id (mid, by their compressed value; slide
 * 19: 100).  A candidate is one u32: mid << 2s | (mask's low s bits) << s |
 * (value's low s bits), so "does it match" is ((x_lo & e >> s) == (e &
 * lowmask)), 8 a step on AVX2, 16 on AVX-512; s <= 11 and 2s + the mids'
 * bits <= 32.  off[2^h + 1] gives each block's run in ent[] (candidates of a
 * block in rank order: priority desc, id asc).  The winner is then the rule
 * with mask M = masks[mid] and value x & M: one probe of an open-addressing
 * table keyed by (mid, value) holding its id, priority and handle (so a rule
 * needs no rank per candidate).  A rule whose (mask, value) repeats a better
 * rule's is never an answer and is dropped.
 *
 * Memory: 4 x pairs + 4 x 2^h + 24 x 2^ceil(log2(2n)) bytes, pairs = Sum over
 * rules of 2^(free high bits).  Slide 19: pairs = n x 1.25^h, the block's
 * mean candidates n x 0.625^h.  1M rules: h = 20 -> 87M pairs, 83 a block,
 * ~400 MB; h = 21 -> 108M, 52 a block, ~490 MB; h = 22 -> 136M, 32, ~610 MB.
 * h is chosen by budget: the largest h in [B - s_max, B] whose bytes fit
 * min(max_bytes, bytes_per_rule x n), stopping once a block averages <= 16
 * candidates (two AVX2 steps); no h fits -> NULL, *over_budget = 1.
 *
 * Build: rules sorted by rank, compressed; the pairs counted per block,
 * prefix-summed, filled in rank order (as keymap's CSR): ~2 passes over the
 * pairs, no per-key work (1M: ~1-2 s, keymap 8-13 s).
 *
 * Invariants: immutable after build; for every key the first matching
 * candidate of its block is the best rule (rank order) of the rules given.
 * Concurrency: built by one thread, then only read.  Limits: key_len <= 4;
 * < 2^32 - 64 pairs; 2s + mid bits <= 32 (s >= 0: up to 2^32 masks).  Byte
 * order: key bytes as given, byte 0 most significant.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keymap.h"   /* struct ofb_kmap_rule, OFB_KMAP_NONE */

#define OFB_KSCAN_BYTES_PER_RULE 512   /* default budget of the structure (OURS' tables come on top) */

struct ofb_kscan;
/* simd: 0 scalar, 1 AVX2, 2 AVX-512 (the classifier's path; the caller checked the CPU);
 * bytes_per_rule: 0 = OFB_KSCAN_BYTES_PER_RULE; max_bytes: 0 = no cap besides it */
struct ofb_kscan *ofb_kscan_build(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n, uint64_t max_bytes,
                                  uint32_t bytes_per_rule, int simd, bool hugepages, bool debug,
                                  const _Atomic int *cancel, int *over_budget, char *err, size_t errlen);
void ofb_kscan_free(struct ofb_kscan *);
size_t ofb_kscan_bytes(const struct ofb_kscan *);
/* the best rule's slot (for ofb_kscan_info), or OFB_KMAP_NONE */
uint32_t ofb_kscan_lookup(const struct ofb_kscan *, const uint8_t *key);
void ofb_kscan_lookup_batch(const struct ofb_kscan *, const uint8_t *const keys[], size_t n, uint32_t id_out[],
                            uint64_t handle_out[]);
void ofb_kscan_info(const struct ofb_kscan *, uint32_t slot, uint32_t *prio, uint32_t *id, uint64_t *handle);

#endif
