/* dflat_prof: the flat DFA (dut/classifier/dfa_flat.h) of one rule set, walked alone:
 * groups, entries, steps per key per group, the lockstep chunk's length (its slowest lane), and
 * cycles (TSC) per key of each walk on a key trace, batches of 32.  Links the library's archive.
 *   dflat_prof RULES KEYS [reps]       (OFB_DFLAT_FULL_MIN=N: full nodes from N intervals; default 4) */
#include "dfa.h"
#include "dfa_flat.h"
#include "binfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

static const uint32_t *g_prio;
static int cmp_rank(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (g_prio[x] != g_prio[y])
        return g_prio[x] > g_prio[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dflat_prof RULES KEYS [reps]\n");
        return 2;
    }
    uint32_t kl, n, kl2, nk;
    uint8_t *rd = ofb_read_binfile("dflat_prof", argv[1], "OFBR", &kl, &n);
    uint8_t *kd = ofb_read_binfile("dflat_prof", argv[2], "OFBK", &kl2, &nk);
    int reps = argc > 3 ? atoi(argv[3]) : 200;
    size_t rec = 4 + 2 * (size_t)kl;
    uint32_t nwk = (kl + 7) / 8, *prio = malloc(4 * n), *ord = malloc(4 * n);
    for (uint32_t i = 0; i < n; i++)
        memcpy(&prio[i], rd + rec * i, 4), ord[i] = i;
    g_prio = prio;
    qsort(ord, n, 4, cmp_rank);
    uint64_t *rw = calloc((size_t)n * 2 * nwk, 8);
    for (uint32_t r = 0; r < n; r++) {
        const uint8_t *p = rd + rec * ord[r];
        uint8_t *v = (uint8_t *)(rw + (size_t)r * 2 * nwk), *m = v + 8 * nwk;
        for (uint32_t b = 0; b < kl; b++)
            v[b] = p[4 + b] & p[4 + kl + b], m[b] = p[4 + kl + b];
    }
    char err[256] = "";
    int over = 0;
    struct ofb_bdfa *d = ofb_bdfa_build(kl, nwk, rw, n, OFB_BDFA_SIMD | OFB_BDFA_AUTO, 0, NULL, &over, err, sizeof err);
    if (!d) {
        fprintf(stderr, "no dfa: %s\n", err);
        return 1;
    }
    const char *fm = getenv("OFB_DFLAT_FULL_MIN");
    unsigned full_min = fm ? (unsigned)atoi(fm) : 4;
    const uint8_t **kp = malloc(sizeof(void *) * nk);
    for (uint32_t i = 0; i < nk; i++)
        kp[i] = kd + (size_t)i * kl;
    uint32_t *ref = malloc(4 * nk), *out = malloc(4 * nk);
    for (uint32_t i = 0; i < nk; i++)
        ref[i] = ofb_bdfa_lookup(d, kp[i]);
    static const char *wn[] = { "scalar", "avx2", "avx512" };
    for (unsigned w = 0; w < 3; w++) {
        struct ofb_dflat *f = ofb_dflat_build(d, w, full_min, 0);
        if (!f) {
            printf("no flat\n");
            return 1;
        }
        if (w == 0) {
            printf("%s: %u rules, %u groups, dfa %zu B, flat %zu entries = %zu B (%.0f B/rule)\n", argv[1], n,
                   f->ngroups, ofb_bdfa_bytes(d), f->n, ofb_dflat_bytes(f), (double)ofb_dflat_bytes(f) / n);
            double tot = 0, totmax = 0;
            for (unsigned g = 0; g < f->ngroups; g++) {
                uint64_t steps = 0, chunkmax = 0, hist[20] = { 0 };
                for (uint32_t base = 0; base < nk; base += 32) {
                    unsigned mx = 0;
                    for (uint32_t i = base; i < base + 32 && i < nk; i++) {
                        uint64_t c = f->root[g];
                        unsigned s = 0;
                        while (!(c & 1))
                            c = ofb_dflat_step(f->e, c, kp[i]), s++;
                        steps += s, hist[s < 19 ? s : 19]++;
                        mx = s > mx ? s : mx;
                    }
                    chunkmax += mx * 32ull;
                }
                printf("  group %u: steps/key %.2f, lockstep (chunk max) %.2f, lane use %.0f%%  hist", g,
                       (double)steps / nk, (double)chunkmax / nk, 100.0 * steps / chunkmax);
                for (int s = 0; s < 20; s++)
                    if (hist[s])
                        printf(" %d:%.1f%%", s, 100.0 * hist[s] / nk);
                printf("\n");
                tot += (double)steps / nk, totmax += (double)chunkmax / nk;
            }
            printf("  all groups: steps/key %.2f, lockstep %.2f\n", tot, totmax);
            /* (a) lane j keeps key j and walks its groups one after another: a vector of L lanes runs
             * max over its lanes of the sum; (b) lanes refilled from a queue of (key, group) walks */
            for (unsigned L = 8; L <= 32; L *= 2) {
                uint64_t sa = 0, sb = 0;
                for (uint32_t base = 0; base < nk; base += 32) {
                    unsigned st[32 * 8], nw = 0;
                    for (uint32_t i = base; i < base + 32 && i < nk; i++)
                        for (unsigned g = 0; g < f->ngroups; g++) {
                            uint64_t c = f->root[g];
                            unsigned s = 0;
                            while (!(c & 1))
                                c = ofb_dflat_step(f->e, c, kp[i]), s++;
                            st[nw++] = s;
                        }
                    unsigned nkeys = nw / f->ngroups;
                    for (unsigned v0 = 0; v0 < nkeys; v0 += L) {   /* (a) per vector */
                        unsigned mx = 0;
                        for (unsigned j = v0; j < v0 + L && j < nkeys; j++) {
                            unsigned sum = 0;
                            for (unsigned g = 0; g < f->ngroups; g++)
                                sum += st[j * f->ngroups + g];
                            mx = sum > mx ? sum : mx;
                        }
                        sa += (uint64_t)mx * L;
                    }
                    /* (b) per vector of L lanes, its own queue: the walks of keys v0.. in group-major order */
                    for (unsigned v0 = 0; v0 < nkeys; v0 += L) {
                        unsigned q[32 * 8], nq = 0, lane[32], it = 0, qi = 0;
                        for (unsigned g = 0; g < f->ngroups; g++)
                            for (unsigned j = v0; j < v0 + L && j < nkeys; j++)
                                if (st[j * f->ngroups + g])
                                    q[nq++] = st[j * f->ngroups + g];
                        unsigned act = 0;
                        for (unsigned l = 0; l < L; l++)
                            lane[l] = qi < nq ? (act++, q[qi++]) : 0;
                        while (act) {
                            it++;
                            for (unsigned l = 0; l < L; l++)
                                if (lane[l] && !--lane[l]) {
                                    act--;
                                    if (qi < nq)
                                        lane[l] = q[qi++], act++;
                                }
                        }
                        sb += (uint64_t)it * L;
                    }
                }
                printf("  lanes %2u: (a) key per lane, groups in turn: %.2f steps/key; (b) refilled from a queue: %.2f\n", L,
                       (double)sa / nk, (double)sb / nk);
            }
        }
        if ((w == 1 && !__builtin_cpu_supports("avx2")) || (w == 2 && !__builtin_cpu_supports("avx512f")))
            continue;
        uint64_t best = UINT64_MAX;
        for (int r = 0; r < reps; r++) {
            uint64_t t0 = __rdtsc();
            for (uint32_t i = 0; i < nk; i += 32)
                ofb_dflat_lookup_batch(f, kp + i, nk - i < 32 ? nk - i : 32, out + i);
            uint64_t t = __rdtsc() - t0;
            best = t < best ? t : best;
        }
        uint64_t mism = 0;
        for (uint32_t i = 0; i < nk; i++)
            mism += out[i] != ref[i];
        uint64_t bs = UINT64_MAX;
        for (int r = 0; r < reps / 4 + 1; r++) {
            uint64_t t0 = __rdtsc();
            for (uint32_t i = 0; i < nk; i++)
                out[i] = ofb_dflat_lookup(f, kp[i]);
            uint64_t t = __rdtsc() - t0;
            bs = t < bs ? t : bs;
        }
        printf("  %-6s batch %.1f TSC/key (%.1f Mlps at 2.6 GHz TSC)  single %.1f TSC/key  mismatches %lu\n", wn[w],
               (double)best / nk, 2600.0 * nk / best, (double)bs / nk, (unsigned long)mism);
        ofb_dflat_free(f);
    }
    return 0;
}
