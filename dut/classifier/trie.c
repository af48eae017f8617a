/* SPDX-License-Identifier: Apache-2.0 */
/* Document 003's tries: H-Trie, SP-Trie, hybrid.  See trie.h for the design. */
#define _GNU_SOURCE 1  /* qsort_r */
#include "trie.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define F_LEAF 1u                 /* base = the rule to check in full */
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

struct ofb_trie {
    uint32_t nwk;
    uint32_t nr;
    size_t nn;
    struct tn *node;
    uint64_t *rw;                /* per rank: nwk value words then nwk mask words */
    uint64_t *handle;
    uint32_t *id;
    size_t bytes;
    uint64_t merged;
};

static inline unsigned child_slot(uint8_t have, unsigned c)
{
    return (unsigned)__builtin_popcount(have & ((1u << c) - 1));
}

static inline unsigned bit_of(const uint8_t *b, uint32_t i)
{
    return (b[i >> 3] >> (7 - (i & 7))) & 1;
}

uint64_t ofb_trie_lookup(const struct ofb_trie *t, const uint64_t *kw, uint32_t *id_out)
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
    if (best == NONE) {
        *id_out = 0;
        return 0;
    }
    *id_out = t->id[best];
    return t->handle[best];
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

struct ofb_trie *ofb_trie_build(enum ofb_trie_mode mode, uint32_t key_len, const struct ofb_trie_rule *rules,
                                size_t n, uint64_t budget, char *err, size_t errlen)
{
    static const char *mname[] = { "htrie", "sptrie", "hybrid" };
    const uint32_t nwk = (key_len + 7) / 8, key_bits = key_len * 8;
    struct ofb_trie *t = calloc(1, sizeof(*t));
    uint32_t *rank = NULL, *last = NULL;
    struct vec nodes = { 0, 0, 0, sizeof(struct tn) };
    struct vec cur_items = { 0, 0, 0, sizeof(struct item) }, next_items = cur_items;
    struct vec cur_refs = { 0, 0, 0, sizeof(uint32_t) }, next_refs = cur_refs;
    const char *why = "out of memory";
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
    if (!rank || !last || !t->rw || !t->handle || !t->id)
        goto fail;
    for (size_t i = 0; i < n; i++)
        rank[i] = (uint32_t)i;
    qsort_r(rank, n, sizeof(uint32_t), cmp_rank, (void *)rules);
    for (size_t r = 0; r < n; r++) {
        const struct ofb_trie_rule *x = &rules[rank[r]];
        memcpy(t->rw + r * 2 * nwk, x->value, nwk * 8);
        memcpy(t->rw + r * 2 * nwk + nwk, x->mask, nwk * 8);
        t->handle[r] = x->handle;
        t->id[r] = x->id;
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
            uint32_t *S = (uint32_t *)cur_refs.p + it.off;
            struct tn v = { 0, NONE, it.n ? S[0] : NONE, 0, 0, 0 };
            uint32_t m = 0;   /* rules before the first one that ends here */
            while (m < it.n && last[S[m]] > it.from)
                m++;
            if (m < it.n)
                v.term = S[m];
            if (m == 1) {
                v.flags = F_LEAF;
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
    if (relayout_veb(t))
        goto fail;
    free(rank), free(last);
    free(cur_items.p), free(next_items.p), free(cur_refs.p), free(next_refs.p);
    t->bytes = sizeof(*t) + t->nn * sizeof(struct tn) + (size_t)n * (2 * nwk * 8 + 12);
    return t;
fail:
    if (why)
        snprintf(err, errlen, "%s: building a trie of %zu rules: %s", mname[mode], n, why);
    free(rank), free(last);
    free(nodes.p), free(cur_items.p), free(next_items.p), free(cur_refs.p), free(next_refs.p);
    ofb_trie_free(t);
    return NULL;
}

void ofb_trie_free(struct ofb_trie *t)
{
    if (!t)
        return;
    free(t->node);
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
