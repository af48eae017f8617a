/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench classifier, background rebuilds: DTREE/DFA compiled trees and the KEYMAP map.  See cls_private.h for the map of units. */
#include "cls_private.h"

static void dt_start(struct ofb_cls *c, bool force);

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------- the job type both rebuilds use ---------- */

static void *job_thread(void *arg)
{
    struct cls_job *j = arg;
    j->run(j);
    j->t1 = mono_s();
    atomic_store_explicit(&j->done, 1, memory_order_release);
    return NULL;
}

/* run j->run on a thread; on the writer when sync or no thread can be made
 * (then done before this returns) */
void cls_job_start(struct cls_job *j, bool sync)
{
    j->t0 = mono_s();
    if (sync || pthread_create(&j->th, NULL, job_thread, j)) {
        j->th = 0;
        job_thread(j);
    }
}

/* true when j has finished (wait: block until it has), its thread joined */
bool cls_job_ready(struct cls_job *j, bool wait)
{
    if (!wait && !atomic_load_explicit(&j->done, memory_order_acquire))
        return false;
    if (j->th) {
        pthread_join(j->th, NULL);
        j->th = 0;
    }
    return true;
}

/* ---------- DTREE: compiled tree + OURS tables as the delta ---------- */

static void retire_dtree(struct ofb_cls *c, struct ofb_dtree *t)
{
    if (!t)
        return;
    cls_retire(c, t, ofb_dtree_bytes(t));
    c->ret[c->n_ret - 1].trie = 2;
}

#define AUTO_DFA_SYNC_MAX 16384

static unsigned dt_flags(const struct ofb_cls *c)
{
    return (c->simd != 0 ? OFB_DTREE_SIMD : 0) |   /* SIMD_SCALAR = 0 */
           (c->simd == SIMD_AVX2 ? OFB_DTREE_AVX2 : c->simd == SIMD_AVX512 ? OFB_DTREE_AVX512 : 0) |
           (c->algo == OFB_CLS_ALGO_DFA ? OFB_DTREE_DFA : 0) |
           /* AUTO's tree: the DFA in front when all rules fit one DFA (public ClassBench acl1: 3-4x the tree's
              batched rate), else the partitioned DFA within a state budget (generated cb_* 1k/10k sets: 1.6-3x;
              the 100k sets pass it); once they did not fit, its rebuilds stop asking */
           (c->algo == OFB_CLS_ALGO_DTREE && c->auto_algo && !c->tu.dfa_no_auto && !c->dfa_one_over
                ? OFB_DTREE_DFA | (c->tu.dfa_auto_one ? OFB_DTREE_DFA_ONE : OFB_DTREE_DFA_AUTO) : 0);
}

/* make t what readers walk (the writer holds no other reference to the old) */
static void dt_publish(struct ofb_cls *c, struct ofb_dtree *t, uint64_t min_v)
{
    ofb_dtree_set_min_v(t, min_v);
    if (ofb_dtree_dfa_over(t))
        c->dfa_one_over = true;
    struct ofb_dtree *old = atomic_load_explicit(&c->dt, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, ofb_dtree_bytes(t), memory_order_relaxed);
    atomic_store_explicit(&c->dt, t, memory_order_release);
    retire_dtree(c, old);
}

/* bulk build into an empty DTREE classifier: the tree at once, no delta */
int cls_dt_bulk(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids)
{
    struct ofb_dtree_rule *dr = malloc(sizeof(*dr) * n);
    uint64_t *w = malloc(sizeof(uint64_t) * 2 * c->nwk * n);
    if (!dr || !w) {
        free(dr), free(w);
        snprintf(c->err, sizeof(c->err), "dtree: bulk build of %zu rules: out of memory", n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t *v = w + 2 * c->nwk * i, *m = v + c->nwk, tv[MAXW], tm[MAXW];
        words_of(c, rules[i].value, tv);
        words_of(c, rules[i].mask, tm);
        for (uint32_t k = 0; k < c->nwk; k++) {
            m[k] = tm[k];
            v[k] = tv[k] & tm[k];
        }
        dr[i] = (struct ofb_dtree_rule){ rules[i].priority, c->n_ids + 1 + (uint32_t)i, rules[i].handle, v, m,
                                         c->wv, V_INF };
    }
    /* DFA: the tree now (lookups from it at once), the DFA (~1 s at 100k) with
     * a fresh tree on the rebuild thread, adopted like any rebuild (at a later
     * publish, or ofb_cls_synchronize); OFB_CLS_DFA_BULK_SYNC=1: both now */
    unsigned fl = dt_flags(c);
    /* AUTO's DFA on a small set (<= AUTO_DFA_SYNC_MAX rules: one DFA in ms, partitioned 0.1-0.3 s at 10k) at
       once, so the DFA answers from the first lookup on; larger ones like the DFA algorithm's */
    bool later = (fl & OFB_DTREE_DFA) && !c->dfa_bulk_sync &&
                 !((fl & (OFB_DTREE_DFA_ONE | OFB_DTREE_DFA_AUTO)) && n <= AUTO_DFA_SYNC_MAX);
    struct ofb_dtree *t = ofb_dtree_build(c->key_len, dr, n, later ? fl & ~OFB_DTREE_DFA : fl, &c->tu, c->err,
                                          sizeof(c->err));
    free(dr), free(w);
    if (!t)
        return -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ++c->n_ids;
        c->rr[id] = (struct rrec){ RR_TREE, 0 };
        if (ids)
            ids[i] = id;
    }
    c->n_rules += n;
    dt_publish(c, t, 0);
    cls_publish(c);
    ofb_cls_reclaim(c);
    if (later)
        dt_start(c, true);
    return 0;
}

static void dt_job_run(struct cls_job *jb)
{
    struct dtjob *j = (struct dtjob *)jb;
    /* the old tree's rules still live: a kill after the snapshot may or may
     * not be seen here; the writer's kill log applies it to the new tree
     * either way (a kill of a rule left out is a no-op) */
    for (uint32_t r = 0; r < ofb_dtree_rules(j->old); r++) {
        struct ofb_dtree_rule x;
        ofb_dtree_rule_at(j->old, r, &x);
        if (x.del_v == V_INF)
            j->rules[j->n++] = x;
    }
    j->out = ofb_dtree_build(j->key_len, j->rules, j->n, j->flags, &j->tu, j->err, sizeof(j->err));
}

void cls_dt_job_free(struct dtjob *j)
{
    free(j->rules);
    free(j->words);
    free(j->moved);
    free(j);
}

/* Start a rebuild from a snapshot of the live rules (after a publish: every
 * rule in it is visible at vstart = the published version) once the delta is
 * big enough.  The writer copies the delta's rules and words; the job itself
 * collects the published tree's live rules (pointing into that tree, which
 * stays allocated until the job is adopted). */
void cls_dt_maybe_start(struct ofb_cls *c)
{
    dt_start(c, false);
}

/* force: rebuild whatever the delta (DFA: the DFA of a bulk build) */
static void dt_start(struct ofb_cls *c, bool force)
{
    struct ofb_dtree *old = atomic_load_explicit(&c->dt, memory_order_relaxed);
    uint64_t limit = ofb_dtree_rules(old) / DT_DELTA_DIV;
    if (limit < c->dt_delta_min)
        limit = c->dt_delta_min;
    if (c->job || (!force && c->n_delta <= limit) || c->in_batch)
        return;
    struct dtjob *j = calloc(1, sizeof(*j));
    size_t cap = ofb_dtree_rules(old) + c->n_delta;
    if (!j || !(j->rules = malloc(sizeof(*j->rules) * (cap + 1))) ||
        !(j->words = malloc(sizeof(uint64_t) * 2 * c->nwk * (c->n_delta + 1))) ||
        !(j->moved = malloc(sizeof(uint32_t) * (c->n_delta + 1)))) {
        if (j)
            cls_dt_job_free(j);
        return;  /* no memory: the delta keeps working, retried at the next publish */
    }
    j->key_len = c->key_len;
    j->flags = dt_flags(c);
    j->tu = c->tu;
    j->vstart = atomic_load_explicit(&c->version, memory_order_relaxed);
    j->old = old;
    for (uint32_t ti = 0; ti < c->nwt; ti++) {
        struct tbl *t = c->wt[ti];
        size_t nb = t->n_ent ? (size_t)1 << t->nb_log : 0;
        for (size_t b = 0; b < nb; b++) {
            struct blk *k = atomic_load_explicit(&t->bk[b], memory_order_relaxed);
            for (uint32_t i = 0; k && i < k->n; i++) {
                struct ent *e = ent_at(c, k->data, i);
                if (atomic_load_explicit(&e->del_v, memory_order_relaxed) != V_INF || j->n_moved > c->n_delta)
                    continue;
                uint64_t *w = j->words + 2 * c->nwk * j->n_moved;
                memcpy(w, e->w, 16 * c->nwk);
                j->rules[j->n++] = (struct ofb_dtree_rule){ e->prio, e->id, e->handle, w, w + c->nwk, e->add_v, V_INF };
                j->moved[j->n_moved++] = e->id;
            }
        }
    }
    c->n_klog = 0;
    c->job = j;
    j->job.run = dt_job_run;
    cls_job_start(&j->job, c->dt_sync);
    if (!j->job.th)
        cls_dt_poll(c, true);
}

/* Adopt a finished rebuild (wait: block until it finishes): apply the deletes
 * logged since its snapshot, take the moved delta rules out of the tables (at
 * the version being written, so readers of older versions still find them
 * there: they may use either tree), publish the tree. */
void cls_dt_poll(struct ofb_cls *c, bool wait)
{
    struct dtjob *j = c->job;
    if (!j || !cls_job_ready(&j->job, wait))
        return;
    c->job = NULL;
    struct ofb_dtree *t = j->out;
    if (!t) {
        snprintf(c->err, sizeof(c->err), "dtree: background rebuild failed (the delta keeps the rules): %s", j->err);
        cls_dt_job_free(j);
        c->n_klog = 0;
        return;
    }
    for (size_t i = 0; i < c->n_klog; i++)
        ofb_dtree_kill(t, c->klog[i].id, c->klog[i].v);
    c->n_klog = 0;
    for (size_t i = 0; i < j->n_moved; i++) {
        uint32_t id = j->moved[i];
        struct rrec rr = c->rr[id];
        if (rr.tidx == UINT32_MAX || rr.tidx == RR_TREE)
            continue;
        struct blk *k;
        uint32_t pos;
        struct ent *e = cls_find_ent(c, id, &k, &pos);
        if (!e || atomic_load_explicit(&e->del_v, memory_order_relaxed) != V_INF)
            continue;   /* deleted meanwhile: killed in the tree by the log, removed from its table as usual */
        atomic_store_explicit(&e->del_v, c->wv, memory_order_relaxed);
        if (c->n_prm == c->cap_prm) {
            size_t nc = c->cap_prm ? c->cap_prm * 2 : 256;
            struct pendrm *p = realloc(c->prm, nc * sizeof(*p));
            if (!p)
                abort();
            c->prm = p;
            c->cap_prm = nc;
        }
        c->prm[c->n_prm++] = (struct pendrm){ c->wv, id, rr.tidx, rr.h, true };
        c->rr[id] = (struct rrec){ RR_TREE, 0 };
        c->n_delta--;
    }
    dt_publish(c, t, j->vstart);
    cls_dt_job_free(j);
}
/* ---------- KEYMAP: the key-space map (keymap.h) in front of OURS' tables ---------- */

/* the map's memory limit: mem_budget_bytes, else 4 GiB capped at 3/4 of
 * MemAvailable (a map the machine cannot hold fails with a message instead
 * of faulting its pages in until the OOM killer comes) */
static uint64_t km_limit(const struct ofb_cls *c)
{
    if (c->budget)
        return c->budget;
    uint64_t lim = (uint64_t)4 << 30;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            if (kb * 1024 / 4 * 3 < lim)
                lim = kb * 1024 / 4 * 3;
            break;
        }
    }
    if (f)
        fclose(f);
    return lim;
}

static void km_job_run(struct cls_job *jb)
{
    struct kmjob *j = (struct kmjob *)jb;
    if (j->scan)
        j->out = ofb_kmap_build_scan(j->key_len, j->rules, j->n, j->max_bytes, &j->tu, j->simd, &j->cancel, &j->over,
                                     j->err, sizeof(j->err));
    else
        j->out = ofb_kmap_build(j->key_len, j->rules, j->n, j->max_bytes, &j->tu, &j->cancel, &j->over, j->err,
                                sizeof(j->err));
}

static void km_retire(struct ofb_cls *c, struct ofb_kmap *m)
{
    if (!m)
        return;
    cls_retire(c, m, ofb_kmap_bytes(m));
    c->ret[c->n_ret - 1].trie = 3;   /* reclaim subtracts its bytes then */
}

/* Snapshot the live rules (right after a publish: no unpublished change
 * exists, so they are the set readers at the published version see) and
 * build the map from them on a thread (OFB_CLS_KEYMAP_SYNC=1 or no thread:
 * here, adopted at once). */
static void km_start(struct ofb_cls *c)
{
    struct kmjob *j = calloc(1, sizeof(*j));
    if (!j || !(j->rules = malloc(sizeof(*j->rules) * (c->n_rules + 1)))) {
        free(j);
        return;   /* no memory: OURS answers, retried at the next publish */
    }
    j->key_len = c->key_len;
    j->v = atomic_load_explicit(&c->version, memory_order_relaxed);
    j->max_bytes = km_limit(c);
    j->tu = c->tu;
    j->scan = c->algo == OFB_CLS_ALGO_KSCAN;
    j->simd = c->simd;
    for (uint32_t ti = 0; ti < c->nwt; ti++) {
        struct tbl *t = c->wt[ti];
        size_t nb = t->n_ent ? (size_t)1 << t->nb_log : 0;
        for (size_t b = 0; b < nb; b++) {
            struct blk *k = atomic_load_explicit(&t->bk[b], memory_order_relaxed);
            for (uint32_t i = 0; k && i < k->n && j->n < c->n_rules; i++) {
                struct ent *e = ent_at(c, k->data, i);
                if (atomic_load_explicit(&e->del_v, memory_order_relaxed) != V_INF)
                    continue;
                struct ofb_kmap_rule *r = &j->rules[j->n++];
                r->prio = e->prio;
                r->id = e->id;
                r->handle = e->handle;
                memcpy(r->value, e->w, 4);           /* key bytes in memory order (load_key) */
                memcpy(r->mask, e->w + c->nwk, 4);
            }
        }
    }
    c->kjob = j;
    j->job.run = km_job_run;
    cls_job_start(&j->job, c->km_sync);
    if (!j->job.th)
        cls_km_poll(c, true);
}

/* Adopt a finished build (wait: block until it finishes) when the rule set
 * is still the one it was built from; else drop it (the next publish starts
 * another). */
void cls_km_poll(struct ofb_cls *c, bool wait)
{
    struct kmjob *j = c->kjob;
    if (!j || !cls_job_ready(&j->job, wait))
        return;
    c->km_next = j->job.t1 + (j->job.t1 - j->job.t0);
    if (j->out && atomic_load_explicit(&c->km_lcv, memory_order_relaxed) <= j->v) {
        ofb_kmap_set_v(j->out, j->v);
        atomic_fetch_add_explicit(&c->bytes, ofb_kmap_bytes(j->out), memory_order_relaxed);
        km_retire(c, atomic_exchange_explicit(&c->km, j->out, memory_order_acq_rel));
        c->km_err[0] = 0;
    } else if (j->out) {
        ofb_kmap_free(j->out);
    } else {
        snprintf(c->km_err, sizeof(c->km_err), "%s", j->err);
        c->km_off = true;   /* over its limits or out of memory: not again until the set changes by 1/8 */
        c->km_off_rules = c->n_rules;
    }
    free(j->rules);
    free(j);
    c->kjob = NULL;
}

/* after each publish: adopt a finished build; a map the rule set has left is
 * retired at once (it can never answer again); start the next build, unless
 * the last one ended less than its own duration ago (while the set keeps
 * changing, builds take at most half of a core; ofb_cls_synchronize starts
 * one at once) */
void cls_km_after_publish(struct ofb_cls *c)
{
    cls_km_poll(c, false);
    struct ofb_kmap *m = atomic_load_explicit(&c->km, memory_order_relaxed);
    if (m && ofb_kmap_v(m) < atomic_load_explicit(&c->km_lcv, memory_order_relaxed)) {
        atomic_store_explicit(&c->km, NULL, memory_order_release);
        km_retire(c, m);
        m = NULL;
    }
    if (c->km_off) {
        uint64_t d = c->n_rules > c->km_off_rules ? c->n_rules - c->km_off_rules : c->km_off_rules - c->n_rules;
        if (d * 8 <= c->km_off_rules)
            return;
        c->km_off = false;
    }
    if (!m && !c->kjob && c->n_rules && (c->km_sync || c->km_force || mono_s() >= c->km_next))
        km_start(c);
}
