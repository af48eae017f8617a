/* flowarena.h -- where struct ofs_flow lives: a flow arena in hugepage memory, and the flows'
 * per-worker packet/byte counters.
 *
 * Goal: a packet that hits a flow touches one cache line of it (the hot line, the first 64
 * bytes of struct ofs_flow, see ofswitch.h) and no TLB miss. Flows calloc'd one by one sat in
 * 4 KiB pages spread over the agent's heap (at 100k flows ~50 MB: every flow a packet touched
 * was a TLB miss before its cache miss); from the arena they sit 64-byte aligned in 2 MiB
 * pages (DPDK hugepage memory, rte_malloc), so the worker's TLB covers every flow.
 *
 * Layout: chunks of OFS_ARENA_CHUNK slots, allocated as the flows grow and never returned
 * (a chunk: the slots, then one array of struct ofs_flow_ctr per worker, OFS_ARENA_CHUNK each).
 * Free slots are kept on a list threaded through the slots. The cold parts of a flow that are
 * not in struct ofs_flow (match_raw, insts) stay in ordinary malloc.
 * Heap mode (ofs_arena_init not called: unit tests, the fuzz harness; and the switch itself in
 * the sanitizer build): every flow is its own aligned_alloc with its counters behind it, so
 * AddressSanitizer sees each flow's lifetime and LeakSanitizer what it points to (it does not
 * scan hugepage memory); the interface is the same.
 *
 * Per-worker counters (issue 16 part 4): with one worker, the worker adds to the flow's own
 * packets/bytes (hot line, plain adds, as before); with several, worker w adds to
 * f->ctr[w * ofs_arena_ctr_stride] (struct ofs_worker.ctr_off), a line only it writes, so no
 * line bounces between cores and no atomic is needed. The agent sums them (ofs_flow_counts)
 * for flow stats, aggregate stats and FLOW_REMOVED, after ofs_counters_sync: a worker's fast
 * cache entries hold counts until they are flushed (ofswitch.h, struct ofs_cache_line).
 *
 * Concurrency: agent thread only, except that workers read flows and add to counters.
 * A slot is released (ofs_flow_release) only through the deferred frees (flowtable.h, QSBR,
 * then the workers' counter sweeps: ofs_defer_free_flow): no worker holds the flow then, no
 * cache entry holds counts for it, and none can add to its counters, so the agent zeroes a
 * slot's counters when it hands the slot out again, without racing a worker.
 * Limits: an ADD finds no slot once max_flows flows are in use (--max-flows, 0: as many as
 * memory gives; removed flows count until they are reclaimed, and the agent waits one grace
 * period for them before it refuses an ADD); a MODIFY's copies are not capped (the flows they
 * replace go back a grace period later). No chunk to be had (the EAL's -m is used up) fails
 * any allocation. Either way the FLOW_MOD is refused with OFPT_ERROR (FLOW_MOD_FAILED/
 * TABLE_FULL for an ADD, UNKNOWN for a MODIFY, agent_internal.h "Out of memory"), and the
 * tables stay as they were.
 */
#ifndef OFB_FLOWARENA_H
#define OFB_FLOWARENA_H
#include <stdbool.h>
#include <stdint.h>
#include "ofswitch.h"

#define OFS_ARENA_CHUNK 4096         /* flows per hugepage chunk */

/* Built with AddressSanitizer: the switch uses heap mode (main.c). */
#if defined(__SANITIZE_ADDRESS__)
#define OFS_ARENA_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OFS_ARENA_SANITIZED 1
#endif
#endif
#ifndef OFS_ARENA_SANITIZED
#define OFS_ARENA_SANITIZED 0
#endif

/* One worker's counters of one flow (workers > 1). */
struct ofs_flow_ctr { uint64_t packets, bytes; };

/* Distance, in struct ofs_flow_ctr, between two workers' counters of one flow. */
extern uint32_t ofs_arena_ctr_stride;

/* Put the arena in hugepage memory (rte_malloc; after rte_eal_init, before the first flow),
 * with counters for n_workers and at most max_flows flows in use (0: no cap). */
void ofs_arena_init(bool hugepages, unsigned n_workers, uint32_t max_flows);
/* A zeroed flow with zeroed counters (f->ctr set, f->in_arena true), or NULL when the arena
 * is exhausted: no memory for a chunk, or (add: a new flow, not a MODIFY's copy of one) the
 * cap reached. Agent thread. */
struct ofs_flow *ofs_flow_alloc(bool add);
/* Give f back (no worker may hold it: after a grace period, or never published). */
void ofs_flow_release(struct ofs_flow *f);
/* Flows handed out and not yet released (removed flows count until their grace period). */
uint32_t ofs_arena_in_use(void);
/* f's packets and bytes over all workers. */
void ofs_flow_counts(const struct ofs_flow *f, uint64_t *packets, uint64_t *bytes);

#endif
