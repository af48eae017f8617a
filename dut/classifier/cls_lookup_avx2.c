/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench classifier: the AVX2 phase-1 kernels (see cls_lookup.h). */
/* included by cls_lookup.c only (see cls_lookup.h): not a unit of its own */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* grouped line filter with AVX2: 8 grouped slots per step (two vpmulld of
 * the masked key, one of the group-masked key for the line, vpsrlvd,
 * vpgatherdd of the 8 dwords: a group's slots share its cache line) */
__attribute__((target("avx2,bmi")))
static uint32_t cls_sweep_gf_avx2(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                              const uint64_t *kw, struct bm_pass *pl, uint32_t *np_out, uint32_t nc,
                              struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t np = *np_out;
    const __m256i kv = _mm256_set1_epi32((int)(uint32_t)kw[0]);
    const __m256i K1 = _mm256_set1_epi32((int)GF_K1), K2 = _mm256_set1_epi32((int)GF_K2),
                  KL = _mm256_set1_epi32((int)GF_KL);
    const __m256i one = _mm256_set1_epi32(1), c31 = _mm256_set1_epi32(31), zero = _mm256_setzero_si256();
    const bool k4 = s->gf_k4;
    const int *gw = (const int *)s->gw;
    for (uint32_t b = lo; b < hi; b += 8) {
        __m256i x = _mm256_and_si256(kv, _mm256_loadu_si256((const __m256i *)(s->scm + b)));
        __m256i xg = _mm256_and_si256(kv, _mm256_loadu_si256((const __m256i *)(s->sg + b)));
        __m256i p1 = _mm256_mullo_epi32(x, K1), p2 = _mm256_mullo_epi32(x, K2);
        __m256i line = _mm256_srlv_epi32(_mm256_mullo_epi32(xg, KL),
                                         _mm256_loadu_si256((const __m256i *)(s->sgs + b)));
        __m256i sel = _mm256_srlv_epi32(_mm256_slli_epi32(p2, 5), _mm256_loadu_si256((const __m256i *)(s->swl + b)));
        __m256i idx = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(s->slb + b)),
                                       _mm256_add_epi32(_mm256_slli_epi32(line, 4), sel));
        __m256i w = _mm256_i32gather_epi32(gw, idx, 4);
        __m256i pat = _mm256_or_si256(_mm256_sllv_epi32(one, _mm256_srli_epi32(p1, 27)),
                                      _mm256_sllv_epi32(one, _mm256_and_si256(_mm256_srli_epi32(p1, 22), c31)));
        pat = _mm256_or_si256(pat, _mm256_sllv_epi32(one, _mm256_srli_epi32(p2, 27)));
        if (k4)
            pat = _mm256_or_si256(pat, _mm256_sllv_epi32(one, _mm256_and_si256(_mm256_srli_epi32(p1, 17), c31)));
        __m256i ok = _mm256_cmpeq_epi32(_mm256_andnot_si256(w, pat), zero);
        uint32_t pm = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(ok));
        nc = bm_pass_step(c, s, b, pm, kw, pl, &np, nc, cd, v, bp, bid, bh);
    }
    *np_out = np;
    return nc;
}
/* key32 phase 1 with AVX2: 8 tables per step (vpand, vpmulld, vpsrlvd, two
 * vpgatherqq of bitmap words, bit test); the few tables that pass read their
 * filter word (bm_pass) */
__attribute__((target("avx2,bmi")))
static uint32_t cls_sweep_bm_avx2(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                              const uint64_t *kw, struct bm_pass *pl, uint32_t *np_out, uint32_t nc,
                              struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t np = *np_out;
    const __m256i kv = _mm256_set1_epi32((int)(uint32_t)kw[0]), K = _mm256_set1_epi32((int)BM_K);
    const __m256i c63 = _mm256_set1_epi64x(63);
    for (uint32_t b = lo; b < hi; b += 8) {
        __m256i x = _mm256_and_si256(kv, _mm256_loadu_si256((const __m256i *)(s->scm + b)));
        __m256i bit = _mm256_srlv_epi32(_mm256_mullo_epi32(x, K), _mm256_loadu_si256((const __m256i *)(s->ssh + b)));
        __m256i blo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(bit));
        __m256i bhi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256(bit, 1));
        __m256i alo = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)(s->sbm + b)),
                                       _mm256_slli_epi64(_mm256_srli_epi64(blo, 6), 3));
        __m256i ahi = _mm256_add_epi64(_mm256_loadu_si256((const __m256i *)(s->sbm + b + 4)),
                                       _mm256_slli_epi64(_mm256_srli_epi64(bhi, 6), 3));
        __m256i wlo = _mm256_i64gather_epi64((const long long *)0, alo, 1);
        __m256i whi = _mm256_i64gather_epi64((const long long *)0, ahi, 1);
        /* the tested bit to the sign bit of its lane */
        wlo = _mm256_slli_epi64(_mm256_srlv_epi64(wlo, _mm256_and_si256(blo, c63)), 63);
        whi = _mm256_slli_epi64(_mm256_srlv_epi64(whi, _mm256_and_si256(bhi, c63)), 63);
        uint32_t pm = (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(wlo)) |
                      (uint32_t)_mm256_movemask_pd(_mm256_castsi256_pd(whi)) << 4;
        nc = bm_pass_step(c, s, b, pm, kw, pl, &np, nc, cd, v, bp, bid, bh);
    }
    *np_out = np;
    return nc;
}

/* 64-bit lanes: bits 32..63 of (x * k), k given as its low (klo) and high (khi)
 * halves in the low dwords; AVX2 has no vpmullq: three vpmuludq */
__attribute__((target("avx2")))
static inline __m256i mulhi_lo64_avx2(__m256i x, __m256i klo, __m256i khi)
{
    __m256i p = _mm256_mul_epu32(x, klo);                      /* xlo * klo, 64-bit */
    __m256i q = _mm256_add_epi64(_mm256_mul_epu32(x, khi),     /* xlo * khi */
                                 _mm256_mul_epu32(_mm256_srli_epi64(x, 32), klo)); /* xhi * klo */
    /* low dword of each lane: (p >> 32) + q, mod 2^32 */
    return _mm256_and_si256(_mm256_add_epi64(_mm256_srli_epi64(p, 32), q), _mm256_set1_epi64x(0xffffffffll));
}

/* Phase 1 for 4 tables per step with AVX2: the same hash, slots and filter
 * test as cls_collect_avx512 (results are identical).  Key words come from a
 * vpermd of the first 4 key words when the key has <= 4 words, else a gather
 * from the key; the second word's multiply is skipped when every table
 * hashes a single word (NTT: 4-byte keys). */
__attribute__((target("avx2,bmi")))
static uint32_t cls_collect_avx2(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                             const uint64_t *kw,
                             struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t nc = 0;
    const bool perm = c->nwk <= 4, one = s->one_word;
    uint64_t kbuf[4] = { 0, 0, 0, 0 };
    memcpy(kbuf, kw, (c->nwk < 4 ? c->nwk : 4) * 8);
    const __m256i kv = _mm256_loadu_si256((const __m256i *)kbuf);
    const __m256i k0lo = _mm256_set1_epi64x((long long)(HK0 & 0xffffffffu)),
                  k0hi = _mm256_set1_epi64x((long long)(HK0 >> 32));
    const __m256i k1lo = _mm256_set1_epi64x((long long)(HK1 & 0xffffffffu)),
                  k1hi = _mm256_set1_epi64x((long long)(HK1 >> 32));
    const __m256i c1ff = _mm256_set1_epi64x(0x1ff), one64 = _mm256_set1_epi64x(1);
    const __m256i m1ff = _mm256_set1_epi16(0x1ff), mq = _mm256_set1_epi16((short)0xfe00);
    const __m256i zero = _mm256_setzero_si256();
#define AVX2_CHUNK 64
    uint32_t mk[AVX2_CHUNK];
    uint64_t ea[AVX2_CHUNK * 4];
    uint64_t ha[AVX2_CHUNK * 4];
    uint32_t b0 = lo;
    for (uint32_t b = lo; b < hi; b += 4) {
        __m256i x0, x1 = zero;
        if (perm) {
            x0 = _mm256_permutevar8x32_epi32(kv, _mm256_load_si256((const __m256i *)(s->sp0 + b)));
            if (!one)
                x1 = _mm256_permutevar8x32_epi32(kv, _mm256_load_si256((const __m256i *)(s->sp1 + b)));
        } else {
            x0 = _mm256_i64gather_epi64((const long long *)kw, _mm256_load_si256((const __m256i *)(s->sw0 + b)), 8);
            if (!one)
                x1 = _mm256_i64gather_epi64((const long long *)kw, _mm256_load_si256((const __m256i *)(s->sw1 + b)), 8);
        }
        x0 = _mm256_and_si256(x0, _mm256_load_si256((const __m256i *)(s->sm0 + b)));
        x0 = _mm256_xor_si256(x0, _mm256_srli_epi64(x0, 32));
        __m256i h64 = mulhi_lo64_avx2(x0, k0lo, k0hi);
        if (!one) {
            x1 = _mm256_and_si256(x1, _mm256_load_si256((const __m256i *)(s->sm1 + b)));
            x1 = _mm256_xor_si256(x1, _mm256_srli_epi64(x1, 32));
            h64 = _mm256_xor_si256(h64, mulhi_lo64_avx2(x1, k1lo, k1hi));
        }
        __m256i slot = _mm256_and_si256(h64, _mm256_load_si256((const __m256i *)(s->sfm + b)));
        __m256i addr = _mm256_add_epi64(_mm256_load_si256((const __m256i *)(s->sfb + b)), _mm256_slli_epi64(slot, 3));
        __m256i w = _mm256_i64gather_epi64((const long long *)0, addr, 1);
        __m256i fp = _mm256_and_si256(_mm256_srli_epi64(h64, 23), c1ff);
        fp = _mm256_max_epi32(fp, one64);   /* 0 -> 1; upper dwords stay 0 */
        fp = _mm256_or_si256(fp, _mm256_slli_epi64(fp, 16));
        fp = _mm256_or_si256(fp, _mm256_slli_epi64(fp, 32));
        __m256i efp = _mm256_and_si256(w, m1ff);
        __m256i no_q = _mm256_cmpeq_epi16(_mm256_and_si256(w, mq), zero);
        __m256i ok = _mm256_or_si256(_mm256_cmpeq_epi16(efp, fp), _mm256_cmpeq_epi16(efp, zero));
        /* two mask bits per 16-bit entry; keep the even ones */
        uint32_t j = (b - b0) >> 2;
        mk[j] = (uint32_t)_mm256_movemask_epi8(_mm256_andnot_si256(no_q, ok)) & 0x55555555u;
        _mm256_storeu_si256((__m256i *)&ea[j * 4], w);
        _mm256_storeu_si256((__m256i *)&ha[j * 4], h64);
        if (j + 1 < AVX2_CHUNK && b + 4 < hi)
            continue;
        for (unsigned g = 0; g <= j; g++) {
            uint32_t mask = mk[g];
            while (mask) {
                unsigned bit = (unsigned)__builtin_ctz(mask), lane = bit >> 1, i = lane >> 2;
                mask &= ~(0xffu << (8 * i));   /* first matching entry of table i */
                uint32_t q = (uint32_t)(ea[g * 4 + i] >> (16 * (lane & 3) + 9)) & 0x7f;
                cd[nc++] = (struct cand){ q, (uint32_t)ha[g * 4 + i], s->t[b0 + g * 4 + i] };
                if (unlikely(nc == CAND_MAX)) {
                    drain(c, cd, nc, kw, v, bp, bid, bh);
                    nc = 0;
                }
            }
        }
        b0 = b + 4;
    }
    return nc;
}
#endif
