/* SPDX-License-Identifier: Apache-2.0 */
/* Key-space map (design comment: keymap.h). */
#define _GNU_SOURCE
#include "keymap.h"
#include "kscan.h"
#include "hugepage.h"
#include "classifier.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

struct kinfo { uint64_t handle; uint32_t prio, id; };

struct ofb_kmap {
    uint32_t T[4][256];     /* key byte k, value -> its U bits, compressed */
    uint32_t key_len, bits, sbits;
    uint32_t n;
    uint8_t *blk;           /* 2^(bits - sbits) blocks of `stride` bytes (halloc, as ri): 2^sbits map
                               bytes, then the block's list (cap ranks, u32) */
    size_t blk_bytes, stride, lo;   /* lo: the list's offset in a block (2^sbits rounded up to 4) */
    uint32_t cap;
    struct kinfo *ri;       /* by rank */
    size_t ri_bytes;
    size_t bytes;
    double build_s;
    uint64_t v;             /* classifier.c's stamp */
    bool hp;                /* large arrays on huge pages (hugepage.h; off: the C library) */
    bool debug;             /* tuning.kmap_debug */
    struct ofb_kscan *ks;   /* KSCAN: the key-block scan answers instead (kscan.h); the fields above unused */
};

#define S_MAX 11u
#define S_MIN 4u

/* Arrays read at random by lookups (map, off, win, ri) live on 2 MiB pages
 * when they are that large (hugepage.h's ofb_hp_alloc): on 4 KiB pages each of
 * a hit's three reads would also miss the TLB. */
static inline uint32_t compress(const struct ofb_kmap *m, const uint8_t *key)
{
    return ofb_kmap_compress(m->T, m->key_len, key);
}

static inline uint32_t compress4(const struct ofb_kmap *m, const uint8_t *key)
{
    return m->T[0][key[0]] | m->T[1][key[1]] | m->T[2][key[2]] | m->T[3][key[3]];
}

uint32_t ofb_kmap_union(uint32_t key_len, const struct ofb_kmap_rule *r, size_t n, uint32_t u_bytes[4])
{
    uint32_t bits = 0;
    memset(u_bytes, 0, 4 * sizeof(uint32_t));
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < key_len; k++)
            u_bytes[k] |= r[i].mask[k];
    for (uint32_t k = 0; k < key_len; k++)
        bits += (uint32_t)__builtin_popcount(u_bytes[k]);
    return bits;
}

/* pairs (rule, candidate block) for block bits s: Sum 2^(free high bits) */
static uint64_t pairs_for(const uint32_t *cm, size_t n, uint32_t bits, uint32_t s)
{
    uint32_t hmask = bits - s >= 32 ? UINT32_MAX : ((1u << (bits - s)) - 1);
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += (uint64_t)1 << __builtin_popcount(~(cm[i] >> s) & hmask);
    return t;
}

static uint64_t est_bytes(uint32_t bits, uint32_t s, uint64_t pairs, size_t n)
{
    /* blocks: map bytes + lists of up to 255 ranks (estimated at twice the
     * mean candidates); the build's temporaries: the candidates (CSR), their
     * offsets and fill pointers, the compressed rules; the rules' info */
    uint64_t nblk = (uint64_t)1 << (bits - s), cap = 2 * ((pairs + nblk - 1) / nblk);
    cap = cap < 255 ? cap : 255;
    return ((uint64_t)1 << bits) + 4 * cap * nblk + 4 * pairs + 8 * nblk + (sizeof(struct kinfo) + 12) * n;
}

void ofb_kmap_tables(uint32_t T[4][256], uint32_t key_len, const uint32_t u_bytes[4])
{
    /* bit positions: byte 0 most significant; compressed order follows */
    uint32_t pos = 0;
    for (uint32_t k = 0; k < key_len; k++)
        pos += (uint32_t)__builtin_popcount(u_bytes[k]);
    for (uint32_t k = 0; k < key_len; k++) {
        uint32_t bp[8];
        for (int j = 7; j >= 0; j--)
            bp[j] = (u_bytes[k] >> j & 1) ? --pos : UINT32_MAX;
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t x = 0;
            for (int j = 0; j < 8; j++)
                if ((v >> j & 1) && bp[j] != UINT32_MAX)
                    x |= 1u << bp[j];
            T[k][v] = x;
        }
    }
    for (uint32_t k = key_len; k < 4; k++)
        memset(T[k], 0, sizeof(T[k]));
}

int ofb_kmap_cmp_rank(const void *a, const void *b)
{
    const struct ofb_kmap_rule *x = *(const struct ofb_kmap_rule *const *)a, *y = *(const struct ofb_kmap_rule *const *)b;
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}


static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A block's candidates cand[c0..c1), worst first, write their place in the
 * list (1-based) into the slots they match: the better overwrite.  wide:
 * 16-bit slots (tmp, blocks of more than 255 candidates), else the map's
 * bytes (constant at each call: the compiler keeps two loops). */
static inline void paint(void *dst, bool wide, const uint64_t *cvm, const uint32_t *cand, uint32_t c0, uint32_t c1,
                         uint32_t lmask)
{
    for (uint32_t c = c1; c-- > c0;) {
        if (c >= c0 + 8)
            __builtin_prefetch(&cvm[cand[c - 8]]);
        uint64_t x = cvm[cand[c]];
        uint32_t fl = ~(uint32_t)(x >> 32) & lmask, lv = (uint32_t)x & lmask, sub = 0, tag = c - c0 + 1;
        do {
            if (wide)
                ((uint16_t *)dst)[lv | sub] = (uint16_t)tag;
            else
                ((uint8_t *)dst)[lv | sub] = (uint8_t)tag;
            sub = (sub - fl) & fl;
        } while (sub);
    }
}

/* one attempt at block bits s: 1 done, 0 a block had > 255 winners, -1 no
 * memory, -2 cancelled.  cvm[i] = compressed mask << 32 | compressed value,
 * rank order.  Lays out m->blk: per block its 2^s map bytes, then its list
 * (a hit's list entry sits next to its map byte: same or next 4 KiB page). */
static int build_blocks(struct ofb_kmap *m, const uint64_t *cvm, size_t n, uint32_t s, uint64_t pairs,
                        const _Atomic int *cancel)
{
    uint32_t hbits = m->bits - s, nblk = 1u << hbits, hmask = nblk - 1, lmask = (1u << s) - 1;
    uint32_t *off = calloc((size_t)nblk + 1, sizeof(uint32_t));
    uint32_t *cand = malloc(sizeof(uint32_t) * (pairs + 1));
    uint32_t *fill = malloc(sizeof(uint32_t) * ((size_t)nblk + 1));
    uint16_t *tmp = malloc(sizeof(uint16_t) << s);
    uint8_t *loc = NULL, *region = NULL;
    size_t region_bytes = 0, stride = 0;
    int rc = -1;
    if (!off || !cand || !fill || !tmp)
        goto out;
    /* count, prefix sums (off[b] = start), fill in rank order: cand[] holds
     * every block's candidates */
    for (size_t i = 0; i < n; i++) {
        uint32_t fh = ~(uint32_t)(cvm[i] >> 32 >> s) & hmask, hv = (uint32_t)cvm[i] >> s, sub = 0;
        do {
            off[(hv | sub) + 1]++;
            sub = (sub - fh) & fh;
        } while (sub);
    }
    uint32_t maxc = 0;
    for (uint32_t b = 0; b < nblk; b++) {
        if (off[b + 1] > maxc)
            maxc = off[b + 1];
        off[b + 1] += off[b];
    }
    memcpy(fill, off, sizeof(uint32_t) * nblk);
    for (size_t i = 0; i < n; i++) {
        uint32_t fh = ~(uint32_t)(cvm[i] >> 32 >> s) & hmask, hv = (uint32_t)cvm[i] >> s, sub = 0;
        do {
            cand[fill[hv | sub]++] = (uint32_t)i;
            sub = (sub - fh) & fh;
        } while (sub);
    }
    free(fill);
    fill = NULL;
    if (maxc > 255 && !(loc = malloc((size_t)maxc + 2)))
        goto out;
    uint32_t cap = maxc < 255 ? maxc : 255;
    size_t lo = (((size_t)1 << s) + 3) & ~(size_t)3;   /* the list, 4-byte aligned (blocks of 1-2 keys) */
    stride = lo + sizeof(uint32_t) * cap;
    region_bytes = stride * nblk;
    region = ofb_hp_alloc(m->hp, region_bytes, true, NULL);
    if (!region)
        goto out;
    rc = 1;
    /* per block, candidates worst first: the better overwrite.  <= 255
     * candidates (slide 19 at 1M: ~83 on average): the byte is the
     * candidate's place in the block's list; more: renumbered by winner */
    for (uint32_t b = 0; b < nblk && rc == 1; b++) {
        if (cancel && !(b & 1023) && atomic_load_explicit(cancel, memory_order_relaxed)) {
            rc = -2;
            break;
        }
        uint32_t c0 = off[b], c1 = off[b + 1];
        uint8_t *mp = region + stride * b;
        uint32_t *list = (uint32_t *)(mp + lo);
        if (c1 - c0 <= 255) {
            paint(mp, false, cvm, cand, c0, c1, lmask);
            memcpy(list, &cand[c0], sizeof(uint32_t) * (c1 - c0));
            continue;
        }
        if (c1 - c0 > UINT16_MAX) {
            rc = 0;
            break;
        }
        memset(tmp, 0, sizeof(uint16_t) << s);
        paint(tmp, true, cvm, cand, c0, c1, lmask);
        memset(loc, 0, (size_t)(c1 - c0) + 1);
        uint32_t nloc = 0;
        for (uint32_t x = 0; x <= lmask; x++) {
            uint16_t t = tmp[x];
            if (!t)
                continue;
            if (!loc[t]) {
                if (nloc == 255) {
                    rc = 0;
                    break;
                }
                loc[t] = (uint8_t)++nloc;
                list[nloc - 1] = cand[c0 + t - 1];
            }
            mp[x] = loc[t];
        }
    }
    if (rc == 1) {
        m->sbits = s;
        m->blk = region, m->blk_bytes = region_bytes, m->stride = stride, m->lo = lo, m->cap = cap;
        region = NULL;
        m->bytes += region_bytes;
    }
out:
    ofb_hp_free(m->hp, region, region_bytes);
    free(off), free(cand), free(fill), free(tmp), free(loc);
    return rc;
}

struct ofb_kmap *ofb_kmap_build(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n, uint64_t max_bytes,
                                const struct ofb_cls_tuning *tu, const _Atomic int *cancel, int *over_budget,
                                char *err, size_t errlen)
{
    double t0 = now_s();
    *over_budget = 0;
    uint32_t ub[4];
    if (key_len < 1 || key_len > 4) {
        *over_budget = 1;
        snprintf(err, errlen, "keymap: key_len %u is not 1..4 bytes", key_len);
        return NULL;
    }
    uint32_t bits = ofb_kmap_union(key_len, rules, n, ub);
    if (bits > OFB_KMAP_MAX_BITS) {
        *over_budget = 1;
        snprintf(err, errlen, "keymap: the rules care about %u key bits, the map takes at most %u (2^bits bytes)",
                 bits, OFB_KMAP_MAX_BITS);
        return NULL;
    }
    struct ofb_kmap *m = calloc(1, sizeof(*m));
    const struct ofb_kmap_rule **ord = malloc(sizeof(*ord) * (n + 1));
    uint32_t *cm = malloc(sizeof(uint32_t) * (n + 1));
    uint64_t *cvm = malloc(sizeof(uint64_t) * (n + 1));
    if (!m || !ord || !cvm || !cm)
        goto oom;
    m->key_len = key_len;
    m->hp = !(tu && tu->no_hugepages);
    m->debug = tu && tu->kmap_debug;
    m->bits = bits;
    m->n = (uint32_t)n;
    ofb_kmap_tables(m->T, key_len, ub);
    for (size_t i = 0; i < n; i++)
        ord[i] = &rules[i];
    qsort(ord, n, sizeof(*ord), ofb_kmap_cmp_rank);
    m->ri_bytes = sizeof(struct kinfo) * (n + 1);
    m->ri = ofb_hp_alloc(m->hp, m->ri_bytes, false, NULL);
    if (!m->ri)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        uint8_t v[4] = { 0 };
        for (uint32_t k = 0; k < key_len; k++)
            v[k] = ord[i]->value[k] & ord[i]->mask[k];
        cm[i] = compress(m, ord[i]->mask);
        cvm[i] = (uint64_t)cm[i] << 32 | compress(m, v);
        m->ri[i] = (struct kinfo){ ord[i]->handle, ord[i]->prio, ord[i]->id };
    }
    free(ord);
    ord = NULL;
    uint32_t s = bits < S_MAX ? bits : S_MAX;
    uint64_t pairs = pairs_for(cm, n, bits, s);
    uint64_t need = est_bytes(bits, s, pairs, n);
    double t_rules = now_s();
    if (!max_bytes)
        max_bytes = (uint64_t)4 << 30;
    if (need > max_bytes || pairs >= ((uint64_t)1 << 31)) {
        *over_budget = 1;
        snprintf(err, errlen,
                 "keymap: %zu rules over %u key bits need ~%llu MB (%llu candidate pairs), over the limit of %llu MB",
                 n, bits, (unsigned long long)(need >> 20), (unsigned long long)pairs,
                 (unsigned long long)(max_bytes >> 20));
        free(cvm), free(cm), ofb_hp_free(m->hp, m->ri, m->ri_bytes), free(m);
        return NULL;
    }
    m->bytes = sizeof(*m) + m->ri_bytes;
    for (;;) {
        int rc = build_blocks(m, cvm, n, s, pairs, cancel);
        if (rc == -2) {
            snprintf(err, errlen, "keymap: build cancelled");
            goto fail;
        }
        if (rc < 0)
            goto oom;
        if (rc == 1)
            break;
        if (s <= S_MIN) {
            *over_budget = 1;
            snprintf(err, errlen, "keymap: a block of 2^%u keys has more than 255 distinct winners", s);
            goto fail;
        }
        s--;
        pairs = pairs_for(cm, n, bits, s);
        if (pairs >= ((uint64_t)1 << 31) || est_bytes(bits, s, pairs, n) > max_bytes) {
            *over_budget = 1;
            snprintf(err, errlen, "keymap: blocks of 2^%u keys have too many winners and smaller blocks need too much "
                     "memory", s + 1);
            goto fail;
        }
    }
    free(cvm), free(cm);
    m->build_s = now_s() - t0;
    if (m->debug)
        fprintf(stderr, "keymap: %zu rules, %u bits, blocks of 2^%u with lists of %u, %zu MB, built in %.3f s "
                "(rules ready after %.3f s)\n", n, bits, m->sbits, m->cap, m->bytes >> 20, m->build_s, t_rules - t0);
    return m;
oom:
    snprintf(err, errlen, "keymap: out of memory building the map of %zu rules over %u key bits", n, bits);
fail:
    free(ord), free(cvm), free(cm);
    ofb_kmap_free(m);
    return NULL;
}

struct ofb_kmap *ofb_kmap_build_scan(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n, uint64_t max_bytes,
                                     const struct ofb_cls_tuning *tu, int simd, const _Atomic int *cancel,
                                     int *over_budget, char *err, size_t errlen)
{
    *over_budget = 0;
    struct ofb_kmap *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "kscan: out of memory");
        return NULL;
    }
    m->ks = ofb_kscan_build(key_len, rules, n, max_bytes, tu ? tu->kscan_bytes_per_rule : 0, simd,
                            !(tu && tu->no_hugepages), tu && tu->kmap_debug, cancel, over_budget, err, errlen);
    if (!m->ks) {
        free(m);
        return NULL;
    }
    m->bytes = sizeof(*m) + ofb_kscan_bytes(m->ks);
    return m;
}

void ofb_kmap_free(struct ofb_kmap *m)
{
    if (!m)
        return;
    ofb_kscan_free(m->ks);
    ofb_hp_free(m->hp, m->blk, m->blk_bytes), ofb_hp_free(m->hp, m->ri, m->ri_bytes);
    free(m);
}

size_t ofb_kmap_bytes(const struct ofb_kmap *m) { return m ? m->bytes : 0; }
void ofb_kmap_set_v(struct ofb_kmap *m, uint64_t v) { m->v = v; }
uint64_t ofb_kmap_v(const struct ofb_kmap *m) { return m->v; }

void ofb_kmap_rank_info(const struct ofb_kmap *m, uint32_t rank, uint32_t *prio, uint32_t *id, uint64_t *handle)
{
    if (m->ks) {
        ofb_kscan_info(m->ks, rank, prio, id, handle);
        return;
    }
    const struct kinfo *k = &m->ri[rank];
    *prio = k->prio;
    *id = k->id;
    *handle = k->handle;
}

uint32_t ofb_kmap_lookup(const struct ofb_kmap *m, const uint8_t *key)
{
    if (m->ks)
        return ofb_kscan_lookup(m->ks, key);
    uint32_t x = compress(m, key);
    const uint8_t *base = m->blk + m->stride * (x >> m->sbits);
    uint8_t b = base[x & ((1u << m->sbits) - 1)];
    return b ? ((const uint32_t *)(base + m->lo))[b - 1u] : OFB_KMAP_NONE;
}

/* stages over the batch, so that each stage's misses overlap: the map bytes,
 * then the hits' list entries (next to their map bytes), then their info */
void ofb_kmap_lookup_batch(const struct ofb_kmap *m, const uint8_t *const keys[], size_t n, uint32_t id_out[],
                           uint64_t handle_out[])
{
    enum { CH = 64 };
    const uint8_t *p[CH];
    uint32_t r[CH];
    uint16_t sl[CH];
    uint8_t b[CH];
    const uint32_t s = m->sbits, lmask = (1u << s) - 1;
    const size_t stride = m->stride, lo = m->lo;
    if (m->ks) {
        ofb_kscan_lookup_batch(m->ks, keys, n, id_out, handle_out);
        return;
    }
    for (size_t base = 0; base < n; base += CH) {
        size_t q = n - base < CH ? n - base : CH;
        const uint8_t *const *k = keys + base;
        for (size_t i = 0; i < q; i++) {
            uint32_t x = m->key_len == 4 ? compress4(m, k[i]) : compress(m, k[i]);
            p[i] = m->blk + stride * (x >> s);
            sl[i] = (uint16_t)(x & lmask);
            __builtin_prefetch(p[i] + sl[i]);
        }
        for (size_t i = 0; i < q; i++) {
            b[i] = p[i][sl[i]];
            if (b[i])
                __builtin_prefetch(p[i] + lo + 4 * (b[i] - 1u));
        }
        for (size_t i = 0; i < q; i++)
            if (b[i]) {
                r[i] = ((const uint32_t *)(p[i] + lo))[b[i] - 1u];
                __builtin_prefetch(&m->ri[r[i]]);
            }
        for (size_t i = 0; i < q; i++) {
            uint32_t id = 0;
            uint64_t h = 0;
            if (b[i]) {
                id = m->ri[r[i]].id;
                h = m->ri[r[i]].handle;
            }
            id_out[base + i] = id;
            handle_out[base + i] = h;
        }
    }
}
