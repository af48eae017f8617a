/* flowkey.c -- frame -> struct ofs_key, ofp_match -> (value, mask). See flowkey.h. */
#include <string.h>
#include <arpa/inet.h>
#include "ofp13.h"
#include "flowkey.h"

#define F(member, l, mk) { offsetof(struct ofs_key, member), l, mk }
const struct ofs_field_info ofs_fields[40] = {
	[OXM_IN_PORT] = F(in_port, 4, false),
	[OXM_IN_PHY_PORT] = F(in_phy_port, 4, false),
	[OXM_METADATA] = F(metadata, 8, true),
	[OXM_ETH_DST] = F(eth_dst, 6, true),
	[OXM_ETH_SRC] = F(eth_src, 6, true),
	[OXM_ETH_TYPE] = F(eth_type, 2, false),
	[OXM_VLAN_VID] = F(vlan_vid, 2, true),
	[OXM_VLAN_PCP] = F(vlan_pcp, 1, false),
	[OXM_IP_DSCP] = F(ip_dscp, 1, false),
	[OXM_IP_ECN] = F(ip_ecn, 1, false),
	[OXM_IP_PROTO] = F(ip_proto, 1, false),
	[OXM_IPV4_SRC] = F(ipv4_src, 4, true),
	[OXM_IPV4_DST] = F(ipv4_dst, 4, true),
	[OXM_TCP_SRC] = F(tp_src, 2, false),
	[OXM_TCP_DST] = F(tp_dst, 2, false),
	[OXM_UDP_SRC] = F(tp_src, 2, false),
	[OXM_UDP_DST] = F(tp_dst, 2, false),
	[OXM_SCTP_SRC] = F(tp_src, 2, false),
	[OXM_SCTP_DST] = F(tp_dst, 2, false),
	[OXM_ICMPV4_TYPE] = F(icmp_type, 1, false),
	[OXM_ICMPV4_CODE] = F(icmp_code, 1, false),
	[OXM_ARP_OP] = F(arp_op, 2, false),
	[OXM_ARP_SPA] = F(arp_spa, 4, true),
	[OXM_ARP_TPA] = F(arp_tpa, 4, true),
	[OXM_ARP_SHA] = F(arp_sha, 6, true),
	[OXM_ARP_THA] = F(arp_tha, 6, true),
	[OXM_IPV6_SRC] = F(ipv6_src, 16, true),
	[OXM_IPV6_DST] = F(ipv6_dst, 16, true),
	[OXM_IPV6_FLABEL] = F(ipv6_flabel, 4, true),
	[OXM_ICMPV6_TYPE] = F(icmp_type, 1, false),
	[OXM_ICMPV6_CODE] = F(icmp_code, 1, false),
	[OXM_IPV6_ND_TARGET] = F(nd_target, 16, false),
	[OXM_IPV6_ND_SLL] = F(nd_sll, 6, false),
	[OXM_IPV6_ND_TLL] = F(nd_tll, 6, false),
	[OXM_MPLS_LABEL] = F(mpls_label, 4, false),
	[OXM_MPLS_TC] = F(mpls_tc, 1, false),
	[OXM_MPLS_BOS] = F(mpls_bos, 1, false),
	[OXM_PBB_ISID] = F(pbb_isid, 3, true),
	[OXM_TUNNEL_ID] = F(tunnel_id, 8, true),
	[OXM_IPV6_EXTHDR] = F(ipv6_exthdr, 2, true),
};
#undef F

/* The L4 header at off (after the IP header and its extension headers). Its offset and fields
 * are set only when its header is whole in the frame (ofs_l4_min_len): a frame cut short, or
 * an IP header that claims more bytes than the frame has, leaves them absent. */
static void parse_l4(const uint8_t *pkt, uint32_t len, uint32_t off, uint8_t proto,
		     struct ofs_key *k, struct ofs_layout *lay)
{
	lay->l4_proto = proto;
	if (off > len || len - off < ofs_l4_min_len(proto))
		return;
	lay->l4_ofs = (int16_t)off;
	const uint8_t *p = pkt + off;
	uint32_t rem = len - off;
	switch (proto) {
	case 6: case 17: case 132:
		memcpy(&k->tp_src, p, 2);
		memcpy(&k->tp_dst, p + 2, 2);
		break;
	case 1:
		k->icmp_type = p[0]; k->icmp_code = p[1];
		break;
	case 58:
		k->icmp_type = p[0]; k->icmp_code = p[1];
		if ((p[0] == 135 || p[0] == 136) && rem >= 24) {
			memcpy(k->nd_target, p + 8, 16);
			uint32_t o = 24;
			while (o + 8 <= rem) {
				uint8_t t = p[o], l8 = p[o + 1];
				if (l8 == 0)
					break;
				if (t == 1 && p[0] == 135 && l8 == 1)
					memcpy(k->nd_sll, p + o + 2, 6);
				else if (t == 2 && p[0] == 136 && l8 == 1)
					memcpy(k->nd_tll, p + o + 2, 6);
				o += 8u * l8;
			}
		}
		break;
	default:
		break;
	}
}

static uint16_t exthdr_bit(uint8_t nh)
{
	switch (nh) {
	case 0: return OFPIEH_HOP;
	case 43: return OFPIEH_ROUTER;
	case 44: return OFPIEH_FRAG;
	case 60: return OFPIEH_DEST;
	case 51: return OFPIEH_AUTH;
	case 50: return OFPIEH_ESP;
	case 59: return OFPIEH_NONEXT;
	default: return 0;
	}
}

static void parse_ipv6(const uint8_t *pkt, uint32_t len, uint32_t off, struct ofs_key *k,
		       struct ofs_layout *lay)
{
	if (len < off + 40)
		return;
	const uint8_t *p = pkt + off;
	lay->l3_ofs = (int16_t)off;
	uint32_t w = rd32(p);
	uint8_t tc = (uint8_t)(w >> 20);
	k->ip_dscp = tc >> 2;
	k->ip_ecn = tc & 3;
	k->ipv6_flabel = htonl(w & 0xfffff);
	memcpy(k->ipv6_src, p + 8, 16);
	memcpy(k->ipv6_dst, p + 24, 16);
	uint8_t nh = p[6];
	uint32_t o = off + 40;
	uint16_t bits = 0, seen = 0;
	int n = 0;
	bool frag_later = false;
	for (;;) {
		uint16_t b = exthdr_bit(nh);
		if (!b || nh == 59) {
			if (nh == 59)
				bits |= OFPIEH_NONEXT;
			break;
		}
		if (nh == 50) { /* ESP: cannot look inside */
			bits |= OFPIEH_ESP;
			nh = 50;
			break;
		}
		if (seen & b && !(b == OFPIEH_DEST && n > 0))
			bits |= OFPIEH_UNREP;
		if (b == OFPIEH_HOP && n != 0)
			bits |= OFPIEH_UNSEQ;
		seen |= b;
		bits |= b;
		if (len < o + 8)
			break;
		uint8_t next = pkt[o];
		uint32_t hl;
		bool frag = false;
		if (nh == 44) {
			hl = 8;
			frag = (rd16(pkt + o + 2) & 0xfff8) != 0;
		} else if (nh == 51) {
			hl = ((uint32_t)pkt[o + 1] + 2) * 4;
		} else {
			hl = ((uint32_t)pkt[o + 1] + 1) * 8;
		}
		/* a header whose length runs past the frame (length byte 0xff: 2 KB) is cut short:
		 * the chain ends at it, as when fewer than 8 of its bytes are there (issue 37) */
		if (hl > len - o)
			break;
		frag_later |= frag;
		nh = next;
		o += hl;
		n++;
		if (n > 16)
			break;
	}
	k->ipv6_exthdr = htons(bits);
	k->ip_proto = nh;
	if (!frag_later && exthdr_bit(nh) == 0)
		parse_l4(pkt, len, o, nh, k, lay);
}

/* the leading key fields the caller sets and ofs_key_extract keeps */
#define KEY_KEPT offsetof(struct ofs_key, eth_dst)
_Static_assert(KEY_KEPT == 24 && sizeof(struct ofs_key) % 8 == 0, "key layout");

void ofs_key_extract(const uint8_t *pkt, uint32_t len, struct ofs_key *k,
		     struct ofs_layout *lay)
{
	/* Zero everything after tunnel_id (the caller's in_port, in_phy_port, metadata and
	 * tunnel_id stay) in wide inline stores: a libc memset call here was ~9 % of the worker's
	 * cycles at 15 Mpps. */
	typedef uint64_t zero_v4 __attribute__((vector_size(32), aligned(8), may_alias));
	uint8_t *z = (uint8_t *)k + KEY_KEPT;
	for (size_t i = 0; i + 32 <= sizeof(*k) - KEY_KEPT; i += 32)
		*(zero_v4 *)(z + i) = (zero_v4){ 0, 0, 0, 0 };
	for (size_t i = (sizeof(*k) - KEY_KEPT) / 32 * 32; i < sizeof(*k) - KEY_KEPT; i += 8)
		*(uint64_t *)(void *)(z + i) = 0;
	lay->l2_end = lay->vlan_ofs = lay->mpls_ofs = lay->pbb_ofs = lay->l3_ofs = lay->l4_ofs = -1;
	lay->l4_proto = 0;
	if (len < 14)
		return;
	memcpy(k->eth_dst, pkt, 6);
	memcpy(k->eth_src, pkt + 6, 6);
	uint32_t off = 12;
	uint16_t et = rd16(pkt + 12);
	if ((et == OFS_ETH_P_8021Q || et == OFS_ETH_P_8021AD) && len >= off + 6) {
		uint16_t tci = rd16(pkt + off + 2);
		lay->vlan_ofs = (int16_t)off;
		k->vlan_vid = htons(OFPVID_PRESENT | (tci & 0xfff));
		k->vlan_pcp = tci >> 13;
		off += 4;
		et = rd16(pkt + off);
		while ((et == OFS_ETH_P_8021Q || et == OFS_ETH_P_8021AD) && len >= off + 6) {
			off += 4;
			et = rd16(pkt + off);
		}
	}
	lay->l2_end = (int16_t)off;
	k->eth_type = htons(et);
	off += 2;
	switch (et) {
	case OFS_ETH_P_PBB:
		if (len >= off + 4) {
			lay->pbb_ofs = (int16_t)off;
			memcpy(k->pbb_isid, pkt + off + 1, 3);
		}
		break;
	case OFS_ETH_P_MPLS_UC: case OFS_ETH_P_MPLS_MC:
		if (len >= off + 4) {
			uint32_t s = rd32(pkt + off);
			lay->mpls_ofs = (int16_t)off;
			k->mpls_label = htonl(s >> 12);
			k->mpls_tc = (s >> 9) & 7;
			k->mpls_bos = (s >> 8) & 1;
		}
		break;
	case OFS_ETH_P_IPV4: {
		if (len < off + 20)
			break;
		const uint8_t *p = pkt + off;
		uint32_t ihl = (p[0] & 0xf) * 4u;
		if (ihl < 20 || len - off < ihl)
			break;  /* not an IPv4 header, or not whole: no L3 fields (issue 37) */
		lay->l3_ofs = (int16_t)off;
		k->ip_dscp = p[1] >> 2;
		k->ip_ecn = p[1] & 3;
		k->ip_proto = p[9];
		memcpy(&k->ipv4_src, p + 12, 4);
		memcpy(&k->ipv4_dst, p + 16, 4);
		if ((rd16(p + 6) & 0x1fff) == 0)
			parse_l4(pkt, len, off + ihl, p[9], k, lay);
		break;
	}
	case OFS_ETH_P_IPV6:
		parse_ipv6(pkt, len, off, k, lay);
		break;
	case OFS_ETH_P_ARP: {
		if (len < off + 28)
			break;
		const uint8_t *p = pkt + off;
		lay->l3_ofs = (int16_t)off;
		if (rd16(p) == 1 && rd16(p + 2) == OFS_ETH_P_IPV4 && p[4] == 6 && p[5] == 4) {
			memcpy(&k->arp_op, p + 6, 2);
			memcpy(k->arp_sha, p + 8, 6);
			memcpy(&k->arp_spa, p + 14, 4);
			memcpy(k->arp_tha, p + 18, 6);
			memcpy(&k->arp_tpa, p + 24, 4);
		}
		break;
	}
	default:
		break;
	}
}

bool ofs_layout_ok(const uint8_t *pkt, uint32_t len, const struct ofs_layout *l)
{
#define IN(o, n) ((o) < 0 || (uint32_t)(o) + (uint32_t)(n) <= len)
	if (!IN(l->l2_end, 2) || !IN(l->vlan_ofs, 4) || !IN(l->mpls_ofs, 4) ||
	    !IN(l->pbb_ofs, 4))
		return false;
	if (l->l2_end >= 0 && l->l2_end < 12)
		return false;
	if (l->l3_ofs >= 0) {
		/* the L3 header follows the ethertype it is named by */
		if (l->l2_end < 0 || l->l3_ofs != l->l2_end + 2)
			return false;
		uint16_t et = rd16(pkt + l->l2_end);
		if (et == OFS_ETH_P_IPV4) {
			if (!IN(l->l3_ofs, 20))
				return false;
			uint32_t ihl = (pkt[l->l3_ofs] & 0xfu) * 4;
			if (ihl < 20 || !IN(l->l3_ofs, ihl))
				return false;
		} else if (et == OFS_ETH_P_IPV6) {
			if (!IN(l->l3_ofs, 40))
				return false;
		} else if (et == OFS_ETH_P_ARP) {
			if (!IN(l->l3_ofs, 28))
				return false;
		} else {
			return false;
		}
	}
	if (l->l4_ofs >= 0 &&
	    (l->l3_ofs < 0 || l->l4_ofs < l->l3_ofs + 20 ||
	     !IN(l->l4_ofs, ofs_l4_min_len(l->l4_proto))))
		return false;
	return true;
#undef IN
}

/* Largest allowed value per field where the OXM payload is wider than the field. */
static bool value_ok(int field, const uint8_t *v)
{
	switch (field) {
	case OXM_IN_PORT: return rd32(v) != 0 && rd32(v) != OFPP_ANY; /* 7.2.3.7: no such port */
	case OXM_VLAN_VID: return rd16(v) <= 0x1fff;
	case OXM_VLAN_PCP: case OXM_MPLS_TC: return v[0] <= 7;
	case OXM_IP_DSCP: return v[0] <= 63;
	case OXM_IP_ECN: return v[0] <= 3;
	case OXM_MPLS_BOS: return v[0] <= 1;
	case OXM_MPLS_LABEL: case OXM_IPV6_FLABEL: return rd32(v) <= 0xfffff;
	case OXM_IPV6_EXTHDR: return rd16(v) <= 0x1ff;
	default: return true;
	}
}

uint32_t ofs_match_parse(const uint8_t *buf, size_t avail, struct ofs_match *m,
			 size_t *padded_len)
{
	memset(m, 0, sizeof(*m));
	if (avail < 4)
		return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_LEN);
	uint16_t type = rd16(buf), mlen = rd16(buf + 2);
	if (type != 1)
		return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_TYPE);
	size_t plen = ((size_t)mlen + 7) / 8 * 8;
	if (mlen < 4 || plen > avail)
		return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_LEN);
	size_t o = 4;
	while (o < mlen) {
		if (mlen - o < 4)
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_LEN);
		uint16_t cls = rd16(buf + o);
		uint8_t fh = buf[o + 2], l = buf[o + 3];
		int field = fh >> 1;
		bool hasmask = fh & 1;
		if (o + 4 + l > mlen)
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_LEN);
		if (cls != OFPXMC_OPENFLOW_BASIC || field >= OXM_N_FIELDS)
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_FIELD);
		const struct ofs_field_info *fi = &ofs_fields[field];
		if (l != (hasmask ? 2 * fi->len : fi->len))
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_LEN);
		if (hasmask && !fi->maskable)
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_MASK);
		if (m->fields & (1ull << field))
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_DUP_FIELD);
		const uint8_t *v = buf + o + 4;
		if (!value_ok(field, v))
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_VALUE);
		uint8_t *kv = (uint8_t *)&m->value + fi->key_ofs;
		uint8_t *km = (uint8_t *)&m->mask + fi->key_ofs;
		/* 7.2.3.5: a value bit set where the mask is 0 is refused, not silently cleared */
		for (int i = 0; hasmask && i < fi->len; i++)
			if (v[i] & ~v[fi->len + i])
				return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_WILDCARDS);
		for (int i = 0; i < fi->len; i++) {
			km[i] = hasmask ? v[fi->len + i] : 0xff;
			kv[i] = v[i] & km[i];
		}
		m->fields |= 1ull << field;
		o += 4 + l;
	}
	*padded_len = plen;
	return ofs_match_prereq(m);
}

static bool has(const struct ofs_match *m, int f) { return m->fields >> f & 1; }

static bool eth_type_is(const struct ofs_match *m, uint16_t a, uint16_t b)
{
	if (!has(m, OXM_ETH_TYPE))
		return false;
	uint16_t et = ntohs(m->value.eth_type);
	return et == a || et == b;
}

static bool ip_proto_is(const struct ofs_match *m, uint8_t p)
{
	return has(m, OXM_IP_PROTO) && m->value.ip_proto == p &&
	       eth_type_is(m, OFS_ETH_P_IPV4, OFS_ETH_P_IPV6);
}

bool ofs_field_prereq_ok(const struct ofs_match *m, int f)
{
	switch (f) {
	case OXM_IN_PHY_PORT: return has(m, OXM_IN_PORT);
	case OXM_VLAN_PCP:
		return has(m, OXM_VLAN_VID) && (ntohs(m->value.vlan_vid) & OFPVID_PRESENT);
	case OXM_IP_DSCP: case OXM_IP_ECN: case OXM_IP_PROTO:
		return eth_type_is(m, OFS_ETH_P_IPV4, OFS_ETH_P_IPV6);
	case OXM_IPV4_SRC: case OXM_IPV4_DST: return eth_type_is(m, OFS_ETH_P_IPV4, OFS_ETH_P_IPV4);
	case OXM_TCP_SRC: case OXM_TCP_DST: return ip_proto_is(m, 6);
	case OXM_UDP_SRC: case OXM_UDP_DST: return ip_proto_is(m, 17);
	case OXM_SCTP_SRC: case OXM_SCTP_DST: return ip_proto_is(m, 132);
	case OXM_ICMPV4_TYPE: case OXM_ICMPV4_CODE:
		return ip_proto_is(m, 1) && eth_type_is(m, OFS_ETH_P_IPV4, OFS_ETH_P_IPV4);
	case OXM_ARP_OP: case OXM_ARP_SPA: case OXM_ARP_TPA: case OXM_ARP_SHA:
	case OXM_ARP_THA:
		return eth_type_is(m, OFS_ETH_P_ARP, OFS_ETH_P_ARP);
	case OXM_IPV6_SRC: case OXM_IPV6_DST: case OXM_IPV6_FLABEL: case OXM_IPV6_EXTHDR:
		return eth_type_is(m, OFS_ETH_P_IPV6, OFS_ETH_P_IPV6);
	case OXM_ICMPV6_TYPE: case OXM_ICMPV6_CODE:
		return ip_proto_is(m, 58) && eth_type_is(m, OFS_ETH_P_IPV6, OFS_ETH_P_IPV6);
	case OXM_IPV6_ND_TARGET:
		return has(m, OXM_ICMPV6_TYPE) &&
		       (m->value.icmp_type == 135 || m->value.icmp_type == 136);
	case OXM_IPV6_ND_SLL:
		return has(m, OXM_ICMPV6_TYPE) && m->value.icmp_type == 135;
	case OXM_IPV6_ND_TLL:
		return has(m, OXM_ICMPV6_TYPE) && m->value.icmp_type == 136;
	case OXM_MPLS_LABEL: case OXM_MPLS_TC: case OXM_MPLS_BOS:
		return eth_type_is(m, OFS_ETH_P_MPLS_UC, OFS_ETH_P_MPLS_MC);
	case OXM_PBB_ISID: return eth_type_is(m, OFS_ETH_P_PBB, OFS_ETH_P_PBB);
	default: return true;
	}
}

uint32_t ofs_match_prereq(const struct ofs_match *m)
{
	for (int f = 0; f < OXM_N_FIELDS; f++)
		if (has(m, f) && !ofs_field_prereq_ok(m, f))
			return OFS_ERR(OFPET_BAD_MATCH, OFPBMC_BAD_PREREQ);
	return 0;
}

uint32_t ofs_setfield_parse(const uint8_t *oxm, size_t len, int *field)
{
	if (len < 4)
		return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_SET_LEN);
	uint16_t cls = rd16(oxm);
	int f = oxm[2] >> 1;
	bool hasmask = oxm[2] & 1;
	uint8_t l = oxm[3];
	if (cls != OFPXMC_OPENFLOW_BASIC || f >= OXM_N_FIELDS)
		return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_SET_TYPE);
	if (hasmask)
		return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_SET_ARGUMENT);
	if (l != ofs_fields[f].len || 4u + l > len)
		return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_SET_LEN);
	if (f == OXM_IN_PORT || f == OXM_IN_PHY_PORT || f == OXM_METADATA ||
	    f == OXM_IPV6_EXTHDR)
		return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_SET_TYPE);
	if (!value_ok(f, oxm + 4))
		return OFS_ERR(OFPET_BAD_ACTION, OFPBAC_BAD_SET_ARGUMENT);
	*field = f;
	return 0;
}
