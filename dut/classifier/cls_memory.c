/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench classifier, memory: the writer's slab and the huge-page arena (xalloc/xfree).  See cls_private.h for the map of units. */
#include "cls_private.h"

/* Huge-page arena.  Filter words and bucket arrays are read at random by
 * every lookup (~100 per key); on 4 KiB pages a 1M-rule set misses the TLB on
 * nearly every probe (measured: transparent huge pages for the whole heap took
 * NTT 1M from 0.45 to 0.73 Mlps batched).  Allocations >= HP_MIN bytes come
 * from 2 MiB-aligned chunks advised MADV_HUGEPAGE, carved into power-of-two
 * blocks with one free list per size (process-wide, a mutex: writers only);
 * above HP_MAX_LOG a block is its own region, unmapped when freed.  Chunks and
 * regions come from hugepage.h, as every huge-page user's.  Small blocks stay
 * with malloc.  A classifier made with tuning.no_hugepages (OFB_CLS_HUGEPAGES=0
 * in the tools) uses neither arena nor slab.  Freed arena blocks are reused,
 * not returned. */
#define HP_MIN 4096u
_Static_assert(((HP_MIN - 1 + 15) >> 4) < SL_CLASSES, "a slab class per 16 bytes below HP_MIN");
#define HP_MAX_LOG 20
#define HP_CHUNK OFB_HP_SIZE
static pthread_mutex_t hp_lock = PTHREAD_MUTEX_INITIALIZER;
static void *hp_free[HP_MAX_LOG + 1];

static inline unsigned hp_log(size_t n)
{
    unsigned k = 12;
    while (((size_t)1 << k) < n)
        k++;
    return k;
}

static void *hp_region(size_t bytes)
{
    return ofb_hp_map(bytes);
}

static void *hp_alloc(size_t n)
{
    unsigned k = hp_log(n);
    if (k > HP_MAX_LOG)
        return hp_region((n + HP_CHUNK - 1) & ~(HP_CHUNK - 1));
    pthread_mutex_lock(&hp_lock);
    void *p = hp_free[k];
    if (p) {
        hp_free[k] = *(void **)p;
    } else {
        char *ch = hp_region(HP_CHUNK);
        if (ch) {
            size_t bs = (size_t)1 << k;
            for (size_t off = HP_CHUNK - bs; off > 0; off -= bs) {  /* all but the first to the list */
                *(void **)(ch + off) = hp_free[k];
                hp_free[k] = ch + off;
            }
            p = ch;
        }
    }
    pthread_mutex_unlock(&hp_lock);
    return p;
}

static void hp_release(void *p, size_t n)
{
    unsigned k = hp_log(n);
    if (k > HP_MAX_LOG) {
        ofb_hp_unmap(p, n);
        return;
    }
    pthread_mutex_lock(&hp_lock);
    *(void **)p = hp_free[k];
    hp_free[k] = p;
    pthread_mutex_unlock(&hp_lock);
}

/* free a block of n bytes that came from cls_xalloc (also where c's count is gone) */
static void sized_free(const struct ofb_cls *c, void *p, size_t n)
{
    if (!p)
        return;
    if (n >= HP_MIN && c->hp)
        hp_release(p, n);
    else
        free(p);
}

/* Slab for the writer's small objects (bucket blocks of a few entries, copied
 * on every insert and removal; tables, tries' pairs): with the C library they
 * cost malloc + free per update (~10 % of dtree's writer) and sat on 4 KiB
 * pages that lookups then walk.  Writer only (one writer per classifier): no
 * lock.  Freed objects go back to their class's list (16-byte classes: at
 * most 15 bytes of waste each); chunks are freed at destroy.  On with the
 * huge-page arena (tuning.no_hugepages: malloc, which sanitizer runs use to
 * see every object). */
static inline size_t sl_class(size_t n)
{
    return n ? (n + 15) >> 4 : 1;
}

static void *sl_alloc(struct ofb_cls *c, size_t n)
{
    size_t k = sl_class(n), bs = k << 4;
    void *p = c->sl_free[k];
    if (p) {
        c->sl_free[k] = *(void **)p;
        return p;
    }
    if (c->sl_left < bs) {
        if (c->n_sl_chunks == c->cap_sl_chunks) {
            size_t nc = c->cap_sl_chunks ? 2 * c->cap_sl_chunks : 16;
            void **x = realloc(c->sl_chunks, nc * sizeof(void *));
            if (!x)
                return NULL;
            c->sl_chunks = x;
            c->cap_sl_chunks = nc;
        }
        /* chunks of 64 KiB doubling to 2 MiB (huge pages from there): a small
         * classifier (the switch has one per flow table) stays small */
        size_t csz = c->n_sl_chunks >= 5 ? HP_CHUNK : ((size_t)64 << 10) << c->n_sl_chunks;
        char *ch = NULL;
        if (csz == HP_CHUNK)
            ch = hp_region(HP_CHUNK);
        else if (posix_memalign((void **)&ch, 64, csz))
            ch = NULL;
        if (!ch)
            return NULL;
        while (c->sl_left >= 16) {   /* the old chunk's tail to the largest class that fits */
            size_t tk = c->sl_left >> 4;
            *(void **)c->sl_cur = c->sl_free[tk];
            c->sl_free[tk] = c->sl_cur;
            c->sl_cur += tk << 4;
            c->sl_left -= tk << 4;
        }
        c->sl_chunks[c->n_sl_chunks++] = ch;
        c->sl_cur = ch;
        c->sl_left = csz;
    }
    p = c->sl_cur;
    c->sl_cur += bs;
    c->sl_left -= bs;
    return p;
}

static inline bool sl_owns(const struct ofb_cls *c, size_t n)
{
    return n < HP_MIN && c->hp;
}

/* free what xalloc gave, without counting (destroy) */
void cls_xfree_quiet(struct ofb_cls *c, void *p, size_t n)
{
    if (!p)
        return;
    if (sl_owns(c, n)) {
        size_t k = sl_class(n);
        *(void **)p = c->sl_free[k];
        c->sl_free[k] = p;
    } else {
        sized_free(c, p, n);
    }
}

void *cls_xalloc(struct ofb_cls *c, size_t n)
{
    void *p = NULL;
    if (n >= HP_MIN && c->hp)
        p = hp_alloc(n);
    else if (sl_owns(c, n))
        p = sl_alloc(c, n);
    else if (n < 4096)
        p = malloc(n ? n : 16);  /* blocks: no alignment waste */
    else if (posix_memalign(&p, 64, n))
        p = NULL;
    if (!p)
        return NULL;
    atomic_fetch_add_explicit(&c->bytes, n, memory_order_relaxed);
    return p;
}

void cls_xfree(struct ofb_cls *c, void *p, size_t n)
{
    if (!p)
        return;
    atomic_fetch_sub_explicit(&c->bytes, n, memory_order_relaxed);
    cls_xfree_quiet(c, p, n);
}
