/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench wildcard classifier: every algorithm's lookup and batch lookup (the hooks
 * cls_algos.c puts in each struct cls_ops).  The AVX kernels are included here: one object
 * with the lookups that call them (as separate objects they measured ~20 % slower on OURS,
 * experiments/classifier/2026-11-28-split-ab). */
#include "cls_lookup.h"
#include "cls_lookup_avx2.c"
#include "cls_lookup_avx512.c"

#ifdef OFB_CLS_PROFILE
/* counters for bench/cls_prof.c (scalar phase 1 only counts "any" hits) */
unsigned long ofb_prof_blocks, ofb_prof_bands, ofb_prof_ents, ofb_prof_found, ofb_prof_cands, ofb_prof_any,
    ofb_prof_pass;
#endif


/* key32 sweep over band b's slots: its grouped tables through the grouped line
 * filter, the others through their bitmaps; passes (filter words prefetched)
 * to pl[0..*np) */
static inline uint32_t sweep_bm(const struct ofb_cls *c, const struct snap *s, uint32_t b, const uint64_t *kw,
                                struct bm_pass *pl, uint32_t *np, struct cand *cd, uint64_t v, uint32_t *bp,
                                uint32_t *bid, uint64_t *bh)
{
    uint32_t nc = 0, lo = s->bs[b], ge = s->ge[b], hi = s->bs[b + 1];
    *np = 0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (c->simd == SIMD_AVX2) {
        if (ge > lo)
            nc = cls_sweep_gf_avx2(c, s, lo, ge, kw, pl, np, nc, cd, v, bp, bid, bh);
        return ge < hi ? cls_sweep_bm_avx2(c, s, ge, hi, kw, pl, np, nc, cd, v, bp, bid, bh) : nc;
    }
#endif
    if (ge > lo)
        nc = sweep_gf_scalar(c, s, lo, ge, kw, pl, np, nc, cd, v, bp, bid, bh);
    return ge < hi ? sweep_bm_scalar(c, s, ge, hi, kw, pl, np, nc, cd, v, bp, bid, bh) : nc;
}

/* phase 1 over band b's slots */
static inline uint32_t collect(const struct ofb_cls *c, const struct snap *s, uint32_t b, const uint64_t *kw,
                               struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    if (s->use_bm) {  /* key32: never on the AVX-512 path (c->key32) */
        struct bm_pass pl[BM_PASS_MAX];
        uint32_t np, nc = sweep_bm(c, s, b, kw, pl, &np, cd, v, bp, bid, bh);
        return bm_drain(c, s, pl, np, kw, cd, nc, v, bp, bid, bh);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (c->simd == SIMD_AVX512 && s->simd_ok)
        return cls_collect_avx512(c, s, s->bs[b], s->bs[b + 1], kw, cd, v, bp, bid, bh);
    if (c->simd == SIMD_AVX2 && s->simd_ok)
        return cls_collect_avx2(c, s, s->bs[b], s->bs[b + 1], kw, cd, v, bp, bid, bh);
#endif
    return collect_scalar(c, s, s->bs[b], s->bs[b + 1], kw, cd, v, bp, bid, bh);
}

/* bands from..nb-1 in order; the first band with a match holds the answer */
static inline void bands_from(const struct ofb_cls *c, const struct snap *s, uint32_t from, const uint64_t *kw,
                              uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    struct cand cd[CAND_MAX + 1];
    for (uint32_t b = from; b < s->nb && !*bid; b++) {
        PROF(ofb_prof_bands++);
        uint32_t nc = collect(c, s, b, kw, cd, v, bp, bid, bh);
        drain(c, cd, nc, kw, v, bp, bid, bh);
    }
}

uint64_t cls_lookup_ours(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                            uint32_t *id_out)
{
    uint32_t bp = 0, bid = 0;
    uint64_t bh = 0;
    if (s)
        bands_from(c, s, 0, kw, v, &bp, &bid, &bh);
    *id_out = bid;
    return bh;
}

uint64_t cls_lookup_tss(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                           uint32_t *id_out)
{
    uint32_t bp = 0, bid = 0;
    uint64_t bh = 0;
    for (uint32_t i = 0; s && i < s->n; i++) {
        const struct tbl *t = s->t[i];
        if (bid && t->max_prio < bp)
            break;
        check_block(c, bucket_of(t, hash_desc(kw, &s->d[i], t)), kw, v, &bp, &bid, &bh);
    }
    *id_out = bid;
    return bh;
}

uint64_t cls_lookup_linear(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                           uint32_t *id_out)
{
    (void)s;
    const struct lin *l = atomic_load_explicit(&c->lin, memory_order_acquire);
    for (uint32_t i = 0; l && i < l->n; i++) {
        const struct ent *e = ent_at(c, l->data, i);
        if (ent_visible(e, v) && ent_match(c, e, kw)) {
            *id_out = e->id;
            return e->handle;
        }
    }
    *id_out = 0;
    return 0;
}

/* DTREE: the tree's answer, then the delta's (OURS tables), the better wins.  A reader whose version predates the tree's
 * min_v re-reads version and snapshot (the tree left out rules deleted
 * before min_v; the re-read version is >= min_v, see dt_poll). */
uint64_t cls_lookup_dtree(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                             uint32_t *id_out)
{
    const struct ofb_dtree *t = atomic_load_explicit(&c->dt, memory_order_acquire);
    uint32_t bp = 0, bid = 0;
    uint64_t bh = 0;
    if (t) {
        if (unlikely(v < ofb_dtree_min_v(t))) {
            v = atomic_load_explicit(&c->version, memory_order_acquire);
            s = atomic_load_explicit(&c->snap, memory_order_acquire);
        }
        uint32_t r = ofb_dtree_lookup(t, (const uint8_t *)kw, v);
        if (r != DT_NONE)
            ofb_dtree_rank_info(t, r, &bp, &bid, &bh);
    }
    if (s && s->n) {   /* bands_from stops at a found rule: search apart, keep the better */
        uint32_t dp = 0, did = 0;
        uint64_t dh = 0;
        bands_from(c, s, 0, kw, v, &dp, &did, &dh);
        if (did && (!bid || better(dp, did, bp, bid)))
            bid = did, bh = dh;
    }
    *id_out = bid;
    return bh;
}

static size_t batch_ours_chunk(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
                         uint32_t *io, uint64_t v, const struct snap *s, const uint32_t *seed_p,
                         const uint32_t *seed_id);

/* DTREE batch: the tree for all keys (interleaved walks), then the delta
 * (OURS batch, seeded with the tree's answers) when it holds rules */
size_t cls_batch_dtree(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
                          uint32_t *io, uint64_t v, const struct snap *s)
{
    const struct ofb_dtree *t = atomic_load_explicit(&c->dt, memory_order_acquire);
    uint32_t rank[OFB_CLS_BATCH_MAX], bp[OFB_CLS_BATCH_MAX], bid[OFB_CLS_BATCH_MAX];
    size_t hits = 0;
    if (t && unlikely(v < ofb_dtree_min_v(t))) {
        v = atomic_load_explicit(&c->version, memory_order_acquire);
        s = atomic_load_explicit(&c->snap, memory_order_acquire);
    }
    if (t)
        ofb_dtree_lookup_batch(t, keys, n, v, rank);
    for (size_t i = 0; i < n; i++) {
        bp[i] = bid[i] = 0;
        ho[i] = 0;
        if (t && rank[i] != DT_NONE)
            ofb_dtree_rank_info(t, rank[i], &bp[i], &bid[i], &ho[i]);
    }
    if (s && s->n) {
        for (size_t k = 0; k < n; k += BATCH_CHUNK) {
            size_t q = n - k > BATCH_CHUNK ? BATCH_CHUNK : n - k;
            batch_ours_chunk(c, keys + k, q, ho + k, bid + k, v, s, bp + k, bid + k);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (io)
            io[i] = bid[i];
        hits += bid[i] != 0;
    }
    return hits;
}

/* OURS batch: phase 1 for every key, then prefetch the top candidate's bucket
 * pointer for all keys, then its block, then finish each key */
static size_t batch_ours_chunk(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
                         uint32_t *io, uint64_t v, const struct snap *s, const uint32_t *seed_p,
                         const uint32_t *seed_id)
{
    uint64_t kw[BATCH_CHUNK][MAXW];
    struct cand cd[BATCH_CHUNK][CAND_MAX + 1];
    uint32_t nc[BATCH_CHUNK], bp[BATCH_CHUNK], bid[BATCH_CHUNK], top[BATCH_CHUNK];
    uint64_t bh[BATCH_CHUNK];
    const struct blk *tb[BATCH_CHUNK];
    size_t hits = 0;
    /* AVX2 only: the scalar sweep measured slower this way (README) */
    const bool bm = s && s->use_bm && c->simd == SIMD_AVX2;
    struct bm_pass pl[BATCH_CHUNK][BM_PASS_MAX];
    uint32_t np[BATCH_CHUNK];
    if (bm)  /* key32: every key's sweep first, so their filter-word misses overlap */
        for (size_t i = 0; i < n; i++) {
            load_key(c, keys[i], kw[i]);
            bp[i] = seed_p ? seed_p[i] : 0;
            bid[i] = seed_id ? seed_id[i] : 0;
            bh[i] = seed_id ? ho[i] : 0;
            nc[i] = sweep_bm(c, s, 0, kw[i], pl[i], &np[i], cd[i], v, &bp[i], &bid[i], &bh[i]);
        }
    for (size_t i = 0; i < n; i++) {
        if (bm) {
            nc[i] = bm_drain(c, s, pl[i], np[i], kw[i], cd[i], nc[i], v, &bp[i], &bid[i], &bh[i]);
        } else {
            load_key(c, keys[i], kw[i]);
            bp[i] = seed_p ? seed_p[i] : 0;
            bid[i] = seed_id ? seed_id[i] : 0;
            bh[i] = seed_id ? ho[i] : 0;
            nc[i] = s ? collect(c, s, 0, kw[i], cd[i], v, &bp[i], &bid[i], &bh[i]) : 0;
        }
        uint32_t j = 0;
        for (uint32_t x = 1; x < nc[i]; x++)
            if (cd[i][x].q > cd[i][j].q)
                j = x;
        top[i] = j;
        if (nc[i]) {
            const struct tbl *t = cd[i][j].t;
            __builtin_prefetch(&t->bk[fslot(t, cd[i][j].h) >> 3]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        tb[i] = NULL;
        if (nc[i]) {
            tb[i] = bucket_of(cd[i][top[i]].t, cd[i][top[i]].h);
            if (tb[i])
                __builtin_prefetch(tb[i]);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (nc[i]) {
            uint32_t j = top[i];
            if (!bid[i] || cd[i][j].q >= quant(c, bp[i]))
                check_block(c, tb[i], kw[i], v, &bp[i], &bid[i], &bh[i]);
            cd[i][j] = cd[i][--nc[i]];
            drain(c, cd[i], nc[i], kw[i], v, &bp[i], &bid[i], &bh[i]);
        }
        if (!bid[i] && s && s->nb > 1)
            bands_from(c, s, 1, kw[i], v, &bp[i], &bid[i], &bh[i]);
        ho[i] = bh[i];
        if (io)
            io[i] = bid[i];
        hits += bid[i] != 0;
    }
    return hits;
}

uint64_t cls_lookup_keymap(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                           uint32_t *id_out)
{
    const struct ofb_kmap *m = km_usable(c, v);
    if (!m)   /* stale map: OURS' tables hold every rule */
        return cls_lookup_ours(c, kw, v, s, id_out);
    uint32_t r = ofb_kmap_lookup(m, (const uint8_t *)kw), p = 0;
    uint64_t h = 0;
    *id_out = 0;
    if (r != OFB_KMAP_NONE)
        ofb_kmap_rank_info(m, r, &p, id_out, &h);
    return h;
}

/* the tries: base and delta (trie.h), the better answer wins */
uint64_t cls_lookup_trie(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                         uint32_t *id_out)
{
    (void)v, (void)s;
    const struct tpair *p = atomic_load_explicit(&c->tp, memory_order_acquire);
    uint32_t ib = 0, idd = 0, pb = 0, pd = 0;
    uint64_t hb = 0, hd = 0;
    if (p && p->base)
        hb = ofb_trie_lookup_v(p->base, kw, p->v, &ib, &pb);
    if (p && p->delta)
        hd = ofb_trie_lookup_v(p->delta, kw, p->v, &idd, &pd);
    if (idd && (!ib || better(pd, idd, pb, ib))) {
        *id_out = idd;
        return hd;
    }
    *id_out = ib;
    return hb;
}

size_t cls_batch_ours(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho, uint32_t *io,
                      uint64_t v, const struct snap *s)
{
    size_t hits = 0;
    for (size_t k = 0; k < n; k += BATCH_CHUNK) {
        size_t q = n - k > BATCH_CHUNK ? BATCH_CHUNK : n - k;
        hits += batch_ours_chunk(c, keys + k, q, ho + k, io ? io + k : NULL, v, s, NULL, NULL);
    }
    return hits;
}

size_t cls_batch_keymap(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
                        uint32_t *io, uint64_t v, const struct snap *s)
{
    const struct ofb_kmap *km = km_usable(c, v);
    if (!km)
        return cls_batch_ours(c, keys, n, ho, io, v, s);
    uint32_t idb[OFB_CLS_BATCH_MAX];
    uint32_t *ids = io ? io : idb;
    size_t hits = 0;
    ofb_kmap_lookup_batch(km, keys, n, ids, ho);
    for (size_t k = 0; k < n; k++)
        hits += ids[k] != 0;
    return hits;
}

/* one key after the other (the algorithms without a batch walk of their own); the lookup
 * inlined per algorithm, as the one switch inlined it before the hooks */
#define BATCH_EACH(NAME, LOOKUP)                                                                      \
    size_t NAME(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,         \
                uint32_t *io, uint64_t v, const struct snap *s)                                       \
    {                                                                                                 \
        size_t hits = 0;                                                                              \
        for (size_t k = 0; k < n; k++) {                                                              \
            uint64_t kw[MAXW];                                                                        \
            uint32_t id;                                                                              \
            load_key(c, keys[k], kw);                                                                 \
            ho[k] = LOOKUP(c, kw, v, s, &id);                                                         \
            if (io)                                                                                   \
                io[k] = id;                                                                           \
            hits += id != 0;                                                                          \
        }                                                                                             \
        return hits;                                                                                  \
    }
BATCH_EACH(cls_batch_tss, cls_lookup_tss)
BATCH_EACH(cls_batch_linear, cls_lookup_linear)
BATCH_EACH(cls_batch_trie, cls_lookup_trie)
