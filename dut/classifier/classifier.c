/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench wildcard classifier: see classifier.h for the design. */
#include "classifier.h"
#include "trie.h"
#include "dtree.h"
#include "keymap.h"

#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __SSE4_2__
#include <nmmintrin.h>
#endif

#define MAXW (OFB_CLS_MAX_KEY_LEN / 8)
#define SL_CLASSES 257   /* the writer's slab: 16-byte classes 1..256 for sizes below HP_MIN (4096) */
#define V_INF UINT64_MAX
#define CAND_MAX 63
#define BM_EXTRA 6          /* key32 bitmap: 2^6 bits per bucket = 32-64 bits per rule */
#define BM_K 0x9E3779B1u    /* key32 bitmap hash: bit = ((value & cm) * BM_K) >> shift */   /* +1 slot: collect() writes one past the last kept */
#define BATCH_CHUNK 16
/* grouped line filter (keys <= 4 bytes, design point 7): hashes of a rule's
 * (value & table mask) and of (value & group mask) for the line */
#define GF_K1 0x85EBCA6Bu
#define GF_K2 0xC2B2AE35u
#define GF_KL 0x27D4EB2Fu
#define GF_MAXG 8           /* masks per group at most (lanes of >= 2 words) */
#define GF_MIN_RULES 1024   /* below: no groups (the bitmaps are in L1 anyway) */
/* the scalar path groups only from here: its per-table test costs ~3x a bitmap
 * probe, which can pay only once the bitmaps (32-64 bits per rule) leave L2
 * (measured/2026-11-24-grouped: 100k -9 %; 1M 0.96x to 1.6x between runs) */
#define GF_MIN_RULES_SCALAR (1u << 18)
#define GF_MAX_TABLES 4096  /* tables per band grouped at most (the largest) */
enum simd_path { SIMD_SCALAR = 0, SIMD_AVX2 = 1, SIMD_AVX512 = 2 };
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define COLD __attribute__((cold, noinline))

/* One rule inside a block.  value/mask words follow: w[0..nwk) value (already
 * masked), w[nwk..2nwk) mask.  del_v is written in place by the writer (one
 * atomic 64-bit store); everything else is immutable once published. */
struct ent {
    uint32_t prio, id;
    uint64_t handle;
    uint64_t add_v;
    _Atomic uint64_t del_v;
    uint64_t w[];
};

struct blk {            /* immutable bucket contents, sorted (prio desc, id asc) */
    uint32_t n;
    uint32_t bytes;
    uint64_t data[];
};

struct tbl {
    uint64_t cm[MAXW];  /* common mask words */
    uint8_t wi[MAXW];   /* indexes of the non-zero words of cm */
    uint8_t nw;
    uint32_t nb_log;    /* 2^nb_log buckets; one 64-bit filter word per bucket */
    uint32_t max_prio;  /* upper bound of priorities held */
    uint32_t bits;      /* popcount of cm */
    uint32_t n_ent;     /* physical entries */
    uint32_t band;      /* OURS priority band (0 = highest priorities) */
    size_t bytes;
    uint64_t *filter;   /* per bucket: 4 x 16-bit (q << 9 | fingerprint), q desc */
    _Atomic(struct blk *) *bk;
    /* key32 bitmap (keys <= 4 bytes, else NULL): bit ((value & cm) * BM_K) >>
     * bm_shift set for every entry held, before it is visible; never cleared
     * (deleted entries leave stale bits: false passes only) until the table
     * grows and the bitmap is rebuilt from the entries */
    uint32_t bm_shift;
    size_t bm_words;
    _Atomic uint64_t *bm;
    /* grouped line filter: group index + 1 in c->gf (0 = not grouped: the
     * bitmap above serves it) and lane in the group's lines; kept by tbl_grow */
    uint32_t gg, gl;
};

/* What phase 1 of a lookup reads per table, packed (32 B, two per cache line)
 * so 100 tables cost 50 lines of L1 instead of ~300 of struct tbl. */
struct pdesc {
    uint64_t m0, m1;          /* masks of the first two non-zero words (0 if absent) */
    uint8_t w0, w1, nw, pad;
    uint32_t fmask;           /* buckets - 1 */
    const uint64_t *filter;
};

struct snap {           /* what readers iterate: tables (TSS: by max_prio desc) */
    uint32_t n;         /* real tables (TSS iterates t[0..n)) */
    size_t bytes;
    struct tbl **t;     /* npad slots: table pointers, NULL for padding */
    uint32_t npad;      /* slots; SoA arrays below have npad entries */
    uint32_t nb;        /* OURS: bands; band b owns slots bs[b]..bs[b+1] (multiples of 8) */
    uint32_t bs[OFB_CLS_MAX_BANDS + 1];
    bool simd_ok;       /* every table hashes <= 2 words */
    bool one_word;      /* every table hashes 1 word (m1 == 0): AVX2 skips the second */
    bool use_bm;        /* key32: phase 1 (scalar, AVX2) tests the tables' bitmaps */
    uint64_t *sbm;      /* key32 bitmap base per slot (zero_filter for padding) */
    uint32_t *scm, *ssh;  /* key32: common mask (low 32 bits) and bitmap shift per slot */
    /* grouped line filter: band b's grouped tables are slots bs[b]..ge[b]
     * (a multiple of 8 slots, padding never passes), its others ge[b]..bs[b+1] */
    bool use_gf;
    bool gf_k4;               /* 4 bits per probe (else 3) */
    const uint32_t *gw;       /* the lines (c->gf->w); dword 0..15 stay zero */
    uint32_t ge[OFB_CLS_MAX_BANDS];
    uint32_t *sg, *sgs, *slb, *swl;  /* group mask, line shift, lane base, 32 - log2 lane words */
    uint64_t *sm0, *sm1, *sw0, *sw1, *sfm, *sfb;  /* SIMD phase 1 inputs */
    uint64_t *sp0, *sp1;  /* AVX2: dword pair (2w, 2w+1) of sw0/sw1 for vpermd */
    struct pdesc d[];   /* n descriptors, same order */
};

static const uint64_t zero_filter[2];

struct lin {            /* LINEAR: all entries sorted, copied per update (RCU);
                           tries: writer-only, in id order, appended in place,
                           deleted entries dropped at the next merge */
    uint32_t n;
    size_t bytes;
    uint64_t data[];
};

struct rslot {
    _Atomic uint64_t v;  /* 0 = outside; else version seen at enter */
    int used;
} __attribute__((aligned(64)));

struct rrec { uint32_t tidx; uint32_t h; };   /* writer-side, by rule id */
struct retired { void *p; size_t bytes; uint64_t v; uint8_t trie; };  /* trie: 1 ofb_trie_free, 2 ofb_dtree_free,
                                                                         3 ofb_kmap_free */
/* moved: a DTREE delta rule that went into the compiled tree; its table slot
 * (tidx, h) is kept here because rr[id] already says RR_TREE */
struct pendrm { uint64_t r; uint32_t id; uint32_t tidx, h; bool moved; };
/* DTREE: rr[id].tidx of a rule held by the compiled tree (dtree.h) */
#define RR_TREE (UINT32_MAX - 1)
/* DTREE: a background rebuild starts once the delta (OURS tables) holds more
 * than max(DT_DELTA_MIN, tree rules / DT_DELTA_DIV) live rules */
#define DT_DELTA_MIN 1024
#define DT_DELTA_DIV 8
struct dtjob {                        /* DTREE: one background rebuild */
    pthread_t th;
    _Atomic int done;
    uint32_t key_len;
    unsigned flags;
    struct ofb_dtree_rule *rules;     /* the delta's rules (copied by the writer), then the old tree's
                                         live ones (added by the job: the writer does not pay that O(N)) */
    size_t n;
    const struct ofb_dtree *old;      /* the published tree at the snapshot: stays allocated until adoption */
    uint64_t *words;                  /* copies of the delta rules' value/mask words */
    uint32_t *moved;                  /* ids of the delta rules in the snapshot */
    size_t n_moved;
    uint64_t vstart;                  /* published version when the snapshot was taken */
    struct ofb_dtree *out;
    char err[256];
};
struct pendkill { uint32_t id; uint64_t v; };
/* KEYMAP: one background build of the key-space map from a snapshot of the
 * rules at published version v */
struct kmjob {
    pthread_t th;
    _Atomic int done;
    uint32_t key_len;
    struct ofb_kmap_rule *rules;
    size_t n;
    uint64_t v, max_bytes;
    struct ofb_kmap *out;
    int over;
    _Atomic int cancel;               /* destroy: stop the build early */
    double t0, t1;                    /* when it started, ended (monotonic s) */
    char err[256];
};
/* AUTO runs KEYMAP for keys of <= 4 bytes from this many rules at the first
 * bulk build (below it the map's 2^B bytes cost more per rule than OURS' line
 * filter, which is L2/L3-resident there) */
#define KMAP_AUTO_MIN (1u << 19)
/* Trie algos: the published pair (trie.h, incremental scheme).  base: all rules
 * up to base_last_id (LOUDS: the only trie); delta: an H-Trie of the visible
 * rules inserted since (NULL if none); v: the version it was published at
 * (kills in a keep-mode base at versions <= v apply). */
struct tpair { struct ofb_trie *base, *delta; uint64_t v; };
/* Merge once the delta holds more than max(TRIE_DELTA_MIN, 2 sqrt(base rules)):
 * an update rebuilds the delta (~D x 0.7 us) and pays 1/D of a merge (~N x 1.6
 * us, measured builds); D ~ sqrt(N) balances the two (~1.5 ms at 1M rules,
 * where D = N/16 would cost ~30 ms per update, same arithmetic). */
#define TRIE_DELTA_MIN 32

struct ofb_cls {
    /* read-mostly, shared with readers */
    uint32_t key_len, nwk, es;        /* es = entry stride in bytes */
    enum ofb_cls_algo algo;
    uint8_t simd;                     /* enum simd_path, fixed at creation */
    _Atomic(struct tpair *) tp;       /* trie algos: what readers walk (base + delta) */
    uint32_t qmin, qmax, qlevels;
    uint64_t qscale;                  /* qfine = (p - qmin) * qscale >> 32 */
    uint32_t nbands;                  /* OURS priority bands (power of two) */
    bool bands_auto;
    bool key32;                       /* OURS, key_len <= 4: tables carry key32 bitmaps */
    bool gf_on;                       /* key32 and the grouped line filter (OFB_CLS_GF) */
    bool gf_k4;                       /* OFB_CLS_GF_K=4: 4 bits per probe */
    uint32_t gf_maxg, gf_bpe, gf_slack, gf_min;  /* grouping parameters (OFB_CLS_GF_*) */
    _Atomic uint64_t version __attribute__((aligned(64)));
    _Atomic(struct snap *) snap;
    _Atomic(struct lin *) lin;
    struct rslot readers[OFB_CLS_MAX_READERS];

    /* writer only */
    uint64_t wv;                      /* version updates are written at */
    bool in_batch;
    bool snap_dirty;                  /* snapshot rebuild deferred to publish */
    uint32_t updates_since_reclaim;
    struct tbl **wt; uint32_t nwt, cap_wt;
    uint32_t *btl[OFB_CLS_MAX_BANDS]; /* OURS: indexes into wt of each band's tables */
    uint32_t nbt[OFB_CLS_MAX_BANDS], cap_bt[OFB_CLS_MAX_BANDS];
    uint32_t *tmap; uint32_t tmap_cap;  /* mask -> table index + 1 */
    struct rrec *rr; uint32_t n_ids, cap_ids;  /* id 0 unused */
    uint64_t n_rules;
    struct retired *ret; size_t n_ret, cap_ret;
    struct pendrm *prm; size_t n_prm, cap_prm;
    size_t prm_head;
    _Atomic uint64_t bytes;
    /* writer's slab for allocations < HP_MIN (xalloc, sl_alloc): free lists by
     * 16-byte size class, carved from chunks of 64 KiB doubling to 2 MiB */
    void *sl_free[SL_CLASSES];
    char *sl_cur;
    size_t sl_left;
    void **sl_chunks;
    size_t n_sl_chunks, cap_sl_chunks;
    uint32_t expected;
    uint64_t budget;                  /* mem_budget_bytes (HYBRID merge budget, SPTRIE limit) */
    bool trie_dirty;                  /* trie algos: the rule list changed since the last build */
    bool trie_failed;                 /* the last rebuild failed (err says why) */
    struct ofb_trie *base, *delta;    /* trie algos: what the published pair holds */
    uint32_t base_last_id;            /* rules with ids above it are in the delta */
    bool delta_dirty;                 /* the delta's rules changed since it was built */
    bool keep_base;                   /* a base rule was deleted: bases are built in keep mode */
    bool force_merge;                 /* the next publish rebuilds the base */
    char err[320];                    /* last writer error, "" = none */
    struct gfil *gf;                  /* grouped line filter (writer's copy of the geometry) */
    uint64_t gf_rules, gf_puts;       /* rules when it was built, entries put since */
    /* DTREE (the tables above hold the delta) */
    _Atomic(struct ofb_dtree *) dt;   /* published compiled tree, NULL before the first */
    struct dtjob *job;                /* background rebuild in flight */
    struct pendkill *klog; size_t n_klog, cap_klog;  /* deletes since the job's snapshot */
    uint64_t n_delta;                 /* live rules in the tables */
    uint32_t dt_delta_min;
    bool dt_sync;                     /* OFB_CLS_DTREE_SYNC=1: rebuild on the writer thread */
    bool auto_algo;                   /* created as OFB_CLS_ALGO_AUTO (algo may still change at
                                         the first bulk build: auto_tree_suits) */
    bool dfa_bulk_sync;               /* OFB_CLS_DFA_BULK_SYNC=1: a DFA bulk build waits for the DFA */
    /* KEYMAP (OURS' tables hold every rule; the map answers while the rule set is the one it was built from) */
    _Atomic(struct ofb_kmap *) km;    /* published map (stamp: ofb_kmap_v), NULL before the first */
    _Atomic uint64_t km_lcv;          /* last published version that changed the rule set */
    bool km_chg;                      /* writer: the set changed since the last publish */
    bool km_sync;                     /* OFB_CLS_KEYMAP_SYNC=1: rebuild on the writer at publish */
    bool km_force;                    /* synchronize, first bulk build: start a build whatever km_next says */
    bool km_off;                      /* the last build was over its limits: no rebuild until the set grows or
                                         shrinks by 1/8 (km_off_rules) */
    uint64_t km_off_rules;
    struct kmjob *kjob;               /* background build in flight */
    double km_next;                   /* no new build starts at publish before this time (monotonic s): builds
                                         take at most half of a core while the set keeps changing */
    char km_err[256];                 /* why the last map build failed, "" = none */
};

/* Grouped line filter (design point 7).  Group k: tables of one band whose
 * masks share the care bits G; its 2^l lines of 64 B are indexed by
 * ((value & G) * GF_KL) >> (32 - l); lane j of a line (W = 16 / 2^ceil(log2 g)
 * dwords) belongs to the group's j-th table.  A table's entry sets 3 (or 4)
 * bits in one dword of its lane, chosen by the hashes of (value & cm). */
struct gfgrp { uint32_t G, sh, base, wlog, band; };
struct gfil {
    uint32_t *w;        /* lines; dwords 0..15 are the never-set padding line */
    size_t bytes;       /* of w */
    uint32_t ng;
    struct gfgrp g[];
};

/* LINEAR and the tries keep their rules in the sorted array `lin` (tries build
 * from it at publish) */
/* DTREE and DFA: the compiled tree (DFA: with dfa.h's DFA in front) + OURS tables as the delta */
static inline bool is_dt(const struct ofb_cls *c)
{
    return c->algo == OFB_CLS_ALGO_DTREE || c->algo == OFB_CLS_ALGO_DFA;
}

/* OURS' tables and their lookup: OURS, and KEYMAP whenever its map is stale */
static inline bool is_ours(const struct ofb_cls *c)
{
    return c->algo == OFB_CLS_ALGO_OURS || c->algo == OFB_CLS_ALGO_KEYMAP;
}

static inline bool is_trie(const struct ofb_cls *c)
{
    return c->algo == OFB_CLS_ALGO_HTRIE || c->algo == OFB_CLS_ALGO_SPTRIE || c->algo == OFB_CLS_ALGO_HYBRID ||
           c->algo == OFB_CLS_ALGO_LOUDS;
}

/* the hybrid and the H-Trie take updates incrementally (base + delta); the
 * SP-Trie (whose size explodes) and LOUDS (read-only) rebuild one trie */
static inline bool trie_incremental(const struct ofb_cls *c)
{
    return c->algo == OFB_CLS_ALGO_HTRIE || c->algo == OFB_CLS_ALGO_HYBRID;
}

static inline bool uses_lin(const struct ofb_cls *c);
static inline bool is_trie(const struct ofb_cls *c);
static void dt_poll(struct ofb_cls *c, bool wait);
static void dt_maybe_start(struct ofb_cls *c);
static void dt_start(struct ofb_cls *c, bool force);
static void *xalloc(struct ofb_cls *c, size_t n);
static void xfree(struct ofb_cls *c, void *p, size_t n);

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
    struct lin *x = xalloc(c, bytes);
    if (!x)
        return NULL;
    x->n = (uint32_t)n;
    x->bytes = bytes;
    if (n)
        memcpy(x->data, l->data, n * c->es);
    atomic_store_explicit(&c->lin, x, memory_order_relaxed);
    if (l)
        xfree(c, l, l->bytes);
    return x;
}

/* tries: index of the first entry with id > id (the list is in id order) */
static uint32_t tlin_after(const struct ofb_cls *c, const struct lin *l, uint32_t id);

static inline bool uses_lin(const struct ofb_cls *c)
{
    return c->algo == OFB_CLS_ALGO_LINEAR || is_trie(c);
}

/* ---------- small helpers ---------- */

/* Huge-page arena.  Filter words and bucket arrays are read at random by
 * every lookup (~100 per key); on 4 KiB pages a 1M-rule set misses the TLB on
 * nearly every probe (measured: transparent huge pages for the whole heap took
 * NTT 1M from 0.45 to 0.73 Mlps batched).  Allocations >= HP_MIN bytes come
 * from 2 MiB-aligned chunks advised MADV_HUGEPAGE, carved into power-of-two
 * blocks with one free list per size (process-wide, a mutex: writers only);
 * above HP_MAX_LOG a block is its own aligned region, freed to the C library.
 * Small blocks stay with malloc.  OFB_CLS_HUGEPAGES=0 (read once per process)
 * turns the arena off.  Freed arena blocks are reused, not returned. */
#define HP_MIN 4096u
_Static_assert(((HP_MIN - 1 + 15) >> 4) < SL_CLASSES, "a slab class per 16 bytes below HP_MIN");
#define HP_MAX_LOG 20
#define HP_CHUNK ((size_t)2 << 20)
static pthread_mutex_t hp_lock = PTHREAD_MUTEX_INITIALIZER;
static void *hp_free[HP_MAX_LOG + 1];
static int hp_on = -1;

static inline unsigned hp_log(size_t n)
{
    unsigned k = 12;
    while (((size_t)1 << k) < n)
        k++;
    return k;
}

static bool hp_enabled(void)
{
    if (__builtin_expect(hp_on < 0, 0)) {
        pthread_mutex_lock(&hp_lock);
        if (hp_on < 0) {
            const char *e = getenv("OFB_CLS_HUGEPAGES");
            hp_on = !(e && *e == '0');
        }
        pthread_mutex_unlock(&hp_lock);
    }
    return hp_on;
}

static void *hp_region(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, HP_CHUNK, bytes))
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);  /* advice only: without THP it is 4 KiB pages */
#endif
    return p;
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
        free(p);
        return;
    }
    pthread_mutex_lock(&hp_lock);
    *(void **)p = hp_free[k];
    hp_free[k] = p;
    pthread_mutex_unlock(&hp_lock);
}

/* free a block of n bytes that came from xalloc (also where c's count is gone) */
static void sized_free(void *p, size_t n)
{
    if (!p)
        return;
    if (n >= HP_MIN && hp_enabled())
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
 * huge-page arena (OFB_CLS_HUGEPAGES=0: malloc, which sanitizer runs use to
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

static inline bool sl_owns(size_t n)
{
    return n < HP_MIN && hp_enabled();
}

/* free what xalloc gave, without counting (destroy) */
static void xfree_quiet(struct ofb_cls *c, void *p, size_t n)
{
    if (!p)
        return;
    if (sl_owns(n)) {
        size_t k = sl_class(n);
        *(void **)p = c->sl_free[k];
        c->sl_free[k] = p;
    } else {
        sized_free(p, n);
    }
}

static void *xalloc(struct ofb_cls *c, size_t n)
{
    void *p = NULL;
    if (n >= HP_MIN && hp_enabled())
        p = hp_alloc(n);
    else if (sl_owns(n))
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

static void xfree(struct ofb_cls *c, void *p, size_t n)
{
    if (!p)
        return;
    atomic_fetch_sub_explicit(&c->bytes, n, memory_order_relaxed);
    xfree_quiet(c, p, n);
}

/* The table hash: the high half of the xor of (masked word i) * K_i over the
 * table mask's non-zero words (i = position among them).  Multiplicative, so
 * the AVX-512 phase 1 computes it 8 tables at a time (vpmullq).  The slot is
 * the low bits, the fingerprint bits 24..30. */
#define HK0 0x9e3779b97f4a7c15ull
#define HK1 0xc2b2ae3d27d4eb4full
static inline uint64_t hk(unsigned i)
{
    return i == 0 ? HK0 : i == 1 ? HK1 : (0x165667b19e3779f9ull * (2 * i + 1)) | 1;
}

/* fold the high half down first: a product's high half ignores nothing, but
 * bits set only at the top of a word (eth_type in bytes 6-7 of a little-endian
 * word) would otherwise reach only the top bits of the hash, never the bucket */
static inline uint64_t fold(uint64_t x)
{
    return x ^ (x >> 32);
}

static inline uint32_t hash2(uint64_t x0, uint64_t x1)
{
    return (uint32_t)(((fold(x0) * HK0) ^ (fold(x1) * HK1)) >> 32);
}

static inline uint32_t hash_words(const uint64_t *kw, const struct tbl *t)
{
    uint64_t acc = 0;
    for (unsigned i = 0; i < t->nw; i++)
        acc ^= fold(kw[t->wi[i]] & t->cm[t->wi[i]]) * hk(i);
    return (uint32_t)(acc >> 32);
}

/* Filter word of a bucket: up to 4 entries of 16 bits, q (7 bits, 0 = empty)
 * << 9 | fingerprint (9 bits, 1..511; 0 = "any key": the entry stands for
 * the 4th and later rules of a bucket that holds more than 4).  Entries are in
 * descending q (blocks are sorted by priority, quantisation is monotone), so
 * the first entry a key may match gives the candidate's upper bound. */
static inline uint32_t fp_of(uint32_t h)
{
    uint32_t f = (h >> 23) & 0x1ff;
    return f ? f : 1;
}

#ifdef OFB_CLS_PROFILE
/* counters for bench/cls_prof.c (scalar phase 1 only counts "any" hits) */
unsigned long ofb_prof_blocks, ofb_prof_bands, ofb_prof_ents, ofb_prof_found, ofb_prof_cands, ofb_prof_any,
    ofb_prof_pass;
#define PROF(x) (x)
#else
#define PROF(x) ((void)0)
#endif
/* q of the first entry of w a key with hash h may match, 0 if none */
static inline uint32_t word_may(uint64_t w, uint32_t h)
{
    uint32_t fp = fp_of(h);
    for (int i = 0; i < 4; i++) {
        uint32_t e = (uint32_t)(w >> (16 * i)) & 0xffff;
        if ((e >> 9) && ((e & 0x1ff) == 0 || (e & 0x1ff) == fp)) {
            PROF(ofb_prof_any += (e & 0x1ff) == 0);
            return e >> 9;
        }
    }
    return 0;
}

static inline uint32_t hash_desc(const uint64_t *kw, const struct pdesc *d, const struct tbl *t)
{
    if (__builtin_expect(d->nw > 2, 0))
        return hash_words(kw, t);
    return hash2(kw[d->w0] & d->m0, kw[d->w1] & d->m1);
}


/* Priority quantisation.  qfine(p) in 0..qlevels-1 (qlevels = 127 * bands)
 * is monotone in p (clamped outside [qmin, qmax]).  Its high part is the band
 * (band 0 = the highest priorities), its low part the 7-bit q a filter entry
 * holds (1..127).  Bands are disjoint ranges in descending order, so a match
 * found in band b outranks every rule of bands > b, equal priorities share a
 * band, and q is monotone within a band: the only place q is compared. */
static inline uint32_t qfine(const struct ofb_cls *c, uint32_t p)
{
    if (p <= c->qmin)
        return 0;
    if (p >= c->qmax)
        return c->qlevels - 1;
    uint64_t f = ((uint64_t)(p - c->qmin) * c->qscale) >> 32;
    return f >= c->qlevels ? c->qlevels - 1 : (uint32_t)f;
}

static inline uint32_t quant(const struct ofb_cls *c, uint32_t p)
{
    return 1 + qfine(c, p) % 127;
}

static inline uint32_t band_of(const struct ofb_cls *c, uint32_t p)
{
    return c->nbands - 1 - qfine(c, p) / 127;
}

static void set_quant(struct ofb_cls *c, uint32_t lo, uint32_t hi)
{
    if (hi <= lo)
        hi = lo + 1;
    c->qmin = lo;
    c->qmax = hi;
    c->qlevels = 127 * c->nbands;
    c->qscale = ((uint64_t)c->qlevels << 32) / ((uint64_t)(hi - lo) + 1);
}

static inline struct ent *ent_at(const struct ofb_cls *c, const void *data, uint32_t i)
{
    return (struct ent *)((const char *)data + (size_t)i * c->es);
}

static inline bool ent_match(const struct ofb_cls *c, const struct ent *e, const uint64_t *kw)
{
    const uint64_t *v = e->w, *m = e->w + c->nwk;
    for (uint32_t i = 0; i < c->nwk; i++)
        if ((kw[i] & m[i]) != v[i])
            return false;
    return true;
}

static inline bool ent_visible(const struct ent *e, uint64_t v)
{
    return e->add_v <= v && v < atomic_load_explicit(&e->del_v, memory_order_relaxed);
}

/* a outranks (p, id)? */
static inline bool better(uint32_t pa, uint32_t ida, uint32_t pb, uint32_t idb)
{
    return pa > pb || (pa == pb && ida < idb);
}

static inline void load_key(const struct ofb_cls *c, const uint8_t *key, uint64_t *kw)
{
    kw[c->nwk - 1] = 0;
    memcpy(kw, key, c->key_len);
}


/* the key's nwk words (the last one's bytes past key_len zero); words past
 * nwk are left alone: every consumer reads nwk words (a 128-byte memset here,
 * inlined as rep stos, was ~10 % of the writer's time per update) */
static void words_of(const struct ofb_cls *c, const uint8_t *bytes, uint64_t *w)
{
    w[c->nwk - 1] = 0;
    memcpy(w, bytes, c->key_len);
}

/* ---------- retire / reclaim (epoch-based, versions are the epochs) ---------- */

/* a retired compiled structure (struct retired.trie != 0), freed by its kind */
static void free_compiled(uint8_t kind, void *p)
{
    if (kind == 2)
        ofb_dtree_free(p);
    else if (kind == 3)
        ofb_kmap_free(p);
    else
        ofb_trie_free(p);
}

static void retire(struct ofb_cls *c, void *p, size_t bytes)
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

static int snap_rebuild(struct ofb_cls *c);

/* the set of live tables changed: rebuild the readers' snapshot now, or at
 * the next publish when inside a batch (a bulk build creates and grows
 * thousands of tables; rebuilding per change was most of its time).  Until
 * then readers use the old snapshot, whose retired tables stay allocated
 * (nothing is reclaimed inside a batch) and hold only published rules. */
static int snap_touch(struct ofb_cls *c)
{
    if (c->in_batch) {
        c->snap_dirty = true;
        return 0;
    }
    c->snap_dirty = false;
    return snap_rebuild(c);
}

static void trie_refresh(struct ofb_cls *c);
static void km_after_publish(struct ofb_cls *c);
static void km_poll(struct ofb_cls *c, bool wait);
static inline bool gf_due(const struct ofb_cls *c);
static int gf_build(struct ofb_cls *c);

static void publish(struct ofb_cls *c)
{
    if (is_trie(c) && c->trie_dirty)
        trie_refresh(c);
    if (gf_due(c)) {
        struct timespec t0, t1;
        bool dbg = getenv("OFB_CLS_GF_DEBUG") != NULL;
        if (dbg)
            clock_gettime(CLOCK_MONOTONIC, &t0);
        gf_build(c);  /* out of memory: the old grouping stays (exact either way) */
        if (dbg) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            fprintf(stderr, "gf regroup at %lu rules: %.1f ms\n", (unsigned long)c->n_rules,
                    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
        }
    }
    if (is_dt(c))
        dt_poll(c, false);
    /* the snapshot goes first: a reader that sees the new version then sees
     * the new snapshot (release/acquire on version).  Out of memory here
     * leaves snap_dirty set and retries at the next publish. */
    if (c->snap_dirty && !snap_rebuild(c))
        c->snap_dirty = false;
    if (c->km_chg) {   /* before the version: a reader that sees this version sees the change's stamp */
        atomic_store_explicit(&c->km_lcv, c->wv, memory_order_relaxed);
        c->km_chg = false;
    }
    atomic_store_explicit(&c->version, c->wv, memory_order_release);
    c->wv++;
    if (is_dt(c))
        dt_maybe_start(c);
    if (c->algo == OFB_CLS_ALGO_KEYMAP)
        km_after_publish(c);
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

static void physical_remove(struct ofb_cls *c, uint32_t id);

void ofb_cls_reclaim(struct ofb_cls *c)
{
    /* the current snapshot may still name tables retired inside a batch:
     * point readers at the live ones before anything is freed (unpublished
     * rules in them are invisible by version) */
    if (c->snap_dirty && !snap_rebuild(c))
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
            physical_remove(c, c->prm[i].id);
            c->rr[c->prm[i].id] = sv;
        } else {
            physical_remove(c, c->prm[i].id);
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
                free_compiled(c->ret[j].trie, c->ret[j].p);
            } else {
                xfree(c, c->ret[j].p, c->ret[j].bytes);
            }
        else
            c->ret[k++] = c->ret[j];
    }
    c->n_ret = k;
    c->updates_since_reclaim = 0;
}

static void after_update(struct ofb_cls *c)
{
    if (c->in_batch)
        return;
    publish(c);
    if (++c->updates_since_reclaim >= 64)
        ofb_cls_reclaim(c);
}

void ofb_cls_synchronize(struct ofb_cls *c)
{
    /* DTREE: a rebuild in flight is adopted now, and the delta merged until it
     * is below its threshold (each publish may start the next rebuild) */
    for (int k = 0; is_dt(c) && !c->in_batch && k < 8; k++) {
        dt_poll(c, true);
        publish(c);
        if (!c->job)
            break;
    }
    /* KEYMAP: a build in flight is adopted now; a stale map rebuilt (at most 3 times) */
    for (int k = 0; c->algo == OFB_CLS_ALGO_KEYMAP && !c->in_batch && k < 3; k++) {
        km_poll(c, true);
        c->km_force = true;
        publish(c);
        c->km_force = false;
        if (!c->kjob)
            break;
    }
    for (int round = 0; round < 3; round++) {
        if (!c->in_batch)
            publish(c);
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
    struct tbl *t = xalloc(c, sizeof(struct tbl));
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
    t->filter = xalloc(c, nb * 8);
    t->bk = xalloc(c, nb * sizeof(void *));
    t->bm = t->bm_words ? xalloc(c, t->bm_words * 8) : NULL;
    if (!t->filter || !t->bk || (t->bm_words && !t->bm)) {
        xfree(c, t->filter, nb * 8);
        xfree(c, t->bk, nb * sizeof(void *));
        xfree(c, (void *)t->bm, t->bm_words * 8);
        xfree(c, t, sizeof(struct tbl));
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
    retire(c, t->filter, nb * 8);
    retire(c, (void *)t->bk, nb * sizeof(void *));
    if (t->bm)
        retire(c, (void *)t->bm, t->bm_words * 8);
    retire(c, t, sizeof(struct tbl));
}

/* historical name: bucket index << 3 (callers shift it back) */
static inline uint32_t fslot(const struct tbl *t, uint32_t h)
{
    return (h & ((1u << t->nb_log) - 1)) << 3;
}

/* key32 bitmap: the bit of a masked 32-bit value */
static inline uint32_t bm_bit(uint32_t x, uint32_t shift)
{
    return (x * BM_K) >> shift;
}

static inline void bm_set(struct tbl *t, const struct ent *e)
{
    if (!t->bm)
        return;
    uint32_t b = bm_bit((uint32_t)(e->w[0] & t->cm[0]), t->bm_shift);
    atomic_fetch_or_explicit(&t->bm[b >> 6], (uint64_t)1 << (b & 63), memory_order_relaxed);
}

/* grouped line filter: the dword (index into w) and bits of masked value x
 * (x = value & cm, xg = value & G) in a lane starting at dword lb */
static inline uint32_t gf_line(uint32_t xg, uint32_t sh)
{
    return (uint32_t)((uint64_t)(uint32_t)(xg * GF_KL) >> sh);  /* sh 32: line 0 */
}

static inline uint32_t gf_word(uint32_t x, uint32_t xg, uint32_t sh, uint32_t lb, uint32_t wl)
{
    return lb + (gf_line(xg, sh) << 4) + (((x * GF_K2) << 5) >> wl);
}

static inline uint32_t gf_pat(uint32_t x, bool k4)
{
    uint32_t p1 = x * GF_K1, p2 = x * GF_K2;
    uint32_t m = 1u << (p1 >> 27) | 1u << ((p1 >> 22) & 31) | 1u << (p2 >> 27);
    return k4 ? m | 1u << ((p1 >> 17) & 31) : m;
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
static int snap_rebuild(struct ofb_cls *c)
{
    uint32_t nb = is_ours(c) ? c->nbands : 1;
    /* multiple of 8: each SoA array must stay 64-byte aligned for the AVX-512 loads */
    size_t slots_max = ((size_t)c->nwt + 16 * (size_t)nb + 7) & ~(size_t)7;
    size_t bytes = sizeof(struct snap) + slots_max * (sizeof(struct pdesc) + sizeof(void *)) +
                   12 * slots_max * sizeof(uint64_t) + 64;
    struct snap *s = xalloc(c, bytes);
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
        xfree(c, s, bytes);
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
        retire(c, old, old->bytes);
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
        struct blk *k = xalloc(c, bytes);
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
        retire(c, k, k->bytes);
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
static int gf_build(struct ofb_cls *c)
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
    if (getenv("OFB_CLS_GF_DEBUG"))  /* measurement: the grouping chosen */
        for (uint32_t k = 0; k < ng; k++)
            fprintf(stderr, "gf group %u band %u: %u tables, G %d bits, 2^%u lines, lane %u dwords\n", k,
                    gf->g[k].band, cnt[k], __builtin_popcount(gf->g[k].G), 32 - gf->g[k].sh, 1u << gf->g[k].wlog);
    gf->bytes = (size_t)words * 4 < 4096 ? 4096 : (size_t)words * 4;
    gf->w = xalloc(c, gf->bytes);
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
        retire(c, c->gf->w, c->gf->bytes);  /* with the snapshot that names it */
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

/* regroup when the rules doubled or as many entries were put as there were
 * rules (churn leaves stale bits; growth overfills the lines) */
static inline bool gf_due(const struct ofb_cls *c)
{
    if (!c->gf_on || c->n_rules < c->gf_min)
        return false;
    /* gf_rules starts at 0; a failed build sets it too, so it is retried only
     * once the rules doubled, not at every publish */
    return c->n_rules > 2 * c->gf_rules || (c->gf && c->gf_puts > c->gf_rules);
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

static int rr_reserve(struct ofb_cls *c, uint32_t more)
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
        if (tbl_grow(c, idx, t->nb_log + 1) || snap_touch(c))
            return -1;
        t = c->wt[idx];
    }
    uint32_t h = ent_hash(c, t, e);
    uint32_t fs = fslot(t, h);
    struct blk *ok = atomic_load_explicit(&t->bk[fs >> 3], memory_order_relaxed);
    uint32_t on = ok ? ok->n : 0;
    size_t bytes = sizeof(struct blk) + (size_t)(on + 1) * c->es;
    struct blk *nk = xalloc(c, bytes);
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
        retire(c, ok, ok->bytes);
    t->n_ent++;
    bool resort = false;
    if (e->prio > t->max_prio) {
        t->max_prio = e->prio;
        resort = c->algo == OFB_CLS_ALGO_TSS;
    }
    if (t->n_ent == 1 || resort)
        if (snap_touch(c))
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

static inline bool tbl_fits(const struct ofb_cls *c, const struct tbl *t, const uint64_t *m)
{
    for (uint32_t i = 0; i < c->nwk; i++)
        if (t->cm[i] & ~m[i])
            return false;
    return true;
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

static uint32_t insert_one(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    if (rr_reserve(c, 1))
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
        struct lin *n = xalloc(c, bytes);
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
            retire(c, o, o->bytes);
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

/* trie algos: make rules lo..hi (ids) invisible forever (their insert failed:
 * the trie could not be rebuilt with them; the published trie never had them) */
static void trie_undo_ids(struct ofb_cls *c, uint32_t lo, uint32_t hi)
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
    retire(c, t, ofb_trie_bytes(t));
    c->ret[c->n_ret - 1].trie = 1;
}

/* trie algos: publish the rules visible at the version about to be published
 * (c->wv).  Incremental (htrie, sptrie, hybrid): the rules inserted since the
 * base was built go into a new delta H-Trie; once the delta outgrows
 * max(TRIE_DELTA_MIN, 2 sqrt(base)), or a delete needs a keep-mode base, the base
 * is rebuilt from all rules (the merge).  LOUDS: one trie.  The new pair is
 * swapped in and the replaced structures retired (add-then-delete).  On
 * failure the published pair stays, trie_failed and err say why. */
static void trie_refresh(struct ofb_cls *c)
{
    struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
    uint32_t n = l ? l->n : 0, k = 0, nd = 0;
    c->trie_failed = true;
    bool incremental = trie_incremental(c);
    uint32_t from = incremental && c->base ? tlin_after(c, l, c->base_last_id) : 0;  /* the delta's rules */
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
    struct tpair *np = xalloc(c, sizeof(*np));
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
        retire(c, old, sizeof(*old));
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

const char *ofb_cls_last_error(const struct ofb_cls *c)
{
    return c->err[0] ? c->err : c->km_err[0] ? c->km_err : NULL;
}

/* LOUDS is read-only: one build_bulk into an empty classifier, then no
 * update.  Returns true (and sets err) when `what` must be refused. */
static bool louds_refuses(struct ofb_cls *c, const char *what)
{
    if (c->algo != OFB_CLS_ALGO_LOUDS)
        return false;
    snprintf(c->err, sizeof(c->err), "louds: %s refused: the LOUDS trie is read-only (build it once with "
             "ofb_cls_build_bulk into an empty classifier; use hybrid for a trie that takes updates)", what);
    return true;
}

uint32_t ofb_cls_insert(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    if (louds_refuses(c, "insert"))
        return 0;
    uint32_t id = insert_one(c, r);
    if (!id && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s: insert: out of memory", ofb_cls_algo_name(c->algo));
    if (id) {
        after_update(c);
        if (is_trie(c) && !c->in_batch && c->trie_failed) {
            trie_undo_ids(c, id, id);
            return 0;
        }
    }
    return id;
}

/* ---------- delete ---------- */

/* find the visible entry with this id; returns it (inside the current block) */
static uint32_t tlin_after(const struct ofb_cls *c, const struct lin *l, uint32_t id)
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

static struct ent *find_ent(struct ofb_cls *c, uint32_t id, struct blk **blk_out, uint32_t *pos_out)
{
    if (is_trie(c)) {
        struct lin *l = atomic_load_explicit(&c->lin, memory_order_relaxed);
        uint32_t i = id ? tlin_after(c, l, id - 1) : 0;
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

static int delete_one(struct ofb_cls *c, uint32_t id)
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
    struct ent *e = find_ent(c, id, &k, &pos);
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
static void physical_remove(struct ofb_cls *c, uint32_t id)
{
    struct blk *k;
    uint32_t pos;
    struct ent *e = find_ent(c, id, &k, &pos);
    uint32_t tidx = c->rr[id].tidx;
    c->rr[id].tidx = UINT32_MAX;
    if (!e || is_trie(c))
        return;  /* tries: the entry stays, invisible, until the next merge compacts the list */
    if (uses_lin(c)) {
        struct lin *o = atomic_load_explicit(&c->lin, memory_order_relaxed);
        size_t bytes = sizeof(struct lin) + (size_t)(o->n - 1) * c->es;
        struct lin *n = xalloc(c, bytes);
        if (!n)
            return; /* stays as an invisible entry */
        n->n = o->n - 1;
        n->bytes = bytes;
        memcpy(n->data, o->data, (size_t)pos * c->es);
        memcpy(ent_at(c, n->data, pos), ent_at(c, o->data, pos + 1), (size_t)(o->n - pos - 1) * c->es);
        atomic_store_explicit(&c->lin, n, memory_order_release);
        retire(c, o, o->bytes);
        return;
    }
    struct tbl *t = c->wt[tidx];
    uint32_t fs = fslot(t, c->rr[id].h);
    struct blk *nk = NULL;
    if (k->n > 1) {
        size_t bytes = sizeof(struct blk) + (size_t)(k->n - 1) * c->es;
        nk = xalloc(c, bytes);
        if (!nk)
            return;
        nk->n = k->n - 1;
        nk->bytes = (uint32_t)bytes;
        memcpy(nk->data, k->data, (size_t)pos * c->es);
        memcpy(ent_at(c, nk->data, pos), ent_at(c, k->data, pos + 1), (size_t)(k->n - pos - 1) * c->es);
    }
    atomic_store_explicit(&t->bk[fs >> 3], nk, memory_order_release);
    atomic_store_explicit((_Atomic uint64_t *)&t->filter[fs >> 3], bucket_filter(c, t, nk), memory_order_release);
    retire(c, k, k->bytes);
    t->n_ent--;
    if (t->n_ent == 0)
        snap_touch(c);
}

int ofb_cls_delete_id(struct ofb_cls *c, uint32_t id)
{
    if (louds_refuses(c, "delete"))
        return -1;
    if (delete_one(c, id))
        return -1;
    after_update(c);
    return 0;
}

uint32_t ofb_cls_delete(struct ofb_cls *c, const struct ofb_cls_rule *r)
{
    if (louds_refuses(c, "delete"))
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
    delete_one(c, best);
    after_update(c);
    return best;
}

void ofb_cls_batch_begin(struct ofb_cls *c)
{
    c->in_batch = true;
}

int ofb_cls_batch_commit(struct ofb_cls *c)
{
    c->in_batch = false;
    publish(c);
    ofb_cls_reclaim(c);
    return is_trie(c) && c->trie_failed ? -1 : 0;
}

static int cmp_ent(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    return better(x->prio, x->id, y->prio, y->id) ? -1 : better(y->prio, y->id, x->prio, x->id) ? 1 : 0;
}

/* LINEAR: append everything, sort once, publish one array.  Tries: append in
 * id order to the writer's list. */
static int bulk_linear(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids)
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
    struct lin *l = xalloc(c, bytes);
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
        retire(c, o, o->bytes);
    return 0;
}

/* ---------- DTREE: compiled tree + OURS tables as the delta ---------- */

static void retire_dtree(struct ofb_cls *c, struct ofb_dtree *t)
{
    if (!t)
        return;
    retire(c, t, ofb_dtree_bytes(t));
    c->ret[c->n_ret - 1].trie = 2;
}

static unsigned dt_flags(const struct ofb_cls *c)
{
    return (c->simd != 0 ? OFB_DTREE_SIMD : 0) |   /* SIMD_SCALAR = 0 */
           (c->algo == OFB_CLS_ALGO_DFA ? OFB_DTREE_DFA : 0);
}

/* make t what readers walk (the writer holds no other reference to the old) */
static void dt_publish(struct ofb_cls *c, struct ofb_dtree *t, uint64_t min_v)
{
    ofb_dtree_set_min_v(t, min_v);
    struct ofb_dtree *old = atomic_load_explicit(&c->dt, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes, ofb_dtree_bytes(t), memory_order_relaxed);
    atomic_store_explicit(&c->dt, t, memory_order_release);
    retire_dtree(c, old);
}

/* bulk build into an empty DTREE classifier: the tree at once, no delta */
static int dt_bulk(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids)
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
    bool later = (fl & OFB_DTREE_DFA) && !c->dfa_bulk_sync;
    struct ofb_dtree *t = ofb_dtree_build(c->key_len, dr, n, later ? fl & ~OFB_DTREE_DFA : fl, c->err, sizeof(c->err));
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
    publish(c);
    ofb_cls_reclaim(c);
    if (later)
        dt_start(c, true);
    return 0;
}

static void *dt_job_run(void *arg)
{
    struct dtjob *j = arg;
    /* the old tree's rules still live: a kill after the snapshot may or may
     * not be seen here; the writer's kill log applies it to the new tree
     * either way (a kill of a rule left out is a no-op) */
    for (uint32_t r = 0; r < ofb_dtree_rules(j->old); r++) {
        struct ofb_dtree_rule x;
        ofb_dtree_rule_at(j->old, r, &x);
        if (x.del_v == V_INF)
            j->rules[j->n++] = x;
    }
    j->out = ofb_dtree_build(j->key_len, j->rules, j->n, j->flags, j->err, sizeof(j->err));
    atomic_store_explicit(&j->done, 1, memory_order_release);
    return NULL;
}

static void dt_job_free(struct dtjob *j)
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
static void dt_maybe_start(struct ofb_cls *c)
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
            dt_job_free(j);
        return;  /* no memory: the delta keeps working, retried at the next publish */
    }
    j->key_len = c->key_len;
    j->flags = dt_flags(c);
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
    if (c->dt_sync || pthread_create(&j->th, NULL, dt_job_run, j)) {
        dt_job_run(j);
        j->th = 0;
        dt_poll(c, true);
    }
}

/* Adopt a finished rebuild (wait: block until it finishes): apply the deletes
 * logged since its snapshot, take the moved delta rules out of the tables (at
 * the version being written, so readers of older versions still find them
 * there: they may use either tree), publish the tree. */
static void dt_poll(struct ofb_cls *c, bool wait)
{
    struct dtjob *j = c->job;
    if (!j || (!wait && !atomic_load_explicit(&j->done, memory_order_acquire)))
        return;
    if (j->th)
        pthread_join(j->th, NULL);
    c->job = NULL;
    struct ofb_dtree *t = j->out;
    if (!t) {
        snprintf(c->err, sizeof(c->err), "dtree: background rebuild failed (the delta keeps the rules): %s", j->err);
        dt_job_free(j);
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
        struct ent *e = find_ent(c, id, &k, &pos);
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
    dt_job_free(j);
}

/* Auto band count for a bulk build into an empty classifier.  A band pays
 * off when a key usually finds its answer in band 0, so that the other bands'
 * filters are rarely read: with lam = the expected number of band-0 rules a
 * uniform random key matches (sum of 2^-popcount(mask)), P(answer in band 0)
 * ~ 1 - e^-lam.  Take the most bands that keep lam >= BAND_MIN_LAMBDA, and none
 * while the whole filter fits in L2 anyway (n < BAND_MIN_RULES). */
#define BAND_MIN_RULES (1u << 18)
#define BAND_MIN_LAMBDA 2.0
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

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *km_job_run(void *arg)
{
    struct kmjob *j = arg;
    j->out = ofb_kmap_build(j->key_len, j->rules, j->n, j->max_bytes, &j->cancel, &j->over, j->err,
                            sizeof(j->err));
    j->t1 = mono_s();
    atomic_store_explicit(&j->done, 1, memory_order_release);
    return NULL;
}

static void km_retire(struct ofb_cls *c, struct ofb_kmap *m)
{
    if (!m)
        return;
    retire(c, m, ofb_kmap_bytes(m));
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
    j->t0 = mono_s();
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
    if (c->km_sync || pthread_create(&j->th, NULL, km_job_run, j)) {
        j->th = 0;
        km_job_run(j);
        km_poll(c, true);
    }
}

/* Adopt a finished build (wait: block until it finishes) when the rule set
 * is still the one it was built from; else drop it (the next publish starts
 * another). */
static void km_poll(struct ofb_cls *c, bool wait)
{
    struct kmjob *j = c->kjob;
    if (!j || (!wait && !atomic_load_explicit(&j->done, memory_order_acquire)))
        return;
    if (j->th)
        pthread_join(j->th, NULL);
    c->km_next = j->t1 + (j->t1 - j->t0);
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
static void km_after_publish(struct ofb_cls *c)
{
    km_poll(c, false);
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

/* the map, when it answers for a reader at version v: it was built from the
 * set at ofb_kmap_v(m) <= v and no change was published since */
static inline const struct ofb_kmap *km_usable(const struct ofb_cls *c, uint64_t v)
{
    const struct ofb_kmap *m = atomic_load_explicit(&c->km, memory_order_acquire);
    if (!m)
        return NULL;
    uint64_t mv = ofb_kmap_v(m);
    return mv <= v && atomic_load_explicit(&c->km_lcv, memory_order_acquire) <= mv ? m : NULL;
}

static uint32_t auto_bands(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n)
{
    const char *env = getenv("OFB_CLS_BANDS");
    if (env && *env) {
        uint32_t want = (uint32_t)atoi(env), nb = 1;
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
    if ((c->n_ids || c->in_batch) && louds_refuses(c, "a second build (or one inside a batch)")) {
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
    if (rr_reserve(c, (uint32_t)n))
        return -1;
    bool first_km = c->algo == OFB_CLS_ALGO_KEYMAP && c->n_ids == 0 && n && !c->in_batch;
    if (is_dt(c) && c->n_ids == 0 && n && !c->in_batch)
        return dt_bulk(c, rules, n, ids);
    c->in_batch = true;
    int rc = 0;
    if (uses_lin(c))
        rc = bulk_linear(c, rules, n, ids);
    for (size_t i = 0; !uses_lin(c) && i < n; i++) {
        uint32_t id = insert_one(c, &rules[i]);
        if (ids)
            ids[i] = id;
        if (!id) {
            rc = -1;
            break;
        }
    }
    c->in_batch = was;
    if (!was) {
        publish(c);
        if (is_trie(c) && c->trie_failed && rc == 0 && n) {
            trie_undo_ids(c, ids ? ids[0] : c->n_ids - (uint32_t)n + 1, c->n_ids);
            if (ids)
                memset(ids, 0, n * sizeof(*ids));
            rc = -1;
        }
        ofb_cls_reclaim(c);
    }
    if (first_km && rc == 0) {   /* the first map before build_bulk returns (publish started it) */
        km_poll(c, true);
        if (c->auto_algo && !atomic_load_explicit(&c->km, memory_order_relaxed) && !any_reader(c))
            c->algo = OFB_CLS_ALGO_OURS;   /* no map (c->km_err says why): OURS answers, as OURS */
    }
    if (rc && !c->err[0])
        snprintf(c->err, sizeof(c->err), "%s: bulk build of %zu rules: out of memory", ofb_cls_algo_name(c->algo), n);
    return rc;
}

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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* grouped line filter with AVX2: 8 grouped slots per step (two vpmulld of
 * the masked key, one of the group-masked key for the line, vpsrlvd,
 * vpgatherdd of the 8 dwords: a group's slots share its cache line) */
__attribute__((target("avx2,bmi")))
static uint32_t sweep_gf_avx2(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                              const uint64_t *kw, struct bm_pass *pl, uint32_t *np_out, uint32_t nc,
                              struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t np = *np_out;
    const __m256i kv = _mm256_set1_epi32((int)(uint32_t)kw[0]);
    const __m256i K1 = _mm256_set1_epi32((int)GF_K1), K2 = _mm256_set1_epi32((int)GF_K2),
                  KL = _mm256_set1_epi32((int)GF_KL);
    const __m256i one = _mm256_set1_epi32(1), c31 = _mm256_set1_epi32(31), zero = _mm256_setzero_si256();
    const bool k4 = s->gf_k4;
    const int *gw = (const int *)s->gw;
    for (uint32_t b = lo; b < hi; b += 8) {
        __m256i x = _mm256_and_si256(kv, _mm256_loadu_si256((const __m256i *)(s->scm + b)));
        __m256i xg = _mm256_and_si256(kv, _mm256_loadu_si256((const __m256i *)(s->sg + b)));
        __m256i p1 = _mm256_mullo_epi32(x, K1), p2 = _mm256_mullo_epi32(x, K2);
        __m256i line = _mm256_srlv_epi32(_mm256_mullo_epi32(xg, KL),
                                         _mm256_loadu_si256((const __m256i *)(s->sgs + b)));
        __m256i sel = _mm256_srlv_epi32(_mm256_slli_epi32(p2, 5), _mm256_loadu_si256((const __m256i *)(s->swl + b)));
        __m256i idx = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(s->slb + b)),
                                       _mm256_add_epi32(_mm256_slli_epi32(line, 4), sel));
        __m256i w = _mm256_i32gather_epi32(gw, idx, 4);
        __m256i pat = _mm256_or_si256(_mm256_sllv_epi32(one, _mm256_srli_epi32(p1, 27)),
                                      _mm256_sllv_epi32(one, _mm256_and_si256(_mm256_srli_epi32(p1, 22), c31)));
        pat = _mm256_or_si256(pat, _mm256_sllv_epi32(one, _mm256_srli_epi32(p2, 27)));
        if (k4)
            pat = _mm256_or_si256(pat, _mm256_sllv_epi32(one, _mm256_and_si256(_mm256_srli_epi32(p1, 17), c31)));
        __m256i ok = _mm256_cmpeq_epi32(_mm256_andnot_si256(w, pat), zero);
        uint32_t pm = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(ok));
        nc = bm_pass_step(c, s, b, pm, kw, pl, &np, nc, cd, v, bp, bid, bh);
    }
    *np_out = np;
    return nc;
}
/* key32 phase 1 with AVX2: 8 tables per step (vpand, vpmulld, vpsrlvd, two
 * vpgatherqq of bitmap words, bit test); the few tables that pass read their
 * filter word (bm_pass) */
__attribute__((target("avx2,bmi")))
static uint32_t sweep_bm_avx2(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                              const uint64_t *kw, struct bm_pass *pl, uint32_t *np_out, uint32_t nc,
                              struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t np = *np_out;
    const __m256i kv = _mm256_set1_epi32((int)(uint32_t)kw[0]), K = _mm256_set1_epi32((int)BM_K);
    const __m256i c63 = _mm256_set1_epi64x(63);
    for (uint32_t b = lo; b < hi; b += 8) {
        __m256i x = _mm256_and_si256(kv, _mm256_loadu_si256((const __m256i *)(s->scm + b)));
        __m256i bit = _mm256_srlv_epi32(_mm256_mullo_epi32(x, K), _mm256_loadu_si256((const __m256i *)(s->ssh + b)));
        __m256i blo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(bit));
        __m256i bhi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(bit, 1));
        __m256i alo = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)(s->sbm + b)),
                                       _mm256_slli_epi64(_mm256_srli_epi64(blo, 6), 3));
        __m256i ahi = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)(s->sbm + b + 4)),
                                       _mm256_slli_epi64(_mm256_srli_epi64(bhi, 6), 3));
        __m256i wlo = _mm256_i64gather_epi64((const long long *)0, alo, 1);
        __m256i whi = _mm256_i64gather_epi64((const long long *)0, ahi, 1);
        /* the tested bit to the sign bit of its lane */
        wlo = _mm256_slli_epi64(_mm256_srlv_epi64(wlo, _mm256_and_si256(blo, c63)), 63);
        whi = _mm256_slli_epi64(_mm256_srlv_epi64(whi, _mm256_and_si256(bhi, c63)), 63);
        uint32_t pm = (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(wlo)) |
                      (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(whi)) << 4;
        nc = bm_pass_step(c, s, b, pm, kw, pl, &np, nc, cd, v, bp, bid, bh);
    }
    *np_out = np;
    return nc;
}

/* Phase 1 for 8 tables per step: gather the two key words of each table
 * (vpermt2q), mask, multiply-hash (vpmullq), gather the 16-bit filter slots
 * (vpgatherqd), test q != 0 and fingerprint in-vector; only the few
 * candidates leave the vector unit. */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
static uint32_t collect_avx512(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                               const uint64_t *kw,
                               struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t nc = 0;
    const __m512i klo = _mm512_loadu_si512((const void *)kw);
    const __m512i khi = _mm512_loadu_si512((const void *)(kw + 8));
    const __m512i k0 = _mm512_set1_epi64((long long)HK0), k1 = _mm512_set1_epi64((long long)HK1);
    const __m512i c1ff = _mm512_set1_epi64(0x1ff), one = _mm512_set1_epi64(1);
    const __m512i rep4 = _mm512_set1_epi64(0x0001000100010001ll);
    const __m512i m1ff = _mm512_set1_epi16(0x1ff), mq = _mm512_set1_epi16((short)0xfe00);
#define AVX_CHUNK 32
    uint32_t mk[AVX_CHUNK];
    uint64_t ea[AVX_CHUNK * 8];
    uint32_t ha[AVX_CHUNK * 8];
    uint32_t b0 = lo;
    for (uint32_t b = lo; b < hi; b += 8) {
        __m512i x0 = _mm512_permutex2var_epi64(klo, _mm512_load_si512((const void *)(s->sw0 + b)), khi);
        __m512i x1 = _mm512_permutex2var_epi64(klo, _mm512_load_si512((const void *)(s->sw1 + b)), khi);
        x0 = _mm512_and_si512(x0, _mm512_load_si512((const void *)(s->sm0 + b)));
        x1 = _mm512_and_si512(x1, _mm512_load_si512((const void *)(s->sm1 + b)));
        x0 = _mm512_xor_si512(x0, _mm512_srli_epi64(x0, 32));
        x1 = _mm512_xor_si512(x1, _mm512_srli_epi64(x1, 32));
        __m512i acc = _mm512_xor_si512(_mm512_mullo_epi64(x0, k0), _mm512_mullo_epi64(x1, k1));
        __m512i h64 = _mm512_srli_epi64(acc, 32);
        __m512i slot = _mm512_and_si512(h64, _mm512_load_si512((const void *)(s->sfm + b)));
        __m512i addr = _mm512_add_epi64(_mm512_load_si512((const void *)(s->sfb + b)), _mm512_slli_epi64(slot, 3));
        __m512i w = _mm512_i64gather_epi64(addr, (const void *)0, 1);
        /* fingerprint per table, copied into its four 16-bit entries */
        __m512i fp = _mm512_and_si512(_mm512_srli_epi64(h64, 23), c1ff);
        fp = _mm512_max_epu64(fp, one);
        fp = _mm512_mullo_epi64(fp, rep4);
        __m512i efp = _mm512_and_si512(w, m1ff);
        __mmask32 has_q = _mm512_test_epi16_mask(w, mq);
        __mmask32 fp_ok = _mm512_cmpeq_epi16_mask(efp, fp) | _mm512_testn_epi16_mask(efp, efp);
        __m256i h = _mm512_cvtepi64_epi32(h64);
        /* no branch on the gathered data inside the loop: a mispredicted
         * "has candidates" branch serialised the gathers */
        unsigned j = (b - b0) >> 3;
        mk[j] = has_q & fp_ok;
        _mm512_storeu_si512((void *)&ea[j * 8], w);
        _mm256_storeu_si256((__m256i *)&ha[j * 8], h);
        if (j + 1 < AVX_CHUNK && b + 8 < hi)
            continue;
        for (unsigned g = 0; g <= j; g++) {
            uint32_t mask = mk[g];
            while (mask) {
                unsigned lane = (unsigned)__builtin_ctz(mask), i = lane >> 2;
                mask &= ~(0xfu << (4 * i));   /* first matching entry of table i */
                uint32_t q = (uint32_t)(ea[g * 8 + i] >> (16 * (lane & 3) + 9)) & 0x7f;
                cd[nc++] = (struct cand){ q, ha[g * 8 + i], s->t[b0 + g * 8 + i] };
                if (unlikely(nc == CAND_MAX)) {
                    drain(c, cd, nc, kw, v, bp, bid, bh);
                    nc = 0;
                }
            }
        }
        b0 = b + 8;
    }
    return nc;
}

/* 64-bit lanes: bits 32..63 of (x * k), k given as its low (klo) and high (khi)
 * halves in the low dwords; AVX2 has no vpmullq: three vpmuludq */
__attribute__((target("avx2")))
static inline __m256i mulhi_lo64_avx2(__m256i x, __m256i klo, __m256i khi)
{
    __m256i p = _mm256_mul_epu32(x, klo);                      /* xlo * klo, 64-bit */
    __m256i q = _mm256_add_epi64(_mm256_mul_epu32(x, khi),     /* xlo * khi */
                                 _mm256_mul_epu32(_mm256_srli_epi64(x, 32), klo)); /* xhi * klo */
    /* low dword of each lane: (p >> 32) + q, mod 2^32 */
    return _mm256_and_si256(_mm256_add_epi64(_mm256_srli_epi64(p, 32), q), _mm256_set1_epi64x(0xffffffffll));
}

/* Phase 1 for 4 tables per step with AVX2: the same hash, slots and filter
 * test as collect_avx512 (results are identical).  Key words come from a
 * vpermd of the first 4 key words when the key has <= 4 words, else a gather
 * from the key; the second word's multiply is skipped when every table
 * hashes a single word (NTT: 4-byte keys). */
__attribute__((target("avx2,bmi")))
static uint32_t collect_avx2(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                             const uint64_t *kw,
                             struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t nc = 0;
    const bool perm = c->nwk <= 4, one = s->one_word;
    uint64_t kbuf[4] = { 0, 0, 0, 0 };
    memcpy(kbuf, kw, (c->nwk < 4 ? c->nwk : 4) * 8);
    const __m256i kv = _mm256_loadu_si256((const __m256i *)kbuf);
    const __m256i k0lo = _mm256_set1_epi64x((long long)(HK0 & 0xffffffffu)),
                  k0hi = _mm256_set1_epi64x((long long)(HK0 >> 32));
    const __m256i k1lo = _mm256_set1_epi64x((long long)(HK1 & 0xffffffffu)),
                  k1hi = _mm256_set1_epi64x((long long)(HK1 >> 32));
    const __m256i c1ff = _mm256_set1_epi64x(0x1ff), one64 = _mm256_set1_epi64x(1);
    const __m256i m1ff = _mm256_set1_epi16(0x1ff), mq = _mm256_set1_epi16((short)0xfe00);
    const __m256i zero = _mm256_setzero_si256();
#define AVX2_CHUNK 64
    uint32_t mk[AVX2_CHUNK];
    uint64_t ea[AVX2_CHUNK * 4];
    uint64_t ha[AVX2_CHUNK * 4];
    uint32_t b0 = lo;
    for (uint32_t b = lo; b < hi; b += 4) {
        __m256i x0, x1 = zero;
        if (perm) {
            x0 = _mm256_permutevar8x32_epi32(kv, _mm256_load_si256((const __m256i *)(s->sp0 + b)));
            if (!one)
                x1 = _mm256_permutevar8x32_epi32(kv, _mm256_load_si256((const __m256i *)(s->sp1 + b)));
        } else {
            x0 = _mm256_i64gather_epi64((const long long *)kw, _mm256_load_si256((const __m256i *)(s->sw0 + b)), 8);
            if (!one)
                x1 = _mm256_i64gather_epi64((const long long *)kw, _mm256_load_si256((const __m256i *)(s->sw1 + b)), 8);
        }
        x0 = _mm256_and_si256(x0, _mm256_load_si256((const __m256i *)(s->sm0 + b)));
        x0 = _mm256_xor_si256(x0, _mm256_srli_epi64(x0, 32));
        __m256i h64 = mulhi_lo64_avx2(x0, k0lo, k0hi);
        if (!one) {
            x1 = _mm256_and_si256(x1, _mm256_load_si256((const __m256i *)(s->sm1 + b)));
            x1 = _mm256_xor_si256(x1, _mm256_srli_epi64(x1, 32));
            h64 = _mm256_xor_si256(h64, mulhi_lo64_avx2(x1, k1lo, k1hi));
        }
        __m256i slot = _mm256_and_si256(h64, _mm256_load_si256((const __m256i *)(s->sfm + b)));
        __m256i addr = _mm256_add_epi64(_mm256_load_si256((const __m256i *)(s->sfb + b)), _mm256_slli_epi64(slot, 3));
        __m256i w = _mm256_i64gather_epi64((const long long *)0, addr, 1);
        __m256i fp = _mm256_and_si256(_mm256_srli_epi64(h64, 23), c1ff);
        fp = _mm256_max_epi32(fp, one64);   /* 0 -> 1; upper dwords stay 0 */
        fp = _mm256_or_si256(fp, _mm256_slli_epi64(fp, 16));
        fp = _mm256_or_si256(fp, _mm256_slli_epi64(fp, 32));
        __m256i efp = _mm256_and_si256(w, m1ff);
        __m256i no_q = _mm256_cmpeq_epi16(_mm256_and_si256(w, mq), zero);
        __m256i ok = _mm256_or_si256(_mm256_cmpeq_epi16(efp, fp), _mm256_cmpeq_epi16(efp, zero));
        /* two mask bits per 16-bit entry; keep the even ones */
        uint32_t j = (b - b0) >> 2;
        mk[j] = (uint32_t)_mm256_movemask_epi8(_mm256_andnot_si256(no_q, ok)) & 0x55555555u;
        _mm256_storeu_si256((__m256i *)&ea[j * 4], w);
        _mm256_storeu_si256((__m256i *)&ha[j * 4], h64);
        if (j + 1 < AVX2_CHUNK && b + 4 < hi)
            continue;
        for (unsigned g = 0; g <= j; g++) {
            uint32_t mask = mk[g];
            while (mask) {
                unsigned bit = (unsigned)__builtin_ctz(mask), lane = bit >> 1, i = lane >> 2;
                mask &= ~(0xffu << (8 * i));   /* first matching entry of table i */
                uint32_t q = (uint32_t)(ea[g * 4 + i] >> (16 * (lane & 3) + 9)) & 0x7f;
                cd[nc++] = (struct cand){ q, (uint32_t)ha[g * 4 + i], s->t[b0 + g * 4 + i] };
                if (unlikely(nc == CAND_MAX)) {
                    drain(c, cd, nc, kw, v, bp, bid, bh);
                    nc = 0;
                }
            }
        }
        b0 = b + 4;
    }
    return nc;
}
#endif

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

/* OFB_CLS_SIMD=scalar|avx2|avx512|auto (default auto: the best the CPU has);
 * OFB_CLS_NO_SIMD=1 (older switch) = scalar.  -1 with a message when the
 * variable names an unknown path or one this CPU lacks. */
static int simd_choose(void)
{
    const char *e = getenv("OFB_CLS_SIMD");
    const char *no = getenv("OFB_CLS_NO_SIMD");
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
    if (no && *no && *no != '0')
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
            nc = sweep_gf_avx2(c, s, lo, ge, kw, pl, np, nc, cd, v, bp, bid, bh);
        return ge < hi ? sweep_bm_avx2(c, s, ge, hi, kw, pl, np, nc, cd, v, bp, bid, bh) : nc;
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
        return collect_avx512(c, s, s->bs[b], s->bs[b + 1], kw, cd, v, bp, bid, bh);
    if (c->simd == SIMD_AVX2 && s->simd_ok)
        return collect_avx2(c, s, s->bs[b], s->bs[b + 1], kw, cd, v, bp, bid, bh);
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
    int simd = simd_choose();
    if (simd < 0) {
        free(c);
        errno = ENOTSUP;
        return NULL;
    }
    c->simd = (uint8_t)simd;
    {
        const char *e = getenv("OFB_CLS_KEY32");  /* 0 = no key32 bitmap (measurement) */
        c->key32 = is_ours(c) && c->key_len <= 4 && c->simd != SIMD_AVX512 &&
                   !(e && !strcmp(e, "0"));
        /* grouped line filter (measurement knobs; defaults measured best) */
        const char *g = getenv("OFB_CLS_GF"), *gk = getenv("OFB_CLS_GF_K");
        const char *gm = getenv("OFB_CLS_GF_MAXG"), *gb = getenv("OFB_CLS_GF_BPE"), *gs = getenv("OFB_CLS_GF_SLACK");
        const char *gn = getenv("OFB_CLS_GF_MIN");  /* tests: group from this many rules */
        c->gf_on = c->key32 && !(g && !strcmp(g, "0"));
        c->gf_k4 = gk && atoi(gk) == 4;
        c->gf_maxg = gm && atoi(gm) >= 1 && atoi(gm) <= GF_MAXG ? (uint32_t)atoi(gm) : 4;
        c->gf_bpe = gb && atoi(gb) >= 1 && atoi(gb) <= 256 ? (uint32_t)atoi(gb) : 16;
        c->gf_slack = gs && atoi(gs) >= 0 && atoi(gs) <= 16 ? (uint32_t)atoi(gs) : 2;
        c->gf_min = gn && atoi(gn) >= 1 ? (uint32_t)atoi(gn)
                    : c->simd == SIMD_SCALAR ? GF_MIN_RULES_SCALAR : GF_MIN_RULES;
    }
    {
        const char *e = getenv("OFB_CLS_DTREE_DELTA");  /* tests: merge after this many delta rules */
        c->dt_delta_min = e && atoi(e) > 0 ? (uint32_t)atoi(e) : DT_DELTA_MIN;
        e = getenv("OFB_CLS_DTREE_SYNC");
        c->dt_sync = e && !strcmp(e, "1");
        e = getenv("OFB_CLS_DFA_BULK_SYNC");   /* DFA: a bulk build also builds the DFA before it returns */
        c->dfa_bulk_sync = e && !strcmp(e, "1");
        e = getenv("OFB_CLS_KEYMAP_SYNC");     /* KEYMAP: rebuild the map on the writer at each publish (tests) */
        c->km_sync = e && !strcmp(e, "1");
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
        if (c->job->th)
            pthread_join(c->job->th, NULL);
        ofb_dtree_free(c->job->out);
        dt_job_free(c->job);
    }
    ofb_dtree_free(atomic_load(&c->dt));
    if (c->kjob) {
        atomic_store(&c->kjob->cancel, 1);
        if (c->kjob->th)
            pthread_join(c->kjob->th, NULL);
        ofb_kmap_free(c->kjob->out);
        free(c->kjob->rules);
        free(c->kjob);
    }
    ofb_kmap_free(atomic_load(&c->km));
    free(c->klog);
    for (size_t j = 0; j < c->n_ret; j++)
        if (c->ret[j].trie)
            free_compiled(c->ret[j].trie, c->ret[j].p);
        else
            xfree_quiet(c, c->ret[j].p, c->ret[j].bytes);
    for (uint32_t i = 0; i < c->nwt; i++) {
        struct tbl *t = c->wt[i];
        size_t nb = (size_t)1 << t->nb_log;
        for (size_t b = 0; b < nb; b++)
        {
            struct blk *k = atomic_load_explicit(&t->bk[b], memory_order_relaxed);
            if (k)
                xfree_quiet(c, k, k->bytes);
        }
        xfree_quiet(c, t->filter, nb * 8);
        xfree_quiet(c, (void *)t->bk, nb * sizeof(void *));
        if (t->bm)
            xfree_quiet(c, (void *)t->bm, t->bm_words * 8);
        xfree_quiet(c, t, sizeof(struct tbl));
    }
    {
        struct snap *sn = atomic_load(&c->snap);
        struct lin *l = atomic_load(&c->lin);
        if (sn)
            xfree_quiet(c, sn, sn->bytes);
        if (l)
            xfree_quiet(c, l, l->bytes);
    }
    if (c->gf) {
        xfree_quiet(c, c->gf->w, c->gf->bytes);
        free(c->gf);
    }
    xfree_quiet(c, atomic_load(&c->tp), sizeof(struct tpair));
    ofb_trie_free(c->base);
    ofb_trie_free(c->delta);
    free(c->wt);
    for (uint32_t b = 0; b < OFB_CLS_MAX_BANDS; b++)
        free(c->btl[b]);
    free(c->tmap);
    free(c->rr);
    free(c->ret);
    free(c->prm);
    for (size_t i = 0; i < c->n_sl_chunks; i++)
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
