/* idtable.h -- the id -> object table of ofswitch, one implementation shared by groups and
 * meters (OpenFlow ids are sparse 32-bit numbers chosen by the controller).
 *
 * Goals: a worker finds an object by id in O(1) (a GROUP action, a fast-failover watch_group,
 * a METER instruction: per packet), without locks or allocation; the agent adds, replaces and
 * removes objects while workers read, and lists them in a stable order for multipart replies.
 *
 * Layout: an object is any struct whose FIRST member is its `uint32_t id` (struct ofs_group,
 * struct ofs_meter); the table stores pointers to objects and reads the id through the
 * pointer (C allows reading a struct's first member through a pointer to that member's type).
 *  - index: an open-addressing hash (linear probing) of OFS_IDT_INDEX slots, 4x the capacity,
 *    so probe sequences stay short. A slot is NULL (never used: ends a probe), OFS_IDT_TOMB
 *    (a removed object: probing continues) or an object. Workers read it (ofs_idt_find).
 *  - slots[]: agent-private dense array of capacity OFS_IDT_CAP; an object takes the first
 *    free slot. It decides the order of multipart listings (as the former plain arrays did)
 *    and the "table full" answer.
 *
 * Concurrency: one writer (the agent thread), any number of readers (workers, any lcore).
 * The writer publishes an object with a release store of its index slot; a reader loads slots
 * with acquire. Removing stores OFS_IDT_TOMB; replacing (MODIFY) stores the new object in the
 * old one's slot, so a reader sees the old or the new object, never none. Removed and replaced
 * objects are the caller's to free after a QSBR grace period (ofs_defer_free). Tombstones only
 * accumulate: when used slots (live + tombstones) pass half of the index, the writer rebuilds
 * the index into the second, spare array (static, so a rebuild never allocates or fails) and
 * publishes it with one release store of `index`; the array it replaced becomes the spare and
 * is rewritten only after a grace period (the next rebuild waits for one with
 * rte_rcu_qsbr_synchronize: a rebuild comes at most once per ~OFS_IDT_INDEX/2 removals).
 *
 * Limits: OFS_IDT_CAP objects per table (OFS_MAX_GROUPS == OFS_MAX_METERS == 1024).
 * Byte order: ids are host order (converted from the wire by the caller).
 */
#ifndef OFB_IDTABLE_H
#define OFB_IDTABLE_H
#include <stdbool.h>
#include <stdint.h>

#define OFS_IDT_CAP 1024
#define OFS_IDT_INDEX (4 * OFS_IDT_CAP)  /* power of two */
#define OFS_IDT_TOMB ((void *)1)

struct ofs_idtable {
	void **index;                        /* published: one of arrays[] (acquire/release) */
	/* ---- agent-private ---- */
	void *arrays[2][OFS_IDT_INDEX];
	unsigned active;                     /* arrays[active] == index */
	unsigned n_used;                     /* index slots not NULL (live + tombstones) */
	bool spare_in_use;                   /* the spare array was published: grace first */
	unsigned n;                          /* live objects */
	void *slots[OFS_IDT_CAP];            /* dense, NULL = free */
};

static inline uint32_t ofs_idt_hash(uint32_t id)
{
	return (id * 0x9e3779b1u) >> (32 - __builtin_ctz(OFS_IDT_INDEX));
}

/* The object with this id, or NULL. Any thread; lock-free; the object stays valid until the
 * reader's next quiescent state (workers) or always (the agent, the only writer). */
static inline void *ofs_idt_find(const struct ofs_idtable *t, uint32_t id)
{
	void **ix = __atomic_load_n(&t->index, __ATOMIC_ACQUIRE);
	if (!ix)
		return NULL;
	for (uint32_t h = ofs_idt_hash(id);; h = (h + 1) & (OFS_IDT_INDEX - 1)) {
		void *o = __atomic_load_n(&ix[h], __ATOMIC_ACQUIRE);
		if (!o)
			return NULL;
		if (o != OFS_IDT_TOMB && *(const uint32_t *)o == id)
			return o;
	}
}

/* ---- agent thread only ---- */
/* Add obj (its id must not be in t). 0, or -1 when the table holds OFS_IDT_CAP objects. */
int ofs_idt_add(struct ofs_idtable *t, void *obj);
/* Put obj in old's place (same id): readers see one or the other. */
void ofs_idt_replace(struct ofs_idtable *t, void *old, void *obj);
/* Remove obj (unpublished at return; free it after a grace period). */
void ofs_idt_remove(struct ofs_idtable *t, void *obj);
/* Iterate in slot order: for (i = 0; (o = ofs_idt_next(t, &i)); ) ... */
static inline void *ofs_idt_next(const struct ofs_idtable *t, unsigned *i)
{
	while (*i < OFS_IDT_CAP) {
		void *o = t->slots[(*i)++];
		if (o)
			return o;
	}
	return NULL;
}
#endif
