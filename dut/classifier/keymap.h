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
 * (slide 19 at 1M: ~83 per block); the block's distinct winners (<= 255)
 * are listed once (win[], ranks = positions in (priority desc, id asc)
 * order) and map[x] (one byte per key) says which: 0 = no rule matches,
 * j = win[off[x >> S] + j - 1].  So a lookup is one byte read (random: a DRAM
 * miss, TLB covered by 2 MiB pages), and for a hit two more (off, win) and
 * the rule's info.  Batches issue each stage's loads for all keys before
 * the next stage (independent misses overlap).
 *
 * Memory: 2^B bytes (slide 19: 2 GiB whatever the rule count) + 4 x 2^(B-S)
 * + 4 per listed winner + 16 per rule.  Slide 19, 1M rules: ~2.3 GB = ~2.3 KB
 * per rule (rte_acl: ~5 KB per rule on the ClassBench-like acl set).  Not
 * for small sets (100k: 21 KB per rule): OFB_CLS_ALGO_AUTO picks it only
 * from OFB_KMAP_AUTO_MIN rules (classifier.h).
 *
 * Build (one thread): rules compressed like keys; each rule's candidate
 * blocks enumerated (the subsets of its free high bits: Sum 2^free, slide
 * 19 at 1M: 87M), counted then filled (CSR, rank order); per block the
 * candidates worst first write their index into the block's 2^S slots they
 * match (the better overwrite the worse), then the slots are renumbered by
 * winner.  Work ~ Sum over rules of 2^(B - popcount(mask)) (slide 19 at 1M:
 * ~1e9 slot writes, in L1), ~2-4 s.  A block with more than 255 winners
 * makes the build retry with S - 1 (down to S = 4).
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

struct ofb_kmap;

/* cancel (may be NULL): set by another thread, the build stops early and
 * returns NULL ("cancelled", *over_budget = 0). */
struct ofb_kmap *ofb_kmap_build(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n, uint64_t max_bytes,
                                const _Atomic int *cancel, int *over_budget, char *err, size_t errlen);
void ofb_kmap_free(struct ofb_kmap *);
size_t ofb_kmap_bytes(const struct ofb_kmap *);
uint32_t ofb_kmap_rules(const struct ofb_kmap *);
unsigned ofb_kmap_bits(const struct ofb_kmap *);       /* B */
unsigned ofb_kmap_block_bits(const struct ofb_kmap *); /* S */
double ofb_kmap_build_s(const struct ofb_kmap *);
/* The classifier's publication stamp: the map answers for readers whose
 * rule set equals the set at version v (classifier.c, KEYMAP). */
void ofb_kmap_set_v(struct ofb_kmap *, uint64_t v);
uint64_t ofb_kmap_v(const struct ofb_kmap *);
/* What the map would need for these rules (bytes), without building it; 0 if B > 31. */
uint64_t ofb_kmap_estimate(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n);

/* Best rule for a key: its rank, or OFB_KMAP_NONE. */
uint32_t ofb_kmap_lookup(const struct ofb_kmap *, const uint8_t *key);
/* n keys (any n): the best rule's id (0: no match) and handle. */
void ofb_kmap_lookup_batch(const struct ofb_kmap *, const uint8_t *const keys[], size_t n, uint32_t id_out[],
                           uint64_t handle_out[]);
/* What a rank stands for. */
void ofb_kmap_rank_info(const struct ofb_kmap *, uint32_t rank, uint32_t *prio, uint32_t *id, uint64_t *handle);

#endif
