/* SPDX-License-Identifier: Apache-2.0 */
/* Byte-stride DFA over a rule set: see dfa.h. */
#include "dfa.h"
#include "partition.h"
#include "hugepage.h"
#include "classifier.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define DFA_MAX_GROUPS 8
#ifndef DFA_LANES
#define DFA_LANES 32           /* keys walked interleaved per group by the batch lookup (16: 5-8 % slower walk on
                                  the one-DFA cb sets, measured) */
#endif
#define DFA_KL_MAX 255
#ifndef DFA_ONE_STATES_PER_RULE
#define DFA_ONE_STATES_PER_RULE 4   /* the first attempt, all rules in one DFA, gives up past this x rules + 4096 */
#endif
#ifndef DFA_STATES_PER_RULE
#define DFA_STATES_PER_RULE 32   /* states all groups and attempts may create: this x rules + 4096 */
#endif
#ifndef DFA_AUTO_MAX_STATES
#define DFA_AUTO_MAX_STATES (1u << 18)   /* OFB_BDFA_AUTO: the partitioned DFA's states in all (dfa.h) */
#endif
#define FIN 0x80000000u        /* build: child encoding flag (payload = rank + 1, 0 = none) */
/* ref: bit 0 final (rank + 1 in the bits above, 0 = none); else bits 1-2 the
 * node type and bits 3.. its offset in 16-byte units (see dfa.h) */
#define REF_FINAL 1u
#define REF_RANGE16 0u
#define REF_RANGE64 2u
#define REF_FULL 4u
#define REF_PATH 6u
#define REF_TYPE 6u
#define PATH_MAX 8             /* checks per path node */
#define FINAL_REF(payload) ((payload) << 1 | REF_FINAL)
#define NODE_OFF(ref) ((size_t)((ref) >> 3) << 4)
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* build: a path not laid out yet: check i (key[pos[i]] & m[i]) == v[i], the
 * first failing check i goes to ref[i], all passing to ref[len] */
struct pend {
    uint8_t len, pos[PATH_MAX], m[PATH_MAX], v[PATH_MAX];
    uint32_t ref[PATH_MAX + 1];
};

struct ofb_bdfa {
    uint32_t key_len, ngroups;
    uint32_t root[DFA_MAX_GROUPS];
    unsigned simd;
    uint8_t *nodes;            /* 16-byte units (see dfa.h, Layout) */
    size_t nused, ncap;        /* bytes */
    void *region;              /* nodes moved into a huge-page mapping (or NULL) */
    size_t region_bytes;
    uint64_t nnodes, nfull, npath;
    bool paths;                /* build: path nodes (keys <= 16 bytes) */
    bool narrow;               /* build: only range16 and path nodes (wider ones as two range16 levels) */
    struct pend *pend;         /* build: pending paths of the group being laid out */
    uint64_t npend, cappend;
    uint64_t *dd, ddcap;       /* build: node dedupe (hash, ref) */
    size_t bytes;
    double build_s;
};

/* ---------- build ---------- */

struct layer {
    uint32_t *pool;            /* the states' rank lists, back to back */
    uint64_t np, capp;
    uint64_t *off;             /* state i = pool[off[i] .. off[i+1]) */
    uint64_t ns, caps;
    uint32_t *ht;              /* open addressing: state id + 1, 0 = empty */
    uint64_t htcap;
    uint64_t *tf;              /* transitions of state i: tf[i] .. tf[i+1] */
    uint8_t *tb;               /* interval start */
    uint32_t *tc;              /* child: FIN | payload, or a state id of the next layer */
    uint64_t nt, capt;
};

struct gctx {
    uint32_t kl, nwk, depth;   /* depth: positions that any rule of the group cares about */
    const uint64_t *rw;
    uint8_t ord[DFA_KL_MAX];
    uint8_t *lastc;            /* per rank: 1 + the last order position it cares about */
    struct layer *L;           /* depth + 1 layers */
    uint64_t mem, max_mem;
    uint64_t max_out;          /* all groups' nodes */
    uint64_t states_left;      /* states all attempts may still create (DFA_STATES_PER_RULE) */
    bool gave_up;              /* states_left ran out: the rule set does not suit a DFA */
    bool over;                 /* past max_mem (split the group) */
    bool oom;
    bool key_order, stats;     /* tuning: dfa_key_order, dfa_stats */
    bool part_stats;           /* tuning: dtree_stats (the shared partition's groups) */
    /* per-state scratch */
    uint32_t *tmp;
    uint64_t captmp;
};

static inline uint8_t vbyte(const struct gctx *g, uint32_t r, uint32_t p)
{
    return ((const uint8_t *)(g->rw + (size_t)r * 2 * g->nwk))[p];
}

static inline uint8_t mbyte(const struct gctx *g, uint32_t r, uint32_t p)
{
    return ((const uint8_t *)(g->rw + (size_t)r * 2 * g->nwk + g->nwk))[p];
}

static bool gx_grow(struct gctx *g, void **p, uint64_t *cap, uint64_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint64_t nc = *cap ? *cap * 2 : 1024;
    while (nc < need)
        nc *= 2;
    if (g->mem + (nc - *cap) * elem > g->max_mem) {
        g->over = true;
        return false;
    }
    void *x = realloc(*p, nc * elem);
    if (!x) {
        g->oom = true;
        return false;
    }
    g->mem += (nc - *cap) * elem;
    *p = x;
    *cap = nc;
    return true;
}

static inline uint64_t hash_list(const uint32_t *a, uint32_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= a[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static bool ht_rehash(struct gctx *g, struct layer *L)
{
    uint64_t nc = L->htcap ? L->htcap * 2 : 1024;
    if (g->mem + nc * 4 > g->max_mem) {
        g->over = true;
        return false;
    }
    uint32_t *h = calloc(nc, 4);
    if (!h) {
        g->oom = true;
        return false;
    }
    for (uint64_t s = 0; s < L->ns; s++) {
        uint64_t i = hash_list(L->pool + L->off[s], (uint32_t)(L->off[s + 1] - L->off[s])) & (nc - 1);
        while (h[i])
            i = (i + 1) & (nc - 1);
        h[i] = (uint32_t)s + 1;
    }
    g->mem += (nc - L->htcap) * 4;
    free(L->ht);
    L->ht = h;
    L->htcap = nc;
    return true;
}

/* the state of layer d with rank list a[0..n), added if new; UINT32_MAX on failure */
static uint32_t intern(struct gctx *g, uint32_t d, const uint32_t *a, uint32_t n)
{
    struct layer *L = &g->L[d];
    if ((L->ns + 1) * 2 > L->htcap && !ht_rehash(g, L))
        return UINT32_MAX;
    uint64_t i = hash_list(a, n) & (L->htcap - 1);
    for (; L->ht[i]; i = (i + 1) & (L->htcap - 1)) {
        uint32_t s = L->ht[i] - 1;
        if (L->off[s + 1] - L->off[s] == n && !memcmp(L->pool + L->off[s], a, 4ull * n))
            return s;
    }
    if (!g->states_left) {
        g->over = g->gave_up = true;
        return UINT32_MAX;
    }
    g->states_left--;
    if (L->ns + 1 >= FIN || !gx_grow(g, (void **)&L->pool, &L->capp, L->np + n, 4) ||
        !gx_grow(g, (void **)&L->off, &L->caps, L->ns + 2, 8))
        return UINT32_MAX;
    if (!L->ns)
        L->off[0] = 0;
    memcpy(L->pool + L->np, a, 4ull * n);
    L->np += n;
    L->off[L->ns + 1] = L->np;
    L->ht[i] = (uint32_t)L->ns + 1;
    return (uint32_t)L->ns++;
}

/* child encoding of a list at depth e (the bytes before order position e read) */
static inline uint32_t encode(struct gctx *g, uint32_t e, const uint32_t *a, uint32_t n)
{
    if (!n)
        return FIN;
    if (e >= g->depth || g->lastc[a[0]] <= e)
        return FIN | (a[0] + 1);
    return intern(g, e, a, n);
}

static inline bool is_prefix_mask(uint8_t m)
{
    uint8_t inv = (uint8_t)~m;
    return !(inv & (uint8_t)(inv + 1));   /* ~m = 0...01...1 */
}

/* the transitions of state s of layer d */
static bool expand(struct gctx *g, uint32_t d, uint64_t s)
{
    struct layer *L = &g->L[d];
    uint32_t p = g->ord[d], e = d + 1;
    uint64_t o = L->off[s];
    uint32_t n = (uint32_t)(L->off[s + 1] - o);
    uint8_t mark[257];
    memset(mark, 0, sizeof(mark));
    mark[0] = 1;
    bool gen = false;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = L->pool[o + i];
        uint8_t m = mbyte(g, r, p), v = vbyte(g, r, p);
        if (!m)
            continue;
        if (!is_prefix_mask(m)) {
            gen = true;
            break;
        }
        mark[v] = 1;
        mark[(unsigned)(v | (uint8_t)~m) + 1] = 1;
    }
    uint8_t start[256], ei[256];
    unsigned k = 0;
    for (unsigned x = 0; x < 256; x++) {
        if (gen || mark[x])
            start[k++] = (uint8_t)x;
        ei[x] = (uint8_t)(k - 1);
    }
    /* pass 0 counts, pass 1 fills: rule r goes into the intervals it accepts
     * that are not closed yet (a done rule closes the intervals it enters) */
    uint32_t cnt[256], pos[256];
    uint8_t closed[256];
    for (int pass = 0; pass < 2; pass++) {
        memset(closed, 0, k);
        if (pass == 0) {
            memset(cnt, 0, sizeof(cnt[0]) * k);
        } else {
            uint64_t tot = 0;
            for (unsigned i = 0; i < k; i++)
                pos[i] = (uint32_t)tot, tot += cnt[i];
            if (!gx_grow(g, (void **)&g->tmp, &g->captmp, tot + 1, 4))
                return false;
        }
        for (uint32_t j = 0; j < n; j++) {
            uint32_t r = L->pool[o + j];
            uint8_t m = mbyte(g, r, p), v = vbyte(g, r, p);
            bool done = g->lastc[r] <= e;
            unsigned a = 0, b = k - 1;
            bool gen_r = m && !is_prefix_mask(m);
            if (m && !gen_r) {
                a = ei[v];
                b = ei[(uint8_t)(v | (uint8_t)~m)];
            }
            for (unsigned i = a; i <= b; i++) {
                if (closed[i] || (gen_r && (start[i] & m) != v))
                    continue;
                if (pass)
                    g->tmp[pos[i]++] = r;
                else
                    cnt[i]++;
                closed[i] = done;
            }
        }
    }
    /* encode the children, merge adjacent equal ones */
    uint64_t capt = L->capt;
    if (!gx_grow(g, (void **)&L->tb, &L->capt, L->nt + k, 1))
        return false;
    if (L->capt != capt) {   /* tc: the same capacity as tb */
        uint32_t *x = realloc(L->tc, L->capt * 4);
        if (!x) {
            g->oom = true;
            return false;
        }
        L->tc = x;
        g->mem += (L->capt - capt) * 4;
    }
    uint64_t t0 = L->nt;
    for (unsigned i = 0; i < k; i++) {
        uint32_t c = encode(g, e, g->tmp + pos[i] - cnt[i], cnt[i]);
        if (c == UINT32_MAX)
            return false;
        if (L->nt > t0 && L->tc[L->nt - 1] == c)
            continue;
        L->tb[L->nt] = start[i];
        L->tc[L->nt++] = c;
    }
    L->tf[s + 1] = L->nt;
    return true;
}

/* ---------- layout ---------- */

static bool out_reserve(struct ofb_bdfa *t, struct gctx *g, size_t need)
{
    if (t->nused + need <= t->ncap)
        return true;
    size_t nc = t->ncap ? t->ncap * 2 : 1 << 16;
    while (nc < t->nused + need)
        nc *= 2;
    if (nc > (size_t)1 << 34 || nc > g->max_out) {
        g->over = true;
        return false;
    }
    uint8_t *x = aligned_alloc(64, nc);
    if (!x) {
        g->oom = true;
        return false;
    }
    if (t->nused)
        memcpy(x, t->nodes, t->nused);
    free(t->nodes);
    t->nodes = x;
    t->ncap = nc;
    return true;
}

/* dedupe of emitted nodes (build only): open addressing over (hash, ref) */
static bool dd_grow(struct ofb_bdfa *t, struct gctx *g)
{
    uint64_t nc = t->ddcap ? t->ddcap * 2 : 1 << 16;
    uint64_t *h = calloc(nc, 16);
    if (!h) {
        g->oom = true;
        return false;
    }
    for (uint64_t i = 0; i < t->ddcap; i++) {
        if (!t->dd[2 * i + 1])
            continue;
        uint64_t j = t->dd[2 * i] & (nc - 1);
        while (h[2 * j + 1])
            j = (j + 1) & (nc - 1);
        h[2 * j] = t->dd[2 * i], h[2 * j + 1] = t->dd[2 * i + 1];
    }
    free(t->dd);
    t->dd = h;
    t->ddcap = nc;
    return true;
}

/* append node bytes buf[0..asz) of this type (aligned to align bytes), or the ref of an identical node */
static uint32_t emit_raw(struct ofb_bdfa *t, struct gctx *g, const uint8_t *buf, size_t asz, uint32_t type,
                         size_t align)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ asz ^ type;
    for (size_t i = 0; i < asz; i += 8) {
        uint64_t w;
        memcpy(&w, buf + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    if ((t->nnodes + 1) * 2 > t->ddcap && !dd_grow(t, g))
        return UINT32_MAX;
    uint64_t j = h & (t->ddcap - 1);
    for (; t->dd[2 * j + 1]; j = (j + 1) & (t->ddcap - 1)) {
        uint32_t r = (uint32_t)t->dd[2 * j + 1];
        if (t->dd[2 * j] == h && (r & REF_TYPE) == type && NODE_OFF(r) + asz <= t->nused &&
            !memcmp(t->nodes + NODE_OFF(r), buf, asz))
            return r;   /* (nodes of earlier groups are reused too; an entry left by a failed group, whose nodes
                           were dropped, is only taken when the bytes there now are the same node) */
    }
    size_t pad = (align - (t->nused & (align - 1))) & (align - 1);
    if (!out_reserve(t, g, asz + pad))
        return UINT32_MAX;
    if (((t->nused + pad) >> 4) >= (1u << 29) - 1) {
        g->over = true;
        return UINT32_MAX;
    }
    memset(t->nodes + t->nused, 0, pad);
    t->nused += pad;
    memcpy(t->nodes + t->nused, buf, asz);
    uint32_t ref = (uint32_t)(t->nused >> 4) << 3 | type;
    t->dd[2 * j] = h, t->dd[2 * j + 1] = ref;
    t->nused += asz;
    t->nnodes++;
    t->nfull += type == REF_FULL;
    t->npath += type == REF_PATH;
    return ref;
}

/* a node reading key byte p with k intervals starting at st[], children kid[];
 * identical nodes are emitted once */
static uint32_t emit(struct ofb_bdfa *t, struct gctx *g, uint32_t p, unsigned k, const uint8_t *st,
                     const uint32_t *kid)
{
    if (k > 16 && t->narrow) {
        /* two levels of range16 nodes on the same byte: chunks of <= 16 intervals
         * (one node type on the walk: no mispredicted type branch) */
        uint8_t cst[16], zst[16];
        uint32_t cref[16];
        unsigned per = (k + 15) / 16, nc = 0;
        for (unsigned a = 0; a < k; a += per, nc++) {
            unsigned kc = k - a < per ? k - a : per;
            memcpy(zst, st + a, kc);
            zst[0] = 0;   /* the parent sends only [st[a], st[a + kc]) here */
            cst[nc] = st[a];
            cref[nc] = kc == 1 ? kid[a] : emit(t, g, p, kc, zst, kid + a);
            if (cref[nc] == UINT32_MAX)
                return UINT32_MAX;
        }
        return emit(t, g, p, nc, cst, cref);
    }
    uint8_t buf[64 + 1024] __attribute__((aligned(16)));
    size_t hsz = k <= 16 ? 16 : k <= 64 ? 64 : 0, sz;
    uint32_t type;
    if (hsz) {
        type = k <= 16 ? REF_RANGE16 : REF_RANGE64;
        memset(buf, 0x7f, hsz);
        for (unsigned j = 0; j + 1 < k; j++)
            buf[j] = (uint8_t)((st[j + 1] - 1) ^ 0x80);
        buf[hsz - 1] = (uint8_t)p;
        memcpy(buf + hsz, kid, 4ull * k);
        sz = hsz + 4ull * k;
    } else {
        type = REF_FULL;
        memset(buf, 0, 16);
        buf[15] = (uint8_t)p;
        uint32_t *kd = (uint32_t *)(buf + 16);
        for (unsigned j = 0; j < k; j++) {
            unsigned end = j + 1 < k ? st[j + 1] : 256;
            for (unsigned x = st[j]; x < end; x++)
                kd[x] = kid[j];
        }
        sz = 16 + 1024;
    }
    size_t asz = (sz + 15) & ~(size_t)15;
    memset(buf + sz, 0, asz - sz);
    return emit_raw(t, g, buf, asz, type, 16);
}

/* a path node (dfa.h): up to PATH_MAX (pos, m, v) checks, 64 bytes, one cache line */
static uint32_t emit_path(struct ofb_bdfa *t, struct gctx *g, const struct pend *x)
{
    if (x->len == 1) {   /* a range node does the same in 16 + 4k bytes */
        uint8_t st[3];
        uint32_t kid[3];
        unsigned k = 0, v = x->v[0], e = v | (uint8_t)~x->m[0];
        if (v > 0)
            st[k] = 0, kid[k++] = x->ref[0];
        st[k] = (uint8_t)v, kid[k++] = x->ref[1];
        if (e < 255)
            st[k] = (uint8_t)(e + 1), kid[k++] = x->ref[0];
        return emit(t, g, x->pos[0], k, st, kid);
    }
    uint8_t buf[64] __attribute__((aligned(16)));
    memset(buf, 0, sizeof(buf));
    for (unsigned i = 0; i < PATH_MAX; i++) {
        buf[i] = i < x->len ? x->pos[i] : 0x80;   /* pshufb: 0x80 gives 0, & m 0 == v 0: passes */
        buf[8 + i] = i < x->len ? x->m[i] : 0;
        buf[16 + i] = i < x->len ? x->v[i] : 0;
    }
    buf[24] = x->len;
    memcpy(buf + 28, x->ref, 4u * (x->len + 1u));
    return emit_raw(t, g, buf, 64, REF_PATH, 64);
}

/* the ref of state c of the next layer, its pending path laid out now if it has one */
static uint32_t materialize(struct ofb_bdfa *t, struct gctx *g, uint32_t *nref, uint32_t *npi, uint32_t c)
{
    if (npi[c] == UINT32_MAX)
        return nref[c];
    uint32_t r = emit_path(t, g, &t->pend[npi[c]]);
    if (r != UINT32_MAX)
        nref[c] = r, npi[c] = UINT32_MAX;
    return r;
}

static void free_layers(struct gctx *g)
{
    for (uint32_t d = 0; g->L && d <= g->depth; d++) {
        free(g->L[d].pool), free(g->L[d].off), free(g->L[d].ht);
        free(g->L[d].tf), free(g->L[d].tb), free(g->L[d].tc);
    }
    free(g->L);
    g->L = NULL;
    free(g->tmp);
    g->tmp = NULL;
    g->captmp = 0;
}

/* the DFA of the ranks idx[0..m) (ascending): its root ref in *root */
static bool build_group(struct ofb_bdfa *t, struct gctx *g, const uint32_t *idx, uint32_t m, uint32_t *root)
{
    uint32_t kl = g->kl;
    uint64_t care[DFA_KL_MAX] = { 0 };
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t p = 0; p < kl; p++)
            care[p] += (uint64_t)__builtin_popcount(mbyte(g, idx[i], p));
    uint32_t nord = 0;
    for (uint32_t p = 0; p < kl; p++)
        if (care[p])
            g->ord[nord++] = (uint8_t)p;
    for (uint32_t i = 1; i < nord && !g->key_order; i++)   /* key_order: bytes in key order (measurement) */   /* decreasing care, stable */
        for (uint32_t j = i; j && care[g->ord[j]] > care[g->ord[j - 1]]; j--) {
            uint8_t x = g->ord[j]; g->ord[j] = g->ord[j - 1]; g->ord[j - 1] = x;
        }
    g->depth = nord;
    uint32_t posof[DFA_KL_MAX];
    for (uint32_t d = 0; d < nord; d++)
        posof[g->ord[d]] = d;
    for (uint32_t i = 0; i < m; i++) {
        uint32_t lc = 0;
        for (uint32_t p = 0; p < kl; p++)
            if (mbyte(g, idx[i], p) && posof[p] + 1 > lc)
                lc = posof[p] + 1;
        g->lastc[idx[i]] = (uint8_t)lc;
    }
    g->L = calloc(nord + 1, sizeof(struct layer));
    if (!g->L) {
        g->oom = true;
        return false;
    }
    uint32_t rc = encode(g, 0, idx, m);
    if (rc == UINT32_MAX)
        goto fail;
    for (uint32_t d = 0; d < nord; d++) {
        struct layer *L = &g->L[d];
        uint64_t capf = 0;
        if (!gx_grow(g, (void **)&L->tf, &capf, L->ns + 1, 8))
            goto fail;
        L->tf[0] = 0;
        for (uint64_t s = 0; s < L->ns; s++)
            if (!expand(g, d, s))
                goto fail;
        /* the lists of layer d are no longer needed */
        g->mem -= L->capp * 4 + L->caps * 8 + L->htcap * 4;
        free(L->pool), free(L->off), free(L->ht);
        L->pool = NULL, L->off = NULL, L->ht = NULL;
        L->capp = L->caps = L->htcap = 0;
    }
    /* layout from the last layer up: ref[d][s], or a pending path (pi[d][s]) */
    uint32_t *nref = NULL, *npi = NULL;   /* layer d + 1 */
    bool paths = t->paths;
    for (uint32_t d = nord; d-- > 0;) {
        struct layer *L = &g->L[d];
        uint32_t *ref = malloc(4 * (L->ns + 1)), *pi = malloc(4 * (L->ns + 1));
        if (!ref || !pi) {
            free(ref), free(pi), free(nref), free(npi);
            g->oom = true;
            goto fail;
        }
        for (uint64_t s = 0; s < L->ns; s++) {
            uint64_t a = L->tf[s], b = L->tf[s + 1];
            unsigned k = (unsigned)(b - a);
            const uint32_t *tc = L->tc + a;
            const uint8_t *tb = L->tb + a;
            pi[s] = UINT32_MAX;
            if (k == 1) {   /* all 256 values: the child itself */
                if (tc[0] & FIN)
                    ref[s] = FINAL_REF(tc[0] & ~FIN);
                else
                    ref[s] = nref[tc[0]], pi[s] = npi[tc[0]];
                continue;
            }
            /* a path step: one aligned block [v, v | ~m] to child C, every other value to one child F */
            int ci = -1;
            unsigned lo = 0, hi = 0;
            if (paths && k == 3 && tc[0] == tc[2])
                ci = 1, lo = tb[1], hi = tb[2] - 1u;
            else if (paths && k == 2) {
                unsigned s1 = tb[1];
                bool blk0 = !(s1 & (s1 - 1)), blk1 = !((256 - s1) & (255 - s1));   /* [0, s1) / [s1, 256) aligned */
                bool st0 = !(tc[0] & FIN), st1 = !(tc[1] & FIN);
                bool pend0 = st0 && npi[tc[0]] != UINT32_MAX, pend1 = st1 && npi[tc[1]] != UINT32_MAX;
                if (blk1 && (pend1 || (st1 && !pend0) || !blk0))
                    ci = 1, lo = s1, hi = 255;
                else if (blk0)
                    ci = 0, lo = 0, hi = s1 - 1;
            }
            if (ci >= 0 && ((hi - lo + 1) & (hi - lo)) == 0 && (lo & (hi - lo)) == 0) {
                uint32_t cf = tc[ci == 1 ? 0 : 1], cc = tc[ci];
                uint32_t fref = cf & FIN ? FINAL_REF(cf & ~FIN) : materialize(t, g, nref, npi, cf);
                if (fref == UINT32_MAX)
                    goto lfail;
                struct pend x = { .len = 1 };
                x.pos[0] = g->ord[d], x.m[0] = (uint8_t)~(hi - lo), x.v[0] = (uint8_t)lo, x.ref[0] = fref;
                if (cc & FIN) {
                    x.ref[1] = FINAL_REF(cc & ~FIN);
                } else if (npi[cc] != UINT32_MAX && t->pend[npi[cc]].len < PATH_MAX) {
                    const struct pend *y = &t->pend[npi[cc]];
                    memcpy(x.pos + 1, y->pos, y->len), memcpy(x.m + 1, y->m, y->len), memcpy(x.v + 1, y->v, y->len);
                    memcpy(x.ref + 1, y->ref, 4u * (y->len + 1u));
                    x.len = (uint8_t)(1 + y->len);
                } else {
                    x.ref[1] = materialize(t, g, nref, npi, cc);
                    if (x.ref[1] == UINT32_MAX)
                        goto lfail;
                }
                if (t->npend == t->cappend) {
                    uint64_t nc = t->cappend ? t->cappend * 2 : 4096;
                    struct pend *y = realloc(t->pend, nc * sizeof(*y));
                    if (!y) {
                        g->oom = true;
                        goto lfail;
                    }
                    t->pend = y, t->cappend = nc;
                }
                t->pend[t->npend] = x;
                pi[s] = (uint32_t)t->npend++;
                ref[s] = UINT32_MAX;
                continue;
            }
            uint32_t kid[256];
            for (unsigned i = 0; i < k; i++) {
                uint32_t c = tc[i];
                kid[i] = c & FIN ? FINAL_REF(c & ~FIN) : materialize(t, g, nref, npi, c);
                if (kid[i] == UINT32_MAX)
                    goto lfail;
            }
            ref[s] = emit(t, g, g->ord[d], k, tb, kid);
            if (ref[s] == UINT32_MAX)
                goto lfail;
            continue;
        lfail:
            free(ref), free(pi), free(nref), free(npi);
            goto fail;
        }
        if (g->stats)
            fprintf(stderr, "dfa:  layer %u (byte %u): %llu states, %llu transitions; nodes so far %llu (%llu full, %llu paths), %zu B\n",
                    d, g->ord[d], (unsigned long long)L->ns, (unsigned long long)L->nt,
                    (unsigned long long)t->nnodes, (unsigned long long)t->nfull, (unsigned long long)t->npath, t->nused);
        free(nref), free(npi);
        nref = ref, npi = pi;
        free(L->tf), free(L->tb), free(L->tc);
        L->tf = NULL, L->tb = NULL, L->tc = NULL;
    }
    *root = rc & FIN ? FINAL_REF(rc & ~FIN) : materialize(t, g, nref, npi, rc);
    free(nref), free(npi);
    t->npend = 0;
    free_layers(g);
    return *root != UINT32_MAX;
fail:
    t->npend = 0;
    free_layers(g);
    return false;
}

/* ---------- groups ---------- */

static inline bool small_at(const struct gctx *g, uint32_t r, uint32_t p)
{
    return mbyte(g, r, p) >= 0xf0;   /* range spans < 16 values */
}

static bool g_small(const void *ctx, uint32_t r, uint32_t p)
{
    return small_at(ctx, r, p);
}

static uint8_t g_low(const void *ctx, uint32_t r, uint32_t p)
{
    return vbyte(ctx, r, p);
}

/* the shared partition (partition.h, ofb_dt_partition) over this build's ranks. */
static unsigned first_groups(const struct gctx *g, uint32_t n, uint8_t *grp, unsigned maxg)
{
    return ofb_dt_partition(g->kl, n, maxg, g, g_small, g_low, grp, g->part_stats);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* idx[0..m) ordered by care bits (wildest first), then rank: no global state,
 * two classifiers may build at once on their rebuild threads */
static bool sort_by_wildness(const struct gctx *g, uint32_t *idx, uint32_t m)
{
    uint64_t *w = malloc(8ull * m + 8);
    if (!w)
        return false;
    for (uint32_t i = 0; i < m; i++) {
        unsigned c = 0;
        for (uint32_t p = 0; p < g->kl; p++)
            c += (unsigned)__builtin_popcount(mbyte(g, idx[i], p));
        w[i] = (uint64_t)c << 32 | idx[i];
    }
    qsort(w, m, 8, cmp_u64);
    for (uint32_t i = 0; i < m; i++)
        idx[i] = (uint32_t)w[i];
    free(w);
    return true;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

static void to_hugepages(struct ofb_bdfa *t)
{
    if (t->nused < OFB_HP_SIZE)
        return;
    char *r = ofb_hp_map(t->nused);
    if (!r)
        return;
    memcpy(r, t->nodes, t->nused);
    free(t->nodes);
    t->nodes = (uint8_t *)r;
    t->ncap = t->nused;
    t->region = r;
    t->region_bytes = t->nused;
}

struct ofb_bdfa *ofb_bdfa_build(uint32_t key_len, uint32_t nwk, const uint64_t *rw, uint32_t n, unsigned flags,
                                uint64_t max_bytes, const struct ofb_cls_tuning *tu, int *over_budget, char *err,
                                size_t errlen)
{
    static const struct ofb_cls_tuning none;
    if (!tu)
        tu = &none;
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    if (!key_len || key_len > DFA_KL_MAX) {
        snprintf(err, errlen, "dfa: key_len %u is not in 1..%u", key_len, DFA_KL_MAX);
        return NULL;
    }
    if (n >= (1u << 30) - 1) {
        snprintf(err, errlen, "dfa: %u rules is more than 2^30-2", n);
        return NULL;
    }
    if (!max_bytes)
        max_bytes = (uint64_t)1 << 30;
    uint64_t group_max = max_bytes;
    if (tu->dfa_group_mb && tu->dfa_group_mb << 20 < group_max)   /* split a group whose build passes this */
        group_max = tu->dfa_group_mb << 20;
    struct ofb_bdfa *t = calloc(1, sizeof(*t));
    uint8_t *grp = malloc(n + 1);
    uint32_t *idx = malloc(4ull * (n + 1));
    uint32_t *gstart = malloc(4ull * (DFA_MAX_GROUPS + 2) * 2);
    unsigned spr = DFA_STATES_PER_RULE;
    if (tu->dfa_states_per_rule)
        spr = tu->dfa_states_per_rule;
    uint64_t state_cap = (uint64_t)spr * n + 4096, one_cap = (uint64_t)DFA_ONE_STATES_PER_RULE * n + 4096;
    if (tu->dfa_max_states)   /* tests: both caps, exactly */
        state_cap = one_cap = tu->dfa_max_states;
    struct gctx g = { .kl = key_len, .nwk = nwk, .rw = rw, .max_mem = group_max, .max_out = max_bytes,
                      .states_left = state_cap, .key_order = tu->dfa_key_order, .stats = tu->dfa_stats,
                      .part_stats = tu->dtree_stats };
    if (over_budget)
        *over_budget = 0;
    g.lastc = malloc(n + 1);
    if (!t || !grp || !idx || !gstart || !g.lastc) {
        snprintf(err, errlen, "dfa: out of memory building the DFA of %u rules", n);
        goto fail;
    }
    t->key_len = key_len;
    t->simd = flags & OFB_BDFA_SIMD;
    t->paths = key_len <= 16 && !tu->dfa_no_paths;   /* dfa_no_paths: no path nodes (measurement) */
    t->narrow = tu->dfa_narrow;   /* > 16 intervals as two range16 levels, not range64/full nodes
                                     (measurement: 0.9x the batched rate on cb_acl) */
    /* First all rules in one DFA: priority pruning then drops a rule wherever
     * a better one that covers the rest of the key was read, also across what
     * the partition below would put in different groups (whose DFAs each have
     * to spell out their own rules).  ClassBench-like 100k sets: 0.7-22 B/rule
     * this way, 290-420 B/rule partitioned (README.md "dfa").  Past
     * DFA_ONE_STATES_PER_RULE states per rule + 4096 it gives up and the rules
     * are partitioned.  OFB_DFA_GROUPS=N (1..4): partition into at most N
     * first groups at once (measurement). */
    unsigned forced = tu->dfa_groups >= 1 && tu->dfa_groups <= 4 ? tu->dfa_groups : 0;
    if (!forced && n) {
        for (uint32_t r = 0; r < n; r++)
            idx[r] = r;
        uint32_t root;
        g.states_left = one_cap;
        g.mem = 0, g.over = false, g.oom = false, g.gave_up = false;
        if (build_group(t, &g, idx, n, &root)) {
            t->root[t->ngroups++] = root;
            goto built;
        }
        if (g.oom) {
            snprintf(err, errlen, "dfa: out of memory building the DFA of %u rules", n);
            goto fail;
        }
        if (flags & OFB_BDFA_ONE) {
            snprintf(err, errlen, "dfa: one DFA of %u rules passes %llu states (asked for one DFA only)", n,
                     (unsigned long long)one_cap);
            if (over_budget)
                *over_budget = 1;
            goto fail;
        }
        t->nused = 0, t->nnodes = t->nfull = t->npath = 0;   /* (dedupe entries left behind are checked by content) */
        if ((flags & OFB_BDFA_AUTO) && !tu->dfa_max_states && state_cap > DFA_AUTO_MAX_STATES)
            state_cap = DFA_AUTO_MAX_STATES;
        g.states_left = state_cap, g.gave_up = false;
        if (tu->dfa_stats)
            fprintf(stderr, "dfa: one DFA of %u rules over %llu states: partitioned\n", n,
                    (unsigned long long)one_cap);
    }
    /* groups as spans of idx: [gs[i], ge[i]) */
    uint32_t *gs = gstart, *ge = gstart + DFA_MAX_GROUPS + 2;
    unsigned ng0 = n ? first_groups(&g, n, grp, forced ? forced : 4) : 0, ng = 0;
    uint32_t m = 0;
    for (unsigned k = 0; k < ng0; k++) {
        gs[ng] = m;
        for (uint32_t r = 0; r < n; r++)
            if (grp[r] == k)
                idx[m++] = r;
        ge[ng] = m;
        if (ge[ng] > gs[ng])
            ng++;
    }
    /* build each group; one that passes its budget is split in two (wildest
     * half apart) while there is room for another group */
    for (unsigned k = 0; k < ng;) {
        uint32_t root;
        size_t nused0 = t->nused;
        uint64_t nn0 = t->nnodes;
        g.mem = 0, g.over = false, g.oom = false;
        if (build_group(t, &g, idx + gs[k], ge[k] - gs[k], &root)) {
            t->root[t->ngroups++] = root;
            k++;
            continue;
        }
        t->nused = nused0, t->nnodes = nn0;
        if (g.oom) {
            snprintf(err, errlen, "dfa: out of memory building the DFA of %u rules", n);
            goto fail;
        }
        if (g.gave_up) {
            snprintf(err, errlen, "dfa: over budget: %u rules need more than %llu states", n,
                     (unsigned long long)state_cap);
            if (over_budget)
                *over_budget = 1;
            goto fail;
        }
        if (ng == DFA_MAX_GROUPS || ge[k] - gs[k] < 2 || t->nused + 1024 > max_bytes) {
            if (over_budget)
                *over_budget = 1;
            snprintf(err, errlen, "dfa: %u rules do not fit in %u groups of %llu MiB (group of %u rules over budget)",
                     n, DFA_MAX_GROUPS, (unsigned long long)(group_max >> 20), ge[k] - gs[k]);
            goto fail;
        }
        if (!sort_by_wildness(&g, idx + gs[k], ge[k] - gs[k])) {
            snprintf(err, errlen, "dfa: out of memory building the DFA of %u rules", n);
            goto fail;
        }
        uint32_t mid = gs[k] + (ge[k] - gs[k]) / 2;
        qsort(idx + gs[k], mid - gs[k], 4, cmp_u32);
        qsort(idx + mid, ge[k] - mid, 4, cmp_u32);
        memmove(gs + k + 1, gs + k, 4 * (ng - k));
        memmove(ge + k + 1, ge + k, 4 * (ng - k));
        ge[k] = mid, gs[k + 1] = mid;
        ng++;
        if (tu->dfa_stats)
            fprintf(stderr, "dfa: group over %llu MiB: split in two (%u groups)\n",
                    (unsigned long long)(group_max >> 20), ng);
    }
built:
    free(grp), free(idx), free(gstart), free(g.lastc);
    free(t->dd), free(t->pend);
    t->dd = NULL, t->pend = NULL;
    to_hugepages(t);
    t->bytes = sizeof(*t) + t->ncap;
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    t->build_s = (double)(ts1.tv_sec - ts0.tv_sec) + (double)(ts1.tv_nsec - ts0.tv_nsec) * 1e-9;
    if (tu->dfa_stats)
        fprintf(stderr, "dfa: %u rules, %u groups, %llu nodes, %zu bytes (%.1f B/rule), %.3f s\n", n, t->ngroups,
                (unsigned long long)t->nnodes, t->nused, n ? (double)t->nused / n : 0.0, t->build_s);
    return t;
fail:
    free(grp), free(idx), free(gstart), free(g.lastc);
    ofb_bdfa_free(t);
    return NULL;
}

void ofb_bdfa_free(struct ofb_bdfa *t)
{
    if (!t)
        return;
    if (t->region)
        ofb_hp_unmap(t->region, t->region_bytes);
    else
        free(t->nodes);
    free(t->dd);
    free(t->pend);
    free(t);
}

size_t ofb_bdfa_bytes(const struct ofb_bdfa *t) { return t ? t->bytes : 0; }
unsigned ofb_bdfa_groups(const struct ofb_bdfa *t) { return t ? t->ngroups : 0; }
uint64_t ofb_bdfa_states(const struct ofb_bdfa *t) { return t ? t->nnodes : 0; }
double ofb_bdfa_build_s(const struct ofb_bdfa *t) { return t ? t->build_s : 0; }

/* ---------- lookup ---------- */

#ifdef OFB_CLS_PROFILE
unsigned long ofb_prof_dfa_steps, ofb_prof_dfa_types[4];   /* cls-prof: per single lookup, by node type */
#endif

static inline uint32_t step_scalar(const uint8_t *nb, uint32_t ref, const uint8_t *key)
{
    const uint8_t *nd = nb + NODE_OFF(ref);
    uint32_t r;
    switch (ref & REF_TYPE) {
    case REF_FULL:
        return ((const uint32_t *)(nd + 16))[key[nd[15]]];
    case REF_PATH: {
        unsigned len = nd[24], i = 0;
        while (i < len && (key[nd[i]] & nd[8 + i]) == nd[16 + i])
            i++;
        memcpy(&r, nd + 28 + 4 * i, 4);
        return r;
    }
    default: {
        unsigned nt = ref & REF_RANGE64 ? 63 : 15, i = 0;   /* thresholds ascending, 0x7f-padded */
        int8_t x = (int8_t)(key[nd[nt]] ^ 0x80);
        while (i < nt && x > (int8_t)nd[i])
            i++;
        return ((const uint32_t *)(nd + nt + 1))[i];
    }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* key: key_len bytes; kx: the key in 16 bytes (path nodes, keys <= 16 bytes) */
__attribute__((target("sse4.2,popcnt")))
static inline uint32_t step_sse(const uint8_t *nb, uint32_t ref, const uint8_t *key, __m128i kx)
{
    const uint8_t *nd = nb + NODE_OFF(ref);
    switch (ref & REF_TYPE) {
    case REF_RANGE16: {
        __m128i bx = _mm_set1_epi8((char)(key[nd[15]] ^ 0x80));
        unsigned msk = (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(bx, _mm_load_si128((const __m128i *)nd)));
        return ((const uint32_t *)(nd + 16))[__builtin_popcount(msk & 0x7fff)];
    }
    case REF_FULL:
        return ((const uint32_t *)(nd + 16))[key[nd[15]]];
    case REF_PATH: {
        __m128i hdr = _mm_load_si128((const __m128i *)nd);
        __m128i x = _mm_and_si128(_mm_shuffle_epi8(kx, hdr), _mm_srli_si128(hdr, 8));
        unsigned eq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_loadl_epi64((const __m128i *)(nd + 16))));
        unsigned fail = ~eq & 0xffu;
        uint32_t r;
        memcpy(&r, nd + 28 + 4 * __builtin_ctz(fail | (1u << nd[24])), 4);
        return r;
    }
    default: {
        __m128i bx = _mm_set1_epi8((char)(key[nd[63]] ^ 0x80));
        uint64_t m0 = (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(bx, _mm_load_si128((const __m128i *)nd)));
        uint64_t m1 = (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(bx, _mm_load_si128((const __m128i *)nd + 1)));
        uint64_t m2 = (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(bx, _mm_load_si128((const __m128i *)nd + 2)));
        uint64_t m3 = (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(bx, _mm_load_si128((const __m128i *)nd + 3)));
        uint64_t m = m0 | m1 << 16 | m2 << 32 | (m3 & 0x7fff) << 48;
        return ((const uint32_t *)(nd + 64))[__builtin_popcountll(m)];
    }
    }
}
/* the key (key_len <= 16 bytes) zero-padded in a register, built from loads of
 * the key itself (a 16-byte load of freshly stored bytes would stall: no store
 * forwarding from several narrow stores to one wide load) */
static inline __m128i key16(const uint8_t *key, uint32_t kl)
{
    uint64_t lo = 0, hi = 0;
    if (kl >= 8) {
        memcpy(&lo, key, 8);
        if (kl > 8) {
            memcpy(&hi, key + kl - 8, 8);   /* overlapping, within the key */
            hi >>= 8 * (16 - kl);
        }
    } else {
        for (uint32_t i = 0; i < kl; i++)
            lo |= (uint64_t)key[i] << (8 * i);
    }
    return _mm_set_epi64x((long long)hi, (long long)lo);
}

/* the batch step for keys <= 16 bytes (k16: the key zero-padded to 16 bytes):
 * range16 and path nodes, the common ones, computed both ways from one load
 * and selected without a branch (their mix is unpredictable) */
__attribute__((target("sse4.2,popcnt")))
static inline uint32_t step_fast(const uint8_t *nb, uint32_t ref, const uint8_t *k16, __m128i kx)
{
    const uint8_t *nd = nb + NODE_OFF(ref);
    uint32_t ty = ref & REF_TYPE;
    if (likely(ty == REF_RANGE16 || ty == REF_PATH)) {
        __m128i hdr = _mm_load_si128((const __m128i *)nd);
        __m128i bx = _mm_set1_epi8((char)(k16[nd[15] & 15] ^ 0x80));
        unsigned ri = (unsigned)__builtin_popcount((unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(bx, hdr)) & 0x7fff);
        __m128i x = _mm_and_si128(_mm_shuffle_epi8(kx, hdr), _mm_srli_si128(hdr, 8));
        unsigned eq = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_loadl_epi64((const __m128i *)(nd + 16))));
        unsigned pi = (unsigned)__builtin_ctz((~eq & 0xffu) | (1u << (nd[24] & 15)));
        size_t off = ty == REF_PATH ? 28 + 4 * (size_t)pi : 16 + 4 * (size_t)ri;
        uint32_t r;
        memcpy(&r, nd + off, 4);
        return r;
    }
    return step_sse(nb, ref, k16, kx);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2,popcnt")))   /* = step_sse's, so it inlines (the library needs SSE4.2 anyway) */
#endif
uint32_t ofb_bdfa_lookup(const struct ofb_bdfa *t, const uint8_t *key)
{
    uint32_t best = DFA_NONE;
    const uint8_t *nb = t->nodes;
#if defined(__x86_64__) && defined(__GNUC__)
    __m128i kx = _mm_setzero_si128();
    if (t->simd && t->key_len <= 16)
        kx = key16(key, t->key_len);
#endif
    for (uint32_t g = 0; g < t->ngroups; g++) {
        uint32_t ref = t->root[g];
#ifdef OFB_CLS_PROFILE
        for (uint32_t x = ref; !(x & REF_FINAL); x = step_scalar(nb, x, key))
            ofb_prof_dfa_steps++, ofb_prof_dfa_types[(x & REF_TYPE) >> 1]++;
#endif
#if defined(__x86_64__) && defined(__GNUC__)
        if (t->simd)
            while (!(ref & REF_FINAL))
                ref = step_sse(nb, ref, key, kx);
        else
#endif
            while (!(ref & REF_FINAL))
                ref = step_scalar(nb, ref, key);
        uint32_t r = (ref >> 1) - 1;
        if (r < best)
            best = r;
    }
    return best;
}

#define BATCH_WALK(STEP)                                                                   \
    while (walk) {                                                                         \
        for (uint32_t w = walk; w; w &= w - 1) {                                           \
            unsigned j = (unsigned)__builtin_ctz(w);                                       \
            uint32_t ref = STEP(nb, cur[j], keys[base + j] KX);                            \
            cur[j] = ref;                                                                  \
            walk &= ~((ref & REF_FINAL) << j);   /* no branch: the walks end at random */  \
            /* a final's "offset" is no address: node 0 instead (no TLB walk, no branch) */ \
            __builtin_prefetch(nb + (NODE_OFF(ref) & ((size_t)0 - (~ref & REF_FINAL))));     \
        }                                                                                  \
    }

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2,popcnt")))
#endif
void ofb_bdfa_lookup_batch(const struct ofb_bdfa *t, const uint8_t *const keys[], size_t n, uint32_t rank_out[])
{
    const uint8_t *nb = t->nodes;
    for (size_t base = 0; base < n; base += DFA_LANES) {
        unsigned m = n - base < DFA_LANES ? (unsigned)(n - base) : DFA_LANES;
        uint32_t cur[DFA_LANES], best[DFA_LANES];
        for (unsigned j = 0; j < m; j++)
            best[j] = DFA_NONE;
#if defined(__x86_64__) && defined(__GNUC__)
        __m128i kx[DFA_LANES];
        uint8_t k16[DFA_LANES][16] __attribute__((aligned(16)));
        const uint8_t *kp[DFA_LANES];   /* the key as step_fast reads it */
        if (t->simd) {
            for (unsigned j = 0; j < m; j++) {
                kx[j] = t->key_len <= 16 ? key16(keys[base + j], t->key_len) : _mm_setzero_si128();
                _mm_store_si128((__m128i *)k16[j], kx[j]);   /* byte loads from it forward fine */
                kp[j] = k16[j];
            }
        }
#endif
        for (uint32_t g = 0; g < t->ngroups; g++) {
            uint32_t walk = 0, r0 = t->root[g];
            for (unsigned j = 0; j < m; j++)
                cur[j] = r0;
            if (!(r0 & REF_FINAL))
                walk = m == 32 ? UINT32_MAX : (1u << m) - 1;
#if defined(__x86_64__) && defined(__GNUC__)
            if (t->simd) {
#define KX , kx[j]
                if (t->key_len <= 16) {
#define keys kp
#define base 0
                    BATCH_WALK(step_fast)
#undef base
#undef keys
                } else {
                    BATCH_WALK(step_sse)
                }
#undef KX
            } else
#endif
            {
#define KX
                BATCH_WALK(step_scalar)
#undef KX
            }
            for (unsigned j = 0; j < m; j++) {
                uint32_t r = (cur[j] >> 1) - 1;
                if (r < best[j])
                    best[j] = r;
            }
        }
        memcpy(rank_out + base, best, 4ull * m);
    }
}

/* ---------- read back (dfa_flat.c) ---------- */

unsigned ofb_bdfa_key_len(const struct ofb_bdfa *t) { return t->key_len; }
uint32_t ofb_bdfa_root(const struct ofb_bdfa *t, unsigned g) { return t->root[g]; }

void ofb_bdfa_decode(const struct ofb_bdfa *t, uint32_t ref, struct ofb_bdfa_node *o)
{
    const uint8_t *nd = t->nodes + NODE_OFF(ref);
    o->is_path = (ref & REF_TYPE) == REF_PATH;
    if (o->is_path) {
        o->len = nd[24];
        for (unsigned i = 0; i < o->len; i++)
            o->ppos[i] = nd[i], o->m[i] = nd[8 + i], o->v[i] = nd[16 + i];
        memcpy(o->kid, nd + 28, 4u * (o->len + 1u));
        return;
    }
    if ((ref & REF_TYPE) == REF_FULL) {
        const uint8_t *kd = nd + 16;
        uint32_t prev = 0;
        o->pos = nd[15], o->k = 0;
        for (unsigned x = 0; x < 256; x++) {
            uint32_t r;
            memcpy(&r, kd + 4 * x, 4);
            if (!x || r != prev)
                o->st[o->k] = (uint16_t)x, o->kid[o->k++] = r, prev = r;
        }
        o->st[o->k] = 256;
        return;
    }
    unsigned nt = (ref & REF_TYPE) == REF_RANGE64 ? 63 : 15, k = 1;
    o->pos = nd[nt];
    o->st[0] = 0;
    for (unsigned j = 0; j < nt && nd[j] != 0x7f; j++)
        o->st[k++] = (uint16_t)((nd[j] ^ 0x80) + 1);
    memcpy(o->kid, nd + nt + 1, 4ull * k);
    o->k = k;
    o->st[k] = 256;
}
