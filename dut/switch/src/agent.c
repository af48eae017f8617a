/* agent.c -- the OpenFlow 1.3 agent of ofswitch: one TCP session to the controller, the only
 * writer of flow tables, groups and meters (see ofswitch.h for the publish/RCU protocol).
 *
 * Message handling is split so it can be unit-tested without DPDK workers: ofs_handle_msg()
 * takes one complete message and appends replies to an output buffer. Every refused message
 * gets the OFPT_ERROR type/code the spec names; a header that cannot be framed (length < 8)
 * closes the session. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <rte_hash_crc.h>
#include "ofswitch.h"
#include "agent.h"
#include "flowtable.h"

/* ---- output buffer ------------------------------------------------------------------------ */
void ob_init(struct obuf *b) { b->data = NULL; b->len = b->cap = 0; }
void ob_free(struct obuf *b) { free(b->data); ob_init(b); }
uint8_t *ob_put(struct obuf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 4096;
		while (nc < b->len + n) nc *= 2;
		uint8_t *d = realloc(b->data, nc);
		if (!d) abort();
		b->data = d;
		b->cap = nc;
	}
	uint8_t *p = b->data + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}
static size_t msg_begin(struct obuf *b, uint8_t type, uint32_t xid)
{
	size_t at = b->len;
	uint8_t *h = ob_put(b, 8);
	h[0] = OFP13_VERSION; h[1] = type; wr32(h + 4, xid);
	return at;
}
static void msg_end(struct obuf *b, size_t at) { wr16(b->data + at + 2, (uint16_t)(b->len - at)); }

void ofs_send_error(struct obuf *out, const uint8_t *msg, size_t len, uint32_t err)
{
	size_t at = msg_begin(out, OFPT_ERROR, len >= 8 ? rd32(msg + 4) : 0);
	uint8_t *p = ob_put(out, 4);
	wr16(p, (uint16_t)(err >> 16));
	wr16(p + 2, (uint16_t)err);
	size_t n = len < 64 ? len : 64;
	memcpy(ob_put(out, n), msg, n);
	msg_end(out, at);
}

/* ---- agent state -------------------------------------------------------------------------- */
static struct ofs_flow *dead_flows;
static struct ofs_group *dead_groups[64];
static unsigned n_dead_groups;
static struct ofs_meter *dead_meters[64];
static unsigned n_dead_meters;
static uint32_t role = OFPCR_ROLE_EQUAL;
static uint64_t role_gen;
static bool role_gen_set;
static uint32_t async_cfg[6] = { 0x7, 0x7, 0x7, 0x7, 0xf, 0x0 };
static bool hello_done;  /* version negotiated; later HELLOs are ignored */
static uint32_t n_timed_flows; /* flows with an idle or hard timeout, in all tables */

static void free_flow(struct ofs_flow *f)
{
	free(f->match_raw);
	free(f->insts);
	free(f);
}

static void free_flow_cb(void *f) { free_flow(f); }

/* Publish every changed table (flowtable.h), hand the removed flows to the deferred frees, and
 * free removed groups and meters after a grace period. */
void ofs_commit(void)
{
	bool all = ofs_tables_commit();
	/* a table whose publish failed still shows its removed flows: keep them for next time */
	while (all && dead_flows) {
		struct ofs_flow *f = dead_flows;
		dead_flows = f->next;
		ofs_defer_free(f, free_flow_cb);
	}
	if (!n_dead_groups && !n_dead_meters)
		return;
	if (ofs_dp.qsbr)
		rte_rcu_qsbr_synchronize(ofs_dp.qsbr, RTE_QSBR_THRID_INVALID);
	for (unsigned i = 0; i < n_dead_groups; i++) {
		free(dead_groups[i]->raw_buckets);
		free(dead_groups[i]);
	}
	n_dead_groups = 0;
	for (unsigned i = 0; i < n_dead_meters; i++) {
		free(dead_meters[i]->raw_bands);
		free(dead_meters[i]);
	}
	n_dead_meters = 0;
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

uint32_t ofs_actions_check(const uint8_t *a, size_t len, const struct ofs_match *m,
			   bool in_packet_out)
{
	(void)m;
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
			if (et != 0x8100 && et != 0x88a8)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT);
			break;
		}
		case OFPAT_PUSH_MPLS: {
			uint16_t et = rd16(p + 4);
			if (l != 8) return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			if (et != 0x8847 && et != 0x8848)
				return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_ARGUMENT);
			break;
		}
		case OFPAT_PUSH_PBB:
			if (l != 8) return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_LEN);
			if (rd16(p + 4) != 0x88e7)
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
		if (t >= 1 && t <= 6) {
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
			e = ofs_actions_check(p + 8, l - 8, &f->match, false);
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
	return 0;
}

/* ---- flow table edits ---------------------------------------------------------------------- */
static bool match_equal(const struct ofs_match *a, const struct ofs_match *b)
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

static struct ofs_flow *htab_find(struct ofs_table *tb, uint16_t priority,
				  const struct ofs_match *m)
{
	if (!tb->hsize)
		return NULL;
	uint32_t h = flow_hash(priority, m);
	for (struct ofs_flow *g = tb->htab[h & (tb->hsize - 1)]; g; g = g->hnext)
		if (g->hash == h && g->priority == priority && match_equal(&g->match, m))
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

/* Add f to tb (prepared, f staged in the lookup structure, hash and mask group reserved). */
static void link_flow(struct ofs_table *tb, struct ofs_flow *f)
{
	list_add(tb, f);
	htab_insert(tb, f);
	ofs_table_group_add(tb, f);
	if (f->idle_timeout || f->hard_timeout)
		n_timed_flows++;
	tb->n_flows++;
}

/* Unlink one flow from its table (list, hash, lookup structure) and queue it for freeing after
 * the commit. tb must be prepared (ofs_table_prepare). */
static void unlink_flow(struct ofs_table *tb, struct ofs_flow *f)
{
	list_del(f);
	htab_remove(tb, f);
	ofs_table_group_remove(tb, f);
	ofs_table_stage_remove(tb, f);
	if (f->idle_timeout || f->hard_timeout)
		n_timed_flows--;
	tb->n_flows--;
	f->next = dead_flows;
	dead_flows = f;
}

/* flow f lies inside the (possibly wider) request match r */
static bool match_covers(const struct ofs_match *r, const struct ofs_match *f)
{
	const uint64_t *rv = (const uint64_t *)&r->value, *rm = (const uint64_t *)&r->mask;
	const uint64_t *fv = (const uint64_t *)&f->value, *fm = (const uint64_t *)&f->mask;
	for (size_t i = 0; i < OFS_KEY_WORDS; i++)
		if ((fm[i] & rm[i]) != rm[i] || (fv[i] & rm[i]) != rv[i])
			return false;
	return true;
}

static bool actions_output_to(const uint8_t *a, uint16_t len, uint32_t port, uint32_t group)
{
	for (uint16_t o = 0; o + 8 <= len; o += rd16(a + o + 2)) {
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

static bool flow_outputs(const struct ofs_flow *f, uint32_t port, uint32_t group)
{
	if (port == OFPP_ANY && group == OFPG_ANY)
		return true;
	return actions_output_to(f->apply, f->apply_len, port, group) ||
	       actions_output_to(f->write, f->write_len, port, group);
}

static void send_flow_removed(struct obuf *out, struct ofs_flow *f, uint8_t reason)
{
	if (!(f->flags & OFPFF_SEND_FLOW_REM))
		return;
	size_t at = msg_begin(out, OFPT_FLOW_REMOVED, 0);
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
	wr64(p + 24, f->packets);
	wr64(p + 32, f->bytes);
	memcpy(ob_put(out, f->match_raw_len), f->match_raw, f->match_raw_len);
	msg_end(out, at);
}

/* Unlink flows for which pred() is true; send FLOW_REMOVED with reason. -1 (and nothing
 * removed from that table on) when a table cannot be prepared for lack of memory. */
static int remove_flows(struct obuf *out, int table, bool (*pred)(struct ofs_flow *, void *),
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
		for (struct ofs_flow *f = tb->flows, *nx; f; f = nx) {
			nx = f->next;
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
		if (f->priority != r->priority || !match_equal(&f->match, &r->match))
			return false;
	} else if (!match_covers(&r->match, &f->match)) {
		return false;
	}
	return flow_outputs(f, r->out_port, r->out_group);
}

/* The flows of tb a MODIFY or DELETE selects: the one of the same priority and match (strict,
 * found in the hash) or every flow the request's match covers (mask groups). Returns how many
 * (in *sel, to free), or -1 when out of memory. */
static int select_flows(struct ofs_table *tb, struct fm_req *r, struct ofs_flow ***sel)
{
	if (r->strict) {
		struct ofs_flow *g = htab_find(tb, r->priority, &r->match);
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
 * made so far are unstaged and the table is left as it was (-1). */
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
	struct ofs_flow **copy = calloc((size_t)n, sizeof(*copy));
	int made = 0;
	bool ok = copy && ofs_table_prepare(tb) == 0;
	for (; ok && made < n; made++) {
		const struct ofs_flow *g = sel[made];
		struct ofs_flow *c = malloc(sizeof(*c));
		if (c) {
			*c = *g;
			c->match_raw = malloc(g->match_raw_len);
			c->insts = malloc(f->insts_len + 1u);
		}
		if (!c || !c->match_raw || !c->insts) {
			if (c) {
				free(c->match_raw);
				free(c->insts);
			}
			free(c);
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
		if (flags & OFPFF_RESET_COUNTS)
			c->packets = c->bytes = 0;
		else {
			c->packets = __atomic_load_n(&g->packets, __ATOMIC_RELAXED);
			c->bytes = __atomic_load_n(&g->bytes, __ATOMIC_RELAXED);
		}
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
		/* c takes g's place in the list and the hash */
		c->next = g->next;
		c->pprev = g->pprev;
		*c->pprev = c;
		if (c->next)
			c->next->pprev = &c->next;
		htab_remove(tb, g);
		htab_insert(tb, c);
		ofs_table_group_replace(tb, g, c);
		ofs_table_stage_remove(tb, g);
		g->next = dead_flows;
		dead_flows = g;
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

static void handle_flow_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_flow_mod: header 8, cookie 8, cookie_mask 8, table_id, command, idle 2, hard 2,
	 * priority 2, buffer_id 4, out_port 4, out_group 4, flags 2, pad 2 = 48; match; insts */
	if (len < 56) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return;
	}
	uint8_t table = msg[24], cmd = msg[25];
	uint16_t flags = rd16(msg + 44);
	struct ofs_flow *f = calloc(1, sizeof(*f));
	size_t mlen;
	uint32_t e = ofs_match_parse(msg + 48, len - 48, &f->match, &mlen);
	if (!e && cmd > OFPFC_DELETE_STRICT)
		e = OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_COMMAND);
	if (!e && table >= OFS_N_TABLES &&
	    !(table == OFPTT_ALL && (cmd == OFPFC_DELETE || cmd == OFPFC_DELETE_STRICT)))
		e = OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_TABLE_ID);
	if (!e && (flags & ~0x1fu))
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
		f->insts = malloc(f->insts_len + 1);
		memcpy(f->insts, msg + 48 + mlen, f->insts_len);
		e = insts_parse(f, f->insts, f->insts_len);
		if (e) {
			ofs_send_error(out, msg, len, e);
			free(f->insts);
			free(f);
			return;
		}
		f->match_raw_len = (uint16_t)mlen;
		f->match_raw = malloc(mlen);
		memcpy(f->match_raw, msg + 48, mlen);
		/* the wire may carry garbage in the match padding: zero it for stats */
		memset(f->match_raw + rd16(msg + 50), 0, mlen - rd16(msg + 50));
		f->created_ns = f->last_used_ns = ofs_now_ns();
	}
	struct ofs_table *tb = table < OFS_N_TABLES ? &ofs_dp.tables[table] : NULL;
	if (cmd == OFPFC_ADD) {
		if ((flags & OFPFF_CHECK_OVERLAP) && ofs_table_overlaps(tb, &f->match, f->priority)) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_OVERLAP));
			free_flow(f);
			return;
		}
		/* the new flow is staged before the one it replaces is removed: a failure leaves
		 * the table as it was */
		if (ofs_table_prepare(tb) || htab_reserve(tb, 1) ||
		    ofs_table_group_reserve(tb, f) || ofs_table_stage_add(tb, f)) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_FLOW_MOD_FAILED,
							      OFPFMFC_TABLE_FULL));
			free_flow(f);
			return;
		}
		struct ofs_flow *same = htab_find(tb, f->priority, &f->match);
		if (same)
			unlink_flow(tb, same);  /* identical match+priority: replaced */
		link_flow(tb, f);
	} else if (cmd == OFPFC_MODIFY || cmd == OFPFC_MODIFY_STRICT) {
		struct fm_req r = { .match = f->match, .cookie = f->cookie,
				    .cookie_mask = rd64(msg + 16), .priority = f->priority,
				    .out_port = OFPP_ANY, .out_group = OFPG_ANY,
				    .strict = cmd == OFPFC_MODIFY_STRICT };
		if (modify_flows(tb, &r, f, flags))
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_FLOW_MOD_FAILED,
							      OFPFMFC_UNKNOWN));
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

/* Idle and hard timeouts; called by the agent loop. */
struct to_arg { uint64_t now; uint8_t reason; };
static bool timed_out(struct ofs_flow *f, void *arg)
{
	struct to_arg *a = arg;
	if (a->reason == OFPRR_HARD_TIMEOUT)
		return f->hard_timeout && a->now - f->created_ns >= f->hard_timeout * 1000000000ull;
	uint64_t lu = __atomic_load_n(&f->last_used_ns, __ATOMIC_RELAXED);
	return f->idle_timeout && a->now - lu >= f->idle_timeout * 1000000000ull;
}
void ofs_expire_flows(struct obuf *out, uint64_t now)
{
	/* Scanning 100k flows ten times a second costs a core: only scan when some flow has a
	 * timeout (the count is exact: kept by add/remove below). */
	if (n_timed_flows == 0)
		return;
	struct to_arg a = { now, OFPRR_HARD_TIMEOUT };
	remove_flows(out, OFPTT_ALL, timed_out, &a, OFPRR_HARD_TIMEOUT);
	a.reason = OFPRR_IDLE_TIMEOUT;
	remove_flows(out, OFPTT_ALL, timed_out, &a, OFPRR_IDLE_TIMEOUT);
}

/* ---- groups ------------------------------------------------------------------------------- */
static int group_slot(uint32_t id)
{
	for (int i = 0; i < OFS_MAX_GROUPS; i++)
		if (ofs_dp.groups[i] && ofs_dp.groups[i]->id == id)
			return i;
	return -1;
}

static bool flow_uses_group(struct ofs_flow *f, void *arg)
{
	uint32_t g = *(uint32_t *)arg;
	return flow_outputs(f, OFPP_ANY, g) && g != OFPG_ANY;
}

static void group_remove(struct obuf *out, int slot)
{
	struct ofs_group *g = ofs_dp.groups[slot];
	uint32_t id = g->id;
	__atomic_store_n(&ofs_dp.groups[slot], NULL, __ATOMIC_RELEASE);
	remove_flows(out, OFPTT_ALL, flow_uses_group, &id, OFPRR_GROUP_DELETE);
	if (n_dead_groups == RTE_DIM(dead_groups))
		ofs_commit();
	dead_groups[n_dead_groups++] = g;
}

static void handle_group_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_group_mod: header 8, command 2, type 1, pad 1, group_id 4 = 16; buckets */
	if (len < 16) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return;
	}
	uint16_t cmd = rd16(msg + 8);
	uint8_t type = msg[10];
	uint32_t id = rd32(msg + 12);
	int slot = group_slot(id);
	if (cmd == OFPGC_DELETE) {
		if (id == OFPG_ALL) {
			for (int i = 0; i < OFS_MAX_GROUPS; i++)
				if (ofs_dp.groups[i])
					group_remove(out, i);
		} else if (slot >= 0) {
			group_remove(out, slot);
		}
		return;
	}
	uint32_t e = 0;
	if (cmd != OFPGC_ADD && cmd != OFPGC_MODIFY)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_COMMAND);
	else if (id > OFPG_MAX)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_INVALID_GROUP);
	else if (type > OFPGT_FF)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_TYPE);
	else if (cmd == OFPGC_ADD && slot >= 0)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_GROUP_EXISTS);
	else if (cmd == OFPGC_MODIFY && slot < 0)
		e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_UNKNOWN_GROUP);
	struct ofs_group *g = NULL;
	if (!e) {
		g = calloc(1, sizeof(*g));
		g->id = id;
		g->type = type;
		g->created_ns = ofs_now_ns();
		g->raw_len = (uint16_t)(len - 16);
		g->raw_buckets = malloc(g->raw_len + 1);
		memcpy(g->raw_buckets, msg + 16, g->raw_len);
		size_t o = 0;
		while (!e && o < g->raw_len) {
			const uint8_t *b = g->raw_buckets + o;
			/* ofp_bucket: len 2, weight 2, watch_port 4, watch_group 4, pad 4; actions */
			if (g->raw_len - o < 16 || rd16(b) < 16 || o + rd16(b) > g->raw_len) {
				e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
				break;
			}
			if (g->n_buckets == OFS_MAX_BUCKETS) {
				e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
				break;
			}
			struct ofs_bucket *bk = &g->buckets[g->n_buckets++];
			bk->weight = rd16(b + 2);
			bk->watch_port = rd32(b + 4);
			bk->watch_group = rd32(b + 8);
			bk->actions = b + 16;
			bk->actions_len = rd16(b) - 16;
			e = ofs_actions_check(bk->actions, bk->actions_len, NULL, false);
			if (!e && type == OFPGT_FF && bk->watch_port == OFPP_ANY &&
			    bk->watch_group == OFPG_ANY)
				e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_WATCH);
			if (!e && type != OFPGT_SELECT && bk->weight != 0)
				e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
			if (!e && actions_output_to(bk->actions, bk->actions_len, OFPP_ANY, id))
				e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_LOOP);
			o += rd16(b);
		}
		if (!e && type == OFPGT_INDIRECT && g->n_buckets != 1)
			e = OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_BUCKET);
	}
	if (e) {
		ofs_send_error(out, msg, len, e);
		if (g) { free(g->raw_buckets); free(g); }
		return;
	}
	if (slot >= 0) {
		struct ofs_group *old = ofs_dp.groups[slot];
		g->created_ns = old->created_ns;
		__atomic_store_n(&ofs_dp.groups[slot], g, __ATOMIC_RELEASE);
		if (n_dead_groups == RTE_DIM(dead_groups))
			ofs_commit();
		dead_groups[n_dead_groups++] = old;
		return;
	}
	for (int i = 0; i < OFS_MAX_GROUPS; i++) {
		if (!ofs_dp.groups[i]) {
			__atomic_store_n(&ofs_dp.groups[i], g, __ATOMIC_RELEASE);
			return;
		}
	}
	ofs_send_error(out, msg, len, OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_OUT_OF_GROUPS));
	free(g->raw_buckets);
	free(g);
}

/* ---- meters ------------------------------------------------------------------------------- */
static int meter_slot(uint32_t id)
{
	for (int i = 0; i < OFS_MAX_METERS; i++)
		if (ofs_dp.meters[i] && ofs_dp.meters[i]->id == id)
			return i;
	return -1;
}

static bool flow_uses_meter(struct ofs_flow *f, void *arg)
{
	return f->meter_id == *(uint32_t *)arg;
}

static void meter_remove(struct obuf *out, int slot)
{
	struct ofs_meter *m = ofs_dp.meters[slot];
	uint32_t id = m->id;
	__atomic_store_n(&ofs_dp.meters[slot], NULL, __ATOMIC_RELEASE);
	remove_flows(out, OFPTT_ALL, flow_uses_meter, &id, OFPRR_METER_DELETE);
	if (n_dead_meters == RTE_DIM(dead_meters))
		ofs_commit();
	dead_meters[n_dead_meters++] = m;
}

static void handle_meter_mod(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_meter_mod: header 8, command 2, flags 2, meter_id 4 = 16; bands */
	if (len < 16) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return;
	}
	uint16_t cmd = rd16(msg + 8), flags = rd16(msg + 10);
	uint32_t id = rd32(msg + 12);
	int slot = meter_slot(id);
	if (cmd == OFPMC_DELETE) {
		if (id == OFPM_ALL) {
			for (int i = 0; i < OFS_MAX_METERS; i++)
				if (ofs_dp.meters[i])
					meter_remove(out, i);
		} else if (slot >= 0) {
			meter_remove(out, slot);
		}
		return;
	}
	uint32_t e = 0;
	if (cmd != OFPMC_ADD && cmd != OFPMC_MODIFY)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_COMMAND);
	else if (id == 0 || id > OFPM_MAX)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_INVALID_METER);
	else if ((flags & ~0xfu) || !(flags & (OFPMF_KBPS | OFPMF_PKTPS)) ||
		 (flags & (OFPMF_KBPS | OFPMF_PKTPS)) == (OFPMF_KBPS | OFPMF_PKTPS))
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_FLAGS);
	else if (cmd == OFPMC_ADD && slot >= 0)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_METER_EXISTS);
	else if (cmd == OFPMC_MODIFY && slot < 0)
		e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_UNKNOWN_METER);
	struct ofs_meter *m = NULL;
	if (!e) {
		m = calloc(1, sizeof(*m));
		rte_spinlock_init(&m->lock);
		m->id = id;
		m->flags = flags;
		m->created_ns = ofs_now_ns();
		m->raw_len = (uint16_t)(len - 16);
		m->raw_bands = malloc(m->raw_len + 1);
		memcpy(m->raw_bands, msg + 16, m->raw_len);
		size_t o = 0;
		while (!e && o < m->raw_len) {
			const uint8_t *b = m->raw_bands + o;
			/* ofp_meter_band_header: type 2, len 2, rate 4, burst_size 4 (+4) */
			if (m->raw_len - o < 16 || rd16(b + 2) < 16 || o + rd16(b + 2) > m->raw_len) {
				e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND);
				break;
			}
			if (m->n_bands == OFS_MAX_BANDS) {
				e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_OUT_OF_BANDS);
				break;
			}
			struct ofs_band *bd = &m->bands[m->n_bands++];
			bd->type = rd16(b);
			bd->rate = rd32(b + 4);
			bd->burst = rd32(b + 8);
			bd->prec_level = b[12];
			if (bd->type != OFPMBT_DROP && bd->type != OFPMBT_DSCP_REMARK)
				e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND);
			else if (bd->type == OFPMBT_DSCP_REMARK && bd->prec_level > 63)
				/* a 6-bit DSCP has no precedence level above 63 */
				e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND_VALUE);
			else if (bd->rate == 0)
				e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_RATE);
			/* bucket depth: the burst when given, else 500 ms worth of the rate, so a
			 * sender whose packets come in lumps (timer ticks of a busy host) still
			 * gets its long-term rate; the extra it allows is one bucket, once */
			double per_s = (flags & OFPMF_PKTPS) ? bd->rate : bd->rate * 1000.0 / 8;
			double depth = (flags & OFPMF_BURST) && bd->burst
				? ((flags & OFPMF_PKTPS) ? bd->burst : bd->burst * 1000.0 / 8)
				: per_s / 2;
			double min_depth = (flags & OFPMF_PKTPS) ? 1 : 1600;
			bd->depth = depth < min_depth ? min_depth : depth;
			bd->tokens = bd->depth;
			o += rd16(b + 2);
		}
		if (!e && m->n_bands == 0) /* 5.7: a meter is its bands; none is no meter */
			e = OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND);
	}
	if (e) {
		ofs_send_error(out, msg, len, e);
		if (m) { free(m->raw_bands); free(m); }
		return;
	}
	if (slot >= 0) {
		struct ofs_meter *old = ofs_dp.meters[slot];
		__atomic_store_n(&ofs_dp.meters[slot], m, __ATOMIC_RELEASE);
		if (n_dead_meters == RTE_DIM(dead_meters))
			ofs_commit();
		dead_meters[n_dead_meters++] = old;
		return;
	}
	for (int i = 0; i < OFS_MAX_METERS; i++) {
		if (!ofs_dp.meters[i]) {
			__atomic_store_n(&ofs_dp.meters[i], m, __ATOMIC_RELEASE);
			return;
		}
	}
	ofs_send_error(out, msg, len, OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_OUT_OF_METERS));
	free(m->raw_bands);
	free(m);
}

/* ---- multipart ----------------------------------------------------------------------------- */
struct mp { struct obuf *out; size_t at; uint16_t type; uint32_t xid; };

static void mp_begin(struct mp *r, struct obuf *out, uint16_t type, uint32_t xid)
{
	r->out = out; r->type = type; r->xid = xid;
	r->at = msg_begin(out, OFPT_MULTIPART_REPLY, xid);
	uint8_t *p = ob_put(out, 8);
	wr16(p, type);
}
/* Before appending n bytes: split into a new message when it would exceed 64 KiB. */
static uint8_t *mp_put(struct mp *r, size_t n)
{
	if (r->out->len - r->at + n > 65000) {
		wr16(r->out->data + r->at + 10, OFPMPF_REPLY_MORE);
		msg_end(r->out, r->at);
		mp_begin(r, r->out, r->type, r->xid);
	}
	return ob_put(r->out, n);
}
static void mp_end(struct mp *r) { msg_end(r->out, r->at); }

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

static void port_stats_sum(int pidx, struct ofs_port_stats *s)
{
	memset(s, 0, sizeof(*s));
	for (unsigned w = 0; w < ofs_dp.n_workers; w++) {
		const struct ofs_port_stats *x = &ofs_dp.workers[w].port_stats[pidx];
		s->rx_packets += x->rx_packets; s->rx_bytes += x->rx_bytes;
		s->tx_packets += x->tx_packets; s->tx_bytes += x->tx_bytes;
		s->tx_dropped += x->tx_dropped; s->rx_dropped += x->rx_dropped;
	}
}

static void put_port(uint8_t *p, const struct ofs_port *pt)
{
	/* ofp_port: port_no 4, pad 4, hw_addr 6, pad 2, name 16, config, state, curr,
	 * advertised, supported, peer, curr_speed, max_speed (4 each) = 64 */
	wr32(p, pt->ofport);
	memcpy(p + 8, pt->mac, 6);
	memcpy(p + 16, pt->name, 15);
	wr32(p + 32, pt->config);
	wr32(p + 36, (pt->link_up ? 0x4 /* LIVE */ : 0x1 /* LINK_DOWN */));
	wr32(p + 40, 0x40 | 0x800); /* 10GB_FD | COPPER */
	wr32(p + 52, 0x40 | 0x800);
	wr32(p + 56, 10000000);
	wr32(p + 60, 10000000);
}

void ofs_send_port_status(struct obuf *out, unsigned pidx, uint8_t reason)
{
	/* ofp_port_status: header, reason 1, pad 7, ofp_port 64 */
	size_t at = msg_begin(out, OFPT_PORT_STATUS, 0);
	uint8_t *p = ob_put(out, 72);
	p[0] = reason;
	put_port(p + 8, &ofs_dp.ports[pidx]);
	msg_end(out, at);
}

static void put_duration(uint8_t *p, uint64_t since_ns)
{
	uint64_t d = ofs_now_ns() - since_ns;
	wr32(p, (uint32_t)(d / 1000000000ull));
	wr32(p + 4, (uint32_t)(d % 1000000000ull));
}

struct stats_req { uint8_t table; uint32_t out_port, out_group; uint64_t cookie, cookie_mask;
		   struct ofs_match match; };

static bool stats_selects(struct ofs_flow *f, const struct stats_req *r)
{
	if (r->table != OFPTT_ALL && f->table_id != r->table)
		return false;
	if ((f->cookie & r->cookie_mask) != (r->cookie & r->cookie_mask))
		return false;
	return match_covers(&r->match, &f->match) && flow_outputs(f, r->out_port, r->out_group);
}

static const char *sw_desc = "ofbench ofswitch 0.1";

static void handle_multipart(struct obuf *out, const uint8_t *msg, size_t len)
{
	if (len < 16) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return;
	}
	uint16_t type = rd16(msg + 8);
	uint32_t xid = rd32(msg + 4);
	const uint8_t *body = msg + 16;
	size_t blen = len - 16;
	struct mp r;
	switch (type) {
	case OFPMP_DESC: {
		if (blen) goto bad_len;
		mp_begin(&r, out, type, xid);
		uint8_t *p = mp_put(&r, 1056);
		strcpy((char *)p, "ofbench");
		strcpy((char *)p + 256, "DPDK software switch");
		strcpy((char *)p + 512, sw_desc);
		strcpy((char *)p + 768, "0");
		snprintf((char *)p + 800, 256, "ofswitch dpid 0x%llx", (unsigned long long)ofs_dp.dpid);
		mp_end(&r);
		return;
	}
	case OFPMP_FLOW: case OFPMP_AGGREGATE: {
		/* ofp_flow_stats_request: table_id, pad 3, out_port, out_group, pad 4, cookie,
		 * cookie_mask = 32; match */
		if (blen < 40) goto bad_len;
		struct stats_req q = { body[0], rd32(body + 4), rd32(body + 8), rd64(body + 16),
				       rd64(body + 24) };
		size_t ml;
		uint32_t e = ofs_match_parse(body + 32, blen - 32, &q.match, &ml);
		if (e) { ofs_send_error(out, msg, len, e); return; }
		if (q.table != OFPTT_ALL && q.table >= OFS_N_TABLES) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_TABLE_ID));
			return;
		}
		uint64_t pk = 0, by = 0;
		uint32_t nf = 0;
		mp_begin(&r, out, type, xid);
		for (int t = 0; t < OFS_N_TABLES; t++) {
			for (struct ofs_flow *f = ofs_dp.tables[t].flows; f; f = f->next) {
				if (!stats_selects(f, &q))
					continue;
				uint64_t fp = __atomic_load_n(&f->packets, __ATOMIC_RELAXED);
				uint64_t fb = __atomic_load_n(&f->bytes, __ATOMIC_RELAXED);
				pk += fp; by += fb; nf++;
				if (type == OFPMP_AGGREGATE)
					continue;
				size_t n = 48 + f->match_raw_len + f->insts_len;
				uint8_t *p = mp_put(&r, n);
				wr16(p, (uint16_t)n);
				p[2] = f->table_id;
				put_duration(p + 4, f->created_ns);
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
		if (type == OFPMP_AGGREGATE) {
			uint8_t *p = mp_put(&r, 24);
			wr64(p, pk); wr64(p + 8, by); wr32(p + 16, nf);
		}
		mp_end(&r);
		return;
	}
	case OFPMP_TABLE: {
		if (blen) goto bad_len;
		mp_begin(&r, out, type, xid);
		for (int t = 0; t < OFS_N_TABLES; t++) {
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
		return;
	}
	case OFPMP_PORT_STATS: {
		if (blen < 8) goto bad_len;
		uint32_t port = rd32(body);
		if (port != OFPP_ANY && ofs_port_idx(port) < 0) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_PORT));
			return;
		}
		mp_begin(&r, out, type, xid);
		for (unsigned i = 0; i < ofs_dp.n_ports; i++) {
			if (port != OFPP_ANY && ofs_dp.ports[i].ofport != port)
				continue;
			struct ofs_port_stats s;
			port_stats_sum((int)i, &s);
			uint8_t *p = mp_put(&r, 112);
			wr32(p, ofs_dp.ports[i].ofport);
			wr64(p + 8, s.rx_packets); wr64(p + 16, s.tx_packets);
			wr64(p + 24, s.rx_bytes); wr64(p + 32, s.tx_bytes);
			wr64(p + 40, s.rx_dropped); wr64(p + 48, s.tx_dropped);
			put_duration(p + 104, ofs_dp.ports[i].created_ns);
		}
		mp_end(&r);
		return;
	}
	case OFPMP_PORT_DESC:
		mp_begin(&r, out, type, xid);
		for (unsigned i = 0; i < ofs_dp.n_ports; i++)
			put_port(mp_put(&r, 64), &ofs_dp.ports[i]);
		mp_end(&r);
		return;
	case OFPMP_QUEUE: {
		/* No queues are configured on any port (set_queue is accepted and has no effect):
		 * ALL queues of any/a real port is an empty reply; a bad port or any named queue is
		 * the QUEUE_OP_FAILED error the spec gives for it. */
		if (blen < 8) goto bad_len;
		uint32_t port = rd32(body), queue = rd32(body + 4);
		if (port != OFPP_ANY && (port == 0 || port > OFPP_MAX || ofs_port_idx(port) < 0)) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_PORT));
			return;
		}
		if (queue != OFPQ_ALL) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_QUEUE));
			return;
		}
		mp_begin(&r, out, type, xid);
		mp_end(&r);
		return;
	}
	case OFPMP_GROUP: case OFPMP_GROUP_DESC: {
		uint32_t gid = OFPG_ALL;
		if (type == OFPMP_GROUP) {
			if (blen < 8) goto bad_len;
			gid = rd32(body);
		}
		mp_begin(&r, out, type, xid);
		for (int i = 0; i < OFS_MAX_GROUPS; i++) {
			struct ofs_group *g = ofs_dp.groups[i];
			if (!g || (gid != OFPG_ALL && g->id != gid))
				continue;
			if (type == OFPMP_GROUP_DESC) {
				uint8_t *p = mp_put(&r, 8 + g->raw_len);
				wr16(p, (uint16_t)(8 + g->raw_len));
				p[2] = g->type;
				wr32(p + 4, g->id);
				memcpy(p + 8, g->raw_buckets, g->raw_len);
			} else {
				size_t n = 40 + 16u * g->n_buckets;
				uint8_t *p = mp_put(&r, n);
				uint32_t refs = 0;
				for (int t = 0; t < OFS_N_TABLES; t++)
					for (struct ofs_flow *f = ofs_dp.tables[t].flows; f; f = f->next)
						refs += flow_outputs(f, OFPP_ANY, g->id);
				wr16(p, (uint16_t)n);
				wr32(p + 4, g->id);
				wr32(p + 8, refs);
				wr64(p + 16, g->packets);
				wr64(p + 24, g->bytes);
				put_duration(p + 32, g->created_ns);
				for (int b = 0; b < g->n_buckets; b++) {
					wr64(p + 40 + 16 * b, g->buckets[b].packets);
					wr64(p + 48 + 16 * b, g->buckets[b].bytes);
				}
			}
		}
		mp_end(&r);
		return;
	}
	case OFPMP_GROUP_FEATURES: {
		mp_begin(&r, out, type, xid);
		uint8_t *p = mp_put(&r, 40);
		wr32(p, 0xf);                 /* all, select, indirect, ff */
		wr32(p + 4, 0x1 | 0x2 | 0x4); /* select weight, select liveness, chaining */
		for (int i = 0; i < 4; i++) wr32(p + 8 + 4 * i, OFS_MAX_GROUPS);
		uint32_t acts = 0;
		const int at[] = {0, 11, 12, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27};
		for (unsigned i = 0; i < RTE_DIM(at); i++) acts |= 1u << at[i];
		for (int i = 0; i < 4; i++) wr32(p + 24 + 4 * i, acts);
		mp_end(&r);
		return;
	}
	case OFPMP_METER: case OFPMP_METER_CONFIG: {
		if (blen < 8) goto bad_len;
		uint32_t mid = rd32(body);
		mp_begin(&r, out, type, xid);
		for (int i = 0; i < OFS_MAX_METERS; i++) {
			struct ofs_meter *m = ofs_dp.meters[i];
			if (!m || (mid != OFPM_ALL && m->id != mid))
				continue;
			if (type == OFPMP_METER_CONFIG) {
				uint8_t *p = mp_put(&r, 8 + m->raw_len);
				wr16(p, (uint16_t)(8 + m->raw_len));
				wr16(p + 2, m->flags);
				wr32(p + 4, m->id);
				memcpy(p + 8, m->raw_bands, m->raw_len);
			} else {
				size_t n = 40 + 16u * m->n_bands;
				uint8_t *p = mp_put(&r, n);
				uint32_t refs = 0;
				for (int t = 0; t < OFS_N_TABLES; t++)
					for (struct ofs_flow *f = ofs_dp.tables[t].flows; f; f = f->next)
						refs += f->meter_id == m->id;
				wr32(p, m->id);
				wr16(p + 4, (uint16_t)n);
				wr32(p + 12, refs);
				wr64(p + 16, m->packets);
				wr64(p + 24, m->bytes);
				put_duration(p + 32, m->created_ns);
				for (int b = 0; b < m->n_bands; b++) {
					wr64(p + 40 + 16 * b, m->bands[b].packets);
					wr64(p + 48 + 16 * b, m->bands[b].bytes);
				}
			}
		}
		mp_end(&r);
		return;
	}
	case OFPMP_METER_FEATURES: {
		mp_begin(&r, out, type, xid);
		uint8_t *p = mp_put(&r, 16);
		wr32(p, OFS_MAX_METERS);
		wr32(p + 4, (1u << OFPMBT_DROP) | (1u << OFPMBT_DSCP_REMARK));
		wr32(p + 8, 0xf);
		p[12] = OFS_MAX_BANDS;
		p[13] = 0;
		mp_end(&r);
		return;
	}
	case OFPMP_TABLE_FEATURES: {
		if (blen) {
			/* setting table features is not supported */
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_TABLE_FEATURES_FAILED, 5 /* EPERM */));
			return;
		}
		mp_begin(&r, out, type, xid);
		for (int t = 0; t < OFS_N_TABLES; t++) {
			/* one table's entry never straddles two replies: size it, then write it */
			size_t n = table_features_put(NULL, (uint8_t)t);
			table_features_put(mp_put(&r, n), (uint8_t)t);
		}
		mp_end(&r);
		return;
	}
	case OFPMP_EXPERIMENTER:
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_EXPERIMENTER));
		return;
	default:
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_MULTIPART));
		return;
	}
bad_len:
	ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
}

/* ---- packet in/out -------------------------------------------------------------------------- */
void ofs_send_packet_in(struct obuf *out, const struct ofs_pin *pin)
{
	size_t at = msg_begin(out, OFPT_PACKET_IN, 0);
	uint8_t *p = ob_put(out, 16);
	wr32(p, OFP_NO_BUFFER);
	wr16(p + 4, pin->total_len);
	p[6] = pin->reason;
	p[7] = pin->table_id;
	wr64(p + 8, pin->cookie);
	uint16_t ml = 4 + 8 + (pin->metadata ? 12 : 0) + (pin->tunnel_id ? 12 : 0);
	uint8_t *m = ob_put(out, (ml + 7u) / 8 * 8);
	wr16(m, 1);
	wr16(m + 2, ml);
	uint8_t *x = m + 4;
	wr16(x, OFPXMC_OPENFLOW_BASIC); x[2] = OXM_IN_PORT << 1; x[3] = 4; wr32(x + 4, pin->in_port);
	x += 8;
	if (pin->metadata) {
		wr16(x, OFPXMC_OPENFLOW_BASIC); x[2] = OXM_METADATA << 1; x[3] = 8;
		memcpy(x + 4, &pin->metadata, 8);
		x += 12;
	}
	if (pin->tunnel_id) {
		wr16(x, OFPXMC_OPENFLOW_BASIC); x[2] = OXM_TUNNEL_ID << 1; x[3] = 8;
		memcpy(x + 4, &pin->tunnel_id, 8);
	}
	ob_put(out, 2);
	memcpy(ob_put(out, pin->data_len), pin->data, pin->data_len);
	msg_end(out, at);
}

#define OFS_ETH_HDR_LEN 14u

static void handle_packet_out(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_packet_out: header 8, buffer_id 4, in_port 4, actions_len 2, pad 6 = 24 */
	if (len < 24) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return;
	}
	uint32_t buffer_id = rd32(msg + 8), in_port = rd32(msg + 12);
	uint16_t alen = rd16(msg + 16);
	if (24u + alen > len) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return;
	}
	if (buffer_id != OFP_NO_BUFFER) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BUFFER_UNKNOWN));
		return;
	}
	if (!(in_port == OFPP_CONTROLLER || in_port == OFPP_LOCAL ||
	      (in_port > 0 && in_port <= OFPP_MAX && ofs_port_idx(in_port) >= 0))) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_PORT));
		return;
	}
	uint32_t e = ofs_actions_check(msg + 24, alen, NULL, true);
	if (e) {
		ofs_send_error(out, msg, len, e);
		return;
	}
	size_t dlen = len - 24 - alen;
	if (dlen < OFS_ETH_HDR_LEN || dlen > OFS_MAX_PKT) {
		/* 7.3.7: no buffer and no frame, or less than an Ethernet header, is no packet */
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_PACKET));
		return;
	}
	if (!ofs_dp.pout_ring)
		return;
	struct ofs_pout *po = malloc(sizeof(*po) + alen + dlen);
	po->in_port = in_port;
	po->actions_len = alen;
	po->data_len = (uint16_t)dlen;
	po->actions = po->buf;
	po->data = po->buf + alen;
	memcpy(po->actions, msg + 24, alen);
	memcpy(po->data, msg + 24 + alen, dlen);
	ofs_commit(); /* the packet must see every flow-mod sent before it */
	while (rte_ring_sp_enqueue(ofs_dp.pout_ring, po) != 0) {
		if (ofs_dp.force_quit) { free(po); return; }
		usleep(100);
	}
}

/* ---- dispatch ----------------------------------------------------------------------------- */
static void simple_reply(struct obuf *out, uint8_t type, uint32_t xid, const void *body, size_t n)
{
	size_t at = msg_begin(out, type, xid);
	if (n)
		memcpy(ob_put(out, n), body, n);
	msg_end(out, at);
}

int ofs_handle_msg(struct obuf *out, const uint8_t *msg, size_t len)
{
	uint8_t type = msg[1];
	uint32_t xid = rd32(msg + 4);
	if (msg[0] != OFP13_VERSION && type != OFPT_HELLO) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_VERSION));
		return 0;
	}
	switch (type) {
	case OFPT_HELLO: {
		if (hello_done)
			return 0;
		/* version negotiation: OK if the peer's header version >= 4 and, when it sends a
		 * version bitmap, the bitmap has bit 4 */
		bool ok = msg[0] >= OFP13_VERSION;
		size_t o = 8;
		while (o + 4 <= len) {
			uint16_t et = rd16(msg + o), el = rd16(msg + o + 2);
			if (el < 4 || o + el > len)
				break;
			if (et == 1 && el >= 8)
				ok = (rd32(msg + o + 4) >> OFP13_VERSION) & 1;
			o += (el + 7u) / 8 * 8;
		}
		if (!ok) {
			size_t at = msg_begin(out, OFPT_ERROR, xid);
			uint8_t *p = ob_put(out, 4);
			wr16(p, OFPET_HELLO_FAILED);
			wr16(p + 2, OFPHFC_INCOMPATIBLE);
			const char *s = "only OpenFlow 1.3 (0x04) is supported";
			memcpy(ob_put(out, strlen(s)), s, strlen(s));
			msg_end(out, at);
			return -1;
		}
		hello_done = true;
		return 0;
	}
	case OFPT_ERROR: case OFPT_ECHO_REPLY:
		return 0;
	case OFPT_ECHO_REQUEST:
		simple_reply(out, OFPT_ECHO_REPLY, xid, msg + 8, len - 8);
		return 0;
	case OFPT_EXPERIMENTER:
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_EXPERIMENTER));
		return 0;
	case OFPT_FEATURES_REQUEST: {
		if (len != 8) goto bad_len;
		uint8_t b[24] = {0};
		wr64(b, ofs_dp.dpid);
		wr32(b + 8, 0);
		b[12] = OFS_N_TABLES;
		wr32(b + 16, 0x1 | 0x2 | 0x4 | 0x8); /* flow, table, port, group stats */
		simple_reply(out, OFPT_FEATURES_REPLY, xid, b, 24);
		return 0;
	}
	case OFPT_GET_CONFIG_REQUEST: {
		if (len != 8) goto bad_len;
		uint8_t b[4];
		wr16(b, ofs_dp.config_flags);
		wr16(b + 2, ofs_dp.miss_send_len);
		simple_reply(out, OFPT_GET_CONFIG_REPLY, xid, b, 4);
		return 0;
	}
	case OFPT_SET_CONFIG:
		if (len != 12) goto bad_len;
		if (rd16(msg + 8) & ~0x7u) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_SWITCH_CONFIG_FAILED, OFPSCFC_BAD_FLAGS));
			return 0;
		}
		ofs_dp.config_flags = rd16(msg + 8);
		ofs_dp.miss_send_len = rd16(msg + 10);
		return 0;
	case OFPT_PACKET_OUT:
		if (role == OFPCR_ROLE_SLAVE) goto slave;
		handle_packet_out(out, msg, len);
		return 0;
	case OFPT_FLOW_MOD:
		if (role == OFPCR_ROLE_SLAVE) goto slave;
		handle_flow_mod(out, msg, len);
		return 0;
	case OFPT_GROUP_MOD:
		if (role == OFPCR_ROLE_SLAVE) goto slave;
		handle_group_mod(out, msg, len);
		return 0;
	case OFPT_METER_MOD:
		if (role == OFPCR_ROLE_SLAVE) goto slave;
		handle_meter_mod(out, msg, len);
		return 0;
	case OFPT_PORT_MOD: {
		/* ofp_port_mod: header, port_no 4, pad 4, hw_addr 6, pad 2, config, mask, advertise, pad */
		if (role == OFPCR_ROLE_SLAVE) goto slave;
		if (len != 40) goto bad_len;
		int pi = ofs_port_idx(rd32(msg + 8));
		if (pi < 0) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_PORT));
			return 0;
		}
		if (memcmp(msg + 16, ofs_dp.ports[pi].mac, 6) != 0) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_HW_ADDR));
			return 0;
		}
		uint32_t cfg = rd32(msg + 24), mask = rd32(msg + 28), adv = rd32(msg + 32);
		if ((cfg | mask) & ~OFPPC_ALL) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_CONFIG));
			return 0;
		}
		if (adv & ~OFPPF_ALL) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_PORT_MOD_FAILED, OFPPMFC_BAD_ADVERTISE));
			return 0;
		}
		uint32_t old = ofs_dp.ports[pi].config;
		ofs_dp.ports[pi].config = (old & ~mask) | (cfg & mask);
		if (ofs_dp.ports[pi].config != old)
			ofs_send_port_status(out, (unsigned)pi, OFPPR_MODIFY);
		return 0;
	}
	case OFPT_TABLE_MOD:
		if (role == OFPCR_ROLE_SLAVE) goto slave;
		if (len != 16) goto bad_len;
		if (msg[8] >= OFS_N_TABLES && msg[8] != OFPTT_ALL)
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_TABLE_MOD_FAILED, OFPTMFC_BAD_TABLE));
		else if (rd32(msg + 12) & ~OFPTC_DEPRECATED_MASK)
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_TABLE_MOD_FAILED, OFPTMFC_BAD_CONFIG));
		return 0;
	case OFPT_MULTIPART_REQUEST:
		ofs_commit();
		handle_multipart(out, msg, len);
		return 0;
	case OFPT_BARRIER_REQUEST:
		if (len != 8) goto bad_len;
		ofs_commit();
		simple_reply(out, OFPT_BARRIER_REPLY, xid, NULL, 0);
		return 0;
	case OFPT_QUEUE_GET_CONFIG_REQUEST: {
		if (len != 16) goto bad_len;
		/* no queues configured: an empty list for any/a real port, BAD_PORT otherwise */
		uint32_t port = rd32(msg + 8);
		if (port != OFPP_ANY && (port == 0 || port > OFPP_MAX || ofs_port_idx(port) < 0)) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_PORT));
			return 0;
		}
		uint8_t b[8] = {0};
		memcpy(b, msg + 8, 4);
		simple_reply(out, OFPT_QUEUE_GET_CONFIG_REPLY, xid, b, 8);
		return 0;
	}
	case OFPT_ROLE_REQUEST: {
		/* ofp_role_request: header, role 4, pad 4, generation_id 8 */
		if (len != 24) goto bad_len;
		uint32_t rl = rd32(msg + 8);
		uint64_t gen = rd64(msg + 16);
		if (rl > OFPCR_ROLE_SLAVE) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_BAD_ROLE));
			return 0;
		}
		if (rl == OFPCR_ROLE_MASTER || rl == OFPCR_ROLE_SLAVE) {
			if (role_gen_set && (int64_t)(gen - role_gen) < 0) {
				ofs_send_error(out, msg, len, OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_STALE));
				return 0;
			}
			role_gen = gen;
			role_gen_set = true;
		}
		if (rl != OFPCR_ROLE_NOCHANGE)
			role = rl;
		uint8_t b[16] = {0};
		wr32(b, role);
		wr64(b + 8, role_gen);
		simple_reply(out, OFPT_ROLE_REPLY, xid, b, 16);
		return 0;
	}
	case OFPT_GET_ASYNC_REQUEST: {
		if (len != 8) goto bad_len;
		uint8_t b[24];
		for (int i = 0; i < 6; i++) wr32(b + 4 * i, async_cfg[i]);
		simple_reply(out, OFPT_GET_ASYNC_REPLY, xid, b, 24);
		return 0;
	}
	case OFPT_SET_ASYNC:
		if (len != 32) goto bad_len;
		for (int i = 0; i < 6; i++) async_cfg[i] = rd32(msg + 8 + 4 * i);
		return 0;
	default:
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_TYPE));
		return 0;
	}
bad_len:
	ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
	return 0;
slave:
	ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_IS_SLAVE));
	return 0;
}

void ofs_agent_reset_session(void)
{
	role = OFPCR_ROLE_EQUAL;
	hello_done = false;
}

void ofs_send_hello(struct obuf *out)
{
	size_t at = msg_begin(out, OFPT_HELLO, 1);
	uint8_t *p = ob_put(out, 8);
	wr16(p, 1);       /* OFPHET_VERSIONBITMAP */
	wr16(p + 2, 8);
	wr32(p + 4, 1u << OFP13_VERSION);
	msg_end(out, at);
}
