/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench classifier, trie glue: the rule list -> document 003's tries (base + delta) at publish.  See cls_private.h for the map of units. */
#include "cls_private.h"

/* trie algos: make rules lo..hi (ids) invisible forever (their insert failed:
 * the trie could not be rebuilt with them; the published trie never had them) */
void cls_trie_undo_ids(struct ofb_cls *c, uint32_t lo, uint32_t hi)
{
    struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
    for (uint32_t i = 0; l && i < l->n; i++) {
        struct ent *e = ent_at(c, l->data, i);
        if (e->id >= lo && e->id <= hi && atomic_load_explicit(&e->del_v, memory_order_relaxed) == V_INF) {
            atomic_store_explicit(&e->del_v, e->add_v, memory_order_relaxed);
            c->rr[e->id].tidx = UINT32_MAX;
            c->n_rules--;
        }
    }
    c->trie_dirty = false;  /* the trie in place is the visible set again */
}

/* retire a trie (freed with ofb_trie_free after the readers left) */
static void retire_trie(struct ofb_cls *c, struct ofb_trie *t)
{
    if (!t)
        return;
    cls_retire(c, t, ofb_trie_bytes(t));
    c->ret[c->n_ret - 1].trie = 1;
}

/* trie algos: publish the rules visible at the version about to be published
 * (c->wv).  Incremental (htrie, sptrie, hybrid): the rules inserted since the
 * base was built go into a new delta H-Trie; once the delta outgrows
 * max(TRIE_DELTA_MIN, 2 sqrt(base)), or a delete needs a keep-mode base, the base
 * is rebuilt from all rules (the merge).  LOUDS: one trie.  The new pair is
 * swapped in and the replaced structures retired (add-then-delete).  On
 * failure the published pair stays, trie_failed and err say why. */
void cls_trie_refresh(struct ofb_cls *c)
{
    struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
    uint32_t n = l ? l->n : 0, k = 0, nd = 0;
    c->trie_failed = true;
    bool incremental = trie_incremental(c);
    uint32_t from = incremental && c->base ? cls_tlin_after(c, l, c->base_last_id) : 0;  /* the delta's rules */
    for (uint32_t i = from; i < n; i++)
        nd += ent_visible(ent_at(c, l->data, i), c->wv);
    uint32_t nb = ofb_trie_rules(c->base);
    bool merge = !incremental || !c->base || c->force_merge ||
                 (nd > TRIE_DELTA_MIN && (uint64_t)nd * nd > (uint64_t)nb * 4);
    bool new_delta = !merge && c->delta_dirty;
    struct ofb_trie_rule *tr = NULL;
    if (merge || new_delta) {
        tr = malloc(((size_t)(merge ? n : nd) + 1) * sizeof(*tr));
        if (!tr) {
            snprintf(c->err, sizeof(c->err), "%s: out of memory collecting %u rules", ofb_cls_algo_name(c->algo), n);
            return;
        }
        for (uint32_t i = merge ? 0 : from; i < n; i++) {
            const struct ent *e = ent_at(c, l->data, i);
            if (ent_visible(e, c->wv))
                tr[k++] = (struct ofb_trie_rule){ e->prio, e->id, e->handle, e->w, e->w + c->nwk };
        }
    }
    struct ofb_trie *base = c->base, *delta = merge ? NULL : c->delta;
    if (merge) {
        enum ofb_trie_mode mode = c->algo == OFB_CLS_ALGO_HTRIE ? OFB_TRIE_H
                                : c->algo == OFB_CLS_ALGO_SPTRIE ? OFB_TRIE_SP : OFB_TRIE_HYBRID;
        enum ofb_trie_layout layout = c->algo == OFB_CLS_ALGO_LOUDS ? OFB_TRIE_LOUDS : OFB_TRIE_DA_VEB;
        base = ofb_trie_build(mode, layout, c->key_len, tr, k, c->budget, c->keep_base ? OFB_TRIE_KEEP : 0,
                              c->err, sizeof(c->err));
    } else if (new_delta) {
        delta = k ? ofb_trie_build(OFB_TRIE_H, OFB_TRIE_DA_VEB, c->key_len, tr, k, 0, 0, c->err, sizeof(c->err))
                  : NULL;
    }
    free(tr);
    if ((merge && !base) || (new_delta && k && !delta))
        return;
    struct tpair *np = cls_xalloc(c, sizeof(*np));
    if (!np) {
        ofb_trie_free(merge ? base : delta);
        snprintf(c->err, sizeof(c->err), "%s: out of memory publishing the trie", ofb_cls_algo_name(c->algo));
        return;
    }
    *np = (struct tpair){ base, delta, c->wv };
    struct tpair *old = atomic_load_explicit(&c->tp, memory_order_relaxed);
    atomic_store_explicit(&c->tp, np, memory_order_release);
    if (merge)
        atomic_fetch_add_explicit(&c->bytes, ofb_trie_bytes(base), memory_order_relaxed);
    if (new_delta && delta)
        atomic_fetch_add_explicit(&c->bytes, ofb_trie_bytes(delta), memory_order_relaxed);
    if (old)
        cls_retire(c, old, sizeof(*old));
    if (merge)
        retire_trie(c, c->base);
    if (merge || new_delta)
        retire_trie(c, c->delta);
    c->base = base;
    c->delta = delta;
    if (merge) {
        c->base_last_id = c->n_ids;
        c->force_merge = false;
        /* drop what no later publish can see (deleted, or undone inserts): O(N) once
         * per merge instead of per delete; no reader walks this list */
        uint32_t j = 0;
        for (uint32_t i = 0; i < n; i++) {
            const struct ent *e = ent_at(c, l->data, i);
            if (atomic_load_explicit(&e->del_v, memory_order_relaxed) == V_INF) {
                if (j != i)
                    memcpy(ent_at(c, l->data, j), e, c->es);
                j++;
            }
        }
        if (l)
            l->n = j;
    }
    c->delta_dirty = false;
    c->trie_dirty = false;
    c->trie_failed = false;
    c->err[0] = 0;
}


/* LOUDS is read-only: one build_bulk into an empty classifier, then no
 * update.  Returns true (and sets err) when `what` must be refused. */
bool cls_louds_refuses(struct ofb_cls *c, const char *what)
{
    if (c->algo != OFB_CLS_ALGO_LOUDS)
        return false;
    snprintf(c->err, sizeof(c->err), "louds: %s refused: the LOUDS trie is read-only (build it once with "
             "ofb_cls_build_bulk into an empty classifier; use hybrid for a trie that takes updates)", what);
    return true;
}
