/* flowcache.h -- the worker's exact-match flow cache (struct ofs_cache_line, ofswitch.h), in
 * front of each table's wildcard lookup.
 *
 * Goal: a packet of a known flow costs one cache line (two for a wide key) and no lookup; a
 * packet of the common flow (one output, nothing else) does not even read the flow's line.
 * Design: one cache per worker, skewed 2-way (an entry has two places, ck_index), keyed by
 * (table view's epoch, the packet key compacted to the words the table's masks use). An entry
 * of an older version of the same epoch is revalidated against the view's change log on its
 * next hit (ofs_ck_revalidate) instead of being recomputed, so small commits keep the cache
 * warm; a miss is remembered too. A *fast entry* (a table of at most OFS_CK_FAST_WORDS words
 * whose flow is the common one) holds its output port and counts its packets and bytes itself;
 * the counts reach the flow when the line is overwritten (ck_store), by a sweep of the worker's
 * dirty bitmap (ctr_sweep: a whole pass every OFS_CTR_SWEEP_US) and by a full flush that the
 * agent asks for before it reads counts (ofs_counters_sync), so every count reported is exact.
 * Threads: a worker's cache is its own (no atomics on entries); the dirty-line count and the
 * sweep count are published with release stores for the agent (ofs_counters_sync/_swept).
 * The probe functions are static inline: they are the burst loop's (datapath.c) inner steps.
 */
#ifndef OFS_FLOWCACHE_H
#define OFS_FLOWCACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <rte_common.h>
#include <rte_hash_crc.h>
#include <rte_prefetch.h>
#include "ofswitch.h"

/* One exact-match cache probe: the packet key compacted to the index's used words. */
struct ck_probe {
	const struct ofs_table_view *ix; /* NULL: table never had a flow */
	bool cacheable;                  /* ix->cacheable */
	bool wide;                       /* an entry of this table takes two lines */
	uint32_t sig;                    /* hash of (serial, compacted key) */
	uint32_t idx[2];                 /* the entry's two places (ck_index) */
	int stale;                       /* place (0, 1) of a stale entry for this key, or -1 */
	uint32_t line;                   /* a hit: the entry's first line */
	uint8_t fast;                    /* a hit on a fast entry: its output's ports[] index + 1 */
	uint64_t w[OFS_CK_WORDS];
};

/* The two places of an entry of hash sig in a cache of m + 1 lines: indexes of its first
 * line, even for a two-line entry, never the same. The first is the hash's low bits, the
 * second the high bits of a multiplicative mix of it (Fibonacci hashing: every bit of sig
 * moves them), so keys that share a first place spread over the whole cache for their
 * second, whatever the size. */
static inline void ck_index(struct ck_probe *p, uint32_t m)
{
	uint32_t a = p->sig & m;
	uint32_t b = (uint32_t)(((uint64_t)(p->sig * 0x9e3779b1u) * ((uint64_t)m + 1)) >> 32);
	if (p->wide) {
		a &= ~1u;
		b &= ~1u;
	}
	if (b == a)
		b = a ^ 2;
	p->idx[0] = a;
	p->idx[1] = b;
}

static inline void ck_prepare(const struct ofs_key *key, const struct ofs_table_view *ix,
			      uint32_t cache_mask, struct ck_probe *p)
{
	p->ix = ix;
	p->fast = 0;
	p->cacheable = ix && ix->cacheable;
	if (!p->cacheable)
		return;
	const uint64_t *kw = (const uint64_t *)key;
	uint32_t h = (uint32_t)ix->serial;
	for (unsigned i = 0; i < ix->n_words; i++) {
		p->w[i] = kw[ix->word[i]] & ix->mask[i];
		h = rte_hash_crc_8byte(p->w[i], h);
	}
	p->sig = h ^ (h >> 15);  /* spread the high bits into the index */
	p->wide = ix->n_words > OFS_CK_LINE1_WORDS;
	ck_index(p, cache_mask);
}

static inline void ck_prefetch(struct ofs_worker *w, const struct ck_probe *p, int place)
{
	rte_prefetch0(&w->cache[p->idx[place]]);
	if (p->wide)
		rte_prefetch0(&w->cache[p->idx[place] + 1]);
}

static inline uint64_t ck_tag(const struct ofs_table_view *v)
{
	return v->serial << OFS_VERSION_BITS | v->version;
}

/* An entry of an older version of v's epoch: is its flow still the answer at v? Not if its
 * version is older than v's log, if its flow was removed since, or if a flow added since
 * matches its key with a priority at least its flow's (ties: the lookup decides). The flow
 * itself is not read (its priority is in the bucket): a cold flow line would cost a memory
 * round trip per packet. */
bool ofs_ck_revalidate(const struct ofs_table_view *v, uint32_t version,
		       const struct ofs_flow *f, uint16_t prio, const uint64_t *w);

#define CK_FLOW_BITS 48
static inline struct ofs_flow *ck_flow(uint64_t x0)
{
	return (struct ofs_flow *)(uintptr_t)(x0 & ((1ull << CK_FLOW_BITS) - 1));
}

/* ---- counts held in fast entries (ofswitch.h, struct ofs_cache_line) ---------------------- */
#define CK_FAST_SHIFT 56
#define CK_PEND_PK_SHIFT 32
#define CK_PEND_PK_MAX 0xffffffull
#define CK_PEND_MASK ((1ull << CK_FAST_SHIFT) - 1)

static inline bool ctr_is_dirty(const struct ofs_worker *w, uint32_t line)
{
	return w->ctr_dirty[line / 64] >> (line % 64) & 1;
}

/* Add line's pending counts to its flow (or to the MODIFY copy that carries it on) and clear
 * them. The flow is valid: it was in a view this worker used since its last sweep of this
 * line, and removed flows wait for the sweep (ofs_counters_swept). */
void ofs_ck_flush_line(struct ofs_worker *w, uint32_t line);

/* A packet of len bytes forwarded by the fast entry at line: counted in the entry. */
static inline void ck_count(struct ofs_worker *w, uint32_t line, uint32_t len)
{
	struct ofs_cache_line *l = &w->cache[line];
	/* a fast entry's line is dirty exactly when it holds a packet: ask its own word, at hand,
	 * not the bitmap (one line of it per 64 entries: a line more per frame in L1) */
	if (!(l->x[6] & CK_PEND_MASK)) {
		w->ctr_dirty[line / 64] |= 1ull << (line % 64);
		__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines + 1, __ATOMIC_RELEASE);
	} else if (unlikely((l->x[6] >> CK_PEND_PK_SHIFT & CK_PEND_PK_MAX) == CK_PEND_PK_MAX ||
			    (uint32_t)l->x[6] + len < (uint32_t)l->x[6])) {
		ofs_ck_flush_line(w, line);  /* a count would overflow: flush, then start again */
		w->ctr_dirty[line / 64] |= 1ull << (line % 64);
		__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines + 1, __ATOMIC_RELEASE);
	}
	l->x[6] += (1ull << CK_PEND_PK_SHIFT) + len;
}

/* Flush the pending counts of the dirty lines of one word of the worker's bitmap. */
void ofs_ctr_flush_word(struct ofs_worker *w, uint32_t word);

/* Flush every line with pending counts (the agent asked, or the worker is about to sleep or
 * stop). */
void ofs_ctr_flush_all(struct ofs_worker *w);

/* Once per poll loop: the sweep's words that are due (a whole sweep per OFS_CTR_SWEEP_US),
 * and a full flush when the agent asked for one. */
static inline void ctr_sweep(struct ofs_worker *w, uint64_t now_tsc, uint64_t word_tsc)
{
	uint64_t seq = __atomic_load_n(&ofs_dp.ctr_flush_seq, __ATOMIC_ACQUIRE);
	if (unlikely(seq != w->ctr_ack_seq)) {
		ofs_ctr_flush_all(w);
		__atomic_store_n(&w->ctr_ack_seq, seq, __ATOMIC_RELEASE);
	}
	if (now_tsc < w->ctr_next_tsc)
		return;
	if (now_tsc - w->ctr_next_tsc > w->ctr_words * word_tsc)
		w->ctr_next_tsc = now_tsc;  /* the worker was held up: no catch-up burst */
	for (unsigned k = 0; k < 8 && now_tsc >= w->ctr_next_tsc; k++) {
		if (w->ctr_dirty[w->ctr_sweep_word])
			ofs_ctr_flush_word(w, w->ctr_sweep_word);
		w->ctr_next_tsc += word_tsc;
		if (++w->ctr_sweep_word == w->ctr_words) {
			w->ctr_sweep_word = 0;
			if (w->pc_n_dirty)  /* pipecache.h "Counts": every sweep flushes them */
				ofs_pc_flush_all(w);
			__atomic_store_n(&w->ctr_sweeps, w->ctr_sweeps + 1, __ATOMIC_RELEASE);
		}
	}
}

/* Does the entry at p's place hold p's key of p->ix's epoch? Then *f is its flow, after
 * revalidation when the entry is of an older version (a stale one is noted in p->stale). */
static inline bool ck_find_at(struct ofs_worker *w, struct ck_probe *p, int place,
			      struct ofs_flow **f)
{
	struct ofs_cache_line *l = &w->cache[p->idx[place]];
	unsigned n = p->ix->n_words, n1 = RTE_MIN(n, (unsigned)OFS_CK_LINE1_WORDS);
	uint64_t tag = ck_tag(p->ix);
	if (l->tag >> OFS_VERSION_BITS != p->ix->serial)
		return false;
	for (unsigned i = 0; i < n1; i++)
		if (l->x[1 + i] != p->w[i])
			return false;
	if (p->wide) {
		const struct ofs_cache_line *l2 = l + 1;
		if (l2->tag != l->tag)
			return false;  /* its second line was taken by another entry */
		for (unsigned i = OFS_CK_LINE1_WORDS; i < n; i++)
			if (l2->x[i - OFS_CK_LINE1_WORDS] != p->w[i])
				return false;
	}
	if (unlikely(l->tag != tag)) {
		uint32_t ver = (uint32_t)(l->tag & ((1u << OFS_VERSION_BITS) - 1));
		if (!ofs_ck_revalidate(p->ix, ver, ck_flow(l->x[0]),
				   (uint16_t)(l->x[0] >> CK_FLOW_BITS), p->w)) {
			p->stale = place;  /* the caller looks up and overwrites it */
			return false;
		}
		l->tag = tag;
		if (p->wide)
			l[1].tag = tag;
		w->cache_revalidated++;
	}
	*f = ck_flow(l->x[0]);
	p->line = p->idx[place];
	p->fast = n <= OFS_CK_FAST_WORDS ? (uint8_t)(l->x[6] >> CK_FAST_SHIFT) : 0;
	return true;
}

/* The cached flow of p->ix for the probe's key, or false when the cache does not hold it (a
 * stale entry for the key is noted in p->stale, so ck_store replaces it). */
static inline bool ck_find(struct ofs_worker *w, struct ck_probe *p, struct ofs_flow **f)
{
	p->stale = -1;
	return ck_find_at(w, p, 0, f) || ck_find_at(w, p, 1, f);
}

/* Remember f as the answer of p->ix for the probe's key (a miss too): in place of the key's
 * stale entry, else in the first free place, else in one of the two chosen by the worker's
 * miss count (pseudo-random: a fixed choice would make two keys that share both places evict
 * each other every time). */
static inline void ck_store(struct ofs_worker *w, const struct ck_probe *p, struct ofs_flow *f)
{
	if (unlikely((uintptr_t)f >> CK_FLOW_BITS))
		return;  /* not representable next to its priority: not cached */
	int place = p->stale >= 0 ? p->stale
		: !w->cache[p->idx[0]].tag ? 0
		: !w->cache[p->idx[1]].tag ? 1
		: (int)(w->cache_misses & 1);
	uint32_t line = p->idx[place];
	struct ofs_cache_line *l = &w->cache[line];
	unsigned n = p->ix->n_words, n1 = RTE_MIN(n, (unsigned)OFS_CK_LINE1_WORDS);
	uint64_t tag = ck_tag(p->ix);
	if (unlikely(ctr_is_dirty(w, line)))
		ofs_ck_flush_line(w, line);
	if (p->wide && unlikely(ctr_is_dirty(w, line + 1)))
		ofs_ck_flush_line(w, line + 1);
	l->tag = tag;
	l->x[0] = (uint64_t)(uintptr_t)f | (uint64_t)(f ? f->priority : 0) << CK_FLOW_BITS;
	memcpy(&l->x[1], p->w, n1 * sizeof(p->w[0]));
	if (n <= OFS_CK_FAST_WORDS) {
		int out = f && f->fast_out && !f->meter_id && !f->idle_timeout
			? ofs_port_idx(f->fast_out) : -1;
		l->x[6] = out >= 0 ? (uint64_t)(out + 1) << CK_FAST_SHIFT : 0;
	}
	if (p->wide) {
		l[1].tag = tag;
		memcpy(l[1].x, &p->w[OFS_CK_LINE1_WORDS], (n - n1) * sizeof(p->w[0]));
	}
}

/* Flow of p->ix for key: from the cache when it holds the same (epoch, compacted key) and the
 * answer is still valid (ck_find),
 * else from the wildcard lookup, then remembered (a miss too). The caller has entered the
 * table (reader_enter). */
static inline struct ofs_flow *ck_lookup(struct ofs_worker *w, const struct ofs_key *key,
					 struct ck_probe *p)
{
	struct ofs_flow *f;
	if (!p->ix)
		return NULL;
	if (unlikely(!p->cacheable)) {
		w->cache_misses++;
		return ofs_dp.lookup_ops->lookup(p->ix->lx, key);
	}
	if (ck_find(w, p, &f)) {
		w->cache_hits++;
		return f;
	}
	w->cache_misses++;
	f = ofs_dp.lookup_ops->lookup(p->ix->lx, key);
	ck_store(w, p, f);
	return f;
}

#endif
