/* pkt_csum.c -- the checksums of a packet the actions rewrote (datapath_internal.h): the full
 * recomputation of the IPv4 header's and the L4 checksum (TCP, UDP, ICMP, ICMPv6, SCTP's CRC32c)
 * before the packet leaves, and the in-place updates of a set-field (RFC 1624). csum.h holds
 * the byte-level sums both use. */
#include <rte_hash_crc.h>
#include "datapath_internal.h"

/* CRC32c (Castagnoli) as SCTP uses it: DPDK's rte_hash_crc_*byte are the raw CRC32c update
 * (SSE4.2 crc32 instructions, or its table fallback, chosen once at DPDK start-up), so nothing
 * here needs initialising on the fast path. Packet bytes have any alignment: words are read
 * through memcpy (rte_hash_crc itself loads through a uint64_t pointer, a misaligned load
 * that UBSan reports; the agent's fuzzer found it on an SCTP set-field). */
static uint32_t crc32c(const uint8_t *p, uint32_t n)
{
	uint32_t c = 0xffffffffu;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = rte_hash_crc_8byte(v, c);
	}
	for (; n >= 4; p += 4, n -= 4) {
		uint32_t v;
		memcpy(&v, p, 4);
		c = rte_hash_crc_4byte(v, c);
	}
	while (n--)
		c = rte_hash_crc_1byte(*p++, c);
	return ~c;
}

void ofs_csum_fix(struct pkt_ctx *c)
{
	c->csum_dirty = false;
	ensure_layout(c);
	uint8_t *p = pdata(c);
	uint32_t len = plen(c);
	int l3 = c->lay.l3_ofs, l4 = c->lay.l4_ofs;
	uint16_t et = ntohs(c->key.eth_type);
	if (l3 < 0 || (et != OFS_ETH_P_IPV4 && et != OFS_ETH_P_IPV6))
		return;
	uint32_t l4len = 0, ps = 0;
	if (et == OFS_ETH_P_IPV4) {
		uint8_t *ip = p + l3;
		uint32_t ihl = (ip[0] & 0xf) * 4u;
		if (ihl < 20 || (uint32_t)l3 + ihl > len)
			return;
		wr16(ip + 10, 0);
		wr16(ip + 10, csum_fold(csum_add(0, ip, ihl)));
		uint32_t tot = rd16(ip + 2);
		if (l4 < 0 || tot < ihl || (uint32_t)l3 + tot > len)
			return;
		l4len = tot - ihl;
		ps = csum_add(0, ip + 12, 8) + c->lay.l4_proto + l4len;
	} else {
		uint8_t *ip = p + l3;
		if (l4 < 0 || (uint32_t)l3 + 40 > len)
			return;
		uint32_t pl = rd16(ip + 4);
		uint32_t ext = (uint32_t)l4 - (uint32_t)l3 - 40;
		if (pl < ext || (uint32_t)l3 + 40 + pl > len)
			return;
		l4len = pl - ext;
		ps = csum_add(0, ip + 8, 32) + c->lay.l4_proto + l4len;
	}
	uint8_t *t = p + l4;
	switch (c->csum_layout_proto ? c->csum_layout_proto : c->lay.l4_proto) {
	case 6:
		if (l4len < 20) return;
		wr16(t + 16, 0);
		wr16(t + 16, csum_fold(csum_add(ps, t, l4len)));
		break;
	case 17: {
		if (l4len < 8) return;
		if (et == OFS_ETH_P_IPV4 && rd16(t + 6) == 0) return;
		wr16(t + 6, 0);
		uint16_t s = csum_fold(csum_add(ps, t, l4len));
		wr16(t + 6, s ? s : 0xffff);
		break;
	}
	case 1:
		if (l4len < 4 || et != OFS_ETH_P_IPV4) return;
		wr16(t + 2, 0);
		wr16(t + 2, csum_fold(csum_add(0, t, l4len)));
		break;
	case 58:
		if (l4len < 4) return;
		wr16(t + 2, 0);
		wr16(t + 2, csum_fold(csum_add(ps, t, l4len)));
		break;
	case 132: {
		if (l4len < 12) return;
		memset(t + 8, 0, 4);
		uint32_t crc = crc32c(t, l4len);
		/* SCTP stores the CRC32c in little-endian byte order of the register */
		t[8] = crc; t[9] = crc >> 8; t[10] = crc >> 16; t[11] = crc >> 24;
		break;
	}
	default:
		break;
	}
}

/* An IPv4 header's first word (version, IHL, DSCP, ECN) set to w, its checksum updated. */
void ofs_csum_ip4_set_word0(struct pkt_ctx *c, uint16_t w)
{
	uint8_t *ip = pdata(c) + c->lay.l3_ofs;
	uint16_t old = rd16(ip);
	wr16(ip, w);
	if (ip4_whole(c, ip))
		csum_replace16(ip + 10, old, w);
}

/* The L4 checksum (TCP, UDP, ICMPv6), after n bytes it covers changed (old -> new): the IP
 * addresses of its pseudo-header (pseudo) or a port (!pseudo). Mirrors fix_checksums' tests of
 * what the frame holds. */
bool ofs_csum_l4_update(struct pkt_ctx *c, bool pseudo, const uint8_t *old,
			const uint8_t *new, uint32_t n)
{
	int l3 = c->lay.l3_ofs, l4 = c->lay.l4_ofs;
	uint8_t *p = pdata(c);
	uint32_t len = plen(c), l4len;
	bool v4 = ntohs(c->key.eth_type) == OFS_ETH_P_IPV4;
	uint8_t proto = c->lay.l4_proto;
	if (!pseudo && proto != 6 && proto != 17)
		return false;  /* a port of SCTP (its CRC) or bytes of another header */
	if (l4 < 0 || !in_frame(c, l3, v4 ? 20 : 40))
		return true;
	if (v4) {
		uint32_t ihl = (p[l3] & 0xf) * 4u, tot = rd16(p + l3 + 2);
		if ((uint32_t)l3 + ihl > len || tot < ihl || (uint32_t)l3 + tot > len)
			return true;
		l4len = tot - ihl;
	} else {
		uint32_t pl = rd16(p + l3 + 4), ext = (uint32_t)l4 - (uint32_t)l3 - 40;
		if (l4 < l3 + 40 || pl < ext || (uint32_t)l3 + 40 + pl > len)
			return true;
		l4len = pl - ext;
	}
	uint8_t *t = p + l4;
	switch (proto) {
	case 6:
		if (l4len >= 20)
			csum_replace(t + 16, old, new, n);
		break;
	case 17:
		if (l4len < 8 || (v4 && rd16(t + 6) == 0))
			break;  /* no UDP checksum over IPv4 */
		csum_replace(t + 6, old, new, n);
		if (rd16(t + 6) == 0)
			wr16(t + 6, 0xffff);
		break;
	case 58:
		if (!v4 && l4len >= 4)
			csum_replace(t + 2, old, new, n);
		break;
	default:
		break;  /* ICMPv4 and SCTP do not cover the addresses */
	}
	return true;
}
