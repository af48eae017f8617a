/* flowtable.c -- incremental flow tables (see flowtable.h) and the lookup backends (--lookup):
 * "simple" (priority-sorted array, the reference), and with dut/classifier "tuple" (its
 * filtered merged tuples, OFB_CLS_ALGO_OURS), "dtree" (its compiled decision tree with the
 * tuples as delta, rebuilt on a thread, OFB_CLS_ALGO_DTREE) and "trie" (document 003's hybrid
 * H-Trie/SP-Trie, OFB_CLS_ALGO_HYBRID). */
#include <stdlib.h>
#include <string.h>
#include <rte_common.h>
#include <rte_rcu_qsbr.h>
#include <rte_hash_crc.h>
#include "flowtable.h"

/* ---- deferred frees (QSBR tokens, FIFO) ------------------------------------------------- */
/* A flow (ofs_defer_free_flow) has a second stage: after its grace period it waits in sq until
 * every worker swept its cache's pending counts (ofs_counters_swept), since a fast cache
 * entry may still hold counts for it (ofswitch.h, struct ofs_cache_line). */
struct deferred { uint64_t token; void *p; void (*fn)(void *); bool swept; };
struct sweep_wait { uint64_t snap[OFS_MAX_WORKERS]; void *p; void (*fn)(void *); };
static struct deferred *dq;
static size_t dq_head, dq_len, dq_cap;  /* ring of dq_cap entries */
static struct sweep_wait *sq;
static size_t sq_head, sq_len, sq_cap;  /* ring of sq_cap entries */

/* Grow a ring of *cap entries of size sz (head, len) to twice its size; false: no memory. */
static bool ring_grow(void **ring, size_t sz, size_t *head, size_t len, size_t *cap)
{
	size_t nc = *cap ? *cap * 2 : 256;
	char *n = malloc(nc * sz);
	if (!n)
		return false;
	for (size_t i = 0; i < len; i++)
		memcpy(n + i * sz, (char *)*ring + ((*head + i) % *cap) * sz, sz);
	free(*ring);
	*ring = n;
	*head = 0;
	*cap = nc;
	return true;
}

void ofs_reclaim(bool wait)
{
	while (dq_len) {
		struct deferred *d = &dq[dq_head];
		if (ofs_dp.qsbr && rte_rcu_qsbr_check(ofs_dp.qsbr, d->token, wait) != 1)
			break;
		if (d->swept && (sq_len < sq_cap ||
				 ring_grow((void **)&sq, sizeof(*sq), &sq_head, sq_len, &sq_cap))) {
			struct sweep_wait *s = &sq[(sq_head + sq_len++) % sq_cap];
			ofs_counters_snapshot(s->snap);
			s->p = d->p;
			s->fn = d->fn;
		} else {
			if (d->swept)  /* no memory to wait in: make every worker flush now */
				ofs_counters_sync();
			d->fn(d->p);
		}
		dq_head = (dq_head + 1) % dq_cap;
		dq_len--;
	}
	if (sq_len && wait)
		ofs_counters_sync();  /* a full flush counts as a sweep */
	while (sq_len && ofs_counters_swept(sq[sq_head].snap)) {
		sq[sq_head].fn(sq[sq_head].p);
		sq_head = (sq_head + 1) % sq_cap;
		sq_len--;
	}
}

static void defer(void *p, void (*fn)(void *), bool swept)
{
	if (!p)
		return;
	if (!ofs_dp.qsbr) {  /* no workers (unit tests) */
		fn(p);
		return;
	}
	if (dq_len == dq_cap && !ring_grow((void **)&dq, sizeof(*dq), &dq_head, dq_len, &dq_cap)) {
		/* out of memory: wait for the workers instead of queueing */
		rte_rcu_qsbr_synchronize(ofs_dp.qsbr, RTE_QSBR_THRID_INVALID);
		ofs_reclaim(true);
		if (swept)
			ofs_counters_sync();
		fn(p);
		return;
	}
	dq[(dq_head + dq_len) % dq_cap] = (struct deferred){ rte_rcu_qsbr_start(ofs_dp.qsbr), p, fn,
							      swept };
	dq_len++;
}

void ofs_defer_free(void *p, void (*fn)(void *))
{
	defer(p, fn, false);
}

void ofs_defer_free_flow(void *p, void (*fn)(void *))
{
	defer(p, fn, true);
}

/* ---- simple backend: a priority-sorted array, copied and re-sorted at publish ------------- */
struct simple_arr { uint32_t n; struct ofs_flow *flows[]; };
struct simple_lx {
	struct simple_arr *pub;      /* published (RCU); NULL = empty */
	struct simple_arr *next;     /* the next publish's array, reserved ahead (never published
				      * yet): room for next_cap flows, so publish cannot fail */
	uint32_t next_cap;
	struct ofs_flow **w;         /* writer's set, unordered; f->lookup_id = position */
	uint32_t n, cap;
	bool dirty;
};

static int cmp_prio(const void *a, const void *b)
{
	const struct ofs_flow *fa = *(struct ofs_flow *const *)a, *fb = *(struct ofs_flow *const *)b;
	return (int)fb->priority - (int)fa->priority;
}

static void *simple_create(unsigned n_readers)
{
	(void)n_readers;
	return calloc(1, sizeof(struct simple_lx));
}

/* Make sure the next publish has an array for n flows. 0, or -1 when out of memory. */
static int simple_reserve_n(struct simple_lx *lx, uint32_t n)
{
	if (lx->next && lx->next_cap >= n)
		return 0;
	uint32_t nc = RTE_MAX(RTE_MAX(n, lx->cap), 64u);
	struct simple_arr *a = malloc(sizeof(*a) + nc * sizeof(a->flows[0]));
	if (!a)
		return -1;
	free(lx->next);
	lx->next = a;
	lx->next_cap = nc;
	return 0;
}

static int simple_reserve(void *lxp)
{
	struct simple_lx *lx = lxp;
	return simple_reserve_n(lx, lx->n);
}

static int simple_insert(void *lxp, struct ofs_flow *f)
{
	struct simple_lx *lx = lxp;
	if (simple_reserve_n(lx, lx->n + 1))
		return -1;
	if (lx->n == lx->cap) {
		uint32_t nc = lx->cap ? lx->cap * 2 : 64;
		struct ofs_flow **nw = realloc(lx->w, nc * sizeof(*nw));
		if (!nw)
			return -1;
		lx->w = nw;
		lx->cap = nc;
	}
	f->lookup_id = lx->n;
	lx->w[lx->n++] = f;
	lx->dirty = true;
	return 0;
}

static void simple_remove(void *lxp, struct ofs_flow *f)
{
	struct simple_lx *lx = lxp;
	uint32_t i = f->lookup_id;
	lx->w[i] = lx->w[--lx->n];
	lx->w[i]->lookup_id = i;
	lx->dirty = true;
}

static int simple_publish(void *lxp)
{
	struct simple_lx *lx = lxp;
	if (!lx->dirty)
		return 0;
	struct simple_arr *a = NULL;
	if (lx->n) {
		if (simple_reserve_n(lx, lx->n))  /* reserved by prepare/insert: cannot fail */
			return -1;
		a = lx->next;
		lx->next = NULL;
		lx->next_cap = 0;
		a->n = lx->n;
		memcpy(a->flows, lx->w, lx->n * sizeof(a->flows[0]));
		qsort(a->flows, a->n, sizeof(a->flows[0]), cmp_prio);
	}
	struct simple_arr *old = lx->pub;
	__atomic_store_n(&lx->pub, a, __ATOMIC_RELEASE);
	ofs_defer_free(old, free);
	lx->dirty = false;
	simple_reserve_n(lx, lx->n);  /* may fail: then the next prepare or insert does */
	return 0;
}

static struct ofs_flow *simple_lookup(const void *lxp, const struct ofs_key *key)
{
	const struct simple_lx *lx = lxp;
	const struct simple_arr *a = __atomic_load_n(&lx->pub, __ATOMIC_ACQUIRE);
	if (!a)
		return NULL;
	for (uint32_t i = 0; i < a->n; i++)
		if (ofs_key_matches(key, &a->flows[i]->match))
			return a->flows[i];
	return NULL;
}

static void simple_lookup_burst(const void *lx, const struct ofs_key *const keys[], unsigned n,
				struct ofs_flow *out[])
{
	for (unsigned i = 0; i < n; i++)
		out[i] = simple_lookup(lx, keys[i]);
}

static void simple_reader_nop(const void *lx, unsigned reader) { (void)lx; (void)reader; }

static void simple_destroy(void *lxp)
{
	struct simple_lx *lx = lxp;
	if (!lx)
		return;
	free(lx->pub);
	free(lx->next);
	free(lx->w);
	free(lx);
}

const struct ofs_lookup_ops ofs_lookup_simple = {
	.name = "simple", .create = simple_create, .insert = simple_insert,
	.remove = simple_remove, .reserve = simple_reserve, .publish = simple_publish,
	.lookup = simple_lookup,
	.lookup_burst = simple_lookup_burst, .reader_enter = simple_reader_nop,
	.reader_leave = simple_reader_nop, .destroy = simple_destroy,
};

#ifdef OFS_HAVE_CLASSIFIER
/* ---- dut/classifier backend: the first OFS_KEY_CLS_LEN key bytes go to the classifier, kept
 * in a batch between publishes; the rare rules that match beyond them (IPv6 ND fields) go to a
 * simple array searched too. ---- */
#include "classifier.h"

_Static_assert(OFS_KEY_CLS_LEN <= OFB_CLS_MAX_KEY_LEN, "the classifier takes the switch's key");

/* "trie": the hybrid's merge budget per flow table (bytes; the estimate at merge time, the
 * finished trie ran up to ~2x over it, dut/classifier/README.md).  With 128-byte keys the rule
 * arrays alone take ~270 B per flow, so tables above ~120k flows stay a plain H-Trie. */
#define OFS_TRIE_BUDGET (32ull << 20)

struct cls_lx {
	struct ofb_cls *cls;
	struct simple_lx *extra;     /* NULL until the first ND rule */
	uint32_t n_extra;            /* visible or staged ND rules */
	int rid[OFS_MAX_WORKERS];    /* the classifier's reader slot of each worker */
};

static bool mask_tail_zero(const struct ofs_match *m)
{
	const uint8_t *mk = (const uint8_t *)&m->mask;
	for (size_t i = OFS_KEY_CLS_LEN; i < sizeof(m->mask); i++)
		if (mk[i])
			return false;
	return true;
}

static void *cls_create(unsigned n_readers, const struct ofb_cls_params *p)
{
	struct cls_lx *lx = calloc(1, sizeof(*lx));
	if (!lx || n_readers > OFS_MAX_WORKERS || !(lx->cls = ofb_cls_create(p))) {
		free(lx);
		return NULL;
	}
	for (unsigned r = 0; r < n_readers; r++)
		lx->rid[r] = ofb_cls_reader_register(lx->cls);
	ofb_cls_batch_begin(lx->cls);
	return lx;
}

static void *cls_create_tuple(unsigned n_readers)
{
	return cls_create(n_readers, &(struct ofb_cls_params){ .key_len = OFS_KEY_CLS_LEN,
							       .algo = OFB_CLS_ALGO_OURS });
}

uint32_t ofs_cls_dtree_delta;

static void *cls_create_dtree(unsigned n_readers)
{
	return cls_create(n_readers, &(struct ofb_cls_params){
		.key_len = OFS_KEY_CLS_LEN, .algo = OFB_CLS_ALGO_DTREE,
		.tuning = { .dtree_delta = ofs_cls_dtree_delta } });
}

static void *cls_create_trie(unsigned n_readers)
{
	return cls_create(n_readers, &(struct ofb_cls_params){ .key_len = OFS_KEY_CLS_LEN,
							       .algo = OFB_CLS_ALGO_HYBRID,
							       .mem_budget_bytes = OFS_TRIE_BUDGET });
}

static int cls_insert(void *lxp, struct ofs_flow *f)
{
	struct cls_lx *lx = lxp;
	if (!mask_tail_zero(&f->match)) {
		if (!lx->extra && !(lx->extra = simple_create(0)))
			return -1;
		if (simple_insert(lx->extra, f))
			return -1;
		lx->n_extra++;
		return 0;
	}
	struct ofb_cls_rule r = { .priority = f->priority,
				  .value = (const uint8_t *)&f->match.value,
				  .mask = (const uint8_t *)&f->match.mask,
				  .handle = (uint64_t)(uintptr_t)f };
	uint32_t id = ofb_cls_insert(lx->cls, &r);
	if (!id)
		return -1;
	f->lookup_id = id;
	return 0;
}

static void cls_remove(void *lxp, struct ofs_flow *f)
{
	struct cls_lx *lx = lxp;
	if (!mask_tail_zero(&f->match)) {
		simple_remove(lx->extra, f);
		lx->n_extra--;
		return;
	}
	ofb_cls_delete_id(lx->cls, f->lookup_id);
}

static int cls_reserve(void *lxp)
{
	struct cls_lx *lx = lxp;
	return lx->extra ? simple_reserve(lx->extra) : 0;
}

static int cls_publish(void *lxp)
{
	struct cls_lx *lx = lxp;
	if (lx->extra && simple_publish(lx->extra))
		return -1;
	/* -1: a trie could not be rebuilt (no memory); the previous one stays published and
	 * the next commit retries */
	int rc = ofb_cls_batch_commit(lx->cls);
	ofb_cls_batch_begin(lx->cls);
	return rc;
}

static inline struct ofs_flow *cls_with_extra(const struct cls_lx *lx, const struct ofs_key *key,
					      struct ofs_flow *f)
{
	struct ofs_flow *g = simple_lookup(lx->extra, key);
	return g && (!f || g->priority > f->priority) ? g : f;
}

static struct ofs_flow *cls_lookup(const void *lxp, const struct ofs_key *key)
{
	const struct cls_lx *lx = lxp;
	struct ofs_flow *f = (struct ofs_flow *)(uintptr_t)ofb_cls_lookup(lx->cls,
									(const uint8_t *)key);
	return lx->extra ? cls_with_extra(lx, key, f) : f;
}

static void cls_lookup_burst(const void *lxp, const struct ofs_key *const keys[], unsigned n,
			     struct ofs_flow *out[])
{
	const struct cls_lx *lx = lxp;
	uint64_t h[OFS_BURST];
	if (n > OFS_BURST) {
		for (unsigned i = 0; i < n; i++)
			out[i] = cls_lookup(lxp, keys[i]);
		return;
	}
	ofb_cls_lookup_batch(lx->cls, (const uint8_t *const *)keys, n, h, NULL);
	for (unsigned i = 0; i < n; i++) {
		out[i] = (struct ofs_flow *)(uintptr_t)h[i];
		if (lx->extra)
			out[i] = cls_with_extra(lx, keys[i], out[i]);
	}
}

static void cls_reader_enter(const void *lxp, unsigned reader)
{
	const struct cls_lx *lx = lxp;
	ofb_cls_reader_enter(lx->cls, lx->rid[reader]);
}

static void cls_reader_leave(const void *lxp, unsigned reader)
{
	const struct cls_lx *lx = lxp;
	ofb_cls_reader_leave(lx->cls, lx->rid[reader]);
}

static void cls_destroy(void *lxp)
{
	struct cls_lx *lx = lxp;
	if (!lx)
		return;
	ofb_cls_destroy(lx->cls);
	simple_destroy(lx->extra);
	free(lx);
}

/* The classifier backends differ only in their name and how they create the classifier (its
 * algorithm); the rest is shared. */
#define CLS_LOOKUP_SHARED                                                                     \
	.insert = cls_insert, .remove = cls_remove, .reserve = cls_reserve,                    \
	.publish = cls_publish, .lookup = cls_lookup, .lookup_burst = cls_lookup_burst,        \
	.reader_enter = cls_reader_enter, .reader_leave = cls_reader_leave, .destroy = cls_destroy

const struct ofs_lookup_ops ofs_lookup_tuple = { .name = "tuple", .create = cls_create_tuple, CLS_LOOKUP_SHARED };
const struct ofs_lookup_ops ofs_lookup_dtree = { .name = "dtree", .create = cls_create_dtree, CLS_LOOKUP_SHARED };
const struct ofs_lookup_ops ofs_lookup_trie = { .name = "trie", .create = cls_create_trie, CLS_LOOKUP_SHARED };
#endif

static const struct ofs_lookup_ops *const lookup_backends[] = {
#ifdef OFS_HAVE_CLASSIFIER
	&ofs_lookup_tuple, &ofs_lookup_dtree, &ofs_lookup_trie,
#endif
	&ofs_lookup_simple,
};

const struct ofs_lookup_ops *ofs_lookup_find(const char *name)
{
	for (size_t i = 0; i < RTE_DIM(lookup_backends); i++)
		if (strcmp(lookup_backends[i]->name, name) == 0)
			return lookup_backends[i];
	return NULL;
}

/* ---- tables ------------------------------------------------------------------------------ */
static uint64_t view_serial;  /* epochs (see struct ofs_table_view) */

int ofs_table_prepare(struct ofs_table *tb)
{
	if (!tb->lx) {
		void *lx = ofs_dp.lookup_ops->create(ofs_dp.n_workers ? ofs_dp.n_workers : 1);
		if (!lx)
			return -1;
		tb->lx = lx;
	}
	if (!tb->mask_bits &&
	    !(tb->mask_bits = calloc(OFS_KEY_WORDS * 64, sizeof(tb->mask_bits[0]))))
		return -1;
	if (!tb->spare && !(tb->spare = calloc(1, sizeof(*tb->spare))))
		return -1;
	if (!tb->pend && !(tb->pend = calloc(OFS_VIEW_LOG, sizeof(*tb->pend))))
		return -1;
	if (!tb->spare_grow && !(tb->spare_grow = malloc(sizeof(*tb->spare_grow))))
		return -1;
	/* the lookup structure's publish must not fail either */
	return ofs_dp.lookup_ops->reserve ? ofs_dp.lookup_ops->reserve(tb->lx) : 0;
}

/* Count f's mask bits in (delta +1) or out (-1) of the table's union. */
static void count_mask(struct ofs_table *tb, const struct ofs_flow *f, int delta)
{
	const uint64_t *mk = (const uint64_t *)&f->match.mask;
	for (unsigned k = 0; k < OFS_KEY_WORDS; k++) {
		for (uint64_t m = mk[k]; m; m &= m - 1) {
			unsigned b = (unsigned)__builtin_ctzll(m);
			uint32_t *c = &tb->mask_bits[k * 64 + b];
			if (delta > 0 ? (*c)++ == 0 : --(*c) == 0) {
				tb->umask[k] ^= 1ull << b;
				tb->umask_changed = true;
			}
		}
	}
}

/* Record a staged change for the next view's log (flowtable.h, struct ofs_table_view): an
 * added flow as its value and mask on the union's words, a removed one as its address. */
static void record_change(struct ofs_table *tb, const struct ofs_flow *f, bool added)
{
	if (tb->n_pend >= OFS_VIEW_LOG || tb->umask_changed) {
		tb->n_pend = OFS_VIEW_LOG + 1;  /* too many (or a new epoch anyway) */
		return;
	}
	struct ofs_change *c = &tb->pend[tb->n_pend++];
	memset(c, 0, sizeof(*c));
	c->added = added;
	if (!added) {
		c->removed = f;
		return;
	}
	c->priority = f->priority;
	const uint64_t *v = (const uint64_t *)&f->match.value, *m = (const uint64_t *)&f->match.mask;
	unsigned j = 0;
	for (unsigned k = 0; k < OFS_KEY_WORDS; k++) {
		if (!tb->umask[k])
			continue;
		if (j == OFS_CK_WORDS) {  /* uncacheable table: no log */
			tb->n_pend = OFS_VIEW_LOG + 1;
			return;
		}
		c->v[j] = v[k] & m[k];
		c->m[j] = m[k];
		j++;
	}
}

int ofs_table_stage_add(struct ofs_table *tb, struct ofs_flow *f)
{
	if (ofs_dp.lookup_ops->insert(tb->lx, f))
		return -1;
	count_mask(tb, f, +1);
	record_change(tb, f, true);
	tb->dirty = true;
	return 0;
}

void ofs_table_stage_remove(struct ofs_table *tb, struct ofs_flow *f)
{
	ofs_dp.lookup_ops->remove(tb->lx, f);
	count_mask(tb, f, -1);
	record_change(tb, f, false);
	tb->dirty = true;
}

/* Fill v as tb's next view: the same epoch with one more version and the staged changes in its
 * log when the union stayed and few flows changed, else a new epoch. */
static void view_fill(struct ofs_table_view *v, struct ofs_table *tb)
{
	const struct ofs_table_view *old = tb->view;
	if (old && old->cacheable && !tb->umask_changed && tb->n_pend <= OFS_VIEW_LOG &&
	    old->version + 1 < (1u << OFS_VERSION_BITS)) {
		/* keep whole versions of the old log, newest first, while they fit */
		uint32_t from = 0, base = old->log_base;
		while (old->n_log - from + tb->n_pend > OFS_VIEW_LOG) {
			base = old->log[from].version;
			while (from < old->n_log && old->log[from].version == base)
				from++;
		}
		memcpy(v, old, offsetof(struct ofs_table_view, log));
		v->version = old->version + 1;
		v->log_base = base;
		v->n_log = 0;
		for (uint32_t i = from; i < old->n_log; i++)
			v->log[v->n_log++] = old->log[i];
		for (uint32_t i = 0; i < tb->n_pend; i++) {
			v->log[v->n_log] = tb->pend[i];
			v->log[v->n_log++].version = v->version;
		}
	} else {
		memset(v, 0, offsetof(struct ofs_table_view, log));
		v->serial = ++view_serial;
		v->lx = tb->lx;
		for (unsigned k = 0; k < OFS_KEY_WORDS; k++)
			if (tb->umask[k]) {
				v->word[v->n_words] = (uint8_t)k;
				v->mask[v->n_words] = tb->umask[k];
				v->n_words++;
			}
		v->cacheable = v->n_words <= OFS_CK_WORDS;
	}
	tb->n_pend = 0;
	tb->umask_changed = false;
}

/* Does tb's union reach beyond the published view's? */
static bool union_grows(const struct ofs_table *tb)
{
	const struct ofs_table_view *v = tb->view;
	uint64_t pub[OFS_KEY_WORDS] = { 0 };
	if (!v)
		return false;  /* no worker can hold an older view of this table */
	for (unsigned i = 0; i < v->n_words; i++)
		pub[v->word[i]] = v->mask[i];
	for (unsigned k = 0; k < OFS_KEY_WORDS; k++)
		if (tb->umask[k] & ~pub[k])
			return true;
	return false;
}

static void publish_view(struct ofs_table *tb, struct ofs_table_view *v)
{
	struct ofs_table_view *old = tb->view;
	__atomic_store_n(&tb->view, v, __ATOMIC_RELEASE);
	/* after the view: a worker that reads the new generation sees it (pipecache.h) */
	__atomic_store_n(&ofs_dp.pipe_gen, ofs_dp.pipe_gen + 1, __ATOMIC_RELEASE);
	ofs_defer_free(old, free);
}

bool ofs_tables_commit(void)
{
	bool grows[OFS_N_TABLES], any_grows = false, all = true;
	for (int t = 0; t < OFS_N_TABLES; t++) {
		struct ofs_table *tb = &ofs_dp.tables[t];
		grows[t] = tb->dirty && ofs_dp.qsbr && union_grows(tb);
		if (!grows[t])
			continue;
		/* step 4 of flowtable.h: an uncacheable view first, then a grace period */
		struct ofs_table_view *nc = tb->spare_grow;  /* reserved by prepare */
		tb->spare_grow = NULL;
		if (!nc) {  /* cannot happen (a dirty table was prepared): retried next commit */
			grows[t] = false;
			continue;
		}
		memcpy(nc, tb->view, offsetof(struct ofs_table_view, log));
		nc->serial = ++view_serial;
		nc->version = nc->log_base = nc->n_log = 0;
		nc->cacheable = false;
		publish_view(tb, nc);
		any_grows = true;
	}
	if (any_grows)
		rte_rcu_qsbr_synchronize(ofs_dp.qsbr, RTE_QSBR_THRID_INVALID);
	for (int t = 0; t < OFS_N_TABLES; t++) {
		struct ofs_table *tb = &ofs_dp.tables[t];
		if (!tb->dirty)
			continue;
		if ((ofs_dp.qsbr && !grows[t] && union_grows(tb)) || ofs_dp.lookup_ops->publish(tb->lx)) {
			all = false;  /* out of memory: the old view stays, retried next commit */
			continue;
		}
		struct ofs_table_view *v = tb->spare;
		view_fill(v, tb);
		publish_view(tb, v);
		tb->spare = calloc(1, sizeof(*tb->spare));  /* NULL: the next prepare retries */
		tb->dirty = false;
	}
	ofs_reclaim(false);
	return all;
}

/* ---- a table's flows: list, (priority, match) hash (flowtable.h) ----------------------- */
bool ofs_match_equal(const struct ofs_match *a, const struct ofs_match *b)
{
	return memcmp(&a->value, &b->value, sizeof(a->value)) == 0 &&
	       memcmp(&a->mask, &b->mask, sizeof(a->mask)) == 0;
}

static uint32_t flow_hash(uint16_t priority, const struct ofs_match *m)
{
	uint32_t h = rte_hash_crc(&m->value, sizeof(m->value), priority);
	return rte_hash_crc(&m->mask, sizeof(m->mask), h);
}

/* Room in tb's hash for `more` flows. -1 only when there is no hash at all and none can be
 * had; a hash that cannot grow keeps working with longer chains. */
static int htab_reserve(struct ofs_table *tb, uint32_t more)
{
	if (tb->n_flows + more <= tb->hsize)
		return 0;
	uint32_t ns = tb->hsize ? tb->hsize : 1024;
	while (ns < tb->n_flows + more)
		ns *= 2;
	struct ofs_flow **nt = calloc(ns, sizeof(*nt));
	if (!nt)
		return tb->hsize ? 0 : -1;
	for (uint32_t i = 0; i < tb->hsize; i++) {
		struct ofs_flow *g = tb->htab[i];
		while (g) {
			struct ofs_flow *nx = g->hnext;
			g->hnext = nt[g->hash & (ns - 1)];
			nt[g->hash & (ns - 1)] = g;
			g = nx;
		}
	}
	free(tb->htab);
	tb->htab = nt;
	tb->hsize = ns;
	return 0;
}

static void htab_insert(struct ofs_table *tb, struct ofs_flow *f)
{
	f->hash = flow_hash(f->priority, &f->match);
	f->hnext = tb->htab[f->hash & (tb->hsize - 1)];
	tb->htab[f->hash & (tb->hsize - 1)] = f;
}

static void htab_remove(struct ofs_table *tb, struct ofs_flow *f)
{
	if (!tb->hsize)
		return;
	for (struct ofs_flow **pp = &tb->htab[f->hash & (tb->hsize - 1)]; *pp; pp = &(*pp)->hnext)
		if (*pp == f) {
			*pp = f->hnext;
			return;
		}
}

struct ofs_flow *ofs_table_find_exact(struct ofs_table *tb, uint16_t priority,
				     const struct ofs_match *m)
{
	if (!tb->hsize)
		return NULL;
	uint32_t h = flow_hash(priority, m);
	for (struct ofs_flow *g = tb->htab[h & (tb->hsize - 1)]; g; g = g->hnext)
		if (g->hash == h && g->priority == priority && ofs_match_equal(&g->match, m))
			return g;
	return NULL;
}

/* The table's flow list, doubly linked (O(1) unlink). */
static void list_add(struct ofs_table *tb, struct ofs_flow *f)
{
	f->next = tb->flows;
	f->pprev = &tb->flows;
	if (tb->flows)
		tb->flows->pprev = &f->next;
	tb->flows = f;
}

static void list_del(struct ofs_flow *f)
{
	*f->pprev = f->next;
	if (f->next)
		f->next->pprev = f->pprev;
}

int ofs_table_reserve_flow(struct ofs_table *tb, const struct ofs_flow *f)
{
	return htab_reserve(tb, 1) || ofs_table_group_reserve(tb, f) ? -1 : 0;
}

void ofs_table_link(struct ofs_table *tb, struct ofs_flow *f)
{
	list_add(tb, f);
	htab_insert(tb, f);
	ofs_table_group_add(tb, f);
	tb->n_flows++;
}

void ofs_table_unlink(struct ofs_table *tb, struct ofs_flow *f)
{
	list_del(f);
	htab_remove(tb, f);
	ofs_table_group_remove(tb, f);
	ofs_table_stage_remove(tb, f);
	tb->n_flows--;
}

void ofs_table_replace(struct ofs_table *tb, struct ofs_flow *old, struct ofs_flow *c)
{
	/* c takes old's place in the list and the hash */
	c->next = old->next;
	c->pprev = old->pprev;
	*c->pprev = c;
	if (c->next)
		c->next->pprev = &c->next;
	htab_remove(tb, old);
	htab_insert(tb, c);
	ofs_table_group_replace(tb, old, c);
	ofs_table_stage_remove(tb, old);
}

/* ---- mask groups ------------------------------------------------------------------------- */

static uint32_t mask_hash(const struct ofs_key *m)
{
	return rte_hash_crc(m, sizeof(*m), 0x5eed);
}

static int group_find(const struct ofs_table *tb, const struct ofs_key *mask, uint32_t h)
{
	if (!tb->mg_hash_size)
		return -1;
	for (uint32_t i = h & (tb->mg_hash_size - 1);; i = (i + 1) & (tb->mg_hash_size - 1)) {
		uint32_t g = tb->mg_hash[i];
		if (!g)
			return -1;
		const struct ofs_mask_group *mg = &tb->mgroups[g - 1];
		if (mg->hash == h && !memcmp(&mg->mask, mask, sizeof(*mask)))
			return (int)(g - 1);
	}
}

static int group_hash_grow(struct ofs_table *tb)
{
	uint32_t ns = tb->mg_hash_size ? tb->mg_hash_size * 2 : 16;
	uint32_t *nh = calloc(ns, sizeof(*nh));
	if (!nh)
		return -1;
	for (uint32_t g = 0; g < tb->n_mgroups; g++) {
		uint32_t i = tb->mgroups[g].hash & (ns - 1);
		while (nh[i])
			i = (i + 1) & (ns - 1);
		nh[i] = g + 1;
	}
	free(tb->mg_hash);
	tb->mg_hash = nh;
	tb->mg_hash_size = ns;
	return 0;
}

int ofs_table_group_reserve(struct ofs_table *tb, const struct ofs_flow *f)
{
	const struct ofs_key *mask = &f->match.mask;
	uint32_t h = mask_hash(mask);
	int g = group_find(tb, mask, h);
	if (g < 0) {
		if ((tb->n_mgroups + 1) * 2 > tb->mg_hash_size && group_hash_grow(tb))
			return -1;
		if (tb->n_mgroups == tb->cap_mgroups) {
			uint32_t nc = tb->cap_mgroups ? tb->cap_mgroups * 2 : 8;
			struct ofs_mask_group *ng = realloc(tb->mgroups, nc * sizeof(*ng));
			if (!ng)
				return -1;
			tb->mgroups = ng;
			tb->cap_mgroups = nc;
		}
		struct ofs_mask_group *mg = &tb->mgroups[tb->n_mgroups];
		memset(mg, 0, sizeof(*mg));
		mg->mask = *mask;
		mg->hash = h;
		const uint64_t *mw = (const uint64_t *)mask;
		for (unsigned k = 0; k < OFS_KEY_WORDS; k++)
			if (mw[k])
				mg->word[mg->n_words++] = (uint8_t)k;
		g = (int)tb->n_mgroups++;
		uint32_t i = h & (tb->mg_hash_size - 1);
		while (tb->mg_hash[i])
			i = (i + 1) & (tb->mg_hash_size - 1);
		tb->mg_hash[i] = (uint32_t)g + 1;
	}
	struct ofs_mask_group *mg = &tb->mgroups[g];
	if (mg->n == mg->cap) {
		uint32_t nc = mg->cap ? mg->cap * 2 : 16;
		struct ofs_flow **nf = realloc(mg->flows, nc * sizeof(*nf));
		if (!nf)
			return -1;
		mg->flows = nf;
		uint64_t *nv = realloc(mg->vals, (size_t)nc * (mg->n_words ? mg->n_words : 1) *
					       sizeof(*nv));
		if (!nv)
			return -1;  /* flows grew; harmless */
		mg->vals = nv;
		mg->cap = nc;
	}
	return 0;
}

void ofs_table_group_add(struct ofs_table *tb, struct ofs_flow *f)
{
	struct ofs_mask_group *mg = &tb->mgroups[group_find(tb, &f->match.mask,
							    mask_hash(&f->match.mask))];
	const uint64_t *v = (const uint64_t *)&f->match.value;
	f->mgroup = (uint32_t)(mg - tb->mgroups);
	f->mpos = mg->n;
	mg->flows[mg->n] = f;
	for (unsigned j = 0; j < mg->n_words; j++)
		mg->vals[(size_t)mg->n * mg->n_words + j] = v[mg->word[j]];
	mg->n++;
}

void ofs_table_group_remove(struct ofs_table *tb, struct ofs_flow *f)
{
	struct ofs_mask_group *mg = &tb->mgroups[f->mgroup];
	uint32_t i = f->mpos, last = --mg->n;
	if (i != last) {
		mg->flows[i] = mg->flows[last];
		mg->flows[i]->mpos = i;
		memcpy(&mg->vals[(size_t)i * mg->n_words], &mg->vals[(size_t)last * mg->n_words],
		       mg->n_words * sizeof(uint64_t));
	}
}

void ofs_table_group_replace(struct ofs_table *tb, struct ofs_flow *old, struct ofs_flow *f)
{
	f->mgroup = old->mgroup;
	f->mpos = old->mpos;
	tb->mgroups[f->mgroup].flows[f->mpos] = f;  /* same match: same packed value */
}

int ofs_table_covered(struct ofs_table *tb, const struct ofs_match *r, struct ofs_flow ***out)
{
	const uint64_t *rm = (const uint64_t *)&r->mask, *rv = (const uint64_t *)&r->value;
	size_t n = 0, cap = 16;
	struct ofs_flow **res = malloc(cap * sizeof(*res));
	if (!res)
		return -1;
	for (uint32_t g = 0; g < tb->n_mgroups; g++) {
		const struct ofs_mask_group *mg = &tb->mgroups[g];
		const uint64_t *gm = (const uint64_t *)&mg->mask;
		bool contains = true;
		for (unsigned k = 0; k < OFS_KEY_WORDS && contains; k++)
			contains = (gm[k] & rm[k]) == rm[k];
		if (!contains || !mg->n)
			continue;
		/* the request's words inside this group's (its others are zero: contained) */
		uint64_t qm[OFS_KEY_WORDS], qv[OFS_KEY_WORDS];
		unsigned nq = 0, pos[OFS_KEY_WORDS];
		for (unsigned j = 0; j < mg->n_words; j++)
			if (rm[mg->word[j]]) {
				qm[nq] = rm[mg->word[j]];
				qv[nq] = rv[mg->word[j]];
				pos[nq++] = j;
			}
		for (uint32_t i = 0; i < mg->n; i++) {
			const uint64_t *v = &mg->vals[(size_t)i * mg->n_words];
			unsigned q = 0;
			while (q < nq && (v[pos[q]] & qm[q]) == qv[q])
				q++;
			if (q < nq)
				continue;
			if (n == cap) {
				struct ofs_flow **nr = realloc(res, 2 * cap * sizeof(*nr));
				if (!nr) {
					free(res);
					return -1;
				}
				res = nr;
				cap *= 2;
			}
			res[n++] = mg->flows[i];
		}
	}
	*out = res;
	return (int)n;
}

bool ofs_table_overlaps(const struct ofs_table *tb, const struct ofs_match *m, uint16_t priority)
{
	const uint64_t *fm = (const uint64_t *)&m->mask, *fv = (const uint64_t *)&m->value;
	for (uint32_t g = 0; g < tb->n_mgroups; g++) {
		const struct ofs_mask_group *mg = &tb->mgroups[g];
		uint64_t qm[OFS_KEY_WORDS], qv[OFS_KEY_WORDS];
		unsigned nq = 0, pos[OFS_KEY_WORDS];
		/* the words both masks care about: the flows of this group overlap m unless they
		 * differ there */
		for (unsigned j = 0; j < mg->n_words; j++) {
			unsigned k = mg->word[j];
			uint64_t both = ((const uint64_t *)&mg->mask)[k] & fm[k];
			if (both) {
				qm[nq] = both;
				qv[nq] = fv[k] & both;
				pos[nq++] = j;
			}
		}
		for (uint32_t i = 0; i < mg->n; i++) {
			const uint64_t *v = &mg->vals[(size_t)i * mg->n_words];
			unsigned q = 0;
			while (q < nq && (v[pos[q]] & qm[q]) == qv[q])
				q++;
			if (q < nq)
				continue;
			const struct ofs_flow *f = mg->flows[i];
			if (f->priority == priority &&
			    memcmp(&f->match, m, offsetof(struct ofs_match, fields)) != 0)
				return true;
		}
	}
	return false;
}

void *ofs_lookup_build(const struct ofs_lookup_ops *ops, struct ofs_flow *const *flows,
		       uint32_t n)
{
	/* the flows may be live in a table: keep their lookup_id */
	uint32_t *ids = malloc((n + 1) * sizeof(*ids));
	void *lx = ids ? ops->create(1) : NULL;
	if (!lx) {
		free(ids);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		ids[i] = flows[i]->lookup_id;
	int bad = 0;
	for (uint32_t i = 0; i < n && !bad; i++)
		bad = ops->insert(lx, flows[i]);
	if (!bad)
		bad = ops->publish(lx);
	for (uint32_t i = 0; i < n; i++)
		flows[i]->lookup_id = ids[i];
	free(ids);
	if (bad) {
		ops->destroy(lx);
		return NULL;
	}
	return lx;
}
