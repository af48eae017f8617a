/* SPDX-License-Identifier: Apache-2.0 */
/* Document 003's tries: H-Trie, SP-Trie, hybrid.  See trie.h for the design. */
#define _GNU_SOURCE 1  /* qsort_r */
#include "trie.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define F_LEAF 1u                 /* base = the rule to check in full */
#define F_ENDS 2u                 /* keep mode: term = offset into ends[] (ranks ending here, NONE-terminated) */
#define SP_DEFAULT_LIMIT (256ull << 20)
#define REF_COST 32               /* hybrid estimate: bytes a duplicated rule reference costs */

struct tn {                      /* 16 bytes */
    uint32_t base;               /* internal: first node of the children block; leaf: rule rank */
    uint32_t term;               /* best rule ending here (matches every key reaching it), NONE */
    uint32_t smin;               /* best rule in the subtree (incl. term/leaf), NONE if empty */
    uint16_t bit;                /* bit tested (internal nodes) */
    uint8_t have;                /* children present: 1 = '0', 2 = '1', 4 = '*' */
    uint8_t flags;
};

struct louds;

struct ofb_trie {
    uint32_t nwk;
    uint32_t nr;
    size_t nn;
    struct tn *node;             /* DA+vEB layout (NULL in the LOUDS layout) */
    struct louds *louds;         /* LOUDS layout (NULL in the DA+vEB layout) */
    uint64_t *rw;                /* per rank: nwk value words then nwk mask words */
    uint64_t *handle;
    uint32_t *id;
    size_t bytes;
    uint64_t merged;
    uint32_t *prio;              /* per rank */
    /* keep mode (OFB_TRIE_KEEP: an incremental base whose rules can be killed) */
    bool keep;
    uint32_t *ends;              /* ranks ending at a node, best first, NONE-terminated lists */
    _Atomic uint64_t *del_v;     /* per rank: dead for readers at versions >= del_v */
    uint32_t *by_id;             /* ranks sorted by rule id (ofb_trie_kill) */
};

static inline unsigned child_slot(uint8_t have, unsigned c)
{
    return (unsigned)__builtin_popcount(have & ((1u << c) - 1));
}

static inline unsigned bit_of(const uint8_t *b, uint32_t i)
{
    return (b[i >> 3] >> (7 - (i & 7))) & 1;
}

static uint32_t louds_walk(const struct ofb_trie *t, const uint64_t *kw);

static inline bool rule_matches(const struct ofb_trie *t, uint32_t r, const uint64_t *kw)
{
    const uint64_t *w = t->rw + (size_t)r * 2 * t->nwk;
    for (uint32_t i = 0; i < t->nwk; i++)
        if ((kw[i] & w[t->nwk + i]) != w[i])
            return false;
    return true;
}

/* the DA+vEB walk: best rank or NONE */
static inline uint32_t da_walk(const struct ofb_trie *t, const uint64_t *kw)
{
    const uint8_t *key = (const uint8_t *)kw;
    uint32_t best = NONE;
    uint32_t stack[2048];
    unsigned sp = 0;
    const struct tn *node = t->node;
    if (t->nn)
        stack[sp++] = 0;
    while (sp) {
        const struct tn *v = &node[stack[--sp]];
        if (v->smin >= best)
            continue;             /* nothing below can beat what we have */
        if (v->term < best)
            best = v->term;
        if (v->flags & F_LEAF) {
            uint32_t r = v->base;
            if (r < best) {
                const uint64_t *w = t->rw + (size_t)r * 2 * t->nwk;
                bool ok = true;
                for (uint32_t i = 0; i < t->nwk && ok; i++)
                    ok = (kw[i] & w[t->nwk + i]) == w[i];
                if (ok)
                    best = r;
            }
            continue;
        }
        uint8_t h = v->have;
        if (h & 4)
            stack[sp++] = v->base + child_slot(h, 2);
        unsigned kb = bit_of(key, v->bit);
        if (h & (1u << kb))
            stack[sp++] = v->base + child_slot(h, kb);
        if (__builtin_expect(sp > 2040, 0))
            break;  /* cannot happen: depth <= key bits + 1 and <= 2 pushes per level */
    }
    return best;
}

uint64_t ofb_trie_lookup(const struct ofb_trie *t, const uint64_t *kw, uint32_t *id_out)
{
    uint32_t r = t->louds ? louds_walk(t, kw) : da_walk(t, kw);
    if (r == NONE) {
        *id_out = 0;
        return 0;
    }
    *id_out = t->id[r];
    return t->handle[r];
}

/* keep-mode walk: as ofb_trie_lookup, but a rule counts only while alive at v,
 * ending rules are lists (the best alive one counts), nothing was dropped */
static uint32_t keep_walk(const struct ofb_trie *t, const uint64_t *kw, uint64_t v)
{
    const uint8_t *key = (const uint8_t *)kw;
    uint32_t best = NONE;
    uint32_t stack[2048];
    unsigned sp = 0;
    const struct tn *node = t->node;
    if (t->nn)
        stack[sp++] = 0;
    while (sp) {
        const struct tn *u = &node[stack[--sp]];
        if (u->smin >= best)
            continue;
        if (u->flags & F_ENDS)
            for (const uint32_t *e = t->ends + u->term; *e < best; e++)
                if (atomic_load_explicit(&t->del_v[*e], memory_order_relaxed) > v) {
                    best = *e;
                    break;
                }
        if (u->flags & F_LEAF) {
            uint32_t r = u->base;
            if (r < best && atomic_load_explicit(&t->del_v[r], memory_order_relaxed) > v && rule_matches(t, r, kw))
                best = r;
            continue;
        }
        uint8_t h = u->have;
        if (h & 4)
            stack[sp++] = u->base + child_slot(h, 2);
        unsigned kb = bit_of(key, u->bit);
        if (h & (1u << kb))
            stack[sp++] = u->base + child_slot(h, kb);
        if (__builtin_expect(sp > 2040, 0))
            break;
    }
    return best;
}

uint64_t ofb_trie_lookup_v(const struct ofb_trie *t, const uint64_t *kw, uint64_t v, uint32_t *id_out,
                           uint32_t *prio_out)
{
    uint32_t r = t->keep ? keep_walk(t, kw, v) : t->louds ? louds_walk(t, kw) : da_walk(t, kw);
    if (r == NONE) {
        *id_out = 0;
        return 0;
    }
    *id_out = t->id[r];
    *prio_out = t->prio[r];
    return t->handle[r];
}

static int cmp_by_id(const void *a, const void *b, void *ctx)
{
    const uint32_t *id = ctx;
    uint32_t x = id[*(const uint32_t *)a], y = id[*(const uint32_t *)b];
    return x < y ? -1 : x > y;
}

int ofb_trie_kill(struct ofb_trie *t, uint32_t id, uint64_t v)
{
    if (!t || !t->keep)
        return -1;
    size_t lo = 0, hi = t->nr;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->id[t->by_id[mid]] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->nr || t->id[t->by_id[lo]] != id)
        return -1;
    atomic_store_explicit(&t->del_v[t->by_id[lo]], v, memory_order_relaxed);
    return 0;
}

uint32_t ofb_trie_rules(const struct ofb_trie *t)
{
    return t ? t->nr : 0;
}

/* ---------- LOUDS layout ---------- */

/* Bit vector with a rank directory: ones before each 512-bit block.  Bit i is
 * bit (i & 63) of word i >> 6; padding bits past nbits are 1 (never counted as
 * zeros by select0). */
struct bv {
    uint64_t *w;
    uint32_t *rk;                /* rk[b] = ones in bits [0, 512 b) */
    size_t nbits;
};

#define SEL0_SAMPLE 256          /* louds select0 directory: one sample per 256 zeros */

struct louds {
    struct bv tree;              /* "10", then per node in BFS order 1^degree 0 */
    uint32_t *sel0;              /* sel0[j] = 512-bit block holding zero number j * SEL0_SAMPLE (0-based) */
    struct bv inner;             /* node has children: index into bit[] by rank */
    struct bv leaf;              /* node is a leaf: its rule is smin (checked in full) */
    struct bv hasterm;           /* node has a rule ending at it: index into term[] by rank */
    uint64_t *label;             /* 2 bits per node: the edge it hangs on (0, 1, 2 = *) */
    uint32_t *smin;              /* per node: best rule in the subtree (pruning) */
    uint16_t *bit;               /* per inner node: the key bit it branches on */
    uint32_t *term;              /* per node with a term: that rule */
    size_t bytes;
};

static inline unsigned bv_get(const struct bv *b, size_t i)
{
    return (unsigned)(b->w[i >> 6] >> (i & 63)) & 1;
}

/* ones in [0, i) */
static inline size_t bv_rank1(const struct bv *b, size_t i)
{
    size_t blk = i >> 9, r = b->rk[blk];
    const uint64_t *w = b->w + (blk << 3);
    for (size_t k = 0; k < ((i >> 6) & 7); k++)
        r += (size_t)__builtin_popcountll(w[k]);
    if (i & 63)
        r += (size_t)__builtin_popcountll(b->w[i >> 6] & ((1ull << (i & 63)) - 1));
    return r;
}

static int bv_alloc(struct bv *b, size_t nbits)
{
    size_t nw = ((nbits + 511) >> 9 << 3) + 8;  /* whole blocks, one spare */
    b->nbits = nbits;
    b->w = calloc(nw, 8);
    b->rk = calloc((nw >> 3) + 1, 4);
    return b->w && b->rk ? 0 : -1;
}

static inline void bv_set(struct bv *b, size_t i)
{
    b->w[i >> 6] |= 1ull << (i & 63);
}

static void bv_finish(struct bv *b)
{
    size_t nw = ((b->nbits + 511) >> 9 << 3) + 8;
    for (size_t i = b->nbits; i < nw * 64; i++)
        bv_set(b, i);  /* padding = 1 */
    uint32_t r = 0;
    for (size_t blk = 0; blk <= nw >> 3; blk++) {
        b->rk[blk] = r;
        for (size_t k = 0; k < 8 && (blk << 3) + k < nw; k++)
            r += (uint32_t)__builtin_popcountll(b->w[(blk << 3) + k]);
    }
}

static size_t bv_bytes(const struct bv *b)
{
    size_t nw = ((b->nbits + 511) >> 9 << 3) + 8;
    return nw * 8 + ((nw >> 3) + 1) * 4;
}

static void bv_free(struct bv *b)
{
    free(b->w);
    free(b->rk);
}

/* position of the r-th (0-based) set bit of x (r < popcount(x)) */
static inline unsigned select64(uint64_t x, unsigned r)
{
    unsigned pos = 0;
    for (;;) {
        unsigned c = (unsigned)__builtin_popcount((unsigned)(x & 0xff));
        if (r < c)
            break;
        r -= c;
        x >>= 8;
        pos += 8;
    }
    while (r--)
        x &= x - 1;
    return pos + (unsigned)__builtin_ctzll(x);
}

/* position of the zero number z (0-based) in the tree bits */
static inline size_t louds_select0(const struct louds *L, size_t z)
{
    const struct bv *b = &L->tree;
    size_t blk = L->sel0[z / SEL0_SAMPLE];
    while (((blk + 1) << 9) - b->rk[blk + 1] <= z)  /* zeros before block blk+1 */
        blk++;
    size_t rem = z - ((blk << 9) - b->rk[blk]);
    const uint64_t *w = b->w + (blk << 3);
    for (unsigned k = 0;; k++) {
        unsigned c = (unsigned)__builtin_popcountll(~w[k]);
        if (rem < c)
            return (blk << 9) + ((size_t)k << 6) + select64(~w[k], (unsigned)rem);
        rem -= c;
    }
}

static void louds_free(struct louds *L)
{
    if (!L)
        return;
    bv_free(&L->tree), bv_free(&L->inner), bv_free(&L->leaf), bv_free(&L->hasterm);
    free(L->sel0), free(L->label), free(L->smin), free(L->bit), free(L->term);
    free(L);
}

/* nodes in BFS order, each node's children contiguous in 0, 1, * order (what
 * the builder produces before the vEB relayout) -> LOUDS */
static struct louds *louds_from_bfs(const struct tn *node, size_t nn)
{
    struct louds *L = calloc(1, sizeof(*L));
    if (!L)
        return NULL;
    size_t n_inner = 0, n_term = 0, tbits = 2 + 2 * nn;
    for (size_t i = 0; i < nn; i++) {
        n_inner += !(node[i].flags & F_LEAF) && node[i].have;
        n_term += node[i].term != NONE;
    }
    size_t nsel = (nn + 1) / SEL0_SAMPLE + 2;
    if (bv_alloc(&L->tree, tbits) || bv_alloc(&L->inner, nn) || bv_alloc(&L->leaf, nn) ||
        bv_alloc(&L->hasterm, nn) || !(L->sel0 = calloc(nsel, 4)) ||
        !(L->label = calloc(nn / 32 + 1, 8)) || !(L->smin = malloc((nn + 1) * 4)) ||
        !(L->bit = malloc((n_inner + 1) * 2)) || !(L->term = malloc((n_term + 1) * 4))) {
        louds_free(L);
        return NULL;
    }
    size_t pos = 0, ki = 0, kt = 0;
    bv_set(&L->tree, pos++);  /* super-root "10" */
    pos++;
    for (size_t i = 0; i < nn; i++) {
        const struct tn *v = &node[i];
        L->smin[i] = v->smin;
        if (v->term != NONE) {
            bv_set(&L->hasterm, i);
            L->term[kt++] = v->term;
        }
        if (v->flags & F_LEAF) {
            bv_set(&L->leaf, i);
        } else if (v->have) {
            bv_set(&L->inner, i);
            L->bit[ki++] = v->bit;
            uint32_t slot = 0;
            for (unsigned c = 0; c < 3; c++)
                if (v->have & (1u << c)) {
                    size_t child = v->base + slot++;
                    L->label[child >> 5] |= (uint64_t)c << ((child & 31) * 2);
                    bv_set(&L->tree, pos++);
                }
        }
        pos++;  /* the 0 closing node i's degree */
    }
    /* pos == 2 + (nn - 1) + nn == tbits - 1: the last bit stays 0 */
    L->tree.nbits = pos;
    bv_finish(&L->tree), bv_finish(&L->inner), bv_finish(&L->leaf), bv_finish(&L->hasterm);
    size_t zeros = 0;
    for (size_t i = 0; i < pos; i++)
        if (!bv_get(&L->tree, i)) {
            if (zeros % SEL0_SAMPLE == 0)
                L->sel0[zeros / SEL0_SAMPLE] = (uint32_t)(i >> 9);
            zeros++;
        }
    L->bytes = sizeof(*L) + bv_bytes(&L->tree) + bv_bytes(&L->inner) + bv_bytes(&L->leaf) +
               bv_bytes(&L->hasterm) + nsel * 4 + (nn / 32 + 1) * 8 + (nn + 1) * 4 +
               (n_inner + 1) * 2 + (n_term + 1) * 4;
    return L;
}

/* The same walk as the DA+vEB lookup, navigating with rank/select: node i's
 * children are the 1s after the zero number i of the tree bits (the super-root
 * "10" holds zero 0), child at bit position q is node rank1(q). */
static uint32_t louds_walk(const struct ofb_trie *t, const uint64_t *kw)
{
    const struct louds *L = t->louds;
    const uint8_t *key = (const uint8_t *)kw;
    uint32_t best = NONE;
    uint32_t stack[2048];
    unsigned sp = 0;
    if (t->nn)
        stack[sp++] = 0;
    while (sp) {
        uint32_t i = stack[--sp];
        uint32_t smin = L->smin[i];
        if (smin >= best)
            continue;
        if (bv_get(&L->hasterm, i)) {
            uint32_t tm = L->term[bv_rank1(&L->hasterm, i)];
            if (tm < best)
                best = tm;
        }
        if (bv_get(&L->leaf, i)) {
            if (smin < best && rule_matches(t, smin, kw))
                best = smin;
            continue;
        }
        if (!bv_get(&L->inner, i))
            continue;
        unsigned b = L->bit[bv_rank1(&L->inner, i)];
        unsigned kb = bit_of(key, b);
        size_t p = louds_select0(L, i) + 1;     /* first child's bit */
        size_t first = bv_rank1(&L->tree, p);   /* its node number */
        /* degree: the 1s from p (at most 3) */
        uint64_t run = L->tree.w[p >> 6] >> (p & 63);
        if ((p & 63) > 60)
            run |= L->tree.w[(p >> 6) + 1] << (64 - (p & 63));
        unsigned deg = (unsigned)__builtin_ctzll(~run);
        uint32_t want_x = NONE, want_k = NONE;
        for (unsigned j = 0; j < deg; j++) {
            size_t ch = first + j;
            unsigned lab = (unsigned)(L->label[ch >> 5] >> ((ch & 31) * 2)) & 3;
            if (lab == 2)
                want_x = (uint32_t)ch;
            else if (lab == kb)
                want_k = (uint32_t)ch;
        }
        if (want_x != NONE)
            stack[sp++] = want_x;
        if (want_k != NONE)
            stack[sp++] = want_k;
        if (__builtin_expect(sp > 2040, 0))
            break;
    }
    return best;
}

/* ---------- build ---------- */

struct item { uint32_t node, off, n, from; };

struct vec { void *p; size_t n, cap, es; };

static int vgrow(struct vec *v)
{
    {
        size_t nc = v->cap ? v->cap * 2 : 1024;
        void *q = realloc(v->p, nc * v->es);
        if (!q)
            return -1;
        v->p = q;
        v->cap = nc;
    }
    return 0;
}

static inline int vpush(struct vec *v, const void *x)
{
    if (__builtin_expect(v->n == v->cap, 0) && vgrow(v))
        return -1;
    memcpy((char *)v->p + v->n * v->es, x, v->es);
    v->n++;
    return 0;
}

/* the hot one: rule references */
static inline int vpush32(struct vec *v, uint32_t x)
{
    if (__builtin_expect(v->n == v->cap, 0) && vgrow(v))
        return -1;
    ((uint32_t *)v->p)[v->n++] = x;
    return 0;
}

static int cmp_rank(const void *a, const void *b, void *ctx)
{
    const struct ofb_trie_rule *base = ctx;
    const struct ofb_trie_rule *x = &base[*(const uint32_t *)a], *y = &base[*(const uint32_t *)b];
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* first bit >= from the mask cares about, or key_bits */
static uint32_t next_care(const uint8_t *m, uint32_t from, uint32_t key_bits)
{
    uint32_t i = from >> 3, nb = key_bits >> 3;
    if (i >= nb)
        return key_bits;
    uint8_t x = m[i] & (uint8_t)(0xffu >> (from & 7));
    while (!x) {
        if (++i >= nb)
            return key_bits;
        x = m[i];
    }
    return i * 8 + (uint32_t)(__builtin_clz((unsigned)x) - 24);
}

/* van Emde Boas order of the children blocks: places the blocks of the
 * subtree under block (start, size), h block levels deep */
struct veb { const struct tn *node; uint32_t *newstart; uint32_t cursor; };

static void veb_blocks_at(struct veb *V, uint32_t start, uint32_t size, uint32_t depth, uint32_t h);

static void veb(struct veb *V, uint32_t start, uint32_t size, uint32_t h)
{
    if (h <= 1) {
        V->newstart[start] = V->cursor;
        V->cursor += size;
        return;
    }
    uint32_t top = h / 2;
    veb(V, start, size, top);
    veb_blocks_at(V, start, size, top, h - top);
}

/* for each block `depth` levels below (start, size): veb(it, h) */
static void veb_blocks_at(struct veb *V, uint32_t start, uint32_t size, uint32_t depth, uint32_t h)
{
    for (uint32_t i = start; i < start + size; i++) {
        const struct tn *v = &V->node[i];
        if ((v->flags & F_LEAF) || !v->have)
            continue;
        uint32_t cs = (uint32_t)__builtin_popcount(v->have);
        if (depth == 1)
            veb(V, v->base, cs, h);
        else
            veb_blocks_at(V, v->base, cs, depth - 1, h);
    }
}

static uint32_t block_height(const struct tn *node, uint32_t start, uint32_t size, uint32_t *memo)
{
    uint32_t h = 0;
    for (uint32_t i = start; i < start + size; i++) {
        const struct tn *v = &node[i];
        if ((v->flags & F_LEAF) || !v->have)
            continue;
        uint32_t x = memo[v->base];
        if (!x)
            x = memo[v->base] = block_height(node, v->base, (uint32_t)__builtin_popcount(v->have), memo);
        h = x > h ? x : h;
    }
    return h + 1;
}

static int relayout_veb(struct ofb_trie *t)
{
    size_t nn = t->nn;
    if (nn < 2)
        return 0;
    uint32_t *memo = calloc(nn, sizeof(uint32_t));
    uint32_t *newstart = malloc(nn * sizeof(uint32_t));
    struct tn *nw = malloc(nn * sizeof(struct tn));
    if (!memo || !newstart || !nw) {
        free(memo), free(newstart), free(nw);
        return -1;
    }
    /* block heights bottom-up: BFS order puts children after parents */
    for (size_t i = nn; i-- > 0;) {
        const struct tn *v = &t->node[i];
        if (!(v->flags & F_LEAF) && v->have) {
            uint32_t h = 0, cs = (uint32_t)__builtin_popcount(v->have);
            for (uint32_t j = v->base; j < v->base + cs; j++) {
                const struct tn *c = &t->node[j];
                if (!(c->flags & F_LEAF) && c->have && memo[c->base] > h)
                    h = memo[c->base];
            }
            memo[v->base] = h + 1;
        }
    }
    uint32_t H = block_height(t->node, 0, 1, memo);
    free(memo);
    struct veb V = { t->node, newstart, 0 };
    veb(&V, 0, 1, H);
    /* copy blocks: every node belongs to exactly one block (root block = node 0) */
    nw[newstart[0]] = t->node[0];
    for (size_t i = 0; i < nn; i++) {
        const struct tn *v = &t->node[i];
        if ((v->flags & F_LEAF) || !v->have)
            continue;
        uint32_t cs = (uint32_t)__builtin_popcount(v->have);
        memcpy(&nw[newstart[v->base]], &t->node[v->base], cs * sizeof(struct tn));
    }
    for (size_t i = 0; i < nn; i++)
        if (!(nw[i].flags & F_LEAF) && nw[i].have)
            nw[i].base = newstart[nw[i].base];
    free(newstart);
    free(t->node);
    t->node = nw;
    return 0;
}

struct ofb_trie *ofb_trie_build(enum ofb_trie_mode mode, enum ofb_trie_layout layout, uint32_t key_len,
                                const struct ofb_trie_rule *rules, size_t n, uint64_t budget, unsigned flags,
                                char *err, size_t errlen)
{
    const bool keep = flags & OFB_TRIE_KEEP;
    struct vec ends = { 0, 0, 0, sizeof(uint32_t) };
    static const char *mname[] = { "htrie", "sptrie", "hybrid" };
    const uint32_t nwk = (key_len + 7) / 8, key_bits = key_len * 8;
    struct ofb_trie *t = calloc(1, sizeof(*t));
    uint32_t *rank = NULL, *last = NULL;
    struct vec nodes = { 0, 0, 0, sizeof(struct tn) };
    struct vec cur_items = { 0, 0, 0, sizeof(struct item) }, next_items = cur_items;
    struct vec cur_refs = { 0, 0, 0, sizeof(uint32_t) }, next_refs = cur_refs;
    const char *why = "out of memory";
    if (key_len < 1 || key_len > OFB_TRIE_MAX_KEY_LEN) {
        snprintf(err, errlen, "%s: key of %u bytes: the trie takes 1..%u (bit index and lookup stack)",
                 mname[mode], key_len, OFB_TRIE_MAX_KEY_LEN);
        free(t);
        return NULL;
    }
    if (n >= NONE - 1) {
        why = "too many rules";
        goto fail;
    }
    if (!t)
        goto fail;
    t->nwk = nwk;
    t->nr = (uint32_t)n;
    rank = malloc((n + 1) * sizeof(uint32_t));
    last = malloc((n + 1) * sizeof(uint32_t));
    t->rw = malloc((n + 1) * 2 * nwk * sizeof(uint64_t));
    t->handle = malloc((n + 1) * sizeof(uint64_t));
    t->id = malloc((n + 1) * sizeof(uint32_t));
    t->prio = malloc((n + 1) * sizeof(uint32_t));
    if (!rank || !last || !t->rw || !t->handle || !t->id || !t->prio)
        goto fail;
    if (keep && layout == OFB_TRIE_LOUDS) {
        why = "keep mode (incremental base) needs the DA+vEB layout";
        goto fail;
    }
    if (keep) {
        t->keep = true;
        t->del_v = malloc((n + 1) * sizeof(*t->del_v));
        t->by_id = malloc((n + 1) * sizeof(uint32_t));
        if (!t->del_v || !t->by_id)
            goto fail;
        for (size_t i = 0; i <= n; i++)
            atomic_init(&t->del_v[i], UINT64_MAX);
    }
    for (size_t i = 0; i < n; i++)
        rank[i] = (uint32_t)i;
    qsort_r(rank, n, sizeof(uint32_t), cmp_rank, (void *)rules);
    for (size_t r = 0; r < n; r++) {
        const struct ofb_trie_rule *x = &rules[rank[r]];
        memcpy(t->rw + r * 2 * nwk, x->value, nwk * 8);
        memcpy(t->rw + r * 2 * nwk + nwk, x->mask, nwk * 8);
        t->handle[r] = x->handle;
        t->id[r] = x->id;
        t->prio[r] = x->prio;
        /* last care bit + 1 */
        const uint8_t *m = (const uint8_t *)x->mask;
        uint32_t l = 0;
        for (uint32_t b = key_len; b-- > 0;)
            if (m[b]) {
                l = b * 8 + 8 - (uint32_t)__builtin_ctz(m[b]);
                break;
            }
        last[r] = l;
    }
    uint64_t limit = mode == OFB_TRIE_SP ? (budget ? budget : SP_DEFAULT_LIMIT) : UINT64_MAX;
    uint64_t base_est = (uint64_t)n * (2 * nwk * 8 + 12), extra = 0;
    struct tn root = { 0, NONE, NONE, 0, 0, 0 };
    if (vpush(&nodes, &root))
        goto fail;
    for (uint32_t r = 0; r < n; r++)
        if (vpush32(&cur_refs, r))
            goto fail;
    struct item it0 = { 0, 0, (uint32_t)n, 0 };
    if (vpush(&cur_items, &it0))
        goto fail;
    uint32_t *s0 = NULL, *s1 = NULL, *sx = NULL;
    size_t scap = 0;
    while (cur_items.n) {
        next_items.n = next_refs.n = 0;
        for (size_t k = 0; k < cur_items.n; k++) {
            struct item it = ((struct item *)cur_items.p)[k];
            /* an empty rule set has no refs array yet (p NULL: no pointer arithmetic on it) */
            uint32_t *S = it.n ? (uint32_t *)cur_refs.p + it.off : NULL;
            struct tn v = { 0, NONE, it.n ? S[0] : NONE, 0, 0, 0 };
            uint32_t m = 0;   /* rules before the first one that ends here */
            if (keep) {
                /* nothing is dropped (a killed rule must let the next one win): the rules
                 * that end here become the node's list, the others go on, in rank order */
                uint32_t first_end = (uint32_t)ends.n;
                for (uint32_t i = 0; i < it.n; i++)
                    if (last[S[i]] > it.from)
                        S[m++] = S[i];
                    else if (vpush32(&ends, S[i]))
                        goto fail;
                if (ends.n > first_end) {
                    if (vpush32(&ends, NONE))
                        goto fail;
                    v.term = first_end;
                    v.flags |= F_ENDS;
                }
            } else {
                while (m < it.n && last[S[m]] > it.from)
                    m++;
                if (m < it.n)
                    v.term = S[m];
            }
            if (m == 1) {
                v.flags |= F_LEAF;
                v.base = S[0];
            } else if (m > 1) {
                uint32_t b = key_bits;
                for (uint32_t i = 0; i < m; i++) {
                    uint32_t x = next_care((const uint8_t *)(t->rw + (size_t)S[i] * 2 * nwk + nwk), it.from, key_bits);
                    b = x < b ? x : b;
                }
                if (m > scap) {
                    scap = m * 2;
                    free(s0), free(s1), free(sx);
                    s0 = malloc(scap * 4), s1 = malloc(scap * 4), sx = malloc(scap * 4);
                    if (!s0 || !s1 || !sx) {
                        free(s0), free(s1), free(sx);
                        s0 = s1 = sx = NULL;
                        goto fail;
                    }
                }
                uint32_t n0 = 0, n1 = 0, nx = 0;
                for (uint32_t i = 0; i < m; i++) {
                    const uint8_t *w = (const uint8_t *)(t->rw + (size_t)S[i] * 2 * nwk);
                    if (!bit_of(w + nwk * 8, b))
                        sx[nx++] = S[i];
                    else if (bit_of(w, b))
                        s1[n1++] = S[i];
                    else
                        s0[n0++] = S[i];
                }
                bool merge = false;
                if (nx && mode == OFB_TRIE_SP)
                    merge = true;
                else if (nx && mode == OFB_TRIE_HYBRID &&
                         base_est + (uint64_t)nodes.n * sizeof(struct tn) +
                                 ((uint64_t)next_refs.n + nx) * REF_COST <= budget) {
                    /* breadth-first from the root: merge while the nodes built so far
                     * plus the pending rule copies stay within the budget */
                    merge = true;
                    extra += nx;
                }
                v.bit = (uint16_t)b;
                v.base = (uint32_t)nodes.n;
                const uint32_t *lists[3] = { s0, s1, sx };
                uint32_t lens[3] = { n0, n1, merge ? 0 : nx };
                if (merge) {
                    t->merged++;
                    lens[0] += nx;
                    lens[1] += nx;
                }
                for (unsigned c = 0; c < 3; c++)
                    if (lens[c])
                        v.have |= (uint8_t)(1u << c);
                uint32_t cn = 0;
                for (unsigned c = 0; c < 3; c++) {
                    if (!lens[c])
                        continue;
                    struct tn z = { 0, NONE, NONE, 0, 0, 0 };
                    struct item ci = { v.base + cn++, (uint32_t)next_refs.n, lens[c], b + 1 };
                    if (vpush(&nodes, &z) || vpush(&next_items, &ci))
                        goto fail;
                    if (merge && c < 2) {  /* sorted merge of the 0/1 list with the * list */
                        const uint32_t *a = lists[c];
                        uint32_t na = c ? n1 : n0, i = 0, j = 0;
                        while (i < na || j < nx) {
                            uint32_t x = (j >= nx || (i < na && a[i] < sx[j])) ? a[i++] : sx[j++];
                            if (vpush32(&next_refs, x))
                                goto fail;
                        }
                    } else {
                        for (uint32_t i = 0; i < lens[c]; i++)
                            if (vpush32(&next_refs, lists[c][i]))
                                goto fail;
                    }
                }
                /* everything the build holds now, capacities included */
                uint64_t held = (uint64_t)(nodes.cap + cur_items.cap + next_items.cap) * 16 +
                                (uint64_t)(cur_refs.cap + next_refs.cap) * 4 + (uint64_t)n * (2 * nwk * 8 + 20);
                if (mode == OFB_TRIE_SP && held > limit) {
                    snprintf(err, errlen, "sptrie: the set-pruning trie of %zu rules needs more than its "
                             "memory limit of %llu bytes (%zu nodes, %zu rule copies pending at bit %u); "
                             "raise mem_budget_bytes or use hybrid/htrie", n, (unsigned long long)limit,
                             nodes.n, next_refs.n, b);
                    free(s0), free(s1), free(sx);
                    why = NULL;
                    goto fail;
                }
            }
            ((struct tn *)nodes.p)[it.node] = v;
        }
        struct vec x = cur_items;
        cur_items = next_items;
        next_items = x;
        x = cur_refs;
        cur_refs = next_refs;
        next_refs = x;
    }
    (void)extra;
    free(s0), free(s1), free(sx);
    t->node = nodes.p;
    t->nn = nodes.n;
    nodes.p = NULL;
    /* subtree minimum is S[0] of each node's set, already set: sets are sorted */
    if (keep) {
        t->ends = ends.p;
        ends.p = NULL;
        for (uint32_t r = 0; r < n; r++)
            t->by_id[r] = r;
        qsort_r(t->by_id, n, sizeof(uint32_t), cmp_by_id, t->id);
    }
    if (layout == OFB_TRIE_LOUDS) {
        if (!(t->louds = louds_from_bfs(t->node, t->nn)))
            goto fail;
        free(t->node);
        t->node = NULL;
    } else if (relayout_veb(t)) {
        goto fail;
    }
    free(rank), free(last);
    free(cur_items.p), free(next_items.p), free(cur_refs.p), free(next_refs.p);
    t->bytes = sizeof(*t) + (t->louds ? t->louds->bytes : t->nn * sizeof(struct tn)) +
               (size_t)n * (2 * nwk * 8 + 16) + (keep ? ends.n * 4 + (size_t)n * 12 : 0);
    return t;
fail:
    if (why)
        snprintf(err, errlen, "%s: building a trie of %zu rules: %s", mname[mode], n, why);
    free(rank), free(last), free(ends.p);
    free(nodes.p), free(cur_items.p), free(next_items.p), free(cur_refs.p), free(next_refs.p);
    ofb_trie_free(t);
    return NULL;
}

void ofb_trie_free(struct ofb_trie *t)
{
    if (!t)
        return;
    free(t->node);
    louds_free(t->louds);
    free(t->prio), free(t->ends), free(t->del_v), free(t->by_id);
    free(t->rw);
    free(t->handle);
    free(t->id);
    free(t);
}

size_t ofb_trie_bytes(const struct ofb_trie *t)
{
    return t ? t->bytes : 0;
}

uint64_t ofb_trie_nodes(const struct ofb_trie *t)
{
    return t ? t->nn : 0;
}

uint64_t ofb_trie_merged(const struct ofb_trie *t)
{
    return t ? t->merged : 0;
}
