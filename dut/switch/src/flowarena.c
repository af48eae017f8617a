/* flowarena.c -- the flow arena and per-worker flow counters (see flowarena.h). */
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>
#include <rte_malloc.h>
#include <rte_lcore.h>
#include "flowarena.h"

/* A slot: a flow rounded up to whole cache lines, so every flow's hot line is one line. */
#define SLOT_SIZE RTE_ALIGN_CEIL(sizeof(struct ofs_flow), RTE_CACHE_LINE_SIZE)

uint32_t ofs_arena_ctr_stride = 1;

static struct {
	bool hugepages;
	unsigned n_workers;          /* counter arrays per chunk / per flow */
	uint32_t max_flows;          /* 0: no cap */
	uint32_t in_use;
	struct ofs_flow *free_list;  /* linked through the slots' first word */
} arena = { .n_workers = OFS_MAX_WORKERS };

void ofs_arena_init(bool hugepages, unsigned n_workers, uint32_t max_flows)
{
	arena.hugepages = hugepages;
	arena.n_workers = n_workers ? n_workers : 1;
	arena.max_flows = max_flows;
	ofs_arena_ctr_stride = hugepages ? OFS_ARENA_CHUNK : 1;
}

uint32_t ofs_arena_in_use(void) { return arena.in_use; }

/* One more chunk of slots on the free list (hugepage mode). */
static bool grow(void)
{
	size_t flows = (size_t)SLOT_SIZE * OFS_ARENA_CHUNK;
	size_t ctrs = sizeof(struct ofs_flow_ctr) * OFS_ARENA_CHUNK * arena.n_workers;
	uint8_t *c = rte_malloc_socket("ofs_flows", flows + ctrs, RTE_CACHE_LINE_SIZE,
				       (int)rte_socket_id());
	if (!c)
		return false;
	struct ofs_flow_ctr *ctr = (struct ofs_flow_ctr *)(c + flows);
	for (uint32_t i = OFS_ARENA_CHUNK; i-- > 0;) {
		struct ofs_flow *f = (struct ofs_flow *)(c + (size_t)i * SLOT_SIZE);
		f->ctr = &ctr[i];     /* kept while the slot is free (the list uses `packets`) */
		*(struct ofs_flow **)f = arena.free_list;
		arena.free_list = f;
	}
	return true;
}

struct ofs_flow *ofs_flow_alloc(bool add)
{
	if (add && arena.max_flows && arena.in_use >= arena.max_flows)
		return NULL;
	struct ofs_flow *f;
	struct ofs_flow_ctr *ctr;
	if (arena.hugepages) {
		if (!arena.free_list && !grow())
			return NULL;
		f = arena.free_list;
		arena.free_list = *(struct ofs_flow **)f;
		ctr = f->ctr;
	} else {
		size_t ctrs = sizeof(struct ofs_flow_ctr) * arena.n_workers;
		f = aligned_alloc(RTE_CACHE_LINE_SIZE,
				  RTE_ALIGN_CEIL(SLOT_SIZE + ctrs, RTE_CACHE_LINE_SIZE));
		if (!f)
			return NULL;
		ctr = (struct ofs_flow_ctr *)((uint8_t *)f + SLOT_SIZE);
	}
	memset(f, 0, sizeof(*f));
	for (unsigned w = 0; w < arena.n_workers; w++)
		ctr[(size_t)w * ofs_arena_ctr_stride] = (struct ofs_flow_ctr){ 0, 0 };
	f->ctr = ctr;
	f->in_arena = true;
	arena.in_use++;
	return f;
}

void ofs_flow_release(struct ofs_flow *f)
{
	arena.in_use--;
	if (!arena.hugepages) {
		free(f);
		return;
	}
	struct ofs_flow_ctr *ctr = f->ctr;
	memset(f, 0, sizeof(*f));
	f->ctr = ctr;
	*(struct ofs_flow **)f = arena.free_list;
	arena.free_list = f;
}

void ofs_flow_counts(const struct ofs_flow *f, uint64_t *packets, uint64_t *bytes)
{
	uint64_t p = __atomic_load_n(&f->packets, __ATOMIC_RELAXED);
	uint64_t b = __atomic_load_n(&f->bytes, __ATOMIC_RELAXED);
	if (f->in_arena)
		for (unsigned w = 0; w < arena.n_workers; w++) {
			const struct ofs_flow_ctr *c = &f->ctr[(size_t)w * ofs_arena_ctr_stride];
			p += __atomic_load_n(&c->packets, __ATOMIC_RELAXED);
			b += __atomic_load_n(&c->bytes, __ATOMIC_RELAXED);
		}
	*packets = p;
	*bytes = b;
}
