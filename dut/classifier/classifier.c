/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench wildcard classifier, the facade: create/destroy, insert/delete, bulk
 * build, publish, lookup and stats over the private units (map: cls_private.h;
 * design: classifier.h).  An algorithm runs only through its hooks, c->ops
 * (cls_algos.c); what stays here is common to all of them, and AUTO's choice. */
#include "cls_private.h"

const char *ofb_cls_last_error(const struct ofb_cls *c)
{
    return c->err[0] ? c->err : c->km_err[0] ? c->km_err : NULL;
}
uint32_t ofb_cls_insert(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    uint32_t id = c->ops->insert(c, r);
    if (!id && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s: insert: out of memory", c->ops->name);
    return id;
}

int ofb_cls_delete_id(struct ofb_cls *c, uint32_t id)
{
    return c->ops->delete_id(c, id);
}

uint32_t ofb_cls_delete(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    uint64_t m[MAXW], v[MAXW];
    words_of(c, r->mask, m);
    words_of(c, r->value, v);
    for (uint32_t i = 0; i < c->nwk; i++)
        v[i] &= m[i];
    uint32_t best = c->ops->find(c, r->priority, v, m);
    if (!best || c->ops->delete_id(c, best))
        return 0;
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
    return c->trie_failed ? -1 : 0;   /* tries: the rebuild at the publish failed */
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
    if (c->ops->read_only && (c->n_ids || c->in_batch) &&
        cls_louds_refuses(c, "a second build (or one inside a batch)")) {
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
            cls_set_algo(c, OFB_CLS_ALGO_OURS);
        if (c->auto_algo && c->algo == OFB_CLS_ALGO_OURS && c->key_len <= 4 && n >= KSCAN_AUTO_MIN && !any_reader(c))
            cls_set_algo(c, OFB_CLS_ALGO_KSCAN);   /* the blocks are built below; AUTO falls back to OURS if they cannot be */
        if (c->ops->banded && c->bands_auto) {
            c->nbands = auto_bands(c, rules, n);
            set_quant(c, lo, hi);
        }
    }
    if (cls_rr_reserve(c, (uint32_t)n))
        return -1;
    bool first = c->n_ids == 0 && n && !c->in_batch;
    if (first && c->ops->bulk_first)
        return c->ops->bulk_first(c, rules, n, ids);
    c->in_batch = true;
    int rc = c->ops->bulk(c, rules, n, ids);
    c->in_batch = was;
    if (!was) {
        cls_publish(c);
        if (c->trie_failed && rc == 0 && n) {   /* tries: the rebuild failed, the rules go */
            cls_trie_undo_ids(c, ids ? ids[0] : c->n_ids - (uint32_t)n + 1, c->n_ids);
            if (ids)
                memset(ids, 0, n * sizeof(*ids));
            rc = -1;
        }
        ofb_cls_reclaim(c);
    }
    if (first && rc == 0 && c->ops->bulk_done) {   /* KEYMAP: the first map before build_bulk returns */
        c->ops->bulk_done(c);
        if (c->auto_algo && (c->algo == OFB_CLS_ALGO_KEYMAP || c->algo == OFB_CLS_ALGO_KSCAN) &&
            !atomic_load_explicit(&c->km, memory_order_relaxed) && !any_reader(c)) {
            cls_ops_of[c->algo]->destroy(c);   /* what is left of the map's build */
            cls_set_algo(c, OFB_CLS_ALGO_OURS);   /* no map (c->km_err says why): OURS answers, as OURS */
        }
    }
    if (rc && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s: bulk build of %zu rules: out of memory", c->ops->name, n);
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


/* ---------- lookup: through the hooks ---------- */

uint64_t ofb_cls_lookup_id(const struct ofb_cls *c, const uint8_t *key, uint32_t *id_out)
{
    uint64_t kw[MAXW];
    uint32_t id;
    uint64_t v = atomic_load_explicit(&c->version, memory_order_acquire);
    const struct snap *s = atomic_load_explicit(&c->snap, memory_order_acquire);
    load_key(c, key, kw);
    uint64_t h = c->ops->lookup(c, kw, v, s, &id);
    if (id_out)
        *id_out = id;
    return h;
}

uint64_t ofb_cls_lookup(const struct ofb_cls *c, const uint8_t *key)
{
    return ofb_cls_lookup_id(c, key, NULL);
}

size_t ofb_cls_lookup_batch(const struct ofb_cls *c, const uint8_t *const keys[], size_t n,
                            uint64_t handles_out[], uint32_t rule_ids_out[])
{
    size_t hits = 0;
    for (size_t off = 0; off < n;) {   /* each OFB_CLS_BATCH_MAX keys at one version */
        size_t m = n - off > OFB_CLS_BATCH_MAX ? OFB_CLS_BATCH_MAX : n - off;
        uint64_t v = atomic_load_explicit(&c->version, memory_order_acquire);
        const struct snap *s = atomic_load_explicit(&c->snap, memory_order_acquire);
        hits += c->ops->lookup_batch(c, keys + off, m, handles_out + off, rule_ids_out ? rule_ids_out + off : NULL,
                                     v, s);
        off += m;
    }
    return hits;
}

/* ---------- create / destroy / stats ---------- */

const char *ofb_cls_algo_name(enum ofb_cls_algo a)
{
    if (a == OFB_CLS_ALGO_AUTO)
        return "auto";
    return (unsigned)a <= OFB_CLS_ALGO_KSCAN && cls_ops_of[a] ? cls_ops_of[a]->name : "?";
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
    if (!p || p->key_len < 1 || p->key_len > OFB_CLS_MAX_KEY_LEN || (unsigned)p->algo > OFB_CLS_ALGO_KSCAN ||
        ((p->algo == OFB_CLS_ALGO_KEYMAP || p->algo == OFB_CLS_ALGO_KSCAN) && p->key_len > 4)) {   /* the map indexes keys of <= 4 bytes */
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
    cls_set_algo(c, p->algo == OFB_CLS_ALGO_AUTO ? ofb_cls_algo_for_key(p->key_len) : p->algo);
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
        /* grouped line filter (OURS' create hook turns it on: key32, gf_on) */
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
    if (c->ops->create)
        c->ops->create(c);
    atomic_store(&c->bytes, sizeof(*c));
    atomic_store(&c->version, 1);
    c->wv = 2;
    return c;
}

void ofb_cls_destroy(struct ofb_cls *c)
{
    if (!c)
        return;
    if (c->ops->destroy)   /* first: a background build in flight stops before the rules go */
        c->ops->destroy(c);
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
    st->tables = c->ops->list ? 1 : c->nwt;
    st->bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
    st->version = atomic_load(&c->version);
    st->pending_frees = c->n_ret;
    st->pending_removals = c->n_prm - c->prm_head;
    st->bands = c->ops->banded ? c->nbands : 1;
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
    return c->ops->memory ? c->ops->memory(c) : 0;
}

uint32_t ofb_cls_key_len(const struct ofb_cls *c)
{
    return c->key_len;
}
