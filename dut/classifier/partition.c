/* SPDX-License-Identifier: Apache-2.0 */
/* The rule partition dtree and dfa share (design: partition.h). */
#include "partition.h"

#include <stdio.h>
#include <string.h>

/* Partition (CutSplit-like): a byte is "discriminating" when rules that are
 * specific on it (top nibble of the mask set) take >= 64 distinct values there.
 * The group of a rule is the first of up to maxg - 1 chosen bytes it is
 * specific on (chosen greedily: the byte most of the still ungrouped rules are
 * specific on), else the last group.  maxg = 1 (OFB_DTREE_TREES=1) puts all in one. */
unsigned ofb_dt_partition(uint32_t kl, uint32_t n, unsigned maxg, const void *ctx,
                          bool (*small)(const void *ctx, uint32_t r, uint32_t d),
                          uint8_t (*low)(const void *ctx, uint32_t r, uint32_t d), uint8_t *grp, bool stats)
{
    memset(grp, 0xff, n);
    bool diverse[256];
    for (uint32_t d = 0; d < kl; d++) {
        uint8_t seen[256] = { 0 };
        unsigned dist = 0;
        for (uint32_t i = 0; i < n; i++)
            if (small(ctx, i, d) && !seen[low(ctx, i, d)]) {
                seen[low(ctx, i, d)] = 1;
                dist++;
            }
        diverse[d] = dist >= 64;
    }
    unsigned g = 0;
    uint32_t left = n;
    while (g + 1 < maxg && left > n / 20) {
        uint32_t bestc = 0, bd = 0;
        for (uint32_t d = 0; d < kl; d++) {
            if (!diverse[d])
                continue;
            uint32_t c = 0;
            for (uint32_t i = 0; i < n; i++)
                c += grp[i] == 0xff && small(ctx, i, d);
            if (c > bestc)
                bestc = c, bd = d;
        }
        if (bestc < n / 20 || !bestc)
            break;
        for (uint32_t i = 0; i < n; i++)
            if (grp[i] == 0xff && small(ctx, i, bd))
                grp[i] = (uint8_t)g, left--;
        if (stats)
            fprintf(stderr, "group %u: byte %u, %u rules\n", g, bd, bestc);
        diverse[bd] = false;
        g++;
    }
    if (!left)
        return g;
    for (uint32_t i = 0; i < n; i++)
        if (grp[i] == 0xff)
            grp[i] = (uint8_t)g;
    return g + 1;
}

