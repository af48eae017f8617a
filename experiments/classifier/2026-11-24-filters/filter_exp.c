/* Issue 19 part 4 experiment (not part of the library): two-level per-mask filters in front of
 * exact per-mask tables, on document 003's workload (32-bit keys, ~100 rand()|rand() masks),
 * single-key and batched with software pipelining.
 *
 * Per mask m (one "tuple"): level 1 = a bitmap of 2^b1 bits, bit h1(key & m) set for each rule
 * (sized so that all masks' level-1 bitmaps together stay in L2); level 2 = a second bitmap of
 * 2^b2 bits with an independent hash h2 (L3-sized; b2 = 0: no level 2); exact = open addressing
 * of 8-byte slots (masked value, best rule of that (mask, value)), load <= 1/2.
 *
 * Lookup of one key, AVX2: 8 masks per step: vpand + vpmulld -> h1, vpgatherdd of level-1
 * words, bit test; (level 2 on) a masked vpgatherdd of level-2 words for the lanes that
 * passed; survivors probe the exact table (scalar).  Batched (B keys): phase 1 for all keys
 * writes (key, mask) passes to a list, the level-2 words of all passes are prefetched, then
 * tested; the exact slots of the survivors are prefetched, then probed: the misses of one key
 * overlap those of the others.
 *
 * Exact: every mode is checked against a brute-force scan on 2000 keys ("wrong").  Prints
 * per setting: bytes of each level, passes per key after level 1 and level 2, ns per key and
 * Mlps (CPU time of this thread) for: single scalar, single AVX2, batched AVX2, phase 1 alone.
 *
 * gcc -O2 -mavx2 -mbmi -o /tmp/filter_exp filter_exp.c
 * /tmp/filter_exp RULES KEYS [b1 b2]...   (binary files from traces/rulesets.py, key_len 4) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include "../../../dut/classifier/bench/binfile.h"

#define H1 0x9E3779B1u
#define H2 0x85EBCA77u
#define H3 0xC2B2AE3Du
#define MAXM 4096
#define BATCH 32

static uint32_t nm, msk[MAXM + 8], cnt[MAXM];
static uint32_t *prio, *rval, *rmask, *rmi, n;
static uint32_t b1, b2;                 /* log2 bits per mask of level 1 / level 2 (0 = off) */
static uint32_t *l1, *l2;               /* nm bitmaps each */
static int32_t l1off[MAXM + 8];         /* word offset of mask m's level-1 bitmap */
static uint64_t *ex;                    /* exact slots: value << 32 | (rule + 1); 0 = empty */
static uint32_t exoff[MAXM], exlog[MAXM];

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *huge_alloc(size_t sz)
{
    sz = (sz + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    void *p = aligned_alloc(2u << 20, sz);
    if (!p) {
        perror("alloc");
        exit(1);
    }
    madvise(p, sz, MADV_HUGEPAGE);
    memset(p, 0, sz);
    return p;
}

static inline int better(uint32_t a, uint32_t b)  /* rule a beats rule b (prio desc, index asc) */
{
    return prio[a] > prio[b] || (prio[a] == prio[b] && a < b);
}

static inline uint32_t h1of(uint32_t v) { return v * H1; }
static inline uint32_t h2of(uint32_t v, uint32_t m) { return (v ^ m) * H2; }
static inline uint32_t exslot(uint32_t v, uint32_t m) { return ((v ^ (m >> 1)) * H3) >> (32 - exlog[m]); }

static inline int l1_test(uint32_t m, uint32_t v)
{
    uint32_t h = h1of(v) >> (32 - b1);
    return (l1[(uint32_t)l1off[m] + (h >> 5)] >> (h & 31)) & 1;
}
static inline uint32_t l2_word(uint32_t m, uint32_t v) { return m * (1u << (b2 - 5)) + ((h2of(v, msk[m]) >> (32 - b2)) >> 5); }
static inline int l2_test(uint32_t m, uint32_t v)
{
    return (l2[l2_word(m, v)] >> ((h2of(v, msk[m]) >> (32 - b2)) & 31)) & 1;
}

static inline int32_t ex_get(uint32_t m, uint32_t v)
{
    uint32_t mask = (1u << exlog[m]) - 1, s = exslot(v, m);
    const uint64_t *t = ex + exoff[m];
    for (;;) {
        uint64_t e = t[s];
        if (!e)
            return -1;
        if ((uint32_t)(e >> 32) == v)
            return (int32_t)(uint32_t)e - 1;
        s = (s + 1) & mask;
    }
}

static inline void take(int32_t r, int32_t *best)
{
    if (r >= 0 && (*best < 0 || better((uint32_t)r, (uint32_t)*best)))
        *best = r;
}

static int32_t phase1_scalar(uint32_t key)  /* level 1 alone, scalar: the count of passes */
{
    int32_t p = 0;
    for (uint32_t m = 0; m < nm; m++)
        p += l1_test(m, key & msk[m]);
    return p;
}

static int32_t lookup_scalar(uint32_t key)
{
    int32_t best = -1;
    for (uint32_t m = 0; m < nm; m++) {
        uint32_t v = key & msk[m];
        if (!l1_test(m, v) || (b2 && !l2_test(m, v)))
            continue;
        take(ex_get(m, v), &best);
    }
    return best;
}


static uint32_t b1sh;  /* 32 - b1 */

__attribute__((target("avx2,bmi")))
static int32_t lookup_avx2(uint32_t key, int phase1_only)
{
    int32_t best = -1;
    const __m256i vk = _mm256_set1_epi32((int)key);
    const __m128i sh1 = _mm_cvtsi32_si128((int)b1sh), sh2 = _mm_cvtsi32_si128(32 - (int)b2);
    for (uint32_t g = 0; g < nm; g += 8) {
        const __m256i c = _mm256_loadu_si256((const __m256i *)&msk[g]);
        const __m256i v = _mm256_and_si256(vk, c);
        const __m256i hb = _mm256_srl_epi32(_mm256_mullo_epi32(v, _mm256_set1_epi32((int)H1)), sh1);
        const __m256i idx = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)&l1off[g]), _mm256_srli_epi32(hb, 5));
        const __m256i w = _mm256_i32gather_epi32((const int *)l1, idx, 4);
        __m256i pass = _mm256_sllv_epi32(w, _mm256_sub_epi32(_mm256_set1_epi32(31), _mm256_and_si256(hb, _mm256_set1_epi32(31))));
        uint32_t pm = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(pass));
        if (g + 8 > nm)
            pm &= (1u << (nm - g)) - 1;
        if (!pm || phase1_only)
            continue;
        if (b2) {
            const __m256i gi = _mm256_add_epi32(_mm256_set1_epi32((int)g), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            const __m256i hb2 = _mm256_srl_epi32(_mm256_mullo_epi32(_mm256_xor_si256(v, c), _mm256_set1_epi32((int)H2)), sh2);
            const __m256i idx2 = _mm256_add_epi32(_mm256_slli_epi32(gi, (int)b2 - 5), _mm256_srli_epi32(hb2, 5));
            const __m256i w2 = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)l2, idx2, pass, 4);
            pass = _mm256_sllv_epi32(w2, _mm256_sub_epi32(_mm256_set1_epi32(31), _mm256_and_si256(hb2, _mm256_set1_epi32(31))));
            pm &= (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(pass));
        }
        while (pm) {
            uint32_t j = (uint32_t)__builtin_ctz(pm);
            pm &= pm - 1;
            take(ex_get(g + j, key & msk[g + j]), &best);
        }
    }
    return best;
}

/* Batched: phase 1 of all keys -> pass list; level 2 with prefetch; exact with prefetch. */
static uint32_t plist[BATCH * MAXM];  /* key index << 16 | mask */

__attribute__((target("avx2,bmi")))
static void lookup_batch_avx2(const uint32_t *keys, uint32_t nk, int32_t *out)
{
    const __m128i sh1 = _mm_cvtsi32_si128((int)b1sh);
    uint32_t np = 0;
    for (uint32_t k = 0; k < nk; k++) {
        out[k] = -1;
        const __m256i vk = _mm256_set1_epi32((int)keys[k]);
        for (uint32_t g = 0; g < nm; g += 8) {
            const __m256i c = _mm256_loadu_si256((const __m256i *)&msk[g]);
            const __m256i v = _mm256_and_si256(vk, c);
            const __m256i hb = _mm256_srl_epi32(_mm256_mullo_epi32(v, _mm256_set1_epi32((int)H1)), sh1);
            const __m256i idx = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)&l1off[g]), _mm256_srli_epi32(hb, 5));
            const __m256i w = _mm256_i32gather_epi32((const int *)l1, idx, 4);
            const __m256i pass = _mm256_sllv_epi32(w, _mm256_sub_epi32(_mm256_set1_epi32(31), _mm256_and_si256(hb, _mm256_set1_epi32(31))));
            uint32_t pm = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(pass));
            if (g + 8 > nm)
                pm &= (1u << (nm - g)) - 1;
            while (pm) {
                uint32_t j = (uint32_t)__builtin_ctz(pm);
                pm &= pm - 1;
                plist[np++] = k << 16 | (g + j);
            }
        }
    }
    if (b2) {
        for (uint32_t i = 0; i < np; i++) {
            uint32_t m = plist[i] & 0xffff;
            __builtin_prefetch(&l2[l2_word(m, keys[plist[i] >> 16] & msk[m])]);
        }
        uint32_t np2 = 0;
        for (uint32_t i = 0; i < np; i++) {
            uint32_t m = plist[i] & 0xffff, v = keys[plist[i] >> 16] & msk[m];
            if (l2_test(m, v))
                plist[np2++] = plist[i];
        }
        np = np2;
    }
    for (uint32_t i = 0; i < np; i++) {
        uint32_t m = plist[i] & 0xffff;
        __builtin_prefetch(&ex[exoff[m] + exslot(keys[plist[i] >> 16] & msk[m], m)]);
    }
    for (uint32_t i = 0; i < np; i++) {
        uint32_t k = plist[i] >> 16, m = plist[i] & 0xffff;
        take(ex_get(m, keys[k] & msk[m]), &out[k]);
    }
}

static uint32_t mask_index(uint32_t m)
{
    for (uint32_t i = 0; i < nm; i++)
        if (msk[i] == m)
            return i;
    msk[nm] = m;
    return nm++;
}

static void build(void)
{
    uint32_t w1 = 1u << (b1 - 5);
    free(l1), free(l2);
    l1 = huge_alloc((size_t)nm * w1 * 4 + 64);
    for (uint32_t m = 0; m < nm + 8; m++)
        l1off[m] = (int32_t)(m < nm ? m * w1 : 0);
    l2 = b2 ? huge_alloc((size_t)(nm + 8) * (1u << (b2 - 5)) * 4) : NULL;  /* + the padding lanes */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t m = rmi[i], v = rval[i], h = h1of(v) >> (32 - b1);
        l1[m * w1 + (h >> 5)] |= 1u << (h & 31);
        if (b2) {
            uint32_t h2 = h2of(v, msk[m]) >> (32 - b2);
            l2[m * (1u << (b2 - 5)) + (h2 >> 5)] |= 1u << (h2 & 31);
        }
    }
    b1sh = 32 - b1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: filter_exp RULES KEYS [b1 b2]...\n");
        return 2;
    }
    uint32_t kl, kl2, nk;
    uint8_t *rd = ofb_read_binfile("filter_exp", argv[1], "OFBR", &kl, &n);
    uint8_t *kd = ofb_read_binfile("filter_exp", argv[2], "OFBK", &kl2, &nk);
    if (kl != 4 || kl2 != 4) {
        fprintf(stderr, "filter_exp: 4-byte keys only\n");
        return 2;
    }
    prio = malloc(n * 4), rval = malloc(n * 4), rmask = malloc(n * 4), rmi = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *p = rd + (size_t)i * 12;
        memcpy(&prio[i], p, 4);
        memcpy(&rval[i], p + 4, 4);
        memcpy(&rmask[i], p + 8, 4);
        rval[i] &= rmask[i];
        rmi[i] = mask_index(rmask[i]);
        cnt[rmi[i]]++;
    }
    /* exact tables (the same for every setting) */
    size_t tot = 0;
    for (uint32_t m = 0; m < nm; m++) {
        uint32_t lg = 3;
        while ((1u << lg) < 2 * cnt[m])
            lg++;
        exlog[m] = lg, exoff[m] = (uint32_t)tot, tot += 1u << lg;
    }
    ex = huge_alloc(tot * 8);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t m = rmi[i], mask = (1u << exlog[m]) - 1, s = exslot(rval[i], m);
        uint64_t *t = ex + exoff[m];
        while (t[s] && (uint32_t)(t[s] >> 32) != rval[i])
            s = (s + 1) & mask;
        if (!t[s] || better(i, (uint32_t)t[s] - 1))
            t[s] = (uint64_t)rval[i] << 32 | (i + 1);
    }
    uint32_t *keys = (uint32_t *)kd;
    printf("# %u rules, %u masks, %u keys, exact tables %.1f MB\n", n, nm, nk, tot * 8 / 1e6);
    enum { NREF = 2000 };
    static int32_t ref[NREF];
    for (uint32_t k = 0; k < NREF && k < nk; k++) {
        int32_t b = -1;
        for (uint32_t i = 0; i < n; i++)
            if ((keys[k] & rmask[i]) == rval[i])
                take((int32_t)i, &b);
        ref[k] = b;
    }
    static int32_t out[1 << 20];
    for (int a = 3; a + 1 < argc || a == 3; a += 2) {
        b1 = a + 1 < argc ? (uint32_t)atoi(argv[a]) : 15;
        b2 = a + 1 < argc ? (uint32_t)atoi(argv[a + 1]) : 0;
        if (b1 < 6 || b1 > 26 || (b2 && (b2 < 6 || b2 > 28))) {
            fprintf(stderr, "filter_exp: b1 6..26, b2 0 or 6..28\n");
            return 2;
        }
        build();
        uint32_t bad = 0;
        for (uint32_t k = 0; k < NREF && k < nk; k++) {
            bad += lookup_scalar(keys[k]) != ref[k];
            bad += lookup_avx2(keys[k], 0) != ref[k];
        }
        for (uint32_t k = 0; k + BATCH <= NREF && k + BATCH <= nk; k += BATCH) {
            lookup_batch_avx2(keys + k, BATCH, out);
            for (uint32_t j = 0; j < BATCH; j++)
                bad += out[j] != ref[k + j];
        }
        /* passes per key */
        uint64_t p1 = 0, p2 = 0;
        for (uint32_t k = 0; k < nk; k++)
            for (uint32_t m = 0; m < nm; m++) {
                uint32_t v = keys[k] & msk[m];
                if (l1_test(m, v)) {
                    p1++;
                    p2 += !b2 || l2_test(m, v);
                }
            }
        double ns[5];
        for (int mode = 0; mode < 5; mode++) {  /* single scalar, single avx2, batched avx2, phase 1 avx2, phase 1 scalar */
            uint64_t done = 0, sink = 0;
            double t0 = cpu_s(), el;
            do {
                if (mode == 2) {
                    for (uint32_t k = 0; k + BATCH <= nk; k += BATCH) {
                        lookup_batch_avx2(keys + k, BATCH, out);
                        sink += (uint32_t)out[0];
                    }
                    done += nk / BATCH * BATCH;
                } else {
                    for (uint32_t k = 0; k < nk; k++)
                        sink += (uint32_t)(mode == 0 ? lookup_scalar(keys[k]) : mode == 4 ? phase1_scalar(keys[k]) : lookup_avx2(keys[k], mode == 3));
                    done += nk;
                }
                el = cpu_s() - t0;
            } while (el < 0.3);
            ns[mode] = el / (double)done * 1e9;
            if (sink == 42)
                puts("");
        }
        printf("{\"rules\":%u,\"masks\":%u,\"b1\":%u,\"b2\":%u,\"l1_kb\":%.0f,\"l2_kb\":%.0f,"
               "\"passes_l1\":%.2f,\"passes_l2\":%.2f,\"mlps_scalar\":%.2f,\"mlps_avx2\":%.2f,"
               "\"mlps_avx2_batched\":%.2f,\"mlps_phase1_only\":%.2f,\"mlps_phase1_scalar\":%.2f,\"wrong\":%u}\n",
               n, nm, b1, b2, nm * (1u << b1) / 8192.0, b2 ? nm * (1u << b2) / 8192.0 : 0.0,
               (double)p1 / nk, (double)p2 / nk, 1e3 / ns[0], 1e3 / ns[1], 1e3 / ns[2], 1e3 / ns[3], 1e3 / ns[4], bad);
        fflush(stdout);
    }
    return 0;
}
