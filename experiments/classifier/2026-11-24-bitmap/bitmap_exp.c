/* Issue 19 part 4 experiment (not part of the library): a per-mask-group bitmap in front of
 * per-mask hash tables, on document 003's workload (32-bit keys, ~100 rand()|rand() masks).
 *
 * Group = 1 or 2 masks (pairs chosen greedily by most shared care bits); per group a bitmap
 * of 2^b bits, bit h(value & C) set for each rule (C = AND of the group's masks, h =
 * multiplicative hash).  Lookup: phase 1 tests one bitmap bit per group (AVX2: 8 groups per
 * step, vpmulld + vpgatherdd; or scalar); phase 2 probes the exact per-mask hash tables
 * (open addressing, masked value -> best rule) of the groups that passed.  Exact: checked
 * against a brute-force scan on 2000 keys.  Prints per b: bitmap bytes, passes per key (true
 * matches + false positives), ns per key for phase 1 alone and for the whole lookup.
 *
 * gcc -O2 -mavx2 -o /tmp/bitmap_exp bitmap_exp.c
 * /tmp/bitmap_exp RULES KEYS   (binary files from traces/rulesets.py, key_len 4) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../../dut/classifier/bench/binfile.h"

#define HK 0x9E3779B1u
#define MAXM 4096

struct tab { uint32_t cap_log; uint32_t *val; int32_t *best; };  /* best: rule index, -1 empty */

static uint32_t nm, msk[MAXM], cnt[MAXM];
static uint32_t ng, gC[MAXM], gm[MAXM][2], gn[MAXM];
static struct tab tabs[MAXM];
static uint32_t *prio, *rval, *rmask;

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static inline int better(uint32_t a, uint32_t b)  /* rule a beats rule b (prio desc, index asc) */
{
    return prio[a] > prio[b] || (prio[a] == prio[b] && a < b);
}

static inline uint32_t hslot(uint32_t v, uint32_t lg) { return (v * HK) >> (32 - lg); }

static void tab_put(struct tab *t, uint32_t v, int32_t r)
{
    uint32_t m = (1u << t->cap_log) - 1, s = hslot(v, t->cap_log);
    while (t->best[s] >= 0 && t->val[s] != v)
        s = (s + 1) & m;
    if (t->best[s] < 0 || better((uint32_t)r, (uint32_t)t->best[s]))
        t->best[s] = r, t->val[s] = v;
}

static inline int32_t tab_get(const struct tab *t, uint32_t v)
{
    uint32_t m = (1u << t->cap_log) - 1, s = hslot(v, t->cap_log);
    while (t->best[s] >= 0) {
        if (t->val[s] == v)
            return t->best[s];
        s = (s + 1) & m;
    }
    return -1;
}

static uint32_t mask_index(uint32_t m)
{
    for (uint32_t i = 0; i < nm; i++)
        if (msk[i] == m)
            return i;
    msk[nm] = m;
    return nm++;
}

static uint32_t *bm;      /* ng bitmaps of 2^b bits */
static uint32_t B;

static inline void probe_group(uint32_t g, uint32_t key, int32_t *best)
{
    for (uint32_t j = 0; j < gn[g]; j++) {
        uint32_t mi = gm[g][j];
        int32_t r = tab_get(&tabs[mi], key & msk[mi]);
        if (r >= 0 && (*best < 0 || better((uint32_t)r, (uint32_t)*best)))
            *best = r;
    }
}

static int32_t lookup_scalar(uint32_t key, uint32_t *passes)
{
    int32_t best = -1;
    uint32_t words = 1u << (B - 5);
    for (uint32_t g = 0; g < ng; g++) {
        uint32_t h = hslot(key & gC[g], B);
        if ((bm[g * words + (h >> 5)] >> (h & 31)) & 1) {
            (*passes)++;
            probe_group(g, key, &best);
        }
    }
    return best;
}

static uint32_t gC_pad[MAXM + 8];
static int32_t goff_pad[MAXM + 8];

static int32_t lookup_avx2(uint32_t key, uint32_t *passes, int phase1_only)
{
    int32_t best = -1;
    const __m256i vk = _mm256_set1_epi32((int)key), hk = _mm256_set1_epi32((int)HK);
    const __m128i sh = _mm_cvtsi32_si128((int)(32 - B));
    const __m256i low5 = _mm256_set1_epi32(31), one = _mm256_set1_epi32(1);
    for (uint32_t g = 0; g < ng; g += 8) {
        __m256i c = _mm256_loadu_si256((const __m256i *)&gC_pad[g]);
        __m256i h = _mm256_srl_epi32(_mm256_mullo_epi32(_mm256_and_si256(vk, c), hk), sh);
        __m256i idx = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)&goff_pad[g]), _mm256_srli_epi32(h, 5));
        __m256i w = _mm256_i32gather_epi32((const int *)bm, idx, 4);
        __m256i bit = _mm256_and_si256(_mm256_srlv_epi32(w, _mm256_and_si256(h, low5)), one);
        uint32_t pm = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(bit, one)));
        if (g + 8 > ng)
            pm &= (1u << (ng - g)) - 1;
        *passes += (uint32_t)__builtin_popcount(pm);
        if (phase1_only)
            continue;
        while (pm) {
            uint32_t j = (uint32_t)__builtin_ctz(pm);
            pm &= pm - 1;
            probe_group(g + j, key, &best);
        }
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bitmap_exp RULES KEYS\n");
        return 2;
    }
    uint32_t kl, n, kl2, nk;
    uint8_t *rd = ofb_read_binfile("bitmap_exp", argv[1], "OFBR", &kl, &n);
    uint8_t *kd = ofb_read_binfile("bitmap_exp", argv[2], "OFBK", &kl2, &nk);
    if (kl != 4 || kl2 != 4) {
        fprintf(stderr, "bitmap_exp: 4-byte keys only\n");
        return 2;
    }
    prio = malloc(n * 4), rval = malloc(n * 4), rmask = malloc(n * 4);
    uint32_t *rmi = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = rd + (size_t)i * 12;
        memcpy(&prio[i], p, 4);
        memcpy(&rval[i], p + 4, 4);
        memcpy(&rmask[i], p + 8, 4);
        rval[i] &= rmask[i];
        rmi[i] = mask_index(rmask[i]);
        cnt[rmi[i]]++;
    }
    for (uint32_t m = 0; m < nm; m++) {
        uint32_t lg = 4;
        while ((1u << lg) < 2 * cnt[m])
            lg++;
        tabs[m].cap_log = lg;
        tabs[m].val = calloc(1u << lg, 4);
        tabs[m].best = malloc((1u << lg) * 4);
        memset(tabs[m].best, 0xff, (1u << lg) * 4);
    }
    for (uint32_t i = 0; i < n; i++)
        tab_put(&tabs[rmi[i]], rval[i], (int32_t)i);
    uint32_t *keys = (uint32_t *)kd;
    printf("# %u rules, %u masks, %u keys\n", n, nm, nk);
    /* reference on a sample */
    enum { NREF = 2000 };
    int32_t ref[NREF];
    for (uint32_t k = 0; k < NREF && k < nk; k++) {
        int32_t b = -1;
        for (uint32_t i = 0; i < n; i++)
            if ((keys[k] & rmask[i]) == rval[i] && (b < 0 || better(i, (uint32_t)b)))
                b = (int32_t)i;
        ref[k] = b;
    }
    for (int gsz = 1; gsz <= 2; gsz++) {
        /* groups */
        int used[MAXM] = { 0 };
        ng = 0;
        for (uint32_t a = 0; a < nm; a++) {
            if (used[a])
                continue;
            used[a] = 1;
            gm[ng][0] = a;
            gn[ng] = 1;
            gC[ng] = msk[a];
            if (gsz == 2) {
                int bb = -1, bc = -1;
                for (uint32_t c = 0; c < nm; c++)
                    if (!used[c] && __builtin_popcount(msk[a] & msk[c]) > bc)
                        bc = __builtin_popcount(msk[a] & msk[c]), bb = (int)c;
                if (bb >= 0) {
                    used[bb] = 1;
                    gm[ng][1] = (uint32_t)bb;
                    gn[ng] = 2;
                    gC[ng] = msk[a] & msk[bb];
                }
            }
            ng++;
        }
        double cb = 0;
        for (uint32_t g = 0; g < ng; g++)
            cb += __builtin_popcount(gC[g]);
        for (B = 12; B <= 18; B++) {
            uint32_t words = 1u << (B - 5);
            bm = aligned_alloc(64, (size_t)ng * words * 4);
            memset(bm, 0, (size_t)ng * words * 4);
            for (uint32_t i = 0; i < n; i++)
                for (uint32_t g = 0; g < ng; g++) {
                    int in = 0;
                    for (uint32_t j = 0; j < gn[g]; j++)
                        in |= gm[g][j] == rmi[i];
                    if (in) {
                        uint32_t h = hslot(rval[i] & gC[g], B);
                        bm[g * words + (h >> 5)] |= 1u << (h & 31);
                    }
                }
            memset(gC_pad, 0, sizeof(gC_pad));
            memset(goff_pad, 0, sizeof(goff_pad));
            for (uint32_t g = 0; g < ng; g++)
                gC_pad[g] = gC[g], goff_pad[g] = (int32_t)(g * words);
            /* exactness */
            uint32_t bad = 0, ps = 0;
            for (uint32_t k = 0; k < NREF && k < nk; k++) {
                bad += lookup_scalar(keys[k], &ps) != ref[k];
                bad += lookup_avx2(keys[k], &ps, 0) != ref[k];
            }
            /* timing */
            double res[3];
            uint32_t passes = 0;
            (void)ps;
            for (int mode = 0; mode < 3; mode++) {  /* 0 scalar full, 1 avx2 full, 2 avx2 phase 1 only */
                uint64_t done = 0, sink = 0;
                passes = 0;
                double t0 = cpu_s(), el;
                do {
                    for (uint32_t k = 0; k < nk; k++)
                        sink += (uint32_t)(mode == 0 ? lookup_scalar(keys[k], &passes)
                                                      : lookup_avx2(keys[k], &passes, mode == 2));
                    done += nk;
                    el = cpu_s() - t0;
                } while (el < 0.3);
                res[mode] = el / (double)done * 1e9;
                if (sink == 42)
                    puts("");
            }
            /* passes per key, counted once over the trace */
            uint32_t pk = 0;
            for (uint32_t k = 0; k < nk; k++)
                lookup_avx2(keys[k], &pk, 1);
            printf("{\"group\":%d,\"groups\":%u,\"common_bits_avg\":%.1f,\"b\":%u,\"bitmap_kb\":%.0f,"
                   "\"passes_per_key\":%.2f,\"ns_scalar\":%.1f,\"ns_avx2\":%.1f,\"ns_avx2_phase1\":%.1f,"
                   "\"mlps_avx2\":%.2f,\"wrong\":%u}\n", gsz, ng, cb / ng, B, ng * words * 4 / 1024.0,
                   (double)pk / nk, res[0], res[1], res[2], 1e3 / res[1], bad);
            fflush(stdout);
            free(bm);
        }
    }
    return 0;
}
