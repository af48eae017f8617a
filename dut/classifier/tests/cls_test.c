/* SPDX-License-Identifier: Apache-2.0 */
/* C tests of the classifier (meson test 'classifier-c'):
 *  1. differential: random rule sets (prefixes, arbitrary masks, few masks,
 *     equal priorities), inserts/deletes interleaved with lookups of random and
 *     rule-hitting keys; ours and tss must return exactly linear's rule id,
 *     single and batched, like OVS tests/test-classifier.c.
 *  2. concurrency: one writer replacing rules (insert-then-delete, and
 *     delete-then-insert inside a batch) and growing tables, two readers
 *     checking they never see a missing or stale rule (ours; with --tries the
 *     hybrid, whose updates go through its delta, kills and merges).
 *  3. with --tries (second argument): the same differential with document 003's
 *     tries (htrie, sptrie, hybrid at merge budgets 16 and 256 KiB) beside the others, on
 *     fewer operations (each update rebuilds a trie); the SP-Trie must refuse a
 *     rule set over its limit with a message, never run the box out of memory.
 *     dtree (compiled tree + OURS delta) takes part in both: OFB_CLS_DTREE_DELTA
 *     is set low (24) so the delta is merged into a rebuilt tree many times,
 *     on the writer (OFB_CLS_DTREE_SYNC=1) or on a thread, adopted when done.
 *     dfa (the same with dfa.h's byte DFA answering first, the tree when the
 *     DFA's answer was deleted) takes part wherever dtree does.
 *  4. with --tries: LOUDS (read-only) built in bulk beside the hybrid in
 *     DA+vEB (same budget, same trie) and linear, lookups compared (also at
 *     the switch's 128-byte key); every update is refused with a message and
 *     leaves the lookups as they were.
 * Usage: cls-test [--quick|--full] [--tries] */
#include "classifier.h"
#include "bench/tuning_env.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            if (++failures > 20)                                               \
                exit(1);                                                       \
        }                                                                      \
    } while (0)

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

/* SH_TWOWORDS: arbitrary bytes in the first and the last 8-byte word only, so
 * that every table hashes <= 2 words and the SIMD phase 1 runs also for keys
 * longer than 32 bytes (AVX2 gathers the key words there) */
enum shape { SH_PREFIX, SH_ARBITRARY, SH_FEWMASKS, SH_EQPRIO, SH_TWOWORDS, SH_N };
static const char *shape_name[] = { "prefix", "arbitrary", "fewmasks", "eqprio", "twowords" };

struct r {
    uint8_t v[128], m[128];
    uint32_t prio;
    uint32_t id[12];  /* per algorithm (NA) */
    int alive;
};

static void gen_mask(uint8_t *m, uint32_t kl, enum shape sh, uint8_t pool[][128], int npool)
{
    if (sh == SH_FEWMASKS || sh == SH_EQPRIO) {
        memcpy(m, pool[rnd() % npool], kl);
        return;
    }
    for (uint32_t i = 0; i < kl; i++) {
        if (sh == SH_PREFIX) {
            /* per 4-byte field: a prefix of random length */
            if (i % 4 == 0) {
                uint32_t len = rnd() % 33, f = len ? ~0u << (32 - len) : 0;
                for (uint32_t j = 0; j < 4 && i + j < kl; j++)
                    m[i + j] = (uint8_t)(f >> (24 - 8 * j));
            }
        } else if (sh == SH_TWOWORDS && i >= 8 && i < ((kl - 1) & ~7u)) {
            m[i] = 0;
        } else {
            m[i] = (rnd() % 4 == 0) ? 0 : (uint8_t)rnd();
        }
    }
}

#define NA 12 /* algorithms compared: ours, tss, linear (the reference), htrie, sptrie, hybrid, (louds: not
                 here, read-only), dtree, dfa, auto (the default: dtree or ours by key length and,
                 at a bulk build, by the masks' shape), keymap, kscan (keys <= 4 bytes) */
#define SP_LIMIT (8u << 20)  /* the SP-Trie explodes on some shapes: it must fail cleanly, not eat the box */

/* bands: OURS priority bands (0 = auto, which stays 1 for these small sets) */
static int sp_refusals;
static int dtree_only;   /* differential: dtree and linear only (dtree's leaf formats, below) */
static int keymap_only;  /* differential: keymap and linear only (the map rebuilt at each publish, below) */
static int kscan_only;   /* differential: kscan and linear only (its blocks rebuilt at each publish, below) */
static int kscan_sets[2];   /* kscan_only's bulk builds: [0] over the budget (OURS answered), [1] with blocks */

/* an algorithm refused an insert/bulk build: only the SP-Trie may (over its
 * limit), and it must say so; it leaves the comparison for this rule set */
static void refused(struct ofb_cls *c, int a, int *live)
{
    const char *e = ofb_cls_last_error(c);
    CHECK(a == OFB_CLS_ALGO_SPTRIE, "%s refused a rule: %s", ofb_cls_algo_name((enum ofb_cls_algo)a), e ? e : "(no message)");
    CHECK(e && strstr(e, "sptrie") && strstr(e, "memory limit"), "SP-Trie refusal message: %s", e ? e : "(none)");
    live[a] = 0;
    sp_refusals++;
}

/* issue 42: AUTO's one-DFA front and the DFA's lockstep walks (dfa_flat.h: scalar, AVX2 or AVX-512 as
 * OFB_CLS_SIMD picks) against linear, on prefix-shaped rule sets of 5, 13 and 16 bytes, with batches of
 * every size around the walks' 8/16/32-key chunks and single lookups */
static void dfa_flat_check(void)
{
    static const uint32_t kls[] = { 5, 13, 16 };
    static const size_t bs[] = { 1, 3, 8, 15, 16, 17, 31, 32, 33, 63, 64 };
    for (int ki = 0; ki < 3; ki++) {
        uint32_t kl = kls[ki], n = 300;
        uint8_t *val = malloc((size_t)n * kl), *msk = malloc((size_t)n * kl);
        struct ofb_cls_rule *br = malloc(sizeof(*br) * n);
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t j = 0; j < kl; j++) {
                unsigned r = (unsigned)(rnd() % 8), l = r < 3 ? 8 : r < 5 ? 0 : (unsigned)(rnd() % 9);
                msk[i * kl + j] = (uint8_t)(l ? 0xffu << (8 - l) : 0);
                val[i * kl + j] = (uint8_t)(rnd() % 4 == 0 ? i : rnd() % 16) & msk[i * kl + j];
            }
            br[i] = (struct ofb_cls_rule){ .priority = (uint32_t)(rnd() % 500), .value = val + i * kl,
                                           .mask = msk + i * kl, .handle = i + 1 };
        }
        struct ofb_cls_params pa = { .key_len = kl, .algo = OFB_CLS_ALGO_AUTO, .prio_max = 1000 },
                              pd = { .key_len = kl, .algo = OFB_CLS_ALGO_DFA, .prio_max = 1000 },
                              pl = { .key_len = kl, .algo = OFB_CLS_ALGO_LINEAR, .prio_max = 1000 };
        setenv("OFB_CLS_AUTO_DFA", "0", 1);
        struct ofb_cls *a0 = ofb_cls_create_env(&pa);
        unsetenv("OFB_CLS_AUTO_DFA");
        setenv("OFB_CLS_DFA_BULK_SYNC", "1", 1);
        setenv("OFB_DFA_MAX_STATES", "4000000", 1);   /* random byte prefixes need more states than the default cap */
        struct ofb_cls *a = ofb_cls_create_env(&pa), *d = ofb_cls_create_env(&pd), *l = ofb_cls_create(&pl);
        setenv("OFB_DFA_GROUPS", "3", 1);   /* a partitioned DFA: the walks' groups at once (issue 42) */
        struct ofb_cls *d3 = ofb_cls_create_env(&pd);
        unsetenv("OFB_DFA_GROUPS");
        unsetenv("OFB_CLS_DFA_BULK_SYNC");
        unsetenv("OFB_DFA_MAX_STATES");
        CHECK(a && a0 && d && d3 && l && ofb_cls_build_bulk(a, br, n, NULL) == 0 &&
                  ofb_cls_build_bulk(a0, br, n, NULL) == 0 && ofb_cls_build_bulk(d, br, n, NULL) == 0 &&
                  ofb_cls_build_bulk(d3, br, n, NULL) == 0 && ofb_cls_build_bulk(l, br, n, NULL) == 0,
              "dfa_flat: builds of %u %u-byte rules", n, kl);
        if (!a || !a0 || !d || !d3 || !l)
            goto next;
        CHECK(ofb_cls_algo(a) == OFB_CLS_ALGO_DTREE && ofb_cls_trie_bytes(a) > ofb_cls_trie_bytes(a0),
              "auto at %u %u-byte prefix rules: %s, %lu bytes, without its DFA %lu: no DFA in front", n, kl,
              ofb_cls_algo_name(ofb_cls_algo(a)), (unsigned long)ofb_cls_trie_bytes(a),
              (unsigned long)ofb_cls_trie_bytes(a0));
        for (int round = 0; round < 40; round++) {
            size_t m = bs[round % 11];
            uint8_t keys[64][16];
            const uint8_t *kp[64];
            uint64_t ha[64], hd[64], hl[64], h3[64];
            for (size_t k = 0; k < m; k++) {
                for (uint32_t j = 0; j < kl; j++)
                    keys[k][j] = (uint8_t)rnd();
                if (k % 4) {   /* inside a rule */
                    uint32_t x = (uint32_t)(rnd() % n);
                    for (uint32_t j = 0; j < kl; j++)
                        keys[k][j] = (uint8_t)((keys[k][j] & ~msk[x * kl + j]) | val[x * kl + j]);
                }
                kp[k] = keys[k];
            }
            ofb_cls_lookup_batch(a, kp, m, ha, NULL);
            ofb_cls_lookup_batch(d, kp, m, hd, NULL);
            ofb_cls_lookup_batch(l, kp, m, hl, NULL);
            ofb_cls_lookup_batch(d3, kp, m, h3, NULL);
            for (size_t k = 0; k < m; k++)
                CHECK(ha[k] == hl[k] && hd[k] == hl[k] && h3[k] == hl[k] && ofb_cls_lookup(a, kp[k]) == hl[k] &&
                          ofb_cls_lookup(d, kp[k]) == hl[k],
                      "dfa_flat kl %u batch %zu key %zu: auto %lu dfa %lu dfa/3 groups %lu linear %lu (simd %s)", kl, m,
                      k, (unsigned long)ha[k], (unsigned long)hd[k], (unsigned long)h3[k], (unsigned long)hl[k],
                      ofb_cls_simd_name(a));
        }
    next:
        ofb_cls_destroy(a), ofb_cls_destroy(a0), ofb_cls_destroy(d), ofb_cls_destroy(d3), ofb_cls_destroy(l);
        free(val), free(msk), free(br);
    }
}

static void differential(uint32_t kl, enum shape sh, int nops, int bulk, uint32_t bands, uint64_t hybrid_budget)
{
    struct ofb_cls *c[NA];
    int live[NA];   /* 0: this algorithm refused the rule set (SP-Trie over its limit) */
    for (int a = 0; a < NA; a++) {
        /* the tries rebuild at every update: they take part in one of the two
         * variants per shape (hybrid_budget != 0) to keep the test fast */
        live[a] = a < OFB_CLS_ALGO_HTRIE || (hybrid_budget != 0 && a != OFB_CLS_ALGO_LOUDS) ||
                  ((a == OFB_CLS_ALGO_DTREE || a == OFB_CLS_ALGO_DFA || a == OFB_CLS_ALGO_AUTO) &&
                   bands == 0);   /* bands are OURS': once is enough */
        if (a == OFB_CLS_ALGO_KEYMAP || a == OFB_CLS_ALGO_KSCAN)   /* keys of <= 4 bytes; OURS behind it: once;
                                           incremental rebuilds: keymap_only/kscan_only (below), concurrency */
            live[a] = kl <= 4 && bands == 0 && bulk;
        if (dtree_only)
            live[a] = a == OFB_CLS_ALGO_LINEAR || a == OFB_CLS_ALGO_DTREE;
        if (keymap_only)
            live[a] = a == OFB_CLS_ALGO_LINEAR || a == OFB_CLS_ALGO_KEYMAP;
        if (kscan_only)
            live[a] = a == OFB_CLS_ALGO_LINEAR || a == OFB_CLS_ALGO_KSCAN;
        /* dtree: merges of the delta into the tree on the writer after a bulk
         * build, on a thread (adopted whenever they finish) after inserts */
        if (a == OFB_CLS_ALGO_DTREE || a == OFB_CLS_ALGO_DFA || a == OFB_CLS_ALGO_AUTO)
            setenv("OFB_CLS_DTREE_SYNC", bulk ? "1" : "0", 1);
        if (!live[a]) {
            c[a] = NULL;
            continue;
        }
        /* HYBRID with a budget that merges part of the trie */
        struct ofb_cls_params p = { .key_len = kl, .algo = (enum ofb_cls_algo)a, .prio_max = 1000,
                                    .bands = a == OFB_CLS_ALGO_OURS ? bands : 0,
                                    .mem_budget_bytes = a == OFB_CLS_ALGO_HYBRID ? hybrid_budget
                                                      : a == OFB_CLS_ALGO_SPTRIE ? SP_LIMIT : 0 };
        c[a] = ofb_cls_create_env(&p);
        CHECK(c[a] != NULL, "create algo %d", a);
    }
    int cap = nops + 16;
    struct r *rules = calloc(cap, sizeof(*rules));
    int n = 0;
    uint8_t pool[6][128];
    for (int i = 0; i < 6; i++)
        for (uint32_t j = 0; j < kl; j++)
            pool[i][j] = (uint8_t)rnd() & (uint8_t)rnd();  /* sparse-ish masks */

    if (bulk) {
        int nb = nops / 2;
        struct ofb_cls_rule *br = calloc(nb, sizeof(*br));
        uint32_t *ids = calloc(nb, sizeof(uint32_t));
        for (int i = 0; i < nb; i++) {
            struct r *x = &rules[n++];
            gen_mask(x->m, kl, sh, pool, 6);
            for (uint32_t j = 0; j < kl; j++)
                x->v[j] = (uint8_t)rnd();
            x->prio = sh == SH_EQPRIO ? 7 : (uint32_t)(rnd() % 1000);
            br[i] = (struct ofb_cls_rule){ x->prio, x->v, x->m, (uint64_t)i + 1 };
            x->alive = 1;
        }
        for (int a = 0; a < NA; a++) {
            if (!live[a])
                continue;
            if (ofb_cls_build_bulk(c[a], br, nb, ids) != 0) {
                refused(c[a], a, live);
                continue;
            }
            for (int i = 0; i < nb; i++)
                rules[i].id[a] = ids[i];
            if (a == OFB_CLS_ALGO_KSCAN && kscan_only) {   /* the blocks answer, not OURS behind them, unless
                                                              wide masks put the set over its budget */
                const char *e = ofb_cls_last_error(c[a]);
                kscan_sets[ofb_cls_trie_bytes(c[a]) > 0]++;
                CHECK(ofb_cls_trie_bytes(c[a]) > 0 || (e && strstr(e, "budget")),
                      "kscan: no blocks after a bulk build of %d rules (kl %u): %s", nb, kl, e ? e : "");
            }
        }
        free(br);
        free(ids);
    }
    uint8_t key[128];
    for (int op = 0; op < nops; op++) {
        int what = (int)(rnd() % 10);
        if (what < 4 && n < cap) {                       /* insert */
            struct r *x = &rules[n];
            gen_mask(x->m, kl, sh, pool, 6);
            for (uint32_t j = 0; j < kl; j++)
                x->v[j] = (uint8_t)rnd();
            if (n && rnd() % 8 == 0) {               /* duplicate of an existing rule */
                struct r *y = &rules[rnd() % n];
                memcpy(x->v, y->v, kl);
                memcpy(x->m, y->m, kl);
            }
            x->prio = sh == SH_EQPRIO ? 7 : (uint32_t)(rnd() % 1000);
            struct ofb_cls_rule cr = { x->prio, x->v, x->m, (uint64_t)n + 1 };
            for (int a = 0; a < NA; a++) {
                if (!live[a])
                    continue;
                x->id[a] = ofb_cls_insert(c[a], &cr);
                if (!x->id[a])
                    refused(c[a], a, live);
            }
            x->alive = 1;
            n++;
        } else if (what < 6 && n) {                      /* delete */
            struct r *x = &rules[rnd() % n];
            if (!x->alive)
                continue;
            if (rnd() % 2) {
                for (int a = 0; a < NA; a++)
                    CHECK(!live[a] || ofb_cls_delete_id(c[a], x->id[a]) == 0, "delete_id");
            } else {
                struct ofb_cls_rule cr = { x->prio, x->v, x->m, 0 };
                uint32_t got[NA];
                for (int a = 0; a < NA; a++)
                    got[a] = live[a] ? ofb_cls_delete(c[a], &cr) : 0;
                /* with duplicates, the lowest id of the equal rules goes: the
                 * same logical rule in all three (ids are in insert order) */
                for (int a = 0; a < NA; a++)
                    CHECK(!live[a] || (got[a] == got[2] && got[2]), "delete by value: %s %u, linear %u",
                          ofb_cls_algo_name((enum ofb_cls_algo)a), got[a], got[2]);
                for (int i = 0; i < n; i++)
                    if (rules[i].alive && rules[i].id[2] == got[2])
                        rules[i].alive = 0;
                continue;
            }
            x->alive = 0;
        } else {                                         /* lookups */
            const uint8_t *kp[32];
            uint8_t keys[32][128];
            for (int k = 0; k < 32; k++) {
                for (uint32_t j = 0; j < kl; j++)
                    keys[k][j] = (uint8_t)rnd();
                if (n && k % 2) {                    /* hit a rule */
                    struct r *x = &rules[rnd() % n];
                    for (uint32_t j = 0; j < kl; j++)
                        keys[k][j] = (keys[k][j] & ~x->m[j]) | (x->v[j] & x->m[j]);
                }
                kp[k] = keys[k];
            }
            uint64_t h[NA][32];
            uint32_t ids[NA][32];
            for (int a = 0; a < NA; a++)
                if (live[a])
                    ofb_cls_lookup_batch(c[a], kp, 32, h[a], ids[a]);
            for (int k = 0; k < 32; k++) {
                uint32_t ref = ids[2][k], got;
                /* ids are assigned in the same order in all of them */
                for (int a = 0; a < NA; a++) {
                    if (!live[a])
                        continue;
                    ofb_cls_lookup_id(c[a], kp[k], &got);
                    CHECK(got == ref && ids[a][k] == ref, "kl=%u %s bands=%u op=%d: %s %u/%u linear %u", kl,
                          shape_name[sh], bands, op, ofb_cls_algo_name((enum ofb_cls_algo)a), got, ids[a][k], ref);
                    CHECK(h[a][k] == h[2][k], "handle");
                }
            }
        }
        (void)key;
    }
    for (int a = 0; a < NA; a++) {
        struct ofb_cls_stats st;
        if (!live[a]) {
            ofb_cls_destroy(c[a]);
            continue;
        }
        ofb_cls_synchronize(c[a]);
        ofb_cls_get_stats(c[a], &st);
        int alive = 0;
        for (int i = 0; i < n; i++)
            alive += rules[i].alive;
        CHECK(st.rules == (uint64_t)alive, "stats.rules %lu != %d", (unsigned long)st.rules, alive);
        CHECK(st.pending_removals == 0 && st.pending_frees == 0, "pending after synchronize");
        ofb_cls_destroy(c[a]);
    }
    free(rules);
}

/* kscan: a key of > 4 bytes is refused at create; a set over its budget leaves OURS answering with
 * a message; sets of 1..4-byte keys (100 random masks, some repeated rules) answer every key as
 * linear does, single and batched, on this run's SIMD path, with the blocks in place */
static void kscan_checks(void)
{
    struct ofb_cls_params p = { .key_len = 5, .algo = OFB_CLS_ALGO_KSCAN };
    CHECK(ofb_cls_create_env(&p) == NULL && errno == EINVAL, "kscan took a 5-byte key");
    {   /* 2 rules over 32 bits at the default 512 B a rule: 2^21 block offsets do not fit */
        uint8_t v[4] = { 1, 2, 3, 4 }, all[4] = { 0xff, 0xff, 0xff, 0xff }, low[4] = { 0, 0, 0x0f, 0xff };
        struct ofb_cls_rule r[2] = { { 5, v, all, 11 }, { 4, v, low, 12 } };
        struct ofb_cls_tuning tu = { 0 };
        p = (struct ofb_cls_params){ .key_len = 4, .algo = OFB_CLS_ALGO_KSCAN, .tuning = tu };
        struct ofb_cls *c = ofb_cls_create(&p);
        CHECK(c && ofb_cls_build_bulk(c, r, 2, NULL) == 0, "kscan build_bulk of 2 rules");
        const char *e = c ? ofb_cls_last_error(c) : NULL;
        uint8_t k[4] = { 1, 2, 3, 4 }, k2[4] = { 9, 9, 3, 4 };
        CHECK(c && ofb_cls_lookup(c, k) == 11 && ofb_cls_lookup(c, k2) == 12, "kscan (OURS behind) answers");
        CHECK(c && ofb_cls_trie_bytes(c) == 0 && e && strstr(e, "kscan") && strstr(e, "budget"),
              "kscan refusal message: %s", e ? e : "(none)");
        ofb_cls_destroy(c);
    }
    for (uint32_t kl = 1; kl <= 4; kl++) {
        const uint32_t n = kl == 1 ? 200 : 3000;
        uint8_t *vm = malloc((size_t)n * 2 * kl), pool[100][4];
        struct ofb_cls_rule *br = malloc(sizeof(*br) * n);
        for (int i = 0; i < 100; i++)
            for (uint32_t j = 0; j < kl; j++)
                pool[i][j] = (uint8_t)(rnd() | rnd());
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *v = vm + (size_t)i * 2 * kl, *m = v + kl;
            if (i && rnd() % 16 == 0) {   /* a repeated (mask, value), its own priority */
                memcpy(v, vm + (size_t)(rnd() % i) * 2 * kl, 2 * kl);
            } else {
                memcpy(m, pool[rnd() % 100], kl);
                for (uint32_t j = 0; j < kl; j++)
                    v[j] = (uint8_t)rnd() & m[j];
            }
            br[i] = (struct ofb_cls_rule){ (uint32_t)(rnd() % 64), v, m, (uint64_t)i + 1 };
        }
        struct ofb_cls_params ps = { .key_len = kl, .algo = OFB_CLS_ALGO_KSCAN };
        struct ofb_cls_params pl = { .key_len = kl, .algo = OFB_CLS_ALGO_LINEAR };
        ps.tuning.kscan_bytes_per_rule = 1u << 16;   /* small sets: room for 2^21 blocks */
        struct ofb_cls *s = NULL, *l = ofb_cls_create(&pl);
        {   /* the run's SIMD path (OFB_CLS_SIMD), the budget above */
            struct ofb_cls_tuning keep = ps.tuning;
            ofb_cls_tuning_from_env(&ps.tuning);
            ps.tuning.kscan_bytes_per_rule = keep.kscan_bytes_per_rule;
            s = ofb_cls_create(&ps);
        }
        CHECK(s && l && ofb_cls_build_bulk(s, br, n, NULL) == 0 && ofb_cls_build_bulk(l, br, n, NULL) == 0,
              "kscan/linear build of %u rules (kl %u)", n, kl);
        CHECK(s && ofb_cls_algo(s) == OFB_CLS_ALGO_KSCAN && ofb_cls_trie_bytes(s) > 0, "kscan kl %u: no blocks (%s)",
              kl, s && ofb_cls_last_error(s) ? ofb_cls_last_error(s) : "");
        enum { NK = 4096 };
        uint8_t (*keys)[4] = malloc(sizeof(*keys) * NK);
        const uint8_t **kp = malloc(sizeof(*kp) * NK);
        uint64_t *hs = malloc(sizeof(uint64_t) * NK), *hl = malloc(sizeof(uint64_t) * NK);
        for (int k = 0; k < NK; k++) {
            const struct ofb_cls_rule *r = &br[rnd() % n];   /* kl <= 2: every key; else random, or in a rule */
            for (uint32_t j = 0; j < kl; j++)
                keys[k][j] = kl <= 2 ? (uint8_t)((k >> (8 * (kl - 1 - j))) & 0xff)
                             : k % 2 ? (uint8_t)(r->value[j] | (rnd() & ~r->mask[j])) : (uint8_t)rnd();
            kp[k] = keys[k];
        }
        int hits = 0;
        for (int k = 0; s && l && k < NK; k += 61) {   /* odd batch sizes */
            size_t m = NK - k < 61 ? (size_t)(NK - k) : 61;
            ofb_cls_lookup_batch(s, kp + k, m, hs + k, NULL);
            ofb_cls_lookup_batch(l, kp + k, m, hl + k, NULL);
        }
        for (int k = 0; s && l && k < NK; k++) {
            CHECK(hs[k] == hl[k] && ofb_cls_lookup(s, kp[k]) == hl[k], "kscan kl %u key %d: %lu single %lu, linear %lu",
                  kl, k, (unsigned long)hs[k], (unsigned long)ofb_cls_lookup(s, kp[k]), (unsigned long)hl[k]);
            hits += hl[k] != 0;
        }
        CHECK(hits > NK / 16, "kscan kl %u: %d of %d keys hit", kl, hits, NK);
        ofb_cls_destroy(s);
        ofb_cls_destroy(l);
        free(keys), free(kp), free(hs), free(hl), free(br), free(vm);
    }
}

/* keymap: a key of > 4 bytes is refused at create; rules the map cannot take
 * (32 cared-for bits, a budget too small) leave OURS answering, with a
 * message; a map that fits answers (ofb_cls_trie_bytes > 0) */
static void keymap_refusals(void)
{
    struct ofb_cls_params p = { .key_len = 5, .algo = OFB_CLS_ALGO_KEYMAP };
    CHECK(ofb_cls_create_env(&p) == NULL && errno == EINVAL, "keymap took a 5-byte key");
    uint8_t v[4] = { 1, 2, 3, 4 }, all[4] = { 0xff, 0xff, 0xff, 0xff }, low[4] = { 0, 0, 0x0f, 0xff };
    struct ofb_cls_rule r[2] = { { 5, v, all, 11 }, { 4, v, low, 12 } };
    const struct { uint32_t kl; uint64_t budget; const char *want; } cases[] = {
        { 4, 0, "32 key bits" },               /* every bit cared for: 2^32 bytes */
        { 3, 1u << 20, "over the limit" },     /* 2^24 bytes over a 1 MiB budget */
        { 3, 0, NULL },                        /* fits: the map answers */
    };
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        p = (struct ofb_cls_params){ .key_len = cases[i].kl, .algo = OFB_CLS_ALGO_KEYMAP,
                                     .mem_budget_bytes = cases[i].budget };
        struct ofb_cls *c = ofb_cls_create_env(&p);
        CHECK(c != NULL, "keymap create");
        if (!c)
            continue;
        CHECK(ofb_cls_build_bulk(c, r, 2, NULL) == 0, "keymap build_bulk");
        const char *e = ofb_cls_last_error(c);
        uint8_t k[4] = { 1, 2, 3, 4 }, k2[4] = { 9, 9, 3, 4 };
        CHECK(ofb_cls_lookup(c, k) == 11 && ofb_cls_lookup(c, k2) == 12,
              "keymap answers (kl %u)", cases[i].kl);
        if (cases[i].want)
            CHECK(ofb_cls_trie_bytes(c) == 0 && e && strstr(e, "keymap") && strstr(e, cases[i].want),
                  "keymap refusal message: %s", e ? e : "(none)");
        else
            CHECK(ofb_cls_trie_bytes(c) > 0 && !e, "keymap: no map for a 24-bit set (%s)", e ? e : "");
        ofb_cls_destroy(c);
    }
    /* AUTO on <= 4-byte keys: kscan from KSCAN_AUTO_MIN (2^16) rules at the
     * first bulk build, answering as linear does (3-byte keys, 100 rand()|rand()
     * masks as slide 19 draws them) */
    {
        const uint32_t n = 1u << 19, kl = 3;
        uint8_t *vm = malloc((size_t)n * 2 * kl), pool[100][3];
        struct ofb_cls_rule *br = malloc(sizeof(*br) * n);
        for (int i = 0; i < 100; i++)   /* 100 masks, as slide 19 */
            for (uint32_t j = 0; j < kl; j++)
                pool[i][j] = (uint8_t)(rnd() | rnd());
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *v = vm + (size_t)i * 2 * kl, *m = v + kl;
            memcpy(m, pool[rnd() % 100], kl);
            for (uint32_t j = 0; j < kl; j++)
                v[j] = (uint8_t)rnd() & m[j];
            br[i] = (struct ofb_cls_rule){ (uint32_t)(rnd() % 65536), v, m, (uint64_t)i + 1 };
        }
        struct ofb_cls_params pa = { .key_len = kl, .algo = OFB_CLS_ALGO_AUTO };
        struct ofb_cls_params pl = { .key_len = kl, .algo = OFB_CLS_ALGO_LINEAR };
        struct ofb_cls *a = ofb_cls_create_env(&pa), *l = ofb_cls_create(&pl);
        CHECK(a && l && ofb_cls_build_bulk(a, br, n, NULL) == 0 && ofb_cls_build_bulk(l, br, n, NULL) == 0,
              "auto/linear build of 2^19 rules");
        CHECK(ofb_cls_algo(a) == OFB_CLS_ALGO_KSCAN && ofb_cls_trie_bytes(a) > 0, "auto at 2^19 3-byte rules runs %s",
              ofb_cls_algo_name(ofb_cls_algo(a)));
        uint8_t keys[256][3];
        const uint8_t *kp[256];
        uint64_t ha[256], hl[256];
        for (int k = 0; k < 256; k++) {
            for (uint32_t j = 0; j < kl; j++)
                keys[k][j] = (uint8_t)rnd();
            kp[k] = keys[k];
        }
        ofb_cls_lookup_batch(a, kp, 256, ha, NULL);
        ofb_cls_lookup_batch(l, kp, 256, hl, NULL);
        int hits = 0;
        for (int k = 0; k < 256; k++) {
            CHECK(ha[k] == hl[k] && ofb_cls_lookup(a, kp[k]) == hl[k], "auto keymap key %d: %lu, linear %lu", k,
                  (unsigned long)ha[k], (unsigned long)hl[k]);
            hits += hl[k] != 0;
        }
        CHECK(hits > 200, "auto keymap: %d of 256 keys hit", hits);
        ofb_cls_destroy(a);
        ofb_cls_destroy(l);
        free(br);
        free(vm);
    }
}

/* LOUDS vs DA+vEB (the same hybrid trie) vs linear, bulk-built, then refusals */
static int louds_sets;

static void louds_differential(uint32_t kl, enum shape sh, int nr, uint64_t budget)
{
    enum { NL = 3 };
    const enum ofb_cls_algo al[NL] = { OFB_CLS_ALGO_LINEAR, OFB_CLS_ALGO_HYBRID, OFB_CLS_ALGO_LOUDS };
    struct ofb_cls *c[NL];
    for (int a = 0; a < NL; a++) {
        struct ofb_cls_params p = { .key_len = kl, .algo = al[a], .mem_budget_bytes = budget };
        c[a] = ofb_cls_create_env(&p);
        CHECK(c[a] != NULL, "create %s", ofb_cls_algo_name(al[a]));
    }
    struct r *rules = calloc((size_t)nr, sizeof(*rules));
    struct ofb_cls_rule *br = calloc((size_t)nr, sizeof(*br));
    uint32_t *ids = calloc((size_t)nr, sizeof(uint32_t));
    uint8_t pool[6][128];
    for (int i = 0; i < 6; i++)
        for (uint32_t j = 0; j < kl; j++)
            pool[i][j] = (uint8_t)rnd() & (uint8_t)rnd();
    for (int i = 0; i < nr; i++) {
        struct r *x = &rules[i];
        gen_mask(x->m, kl, sh, pool, 6);
        for (uint32_t j = 0; j < kl; j++)
            x->v[j] = (uint8_t)rnd();
        if (i && rnd() % 8 == 0) {  /* duplicates */
            memcpy(x->v, rules[rnd() % i].v, kl);
            memcpy(x->m, rules[rnd() % i].m, kl);
        }
        x->prio = sh == SH_EQPRIO ? 7 : (uint32_t)(rnd() % 1000);
        br[i] = (struct ofb_cls_rule){ x->prio, x->v, x->m, (uint64_t)i + 1 };
    }
    for (int a = 0; a < NL; a++)
        CHECK(ofb_cls_build_bulk(c[a], br, (size_t)nr, ids) == 0, "%s bulk build: %s", ofb_cls_algo_name(al[a]),
              ofb_cls_last_error(c[a]) ? ofb_cls_last_error(c[a]) : "?");
    for (int round = 0; round < 2; round++) {
        for (int k = 0; k < 64; k++) {
            const uint8_t *kp[32];
            uint8_t keys[32][128];
            for (int q = 0; q < 32; q++) {
                for (uint32_t j = 0; j < kl; j++)
                    keys[q][j] = (uint8_t)rnd();
                if (q % 2) {
                    struct r *x = &rules[rnd() % nr];
                    for (uint32_t j = 0; j < kl; j++)
                        keys[q][j] = (keys[q][j] & ~x->m[j]) | (x->v[j] & x->m[j]);
                }
                kp[q] = keys[q];
            }
            uint32_t got[NL][32], one;
            uint64_t h[NL][32];
            for (int a = 0; a < NL; a++)
                ofb_cls_lookup_batch(c[a], kp, 32, h[a], got[a]);
            for (int q = 0; q < 32; q++)
                for (int a = 1; a < NL; a++) {
                    ofb_cls_lookup_id(c[a], kp[q], &one);
                    CHECK(got[a][q] == got[0][q] && one == got[0][q] && h[a][q] == h[0][q],
                          "kl=%u %s budget=%lu: %s %u/%u linear %u", kl, shape_name[sh], (unsigned long)budget,
                          ofb_cls_algo_name(al[a]), got[a][q], one, got[0][q]);
                }
        }
        if (round)
            break;
        /* LOUDS is read-only: each update is refused with a message, nothing changes */
        struct ofb_cls *L = c[2];
        const char *e;
        CHECK(ofb_cls_insert(L, &br[0]) == 0, "louds accepted an insert");
        e = ofb_cls_last_error(L);
        CHECK(e && strstr(e, "louds") && strstr(e, "read-only"), "louds insert refusal: %s", e ? e : "(none)");
        CHECK(ofb_cls_delete_id(L, 1) == -1, "louds accepted a delete");
        CHECK(ofb_cls_delete(L, &br[1]) == 0, "louds accepted a delete by value");
        CHECK(ofb_cls_build_bulk(L, br, 1, ids) == -1 && ids[0] == 0, "louds accepted a second build");
        e = ofb_cls_last_error(L);
        CHECK(e && strstr(e, "read-only"), "louds second-build refusal: %s", e ? e : "(none)");
        struct ofb_cls_stats st;
        ofb_cls_get_stats(L, &st);
        CHECK(st.rules == (uint64_t)nr, "louds rules after refusals: %lu", (unsigned long)st.rules);
        CHECK(ofb_cls_trie_bytes(L) > 0 && ofb_cls_trie_bytes(c[1]) > 0 && ofb_cls_trie_bytes(c[0]) == 0,
              "trie bytes");
    }
    louds_sets++;
    for (int a = 0; a < NL; a++)
        ofb_cls_destroy(c[a]);
    free(rules), free(br), free(ids);
}

/* ---------- concurrency ---------- */

#define SLOTS 64
static struct ofb_cls *cc;
static atomic_int stop;
static atomic_long reads_done;
static uint8_t slot_key[SLOTS][8];

static void *reader(void *arg)
{
    (void)arg;
    int rid = ofb_cls_reader_register(cc);
    uint32_t last_gen[SLOTS] = { 0 };
    const uint8_t *kp[SLOTS];
    uint64_t h[SLOTS];
    for (int s = 0; s < SLOTS; s++)
        kp[s] = slot_key[s];
    long n = 0;
    while (!atomic_load(&stop)) {
        ofb_cls_reader_enter(cc, rid);
        ofb_cls_lookup_batch(cc, kp, SLOTS, h, NULL);
        for (int s = 0; s < SLOTS; s++) {
            uint64_t x = ofb_cls_lookup(cc, kp[s]);
            CHECK(h[s] != 0 && x != 0, "reader saw no rule for slot %d", s);
            /* handle = slot << 32 | generation; generations only grow */
            CHECK((h[s] >> 32) == (uint64_t)s + 1 && (x >> 32) == (uint64_t)s + 1, "wrong slot");
            uint32_t g = (uint32_t)h[s], g2 = (uint32_t)x;
            CHECK(g >= last_gen[s] && g2 >= g, "stale rule: gen %u after %u", g, last_gen[s]);
            last_gen[s] = g2;
        }
        ofb_cls_reader_leave(cc, rid);
        n += SLOTS;
    }
    ofb_cls_reader_unregister(cc, rid);
    atomic_fetch_add(&reads_done, n);
    return NULL;
}

/* key_len 8, and 4 for OURS' key32 bitmaps (set by the writer while readers test them) */
static void concurrency(enum ofb_cls_algo algo, double seconds, uint32_t kl)
{
    struct ofb_cls_params p = { .key_len = kl, .algo = algo,
                                .mem_budget_bytes = algo == OFB_CLS_ALGO_KEYMAP || algo == OFB_CLS_ALGO_KSCAN ? 0 : 1u << 20 };
    atomic_store(&stop, 0);
    atomic_store(&reads_done, 0);
    cc = ofb_cls_create_env(&p);
    uint32_t cur[SLOTS];
    uint8_t m_exact[8], m_half[8];
    memset(m_exact, 0xff, 8);
    memset(m_half, 0, 8);
    memset(m_half, 0xff, kl / 2);
    for (int s = 0; s < SLOTS; s++) {
        for (int j = 0; j < 8; j++)
            slot_key[s][j] = (uint8_t)rnd();
        slot_key[s][0] = (uint8_t)s;
        struct ofb_cls_rule r = { 1, slot_key[s], (s % 2) ? m_exact : m_half, ((uint64_t)s + 1) << 32 | 1 };
        cur[s] = ofb_cls_insert(cc, &r);
    }
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, reader, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint32_t gen = 1;
    long updates = 0;
    uint8_t fv[8], fm[8];
    for (;;) {
        for (int s = 0; s < SLOTS; s++) {
            gen++;
            struct ofb_cls_rule r = { gen, slot_key[s], (gen % 2) ? m_exact : m_half,
                                      ((uint64_t)s + 1) << 32 | gen };
            if (gen % 3 == 0) {
                /* delete first, insert second: only safe as one batch */
                ofb_cls_batch_begin(cc);
                CHECK(ofb_cls_delete_id(cc, cur[s]) == 0, "delete");
                cur[s] = ofb_cls_insert(cc, &r);
                ofb_cls_batch_commit(cc);
            } else {
                uint32_t old = cur[s];
                cur[s] = ofb_cls_insert(cc, &r);
                CHECK(ofb_cls_delete_id(cc, old) == 0, "delete");
            }
            /* filler that grows tables and churns blocks */
            uint64_t mp = rnd() % 32 * 0x9e3779b97f4a7c15ull;  /* 32 masks */
            for (int j = 0; j < 8; j++)
                fv[j] = (uint8_t)rnd(), fm[j] = (uint8_t)(mp >> (8 * j));
            fv[0] = fm[0] = 0xff; /* never matches slot keys (slot < 64) */
            struct ofb_cls_rule f = { (uint32_t)(rnd() % 100), fv, fm, 7 };
            ofb_cls_insert(cc, &f);
            updates += 3;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9 > seconds)
            break;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ofb_cls_synchronize(cc);
    struct ofb_cls_stats st;
    ofb_cls_get_stats(cc, &st);
    printf("concurrency %s key_len %u: %ld updates, %ld reader lookups, %lu rules, %lu tables, %lu bytes\n",
           ofb_cls_algo_name(algo), kl, updates,
           (long)atomic_load(&reads_done), (unsigned long)st.rules, (unsigned long)st.tables,
           (unsigned long)st.bytes);
    CHECK(atomic_load(&reads_done) > 0, "readers ran");
    ofb_cls_destroy(cc);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    if (argc > 2 && strcmp(argv[2], "--tries")) {
        fprintf(stderr, "usage: cls-test [--quick|--full] [--tries]\n");
        return 2;
    }
    const char *want = getenv("OFB_CLS_SIMD");
    if (want && *want && strcmp(want, "auto") && !ofb_cls_simd_supported(want)) {
        printf("SKIP: OFB_CLS_SIMD=%s: this CPU does not have it\n", want);
        return 77;  /* meson's "skipped" */
    }
    {
        struct ofb_cls_params p = { .key_len = 4 };
        struct ofb_cls *c = ofb_cls_create_env(&p);
        if (!c) {
            fprintf(stderr, "cls-test: ofb_cls_create failed\n");
            return 1;
        }
        printf("simd path: %s\n", ofb_cls_simd_name(c));
        ofb_cls_destroy(c);
    }
    setenv("OFB_CLS_DTREE_DELTA", "24", 0);   /* dtree: merge its delta often */
    int nops = quick ? 1500 : 20000;
    uint32_t kls[] = { 4, 13, 40 };
    int tries = argc > 2 && !strcmp(argv[2], "--tries");
    for (int k = 0; k < 3; k++)
        for (int sh = 0; sh < SH_N; sh++)
            for (int bulk = 0; bulk < 2; bulk++) {
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                if (tries) {
                    /* the tries rebuild at every update: fewer operations; hybrid
                     * merge budgets 16 KiB (some merging) and 256 KiB (more) */
                    differential(kls[k], (enum shape)sh, nops / 6, bulk, 0, bulk ? 16u << 10 : 256u << 10);
                } else {
                    differential(kls[k], (enum shape)sh, nops, bulk, 0, 0);
                    /* priority bands: 4 and the maximum (32: few rules per band) */
                    differential(kls[k], (enum shape)sh, nops, bulk, bulk ? 4 : 32, 0);
                }
                clock_gettime(CLOCK_MONOTONIC, &t1);
                if (getenv("CLS_TEST_VERBOSE"))
                    printf("kl=%u %s bulk=%d: %.2f s\n", kls[k], shape_name[sh], bulk,
                           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
            }
    if (tries) {
        uint32_t lkl[] = { 4, 13, 40, 128 };   /* 128: the switch's key */
        for (int k = 0; k < 4; k++)
            for (int sh = 0; sh < SH_N; sh++)
                for (int b = 0; b < 3; b++)     /* H-Trie, some merging, more merging */
                    louds_differential(lkl[k], (enum shape)sh, quick ? 400 : 3000,
                                       b == 0 ? 0 : b == 1 ? (64u << 10) : (1u << 20));
        /* a key past the trie's limit is refused at create */
        struct ofb_cls_params p = { .key_len = OFB_CLS_MAX_KEY_LEN + 1, .algo = OFB_CLS_ALGO_LOUDS };
        CHECK(ofb_cls_create_env(&p) == NULL, "louds took a %u-byte key", p.key_len);
        printf("louds: %d rule sets compared with hybrid (DA+vEB) and linear\n", louds_sets);
    }
    if (!tries) {
        /* dtree's leaf entries: value + mask id at the 16- and 32-byte entry
         * boundaries (key_len 14, 16), and value + mask words (OFB_DTREE_MID=0,
         * what a set of > 65536 masks gets); at key_len 40 kills find ranks by
         * binary search (OFB_DTREE_RID=0) */
        dtree_only = 1;
        uint32_t dkl[] = { 14, 16, 13, 40 };
        for (int k = 0; k < 4; k++) {
            if (k >= 2)
                setenv("OFB_DTREE_MID", "0", 1);
            if (k == 3)   /* kills through the sorted (id, rank) list, not the direct table */
                setenv("OFB_DTREE_RID", "0", 1);
            for (int sh = SH_PREFIX; sh <= SH_FEWMASKS; sh++)
                for (int bulk = 0; bulk < 2; bulk++)
                    differential(dkl[k], (enum shape)sh, nops / 2, bulk, 0, 0);
        }
        unsetenv("OFB_DTREE_MID");
        unsetenv("OFB_DTREE_RID");
        dtree_only = 0;
        /* OURS' grouped line filter at key_len 4 from the first rule on (it
         * needs 1024 otherwise): regrouped as rules double and churn, new masks
         * ungrouped in between; then tiny lines (2 bits per entry, saturated),
         * 8 masks per group (2-dword lanes) and 4 bits per probe */
        if (getenv("CLS_TEST_VERBOSE"))
            printf("grouped line filter variants...\n");
        const char *vars[2][4] = { { "1", "4", "12", "3" }, { "1", "8", "2", "4" } };
        for (int v = 0; v < 2; v++) {
            setenv("OFB_CLS_GF_MIN", vars[v][0], 1);
            setenv("OFB_CLS_GF_MAXG", vars[v][1], 1);
            setenv("OFB_CLS_GF_BPE", vars[v][2], 1);
            setenv("OFB_CLS_GF_K", vars[v][3], 1);
            for (int sh = 0; sh < SH_N; sh++)
                for (int bulk = 0; bulk < 2; bulk++) {
                    differential(4, (enum shape)sh, nops, bulk, 0, 0);
                    differential(4, (enum shape)sh, nops, bulk, bulk ? 4 : 32, 0);
                }
        }
        unsetenv("OFB_CLS_GF_MIN");
        unsetenv("OFB_CLS_GF_MAXG");
        unsetenv("OFB_CLS_GF_BPE");
        unsetenv("OFB_CLS_GF_K");
    }
    if (!tries) {
        /* keymap: the map rebuilt at every publish (OFB_CLS_KEYMAP_SYNC=1), so
         * every lookup after an update asks a fresh map; 1-3-byte keys (maps
         * of <= 16 MiB); then its refusals */
        keymap_only = 1;
        setenv("OFB_CLS_KEYMAP_SYNC", "1", 1);
        uint32_t mkl[] = { 1, 2, 3 };
        for (int k = 0; k < 3; k++)
            for (int sh = 0; sh < SH_N; sh++)
                for (int bulk = 0; bulk < 2; bulk++) {
                    struct timespec t0, t1;
                    clock_gettime(CLOCK_MONOTONIC, &t0);
                    differential(mkl[k], (enum shape)sh, mkl[k] == 3 ? nops / 30 : nops / 2, bulk, 0, 0);
                    clock_gettime(CLOCK_MONOTONIC, &t1);
                    if (getenv("CLS_TEST_VERBOSE"))
                        printf("keymap kl=%u %s bulk=%d: %.2f s\n", mkl[k], shape_name[sh], bulk,
                               (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
                }
        keymap_only = 0;
        /* kscan: the same with its blocks (a budget per rule that small sets fit), 1-4-byte keys */
        kscan_only = 1;
        setenv("OFB_KSCAN_BYTES_PER_RULE", "1000000", 1);
        for (uint32_t kl = 1; kl <= 4; kl++)
            for (int sh = 0; sh < SH_N; sh++)
                for (int bulk = 0; bulk < 2; bulk++)
                    differential(kl, (enum shape)sh, kl >= 3 ? nops / 30 : nops / 2, bulk, 0, 0);
        unsetenv("OFB_KSCAN_BYTES_PER_RULE");
        kscan_only = 0;
        CHECK(kscan_sets[1] >= 3 * kscan_sets[0], "kscan: blocks in only %d of %d bulk-built sets", kscan_sets[1],
              kscan_sets[0] + kscan_sets[1]);
        if (getenv("CLS_TEST_VERBOSE"))
            printf("kscan: blocks in %d of %d bulk-built sets\n", kscan_sets[1], kscan_sets[0] + kscan_sets[1]);
        kscan_checks();
        if (getenv("CLS_TEST_VERBOSE"))
            printf("keymap refusals and auto at 2^19 rules...\n");
        keymap_refusals();
        if (getenv("CLS_TEST_VERBOSE"))
            printf("... done\n");
        unsetenv("OFB_CLS_KEYMAP_SYNC");
    }
    if (!tries)
        dfa_flat_check();
    printf("differential: %d failures (SP-Trie over its %u MiB limit in %d rule sets: refused cleanly)\n",
           failures, SP_LIMIT >> 20, sp_refusals);
    if (!tries) {
        concurrency(OFB_CLS_ALGO_OURS, quick ? 1.0 : 5.0, 8);
        concurrency(OFB_CLS_ALGO_OURS, quick ? 1.0 : 5.0, 4);
        setenv("OFB_CLS_DTREE_SYNC", "0", 1);   /* background rebuilds under readers */
        concurrency(OFB_CLS_ALGO_DTREE, quick ? 1.0 : 5.0, 8);
        setenv("OFB_CLS_DTREE_SYNC", "1", 1);
        concurrency(OFB_CLS_ALGO_DTREE, quick ? 1.0 : 5.0, 8);
        setenv("OFB_CLS_DTREE_SYNC", "0", 1);   /* dfa: the same scheme with the DFA in front of the tree */
        concurrency(OFB_CLS_ALGO_DFA, quick ? 1.0 : 5.0, 8);
        /* keymap: maps built on a thread, adopted, retired under readers */
        concurrency(OFB_CLS_ALGO_KEYMAP, quick ? 1.0 : 5.0, 3);
        setenv("OFB_KSCAN_BYTES_PER_RULE", "1000000", 1);   /* the same with kscan's blocks (small sets fit) */
        concurrency(OFB_CLS_ALGO_KSCAN, quick ? 1.0 : 5.0, 3);
        unsetenv("OFB_KSCAN_BYTES_PER_RULE");
    } else {  /* the hybrid's incremental scheme: base + delta, kills, merges, under readers */
        concurrency(OFB_CLS_ALGO_HYBRID, quick ? 1.0 : 5.0, 8);
    }
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
