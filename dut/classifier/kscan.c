/* SPDX-License-Identifier: Apache-2.0 */
/* Key-block scan (design comment: kscan.h). */
#define _GNU_SOURCE
#include "kscan.h"
#include "hugepage.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define KS_X86 1
#endif

struct hent {                  /* the rules by (mid, compressed value); mid UINT32_MAX = empty */
    uint64_t handle;
    uint32_t cval, mid, id, prio;
};

struct ofb_kscan {
    uint32_t T[4][256];        /* key byte k, value -> its cared-for bits, compressed (keymap.h) */
    uint32_t key_len, bits, s, h, lmask, nmask, ht_lg;
    int simd;
    bool hp;
    uint32_t *off;             /* 2^h + 1: block b's candidates are ent[off[b] .. off[b + 1]) */
    uint32_t *ent;             /* pairs + KS_PAD (SIMD loads past a block's end stay inside) */
    uint32_t *masks;           /* by mid: the compressed mask */
    struct hent *ht;           /* 2^ht_lg */
    size_t off_bytes, ent_bytes, ht_bytes, bytes;
    uint64_t pairs;
};

#define KS_PAD 16u
/* s <= 11; 12 fits slide 19 too (2s + 7 mid bits <= 32): 16 % fewer bytes per rule at 2^16-100k,
 * up to 28 % slower batched (experiments/classifier/2026-11-29-kscan2) */
#define KS_S_MAX 11u
#define KS_STOP_MEAN 16u       /* finer blocks than this many candidates on average: no gain */
#define KS_MAX_MEAN 256u        /* coarser blocks than this many candidates on average: refused (OURS answers) */
#define KS_NONE UINT32_MAX

/* The large arrays on 2 MiB-page regions (hugepage.h's ofb_hp_alloc); the bytes counted are
 * the bytes taken (whole 2 MiB pages on the regions) */
static inline uint32_t ks_compress(const struct ofb_kscan *m, const uint8_t *key)
{
    return ofb_kmap_compress(m->T, m->key_len, key);
}

static inline uint32_t ks_hash(uint32_t mid, uint32_t cval, uint32_t lg)
{
    return (uint32_t)((((uint64_t)mid << 32 | cval) * 0x9E3779B97F4A7C15ull) >> (64 - lg));
}

static double ks_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* pairs (rule, block) at h high bits: Sum 2^(free high bits) */
static uint64_t ks_pairs(const uint32_t *cm, const uint8_t *keep, size_t n, uint32_t bits, uint32_t h)
{
    uint32_t s = bits - h, hmask = h >= 32 ? UINT32_MAX : (uint32_t)(((uint64_t)1 << h) - 1);
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (keep[i])
            t += (uint64_t)1 << __builtin_popcount(~(uint32_t)((uint64_t)cm[i] >> s) & hmask);
    return t;
}

/* the bytes taken: arrays of 2 MiB or more on huge pages take whole pages (ht_bytes: taken already) */
static uint64_t ks_taken(bool hp, uint64_t bytes)
{
    return hp && bytes >= OFB_HP_SIZE ? ofb_hp_round(bytes) : bytes;
}

static uint64_t ks_need(uint64_t pairs, uint32_t h, size_t ht_bytes, uint32_t nmask, bool hp)
{
    return ks_taken(hp, 4 * (pairs + KS_PAD)) + ks_taken(hp, 4 * (((uint64_t)1 << h) + 1)) + ht_bytes +
           4 * (uint64_t)nmask + sizeof(struct ofb_kscan);
}

void ofb_kscan_free(struct ofb_kscan *m)
{
    if (!m)
        return;
    ofb_hp_free(m->hp, m->off, m->off_bytes);
    ofb_hp_free(m->hp, m->ent, m->ent_bytes);
    ofb_hp_free(m->hp, m->ht, m->ht_bytes);
    free(m->masks);
    free(m);
}

struct ofb_kscan *ofb_kscan_build(uint32_t key_len, const struct ofb_kmap_rule *rules, size_t n, uint64_t max_bytes,
                                  uint32_t bytes_per_rule, int simd, bool hugepages, bool debug,
                                  const _Atomic int *cancel, int *over_budget, char *err, size_t errlen)
{
    double t0 = ks_now();
    *over_budget = 0;
    if (key_len < 1 || key_len > 4 || n >= ((size_t)1 << 31)) {
        *over_budget = 1;
        snprintf(err, errlen, "kscan: key_len %u is not 1..4 bytes (or %zu rules)", key_len, n);
        return NULL;
    }
    struct ofb_kscan *m = calloc(1, sizeof(*m));
    const struct ofb_kmap_rule **ord = malloc(sizeof(*ord) * (n + 1));
    uint32_t *cm = malloc(sizeof(uint32_t) * (n + 1)), *cv = malloc(sizeof(uint32_t) * (n + 1));
    uint32_t *mid = malloc(sizeof(uint32_t) * (n + 1)), *fill = NULL;
    uint8_t *keep = malloc(n + 1);
    size_t fill_bytes = 0;
    if (!m || !ord || !cm || !cv || !mid || !keep)
        goto oom;
    m->key_len = key_len;
    m->simd = simd;
    m->hp = hugepages;
    uint32_t ub[4];
    m->bits = ofb_kmap_union(key_len, rules, n, ub);
    ofb_kmap_tables(m->T, key_len, ub);
    for (size_t i = 0; i < n; i++)
        ord[i] = &rules[i];
    qsort(ord, n, sizeof(*ord), ofb_kmap_cmp_rank);
    for (size_t i = 0; i < n; i++) {
        uint8_t v[4] = { 0 };
        for (uint32_t k = 0; k < key_len; k++)
            v[k] = ord[i]->value[k] & ord[i]->mask[k];
        cm[i] = ks_compress(m, ord[i]->mask);
        cv[i] = ks_compress(m, v);
    }
    /* mask ids: the distinct compressed masks, sorted */
    memcpy(mid, cm, sizeof(uint32_t) * n);
    qsort(mid, n, sizeof(uint32_t), cmp_u32);
    for (size_t i = 0; i < n; i++)
        if (!m->nmask || mid[m->nmask - 1] != mid[i])
            mid[m->nmask++] = mid[i];
    if (!(m->masks = malloc(sizeof(uint32_t) * (m->nmask + 1))))
        goto oom;
    memcpy(m->masks, mid, sizeof(uint32_t) * m->nmask);
    for (size_t i = 0; i < n; i++) {
        const uint32_t *p = bsearch(&cm[i], m->masks, m->nmask, sizeof(uint32_t), cmp_u32);
        mid[i] = (uint32_t)(p - m->masks);
    }
    /* the rules by (mid, value), best first: a repeat of a better rule's (mask, value) never answers */
    m->ht_lg = 1;
    while (((size_t)1 << m->ht_lg) < 2 * n)
        m->ht_lg++;
    m->ht = ofb_hp_alloc(m->hp, sizeof(struct hent) << m->ht_lg, true, &m->ht_bytes);
    if (!m->ht)
        goto oom;
    uint32_t hmask = (1u << m->ht_lg) - 1;
    for (uint32_t i = 0; i <= hmask; i++)
        m->ht[i].mid = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        uint32_t slot = ks_hash(mid[i], cv[i], m->ht_lg);
        while (m->ht[slot].mid != UINT32_MAX && (m->ht[slot].mid != mid[i] || m->ht[slot].cval != cv[i]))
            slot = (slot + 1) & hmask;
        keep[i] = m->ht[slot].mid == UINT32_MAX;
        if (keep[i])
            m->ht[slot] = (struct hent){ ord[i]->handle, cv[i], mid[i], ord[i]->id, ord[i]->prio };
    }
    free(ord);
    ord = NULL;
    /* the resolution: s low bits scanned, h = bits - s block bits */
    uint32_t midbits = m->nmask <= 1 ? 0 : 32 - (uint32_t)__builtin_clz(m->nmask - 1);
    uint32_t s_max = (32 - midbits) / 2;
    s_max = s_max < KS_S_MAX ? s_max : KS_S_MAX;
    s_max = s_max < m->bits ? s_max : m->bits;
    uint64_t budget = (uint64_t)(bytes_per_rule ? bytes_per_rule : OFB_KSCAN_BYTES_PER_RULE) * (n ? n : 1);
    if (max_bytes && max_bytes < budget)
        budget = max_bytes;
    int h = -1;
    uint64_t pairs = 0, need_lo = 0;
    for (uint32_t hh = m->bits - s_max; hh <= m->bits && hh <= 32; hh++) {
        uint64_t p = ks_pairs(cm, keep, n, m->bits, hh), need = ks_need(p, hh, m->ht_bytes, m->nmask, m->hp);
        if (hh == m->bits - s_max)
            need_lo = need;
        if (need > budget || p + KS_PAD >= ((uint64_t)1 << 32) - 64 || hh >= 31)
            break;
        h = (int)hh;
        pairs = p;
        if (p <= (uint64_t)KS_STOP_MEAN << hh)
            break;
    }
    if (h >= 0 && pairs > (uint64_t)KS_MAX_MEAN << h) {
        *over_budget = 1;
        snprintf(err, errlen, "kscan: %zu rules over %u key bits: blocks of 2^%u keys would average %llu candidates "
                 "(more than %u)", n, m->bits, m->bits - (uint32_t)h, (unsigned long long)(pairs >> h), KS_MAX_MEAN);
        goto fail;
    }
    if (h < 0) {
        *over_budget = 1;
        snprintf(err, errlen, "kscan: %zu rules over %u key bits need ~%llu MB at the coarsest blocks (2^%u keys), "
                 "over the budget of %llu MB", n, m->bits, (unsigned long long)(need_lo >> 20), s_max,
                 (unsigned long long)(budget >> 20));
        goto fail;
    }
    m->h = (uint32_t)h;
    m->s = m->bits - m->h;
    m->lmask = (uint32_t)(((uint64_t)1 << m->s) - 1);
    m->pairs = pairs;
    size_t nblk = (size_t)1 << m->h;
    m->off = ofb_hp_alloc(m->hp, sizeof(uint32_t) * (nblk + 1), true, &m->off_bytes);
    m->ent = ofb_hp_alloc(m->hp, sizeof(uint32_t) * (pairs + KS_PAD), true, &m->ent_bytes);
    fill = ofb_hp_alloc(false, sizeof(uint32_t) * nblk, true, &fill_bytes);
    if (!m->off || !m->ent || !fill)
        goto oom;
    /* count, prefix sums, fill in rank order (blocks list their candidates best first) */
    uint32_t s = m->s, bm = (uint32_t)(nblk - 1);
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        uint32_t fh = ~(uint32_t)((uint64_t)cm[i] >> s) & bm, hv = (uint32_t)((uint64_t)cv[i] >> s), sub = 0;
        do {
            m->off[(hv | sub) + 1]++;
            sub = (sub - fh) & fh;
        } while (sub);
    }
    for (size_t b = 0; b < nblk; b++)
        m->off[b + 1] += m->off[b];
    memcpy(fill, m->off, sizeof(uint32_t) * nblk);
    for (size_t i = 0; i < n; i++) {
        if (!keep[i])
            continue;
        if (cancel && !(i & 4095) && atomic_load_explicit(cancel, memory_order_relaxed)) {
            snprintf(err, errlen, "kscan: build cancelled");
            goto fail;
        }
        uint32_t fh = ~(uint32_t)((uint64_t)cm[i] >> s) & bm, hv = (uint32_t)((uint64_t)cv[i] >> s), sub = 0;
        uint32_t e = (uint32_t)((uint64_t)mid[i] << 2 * s) | (cm[i] & m->lmask) << s | (cv[i] & m->lmask);
        do {
            m->ent[fill[hv | sub]++] = e;
            sub = (sub - fh) & fh;
        } while (sub);
    }
    ofb_hp_free(false, fill, fill_bytes);
    free(cm), free(cv), free(mid), free(keep);
    m->bytes = sizeof(*m) + m->off_bytes + m->ent_bytes + m->ht_bytes + sizeof(uint32_t) * (m->nmask + 1);
    if (debug)
        fprintf(stderr, "kscan: %zu rules, %u masks, %u bits: 2^%u blocks of 2^%u keys, %llu candidates (%.1f a block), "
                "%zu MB (%.0f B/rule), built in %.3f s\n", n, m->nmask, m->bits, m->h, m->s,
                (unsigned long long)pairs, (double)pairs / (double)nblk, m->bytes >> 20,
                (double)m->bytes / (double)(n ? n : 1), ks_now() - t0);
    return m;
oom:
    snprintf(err, errlen, "kscan: out of memory building the blocks of %zu rules", n);
fail:
    free(ord), free(cm), free(cv), free(mid), free(keep);
    ofb_hp_free(false, fill, fill_bytes);
    ofb_kscan_free(m);
    return NULL;
}

size_t ofb_kscan_bytes(const struct ofb_kscan *m) { return m ? m->bytes : 0; }

void ofb_kscan_info(const struct ofb_kscan *m, uint32_t slot, uint32_t *prio, uint32_t *id, uint64_t *handle)
{
    const struct hent *e = &m->ht[slot];
    *prio = e->prio;
    *id = e->id;
    *handle = e->handle;
}

/* ---------- the scan of one block: the first candidate that matches x's low bits, or -1 ---------- */

static inline int scan_scalar(const uint32_t *e, uint32_t len, uint32_t lo, uint32_t s, uint32_t lmask)
{
    for (uint32_t k = 0; k < len; k++)
        if ((lo & e[k] >> s) == (e[k] & lmask))
            return (int)k;
    return -1;
}

#ifdef KS_X86
__attribute__((target("avx2,bmi"))) static inline int scan_avx2(const uint32_t *e, uint32_t len, uint32_t lo,
                                                                 uint32_t s, uint32_t lmask)
{
    const __m256i X = _mm256_set1_epi32((int)lo), L = _mm256_set1_epi32((int)lmask);
    const __m128i cnt = _mm_cvtsi32_si128((int)s);
    for (uint32_t k = 0; k < len; k += 8) {
        __m256i E = _mm256_loadu_si256((const __m256i *)(e + k));   /* past the block: masked below, KS_PAD */
        __m256i eq = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_srl_epi32(E, cnt), X), _mm256_and_si256(E, L));
        uint32_t mm = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(eq));
        if (len - k < 8)
            mm &= (1u << (len - k)) - 1;
        if (mm)
            return (int)(k + (uint32_t)__builtin_ctz(mm));
    }
    return -1;
}

__attribute__((target("avx512f,avx512bw,bmi"))) static inline int scan_avx512(const uint32_t *e, uint32_t len,
                                                                             uint32_t lo, uint32_t s, uint32_t lmask)
{
    const __m512i X = _mm512_set1_epi32((int)lo), L = _mm512_set1_epi32((int)lmask);
    const __m128i cnt = _mm_cvtsi32_si128((int)s);
    for (uint32_t k = 0; k < len; k += 16) {
        __mmask16 km = len - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - k)) - 1);
        __m512i E = _mm512_maskz_loadu_epi32(km, e + k);
        __mmask16 eq = _mm512_mask_cmpeq_epi32_mask(km, _mm512_and_si512(_mm512_srl_epi32(E, cnt), X),
                                                    _mm512_and_si512(E, L));
        if (eq)
            return (int)(k + (uint32_t)__builtin_ctz(eq));
    }
    return -1;
}
#endif

static inline uint32_t ks_probe(const struct ofb_kscan *m, uint32_t slot, uint32_t mid, uint32_t cval)
{
    uint32_t hmask = (1u << m->ht_lg) - 1;
    for (;;) {
        const struct hent *e = &m->ht[slot];
        if (e->mid == mid && e->cval == cval)
            return slot;
        if (e->mid == UINT32_MAX)
            return KS_NONE;   /* not reached: every candidate's rule is in the table */
        slot = (slot + 1) & hmask;
    }
}

#ifdef KS_X86
__attribute__((target("avx2,bmi"), noinline)) static int scan1_avx2(const uint32_t *e, uint32_t len, uint32_t lo,
                                                                    uint32_t s, uint32_t lmask)
{
    return scan_avx2(e, len, lo, s, lmask);
}

__attribute__((target("avx512f,avx512bw,bmi"), noinline)) static int scan1_avx512(const uint32_t *e, uint32_t len,
                                                                                 uint32_t lo, uint32_t s,
                                                                                 uint32_t lmask)
{
    return scan_avx512(e, len, lo, s, lmask);
}
#endif

uint32_t ofb_kscan_lookup(const struct ofb_kscan *m, const uint8_t *key)
{
    uint32_t x = ks_compress(m, key), b = (uint32_t)((uint64_t)x >> m->s), o = m->off[b];
    int j;
#ifdef KS_X86
    if (m->simd == 2)
        j = scan1_avx512(m->ent + o, m->off[b + 1] - o, x & m->lmask, m->s, m->lmask);
    else if (m->simd == 1)
        j = scan1_avx2(m->ent + o, m->off[b + 1] - o, x & m->lmask, m->s, m->lmask);
    else
#endif
        j = scan_scalar(m->ent + o, m->off[b + 1] - o, x & m->lmask, m->s, m->lmask);
    if (j < 0)
        return KS_NONE;
    uint32_t mid = (uint32_t)((uint64_t)m->ent[o + (uint32_t)j] >> 2 * m->s), cval = x & m->masks[mid];
    return ks_probe(m, ks_hash(mid, cval, m->ht_lg), mid, cval);
}

/* stages over the batch, each stage's misses overlapping: the blocks' offsets, the blocks'
 * candidates (prefetched line by line), the scan and the table's slot, the table */
#define KS_BATCH(NAME, SCAN, ATTR)                                                                               \
    ATTR static void NAME(const struct ofb_kscan *m, const uint8_t *const keys[], size_t n, uint32_t id_out[],   \
                          uint64_t handle_out[])                                                                 \
    {                                                                                                            \
        enum { CH = 64 };                                                                                        \
        uint32_t x[CH], o[CH], len[CH], sl[CH], mi[CH], cval[CH];                                                \
        const uint32_t s = m->s, lmask = m->lmask, lg = m->ht_lg;                                                \
        for (size_t base = 0; base < n; base += CH) {                                                            \
            size_t q = n - base < CH ? n - base : CH;                                                            \
            const uint8_t *const *k = keys + base;                                                               \
            for (size_t i = 0; i < q; i++) {                                                                     \
                x[i] = m->key_len == 4 ? m->T[0][k[i][0]] | m->T[1][k[i][1]] | m->T[2][k[i][2]] | m->T[3][k[i][3]] \
                                       : ks_compress(m, k[i]);                                                   \
                __builtin_prefetch(&m->off[(uint64_t)x[i] >> s]);                                                \
            }                                                                                                    \
            for (size_t i = 0; i < q; i++) {                                                                     \
                uint32_t b = (uint32_t)((uint64_t)x[i] >> s);                                                    \
                o[i] = m->off[b];                                                                                \
                len[i] = m->off[b + 1] - o[i];                                                                   \
                const char *p = (const char *)(m->ent + o[i]), *pe = (const char *)(m->ent + o[i] + len[i]);     \
                for (int l = 0; l < 8 && p < pe; l++, p += 64)                                                   \
                    __builtin_prefetch(p);                                                                       \
            }                                                                                                    \
            for (size_t i = 0; i < q; i++) {                                                                     \
                int j = SCAN(m->ent + o[i], len[i], x[i] & lmask, s, lmask);                                     \
                sl[i] = KS_NONE;                                                                                 \
                if (j >= 0) {                                                                                    \
                    mi[i] = (uint32_t)((uint64_t)m->ent[o[i] + (uint32_t)j] >> 2 * s);                           \
                    cval[i] = x[i] & m->masks[mi[i]];                                                            \
                    sl[i] = ks_hash(mi[i], cval[i], lg);                                                         \
                    __builtin_prefetch(&m->ht[sl[i]]);                                                           \
                }                                                                                                \
            }                                                                                                    \
            for (size_t i = 0; i < q; i++) {                                                                     \
                uint32_t id = 0;                                                                                 \
                uint64_t h = 0;                                                                                  \
                if (sl[i] != KS_NONE) {                                                                          \
                    uint32_t t = ks_probe(m, sl[i], mi[i], cval[i]);                                             \
                    if (t != KS_NONE) {                                                                          \
                        id = m->ht[t].id;                                                                        \
                        h = m->ht[t].handle;                                                                     \
                    }                                                                                            \
                }                                                                                                \
                id_out[base + i] = id;                                                                           \
                handle_out[base + i] = h;                                                                        \
            }                                                                                                    \
        }                                                                                                        \
    }

KS_BATCH(batch_scalar, scan_scalar, )
#ifdef KS_X86
KS_BATCH(batch_avx2, scan_avx2, __attribute__((target("avx2,bmi"))))
KS_BATCH(batch_avx512, scan_avx512, __attribute__((target("avx512f,avx512bw,bmi"))))
#endif

void ofb_kscan_lookup_batch(const struct ofb_kscan *m, const uint8_t *const keys[], size_t n, uint32_t id_out[],
                            uint64_t handle_out[])
{
#ifdef KS_X86
    if (m->simd == 2)
        return batch_avx512(m, keys, n, id_out, handle_out);
    if (m->simd == 1)
        return batch_avx2(m, keys, n, id_out, handle_out);
#endif
    batch_scalar(m, keys, n, id_out, handle_out);
}
