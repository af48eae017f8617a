/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench wildcard classifier, the facade: create/destroy, insert/delete, bulk
 * build, lookup dispatch and stats over the private units (map: cls_private.h;
 * design: classifier.h). */
#include "cls_lookup.h"
#include "cls_lookup_avx2.c"
#include "cls_lookup_avx512.c"

#ifdef OFB_CLS_PROFILE
/* counters for bench/cls_prof.c (scalar phase 1 only counts "any" hits) */
unsigned long ofb_prof_blocks, ofb_prof_bands, ofb_prof_ents, ofb_prof_found, ofb_prof_cands, ofb_prof_any,
    ofb_prof_pass;
#endif

const char *ofb_cls_last_error(const struct ofb_cls *c)
{
    return c->err[0] ? c->err : c->km_err[0] ? c->km_err : NULL;
}
uint32_t ofb_cls_insert(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    if (cls_louds_refuses(c, "insert"))
        return 0;
    uint32_t id = cls_insert_one(c, r);
    if (!id && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s: insert: out of memory", ofb_cls_algo_name(c->algo));
    if (id) {
        cls_after_update(c);
        if (is_trie(c) && !c->in_batch && c->trie_failed) {
            cls_trie_undo_ids(c, id, id);
            return 0;
        }
    }
    return id;
}
int ofb_cls_delete_id(struct ofb_cls *c, uint32_t id)
{
    if (cls_louds_refuses(c, "delete"))
        return -1;
    if (cls_delete_one(c, id))
        return -1;
    cls_after_update(c);
    return 0;
}

uint32_t ofb_cls_delete(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    if (cls_louds_refuses(c, "delete"))
        return 0;
    uint64_t m[MAXW], v[MAXW];
    words_of(c, r->mask, m);
    words_of(c, r->value, v);
    for (uint32_t i = 0; i < c->nwk; i++)
        v[i] &= m[i];
    uint32_t best = 0;
    uint64_t now = c->wv;
    if (uses_lin(c)) {
        struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
        for (uint32_t i = 0; l && i < l->n && !best; i++) {
            struct ent *e = ent_at(c, l->data, i);
            if (e->prio == r->priority && ent_visible(e, now) &&
                !memcmp(e->w, v, c->nwk * 8) && !memcmp(e->w + c->nwk, m, c->nwk * 8))
                best = e->id;
        }
    } else {
        for (uint32_t j = 0; j < c->nwt; j++) {
            struct tbl *t = c->wt[j];
            if (!t->n_ent || !tbl_fits(c, t, m))
                continue;
            uint32_t h = hash_words(v, t);
            struct blk *k = atomic_load_explicit(&t->bk[fslot(t, h) >> 3], memory_order_relaxed);
            for (uint32_t i = 0; k && i < k->n; i++) {
                struct ent *e = ent_at(c, k->data, i);
                if (e->prio == r->priority && ent_visible(e, now) &&
                    !memcmp(e->w, v, c->nwk * 8) && !memcmp(e->w + c->nwk, m, c->nwk * 8) &&
                    (!best || e->id < best))
                    best = e->id;
            }
        }
    }
    if (is_dt(c)) {
        uint32_t tb = ofb_dtree_find(atomic_load_explicit(&c->dt, memory_order_relaxed), r->priority, v, m, now);
        if (tb && (!best || tb < best))
            best = tb;
    }
    if (!best)
        return 0;
    cls_delete_one(c, best);
    cls_after_update(c);
    return best;
}

void ofb_cls_batch_begin(struct ofb_cls *c)
{
    c->in_batch = true;
}

int ofb_cls_batch_commit(struct ofb_cls *c)
{
    c->in_batch = false;
    cls_publish(c);
    ofb_cls_reclaim(c);
    return is_trie(c) && c->trie_failed ? -1 : 0;
}


/* Auto band count for a bulk build into an empty classifier.  A band pays
 * off when a key usually finds its answer in band 0, so that the other bands'
 * filters are rarely read: with lam = the expected number of band-0 rules a
 * uniform random key matches (sum of 2^-popcount(mask)), P(answer in band 0)
 * ~ 1 - e^-lam.  Take the most bands that keep lam >= BAND_MIN_LAMBDA, and none
 * while the whole filter fits in L2 anyway (n < BAND_MIN_RULES). */
#define BAND_MIN_RULES (1u << 18)
#define BAND_MIN_LAMBDA 2.0
static uint32_t auto_bands(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n)
{
    if (c->tu.bands) {   /* tuning (OFB_CLS_BANDS in the tools) */
        uint32_t want = c->tu.bands, nb = 1;
        while (nb * 2 <= want && nb * 2 <= OFB_CLS_MAX_BANDS)
            nb *= 2;
        return nb;
    }
    if (n < BAND_MIN_RULES)
        return 1;
    /* lam per finest band (32), then sum the top 32/nb of them for nb bands */
    double lam[OFB_CLS_MAX_BANDS] = { 0 };
    uint32_t saved = c->nbands;
    c->nbands = OFB_CLS_MAX_BANDS;
    set_quant(c, c->qmin, c->qmax);
    for (size_t i = 0; i < n; i++) {
        uint32_t pc = 0;
        for (uint32_t k = 0; k < c->key_len; k++)
            pc += (uint32_t)__builtin_popcount(rules[i].mask[k]);
        if (pc < 64)
            lam[band_of(c, rules[i].priority)] += 1.0 / (double)(1ull << pc);
    }
    c->nbands = saved;
    set_quant(c, c->qmin, c->qmax);
    uint32_t best = 1;
    for (uint32_t nb = 2; nb <= OFB_CLS_MAX_BANDS; nb *= 2) {
        double l0 = 0;
        for (uint32_t b = 0; b < OFB_CLS_MAX_BANDS / nb; b++)
            l0 += lam[b];
        if (l0 >= BAND_MIN_LAMBDA)
            best = nb;
    }
    return best;
}

/* AUTO's second look, at the first bulk build: the compiled tree projects a rule on each key
 * byte as the range [v & m, v | ~m], exact only for prefix-shaped mask bytes (0x00, 0x80, ...,
 * 0xff: prefixes, expanded port ranges, exact fields).  Arbitrary masks (document 003's
 * rand()|rand()) give it superset ranges and long leaves (ntt 100k: 0.04 Mlps vs OURS' 4.8),
 * so a set with fewer than 90 % prefix-shaped rules stays with OURS. */
static bool auto_tree_suits(const struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n)
{
    size_t shaped = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *m = rules[i].mask;
        uint32_t b = 0;
        /* prefix-shaped: the wildcarded low bits ~m are 2^k - 1 */
        while (b < c->key_len && ((uint8_t)~m[b] & (uint8_t)(~m[b] + 1)) == 0)
            b++;
        shaped += b == c->key_len;
    }
    return shaped * 10 >= n * 9;
}

static bool any_reader(const struct ofb_cls *c)
{
    for (int i = 0; i < OFB_CLS_MAX_READERS; i++)
        if (c->readers[i].used)
            return true;
    return false;
}

int ofb_cls_build_bulk(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids)
{
    bool was = c->in_batch;
    if ((c->n_ids || c->in_batch) && cls_louds_refuses(c, "a second build (or one inside a batch)")) {
        if (ids)
            memset(ids, 0, n * sizeof(*ids));
        return -1;
    }
    c->err[0] = 0;
    if (c->n_rules == 0 && c->n_ids == 0 && n) {
        uint32_t lo = UINT32_MAX, hi = 0;
        for (size_t i = 0; i < n; i++) {
            lo = rules[i].priority < lo ? rules[i].priority : lo;
            hi = rules[i].priority > hi ? rules[i].priority : hi;
        }
        set_quant(c, lo, hi);
        /* no reader yet: nobody reads c->algo while it changes */
        if (c->auto_algo && c->algo == OFB_CLS_ALGO_DTREE && !any_reader(c) && !auto_tree_suits(c, rules, n))
            c->algo = OFB_CLS_ALGO_OURS;
        if (c->auto_algo && c->algo == OFB_CLS_ALGO_OURS && c->key_len <= 4 && n >= KMAP_AUTO_MIN && !any_reader(c))
            c->algo = OFB_CLS_ALGO_KEYMAP;   /* the map is built below; AUTO falls back to OURS if it cannot be */
        if (is_ours(c) && c->bands_auto) {
            c->nbands = auto_bands(c, rules, n);
            set_quant(c, lo, hi);
        }
    }
    if (cls_rr_reserve(c, (uint32_t)n))
        return -1;
    bool first_km = c->algo == OFB_CLS_ALGO_KEYMAP && c->n_ids == 0 && n && !c->in_batch;
    if (is_dt(c) && c->n_ids == 0 && n && !c->in_batch)
        return cls_dt_bulk(c, rules, n, ids);
    c->in_batch = true;
    int rc = 0;
    if (uses_lin(c))
        rc = cls_bulk_linear(c, rules, n, ids);
    for (size_t i = 0; !uses_lin(c) && i < n; i++) {
        uint32_t id = cls_insert_one(c, &rules[i]);
        if (ids)
            ids[i] = id;
        if (!id) {
            rc = -1;
            break;
        }
    }
    c->in_batch = was;
    if (!was) {
        cls_publish(c);
        if (is_trie(c) && c->trie_failed && rc == 0 && n) {
            cls_trie_undo_ids(c, ids ? ids[0] : c->n_ids - (uint32_t)n + 1, c->n_ids);
            if (ids)
                memset(ids, 0, n * sizeof(*ids));
            rc = -1;
        }
        ofb_cls_reclaim(c);
    }
    if (first_km && rc == 0) {   /* the first map before build_bulk returns (publish started it) */
        cls_km_poll(c, true);
        if (c->auto_algo && !atomic_load_explicit(&c->km, memory_order_relaxed) && !any_reader(c))
            c->algo = OFB_CLS_ALGO_OURS;   /* no map (c->km_err says why): OURS answers, as OURS */
    }
    if (rc && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s: bulk build of %zu rules: out of memory", ofb_cls_algo_name(c->algo), n);
    return rc;
}


/* ---------- SIMD path selection (per classifier, at creation) ---------- */

static const char *const simd_names[] = { "scalar", "avx2", "avx512" };

static bool simd_cpu_has(enum simd_path p)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (p == SIMD_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi");
    if (p == SIMD_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#endif
    return p == SIMD_SCALAR;
}

int ofb_cls_simd_supported(const char *name)
{
    for (int p = 0; p < 3; p++)
        if (name && !strcmp(name, simd_names[p]))
            return simd_cpu_has((enum simd_path)p);
    return 0;
}

/* tuning.simd = scalar|avx2|avx512|auto (default auto: the best the CPU has;
 * OFB_CLS_SIMD in the tools); tuning.no_simd (OFB_CLS_NO_SIMD=1, older
 * switch) = scalar.  -1 with a message when it names an unknown path or one
 * this CPU lacks. */
static int simd_choose(const struct ofb_cls_tuning *tu)
{
    const char *e = tu->simd;
    if (e && *e && strcmp(e, "auto")) {
        for (int p = 0; p < 3; p++)
            if (!strcmp(e, simd_names[p])) {
                if (simd_cpu_has((enum simd_path)p))
                    return p;
                fprintf(stderr, "ofb_cls: OFB_CLS_SIMD=%s: this CPU does not have it\n", e);
                return -1;
            }
        fprintf(stderr, "ofb_cls: OFB_CLS_SIMD=%s: unknown (scalar, avx2, avx512 or auto)\n", e);
        return -1;
    }
    if (tu->no_simd)
        return SIMD_SCALAR;
    if (simd_cpu_has(SIMD_AVX512))
        return SIMD_AVX512;
    if (simd_cpu_has(SIMD_AVX2))
        return SIMD_AVX2;
    return SIMD_SCALAR;
}


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

static uint64_t lookup_ours(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                            uint32_t *id_out)
{
    uint32_t bp = 0, bid = 0;
    uint64_t bh = 0;
    if (s)
        bands_from(c, s, 0, kw, v, &bp, &bid, &bh);
    *id_out = bid;
    return bh;
}

static uint64_t lookup_tss(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
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

static uint64_t lookup_linear(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, uint32_t *id_out)
{
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
static uint64_t lookup_dtree(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
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

static inline uint64_t lookup_kw(const struct ofb_cls *c, const uint64_t *kw, uint64_t v,
                                 const struct snap *s, uint32_t *id)
{
    switch (c->algo) {
    case OFB_CLS_ALGO_DTREE:
    case OFB_CLS_ALGO_DFA: return lookup_dtree(c, kw, v, s, id);
    case OFB_CLS_ALGO_OURS: return lookup_ours(c, kw, v, s, id);
    case OFB_CLS_ALGO_KEYMAP: {
        const struct ofb_kmap *m = km_usable(c, v);
        if (!m)
            return lookup_ours(c, kw, v, s, id);
        uint32_t r = ofb_kmap_lookup(m, (const uint8_t *)kw), p = 0;
        uint64_t h = 0;
        *id = 0;
        if (r != OFB_KMAP_NONE)
            ofb_kmap_rank_info(m, r, &p, id, &h);
        return h;
    }
    case OFB_CLS_ALGO_TSS: return lookup_tss(c, kw, v, s, id);
    case OFB_CLS_ALGO_LINEAR: return lookup_linear(c, kw, v, id);
    default: {
        const struct tpair *p = atomic_load_explicit(&c->tp, memory_order_acquire);
        uint32_t ib = 0, idd = 0, pb = 0, pd = 0;
        uint64_t hb = 0, hd = 0;
        if (p && p->base)
            hb = ofb_trie_lookup_v(p->base, kw, p->v, &ib, &pb);
        if (p && p->delta)
            hd = ofb_trie_lookup_v(p->delta, kw, p->v, &idd, &pd);
        if (idd && (!ib || better(pd, idd, pb, ib))) {
            *id = idd;
            return hd;
        }
        *id = ib;
        return hb;
    }
    }
}

uint64_t ofb_cls_lookup_id(const struct ofb_cls *c, const uint8_t *key, uint32_t *id_out)
{
    uint64_t kw[MAXW];
    uint32_t id;
    uint64_t v = atomic_load_explicit(&c->version, memory_order_acquire);
    const struct snap *s = atomic_load_explicit(&c->snap, memory_order_acquire);
    load_key(c, key, kw);
    uint64_t h = lookup_kw(c, kw, v, s, &id);
    if (id_out)
        *id_out = id;
    return h;
}

uint64_t ofb_cls_lookup(const struct ofb_cls *c, const uint8_t *key)
{
    return ofb_cls_lookup_id(c, key, NULL);
}

static size_t batch_ours(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
                         uint32_t *io, uint64_t v, const struct snap *s, const uint32_t *seed_p,
                         const uint32_t *seed_id);

/* DTREE batch: the tree for all keys (interleaved walks), then the delta
 * (OURS batch, seeded with the tree's answers) when it holds rules */
static size_t batch_dtree(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
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
            batch_ours(c, keys + k, q, ho + k, bid + k, v, s, bp + k, bid + k);
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
static size_t batch_ours(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
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

size_t ofb_cls_lookup_batch(const struct ofb_cls *c, const uint8_t *const keys[], size_t n,
                            uint64_t handles_out[], uint32_t rule_ids_out[])
{
    size_t hits = 0;
    for (size_t off = 0; off < n;) {
        size_t m = n - off > OFB_CLS_BATCH_MAX ? OFB_CLS_BATCH_MAX : n - off;
        uint64_t v = atomic_load_explicit(&c->version, memory_order_acquire);
        const struct snap *s = atomic_load_explicit(&c->snap, memory_order_acquire);
        const struct ofb_kmap *km = c->algo == OFB_CLS_ALGO_KEYMAP ? km_usable(c, v) : NULL;
        if (km) {
            uint32_t idb[OFB_CLS_BATCH_MAX];
            uint32_t *ids = rule_ids_out ? rule_ids_out + off : idb;
            ofb_kmap_lookup_batch(km, keys + off, m, ids, handles_out + off);
            for (size_t k = 0; k < m; k++)
                hits += ids[k] != 0;
        } else if (is_ours(c)) {
            for (size_t k = 0; k < m; k += BATCH_CHUNK) {
                size_t q = m - k > BATCH_CHUNK ? BATCH_CHUNK : m - k;
                hits += batch_ours(c, keys + off + k, q, handles_out + off + k,
                                   rule_ids_out ? rule_ids_out + off + k : NULL, v, s, NULL, NULL);
            }
        } else if (is_dt(c)) {
            hits += batch_dtree(c, keys + off, m, handles_out + off, rule_ids_out ? rule_ids_out + off : NULL, v, s);
        } else {
            for (size_t k = 0; k < m; k++) {
                uint64_t kw[MAXW];
                uint32_t id;
                load_key(c, keys[off + k], kw);
                handles_out[off + k] = lookup_kw(c, kw, v, s, &id);
                if (rule_ids_out)
                    rule_ids_out[off + k] = id;
                hits += id != 0;
            }
        }
        off += m;
    }
    return hits;
}

/* ---------- create / destroy / stats ---------- */

const char *ofb_cls_algo_name(enum ofb_cls_algo a)
{
    switch (a) {
    case OFB_CLS_ALGO_OURS: return "ours";
    case OFB_CLS_ALGO_TSS: return "tss";
    case OFB_CLS_ALGO_LINEAR: return "linear";
    case OFB_CLS_ALGO_HTRIE: return "htrie";
    case OFB_CLS_ALGO_SPTRIE: return "sptrie";
    case OFB_CLS_ALGO_HYBRID: return "hybrid";
    case OFB_CLS_ALGO_LOUDS: return "louds";
    case OFB_CLS_ALGO_DTREE: return "dtree";
    case OFB_CLS_ALGO_DFA: return "dfa";
    case OFB_CLS_ALGO_KEYMAP: return "keymap";
    case OFB_CLS_ALGO_AUTO: return "auto";
    }
    return "?";
}

enum ofb_cls_algo ofb_cls_algo_for_key(uint32_t key_len)
{
    /* 5..16 bytes (5-tuple-like keys: prefixes and port ranges): the compiled tree, measured
     * 4-5x rte_acl on the ClassBench-like sets where OURS probes hundreds of mask shapes.
     * 4 bytes (document 003's condition): OURS' grouped line filter.  Longer keys (the
     * switch's 128-byte OpenFlow keys): OURS, whose few mask shapes per table it suits. */
    return key_len >= 5 && key_len <= 16 ? OFB_CLS_ALGO_DTREE : OFB_CLS_ALGO_OURS;
}

enum ofb_cls_algo ofb_cls_algo(const struct ofb_cls *c)
{
    return c->algo;
}

struct ofb_cls *ofb_cls_create(const struct ofb_cls_params *p)
{
    if (!p || p->key_len < 1 || p->key_len > OFB_CLS_MAX_KEY_LEN || (unsigned)p->algo > OFB_CLS_ALGO_KEYMAP ||
        (p->algo == OFB_CLS_ALGO_KEYMAP && p->key_len > 4)) {   /* the map indexes keys of <= 4 bytes */
        errno = EINVAL;
        return NULL;
    }
    struct ofb_cls *c = NULL;
    if (posix_memalign((void **)&c, 64, sizeof(*c)))
        return NULL;
    memset(c, 0, sizeof(*c));
    c->key_len = p->key_len;
    c->nwk = (p->key_len + 7) / 8;
    c->es = sizeof(struct ent) + 16 * c->nwk;
    c->algo = p->algo == OFB_CLS_ALGO_AUTO ? ofb_cls_algo_for_key(p->key_len) : p->algo;
    c->auto_algo = p->algo == OFB_CLS_ALGO_AUTO;
    c->expected = p->expected_rules;
    c->budget = p->mem_budget_bytes;
    c->bands_auto = p->bands == 0;
    c->nbands = 1;
    while (c->nbands * 2 <= p->bands && c->nbands * 2 <= OFB_CLS_MAX_BANDS)
        c->nbands *= 2;
    if (p->prio_min == 0 && p->prio_max == 0)
        set_quant(c, 0, 65535);
    else
        set_quant(c, p->prio_min, p->prio_max);
    c->tu = p->tuning;
    int simd = simd_choose(&c->tu);
    c->tu.simd = NULL;   /* the caller's string: not kept */
    c->hp = !c->tu.no_hugepages;
    if (simd < 0) {
        free(c);
        errno = ENOTSUP;
        return NULL;
    }
    c->simd = (uint8_t)simd;
    {
        const struct ofb_cls_tuning *tu = &c->tu;   /* measurement knobs; defaults measured best */
        c->key32 = is_ours(c) && c->key_len <= 4 && c->simd != SIMD_AVX512 && !tu->no_key32;
        /* grouped line filter */
        c->gf_on = c->key32 && !tu->no_gf;
        c->gf_k4 = tu->gf_k == 4;
        c->gf_maxg = tu->gf_maxg >= 1 && tu->gf_maxg <= GF_MAXG ? tu->gf_maxg : 4;
        c->gf_bpe = tu->gf_bpe >= 1 && tu->gf_bpe <= 256 ? tu->gf_bpe : 16;
        c->gf_slack = tu->gf_slack >= 1 && tu->gf_slack <= 17 ? tu->gf_slack - 1 : 2;
        c->gf_min = tu->gf_min >= 1 ? tu->gf_min   /* tests: group from this many rules */
                    : c->simd == SIMD_SCALAR ? GF_MIN_RULES_SCALAR : GF_MIN_RULES;
        c->dt_delta_min = tu->dtree_delta ? tu->dtree_delta : DT_DELTA_MIN;   /* tests: merge sooner */
        c->dt_sync = tu->dtree_sync;
        c->dfa_bulk_sync = tu->dfa_bulk_sync;   /* DFA: a bulk build also builds the DFA before it returns */
        c->km_sync = tu->keymap_sync;           /* KEYMAP: rebuild the map on the writer at each publish (tests) */
    }
    atomic_store(&c->bytes, sizeof(*c));
    atomic_store(&c->version, 1);
    c->wv = 2;
    return c;
}

void ofb_cls_destroy(struct ofb_cls *c)
{
    if (!c)
        return;
    if (c->job) {
        cls_job_ready(&c->job->job, true);
        ofb_dtree_free(c->job->out);
        cls_dt_job_free(c->job);
    }
    ofb_dtree_free(atomic_load(&c->dt));
    if (c->kjob) {
        atomic_store(&c->kjob->cancel, 1);
        cls_job_ready(&c->kjob->job, true);
        ofb_kmap_free(c->kjob->out);
        free(c->kjob->rules);
        free(c->kjob);
    }
    ofb_kmap_free(atomic_load(&c->km));
    free(c->klog);
    for (size_t j = 0; j < c->n_ret; j++)
        if (c->ret[j].trie)
            cls_free_compiled(c->ret[j].trie, c->ret[j].p);
        else
            cls_xfree_quiet(c, c->ret[j].p, c->ret[j].bytes);
    for (uint32_t i = 0; i < c->nwt; i++) {
        struct tbl *t = c->wt[i];
        size_t nb = (size_t)1 << t->nb_log;
        for (size_t b = 0; b < nb; b++)
        {
            struct blk *k = atomic_load_explicit(&t->bk[b], memory_order_relaxed);
            if (k)
                cls_xfree_quiet(c, k, k->bytes);
        }
        cls_xfree_quiet(c, t->filter, nb * 8);
        cls_xfree_quiet(c, (void *)t->bk, nb * sizeof(void *));
        if (t->bm)
            cls_xfree_quiet(c, (void *)t->bm, t->bm_words * 8);
        cls_xfree_quiet(c, t, sizeof(struct tbl));
    }
    {
        struct snap *sn = atomic_load(&c->snap);
        struct lin *l = atomic_load(&c->lin);
        if (sn)
            cls_xfree_quiet(c, sn, sn->bytes);
        if (l)
            cls_xfree_quiet(c, l, l->bytes);
    }
    if (c->gf) {
        cls_xfree_quiet(c, c->gf->w, c->gf->bytes);
        free(c->gf);
    }
    cls_xfree_quiet(c, atomic_load(&c->tp), sizeof(struct tpair));
    ofb_trie_free(c->base);
    ofb_trie_free(c->delta);
    free(c->wt);
    for (uint32_t b = 0; b < OFB_CLS_MAX_BANDS; b++)
        free(c->btl[b]);
    free(c->tmap);
    free(c->rr);
    free(c->ret);
    free(c->prm);
    for (size_t i = 0; i < c->n_sl_chunks; i++)   /* 64 KiB doubling, then 2 MiB regions (sl_alloc) */
        if (i >= 5)
            ofb_hp_unmap(c->sl_chunks[i], OFB_HP_SIZE);
        else
            free(c->sl_chunks[i]);
    free(c->sl_chunks);
    free(c);
}

void ofb_cls_get_stats(const struct ofb_cls *c, struct ofb_cls_stats *st)
{
    st->rules = c->n_rules;
    st->tables = uses_lin(c) ? 1 : c->nwt;
    st->bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
    st->version = atomic_load(&c->version);
    st->pending_frees = c->n_ret;
    st->pending_removals = c->n_prm - c->prm_head;
    st->bands = is_ours(c) ? c->nbands : 1;
}

uint64_t ofb_cls_memory_bytes(const struct ofb_cls *c)
{
    return atomic_load_explicit(&c->bytes, memory_order_relaxed);
}

const char *ofb_cls_simd_name(const struct ofb_cls *c)
{
    return simd_names[c->simd];
}

uint64_t ofb_cls_trie_bytes(const struct ofb_cls *c)
{
    if (is_dt(c))
        return ofb_dtree_bytes(atomic_load_explicit(&c->dt, memory_order_acquire));
    if (c->algo == OFB_CLS_ALGO_KEYMAP)
        return ofb_kmap_bytes(atomic_load_explicit(&c->km, memory_order_acquire));
    const struct tpair *p = is_trie(c) ? atomic_load_explicit(&c->tp, memory_order_acquire) : NULL;
    return p ? ofb_trie_bytes(p->base) + ofb_trie_bytes(p->delta) : 0;
}

uint32_t ofb_cls_key_len(const struct ofb_cls *c)
{
    return c->key_len;
}
