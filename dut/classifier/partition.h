/* SPDX-License-Identifier: Apache-2.0 */
/* The rule partition (CutSplit-like) that dtree.c and dfa.c both use.
 *
 * Design: its own unit so that the two compiled forms depend on it and not on
 * each other's internals: dtree.c -> dfa.c (a dtree may carry a DFA in front),
 * dtree.c -> partition.c, dfa.c -> partition.c; no circle. */
#ifndef OFB_CLS_PARTITION_H
#define OFB_CLS_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

/* The rule partition dtree and dfa share (dtree.h "Trees"): greedily, the
 * byte on which most ungrouped rules are small (counting only bytes where the
 * small rules take >= 64 distinct low ends) takes those rules, up to maxg - 1
 * times or until < 5 % are left; the rest is the last group.  small(ctx, r, d):
 * rule r's range on byte d spans < 16 values; low(ctx, r, d): its low end.
 * kl <= 256.  grp[r] = group; returns the number of groups.  stats: each group on stderr. */
unsigned ofb_dt_partition(uint32_t kl, uint32_t n, unsigned maxg, const void *ctx,
                          bool (*small)(const void *ctx, uint32_t r, uint32_t d),
                          uint8_t (*low)(const void *ctx, uint32_t r, uint32_t d), uint8_t *grp, bool stats);

#endif
