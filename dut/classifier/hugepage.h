/* SPDX-License-Identifier: Apache-2.0 */
/* One huge-page API for every part of the classifier library.
 *
 * Design: what lookups read at random (OURS' filter words and buckets, dtree's
 * nodes and leaves, the DFA's nodes, keymap's map) lives on 2 MiB pages when it
 * is that large: on 4 KiB pages nearly every probe also misses the TLB
 * (experiments/classifier/LOG.md: NTT 1M 0.45 -> 0.73 Mlps; cb_acl 100k dtree
 * 2.98 -> 4.75).  Every user asks the same two calls: ofb_hp_map for a region
 * (2 MiB-aligned, a multiple of 2 MiB, anonymous and zeroed, advised
 * MADV_HUGEPAGE: advice only, without THP it is 4 KiB pages) and ofb_hp_unmap
 * with the size it got.  Whether huge pages are used at all is the caller's
 * decision, taken the same way everywhere: ofb_cls_params.tuning.no_hugepages
 * (the library reads no environment; OFB_CLS_HUGEPAGES=0 in the tools and the
 * binding sets it), passed down to each algorithm's build.  Sanitizer runs turn
 * it off so every object is a malloc the sanitizer sees. */
#ifndef OFB_CLS_HUGEPAGE_H
#define OFB_CLS_HUGEPAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#define OFB_HP_SIZE ((size_t)2 << 20)

/* bytes rounded up to whole 2 MiB pages */
static inline size_t ofb_hp_round(size_t bytes)
{
    return (bytes + OFB_HP_SIZE - 1) & ~(OFB_HP_SIZE - 1);
}

/* A region of ofb_hp_round(bytes) bytes at a 2 MiB boundary, zeroed, advised
 * MADV_HUGEPAGE; NULL when the system refuses it. */
__attribute__((visibility("hidden"))) void *ofb_hp_map(size_t bytes);
/* give back a region from ofb_hp_map (bytes: as asked then) */
__attribute__((visibility("hidden"))) void ofb_hp_unmap(void *p, size_t bytes);

/* An array read at random: a region (ofb_hp_map, zeroed) when it is 2 MiB or more and hp is
 * set, else the C library (zeroed when zero is set).  *taken (may be NULL): the bytes taken,
 * whole 2 MiB pages for a region. */
static inline void *ofb_hp_alloc(bool hp, size_t bytes, bool zero, size_t *taken)
{
    if (bytes < OFB_HP_SIZE || !hp) {
        if (taken)
            *taken = bytes;
        return zero ? calloc(1, bytes ? bytes : 1) : malloc(bytes ? bytes : 1);
    }
    if (taken)
        *taken = ofb_hp_round(bytes);
    return ofb_hp_map(bytes);
}

/* give back what ofb_hp_alloc gave (hp and bytes: as asked then); NULL is fine */
static inline void ofb_hp_free(bool hp, void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < OFB_HP_SIZE || !hp)
        free(p);
    else
        ofb_hp_unmap(p, bytes);
}

#endif
