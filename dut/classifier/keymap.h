/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OFB_CLS_KEYMAP_H
#define OFB_CLS_KEYMAP_H 1

/*
 * Key-space map: the answer for every key of a short key, compiled (internal
 * to the classifier library; classifier.h's OFB_CLS_ALGO_KEYMAP puts it in
 * front of OURS' tables).
 * ==========================================================================
 *
 * Goal: document 003's slide-19 condition (32-bit keys, 100 masks of
 * rand()|rand(), 1M rules, uniform rand() keys) at >= 10M lookups/s on one
 * core.  Every per-mask structure pays one test per mask (~100), and at 1M
 * rules those tests read ~4 MB of filter lines that live in L3 or DRAM: the
 * grouped line filter stops near 4 Mlps (README.md).  The answer function
 * itself is not compressible by a trie: a 24-bit prefix still leaves ~13
 * candidate rules (1M x 0.625^24), the answer changes from key to key.  So
 * this structure stores it: the set-pruning trie of the document with one
 * level of stride B, i.e. a direct table, made affordable by one byte per key.
 *
 * Structure.  U = the OR of all masks; B = popcount(U) (slide 19: 31, bit 31
 * is never cared for).  A key is compressed to x = its U bits, in order (4
 * table reads: T[byte][value], 256 x 32-bit words per key byte, 4 KiB, L1).
 * The key space 0..2^B-1 is cut into blocks of 2^S keys (S <= 11).  Per
 * block, the rules that can match some key of it are its candidates
 * (slide 19 at 1M: ~83 per block, at most 125).  A block is laid out as
 * its 2^S map bytes (one per key) followed by its list: the candidates'
 * ranks (positions in (priority desc, id asc) order; a block of more than
 * 255 candidates lists its distinct winners instead); every block has the
 * room of the longest list (cap <= 255), so block x >> S starts at
 * (x >> S) * stride, no offset table.  map byte 0 = no rule matches, j = the
 * list's j-th rank.  So a lookup is one byte read (random: a DRAM miss and a
 * page walk), and for a hit the list entry in the same or the next 4 KiB
 * page and the rule's info.  Batches issue each stage's loads for all keys
 * before the next stage (independent misses overlap).  (The first layout
 * kept the lists apart behind an offset table: one more dependent miss and
 * walk per hit; 12 -> 15 Mlps batched at 1M when they moved in, README.md.)
 *
 * Memory: 2^B bytes + 2^(B-S) x 4 x cap + 16 per rule.  Slide 19, 1M rules
 * (cap 125): ~2.7 GB = ~2.7 KB per rule (rte_acl: ~5 KB per rule on the
 * ClassBench-like acl set).  Not for small sets (100k: 22 KB per rule, the
 * map does not shrink): OFB_CLS_ALGO_AUTO picks it only from 2^19 rules
 * (classifier.h).
 *
 * Build (one thread): rules compressed like keys; each rule's candidate
 * blocks enumerated (the subsets of its free high bits: Sum 2^free, slide
 * 19 at 1M: 87M), counted then filled (CSR, rank order); per block the
 * candidates worst first write their list position into the block's 2^S
 * slots they match (the better overwrite the worse); a block of more than
 * 255 candidates is renumbered by winner.  Work ~ Sum over rules of
 * 2^(B - popcount(mask)) (slide 19 at 1M: ~1e9 slot writes, in L1), plus
 * the first touch of the pages (the kernel zeroes them): 8-11 s of CPU at
 * 1M on the AVX2 VM.  A block with more than 255 winners makes the build
 * retry with S - 1 (down to S = 4).
 *
 * Invariants: immutable after build; every key x has map[x] = the best rule
 * (rank order) of the rules given, or 0.  Concurrency: built by one thread,
 * then only read (any number of threads).  Limits: key_len <= 4; B <= 31
 * (OFB_KMAP_MAX_BITS); the whole structure <= max_bytes; < 2^31 candidate
 * (rule, block) pairs.  Otherwise build returns NULL with a message in err
 * and *over_budget = 1 (out of memory: *over_budget = 0).  Byte order: key
 * bytes as given, byte 0 most significant (masks as classifier.h's).
 */

#include <stddef.h>
#include <stdint.h>

#define OFB_KMAP_MAX_BITS 31
#define OFB_KMAP_NONE UINT32_MAX

struct ofb_kmap_rule {
    uint32_t prio, id;          /* rank order: prio desc, id asc */
    uint64_t handle;
    uint8_t value[4], mask[4];  /* key_len bytes used; value & mask needed only where mask is set */
};

/* Key compression (keymap and kscan.h): U = the union of the rules' masks; per key byte k,
 * T[k][value] = the value's U bits packed in order (byte 0 most significant), rows past key_len
 * zero; a key compresses to the OR of its key_len reads.  ofb_kmap_union fills u_bytes and
 * returns |U|; ofb_kmap_tables fills T from them. */
__attribute__((visibility("hidden"))) uint32_t ofb_kmap_union(uint32_t key_len, const struct ofb_kmap_rule *r,
                                                              size_t n, uint32_t u_bytes[4]);
__attribute__((visibility("hidden"))) void ofb_kmap_tables(uint32_t T[4][256], uint32_t key_len,
                                                           const uint32_t u_bytes[4]);
/* qsort order of rule pointers: rank (prio desc, id asc) */
__attribute__((visibility("hidden"))) int ofb_kmap_cmp_rank(const void *a, const void *b);

static inline uint32_t ofb_kmap_compress(const uint32_t T[4][256], uint32_t key_len, const uint8_t *key)
{
    uint32_t x = 0;
    for (uint32_t k = 0; k < key_len; k++)
        x |= T[k][key[k]];
    return x;
}

struct ofb_kmap;

/* cancel (may be NULL): set by another thread, the build stops early and
 * returns NULL ("cancelled", *over_budget = 0). */
struct ofb_cls_tuning;   /* classifier.h: no_hugepages, kmap_debug; NULL = defaults */
struct ofb_kmap *ofb_kmap_build(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n, uint64_t max_bytes,
                                const struct ofb_cls_tuning *tu, const _Atomic int *cancel, int *over_budget,
                                char *err, size_t errlen);
/* The same wrapper around kscan.h's key-block scan (OFB_CLS_ALGO_KSCAN): lookups, stamps, bytes and
 * free below dispatch to it; a rank is then kscan's slot.  simd: enum simd_path (0 scalar, 1 AVX2,
 * 2 AVX-512); the budget: tu->kscan_bytes_per_rule per rule, capped by max_bytes. */
struct ofb_kmap *ofb_kmap_build_scan(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n, uint64_t max_bytes,
                                     const struct ofb_cls_tuning *tu, int simd, const _Atomic int *cancel,
                                     int *over_budget, char *err, size_t errlen);
void ofb_kmap_free(struct ofb_kmap *);
size_t ofb_kmap_bytes(const struct ofb_kmap *);
/* The classifier's publication stamp: the map answers for readers whose
 * rule set equals the set at version v (classifier.c, KEYMAP). */
void ofb_kmap_set_v(struct ofb_kmap *, uint64_t v);
uint64_t ofb_kmap_v(const struct ofb_kmap *);

/* Best rule for a key: its rank, or OFB_KMAP_NONE. */
uint32_t ofb_kmap_lookup(const struct ofb_kmap *, const uint8_t *key);
/* n keys (any n): the best rule's id (0: no match) and handle. */
void ofb_kmap_lookup_batch(const struct ofb_kmap *, const uint8_t *const keys[], size_t n, uint32_t id_out[],
                           uint64_t handle_out[]);
/* What a rank stands for. */
void ofb_kmap_rank_info(const struct ofb_kmap *, uint32_t rank, uint32_t *prio, uint32_t *id, uint64_t *handle);

#endif
