/* Unit tests of ofswitch's OpenFlow message handling and flow-key extraction, without EAL,
 * NICs or a controller: messages go straight into ofs_handle_msg() and the replies are checked
 * byte by byte. Run: build/dut/switch/test_ofswitch_unit (exit 0 = all passed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include "../src/ofswitch.h"
#include "../src/agent.h"
#include "../src/flowtable.h"
#include "../src/flowarena.h"
#include "../src/csum.h"

static int failures, checks;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
	fprintf(stderr, "\n"); } } while (0)

static struct obuf out;

/* Build messages into a buffer */
struct mb { uint8_t b[4096]; size_t n; };
static void mb_hdr(struct mb *m, uint8_t type, uint32_t xid)
{ memset(m, 0, sizeof(*m)); m->b[0] = 4; m->b[1] = type; wr32(m->b + 4, xid); m->n = 8; }
static uint8_t *mb_put(struct mb *m, size_t n) { uint8_t *p = m->b + m->n; memset(p, 0, n); m->n += n; return p; }
static void mb_end(struct mb *m) { wr16(m->b + 2, (uint16_t)m->n); }

static int send_msg(struct mb *m)
{
	out.len = 0;
	return ofs_handle_msg(&out, m->b, m->n);
}

/* First reply's type (or -1) and error type/code */
static int reply_type(void) { return out.len >= 8 ? out.data[1] : -1; }
static uint32_t reply_err(void)
{
	if (out.len < 12 || out.data[1] != OFPT_ERROR) return 0xffffffff;
	return OFS_ERR(rd16(out.data + 8), rd16(out.data + 10));
}

/* An OXM TLV */
static size_t oxm(uint8_t *p, int field, const void *val, const void *mask, int len)
{
	wr16(p, 0x8000); p[2] = (uint8_t)(field << 1 | (mask ? 1 : 0)); p[3] = (uint8_t)(mask ? 2 * len : len);
	memcpy(p + 4, val, len);
	if (mask) memcpy(p + 4 + len, mask, len);
	return 4 + (mask ? 2 * len : len);
}

/* flow_mod with a match made of raw oxm bytes and an apply-actions output:port */
static void flow_mod(struct mb *m, uint8_t cmd, uint8_t table, uint16_t prio, const uint8_t *oxms,
		     size_t oxlen, uint32_t out_port, uint16_t flags)
{
	mb_hdr(m, OFPT_FLOW_MOD, 7);
	uint8_t *f = mb_put(m, 40);
	f[16] = table; f[17] = cmd; wr16(f + 22, prio); wr32(f + 24, OFP_NO_BUFFER);
	wr32(f + 28, OFPP_ANY); wr32(f + 32, OFPG_ANY); wr16(f + 36, flags);
	size_t ml = 4 + oxlen, pl = (ml + 7) / 8 * 8;
	uint8_t *mt = mb_put(m, pl);
	wr16(mt, 1); wr16(mt + 2, (uint16_t)ml); if (oxlen) memcpy(mt + 4, oxms, oxlen);
	if (out_port) {
		uint8_t *in = mb_put(m, 8 + 16);
		wr16(in, OFPIT_APPLY_ACTIONS); wr16(in + 2, 24);
		wr16(in + 8, OFPAT_OUTPUT); wr16(in + 10, 16); wr32(in + 12, out_port); wr16(in + 16, 0xffff);
	}
	mb_end(m);
}

static void setup(void)
{
	memset(&ofs_dp, 0, sizeof(ofs_dp));
	memset(ofs_dp.port_by_of, -1, sizeof(ofs_dp.port_by_of));
	ofs_dp.lookup_ops = &ofs_lookup_simple;
	ofs_dp.dpid = 0x1234;
	ofs_dp.n_workers = 1;
	for (int i = 0; i < 3; i++) {
		ofs_dp.ports[i].ofport = (uint32_t)i + 1;
		ofs_dp.ports[i].link_up = true;
		snprintf(ofs_dp.ports[i].name, 16, "p%d", i + 1);
		ofs_dp.port_by_of[i + 1] = (int8_t)i;
	}
	ofs_dp.n_ports = 3;
	ob_init(&out);
}

static void test_hello_echo_features(void)
{
	struct mb m;
	mb_hdr(&m, OFPT_HELLO, 1);
	uint8_t *e = mb_put(&m, 8); wr16(e, 1); wr16(e + 2, 8); wr32(e + 4, 1u << 4 | 1u << 1);
	mb_end(&m);
	CHECK(send_msg(&m) == 0 && out.len == 0, "hello with bitmap incl. 1.3 accepted");
	ofs_agent_reset_session();
	mb_hdr(&m, OFPT_HELLO, 1); m.b[0] = 1; mb_end(&m);
	CHECK(send_msg(&m) < 0 && reply_err() == OFS_ERR(OFPET_HELLO_FAILED, OFPHFC_INCOMPATIBLE),
	      "OF1.0-only hello refused");
	ofs_agent_reset_session();
	mb_hdr(&m, OFPT_HELLO, 1); m.b[0] = 6;
	e = mb_put(&m, 8); wr16(e, 1); wr16(e + 2, 8); wr32(e + 4, 1u << 6 | 1u << 5);
	mb_end(&m);
	CHECK(send_msg(&m) < 0, "bitmap without 1.3 refused");
	ofs_agent_reset_session();
	mb_hdr(&m, OFPT_HELLO, 1); mb_end(&m);
	send_msg(&m);
	mb_hdr(&m, OFPT_HELLO, 1); m.b[0] = 1; mb_end(&m);
	CHECK(send_msg(&m) == 0 && out.len == 0, "a HELLO after negotiation is ignored");
	mb_hdr(&m, OFPT_ECHO_REQUEST, 99); memcpy(mb_put(&m, 4), "abcd", 4); mb_end(&m);
	send_msg(&m);
	CHECK(reply_type() == OFPT_ECHO_REPLY && out.len == 12 && rd32(out.data + 4) == 99 &&
	      memcmp(out.data + 8, "abcd", 4) == 0, "echo reply carries xid and payload");
	mb_hdr(&m, OFPT_FEATURES_REQUEST, 5); mb_end(&m);
	send_msg(&m);
	CHECK(reply_type() == OFPT_FEATURES_REPLY && out.len == 32 && rd64(out.data + 8) == 0x1234,
	      "features reply has dpid");
	mb_hdr(&m, OFPT_FEATURES_REQUEST, 5); m.b[0] = 3; mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_VERSION), "bad version");
	mb_hdr(&m, 77, 5); mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_TYPE), "unknown type");
	mb_hdr(&m, OFPT_BARRIER_REQUEST, 5); mb_put(&m, 4); mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN), "barrier with body");
	mb_hdr(&m, OFPT_EXPERIMENTER, 5); mb_put(&m, 8); mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_EXPERIMENTER), "experimenter");
}

static uint32_t flows_in(int t) { return ofs_dp.tables[t].n_flows; }

static void test_flow_mod(void)
{
	struct mb m;
	uint8_t ox[64];
	size_t n = 0;
	uint16_t et = htons(0x0800);
	uint8_t proto = 6;
	uint16_t port = htons(80);
	n += oxm(ox + n, OXM_ETH_TYPE, &et, NULL, 2);
	n += oxm(ox + n, OXM_IP_PROTO, &proto, NULL, 1);
	n += oxm(ox + n, OXM_TCP_DST, &port, NULL, 2);
	flow_mod(&m, OFPFC_ADD, 0, 100, ox, n, 2, OFPFF_SEND_FLOW_REM);
	send_msg(&m);
	CHECK(out.len == 0 && flows_in(0) == 1, "valid add installs (reply len %zu)", out.len);
	send_msg(&m);
	CHECK(out.len == 0 && flows_in(0) == 1, "identical add replaces");
	/* prerequisite missing: tcp_dst without ip_proto */
	n = 0;
	n += oxm(ox + n, OXM_ETH_TYPE, &et, NULL, 2);
	n += oxm(ox + n, OXM_TCP_DST, &port, NULL, 2);
	flow_mod(&m, OFPFC_ADD, 0, 100, ox, n, 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_PREREQ), "bad prereq");
	/* duplicate field */
	n = 0;
	n += oxm(ox + n, OXM_ETH_TYPE, &et, NULL, 2);
	n += oxm(ox + n, OXM_ETH_TYPE, &et, NULL, 2);
	flow_mod(&m, OFPFC_ADD, 0, 100, ox, n, 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_MATCH, OFPBMC_DUP_FIELD), "dup field");
	/* mask on a non-maskable field */
	n = oxm(ox, OXM_ETH_TYPE, &et, &et, 2);
	flow_mod(&m, OFPFC_ADD, 0, 100, ox, n, 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_MASK), "bad mask");
	/* unknown field id */
	n = oxm(ox, 45, &et, NULL, 2);
	flow_mod(&m, OFPFC_ADD, 0, 100, ox, n, 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_FIELD), "bad field");
	/* bad vlan value */
	uint16_t vid = htons(0x3000);
	n = oxm(ox, OXM_VLAN_VID, &vid, NULL, 2);
	flow_mod(&m, OFPFC_ADD, 0, 100, ox, n, 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE), "bad value");
	/* output to a port that does not exist */
	flow_mod(&m, OFPFC_ADD, 0, 100, NULL, 0, 9, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_OUT_PORT), "bad out port");
	/* bad table, bad command */
	flow_mod(&m, OFPFC_ADD, 200, 100, NULL, 0, 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_TABLE_ID), "bad table");
	flow_mod(&m, 9, 0, 100, NULL, 0, 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_COMMAND), "bad command");
	/* overlap check: wildcard flow at the same priority overlaps */
	flow_mod(&m, OFPFC_ADD, 0, 100, NULL, 0, 2, OFPFF_CHECK_OVERLAP);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_OVERLAP), "overlap");
	/* truncated match length */
	flow_mod(&m, OFPFC_ADD, 0, 100, NULL, 0, 2, 0);
	wr16(m.b + 50, 200);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_LEN), "match longer than msg");
	/* flow stats returns the installed match and instructions byte for byte */
	mb_hdr(&m, OFPT_MULTIPART_REQUEST, 11);
	uint8_t *q = mb_put(&m, 8 + 40);
	wr16(q, OFPMP_FLOW); q[8] = OFPTT_ALL; wr32(q + 12, OFPP_ANY); wr32(q + 16, OFPG_ANY);
	wr16(q + 40, 1); wr16(q + 42, 4);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_type() == OFPT_MULTIPART_REPLY && rd16(out.data + 8) == OFPMP_FLOW &&
	      out.len == 16 + 48 + 24 + 24 && rd16(out.data + 16 + 12) == 100,
	      "flow stats: one flow, len %zu", out.len);
	/* delete strict with wrong priority keeps it, with right priority removes + FLOW_REMOVED */
	n = 0;
	n += oxm(ox + n, OXM_ETH_TYPE, &et, NULL, 2);
	n += oxm(ox + n, OXM_IP_PROTO, &proto, NULL, 1);
	n += oxm(ox + n, OXM_TCP_DST, &port, NULL, 2);
	flow_mod(&m, OFPFC_DELETE_STRICT, 0, 99, ox, n, 0, 0);
	send_msg(&m);
	ofs_commit();
	CHECK(flows_in(0) == 1, "strict delete needs the priority");
	flow_mod(&m, OFPFC_DELETE, OFPTT_ALL, 0, NULL, 0, 0, 0);
	send_msg(&m);
	ofs_commit();
	CHECK(flows_in(0) == 0 && reply_type() == OFPT_FLOW_REMOVED &&
	      out.data[8 + 10] == OFPRR_DELETE, "delete all sends FLOW_REMOVED");
}

static void test_group_meter(void)
{
	struct mb m;
	mb_hdr(&m, OFPT_GROUP_MOD, 3);
	uint8_t *g = mb_put(&m, 8 + 32);
	wr16(g, OFPGC_ADD); g[2] = OFPGT_ALL; wr32(g + 4, 5);
	wr16(g + 8, 32); wr32(g + 12, OFPP_ANY); wr32(g + 16, OFPG_ANY);
	wr16(g + 24, OFPAT_OUTPUT); wr16(g + 26, 16); wr32(g + 28, 2);
	mb_end(&m);
	send_msg(&m);
	CHECK(out.len == 0 && ofs_group_find(5), "group add");
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_GROUP_EXISTS), "group exists");
	wr16(m.b + 8, OFPGC_MODIFY); wr32(m.b + 12, 6);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_UNKNOWN_GROUP), "modify unknown");
	wr16(m.b + 8, OFPGC_ADD); m.b[10] = 9;
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_BAD_TYPE), "bad group type");
	mb_hdr(&m, OFPT_METER_MOD, 4);
	uint8_t *mm = mb_put(&m, 8 + 16);
	wr16(mm, OFPMC_ADD); wr16(mm + 2, OFPMF_PKTPS); wr32(mm + 4, 1);
	wr16(mm + 8, OFPMBT_DROP); wr16(mm + 10, 16); wr32(mm + 12, 100);
	mb_end(&m);
	send_msg(&m);
	CHECK(out.len == 0 && ofs_meter_find(1), "meter add");
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_METER_EXISTS), "meter exists");
	wr32(m.b + 12, 2); wr16(m.b + 10, OFPMF_PKTPS | OFPMF_KBPS);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_FLAGS), "meter bad flags");
	wr16(m.b + 10, OFPMF_PKTPS); wr32(m.b + 20, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_METER_MOD_FAILED, OFPMMFC_BAD_RATE), "meter rate 0");
	mb_hdr(&m, OFPT_METER_MOD, 4);
	mm = mb_put(&m, 8);
	wr16(mm, OFPMC_DELETE); wr32(mm + 4, OFPM_ALL);
	mb_end(&m);
	send_msg(&m);
	ofs_commit();
	CHECK(!ofs_meter_find(1), "meter delete all");
	mb_hdr(&m, OFPT_GROUP_MOD, 3);
	g = mb_put(&m, 8);
	wr16(g, OFPGC_DELETE); wr32(g + 4, OFPG_ALL);
	mb_end(&m);
	send_msg(&m);
	ofs_commit();
	CHECK(!ofs_group_find(5), "group delete all");
}


static void reset_tables(void);

/* GROUP_MOD of group id with one bucket of actions a (alen bytes). */
static void group_mod_msg(struct mb *m, uint16_t cmd, uint32_t id, const uint8_t *a, size_t alen)
{
	mb_hdr(m, OFPT_GROUP_MOD, 3);
	uint8_t *g = mb_put(m, 8);
	wr16(g, cmd); g[2] = OFPGT_ALL; wr32(g + 4, id);
	if (alen) {
		uint8_t *b = mb_put(m, 16 + alen);
		wr16(b, (uint16_t)(16 + alen)); wr32(b + 4, OFPP_ANY); wr32(b + 8, OFPG_ANY);
		memcpy(b + 16, a, alen);
	}
	mb_end(m);
}

/* 6.5: a MODIFY that closes a chain of groups into a loop is refused with LOOP (and changes
 * nothing); a chain without a loop is accepted. */
static void test_group_loops(void)
{
	struct mb m;
	uint8_t a[8] = {0};
	wr16(a, OFPAT_GROUP); wr16(a + 2, 8);
	group_mod_msg(&m, OFPGC_ADD, 3, NULL, 0);
	send_msg(&m);
	wr32(a + 4, 3);
	group_mod_msg(&m, OFPGC_ADD, 2, a, 8);   /* 2 -> 3 */
	send_msg(&m);
	wr32(a + 4, 2);
	group_mod_msg(&m, OFPGC_ADD, 1, a, 8);   /* 1 -> 2 -> 3 */
	send_msg(&m);
	CHECK(out.len == 0 && ofs_group_find(1) && ofs_group_find(2), "a chain is accepted");
	wr32(a + 4, 1);
	group_mod_msg(&m, OFPGC_MODIFY, 3, a, 8); /* 3 -> 1 -> 2 -> 3: a loop */
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_LOOP),
	      "a loop through two other groups: LOOP (0x%x)", reply_err());
	CHECK(ofs_group_find(3) && ofs_group_find(3)->n_buckets == 0, "the looping MODIFY changed nothing");
	wr32(a + 4, 3);
	group_mod_msg(&m, OFPGC_MODIFY, 3, a, 8); /* 3 -> 3 */
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_GROUP_MOD_FAILED, OFPGMFC_LOOP), "a self loop: LOOP");
	group_mod_msg(&m, OFPGC_DELETE, OFPG_ALL, NULL, 0);
	send_msg(&m);
	ofs_commit();
}

/* An action list inside an apply- or write-actions instruction of a FLOW_MOD in table 0. */
static void flow_mod_actions(struct mb *m, const uint8_t *oxms, size_t oxlen, uint16_t inst,
			     const uint8_t *a, size_t alen)
{
	flow_mod(m, OFPFC_ADD, 0, 10, oxms, oxlen, 0, 0);
	uint8_t *in = mb_put(m, 8 + alen);
	wr16(in, inst); wr16(in + 2, (uint16_t)(8 + alen));
	memcpy(in + 8, a, alen);
	mb_end(m);
}
static size_t act_set_field(uint8_t *p, int field, const void *val, int len)
{
	size_t l = (4 + 4 + (size_t)len + 7) / 8 * 8;
	memset(p, 0, l);
	wr16(p, OFPAT_SET_FIELD); wr16(p + 2, (uint16_t)l);
	oxm(p + 4, field, val, NULL, len);
	return l;
}
static size_t act_push(uint8_t *p, uint16_t type, uint16_t ethertype)
{
	memset(p, 0, 8);
	wr16(p, type); wr16(p + 2, 8); wr16(p + 4, ethertype);
	return 8;
}

/* 7.2.5: a set-field's prerequisites are those of the packet at that action: the match as
 * the earlier actions changed it (push/pop/set-field), for the action set after its pushes. */
static void test_set_field_prereq(void)
{
	reset_tables();
	struct mb m;
	uint8_t ox[32], a[128];
	uint16_t ip = htons(0x0800);
	size_t nox = oxm(ox, OXM_ETH_TYPE, &ip, NULL, 2);
	uint8_t pcp = 3, v4[4] = { 10, 0, 0, 9 };
	uint8_t lbl[4] = { 0, 0, 0, 7 };
	const uint32_t bad = OFS_ERR(OFPET_BAD_ACTION, OFPBAC_MATCH_INCONSISTENT);
	size_t n = act_set_field(a, OXM_IPV4_SRC, v4, 4);
	flow_mod_actions(&m, NULL, 0, OFPIT_APPLY_ACTIONS, a, n);
	send_msg(&m);
	CHECK(reply_err() == bad, "set ipv4_src without eth_type=IPv4: MATCH_INCONSISTENT");
	flow_mod_actions(&m, ox, nox, OFPIT_APPLY_ACTIONS, a, n);
	send_msg(&m);
	CHECK(out.len == 0, "set ipv4_src with eth_type=IPv4: accepted");
	n = act_set_field(a, OXM_VLAN_PCP, &pcp, 1);
	flow_mod_actions(&m, ox, nox, OFPIT_APPLY_ACTIONS, a, n);
	send_msg(&m);
	CHECK(reply_err() == bad, "set vlan_pcp on an untagged match: MATCH_INCONSISTENT");
	n = act_push(a, OFPAT_PUSH_VLAN, 0x8100);
	n += act_set_field(a + n, OXM_VLAN_PCP, &pcp, 1);
	flow_mod_actions(&m, ox, nox, OFPIT_APPLY_ACTIONS, a, n);
	send_msg(&m);
	CHECK(out.len == 0, "push_vlan then set vlan_pcp: accepted (0x%x)", reply_err());
	n = act_set_field(a, OXM_VLAN_PCP, &pcp, 1);
	n += act_push(a + n, OFPAT_PUSH_VLAN, 0x8100);
	flow_mod_actions(&m, ox, nox, OFPIT_APPLY_ACTIONS, a, n);
	send_msg(&m);
	CHECK(reply_err() == bad, "set vlan_pcp BEFORE push_vlan in apply-actions: refused");
	flow_mod_actions(&m, ox, nox, OFPIT_WRITE_ACTIONS, a, n);
	send_msg(&m);
	CHECK(out.len == 0, "the same in write-actions (the set pushes first): accepted (0x%x)",
	      reply_err());
	n = act_push(a, OFPAT_PUSH_MPLS, 0x8847);
	n += act_set_field(a + n, OXM_MPLS_LABEL, lbl, 4);
	flow_mod_actions(&m, ox, nox, OFPIT_APPLY_ACTIONS, a, n);
	send_msg(&m);
	CHECK(out.len == 0, "push_mpls then set mpls_label: accepted (0x%x)", reply_err());
	n = act_push(a, OFPAT_PUSH_MPLS, 0x8847);
	n += act_set_field(a + n, OXM_IPV4_SRC, v4, 4);
	flow_mod_actions(&m, ox, nox, OFPIT_APPLY_ACTIONS, a, n);
	send_msg(&m);
	CHECK(reply_err() == bad, "set ipv4_src after push_mpls (no IPv4 header now): refused");
	reset_tables();
}

static void test_multipart_misc(void)
{
	struct mb m;
	int types[] = { OFPMP_DESC, OFPMP_TABLE, OFPMP_PORT_DESC, OFPMP_GROUP_FEATURES,
			OFPMP_METER_FEATURES, OFPMP_TABLE_FEATURES, OFPMP_GROUP_DESC };
	for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		mb_hdr(&m, OFPT_MULTIPART_REQUEST, 20);
		wr16(mb_put(&m, 8), (uint16_t)types[i]);
		mb_end(&m);
		send_msg(&m);
		CHECK(reply_type() == OFPT_MULTIPART_REPLY && rd16(out.data + 8) == types[i],
		      "multipart %d answered", types[i]);
	}
	mb_hdr(&m, OFPT_MULTIPART_REQUEST, 20);
	uint8_t *q = mb_put(&m, 16); wr16(q, OFPMP_PORT_STATS); wr32(q + 8, OFPP_ANY);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_type() == OFPT_MULTIPART_REPLY && out.len == 16 + 3 * 112, "port stats of 3 ports");
	mb_hdr(&m, OFPT_MULTIPART_REQUEST, 20);
	wr16(mb_put(&m, 8), 99);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_MULTIPART), "bad multipart");
	mb_hdr(&m, OFPT_ROLE_REQUEST, 21);
	q = mb_put(&m, 16); wr32(q, 7);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_BAD_ROLE), "bad role");
	mb_hdr(&m, OFPT_ROLE_REQUEST, 21);
	q = mb_put(&m, 16); wr32(q, OFPCR_ROLE_MASTER); wr64(q + 8, 5);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_type() == OFPT_ROLE_REPLY && rd32(out.data + 8) == OFPCR_ROLE_MASTER, "role master");
	wr64(m.b + 16, 3);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_STALE), "stale generation");
	ofs_agent_reset_session();
	/* packet-out with an unknown in_port */
	mb_hdr(&m, OFPT_PACKET_OUT, 22);
	q = mb_put(&m, 16 + 16 + 60);
	wr32(q, OFP_NO_BUFFER); wr32(q + 4, 77); wr16(q + 8, 16);
	wr16(q + 16, OFPAT_OUTPUT); wr16(q + 18, 16); wr32(q + 20, 2);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_PORT), "packet-out bad in_port");
	wr32(m.b + 8, 5);
	wr32(m.b + 12, OFPP_CONTROLLER);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BUFFER_UNKNOWN), "unknown buffer");
}

/* Table features: every table listed once over the (split) replies, each entry well formed
 * (properties 8-aligned, lengths consistent), and the properties say what the agent accepts. */
static bool tf_has_u32(const uint8_t *prop, uint32_t v)
{
	for (unsigned o = 4; o + 4 <= rd16(prop + 2); o += 4)
		if (rd32(prop + o) == v) return true;
	return false;
}
static bool tf_has_u16(const uint8_t *prop, uint16_t v)
{
	for (unsigned o = 4; o + 4 <= rd16(prop + 2); o += 4)
		if (rd16(prop + o) == v) return true;
	return false;
}

static void test_table_features(void)
{
	struct mb m;
	mb_hdr(&m, OFPT_MULTIPART_REQUEST, 30);
	wr16(mb_put(&m, 8), OFPMP_TABLE_FEATURES);
	mb_end(&m);
	send_msg(&m);
	int tables = 0, msgs = 0, bad = 0;
	bool more_ok = true, t0_ok = false, last_ok = false;
	for (size_t mo = 0; mo + 16 <= out.len; ) {
		const uint8_t *msg = out.data + mo;
		uint16_t mlen = rd16(msg + 2);
		if (msg[1] != OFPT_MULTIPART_REPLY || rd16(msg + 8) != OFPMP_TABLE_FEATURES || mlen < 16) {
			bad++;
			break;
		}
		msgs++;
		bool more = rd16(msg + 10) & OFPMPF_REPLY_MORE;
		if (more != (mo + mlen < out.len)) more_ok = false;
		for (size_t o = 16; o < mlen; ) {
			const uint8_t *tf = msg + o;
			uint16_t tlen = rd16(tf);
			if (tlen < 64 || tlen % 8 || o + tlen > mlen || tf[2] != tables) { bad++; break; }
			const uint8_t *props[16] = { 0 };
			for (size_t po = 64; po < tlen; ) {
				uint16_t pt = rd16(tf + po), pl = rd16(tf + po + 2);
				if (pl < 4 || po + (pl + 7u) / 8 * 8 > tlen || pt > 15) { bad++; break; }
				props[pt] = tf + po;
				po += (pl + 7u) / 8 * 8;
			}
			const uint32_t eth_dst_m = 0x80000000u | (OXM_ETH_DST << 1 | 1) << 8 | 12;
			const uint32_t in_port = 0x80000000u | OXM_IN_PORT << 9 | 4;
			const uint32_t ipv4_src = 0x80000000u | OXM_IPV4_SRC << 9 | 4;
			if (tables == 0) {
				t0_ok = props[OFPTFPT_INSTRUCTIONS] && props[OFPTFPT_INSTRUCTIONS_MISS] &&
					props[OFPTFPT_NEXT_TABLES] && props[OFPTFPT_APPLY_ACTIONS] &&
					props[OFPTFPT_WRITE_ACTIONS] && props[OFPTFPT_MATCH] &&
					props[OFPTFPT_WILDCARDS] && props[OFPTFPT_APPLY_SETFIELD] &&
					props[OFPTFPT_WRITE_SETFIELD_MISS] && props[OFPTFPT_APPLY_ACTIONS_MISS];
				CHECK(t0_ok, "table 0 has every property");
				if (!t0_ok) return;
				CHECK(tf_has_u16(props[OFPTFPT_INSTRUCTIONS], OFPIT_GOTO_TABLE) &&
				      tf_has_u16(props[OFPTFPT_INSTRUCTIONS], OFPIT_METER), "t0 instructions");
				CHECK(rd16(props[OFPTFPT_NEXT_TABLES] + 2) == 4 + OFS_N_TABLES - 1 &&
				      props[OFPTFPT_NEXT_TABLES][4] == 1, "t0 next tables 1..%d", OFS_N_TABLES - 1);
				CHECK(tf_has_u16(props[OFPTFPT_APPLY_ACTIONS], OFPAT_GROUP) &&
				      tf_has_u16(props[OFPTFPT_WRITE_ACTIONS], OFPAT_SET_FIELD), "t0 actions");
				CHECK(tf_has_u32(props[OFPTFPT_MATCH], eth_dst_m) &&
				      tf_has_u32(props[OFPTFPT_MATCH], in_port), "t0 match (eth_dst maskable)");
				CHECK(tf_has_u32(props[OFPTFPT_WILDCARDS], in_port), "t0 wildcards");
				CHECK(tf_has_u32(props[OFPTFPT_APPLY_SETFIELD], ipv4_src) &&
				      !tf_has_u32(props[OFPTFPT_APPLY_SETFIELD], in_port), "t0 set-fields");
			}
			if (tables == OFS_N_TABLES - 1)
				last_ok = props[OFPTFPT_INSTRUCTIONS] &&
					!tf_has_u16(props[OFPTFPT_INSTRUCTIONS], OFPIT_GOTO_TABLE) &&
					props[OFPTFPT_NEXT_TABLES] && rd16(props[OFPTFPT_NEXT_TABLES] + 2) == 4;
			tables++;
			o += tlen;
		}
		mo += mlen;
	}
	CHECK(!bad && tables == OFS_N_TABLES, "table features: %d tables, %d malformed", tables, bad);
	CHECK(msgs > 1 && more_ok, "table features split over %d replies, REPLY_MORE on all but the last", msgs);
	CHECK(last_ok, "last table: no goto-table, no next tables");
	/* setting table features stays refused */
	mb_hdr(&m, OFPT_MULTIPART_REQUEST, 31);
	wr16(mb_put(&m, 8), OFPMP_TABLE_FEATURES);
	mb_put(&m, 64);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_TABLE_FEATURES_FAILED, 5), "set table features: EPERM");
}

/* Queues: none configured. Empty answers for ALL, errors for a bad port or a named queue. */
static void test_queues(void)
{
	struct mb m;
	uint32_t ports[] = { OFPP_ANY, 2, 9, OFPP_ANY }, queues[] = { OFPQ_ALL, OFPQ_ALL, OFPQ_ALL, 1 };
	uint32_t want[] = { 0, 0, OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_PORT),
			    OFS_ERR(OFPET_QUEUE_OP_FAILED, OFPQOFC_BAD_QUEUE) };
	for (int i = 0; i < 4; i++) {
		mb_hdr(&m, OFPT_MULTIPART_REQUEST, 40);
		uint8_t *q = mb_put(&m, 16);
		wr16(q, OFPMP_QUEUE); wr32(q + 8, ports[i]); wr32(q + 12, queues[i]);
		mb_end(&m);
		send_msg(&m);
		if (want[i])
			CHECK(reply_err() == want[i], "queue stats %d: error %08x", i, reply_err());
		else
			CHECK(reply_type() == OFPT_MULTIPART_REPLY && out.len == 16, "queue stats %d: empty", i);
	}
	for (int i = 0; i < 3; i++) {
		mb_hdr(&m, OFPT_QUEUE_GET_CONFIG_REQUEST, 41);
		wr32(mb_put(&m, 8), ports[i]);
		mb_end(&m);
		send_msg(&m);
		if (want[i])
			CHECK(reply_err() == want[i], "queue config %d: bad port", i);
		else
			CHECK(reply_type() == OFPT_QUEUE_GET_CONFIG_REPLY && out.len == 16 &&
			      rd32(out.data + 8) == ports[i], "queue config %d: no queues", i);
	}
}

/* Random truncations and mutations: never crash, never read past the message. */
static void test_truncations(void)
{
	struct mb m;
	uint16_t et = htons(0x86dd);
	uint8_t ox[32];
	size_t n = oxm(ox, OXM_ETH_TYPE, &et, NULL, 2);
	flow_mod(&m, OFPFC_ADD, 0, 1, ox, n, 2, 0);
	struct mb full = m;
	srand(1);
	for (int i = 0; i < 20000; i++) {
		struct mb x = full;
		size_t len = 8 + (size_t)rand() % (full.n - 7);
		for (int k = rand() % 4; k > 0; k--)
			x.b[8 + rand() % (int)(full.n - 8)] = (uint8_t)rand();
		x.b[1] = (uint8_t)(rand() % 30);
		wr16(x.b + 2, (uint16_t)len);
		/* copy into an exact-size heap buffer so ASan/valgrind would catch over-reads */
		uint8_t *b = malloc(len);
		memcpy(b, x.b, len);
		out.len = 0;
		ofs_handle_msg(&out, b, len);
		free(b);
	}
	ofs_commit();
	CHECK(1, "survived");
}

static void test_key_extract(void)
{
	uint8_t pkt[128] = {0};
	/* ethernet / vlan 5 pcp 3 / ipv4 tcp 1234 -> 80 */
	memset(pkt, 0x22, 6); memset(pkt + 6, 0x11, 6);
	wr16(pkt + 12, 0x8100); wr16(pkt + 14, 3 << 13 | 5); wr16(pkt + 16, 0x0800);
	uint8_t *ip = pkt + 18;
	ip[0] = 0x45; ip[1] = 0x2a << 2 | 1; wr16(ip + 2, 40); ip[8] = 64; ip[9] = 6;
	wr32(ip + 12, 0x0a000001); wr32(ip + 16, 0x0a000002);
	wr16(ip + 20, 1234); wr16(ip + 22, 80);
	struct ofs_key k = {0};
	struct ofs_layout lay;
	k.in_port = htonl(3);
	ofs_key_extract(pkt, 58, &k, &lay);
	CHECK(ntohl(k.in_port) == 3 && ntohs(k.vlan_vid) == (0x1000 | 5) && k.vlan_pcp == 3,
	      "vlan fields");
	CHECK(ntohs(k.eth_type) == 0x0800 && k.ip_proto == 6 && k.ip_dscp == 0x2a && k.ip_ecn == 1,
	      "ip fields");
	CHECK(ntohl(k.ipv4_src) == 0x0a000001 && ntohs(k.tp_src) == 1234 && ntohs(k.tp_dst) == 80,
	      "l4 fields");
	CHECK(lay.l3_ofs == 18 && lay.l4_ofs == 38 && lay.vlan_ofs == 12, "layout");
	/* truncated frames never read past len */
	for (uint32_t len = 0; len < 58; len++)
		ofs_key_extract(pkt, len, &k, &lay);
	CHECK(1, "truncated extract");
}

/* Differential test: the dut/classifier backend must pick the same flow as the simple list.
 * Distinct priorities, so ties (undefined in OpenFlow) do not matter. */
static void test_lookup_backends(void)
{
#ifdef OFS_HAVE_CLASSIFIER
	enum { NF = 3000, NK = 20000 };
	struct ofs_flow *flows = calloc(NF, sizeof(*flows));
	struct ofs_flow **ptrs = malloc(NF * sizeof(*ptrs));
	srand(7);
	for (int i = 0; i < NF; i++) {
		struct ofs_flow *f = &flows[i];
		f->priority = (uint16_t)(i + 1);
		uint8_t *v = (uint8_t *)&f->match.value, *mk = (uint8_t *)&f->match.mask;
		/* a few fields: in_port, eth_dst (masked), ipv4_src/dst (prefix), tp_dst, nd_target */
		int pick = rand();
		if (pick & 1) { f->match.mask.in_port = 0xffffffff; f->match.value.in_port = htonl(rand() % 4); }
		if (pick & 2) { for (int b = 0; b < 6; b++) f->match.mask.eth_dst[b] = (uint8_t)(rand() & 1 ? 0xff : 0); }
		if (pick & 4) { uint32_t len = (uint32_t)(rand() % 33); f->match.mask.ipv4_src = len ? htonl(~0u << (32 - len)) : 0; }
		if (pick & 8) { f->match.mask.tp_dst = 0xffff; }
		if ((pick & 0x70) == 0x70) { memset(f->match.mask.nd_target, 0xff, 16); }
		for (size_t b = 0; b < sizeof(struct ofs_key); b++)
			v[b] = (uint8_t)(rand() & mk[b] & 0x3);  /* small alphabet: many hits */
		ptrs[i] = f;
	}
	CHECK(ofs_lookup_find("tuple") == &ofs_lookup_tuple && ofs_lookup_find("trie") == &ofs_lookup_trie &&
	      ofs_lookup_find("dtree") == &ofs_lookup_dtree &&
	      ofs_lookup_find("simple") == &ofs_lookup_simple && !ofs_lookup_find("nope") &&
	      ofs_lookup_find(OFS_LOOKUP_DEFAULT) == &ofs_lookup_tuple, "--lookup names");
	void *a = ofs_lookup_build(&ofs_lookup_simple, ptrs, NF);
	const struct ofs_lookup_ops *const backends[] = { &ofs_lookup_tuple, &ofs_lookup_dtree,
							   &ofs_lookup_trie };
	for (size_t be = 0; be < RTE_DIM(backends); be++) {
	const struct ofs_lookup_ops *ops = backends[be];
	void *b = ofs_lookup_build(ops, ptrs, NF);
	CHECK(a && b, "simple and %s build", ops->name);
	int diff = 0, hits = 0, bdiff = 0;
	for (int k = 0; k < NK; k += OFS_BURST) {
		struct ofs_key keys[OFS_BURST];
		const struct ofs_key *kp[OFS_BURST];
		struct ofs_flow *fb_burst[OFS_BURST];
		for (int j = 0; j < OFS_BURST; j++) {
			uint8_t *kb = (uint8_t *)&keys[j];
			for (size_t i = 0; i < sizeof(keys[j]); i++)
				kb[i] = (uint8_t)(rand() & 0x3);
			kp[j] = &keys[j];
		}
		ops->lookup_burst(b, kp, OFS_BURST, fb_burst);
		for (int j = 0; j < OFS_BURST; j++) {
			struct ofs_flow *fa = ofs_lookup_simple.lookup(a, &keys[j]);
			struct ofs_flow *fb = ops->lookup(b, &keys[j]);
			hits += fa != NULL;
			diff += fa != fb;
			bdiff += fb != fb_burst[j];
		}
	}
	CHECK(diff == 0, "simple and %s disagree on %d of %d keys", ops->name, diff, NK);
	CHECK(bdiff == 0, "%s lookup and lookup_burst disagree on %d keys", ops->name, bdiff);
	CHECK(hits > 0, "the test keys hit some flows");
	ops->destroy(b);
	}
	ofs_lookup_simple.destroy(a);
	free(flows);
	free(ptrs);
#endif
}

/* ---- incremental tables: random FLOW_MODs vs a trivial model and a full rebuild ---------- */

/* Drop every table's flows and lookup structure (so a test can switch backends). */
static void reset_tables(void)
{
	struct mb m;
	flow_mod(&m, OFPFC_DELETE, OFPTT_ALL, 0, NULL, 0, 0, 0);
	send_msg(&m);
	ofs_commit();
	for (int t = 0; t < OFS_N_TABLES; t++) {
		struct ofs_table *tb = &ofs_dp.tables[t];
		if (tb->lx)
			ofs_dp.lookup_ops->destroy(tb->lx);
		free(tb->view);
		free(tb->spare);
		free(tb->spare_grow);
		free(tb->mask_bits);
		free(tb->pend);
		free(tb->htab);
		for (uint32_t g = 0; g < tb->n_mgroups; g++) {
			CHECK(tb->mgroups[g].n == 0, "an emptied table's mask groups are empty");
			free(tb->mgroups[g].flows);
			free(tb->mgroups[g].vals);
		}
		free(tb->mgroups);
		free(tb->mg_hash);
		memset(tb, 0, sizeof(*tb));
	}
}

/* the model: what the table must hold */
struct model_flow { uint16_t prio; struct ofs_match match; uint64_t cookie; uint32_t port; };
static struct model_flow model[4096];
static int n_model;

static bool model_covers(const struct ofs_match *r, const struct ofs_match *f)
{
	const uint64_t *rv = (const uint64_t *)&r->value, *rm = (const uint64_t *)&r->mask;
	const uint64_t *fv = (const uint64_t *)&f->value, *fm = (const uint64_t *)&f->mask;
	for (size_t i = 0; i < OFS_KEY_WORDS; i++)
		if ((fm[i] & rm[i]) != rm[i] || (fv[i] & rm[i]) != rv[i])
			return false;
	return true;
}

static bool same_match(const struct ofs_match *a, const struct ofs_match *b)
{
	return !memcmp(&a->value, &b->value, sizeof(a->value)) &&
	       !memcmp(&a->mask, &b->mask, sizeof(a->mask));
}

/* A random match of one of the four mask shapes (or in_port, or all-wildcard) over a
 * small alphabet, as OXM bytes and as (value, mask). */
static size_t random_match(uint8_t *ox, struct ofs_match *mt)
{
	static const uint8_t plen[] = { 8, 16, 24, 28, 30, 32 };
	memset(mt, 0, sizeof(*mt));
	size_t n = 0;
	int shape = rand() % 7;
	if (shape == 6)
		return 0;  /* match everything */
	if (shape == 5) {
		uint32_t p = htonl((uint32_t)(rand() % 3 + 1));
		mt->value.in_port = p; mt->mask.in_port = 0xffffffff;
		return oxm(ox, OXM_IN_PORT, &p, NULL, 4);
	}
	uint16_t et = htons(0x0800);
	mt->value.eth_type = et; mt->mask.eth_type = 0xffff;
	n += oxm(ox + n, OXM_ETH_TYPE, &et, NULL, 2);
	uint32_t dst = htonl(0x0a000000u | (uint32_t)(rand() & 3) << 8 | (uint32_t)(rand() & 15));
	uint32_t src = htonl(0x0b000000u | (uint32_t)(rand() & 3) << 16);
	uint8_t proto = 17;
	uint16_t udp = htons((uint16_t)(rand() % 3));
	uint32_t dm = htonl(~0u << (32 - plen[rand() % 6]));
	uint32_t sm = htonl(0xffff0000u);
	switch (shape) {
	case 0:  /* eth_type + ipv4_dst + udp_dst */
		mt->value.ipv4_dst = dst; mt->mask.ipv4_dst = 0xffffffff;
		mt->value.ip_proto = proto; mt->mask.ip_proto = 0xff;
		mt->value.tp_dst = udp; mt->mask.tp_dst = 0xffff;
		n += oxm(ox + n, OXM_IP_PROTO, &proto, NULL, 1);
		n += oxm(ox + n, OXM_IPV4_DST, &dst, NULL, 4);
		n += oxm(ox + n, OXM_UDP_DST, &udp, NULL, 2);
		break;
	case 1:  /* ipv4_dst/prefix */
	case 4:
		dst &= dm;
		mt->value.ipv4_dst = dst; mt->mask.ipv4_dst = dm;
		n += oxm(ox + n, OXM_IPV4_DST, &dst, &dm, 4);
		break;
	case 2:  /* ipv4_src/16 + ipv4_dst/16 */
		dst &= htonl(0xffff0000u);
		dm = htonl(0xffff0000u);
		mt->value.ipv4_src = src; mt->mask.ipv4_src = sm;
		mt->value.ipv4_dst = dst; mt->mask.ipv4_dst = dm;
		n += oxm(ox + n, OXM_IPV4_SRC, &src, &sm, 4);
		n += oxm(ox + n, OXM_IPV4_DST, &dst, &dm, 4);
		break;
	case 3:  /* ipv4_dst/28 + ip_proto */
		dm = htonl(0xfffffff0u);
		dst &= dm;
		mt->value.ipv4_dst = dst; mt->mask.ipv4_dst = dm;
		mt->value.ip_proto = proto; mt->mask.ip_proto = 0xff;
		n += oxm(ox + n, OXM_IP_PROTO, &proto, NULL, 1);
		n += oxm(ox + n, OXM_IPV4_DST, &dst, &dm, 4);
		break;
	}
	return n;
}

static void random_key(struct ofs_key *k)
{
	memset(k, 0, sizeof(*k));
	k->in_port = htonl((uint32_t)(rand() % 3 + 1));
	k->eth_type = htons(rand() % 8 ? 0x0800 : 0x86dd);
	if (k->eth_type == htons(0x0800)) {
		k->ipv4_dst = htonl(0x0a000000u | (uint32_t)(rand() & 3) << 8 | (uint32_t)(rand() & 15));
		k->ipv4_src = htonl(0x0b000000u | (uint32_t)(rand() & 3) << 16);
		k->ip_proto = rand() % 4 ? 17 : 6;
		k->tp_dst = htons((uint16_t)(rand() % 3));
	}
}

static uint32_t flow_out_port(const struct ofs_flow *f)
{
	return f->apply_len >= 8 ? rd32(f->apply + 4) : 0;
}

/* Does the live table t hold exactly the model (priority, match, cookie, output)? */
static int table_vs_model(int t)
{
	int bad = ofs_dp.tables[t].n_flows != (uint32_t)n_model;
	for (struct ofs_flow *f = ofs_dp.tables[t].flows; f && !bad; f = f->next) {
		int found = 0;
		for (int i = 0; i < n_model && !found; i++)
			found = model[i].prio == f->priority && same_match(&model[i].match, &f->match) &&
				model[i].cookie == f->cookie && model[i].port == flow_out_port(f);
		bad = !found;
	}
	return bad;
}

/* The lookup of key through what the workers see (view + cache-free lookup) must be a flow of
 * the table that matches key with the model's best priority, and the model's action when that
 * best flow is unique; the full rebuild must agree the same way. */
static int check_lookups(int t, int nkeys, void *rebuilt)
{
	const struct ofs_table_view *v = ofs_dp.tables[t].view;
	int bad = 0;
	for (int q = 0; q < nkeys; q += OFS_BURST) {
		struct ofs_key keys[OFS_BURST];
		const struct ofs_key *kp[OFS_BURST];
		struct ofs_flow *got[OFS_BURST];
		for (int j = 0; j < OFS_BURST; j++) {
			random_key(&keys[j]);
			kp[j] = &keys[j];
		}
		if (v)
			ofs_dp.lookup_ops->lookup_burst(v->lx, kp, OFS_BURST, got);
		for (int j = 0; j < OFS_BURST; j++) {
			int best = -1, nbest = 0, port = -1;
			for (int i = 0; i < n_model; i++) {
				if (!ofs_key_matches(&keys[j], &model[i].match))
					continue;
				if (model[i].prio > best) { best = model[i].prio; nbest = 0; }
				if (model[i].prio == best) { nbest++; port = (int)model[i].port; }
			}
			struct ofs_flow *cand[3] = {
				v ? ofs_dp.lookup_ops->lookup(v->lx, &keys[j]) : NULL,
				v ? got[j] : NULL,
				rebuilt ? ofs_dp.lookup_ops->lookup(rebuilt, &keys[j]) : NULL };
			for (int c = 0; c < 3; c++) {
				struct ofs_flow *f = cand[c];
				if (c == 2 && !rebuilt)
					continue;
				if (best < 0) {
					bad += f != NULL;
					continue;
				}
				if (!f || !ofs_key_matches(&keys[j], &f->match) || f->priority != best ||
				    (nbest == 1 && (int)flow_out_port(f) != port))
					bad++;
			}
		}
	}
	return bad;
}

/* the trivial reference of OFPFF_CHECK_OVERLAP: same priority, another match, and some packet
 * matching both */
static bool model_overlaps(uint16_t prio, const struct ofs_match *mt)
{
	for (int i = 0; i < n_model; i++) {
		if (model[i].prio != prio || same_match(&model[i].match, mt))
			continue;
		const uint64_t *av = (const uint64_t *)&model[i].match.value,
			       *am = (const uint64_t *)&model[i].match.mask,
			       *bv = (const uint64_t *)&mt->value, *bm = (const uint64_t *)&mt->mask;
		size_t k = 0;
		while (k < OFS_KEY_WORDS && !((av[k] ^ bv[k]) & am[k] & bm[k]))
			k++;
		if (k == OFS_KEY_WORDS)
			return true;
	}
	return false;
}

static void model_apply(uint8_t cmd, uint16_t prio, const struct ofs_match *mt, uint64_t cookie,
			uint64_t cookie_mask, uint32_t port)
{
	if (cmd == OFPFC_ADD) {
		for (int i = 0; i < n_model; i++)
			if (model[i].prio == prio && same_match(&model[i].match, mt)) {
				model[i] = (struct model_flow){ prio, *mt, cookie, port };
				return;
			}
		model[n_model++] = (struct model_flow){ prio, *mt, cookie, port };
		return;
	}
	bool strict = cmd == OFPFC_MODIFY_STRICT || cmd == OFPFC_DELETE_STRICT;
	for (int i = 0; i < n_model; i++) {
		struct model_flow *f = &model[i];
		bool sel = (f->cookie & cookie_mask) == (cookie & cookie_mask) &&
			   (strict ? f->prio == prio && same_match(&f->match, mt)
				   : model_covers(mt, &f->match));
		if (!sel)
			continue;
		if (cmd == OFPFC_MODIFY || cmd == OFPFC_MODIFY_STRICT) {
			f->port = port;
		} else {
			model[i--] = model[--n_model];
		}
	}
}

static void incremental_run(const struct ofs_lookup_ops *ops, int n_ops)
{
	reset_tables();
	ofs_dp.lookup_ops = ops;
	n_model = 0;
	srand(11);
	int bad_model = 0, bad_lookup = 0, bad_rebuild = 0, commits = 0, errs = 0, overlaps = 0;
	int until_commit = 1;
	for (int op = 0; op < n_ops; op++) {
		struct mb m;
		uint8_t ox[128];
		struct ofs_match mt;
		int r = rand() % 100;
		uint8_t cmd = r < 70 ? OFPFC_ADD : r < 80 ? OFPFC_MODIFY : r < 88 ? OFPFC_MODIFY_STRICT
			    : r < 91 ? OFPFC_DELETE : OFPFC_DELETE_STRICT;
		uint16_t prio = (uint16_t)(rand() % 6 * 100);
		size_t n = random_match(ox, &mt);
		while (n == 0 && cmd == OFPFC_DELETE && rand() % 8)
			n = random_match(ox, &mt);  /* "delete all" now and then, not 1 in 7 */
		if ((cmd == OFPFC_MODIFY_STRICT || cmd == OFPFC_DELETE_STRICT || rand() % 2 == 0) &&
		    n_model && cmd != OFPFC_ADD) {
			/* aim at an existing flow most of the time */
			struct model_flow *t = &model[rand() % n_model];
			prio = t->prio;
			mt = t->match;
			/* rebuild the OXMs of t's match: find it in the table */
			for (struct ofs_flow *f = ofs_dp.tables[0].flows; f; f = f->next)
				if (f->priority == prio && same_match(&f->match, &mt)) {
					n = rd16(f->match_raw + 2) - 4;
					memcpy(ox, f->match_raw + 4, n);
					break;
				}
		}
		uint32_t port = (uint32_t)(rand() % 3 + 1);
		uint64_t cookie = (uint64_t)(rand() % 3), cookie_mask = rand() % 2 ? ~0ull : 0;
		bool check_overlap = cmd == OFPFC_ADD && rand() % 4 == 0;
		bool overlap = check_overlap && model_overlaps(prio, &mt);
		flow_mod(&m, cmd, 0, prio, ox, n, port, check_overlap ? OFPFF_CHECK_OVERLAP : 0);
		wr64(m.b + 8, cookie);
		wr64(m.b + 16, cookie_mask);
		send_msg(&m);
		bool refused = out.len >= 8 && out.data[1] == OFPT_ERROR;
		errs += refused != overlap ||
			(overlap && reply_err() != OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_OVERLAP));
		overlaps += overlap;
		if (!overlap)
			model_apply(cmd, prio, &mt, cookie, cookie_mask, port);
		if (--until_commit == 0) {
			ofs_commit();
			commits++;
			until_commit = 1 + rand() % 12;
			bad_model += table_vs_model(0);
			bad_lookup += check_lookups(0, 64, NULL);
			if (commits % 10 == 0) {
				uint32_t nf = ofs_dp.tables[0].n_flows, i = 0;
				struct ofs_flow **arr = malloc((nf + 1) * sizeof(*arr));
				for (struct ofs_flow *f = ofs_dp.tables[0].flows; f; f = f->next)
					arr[i++] = f;
				void *rb = ofs_lookup_build(ops, arr, nf);
				bad_rebuild += !rb || check_lookups(0, 64, rb);
				if (rb)
					ops->destroy(rb);
				free(arr);
			}
		}
	}
	CHECK(errs == 0, "%s: %d FLOW_MODs answered otherwise than the model (error or not)",
	      ops->name, errs);
	CHECK(overlaps > 20, "%s: CHECK_OVERLAP refused some ADDs (%d)", ops->name, overlaps);
	CHECK(bad_model == 0, "%s: table differs from the model after %d of %d commits", ops->name,
	      bad_model, commits);
	CHECK(bad_lookup == 0, "%s: %d incremental lookups differ from the model", ops->name,
	      bad_lookup);
	CHECK(bad_rebuild == 0, "%s: the full rebuild differs from the model (%d)", ops->name,
	      bad_rebuild);
	CHECK(n_model > 30, "%s: the run keeps a real table (%d flows)", ops->name, n_model);
	printf("incremental %s: %d FLOW_MODs, %d commits, %d flows at the end\n", ops->name, n_ops,
	       commits, n_model);
	reset_tables();
}

static void test_incremental_tables(void)
{
	incremental_run(&ofs_lookup_simple, 4000);
#ifdef OFS_HAVE_CLASSIFIER
	incremental_run(&ofs_lookup_tuple, 8000);
	incremental_run(&ofs_lookup_dtree, 8000);
	/* the tree rebuilt (on its thread, adopted at a later commit) every 16 delta flows, so the
	 * run covers rebuilds, kills of tree flows and adoption, not only the delta tables */
	ofs_cls_dtree_delta = 16;
	incremental_run(&ofs_lookup_dtree, 2000);
	ofs_cls_dtree_delta = 0;
	incremental_run(&ofs_lookup_trie, 4000);
#endif
	ofs_dp.lookup_ops = &ofs_lookup_simple;
}

/* A test double of a backend whose inserts fail on demand: a failed FLOW_MOD must keep the
 * old state and be answered with OFPT_ERROR. */
static int fail_inserts_after = -1;  /* -1: never */
static int failing_insert(void *lx, struct ofs_flow *f)
{
	if (fail_inserts_after == 0)
		return -1;
	if (fail_inserts_after > 0)
		fail_inserts_after--;
	return ofs_lookup_simple.insert(lx, f);
}
static struct ofs_lookup_ops failing_ops;

static void test_failed_update_keeps_state(void)
{
	reset_tables();
	failing_ops = ofs_lookup_simple;
	failing_ops.name = "failing-insert double";
	failing_ops.insert = failing_insert;
	ofs_dp.lookup_ops = &failing_ops;
	struct mb m;
	uint8_t ox[64];
	uint32_t dst[3];
	uint16_t et = htons(0x0800);
	for (int i = 0; i < 3; i++) {
		size_t n = oxm(ox, OXM_ETH_TYPE, &et, NULL, 2);
		dst[i] = htonl(0x0a000001u + (uint32_t)i);
		n += oxm(ox + n, OXM_IPV4_DST, &dst[i], NULL, 4);
		flow_mod(&m, OFPFC_ADD, 0, 10, ox, n, 2, 0);
		send_msg(&m);
	}
	ofs_commit();
	const struct ofs_table_view *v0 = ofs_dp.tables[0].view;
	CHECK(flows_in(0) == 3 && v0, "three flows installed");
	/* ADD replacing flow 0 while inserts fail: error, flow 0 keeps port 2 */
	fail_inserts_after = 0;
	size_t n = oxm(ox, OXM_ETH_TYPE, &et, NULL, 2);
	n += oxm(ox + n, OXM_IPV4_DST, &dst[0], NULL, 4);
	flow_mod(&m, OFPFC_ADD, 0, 10, ox, n, 3, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_TABLE_FULL),
	      "failed ADD answers TABLE_FULL (0x%x)", reply_err());
	/* MODIFY of all three where the second copy fails: error, all keep port 2 */
	fail_inserts_after = 1;
	flow_mod(&m, OFPFC_MODIFY, 0, 0, ox, oxm(ox, OXM_ETH_TYPE, &et, NULL, 2), 3, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_UNKNOWN),
	      "failed MODIFY answers an error (0x%x)", reply_err());
	fail_inserts_after = -1;
	ofs_commit();
	const struct ofs_table_view *v = ofs_dp.tables[0].view;
	int ok = 0;
	for (int i = 0; i < 3 && v; i++) {
		struct ofs_key k;
		memset(&k, 0, sizeof(k));
		k.eth_type = et;
		k.ipv4_dst = dst[i];
		struct ofs_flow *f = ofs_dp.lookup_ops->lookup(v->lx, &k);
		ok += f && flow_out_port(f) == 2;
	}
	CHECK(flows_in(0) == 3 && ok == 3, "the old flows stay, visible and unchanged (%d/3)", ok);
	/* and a MODIFY that works afterwards changes all three */
	flow_mod(&m, OFPFC_MODIFY, 0, 0, ox, oxm(ox, OXM_ETH_TYPE, &et, NULL, 2), 3, 0);
	send_msg(&m);
	ofs_commit();
	v = ofs_dp.tables[0].view;
	ok = 0;
	for (int i = 0; i < 3 && v; i++) {
		struct ofs_key k;
		memset(&k, 0, sizeof(k));
		k.eth_type = et;
		k.ipv4_dst = dst[i];
		struct ofs_flow *f = ofs_dp.lookup_ops->lookup(v->lx, &k);
		ok += f && flow_out_port(f) == 3;
	}
	CHECK(out.len == 0 && ok == 3, "MODIFY after the failure applies (%d/3)", ok);
	reset_tables();
	ofs_dp.lookup_ops = &ofs_lookup_simple;
}


/* A backend whose reservation for the next publish fails (out of memory while staging): the
 * FLOW_MOD is answered with an error and the published index stays as it was (issue 15
 * part 3: never a NULL or partial index for a failure). */
static bool fail_reserve;
static int failing_reserve(void *lx)
{
	return fail_reserve ? -1 : ofs_lookup_simple.reserve(lx);
}

static void test_failed_reserve_keeps_index(void)
{
	reset_tables();
	failing_ops = ofs_lookup_simple;
	failing_ops.name = "failing-reserve double";
	failing_ops.reserve = failing_reserve;
	ofs_dp.lookup_ops = &failing_ops;
	struct mb m;
	uint8_t ox[64];
	uint16_t et = htons(0x0800);
	size_t n = oxm(ox, OXM_ETH_TYPE, &et, NULL, 2);
	flow_mod(&m, OFPFC_ADD, 0, 10, ox, n, 2, 0);
	send_msg(&m);
	ofs_commit();
	const struct ofs_table_view *v0 = ofs_dp.tables[0].view;
	CHECK(flows_in(0) == 1 && v0, "one flow installed");
	fail_reserve = true;
	flow_mod(&m, OFPFC_ADD, 0, 11, ox, n, 3, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_TABLE_FULL),
	      "ADD without room for the next index: TABLE_FULL (0x%x)", reply_err());
	flow_mod(&m, OFPFC_DELETE, 0, 0, ox, 0, 0, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_UNKNOWN),
	      "DELETE without room for the next index: an error (0x%x)", reply_err());
	ofs_commit();
	const struct ofs_table_view *v = ofs_dp.tables[0].view;
	struct ofs_key k;
	memset(&k, 0, sizeof(k));
	k.eth_type = et;
	struct ofs_flow *f = v ? ofs_dp.lookup_ops->lookup(v->lx, &k) : NULL;
	CHECK(flows_in(0) == 1 && f && flow_out_port(f) == 2,
	      "the published index still holds the old flow");
	fail_reserve = false;
	flow_mod(&m, OFPFC_DELETE, 0, 0, ox, 0, 0, 0);
	send_msg(&m);
	ofs_commit();
	v = ofs_dp.tables[0].view;
	CHECK(out.len == 0 && flows_in(0) == 0 && (!v || !ofs_dp.lookup_ops->lookup(v->lx, &k)),
	      "the DELETE works once memory is back");
	reset_tables();
	ofs_dp.lookup_ops = &ofs_lookup_simple;
}

/* The id table of groups and meters against a trivial reference (a list of ids): random
 * adds and removes, enough removals to force index rebuilds (tombstones), every lookup
 * checked, and the listing order is the slot order. */
struct idobj { uint32_t id; int tag; };
static void test_idtable(void)
{
	static struct ofs_idtable t;
	static struct idobj objs[OFS_IDT_CAP];
	static uint32_t ref[OFS_IDT_CAP];  /* ids present, in objs[] position */
	static bool used[OFS_IDT_CAP];
	memset(&t, 0, sizeof(t));
	uint32_t seed = 12345, n = 0, bad = 0, rebuilds = 0;
	void **ix0 = NULL;
	CHECK(ofs_idt_find(&t, 7) == NULL, "empty table finds nothing");
	for (int step = 0; step < 20000; step++) {
		seed = seed * 1103515245u + 12345u;
		unsigned slot = (seed >> 8) % OFS_IDT_CAP;
		if (!used[slot]) {
			seed = seed * 1103515245u + 12345u;
			uint32_t id = (seed >> 4) % 5000u;  /* small id space: collisions in the hash */
			bool dup = false;
			for (unsigned i = 0; i < OFS_IDT_CAP; i++)
				dup |= used[i] && ref[i] == id;
			if (dup)
				continue;
			objs[slot] = (struct idobj){ id, step };
			bad += ofs_idt_add(&t, &objs[slot]) != 0;
			used[slot] = true;
			ref[slot] = id;
			n++;
		} else {
			ofs_idt_remove(&t, &objs[slot]);
			used[slot] = false;
			n--;
		}
		if (ix0 != t.index) {
			rebuilds += ix0 != NULL;
			ix0 = t.index;
		}
		if (step % 97 == 0) {
			for (unsigned i = 0; i < OFS_IDT_CAP; i++)
				if (used[i])
					bad += ofs_idt_find(&t, ref[i]) != &objs[i];
			for (uint32_t id = 5000; id < 5100; id++)
				bad += ofs_idt_find(&t, id) != NULL;
		}
	}
	CHECK(bad == 0 && t.n == n, "idtable agrees with the reference (%u mismatches)", bad);
	CHECK(rebuilds > 0, "tombstones forced %u index rebuilds", rebuilds);
	/* full table: the next add is refused; listing visits every object once */
	for (unsigned i = 0; i < OFS_IDT_CAP; i++)
		if (!used[i]) {
			objs[i] = (struct idobj){ 10000 + i, 0 };
			bad += ofs_idt_add(&t, &objs[i]) != 0;
			used[i] = true;
		}
	struct idobj extra = { 99999, 0 };
	CHECK(bad == 0 && ofs_idt_add(&t, &extra) == -1, "a full table refuses an add");
	unsigned listed = 0;
	for (unsigned i = 0; ofs_idt_next(&t, &i);)
		listed++;
	CHECK(listed == OFS_IDT_CAP, "listing visits every object (%u)", listed);
	/* replace keeps the id findable, pointing at the new object */
	struct idobj repl = objs[3];
	ofs_idt_replace(&t, &objs[3], &repl);
	CHECK(ofs_idt_find(&t, repl.id) == &repl, "replace publishes the new object");
}


/* ROLE_REQUEST on the current session; returns the error (0xffffffff: none) and the role. */
static uint32_t role_request(uint32_t role, uint64_t gen, uint32_t *got)
{
	struct mb m;
	mb_hdr(&m, OFPT_ROLE_REQUEST, 9);
	uint8_t *p = mb_put(&m, 16);
	wr32(p, role); wr64(p + 8, gen);
	mb_end(&m);
	send_msg(&m);
	if (reply_type() == OFPT_ROLE_REPLY && got)
		*got = rd32(out.data + 8);
	return reply_err();
}

/* Several controllers (OF1.3.5 6.3.6, 7.3.9, 7.3.10): one session per connection, one master
 * at most, generation ids, IS_SLAVE for a slave's state-changing messages, async messages
 * filtered per session. */
static void test_sessions(void)
{
	struct ofs_session *a = ofs_session_open(), *b = ofs_session_open();
	CHECK(a && b && a != b, "two sessions");
	uint32_t role = 0;
	ofs_session_use(a);
	CHECK(role_request(OFPCR_ROLE_MASTER, 100, &role) == 0xffffffff &&
	      role == OFPCR_ROLE_MASTER, "a becomes master (gen 100)");
	ofs_session_use(b);
	CHECK(role_request(OFPCR_ROLE_NOCHANGE, 0, &role) == 0xffffffff &&
	      role == OFPCR_ROLE_EQUAL, "b is equal");
	CHECK(role_request(OFPCR_ROLE_MASTER, 99, NULL) ==
	      OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_STALE), "b master with gen 99: STALE");
	CHECK(role_request(OFPCR_ROLE_MASTER, 101, &role) == 0xffffffff &&
	      role == OFPCR_ROLE_MASTER, "b master with gen 101");
	ofs_session_use(a);
	CHECK(role_request(OFPCR_ROLE_NOCHANGE, 0, &role) == 0xffffffff &&
	      role == OFPCR_ROLE_SLAVE, "a was demoted to slave");
	struct mb m;
	uint8_t ox[16];
	uint16_t et = htons(0x0800);
	flow_mod(&m, OFPFC_ADD, 0, 10, ox, oxm(ox, OXM_ETH_TYPE, &et, NULL, 2), 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_IS_SLAVE), "slave FLOW_MOD: IS_SLAVE");
	mb_hdr(&m, OFPT_MULTIPART_REQUEST, 5);
	wr16(mb_put(&m, 8), OFPMP_DESC);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_type() == OFPT_MULTIPART_REPLY, "a slave may read (multipart)");
	/* async: a FLOW_REMOVED(DELETE) goes to the master, not to a slave (default masks) */
	uint8_t fr[56] = { 4, OFPT_FLOW_REMOVED };
	fr[18] = OFPRR_DELETE;
	uint8_t pin[32] = { 4, OFPT_PACKET_IN };
	pin[14] = OFPR_NO_MATCH;
	CHECK(ofs_session_wants(b, fr) && !ofs_session_wants(a, fr),
	      "FLOW_REMOVED: master yes, slave no");
	/* SET_ASYNC on the slave: packet-ins off for the slave role */
	mb_hdr(&m, OFPT_SET_ASYNC, 6);
	uint8_t *p = mb_put(&m, 24);
	wr32(p, 0x7); wr32(p + 4, 0); wr32(p + 8, 0x7); wr32(p + 12, 0x7);
	wr32(p + 16, 0xf); wr32(p + 20, 0);
	mb_end(&m);
	send_msg(&m);
	CHECK(out.len == 0 && !ofs_session_wants(a, pin) && ofs_session_wants(b, pin),
	      "SET_ASYNC is per session: a (slave) no packet-ins, b still");
	ofs_session_use(b);
	mb_hdr(&m, OFPT_GET_ASYNC_REQUEST, 7);
	mb_end(&m);
	send_msg(&m);
	CHECK(reply_type() == OFPT_GET_ASYNC_REPLY && rd32(out.data + 12) == 0x7,
	      "b's async config is its own (slave packet-in mask 0x7)");
	ofs_session_close(a);
	ofs_session_close(b);
	struct ofs_session *c = ofs_session_open();
	ofs_session_use(c);
	CHECK(role_request(OFPCR_ROLE_NOCHANGE, 0, &role) == 0xffffffff &&
	      role == OFPCR_ROLE_EQUAL, "a new connection starts equal");
	CHECK(role_request(OFPCR_ROLE_SLAVE, 100, NULL) ==
	      OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_STALE),
	      "the generation is the switch's: gen 100 after 101 is STALE on a new connection");
	ofs_session_close(c);
	ofs_session_use(NULL);
}

/* The Packet-In doorbell: a worker writes the eventfd only while the agent sleeps, and only
 * once per sleep (the first waker clears agent_sleeping). */
static void test_agent_wakeup(void)
{
	int efd = eventfd(0, EFD_NONBLOCK);
	CHECK(efd >= 0, "eventfd");
	ofs_dp.agent_wake_fd = efd;
	uint64_t cnt = 0;
	ofs_dp.agent_sleeping = 0;
	ofs_wake_agent();
	CHECK(read(efd, &cnt, sizeof(cnt)) < 0, "no write while the agent is awake");
	ofs_dp.agent_sleeping = 1;
	ofs_wake_agent();
	ofs_wake_agent();
	CHECK(ofs_dp.agent_sleeping == 0, "the waker clears agent_sleeping");
	CHECK(read(efd, &cnt, sizeof(cnt)) == sizeof(cnt) && cnt == 1,
	      "one write per sleep (count %llu)", (unsigned long long)cnt);
	close(efd);
	ofs_dp.agent_wake_fd = -1;
}

/* The flow arena (flowarena.h): an ADD past the cap is refused with TABLE_FULL and changes
 * nothing; a DELETE + ADD in one batch at the cap gets the deleted flow's slot; a MODIFY at the
 * cap still works; per-worker counters are summed into flow stats and carried over by MODIFY;
 * the hot line says which flow is the common one (fast_out) and which the table-miss one. */
static uint16_t arena_tp(uint8_t *ox, uint16_t port)
{
	uint16_t et = htons(0x0800), p = htons(port);
	uint8_t proto = 6;
	size_t n = oxm(ox, OXM_ETH_TYPE, &et, NULL, 2);
	n += oxm(ox + n, OXM_IP_PROTO, &proto, NULL, 1);
	n += oxm(ox + n, OXM_TCP_DST, &p, NULL, 2);
	return (uint16_t)n;
}
static uint64_t flow_stats_packets(void)
{
	struct mb m;
	mb_hdr(&m, OFPT_MULTIPART_REQUEST, 12);
	uint8_t *q = mb_put(&m, 8 + 40);
	wr16(q, OFPMP_AGGREGATE); q[8] = OFPTT_ALL; wr32(q + 12, OFPP_ANY); wr32(q + 16, OFPG_ANY);
	wr16(q + 40, 1); wr16(q + 42, 4);
	mb_end(&m);
	send_msg(&m);
	return reply_type() == OFPT_MULTIPART_REPLY ? rd64(out.data + 16) : ~0ull;
}
static void test_flow_arena(void)
{
	struct mb m;
	uint8_t ox[64];
	reset_tables();
	ofs_arena_init(false, 2, 3);
	for (uint16_t i = 0; i < 3; i++) {
		flow_mod(&m, OFPFC_ADD, 0, 10, ox, arena_tp(ox, 100 + i), 2, 0);
		send_msg(&m);
	}
	ofs_commit();
	CHECK(flows_in(0) == 3 && ofs_arena_in_use() == 3, "3 flows under a cap of 3");
	flow_mod(&m, OFPFC_ADD, 0, 10, ox, arena_tp(ox, 200), 2, 0);
	send_msg(&m);
	CHECK(reply_err() == OFS_ERR(OFPET_FLOW_MOD_FAILED, OFPFMFC_TABLE_FULL) && flows_in(0) == 3,
	      "an ADD past the cap: TABLE_FULL, table unchanged (0x%x)", reply_err());
	struct ofs_flow *f = ofs_dp.tables[0].flows;
	CHECK(f && f->in_arena && f->fast_out == 2 && !f->table_miss,
	      "one output to port 2 is the common flow (fast_out %u)", f ? f->fast_out : 0);
	/* counters: worker 0 on the hot line, worker 1 in its own array */
	for (struct ofs_flow *g = ofs_dp.tables[0].flows; g; g = g->next) {
		g->packets = 2;
		g->ctr[1 * ofs_arena_ctr_stride].packets = 5;
	}
	CHECK(flow_stats_packets() == 21, "aggregate sums every worker's counters");
	/* MODIFY at the cap: copies are not capped; counts carry over */
	flow_mod(&m, OFPFC_MODIFY, 0, 0, NULL, 0, 3, 0);
	send_msg(&m);
	CHECK(out.len == 0, "MODIFY at the cap works (0x%x)", reply_err());
	ofs_commit();
	CHECK(flow_stats_packets() == 21 && ofs_arena_in_use() == 3,
	      "MODIFY keeps the counts (%llu), the old flows are released (%u in use)",
	      (unsigned long long)flow_stats_packets(), ofs_arena_in_use());
	CHECK(ofs_dp.tables[0].flows->fast_out == 3, "the copy's fast_out is its own");
	/* DELETE + ADD in one batch, at the cap */
	flow_mod(&m, OFPFC_DELETE_STRICT, 0, 10, ox, arena_tp(ox, 100), 0, 0);
	send_msg(&m);
	flow_mod(&m, OFPFC_ADD, 0, 10, ox, arena_tp(ox, 201), 2, 0);
	send_msg(&m);
	CHECK(out.len == 0 && flows_in(0) == 3, "DELETE + ADD at the cap: the slot is reused (0x%x)",
	      reply_err());
	ofs_commit();
	/* not the common flow: a write-actions flow, which is also the table-miss flow */
	flow_mod(&m, OFPFC_DELETE, OFPTT_ALL, 0, NULL, 0, 0, 0);
	send_msg(&m);
	struct mb w;
	mb_hdr(&w, OFPT_FLOW_MOD, 8);
	uint8_t *b = mb_put(&w, 40);
	b[17] = OFPFC_ADD; wr32(b + 24, OFP_NO_BUFFER); wr32(b + 28, OFPP_ANY); wr32(b + 32, OFPG_ANY);
	uint8_t *mt = mb_put(&w, 8);
	wr16(mt, 1); wr16(mt + 2, 4);
	uint8_t *in = mb_put(&w, 8 + 16);
	wr16(in, OFPIT_WRITE_ACTIONS); wr16(in + 2, 24);
	wr16(in + 8, OFPAT_OUTPUT); wr16(in + 10, 16); wr32(in + 12, 2); wr16(in + 16, 0xffff);
	mb_end(&w);
	send_msg(&w);
	ofs_commit();
	f = ofs_dp.tables[0].flows;
	CHECK(out.len == 0 && f && f->fast_out == 0 && f->table_miss,
	      "write-actions: not the common flow; priority 0, no match: table-miss (0x%x)",
	      reply_err());
	reset_tables();
	CHECK(ofs_arena_in_use() == 0, "every slot back (%u)", ofs_arena_in_use());
	ofs_arena_init(false, OFS_MAX_WORKERS, 0);
}

/* csum.h against the RFC 1071 sum taken one big-endian word at a time: every length up to 200
 * at every alignment, random bytes, random pseudo-header sums added before the fold, and the
 * edge cases of the fold (all zeros, all ones, sums of 0xffff). */
static uint16_t csum_reference(uint32_t s, const uint8_t *p, uint32_t n)
{
	uint64_t acc = s;
	for (uint32_t i = 0; i + 1 < n; i += 2)
		acc += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		acc += (uint32_t)p[n - 1] << 8;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)~acc;
}

static void test_checksums(void)
{
	uint8_t buf[256];
	unsigned wrong = 0, n_checked = 0;
	srand(7);
	for (int fill = 0; fill < 4; fill++) {
		for (uint32_t n = 0; n <= 200; n++) {
			for (uint32_t off = 0; off < 8; off++) {
				for (size_t i = 0; i < sizeof(buf); i++)
					buf[i] = fill == 0 ? (uint8_t)rand() : fill == 1 ? 0
					       : fill == 2 ? 0xff : (uint8_t)(i & 1 ? 0x00 : 0xff);
				uint32_t s = fill == 0 ? (uint32_t)(rand() % 0x40000) : (uint32_t)(n % 3);
				n_checked++;
				if (csum_fold(csum_add(s, buf + off, n)) != csum_reference(s, buf + off, n) &&
				    wrong++ < 5)
					fprintf(stderr, "csum: fill %d, %u bytes at +%u, s %u: %04x, "
						"reference %04x\n", fill, n, off, s,
						csum_fold(csum_add(s, buf + off, n)),
						csum_reference(s, buf + off, n));
			}
		}
	}
	CHECK(wrong == 0, "csum_add differs from the reference in %u of %u cases", wrong, n_checked);
	/* a known IPv4 header (RFC 1071's example family): 4500 0073 0000 4000 4011 xxxx c0a8 0001
	 * c0a8 00c7 has checksum b861 */
	uint8_t ip[20] = {0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0,
			  0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 0xc7};
	CHECK(csum_fold(csum_add(0, ip, 20)) == 0xb861, "IPv4 header checksum %04x, want b861",
	      csum_fold(csum_add(0, ip, 20)));
}

int main(void)
{
	setup();
	test_hello_echo_features();
	test_flow_mod();
	test_flow_arena();
	test_group_meter();
	test_group_loops();
	test_multipart_misc();
	test_table_features();
	test_queues();
	test_truncations();
	test_key_extract();
	test_checksums();
	test_lookup_backends();
	test_incremental_tables();
	test_failed_update_keeps_state();
	test_set_field_prereq();
	test_failed_reserve_keeps_index();
	test_idtable();
	test_agent_wakeup();
	test_sessions();
	ob_free(&out);
	printf("%d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
