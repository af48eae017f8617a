/* SPDX-License-Identifier: Apache-2.0 */
/* cls-bench: one rule set, one key trace, several classifiers side by side on
 * one core.  Prints one JSON object per algorithm on stdout:
 *   {"algo":"ours","runs":"ours","rules":N,"build_s":..,"ready_s":..,"bytes_per_rule":..,"mlps":..,
 *    "batch_mlps":..,"updates_per_s":..,"hits":..,"mismatches":..}
 * ("runs": what the algorithm resolved to: "auto" runs the library's default for the key shape)
 * or {"algo":"acl","error":"did not build: ..."}.
 *
 * Usage: cls-bench [EAL args --] --rules F --keys F
 *                  [--algos auto,ours,tss,linear,htrie,sptrie,hybrid,louds,dtree,dfa,keymap,kscan,acl]
 *                  [--min-time S] [--updates N] [--budget-mb MB] [--acl-max-mb MB] [--acl-simd P]
 * --acl-simd: rte_acl's classify path forced (scalar, sse, avx2, avx512 = AVX512X32, avx512x16,
 *   default = what rte_acl picks: AVX2 unless the EAL allows 512-bit SIMD); OURS' path is OFB_CLS_SIMD.
 * --budget-mb: mem_budget_bytes (hybrid: merge budget; sptrie: size limit).
 * --acl-max-mb: rte_acl max_size (default 2048); its build may use 4x that (RLIMIT_AS),
 *   past it the build fails with a message ("did not build: rte_acl out of memory").
 * Rule file (binary, little endian): "OFBR" u32 key_len u32 n, then n records
 *   u32 priority, value[key_len], mask[key_len].
 * Key file: "OFBK" u32 key_len u32 n, then n keys of key_len bytes.
 * EAL is initialised only when "acl" is requested (rte_acl allocates with
 * rte_malloc); pass e.g. --no-huge -m 2048 --in-memory --file-prefix X. */
#define ALLOW_EXPERIMENTAL_API   /* rte_vect_set_max_simd_bitwidth (--acl-simd avx512) */
#include "classifier.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rte_acl.h>
#include <rte_vect.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include "binfile.h"
#include "tuning_env.h"

/* Rates use this thread's CPU time, not wall time: the lab box is shared with
 * busy-polling DPDK processes, and CPU time is what one core spends per lookup. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double now_process_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

struct set {
    uint32_t kl, n;
    uint8_t *data;       /* records */
    size_t rec;
};

static void *read_file(const char *path, const char *magic, uint32_t *kl, uint32_t *n)
{
    return ofb_read_binfile("cls-bench", path, magic, kl, n);
}

static struct ofb_cls_rule *make_rules(const uint8_t *d, uint32_t kl, uint32_t n)
{
    struct ofb_cls_rule *r = calloc(n, sizeof(*r));
    size_t rec = 4 + 2 * (size_t)kl;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = d + rec * i;
        memcpy(&r[i].priority, p, 4);
        r[i].value = p + 4;
        r[i].mask = p + 4 + kl;
        r[i].handle = (uint64_t)i + 1;
    }
    return r;
}

static double min_time = 0.3;
static uint64_t mem_budget;   /* --budget-mb: hybrid merge budget, sptrie limit */
static uint32_t n_updates = 200000;

static void run_ours(enum ofb_cls_algo algo, const struct ofb_cls_rule *rules, uint32_t n, uint32_t kl,
                     const uint8_t *keys, uint32_t nk, uint64_t *ref_handles)
{
    struct ofb_cls_params p = { .key_len = kl, .expected_rules = n, .algo = algo, .mem_budget_bytes = mem_budget };
    struct ofb_cls *c = ofb_cls_create_env(&p);
    const char *asked = ofb_cls_algo_name(algo);  /* "auto" stays the record's name */
    if (!c) {
        printf("{\"algo\":\"%s\",\"error\":\"ofb_cls_create failed: %s\"}\n", asked, strerror(errno));
        return;
    }
    uint32_t *ids = malloc(sizeof(uint32_t) * n);
    double t0 = now_s(), t0p = now_process_s();
    if (ofb_cls_build_bulk(c, rules, n, ids)) {
        const char *e = ofb_cls_last_error(c);
        printf("{\"algo\":\"%s\",\"rules\":%u,\"error\":\"did not build: %s\"}\n", asked, n,
               e ? e : "out of memory");
        fflush(stdout);
        ofb_cls_destroy(c);
        free(ids);
        return;
    }
    /* dfa: lookups run (from its tree) after build_s; its DFA is built on the
     * rebuild thread, ready after ready_s: CPU time of all threads since the
     * build started (= build_s for the others) */
    algo = ofb_cls_algo(c);   /* AUTO: the build may have chosen by the rules' masks */
    double build = now_s() - t0, ready = build;
    if (algo == OFB_CLS_ALGO_DFA || algo == OFB_CLS_ALGO_DTREE) {   /* AUTO's tree may build its DFA there too */
        ofb_cls_synchronize(c);
        ready = now_process_s() - t0p;
    }
    if (algo == OFB_CLS_ALGO_KEYMAP || algo == OFB_CLS_ALGO_KSCAN)   /* build_bulk waited for the map, built on its thread: count that CPU */
        build = ready = now_process_s() - t0p;
    struct ofb_cls_stats st;
    ofb_cls_get_stats(c, &st);

    /* single-key lookups, whole trace repeatedly until min_time */
    uint64_t hits = 0, done = 0, sink = 0;
    t0 = now_s();
    double el;
    do {
        for (uint32_t i = 0; i < nk; i++) {
            uint64_t h = ofb_cls_lookup(c, keys + (size_t)i * kl);
            sink += h;
            hits += h != 0;
        }
        done += nk;
        el = now_s() - t0;
    } while (el < min_time);
    double mlps = done / el / 1e6;
    hits = hits * nk / done;

    /* batched, 32 keys per call (a DPDK burst) */
    const uint8_t **kp = malloc(sizeof(void *) * nk);
    uint64_t *ho = malloc(sizeof(uint64_t) * nk);
    for (uint32_t i = 0; i < nk; i++)
        kp[i] = keys + (size_t)i * kl;
    done = 0;
    t0 = now_s();
    do {
        for (uint32_t i = 0; i < nk; i += 32)
            ofb_cls_lookup_batch(c, kp + i, nk - i < 32 ? nk - i : 32, ho + i, NULL);
        done += nk;
        el = now_s() - t0;
    } while (el < min_time);
    double bmlps = done / el / 1e6;

    /* correctness against the reference handles (first algo run gives them) */
    uint64_t mism = 0;
    if (ref_handles[0] == UINT64_MAX)
        memcpy(ref_handles, ho, sizeof(uint64_t) * nk);
    else
        for (uint32_t i = 0; i < nk; i++)
            mism += ho[i] != ref_handles[i];

    /* updates: delete a rule and insert it again (2 updates per round) */
    uint32_t nu = n_updates;
    if (algo == OFB_CLS_ALGO_LINEAR && nu > 2000)
        nu = 2000;
    if (algo == OFB_CLS_ALGO_SPTRIE) {   /* every update rebuilds the trie */
        uint32_t cap = n >= 100000 ? 2 : n >= 10000 ? 20 : 200;
        nu = nu > cap ? cap : nu;
    }
    if ((algo == OFB_CLS_ALGO_HTRIE || algo == OFB_CLS_ALGO_HYBRID) && nu > 20000)
        nu = 20000;   /* base + delta: each update rebuilds the delta, merges now and then */
    if (nu > n)
        nu = n;
    if (algo == OFB_CLS_ALGO_LOUDS)     /* read-only */
        nu = 0;
    t0 = now_s();
    double p0 = now_process_s();
    for (uint32_t i = 0; i < nu; i++) {
        uint32_t j = (uint32_t)(((uint64_t)i * 2654435761u) % n);
        ofb_cls_delete_id(c, ids[j]);
        ids[j] = ofb_cls_insert(c, &rules[j]);
    }
    double ups = 2.0 * nu / (now_s() - t0);
    /* dtree rebuilds its tree on a thread: the same updates per CPU second of
     * all threads, counting the rebuilds that ran meanwhile (not the one still
     * in flight, adopted by the synchronize below) */
    double ups_all = 2.0 * nu / (now_process_s() - p0);
    uint64_t trie_bytes = ofb_cls_trie_bytes(c);
    /* incremental tries: lookups again after the updates (keep-mode base + delta) */
    double after = 0;
    if (nu && (algo == OFB_CLS_ALGO_HTRIE || algo == OFB_CLS_ALGO_HYBRID || algo == OFB_CLS_ALGO_DTREE ||
               algo == OFB_CLS_ALGO_DFA || algo == OFB_CLS_ALGO_KEYMAP || algo == OFB_CLS_ALGO_KSCAN)) {
        if (algo == OFB_CLS_ALGO_DTREE || algo == OFB_CLS_ALGO_DFA || algo == OFB_CLS_ALGO_KEYMAP ||
            algo == OFB_CLS_ALGO_KSCAN)
            ofb_cls_synchronize(c);   /* keymap: the map rebuilt for the set the updates left */   /* adopt a rebuild still in flight: measure the tree + what stays in the delta */
        done = 0;
        t0 = now_s();
        do {
            for (uint32_t i = 0; i < nk; i += 32)
                ofb_cls_lookup_batch(c, kp + i, nk - i < 32 ? nk - i : 32, ho + i, NULL);
            done += nk;
            el = now_s() - t0;
        } while (el < min_time);
        after = done / el / 1e6;
    }

    printf("{\"algo\":\"%s\",\"runs\":\"%s\",\"simd\":\"%s\",\"rules\":%u,\"tables\":%lu,\"bands\":%lu,\"build_s\":%.6f,\"ready_s\":%.6f,\"bytes_per_rule\":%.1f,"
           "\"mlps\":%.4f,\"batch_mlps\":%.4f,\"updates_per_s\":%.0f,\"updates_per_s_all_threads\":%.0f,\"hits\":%lu,\"keys\":%u,"
           "\"mismatches\":%lu,\"trie_bytes_per_rule\":%.1f,\"batch_mlps_after_updates\":%.4f,\"sink\":%lu}\n",
           asked, ofb_cls_algo_name(algo), ofb_cls_simd_name(c), n, (unsigned long)st.tables, (unsigned long)st.bands, build, ready, (double)st.bytes / n, mlps, bmlps, ups, ups_all,
           (unsigned long)hits, nk, (unsigned long)mism, n ? (double)trie_bytes / n : 0.0, after,
           (unsigned long)(sink & 1));
    fflush(stdout);
    free(kp);
    free(ho);
    free(ids);
    ofb_cls_destroy(c);
}

/* ---------- DPDK rte_acl peer ---------- */

/* rte_acl wants the first field 1 byte long and the others grouped in 4-byte
 * input words: field 0 = key byte 0, then 4-byte BITMASK fields over bytes
 * 1.. (keys padded with zero bytes to 1 + 4k). */
static uint64_t rte_heap_bytes(void)
{
    uint64_t sum = 0;
    for (int s = 0; s < RTE_MAX_NUMA_NODES; s++) {
        struct rte_malloc_socket_stats st;
        if (rte_malloc_get_socket_stats(s, &st) == 0)
            sum += st.heap_allocsz_bytes;
    }
    return sum;
}

static uint32_t acl_pad_len(uint32_t kl)
{
    return 1 + 4 * ((kl - 1 + 3) / 4);
}

/* --acl-simd: rte_acl's classify path, forced (rte_acl_set_ctx_classify); NULL or "default" =
 * what rte_acl picks at create (the widest the EAL's max SIMD bitwidth allows: AVX2 by default) */
static const char *acl_simd;

static int acl_simd_alg(const char *name, enum rte_acl_classify_alg *alg)
{
    static const struct { const char *name; enum rte_acl_classify_alg alg; } t[] = {
        { "scalar", RTE_ACL_CLASSIFY_SCALAR }, { "sse", RTE_ACL_CLASSIFY_SSE },
        { "avx2", RTE_ACL_CLASSIFY_AVX2 }, { "avx512", RTE_ACL_CLASSIFY_AVX512X32 },
        { "avx512x16", RTE_ACL_CLASSIFY_AVX512X16 },
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (!strcmp(name, t[i].name)) {
            *alg = t[i].alg;
            return 0;
        }
    return -1;
}

static void run_acl(const uint8_t *rd, uint32_t n, uint32_t kl, const uint8_t *keys, uint32_t nk,
                    const uint64_t *ref, uint32_t max_mb)
{
    enum { ACL_BUILD_MEM_FACTOR = 4 };  /* build memory cap = 4 x max_size (see below) */
    uint32_t pl = acl_pad_len(kl);
    uint32_t nf = 1 + (pl - 1) / 4;
    if (nf > RTE_ACL_MAX_FIELDS) {
        printf("{\"algo\":\"acl\",\"error\":\"did not build: key too long for rte_acl\"}\n");
        return;
    }
    struct rte_acl_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.num_categories = 1;
    cfg.num_fields = nf;
    cfg.max_size = (size_t)max_mb << 20;
    for (uint32_t f = 0; f < nf; f++) {
        cfg.defs[f].type = RTE_ACL_FIELD_TYPE_BITMASK;
        cfg.defs[f].size = f == 0 ? 1 : 4;
        cfg.defs[f].field_index = f;
        cfg.defs[f].input_index = f;
        cfg.defs[f].offset = f == 0 ? 0 : 1 + 4 * (f - 1);
    }
    char name[64];
    snprintf(name, sizeof(name), "ofbcls%d", (int)getpid());
    struct rte_acl_param ap = { .name = name, .socket_id = SOCKET_ID_ANY,
                                .rule_size = RTE_ACL_RULE_SZ(nf), .max_rule_num = n };
    uint64_t heap0 = rte_heap_bytes();
    struct rte_acl_ctx *ctx = rte_acl_create(&ap);
    if (!ctx) {
        printf("{\"algo\":\"acl\",\"error\":\"did not build: rte_acl_create: %s\"}\n", rte_strerror(rte_errno));
        return;
    }
    size_t rsz = RTE_ACL_RULE_SZ(nf);
    uint8_t *rbuf = calloc(n, rsz);
    size_t rec = 4 + 2 * (size_t)kl;
    uint8_t vpad[OFB_CLS_MAX_KEY_LEN + 8], mpad[OFB_CLS_MAX_KEY_LEN + 8];
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = rd + rec * i;
        struct rte_acl_rule *r = (struct rte_acl_rule *)(rbuf + rsz * i);
        uint32_t prio;
        memcpy(&prio, p, 4);
        memset(vpad, 0, sizeof(vpad));
        memset(mpad, 0, sizeof(mpad));
        memcpy(vpad, p + 4, kl);
        memcpy(mpad, p + 4 + kl, kl);
        r->data.category_mask = 1;
        /* rte_acl: 1..RTE_ACL_MAX_PRIORITY, higher wins; shift by one for 0 */
        r->data.priority = (int32_t)(prio >= RTE_ACL_MAX_PRIORITY ? RTE_ACL_MAX_PRIORITY : prio + 1);
        r->data.userdata = i + 1;
        r->field[0].value.u8 = vpad[0] & mpad[0];
        r->field[0].mask_range.u8 = mpad[0];
        for (uint32_t f = 1; f < nf; f++) {
            /* rte_acl compares fields in host order, keys are read as bytes:
             * build the 32-bit words the way the classify code loads them */
            uint32_t v, m;
            const uint8_t *vb = vpad + 1 + 4 * (f - 1), *mb = mpad + 1 + 4 * (f - 1);
            v = (uint32_t)vb[0] << 24 | (uint32_t)vb[1] << 16 | (uint32_t)vb[2] << 8 | vb[3];
            m = (uint32_t)mb[0] << 24 | (uint32_t)mb[1] << 16 | (uint32_t)mb[2] << 8 | mb[3];
            r->field[f].value.u32 = v & m;
            r->field[f].mask_range.u32 = m;
        }
    }
    /* rte_acl's build allocates its temporary tries with calloc and fails with -ENOMEM
     * when one fails (max_size bounds only the result): cap the process's address space
     * at what it has now + max_mb x ACL_BUILD_MEM_FACTOR for the build, so a set that
     * explodes (ClassBench-like ipc 100k wanted > 20 GB) fails with a message instead of
     * waking the OOM killer. */
    struct rlimit as_old, as_cap;
    bool capped = false;
    long vm_pages = 0;
    FILE *statm = fopen("/proc/self/statm", "r");
    if (statm) {
        if (fscanf(statm, "%ld", &vm_pages) != 1)
            vm_pages = 0;
        fclose(statm);
    }
    if (vm_pages > 0 && getrlimit(RLIMIT_AS, &as_old) == 0) {
        as_cap = as_old;
        as_cap.rlim_cur = (rlim_t)vm_pages * (rlim_t)sysconf(_SC_PAGESIZE) +
                          ((rlim_t)max_mb << 20) * ACL_BUILD_MEM_FACTOR;
        if (as_old.rlim_cur == RLIM_INFINITY || as_cap.rlim_cur < as_old.rlim_cur)
            capped = setrlimit(RLIMIT_AS, &as_cap) == 0;
    }
    double t0 = now_s();
    int rc = rte_acl_add_rules(ctx, (struct rte_acl_rule *)rbuf, n);
    struct rte_acl_config bc = cfg;
    if (rc == 0)
        rc = rte_acl_build(ctx, &bc);
    double build = now_s() - t0;
    if (capped)
        setrlimit(RLIMIT_AS, &as_old);
    uint64_t acl_bytes = rte_heap_bytes() - heap0;
    free(rbuf);
    if (rc) {
        printf("{\"algo\":\"acl\",\"rules\":%u,\"error\":\"did not build: rte_acl %s (%d) after %.1f s, max_size %u MB, "
               "build memory %s %u MB\"}\n",
               n, rc == -ENOMEM ? "out of memory" : strerror(-rc), rc, build, max_mb,
               capped ? "capped at" : "not capped, wanted", max_mb * ACL_BUILD_MEM_FACTOR);
        rte_acl_free(ctx);
        return;
    }
    if (acl_simd && strcmp(acl_simd, "default")) {
        enum rte_acl_classify_alg alg = RTE_ACL_CLASSIFY_DEFAULT;
        int r = acl_simd_alg(acl_simd, &alg);
        if (r == 0 && (alg == RTE_ACL_CLASSIFY_AVX512X32 || alg == RTE_ACL_CLASSIFY_AVX512X16))
            rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512);   /* rte_acl refuses AVX-512 below it */
        if (r == 0)
            r = rte_acl_set_ctx_classify(ctx, alg);
        if (r) {
            printf("{\"algo\":\"acl\",\"rules\":%u,\"error\":\"did not run: rte_acl classify path %s: %s\"}\n", n,
                   acl_simd, r == -1 ? "unknown (scalar, sse, avx2, avx512, avx512x16, default)" : strerror(-r));
            rte_acl_free(ctx);
            return;
        }
    }
    /* padded keys; rte_acl reads 4-byte words at the field offsets */
    uint8_t *pk = calloc(nk, pl + 4);
    const uint8_t **kp = malloc(sizeof(void *) * nk);
    for (uint32_t i = 0; i < nk; i++) {
        memcpy(pk + (size_t)i * (pl + 4), keys + (size_t)i * kl, kl);
        kp[i] = pk + (size_t)i * (pl + 4);
    }
    /* as in DPDK's test_acl.c: rule fields in host order (built above from the
     * bytes, most significant first), input keys as bytes (network order) */
    uint32_t *res = malloc(sizeof(uint32_t) * nk);
    uint64_t done = 0;
    double el;
    t0 = now_s();
    do {
        for (uint32_t i = 0; i < nk; i++)
            rte_acl_classify(ctx, kp + i, res + i, 1, 1);
        done += nk;
        el = now_s() - t0;
    } while (el < min_time);
    double mlps = done / el / 1e6;
    done = 0;
    t0 = now_s();
    do {
        for (uint32_t i = 0; i < nk; i += 32)
            rte_acl_classify(ctx, kp + i, res + i, nk - i < 32 ? nk - i : 32, 1);
        done += nk;
        el = now_s() - t0;
    } while (el < min_time);
    double bmlps = done / el / 1e6;
    /* compare matched priorities with the reference (equal-priority ties may
     * pick a different rule in rte_acl, which is not a mismatch) */
    uint64_t mism = 0, hits = 0;
    for (uint32_t i = 0; i < nk; i++) {
        uint32_t pa = 0, pr = 0;
        if (res[i])
            memcpy(&pa, rd + rec * (res[i] - 1), 4), pa++, hits++;
        if (ref[0] != UINT64_MAX && ref[i])
            memcpy(&pr, rd + rec * (ref[i] - 1), 4), pr++;
        if (ref[0] != UINT64_MAX && pa != pr)
            mism++;
    }
    printf("{\"algo\":\"acl\",\"simd\":\"%s\",\"rules\":%u,\"build_s\":%.6f,\"bytes_per_rule\":%.1f,\"mlps\":%.4f,"
           "\"batch_mlps\":%.4f,\"updates_per_s\":null,\"hits\":%lu,\"keys\":%u,\"mismatches\":%lu}\n",
           acl_simd ? acl_simd : "default", n, build, (double)acl_bytes / n, mlps, bmlps, (unsigned long)hits, nk,
           (unsigned long)mism);
    fflush(stdout);
    free(pk);
    free(kp);
    free(res);
    rte_acl_free(ctx);
}

int main(int argc, char **argv)
{
    const char *rules_path = NULL, *keys_path = NULL, *algos = "ours,tss,linear";
    uint32_t acl_max_mb = 2048;
    int eal_argc = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            eal_argc = i;
            break;
        }
    for (int i = eal_argc ? eal_argc + 1 : 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--rules") && v)
            rules_path = v, i++;
        else if (!strcmp(a, "--keys") && v)
            keys_path = v, i++;
        else if (!strcmp(a, "--algos") && v)
            algos = v, i++;
        else if (!strcmp(a, "--min-time") && v)
            min_time = atof(v), i++;
        else if (!strcmp(a, "--updates") && v)
            n_updates = (uint32_t)atol(v), i++;
        else if (!strcmp(a, "--budget-mb") && v)
            mem_budget = (uint64_t)(atof(v) * 1048576.0), i++;
        else if (!strcmp(a, "--acl-max-mb") && v)
            acl_max_mb = (uint32_t)atol(v), i++;
        else if (!strcmp(a, "--acl-simd") && v)
            acl_simd = v, i++;
        else {
            fprintf(stderr, "cls-bench: unknown argument %s\n", a);
            return 2;
        }
    }
    if (!rules_path || !keys_path) {
        fprintf(stderr, "usage: cls-bench [EAL args --] --rules F --keys F [--algos ours,tss,linear,acl]\n");
        return 2;
    }
    uint32_t kl, n, kl2, nk;
    uint8_t *rd = read_file(rules_path, "OFBR", &kl, &n);
    uint8_t *keys = read_file(keys_path, "OFBK", &kl2, &nk);
    if (kl != kl2 || kl == 0 || kl > OFB_CLS_MAX_KEY_LEN || nk == 0 || n == 0) {
        fprintf(stderr, "cls-bench: key_len %u/%u, %u rules, %u keys: not usable\n", kl, kl2, n, nk);
        return 2;
    }
    struct ofb_cls_rule *rules = make_rules(rd, kl, n);
    uint64_t *ref = malloc(sizeof(uint64_t) * nk);
    ref[0] = UINT64_MAX;
    char *list = strdup(algos), *save = NULL;
    for (char *a = strtok_r(list, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
        if (!strcmp(a, "ours"))
            run_ours(OFB_CLS_ALGO_OURS, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "tss"))
            run_ours(OFB_CLS_ALGO_TSS, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "linear"))
            run_ours(OFB_CLS_ALGO_LINEAR, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "htrie"))
            run_ours(OFB_CLS_ALGO_HTRIE, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "sptrie"))
            run_ours(OFB_CLS_ALGO_SPTRIE, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "hybrid"))
            run_ours(OFB_CLS_ALGO_HYBRID, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "louds"))
            run_ours(OFB_CLS_ALGO_LOUDS, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "dtree"))
            run_ours(OFB_CLS_ALGO_DTREE, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "dfa"))
            run_ours(OFB_CLS_ALGO_DFA, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "keymap"))
            run_ours(OFB_CLS_ALGO_KEYMAP, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "kscan"))
            run_ours(OFB_CLS_ALGO_KSCAN, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "auto"))   /* the library's default: by key shape */
            run_ours(OFB_CLS_ALGO_AUTO, rules, n, kl, keys, nk, ref);
        else if (!strcmp(a, "acl")) {
            static int eal_done;
            if (!eal_done) {
                char prefix[64];
                snprintf(prefix, sizeof(prefix), "--file-prefix=ofb-cls-%d", (int)getpid());
                char *def[] = { argv[0], "--no-huge", "-m", "2048", "--no-shconf", "--no-pci",
                                prefix, "--log-level=lib.eal:error", NULL };
                int rc = eal_argc ? rte_eal_init(eal_argc, argv)
                                  : rte_eal_init((int)(sizeof(def) / sizeof(def[0])) - 1, def);
                if (rc < 0) {
                    printf("{\"algo\":\"acl\",\"error\":\"did not build: rte_eal_init failed: %s\"}\n",
                           rte_strerror(rte_errno));
                    continue;
                }
                eal_done = 1;
            }
            run_acl(rd, n, kl, keys, nk, ref, acl_max_mb);
        } else {
            fprintf(stderr, "cls-bench: unknown algorithm %s\n", a);
            return 2;
        }
    }
    free(list);
    return 0;
}
