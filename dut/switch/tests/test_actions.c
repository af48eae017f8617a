/* Differential test of the datapath's header rewrites (src/actions.c and src/pkt_csum.c, reached
 * through the private src/datapath_internal.h): every set-field whose checksums are updated in place
 * (RFC 1624: IP DSCP/ECN, IPv4 and IPv6 addresses, TCP/UDP/SCTP ports) must leave exactly the
 * bytes of the full recomputation (fix_checksums with the packet marked dirty), on random
 * frames of every protocol the switch fixes checksums for: IPv4 with and without options,
 * IPv6 with and without an extension header, TCP, UDP (IPv4 with and without a checksum),
 * ICMPv4, ICMPv6, SCTP, frames cut short; alone, two in a row (the pipeline bench's set-field
 * workload: ipv4_dst, then ip_dscp), after an action that marked the packet dirty (a TTL
 * decrement) and after an ip_proto rewrite; TTL rewrites (in place) the same way. No EAL: a frame lives in a static mbuf.
 * Run: build/dut/switch/test_ofswitch_actions (exit 0 = all passed). */
#include <rte_malloc.h>
#include "../src/datapath_internal.h"

static int failures, checks;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); \
	fprintf(stderr, "\n"); } } while (0)

#define HEADROOM 128
static uint8_t buf_a[2048], buf_b[2048];
static struct rte_mbuf mb_a, mb_b;

static void load(struct pkt_ctx *c, struct rte_mbuf *m, uint8_t *buf, const uint8_t *frame,
		 uint32_t len)
{
	memset(m, 0, sizeof(*m));
	m->buf_addr = buf;
	m->buf_len = sizeof(buf_a);
	m->data_off = HEADROOM;
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	m->nb_segs = 1;
	memcpy(buf + HEADROOM, frame, len);
	memset(c, 0, sizeof(*c));
	c->m = m;
	reparse(c);
}

static uint32_t rnd(uint32_t n) { return (uint32_t)rand() % n; }

/* A random frame with right checksums (the switch's own full computation, csum.h being
 * checked against the RFC 1071 reference in test_unit.c). ip: 4 or 6; proto: 6, 17, 1, 58,
 * 132. Returns its length. */
static uint32_t make_frame(uint8_t *f, int ip, uint8_t proto, bool udp_zero)
{
	uint32_t o = 0;
	for (int i = 0; i < 12; i++)
		f[o++] = (uint8_t)rand();
	wr16(f + o, ip == 4 ? OFS_ETH_P_IPV4 : OFS_ETH_P_IPV6);
	o += 2;
	uint32_t l3 = o, l4;
	uint32_t payload = rnd(40);
	uint32_t l4hdr = proto == 6 ? 20 : proto == 17 ? 8 : proto == 132 ? 12 : 8;
	if (ip == 4) {
		uint32_t ihl = 5 + (rnd(3) == 0 ? rnd(4) : 0);
		f[o] = (uint8_t)(0x40 | ihl);
		f[o + 1] = (uint8_t)rand();
		wr16(f + o + 2, (uint16_t)(ihl * 4 + l4hdr + payload));
		wr16(f + o + 4, (uint16_t)rand());
		wr16(f + o + 6, 0x4000);
		f[o + 8] = (uint8_t)(1 + rnd(255));
		f[o + 9] = proto;
		wr16(f + o + 10, 0);
		for (uint32_t i = 12; i < ihl * 4; i++)
			f[o + i] = (uint8_t)rand();
		o += ihl * 4;
	} else {
		bool ext = rnd(3) == 0;
		wr32(f + o, 0x60000000u | (rand() & 0x0fffffff));
		wr16(f + o + 4, (uint16_t)((ext ? 8 : 0) + l4hdr + payload));
		f[o + 6] = ext ? 0 : proto;  /* hop-by-hop options first */
		f[o + 7] = (uint8_t)(1 + rnd(255));
		for (int i = 8; i < 40; i++)
			f[o + i] = (uint8_t)rand();
		o += 40;
		if (ext) {
			f[o] = proto;
			f[o + 1] = 0;
			f[o + 2] = 1;  /* PadN over the rest */
			f[o + 3] = 4;
			memset(f + o + 4, 0, 4);
			o += 8;
		}
	}
	l4 = o;
	for (uint32_t i = 0; i < l4hdr + payload; i++)
		f[o + i] = (uint8_t)rand();
	o += l4hdr + payload;
	if (proto == 17)
		wr16(f + l4 + 4, (uint16_t)(l4hdr + payload));
	/* zero every checksum field, then let the full computation fill them in */
	if (proto == 6) wr16(f + l4 + 16, 0);
	if (proto == 17) wr16(f + l4 + 6, udp_zero && ip == 4 ? 0 : 1);
	if (proto == 1 || proto == 58) wr16(f + l4 + 2, 0);
	if (o < 60) {
		memset(f + o, 0, 60 - o);  /* Ethernet padding after the IP packet */
		o = 60;
	}
	struct pkt_ctx c;
	load(&c, &mb_a, buf_a, f, o);
	(void)l3;
	c.csum_dirty = true;
	fix_checksums(&c);
	memcpy(f, buf_a + HEADROOM, o);
	return o;
}

static void oxm_of(uint8_t *x, int field, uint32_t len)
{
	wr16(x, 0x8000);
	x[2] = (uint8_t)(field << 1);
	x[3] = (uint8_t)len;
	for (uint32_t i = 0; i < len; i++)
		x[4 + i] = (uint8_t)rand();
	if (field == OXM_IP_DSCP) x[4] &= 0x3f;
	if (field == OXM_IP_ECN) x[4] &= 3;
}

static uint32_t field_len(int f)
{
	switch (f) {
	case OXM_IP_DSCP: case OXM_IP_ECN: case OXM_IP_PROTO: return 1;
	case OXM_IPV4_SRC: case OXM_IPV4_DST: return 4;
	case OXM_IPV6_SRC: case OXM_IPV6_DST: return 16;
	case OXM_ETH_DST: case OXM_ETH_SRC: return 6;
	case OXM_VLAN_PCP: return 1;
	case OXM_IPV6_FLABEL: return 4;
	default: return 2;
	}
}

static const int in_place[] = { OXM_IP_DSCP, OXM_IP_ECN, OXM_IPV4_SRC, OXM_IPV4_DST,
				OXM_TCP_SRC, OXM_TCP_DST, OXM_UDP_SRC, OXM_UDP_DST,
				OXM_SCTP_SRC, OXM_SCTP_DST, OXM_IPV6_SRC, OXM_IPV6_DST,
				/* no checksum covers them: nothing to recompute */
				OXM_ETH_DST, OXM_ETH_SRC, OXM_VLAN_VID, OXM_VLAN_PCP,
				OXM_IPV6_FLABEL };
#define N_IN_PLACE (int)(sizeof(in_place) / sizeof(in_place[0]))

enum before { PLAIN, DIRTY_TTL, PROTO_REWRITTEN, N_BEFORE };

/* Apply `before`, then the set-fields x[0..n) to the frame, then fix_checksums: in place
 * (A) and with the packet marked dirty after every set-field (B, the full recomputation).
 * Returns whether some set-field was done in place in A. */
static bool run_both(const uint8_t *f, uint32_t len, uint32_t cut, uint8_t x[][24], int n,
		     enum before before, bool *same)
{
	struct pkt_ctx a, b;
	bool kept = false;
	uint32_t l = len - cut;
	load(&a, &mb_a, buf_a, f, l);
	load(&b, &mb_b, buf_b, f, l);
	for (int side = 0; side < 2; side++) {
		struct pkt_ctx *c = side ? &b : &a;
		if (before == DIRTY_TTL && c->lay.l3_ofs >= 0) {
			uint16_t iet;
			int t = ip_ttl_ofs(c, c->lay.l3_ofs, &iet);
			if (t >= 0 && pdata(c)[t] > 1) {
				pdata(c)[t]--;
				c->csum_dirty = true;
			}
		}
		if (before == PROTO_REWRITTEN) {
			uint8_t px[8];
			wr16(px, 0x8000);
			px[2] = OXM_IP_PROTO << 1;
			px[3] = 1;
			px[4] = c->lay.l4_proto;  /* the same value: still marks the layout proto */
			ofs_act_set_field(c, px);
		}
		for (int i = 0; i < n; i++) {
			if (side == 0) {
				bool was_dirty = c->csum_dirty;
				ofs_act_set_field(c, x[i]);
				kept |= !c->csum_dirty && !was_dirty;
			} else {
				ofs_act_set_field(c, x[i]);
				c->csum_dirty = true;
			}
		}
		fix_checksums(c);
	}
	*same = a.m->data_len == b.m->data_len &&
		memcmp(pdata(&a), pdata(&b), a.m->data_len) == 0;
	if (!*same && failures < 10) {
		fprintf(stderr, "differ (len %u, cut %u, before %d, fields", len, cut, before);
		for (int i = 0; i < n; i++)
			fprintf(stderr, " %d", x[i][2] >> 1);
		fprintf(stderr, "):\n");
		for (uint32_t i = 0; i < a.m->data_len; i++)
			if (pdata(&a)[i] != pdata(&b)[i])
				fprintf(stderr, "  byte %u: in place %02x, full %02x\n", i, pdata(&a)[i],
					pdata(&b)[i]);
	}
	return kept;
}

static void test_set_field_checksums(void)
{
	static const uint8_t protos[] = { 6, 17, 1, 58, 132 };
	unsigned cases = 0, differ = 0, in_place_runs = 0, plain = 0;
	srand(11);
	for (int round = 0; round < 4000; round++) {
		uint8_t f[256];
		int ip = rnd(2) ? 4 : 6;
		uint8_t proto = protos[rnd(5)];
		if ((proto == 1 && ip == 6) || (proto == 58 && ip == 4))
			continue;
		uint32_t len = make_frame(f, ip, proto, rnd(4) == 0);
		if (rnd(4) == 0) {  /* a VLAN tag behind the MACs (no checksum covers it) */
			memmove(f + 16, f + 12, len - 12);
			wr16(f + 12, OFS_ETH_P_8021Q);
			len += 4;
		}
		/* mostly whole frames; some cut inside the L4 header or payload (the IP length
		 * then says more than the frame holds) */
		uint32_t cut = rnd(5) == 0 ? 1 + rnd(20) : 0;
		uint8_t x[2][24];
		int n = 1 + (int)rnd(2);
		for (int i = 0; i < n; i++) {
			int fld = in_place[rnd(N_IN_PLACE)];
			oxm_of(x[i], fld, field_len(fld));
		}
		if (round % 7 == 0) {  /* the bench's set-field workload: ipv4_dst, then ip_dscp */
			oxm_of(x[0], OXM_IPV4_DST, 4);
			oxm_of(x[1], OXM_IP_DSCP, 1);
			n = 2;
		}
		for (int be = 0; be < N_BEFORE; be++) {
			bool same;
			in_place_runs += run_both(f, len, cut, x, n, (enum before)be, &same);
			differ += !same;
			cases++;
			plain += be == PLAIN;
		}
	}
	CHECK(differ == 0, "in-place checksums differ from the full recomputation in %u of %u "
	      "cases", differ, cases);
	/* (after a TTL decrement or an ip_proto rewrite the packet is dirty already) */
	CHECK(in_place_runs > plain / 2, "only %u of %u plain cases updated a checksum in place: "
	      "the test does not exercise it", in_place_runs, plain);
	printf("set-field checksums: %u cases, %u updated in place, %u differ\n", cases,
	       in_place_runs, differ);
}

/* Every value of a UDP port, over IPv4 and IPv6: among them the one whose new checksum is 0,
 * which UDP sends as 0xffff (the full recomputation does; the in-place update must too). */
static void test_udp_zero_checksum(void)
{
	srand(3);
	for (int ip = 4; ip <= 6; ip += 2) {
		uint8_t f[256];
		uint32_t len = make_frame(f, ip, 17, false), differ = 0, ffff = 0;
		struct pkt_ctx c;
		load(&c, &mb_b, buf_b, f, len);
		int l4 = c.lay.l4_ofs;
		for (uint32_t port = 0; port < 65536; port++) {
			uint8_t x[1][24];
			wr16(x[0], 0x8000);
			x[0][2] = OXM_UDP_DST << 1;
			x[0][3] = 2;
			wr16(x[0] + 4, (uint16_t)port);
			bool same;
			run_both(f, len, 0, x, 1, PLAIN, &same);
			differ += !same;
			ffff += rd16(buf_b + HEADROOM + l4 + 6) == 0xffff;
		}
		CHECK(differ == 0 && ffff > 0, "IPv%d UDP, every port: %u differ, %u with checksum "
		      "0xffff", ip, differ, ffff);
	}
}

/* After a push (VLAN, MPLS) the datapath moves the layout instead of parsing the frame again
 * (exec_one): the layout and key.eth_type must be a fresh parse's, and so must the whole key
 * once a reader asks for it (ensure_parsed). Frames with 0-2 VLAN tags, MPLS, PBB, IPv4,
 * IPv6, ARP and other ethertypes; pushes of every allowed ethertype. */
static void test_push_keeps_layout(void)
{
	static const uint16_t inner[] = { OFS_ETH_P_IPV4, OFS_ETH_P_IPV6, OFS_ETH_P_ARP, 0x88cc,
					  OFS_ETH_P_MPLS_UC, OFS_ETH_P_PBB };
	static const uint16_t pushes[][2] = { { OFPAT_PUSH_VLAN, OFS_ETH_P_8021Q },
					      { OFPAT_PUSH_VLAN, OFS_ETH_P_8021AD },
					      { OFPAT_PUSH_MPLS, OFS_ETH_P_MPLS_UC },
					      { OFPAT_PUSH_MPLS, OFS_ETH_P_MPLS_MC } };
	unsigned wrong = 0, moved = 0, cases = 0;
	srand(13);
	for (int round = 0; round < 3000; round++) {
		uint8_t f[256];
		uint32_t len;
		uint16_t et = inner[rnd(6)];
		int tags = rnd(3) == 0 ? (int)rnd(3) : 0;
		if (et == OFS_ETH_P_IPV4 || et == OFS_ETH_P_IPV6) {
			static const uint8_t protos[] = { 6, 17, 132 };
			len = make_frame(f, et == OFS_ETH_P_IPV4 ? 4 : 6, protos[rnd(3)], false);
		} else {
			len = 14 + 28 + rnd(30);
			for (uint32_t i = 0; i < len; i++)
				f[i] = (uint8_t)rand();
			wr16(f + 12, et);
			if (et == OFS_ETH_P_ARP) {
				wr16(f + 14, 1); wr16(f + 16, OFS_ETH_P_IPV4); f[18] = 6; f[19] = 4;
			}
		}
		for (int t = 0; t < tags; t++) {  /* VLAN tags behind the MACs */
			memmove(f + 16, f + 12, len - 12);
			wr16(f + 12, rnd(2) ? OFS_ETH_P_8021Q : OFS_ETH_P_8021AD);
			len += 4;
		}
		if (rnd(8) == 0)
			len = 12 + rnd(8);  /* too short to hold an ethertype, or only just */
		const uint16_t *push = pushes[rnd(4)];
		uint8_t act[8] = { 0 };
		wr16(act, push[0]);
		wr16(act + 2, 8);
		wr16(act + 4, push[1]);
		struct pkt_ctx a, b;
		load(&a, &mb_a, buf_a, f, len);
		if (!ofs_act_exec_one(&a, act) || !a.m)
			continue;
		cases++;
		moved += !a.parse_stale;
		ensure_layout(&a);
		load(&b, &mb_b, buf_b, pdata(&a), plen(&a));
		bool same = memcmp(&a.lay, &b.lay, sizeof(a.lay)) == 0 &&
			    a.key.eth_type == b.key.eth_type;
		ensure_parsed(&a);
		a.key.in_port = b.key.in_port;  /* load() leaves the ports as they were */
		a.key.in_phy_port = b.key.in_phy_port;
		same = same && memcmp(&a.key, &b.key, sizeof(a.key)) == 0;
		if (!same && wrong++ < 5)
			fprintf(stderr, "push %04x/%04x on ethertype %04x with %d tags, %u bytes: "
				"layout or key differs from a parse\n", push[0], push[1], et, tags,
				len);
	}
	CHECK(wrong == 0, "a push's layout differs from a parse in %u of %u cases", wrong, cases);
	CHECK(moved > cases / 3, "only %u of %u pushes moved the layout: the test does not "
	      "exercise it", moved, cases);
	printf("push layouts: %u cases, %u moved without a parse, %u wrong\n", cases, moved, wrong);
}

/* A wrong checksum stays wrong by the same amount in place (RFC 1624; the full recomputation
 * would repair it): the documented difference, checked so that it stays the only one. */
static void test_wrong_checksum_kept_wrong(void)
{
	uint8_t f[256];
	srand(5);
	uint32_t len = make_frame(f, 4, 17, false);
	uint8_t *ip = f + 14;
	wr16(ip + 10, (uint16_t)(rd16(ip + 10) ^ 0x0101));  /* break the IPv4 header checksum */
	uint8_t x[1][24];
	oxm_of(x[0], OXM_IPV4_DST, 4);
	struct pkt_ctx a;
	load(&a, &mb_a, buf_a, f, len);
	ofs_act_set_field(&a, x[0]);
	fix_checksums(&a);
	struct pkt_ctx chk;
	load(&chk, &mb_b, buf_b, pdata(&a), len);
	uint16_t kept = rd16(pdata(&chk) + 14 + 10);
	chk.csum_dirty = true;
	fix_checksums(&chk);
	CHECK(rd16(pdata(&chk) + 14 + 10) != kept, "a wrong IPv4 checksum stays wrong in place");
}

/* DEC_NW_TTL and SET_NW_TTL update the IPv4 header checksum in place (RFC 1624 on the TTL's
 * word; the TTL is in no L4 checksum and IPv6 has no header checksum): the frame must be byte
 * for byte the full recomputation's, on random IPv4/IPv6 frames of every protocol, tagged or
 * not, cut short or not, and a TTL of 1 still stops the packet. */
static void test_ttl_in_place(void)
{
	static const uint8_t protos[] = { 6, 17, 1, 58, 132 };
	unsigned cases = 0, differ = 0, clean = 0;
	srand(17);
	for (int round = 0; round < 3000; round++) {
		uint8_t f[256];
		int ip = rnd(2) ? 4 : 6;
		uint8_t proto = protos[rnd(5)];
		if ((proto == 1 && ip == 6) || (proto == 58 && ip == 4))
			continue;
		uint32_t len = make_frame(f, ip, proto, rnd(4) == 0);
		if (rnd(4) == 0) {
			memmove(f + 16, f + 12, len - 12);
			wr16(f + 12, OFS_ETH_P_8021Q);
			len += 4;
		}
		uint32_t cut = rnd(5) == 0 ? 1 + rnd(20) : 0;
		uint8_t act[8] = {0};
		bool dec = rnd(2);
		wr16(act, dec ? OFPAT_DEC_NW_TTL : OFPAT_SET_NW_TTL);
		wr16(act + 2, 8);
		act[4] = (uint8_t)rand();
		struct pkt_ctx a, b;
		load(&a, &mb_a, buf_a, f, len - cut);
		load(&b, &mb_b, buf_b, f, len - cut);
		bool go_a = ofs_act_exec_one(&a, act);
		clean += !a.csum_dirty;
		fix_checksums(&a);
		/* b: the TTL as the action sets it, then the full recomputation */
		uint16_t iet;
		int t = b.lay.l3_ofs >= 0 ? ip_ttl_ofs(&b, b.lay.l3_ofs, &iet) : -1;
		bool go_b = true;
		if (t >= 0) {
			if (dec && pdata(&b)[t] <= 1)
				go_b = false;
			else
				pdata(&b)[t] = dec ? (uint8_t)(pdata(&b)[t] - 1) : act[4];
			b.csum_dirty = true;
		}
		fix_checksums(&b);
		cases++;
		bool same = go_a == go_b && (!go_b ||
			(a.m && plen(&a) == plen(&b) && !memcmp(pdata(&a), pdata(&b), plen(&a))));
		if (!same && differ < 3)
			fprintf(stderr, "ttl case %d: ip %d proto %u cut %u dec %d\n", round, ip,
				proto, cut, dec);
		differ += !same;
	}
	CHECK(differ == 0, "TTL rewrites differ from the full recomputation in %u of %u cases",
	      differ, cases);
	CHECK(clean > cases / 2, "only %u of %u TTL rewrites were done in place", clean, cases);
	printf("ttl checksums: %u cases, %u in place, %u differ\n", cases, clean, differ);
}

int main(void)
{
	test_ttl_in_place();
	test_set_field_checksums();
	test_wrong_checksum_kept_wrong();
	test_udp_zero_checksum();
	test_push_keeps_layout();
	printf("%d checks, %d failures\n", checks, failures);
	return failures ? 1 : 0;
}
