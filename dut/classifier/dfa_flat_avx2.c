/* SPDX-License-Identifier: Apache-2.0 */
/* dfa_flat.h's lockstep walk on AVX2: 4 vectors of 8 keys (one chunk of 32), per step one gather of the
 * key bytes and two of the 64-bit entries per vector, lanes that ended masked off. */
#include "dfa_flat.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define V 4   /* vectors of 8 lanes per chunk */
#ifndef GP
#define GP 2  /* groups walked at once */
#endif

__attribute__((target("avx2")))
void ofb_dflat_batch_avx2(const struct ofb_dflat *f, const uint8_t *const keys[], size_t n, uint32_t rank_out[])
{
    _Static_assert(V * 8 == DFLAT_CHUNK, "chunk");
    const uint64_t *e = f->e;
    uint8_t kbuf[DFLAT_CHUNK * 16 + 16] __attribute__((aligned(32)));
    const __m256i one = _mm256_set1_epi32(1), ff = _mm256_set1_epi32(0xff), f15 = _mm256_set1_epi32(15);
    const __m256i zero = _mm256_setzero_si256();
    __m256i laneoff[V];
    for (int v = 0; v < V; v++)
        laneoff[v] = _mm256_slli_epi32(_mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                        _mm256_set1_epi32(8 * v)), 4);
    memset(kbuf, 0, sizeof(kbuf));
    for (size_t base = 0; base < n; base += DFLAT_CHUNK) {
        unsigned m = n - base < DFLAT_CHUNK ? (unsigned)(n - base) : DFLAT_CHUNK;
        for (unsigned j = 0; j < m; j++)
            memcpy(kbuf + 16 * j, keys[base + j], f->key_len);
        __m256i best[V];
        for (int v = 0; v < V; v++)
            best[v] = _mm256_set1_epi32(-1);
        /* partitioned DFAs (issue 42): up to GP groups walked at once, each (group, vector) pair its own
         * chain of gathers stepping until its last lane ended: more independent misses in flight */
        const int *er = (const int *)e, *eh = (const int *)e + 1;
        for (uint32_t g0 = 0; g0 < f->ngroups; g0 += GP) {
            unsigned gp = f->ngroups - g0 < GP ? f->ngroups - g0 : GP;
            __m256i r[GP][V], h[GP][V];   /* each lane's entry: ref, hdr */
            unsigned act = 0;             /* bit gi * V + v: that pair has a lane walking */
            for (unsigned gi = 0; gi < GP; gi++)
                for (int v = 0; v < V; v++) {
                    uint64_t rt = gi < gp ? f->root[g0 + gi] : 1;
                    /* lanes past m start final with no rule: never active */
                    __m256i lane = _mm256_setr_epi32(8 * v, 8 * v + 1, 8 * v + 2, 8 * v + 3, 8 * v + 4, 8 * v + 5, 8 * v + 6,
                                                     8 * v + 7);
                    r[gi][v] = _mm256_blendv_epi8(one, _mm256_set1_epi32((int)(uint32_t)rt),
                                                  _mm256_cmpgt_epi32(_mm256_set1_epi32((int)m), lane));
                    h[gi][v] = _mm256_set1_epi32((int)(uint32_t)(rt >> 32));
                    if (!(rt & 1) && m > 8u * v)
                        act |= 1u << (gi * V + v);
                }
            while (act) {
                for (unsigned gi = 0; gi < GP; gi++)
                    for (int v = 0; v < V; v++) {
                        if (!(act >> (gi * V + v) & 1))
                            continue;
                        __m256i rv = r[gi][v], hv = h[gi][v];
                        __m256i k = _mm256_cmpeq_epi32(_mm256_and_si256(rv, one), zero);
                        if (_mm256_testz_si256(k, k)) {
                            act &= ~(1u << (gi * V + v));
                            continue;
                        }
                        __m256i kix = _mm256_add_epi32(laneoff[v], _mm256_and_si256(_mm256_srli_epi32(rv, 1), f15));
                        __m256i b = _mm256_and_si256(_mm256_mask_i32gather_epi32(zero, (const int *)kbuf, kix, k, 1), ff);
                        __m256i ix = _mm256_add_epi32(_mm256_srli_epi32(rv, 5), _mm256_and_si256(b, _mm256_srli_epi32(hv, 24)));
                        ix = _mm256_sub_epi32(ix, _mm256_cmpgt_epi32(b, _mm256_and_si256(hv, ff)));
                        ix = _mm256_sub_epi32(ix, _mm256_cmpgt_epi32(b, _mm256_and_si256(_mm256_srli_epi32(hv, 8), ff)));
                        ix = _mm256_sub_epi32(ix, _mm256_cmpgt_epi32(b, _mm256_srli_epi32(_mm256_slli_epi32(hv, 8), 24)));
                        /* the entry's two halves as two 32-bit gathers (scale 8) */
                        r[gi][v] = _mm256_mask_i32gather_epi32(rv, er, ix, k, 8);
                        h[gi][v] = _mm256_mask_i32gather_epi32(hv, eh, ix, k, 8);
                    }
            }
            for (unsigned gi = 0; gi < gp; gi++)
                for (int v = 0; v < V; v++)
                    best[v] = _mm256_min_epu32(best[v], _mm256_sub_epi32(_mm256_srli_epi32(r[gi][v], 1), one));
        }
        uint32_t out[DFLAT_CHUNK] __attribute__((aligned(32)));
        for (int v = 0; v < V; v++)
            _mm256_store_si256((__m256i *)(out + 8 * v), best[v]);
        memcpy(rank_out + base, out, 4ull * m);
    }
}
#endif
