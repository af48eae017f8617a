/* idtable.c -- the id -> object table shared by groups and meters (see idtable.h). */
#include <string.h>
#include "ofswitch.h"

static void **index_array(struct ofs_idtable *t)
{
	if (!t->index) {  /* first use: arrays[0] (static memory, zeroed) */
		t->active = 0;
		__atomic_store_n(&t->index, t->arrays[0], __ATOMIC_RELEASE);
	}
	return t->index;
}

static void index_put(void **ix, void *obj)
{
	uint32_t h = ofs_idt_hash(*(const uint32_t *)obj);
	while (ix[h] && ix[h] != OFS_IDT_TOMB)
		h = (h + 1) & (OFS_IDT_INDEX - 1);
	__atomic_store_n(&ix[h], obj, __ATOMIC_RELEASE);
}

/* The index slot holding obj (present). */
static uint32_t index_slot_of(void **ix, const void *obj)
{
	uint32_t h = ofs_idt_hash(*(const uint32_t *)obj);
	while (ix[h] != obj)
		h = (h + 1) & (OFS_IDT_INDEX - 1);
	return h;
}

/* Too many tombstones: rebuild the live objects into the spare array and publish it. */
static void index_rebuild(struct ofs_idtable *t)
{
	if (t->spare_in_use && ofs_dp.qsbr)
		rte_rcu_qsbr_synchronize(ofs_dp.qsbr, RTE_QSBR_THRID_INVALID);
	unsigned spare = t->active ^ 1;
	void **ix = t->arrays[spare];
	memset(ix, 0, sizeof(t->arrays[spare]));
	for (unsigned i = 0; i < OFS_IDT_CAP; i++)
		if (t->slots[i])
			index_put(ix, t->slots[i]);
	__atomic_store_n(&t->index, ix, __ATOMIC_RELEASE);
	t->active = spare;
	t->spare_in_use = true;
	t->n_used = t->n;
}

int ofs_idt_add(struct ofs_idtable *t, void *obj)
{
	if (t->n == OFS_IDT_CAP)
		return -1;
	void **ix = index_array(t);
	if (t->n_used + 1 > OFS_IDT_INDEX / 2) {
		index_rebuild(t);
		ix = t->index;
	}
	unsigned i = 0;
	while (t->slots[i])
		i++;
	t->slots[i] = obj;
	t->n++;
	uint32_t h = ofs_idt_hash(*(const uint32_t *)obj);
	while (ix[h] && ix[h] != OFS_IDT_TOMB)
		h = (h + 1) & (OFS_IDT_INDEX - 1);
	if (!ix[h])
		t->n_used++;
	__atomic_store_n(&ix[h], obj, __ATOMIC_RELEASE);
	return 0;
}

void ofs_idt_replace(struct ofs_idtable *t, void *old, void *obj)
{
	void **ix = index_array(t);
	__atomic_store_n(&ix[index_slot_of(ix, old)], obj, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < OFS_IDT_CAP; i++)
		if (t->slots[i] == old) {
			t->slots[i] = obj;
			break;
		}
}

void ofs_idt_remove(struct ofs_idtable *t, void *obj)
{
	void **ix = index_array(t);
	__atomic_store_n(&ix[index_slot_of(ix, obj)], OFS_IDT_TOMB, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < OFS_IDT_CAP; i++)
		if (t->slots[i] == obj) {
			t->slots[i] = NULL;
			break;
		}
	t->n--;
}
