/* SPDX-License-Identifier: Apache-2.0 */
/* ofbench classifier: the AVX-512 phase-1 kernels (see cls_lookup.h). */
/* included by cls_lookup.c only (see cls_lookup.h): not a unit of its own */

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Phase 1 for 8 tables per step: gather the two key words of each table
 * (vpermt2q), mask, multiply-hash (vpmullq), gather the 16-bit filter slots
 * (vpgatherqd), test q != 0 and fingerprint in-vector; only the few
 * candidates leave the vector unit. */
__attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
static uint32_t cls_collect_avx512(const struct ofb_cls *c, const struct snap *s, uint32_t lo, uint32_t hi,
                               const uint64_t *kw,
                               struct cand *cd, uint64_t v, uint32_t *bp, uint32_t *bid, uint64_t *bh)
{
    uint32_t nc = 0;
    const __m512i klo = _mm512_loadu_si512((const void *)kw);
    const __m512i khi = _mm512_loadu_si512((const void *)(kw + 8));
    const __m512i k0 = _mm512_set1_epi64((long long)HK0), k1 = _mm512_set1_epi64((long long)HK1);
    const __m512i c1ff = _mm512_set1_epi64(0x1ff), one = _mm512_set1_epi64(1);
    const __m512i rep4 = _mm512_set1_epi64(0x0001000100010001ll);
    const __m512i m1ff = _mm512_set1_epi16(0x1ff), mq = _mm512_set1_epi16((short)0xfe00);
#define AVX_CHUNK 32
    uint32_t mk[AVX_CHUNK];
    uint64_t ea[AVX_CHUNK * 8];
    uint32_t ha[AVX_CHUNK * 8];
    uint32_t b0 = lo;
    for (uint32_t b = lo; b < hi; b += 8) {
        __m512i x0 = _mm512_permutex2var_epi64(klo, _mm512_load_si512((const void *)(s->sw0 + b)), khi);
        __m512i x1 = _mm512_permutex2var_epi64(klo, _mm512_load_si512((const void *)(s->sw1 + b)), khi);
        x0 = _mm512_and_si512(x0, _mm512_load_si512((const void *)(s->sm0 + b)));
        x1 = _mm512_and_si512(x1, _mm512_load_si512((const void *)(s->sm1 + b)));
        x0 = _mm512_xor_si512(x0, _mm512_srli_epi64(x0, 32));
        x1 = _mm512_xor_si512(x1, _mm512_srli_epi64(x1, 32));
        __m512i acc = _mm512_xor_si512(_mm512_mullo_epi64(x0, k0), _mm512_mullo_epi64(x1, k1));
        __m512i h64 = _mm512_srli_epi64(acc, 32);
        __m512i slot = _mm512_and_si512(h64, _mm512_load_si512((const void *)(s->sfm + b)));
        __m512i addr = _mm512_add_epi64(_mm512_load_si512((const void *)(s->sfb + b)), _mm512_slli_epi64(slot, 3));
        __m512i w = _mm512_i64gather_epi64(addr, (const void *)0, 1);
        /* fingerprint per table, copied into its four 16-bit entries */
        __m512i fp = _mm512_and_si512(_mm512_srli_epi64(h64, 23), c1ff);
        fp = _mm512_max_epu64(fp, one);
        fp = _mm512_mullo_epi64(fp, rep4);
        __m512i efp = _mm512_and_si512(w, m1ff);
        __mmask32 has_q = _mm512_test_epi16_mask(w, mq);
        __mmask32 fp_ok = _mm512_cmpeq_epi16_mask(efp, fp) | _mm512_testn_epi16_mask(efp, efp);
        __m256i h = _mm512_cvtepi64_epi32(h64);
        /* no branch on the gathered data inside the loop: a mispredicted
         * "has candidates" branch serialised the gathers */
        unsigned j = (b - b0) >> 3;
        mk[j] = has_q & fp_ok;
        _mm512_storeu_si512((void *)&ea[j * 8], w);
        _mm256_storeu_si256((__m256i *)&ha[j * 8], h);
        if (j + 1 < AVX_CHUNK && b + 8 < hi)
            continue;
        for (unsigned g = 0; g <= j; g++) {
            uint32_t mask = mk[g];
            while (mask) {
                unsigned lane = (unsigned)__builtin_ctz(mask), i = lane >> 2;
                mask &= ~(0xfu << (4 * i));   /* first matching entry of table i */
                uint32_t q = (uint32_t)(ea[g * 8 + i] >> (16 * (lane & 3) + 9)) & 0x7f;
                cd[nc++] = (struct cand){ q, ha[g * 8 + i], s->t[b0 + g * 8 + i] };
                if (unlikely(nc == CAND_MAX)) {
                    drain(c, cd, nc, kw, v, bp, bid, bh);
                    nc = 0;
                }
            }
        }
        b0 = b + 8;
    }
    return nc;
}
#endif
