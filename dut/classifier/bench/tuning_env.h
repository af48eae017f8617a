/* SPDX-License-Identifier: Apache-2.0 */
/* The tools' side of struct ofb_cls_tuning (classifier.h): cls-bench, cls-test
 * and cls-prof fill it from the environment variables the library used to read
 * itself (the library reads none).  The Python binding does the same in
 * binding.tuning_from_env; keep the two in step. */
#ifndef OFB_CLS_TUNING_ENV_H
#define OFB_CLS_TUNING_ENV_H

#include "classifier.h"

#include <stdlib.h>
#include <string.h>

static inline const char *ofb_tenv(const char *name)
{
    const char *e = getenv(name);
    return e && *e ? e : NULL;
}

static inline int ofb_tenv_is(const char *name, const char *val)
{
    const char *e = getenv(name);
    return e && !strcmp(e, val);
}

static inline long long ofb_tenv_num(const char *name)
{
    const char *e = getenv(name);
    return e ? atoll(e) : 0;
}

/* numeric knobs keep the library's old reading: atoi, out-of-range = default */
static inline void ofb_cls_tuning_from_env(struct ofb_cls_tuning *t)
{
    memset(t, 0, sizeof(*t));
    t->simd = ofb_tenv("OFB_CLS_SIMD");
    const char *no = ofb_tenv("OFB_CLS_NO_SIMD");
    t->no_simd = no && *no != '0';
    t->no_hugepages = ofb_tenv_is("OFB_CLS_HUGEPAGES", "0");
    t->no_key32 = ofb_tenv_is("OFB_CLS_KEY32", "0");
    t->no_gf = ofb_tenv_is("OFB_CLS_GF", "0");
    t->gf_k = ofb_tenv_num("OFB_CLS_GF_K") == 4 ? 4 : 0;
    t->gf_debug = getenv("OFB_CLS_GF_DEBUG") != NULL;
    t->dtree_sync = ofb_tenv_is("OFB_CLS_DTREE_SYNC", "1");
    t->dfa_bulk_sync = ofb_tenv_is("OFB_CLS_DFA_BULK_SYNC", "1");
    t->keymap_sync = ofb_tenv_is("OFB_CLS_KEYMAP_SYNC", "1");
    t->dtree_stats = getenv("OFB_DTREE_STATS") != NULL;
    t->dtree_no_mid = ofb_tenv_is("OFB_DTREE_MID", "0");
    t->dtree_no_rid = ofb_tenv_is("OFB_DTREE_RID", "0");
    t->dfa_stats = getenv("OFB_DFA_STATS") != NULL;
    t->dfa_key_order = ofb_tenv_is("OFB_DFA_ORDER", "key");
    t->dfa_no_paths = ofb_tenv_is("OFB_DFA_PATHS", "0");
    t->dfa_narrow = ofb_tenv_is("OFB_DFA_NARROW", "1");
    t->dfa_no_flat = ofb_tenv_is("OFB_DFA_FLAT", "0");
    t->dfa_no_auto = ofb_tenv_is("OFB_CLS_AUTO_DFA", "0");
    t->dfa_no_vbmi = ofb_tenv_is("OFB_DFA_VBMI", "0");
    t->kmap_debug = getenv("OFB_KMAP_DEBUG") != NULL;
    t->dfa_auto_one = ofb_tenv_is("OFB_CLS_AUTO_DFA", "one");
    if (ofb_tenv("OFB_CLS_BANDS")) {   /* set: a fixed count (0 or less = 1 band, as before) */
        long long b = ofb_tenv_num("OFB_CLS_BANDS");
        t->bands = b >= 1 ? (uint32_t)(b > OFB_CLS_MAX_BANDS ? OFB_CLS_MAX_BANDS : b) : (b < 0 ? OFB_CLS_MAX_BANDS : 1);
    }
    long long v;
    v = ofb_tenv_num("OFB_CLS_GF_MAXG"), t->gf_maxg = v >= 1 && v <= 8 ? (uint32_t)v : 0;
    v = ofb_tenv_num("OFB_CLS_GF_BPE"), t->gf_bpe = v >= 1 && v <= 256 ? (uint32_t)v : 0;
    if (getenv("OFB_CLS_GF_SLACK"))
        v = ofb_tenv_num("OFB_CLS_GF_SLACK"), t->gf_slack = v >= 0 && v <= 16 ? (uint32_t)v + 1 : 0;
    v = ofb_tenv_num("OFB_CLS_GF_MIN"), t->gf_min = v >= 1 && v <= UINT32_MAX ? (uint32_t)v : 0;
    v = ofb_tenv_num("OFB_CLS_DTREE_DELTA"), t->dtree_delta = v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
    v = ofb_tenv_num("OFB_DTREE_TREES"), t->dtree_trees = v >= 1 && v <= 8 ? (uint32_t)v : 0;
    v = ofb_tenv_num("OFB_DFA_STATES_PER_RULE"), t->dfa_states_per_rule = v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
    v = ofb_tenv_num("OFB_DFA_MAX_STATES"), t->dfa_max_states = v > 0 ? (uint64_t)v : 0;
    v = ofb_tenv_num("OFB_DFA_GROUP_MB"), t->dfa_group_mb = v > 0 ? (uint64_t)v : 0;
    v = ofb_tenv_num("OFB_DFA_MAX_MB"), t->dfa_max_mb = v > 0 ? (uint64_t)v : 0;
    v = ofb_tenv_num("OFB_DFA_GROUPS"), t->dfa_groups = v >= 1 && v <= 4 ? (uint32_t)v : 0;
    v = ofb_tenv_num("OFB_DFA_FULL_MIN"), t->dfa_full_min = v >= 4 && v <= 256 ? (uint32_t)v : 0;
    v = ofb_tenv_num("OFB_KSCAN_BYTES_PER_RULE"), t->kscan_bytes_per_rule = v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* ofb_cls_create with the environment's tuning over p's */
static inline struct ofb_cls *ofb_cls_create_env(const struct ofb_cls_params *p)
{
    struct ofb_cls_params q = *p;
    ofb_cls_tuning_from_env(&q.tuning);
    return ofb_cls_create(&q);
}

#endif
