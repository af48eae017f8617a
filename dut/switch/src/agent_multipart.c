/* agent_multipart.c -- MULTIPART requests (OpenFlow 1.3.5 7.3.5): one handler per type,
 * found in a table indexed by the multipart type.
 *
 * Every handler receives the request's body (after the 16-byte ofp_multipart_request header)
 * and either answers with a reply built through mp_begin/mp_put/mp_end or refuses with an
 * OFPT_ERROR. A handler states its body size: `body_len` exact (0 for no body), or
 * `body_min` at least; a size outside that is BAD_REQUEST/BAD_LEN, checked before the handler.
 * Types without a handler are BAD_MULTIPART; the experimenter type is BAD_EXPERIMENTER.
 * Replies are split under 64 KiB (OFS_MP_SPLIT) with OFPMPF_REPLY_MORE; one entry never
 * straddles two replies, and none is longer than OFS_MP_ENTRY_MAX (what could make one is
 * refused when it is installed: agent_internal.h). The flow tables are committed before a request is answered, so
 * counts and lists include every FLOW_MOD sent before it.
 * What the table-features reply advertises is what the agent accepts (agent_flows.c:
 * ofs_actions_check, insts_parse, ofs_setfield_parse); setting table features is refused
 * (TABLE_FEATURES_FAILED/EPERM). No queues: queue stats are an empty list for OFPP_ANY or a
 * real port, BAD_PORT otherwise, BAD_QUEUE for a named queue.
 * Concurrency: agent thread; counters written by workers are read with relaxed atomics or as
 * plain 64-bit loads (a count may be one burst behind, never torn on x86-64).
 * Byte order: wire order in messages; counters are host order until wr64.
 */
#include <stdio.h>
#include <string.h>
#include "agent_internal.h"
#include "flowarena.h"
#include "flowtable.h"

#define OFS_MP_SPLIT 65000u          /* bytes: start a new reply before this size */
#define OFS_MP_HDR_LEN 16u           /* ofp_multipart_request: header, type 2, flags 2, pad 4 */
#define OFPTFC_EPERM 5               /* ofp_table_features_failed_code */
/* OFPMP_GROUP_FEATURES: types ALL|SELECT|INDIRECT|FF; capabilities SELECT_WEIGHT |
 * SELECT_LIVENESS | CHAINING */
#define OFS_GROUP_TYPES_ALL 0xfu
#define OFS_GROUP_CAPABILITIES (0x1u | 0x2u | 0x4u)
/* OFPMP_METER_FEATURES capabilities: KBPS | PKTPS | BURST | STATS */
#define OFS_METER_CAPABILITIES (OFPMF_KBPS | OFPMF_PKTPS | OFPMF_BURST | OFPMF_STATS)

/* ---- reply framing ------------------------------------------------------------------------ */
/* One multipart reply being written: split under 64 KiB with REPLY_MORE. */
struct mp { struct obuf *out; size_t at; uint16_t type; uint32_t xid; };

static void mp_begin(struct mp *r, struct obuf *out, uint16_t type, uint32_t xid)
{
	r->out = out; r->type = type; r->xid = xid;
	r->at = ofs_msg_begin(out, OFPT_MULTIPART_REPLY, xid);
	uint8_t *p = ob_put(out, 8);
	wr16(p, type);
}
/* Before appending n bytes: split into a new message when it would exceed 64 KiB. An entry
 * longer than OFS_MP_ENTRY_MAX fits no reply: the handlers refuse what would make one
 * (agent_internal.h); should one exist, it is left out of the reply (written to a scratch
 * buffer), never cut, and the invariant check reports it. */
static uint8_t *mp_put(struct mp *r, size_t n)
{
	if (n > OFS_MP_ENTRY_MAX) {
		static struct obuf scratch;
		ofs_invariant_failed("multipart entry longer than one reply left out", r->type, n);
		scratch.len = 0;
		return ob_put(&scratch, n);
	}
	if (r->out->len - r->at + n > OFS_MP_SPLIT && r->out->len - r->at > OFS_MP_HDR_LEN) {
		wr16(r->out->data + r->at + 10, OFPMPF_REPLY_MORE);
		ofs_msg_end(r->out, r->at);
		mp_begin(r, r->out, r->type, r->xid);
	}
	return ob_put(r->out, n);
}
static void mp_end(struct mp *r) { ofs_msg_end(r->out, r->at); }


/* ---- table features ------------------------------------------------------------------------ */
/* What the agent accepts, as the table-features properties list it (the same lists that
 * ofs_actions_check / insts_parse / ofs_setfield_parse enforce; keep them in step). */
static const uint16_t tf_actions[] = {
	OFPAT_OUTPUT, OFPAT_COPY_TTL_OUT, OFPAT_COPY_TTL_IN, OFPAT_SET_MPLS_TTL,
	OFPAT_DEC_MPLS_TTL, OFPAT_PUSH_VLAN, OFPAT_POP_VLAN, OFPAT_PUSH_MPLS, OFPAT_POP_MPLS,
	OFPAT_SET_QUEUE, OFPAT_GROUP, OFPAT_SET_NW_TTL, OFPAT_DEC_NW_TTL, OFPAT_SET_FIELD,
	OFPAT_PUSH_PBB, OFPAT_POP_PBB,
};

static bool tf_settable(int f)
{
	return ofs_fields[f].len && f != OXM_IN_PORT && f != OXM_IN_PHY_PORT &&
	       f != OXM_METADATA && f != OXM_IPV6_EXTHDR;
}

static uint32_t tf_oxm_header(int f, bool hasmask)
{
	uint32_t l = ofs_fields[f].len * (hasmask ? 2u : 1u);
	return (uint32_t)OFPXMC_OPENFLOW_BASIC << 16 | (uint32_t)(f << 1 | hasmask) << 8 | l;
}

/* Closes one property whose payload_len bytes of items the caller already wrote at at + 4:
 * writes its header and zeroes its padding (the length field excludes the padding to 8).
 * Returns its padded size. With p == NULL only sizes are computed. */
static size_t tf_prop(uint8_t *p, size_t at, uint16_t type, size_t payload_len)
{
	if (p) {
		wr16(p + at, type);
		wr16(p + at + 2, (uint16_t)(4 + payload_len));
		/* the items are already written: zero only the padding after them */
		memset(p + at + 4 + payload_len, 0, (4 + payload_len + 7) / 8 * 8 - 4 - payload_len);
	}
	return (4 + payload_len + 7) / 8 * 8;
}

/* Writes table t's ofp_table_features (64-byte header + properties) at p, or only sizes it
 * when p is NULL; returns its length (a multiple of 8). The _MISS properties equal the
 * regular ones: a table-miss flow may do what any flow does. */
static size_t table_features_put(uint8_t *p, uint8_t t)
{
	size_t at = 64;
	bool last = t == OFS_N_TABLES - 1;
	if (p) {
		memset(p, 0, 64);
		p[2] = t;
		snprintf((char *)p + 8, 32, "table%d", t);
		wr64(p + 40, ~0ull);         /* metadata_match: all bits */
		wr64(p + 48, ~0ull);         /* metadata_write: all bits */
		wr32(p + 60, 1000000);      /* max_entries: a soft figure, memory bound */
	}
	for (int miss = 0; miss < 2; miss++) {
		size_t n = 0;            /* instructions: 4-byte ids; goto-table except in the last */
		for (uint16_t it = OFPIT_GOTO_TABLE; it <= OFPIT_METER; it++) {
			if (it == OFPIT_GOTO_TABLE && last)
				continue;
			if (p) { wr16(p + at + 4 + n, it); wr16(p + at + 6 + n, 4); }
			n += 4;
		}
		at += tf_prop(p, at, OFPTFPT_INSTRUCTIONS + miss, n);
	}
	for (int miss = 0; miss < 2; miss++) {
		size_t n = 0;            /* next tables: every later table */
		for (int nt = t + 1; nt < OFS_N_TABLES; nt++, n++)
			if (p) p[at + 4 + n] = (uint8_t)nt;
		at += tf_prop(p, at, OFPTFPT_NEXT_TABLES + miss, n);
	}
	static const uint16_t act_props[] = { OFPTFPT_WRITE_ACTIONS, OFPTFPT_WRITE_ACTIONS_MISS,
					      OFPTFPT_APPLY_ACTIONS, OFPTFPT_APPLY_ACTIONS_MISS };
	for (unsigned k = 0; k < RTE_DIM(act_props); k++) {
		size_t n = 0;
		for (unsigned i = 0; i < RTE_DIM(tf_actions); i++, n += 4)
			if (p) { wr16(p + at + 4 + n, tf_actions[i]); wr16(p + at + 6 + n, 4); }
		at += tf_prop(p, at, act_props[k], n);
	}
	/* match: every field we match, with the mask bit where it is maskable; wildcards: all of
	 * them (any field may be left out of a match) */
	for (int wild = 0; wild < 2; wild++) {
		size_t n = 0;
		for (int f = 0; f < OXM_N_FIELDS; f++) {
			if (!ofs_fields[f].len)
				continue;
			if (p) wr32(p + at + 4 + n, tf_oxm_header(f, !wild && ofs_fields[f].maskable));
			n += 4;
		}
		at += tf_prop(p, at, wild ? OFPTFPT_WILDCARDS : OFPTFPT_MATCH, n);
	}
	static const uint16_t sf_props[] = { OFPTFPT_WRITE_SETFIELD, OFPTFPT_WRITE_SETFIELD_MISS,
					     OFPTFPT_APPLY_SETFIELD, OFPTFPT_APPLY_SETFIELD_MISS };
	for (unsigned k = 0; k < RTE_DIM(sf_props); k++) {
		size_t n = 0;
		for (int f = 0; f < OXM_N_FIELDS; f++) {
			if (!tf_settable(f))
				continue;
			if (p) wr32(p + at + 4 + n, tf_oxm_header(f, false));
			n += 4;
		}
		at += tf_prop(p, at, sf_props[k], n);
	}
	if (p)
		wr16(p, (uint16_t)at);
	return at;
}

/* ---- handlers ----------------------------------------------------------------------------- */
/* One request: what a handler needs to reply or refuse. */
struct mp_req {
	struct obuf *out;
	const uint8_t *msg;        /* the whole request, for errors */
	size_t len;
	uint16_t type;
	uint32_t xid;
	const uint8_t *body;       /* after the multipart header */
	size_t blen;
};

static void mp_refuse(const struct mp_req *q, uint32_t err)
{
	ofs_send_error(q->out, q->msg, q->len, err);
}

static const char sw_desc[] = "ofbench ofswitch 0.1";

static void mp_desc(const struct mp_req *q)
{
	/* ofp_desc: mfr_desc 256, hw_desc 256, sw_desc 256, serial_num 32, dp_desc 256 */
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	uint8_t *p = mp_put(&r, 1056);
	strcpy((char *)p, "ofbench");
	strcpy((char *)p + 256, "DPDK software switch");
	strcpy((char *)p + 512, sw_desc);
	strcpy((char *)p + 768, "0");
	snprintf((char *)p + 800, 256, "ofswitch dpid 0x%llx", (unsigned long long)ofs_dp.dpid);
	mp_end(&r);
}

struct stats_req { uint8_t table; uint32_t out_port, out_group; uint64_t cookie, cookie_mask;
		   struct ofs_match match; };

static bool stats_selects(struct ofs_flow *f, const struct stats_req *r)
{
	if (r->table != OFPTT_ALL && f->table_id != r->table)
		return false;
	if ((f->cookie & r->cookie_mask) != (r->cookie & r->cookie_mask))
		return false;
	return ofs_match_covers(&r->match, &f->match) &&
	       ofs_flow_outputs(f, r->out_port, r->out_group);
}

/* OFPMP_FLOW and OFPMP_AGGREGATE: one request format, entries or their sums. */
static void mp_flow(const struct mp_req *q)
{
	/* ofp_flow_stats_request: table_id, pad 3, out_port, out_group, pad 4, cookie,
	 * cookie_mask = 32; match */
	const uint8_t *body = q->body;
	struct stats_req s = { body[0], rd32(body + 4), rd32(body + 8), rd64(body + 16),
			       rd64(body + 24) };
	size_t ml;
	uint32_t e = ofs_match_parse(body + 32, q->blen - 32, &s.match, &ml);
	if (e) {
		mp_refuse(q, e);
		return;
	}
	if (s.table != OFPTT_ALL && s.table >= OFS_N_TABLES) {
		mp_refuse(q, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_TABLE_ID));
		return;
	}
	uint64_t pk = 0, by = 0;
	uint32_t nf = 0;
	struct mp r;
	ofs_counters_sync();  /* the counts cache entries still hold (ofswitch.h) */
	mp_begin(&r, q->out, q->type, q->xid);
	for (int t = 0; t < OFS_N_TABLES; t++) {
		OFS_TABLE_FOR_EACH(f, &ofs_dp.tables[t]) {
			if (!stats_selects(f, &s))
				continue;
			uint64_t fp, fb;
			ofs_flow_counts(f, &fp, &fb);  /* all workers' (flowarena.h) */
			pk += fp; by += fb; nf++;
			if (q->type == OFPMP_AGGREGATE)
				continue;
			/* ofp_flow_stats: length 2, table_id, pad, duration 8, priority, idle,
			 * hard, flags 2 each, pad 4, cookie, packet_count, byte_count 8 each = 48 */
			size_t n = 48 + f->match_raw_len + f->insts_len;
			uint8_t *p = mp_put(&r, n);
			wr16(p, (uint16_t)n);
			p[2] = f->table_id;
			ofs_put_duration(p + 4, f->created_ns);
			wr16(p + 12, f->priority);
			wr16(p + 14, f->idle_timeout);
			wr16(p + 16, f->hard_timeout);
			wr16(p + 18, f->flags);
			wr64(p + 24, f->cookie);
			wr64(p + 32, fp);
			wr64(p + 40, fb);
			memcpy(p + 48, f->match_raw, f->match_raw_len);
			memcpy(p + 48 + f->match_raw_len, f->insts, f->insts_len);
		}
	}
	if (q->type == OFPMP_AGGREGATE) {
		uint8_t *p = mp_put(&r, 24);
		wr64(p, pk); wr64(p + 8, by); wr32(p + 16, nf);
	}
	mp_end(&r);
}

static void mp_table(const struct mp_req *q)
{
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	for (int t = 0; t < OFS_N_TABLES; t++) {
		/* ofp_table_stats: table_id, pad 3, active_count 4, lookup_count, matched_count */
		uint8_t *p = mp_put(&r, 24);
		uint64_t lk = 0, mt = 0;
		for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
			lk += ofs_dp.workers[w].lookup_count[t];
			mt += ofs_dp.workers[w].matched_count[t];
		}
		p[0] = (uint8_t)t;
		wr32(p + 4, ofs_dp.tables[t].n_flows);
		wr64(p + 8, lk);
		wr64(p + 16, mt);
	}
	mp_end(&r);
}

static void mp_port_stats(const struct mp_req *q)
{
	uint32_t port = rd32(q->body);
	if (port != OFPP_ANY && ofs_port_idx(port) < 0) {
		mp_refuse(q, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_PORT));
		return;
	}
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	for (unsigned i = 0; i < ofs_dp.n_ports; i++) {
		if (port != OFPP_ANY && ofs_dp.ports[i].ofport != port)
			continue;
		struct ofs_port_stats s;
		ofs_port_stats_sum((int)i, &s);
		/* ofp_port_stats: port_no, pad 4, 12 counters of 8, duration 8 = 112 */
		uint8_t *p = mp_put(&r, 112);
		wr32(p, ofs_dp.ports[i].ofport);
		wr64(p + 8, s.rx_packets); wr64(p + 16, s.tx_packets);
		wr64(p + 24, s.rx_bytes); wr64(p + 32, s.tx_bytes);
		wr64(p + 40, s.rx_dropped); wr64(p + 48, s.tx_dropped);
		ofs_put_duration(p + 104, ofs_dp.ports[i].created_ns);
	}
	mp_end(&r);
}

static void mp_port_desc(const struct mp_req *q)
{
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	for (unsigned i = 0; i < ofs_dp.n_ports; i++)
		ofs_put_port(mp_put(&r, 64), &ofs_dp.ports[i]);
	mp_end(&r);
}

static void mp_queue(const struct mp_req *q)
{
	/* No queues are configured on any port (set_queue is accepted and has no effect): ALL
	 * queues of any/a real port is an empty reply; a bad port or any named queue is the
	 * QUEUE_OP_FAILED error the spec gives for it. */
	uint32_t port = rd32(q->body), queue = rd32(q->body + 4);
	if (port != OFPP_ANY && !ofs_port_is_real(port)) {
		mp_refuse(q, OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_PORT));
		return;
	}
	if (queue != OFPQ_ALL) {
		mp_refuse(q, OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_QUEUE));
		return;
	}
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	mp_end(&r);
}

/* How many flows refer to a group / meter (agent-side scan of every table). */
static uint32_t group_refs(uint32_t gid)
{
	uint32_t refs = 0;
	for (int t = 0; t < OFS_N_TABLES; t++)
		OFS_TABLE_FOR_EACH(f, &ofs_dp.tables[t])
			refs += ofs_flow_outputs(f, OFPP_ANY, gid);
	return refs;
}

static uint32_t meter_refs(uint32_t mid)
{
	uint32_t refs = 0;
	for (int t = 0; t < OFS_N_TABLES; t++)
		OFS_TABLE_FOR_EACH(f, &ofs_dp.tables[t])
			refs += f->meter_id == mid;
	return refs;
}

/* OFPMP_GROUP (body: group_id, pad 4) and OFPMP_GROUP_DESC (no body: all groups). */
static void mp_group(const struct mp_req *q)
{
	uint32_t gid = q->type == OFPMP_GROUP ? rd32(q->body) : OFPG_ALL;
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	struct ofs_group *g;
	for (unsigned i = 0; (g = ofs_idt_next(&ofs_dp.groups, &i));) {
		if (gid != OFPG_ALL && g->id != gid)
			continue;
		if (q->type == OFPMP_GROUP_DESC) {
			/* ofp_group_desc: length 2, type 1, pad 1, group_id 4; buckets */
			uint8_t *p = mp_put(&r, 8 + g->raw_len);
			wr16(p, (uint16_t)(8 + g->raw_len));
			p[2] = g->type;
			wr32(p + 4, g->id);
			memcpy(p + 8, g->raw_buckets, g->raw_len);
		} else {
			/* ofp_group_stats: length 2, pad 2, group_id, ref_count, pad 4, packet and
			 * byte counts, duration 8 = 40; per bucket packets and bytes, 16 */
			size_t n = 40 + 16u * g->n_buckets;
			uint8_t *p = mp_put(&r, n);
			wr16(p, (uint16_t)n);
			wr32(p + 4, g->id);
			wr32(p + 8, group_refs(g->id));
			wr64(p + 16, g->packets);
			wr64(p + 24, g->bytes);
			ofs_put_duration(p + 32, g->created_ns);
			for (int b = 0; b < g->n_buckets; b++) {
				wr64(p + 40 + 16 * b, g->buckets[b].packets);
				wr64(p + 48 + 16 * b, g->buckets[b].bytes);
			}
		}
	}
	mp_end(&r);
}

static void mp_group_features(const struct mp_req *q)
{
	/* ofp_group_features: types, capabilities, max_groups[4], actions[4] */
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	uint8_t *p = mp_put(&r, 40);
	wr32(p, OFS_GROUP_TYPES_ALL);
	wr32(p + 4, OFS_GROUP_CAPABILITIES);
	for (int i = 0; i < 4; i++)
		wr32(p + 8 + 4 * i, OFS_MAX_GROUPS);
	uint32_t acts = 0;
	for (unsigned i = 0; i < RTE_DIM(tf_actions); i++)
		acts |= 1u << tf_actions[i];
	for (int i = 0; i < 4; i++)
		wr32(p + 24 + 4 * i, acts);
	mp_end(&r);
}

/* OFPMP_METER and OFPMP_METER_CONFIG (body: meter_id, pad 4). */
static void mp_meter(const struct mp_req *q)
{
	uint32_t mid = rd32(q->body);
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	struct ofs_meter *m;
	for (unsigned i = 0; (m = ofs_idt_next(&ofs_dp.meters, &i));) {
		if (mid != OFPM_ALL && m->id != mid)
			continue;
		if (q->type == OFPMP_METER_CONFIG) {
			/* ofp_meter_config: length 2, flags 2, meter_id 4; bands */
			uint8_t *p = mp_put(&r, 8 + m->raw_len);
			wr16(p, (uint16_t)(8 + m->raw_len));
			wr16(p + 2, m->flags);
			wr32(p + 4, m->id);
			memcpy(p + 8, m->raw_bands, m->raw_len);
		} else {
			/* ofp_meter_stats: meter_id, len 2, pad 6, flow_count, packet_in_count,
			 * byte_in_count, duration 8 = 40; per band packets and bytes, 16 */
			size_t n = 40 + 16u * m->n_bands;
			uint8_t *p = mp_put(&r, n);
			wr32(p, m->id);
			wr16(p + 4, (uint16_t)n);
			wr32(p + 12, meter_refs(m->id));
			wr64(p + 16, m->packets);
			wr64(p + 24, m->bytes);
			ofs_put_duration(p + 32, m->created_ns);
			for (int b = 0; b < m->n_bands; b++) {
				wr64(p + 40 + 16 * b, m->bands[b].packets);
				wr64(p + 48 + 16 * b, m->bands[b].bytes);
			}
		}
	}
	mp_end(&r);
}

static void mp_meter_features(const struct mp_req *q)
{
	/* ofp_meter_features: max_meter, band_types, capabilities 4 each, max_bands,
	 * max_color, pad 2 */
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	uint8_t *p = mp_put(&r, 16);
	wr32(p, OFS_MAX_METERS);
	wr32(p + 4, (1u << OFPMBT_DROP) | (1u << OFPMBT_DSCP_REMARK));
	wr32(p + 8, OFS_METER_CAPABILITIES);
	p[12] = OFS_MAX_BANDS;
	p[13] = 0;
	mp_end(&r);
}

static void mp_table_features(const struct mp_req *q)
{
	if (q->blen) {  /* setting table features is not supported */
		mp_refuse(q, OFS_ERR(OFPET_TABLE_FEATURES_FAILED, OFPTFC_EPERM));
		return;
	}
	struct mp r;
	mp_begin(&r, q->out, q->type, q->xid);
	for (int t = 0; t < OFS_N_TABLES; t++) {
		/* one table's entry never straddles two replies: size it, then write it */
		size_t n = table_features_put(NULL, (uint8_t)t);
		table_features_put(mp_put(&r, n), (uint8_t)t);
	}
	mp_end(&r);
}

/* ---- the table of handlers ----------------------------------------------------------------- */
#define ANY_LEN 0xffff  /* body_len: any body (the handler checks) */
static const struct mp_type {
	void (*fn)(const struct mp_req *q);
	uint16_t body_len;    /* exact body length, or ANY_LEN */
	uint16_t body_min;    /* with ANY_LEN: at least this */
} mp_types[] = {
	[OFPMP_DESC]           = { mp_desc, 0, 0 },
	[OFPMP_FLOW]           = { mp_flow, ANY_LEN, 40 },
	[OFPMP_AGGREGATE]      = { mp_flow, ANY_LEN, 40 },
	[OFPMP_TABLE]          = { mp_table, 0, 0 },
	[OFPMP_PORT_STATS]     = { mp_port_stats, ANY_LEN, 8 },
	[OFPMP_QUEUE]          = { mp_queue, ANY_LEN, 8 },
	[OFPMP_GROUP]          = { mp_group, ANY_LEN, 8 },
	[OFPMP_GROUP_DESC]     = { mp_group, ANY_LEN, 0 },
	[OFPMP_GROUP_FEATURES] = { mp_group_features, ANY_LEN, 0 },
	[OFPMP_METER]          = { mp_meter, ANY_LEN, 8 },
	[OFPMP_METER_CONFIG]   = { mp_meter, ANY_LEN, 8 },
	[OFPMP_METER_FEATURES] = { mp_meter_features, ANY_LEN, 0 },
	[OFPMP_TABLE_FEATURES] = { mp_table_features, ANY_LEN, 0 },
	[OFPMP_PORT_DESC]      = { mp_port_desc, ANY_LEN, 0 },
};

int ofs_on_multipart_request(struct obuf *out, const uint8_t *msg, size_t len)
{
	ofs_commit();
	if (len < OFS_MP_HDR_LEN) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return 0;
	}
	struct mp_req q = { out, msg, len, rd16(msg + 8), rd32(msg + 4), msg + OFS_MP_HDR_LEN,
			    len - OFS_MP_HDR_LEN };
	if (q.type == OFPMP_EXPERIMENTER) {
		mp_refuse(&q, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_EXPERIMENTER));
		return 0;
	}
	const struct mp_type *mt = q.type < RTE_DIM(mp_types) ? &mp_types[q.type] : NULL;
	if (!mt || !mt->fn) {
		mp_refuse(&q, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_MULTIPART));
		return 0;
	}
	if (mt->body_len == ANY_LEN ? q.blen < mt->body_min : q.blen != mt->body_len) {
		mp_refuse(&q, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return 0;
	}
	mt->fn(&q);
	return 0;
}
