/* agent_flows.c -- FLOW_MOD: validation of matches, instructions and actions, and the flow
 * table edits (add, modify, delete; strict and not), timeouts and FLOW_REMOVED.
 *
 * Goals: a FLOW_MOD costs what it touches, not the table (flowtable.h, which owns a table's
 * list, its hash of (priority, match) for ADD and strict commands, its mask groups for
 * non-strict selection and the staged incremental updates); every refusal is the error OpenFlow 1.3.5 names (7.3.4.1, 7.4.4), decided
 * before the first change.
 * Invariants: every flow of a table is in its list, its hash and its mask group, and staged in
 * its lookup structure; n_timed_flows counts the flows with an idle or hard timeout; removed
 * flows wait in dead_flows until a commit publishes their tables, then go to the deferred
 * frees (a worker may still hold them until its next quiescent state).
 * Validation runs in two passes: each action list on its own (ofs_actions_check: types,
 * lengths, arguments, ports, groups), then the set-field prerequisites against the packet at
 * each action (ofs_actions_prereq: the match as apply-actions change it, then the action set
 * after its pops and pushes; 7.2.5 -> BAD_ACTION/MATCH_INCONSISTENT). A MODIFY's instructions
 * are checked against the request's match (as Open vSwitch does).
 * What a flow may contain is what the table-features reply advertises (agent_multipart.c):
 * keep ofs_actions_check / insts_parse and tf_actions in step.
 * Concurrency: agent thread only; workers read published views (ofswitch.h "Flow lookup").
 * Byte order: the match and instructions are kept as their wire bytes (match_raw, insts) for
 * flow stats; struct ofs_match is network order (flowkey.h); the rest host order.
 */
#include <stdlib.h>
#include <arpa/inet.h>
#include <string.h>
#include "agent_internal.h"
#include "flowtable.h"
#include "flowarena.h"

/* OFPFF_*: the flags a FLOW_MOD may carry (7.3.4.1) */
#define OFS_FLOW_MOD_FLAGS_ALL (OFPFF_SEND_FLOW_REM | OFPFF_CHECK_OVERLAP | OFPFF_RESET_COUNTS | \
				OFPFF_NO_PKT_COUNTS | OFPFF_NO_BYT_COUNTS)

/* ---- flow state --------------------------------------------------------------------------- */
static struct ofs_flow *dead_flows;  /* unlinked, not yet handed to the deferred frees */
static uint32_t n_timed_flows; /* flows with an idle or hard timeout, in all tables */

/* A flow and its cold parts; arena flows go back to the arena (flowarena.h), the request's
 * scratch flow (flow_mod) to the heap. */
static void free_flow(struct ofs_flow *f)
{
	free(f->match_raw);
	free(f->insts);
	if (f->in_arena)
		ofs_flow_release(f);
	else
		free(f);
}

/* A slot of the flow arena for an ADD, or NULL when it is exhausted. Before giving up, the
 * removed flows are committed and the agent waits one grace period for their slots (a table
 * at the cap whose flows are replaced by DELETE + ADD in one batch). Only between messages'
 * changes: nothing of the current FLOW_MOD may be staged yet. */
static struct ofs_flow *arena_flow(void)
{
	struct ofs_flow *f = ofs_flow_alloc(true);
	if (!f && dead_flows) {
		ofs_commit();
		ofs_reclaim(true);  /* waits for the workers' quiescent states */
		f = ofs_flow_alloc(true);
	}
	return f;
}

/* Arena slot a takes src's fields (pointers included) and keeps its own counters, which the
 * arena zeroed. */
static void fill_slot(struct ofs_flow *a, const struct ofs_flow *src)
{
	struct ofs_flow_ctr *ctr = a->ctr;
	*a = *src;
	a->ctr = ctr;
	a->in_arena = true;
}

/* Move the request's scratch flow f (heap) into an arena slot: the slot takes f's fields and
 * its cold parts (match_raw, insts; apply/write point into insts), f's struct is freed. NULL
 * (and f untouched) when the arena is exhausted. */
static struct ofs_flow *into_arena(struct ofs_flow *f)
{
	struct ofs_flow *a = arena_flow();
	if (!a)
		return NULL;
	fill_slot(a, f);
	free(f);
	return a;
}

/* What the datapath reads instead of the instructions and the match (ofswitch.h, the hot
 * line): whether f is the common flow (one OUTPUT to a port, nothing else), whether it is a
 * table-miss flow. After insts_parse. */
static void decode_hot(struct ofs_flow *f)
{
	f->table_miss = f->priority == 0 && f->match.fields == 0;
	f->fast_out = 0;
	if (f->apply_len == 16 && rd16(f->apply) == OFPAT_OUTPUT && rd16(f->apply + 2) == 16 &&
	    !f->write_len && !f->clear_actions && !f->has_write_md && f->goto_table == 0xff &&
	    !f->meter_id && rd32(f->apply + 4) >= 1 && rd32(f->apply + 4) <= OFPP_MAX)
		f->fast_out = rd32(f->apply + 4);
}

static void free_flow_cb(void *f) { free_flow(f); }

uint64_t ofs_agent_requests;

/* Publish every changed table (flowtable.h) and hand the removed flows to the deferred frees;
 * removed groups and meters were handed to them at once (agent_groups_meters.c). */
void ofs_commit(void)
{
	bool all = ofs_tables_commit();
	/* a table whose publish failed still shows its removed flows: keep them for next time */
	while (all && dead_flows) {
		struct ofs_flow *f = dead_flows;
		dead_flows = f->next;
		ofs_defer_free_flow(f, free_flow_cb);
	}
}

/* ---- validation --------------------------------------------------------------------------- */
static bool port_ok(uint32_t p, bool in_packet_out)
{
	if (p == OFPP_IN_PORT || p == OFPP_FLOOD || p == OFPP_ALL || p == OFPP_CONTROLLER ||
	    p == OFPP_LOCAL || p == OFPP_NORMAL)
		return true;
	if (p == OFPP_TABLE)
		return in_packet_out;
	return p > 0 && p <= OFPP_MAX && ofs_port_idx(p) >= 0;
}

uint32_t ofs_actions_check(const uint8_t *a, size_t len, bool in_packet_out)
{
	size_t o = 0;
	while (o < len) {
		if (len - o < 8)
			return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
		uint16_t t = rd16(a + o), l = rd16(a + o + 2);
		if (l < 8 || l % 8 || o + l > len)
			return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
		const uint8_t *p = a + o;
		switch (t) {
		case OFPAT_OUTPUT:
			if (l != 16)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			if (!port_ok(rd32(p + 4), in_packet_out))
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_OUT_PORT);
			break;
		case OFPAT_GROUP:
			if (l != 8)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			if (!ofs_group_find(rd32(p + 4)))
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_OUT_GROUP);
			break;
		case OFPAT_SET_FIELD: {
			int f;
			uint32_t e = ofs_setfield_parse(p + 4, l - 4, &f);
			if (e)
				return e;
			if ((4u + 4 + p[7] + 7) / 8 * 8 != l)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_SET_LEN);
			break;
		}
		case OFPAT_PUSH_VLAN: {
			uint16_t et = rd16(p + 4);
			if (l != 8) return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			if (et != OFS_ETH_P_8021Q && et != OFS_ETH_P_8021AD)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT);
			break;
		}
		case OFPAT_PUSH_MPLS: {
			uint16_t et = rd16(p + 4);
			if (l != 8) return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			if (et != OFS_ETH_P_MPLS_UC && et != OFS_ETH_P_MPLS_MC)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT);
			break;
		}
		case OFPAT_PUSH_PBB:
			if (l != 8) return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			if (rd16(p + 4) != OFS_ETH_P_PBB)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT);
			break;
		case OFPAT_COPY_TTL_OUT: case OFPAT_COPY_TTL_IN: case OFPAT_SET_MPLS_TTL:
		case OFPAT_DEC_MPLS_TTL: case OFPAT_POP_VLAN: case OFPAT_POP_MPLS:
		case OFPAT_SET_QUEUE: case OFPAT_SET_NW_TTL: case OFPAT_DEC_NW_TTL:
		case OFPAT_POP_PBB:
			if (l != 8)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			break;
		case OFPAT_EXPERIMENTER:
			return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_EXPERIMENTER);
		default:
			return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_TYPE);
		}
		o += l;
	}
	return 0;
}

/* ---- set-field prerequisites (7.2.5): what the packet is known to carry at each action ---- */
#define FBIT(f) (1ull << (f))

/* After a change of ethertype the L3/L4 fields the prerequisites look at are unknown. */
static void ctx_forget_l3(struct ofs_match *ctx)
{
	ctx->fields &= ~(FBIT(OXM_IP_PROTO) | FBIT(OXM_ICMPV6_TYPE));
}

/* The effect of one (valid) action on what ctx says of the packet. */
static void ctx_apply(struct ofs_match *ctx, const uint8_t *p)
{
	switch (rd16(p)) {
	case OFPAT_PUSH_VLAN: {  /* a tag is present now (its VID copied from an inner one) */
		uint16_t vid = (ctx->fields & FBIT(OXM_VLAN_VID)) ? ntohs(ctx->value.vlan_vid) : 0;
		ctx->fields |= FBIT(OXM_VLAN_VID);
		ctx->value.vlan_vid = htons(OFPVID_PRESENT | (vid & (OFPVID_PRESENT - 1)));
		break;
	}
	case OFPAT_POP_VLAN:     /* whether an inner tag remains is not known */
		ctx->fields &= ~FBIT(OXM_VLAN_VID);
		break;
	case OFPAT_PUSH_MPLS: case OFPAT_POP_MPLS:  /* the action names the new ethertype */
		ctx->fields |= FBIT(OXM_ETH_TYPE);
		ctx->value.eth_type = htons(rd16(p + 4));
		ctx_forget_l3(ctx);
		break;
	case OFPAT_PUSH_PBB:
		ctx->fields |= FBIT(OXM_ETH_TYPE);
		ctx->value.eth_type = htons(OFS_ETH_P_PBB);
		ctx_forget_l3(ctx);
		break;
	case OFPAT_POP_PBB:      /* the customer frame's ethertype is not known */
		ctx->fields &= ~FBIT(OXM_ETH_TYPE);
		ctx_forget_l3(ctx);
		break;
	case OFPAT_SET_FIELD: {  /* ofp_action_set_field: type, len, oxm header 4, value */
		int f = p[6] >> 1;
		const struct ofs_field_info *fi = &ofs_fields[f];
		memcpy((uint8_t *)&ctx->value + fi->key_ofs, p + 8, fi->len);
		if (f == OXM_VLAN_VID)
			ctx->value.vlan_vid |= htons(OFPVID_PRESENT);
		ctx->fields |= FBIT(f);
		break;
	}
	default:
		break;
	}
}

uint32_t ofs_actions_prereq(const uint8_t *a, size_t len, struct ofs_match *ctx,
			    bool action_set)
{
	const uint32_t bad = OFS_ERR(OFPET_BAD_ACTION, OFPBAC_MATCH_INCONSISTENT);
	if (action_set) {
		/* the action set runs its pops and pushes (the last of each type) before its
		 * set-fields, in this order (5.10; datapath.c aset_order) */
		static const uint16_t order[] = { OFPAT_POP_VLAN, OFPAT_POP_MPLS, OFPAT_POP_PBB,
						  OFPAT_PUSH_MPLS, OFPAT_PUSH_PBB, OFPAT_PUSH_VLAN };
		for (unsigned k = 0; k < RTE_DIM(order); k++) {
			const uint8_t *last = NULL;
			/* (lists are checked first, ofs_actions_check; a length < 8 still ends
			 * every walk here rather than loop) */
			for (size_t o = 0; o + 8 <= len && rd16(a + o + 2) >= 8;
			     o += rd16(a + o + 2))
				if (rd16(a + o) == order[k])
					last = a + o;
			if (last)
				ctx_apply(ctx, last);
		}
	}
	for (size_t o = 0; o + 8 <= len && rd16(a + o + 2) >= 8; o += rd16(a + o + 2)) {
		const uint8_t *p = a + o;
		uint16_t t = rd16(p);
		if (t == OFPAT_SET_FIELD && !ofs_field_prereq_ok(ctx, p[6] >> 1))
			return bad;
		if (!action_set || t == OFPAT_SET_FIELD)
			ctx_apply(ctx, p);
	}
	return 0;
}

/* Decode and validate the instructions of a flow in table table_id. */
static uint32_t insts_parse(struct ofs_flow *f, const uint8_t *in, size_t len)
{
	size_t o = 0;
	uint32_t seen = 0;
	f->goto_table = 0xff;
	while (o < len) {
		if (len - o < 4)
			return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN);
		uint16_t t = rd16(in + o), l = rd16(in + o + 2);
		if (l < 8 || l % 8 || o + l > len)
			return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN);
		const uint8_t *p = in + o;
		if (t >= OFPIT_GOTO_TABLE && t <= OFPIT_METER) {
			if (seen & (1u << t))
				return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_UNSUP_INST);
			seen |= 1u << t;
		}
		uint32_t e;
		switch (t) {
		case OFPIT_GOTO_TABLE:
			if (l != 8)
				return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN);
			if (p[4] <= f->table_id || p[4] >= OFS_N_TABLES)
				return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_TABLE_ID);
			f->goto_table = p[4];
			break;
		case OFPIT_WRITE_METADATA:
			if (l != 24)
				return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN);
			f->has_write_md = true;
			/* key.metadata holds the wire (big-endian) bytes */
			memcpy(&f->md_value, p + 8, 8);
			memcpy(&f->md_mask, p + 16, 8);
			break;
		case OFPIT_WRITE_ACTIONS: case OFPIT_APPLY_ACTIONS:
			e = ofs_actions_check(p + 8, l - 8, false);
			if (e)
				return e;
			if (t == OFPIT_APPLY_ACTIONS) { f->apply = p + 8; f->apply_len = l - 8; }
			else { f->write = p + 8; f->write_len = l - 8; }
			break;
		case OFPIT_CLEAR_ACTIONS:
			f->clear_actions = true;
			break;
		case OFPIT_METER:
			if (l != 8)
				return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_BAD_LEN);
			if (!ofs_meter_find(rd32(p + 4)))
				return OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_UNKNOWN_METER);
			f->meter_id = rd32(p + 4);
			break;
		case OFPIT_EXPERIMENTER:
			return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_UNSUP_INST);
		default:
			return OFS_ERR(OFPET_BAD_INSTRUCTION, OFPBIC_UNKNOWN_INST);
		}
		o += l;
	}
	/* the instructions run apply-actions, then the action set at the end of the pipeline */
	struct ofs_match ctx = f->match;
	uint32_t e = ofs_actions_prereq(f->apply, f->apply_len, &ctx, false);
	return e ? e : ofs_actions_prereq(f->write, f->write_len, &ctx, true);
}

/* ---- flow table edits ---------------------------------------------------------------------- */
/* Add f to tb (prepared, f staged in the lookup structure, ofs_table_reserve_flow done). */
static void link_flow(struct ofs_table *tb, struct ofs_flow *f)
{
	ofs_table_link(tb, f);
	if (f->idle_timeout || f->hard_timeout)
		n_timed_flows++;
}

/* Unlink one flow from its table (flowtable.c: list, hash, mask group, lookup structure) and
 * queue it for freeing after the commit. tb must be prepared (ofs_table_prepare). */
static void unlink_flow(struct ofs_table *tb, struct ofs_flow *f)
{
	ofs_table_unlink(tb, f);
	if (f->idle_timeout || f->hard_timeout)
		n_timed_flows--;
	f->next = dead_flows;
	dead_flows = f;
}

/* flow f lies inside the (possibly wider) request match r */
bool ofs_match_covers(const struct ofs_match *r, const struct ofs_match *f)
{
	const uint64_t *rv = (const uint64_t *)&r->value, *rm = (const uint64_t *)&r->mask;
	const uint64_t *fv = (const uint64_t *)&f->value, *fm = (const uint64_t *)&f->mask;
	for (size_t i = 0; i < OFS_KEY_WORDS; i++)
		if ((fm[i] & rm[i]) != rm[i] || (fv[i] & rm[i]) != rv[i])
			return false;
	return true;
}

bool ofs_actions_output_to(const uint8_t *a, uint16_t len, uint32_t port, uint32_t group)
{
	for (size_t o = 0; o + 8 <= len; o += rd16(a + o + 2)) {
		uint16_t t = rd16(a + o);
		if (rd16(a + o + 2) < 8)
			break;
		if (port != OFPP_ANY && t == OFPAT_OUTPUT && rd32(a + o + 4) == port)
			return true;
		if (group != OFPG_ANY && t == OFPAT_GROUP && rd32(a + o + 4) == group)
			return true;
	}
	return false;
}

bool ofs_flow_outputs(const struct ofs_flow *f, uint32_t port, uint32_t group)
{
	if (port == OFPP_ANY && group == OFPG_ANY)
		return true;
	return ofs_actions_output_to(f->apply, f->apply_len, port, group) ||
	       ofs_actions_output_to(f->write, f->write_len, port, group);
}

static void send_flow_removed(struct obuf *out, struct ofs_flow *f, uint8_t reason)
{
	if (!(f->flags & OFPFF_SEND_FLOW_REM))
		return;
	/* the counts the workers' cache entries still hold (ofswitch.h): once per message or
	 * expiry pass, not per flow of a bulk removal */
	static uint64_t synced_for = ~0ull;
	if (synced_for != ofs_agent_requests) {
		ofs_counters_sync();
		synced_for = ofs_agent_requests;
	}
	size_t at = ofs_msg_begin(out, OFPT_FLOW_REMOVED, 0);
	uint8_t *p = ob_put(out, 40);
	uint64_t d = ofs_now_ns() - f->created_ns;
	wr64(p, f->cookie);
	wr16(p + 8, f->priority);
	p[10] = reason;
	p[11] = f->table_id;
	wr32(p + 12, (uint32_t)(d / 1000000000ull));
	wr32(p + 16, (uint32_t)(d % 1000000000ull));
	wr16(p + 20, f->idle_timeout);
	wr16(p + 22, f->hard_timeout);
	uint64_t pk, by;
	ofs_flow_counts(f, &pk, &by);
	wr64(p + 24, pk);
	wr64(p + 32, by);
	memcpy(ob_put(out, f->match_raw_len), f->match_raw, f->match_raw_len);
	ofs_msg_end(out, at);
}

/* Unlink flows for which pred() is true; send FLOW_REMOVED with reason. -1 (and nothing
 * removed from that table on) when a table cannot be prepared for lack of memory. */
int ofs_remove_flows(struct obuf *out, int table, bool (*pred)(struct ofs_flow *, void *),
		     void *arg, uint8_t reason)
{
	for (int t = 0; t < OFS_N_TABLES; t++) {
		if (table != OFPTT_ALL && t != table)
			continue;
		struct ofs_table *tb = &ofs_dp.tables[t];
		if (!tb->flows)
			continue;
		if (ofs_table_prepare(tb))
			return -1;
		OFS_TABLE_FOR_EACH_SAFE(f, nx, tb) {
			if (!pred(f, arg))
				continue;
			if (out)
				send_flow_removed(out, f, reason);
			unlink_flow(tb, f);
		}
	}
	return 0;
}

struct fm_req {
	struct ofs_match match;
	uint64_t cookie, cookie_mask;
	uint16_t priority;
	uint32_t out_port, out_group;
	bool strict;
};

static bool fm_selects(struct ofs_flow *f, void *arg)
{
	struct fm_req *r = arg;
	if ((f->cookie & r->cookie_mask) != (r->cookie & r->cookie_mask))
		return false;
	if (r->strict) {
		if (f->priority != r->priority || !ofs_match_equal(&f->match, &r->match))
			return false;
	} else if (!ofs_match_covers(&r->match, &f->match)) {
		return false;
	}
	return ofs_flow_outputs(f, r->out_port, r->out_group);
}

/* Can a flow with this match (padded, as stored) and these instructions be answered in
 * OFPMP_FLOW? Its ofp_flow_stats entry (48 bytes, the match, the instructions) must fit one
 * reply (OFS_MP_ENTRY_MAX). A FLOW_MOD whose flow would not fit is refused with
 * BAD_ACTION/TOO_MANY ("can't handle this many actions", OF1.3.5 7.4.4): the match is at most
 * a few hundred bytes and each instruction type occurs once, so only action lists make a flow
 * that long. */
static bool flow_entry_fits(size_t match_len, size_t insts_len)
{
	return 48 + match_len + insts_len <= OFS_MP_ENTRY_MAX;
}
#define OFS_ERR_FLOW_TOO_LONG OFS_ERR(OFPET_BAD_ACTION, OFPBAC_TOO_MANY)

/* The flows of tb a MODIFY or DELETE selects: the one of the same priority and match (strict,
 * found in the hash) or every flow the request's match covers (mask groups). Returns how many
 * (in *sel, to free), or -1 when out of memory. */
static int select_flows(struct ofs_table *tb, struct fm_req *r, struct ofs_flow ***sel)
{
	if (r->strict) {
		struct ofs_flow *g = ofs_table_find_exact(tb, r->priority, &r->match);
		*sel = malloc(sizeof(**sel));
		if (!*sel)
			return -1;
		(*sel)[0] = g;
		return g && fm_selects(g, r) ? 1 : 0;
	}
	int n = ofs_table_covered(tb, &r->match, sel), k = 0;
	for (int i = 0; i < n; i++)  /* cookie (and the covering, again) */
		if (fm_selects((*sel)[i], r))
			(*sel)[k++] = (*sel)[i];
	return n < 0 ? -1 : k;
}

/* MODIFY(_STRICT): replace each selected flow by a copy carrying f's instructions. The copies
 * are all staged before any old flow is removed; if one cannot be made or staged, the copies
 * made so far are unstaged and the table is left as it was (-1). -2 (nothing changed): a
 * copy's flow stats entry (its own match, f's instructions) would not fit one multipart
 * reply (flow_entry_fits). */
static int modify_flows(struct ofs_table *tb, struct fm_req *r, const struct ofs_flow *f,
			uint16_t flags)
{
	struct ofs_flow **sel;
	int n = select_flows(tb, r, &sel);
	if (n <= 0) {
		if (n == 0)
			free(sel);
		return n;
	}
	for (int i = 0; i < n; i++)
		if (!flow_entry_fits(sel[i]->match_raw_len, f->insts_len)) {
			free(sel);
			return -2;
		}
	struct ofs_flow **copy = calloc((size_t)n, sizeof(*copy));
	int made = 0;
	bool ok = copy && ofs_table_prepare(tb) == 0;
	for (; ok && made < n; made++) {
		const struct ofs_flow *g = sel[made];
		/* (not arena_flow: a commit here would publish part of this MODIFY) */
		struct ofs_flow *c = ofs_flow_alloc(false);
		if (c) {
			fill_slot(c, g);
			c->match_raw = malloc(g->match_raw_len);
			c->insts = malloc(f->insts_len + 1u);
		}
		if (!c || !c->match_raw || !c->insts) {
			if (c)
				free_flow(c);
			ok = false;
			break;
		}
		memcpy(c->match_raw, g->match_raw, g->match_raw_len);
		memcpy(c->insts, f->insts, f->insts_len);
		c->insts_len = f->insts_len;
		c->apply = c->write = NULL;
		c->apply_len = c->write_len = 0;
		c->has_write_md = c->clear_actions = false;
		c->meter_id = 0;
		c->goto_table = 0xff;
		insts_parse(c, c->insts, c->insts_len);
		decode_hot(c);
		/* g's counts (all workers') carry over into c's own */
		if (flags & OFPFF_RESET_COUNTS)
			c->packets = c->bytes = 0;
		else
			ofs_flow_counts(g, &c->packets, &c->bytes);
		if (ofs_table_stage_add(tb, c)) {
			free_flow(c);
			ok = false;
			break;
		}
		copy[made] = c;
	}
	if (!ok) {
		for (int i = 0; i < made; i++) {
			ofs_table_stage_remove(tb, copy[i]);  /* never published: free at once */
			free_flow(copy[i]);
		}
		free(copy);
		free(sel);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct ofs_flow *g = sel[i], *c = copy[i];
		ofs_table_replace(tb, g, c);  /* c takes g's place; g's removal staged */
		g->next = dead_flows;
		dead_flows = g;
		/* counts the workers' cache entries hold for g go on to c (ofswitch.h) */
		if (!(flags & OFPFF_RESET_COUNTS)) {
			g->succ = c;
			__atomic_store_n(&g->replaced, true, __ATOMIC_RELEASE);
		}
	}
	free(copy);
	free(sel);
	return 0;
}

/* DELETE(_STRICT) in `table` (or in every table): the flows select_flows picks. -1 when out
 * of memory (the tables scanned before keep their deletions, as separate commands would). */
static int delete_flows(struct obuf *out, uint8_t table, struct fm_req *r)
{
	for (int t = 0; t < OFS_N_TABLES; t++) {
		if (table != OFPTT_ALL && t != table)
			continue;
		struct ofs_table *tb = &ofs_dp.tables[t];
		if (!tb->flows)
			continue;
		struct ofs_flow **sel;
		int n = select_flows(tb, r, &sel);
		if (n < 0)
			return -1;
		if (n && ofs_table_prepare(tb)) {
			free(sel);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			send_flow_removed(out, sel[i], OFPRR_DELETE);
			unlink_flow(tb, sel[i]);
		}
		free(sel);
	}
	return 0;
}

static void flow_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_flow_mod: header 8, cookie 8, cookie_mask 8, table_id, command, idle 2, hard 2,
	 * priority 2, buffer_id 4, out_port 4, out_group 4, flags 2, pad 2 = 48; match; insts */
	if (len < 56) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return;
	}
	uint8_t table = msg[24], cmd = msg[25];
	uint16_t flags = rd16(msg + 44);
	/* out of memory (agent_internal.h): an add finds no room, a modify/delete fails */
	uint32_t no_memory = OFS_ERR(OFPET_FLOW_MOD_FAILED,
				     cmd == OFPFC_ADD ? OFPFMFC_TABLE_FULL : OFPFMFC_UNKNOWN);
	struct ofs_flow *f = calloc(1, sizeof(*f));
	if (!f) {
		ofs_send_error(out, msg, len, no_memory);
		return;
	}
	size_t mlen;
	uint32_t e = ofs_match_parse(msg + 48, len - 48, &f->match, &mlen);
	if (!e && cmd > OFPFC_DELETE_STRICT)
		e = OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_COMMAND);
	if (!e && table >= OFS_N_TABLES &&
	    !(table == OFPTT_ALL && (cmd == OFPFC_DELETE || cmd == OFPFC_DELETE_STRICT)))
		e = OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_TABLE_ID);
	if (!e && (flags & ~OFS_FLOW_MOD_FLAGS_ALL))
		e = OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_FLAGS);
	if (e) {
		ofs_send_error(out, msg, len, e);
		free(f);
		return;
	}
	f->cookie = rd64(msg + 8);
	f->table_id = table;
	f->idle_timeout = rd16(msg + 26);
	f->hard_timeout = rd16(msg + 28);
	f->priority = rd16(msg + 30);
	f->flags = flags;
	uint32_t buffer_id = rd32(msg + 32);
	if (cmd == OFPFC_ADD || cmd == OFPFC_MODIFY || cmd == OFPFC_MODIFY_STRICT) {
		f->insts_len = (uint16_t)(len - 48 - mlen);
		f->insts = malloc(f->insts_len + 1u);
		f->match_raw = malloc(mlen);
		if (!f->insts || !f->match_raw) {
			ofs_send_error(out, msg, len, no_memory);
			free_flow(f);
			return;
		}
		memcpy(f->insts, msg + 48 + mlen, f->insts_len);
		e = insts_parse(f, f->insts, f->insts_len);
		if (!e && cmd == OFPFC_ADD && !flow_entry_fits(mlen, f->insts_len))
			e = OFS_ERR_FLOW_TOO_LONG;
		if (e) {
			ofs_send_error(out, msg, len, e);
			free_flow(f);
			return;
		}
		f->match_raw_len = (uint16_t)mlen;
		memcpy(f->match_raw, msg + 48, mlen);
		/* the wire may carry garbage in the match padding: zero it for stats */
		memset(f->match_raw + rd16(msg + 50), 0, mlen - rd16(msg + 50));
		f->created_ns = f->last_used_ns = ofs_now_ns();
		decode_hot(f);
	}
	struct ofs_table *tb = table < OFS_N_TABLES ? &ofs_dp.tables[table] : NULL;
	if (cmd == OFPFC_ADD) {
		if ((flags & OFPFF_CHECK_OVERLAP) && ofs_table_overlaps(tb, &f->match, f->priority)) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_OVERLAP));
			free_flow(f);
			return;
		}
		/* the flow moves into the arena (a full arena: TABLE_FULL, flowarena.h) */
		struct ofs_flow *a = into_arena(f);
		if (!a) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_FLOW_MOD_FAILED,
							      OFPFMFC_TABLE_FULL));
			free_flow(f);
			return;
		}
		f = a;
		/* the new flow is staged before the one it replaces is removed: a failure leaves
		 * the table as it was */
		if (ofs_table_prepare(tb) || ofs_table_reserve_flow(tb, f) ||
		    ofs_table_stage_add(tb, f)) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_FLOW_MOD_FAILED,
							      OFPFMFC_TABLE_FULL));
			free_flow(f);
			return;
		}
		struct ofs_flow *same = ofs_table_find_exact(tb, f->priority, &f->match);
		if (same)
			unlink_flow(tb, same);  /* identical match+priority: replaced */
		link_flow(tb, f);
	} else if (cmd == OFPFC_MODIFY || cmd == OFPFC_MODIFY_STRICT) {
		struct fm_req r = { .match = f->match, .cookie = f->cookie,
				    .cookie_mask = rd64(msg + 16), .priority = f->priority,
				    .out_port = OFPP_ANY, .out_group = OFPG_ANY,
				    .strict = cmd == OFPFC_MODIFY_STRICT };
		int rc = modify_flows(tb, &r, f, flags);
		if (rc)
			ofs_send_error(out, msg, len, rc == -2 ? OFS_ERR_FLOW_TOO_LONG :
				       OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_UNKNOWN));
		free_flow(f);
	} else {
		struct fm_req r = { .match = f->match, .cookie = rd64(msg + 8),
				    .cookie_mask = rd64(msg + 16), .priority = f->priority,
				    .out_port = rd32(msg + 36), .out_group = rd32(msg + 40),
				    .strict = cmd == OFPFC_DELETE_STRICT };
		if (delete_flows(out, table, &r))
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_FLOW_MOD_FAILED,
							      OFPFMFC_UNKNOWN));
		free_flow(f);
	}
	if (buffer_id != OFP_NO_BUFFER && cmd <= OFPFC_MODIFY_STRICT)
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BUFFER_UNKNOWN));
}

int ofs_on_flow_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	flow_mod(out, msg, len);
	return 0;
}

/* Idle and hard timeouts; called by the agent loop. ``now`` is read at the top of the
 * agent's loop: a flow added later in the same pass (created_ns) or hit by a worker since
 * (last_used_ns) carries a time after it, which is no age at all (unsigned now - t would
 * wrap to ~2^64 and expire it at once: every busy idle-timeout flow, found with FAUCET's
 * eth_dst flows, suites/interop/README.md "Findings" 3). */
struct to_arg { uint64_t now; uint8_t reason; };
static inline bool aged(uint64_t now, uint64_t t, uint16_t timeout_s)
{
	return timeout_s && now > t && now - t >= timeout_s * 1000000000ull;
}
static bool timed_out(struct ofs_flow *f, void *arg)
{
	struct to_arg *a = arg;
	if (a->reason == OFPRR_HARD_TIMEOUT)
		return aged(a->now, f->created_ns, f->hard_timeout);
	return aged(a->now, __atomic_load_n(&f->last_used_ns, __ATOMIC_RELAXED), f->idle_timeout);
}
void ofs_expire_flows(struct obuf *out, uint64_t now)
{
	/* Scanning 100k flows ten times a second costs a core: only scan when some flow has a
	 * timeout (the count is exact: kept by add/remove below). */
	if (n_timed_flows == 0)
		return;
	/* last_used_ns that the workers' pipeline-cache programs still hold (pipecache.h
	 * "Counts"): a worker with nothing pending is not waited for */
	ofs_counters_sync();
	ofs_agent_requests++;
	struct to_arg a = { now, OFPRR_HARD_TIMEOUT };
	ofs_remove_flows(out, OFPTT_ALL, timed_out, &a, OFPRR_HARD_TIMEOUT);
	a.reason = OFPRR_IDLE_TIMEOUT;
	ofs_remove_flows(out, OFPTT_ALL, timed_out, &a, OFPRR_IDLE_TIMEOUT);
}

