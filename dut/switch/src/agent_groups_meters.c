/* agent_groups_meters.c -- GROUP_MOD and METER_MOD (OpenFlow 1.3.5 7.3.4.2, 7.3.4.4).
 *
 * Groups and meters are objects in the shared id table (idtable.h: O(1) lookup by id for the
 * workers, stable listing order for multipart replies). Both follow one life cycle, written
 * once here (struct obj_kind):
 *  - ADD / MODIFY: the whole message is parsed and checked into a new object first; only a
 *    valid object is published (ofs_idt_add, or ofs_idt_replace for MODIFY: a worker sees the
 *    old or the new object, never none). A MODIFY keeps the object's creation time.
 *    A group whose buckets would chain back to itself, directly or through other groups, is
 *    refused with LOOP (6.5); chains are otherwise allowed (the datapath stops at depth 8).
 *  - DELETE (one id, or ALL): the object is unpublished, every flow that refers to it is
 *    removed (FLOW_REMOVED with reason GROUP_DELETE / METER_DELETE where the flow asked).
 *  - A replaced or removed object is freed after a QSBR grace period (ofs_defer_free), since
 *    a worker may still be running its buckets or bands.
 * Invariants: a group's buckets and a meter's bands point into its own raw copy of the
 * message body (raw_buckets / raw_bands, returned as-is by GROUP_DESC / METER_CONFIG).
 * Limits: OFS_MAX_GROUPS groups of OFS_MAX_BUCKETS buckets; OFS_MAX_METERS meters of
 * OFS_MAX_BANDS bands; a full table answers OUT_OF_GROUPS / OUT_OF_METERS.
 * Concurrency: agent thread only (workers read through ofs_group_find / ofs_meter_find).
 * Byte order: wire order in messages and raw copies, host order in struct fields.
 */
#include <stdlib.h>
#include <string.h>
#include "agent_internal.h"
#include "flowtable.h"

/* ---- the life cycle shared by groups and meters ------------------------------------------- */
struct obj_kind {
	struct ofs_idtable *table;
	uint32_t all_id;                          /* OFPG_ALL / OFPM_ALL */
	bool (*flow_uses)(struct ofs_flow *f, void *id);
	uint8_t removed_reason;                   /* FLOW_REMOVED reason of its flows */
	void (*free_obj)(void *obj);
	uint32_t err_full;                        /* the table holds OFS_IDT_CAP objects */
};

/* DELETE of one id or of all: unpublish, remove the flows using it, free after a grace. */
static void obj_delete(struct obuf *out, const struct obj_kind *k, uint32_t id)
{
	for (unsigned i = 0;;) {
		void *o = id == k->all_id ? ofs_idt_next(k->table, &i) : ofs_idt_find(k->table, id);
		if (!o)
			return;
		uint32_t oid = *(const uint32_t *)o;
		ofs_idt_remove(k->table, o);
		ofs_remove_flows(out, OFPTT_ALL, k->flow_uses, &oid, k->removed_reason);
		ofs_defer_free(o, k->free_obj);
		if (id != k->all_id)
			return;
	}
}

/* Publish a checked object: in place of old (MODIFY) or new (ADD). 0 or the error to send. */
static uint32_t obj_install(const struct obj_kind *k, void *old, void *obj)
{
	if (old) {
		ofs_idt_replace(k->table, old, obj);
		ofs_defer_free(old, k->free_obj);
		return 0;
	}
	return ofs_idt_add(k->table, obj) ? k->err_full : 0;
}

/* ---- groups ------------------------------------------------------------------------------- */
static void free_group(void *p)
{
	struct ofs_group *g = p;
	if (g)
		free(g->raw_buckets);
	free(g);
}

static bool flow_uses_group(struct ofs_flow *f, void *arg)
{
	uint32_t g = *(uint32_t *)arg;
	return ofs_flow_outputs(f, OFPP_ANY, g) && g != OFPG_ANY;
}

static const struct obj_kind group_kind = {
	&ofs_dp.groups, OFPG_ALL, flow_uses_group, OFPRR_GROUP_DELETE, free_group,
	OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_OUT_OF_GROUPS),
};

/* Parse and check the buckets of a group of this id and type into g. 0 or the error. */
static uint32_t group_parse_buckets(struct ofs_group *g, uint32_t id, uint8_t type)
{
	size_t o = 0;
	while (o < g->raw_len) {
		const uint8_t *b = g->raw_buckets + o;
		/* ofp_bucket: len 2, weight 2, watch_port 4, watch_group 4, pad 4; actions */
		if (g->raw_len - o < 16 || rd16(b) < 16 || o + rd16(b) > g->raw_len)
			return OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
		if (g->n_buckets == OFS_MAX_BUCKETS)
			return OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
		struct ofs_bucket *bk = &g->buckets[g->n_buckets++];
		bk->weight = rd16(b + 2);
		bk->watch_port = rd32(b + 4);
		bk->watch_group = rd32(b + 8);
		bk->actions = b + 16;
		bk->actions_len = rd16(b) - 16;
		uint32_t e = ofs_actions_check(bk->actions, bk->actions_len, false);
		if (e)
			return e;
		if (type == OFPGT_FF && bk->watch_port == OFPP_ANY && bk->watch_group == OFPG_ANY)
			return OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_WATCH);
		if (type != OFPGT_SELECT && bk->weight != 0)
			return OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
		if (ofs_actions_output_to(bk->actions, bk->actions_len, OFPP_ANY, id))
			return OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_LOOP);
		o += rd16(b);
	}
	if (type == OFPGT_INDIRECT && g->n_buckets != 1)
		return OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
	return 0;
}

/* The group ids an action list forwards to, appended to ids[*n] (up to cap). */
static void group_targets(const uint8_t *a, uint16_t len, uint32_t *ids, unsigned *n,
			  unsigned cap)
{
	for (size_t o = 0; o + 8 <= len && rd16(a + o + 2) >= 8; o += rd16(a + o + 2))
		if (rd16(a + o) == OFPAT_GROUP && *n < cap)
			ids[(*n)++] = rd32(a + o + 4);
}

/* 6.5: would g (replacing the group of its id) reach itself through group actions, its own
 * buckets' or those of the groups they chain to (the table as it is)? A walk over the chain
 * graph from g's targets; each group is expanded once. */
static bool group_loops(const struct ofs_group *g)
{
	static uint32_t todo[4 * OFS_MAX_GROUPS], seen[OFS_MAX_GROUPS];
	unsigned n_todo = 0, n_seen = 0;
	for (int b = 0; b < g->n_buckets; b++)
		group_targets(g->buckets[b].actions, g->buckets[b].actions_len, todo, &n_todo,
			      RTE_DIM(todo));
	while (n_todo) {
		uint32_t id = todo[--n_todo];
		if (id == g->id)
			return true;
		bool done = false;
		for (unsigned i = 0; i < n_seen && !done; i++)
			done = seen[i] == id;
		const struct ofs_group *h = done ? NULL : ofs_group_find(id);
		if (!h)
			continue;
		if (n_seen < RTE_DIM(seen))
			seen[n_seen++] = id;
		for (int b = 0; b < h->n_buckets; b++)
			group_targets(h->buckets[b].actions, h->buckets[b].actions_len, todo,
				      &n_todo, RTE_DIM(todo));
	}
	return false;
}

int ofs_on_group_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_group_mod: header 8, command 2, type 1, pad 1, group_id 4 = 16; buckets */
	if (len < 16) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return 0;
	}
	uint16_t cmd = rd16(msg + 8);
	uint8_t type = msg[10];
	uint32_t id = rd32(msg + 12);
	if (cmd == OFPGC_DELETE) {
		obj_delete(out, &group_kind, id);
		return 0;
	}
	struct ofs_group *old = ofs_group_find(id);
	uint32_t e = 0;
	if (cmd != OFPGC_ADD && cmd != OFPGC_MODIFY)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_COMMAND);
	else if (id > OFPG_MAX)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_INVALID_GROUP);
	else if (type > OFPGT_FF)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_TYPE);
	else if (cmd == OFPGC_ADD && old)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_GROUP_EXISTS);
	else if (cmd == OFPGC_MODIFY && !old)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_UNKNOWN_GROUP);
	struct ofs_group *g = NULL;
	if (!e) {
		g = calloc(1, sizeof(*g));
		if (g) {
			g->raw_len = (uint16_t)(len - 16);
			g->raw_buckets = malloc(g->raw_len + 1u);
		}
		if (!g || !g->raw_buckets) {
			e = group_kind.err_full;  /* out of memory (agent_internal.h) */
		} else {
			g->id = id;
			g->type = type;
			g->created_ns = old ? old->created_ns : ofs_now_ns();
			memcpy(g->raw_buckets, msg + 16, g->raw_len);
			e = group_parse_buckets(g, id, type);
			/* its OFPMP_GROUP_DESC entry (8 bytes, the buckets) must fit one reply
			 * (agent_internal.h); at most OFS_MAX_BUCKETS buckets, so what makes it that
			 * long is actions: BAD_ACTION/TOO_MANY, as for a FLOW_MOD (agent_flows.c) */
			if (!e && 8u + g->raw_len > OFS_MP_ENTRY_MAX)
				e = OFS_ERR(OFPET_BAD_ACTION, OFPBAC_TOO_MANY);
			if (!e && group_loops(g))
				e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_LOOP);
		}
	}
	if (!e)
		e = obj_install(&group_kind, old, g);
	if (e) {
		ofs_send_error(out, msg, len, e);
		free_group(g);
	}
	return 0;
}

/* ---- meters ------------------------------------------------------------------------------- */
#define OFS_MAX_PREC_LEVEL 63  /* a 6-bit DSCP has no precedence level above 63 */
#define OFS_METER_FLAGS_ALL (OFPMF_KBPS | OFPMF_PKTPS | OFPMF_BURST | OFPMF_STATS)

static void free_meter(void *p)
{
	struct ofs_meter *m = p;
	if (m)
		free(m->raw_bands);
	free(m);
}

static bool flow_uses_meter(struct ofs_flow *f, void *arg)
{
	return f->meter_id == *(uint32_t *)arg;
}

static const struct obj_kind meter_kind = {
	&ofs_dp.meters, OFPM_ALL, flow_uses_meter, OFPRR_METER_DELETE, free_meter,
	OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_OUT_OF_METERS),
};

/* Parse and check the bands of meter m (flags set) and size their token buckets. */
static uint32_t meter_parse_bands(struct ofs_meter *m)
{
	uint16_t flags = m->flags;
	size_t o = 0;
	while (o < m->raw_len) {
		const uint8_t *b = m->raw_bands + o;
		/* ofp_meter_band_header: type 2, len 2, rate 4, burst_size 4 (+4) */
		if (m->raw_len - o < 16 || rd16(b + 2) < 16 || o + rd16(b + 2) > m->raw_len)
			return OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND);
		if (m->n_bands == OFS_MAX_BANDS)
			return OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_OUT_OF_BANDS);
		struct ofs_band *bd = &m->bands[m->n_bands++];
		bd->type = rd16(b);
		bd->rate = rd32(b + 4);
		bd->burst = rd32(b + 8);
		bd->prec_level = b[12];
		if (bd->type != OFPMBT_DROP && bd->type != OFPMBT_DSCP_REMARK)
			return OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND);
		if (bd->type == OFPMBT_DSCP_REMARK && bd->prec_level > OFS_MAX_PREC_LEVEL)
			return OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND_VALUE);
		if (bd->rate == 0)
			return OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_RATE);
		/* bucket depth: the burst when given, else 500 ms worth of the rate, so a sender
		 * whose packets come in lumps (timer ticks of a busy host) still gets its long-term
		 * rate; the extra it allows is one bucket, once */
		double per_s = (flags & OFPMF_PKTPS) ? bd->rate : bd->rate * 1000.0 / 8;
		double depth = (flags & OFPMF_BURST) && bd->burst
			? ((flags & OFPMF_PKTPS) ? bd->burst : bd->burst * 1000.0 / 8)
			: per_s / 2;
		double min_depth = (flags & OFPMF_PKTPS) ? 1 : 1600;
		bd->depth = depth < min_depth ? min_depth : depth;
		bd->tokens = bd->depth;
		o += rd16(b + 2);
	}
	if (m->n_bands == 0) /* 5.7: a meter is its bands; none is no meter */
		return OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND);
	return 0;
}

int ofs_on_meter_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_meter_mod: header 8, command 2, flags 2, meter_id 4 = 16; bands */
	if (len < 16) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return 0;
	}
	uint16_t cmd = rd16(msg + 8), flags = rd16(msg + 10);
	uint32_t id = rd32(msg + 12);
	if (cmd == OFPMC_DELETE) {
		obj_delete(out, &meter_kind, id);
		return 0;
	}
	struct ofs_meter *old = ofs_meter_find(id);
	uint32_t e = 0;
	if (cmd != OFPMC_ADD && cmd != OFPMC_MODIFY)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_COMMAND);
	else if (id == 0 || id > OFPM_MAX)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_INVALID_METER);
	else if ((flags & ~OFS_METER_FLAGS_ALL) || !(flags & (OFPMF_KBPS | OFPMF_PKTPS)) ||
		 (flags & (OFPMF_KBPS | OFPMF_PKTPS)) == (OFPMF_KBPS | OFPMF_PKTPS))
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_FLAGS);
	else if (cmd == OFPMC_ADD && old)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_METER_EXISTS);
	else if (cmd == OFPMC_MODIFY && !old)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_UNKNOWN_METER);
	struct ofs_meter *m = NULL;
	if (!e) {
		m = calloc(1, sizeof(*m));
		if (m) {
			m->raw_len = (uint16_t)(len - 16);
			m->raw_bands = malloc(m->raw_len + 1u);
		}
		if (!m || !m->raw_bands) {
			e = meter_kind.err_full;  /* out of memory (agent_internal.h) */
		} else {
			rte_spinlock_init(&m->lock);
			m->id = id;
			m->flags = flags;
			m->created_ns = ofs_now_ns();
			memcpy(m->raw_bands, msg + 16, m->raw_len);
			e = meter_parse_bands(m);
			/* its OFPMP_METER_CONFIG entry (8 bytes, the bands) must fit one reply
			 * (agent_internal.h): at most OFS_MAX_BANDS bands, so only over-long bands
			 * make it that long: BAD_BAND */
			if (!e && 8u + m->raw_len > OFS_MP_ENTRY_MAX)
				e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND);
		}
	}
	if (!e)
		e = obj_install(&meter_kind, old, m);
	if (e) {
		ofs_send_error(out, msg, len, e);
		free_meter(m);
	}
	return 0;
}
