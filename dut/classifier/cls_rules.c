/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench classifier, rule storage: tuple tables, key32 bitmaps, the grouped line filter, snapshots, the sorted list.  See cls_private.h for the map of units. */
#include "cls_private.h"

/* tries: room for `more` entries at the end of the writer's list (no reader
 * sees it: it is grown in place, doubling).  NULL when out of memory. */
static struct lin *tlin_reserve(struct ofb_cls *c, size_t more)
{
    struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
    size_t n = l ? l->n : 0, cap = l ? (l->bytes - sizeof(struct lin)) / c->es : 0;
    if (n + more <= cap)
        return l;
    size_t nc = cap ? cap * 2 : 64;
    while (nc < n + more)
        nc *= 2;
    size_t bytes = sizeof(struct lin) + nc * c->es;
    struct lin *x = cls_xalloc(c, bytes);
    if (!x)
        return NULL;
    x->n = (uint32_t)n;
    x->bytes = bytes;
    if (n)
        memcpy(x->data, l->data, n * c->es);
    atomic_store_explicit(&c->lin, x, memory_order_relaxed);
    if (l)
        cls_xfree(c, l, l->bytes);
    return x;
}

/* tries: index of the first entry with id > id (the list is in id order) */
static uint32_t mask_hash(const uint64_t *m, uint32_t nwk, uint32_t band)
{
    uint64_t h = 0x12345 + band;
    for (uint32_t i = 0; i < nwk; i++) {
        h ^= m[i];
        h *= 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return (uint32_t)h;
}

static int tmap_find(struct ofb_cls *c, const uint64_t *m, uint32_t band)
{
    if (!c->tmap_cap)
        return -1;
    uint32_t i = mask_hash(m, c->nwk, band) & (c->tmap_cap - 1);
    for (;;) {
        uint32_t x = c->tmap[i];
        if (!x)
            return -1;
        if (c->wt[x - 1]->band == band && !memcmp(c->wt[x - 1]->cm, m, c->nwk * 8))
            return (int)(x - 1);
        i = (i + 1) & (c->tmap_cap - 1);
    }
}

static int tmap_add(struct ofb_cls *c, uint32_t idx)
{
    if ((c->nwt + 1) * 2 > c->tmap_cap) {
        uint32_t nc = c->tmap_cap ? c->tmap_cap * 2 : 64;
        uint32_t *n = calloc(nc, sizeof(uint32_t));
        if (!n)
            return -1;
        uint32_t *old = c->tmap, oc = c->tmap_cap;
        c->tmap = n;
        c->tmap_cap = nc;
        for (uint32_t j = 0; j < oc; j++)
            if (old[j]) {
                uint32_t k = mask_hash(c->wt[old[j] - 1]->cm, c->nwk, c->wt[old[j] - 1]->band) & (nc - 1);
                while (n[k])
                    k = (k + 1) & (nc - 1);
                n[k] = old[j];
            }
        free(old);
    }
    uint32_t k = mask_hash(c->wt[idx]->cm, c->nwk, c->wt[idx]->band) & (c->tmap_cap - 1);
    while (c->tmap[k])
        k = (k + 1) & (c->tmap_cap - 1);
    c->tmap[k] = idx + 1;
    return 0;
}

static struct tbl *tbl_alloc(struct ofb_cls *c, const uint64_t *cm, uint32_t nb_log)
{
    size_t nb = (size_t)1 << nb_log;
    size_t bytes = sizeof(struct tbl) + nb * 8 + nb * sizeof(void *);
    struct tbl *t = cls_xalloc(c, sizeof(struct tbl));
    if (!t)
        return NULL;
    memset(t, 0, sizeof(*t));
    memcpy(t->cm, cm, sizeof(uint64_t) * c->nwk);
    for (uint32_t i = 0; i < c->nwk; i++) {
        if (cm[i])
            t->wi[t->nw++] = (uint8_t)i;
        t->bits += (uint32_t)__builtin_popcountll(cm[i]);
    }
    t->nb_log = nb_log;
    if (c->key32) {
        uint32_t bm_log = nb_log + BM_EXTRA > 31 ? 31 : nb_log + BM_EXTRA;
        t->bm_shift = 32 - bm_log;
        t->bm_words = bm_log > 6 ? (size_t)1 << (bm_log - 6) : 1;
    }
    t->bytes = bytes + t->bm_words * 8;
    t->filter = cls_xalloc(c, nb * 8);
    t->bk = cls_xalloc(c, nb * sizeof(void *));
    t->bm = t->bm_words ? cls_xalloc(c, t->bm_words * 8) : NULL;
    if (!t->filter || !t->bk || (t->bm_words && !t->bm)) {
        cls_xfree(c, t->filter, nb * 8);
        cls_xfree(c, t->bk, nb * sizeof(void *));
        cls_xfree(c, (void *)t->bm, t->bm_words * 8);
        cls_xfree(c, t, sizeof(struct tbl));
        return NULL;
    }
    memset(t->filter, 0, nb * 8);
    memset((void *)t->bk, 0, nb * sizeof(void *));
    if (t->bm)
        memset((void *)t->bm, 0, t->bm_words * 8);
    return t;
}

/* retire a table and its arrays (its blocks are owned by whoever replaced it) */
static void tbl_retire(struct ofb_cls *c, struct tbl *t)
{
    size_t nb = (size_t)1 << t->nb_log;
    cls_retire(c, t->filter, nb * 8);
    cls_retire(c, (void *)t->bk, nb * sizeof(void *));
    if (t->bm)
        cls_retire(c, (void *)t->bm, t->bm_words * 8);
    cls_retire(c, t, sizeof(struct tbl));
}



static inline void bm_set(struct tbl *t, const struct ent *e)
{
    if (!t->bm)
        return;
    uint32_t b = bm_bit((uint32_t)(e->w[0] & t->cm[0]), t->bm_shift);
    atomic_fetch_or_explicit(&t->bm[b >> 6], (uint64_t)1 << (b & 63), memory_order_relaxed);
}




/* set entry e's bits in w (gf geometry g, lane gl); atomic: readers may be testing */
static inline void gf_set_in(uint32_t *w, const struct gfgrp *g, uint32_t gl, const struct tbl *t,
                             const struct ent *e, bool k4, bool atomic)
{
    uint32_t v = (uint32_t)e->w[0], x = v & (uint32_t)t->cm[0];
    uint32_t i = gf_word(x, v & g->G, g->sh, g->base + (gl << (g->wlog)), 32 - g->wlog);
    if (atomic)
        atomic_fetch_or_explicit((_Atomic uint32_t *)&w[i], gf_pat(x, k4), memory_order_relaxed);
    else
        w[i] |= gf_pat(x, k4);
}

static inline void gf_set(struct ofb_cls *c, const struct tbl *t, const struct ent *e)
{
    c->gf_puts++;
    if (t->gg)
        gf_set_in(c->gf->w, &c->gf->g[t->gg - 1], t->gl, t, e, c->gf_k4, true);
}

static uint32_t ent_hash(const struct ofb_cls *c, const struct tbl *t, const struct ent *e)
{
    (void)c;
    return hash_words(e->w, t);  /* value words are masked by the rule mask, which covers cm */
}

static uint64_t bucket_filter(const struct ofb_cls *c, const struct tbl *t, const struct blk *k)
{
    uint64_t w = 0;
    if (!k)
        return 0;
    for (uint32_t i = 0; i < k->n && i < 4; i++) {
        const struct ent *e = ent_at(c, k->data, i);
        uint64_t fp = (i == 3 && k->n > 4) ? 0 : fp_of(ent_hash(c, t, e));
        w |= ((uint64_t)quant(c, e->prio) << 9 | fp) << (16 * i);
    }
    return w;
}

/* rebuild the snapshot readers iterate (TSS: sorted by max_prio desc) */
static int cmp_tbl_prio(const void *a, const void *b)
{
    const struct tbl *x = *(struct tbl *const *)a, *y = *(struct tbl *const *)b;
    return x->max_prio < y->max_prio ? 1 : x->max_prio > y->max_prio ? -1 : 0;
}

/* by band; inside a band the grouped tables first, by group and lane */
static int cmp_tbl_band(const void *a, const void *b)
{
    const struct tbl *x = *(struct tbl *const *)a, *y = *(struct tbl *const *)b;
    if (x->band != y->band)
        return x->band < y->band ? -1 : 1;
    uint32_t gx = x->gg ? x->gg : UINT32_MAX, gy = y->gg ? y->gg : UINT32_MAX;
    if (gx != gy)
        return gx < gy ? -1 : 1;
    return x->gl < y->gl ? -1 : x->gl > y->gl ? 1 : 0;
}

/* Readers' view.  OURS: tables grouped by band (band 0 first), each band's
 * segment padded to a multiple of 8 slots with NULL tables whose filter is
 * zero_filter (never a candidate), so the AVX-512 phase 1 runs per band. */
int cls_snap_rebuild(struct ofb_cls *c)
{
    uint32_t nb = is_ours(c) ? c->nbands : 1;
    /* multiple of 8: each SoA array must stay 64-byte aligned for the AVX-512 loads */
    size_t slots_max = ((size_t)c->nwt + 16 * (size_t)nb + 7) & ~(size_t)7;
    size_t bytes = sizeof(struct snap) + slots_max * (sizeof(struct pdesc) + sizeof(void *)) +
                   12 * slots_max * sizeof(uint64_t) + 64;
    struct snap *s = cls_xalloc(c, bytes);
    if (!s)
        return -1;
    memset(s, 0, sizeof(*s));
    s->bytes = bytes;
    s->n = 0;
    s->nb = nb;
    s->t = (struct tbl **)&s->d[slots_max];
    uint64_t *soa = (uint64_t *)(((uintptr_t)&s->t[slots_max] + 63) & ~(uintptr_t)63);
    s->sm0 = soa; s->sm1 = soa + slots_max; s->sw0 = soa + 2 * slots_max;
    s->sw1 = soa + 3 * slots_max; s->sfm = soa + 4 * slots_max; s->sfb = soa + 5 * slots_max;
    s->sp0 = soa + 6 * slots_max; s->sp1 = soa + 7 * slots_max;
    s->sbm = soa + 8 * slots_max;
    s->scm = (uint32_t *)(soa + 9 * slots_max);
    s->ssh = s->scm + slots_max;
    s->sg = (uint32_t *)(soa + 10 * slots_max);
    s->sgs = s->sg + slots_max;
    s->slb = (uint32_t *)(soa + 11 * slots_max);
    s->swl = s->slb + slots_max;
    /* grouped line filter: only with the bitmaps (they serve the ungrouped tables) */
    s->use_gf = c->key32 && c->gf_on && c->gf;
    s->gf_k4 = c->gf_k4;
    s->gw = c->gf ? c->gf->w : NULL;    struct tbl **live = malloc((c->nwt + 1) * sizeof(*live));
    if (!live) {
        cls_xfree(c, s, bytes);
        return -1;
    }
    uint32_t nlive = 0;
    for (uint32_t i = 0; i < c->nwt; i++)
        if (c->wt[i]->n_ent)
            live[nlive++] = c->wt[i];
    if (c->algo == OFB_CLS_ALGO_TSS)
        qsort(live, nlive, sizeof(void *), cmp_tbl_prio);
    else
        qsort(live, nlive, sizeof(void *), cmp_tbl_band);
    s->n = nlive;
    uint32_t slot = 0, li = 0;
    for (uint32_t b = 0; b < nb; b++) {
        s->bs[b] = slot;
        while (s->use_gf && li < nlive && (nb == 1 || live[li]->band == b) && live[li]->gg)
            s->t[slot++] = live[li++];
        while (slot & 7)
            s->t[slot++] = NULL;
        s->ge[b] = slot;
        while (li < nlive && (nb == 1 || live[li]->band == b))
            s->t[slot++] = live[li++];
        while (slot & 7)
            s->t[slot++] = NULL;
    }
    s->bs[nb] = slot;
    s->npad = slot;
    free(live);
    s->simd_ok = true;
    s->one_word = true;
    s->use_bm = c->key32;
    for (uint32_t i = 0; i < s->npad; i++) {
        const struct tbl *t = s->t[i];
        struct pdesc *d = &s->d[i];
        memset(d, 0, sizeof(*d));
        d->filter = zero_filter;
        /* padding: bit 0 or 1 of a zero word, never passes */
        s->sbm[i] = (uint64_t)(uintptr_t)zero_filter;
        s->scm[i] = 0;
        s->ssh[i] = 31;
        /* padding and ungrouped: the never-set line 0, dwords 0..3 */
        s->sg[i] = 0;
        s->sgs[i] = 32;
        s->slb[i] = 0;
        s->swl[i] = 30;
        if (t && s->use_gf && t->gg) {
            const struct gfgrp *g = &c->gf->g[t->gg - 1];
            s->sg[i] = g->G;
            s->sgs[i] = g->sh;
            s->slb[i] = g->base + (t->gl << g->wlog);
            s->swl[i] = 32 - g->wlog;
        }
        if (t) {
            if (t->bm) {
                s->sbm[i] = (uint64_t)(uintptr_t)t->bm;
                s->scm[i] = (uint32_t)t->cm[0];
                s->ssh[i] = t->bm_shift;
            } else {
                s->use_bm = false;
            }
            d->nw = t->nw;
            d->w0 = t->nw > 0 ? t->wi[0] : 0;
            d->m0 = t->nw > 0 ? t->cm[t->wi[0]] : 0;
            d->w1 = t->nw > 1 ? t->wi[1] : 0;
            d->m1 = t->nw > 1 ? t->cm[t->wi[1]] : 0;
            d->fmask = (1u << t->nb_log) - 1;
            d->filter = t->filter;
            if (t->nw > 2)
                s->simd_ok = false;
            if (t->nw > 1)
                s->one_word = false;
        }
        s->sm0[i] = d->m0;
        s->sm1[i] = d->m1;
        s->sw0[i] = d->w0;
        s->sw1[i] = d->w1;
        s->sfm[i] = d->fmask;
        s->sfb[i] = (uint64_t)(uintptr_t)d->filter;
        s->sp0[i] = (uint64_t)(2u * d->w0) | (uint64_t)(2u * d->w0 + 1) << 32;
        s->sp1[i] = (uint64_t)(2u * d->w1) | (uint64_t)(2u * d->w1 + 1) << 32;
    }
    struct snap *old = atomic_load_explicit(&c->snap, memory_order_relaxed);
    atomic_store_explicit(&c->snap, s, memory_order_release);
    if (old)
        cls_retire(c, old, old->bytes);
    return 0;
}

/* double the buckets of table idx: new arrays, new blocks, old ones retired */
static int tbl_grow(struct ofb_cls *c, uint32_t idx, uint32_t new_log)
{
    struct tbl *o = c->wt[idx];
    struct tbl *t = tbl_alloc(c, o->cm, new_log);
    if (!t)
        return -1;
    t->max_prio = o->max_prio;
    t->band = o->band;
    t->gg = o->gg;  /* its entries' bits are in the group's lines already */
    t->gl = o->gl;
    size_t onb = (size_t)1 << o->nb_log, nnb = (size_t)1 << new_log;
    /* count per new bucket */
    uint32_t *cnt = calloc(nnb, sizeof(uint32_t));
    if (!cnt)
        return -1;
    for (size_t b = 0; b < onb; b++) {
        struct blk *k = atomic_load_explicit(&o->bk[b], memory_order_relaxed);
        if (!k)
            continue;
        for (uint32_t i = 0; i < k->n; i++) {
            uint32_t h = ent_hash(c, t, ent_at(c, k->data, i));
            cnt[fslot(t, h) >> 3]++;
        }
    }
    for (size_t b = 0; b < nnb; b++) {
        if (!cnt[b])
            continue;
        size_t bytes = sizeof(struct blk) + (size_t)cnt[b] * c->es;
        struct blk *k = cls_xalloc(c, bytes);
        if (!k) {
            free(cnt);
            return -1; /* leaks the partial table: out of memory is fatal enough */
        }
        k->n = 0;
        k->bytes = (uint32_t)bytes;
        atomic_store_explicit(&t->bk[b], k, memory_order_relaxed);
    }
    /* old blocks are sorted, and a stable split keeps the order */
    for (size_t b = 0; b < onb; b++) {
        struct blk *k = atomic_load_explicit(&o->bk[b], memory_order_relaxed);
        if (!k)
            continue;
        for (uint32_t i = 0; i < k->n; i++) {
            struct ent *e = ent_at(c, k->data, i);
            uint32_t h = ent_hash(c, t, e);
            uint32_t fs = fslot(t, h);
            struct blk *nk = atomic_load_explicit(&t->bk[fs >> 3], memory_order_relaxed);
            struct ent *d = ent_at(c, nk->data, nk->n++);
            memcpy(d, e, c->es);
            bm_set(t, e);
            (void)h;
        }
        cls_retire(c, k, k->bytes);
    }
    free(cnt);
    for (size_t b = 0; b < nnb; b++)
        t->filter[b] = bucket_filter(c, t, atomic_load_explicit(&t->bk[b], memory_order_relaxed));
    t->n_ent = o->n_ent;
    c->wt[idx] = t;
    tbl_retire(c, o);
    return 0; /* caller rebuilds the snapshot */
}

/* grouped line filter: lines a group of g (padded to a power of two gp)
 * tables of at most mx entries needs for ~bpe bits per entry */
static uint32_t gf_lines_log(const struct ofb_cls *c, uint32_t mx, uint32_t gp)
{
    uint64_t want = ((uint64_t)mx * c->gf_bpe * gp + 511) / 512;
    uint32_t l = 0;
    while (((uint64_t)1 << l) < want && l < 24)
        l++;
    return l;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint32_t pow2_ceil(uint32_t x)
{
    uint32_t p = 1;
    while (p < x)
        p *= 2;
    return p;
}


/* (Re)group: per band, greedily: the largest ungrouped table seeds a group,
 * then the table sharing the most care bits with the group's common mask G
 * joins while G keeps >= log2(lines) + slack bits (so the line index spreads)
 * and the group has < gf_maxg tables.  New lines are filled from every entry
 * physically present (a superset of the visible rules), then the tables are
 * pointed at them; the caller rebuilds the snapshot, which makes readers use
 * them, and the old lines are retired with it.  -1 when out of memory (the
 * old grouping stays). */
int cls_gf_build(struct ofb_cls *c)
{
    uint32_t nwt = c->nwt, ng = 0;
    uint32_t *order = malloc((nwt + 1) * sizeof(uint32_t));
    uint64_t *okey = malloc((nwt + 1) * sizeof(uint64_t));
    uint8_t *used = calloc(nwt + 1, 1);
    uint32_t (*mem)[GF_MAXG] = malloc((nwt + 1) * sizeof(*mem));
    uint32_t *cnt = malloc((nwt + 1) * sizeof(uint32_t));
    struct gfil *gf = malloc(sizeof(struct gfil) + (nwt + 1) * sizeof(struct gfgrp));
    if (!order || !okey || !used || !mem || !cnt || !gf)
        goto fail;
    uint32_t words = 16;  /* line 0: padding, never set */
    for (uint32_t b = 0; b < c->nbands; b++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < c->nbt[b]; i++)
            if (c->wt[c->btl[b][i]]->n_ent)
                order[n++] = c->btl[b][i];
        for (uint32_t i = 0; i < n; i++)  /* by entries, descending */
            okey[i] = (uint64_t)(UINT32_MAX - c->wt[order[i]]->n_ent) << 32 | order[i];
        qsort(okey, n, sizeof(uint64_t), cmp_u64);
        if (n > GF_MAX_TABLES)
            n = GF_MAX_TABLES;  /* the rest stay ungrouped (greedy is quadratic) */
        for (uint32_t i = 0; i < n; i++)
            order[i] = (uint32_t)okey[i];
        for (uint32_t si = 0; si < n; si++) {
            uint32_t seed = order[si];
            if (used[seed])
                continue;
            used[seed] = 1;
            uint32_t G = (uint32_t)c->wt[seed]->cm[0], mx = c->wt[seed]->n_ent, k = 1;
            mem[ng][0] = seed;
            while (k < c->gf_maxg) {
                int best = -1, bpc = -1;
                for (uint32_t ui = si + 1; ui < n; ui++) {
                    uint32_t u = order[ui];
                    int pc = __builtin_popcount(G & (uint32_t)c->wt[u]->cm[0]);
                    if (!used[u] && pc > bpc) {
                        bpc = pc;
                        best = (int)u;
                    }
                }
                if (best < 0)
                    break;
                uint32_t mx2 = c->wt[best]->n_ent > mx ? c->wt[best]->n_ent : mx;
                if ((uint32_t)bpc < gf_lines_log(c, mx2, pow2_ceil(k + 1)) + c->gf_slack)
                    break;
                used[best] = 1;
                mem[ng][k++] = (uint32_t)best;
                G &= (uint32_t)c->wt[best]->cm[0];
                mx = mx2;
            }
            uint32_t gp = pow2_ceil(k), wlog = 0, l = gf_lines_log(c, mx, gp);
            while ((1u << wlog) < 16 / gp)
                wlog++;
            if ((uint64_t)words + ((uint64_t)16 << l) > (1ull << 30))
                goto fail;
            gf->g[ng] = (struct gfgrp){ G, 32 - l, words, wlog, b };
            cnt[ng] = k;
            words += 16u << l;
            ng++;
        }
    }
    gf->ng = ng;
    if (c->tu.gf_debug)  /* measurement: the grouping chosen */
        for (uint32_t k = 0; k < ng; k++)
            fprintf(stderr, "gf group %u band %u: %u tables, G %d bits, 2^%u lines, lane %u dwords\n", k,
                    gf->g[k].band, cnt[k], __builtin_popcount(gf->g[k].G), 32 - gf->g[k].sh, 1u << gf->g[k].wlog);
    gf->bytes = (size_t)words * 4 < 4096 ? 4096 : (size_t)words * 4;
    gf->w = cls_xalloc(c, gf->bytes);
    if (!gf->w)
        goto fail;
    memset(gf->w, 0, gf->bytes);
    for (uint32_t k = 0; k < ng; k++)
        for (uint32_t j = 0; j < cnt[k]; j++) {
            const struct tbl *t = c->wt[mem[k][j]];
            for (size_t bi = 0; bi < ((size_t)1 << t->nb_log); bi++) {
                const struct blk *bk = atomic_load_explicit(&t->bk[bi], memory_order_relaxed);
                for (uint32_t e = 0; bk && e < bk->n; e++)
                    gf_set_in(gf->w, &gf->g[k], j, t, ent_at(c, bk->data, e), c->gf_k4, false);
            }
        }
    for (uint32_t i = 0; i < nwt; i++)
        c->wt[i]->gg = c->wt[i]->gl = 0;
    for (uint32_t k = 0; k < ng; k++)
        for (uint32_t j = 0; j < cnt[k]; j++) {
            c->wt[mem[k][j]]->gg = k + 1;
            c->wt[mem[k][j]]->gl = j;
        }
    if (c->gf) {
        cls_retire(c, c->gf->w, c->gf->bytes);  /* with the snapshot that names it */
        free(c->gf);
    }
    c->gf = gf;
    c->gf_rules = c->n_rules;
    c->gf_puts = 0;
    c->snap_dirty = true;
    free(order);
    free(okey);
    free(used);
    free(mem);
    free(cnt);
    return 0;
fail:
    c->gf_rules = c->n_rules;
    c->gf_puts = 0;
    free(order);
    free(okey);
    free(used);
    free(mem);
    free(cnt);
    free(gf);
    return -1;
}


static int tbl_create(struct ofb_cls *c, const uint64_t *cm, uint32_t hint, uint32_t band)
{
    uint32_t log = 4;
    while (((size_t)1 << log) < hint && log < 28)
        log++;
    if (c->nwt == c->cap_wt) {
        uint32_t nc = c->cap_wt ? c->cap_wt * 2 : 16;
        struct tbl **n = realloc(c->wt, nc * sizeof(*n));
        if (!n)
            return -1;
        c->wt = n;
        c->cap_wt = nc;
    }
    struct tbl *t = tbl_alloc(c, cm, log);
    if (!t)
        return -1;
    t->band = band;
    if (c->nbt[band] == c->cap_bt[band]) {
        uint32_t nc = c->cap_bt[band] ? c->cap_bt[band] * 2 : 16;
        uint32_t *n = realloc(c->btl[band], nc * sizeof(*n));
        if (!n)
            return -1;  /* leaks t: out of memory */
        c->btl[band] = n;
        c->cap_bt[band] = nc;
    }
    /* btl[band] is kept by mask bits, descending (creation order among equal
     * bits): choose_table's first fit is then the most specific one */
    uint32_t at = c->nbt[band];
    while (at > 0 && c->wt[c->btl[band][at - 1]]->bits < t->bits)
        at--;
    memmove(&c->btl[band][at + 1], &c->btl[band][at], (c->nbt[band] - at) * sizeof(uint32_t));
    c->btl[band][at] = c->nwt;
    c->nbt[band]++;
    c->wt[c->nwt] = t;
    if (tmap_add(c, c->nwt))
        return -1;
    return (int)c->nwt++;
}

/* relax(M): clear every byte that is a partial prefix (0x80..0xfe with
 * contiguous leading ones) and sits inside a prefix (after a 0xff byte or
 * before a 0x00 byte), so nearby prefix lengths share a table.  The context
 * test keeps arbitrary masks whole: relaxing a random byte such as 0xf0 only
 * put groups of rules with one fingerprint into a bucket (NTT 1M: 2.7 block
 * visits per lookup instead of 1.3). */
static void relax(const struct ofb_cls *c, const uint64_t *m, uint64_t *r)
{
    memcpy(r, m, sizeof(uint64_t) * c->nwk);
    const uint8_t *o = (const uint8_t *)m;
    uint8_t *b = (uint8_t *)r;
    for (uint32_t i = 0; i < c->key_len; i++) {
        uint8_t x = o[i];
        /* partial prefix: ~x is 0...01...1, i.e. (~x & (~x + 1)) == 0 */
        uint8_t nx = (uint8_t)~x;
        bool in_prefix = (i > 0 && o[i - 1] == 0xff) || (i + 1 < c->key_len && o[i + 1] == 0);
        if (x && x != 0xff && (uint8_t)(nx & (uint8_t)(nx + 1)) == 0 && in_prefix)
            b[i] = 0;
    }
}

static uint32_t group_count(const struct ofb_cls *c, const struct tbl *t, const struct blk *k,
                            const uint64_t *val)
{
    uint32_t n = 0;
    if (!k)
        return 0;
    for (uint32_t i = 0; i < k->n; i++) {
        const struct ent *e = ent_at(c, k->data, i);
        bool same = true;
        for (uint32_t w = 0; w < t->nw && same; w++)
            same = ((e->w[t->wi[w]] ^ val[t->wi[w]]) & t->cm[t->wi[w]]) == 0;
        n += same;
    }
    return n;
}

int cls_rr_reserve(struct ofb_cls *c, uint32_t more)
{
    if (c->n_ids + more + 1 <= c->cap_ids)
        return 0;
    uint32_t nc = c->cap_ids ? c->cap_ids : 1024;
    while (nc < c->n_ids + more + 1)
        nc *= 2;
    struct rrec *n = realloc(c->rr, (size_t)nc * sizeof(*n));
    if (!n)
        return -1;
    atomic_fetch_add(&c->bytes, (size_t)(nc - c->cap_ids) * sizeof(*n));
    c->rr = n;
    c->cap_ids = nc;
    return 0;
}

/* writer: put entry e (fully formed) into table idx */
static int tbl_put(struct ofb_cls *c, uint32_t idx, const uint8_t *ebuf, uint32_t *h_out)
{
    struct tbl *t = c->wt[idx];
    const struct ent *e = (const struct ent *)ebuf;
    if (t->n_ent + 1 > ((size_t)2 << t->nb_log)) {  /* <= 2 rules per bucket on average */
        if (tbl_grow(c, idx, t->nb_log + 1) || cls_snap_touch(c))
            return -1;
        t = c->wt[idx];
    }
    uint32_t h = ent_hash(c, t, e);
    uint32_t fs = fslot(t, h);
    struct blk *ok = atomic_load_explicit(&t->bk[fs >> 3], memory_order_relaxed);
    uint32_t on = ok ? ok->n : 0;
    size_t bytes = sizeof(struct blk) + (size_t)(on + 1) * c->es;
    struct blk *nk = cls_xalloc(c, bytes);
    if (!nk)
        return -1;
    nk->n = on + 1;
    nk->bytes = (uint32_t)bytes;
    uint32_t pos = 0;
    while (pos < on) {
        const struct ent *x = ent_at(c, ok->data, pos);
        if (better(e->prio, e->id, x->prio, x->id))
            break;
        pos++;
    }
    if (pos)
        memcpy(nk->data, ok->data, (size_t)pos * c->es);
    bm_set(t, e);
    if (c->gf_on)
        gf_set(c, t, e);  /* before the block (and the rule's version) is visible */
    memcpy(ent_at(c, nk->data, pos), e, c->es);
    if (on > pos)
        memcpy(ent_at(c, nk->data, pos + 1), ent_at(c, ok->data, pos), (size_t)(on - pos) * c->es);
    atomic_store_explicit(&t->bk[fs >> 3], nk, memory_order_release);
    atomic_store_explicit((_Atomic uint64_t *)&t->filter[fs >> 3], bucket_filter(c, t, nk), memory_order_release);
    if (ok)
        cls_retire(c, ok, ok->bytes);
    t->n_ent++;
    bool resort = false;
    if (e->prio > t->max_prio) {
        t->max_prio = e->prio;
        resort = c->algo == OFB_CLS_ALGO_TSS;
    }
    if (t->n_ent == 1 || resort)
        if (cls_snap_touch(c))
            return -1;
    *h_out = h;
    return 0;
}

static void make_ent(struct ofb_cls *c, const struct ofb_cls_rule *r, uint32_t id, uint8_t *ebuf,
                     uint64_t *m)
{
    struct ent *e = (struct ent *)ebuf;
    uint64_t v[MAXW];
    words_of(c, r->mask, m);
    words_of(c, r->value, v);
    e->prio = r->priority;
    e->id = id;
    e->handle = r->handle;
    e->add_v = c->wv;
    atomic_store_explicit(&e->del_v, V_INF, memory_order_relaxed);
    for (uint32_t i = 0; i < c->nwk; i++) {
        e->w[i] = v[i] & m[i];
        e->w[c->nwk + i] = m[i];
    }
}


/* choose a table for a rule with masked value words val and mask m.
 * OURS (TupleMerge-like): the most specific existing table whose mask is a
 * subset of m and whose group for (val & cm) has room (exact tables always
 * have room); else a new table for relax(m), or for m if that exists. */
static int choose_table(struct ofb_cls *c, const uint64_t *val, const uint64_t *m, uint32_t band)
{
    if (c->algo == OFB_CLS_ALGO_TSS) {
        int i = tmap_find(c, m, 0);
        return i >= 0 ? i : tbl_create(c, m, c->expected ? c->expected / 64 : 16, 0);
    }
    for (uint32_t bi = 0; bi < c->nbt[band]; bi++) {   /* by bits, descending (tbl_create) */
        uint32_t i = c->btl[band][bi];
        const struct tbl *t = c->wt[i];
        if (!tbl_fits(c, t, m))
            continue;
        bool exact = !memcmp(t->cm, m, c->nwk * 8);
        if (!exact) {
            uint32_t h = hash_words(val, t);
            const struct blk *k = atomic_load_explicit(&t->bk[fslot(t, h) >> 3], memory_order_relaxed);
            if (group_count(c, t, k, val) >= OFB_CLS_MERGE_LIMIT)
                continue;
        }
        return (int)i;
    }
    uint64_t r[MAXW];
    relax(c, m, r);
    return tmap_find(c, r, band) < 0 ? tbl_create(c, r, 16, band) : tbl_create(c, m, 16, band);
}

uint32_t cls_insert_one(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    if (cls_rr_reserve(c, 1))
        return 0;
    c->km_chg = true;
    uint32_t id = ++c->n_ids;
    uint64_t ebuf[4 + 2 * MAXW];
    uint64_t m[MAXW];
    make_ent(c, r, id, (uint8_t *)ebuf, m);
    struct ent *e = (struct ent *)ebuf;

    if (is_trie(c)) {
        struct lin *l = tlin_reserve(c, 1);
        if (!l) {
            c->n_ids--;
            return 0;
        }
        memcpy(ent_at(c, l->data, l->n), e, c->es);
        l->n++;
        c->rr[id] = (struct rrec){ 0, 0 };
        c->trie_dirty = true;
        c->delta_dirty = true;
    } else if (uses_lin(c)) {
        struct lin *o = atomic_load_explicit(&c->lin, memory_order_relaxed);
        uint32_t on = o ? o->n : 0, pos = 0;
        size_t bytes = sizeof(struct lin) + (size_t)(on + 1) * c->es;
        struct lin *n = cls_xalloc(c, bytes);
        if (!n) {
            c->n_ids--;
            return 0;
        }
        n->n = on + 1;
        n->bytes = bytes;
        while (pos < on && !better(e->prio, id, ent_at(c, o->data, pos)->prio, ent_at(c, o->data, pos)->id))
            pos++;
        if (pos)
            memcpy(n->data, o->data, (size_t)pos * c->es);
        memcpy(ent_at(c, n->data, pos), e, c->es);
        if (on > pos)
            memcpy(ent_at(c, n->data, pos + 1), ent_at(c, o->data, pos), (size_t)(on - pos) * c->es);
        atomic_store_explicit(&c->lin, n, memory_order_release);
        if (o)
            cls_retire(c, o, o->bytes);
        c->rr[id] = (struct rrec){ 0, 0 };
        c->trie_dirty = true;
        c->delta_dirty = true;
    } else {
        uint32_t band = is_ours(c) ? band_of(c, e->prio) : 0;
        int ti = choose_table(c, e->w, m, band);
        uint32_t h;
        if (ti < 0 || tbl_put(c, (uint32_t)ti, (uint8_t *)ebuf, &h)) {
            c->n_ids--;
            return 0;
        }
        c->rr[id] = (struct rrec){ (uint32_t)ti, h };
        c->n_delta += is_dt(c);
    }
    c->n_rules++;
    return id;
}

/* ---------- delete ---------- */

/* find the visible entry with this id; returns it (inside the current block) */
uint32_t cls_tlin_after(const struct ofb_cls *c, const struct lin *l, uint32_t id)
{
    uint32_t lo = 0, hi = l ? l->n : 0;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (ent_at(c, l->data, mid)->id <= id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct ent *cls_find_ent(struct ofb_cls *c, uint32_t id, struct blk **blk_out, uint32_t *pos_out)
{
    if (is_trie(c)) {
        struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
        uint32_t i = id ? cls_tlin_after(c, l, id - 1) : 0;
        if (!l || i >= l->n || ent_at(c, l->data, i)->id != id)
            return NULL;
        *pos_out = i;
        *blk_out = NULL;
        return ent_at(c, l->data, i);
    }
    if (uses_lin(c)) {
        struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
        for (uint32_t i = 0; l && i < l->n; i++) {
            struct ent *e = ent_at(c, l->data, i);
            if (e->id == id) {
                *pos_out = i;
                *blk_out = NULL;
                return e;
            }
        }
        return NULL;
    }
    struct tbl *t = c->wt[c->rr[id].tidx];
    struct blk *k = atomic_load_explicit(&t->bk[fslot(t, c->rr[id].h) >> 3], memory_order_relaxed);
    for (uint32_t i = 0; k && i < k->n; i++) {
        struct ent *e = ent_at(c, k->data, i);
        if (e->id == id) {
            *blk_out = k;
            *pos_out = i;
            return e;
        }
    }
    return NULL;
}

static void dt_log_kill(struct ofb_cls *c, uint32_t id)
{
    if (!c->job)
        return;
    if (c->n_klog == c->cap_klog) {
        size_t nc = c->cap_klog ? c->cap_klog * 2 : 256;
        struct pendkill *k = realloc(c->klog, nc * sizeof(*k));
        if (!k)
            abort();  /* cannot forget a delete the new tree must apply */
        c->klog = k;
        c->cap_klog = nc;
    }
    c->klog[c->n_klog++] = (struct pendkill){ id, c->wv };
}

int cls_delete_one(struct ofb_cls *c, uint32_t id)
{
    if (id == 0 || id > c->n_ids || c->rr[id].tidx == UINT32_MAX)
        return -1;
    c->km_chg = true;
    if (c->rr[id].tidx == RR_TREE) {   /* DTREE: killed in place in the compiled tree */
        struct ofb_dtree *t = atomic_load_explicit(&c->dt, memory_order_relaxed);
        if (ofb_dtree_del_v(t, id) != V_INF || ofb_dtree_kill(t, id, c->wv))
            return -1;
        dt_log_kill(c, id);
        c->n_rules--;
        return 0;
    }
    struct blk *k;
    uint32_t pos;
    struct ent *e = cls_find_ent(c, id, &k, &pos);
    if (!e || atomic_load_explicit(&e->del_v, memory_order_relaxed) != V_INF)
        return -1;
    if (is_dt(c)) {   /* a DTREE delta rule: a rebuild in flight has it in its snapshot */
        c->n_delta--;
        dt_log_kill(c, id);
    }
    atomic_store_explicit(&e->del_v, c->wv, memory_order_relaxed);
    if (c->n_prm == c->cap_prm) {
        size_t nc = c->cap_prm ? c->cap_prm * 2 : 256;
        struct pendrm *p = realloc(c->prm, nc * sizeof(*p));
        if (!p)
            abort();
        c->prm = p;
        c->cap_prm = nc;
    }
    c->prm[c->n_prm++] = (struct pendrm){ c->wv, id, 0, 0, false };
    c->n_rules--;
    c->trie_dirty = true;
    if (trie_incremental(c)) {
        if (id > c->base_last_id)
            c->delta_dirty = true;            /* the next delta leaves it out */
        else if (!c->keep_base || ofb_trie_kill(c->base, id, c->wv)) {
            /* a plain base cannot skip a rule: rebuild it in keep mode */
            c->keep_base = true;
            c->force_merge = true;
        }
    }
    return 0;
}

/* after the grace period: drop the entry from its block, lower the filter */
void cls_physical_remove(struct ofb_cls *c, uint32_t id)
{
    struct blk *k;
    uint32_t pos;
    struct ent *e = cls_find_ent(c, id, &k, &pos);
    uint32_t tidx = c->rr[id].tidx;
    c->rr[id].tidx = UINT32_MAX;
    if (!e || is_trie(c))
        return;  /* tries: the entry stays, invisible, until the next merge compacts the list */
    if (uses_lin(c)) {
        struct lin *o = atomic_load_explicit(&c->lin, memory_order_relaxed);
        size_t bytes = sizeof(struct lin) + (size_t)(o->n - 1) * c->es;
        struct lin *n = cls_xalloc(c, bytes);
        if (!n)
            return; /* stays as an invisible entry */
        n->n = o->n - 1;
        n->bytes = bytes;
        memcpy(n->data, o->data, (size_t)pos * c->es);
        memcpy(ent_at(c, n->data, pos), ent_at(c, o->data, pos + 1), (size_t)(o->n - pos - 1) * c->es);
        atomic_store_explicit(&c->lin, n, memory_order_release);
        cls_retire(c, o, o->bytes);
        return;
    }
    struct tbl *t = c->wt[tidx];
    uint32_t fs = fslot(t, c->rr[id].h);
    struct blk *nk = NULL;
    if (k->n > 1) {
        size_t bytes = sizeof(struct blk) + (size_t)(k->n - 1) * c->es;
        nk = cls_xalloc(c, bytes);
        if (!nk)
            return;
        nk->n = k->n - 1;
        nk->bytes = (uint32_t)bytes;
        memcpy(nk->data, k->data, (size_t)pos * c->es);
        memcpy(ent_at(c, nk->data, pos), ent_at(c, k->data, pos + 1), (size_t)(k->n - pos - 1) * c->es);
    }
    atomic_store_explicit(&t->bk[fs >> 3], nk, memory_order_release);
    atomic_store_explicit((_Atomic uint64_t *)&t->filter[fs >> 3], bucket_filter(c, t, nk), memory_order_release);
    cls_retire(c, k, k->bytes);
    t->n_ent--;
    if (t->n_ent == 0)
        cls_snap_touch(c);
}

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    return better(x->prio, x->id, y->prio, y->id) ? -1 : better(y->prio, y->id, x->prio, x->id) ? 1 : 0;
}

/* LINEAR: append everything, sort once, publish one array.  Tries: append in
 * id order to the writer's list. */
int cls_bulk_linear(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids)
{
    if (is_trie(c)) {
        struct lin *l = tlin_reserve(c, n);
        if (!l)
            return -1;
        for (size_t i = 0; i < n; i++) {
            uint64_t m[MAXW];
            uint32_t id = ++c->n_ids;
            make_ent(c, &rules[i], id, (uint8_t *)ent_at(c, l->data, l->n++), m);
            c->rr[id] = (struct rrec){ 0, 0 };
            if (ids)
                ids[i] = id;
        }
        c->n_rules += n;
        c->trie_dirty = true;
        c->delta_dirty = true;
        return 0;
    }
    struct lin *o = atomic_load_explicit(&c->lin, memory_order_relaxed);
    uint32_t on = o ? o->n : 0;
    size_t bytes = sizeof(struct lin) + (size_t)(on + n) * c->es;
    struct lin *l = cls_xalloc(c, bytes);
    if (!l)
        return -1;
    l->n = on + (uint32_t)n;
    l->bytes = bytes;
    if (on)
        memcpy(l->data, o->data, (size_t)on * c->es);
    for (size_t i = 0; i < n; i++) {
        uint64_t m[MAXW];
        uint32_t id = ++c->n_ids;
        make_ent(c, &rules[i], id, (uint8_t *)ent_at(c, l->data, on + (uint32_t)i), m);
        c->rr[id] = (struct rrec){ 0, 0 };
        if (ids)
            ids[i] = id;
    }
    qsort(l->data, l->n, c->es, cmp_ent);
    c->n_rules += n;
    c->trie_dirty = true;
    c->delta_dirty = true;
    atomic_store_explicit(&c->lin, l, memory_order_release);
    if (o)
        cls_retire(c, o, o->bytes);
    return 0;
}
