/* SPDX-License-Identifier: Apache-2.0 */
/* dfa_flat.h's lockstep walk on AVX-512: 2 vectors of 16 keys (one chunk of 32), per step one gather of
 * the key bytes and two of the 64-bit entries per vector, lanes that ended masked off. */
#include "dfa_flat.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define V 2   /* vectors of 16 lanes per chunk */
#ifndef GP
#define GP 3  /* groups walked at once */
#endif

#define WALK \
TARGET \
void NAME(const struct ofb_dflat *f, const uint8_t *const keys[], size_t n, uint32_t rank_out[]) \
{ \
    _Static_assert(V * 16 == DFLAT_CHUNK, "chunk"); \
    const uint64_t *e = f->e; \
    uint8_t kbuf[DFLAT_CHUNK * 16 + 16] __attribute__((aligned(64))); \
    const __m512i one = _mm512_set1_epi32(1), ff = _mm512_set1_epi32(0xff), f15 = _mm512_set1_epi32(15); \
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30); \
    const __m512i odd = _mm512_add_epi32(even, one); \
    __m512i laneoff[V]; \
    for (int v = 0; v < V; v++) \
        laneoff[v] = _mm512_mullo_epi32(_mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, \
                                                                           13, 14, 15), \
                                                         _mm512_set1_epi32(16 * v)), \
                                        _mm512_set1_epi32(16)); \
    memset(kbuf, 0, sizeof(kbuf)); \
    for (size_t base = 0; base < n; base += DFLAT_CHUNK) { \
        unsigned m = n - base < DFLAT_CHUNK ? (unsigned)(n - base) : DFLAT_CHUNK; \
        for (unsigned j = 0; j < m; j++) \
            memcpy(kbuf + 16 * j, keys[base + j], f->key_len); \
        KEYS_LOAD \
        __m512i best[V]; \
        for (int v = 0; v < V; v++) \
            best[v] = _mm512_set1_epi32(-1); \
        /* partitioned DFAs (issue 42): up to GP groups walked at once, each (group, vector) pair its own \
         * chain of gathers stepping until its last lane ended: more independent misses in flight */ \
        for (uint32_t g0 = 0; g0 < f->ngroups; g0 += GP) { \
            unsigned gp = f->ngroups - g0 < GP ? f->ngroups - g0 : GP; \
            __m512i elo[GP][V], ehi[GP][V];   /* each lane's 64-bit entry: lanes 0-7, 8-15 */ \
            __mmask16 act[GP][V]; \
            for (unsigned gi = 0; gi < GP; gi++) \
                for (int v = 0; v < V; v++) { \
                    /* lanes past m start final with no rule: never active */ \
                    unsigned mv = gi >= gp || m <= 16u * v ? 0 : m - 16u * v >= 16 ? 16 : m - 16u * v; \
                    long long rt = gi < gp ? (long long)f->root[g0 + gi] : 1; \
                    elo[gi][v] = _mm512_mask_set1_epi64(_mm512_set1_epi64(1), (__mmask8)((1u << mv) - 1), rt); \
                    ehi[gi][v] = _mm512_mask_set1_epi64(_mm512_set1_epi64(1), (__mmask8)(((1u << mv) - 1) >> 8), rt); \
                    act[gi][v] = (rt & 1) ? 0 : (__mmask16)((1u << mv) - 1); \
                } \
            for (;;) { \
                __mmask16 any = 0; \
                for (unsigned gi = 0; gi < GP; gi++) \
                for (int v = 0; v < V; v++) { \
                    if (!act[gi][v]) \
                        continue; \
                    /* ref (low halves) and hdr (high halves) of the 16 entries */ \
                    __m512i r = _mm512_permutex2var_epi32(elo[gi][v], even, ehi[gi][v]); \
                    __m512i h = _mm512_permutex2var_epi32(elo[gi][v], odd, ehi[gi][v]); \
                    __mmask16 k = _mm512_testn_epi32_mask(r, one); \
                    act[gi][v] = k; \
                    any |= k; \
                    __m512i kix = _mm512_add_epi32(laneoff[v], _mm512_and_si512(_mm512_srli_epi32(r, 1), f15)); \
                    __m512i b = _mm512_and_si512(KEYBYTE, ff); \
                    __m512i ix = _mm512_add_epi32(_mm512_srli_epi32(r, 5), _mm512_and_si512(b, _mm512_srli_epi32(h, 24))); \
                    ix = _mm512_mask_add_epi32(ix, _mm512_cmpgt_epu32_mask(b, _mm512_and_si512(h, ff)), ix, one); \
                    ix = _mm512_mask_add_epi32(ix, _mm512_cmpgt_epu32_mask(b, _mm512_and_si512(_mm512_srli_epi32(h, 8), ff)), \
                                               ix, one); \
                    ix = _mm512_mask_add_epi32(ix, _mm512_cmpgt_epu32_mask(b, _mm512_srli_epi32(_mm512_slli_epi32(h, 8), 24)), \
                                               ix, one); \
                    elo[gi][v] = _mm512_mask_i32gather_epi64(elo[gi][v], (__mmask8)k, _mm512_castsi512_si256(ix), e, 8); \
                    ehi[gi][v] = _mm512_mask_i32gather_epi64(ehi[gi][v], (__mmask8)(k >> 8), _mm512_extracti64x4_epi64(ix, 1), e, 8); \
                } \
                if (!any) \
                    break; \
            } \
            for (unsigned gi = 0; gi < gp; gi++) \
                for (int v = 0; v < V; v++) { \
                    __m512i r = _mm512_permutex2var_epi32(elo[gi][v], even, ehi[gi][v]); \
                    best[v] = _mm512_min_epu32(best[v], _mm512_sub_epi32(_mm512_srli_epi32(r, 1), one)); \
                } \
        } \
        uint32_t out[DFLAT_CHUNK] __attribute__((aligned(64))); \
        for (int v = 0; v < V; v++) \
            _mm512_store_si512((__m512i *)(out + 16 * v), best[v]); \
        memcpy(rank_out + base, out, 4ull * m); \
    } \
} \
    /* end */
/* the key bytes: a gather from the chunk's copy of the keys, or (AVX512-VBMI) two byte permutes of the
 * 16 keys held in 4 registers, selected by bit 7 of the index (lane * 16 + pos) */
#define NAME ofb_dflat_batch_avx512
#define TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define KEYS_LOAD
#define KEYBYTE _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, kix, kbuf, 1)
WALK
#undef NAME
#undef TARGET
#undef KEYS_LOAD
#undef KEYBYTE
#define NAME ofb_dflat_batch_avx512_vbmi
#define TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi")))
#define KEYS_LOAD                                                                              \
    __m512i kr[V][4];                                                                          \
    for (int v = 0; v < V; v++)                                                                \
        for (int i = 0; i < 4; i++)                                                            \
            kr[v][i] = _mm512_load_si512((const void *)(kbuf + 256 * v + 64 * i));
#define KEYBYTE                                                                                \
    _mm512_mask_blend_epi32(_mm512_test_epi32_mask(kix, _mm512_set1_epi32(0x80)),              \
                            _mm512_permutex2var_epi8(kr[v][0], kix, kr[v][1]),                 \
                            _mm512_permutex2var_epi8(kr[v][2], kix, kr[v][3]))
WALK
#endif
