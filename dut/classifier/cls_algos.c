/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench wildcard classifier: the per-algorithm hooks (struct cls_ops in cls_private.h),
 * one table per algorithm.  The facade (classifier.c) runs an algorithm only through
 * c->ops; what an algorithm stores and walks lives in its unit (tables: cls_rules.c,
 * compiled trees and the key map: cls_rebuild.c, tries: cls_trie_glue.c, lookups:
 * cls_lookup.c); this file says which of them each algorithm uses. */
#include "cls_private.h"

/* ---------- insert / delete ---------- */

static uint32_t insert_plain(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    uint32_t id = cls_insert_one(c, r);
    if (id)
        cls_after_update(c);
    return id;
}

/* tries: a failed rebuild at the publish undoes the insert (c->err says why) */
static uint32_t insert_trie(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    uint32_t id = insert_plain(c, r);
    if (id && !c->in_batch && c->trie_failed) {
        cls_trie_undo_ids(c, id, id);
        return 0;
    }
    return id;
}

static int delete_plain(struct ofb_cls *c, uint32_t id)
{
    if (cls_delete_one(c, id))
        return -1;
    cls_after_update(c);
    return 0;
}

/* LOUDS is read-only (cls_louds_refuses sets c->err) */
static uint32_t insert_louds(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    (void)r;
    cls_louds_refuses(c, "insert");
    return 0;
}
static int delete_louds(struct ofb_cls *c, uint32_t id)
{
    (void)id;
    cls_louds_refuses(c, "delete");
    return -1;
}
static uint32_t find_louds(struct ofb_cls *c, uint32_t prio, const uint64_t *v, const uint64_t *m)
{
    (void)prio, (void)v, (void)m;
    cls_louds_refuses(c, "delete");
    return 0;
}

/* ---------- find (delete by rule) ---------- */

static inline bool ent_is(const struct ofb_cls *c, const struct ent *e, uint32_t prio, const uint64_t *v,
                          const uint64_t *m, uint64_t now)
{
    return e->prio == prio && ent_visible(e, now) && !memcmp(e->w, v, c->nwk * 8) &&
           !memcmp(e->w + c->nwk, m, c->nwk * 8);
}

/* LINEAR and the tries: the sorted list, first visible entry */
static uint32_t find_list(struct ofb_cls *c, uint32_t prio, const uint64_t *v, const uint64_t *m)
{
    struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
    for (uint32_t i = 0; l && i < l->n; i++) {
        struct ent *e = ent_at(c, l->data, i);
        if (ent_is(c, e, prio, v, m, c->wv))
            return e->id;
    }
    return 0;
}

/* OURS, TSS, KEYMAP: the lowest id among the tables that fit the mask */
static uint32_t find_tables(struct ofb_cls *c, uint32_t prio, const uint64_t *v, const uint64_t *m)
{
    uint32_t best = 0;
    for (uint32_t j = 0; j < c->nwt; j++) {
        struct tbl *t = c->wt[j];
        if (!t->n_ent || !tbl_fits(c, t, m))
            continue;
        uint32_t h = hash_words(v, t);
        struct blk *k = atomic_load_explicit(&t->bk[fslot(t, h) >> 3], memory_order_relaxed);
        for (uint32_t i = 0; k && i < k->n; i++) {
            struct ent *e = ent_at(c, k->data, i);
            if (ent_is(c, e, prio, v, m, c->wv) && (!best || e->id < best))
                best = e->id;
        }
    }
    return best;
}

/* DTREE, DFA: the delta's tables, then the compiled tree */
static uint32_t find_tree(struct ofb_cls *c, uint32_t prio, const uint64_t *v, const uint64_t *m)
{
    uint32_t best = find_tables(c, prio, v, m);
    uint32_t tb = ofb_dtree_find(atomic_load_explicit(&c->dt, memory_order_relaxed), prio, v, m, c->wv);
    return tb && (!best || tb < best) ? tb : best;
}

/* ---------- bulk ---------- */

/* one insert after the other, inside the caller's batch */
static int bulk_each(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t id = cls_insert_one(c, &rules[i]);
        if (ids)
            ids[i] = id;
        if (!id)
            return -1;
    }
    return 0;
}

/* ---------- create ---------- */

/* OURS' tables carry key32 bitmaps for keys of <= 4 bytes (not on the AVX-512 path),
 * grouped by the line filter unless tuned off */
static void create_ours(struct ofb_cls *c)
{
    c->key32 = c->key_len <= 4 && c->simd != SIMD_AVX512 && !c->tu.no_key32;
    c->gf_on = c->key32 && !c->tu.no_gf;
}

/* KEYMAP: the first map (publish started its build) adopted before build_bulk returns */
static void bulk_done_keymap(struct ofb_cls *c)
{
    cls_km_poll(c, true);
}

/* ---------- publish / synchronize ---------- */

static void publish_before_trie(struct ofb_cls *c)
{
    if (c->trie_dirty)
        cls_trie_refresh(c);
}

static void publish_before_tree(struct ofb_cls *c)
{
    cls_dt_poll(c, false);
}

/* DTREE: a rebuild in flight is adopted now, and the delta merged until it is below its
 * threshold (each publish may start the next rebuild) */
static void synchronize_tree(struct ofb_cls *c)
{
    for (int k = 0; !c->in_batch && k < 8; k++) {
        cls_dt_poll(c, true);
        cls_publish(c);
        if (!c->job)
            break;
    }
}

/* KEYMAP: a build in flight is adopted now; a stale map rebuilt (at most 3 times) */
static void synchronize_keymap(struct ofb_cls *c)
{
    for (int k = 0; !c->in_batch && k < 3; k++) {
        cls_km_poll(c, true);
        c->km_force = true;
        cls_publish(c);
        c->km_force = false;
        if (!c->kjob)
            break;
    }
}

/* ---------- destroy / memory ---------- */

static void destroy_tree(struct ofb_cls *c)
{
    if (c->job) {
        cls_job_ready(&c->job->job, true);
        ofb_dtree_free(c->job->out);
        cls_dt_job_free(c->job);
        c->job = NULL;
    }
    ofb_dtree_free(atomic_load(&c->dt));
}

static void destroy_keymap(struct ofb_cls *c)
{
    if (c->kjob) {
        atomic_store(&c->kjob->cancel, 1);
        cls_job_ready(&c->kjob->job, true);
        ofb_kmap_free(c->kjob->out);
        free(c->kjob->rules);
        free(c->kjob);
        c->kjob = NULL;
    }
    ofb_kmap_free(atomic_load(&c->km));
}

static void destroy_trie(struct ofb_cls *c)
{
    cls_xfree_quiet(c, atomic_load(&c->tp), sizeof(struct tpair));
    ofb_trie_free(c->base);
    ofb_trie_free(c->delta);
}

static uint64_t memory_tree(const struct ofb_cls *c)
{
    return ofb_dtree_bytes(atomic_load_explicit(&c->dt, memory_order_acquire));
}

static uint64_t memory_keymap(const struct ofb_cls *c)
{
    return ofb_kmap_bytes(atomic_load_explicit(&c->km, memory_order_acquire));
}

static uint64_t memory_trie(const struct ofb_cls *c)
{
    const struct tpair *p = atomic_load_explicit(&c->tp, memory_order_acquire);
    return p ? ofb_trie_bytes(p->base) + ofb_trie_bytes(p->delta) : 0;
}

/* ---------- the tables ---------- */

static const struct cls_ops ours_ops = {
    .algo = OFB_CLS_ALGO_OURS, .name = "ours", .banded = true,
    .create = create_ours, .bulk = bulk_each, .insert = insert_plain, .delete_id = delete_plain,
    .find = find_tables, .lookup = cls_lookup_ours, .lookup_batch = cls_batch_ours,
};

static const struct cls_ops tss_ops = {
    .algo = OFB_CLS_ALGO_TSS, .name = "tss",
    .bulk = bulk_each, .insert = insert_plain, .delete_id = delete_plain,
    .find = find_tables, .lookup = cls_lookup_tss, .lookup_batch = cls_batch_tss,
};

static const struct cls_ops linear_ops = {
    .algo = OFB_CLS_ALGO_LINEAR, .name = "linear", .list = true,
    .bulk = cls_bulk_linear, .insert = insert_plain, .delete_id = delete_plain,
    .find = find_list, .lookup = cls_lookup_linear, .lookup_batch = cls_batch_linear,
};

#define TRIE_OPS(ALGO, NAME)                                                                      \
    {                                                                                             \
        .algo = ALGO, .name = NAME, .list = true, .bulk = cls_bulk_linear, .insert = insert_trie, \
        .delete_id = delete_plain, .find = find_list, .lookup = cls_lookup_trie,                  \
        .lookup_batch = cls_batch_trie, .publish_before = publish_before_trie,                    \
        .destroy = destroy_trie, .memory = memory_trie,                                           \
    }
static const struct cls_ops htrie_ops = TRIE_OPS(OFB_CLS_ALGO_HTRIE, "htrie");
static const struct cls_ops sptrie_ops = TRIE_OPS(OFB_CLS_ALGO_SPTRIE, "sptrie");
static const struct cls_ops hybrid_ops = TRIE_OPS(OFB_CLS_ALGO_HYBRID, "hybrid");

/* the hybrid in LOUDS layout: one build_bulk into an empty classifier, then read-only */
static const struct cls_ops louds_ops = {
    .algo = OFB_CLS_ALGO_LOUDS, .name = "louds", .list = true, .read_only = true,
    .bulk = cls_bulk_linear, .insert = insert_louds, .delete_id = delete_louds,
    .find = find_louds, .lookup = cls_lookup_trie, .lookup_batch = cls_batch_trie,
    .publish_before = publish_before_trie, .destroy = destroy_trie, .memory = memory_trie,
};

#define TREE_OPS(ALGO, NAME)                                                                      \
    {                                                                                             \
        .algo = ALGO, .name = NAME, .bulk_first = cls_dt_bulk, .bulk = bulk_each,                 \
        .insert = insert_plain, .delete_id = delete_plain, .find = find_tree,                     \
        .lookup = cls_lookup_dtree, .lookup_batch = cls_batch_dtree,                              \
        .publish_before = publish_before_tree, .publish_after = cls_dt_maybe_start,               \
        .synchronize = synchronize_tree, .destroy = destroy_tree, .memory = memory_tree,          \
    }
static const struct cls_ops dtree_ops = TREE_OPS(OFB_CLS_ALGO_DTREE, "dtree");
static const struct cls_ops dfa_ops = TREE_OPS(OFB_CLS_ALGO_DFA, "dfa");

/* OURS' tables hold every rule; the map answers while the rule set is the one it was built from */
static const struct cls_ops keymap_ops = {
    .algo = OFB_CLS_ALGO_KEYMAP, .name = "keymap", .banded = true,
    .create = create_ours, .bulk = bulk_each, .insert = insert_plain, .delete_id = delete_plain,
    .find = find_tables, .lookup = cls_lookup_keymap, .lookup_batch = cls_batch_keymap,
    .bulk_done = bulk_done_keymap, .publish_after = cls_km_after_publish, .synchronize = synchronize_keymap,
    .destroy = destroy_keymap, .memory = memory_keymap,
};

/* KSCAN: KEYMAP's hooks; the rebuild builds kscan.h's blocks (cls_rebuild.c: km_start) */
static const struct cls_ops kscan_ops = {
    .algo = OFB_CLS_ALGO_KSCAN, .name = "kscan", .banded = true,
    .create = create_ours, .bulk = bulk_each, .insert = insert_plain, .delete_id = delete_plain,
    .find = find_tables, .lookup = cls_lookup_keymap, .lookup_batch = cls_batch_keymap,
    .bulk_done = bulk_done_keymap, .publish_after = cls_km_after_publish, .synchronize = synchronize_keymap,
    .destroy = destroy_keymap, .memory = memory_keymap,
};

/* AUTO has no table: ofb_cls_create resolves it to one of the others */
const struct cls_ops *const cls_ops_of[OFB_CLS_ALGO_KSCAN + 1] = {
    [OFB_CLS_ALGO_OURS] = &ours_ops,     [OFB_CLS_ALGO_TSS] = &tss_ops,       [OFB_CLS_ALGO_LINEAR] = &linear_ops,
    [OFB_CLS_ALGO_HTRIE] = &htrie_ops,   [OFB_CLS_ALGO_SPTRIE] = &sptrie_ops, [OFB_CLS_ALGO_HYBRID] = &hybrid_ops,
    [OFB_CLS_ALGO_LOUDS] = &louds_ops,   [OFB_CLS_ALGO_DTREE] = &dtree_ops,   [OFB_CLS_ALGO_DFA] = &dfa_ops,
    [OFB_CLS_ALGO_KEYMAP] = &keymap_ops, [OFB_CLS_ALGO_KSCAN] = &kscan_ops,
};
