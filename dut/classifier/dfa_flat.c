/* SPDX-License-Identifier: Apache-2.0 */
/* The byte DFA compiled for lockstep walks, and its scalar walks: see dfa_flat.h. */
#include "dfa_flat.h"
#include "dfa.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ENTRIES (1u << 27)

struct fctx {
    const struct ofb_bdfa *dfa;
    struct ofb_dflat *f;
    uint32_t full_min;
    uint64_t *memo_k, *memo_v;   /* dfa ref + 1 -> entry (open addressing) */
    size_t memo_cap, memo_n;
    uint32_t *cons;              /* node hash-consing: first entry + 1 of a node laid out (open addressing) */
    uint8_t *cons_k;             /* its entry count (4 = quad of <= 4, 0 = full 256) */
    size_t cons_cap, cons_n;
    bool fail;
};

static uint64_t alloc_entries(struct fctx *x, size_t k)
{
    struct ofb_dflat *f = x->f;
    if (f->n + k > MAX_ENTRIES) {
        x->fail = true;
        return 0;
    }
    if (f->n + k > f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 4096;
        while (nc < f->n + k)
            nc *= 2;
        uint64_t *m = realloc(f->mem, nc * 8);
        if (!m) {
            x->fail = true;
            return 0;
        }
        f->mem = m, f->cap = nc;
    }
    uint64_t at = f->n;
    f->n += k;
    return at;
}

static uint64_t cons_hash(const uint64_t *e, unsigned k)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ k;
    for (unsigned i = 0; i < k; i++) {
        h ^= e[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    return h;
}

/* the node of k entries just laid out at `at` (the last ones): an identical node laid out before is
 * used instead (its entries given back): nodes that differ only in the key byte they read (which the
 * parent's entry carries) or in nothing (the sub-trees of split ranges, path tails) are stored once */
static uint64_t cons_node(struct fctx *x, uint64_t at, unsigned k)
{
    struct ofb_dflat *f = x->f;
    if ((x->cons_n + 1) * 2 > x->cons_cap) {
        size_t nc = x->cons_cap ? x->cons_cap * 2 : 4096;
        uint32_t *c = calloc(nc, 4);
        uint8_t *ck = calloc(nc, 1);
        if (!c || !ck) {
            free(c), free(ck);
            return at;   /* no sharing: still correct */
        }
        for (size_t i = 0; i < x->cons_cap; i++)
            if (x->cons[i]) {
                unsigned kk = x->cons_k[i] ? x->cons_k[i] : 256;
                size_t j = cons_hash(f->mem + x->cons[i] - 1, kk) & (nc - 1);
                while (c[j])
                    j = (j + 1) & (nc - 1);
                c[j] = x->cons[i], ck[j] = x->cons_k[i];
            }
        free(x->cons), free(x->cons_k);
        x->cons = c, x->cons_k = ck, x->cons_cap = nc;
    }
    uint8_t kb = k == 256 ? 0 : (uint8_t)k;
    size_t j = cons_hash(f->mem + at, k) & (x->cons_cap - 1);
    for (; x->cons[j]; j = (j + 1) & (x->cons_cap - 1))
        if (x->cons_k[j] == kb && !memcmp(f->mem + x->cons[j] - 1, f->mem + at, 8ull * k)) {
            f->n = at;   /* the last node laid out: give its entries back */
            return x->cons[j] - 1;
        }
    x->cons[j] = (uint32_t)at + 1, x->cons_k[j] = kb;
    x->cons_n++;
    return at;
}

/* the entry pointing to a node of k intervals (starts st[0] = 0 < st[1] < ...)
 * on byte pos, children ce[] */
static uint64_t emit_ranges(struct fctx *x, unsigned pos, unsigned k, const uint16_t *st, const uint64_t *ce)
{
    if (k == 1)
        return ce[0];
    if (k <= 4) {
        uint64_t at = alloc_entries(x, k);
        if (x->fail)
            return 0;
        uint32_t h = 0xffffffu;   /* fm 0, thresholds 255 */
        for (unsigned j = 1; j < k; j++)
            h = (h & ~(0xffu << (8 * (j - 1)))) | (uint32_t)(st[j] - 1) << (8 * (j - 1));
        memcpy(x->f->mem + at, ce, 8ull * k);
        at = cons_node(x, at, k);
        return (uint64_t)h << 32 | (uint32_t)(at << 5 | pos << 1);
    }
    if (k > x->full_min) {
        uint64_t at = alloc_entries(x, 256);
        if (x->fail)
            return 0;
        for (unsigned j = 0; j < k; j++)
            for (unsigned b = st[j]; b < st[j + 1]; b++)
                x->f->mem[at + b] = ce[j];
        at = cons_node(x, at, 256);
        return (uint64_t)0xffffffffu << 32 | (uint32_t)(at << 5 | pos << 1);
    }
    unsigned per = (k + 3) / 4, nc = 0;
    uint16_t cst[5], sub[257];
    uint64_t cce[4];
    for (unsigned a = 0; a < k; a += per, nc++) {
        unsigned kc = k - a < per ? k - a : per;
        memcpy(sub, st + a, 2ull * (kc + 1));
        sub[0] = 0;   /* the parent sends only [st[a], st[a + kc]) here */
        cst[nc] = st[a];
        cce[nc] = emit_ranges(x, pos, kc, sub, ce + a);
        if (x->fail)
            return 0;
    }
    cst[nc] = 256;
    return emit_ranges(x, pos, nc, cst, cce);
}

static uint64_t conv(struct fctx *x, uint32_t ref, unsigned depth);

static uint64_t memo_find(struct fctx *x, uint32_t ref, bool *found)
{
    size_t j = ((uint64_t)ref * 0x9E3779B97F4A7C15ull >> 20) & (x->memo_cap - 1);
    for (; x->memo_k[j]; j = (j + 1) & (x->memo_cap - 1))
        if (x->memo_k[j] == (uint64_t)ref + 1) {
            *found = true;
            return x->memo_v[j];
        }
    *found = false;
    return j;
}

static bool memo_put(struct fctx *x, uint32_t ref, uint64_t ent)
{
    if ((x->memo_n + 1) * 2 > x->memo_cap) {
        size_t oc = x->memo_cap, nc = oc * 2;
        uint64_t *ok = x->memo_k, *ov = x->memo_v;
        x->memo_k = calloc(nc, 8), x->memo_v = calloc(nc, 8);
        if (!x->memo_k || !x->memo_v) {
            free(ok), free(ov);
            return false;
        }
        x->memo_cap = nc;
        for (size_t i = 0; i < oc; i++)
            if (ok[i]) {
                bool f;
                size_t j = (size_t)memo_find(x, (uint32_t)(ok[i] - 1), &f);
                x->memo_k[j] = ok[i], x->memo_v[j] = ov[i];
            }
        free(ok), free(ov);
    }
    bool f;
    size_t j = (size_t)memo_find(x, ref, &f);
    x->memo_k[j] = (uint64_t)ref + 1, x->memo_v[j] = ent;
    x->memo_n++;
    return true;
}

static uint64_t conv(struct fctx *x, uint32_t ref, unsigned depth)
{
    if (ofb_bdfa_ref_final(ref))
        return ref;   /* hdr 0: never read (the walk stops) */
    bool found;
    uint64_t v = memo_find(x, ref, &found);
    if (found)
        return v;
    if (depth > 600) {   /* a DFA is at most key_len (<= 16) nodes deep */
        x->fail = true;
        return 0;
    }
    struct ofb_bdfa_node *nd = malloc(sizeof(*nd));
    uint64_t *ce = malloc(8 * 257);
    uint64_t ent = 0;
    if (!nd || !ce) {
        x->fail = true;
        goto out;
    }
    ofb_bdfa_decode(x->dfa, ref, nd);
    if (nd->is_path) {
        for (unsigned i = 0; i <= nd->len && !x->fail; i++)
            ce[i] = conv(x, nd->kid[i], depth + 1);
        ent = ce[nd->len];
        for (unsigned i = nd->len; i-- > 0 && !x->fail;) {   /* check i fails: ce[i]; passes: the rest */
            unsigned v0 = nd->v[i], e0 = v0 | (uint8_t)~nd->m[i], k = 0;
            uint16_t st[4];
            uint64_t kc[3];
            if (v0 > 0)
                st[k] = 0, kc[k++] = ce[i];
            st[k] = (uint16_t)v0, kc[k++] = ent;
            if (e0 < 255)
                st[k] = (uint16_t)(e0 + 1), kc[k++] = ce[i];
            st[0] = 0, st[k] = 256;
            ent = emit_ranges(x, nd->ppos[i], k, st, kc);
        }
    } else {
        for (unsigned j = 0; j < nd->k && !x->fail; j++)
            ce[j] = conv(x, nd->kid[j], depth + 1);
        if (!x->fail)
            ent = emit_ranges(x, nd->pos, nd->k, nd->st, ce);
    }
    if (!x->fail && !memo_put(x, ref, ent))
        x->fail = true;
out:
    free(nd), free(ce);
    return ent;
}

struct ofb_dflat *ofb_dflat_build(const struct ofb_bdfa *d, unsigned walk, unsigned full_min, int no_vbmi)
{
    if (!d || ofb_bdfa_key_len(d) > 16 || ofb_bdfa_groups(d) > 8)
        return NULL;
    uint32_t kl = ofb_bdfa_key_len(d);
    unsigned ng = ofb_bdfa_groups(d);
    struct ofb_dflat *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    struct fctx x = { .dfa = d, .f = f, .full_min = full_min ? full_min : 16 };
    f->key_len = kl, f->ngroups = ng, f->walk = walk;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    f->vbmi = walk == DFLAT_AVX512 && __builtin_cpu_supports("avx512vbmi") && !no_vbmi;
#endif
    x.memo_cap = 1024, x.memo_k = calloc(x.memo_cap, 8), x.memo_v = calloc(x.memo_cap, 8);
    x.fail = !x.memo_k || !x.memo_v;
    for (unsigned g = 0; g < ng && !x.fail; g++)
        f->root[g] = conv(&x, ofb_bdfa_root(d, g), 0);
    free(x.memo_k), free(x.memo_v), free(x.cons), free(x.cons_k);
    if (!x.fail && !f->n)
        alloc_entries(&x, 1);   /* every root final: never read, but the walks' base pointers are not NULL */
    if (!x.fail && f->n < f->cap) {   /* what the doubling left over */
        uint64_t *m = realloc(f->mem, f->n * 8);
        if (m)
            f->mem = m, f->cap = f->n;
    }
    if (x.fail) {
        ofb_dflat_free(f);
        return NULL;
    }
    f->e = f->mem;
    return f;
}

void ofb_dflat_free(struct ofb_dflat *f)
{
    if (!f)
        return;
    free(f->mem);
    free(f);
}

size_t ofb_dflat_bytes(const struct ofb_dflat *f) { return f ? sizeof(*f) + f->cap * 8 : 0; }

uint32_t ofb_dflat_lookup(const struct ofb_dflat *f, const uint8_t *key)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t g = 0; g < f->ngroups; g++) {
        uint64_t c = f->root[g];
        while (!(c & 1))
            c = ofb_dflat_step(f->e, c, key);
        uint32_t r = ((uint32_t)c >> 1) - 1;
        best = r < best ? r : best;
    }
    return best;
}

static void batch_scalar(const struct ofb_dflat *f, const uint8_t *const keys[], size_t n, uint32_t rank_out[])
{
    const uint64_t *e = f->e;
    for (size_t base = 0; base < n; base += DFLAT_CHUNK) {
        unsigned m = n - base < DFLAT_CHUNK ? (unsigned)(n - base) : DFLAT_CHUNK;
        uint32_t best[DFLAT_CHUNK];
        uint64_t cur[DFLAT_CHUNK];
        for (unsigned j = 0; j < m; j++)
            best[j] = UINT32_MAX;
        for (uint32_t g = 0; g < f->ngroups; g++) {
            uint64_t r0 = f->root[g];
            uint32_t walk = (r0 & 1) ? 0 : m == 32 ? UINT32_MAX : (1u << m) - 1;
            for (unsigned j = 0; j < m; j++)
                cur[j] = r0;
            while (walk)
                for (uint32_t w = walk; w; w &= w - 1) {
                    unsigned j = (unsigned)__builtin_ctz(w);
                    uint64_t c = ofb_dflat_step(e, cur[j], keys[base + j]);
                    cur[j] = c;
                    walk &= ~((uint32_t)(c & 1) << j);
                }
            for (unsigned j = 0; j < m; j++) {
                uint32_t r = ((uint32_t)cur[j] >> 1) - 1;
                best[j] = r < best[j] ? r : best[j];
            }
        }
        memcpy(rank_out + base, best, 4ull * m);
    }
}

void ofb_dflat_lookup_batch(const struct ofb_dflat *f, const uint8_t *const keys[], size_t n, uint32_t rank_out[])
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (f->walk == DFLAT_AVX512)
        return f->vbmi ? ofb_dflat_batch_avx512_vbmi(f, keys, n, rank_out) : ofb_dflat_batch_avx512(f, keys, n, rank_out);
    if (f->walk == DFLAT_AVX2)
        return ofb_dflat_batch_avx2(f, keys, n, rank_out);
#endif
    batch_scalar(f, keys, n, rank_out);
}
