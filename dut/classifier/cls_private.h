/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench wildcard classifier: private declarations shared by its units.
 *
 * Design (see classifier.h for the public contract and the algorithms):
 *   classifier.c         facade: create/destroy, insert/delete, bulk build, publish, lookup: through c->ops
 *   cls_algos.c          per-algorithm hooks (struct cls_ops, one table per algorithm: cls_ops_of)
 *   cls_lookup.c         every algorithm's lookup and batch lookup (with the kernels below, one object)
 *   cls_memory.c         memory: the writer's slab and the huge-page arena (xalloc/xfree)
 *   cls_versions.c       versions and readers: publish, retire, reclaim (epoch-based, versions are the epochs)
 *   cls_rules.c          rule storage: tuple tables, key32 bitmaps, the grouped line filter, snapshots, the sorted list
 *   cls_lookup.h         phase-1 kernels shared by every instruction set; the scalar ones (inline)
 *   cls_lookup_avx2.c    AVX2 kernels (target("avx2"), chosen at run time)    } included by
 *   cls_lookup_avx512.c  AVX-512 kernels (target("avx512f,..."), at run time) } cls_lookup.c
 *   cls_rebuild.c        background rebuilds: DTREE/DFA compiled trees and the KEYMAP map
 *   cls_trie_glue.c      trie glue: the rule list -> document 003's tries (base + delta) at publish
 *   hugepage.h/.c        the one huge-page API (OURS' arena, dtree, dfa, keymap use it alike)
 *   partition.h/.c       the rule partition dtree and dfa share (no dtree <-> dfa circle)
 * Tuning: ofb_cls_params.tuning (classifier.h) is copied into c->tu at create;
 * no unit reads the environment (the tools: bench/tuning_env.h; the binding:
 * binding.tuning_from_env).  Background builds (DTREE/DFA rebuilds, KEYMAP
 * maps) share one job type, struct cls_job (cls_rebuild.c).
 * Nothing here is API: functions shared between units carry CLS_INTERNAL (hidden in the
 * shared object) and the cls_ prefix (no clash inside the switch's static link).  Hot
 * helpers stay `static inline` in this header so every unit inlines them as before. */
#ifndef OFB_CLS_PRIVATE_H
#define OFB_CLS_PRIVATE_H

#include "classifier.h"
#include "trie.h"
#include "dtree.h"
#include "keymap.h"
#include "hugepage.h"

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

#define CLS_INTERNAL __attribute__((visibility("hidden")))

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
 * (experiments/classifier/2026-11-24-grouped: 100k -9 %; 1M 0.96x to 1.6x between runs) */
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
/* One background build (cls_rebuild.c), the type DTREE's rebuilds and
 * KEYMAP's builds share: run() on a thread, or on the writer (sync, or no
 * thread could be made); the writer adopts it with cls_job_ready. */
struct cls_job {
    pthread_t th;                     /* 0: ran on the writer */
    _Atomic int done;
    double t0, t1;                    /* when it started, ended (monotonic s) */
    void (*run)(struct cls_job *);
};
struct dtjob {                        /* DTREE: one background rebuild */
    struct cls_job job;               /* first: a struct cls_job * is a struct dtjob * */
    uint32_t key_len;
    unsigned flags;
    struct ofb_cls_tuning tu;         /* the classifier's tuning (a copy: the job may outlive nothing, but owns it) */
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
    struct cls_job job;               /* first */
    uint32_t key_len;
    struct ofb_kmap_rule *rules;
    size_t n;
    uint64_t v, max_bytes;
    struct ofb_cls_tuning tu;
    bool scan;                        /* KSCAN: kscan.h's blocks instead of the byte map */
    int simd;                         /* KSCAN: the classifier's SIMD path (enum simd_path) */
    struct ofb_kmap *out;
    int over;
    _Atomic int cancel;               /* destroy: stop the build early */
    char err[256];
};
/* KEYMAP's AUTO threshold before issue 42's KSCAN (keys of <= 4 bytes, from this many rules at
 * the first bulk build; below it the map's 2^B bytes cost more per rule than OURS' line filter,
 * which is L2/L3-resident there) */
#define KMAP_AUTO_MIN (1u << 19)
/* AUTO runs KSCAN (kscan.h) for keys of <= 4 bytes from this many rules at the first bulk build
 * (issue 42: slide 19 at 1M in a quarter of keymap's bytes; at 100k far above OURS); KEYMAP by name */
#define KSCAN_AUTO_MIN (1u << 16)
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

/* Per-algorithm hooks (the model: a vtable).  The facade (classifier.c) runs an algorithm
 * only through c->ops, one table per enum ofb_cls_algo (cls_algos.c: cls_ops_of); AUTO
 * settles on one of them (c->ops changes with c->algo, before any reader: cls_set_algo).
 * NULL hooks do nothing. */
struct snap;
struct cls_ops {
    enum ofb_cls_algo algo;
    const char *name;
    bool list;          /* rules in the sorted list `lin` (LINEAR, tries): stats count one table */
    bool banded;        /* OURS' priority bands (OURS, KEYMAP's fallback) */
    bool read_only;     /* LOUDS: one build_bulk into an empty classifier, then no update */
    /* create: the algorithm's part of the classifier, after the common fields and c->simd */
    void (*create)(struct ofb_cls *c);
    /* the first bulk build into an empty classifier outside a batch (NULL: `bulk`) */
    int (*bulk_first)(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids);
    /* bulk: store n rules inside a batch (published by the caller) */
    int (*bulk)(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids);
    /* after the first bulk build (published), before build_bulk returns */
    void (*bulk_done)(struct ofb_cls *c);
    /* insert / delete one rule, published unless in a batch (0 / -1 with c->err on refusal) */
    uint32_t (*insert)(struct ofb_cls *c, const struct ofb_cls_rule *r);
    int (*delete_id)(struct ofb_cls *c, uint32_t id);
    /* the id of the visible rule of this priority, value v (masked) and mask m (0: none) */
    uint32_t (*find)(struct ofb_cls *c, uint32_t prio, const uint64_t *v, const uint64_t *m);
    /* one key (words, load_key) at version v over snapshot s */
    uint64_t (*lookup)(const struct ofb_cls *c, const uint64_t *kw, uint64_t v, const struct snap *s,
                       uint32_t *id_out);
    /* up to OFB_CLS_BATCH_MAX keys at one version; returns the hits */
    size_t (*lookup_batch)(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
                           uint32_t *io, uint64_t v, const struct snap *s);
    /* publish: before the snapshot and version go out, and after */
    void (*publish_before)(struct ofb_cls *c);
    void (*publish_after)(struct ofb_cls *c);
    /* synchronize: adopt background builds in flight (before the readers are waited for) */
    void (*synchronize)(struct ofb_cls *c);
    /* destroy: the algorithm's own structures (the common ones are the facade's) */
    void (*destroy)(struct ofb_cls *c);
    /* bytes of the algorithm's compiled structure (tree, map, tries), 0 if none */
    uint64_t (*memory)(const struct ofb_cls *c);
};

struct ofb_cls {
    /* read-mostly, shared with readers */
    uint32_t key_len, nwk, es;        /* es = entry stride in bytes */
    enum ofb_cls_algo algo;
    const struct cls_ops *ops;        /* == cls_ops_of[algo] */
    uint8_t simd;                     /* enum simd_path, fixed at creation */
    bool hp;                          /* huge pages (hugepage.h): !tuning.no_hugepages */
    struct ofb_cls_tuning tu;         /* ofb_cls_params.tuning (tu.simd is not kept: NULL) */
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
    bool dfa_one_over;                /* AUTO's tree: its rules did not fit one DFA (rebuilds stop asking; writer) */
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
    return c->algo == OFB_CLS_ALGO_OURS || c->algo == OFB_CLS_ALGO_KEYMAP || c->algo == OFB_CLS_ALGO_KSCAN;
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

static inline bool uses_lin(const struct ofb_cls *c)
{
    return c->algo == OFB_CLS_ALGO_LINEAR || is_trie(c);
}


/* ---------- functions shared between units ---------- */

/* per-algorithm hooks (cls_algos.c; their lookups: cls_lookup.c) */
CLS_INTERNAL extern const struct cls_ops *const cls_ops_of[OFB_CLS_ALGO_KSCAN + 1];
static inline void cls_set_algo(struct ofb_cls *c, enum ofb_cls_algo a)
{
    c->algo = a;
    c->ops = cls_ops_of[a];
}
CLS_INTERNAL uint64_t cls_lookup_ours(const struct ofb_cls *c, const uint64_t *kw, uint64_t v,
                                      const struct snap *s, uint32_t *id_out);
CLS_INTERNAL uint64_t cls_lookup_keymap(const struct ofb_cls *c, const uint64_t *kw, uint64_t v,
                                        const struct snap *s, uint32_t *id_out);
CLS_INTERNAL uint64_t cls_lookup_tss(const struct ofb_cls *c, const uint64_t *kw, uint64_t v,
                                     const struct snap *s, uint32_t *id_out);
CLS_INTERNAL uint64_t cls_lookup_linear(const struct ofb_cls *c, const uint64_t *kw, uint64_t v,
                                        const struct snap *s, uint32_t *id_out);
CLS_INTERNAL uint64_t cls_lookup_dtree(const struct ofb_cls *c, const uint64_t *kw, uint64_t v,
                                       const struct snap *s, uint32_t *id_out);
CLS_INTERNAL uint64_t cls_lookup_trie(const struct ofb_cls *c, const uint64_t *kw, uint64_t v,
                                      const struct snap *s, uint32_t *id_out);
CLS_INTERNAL size_t cls_batch_ours(const struct ofb_cls *c, const uint8_t *const keys[], size_t n, uint64_t *ho,
                                   uint32_t *io, uint64_t v, const struct snap *s);
CLS_INTERNAL size_t cls_batch_keymap(const struct ofb_cls *c, const uint8_t *const keys[], size_t n,
                                     uint64_t *ho, uint32_t *io, uint64_t v, const struct snap *s);
CLS_INTERNAL size_t cls_batch_dtree(const struct ofb_cls *c, const uint8_t *const keys[], size_t n,
                                    uint64_t *ho, uint32_t *io, uint64_t v, const struct snap *s);
CLS_INTERNAL size_t cls_batch_tss(const struct ofb_cls *c, const uint8_t *const keys[], size_t n,
                                  uint64_t *ho, uint32_t *io, uint64_t v, const struct snap *s);
CLS_INTERNAL size_t cls_batch_linear(const struct ofb_cls *c, const uint8_t *const keys[], size_t n,
                                     uint64_t *ho, uint32_t *io, uint64_t v, const struct snap *s);
CLS_INTERNAL size_t cls_batch_trie(const struct ofb_cls *c, const uint8_t *const keys[], size_t n,
                                   uint64_t *ho, uint32_t *io, uint64_t v, const struct snap *s);

/* memory: the writer's slab and the huge-page arena (xalloc/xfree) (cls_memory.c) */
CLS_INTERNAL void cls_xfree_quiet(struct ofb_cls *c, void *p, size_t n);
CLS_INTERNAL void *cls_xalloc(struct ofb_cls *c, size_t n);
CLS_INTERNAL void cls_xfree(struct ofb_cls *c, void *p, size_t n);

/* versions and readers: publish, retire, reclaim (epoch-based, versions are the epochs) (cls_versions.c) */
CLS_INTERNAL void cls_free_compiled(uint8_t kind, void *p);
CLS_INTERNAL void cls_retire(struct ofb_cls *c, void *p, size_t bytes);
CLS_INTERNAL int cls_snap_touch(struct ofb_cls *c);
CLS_INTERNAL void cls_publish(struct ofb_cls *c);
CLS_INTERNAL void cls_after_update(struct ofb_cls *c);

/* rule storage: tuple tables, key32 bitmaps, the grouped line filter, snapshots, the sorted list (cls_rules.c) */
CLS_INTERNAL int cls_snap_rebuild(struct ofb_cls *c);
CLS_INTERNAL int cls_gf_build(struct ofb_cls *c);
CLS_INTERNAL int cls_rr_reserve(struct ofb_cls *c, uint32_t more);
CLS_INTERNAL uint32_t cls_insert_one(struct ofb_cls *c, const struct ofb_cls_rule *r);
CLS_INTERNAL uint32_t cls_tlin_after(const struct ofb_cls *c, const struct lin *l, uint32_t id);
CLS_INTERNAL struct ent *cls_find_ent(struct ofb_cls *c, uint32_t id, struct blk **blk_out, uint32_t *pos_out);
CLS_INTERNAL int cls_delete_one(struct ofb_cls *c, uint32_t id);
CLS_INTERNAL void cls_physical_remove(struct ofb_cls *c, uint32_t id);
CLS_INTERNAL int cls_bulk_linear(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids);

/* trie glue: the rule list -> document 003's tries (base + delta) at publish (cls_trie_glue.c) */
CLS_INTERNAL void cls_trie_undo_ids(struct ofb_cls *c, uint32_t lo, uint32_t hi);
CLS_INTERNAL void cls_trie_refresh(struct ofb_cls *c);
CLS_INTERNAL bool cls_louds_refuses(struct ofb_cls *c, const char *what);

/* background rebuilds: DTREE/DFA compiled trees and the KEYMAP map (cls_rebuild.c) */
CLS_INTERNAL void cls_job_start(struct cls_job *j, bool sync);
CLS_INTERNAL bool cls_job_ready(struct cls_job *j, bool wait);
CLS_INTERNAL int cls_dt_bulk(struct ofb_cls *c, const struct ofb_cls_rule *rules, size_t n, uint32_t *ids);
CLS_INTERNAL void cls_dt_job_free(struct dtjob *j);
CLS_INTERNAL void cls_dt_maybe_start(struct ofb_cls *c);
CLS_INTERNAL void cls_dt_poll(struct ofb_cls *c, bool wait);
CLS_INTERNAL void cls_km_poll(struct ofb_cls *c, bool wait);
CLS_INTERNAL void cls_km_after_publish(struct ofb_cls *c);

/* ---------- small helpers (inline everywhere) ---------- */

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
extern unsigned long ofb_prof_blocks, ofb_prof_bands, ofb_prof_ents, ofb_prof_found, ofb_prof_cands,
    ofb_prof_any, ofb_prof_pass;
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

static inline void set_quant(struct ofb_cls *c, uint32_t lo, uint32_t hi)
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
static inline void words_of(const struct ofb_cls *c, const uint8_t *bytes, uint64_t *w)
{
    w[c->nwk - 1] = 0;
    memcpy(w, bytes, c->key_len);
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
static inline bool tbl_fits(const struct ofb_cls *c, const struct tbl *t, const uint64_t *m)
{
    for (uint32_t i = 0; i < c->nwk; i++)
        if (t->cm[i] & ~m[i])
            return false;
    return true;
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

#endif
