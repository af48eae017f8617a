/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled decision tree (HyperSplit-like, CutSplit-like partition): see dtree.h. */
#include "dtree.h"
#include "partition.h"
#include "hugepage.h"
#include "classifier.h"
#include "dfa.h"
#include "dfa_flat.h"

#define DFLAT_BYTES_PER_RULE 1024u   /* the lockstep DFA's budget (full nodes from 5 intervals if within; 2048 before its nodes were shared) */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#ifndef DT_LEAF
#define DT_LEAF 16           /* stop splitting at this many rules (8: 3.6x the copies on cb_fw, README) */
#endif
#define DT_MAX_DEPTH 48
#define DT_MAX_TREES 4
#define DT_MAX_COPIES 64     /* leaf entries per rule, on average: past it the remaining nodes become leaves */
#ifndef DT_LANES
#define DT_LANES 16          /* keys walked interleaved by the batch lookup (<= 32) */
#endif
#define DT_LEAF_BIT 0x80000000u
#define DT_MAXW 20           /* key words: >= esw (round16(128 + 2) / 8) */
#define OFB_DT_KL_MAX_ANY 128
#define V_INF UINT64_MAX
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* 8-byte slot: inner (dim, point, a = first of two adjacent children) or
 * leaf (flags & DT_LEAF_BIT, a = first entry, n = entries) */
struct slot {
    uint32_t a;
    uint8_t dim, point;
    uint32_t n;  /* leaf: DT_LEAF_BIT | count */
};

struct rinfo {
    uint32_t prio, id;
    uint64_t handle;
    uint64_t add_v;
    _Atomic uint64_t del_v;
};

struct idrank { uint32_t id, rank; };

struct ofb_dtree {
    uint32_t key_len, nwk, n;
    uint32_t ntrees;
    uint32_t root[DT_MAX_TREES];     /* slot index of each tree's root */
    uint32_t tmin[DT_MAX_TREES];     /* best rank in each tree (trees sorted by it) */
    struct slot *s;
    uint32_t ns, cap_s;
    uint32_t *er;                    /* entry ranks (build: binary leaves' rules) */
    uint64_t ne, cap_e;
    struct rinfo *ri;                /* by rank */
    struct idrank *ir;               /* sorted by id (ids too sparse for rid), else NULL */
    uint32_t *rid;                   /* rank by id - id_lo (UINT32_MAX: not here) when the ids are dense */
    uint32_t id_lo, id_span;
    size_t bytes;
    uint64_t min_v;                  /* readers at an older version must re-read theirs (classifier.c) */
    uint64_t max_add_v;              /* every rule is added at a version <= this */
    _Atomic uint32_t kills;          /* rules killed (ofb_dtree_kill); 0: all live at v >= max_add_v */
    /* what lookups read (the binary slots and entries above are build-only) */
    unsigned simd;                   /* 0 scalar, 1 SSE4/AVX2 (keys <= 16 bytes only) */
    uint32_t sroot[DT_MAX_TREES];    /* ref of each tree's root */
    struct snode *sn;                /* super nodes */
    uint32_t nsn, cap_sn;
    uint8_t *lf;                     /* leaf blocks (see emit_leaf), 16-byte units */
    uint64_t nlf, cap_lf;            /* bytes */
    uint32_t esw;                    /* words per leaf entry */
    bool mid;                        /* entries: value + 16-bit mask id (else value words, mask words) */
    uint64_t *mt;                    /* mask table: esw words per mask id (mid) */
    uint32_t nmt;
    uint32_t *midx;                  /* build: mask id per rank */
    uint64_t *rk;                    /* per rank: value words, mask words (2 * nwk) */
    uint32_t *lmemo;                 /* build: binary leaf slot -> ref (0 = not yet) */
    void *region;                    /* sn, lf, ri, rk, mt moved into one huge-page mapping (or NULL) */
    size_t region_bytes;
    struct ofb_bdfa *dfa;            /* OFB_DTREE_DFA: answers first (dfa.h), the tree when its answer is dead */
    struct ofb_dflat *flat;          /* the DFA compiled for lockstep walks (dfa_flat.h): batches ask it */
    int dfa_over;                    /* OFB_DTREE_DFA asked, but the rules passed the DFA's budget: tree only */
    bool dfa_single;                 /* single keys ask the DFA (it is one group; partitioned: the tree) */
};

/* Super node: a complete binary subtree of 3 levels (7 splits at positions
 * 0..6 in BFS order, 8 children), one cache line.  A position under a leaf
 * that ended early holds dim 0 / point 255 (never > : always child 0). */
struct snode {
    uint8_t dim[8];
    uint8_t pt[8];
    uint32_t kid[8];                 /* SN_LEAF | record index of a leaf block, else super node index */
    uint8_t pad[16];
} __attribute__((aligned(64)));
#define SN_LEAF 0x80000000u

/* Leaf ref (a super node's kid with SN_LEAF): bits 0..26 the block's offset
 * in lf in 16-byte units, bits 27..30 the cache lines of its head (count,
 * filter columns, ranks; capped at 15): what the batch lookup prefetches when
 * a walk ends there (-DDT_PF_ALL, a probe variant: the whole block). */
#define LF_OFF_BITS 27
#define LF_OFF(ref) ((ref) & ((1u << LF_OFF_BITS) - 1))
#define LF_LINES(ref) (((ref) >> LF_OFF_BITS) & 15u)
#ifndef DT_LEAF_ALIGN
#define DT_LEAF_ALIGN 16   /* leaf blocks start at multiples of this many bytes */
#endif

/* ---------- build ---------- */

struct bctx;
static void sn_path_init(void);
static uint32_t conv(struct bctx *b, uint32_t si);

struct bctx {
    struct ofb_dtree *t;
    const uint8_t *lo, *hi;          /* per rank: key_len bytes of range ends */
    const uint64_t *rw;              /* per rank: 2*nwk words */
    uint64_t max_e;
    bool fail;
    char *err;
    size_t errlen;
};

static uint32_t new_pair(struct bctx *b)
{
    struct ofb_dtree *t = b->t;
    if (t->ns + 2 > t->cap_s) {
        uint32_t nc = t->cap_s ? t->cap_s * 2 : 1024;
        struct slot *x = realloc(t->s, sizeof(struct slot) * nc);
        if (!x) {
            b->fail = true;
            return 0;
        }
        t->s = x;
        t->cap_s = nc;
    }
    uint32_t i = t->ns;
    t->ns += 2;
    return i;
}

static void make_leaf(struct bctx *b, uint32_t si, const uint32_t *idx, uint32_t n)
{
    struct ofb_dtree *t = b->t;
    if (t->ne + n > t->cap_e) {
        uint64_t nc = t->cap_e ? t->cap_e * 2 : 4096;
        while (nc < t->ne + n)
            nc *= 2;
        uint32_t *er = realloc(t->er, sizeof(uint32_t) * nc);
        if (!er) {
            b->fail = true;
            return;
        }
        t->er = er;
        t->cap_e = nc;
    }
    uint64_t e0 = t->ne;
    memcpy(t->er + e0, idx, sizeof(uint32_t) * n);
    t->ne += n;
    t->s[si] = (struct slot){ .a = (uint32_t)e0, .dim = 0, .point = 0, .n = DT_LEAF_BIT | n };
}

/* idx: ranks in ascending order; rlo/rhi: the region (per byte).  Fills slot si. */
static void build_node(struct bctx *b, uint32_t si, uint32_t *idx, uint32_t n, uint8_t *rlo, uint8_t *rhi,
                       unsigned depth)
{
    struct ofb_dtree *t = b->t;
    uint32_t kl = t->key_len;
    if (b->fail)
        return;
    if (n <= DT_LEAF || depth >= DT_MAX_DEPTH || t->ne + n > b->max_e) {
        make_leaf(b, si, idx, n);
        return;
    }
    uint32_t best_max = n, best_sum = 2 * n, bd = 0, bp = 0;
    uint64_t best_cost = UINT64_MAX;   /* max(left, right) first, then left + right */
    uint32_t ca[256], cb[256];
    for (uint32_t d = 0; d < kl; d++) {
        unsigned L = rlo[d], H = rhi[d];
        if (L >= H)
            continue;
        memset(ca + L, 0, sizeof(uint32_t) * (H - L + 1));
        memset(cb + L, 0, sizeof(uint32_t) * (H - L + 1));
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *lo = b->lo + (size_t)idx[i] * kl, *hi = b->hi + (size_t)idx[i] * kl;
            unsigned a = lo[d] < L ? L : lo[d], z = hi[d] > H ? H : hi[d];
            ca[a]++;
            cb[z]++;
        }
        uint32_t sa = 0, sb = 0;
        for (unsigned p = L; p < H; p++) {
            sa += ca[p];      /* rules starting <= p: go left */
            sb += cb[p];      /* rules ending <= p: not right */
            uint32_t nl = sa, nr = n - sb;
            uint32_t mx = nl > nr ? nl : nr, sm = nl + nr;
            if (mx >= n)
                continue;
            uint64_t cost = (uint64_t)mx * 4 * n + sm;   /* max(left, right) first, then the copies */
            if (cost < best_cost) {
                best_cost = cost;
                best_max = mx;
                best_sum = sm;
                bd = d;
                bp = p;
            }
        }
    }
    if (best_max >= n) {
        make_leaf(b, si, idx, n);
        return;
    }
    uint32_t *l = malloc(sizeof(uint32_t) * (best_sum + 1));
    if (!l) {
        b->fail = true;
        return;
    }
    uint32_t *r;
    uint32_t nl = 0, nr = 0;
    /* left first, then right into the tail of the same buffer */
    for (uint32_t i = 0; i < n; i++)
        if (b->lo[(size_t)idx[i] * kl + bd] <= bp)
            l[nl++] = idx[i];
    r = l + nl;
    for (uint32_t i = 0; i < n; i++)
        if (b->hi[(size_t)idx[i] * kl + bd] > bp)
            r[nr++] = idx[i];
    uint32_t kids = new_pair(b);
    if (b->fail) {
        free(l);
        return;
    }
    t->s[si] = (struct slot){ .a = kids, .dim = (uint8_t)bd, .point = (uint8_t)bp, .n = 0 };
    uint8_t sv = rhi[bd];
    rhi[bd] = (uint8_t)bp;
    build_node(b, kids, l, nl, rlo, rhi, depth + 1);
    rhi[bd] = sv;
    sv = rlo[bd];
    rlo[bd] = (uint8_t)(bp + 1);
    build_node(b, kids + 1, r, nr, rlo, rhi, depth + 1);
    rlo[bd] = sv;
    free(l);
}

static int cmp_rule(const void *x, const void *y)
{
    const struct ofb_dtree_rule *a = *(const struct ofb_dtree_rule *const *)x, *b = *(const struct ofb_dtree_rule *const *)y;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_idrank(const void *x, const void *y)
{
    const struct idrank *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* rule i is "small" at byte d: its range there spans < 16 values (the top
 * nibble of the mask byte set).  Measured on cb_fw 100k: 35.8 copies per
 * rule; "the two bytes from d exact" 52, "three bytes" 64 (cb_acl: 4.6, 2.5,
 * 7.3); README.md, dtree. */
static inline bool small_at(uint32_t kl, const uint8_t *lo, const uint8_t *hi, uint32_t i, uint32_t d)
{
    return hi[(size_t)i * kl + d] - lo[(size_t)i * kl + d] < 16;
}

struct lohi { uint32_t kl; const uint8_t *lo, *hi; };

static bool lohi_small(const void *ctx, uint32_t i, uint32_t d)
{
    const struct lohi *x = ctx;
    return small_at(x->kl, x->lo, x->hi, i, d);
}

static uint8_t lohi_low(const void *ctx, uint32_t i, uint32_t d)
{
    const struct lohi *x = ctx;
    return x->lo[(size_t)i * x->kl + d];
}

static unsigned choose_groups(uint32_t kl, const uint8_t *lo, const uint8_t *hi, uint32_t n, uint8_t *grp,
                              const struct ofb_cls_tuning *tu)
{
    unsigned maxg = DT_MAX_TREES;
    if (tu->dtree_trees >= 1 && tu->dtree_trees <= DT_MAX_TREES)
        maxg = tu->dtree_trees;
    if (maxg == 1) {
        memset(grp, 0, n);
        return 1;
    }
    const struct lohi x = { kl, lo, hi };
    return ofb_dt_partition(kl, n, maxg, &x, lohi_small, lohi_low, grp, tu->dtree_stats);
}

/* Leaf entry format.  Rule sets with at most DT_MAX_MIDS distinct masks
 * (ClassBench-like 100k: 900-1500) store an entry as the value bytes and a
 * 16-bit mask id in the last two bytes of round16(key_len + 2) bytes (16 for
 * 5-tuple keys: half the (value, mask) pair); the mask table (esw words per
 * id, zero past key_len) is small and stays in cache.  Otherwise an entry is
 * the value words then the mask words (2 * nwk).  Sets t->mid, esw, mt, nmt
 * and midx (per rank).  false: out of memory. */
#define DT_MAX_MIDS 65536
static bool mask_ids(struct ofb_dtree *t, const uint64_t *rw, const struct ofb_cls_tuning *tu)
{
    uint32_t n = t->n, nwk = t->nwk, w2 = 2 * nwk;
    uint32_t esw = ((t->key_len + 2 + 15) / 16) * 2;
    t->mid = false;
    t->esw = w2;
    if (tu->dtree_no_mid)
        return true;
    uint64_t hsz = 64;
    while (hsz < 2 * (uint64_t)n)
        hsz *= 2;
    uint32_t *h = calloc(hsz, sizeof(uint32_t));   /* mask id + 1, 0 = empty */
    t->midx = malloc(sizeof(uint32_t) * (n + 1));
    uint64_t *mt = NULL;
    uint32_t nm = 0, cap = 0;
    if (!h || !t->midx)
        goto fail;
    for (uint32_t r = 0; r < n; r++) {
        const uint64_t *m = rw + (size_t)r * w2 + nwk;
        uint64_t x = 0x9e3779b97f4a7c15ull;
        for (uint32_t k = 0; k < nwk; k++)
            x = (x ^ m[k]) * 0xff51afd7ed558ccdull;
        uint64_t i = (x ^ x >> 29) & (hsz - 1);
        for (; h[i]; i = (i + 1) & (hsz - 1))
            if (!memcmp(mt + (size_t)(h[i] - 1) * esw, m, 8 * nwk))
                break;
        if (!h[i]) {
            if (nm == DT_MAX_MIDS) {   /* too many masks: full entries */
                free(h), free(mt), free(t->midx);
                t->midx = NULL;
                return true;
            }
            if (nm == cap) {
                cap = cap ? 2 * cap : 256;
                uint64_t *x2 = realloc(mt, sizeof(uint64_t) * esw * cap);
                if (!x2)
                    goto fail;
                mt = x2;
            }
            memset(mt + (size_t)nm * esw, 0, 8 * esw);
            memcpy(mt + (size_t)nm * esw, m, 8 * nwk);
            memset((uint8_t *)(mt + (size_t)nm * esw) + t->key_len, 0, 8 * esw - t->key_len);
            h[i] = ++nm;
        }
        t->midx[r] = h[i] - 1;
    }
    free(h);
    t->mid = true;
    t->esw = esw;
    t->mt = mt;
    t->nmt = nm;
    return true;
fail:
    free(h), free(mt);
    return false;
}

/* OFB_DTREE_STATS=1: the binary trees' leaf sizes and depths on stderr at build */
static void walk_stats(const struct ofb_dtree *t, uint32_t si, unsigned depth, uint64_t *lh, uint64_t *dh, uint64_t *wsum)
{
    const struct slot *x = &t->s[si];
    if (x->n & DT_LEAF_BIT) {
        uint32_t c = x->n & ~DT_LEAF_BIT;
        lh[c < 8 ? c : c < 16 ? 8 : c < 64 ? 9 : c < 256 ? 10 : 11]++;
        dh[depth < 63 ? depth : 63]++;
        wsum[0] += c;
        wsum[1]++;
        return;
    }
    walk_stats(t, x->a, depth + 1, lh, dh, wsum);
    walk_stats(t, x->a + 1, depth + 1, lh, dh, wsum);
}

static void print_stats(const struct ofb_dtree *t, FILE *f)
{
    for (uint32_t g = 0; g < t->ntrees; g++) {
        uint64_t lh[12] = {0}, dh[64] = {0}, ws[2] = {0};
        walk_stats(t, t->root[g], 0, lh, dh, ws);
        fprintf(f, "tree %u: leaves %lu entries %lu; leaf sizes 0..7,<16,<64,<256,more:", g, (unsigned long)ws[1],
                (unsigned long)ws[0]);
        for (int i = 0; i < 12; i++)
            fprintf(f, " %lu", (unsigned long)lh[i]);
        fprintf(f, "; depth:");
        for (int i = 0; i < 64; i++)
            if (dh[i])
                fprintf(f, " %d:%lu", i, (unsigned long)dh[i]);
        fprintf(f, "\n");
    }
}

/* What lookups read (super nodes, leaf blocks, rule info and words) moved
 * into one 2 MiB-aligned mapping advised MADV_HUGEPAGE: the walks and leaf
 * reads are random over ~10-40 MB at 100k rules, a TLB miss each on 4 KiB
 * pages (measured: cb_acl 100k batched 2.98 -> 4.75 Mlps with huge pages,
 * before super nodes).  tuning.no_hugepages keeps the heap copies (hugepage.h). */
static void to_hugepages(struct ofb_dtree *t)
{
    size_t w2 = 2 * t->nwk;
    size_t sz[5] = { sizeof(struct snode) * t->nsn, t->nlf, sizeof(struct rinfo) * t->n,
                     sizeof(uint64_t) * w2 * t->n, sizeof(uint64_t) * t->esw * t->nmt };
    size_t off[5], total = 0;
    for (int i = 0; i < 5; i++) {
        off[i] = total;
        total += (sz[i] + 63) & ~(size_t)63;
    }
    total = ofb_hp_round(total);
    if (total < OFB_HP_SIZE)
        return;   /* small: not worth a mapping */
    char *r = ofb_hp_map(total);
    if (!r)
        return;
    const void *src[5] = { t->sn, t->lf, t->ri, t->rk, t->mt };
    for (int i = 0; i < 5; i++)
        if (sz[i])  /* an empty part may be NULL (no mask table with full entries) */
            memcpy(r + off[i], src[i], sz[i]);
    free(t->sn), free(t->lf), free(t->ri), free(t->rk), free(t->mt);
    t->sn = (struct snode *)(r + off[0]);
    t->lf = (uint8_t *)(r + off[1]);
    t->ri = (struct rinfo *)(r + off[2]);
    t->rk = (uint64_t *)(r + off[3]);
    t->mt = (uint64_t *)(r + off[4]);
    t->cap_sn = t->nsn, t->cap_lf = t->nlf;
    t->region = r;
    t->region_bytes = total;
}

struct ofb_dtree *ofb_dtree_build(uint32_t key_len, const struct ofb_dtree_rule *rules, size_t n, unsigned flags,
                                  const struct ofb_cls_tuning *tu,
                                  char *err, size_t errlen)
{
    static const struct ofb_cls_tuning none;
    if (!tu)
        tu = &none;
    if (!key_len || key_len > OFB_DT_KL_MAX_ANY) {
        snprintf(err, errlen, "dtree: key_len %u is not in 1..%u", key_len, OFB_DT_KL_MAX_ANY);
        return NULL;
    }
    if (n >= UINT32_MAX - 1) {
        snprintf(err, errlen, "dtree: %zu rules is more than 2^32-2", n);
        return NULL;
    }
    struct ofb_dtree *t = calloc(1, sizeof(*t));
    if (!t)
        goto oom;
    t->key_len = key_len;
    t->nwk = (key_len + 7) / 8;
    t->n = (uint32_t)n;
    uint32_t kl = key_len, w2 = 2 * t->nwk;
    const struct ofb_dtree_rule **ord = malloc(sizeof(void *) * (n + 1));
    uint8_t *lo = malloc((size_t)kl * n + 1), *hi = malloc((size_t)kl * n + 1), *grp = malloc(n + 1);
    uint64_t *rw = malloc(sizeof(uint64_t) * w2 * n + 8);
    uint32_t *idx = malloc(sizeof(uint32_t) * (n + 1));
    t->ri = malloc(sizeof(struct rinfo) * (n + 1));
    t->ir = malloc(sizeof(struct idrank) * (n + 1));
    struct bctx b = { .t = t, .lo = lo, .hi = hi, .rw = rw, .max_e = (uint64_t)DT_MAX_COPIES * n + 4096,
                      .err = err, .errlen = errlen };
    if (!ord || !lo || !hi || !grp || !rw || !idx || !t->ri || !t->ir) {
        free(ord), free(lo), free(hi), free(grp), free(rw), free(idx);
        goto oom;
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = &rules[i];
    qsort(ord, n, sizeof(void *), cmp_rule);
    for (uint32_t r = 0; r < n; r++) {
        const struct ofb_dtree_rule *x = ord[r];
        t->ri[r] = (struct rinfo){ .prio = x->prio, .id = x->id, .handle = x->handle, .add_v = x->add_v };
        if (x->add_v > t->max_add_v)
            t->max_add_v = x->add_v;
        if (x->del_v != V_INF)
            t->kills++;
        atomic_init(&t->ri[r].del_v, x->del_v);
        t->ir[r] = (struct idrank){ x->id, r };
        uint64_t *w = rw + (size_t)r * w2;
        for (uint32_t k = 0; k < t->nwk; k++) {
            w[t->nwk + k] = x->mask[k];
            w[k] = x->value[k] & x->mask[k];
        }
        const uint8_t *vb = (const uint8_t *)w, *mb = (const uint8_t *)(w + t->nwk);
        for (uint32_t d = 0; d < kl; d++) {
            lo[(size_t)r * kl + d] = vb[d];
            hi[(size_t)r * kl + d] = vb[d] | (uint8_t)~mb[d];
        }
    }
    /* id -> rank for kills: a direct table when the ids are dense (a bulk
     * build numbers its rules in a row; a rebuild keeps most of them), one
     * cache miss per delete instead of a binary search over n */
    uint32_t id_hi = 0;
    t->id_lo = UINT32_MAX;
    for (uint32_t r = 0; r < n; r++) {
        t->id_lo = t->ir[r].id < t->id_lo ? t->ir[r].id : t->id_lo;
        id_hi = t->ir[r].id > id_hi ? t->ir[r].id : id_hi;
    }
    if (n && (uint64_t)id_hi - t->id_lo < 4 * (uint64_t)n + 1024 && !tu->dtree_no_rid &&   /* tests: the sorted list */
        (t->rid = malloc(sizeof(uint32_t) * ((size_t)id_hi - t->id_lo + 1)))) {
        t->id_span = id_hi - t->id_lo + 1;
        memset(t->rid, 0xff, sizeof(uint32_t) * t->id_span);
        for (uint32_t r = 0; r < n; r++)
            t->rid[t->ir[r].id - t->id_lo] = r;
        free(t->ir);
        t->ir = NULL;
    } else {
        qsort(t->ir, n, sizeof(struct idrank), cmp_idrank);
    }
    if (!mask_ids(t, rw, tu)) {
        free(ord), free(lo), free(hi), free(grp), free(idx);
        t->rk = rw;
        goto oom;
    }
    unsigned ng = n ? choose_groups(kl, lo, hi, (uint32_t)n, grp, tu) : 0;
    uint8_t rlo[OFB_DT_KL_MAX_ANY], rhi[OFB_DT_KL_MAX_ANY];
    for (unsigned g = 0; g < ng; g++) {
        uint32_t m = 0;
        for (uint32_t r = 0; r < n; r++)
            if (grp[r] == g)
                idx[m++] = r;
        if (!m)
            continue;
        memset(rlo, 0, kl);
        memset(rhi, 0xff, kl);
        uint32_t root = new_pair(&b);
        if (b.fail)
            break;
        t->root[t->ntrees] = root;
        t->tmin[t->ntrees] = idx[0];
        t->ntrees++;
        build_node(&b, root, idx, m, rlo, rhi, 0);
    }
    free(ord), free(lo), free(hi), free(grp), free(idx);
    t->rk = rw;
    if (!b.fail && tu->dtree_stats)
        print_stats(t, stderr);
    if (!b.fail) {
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        pthread_once(&once, sn_path_init);
        t->lmemo = calloc(t->ns + 1, sizeof(uint32_t));
        if (!t->lmemo)
            b.fail = true;
        for (uint32_t g = 0; g < t->ntrees && !b.fail; g++)
            t->sroot[g] = conv(&b, t->root[g]);
        free(t->lmemo);
        t->lmemo = NULL;
        t->simd = (flags & OFB_DTREE_SIMD) && key_len <= 16;
    }
    if (!b.fail && (flags & OFB_DTREE_DFA) && n) {
        uint64_t mb = tu->dfa_max_mb << 20;   /* cap of the DFA (tests: its out-of-budget error) */
        int over = 0;
        t->dfa = ofb_bdfa_build(key_len, t->nwk, t->rk, (uint32_t)n,
                                ((flags & OFB_DTREE_SIMD) ? OFB_BDFA_SIMD : 0) | ((flags & OFB_DTREE_DFA_ONE) ? OFB_BDFA_ONE : 0) |
                                    ((flags & OFB_DTREE_DFA_AUTO) ? OFB_BDFA_AUTO : 0),
                                mb, tu, &over, err, errlen);
        /* the DFA compiled for lockstep walks (NULL: keys > 16 bytes, too big: the DFA's own walk); full
         * nodes from 5 intervals (one step per DFA node: public acl1 73 Mlps on AVX-512 at 1.3 KB per rule,
         * 58 from 17 intervals at 360 B) unless that passes DFLAT_BYTES_PER_RULE x rules + 1 MiB */
        unsigned walk = (flags & OFB_DTREE_AVX512) ? DFLAT_AVX512 : (flags & OFB_DTREE_AVX2) ? DFLAT_AVX2 : DFLAT_SCALAR;
        static const unsigned full_min[] = { 4, 16, 64 };
        for (unsigned i = 0; t->dfa && !tu->dfa_no_flat && !t->flat && i < 3; i++) {
            t->flat = ofb_dflat_build(t->dfa, walk, tu->dfa_full_min ? tu->dfa_full_min : full_min[i], tu->dfa_no_vbmi);
            if (t->flat && !tu->dfa_full_min && i < 2 && ofb_dflat_bytes(t->flat) > DFLAT_BYTES_PER_RULE * n + (1u << 20))
                ofb_dflat_free(t->flat), t->flat = NULL;
            if (tu->dfa_full_min)
                break;
        }
        if (!t->dfa && !over) {   /* out of memory: the build fails with dfa.c's message */
            ofb_dtree_free(t);
            return NULL;
        }
        /* over its budget: the tree alone answers (ofb_dtree_dfa_bytes() = 0); err keeps why */
        t->dfa_over = over;
        /* a single key walks every group of a partitioned DFA one after the other: the tree answers it
           faster there (generated cb_* 10k sets: 1.0-1.5x), one DFA faster than the tree (acl1: 1.5x) */
        t->dfa_single = t->dfa && ofb_bdfa_groups(t->dfa) == 1;
    }
    if (b.fail) {
        if (!err[0] || strncmp(err, "dtree", 5))
            snprintf(err, errlen, "dtree: out of memory building the tree of %zu rules", n);
        ofb_dtree_free(t);
        return NULL;
    }
    /* trees in order of their best rank */
    for (unsigned i = 1; i < t->ntrees; i++)
        for (unsigned j = i; j && t->tmin[j] < t->tmin[j - 1]; j--) {
            uint32_t x = t->tmin[j]; t->tmin[j] = t->tmin[j - 1]; t->tmin[j - 1] = x;
            x = t->root[j]; t->root[j] = t->root[j - 1]; t->root[j - 1] = x;
            x = t->sroot[j]; t->sroot[j] = t->sroot[j - 1]; t->sroot[j - 1] = x;
        }
    /* the binary tree and its entries were build-only */
    free(t->s), free(t->er), free(t->midx);
    t->s = NULL, t->er = NULL, t->midx = NULL;
    if (!tu->no_hugepages)
        to_hugepages(t);
    t->bytes = sizeof(*t) + sizeof(struct snode) * t->cap_sn + t->cap_lf + sizeof(uint64_t) * w2 * n +
               sizeof(uint64_t) * t->esw * t->nmt +
               sizeof(struct rinfo) * n + (t->rid ? sizeof(uint32_t) * t->id_span : sizeof(struct idrank) * n) +
               ofb_bdfa_bytes(t->dfa) + ofb_dflat_bytes(t->flat);
    return t;
oom:
    snprintf(err, errlen, "dtree: out of memory building the tree of %zu rules", n);
    ofb_dtree_free(t);
    return NULL;
}

void ofb_dtree_free(struct ofb_dtree *t)
{
    if (!t)
        return;
    if (t->region) {
        ofb_hp_unmap(t->region, t->region_bytes);
        t->sn = NULL, t->lf = NULL, t->rk = NULL, t->ri = NULL, t->mt = NULL;
    }
    free(t->s);
    free(t->sn);
    free(t->lf);
    free(t->mt);
    free(t->midx);
    free(t->rk);
    free(t->lmemo);
    free(t->er);
    free(t->ri);
    free(t->ir);
    free(t->rid);
    ofb_dflat_free(t->flat);
    ofb_bdfa_free(t->dfa);
    free(t);
}

size_t ofb_dtree_bytes(const struct ofb_dtree *t) { return t ? t->bytes : 0; }
uint32_t ofb_dtree_rules(const struct ofb_dtree *t) { return t ? t->n : 0; }
uint32_t ofb_dtree_trees(const struct ofb_dtree *t) { return t ? t->ntrees : 0; }
uint64_t ofb_dtree_entries(const struct ofb_dtree *t) { return t ? t->ne : 0; }
size_t ofb_dtree_dfa_bytes(const struct ofb_dtree *t) { return t ? ofb_bdfa_bytes(t->dfa) + ofb_dflat_bytes(t->flat) : 0; }
int ofb_dtree_dfa_over(const struct ofb_dtree *t) { return t ? t->dfa_over : 0; }

void ofb_dtree_rank_info(const struct ofb_dtree *t, uint32_t rank, uint32_t *prio, uint32_t *id, uint64_t *handle)
{
    const struct rinfo *r = &t->ri[rank];
    *prio = r->prio;
    *id = r->id;
    *handle = r->handle;
}

static inline bool live(const struct ofb_dtree *t, uint32_t r, uint64_t v);

/* the rank of rule id, UINT32_MAX when the tree does not hold it */
static uint32_t find_id(const struct ofb_dtree *t, uint32_t id)
{
    if (!t)
        return UINT32_MAX;
    if (t->rid) {
        uint32_t off = id - t->id_lo;
        return off < t->id_span ? t->rid[off] : UINT32_MAX;
    }
    size_t lo = 0, hi = t->ir ? t->n : 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->ir[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return t->ir && lo < t->n && t->ir[lo].id == id ? t->ir[lo].rank : UINT32_MAX;
}

int ofb_dtree_kill(struct ofb_dtree *t, uint32_t id, uint64_t v)
{
    uint32_t r = find_id(t, id);
    if (r == UINT32_MAX)
        return -1;
    atomic_store_explicit(&t->ri[r].del_v, v, memory_order_release);
    atomic_fetch_add_explicit(&t->kills, 1, memory_order_release);
    return 0;
}

uint64_t ofb_dtree_del_v(const struct ofb_dtree *t, uint32_t id)
{
    uint32_t r = find_id(t, id);
    return r != UINT32_MAX ? atomic_load_explicit(&t->ri[r].del_v, memory_order_relaxed) : 0;
}

void ofb_dtree_rule_at(const struct ofb_dtree *t, uint32_t rank, struct ofb_dtree_rule *out)
{
    const struct rinfo *r = &t->ri[rank];
    const uint64_t *w = t->rk + (size_t)rank * 2 * t->nwk;
    *out = (struct ofb_dtree_rule){ .prio = r->prio, .id = r->id, .handle = r->handle, .value = w,
                                    .mask = w + t->nwk, .add_v = r->add_v,
                                    .del_v = atomic_load_explicit(&r->del_v, memory_order_relaxed) };
}

uint32_t ofb_dtree_find(const struct ofb_dtree *t, uint32_t prio, const uint64_t *value, const uint64_t *mask,
                        uint64_t v)
{
    uint32_t w2 = t ? 2 * t->nwk : 0;
    for (uint32_t r = 0; t && r < t->n; r++) {
        const uint64_t *w = t->rk + (size_t)r * w2;
        if (t->ri[r].prio == prio && live(t, r, v) && !memcmp(w, value, 8 * t->nwk) &&
            !memcmp(w + t->nwk, mask, 8 * t->nwk))
            return t->ri[r].id;   /* rank order: the lowest id among equal priorities */
    }
    return 0;
}

void ofb_dtree_set_min_v(struct ofb_dtree *t, uint64_t v) { t->min_v = v; }
uint64_t ofb_dtree_min_v(const struct ofb_dtree *t) { return t->min_v; }

/* ---------- super nodes and leaf blocks ---------- */

static uint8_t sn_path[128];   /* comparison bits (bit p = key[dim p] > pt p) -> child 0..7 */

static void sn_path_init(void)
{
    for (unsigned m = 0; m < 128; m++) {
        unsigned p1 = 1 + (m & 1), p2 = 2 * p1 + 1 + (m >> p1 & 1);
        sn_path[m] = (uint8_t)(2 * p2 + 1 + (m >> p2 & 1) - 7);
    }
}

static bool grow(void **p, uint64_t *cap, uint64_t need, size_t elem, size_t align)
{
    if (need <= *cap)
        return true;
    uint64_t nc = *cap ? *cap * 2 : 4096;
    while (nc < need)
        nc *= 2;
    void *x = aligned_alloc(align, (elem * nc + align - 1) & ~(align - 1));
    if (!x)
        return false;
    if (*cap)
        memcpy(x, *p, elem * *cap);
    free(*p);
    *p = x;
    *cap = nc;
    return true;
}

/* A leaf block (in lf, DT_LEAF_ALIGN-aligned):
 *   u32 n; u8 fd[DT_FCOLS] (filter bytes); zero padding to 16 bytes;
 *   per chunk of 16 entries, DT_FCOLS filter columns of 32 bytes: mask[16],
 *     value[16] of each entry at key byte fd[c] (0, 0 past n: masked off);
 *   u32 rank[n] (rank order: the first live match wins), padding to 16;
 *   n entries of esw words (mask_ids: value bytes + mask id, or value words +
 *     mask words).
 * A lookup filters a chunk's entries on the key's filter bytes (SSE2: one
 * and + compare + movemask per column; scalar: SWAR), then checks only the
 * passing entries in full.  The filter bytes are the two where the entries
 * have the most distinct specific (value, mask) pairs.  One contiguous
 * block: the batch lookup prefetches its head when the walk ends, and the
 * first candidate entry after filtering. */
#ifndef DT_FCOLS
#define DT_FCOLS 2
#endif
static inline uint64_t lf_rank_off(uint32_t n) { return 16 + (uint64_t)(n + 15) / 16 * 32 * DT_FCOLS; }
static inline uint64_t lf_entry_off(uint32_t n) { return (lf_rank_off(n) + 4 * (uint64_t)n + 15) & ~(uint64_t)15; }

static inline uint8_t rule_mask_byte(const struct ofb_dtree *t, uint32_t rank, uint32_t d)
{
    return ((const uint8_t *)(t->rk + (size_t)rank * 2 * t->nwk + t->nwk))[d];
}

static uint32_t emit_leaf(struct bctx *b, const struct slot *x)
{
    struct ofb_dtree *t = b->t;
    uint32_t n = x->n & ~DT_LEAF_BIT, kl = t->key_len, nwk = t->nwk;
    const uint32_t *er = t->er + x->a;
    uint64_t off = (t->nlf + DT_LEAF_ALIGN - 1) & ~(uint64_t)(DT_LEAF_ALIGN - 1);
    uint64_t ro = lf_rank_off(n), eo = lf_entry_off(n), sz = eo + 8 * (uint64_t)t->esw * n;
    if ((off >> 4) >= (1u << LF_OFF_BITS)) {
        snprintf(b->err, b->errlen, "dtree: leaf blocks over %u MiB (too many rule copies)", (1u << LF_OFF_BITS) >> 16);
        b->fail = true;
        return 0;
    }
    if (!grow((void **)&t->lf, &t->cap_lf, off + sz + 64, 1, 64)) {
        b->fail = true;
        return 0;
    }
    uint8_t *blk = t->lf + off;
    memset(t->lf + t->nlf, 0, off + sz - t->nlf);
    memcpy(blk, &n, 4);
    /* filter bytes: the most distinct specific (value, mask) pairs (first 16 entries) */
    uint32_t m16 = n < 16 ? n : 16, dist[OFB_DT_KL_MAX_ANY];
    for (uint32_t d = 0; d < kl; d++) {
        dist[d] = 0;
        for (uint32_t i = 0; i < m16; i++) {
            uint8_t mi = rule_mask_byte(t, er[i], d), vi = ((const uint8_t *)(t->rk + (size_t)er[i] * 2 * nwk))[d];
            bool seen = !mi;
            for (uint32_t k = 0; k < i && !seen; k++)
                seen = rule_mask_byte(t, er[k], d) == mi &&
                       ((const uint8_t *)(t->rk + (size_t)er[k] * 2 * nwk))[d] == vi;
            dist[d] += !seen;
        }
    }
    for (unsigned c = 0; c < DT_FCOLS; c++) {
        uint32_t bd = 0;
        for (uint32_t d = 1; d < kl; d++)
            if (dist[d] > dist[bd])
                bd = d;
        blk[4 + c] = (uint8_t)bd;
        dist[bd] = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *col = blk + 16 + (uint64_t)(i / 16) * 32 * DT_FCOLS + 32 * c;
            col[i % 16] = rule_mask_byte(t, er[i], bd);
            col[16 + i % 16] = ((const uint8_t *)(t->rk + (size_t)er[i] * 2 * nwk))[bd];
        }
    }
    memcpy(blk + ro, er, 4 * (size_t)n);
    for (uint32_t i = 0; i < n; i++) {
        const uint64_t *w = t->rk + (size_t)er[i] * 2 * nwk;
        uint8_t *e = blk + eo + (size_t)8 * t->esw * i;
        if (t->mid) {
            uint16_t id = (uint16_t)t->midx[er[i]];
            memcpy(e, w, kl);
            memcpy(e + 8 * t->esw - 2, &id, 2);
        } else {
            memcpy(e, w, 16 * (size_t)nwk);
        }
    }
    t->nlf = off + sz;
#ifdef DT_PF_ALL
    uint64_t pfb = sz;
#else
    uint64_t pfb = eo;   /* the lines the filter reads (and the ranks) */
#endif
    uint64_t lines = ((off & 63) + pfb + 63) / 64;
    return SN_LEAF | (uint32_t)(lines > 15 ? 15 : lines) << LF_OFF_BITS | (uint32_t)(off >> 4);
}

static void conv_fill(struct bctx *b, uint32_t ni, unsigned pos, unsigned level, uint32_t si)
{
    struct ofb_dtree *t = b->t;
    if (level == 3) {
        uint32_t ref = conv(b, si);
        t->sn[ni].kid[pos - 7] = ref;
        return;
    }
    const struct slot *x = &t->s[si];
    if (x->n & DT_LEAF_BIT) {
        t->sn[ni].dim[pos] = 0;
        t->sn[ni].pt[pos] = 255;
        conv_fill(b, ni, 2 * pos + 1, level + 1, si);
        conv_fill(b, ni, 2 * pos + 2, level + 1, si);
        return;
    }
    t->sn[ni].dim[pos] = x->dim;
    t->sn[ni].pt[pos] = x->point;
    uint32_t a = x->a;
    conv_fill(b, ni, 2 * pos + 1, level + 1, a);
    conv_fill(b, ni, 2 * pos + 2, level + 1, a + 1);
}

static uint32_t conv(struct bctx *b, uint32_t si)
{
    struct ofb_dtree *t = b->t;
    if (b->fail)
        return 0;
    const struct slot *x = &t->s[si];
    if (x->n & DT_LEAF_BIT) {
        if (!t->lmemo[si])
            t->lmemo[si] = emit_leaf(b, x);
        return t->lmemo[si];
    }
    if (t->nsn == t->cap_sn) {
        uint32_t nc = t->cap_sn ? t->cap_sn * 2 : 256;
        struct snode *sn = aligned_alloc(64, sizeof(struct snode) * nc);
        if (!sn) {
            b->fail = true;
            return 0;
        }
        if (t->nsn)
            memcpy(sn, t->sn, sizeof(struct snode) * t->nsn);
        free(t->sn);
        t->sn = sn;
        t->cap_sn = nc;
    }
    uint32_t ni = t->nsn++;
    memset(&t->sn[ni], 0, sizeof(struct snode));
    conv_fill(b, ni, 0, 0, si);
    return ni;
}

/* ---------- lookup ---------- */

static inline bool live(const struct ofb_dtree *t, uint32_t r, uint64_t v)
{
    const struct rinfo *x = &t->ri[r];
    return x->add_v <= v && v < atomic_load_explicit(&x->del_v, memory_order_acquire);
}

/* the key in words, zero past key_len up to the entry width */
static inline void key_words(const struct ofb_dtree *t, const uint8_t *key, uint64_t *kw)
{
    uint32_t w = t->esw > t->nwk ? t->esw : t->nwk;
    for (uint32_t k = t->nwk - 1; k < w; k++)
        kw[k] = 0;
    kw[1] = 0;
    memcpy(kw, key, t->key_len);
}

/* does leaf entry e match the key words kw? */
static inline bool entry_match(const struct ofb_dtree *t, const uint64_t *e, const uint64_t *kw)
{
    uint32_t esw = t->esw;
    if (likely(t->mid)) {
        uint16_t id;
        memcpy(&id, (const uint8_t *)(e + esw) - 2, 2);
        const uint64_t *m = t->mt + (size_t)id * esw;
        if (esw == 2)   /* keys <= 14 bytes; the id's bytes are masked out */
            return !((((kw[0] & m[0]) ^ e[0])) | (((kw[1] & m[1]) ^ e[1]) & 0x0000ffffffffffffull));
        uint64_t x = 0;
        for (uint32_t k = 0; k + 1 < esw; k++)
            x |= (kw[k] & m[k]) ^ e[k];
        return !(x | (((kw[esw - 1] & m[esw - 1]) ^ e[esw - 1]) & 0x0000ffffffffffffull));
    }
    uint32_t nwk = t->nwk;
    if (nwk == 2)
        return !(((kw[0] & e[2]) ^ e[0]) | ((kw[1] & e[3]) ^ e[1]));
    uint64_t x = 0;
    for (uint32_t k = 0; k < nwk; k++)
        x |= (kw[k] & e[nwk + k]) ^ e[k];
    return !x;
}

/* entries i of chunk col (16 entries) that pass the filter columns: bit i */
static inline uint32_t chunk_cand(const uint8_t *blk, const uint8_t *col, const uint8_t *key, bool simd)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (simd) {   /* SSE2 */
        __m128i k0 = _mm_set1_epi8((char)key[blk[4]]);
        __m128i p = _mm_cmpeq_epi8(_mm_and_si128(k0, _mm_load_si128((const __m128i *)col)),
                                   _mm_load_si128((const __m128i *)(col + 16)));
        for (unsigned c = 1; c < DT_FCOLS; c++) {
            __m128i kc = _mm_set1_epi8((char)key[blk[4 + c]]);
            p = _mm_and_si128(p, _mm_cmpeq_epi8(_mm_and_si128(kc, _mm_load_si128((const __m128i *)(col + 32 * c))),
                                                _mm_load_si128((const __m128i *)(col + 32 * c + 16))));
        }
        return (uint32_t)_mm_movemask_epi8(p);
    }
#endif
    /* SWAR: 8 entries per 64-bit word; a zero byte of (key & mask) ^ value passes */
    const uint64_t lo7 = 0x7f7f7f7f7f7f7f7full;
    uint64_t miss[2] = { 0, 0 };
    for (unsigned c = 0; c < DT_FCOLS; c++) {
        uint64_t kb = key[blk[4 + c]] * 0x0101010101010101ull, m[2], vv[2];
        memcpy(m, col + 32 * c, 16);
        memcpy(vv, col + 32 * c + 16, 16);
        for (unsigned h = 0; h < 2; h++) {
            uint64_t x = (kb & m[h]) ^ vv[h];
            miss[h] |= ((x & lo7) + lo7) | x;   /* high bit of each byte: that byte is not zero */
        }
    }
    uint32_t cand = 0;
    for (unsigned h = 0; h < 2; h++) {
        uint64_t pass = (~miss[h] >> 7) & 0x0101010101010101ull;   /* bit 8i: entry i passes */
        cand |= (uint32_t)((pass * 0x0102040810204080ull) >> 56) << (8 * h);
    }
    return cand;
}

/* the first chunk's candidates in leaf ref (bit i: entry i); with
 * prefetch, the first candidate's entry is prefetched */
static inline uint32_t leaf_cand(const struct ofb_dtree *t, uint32_t ref, const uint64_t *kw, bool prefetch)
{
    const uint8_t *blk = t->lf + ((size_t)LF_OFF(ref) << 4);
    uint32_t n;
    memcpy(&n, blk, 4);
    uint32_t cand = chunk_cand(blk, blk + 16, (const uint8_t *)kw, t->simd);
    if (n < 16)
        cand &= (1u << n) - 1;
    if (prefetch && cand)
        __builtin_prefetch(blk + lf_entry_off(n) + (size_t)8 * t->esw * (uint32_t)__builtin_ctz(cand));
    return cand;
}

/* the first live match better than best in leaf ref; cand0: leaf_cand */
static inline uint32_t scan_leaf_c(const struct ofb_dtree *t, uint32_t ref, uint32_t cand0, const uint64_t *kw,
                                   uint64_t v, uint32_t best)
{
    const uint8_t *blk = t->lf + ((size_t)LF_OFF(ref) << 4);
    uint32_t n;
    memcpy(&n, blk, 4);
    const uint32_t *rank = (const uint32_t *)(blk + lf_rank_off(n));
    const uint64_t *e = (const uint64_t *)(blk + lf_entry_off(n));
    uint32_t esw = t->esw;
    bool all_live = v >= t->max_add_v && !atomic_load_explicit(&t->kills, memory_order_relaxed);
    for (uint32_t c0 = 0; c0 < n; c0 += 16) {
        uint32_t cand = cand0;
        if (c0) {
            cand = chunk_cand(blk, blk + 16 + (c0 / 16) * 32 * DT_FCOLS, (const uint8_t *)kw, t->simd);
            if (n - c0 < 16)
                cand &= (1u << (n - c0)) - 1;
        }
        for (; cand; cand &= cand - 1) {
            uint32_t i = c0 + (uint32_t)__builtin_ctz(cand), r = rank[i];
            if (r >= best)
                return best;
            if (entry_match(t, e + (size_t)esw * i, kw) && (likely(all_live) || live(t, r, v)))
                return r;
        }
    }
    return best;
}

static inline uint32_t scan_leaf(const struct ofb_dtree *t, uint32_t ref, const uint64_t *kw, uint64_t v,
                                 uint32_t best)
{
    return scan_leaf_c(t, ref, leaf_cand(t, ref, kw, false), kw, v, best);
}

/* the lines of leaf ref's block that emit_leaf put in its ref: the head
 * (count, filter columns, ranks).  Prefetching the first line only was
 * faster in dtprobe (cb_acl) but slower through the classifier (cb_fw 100k
 * batched 4.5-4.8 -> 3.7-4.0 Mlps, cb_ipc 6.6-7.0 -> 5.2-5.7:
 * experiments/classifier/2026-11-24-leaf/ab-f57-239-base.txt): not kept. */
static inline void prefetch_leaf(const struct ofb_dtree *t, uint32_t ref)
{
    const char *p = (const char *)t->lf + ((size_t)LF_OFF(ref) << 4);
    const char *a = (const char *)((uintptr_t)p & ~(uintptr_t)63);
    for (uint32_t l = 0; l < LF_LINES(ref); l++)
        __builtin_prefetch(a + 64 * l);
}

/* One step of lane x's batched walk done: record where it is; a leaf ends the
 * lane (its head prefetched), a node is prefetched for the next round. */
static inline void walk_advance(const struct ofb_dtree *t, uint32_t *cur, uint64_t *walk, unsigned x,
                                uint32_t ref)
{
    cur[x] = ref;
    if (ref & SN_LEAF) {
        *walk &= ~(1ull << x);
        prefetch_leaf(t, ref);
    } else {
        __builtin_prefetch(&t->sn[ref]);
    }
}

static inline uint32_t sn_step_scalar(const struct snode *x, const uint8_t *key)
{
    unsigned p1 = 1 + (key[x->dim[0]] > x->pt[0]);
    unsigned p2 = 2 * p1 + 1 + (key[x->dim[p1]] > x->pt[p1]);
    return x->kid[2 * p2 + 1 + (key[x->dim[p2]] > x->pt[p2]) - 7];
}

#if defined(__x86_64__) && defined(__GNUC__)
/* kx: the key (16 bytes, zero padded) xor 0x80 (signed compare = unsigned) */
__attribute__((target("sse4.2")))
static inline uint32_t sn_step_sse(const struct snode *x, __m128i kx)
{
    __m128i nd = _mm_load_si128((const __m128i *)x);
    __m128i sel = _mm_shuffle_epi8(kx, nd);                      /* bytes 0..7: key[dim p] ^ 0x80 */
    __m128i pts = _mm_xor_si128(_mm_srli_si128(nd, 8), _mm_set1_epi8((char)0x80));
    unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(sel, pts)) & 0x7f;
    return x->kid[sn_path[m]];
}
#endif

static uint32_t lookup_scalar(const struct ofb_dtree *t, const uint8_t *key, uint64_t v)
{
    uint64_t kw[DT_MAXW];
    key_words(t, key, kw);
    uint32_t best = DT_NONE;
    for (uint32_t g = 0; g < t->ntrees; g++) {
        if (t->tmin[g] >= best)
            break;
        uint32_t ref = t->sroot[g];
        while (!(ref & SN_LEAF))
            ref = sn_step_scalar(&t->sn[ref], key);
        best = scan_leaf(t, ref, kw, v, best);
    }
    return best;
}

static uint32_t tree_lookup(const struct ofb_dtree *t, const uint8_t *key, uint64_t v);

/* all rules of the tree are live for a reader at version v */
static inline bool all_live_at(const struct ofb_dtree *t, uint64_t v)
{
    return v >= t->max_add_v && !atomic_load_explicit(&t->kills, memory_order_relaxed);
}

uint32_t ofb_dtree_lookup(const struct ofb_dtree *t, const uint8_t *key, uint64_t v)
{
    if (t->dfa_single) {   /* the DFA's best rule of the snapshot; the tree only when it is not live at v */
        uint32_t r = t->flat ? ofb_dflat_lookup(t->flat, key) : ofb_bdfa_lookup(t->dfa, key);
        if (likely(r == DT_NONE || all_live_at(t, v) || live(t, r, v)))
            return r;
    }
    return tree_lookup(t, key, v);
}

static uint32_t tree_lookup(const struct ofb_dtree *t, const uint8_t *key, uint64_t v)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (t->simd) {
        uint64_t kw[DT_MAXW];
        key_words(t, key, kw);
        __m128i kx = _mm_xor_si128(_mm_loadu_si128((const __m128i *)kw), _mm_set1_epi8((char)0x80));
        uint32_t best = DT_NONE;
        for (uint32_t g = 0; g < t->ntrees; g++) {
            if (t->tmin[g] >= best)
                break;
            uint32_t ref = t->sroot[g];
            while (!(ref & SN_LEAF))
                ref = sn_step_sse(&t->sn[ref], kx);
            best = scan_leaf(t, ref, kw, v, best);
        }
        return best;
    }
#endif
    return lookup_scalar(t, key, v);
}

/* walk the lanes in `walk` (bit g * DT_LANES + j: tree g, lane j) from their
 * refs in cur to their leaves, interleaved, prefetching each next super node
 * and each leaf block as it is reached */
static inline void walk_lanes(const struct ofb_dtree *t, uint64_t walk, uint32_t *cur, const uint64_t (*kw)[DT_MAXW])
{
    const struct snode *sn = t->sn;
#if defined(__x86_64__) && defined(__GNUC__)
    if (t->simd) {
        __m128i kx[DT_LANES];
        for (unsigned j = 0; j < DT_LANES; j++)
            kx[j] = _mm_xor_si128(_mm_load_si128((const __m128i *)kw[j]), _mm_set1_epi8((char)0x80));
        while (walk) {
            for (uint64_t w = walk; w; w &= w - 1) {
                unsigned x = (unsigned)__builtin_ctzll(w);
                walk_advance(t, cur, &walk, x, sn_step_sse(&sn[cur[x]], kx[x % DT_LANES]));
            }
        }
        return;
    }
#endif
    while (walk) {
        for (uint64_t w = walk; w; w &= w - 1) {
            unsigned x = (unsigned)__builtin_ctzll(w);
            walk_advance(t, cur, &walk, x, sn_step_scalar(&sn[cur[x]], (const uint8_t *)kw[x % DT_LANES]));
        }
    }
}

/* Batches of DT_LANES keys: every tree's walk for every key interleaved (up
 * to 64 independent chains of misses), then the leaves scanned tree by tree
 * (a tree whose best rank cannot beat a key's match is not scanned): the
 * leaf blocks of the first tree were prefetched while the later trees were
 * walked. */
void ofb_dtree_lookup_batch(const struct ofb_dtree *t, const uint8_t *const keys[], size_t n, uint64_t v,
                            uint32_t rank_out[])
{
    _Static_assert(DT_LANES * DT_MAX_TREES <= 64, "walk mask: 64 bits");
    if (t->dfa) {
        if (t->flat)
            ofb_dflat_lookup_batch(t->flat, keys, n, rank_out);
        else
            ofb_bdfa_lookup_batch(t->dfa, keys, n, rank_out);
        if (likely(all_live_at(t, v))) {
            for (size_t i = 0; i < n; i++)   /* the caller reads the winners' rule info next */
                if (rank_out[i] != DT_NONE)
                    __builtin_prefetch(&t->ri[rank_out[i]]);
            return;
        }
        for (size_t i = 0; i < n; i++)
            if (rank_out[i] != DT_NONE && !live(t, rank_out[i], v))
                rank_out[i] = tree_lookup(t, keys[i], v);
        return;
    }
    for (size_t base = 0; base < n; base += DT_LANES) {
        unsigned m = n - base < DT_LANES ? (unsigned)(n - base) : DT_LANES;
        uint32_t cur[DT_MAX_TREES * DT_LANES], best[DT_LANES];
        uint64_t kw[DT_LANES][DT_MAXW] __attribute__((aligned(16)));
        for (unsigned j = 0; j < m; j++) {
            best[j] = DT_NONE;
            key_words(t, keys[base + j], kw[j]);
        }
        for (unsigned j = m; j < DT_LANES; j++)
            memset(kw[j], 0, 16);
        uint64_t lanes = m == 64 ? ~0ull : (1ull << m) - 1, walk = 0;
        for (uint32_t g = 0; g < t->ntrees; g++) {
            for (unsigned j = 0; j < m; j++)
                cur[g * DT_LANES + j] = t->sroot[g];
            if (!(t->sroot[g] & SN_LEAF))   /* a tree may be one leaf */
                walk |= lanes << (g * DT_LANES);
        }
        walk_lanes(t, walk, cur, (const uint64_t (*)[DT_MAXW])kw);
#ifdef DT_NOSCAN   /* probe: the walks alone (the answer is wrong on purpose) */
        for (uint32_t x = 0; x < t->ntrees * DT_LANES; x++) {
            static volatile uint32_t sink;
            sink += cur[x];
        }
        memcpy(rank_out + base, best, sizeof(uint32_t) * m);
        continue;
#endif
        /* the leaves' heads are in flight: filter, prefetch each first candidate entry */
        uint32_t cand[DT_MAX_TREES * DT_LANES];
        for (uint32_t g = 0; g < t->ntrees; g++)
            for (unsigned j = 0; j < m; j++)
                cand[g * DT_LANES + j] = leaf_cand(t, cur[g * DT_LANES + j], kw[j], true);
        for (uint32_t g = 0; g < t->ntrees; g++)
            for (unsigned j = 0; j < m; j++)
                if (best[j] > t->tmin[g])
                    best[j] = scan_leaf_c(t, cur[g * DT_LANES + j], cand[g * DT_LANES + j], kw[j], v, best[j]);
        for (unsigned j = 0; j < m; j++)   /* the caller reads the winners' rule info next */
            if (best[j] != DT_NONE)
                __builtin_prefetch(&t->ri[best[j]]);
        memcpy(rank_out + base, best, sizeof(uint32_t) * m);
    }
}
