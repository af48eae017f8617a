/* flowcache.c -- the flow cache's out-of-line parts (flowcache.h): revalidation of an older
 * entry against the view's change log, the flush of fast entries' counts to their flows, and
 * the agent's side of those counts (ofs_counters_sync / _snapshot / _swept, ofswitch.h). */
#include <rte_cycles.h>
#include <rte_pause.h>
#include "flowarena.h"
#include "flowcache.h"

/* An entry of an older version of v's epoch: is its flow still the answer at v? Not if its
 * version is older than v's log, if its flow was removed since, or if a flow added since
 * matches its key with a priority at least its flow's (ties: the lookup decides). The flow
 * itself is not read (its priority is in the bucket): a cold flow line would cost a memory
 * round trip per packet. */
bool ofs_ck_revalidate(const struct ofs_table_view *v, uint32_t version,
		       const struct ofs_flow *f, uint16_t prio, const uint64_t *w)
{
	if (version < v->log_base)
		return false;
	uint32_t i = v->n_log;
	while (i > 0 && v->log[i - 1].version > version)
		i--;
	for (uint32_t j = i; j < v->n_log; j++) {
		const struct ofs_change *c = &v->log[j];
		if (!c->added) {
			if (c->removed == f && f)
				return false;
			continue;
		}
		if (f && c->priority < prio)
			continue;
		unsigned k = 0;
		while (k < v->n_words && (w[k] & c->m[k]) == c->v[k])
			k++;
		if (k == v->n_words)
			return false;
	}
	return true;
}

/* Add line's pending counts to its flow (or to the MODIFY copy that carries it on) and clear
 * them. The flow is valid: it was in a view this worker used since its last sweep of this
 * line, and removed flows wait for the sweep (ofs_counters_swept). */
void ofs_ck_flush_line(struct ofs_worker *w, uint32_t line)
{
	struct ofs_cache_line *l = &w->cache[line];
	uint64_t x = l->x[6];
	w->ctr_dirty[line / 64] &= ~(1ull << (line % 64));
	l->x[6] = x & ~CK_PEND_MASK;
	struct ofs_flow *f = ck_flow(l->x[0]);
	while (unlikely(__atomic_load_n(&f->replaced, __ATOMIC_ACQUIRE)))
		f = f->succ;
	uint64_t pk = x >> CK_PEND_PK_SHIFT & CK_PEND_PK_MAX, by = (uint32_t)x;
	if (ofs_dp.n_workers == 1) {  /* as run_pipeline counts (flowarena.h) */
		f->packets += pk;
		f->bytes += by;
	} else {
		struct ofs_flow_ctr *k = f->ctr + w->ctr_off;
		k->packets += pk;
		k->bytes += by;
	}
	/* last, with release: an agent that reads 0 pending lines (ofs_counters_sync,
	 * ofs_counters_swept) sees these adds, and no flush of this worker still writes to a
	 * flow it may free */
	__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines - 1, __ATOMIC_RELEASE);
}

void ofs_ctr_flush_word(struct ofs_worker *w, uint32_t word)
{
	uint64_t bits = w->ctr_dirty[word];
	for (uint64_t b = bits; b; b &= b - 1)
		rte_prefetch0(&w->cache[word * 64 + (uint32_t)__builtin_ctzll(b)]);
	for (uint64_t b = bits; b; b &= b - 1)
		rte_prefetch0(ck_flow(w->cache[word * 64 + (uint32_t)__builtin_ctzll(b)].x[0]));
	for (; bits; bits &= bits - 1)
		ofs_ck_flush_line(w, word * 64 + (uint32_t)__builtin_ctzll(bits));
}

/* Flush every line with pending counts (the agent asked, or the worker is about to sleep or
 * stop). */
__rte_cold void ofs_ctr_flush_all(struct ofs_worker *w)
{
	for (uint32_t i = 0; i < w->ctr_words; i++)
		if (w->ctr_dirty[i])
			ofs_ctr_flush_word(w, i);
	ofs_pc_flush_all(w);  /* the pipeline cache's programs (pipecache.h "Counts") */
	__atomic_store_n(&w->ctr_sweeps, w->ctr_sweeps + 2, __ATOMIC_RELEASE);
}

void ofs_worker_set_cache(struct ofs_worker *w, struct ofs_cache_line *cache, uint64_t *dirty,
			  uint32_t lines)
{
	RTE_VERIFY(rte_is_power_of_2(lines) && lines >= OFS_CACHE_LINES_MIN &&
		   lines <= OFS_CACHE_LINES_MAX);
	w->cache = cache;
	w->cache_mask = lines - 1;
	w->ctr_dirty = dirty;
	w->ctr_words = lines / 64;
}

void ofs_counters_sync(void)
{
	uint64_t seq = __atomic_add_fetch(&ofs_dp.ctr_flush_seq, 1, __ATOMIC_ACQ_REL);
	uint64_t give_up = ofs_now_ns() + 500000000ull;  /* a worker that never loops: stuck */
	for (unsigned i = 0; i < ofs_dp.n_workers; i++) {
		struct ofs_worker *w = &ofs_dp.workers[i];
		while (__atomic_load_n(&w->ctr_ack_seq, __ATOMIC_ACQUIRE) < seq &&
		       __atomic_load_n(&w->ctr_dirty_lines, __ATOMIC_ACQUIRE) != 0 &&
		       !ofs_dp.force_quit && ofs_now_ns() < give_up)
			rte_pause();
	}
}

void ofs_counters_snapshot(uint64_t snap[OFS_MAX_WORKERS])
{
	for (unsigned i = 0; i < ofs_dp.n_workers; i++)
		snap[i] = __atomic_load_n(&ofs_dp.workers[i].ctr_sweeps, __ATOMIC_ACQUIRE);
}

bool ofs_counters_swept(const uint64_t snap[OFS_MAX_WORKERS])
{
	for (unsigned i = 0; i < ofs_dp.n_workers; i++) {
		const struct ofs_worker *w = &ofs_dp.workers[i];
		/* a sweep in progress at the snapshot may have passed a line already: two */
		if (__atomic_load_n(&w->ctr_sweeps, __ATOMIC_ACQUIRE) < snap[i] + 2 &&
		    __atomic_load_n(&w->ctr_dirty_lines, __ATOMIC_ACQUIRE) != 0)
			return false;
	}
	return true;
}
