/* fuzz_datapath.c -- libFuzzer harness of the switch's datapath (dut/switch/README.md,
 * "Fuzzing"; issue 37 part 2). Built only by clang, in the sanitizer build
 * (scripts/build_san.sh): ASan + UBSan with no recovery, and the debug build's layout
 * invariant (datapath_internal.h LAYOUT_ASSERT), so a report or a layout outside its frame is a
 * finding. It includes src/datapath.c to reach the worker's burst function and the packet-out
 * runner, and src/actions.c, whose copies of a packet it makes in guarded buffers.
 *
 * Frames in ASan-tracked memory: DPDK's mbufs live in memory ASan does not see, so every frame
 * the datapath handles here is an mbuf with an external buffer malloc'd at exactly headroom
 * (RTE_PKTMBUF_HEADROOM, what a push prepends into) + the frame's length: one byte read or
 * written past the frame's end is a heap-buffer-overflow report. The copies the datapath makes
 * (output to several ports, group buckets, OFPP_TABLE) are made the same way: actions.c's
 * call of rte_pktmbuf_copy is this file's guarded_copy. Not seen: a write into the headroom in
 * front of the frame (allocated memory), and bytes past a frame that a pop or trim shortened
 * (still in its buffer).
 *
 * One input is a sequence of records, each:
 *   ctl (1 byte): bits 0-1 the port (index into 4 net_null ports, OpenFlow ports 1-4);
 *     bit 2: 0 = the frame arrives on that port (the worker's rx path: process_burst, the
 *     flow cache, the pipeline), 1 = a PACKET_OUT through the agent (ofs_handle_msg: its checks
 *     and the set-field prerequisites against the frame), then run on a guarded mbuf;
 *     bit 3: the rx path in fail-standalone mode (a learning switch) instead of the flows;
 *   prog (1 byte): for a PACKET_OUT, which action list (bits 0-6 modulo their number: 0 is
 *     OUTPUT:TABLE, then every bucket and apply-actions list of the flow set below); its
 *     in_port is CONTROLLER when bit 7 is set, else the record's port;
 *   len (2 bytes, big-endian): the frame's length, cut to what the input has left and to
 *     OFS_MAX_PKT (9216, a jumbo frame: the largest frame the switch takes);
 *   the frame.
 * Frames of consecutive rx records of one port go through in one burst (up to OFS_BURST),
 * as a port's rx burst does. After each record the tx buffers are flushed to the null ports,
 * the Packet-Ins go to the agent (ofs_send_packet_in) and every reply is checked for framing.
 *
 * The flow set (installed once through the agent, every message checked accepted): table 0
 * sends each in_port to its own table; table 1 rewrites every field in place (a flow per
 * protocol with its prerequisites: set-field of every settable OXM, TTLs, copy TTL in/out);
 * table 2 pushes and pops (VLAN, MPLS, PBB) with set-fields between; table 3 runs groups of
 * each type (ALL, SELECT, INDIRECT, FF, chained) whose buckets rewrite without prerequisites,
 * and the action set (write-actions) with goto and write-metadata into table 5; table 4
 * meters (DSCP remark, drop), ip_proto and eth_type rewrites, several outputs (FLOOD, ALL,
 * IN_PORT, CONTROLLER). Table misses go to the controller.
 *
 * State: one datapath (4 net_null ports, one worker, no QSBR), flows fixed after init; per
 * input only the fail-standalone flag, the MAC table, the flow cache and counters change.
 * EAL: once, --no-huge --no-shconf --no-pci, a unique --file-prefix (its runtime folder
 * removed right after init). Env OFS_FUZZ_LOOKUP picks the lookup backend, as fuzz_agent;
 * OFS_FUZZ_GUARD_SELFTEST=1 makes the harness write one byte past each rx frame itself (a run
 * must then report a heap-buffer-overflow: the guard works). */
#include "fuzz_common.h"
#include <arpa/inet.h>
#include <rte_hash_crc.h>
#include <rte_cycles.h>
#include <rte_prefetch.h>
#include "../src/ofswitch.h"
#include "../src/agent.h"
#include "../src/flowarena.h"
#include "../src/vhost_port.h"
#include "../src/csum.h"

static struct rte_mbuf *guarded_copy(const struct rte_mbuf *m, struct rte_mempool *mp,
				     uint32_t off, uint32_t len);
#define rte_pktmbuf_copy(m, mp, off, len) guarded_copy(m, mp, off, len)
#include "../src/actions.c"
#include "../src/datapath.c"
#undef rte_pktmbuf_copy

#define N_PORTS 4
#define REPLY_MAX 65535u

static struct obuf out;
static struct rte_mempool *pool;
static struct pkt_ctx *ctxs;

/* ---- guarded mbufs ------------------------------------------------------------------------ */
static void guarded_free(void *addr, void *opaque)
{
	free(addr);
	free(opaque);
}

/* An mbuf of pool mp whose data is a malloc'd buffer of exactly headroom + len, holding the
 * len bytes at data. NULL when out of mbufs. */
static struct rte_mbuf *guarded_mbuf(struct rte_mempool *mp, const uint8_t *data, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	if (!m)
		return NULL;
	uint8_t *buf = malloc(RTE_PKTMBUF_HEADROOM + len);
	struct rte_mbuf_ext_shared_info *sh = malloc(sizeof(*sh));
	if (!buf || !sh)
		fuzz_die("malloc");
	memset(buf, 0, RTE_PKTMBUF_HEADROOM);
	memcpy(buf + RTE_PKTMBUF_HEADROOM, data, len);
	memset(sh, 0, sizeof(*sh));
	sh->free_cb = guarded_free;
	sh->fcb_opaque = sh;
	rte_mbuf_ext_refcnt_set(sh, 1);
	rte_pktmbuf_attach_extbuf(m, buf, RTE_BAD_IOVA, (uint16_t)(RTE_PKTMBUF_HEADROOM + len), sh);
	m->data_off = RTE_PKTMBUF_HEADROOM;
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	return m;
}

/* actions.c's rte_pktmbuf_copy: the same bytes in a new guarded mbuf */
static struct rte_mbuf *guarded_copy(const struct rte_mbuf *m, struct rte_mempool *mp,
				     uint32_t off, uint32_t len)
{
	if (m->nb_segs != 1)
		fuzz_die("copy of a multi-segment mbuf");
	if (off > m->data_len)
		return NULL;
	if (len > m->data_len - off)
		len = m->data_len - off;
	return guarded_mbuf(mp, rte_pktmbuf_mtod_offset(m, const uint8_t *, off), len);
}

/* ---- OpenFlow messages of the flow set ---------------------------------------------------- */
struct msgb { uint8_t b[4096]; size_t n; };
struct acts { uint8_t b[512]; uint16_t n; };

static uint8_t *put(struct msgb *m, size_t n)
{
	if (m->n + n > sizeof(m->b))
		fuzz_die("flow set message too long");
	uint8_t *p = m->b + m->n;
	memset(p, 0, n);
	m->n += n;
	return p;
}

static void msg_start(struct msgb *m, uint8_t type)
{
	m->n = 0;
	uint8_t *h = put(m, 8);
	h[0] = OFP13_VERSION;
	h[1] = type;
	wr32(h + 4, 0x1000);
}

static uint8_t *aput(struct acts *a, size_t n)
{
	if (a->n + n > sizeof(a->b))
		fuzz_die("action list too long");
	uint8_t *p = a->b + a->n;
	memset(p, 0, n);
	a->n = (uint16_t)(a->n + n);
	return p;
}

static void a_output(struct acts *a, uint32_t port)
{
	uint8_t *p = aput(a, 16);
	wr16(p, OFPAT_OUTPUT);
	wr16(p + 2, 16);
	wr32(p + 4, port);
	wr16(p + 8, port == OFPP_CONTROLLER ? 128 : OFPCML_NO_BUFFER);
}

static void a_group(struct acts *a, uint32_t gid)
{
	uint8_t *p = aput(a, 8);
	wr16(p, OFPAT_GROUP);
	wr16(p + 2, 8);
	wr32(p + 4, gid);
}

/* push/pop (an ethertype) or a TTL action (a TTL), or one with no argument */
static void a_do(struct acts *a, uint16_t type, uint16_t arg)
{
	uint8_t *p = aput(a, 8);
	wr16(p, type);
	wr16(p + 2, 8);
	if (type == OFPAT_SET_MPLS_TTL || type == OFPAT_SET_NW_TTL)
		p[4] = (uint8_t)arg;
	else
		wr16(p + 4, arg);
}

/* set-field of field f to a value derived from seed (valid for the field: value_ok) */
static void a_set(struct acts *a, int f, uint32_t seed)
{
	uint32_t l = ofs_fields[f].len, len = (4 + 4 + l + 7) / 8 * 8;
	uint8_t *p = aput(a, len);
	wr16(p, OFPAT_SET_FIELD);
	wr16(p + 2, (uint16_t)len);
	wr16(p + 4, OFPXMC_OPENFLOW_BASIC);
	p[6] = (uint8_t)(f << 1);
	p[7] = (uint8_t)l;
	uint8_t *v = p + 8;
	for (uint32_t i = 0; i < l; i++)
		v[i] = (uint8_t)(seed * 37u + i * 11u + 1);
	switch (f) {
	case OXM_VLAN_VID: wr16(v, (uint16_t)(0x1000 | (seed & 0xfff))); break;
	case OXM_VLAN_PCP: case OXM_MPLS_TC: v[0] &= 7; break;
	case OXM_IP_DSCP: v[0] &= 63; break;
	case OXM_IP_ECN: v[0] &= 3; break;
	case OXM_MPLS_BOS: v[0] &= 1; break;
	case OXM_MPLS_LABEL: case OXM_IPV6_FLABEL: wr32(v, rd32(v) & 0xfffff); break;
	case OXM_IP_PROTO: v[0] = (uint8_t)seed; break;
	case OXM_ETH_TYPE: wr16(v, (uint16_t)seed); break;
	case OXM_ICMPV6_TYPE: v[0] = (uint8_t)seed; break;
	default: break;
	}
}

/* a match: (field, value, mask or NULL) triples */
struct mf { int f; const void *v; const void *mask; };

static void put_match(struct msgb *m, const struct mf *fs, int n)
{
	size_t at = m->n;
	uint8_t *h = put(m, 4);
	wr16(h, 1);
	for (int i = 0; i < n; i++) {
		uint32_t l = ofs_fields[fs[i].f].len;
		uint8_t *o = put(m, 4 + l * (fs[i].mask ? 2 : 1));
		wr16(o, OFPXMC_OPENFLOW_BASIC);
		o[2] = (uint8_t)(fs[i].f << 1 | (fs[i].mask ? 1 : 0));
		o[3] = (uint8_t)(l * (fs[i].mask ? 2 : 1));
		memcpy(o + 4, fs[i].v, l);
		if (fs[i].mask)
			memcpy(o + 4 + l, fs[i].mask, l);
	}
	wr16(m->b + at + 2, (uint16_t)(m->n - at));
	put(m, (8 - (m->n - at) % 8) % 8);
}

static void put_inst_actions(struct msgb *m, uint16_t type, const struct acts *a)
{
	uint8_t *p = put(m, 8 + a->n);
	wr16(p, type);
	wr16(p + 2, (uint16_t)(8 + a->n));
	memcpy(p + 8, a->b, a->n);
}

/* The action lists a PACKET_OUT record picks from (prog) */
#define MAX_PROGS 96
static struct acts progs[MAX_PROGS];
static int n_progs;

static void keep_prog(const struct acts *a)
{
	if (n_progs < MAX_PROGS && a->n)
		progs[n_progs++] = *a;
}

/* The replies must be well-framed OpenFlow 1.3 messages; an error reply while the flow set is
 * installed is a harness bug. Then they are dropped. */
static int installing;

static void sink(void)
{
	size_t o = 0;
	while (o < out.len) {
		if (out.len - o < 8)
			fuzz_die("reply: a truncated header");
		uint16_t ml = rd16(out.data + o + 2);
		if (out.data[o] != OFP13_VERSION || ml < 8 || ml > out.len - o || ml > REPLY_MAX)
			fuzz_die("reply: bad version or length");
		if (installing && out.data[o + 1] == OFPT_ERROR) {
			fprintf(stderr, "fuzz_datapath: the flow set was refused: error %u/%u\n",
				rd16(out.data + o + 8), rd16(out.data + o + 10));
			abort();
		}
		o += ml;
	}
	out.len = 0;
}

static void agent_send(struct msgb *m)
{
	wr16(m->b + 2, (uint16_t)m->n);
	if (ofs_handle_msg(&out, m->b, m->n) < 0)
		fuzz_die("the agent closed the session");
	ofs_commit();
	sink();
}

/* FLOW_MOD ADD: table, priority, match, apply-actions (or none), write-actions (or none),
 * goto (0xff: none), meter (0: none), write-metadata (mask 0: none) */
static void flow(uint8_t table, uint16_t prio, const struct mf *fs, int n, const struct acts *apply,
		 const struct acts *write, uint8_t goto_table, uint32_t meter, uint64_t md)
{
	struct msgb m;
	msg_start(&m, OFPT_FLOW_MOD);
	uint8_t *f = put(&m, 40);
	f[16] = table;
	f[17] = OFPFC_ADD;
	wr16(f + 22, prio);
	wr32(f + 24, OFP_NO_BUFFER);
	wr32(f + 28, OFPP_ANY);
	wr32(f + 32, OFPG_ANY);
	put_match(&m, fs, n);
	if (meter) {
		uint8_t *p = put(&m, 8);
		wr16(p, OFPIT_METER);
		wr16(p + 2, 8);
		wr32(p + 4, meter);
	}
	if (apply && apply->n) {
		put_inst_actions(&m, OFPIT_APPLY_ACTIONS, apply);
		keep_prog(apply);
	}
	if (write && write->n)
		put_inst_actions(&m, OFPIT_WRITE_ACTIONS, write);
	if (md) {
		uint8_t *p = put(&m, 24);
		wr16(p, OFPIT_WRITE_METADATA);
		wr16(p + 2, 24);
		wr64(p + 8, md);
		wr64(p + 16, ~0ull);
	}
	if (goto_table != 0xff) {
		uint8_t *p = put(&m, 8);
		wr16(p, OFPIT_GOTO_TABLE);
		wr16(p + 2, 8);
		p[4] = goto_table;
	}
	agent_send(&m);
}

/* GROUP_MOD ADD of type with buckets (weight, watch_port, actions) */
struct bucket { uint16_t weight; uint32_t watch_port; struct acts a; };

static void group(uint32_t id, uint8_t type, struct bucket *b, int n)
{
	struct msgb m;
	msg_start(&m, OFPT_GROUP_MOD);
	uint8_t *g = put(&m, 8);
	wr16(g, OFPGC_ADD);
	g[2] = type;
	wr32(g + 4, id);
	for (int i = 0; i < n; i++) {
		uint8_t *p = put(&m, 16 + b[i].a.n);
		wr16(p, (uint16_t)(16 + b[i].a.n));
		wr16(p + 2, b[i].weight);
		wr32(p + 4, b[i].watch_port ? b[i].watch_port : OFPP_ANY);
		wr32(p + 8, OFPG_ANY);
		memcpy(p + 16, b[i].a.b, b[i].a.n);
		keep_prog(&b[i].a);
	}
	agent_send(&m);
}

/* METER_MOD ADD: one band (DSCP remark or drop), packets per second */
static void meter(uint32_t id, uint16_t band, uint32_t rate)
{
	struct msgb m;
	msg_start(&m, OFPT_METER_MOD);
	uint8_t *p = put(&m, 8 + 16);
	wr16(p, OFPMC_ADD);
	wr16(p + 2, OFPMF_PKTPS | OFPMF_BURST);
	wr32(p + 4, id);
	wr16(p + 8, band);
	wr16(p + 10, 16);
	wr32(p + 12, rate);
	wr32(p + 16, 1);
	p[20] = 1;  /* prec_level of a DSCP remark */
	agent_send(&m);
}

#define NEW(a) struct acts a; memset(&a, 0, sizeof(a))
#define M(...) ((const struct mf[]){ __VA_ARGS__ }), \
	(int)(sizeof((const struct mf[]){ __VA_ARGS__ }) / sizeof(struct mf))

static void install_flow_set(void)
{
	/* match values in network byte order */
	const uint16_t et4 = htons(OFS_ETH_P_IPV4), et6 = htons(OFS_ETH_P_IPV6),
		etarp = htons(OFS_ETH_P_ARP), etmpls = htons(OFS_ETH_P_MPLS_UC),
		etmplsm = htons(OFS_ETH_P_MPLS_MC), etpbb = htons(OFS_ETH_P_PBB);
	const uint8_t tcp = 6, udp = 17, sctp = 132, icmp = 1, icmp6 = 58;
	const uint8_t nd_sol = 135, nd_adv = 136;
	const uint16_t vid_present = htons(OFPVID_PRESENT), vid_mask = htons(OFPVID_PRESENT);
	installing = 1;
	/* program 0: a PACKET_OUT that runs the frame through the flows */
	NEW(table);
	a_output(&table, OFPP_TABLE);
	keep_prog(&table);
	struct msgb m;
	msg_start(&m, OFPT_HELLO);
	agent_send(&m);
	/* groups first (flows refer to them) */
	struct bucket b[4];
	memset(b, 0, sizeof(b));
	a_set(&b[0].a, OXM_TCP_SRC, 1);       /* no prerequisites in a bucket: any frame */
	a_set(&b[0].a, OXM_ICMPV4_TYPE, 2);
	a_output(&b[0].a, 1);
	a_set(&b[1].a, OXM_IPV6_ND_TARGET, 3);
	a_set(&b[1].a, OXM_MPLS_LABEL, 4);
	a_do(&b[1].a, OFPAT_COPY_TTL_IN, 0);
	a_output(&b[1].a, 2);
	group(11, OFPGT_INDIRECT, b, 1);
	memset(b, 0, sizeof(b));
	a_do(&b[0].a, OFPAT_PUSH_VLAN, 0x8100);
	a_set(&b[0].a, OXM_VLAN_VID, 5);
	a_set(&b[0].a, OXM_UDP_DST, 6);
	a_output(&b[0].a, 2);
	a_do(&b[1].a, OFPAT_PUSH_MPLS, 0x8847);
	a_do(&b[1].a, OFPAT_COPY_TTL_OUT, 0);
	a_set(&b[1].a, OXM_SCTP_DST, 7);
	a_output(&b[1].a, 3);
	a_do(&b[2].a, OFPAT_DEC_NW_TTL, 0);
	a_set(&b[2].a, OXM_IPV6_ND_SLL, 8);
	a_group(&b[2].a, 11);                /* a chain */
	a_output(&b[3].a, OFPP_CONTROLLER);
	group(12, OFPGT_ALL, b, 4);
	memset(b, 0, sizeof(b));
	b[0].weight = 3;
	a_do(&b[0].a, OFPAT_POP_VLAN, 0);
	a_set(&b[0].a, OXM_ARP_TPA, 9);
	a_output(&b[0].a, 1);
	b[1].weight = 5;
	a_do(&b[1].a, OFPAT_PUSH_PBB, 0x88e7);
	a_set(&b[1].a, OXM_PBB_ISID, 10);
	a_set(&b[1].a, OXM_ICMPV6_CODE, 11);
	a_output(&b[1].a, 4);
	group(13, OFPGT_SELECT, b, 2);
	memset(b, 0, sizeof(b));
	b[0].watch_port = 3;
	a_do(&b[0].a, OFPAT_POP_MPLS, 0x0800);
	a_set(&b[0].a, OXM_IPV4_SRC, 12);
	a_output(&b[0].a, 3);
	b[1].watch_port = 1;
	a_output(&b[1].a, 1);
	group(14, OFPGT_FF, b, 2);
	meter(21, OFPMBT_DSCP_REMARK, 1);
	meter(22, OFPMBT_DROP, 1);

	/* table 0: each in_port to its table; misses to the controller */
	for (uint32_t p = 1; p <= N_PORTS; p++) {
		uint32_t pn = htonl(p);
		flow(0, 100, M({ OXM_IN_PORT, &pn, NULL }), NULL, NULL, (uint8_t)p, 0, 0);
	}
	NEW(miss);
	a_output(&miss, OFPP_CONTROLLER);
	flow(0, 0, NULL, 0, &miss, NULL, 0xff, 0, 0);

	/* table 1: every field rewritten in place, a flow per protocol */
	NEW(a);
	a_set(&a, OXM_ETH_DST, 1); a_set(&a, OXM_ETH_SRC, 2); a_set(&a, OXM_IP_DSCP, 3);
	a_set(&a, OXM_IP_ECN, 4); a_set(&a, OXM_IPV4_SRC, 5); a_set(&a, OXM_IPV4_DST, 6);
	a_set(&a, OXM_TCP_SRC, 7); a_set(&a, OXM_TCP_DST, 8); a_do(&a, OFPAT_DEC_NW_TTL, 0);
	a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et4, NULL }, { OXM_IP_PROTO, &tcp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_UDP_SRC, 9); a_set(&a, OXM_UDP_DST, 10); a_do(&a, OFPAT_SET_NW_TTL, 1);
	a_set(&a, OXM_IPV4_DST, 11); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et4, NULL }, { OXM_IP_PROTO, &udp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_SCTP_SRC, 12); a_set(&a, OXM_SCTP_DST, 13); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et4, NULL }, { OXM_IP_PROTO, &sctp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_ICMPV4_TYPE, 14); a_set(&a, OXM_ICMPV4_CODE, 15); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et4, NULL }, { OXM_IP_PROTO, &icmp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_IPV6_SRC, 16); a_set(&a, OXM_IPV6_DST, 17); a_set(&a, OXM_IPV6_FLABEL, 18);
	a_set(&a, OXM_TCP_SRC, 19); a_set(&a, OXM_TCP_DST, 20); a_set(&a, OXM_IP_DSCP, 21);
	a_do(&a, OFPAT_DEC_NW_TTL, 0); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et6, NULL }, { OXM_IP_PROTO, &tcp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_UDP_SRC, 22); a_set(&a, OXM_UDP_DST, 23); a_set(&a, OXM_IP_ECN, 24);
	a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et6, NULL }, { OXM_IP_PROTO, &udp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_SCTP_SRC, 25); a_set(&a, OXM_IPV6_DST, 26); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et6, NULL }, { OXM_IP_PROTO, &sctp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_IPV6_ND_TARGET, 27); a_set(&a, OXM_IPV6_ND_SLL, 28);
	a_set(&a, OXM_ICMPV6_CODE, 29); a_output(&a, 2);
	flow(1, 60, M({ OXM_ETH_TYPE, &et6, NULL }, { OXM_IP_PROTO, &icmp6, NULL },
		      { OXM_ICMPV6_TYPE, &nd_sol, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_IPV6_ND_TARGET, 30); a_set(&a, OXM_IPV6_ND_TLL, 31);
	a_set(&a, OXM_IPV6_SRC, 32); a_output(&a, 2);
	flow(1, 60, M({ OXM_ETH_TYPE, &et6, NULL }, { OXM_IP_PROTO, &icmp6, NULL },
		      { OXM_ICMPV6_TYPE, &nd_adv, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_ICMPV6_TYPE, 33); a_set(&a, OXM_ICMPV6_CODE, 34); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &et6, NULL }, { OXM_IP_PROTO, &icmp6, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_IP_PROTO, 17); a_set(&a, OXM_UDP_SRC, 35); a_output(&a, 2);
	flow(1, 10, M({ OXM_ETH_TYPE, &et4, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_IP_PROTO, 6); a_set(&a, OXM_TCP_DST, 36); a_set(&a, OXM_IPV6_FLABEL, 37);
	a_output(&a, 2);
	flow(1, 10, M({ OXM_ETH_TYPE, &et6, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_ARP_OP, 38); a_set(&a, OXM_ARP_SHA, 39); a_set(&a, OXM_ARP_SPA, 40);
	a_set(&a, OXM_ARP_THA, 41); a_set(&a, OXM_ARP_TPA, 42); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &etarp, NULL }), &a, NULL, 0xff, 0, 0);
	for (int mc = 0; mc < 2; mc++) {
		memset(&a, 0, sizeof(a));
		a_set(&a, OXM_MPLS_LABEL, 43); a_set(&a, OXM_MPLS_TC, 44);
		a_set(&a, OXM_MPLS_BOS, (uint32_t)mc); a_do(&a, OFPAT_SET_MPLS_TTL, 9);
		a_do(&a, OFPAT_DEC_MPLS_TTL, 0); a_do(&a, OFPAT_COPY_TTL_OUT, 0);
		a_do(&a, OFPAT_COPY_TTL_IN, 0); a_output(&a, 2);
		flow(1, 50, M({ OXM_ETH_TYPE, mc ? &etmplsm : &etmpls, NULL }), &a, NULL, 0xff, 0, 0);
	}
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_PBB_ISID, 45); a_output(&a, 2);
	flow(1, 50, M({ OXM_ETH_TYPE, &etpbb, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_VLAN_VID, 46); a_set(&a, OXM_VLAN_PCP, 47); a_set(&a, OXM_ETH_DST, 48);
	a_output(&a, 2);
	flow(1, 40, M({ OXM_VLAN_VID, &vid_present, &vid_mask }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_ETH_SRC, 49); a_set(&a, OXM_TUNNEL_ID, 50); a_output(&a, 2);
	flow(1, 0, NULL, 0, &a, NULL, 0xff, 0, 0);

	/* table 2: pushes and pops, set-fields between */
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_POP_VLAN, 0); a_set(&a, OXM_ETH_DST, 51); a_do(&a, OFPAT_POP_VLAN, 0);
	a_output(&a, 3);
	flow(2, 60, M({ OXM_VLAN_VID, &vid_present, &vid_mask }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_COPY_TTL_IN, 0); a_do(&a, OFPAT_POP_MPLS, 0x0800);
	a_set(&a, OXM_IPV4_DST, 52); a_set(&a, OXM_IP_DSCP, 53); a_do(&a, OFPAT_DEC_NW_TTL, 0);
	a_output(&a, 3);
	flow(2, 50, M({ OXM_ETH_TYPE, &etmpls, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_POP_MPLS, 0x8847); a_set(&a, OXM_MPLS_LABEL, 54);
	a_do(&a, OFPAT_POP_MPLS, 0x86dd); a_set(&a, OXM_IPV6_SRC, 55); a_output(&a, 3);
	flow(2, 50, M({ OXM_ETH_TYPE, &etmplsm, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_POP_PBB, 0); a_set(&a, OXM_ETH_DST, 56); a_output(&a, 3);
	flow(2, 50, M({ OXM_ETH_TYPE, &etpbb, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_PUSH_VLAN, 0x8100); a_set(&a, OXM_VLAN_VID, 57);
	a_set(&a, OXM_VLAN_PCP, 58); a_set(&a, OXM_TCP_SRC, 59);
	a_do(&a, OFPAT_PUSH_MPLS, 0x8847); a_set(&a, OXM_MPLS_LABEL, 60);
	a_set(&a, OXM_MPLS_TC, 61); a_do(&a, OFPAT_COPY_TTL_OUT, 0);
	a_do(&a, OFPAT_PUSH_PBB, 0x88e7); a_set(&a, OXM_PBB_ISID, 62); a_output(&a, 3);
	flow(2, 50, M({ OXM_ETH_TYPE, &et4, NULL }, { OXM_IP_PROTO, &tcp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_PUSH_MPLS, 0x8848); a_do(&a, OFPAT_SET_MPLS_TTL, 3);
	a_do(&a, OFPAT_DEC_MPLS_TTL, 0); a_do(&a, OFPAT_PUSH_VLAN, 0x88a8);
	a_set(&a, OXM_VLAN_VID, 63); a_do(&a, OFPAT_PUSH_VLAN, 0x8100); a_output(&a, 3);
	flow(2, 50, M({ OXM_ETH_TYPE, &et6, NULL }, { OXM_IP_PROTO, &udp, NULL }), &a, NULL,
	     0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_PUSH_VLAN, 0x8100); a_set(&a, OXM_VLAN_VID, 64);
	a_do(&a, OFPAT_PUSH_PBB, 0x88e7); a_do(&a, OFPAT_POP_PBB, 0);
	a_do(&a, OFPAT_PUSH_MPLS, 0x8847); a_do(&a, OFPAT_POP_MPLS, 0x0800);
	a_do(&a, OFPAT_POP_VLAN, 0); a_output(&a, 3);
	flow(2, 0, NULL, 0, &a, NULL, 0xff, 0, 0);

	/* table 3: groups, the action set, goto + write-metadata into table 5 */
	memset(&a, 0, sizeof(a));
	a_group(&a, 12);
	flow(3, 50, M({ OXM_ETH_TYPE, &et4, NULL }), &a, NULL, 0xff, 0, 0);
	memset(&a, 0, sizeof(a));
	a_group(&a, 13);
	a_group(&a, 14);
	flow(3, 50, M({ OXM_ETH_TYPE, &et6, NULL }), &a, NULL, 0xff, 0, 0);
	NEW(w);
	a_do(&w, OFPAT_COPY_TTL_IN, 0); a_do(&w, OFPAT_POP_VLAN, 0);
	a_do(&w, OFPAT_PUSH_MPLS, 0x8847); a_do(&w, OFPAT_COPY_TTL_OUT, 0);
	a_do(&w, OFPAT_DEC_MPLS_TTL, 0); a_set(&w, OXM_MPLS_LABEL, 65);
	a_set(&w, OXM_ETH_SRC, 66); a_group(&w, 11); a_output(&w, 4);
	flow(3, 40, M({ OXM_VLAN_VID, &vid_present, &vid_mask }), NULL, &w, 5, 0, 0x5a);
	memset(&w, 0, sizeof(w));
	a_do(&w, OFPAT_PUSH_VLAN, 0x88a8); a_do(&w, OFPAT_DEC_NW_TTL, 0);
	a_set(&w, OXM_VLAN_VID, 67); a_output(&w, 4);
	flow(3, 0, NULL, 0, NULL, &w, 5, 0, 0x5b);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_ETH_DST, 68); a_do(&a, OFPAT_SET_NW_TTL, 2); a_output(&a, OFPP_IN_PORT);
	flow(5, 10, NULL, 0, &a, NULL, 0xff, 0, 0);

	/* table 4: meters, ip_proto / eth_type rewrites, many outputs */
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_IP_PROTO, 132); a_set(&a, OXM_SCTP_SRC, 69); a_output(&a, OFPP_FLOOD);
	flow(4, 50, M({ OXM_ETH_TYPE, &et4, NULL }, { OXM_IP_PROTO, &tcp, NULL }), &a, NULL,
	     0xff, 21, 0);
	memset(&a, 0, sizeof(a));
	a_set(&a, OXM_ETH_TYPE, 0x86dd); a_output(&a, OFPP_ALL); a_set(&a, OXM_ETH_TYPE, 0x8847);
	a_do(&a, OFPAT_POP_MPLS, 0x0800); a_output(&a, OFPP_CONTROLLER);
	flow(4, 40, M({ OXM_ETH_TYPE, &et4, NULL }), &a, NULL, 0xff, 21, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_DEC_NW_TTL, 0); a_output(&a, 1); a_output(&a, 2);
	flow(4, 40, M({ OXM_ETH_TYPE, &et6, NULL }), &a, NULL, 0xff, 22, 0);
	memset(&a, 0, sizeof(a));
	a_do(&a, OFPAT_PUSH_VLAN, 0x8100); a_output(&a, OFPP_IN_PORT); a_output(&a, 3);
	flow(4, 0, NULL, 0, &a, NULL, 0xff, 0, 0);

	installing = 0;
}

/* ---- datapath state ------------------------------------------------------------------------ */
/* worker 0 (fuzz_common.h) and the burst's packet contexts */
static void worker_init(void)
{
	fuzz_worker_init(pool, N_PORTS);
	ctxs = aligned_alloc(64, sizeof(*ctxs) * OFS_BURST);
	if (!ctxs)
		fuzz_die("packet contexts");
	memset(ctxs, 0, sizeof(*ctxs) * OFS_BURST);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	fuzz_eal_init("fuzz_datapath", "fuzzdp", (*argv)[0], "128", N_PORTS, 0xf0d9);
	fuzz_lookup_init(true);
	/* mbufs with no room of their own (the ports' rx setup asks for the headroom): the data
	 * of every mbuf the datapath sees is a guarded buffer */
	pool = rte_pktmbuf_pool_create("fuzzdp_pool", 1023, 0, 0, RTE_PKTMBUF_HEADROOM,
				       rte_socket_id());
	if (!pool)
		fuzz_die("mbuf pool");
	fuzz_ports_init(pool, N_PORTS);
	worker_init();
	ofs_dp.pin_ring = rte_ring_create("fuzzdp_pin", 4096, rte_socket_id(), RING_F_SC_DEQ);
	ofs_dp.pout_ring = rte_ring_create("fuzzdp_pout", 1024, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!ofs_dp.pin_ring || !ofs_dp.pout_ring)
		fuzz_die("rings");
	ob_init(&out);
	install_flow_set();
	return 0;
}

/* What worker 0 does after a burst, and the agent with the Packet-Ins. */
static void after_burst(void)
{
	struct ofs_worker *w = &ofs_dp.workers[0];
	for (unsigned p = 0; p < ofs_dp.n_ports; p++)
		port_tx_flush(w, (int)p);
	ofs_reader_leave_all(w);
	void *objs[8];
	unsigned n;
	while ((n = rte_ring_sc_dequeue_burst(ofs_dp.pin_ring, objs, 8, NULL)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			ofs_send_packet_in(&out, objs[i]);
			free(objs[i]);
		}
	}
	sink();
	if (rte_mempool_in_use_count(pool) != 0)
		fuzz_die("mbufs leaked (in use after the burst)");
}

static struct rte_mbuf *burst[OFS_BURST];
static uint16_t burst_n;
static int burst_pidx;

static void rx_flush(void)
{
	if (!burst_n)
		return;
	process_burst(&ofs_dp.workers[0], burst_pidx, burst, burst_n, ctxs);
	burst_n = 0;
	after_burst();
}

static void packet_out(uint32_t in_port, uint8_t prog, const uint8_t *frame, uint32_t len)
{
	const struct acts *a = &progs[prog % n_progs];
	size_t n = 24 + a->n + len;
	uint8_t *m = malloc(n);
	if (!m)
		fuzz_die("malloc");
	m[0] = OFP13_VERSION;
	m[1] = OFPT_PACKET_OUT;
	wr16(m + 2, (uint16_t)n);
	wr32(m + 4, 0x2000);
	wr32(m + 8, OFP_NO_BUFFER);
	wr32(m + 12, in_port);
	wr16(m + 16, a->n);
	memset(m + 18, 0, 6);
	memcpy(m + 24, a->b, a->n);
	memcpy(m + 24 + a->n, frame, len);
	if (ofs_handle_msg(&out, m, n) < 0)
		fuzz_die("the agent closed the session on a PACKET_OUT");
	free(m);
	sink();
	void *objs[8];
	unsigned k;
	while ((k = rte_ring_sc_dequeue_burst(ofs_dp.pout_ring, objs, 8, NULL)) > 0) {
		for (unsigned i = 0; i < k; i++) {
			struct ofs_pout *po = objs[i];
			struct rte_mbuf *mb = guarded_mbuf(pool, po->data, po->data_len);
			if (!mb)
				fuzz_die("out of mbufs");
			run_packet_out(&ofs_dp.workers[0], po, mb);
			free(po);
		}
	}
	after_burst();
}

/* env OFS_FUZZ_GUARD_SELFTEST=1: the harness writes the byte after each rx frame itself, so a
 * run shows the guard reports it (fuzz/test_fuzz_datapath.py) */
static int guard_selftest = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (guard_selftest < 0)
		guard_selftest = getenv("OFS_FUZZ_GUARD_SELFTEST") != NULL;
	size_t o = 0;
	while (size - o >= 4) {
		uint8_t ctl = data[o], prog = data[o + 1];
		size_t len = rd16(data + o + 2);
		o += 4;
		if (len > size - o)
			len = size - o;
		if (len > OFS_MAX_PKT)
			len = OFS_MAX_PKT;
		int pidx = ctl & 3;
		bool standalone = ctl & 8;
		if (ctl & 4) {
			rx_flush();
			packet_out(prog & 0x80 ? OFPP_CONTROLLER : (uint32_t)pidx + 1, prog & 0x7f,
				   data + o, (uint32_t)len);
		} else {
			if (burst_n && (burst_pidx != pidx || burst_n == OFS_BURST ||
					standalone != ofs_dp.standalone))
				rx_flush();
			ofs_dp.standalone = standalone;
			burst_pidx = pidx;
			struct rte_mbuf *m = guarded_mbuf(pool, data + o, (uint32_t)len);
			if (!m)
				fuzz_die("out of mbufs");
			if (guard_selftest)  /* the byte past the frame: must be a report */
				((volatile uint8_t *)rte_pktmbuf_mtod(m, uint8_t *))[len] = 0;
			burst[burst_n++] = m;
		}
		o += len;
	}
	rx_flush();
	ofs_dp.standalone = false;
	memset(ofs_dp.workers[0].mac_learned, 0, sizeof(ofs_dp.workers[0].mac_learned));
	ofs_ctr_flush_all(&ofs_dp.workers[0]);
	return 0;
}
