/* Bounds of the datapath's frame accesses (issue 37, finding 2): no parse and no action reads
 * or writes a byte outside the frame, whatever the frame says about its own headers. Reaches
 * the action code through src/datapath_internal.h (as test_actions.c does). No EAL.
 *
 * Each frame lives in a heap buffer that ends where the frame ends. In the sanitizer build the
 * buffer is exactly headroom + frame, so one byte read or written past the frame is an ASan
 * heap-buffer-overflow report (which aborts the test). In the release build the frame is
 * followed by 64 KiB of a known pattern (further than any 16-bit layout offset reaches), which
 * must be untouched after every action; reads past the frame show there only through what
 * they compute (the crafted cases check those results).
 *
 * 1. The frames of the finding, with what the fix says of them: an IPv4 header whose IHL says
 *    more than the frame holds, IPv6 extension headers whose length runs past the frame (hop-
 *    by-hop, destination options, AH), L4 headers cut short, an IPv4 header under MPLS cut
 *    short (COPY_TTL_IN summed its IHL after checking 20 bytes): the truncated header's offset
 *    and match fields are absent, a set-field of its fields writes nothing, COPY_TTL_IN leaves
 *    the checksum of a header that is not whole alone.
 * 2. Every action (set-field of every settable OXM, push/pop VLAN/MPLS/PBB, MPLS and IP TTL
 *    set/dec, copy TTL in/out) alone and in random sequences on every prefix (0..len bytes) of
 *    frames of every protocol, and on random frames: the guard holds, and after the parse and
 *    after each action the layout is inside the frame (an oracle of this file, and the
 *    switch's own ofs_layout_ok, which the debug build asserts at run time).
 * Run: build/dut/switch/test_ofswitch_bounds (exit 0 = all passed). */
#include <rte_malloc.h>
#include "../src/datapath_internal.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BOUNDS_ASAN 1
#endif
#endif
#if !defined(BOUNDS_ASAN) && defined(__SANITIZE_ADDRESS__)
#define BOUNDS_ASAN 1
#endif
#ifndef BOUNDS_ASAN
#define BOUNDS_ASAN 0
#endif

static int failures, checks;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
	fprintf(stderr, "\n"); } } while (0)

#define HEADROOM 128      /* RTE_PKTMBUF_HEADROOM: what a push prepends into */
#define MAXF 2048         /* the switch's mbuf data room */
#define GUARD 65536
static uint8_t release_buf[HEADROOM + MAXF + GUARD], pattern[GUARD];
static const char *what;  /* the case being run, for the failure messages */

/* A frame in a guarded buffer (see the file comment), as a single-segment mbuf. */
struct gframe {
	struct rte_mbuf m;
	uint8_t *buf;
};

static void guard_fill(void)
{
	for (uint32_t i = 0; i < GUARD; i++)
		pattern[i] = (uint8_t)(0xa5 ^ i);
	memcpy(release_buf + HEADROOM + MAXF, pattern, GUARD);
}

static bool guard_intact(void)
{
	if (BOUNDS_ASAN)
		return true;  /* ASan has aborted at the first byte past */
	return memcmp(release_buf + HEADROOM + MAXF, pattern, GUARD) == 0;
}

static void gload(struct gframe *g, struct pkt_ctx *c, const uint8_t *frame, uint32_t len)
{
	if (BOUNDS_ASAN) {
		g->buf = malloc(HEADROOM + len);
		if (!g->buf)
			abort();
	} else {
		g->buf = release_buf + (MAXF - len);  /* the frame ends where the guard starts */
	}
	memset(g->buf, 0, HEADROOM);
	memcpy(g->buf + HEADROOM, frame, len);
	memset(&g->m, 0, sizeof(g->m));
	g->m.buf_addr = g->buf;
	g->m.buf_len = (uint16_t)(HEADROOM + len);
	g->m.data_off = HEADROOM;
	g->m.data_len = (uint16_t)len;
	g->m.pkt_len = len;
	g->m.nb_segs = 1;
	memset(c, 0, sizeof(*c));
	c->m = &g->m;
	reparse(c);
}

static void gdone(struct gframe *g)
{
	if (!guard_intact()) {
		CHECK(0, "%s: a byte past the frame was written", what);
		guard_fill();
	}
	if (BOUNDS_ASAN)
		free(g->buf);
}

/* The test's own statement of the invariant (independent of the switch's ofs_layout_ok): each
 * offset the layout holds points at a header wholly inside the frame. */
static bool layout_inside(const uint8_t *p, uint32_t len, const struct ofs_layout *l)
{
#define IN(o, n) ((o) < 0 || (uint32_t)(o) + (n) <= len)
	if (!IN(l->l2_end, 2) || !IN(l->vlan_ofs, 4) || !IN(l->mpls_ofs, 4) ||
	    !IN(l->pbb_ofs, 4))
		return false;
	if (l->l3_ofs >= 0) {
		if (l->l2_end < 0)
			return false;
		uint16_t et = rd16(p + l->l2_end);
		uint32_t need = et == OFS_ETH_P_IPV6 ? 40 : et == OFS_ETH_P_ARP ? 28 : 20;
		if (!IN(l->l3_ofs, need))
			return false;
		if (et == OFS_ETH_P_IPV4 && !IN(l->l3_ofs, (p[l->l3_ofs] & 0xfu) * 4))
			return false;
	}
	if (l->l4_ofs >= 0) {
		uint32_t need = l->l4_proto == 6 ? 20 : l->l4_proto == 17 ? 8 :
				l->l4_proto == 132 ? 12 : l->l4_proto == 1 || l->l4_proto == 58 ? 4 : 0;
		if (l->l3_ofs < 0 || l->l4_ofs < l->l3_ofs + 20 || !IN(l->l4_ofs, need))
			return false;
	}
	return true;
#undef IN
}

static void check_layout(struct pkt_ctx *c, const char *after)
{
	if (!c->m || c->parse_stale)
		return;  /* a stale layout is never read: ensure_layout parses first */
	bool ok = layout_inside(pdata(c), plen(c), &c->lay) &&
		  ofs_layout_ok(pdata(c), plen(c), &c->lay);
	CHECK(ok, "%s: layout outside the frame after %s (len %u: l2_end %d vlan %d mpls %d "
	      "pbb %d l3 %d l4 %d proto %u)", what, after, plen(c), c->lay.l2_end, c->lay.vlan_ofs,
	      c->lay.mpls_ofs, c->lay.pbb_ofs, c->lay.l3_ofs, c->lay.l4_ofs, c->lay.l4_proto);
}

/* ---- actions ------------------------------------------------------------------------------ */
static uint32_t rnd(uint32_t n) { return (uint32_t)rand() % n; }

struct act { uint8_t b[32]; };

static struct act set_field_act(int f, const uint8_t *val)
{
	struct act a;
	memset(&a, 0, sizeof(a));
	uint32_t l = ofs_fields[f].len;
	wr16(a.b, OFPAT_SET_FIELD);
	wr16(a.b + 2, (uint16_t)((4 + 4 + l + 7) / 8 * 8));
	wr16(a.b + 4, OFPXMC_OPENFLOW_BASIC);
	a.b[6] = (uint8_t)(f << 1);
	a.b[7] = (uint8_t)l;
	memcpy(a.b + 8, val, l);
	return a;
}

static struct act simple_act(uint16_t type, uint32_t arg)
{
	struct act a;
	memset(&a, 0, sizeof(a));
	wr16(a.b, type);
	wr16(a.b + 2, 8);
	if (type == OFPAT_PUSH_VLAN || type == OFPAT_PUSH_MPLS || type == OFPAT_POP_MPLS ||
	    type == OFPAT_PUSH_PBB)
		wr16(a.b + 4, (uint16_t)arg);
	else
		a.b[4] = (uint8_t)arg;  /* a TTL */
	return a;
}

static bool settable(int f)
{
	return f != OXM_IN_PORT && f != OXM_IN_PHY_PORT && f != OXM_METADATA &&
	       f != OXM_IPV6_EXTHDR;
}

/* A set-field with a value the agent accepts (flowkey.c value_ok) */
static struct act random_set_field(int f)
{
	uint8_t v[16];
	for (int i = 0; i < 16; i++)
		v[i] = (uint8_t)rand();
	switch (f) {
	case OXM_VLAN_VID: wr16(v, (uint16_t)(0x1000 | (rd16(v) & 0xfff))); break;
	case OXM_VLAN_PCP: case OXM_MPLS_TC: v[0] &= 7; break;
	case OXM_IP_DSCP: v[0] &= 63; break;
	case OXM_IP_ECN: v[0] &= 3; break;
	case OXM_MPLS_BOS: v[0] &= 1; break;
	case OXM_MPLS_LABEL: case OXM_IPV6_FLABEL: wr32(v, rd32(v) & 0xfffff); break;
	case OXM_IP_PROTO: { static const uint8_t pr[] = { 6, 17, 132, 1, 58, 47 };
		v[0] = pr[rnd(6)]; break; }
	case OXM_ETH_TYPE: { static const uint16_t et[] = { 0x0800, 0x86dd, 0x0806, 0x8847,
							    0x88e7, 0x8100 };
		wr16(v, et[rnd(6)]); break; }
	default: break;
	}
	return set_field_act(f, v);
}

#define N_ACTS 64
static struct act acts[N_ACTS];
static int n_acts;

/* Every action the datapath applies to a frame's bytes (not output/group/queue: they copy
 * mbufs from a pool; the fuzz target covers them). */
static void make_actions(void)
{
	for (int f = 0; f < OXM_N_FIELDS; f++)
		if (settable(f))
			acts[n_acts++] = random_set_field(f);
	acts[n_acts++] = simple_act(OFPAT_PUSH_VLAN, OFS_ETH_P_8021Q);
	acts[n_acts++] = simple_act(OFPAT_PUSH_VLAN, OFS_ETH_P_8021AD);
	acts[n_acts++] = simple_act(OFPAT_POP_VLAN, 0);
	acts[n_acts++] = simple_act(OFPAT_PUSH_MPLS, OFS_ETH_P_MPLS_UC);
	acts[n_acts++] = simple_act(OFPAT_PUSH_MPLS, OFS_ETH_P_MPLS_MC);
	acts[n_acts++] = simple_act(OFPAT_POP_MPLS, OFS_ETH_P_IPV4);
	acts[n_acts++] = simple_act(OFPAT_POP_MPLS, OFS_ETH_P_IPV6);
	acts[n_acts++] = simple_act(OFPAT_POP_MPLS, OFS_ETH_P_MPLS_UC);
	acts[n_acts++] = simple_act(OFPAT_PUSH_PBB, OFS_ETH_P_PBB);
	acts[n_acts++] = simple_act(OFPAT_POP_PBB, 0);
	acts[n_acts++] = simple_act(OFPAT_SET_MPLS_TTL, 7);
	acts[n_acts++] = simple_act(OFPAT_DEC_MPLS_TTL, 0);
	acts[n_acts++] = simple_act(OFPAT_SET_NW_TTL, 9);
	acts[n_acts++] = simple_act(OFPAT_DEC_NW_TTL, 0);
	acts[n_acts++] = simple_act(OFPAT_COPY_TTL_OUT, 0);
	acts[n_acts++] = simple_act(OFPAT_COPY_TTL_IN, 0);
}

/* The actions of program prog[0..n) on the frame, then the checksums (as emit does). */
static void run_program(const uint8_t *frame, uint32_t len, const int *prog, int n)
{
	struct gframe g;
	struct pkt_ctx c;
	gload(&g, &c, frame, len);
	check_layout(&c, "the parse");
	for (int i = 0; i < n && c.m && !c.dropped; i++) {
		if (!ofs_act_exec_one(&c, acts[prog[i]].b))
			break;
		check_layout(&c, "an action");
	}
	if (c.m) {
		fix_checksums(&c);
		ensure_parsed(&c);
		check_layout(&c, "the checksums");
	}
	gdone(&g);
}

/* ---- frames -------------------------------------------------------------------------------- */
static uint32_t eth(uint8_t *f, uint16_t et)
{
	for (int i = 0; i < 12; i++)
		f[i] = (uint8_t)(0x10 + i);
	wr16(f + 12, et);
	return 14;
}

static uint32_t ipv4(uint8_t *f, uint32_t o, uint8_t ihl_words, uint8_t proto, uint16_t tot)
{
	f[o] = (uint8_t)(0x40 | ihl_words);
	f[o + 1] = 0;
	wr16(f + o + 2, tot);
	wr16(f + o + 4, 0x1234);
	wr16(f + o + 6, 0x4000);
	f[o + 8] = 64;
	f[o + 9] = proto;
	wr16(f + o + 10, 0x1234);  /* a checksum COPY_TTL_IN must leave alone when not whole */
	wr32(f + o + 12, 0x0a000001);
	wr32(f + o + 16, 0x0a000002);
	return o + 20;
}

static uint32_t ipv6(uint8_t *f, uint32_t o, uint8_t nh, uint16_t plen_)
{
	wr32(f + o, 0x60000000u);
	wr16(f + o + 4, plen_);
	f[o + 6] = nh;
	f[o + 7] = 64;
	for (int i = 8; i < 40; i++)
		f[o + i] = (uint8_t)i;
	return o + 40;
}

static void fill(uint8_t *f, uint32_t from, uint32_t to)
{
	for (uint32_t i = from; i < to; i++)
		f[i] = (uint8_t)(0x61 + i % 26);
}

/* A set-field of field f (value 0xee..) through exec_one: the frame must be unchanged (the
 * field is absent from it) and no byte past it written. */
static void set_leaves_frame(const char *name, const uint8_t *frame, uint32_t len, int f)
{
	uint8_t v[16];
	memset(v, 0xee, sizeof(v));
	struct act a = set_field_act(f, v);
	struct gframe g;
	struct pkt_ctx c;
	what = name;
	gload(&g, &c, frame, len);
	ofs_act_exec_one(&c, a.b);
	fix_checksums(&c);
	CHECK(plen(&c) == len && memcmp(pdata(&c), frame, len) == 0,
	      "%s: set-field %d changed a frame that does not carry the field", name, f);
	gdone(&g);
}

static void parse_of(const uint8_t *frame, uint32_t len, struct ofs_key *k,
		     struct ofs_layout *lay)
{
	memset(k, 0, sizeof(*k));
	ofs_key_extract(frame, len, k, lay);
}

static const int l4_fields[] = { OXM_TCP_SRC, OXM_TCP_DST, OXM_UDP_SRC, OXM_UDP_DST,
				 OXM_SCTP_SRC, OXM_SCTP_DST, OXM_ICMPV4_TYPE, OXM_ICMPV4_CODE,
				 OXM_ICMPV6_TYPE, OXM_ICMPV6_CODE, OXM_IPV6_ND_TARGET,
				 OXM_IPV6_ND_SLL, OXM_IPV6_ND_TLL };
#define N_L4_FIELDS (int)(sizeof(l4_fields) / sizeof(l4_fields[0]))

static void test_finding_frames(void)
{
	uint8_t f[256];
	struct ofs_key k;
	struct ofs_layout lay;
	uint32_t o;

	/* IPv4 whose IHL says 60 bytes in a frame with 20 of them (+6 more): the header is not
	 * whole, so it is absent (OVS: no L3 fields); l4_ofs was 74 in a 40-byte frame */
	for (int proto = 0; proto < 3; proto++) {
		static const uint8_t pr[] = { 6, 17, 1 };
		memset(f, 0, sizeof(f));
		o = eth(f, OFS_ETH_P_IPV4);
		o = ipv4(f, o, 15, pr[proto], 80);
		fill(f, o, o + 6);
		o += 6;
		parse_of(f, o, &k, &lay);
		CHECK(lay.l3_ofs == -1 && lay.l4_ofs == -1 && k.ip_proto == 0 && k.ipv4_src == 0,
		      "IPv4 IHL 60 in %u bytes: l3 %d l4 %d proto %u", o, lay.l3_ofs, lay.l4_ofs,
		      k.ip_proto);
		for (int i = 0; i < N_L4_FIELDS; i++)
			set_leaves_frame("IPv4 IHL 60, short frame", f, o, l4_fields[i]);
		set_leaves_frame("IPv4 IHL 60, short frame", f, o, OXM_IPV4_DST);
	}

	/* IPv6 extension headers whose length runs past the frame: hop-by-hop and destination
	 * options (length byte 0xff: 2048 bytes), AH (0xff: 1028 bytes); the L4 header behind
	 * them is not in the frame */
	static const uint8_t ext[] = { 0, 60, 51, 43 };
	static const uint8_t l4p[] = { 6, 17, 132, 58 };
	for (unsigned e = 0; e < sizeof(ext); e++) {
		for (unsigned p = 0; p < sizeof(l4p); p++) {
			memset(f, 0, sizeof(f));
			o = eth(f, OFS_ETH_P_IPV6);
			o = ipv6(f, o, ext[e], 2100);
			f[o] = l4p[p];
			f[o + 1] = 0xff;
			o += 8;
			fill(f, o, o + 24);
			f[o] = 135;  /* an ND solicitation if it were ICMPv6 */
			o += 24;
			parse_of(f, o, &k, &lay);
			CHECK(lay.l4_ofs == -1 && k.ip_proto != l4p[p] && k.tp_src == 0,
			      "IPv6 ext %u length 0xff, then %u: l4 %d, ip_proto %u", ext[e],
			      l4p[p], lay.l4_ofs, k.ip_proto);
			CHECK(lay.l3_ofs == 14, "IPv6 ext: the IPv6 header itself is whole");
			for (int i = 0; i < N_L4_FIELDS; i++)
				set_leaves_frame("IPv6 ext header past the frame", f, o, l4_fields[i]);
		}
	}

	/* L4 headers cut short behind a whole IPv4 header: ip_proto is there, the ports are not */
	static const struct { uint8_t proto; uint32_t have; } cut[] = {
		{ 6, 0 }, { 6, 2 }, { 6, 19 }, { 17, 3 }, { 17, 7 }, { 132, 11 }, { 1, 1 },
		{ 1, 3 } };
	for (unsigned i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		memset(f, 0, sizeof(f));
		o = eth(f, OFS_ETH_P_IPV4);
		o = ipv4(f, o, 5, cut[i].proto, (uint16_t)(20 + cut[i].have));
		fill(f, o, o + cut[i].have);
		o += cut[i].have;
		wr16(f + 24, 0);  /* a right header checksum: fix_checksums keeps it as it is */
		wr16(f + 24, csum_fold(csum_add(0, f + 14, 20)));
		parse_of(f, o, &k, &lay);
		CHECK(lay.l3_ofs == 14 && k.ip_proto == cut[i].proto && lay.l4_ofs == -1 &&
		      k.tp_src == 0 && k.tp_dst == 0 && k.icmp_type == 0,
		      "IPv4 proto %u with %u bytes of L4: l4 %d", cut[i].proto, cut[i].have,
		      lay.l4_ofs);
		for (int j = 0; j < N_L4_FIELDS; j++)
			set_leaves_frame("L4 header cut short", f, o, l4_fields[j]);
	}

	/* the same behind IPv6 (ICMPv6 with 3 bytes, TCP with 10) */
	for (int i = 0; i < 2; i++) {
		memset(f, 0, sizeof(f));
		o = eth(f, OFS_ETH_P_IPV6);
		o = ipv6(f, o, i ? 6 : 58, i ? 10 : 3);
		fill(f, o, o + (i ? 10 : 3));
		o += i ? 10 : 3;
		parse_of(f, o, &k, &lay);
		CHECK(lay.l3_ofs == 14 && lay.l4_ofs == -1, "IPv6 L4 cut short: l4 %d", lay.l4_ofs);
		for (int j = 0; j < N_L4_FIELDS; j++)
			set_leaves_frame("IPv6 L4 header cut short", f, o, l4_fields[j]);
	}

	/* COPY_TTL_IN onto an IPv4 header under MPLS whose IHL says 60 in a 20-byte rest: the
	 * TTL byte is in the frame and is copied; the header checksum is left alone (it cannot
	 * be computed: the header is not whole), not summed over 40 bytes past the frame */
	memset(f, 0, sizeof(f));
	o = eth(f, OFS_ETH_P_MPLS_UC);
	wr32(f + o, 100u << 12 | 0x100 | 33);  /* label 100, bottom of stack, TTL 33 */
	o += 4;
	uint32_t ip = o;
	o = ipv4(f, o, 15, 6, 80);
	struct gframe g;
	struct pkt_ctx c;
	struct act ttl_in = simple_act(OFPAT_COPY_TTL_IN, 0);
	what = "COPY_TTL_IN, IPv4 IHL 60 under MPLS";
	gload(&g, &c, f, o);
	ofs_act_exec_one(&c, ttl_in.b);
	CHECK(pdata(&c)[ip + 8] == 33, "COPY_TTL_IN: the TTL (in the frame) is copied");
	CHECK(rd16(pdata(&c) + ip + 10) == 0x1234,
	      "COPY_TTL_IN: the checksum of an IPv4 header that is not whole was computed "
	      "(%04x) over bytes past the frame", rd16(pdata(&c) + ip + 10));
	gdone(&g);
	/* control: a whole IPv4 header under MPLS gets its checksum recomputed */
	f[ip] = 0x45;
	wr16(f + ip + 2, 20);
	gload(&g, &c, f, o);
	ofs_act_exec_one(&c, ttl_in.b);
	CHECK(pdata(&c)[ip + 8] == 33 &&
	      csum_fold(csum_add(0, pdata(&c) + ip, 20)) == 0,
	      "COPY_TTL_IN: a whole IPv4 header's checksum is recomputed");
	gdone(&g);
}

/* ofs_layout_ok (what the debug build asserts) refuses each way a layout can leave the frame,
 * and takes a parse's layout of a whole frame. */
static void test_layout_ok(void)
{
	uint8_t f[128];
	memset(f, 0, sizeof(f));
	uint32_t o = eth(f, OFS_ETH_P_8021Q);
	wr16(f + o, 5);
	wr16(f + o + 2, OFS_ETH_P_IPV4);
	o = ipv4(f, o + 4, 6, 6, 44);  /* IHL 24: 4 bytes of options */
	o += 4;
	fill(f, o, o + 20);
	o += 20;
	struct ofs_key k;
	struct ofs_layout good, l;
	parse_of(f, o, &k, &good);
	CHECK(good.vlan_ofs == 12 && good.l2_end == 16 && good.l3_ofs == 18 && good.l4_ofs == 42 &&
	      ofs_layout_ok(f, o, &good), "a whole frame's layout: l3 %d l4 %d", good.l3_ofs,
	      good.l4_ofs);
	CHECK(!ofs_layout_ok(f, o - 1, &good), "TCP header one byte short");
	l = good; l.l4_ofs = (int16_t)(o - 19);
	CHECK(!ofs_layout_ok(f, o, &l), "TCP header past the end");
	l = good; l.l4_ofs = 20;
	CHECK(!ofs_layout_ok(f, o, &l), "L4 inside the IP header");
	CHECK(!ofs_layout_ok(f, 40, &good), "IPv4 options past the end");
	l = good; l.vlan_ofs = (int16_t)(o - 3);
	CHECK(!ofs_layout_ok(f, o, &l), "VLAN tag past the end");
	l = good; l.mpls_ofs = (int16_t)(o - 2);
	CHECK(!ofs_layout_ok(f, o, &l), "MPLS shim past the end");
	l = good; l.pbb_ofs = (int16_t)o;
	CHECK(!ofs_layout_ok(f, o, &l), "I-TAG past the end");
	l = good; l.l3_ofs = 22;
	CHECK(!ofs_layout_ok(f, o, &l), "L3 not behind the ethertype");
	l = good; l.l2_end = (int16_t)(o - 1);
	CHECK(!ofs_layout_ok(f, o, &l), "ethertype past the end");
	f[16] = 0x88;  /* an ethertype with no L3 header the parser knows */
	CHECK(!ofs_layout_ok(f, o, &good), "L3 under an unknown ethertype");
}

/* A frame of every kind the parser knows, up to `max` bytes with consistent lengths. */
static uint32_t make_frame(uint8_t *f, uint32_t max)
{
	uint32_t o = 0;
	int tags = rnd(4) == 0 ? 1 + (int)rnd(3) : 0;
	for (int i = 0; i < 12; i++)
		f[o++] = (uint8_t)rand();
	for (int t = 0; t < tags; t++) {
		wr16(f + o, rnd(2) ? OFS_ETH_P_8021Q : OFS_ETH_P_8021AD);
		wr16(f + o + 2, (uint16_t)rand());
		o += 4;
	}
	int kind = (int)rnd(8);
	static const uint8_t protos[] = { 6, 17, 132, 1, 58, 47 };
	uint8_t proto = protos[rnd(6)];
	uint32_t l4len = rnd(4) ? (proto == 6 ? 20 : 8) + rnd(40) : rnd(24);
	switch (kind) {
	case 0: case 1: {  /* IPv4, IHL 5..15, sometimes lying */
		wr16(f + o, OFS_ETH_P_IPV4);
		o += 2;
		uint8_t ihl = rnd(3) ? 5 : (uint8_t)(5 + rnd(11));
		for (uint32_t i = 20; i < ihl * 4u; i++)
			f[o + i] = (uint8_t)rand();
		/* one rand() per statement: argument order differs between compilers */
		uint8_t ihl_said = rnd(8) ? ihl : (uint8_t)rnd(16);
		uint16_t tot = (uint16_t)(rnd(8) ? ihl * 4u + l4len : (uint32_t)rand());
		ipv4(f, o, ihl_said, proto, tot);
		if (rnd(8) == 0)
			wr16(f + o + 6, (uint16_t)rand());  /* a fragment */
		o += ihl * 4;
		break;
	}
	case 2: case 3: {  /* IPv6 with 0-3 extension headers, some lying about their length */
		wr16(f + o, OFS_ETH_P_IPV6);
		o += 2;
		static const uint8_t ehs[] = { 0, 43, 44, 60, 51, 50, 59 };
		int n = rnd(2) ? 0 : 1 + (int)rnd(3);
		uint8_t first = n ? ehs[rnd(7)] : proto;
		uint32_t ip6 = o;
		o = ipv6(f, o, first, 0);
		uint8_t cur = first;
		for (int i = 0; i < n; i++) {
			uint8_t next = i + 1 < n ? ehs[rnd(7)] : proto;
			uint8_t l8 = rnd(6) ? 0 : (uint8_t)rand();
			f[o] = next;
			f[o + 1] = l8;
			for (int j = 2; j < 8; j++)
				f[o + j] = (uint8_t)rand();
			if (cur == 44)
				wr16(f + o + 2, rnd(2) ? 0 : (uint16_t)rand());
			uint32_t hl = cur == 44 ? 8 : cur == 51 ? (l8 + 2u) * 4 : (l8 + 1u) * 8;
			o += hl < 64 ? hl : 8;  /* a long one lies: the frame holds 8 bytes of it */
			cur = next;
		}
		wr16(f + ip6 + 4, (uint16_t)(o - ip6 - 40 + l4len));
		if (proto == 58 && rnd(2)) {  /* ND with options */
			f[o] = rnd(2) ? 135 : 136;
			for (uint32_t i = 1; i < l4len; i++)
				f[o + i] = (uint8_t)rand();
			if (l4len > 26) { f[o + 24] = (uint8_t)(1 + rnd(2)); f[o + 25] = (uint8_t)rnd(3); }
			o += l4len;
			l4len = 0;
		}
		break;
	}
	case 4:  /* ARP */
		wr16(f + o, OFS_ETH_P_ARP);
		o += 2;
		wr16(f + o, 1); wr16(f + o + 2, OFS_ETH_P_IPV4); f[o + 4] = 6; f[o + 5] = 4;
		for (int i = 6; i < 28; i++)
			f[o + i] = (uint8_t)rand();
		o += 28;
		l4len = rnd(20);
		break;
	case 5: {  /* MPLS stack over IPv4/IPv6 */
		wr16(f + o, rnd(2) ? OFS_ETH_P_MPLS_UC : OFS_ETH_P_MPLS_MC);
		o += 2;
		int n = 1 + (int)rnd(3);
		for (int i = 0; i < n; i++) {
			uint32_t label = (uint32_t)rand() << 12;
			wr32(f + o, label | (i == n - 1 ? 0x100u : 0) | (uint8_t)rand());
			o += 4;
		}
		if (rnd(2)) {
			uint8_t ihl = rnd(3) ? 5 : (uint8_t)(5 + rnd(11));
			ipv4(f, o, ihl, proto, (uint16_t)(ihl * 4 + l4len));
			o += 20;
		} else {
			o = ipv6(f, o, proto, (uint16_t)l4len);
		}
		break;
	}
	case 6:  /* PBB: I-TAG, customer MACs, an inner frame */
		wr16(f + o, OFS_ETH_P_PBB);
		o += 2;
		for (int i = 0; i < 16; i++)
			f[o + i] = (uint8_t)rand();
		o += 16;
		wr16(f + o, rnd(2) ? OFS_ETH_P_IPV4 : OFS_ETH_P_8021Q);
		o += 2;
		break;
	default:  /* another ethertype */
		wr16(f + o, (uint16_t)rand());
		o += 2;
		break;
	}
	for (uint32_t i = 0; i < l4len && o < max; i++)
		f[o++] = (uint8_t)rand();
	if (proto == 17 && kind < 4 && l4len >= 8)
		wr16(f + o - l4len + 4, (uint16_t)l4len);
	return o < max ? o : max;
}

/* Every action alone, and random sequences of 1-6, on every prefix of frames of every kind,
 * and on frames of random bytes; lengths 0..max. */
static void test_every_action_every_prefix(void)
{
	static uint8_t f[MAXF];
	unsigned runs = 0;
	srand(37);
	for (int round = 0; round < 120; round++) {
		uint32_t len = make_frame(f, 160);
		what = "every action on every prefix";
		for (uint32_t cutlen = 0; cutlen <= len; cutlen++) {
			for (int a = 0; a < n_acts; a++) {
				if (cutlen % 4 && rnd(6))
					continue;  /* a sixth of the actions on most prefixes */
				run_program(f, cutlen, &a, 1);
				runs++;
			}
			int prog[6], n = 1 + (int)rnd(6);
			for (int i = 0; i < n; i++)
				prog[i] = (int)rnd((uint32_t)n_acts);
			run_program(f, cutlen, prog, n);
			runs++;
		}
	}
	what = "random bytes";
	for (int round = 0; round < 20000; round++) {
		uint32_t len = rnd(5) ? rnd(120) : rnd((uint32_t)MAXF + 1);
		for (uint32_t i = 0; i < len; i++)
			f[i] = (uint8_t)rand();
		if (len >= 14 && rnd(2)) {
			static const uint16_t ets[] = { 0x0800, 0x86dd, 0x0806, 0x8847, 0x88e7,
							0x8100 };
			wr16(f + 12, ets[rnd(6)]);
			if (len > 14 && f[12] == 0x08 && f[13] == 0)
				f[14] = (uint8_t)(0x40 | (f[14] & 0xf));
		}
		int prog[6], n = 1 + (int)rnd(6);
		for (int i = 0; i < n; i++)
			prog[i] = (int)rnd((uint32_t)n_acts);
		run_program(f, len, prog, n);
		runs++;
	}
	printf("bounds: %u action programs on guarded frames\n", runs);
}

int main(void)
{
	memset(&ofs_dp, 0, sizeof(ofs_dp));
	guard_fill();
	srand(1);
	make_actions();
	test_finding_frames();
	test_layout_ok();
	test_every_action_every_prefix();
	printf("%d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
