/* SPDX-License-Identifier: Apache-2.0 */
/* Phase-1 lookup kernels.  Design: one file per instruction set, chosen per
 * classifier at creation (classifier.c: simd_choose, __builtin_cpu_supports):
 * the scalar kernels below are static inline (the facade's lookup inlines them,
 * and the AVX kernels reuse check_block/drain/bm_* for their candidates);
 * cls_lookup_avx2.c and cls_lookup_avx512.c hold the vector kernels, compiled
 * with target attributes so the library runs on any x86-64.  cls_lookup.c
 * (every algorithm's lookup hooks) includes both (a unity build of the lookup
 * path, as one classifier.c was): as separate objects the same kernels
 * measured ~20 % slower on OURS (experiments/classifier/2026-11-28-split-ab),
 * so they stay static in the lookups' object; meson lists them only as headers. */
#ifndef OFB_CLS_LOOKUP_H
#define OFB_CLS_LOOKUP_H

#include "cls_private.h"

/* ---------- lookup ---------- */

struct cand { uint32_t q, h; const struct tbl *t; };

/* best visible match inside one bucket block that outranks (*bp, *bid) */
static inline void check_block(const struct ofb_cls *c, const struct blk *k, const uint64_t *kw,
                               uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    if (!k)
        return;
    PROF(ofb_prof_blocks++);
    for (uint32_t i = 0; i < k->n; i++) {
        const struct ent *e = ent_at(c, k->data, i);
        PROF(ofb_prof_ents++);
        if (*bid && !better(e->prio, e->id, *bp, *bid))
            return; /* sorted: nothing further can win */
        if (ent_visible(e, v) && ent_match(c, e, kw)) {
            PROF(ofb_prof_found++);
            *bp = e->prio;
            *bid = e->id;
            *bh = e->handle;
            return;
        }
    }
}

static inline const struct blk *bucket_of(const struct tbl *t, uint32_t h)
{
    return atomic_load_explicit(&t->bk[fslot(t, h) >> 3], memory_order_acquire);
}

/* visit candidates in descending filter byte with exact early exit */
static inline void drain(const struct ofb_cls *c, struct cand *cd, uint32_t nc, const uint64_t *kw,
                         uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    PROF(ofb_prof_cands += nc);
    while (nc) {
        uint32_t j = 0;
        for (uint32_t i = 1; i < nc; i++)
            if (cd[i].q > cd[j].q)
                j = i;
        if (*bid && cd[j].q < quant(c, *bp))
            return;
        check_block(c, bucket_of(cd[j].t, cd[j].h), kw, v, bp, bid, bh);
        cd[j] = cd[--nc];
    }
}

/* phase 1 of OURS: one filter byte per table, from the packed descriptors.
 * Bytes and hashes go to fixed slots first (addresses independent of the
 * loaded bytes: a store whose address depends on a load made the CPU hold the
 * next tables' loads behind it, ~24 cycles per table), then a second, cheap
 * pass keeps the non-zero ones. */
#define PROBE_CHUNK 64
static inline uint32_t collect_scalar(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                                      const uint64_t *kw,
                                      struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t nc = 0;
    const uint32_t n = hi - lo;
    const struct pdesc *restrict d = s->d + lo;
    struct tbl *const *tp = s->t + lo;
    uint64_t ev[PROBE_CHUNK];
    uint32_t hv[PROBE_CHUNK];
    for (uint32_t base = 0; base < n; base += PROBE_CHUNK) {
        uint32_t m = n - base < PROBE_CHUNK ? n - base : PROBE_CHUNK;
        for (uint32_t i = 0; i < m; i++) {
            const struct pdesc *x = &d[base + i];
            uint32_t h = hash_desc(kw, x, tp[base + i]);
            hv[i] = h;
            ev[i] = atomic_load_explicit((_Atomic uint64_t *)&x->filter[h & x->fmask], memory_order_relaxed);
        }
        atomic_thread_fence(memory_order_acquire);
        for (uint32_t i = 0; i < m; i++) {
            uint32_t q = word_may(ev[i], hv[i]);
            if (q) {
                cd[nc++] = (struct cand){ q, hv[i], tp[base + i] };
                if (unlikely(nc == CAND_MAX)) {
                    drain(c, cd, nc, kw, v, bp, bid, bh);
                    nc = 0;
                }
            }
        }
    }
    return nc;
}

/* key32 phase 1: a table whose bitmap bit is set goes to the pass list with
 * its hash, and its filter word is prefetched (the misses of a key's passes
 * overlap the rest of its phase 1) */
#define BM_PASS_MAX 64
struct bm_pass { uint32_t i, h; };

static inline uint32_t bm_pass(const struct snap *s, uint32_t i, const uint64_t *kw, struct bm_pass *pl,
                               uint32_t np)
{
    const struct pdesc *d = &s->d[i];
    uint32_t h = hash_desc(kw, d, s->t[i]);  /* padding slots never pass */
    PROF(ofb_prof_pass++);
    __builtin_prefetch(&d->filter[h & d->fmask]);
    pl[np] = (struct bm_pass){ i, h };
    return np + 1;
}

/* the passes' filter words, as phase 1 reads them otherwise */
static inline uint32_t bm_drain(const struct ofb_cls *c, const struct snap *s, const struct bm_pass *pl,
                                uint32_t np, const uint64_t *kw, struct cand *cd, uint32_t nc, uint64_t v,
                                uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    for (uint32_t x = 0; x < np; x++) {
        const struct pdesc *d = &s->d[pl[x].i];
        uint32_t h = pl[x].h;
        uint64_t w = atomic_load_explicit((_Atomic uint64_t *)&d->filter[h & d->fmask], memory_order_acquire);
        uint32_t q = word_may(w, h);
        if (q) {
            cd[nc++] = (struct cand){ q, h, s->t[pl[x].i] };
            if (unlikely(nc == CAND_MAX)) {
                drain(c, cd, nc, kw, v, bp, bid, bh);
                nc = 0;
            }
        }
    }
    return nc;
}

/* the tables of one 8-table vector step (from b) whose bit is set in pm pass
 * (bm_pass); the list is drained before the next step could overflow it */
static inline uint32_t bm_pass_step(const struct ofb_cls *c, const struct snap *s, uint32_t b, uint32_t pm,
                                    const uint64_t *kw, struct bm_pass *pl, uint32_t *np_io, uint32_t nc,
                                    struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t np = *np_io;
    while (pm) {
        uint32_t j = (uint32_t)__builtin_ctz(pm);
        pm &= pm - 1;
        np = bm_pass(s, b + j, kw, pl, np);
    }
    if (unlikely(np > BM_PASS_MAX - 8)) {
        nc = bm_drain(c, s, pl, np, kw, cd, nc, v, bp, bid, bh);
        np = 0;
    }
    *np_io = np;
    return nc;
}

/* key32 phase 1 (keys <= 4 bytes), scalar: one bitmap bit per table */
static inline uint32_t sweep_bm_scalar(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                                const uint64_t *kw, struct bm_pass *pl, uint32_t *np_out, uint32_t nc,
                                struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t np = *np_out;
    const uint32_t k32 = (uint32_t)kw[0];
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t b = bm_bit(k32 & s->scm[i], s->ssh[i]);
        const uint64_t *bm = (const uint64_t *)(uintptr_t)s->sbm[i];
        if ((atomic_load_explicit((_Atomic uint64_t *)&bm[b >> 6], memory_order_relaxed) >> (b & 63)) & 1) {
            np = bm_pass(s, i, kw, pl, np);
            if (unlikely(np == BM_PASS_MAX)) {
                nc = bm_drain(c, s, pl, np, kw, cd, nc, v, bp, bid, bh);
                np = 0;
            }
        }
    }
    *np_out = np;
    return nc;
}

/* grouped line filter, scalar: per grouped slot one dword of its group's
 * line, 3 (4) bits; tables whose bits are all set pass (as bm_pass) */
static inline uint32_t sweep_gf_scalar(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                                       const uint64_t *kw, struct bm_pass *pl, uint32_t *np_out, uint32_t nc,
                                       struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t np = *np_out;
    const uint32_t k32 = (uint32_t)kw[0];
    const bool k4 = s->gf_k4;
    for (uint32_t i = lo; i < hi; i++) {
        uint32_t x = k32 & s->scm[i];
        uint32_t wi = gf_word(x, k32 & s->sg[i], s->sgs[i], s->slb[i], s->swl[i]);
        uint32_t pat = gf_pat(x, k4);
        if ((atomic_load_explicit((_Atomic uint32_t *)&s->gw[wi], memory_order_relaxed) & pat) == pat) {
            np = bm_pass(s, i, kw, pl, np);
            if (unlikely(np == BM_PASS_MAX)) {
                nc = bm_drain(c, s, pl, np, kw, cd, nc, v, bp, bid, bh);
                np = 0;
            }
        }
    }
    *np_out = np;
    return nc;
}



#endif
