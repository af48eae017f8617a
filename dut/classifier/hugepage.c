/* SPDX-License-Identifier: Apache-2.0 */
/* The classifier's huge-page regions (design: hugepage.h). */
#include "hugepage.h"

#include <stdint.h>
#include <sys/mman.h>

void *ofb_hp_map(size_t bytes)
{
    size_t total = ofb_hp_round(bytes ? bytes : 1);
    /* map one page more, then trim head and tail: the region is 2 MiB-aligned */
    char *base = mmap(NULL, total + OFB_HP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    char *r = (char *)(((uintptr_t)base + OFB_HP_SIZE - 1) & ~(uintptr_t)(OFB_HP_SIZE - 1));
    if (r > base)
        munmap(base, (size_t)(r - base));
    size_t tail = (size_t)(base + total + OFB_HP_SIZE - (r + total));
    if (tail)
        munmap(r + total, tail);
#ifdef MADV_HUGEPAGE
    madvise(r, total, MADV_HUGEPAGE);
#endif
    return r;
}

void ofb_hp_unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, ofb_hp_round(bytes ? bytes : 1));
}
