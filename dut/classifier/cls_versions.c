/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench classifier, versions and readers: publish, retire, reclaim (epoch-based, versions are the epochs).  See cls_private.h for the map of units. */
#include "cls_private.h"

/* ---------- retire / reclaim (epoch-based, versions are the epochs) ---------- */

/* a retired compiled structure (struct retired.trie != 0), freed by its kind */
void cls_free_compiled(uint8_t kind, void *p)
{
    if (kind == 2)
        ofb_dtree_free(p);
    else if (kind == 3)
        ofb_kmap_free(p);
    else
        ofb_trie_free(p);
}

void cls_retire(struct ofb_cls *c, void *p, size_t bytes)
{
    if (!p)
        return;
    if (c->n_ret == c->cap_ret) {
        size_t nc = c->cap_ret ? c->cap_ret * 2 : 256;
        struct retired *r = realloc(c->ret, nc * sizeof(*r));
        if (!r) {
            abort(); /* cannot free safely and cannot remember it */
        }
        c->ret = r;
        c->cap_ret = nc;
    }
    c->ret[c->n_ret++] = (struct retired){ p, bytes, c->wv, 0 };
}


/* the set of live tables changed: rebuild the readers' snapshot now, or at
 * the next publish when inside a batch (a bulk build creates and grows
 * thousands of tables; rebuilding per change was most of its time).  Until
 * then readers use the old snapshot, whose retired tables stay allocated
 * (nothing is reclaimed inside a batch) and hold only published rules. */
int cls_snap_touch(struct ofb_cls *c)
{
    if (c->in_batch) {
        c->snap_dirty = true;
        return 0;
    }
    c->snap_dirty = false;
    return cls_snap_rebuild(c);
}

static inline bool gf_due(const struct ofb_cls *c);

void cls_publish(struct ofb_cls *c)
{
    if (c->ops->publish_before)   /* tries: rebuild; DTREE/DFA: adopt a finished rebuild */
        c->ops->publish_before(c);
    if (gf_due(c)) {
        struct timespec t0, t1;
        bool dbg = c->tu.gf_debug;
        if (dbg)
            clock_gettime(CLOCK_MONOTONIC, &t0);
        cls_gf_build(c);  /* out of memory: the old grouping stays (exact either way) */
        if (dbg) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            fprintf(stderr, "gf regroup at %lu rules: %.1f ms\n", (unsigned long)c->n_rules,
                    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
        }
    }
    /* the snapshot goes first: a reader that sees the new version then sees
     * the new snapshot (release/acquire on version).  Out of memory here
     * leaves snap_dirty set and retries at the next publish. */
    if (c->snap_dirty && !cls_snap_rebuild(c))
        c->snap_dirty = false;
    if (c->km_chg) {   /* before the version: a reader that sees this version sees the change's stamp */
        atomic_store_explicit(&c->km_lcv, c->wv, memory_order_relaxed);
        c->km_chg = false;
    }
    atomic_store_explicit(&c->version, c->wv, memory_order_release);
    c->wv++;
    if (c->ops->publish_after)   /* DTREE/DFA: start a rebuild; KEYMAP: a map build */
        c->ops->publish_after(c);
}

/* min version of the readers inside enter, UINT64_MAX when none */
static uint64_t min_reader(struct ofb_cls *c)
{
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < OFB_CLS_MAX_READERS; i++) {
        if (!c->readers[i].used)
            continue;
        uint64_t v = atomic_load_explicit(&c->readers[i].v, memory_order_acquire);
        if (v && v < m)
            m = v;
    }
    return m;
}


void ofb_cls_reclaim(struct ofb_cls *c)
{
    /* the current snapshot may still name tables retired inside a batch:
     * point readers at the live ones before anything is freed (unpublished
     * rules in them are invisible by version) */
    if (c->snap_dirty && !cls_snap_rebuild(c))
        c->snap_dirty = false;
    if (c->snap_dirty)
        return;  /* out of memory: keep everything until a rebuild succeeds */
    uint64_t m = min_reader(c);
    uint64_t pub = atomic_load_explicit(&c->version, memory_order_relaxed);
    /* deleted rules: invisible to every reader once all are at >= r */
    size_t i = c->prm_head;
    while (i < c->n_prm && c->prm[i].r <= pub && c->prm[i].r <= m) {
        if (c->prm[i].moved) {   /* DTREE: its table slot is in prm, rr says RR_TREE */
            struct rrec sv = c->rr[c->prm[i].id];
            c->rr[c->prm[i].id] = (struct rrec){ c->prm[i].tidx, c->prm[i].h };
            cls_physical_remove(c, c->prm[i].id);
            c->rr[c->prm[i].id] = sv;
        } else {
            cls_physical_remove(c, c->prm[i].id);
        }
        i++;
    }
    c->prm_head = i;
    if (c->prm_head == c->n_prm)
        c->prm_head = c->n_prm = 0;
    /* memory retired at version v: no reader at <= v may remain. Read the readers again:
     * the removals above retired blocks and (snap_touch) the snapshot that readers which
     * entered after the first min_reader() may hold; with the first answer (UINT64_MAX when
     * none was inside) they would be freed under them (a use-after-free that ofswitch's
     * fuzz test found under ASan). A reader whose fence follows this one sees the new
     * pointers; one before it is counted. */
    m = min_reader(c);
    size_t k = 0;
    for (size_t j = 0; j < c->n_ret; j++) {
        if (m == UINT64_MAX || c->ret[j].v <= m)
            if (c->ret[j].trie) {
                atomic_fetch_sub_explicit(&c->bytes, c->ret[j].bytes, memory_order_relaxed);
                cls_free_compiled(c->ret[j].trie, c->ret[j].p);
            } else {
                cls_xfree(c, c->ret[j].p, c->ret[j].bytes);
            }
        else
            c->ret[k++] = c->ret[j];
    }
    c->n_ret = k;
    c->updates_since_reclaim = 0;
}

void cls_after_update(struct ofb_cls *c)
{
    if (c->in_batch)
        return;
    cls_publish(c);
    if (++c->updates_since_reclaim >= 64)
        ofb_cls_reclaim(c);
}

void ofb_cls_synchronize(struct ofb_cls *c)
{
    if (c->ops->synchronize)   /* background builds in flight adopted (cls_algos.c) */
        c->ops->synchronize(c);
    for (int round = 0; round < 3; round++) {
        if (!c->in_batch)
            cls_publish(c);
        uint64_t target = atomic_load(&c->version);
        for (int i = 0; i < OFB_CLS_MAX_READERS; i++) {
            if (!c->readers[i].used)
                continue;
            for (;;) {
                uint64_t v = atomic_load_explicit(&c->readers[i].v, memory_order_acquire);
                if (v == 0 || v >= target)
                    break;
                __builtin_ia32_pause();
            }
        }
        ofb_cls_reclaim(c);
    }
}

int ofb_cls_reader_register(struct ofb_cls *c)
{
    for (int i = 0; i < OFB_CLS_MAX_READERS; i++) {
        if (!c->readers[i].used) {
            atomic_store(&c->readers[i].v, 0);
            c->readers[i].used = 1;
            atomic_thread_fence(memory_order_seq_cst);
            return i;
        }
    }
    return -1;
}

void ofb_cls_reader_unregister(struct ofb_cls *c, int rid)
{
    atomic_store(&c->readers[rid].v, 0);
    c->readers[rid].used = 0;
}

void ofb_cls_reader_enter(struct ofb_cls *c, int rid)
{
    atomic_store_explicit(&c->readers[rid].v,
                          atomic_load_explicit(&c->version, memory_order_acquire),
                          memory_order_relaxed);
    /* pairs with the fence in min_reader(): either the writer sees us, or we
     * see everything it unlinked before reading our slot */
    atomic_thread_fence(memory_order_seq_cst);
}

void ofb_cls_reader_leave(struct ofb_cls *c, int rid)
{
    atomic_store_explicit(&c->readers[rid].v, 0, memory_order_release);
}

/* ---------- tables (writer) ---------- */
