/* SPDX-License-Identifier: Apache-2.0 */
/* cls-prof: where OURS spends a lookup.  Built from classifier.c with
 * OFB_CLS_PROFILE, which counts per lookup: bands searched, candidates from
 * the filters, rule blocks visited (each a likely cache miss), entries
 * compared, blocks that held the answer.  Single-key lookups, CPU time.
 *
 * Usage: cls-prof RULES KEYS      (files as for cls-bench)
 *        OFB_CLS_BANDS=N cls-prof ...   forces N priority bands */
#include "classifier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "binfile.h"
#include "tuning_env.h"

extern unsigned long ofb_prof_dfa_steps, ofb_prof_dfa_types[4];
extern unsigned long ofb_prof_blocks, ofb_prof_bands, ofb_prof_ents, ofb_prof_found, ofb_prof_cands,
    ofb_prof_pass;

static void *read_all(const char *path, const char *magic, uint32_t *kl, uint32_t *n)
{
    return ofb_read_binfile("cls-prof", path, magic, kl, n);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: cls-prof RULES KEYS\n");
        return 2;
    }
    uint32_t kl, n, kl2, nk;
    uint8_t *r = read_all(argv[1], "OFBR", &kl, &n), *k = read_all(argv[2], "OFBK", &kl2, &nk);
    if (kl != kl2 || !nk) {
        fprintf(stderr, "cls-prof: key length of rules %u != keys %u (or no keys)\n", kl, kl2);
        return 2;
    }
    struct ofb_cls_rule *rr = calloc(n, sizeof(*rr));
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *p = r + (4 + 2 * (size_t)kl) * i;
        memcpy(&rr[i].priority, p, 4);
        rr[i].value = p + 4;
        rr[i].mask = p + 4 + kl;
        rr[i].handle = (uint64_t)i + 1;
    }
    const char *ea = getenv("OFB_CLS_PROF_ALGO");   /* "dfa": dfa.h's walk (steps per lookup); default OURS */
    enum ofb_cls_algo algo = ea && !strcmp(ea, "dfa") ? OFB_CLS_ALGO_DFA : OFB_CLS_ALGO_OURS;
    struct ofb_cls *c = ofb_cls_create_env(&(struct ofb_cls_params){ .key_len = kl, .expected_rules = n, .algo = algo });
    if (!c || ofb_cls_build_bulk(c, rr, n, NULL)) {
        fprintf(stderr, "cls-prof: build failed\n");
        return 1;
    }
    ofb_cls_synchronize(c);   /* dfa: adopt the DFA its bulk build made on the rebuild thread */
    struct ofb_cls_stats st;
    ofb_cls_get_stats(c, &st);
    struct timespec a, b;
    uint64_t sink = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (uint32_t i = 0; i < nk; i++)
        sink += ofb_cls_lookup(c, k + (size_t)i * kl);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    double t = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    double d = nk;
    printf("{\"rules\":%u,\"tables\":%lu,\"bands\":%lu,\"ns_per_lookup\":%.0f,\"bands_per_lookup\":%.2f,"
           "\"candidates_per_lookup\":%.2f,\"blocks_per_lookup\":%.2f,\"entries_per_lookup\":%.2f,"
           "\"found_per_lookup\":%.2f,\"key32_passes_per_lookup\":%.2f,\"bytes_per_rule\":%.1f,"
           "\"dfa_steps_per_lookup\":%.2f,\"dfa_range16_range64_full_path\":[%.2f,%.2f,%.2f,%.2f],\"sink\":%lu}\n",
           n, (unsigned long)st.tables, (unsigned long)st.bands, t * 1e9 / d, ofb_prof_bands / d,
           ofb_prof_cands / d, ofb_prof_blocks / d, ofb_prof_ents / d, ofb_prof_found / d,
           ofb_prof_pass / d, (double)ofb_cls_memory_bytes(c) / n, ofb_prof_dfa_steps / d,
           ofb_prof_dfa_types[0] / d, ofb_prof_dfa_types[1] / d, ofb_prof_dfa_types[2] / d, ofb_prof_dfa_types[3] / d,
           (unsigned long)(sink & 1));
    ofb_cls_destroy(c);
    return 0;
}
