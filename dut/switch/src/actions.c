/* actions.c -- OpenFlow 1.3 actions on one packet (datapath_internal.h): output (emit: switch
 * ports, FLOOD/ALL, IN_PORT, CONTROLLER as a Packet-In, TABLE for a PACKET_OUT), groups (all,
 * select, indirect, fast failover; each bucket on a copy), set-field (checksums updated in place
 * where RFC 1624 allows, pkt_csum.c), push/pop of VLAN, MPLS and PBB headers, TTLs, and the
 * action set in OF1.3 5.10's order. An output is held back (c->pending) until the next action
 * or the end of the pipeline, so the last output takes the packet itself instead of a copy.
 * Every access at a layout offset is checked against the frame (in_frame, issue 37). */
#include <rte_hash_crc.h>
#include <rte_ring.h>
#include "datapath_internal.h"

/* End of the IP packet (offset), or 0 when unknown. Bytes after it are Ethernet padding
 * added by a sender to reach 60 bytes; they are not part of the packet. */
/* End of the IP packet whose header starts at l3 (ethertype et, host order), or 0 when
 * there is none: the same conditions under which ofs_key_extract sets lay.l3_ofs. */
static uint32_t ip_end_at(struct pkt_ctx *c, int l3, uint16_t et)
{
	const uint8_t *p = pdata(c);
	if (l3 < 0)
		return 0;
	if (et == OFS_ETH_P_IPV4 && (uint32_t)l3 + 20 <= plen(c) && (p[l3] & 0xf) >= 5)
		return (uint32_t)l3 + rd16(p + l3 + 2);
	if (et == OFS_ETH_P_IPV6 && (uint32_t)l3 + 40 <= plen(c))
		return (uint32_t)l3 + 40 + rd16(p + l3 + 4);
	return 0;
}

/* Drop the Ethernet padding behind an IP packet that a pop uncovered (l3, et as above). */
static void trim_l2_padding(struct pkt_ctx *c, int l3, uint16_t et)
{
	uint32_t end = ip_end_at(c, l3, et);
	if (end && end < plen(c) && c->m->nb_segs == 1)
		rte_pktmbuf_trim(c->m, (uint16_t)(plen(c) - end));
}

static void to_controller(struct pkt_ctx *c, uint16_t max_len)
{
	uint32_t len = plen(c);
	uint32_t n = len;
	if (max_len != OFPCML_NO_BUFFER && max_len < n)
		n = max_len;
	struct ofs_pin *pin = malloc(sizeof(*pin) + n);
	if (!pin)
		return;
	pin->reason = c->pin_reason;
	pin->table_id = c->table_id;
	pin->cookie = c->cookie;
	pin->in_port = c->in_port;
	pin->metadata = c->key.metadata;
	pin->tunnel_id = c->key.tunnel_id;
	pin->total_len = (uint16_t)len;
	pin->data_len = (uint16_t)n;
	memcpy(pin->data, pdata(c), n);
	if (rte_ring_mp_enqueue(ofs_dp.pin_ring, pin) != 0)
		free(pin);
	else
		ofs_wake_agent();
}

static struct rte_mbuf *copy_mbuf(struct pkt_ctx *c)
{
	return rte_pktmbuf_copy(c->m, c->w->pool, 0, UINT32_MAX);
}

/* Send the packet to one port; use_original hands over c->m itself. */
void ofs_act_emit(struct pkt_ctx *c, uint32_t port, uint16_t max_len, bool use_original)
{
	fix_checksums(c);
	ofs_pad_min(c);
	if (port == OFPP_CONTROLLER) {
		to_controller(c, max_len);
		if (use_original) { rte_pktmbuf_free(c->m); c->m = NULL; }
		return;
	}
	if (port == OFPP_TABLE) {
		/* only from PACKET_OUT: resubmit a copy through the pipeline */
		struct pkt_ctx *sub = malloc(sizeof(*sub));
		if (!sub) return;
		memset(sub, 0, sizeof(*sub));
		sub->w = c->w;
		sub->m = use_original ? c->m : copy_mbuf(c);
		if (use_original) c->m = NULL;
		if (!sub->m) { free(sub); return; }
		sub->in_port = c->in_port;
		sub->key.in_port = htonl(c->in_port);
		sub->key.in_phy_port = sub->key.in_port;
		reparse(sub);
		sub->depth = c->depth + 1;
		ofs_dp_resubmit(sub);
		free(sub);
		return;
	}
	int idx[OFS_MAX_PORTS];
	unsigned n = 0;
	if (port == OFPP_FLOOD || port == OFPP_ALL) {
		for (unsigned i = 0; i < ofs_dp.n_ports; i++)
			if (ofs_dp.ports[i].ofport != c->in_port)
				idx[n++] = (int)i;
	} else {
		uint32_t p = port == OFPP_IN_PORT ? c->in_port : port;
		if (port != OFPP_IN_PORT && p == c->in_port)
			n = 0;  /* never back out of the ingress port unless IN_PORT says so */
		else if (ofs_port_idx(p) >= 0)
			idx[n++] = ofs_port_idx(p);
	}
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m;
		if (use_original && i == n - 1) {
			m = c->m;
			c->m = NULL;
		} else {
			m = copy_mbuf(c);
		}
		if (m)
			ofs_dp_tx_one(c->w, idx[i], m);
	}
	if (use_original && c->m) {
		rte_pktmbuf_free(c->m);
		c->m = NULL;
	}
}

/* ---- header edits ------------------------------------------------------------------------- */
/* memmove(dst, src, len) for the header moves of a push or pop: the bytes in front of the
 * tag (12-22 of them) move by its size. 8 <= len <= 32 is two 8- or 16-byte loads
 * before two stores (overlap-safe, no call); anything else goes to memmove. */
static inline void move_head(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	if (likely(len >= 8 && len <= 16)) {
		uint64_t a, b;
		memcpy(&a, src, 8);
		memcpy(&b, src + len - 8, 8);
		memcpy(dst, &a, 8);
		memcpy(dst + len - 8, &b, 8);
		return;
	}
	if (len > 16 && len <= 32) {  /* behind one or two VLAN tags */
		uint8_t a[16], b[16];
		memcpy(a, src, 16);
		memcpy(b, src + len - 16, 16);
		memcpy(dst, a, 16);
		memcpy(dst + len - 16, b, 16);
		return;
	}
	memmove(dst, src, len);
}

/* The layout of a frame after n bytes were inserted in front of everything the layout's
 * offsets point at (a VLAN tag behind the MACs). */
static inline void layout_shift(struct ofs_layout *l, int n)
{
	l->l2_end = (int16_t)(l->l2_end + n);
	if (l->vlan_ofs >= 0) l->vlan_ofs = (int16_t)(l->vlan_ofs + n);
	if (l->mpls_ofs >= 0) l->mpls_ofs = (int16_t)(l->mpls_ofs + n);
	if (l->pbb_ofs >= 0) l->pbb_ofs = (int16_t)(l->pbb_ofs + n);
	if (l->l3_ofs >= 0) l->l3_ofs = (int16_t)(l->l3_ofs + n);
	if (l->l4_ofs >= 0) l->l4_ofs = (int16_t)(l->l4_ofs + n);
}

static uint8_t *insert_bytes(struct pkt_ctx *c, uint32_t ofs, uint32_t n)
{
	if (rte_pktmbuf_linearize(c->m) != 0)
		return NULL;
	uint8_t *p = (uint8_t *)rte_pktmbuf_prepend(c->m, (uint16_t)n);
	if (!p)
		return NULL;
	move_head(p, p + n, ofs);
	return p;
}

static void remove_bytes(struct pkt_ctx *c, uint32_t ofs, uint32_t n)
{
	uint8_t *p = pdata(c);
	if (ofs + n > plen(c))
		return;
	move_head(p + n, p, ofs);
	rte_pktmbuf_adj(c->m, (uint16_t)n);
}

/* Offset of the IP header below the MPLS stack, or -1. */
static int ip_under_mpls(struct pkt_ctx *c)
{
	int o = c->lay.mpls_ofs;
	uint8_t *p = pdata(c);
	while (o >= 0 && (uint32_t)o + 4 <= plen(c)) {
		bool bos = p[o + 2] & 1;
		o += 4;
		if (bos)
			return (uint32_t)o < plen(c) ? o : -1;
	}
	return -1;
}

/* A field no checksum that fix_checksums computes covers (Ethernet, VLAN, MPLS, PBB, ARP, the
 * IPv6 flow label): setting it leaves them as they are. */
static inline bool csum_free_field(int f)
{
	switch (f) {
	case OXM_ETH_DST: case OXM_ETH_SRC: case OXM_VLAN_VID: case OXM_VLAN_PCP:
	case OXM_MPLS_LABEL: case OXM_MPLS_TC: case OXM_MPLS_BOS: case OXM_PBB_ISID:
	case OXM_ARP_OP: case OXM_ARP_SHA: case OXM_ARP_SPA: case OXM_ARP_THA: case OXM_ARP_TPA:
	case OXM_IPV6_FLABEL:
		return true;
	default:
		return false;
	}
}

/* always inlined into exec_one, as it was when it had one caller (ofs_act_set_field is the
 * C tests' door to it) */
static __rte_always_inline void set_field(struct pkt_ctx *c, const uint8_t *oxm)
{
	int f = oxm[2] >> 1;
	const uint8_t *v = oxm + 4;
	uint8_t *p = pdata(c);
	int l3 = c->lay.l3_ofs, l4 = c->lay.l4_ofs;
	uint16_t et = ntohs(c->key.eth_type);
	/* each write below is inside the frame: its header is (in_frame) */
	bool v4 = et == OFS_ETH_P_IPV4 && in_frame(c, l3, 20);
	bool v6 = et == OFS_ETH_P_IPV6 && in_frame(c, l3, 40);
	bool arp = et == OFS_ETH_P_ARP && in_frame(c, l3, 28);
	bool csum_kept = false;  /* the checksums were updated in place (or need nothing) */
	uint8_t old[16];
	switch (f) {
	case OXM_ETH_DST: if (in_frame(c, 0, 6)) memcpy(p, v, 6); break;
	case OXM_ETH_SRC: if (in_frame(c, 6, 6)) memcpy(p + 6, v, 6); break;
	case OXM_ETH_TYPE: if (in_frame(c, c->lay.l2_end, 2)) memcpy(p + c->lay.l2_end, v, 2); break;
	case OXM_VLAN_VID:
		if (in_frame(c, c->lay.vlan_ofs, 4)) {
			uint8_t *t = p + c->lay.vlan_ofs + 2;
			wr16(t, (rd16(t) & 0xf000) | (rd16(v) & 0xfff));
		}
		break;
	case OXM_VLAN_PCP:
		if (in_frame(c, c->lay.vlan_ofs, 4)) {
			uint8_t *t = p + c->lay.vlan_ofs + 2;
			wr16(t, (rd16(t) & 0x1fff) | (uint16_t)(v[0] & 7) << 13);
		}
		break;
	case OXM_IP_DSCP:
		if (v4) {
			ofs_csum_ip4_set_word0(c, (uint16_t)((rd16(p + l3) & 0xff03) | (v[0] & 0x3f) << 2));
			csum_kept = true;
		} else if (v6) {
			uint32_t w = rd32(p + l3);
			w = (w & ~(0xfcu << 20)) | ((uint32_t)(v[0] & 0x3f) << 22);
			wr32(p + l3, w);
			csum_kept = true;  /* no IPv6 header checksum; not in the pseudo-header */
		}
		break;
	case OXM_IP_ECN:
		if (v4) {
			ofs_csum_ip4_set_word0(c, (uint16_t)((rd16(p + l3) & 0xfffc) | (v[0] & 3)));
			csum_kept = true;
		} else if (v6) {
			uint32_t w = rd32(p + l3);
			w = (w & ~(3u << 20)) | ((uint32_t)(v[0] & 3) << 20);
			wr32(p + l3, w);
			csum_kept = true;
		}
		break;
	case OXM_IP_PROTO:
		if (!c->csum_layout_proto)
			c->csum_layout_proto = c->lay.l4_proto;
		if (v4) p[l3 + 9] = v[0];
		else if (v6 && c->key.ipv6_exthdr == 0) p[l3 + 6] = v[0];  /* no extension header */
		break;
	case OXM_IPV4_SRC: case OXM_IPV4_DST:
		if (v4) {
			uint8_t *a = p + l3 + (f == OXM_IPV4_SRC ? 12 : 16);
			memcpy(old, a, 4);
			memcpy(a, v, 4);
			ip4_csum_replace(c, old, v, 4);
			csum_kept = l4_csum_replace(c, true, old, v, 4);
		}
		break;
	case OXM_TCP_SRC: case OXM_UDP_SRC: case OXM_SCTP_SRC:
	case OXM_TCP_DST: case OXM_UDP_DST: case OXM_SCTP_DST:
		if (in_frame(c, l4, 4)) {
			uint8_t *port = p + l4 + (f == OXM_TCP_SRC || f == OXM_UDP_SRC ||
						  f == OXM_SCTP_SRC ? 0 : 2);
			memcpy(old, port, 2);
			memcpy(port, v, 2);
			csum_kept = l4_csum_replace(c, false, old, v, 2);
		}
		break;
	case OXM_ICMPV4_TYPE: case OXM_ICMPV6_TYPE: if (in_frame(c, l4, 2)) p[l4] = v[0]; break;
	case OXM_ICMPV4_CODE: case OXM_ICMPV6_CODE: if (in_frame(c, l4, 2)) p[l4 + 1] = v[0]; break;
	case OXM_ARP_OP: if (arp) memcpy(p + l3 + 6, v, 2); break;
	case OXM_ARP_SHA: if (arp) memcpy(p + l3 + 8, v, 6); break;
	case OXM_ARP_SPA: if (arp) memcpy(p + l3 + 14, v, 4); break;
	case OXM_ARP_THA: if (arp) memcpy(p + l3 + 18, v, 6); break;
	case OXM_ARP_TPA: if (arp) memcpy(p + l3 + 24, v, 4); break;
	case OXM_IPV6_SRC: case OXM_IPV6_DST:
		if (v6) {
			uint8_t *a = p + l3 + (f == OXM_IPV6_SRC ? 8 : 24);
			memcpy(old, a, 16);
			memcpy(a, v, 16);
			csum_kept = l4_csum_replace(c, true, old, v, 16);
		}
		break;
	case OXM_IPV6_FLABEL:
		if (v6) wr32(p + l3, (rd32(p + l3) & 0xfff00000u) | (rd32(v) & 0xfffff));
		break;
	case OXM_IPV6_ND_TARGET:
		if (v6 && in_frame(c, l4, 24)) memcpy(p + l4 + 8, v, 16);
		break;
	case OXM_IPV6_ND_SLL: case OXM_IPV6_ND_TLL: {
		if (!v6 || !in_frame(c, l4, 24)) break;
		uint8_t want = f == OXM_IPV6_ND_SLL ? 1 : 2;
		uint32_t o = (uint32_t)l4 + 24;
		while (o + 8 <= plen(c)) {
			if (p[o + 1] == 0) break;
			if (p[o] == want && p[o + 1] == 1) { memcpy(p + o + 2, v, 6); break; }
			o += 8u * p[o + 1];
		}
		break;
	}
	case OXM_MPLS_LABEL:
		if (in_frame(c, c->lay.mpls_ofs, 4)) {
			uint8_t *s = p + c->lay.mpls_ofs;
			wr32(s, (rd32(s) & 0xfff) | rd32(v) << 12);
		}
		break;
	case OXM_MPLS_TC:
		if (in_frame(c, c->lay.mpls_ofs, 4)) {
			uint8_t *s = p + c->lay.mpls_ofs;
			s[2] = (s[2] & 0xf1) | (uint8_t)((v[0] & 7) << 1);
		}
		break;
	case OXM_MPLS_BOS:
		if (in_frame(c, c->lay.mpls_ofs, 4)) {
			uint8_t *s = p + c->lay.mpls_ofs;
			s[2] = (s[2] & 0xfe) | (v[0] & 1);
		}
		break;
	case OXM_PBB_ISID:
		if (in_frame(c, c->lay.pbb_ofs, 4)) memcpy(p + c->lay.pbb_ofs + 1, v, 3);
		break;
	case OXM_TUNNEL_ID: memcpy(&c->key.tunnel_id, v, 8); return;
	default: return;
	}
	if (!csum_kept && !csum_free_field(f))
		c->csum_dirty = true;
	if (f == OXM_ETH_TYPE || f == OXM_IP_PROTO)
		reparse(c);  /* the headers after it read differently now: the layout changed */
	else
		c->key_stale = true;  /* a value: the key is re-extracted when something reads it */
}

void ofs_act_set_field(struct pkt_ctx *c, const uint8_t *oxm)
{
	set_field(c, oxm);
}

/* TTL handling: returns false when the packet must stop (ttl expired). */
static bool ttl_expired(struct pkt_ctx *c)
{
	if (ofs_dp.config_flags & OFPC_INVALID_TTL_TO_CONTROLLER) {
		c->pin_reason = OFPR_INVALID_TTL;
		fix_checksums(c);
		to_controller(c, OFPCML_NO_BUFFER);
	}
	c->dropped = true;
	return false;
}

/* rte_hash_crc of n <= 32 bytes at any alignment: it loads 8 bytes at a time through a
 * uint64_t pointer, so an unaligned field (ipv4_src) is first copied (a misaligned load is
 * undefined behaviour; UBSan reported it). Same value as rte_hash_crc on the field itself. */
static inline uint32_t select_hash(const void *p, uint32_t n, uint32_t init)
{
	uint64_t buf[4];
	memcpy(buf, p, n);
	return rte_hash_crc(buf, n, init);
}

bool ofs_act_exec_one(struct pkt_ctx *c, const uint8_t *a)
{
	uint16_t type = rd16(a);
	uint8_t *p;
	if (type != OFPAT_OUTPUT && type != OFPAT_GROUP && type != OFPAT_SET_QUEUE)
		flush_pending(c);
	if (!c->m)
		return false;
	if (type == OFPAT_SET_FIELD)
		ensure_layout(c);  /* set_field reads the layout and key.eth_type only */
	else if (type != OFPAT_OUTPUT)
		ensure_parsed(c);
	switch (type) {
	case OFPAT_OUTPUT:
		flush_pending(c);
		c->pending = rd32(a + 4);
		c->pending_max_len = rd16(a + 8);
		/* the reason stays the executing flow's (run_pipeline, datapath.c): NO_MATCH from a
		 * table-miss entry (OF1.3.5 7.4.1), ACTION from any other flow or a PACKET_OUT */
		break;
	case OFPAT_GROUP: {
		flush_pending(c);
		struct ofs_group *g = ofs_group_find(rd32(a + 4));
		if (!g || c->depth > 8)
			break;
		__atomic_fetch_add(&g->packets, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&g->bytes, plen(c), __ATOMIC_RELAXED);
		int pick[OFS_MAX_BUCKETS], np = 0;
		if (g->type == OFPGT_ALL) {
			for (int i = 0; i < g->n_buckets; i++) pick[np++] = i;
		} else if (g->type == OFPGT_INDIRECT) {
			if (g->n_buckets) pick[np++] = 0;
		} else if (g->type == OFPGT_SELECT) {
			uint32_t tw = 0;
			for (int i = 0; i < g->n_buckets; i++) tw += g->buckets[i].weight;
			if (tw) {
				uint32_t h = select_hash(&c->key.eth_dst, 12, 0);
				h = select_hash(&c->key.ipv4_src, 12, h);
				h = select_hash(&c->key.ipv6_src, 32, h);
				h = select_hash(&c->key.arp_spa, 8, h);
				uint32_t r = h % tw;
				for (int i = 0; i < g->n_buckets; i++) {
					if (r < g->buckets[i].weight) { pick[np++] = i; break; }
					r -= g->buckets[i].weight;
				}
			}
		} else if (g->type == OFPGT_FF) {
			for (int i = 0; i < g->n_buckets; i++) {
				struct ofs_bucket *b = &g->buckets[i];
				bool live = false;
				if (b->watch_port != OFPP_ANY) {
					int pi = ofs_port_idx(b->watch_port);
					live = pi >= 0 && ofs_dp.ports[pi].link_up &&
					       !(ofs_dp.ports[pi].config & OFPPC_PORT_DOWN);
				} else if (b->watch_group != OFPG_ANY) {
					live = ofs_group_find(b->watch_group) != NULL;
				}
				if (live) { pick[np++] = i; break; }
			}
		}
		for (int i = 0; i < np; i++) {
			struct ofs_bucket *b = &g->buckets[pick[i]];
			__atomic_fetch_add(&b->packets, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&b->bytes, plen(c), __ATOMIC_RELAXED);
			/* the bucket's packet: a copy, with a context on the stack (no allocation
			 * per packet; depth <= 9 frames); buckets never use the action set */
			struct pkt_ctx sub_ctx, *sub = &sub_ctx;
			memcpy(sub, c, offsetof(struct pkt_ctx, aset));
			fix_checksums(c);
			sub->m = copy_mbuf(c);
			sub->pending = NO_PORT;
			sub->depth = c->depth + 1;
			sub->dropped = false;
			if (sub->m) {
				exec_actions(sub, b->actions, b->actions_len);
				if (sub->m && sub->pending != NO_PORT)
					ofs_act_emit(sub, sub->pending, sub->pending_max_len, true);
				if (sub->m) rte_pktmbuf_free(sub->m);
			}
		}
		break;
	}
	case OFPAT_SET_QUEUE:
		break;
	case OFPAT_SET_FIELD:
		set_field(c, a + 4);
		break;
	case OFPAT_PUSH_VLAN: {
		uint16_t tci = 0, tpid = rd16(a + 4);
		if (plen(c) < 12)
			break;  /* no MACs to put the tag behind */
		if (in_frame(c, c->lay.vlan_ofs, 4)) tci = rd16(pdata(c) + c->lay.vlan_ofs + 2);
		p = insert_bytes(c, 12, 4);
		if (!p) return false;
		wr16(p + 12, tpid);
		wr16(p + 14, tci);
		/* the first tag of an untagged frame: the layout moves by the tag, the key's VLAN
		 * fields are re-extracted when read (test_actions.c checks it against a parse) */
		if (c->lay.vlan_ofs < 0 && c->lay.l2_end == 12 &&
		    (tpid == OFS_ETH_P_8021Q || tpid == OFS_ETH_P_8021AD)) {
			layout_shift(&c->lay, 4);
			c->lay.vlan_ofs = 12;
			c->key_stale = true;
		} else {
			c->parse_stale = true;
		}
		break;
	}
	case OFPAT_POP_VLAN:
		if (in_frame(c, c->lay.vlan_ofs, 4)) {
			remove_bytes(c, (uint32_t)c->lay.vlan_ofs, 4);
			c->parse_stale = true;
		}
		break;
	case OFPAT_PUSH_MPLS: {
		uint32_t shim = 0;
		int ofs = c->lay.l2_end; /* the ethertype; the shim goes after it */
		if (!in_frame(c, ofs, 2)) break;
		p = pdata(c);
		if (in_frame(c, c->lay.mpls_ofs, 4)) {
			shim = rd32(p + c->lay.mpls_ofs) & ~0x100u; /* copy label/tc/ttl, bos 0 */
		} else {
			shim = 0x100; /* bos */
			uint16_t iet;
			if (c->lay.l3_ofs >= 0) {
				int t = ip_ttl_ofs(c, c->lay.l3_ofs, &iet);
				if (t >= 0) shim |= p[t];
			}
		}
		bool first = c->lay.mpls_ofs < 0;
		p = insert_bytes(c, (uint32_t)ofs + 2, 4);
		if (!p) return false;
		wr16(p + ofs, rd16(a + 4));
		wr32(p + ofs + 2, shim);
		if (first) {
			/* the first shim: the parser stops at it (flowkey.c), so the layout is the
			 * tags, the ethertype and the shim; the rest of the key waits for a reader */
			c->lay.mpls_ofs = (int16_t)(ofs + 2);
			c->lay.pbb_ofs = c->lay.l3_ofs = c->lay.l4_ofs = -1;
			c->lay.l4_proto = 0;
			memcpy(&c->key.eth_type, a + 4, 2);
			c->key_stale = true;
		} else {
			c->parse_stale = true;
		}
		break;
	}
	case OFPAT_POP_MPLS:
		if (in_frame(c, c->lay.mpls_ofs, 4) && in_frame(c, c->lay.l2_end, 2)) {
			/* the shim sits right behind the ethertype (flowkey.c), so what it covered
			 * starts at mpls_ofs once it is gone, with the action's ethertype */
			int under = c->lay.mpls_ofs;
			p = pdata(c);
			wr16(p + c->lay.l2_end, rd16(a + 4));
			remove_bytes(c, (uint32_t)under, 4);
			trim_l2_padding(c, under, rd16(a + 4));
			c->parse_stale = true;
		}
		break;
	case OFPAT_PUSH_PBB: {
		uint8_t itag[4] = {0, 0, 0, 0};
		if (plen(c) < 12)
			break;  /* no MACs to copy to the outer header */
		if (in_frame(c, c->lay.pbb_ofs, 4)) memcpy(itag, pdata(c) + c->lay.pbb_ofs, 4);
		p = insert_bytes(c, 0, 18);
		if (!p) return false;
		memcpy(p, p + 18, 12);
		wr16(p + 12, rd16(a + 4));
		memcpy(p + 14, itag, 4);
		c->parse_stale = true;
		break;
	}
	case OFPAT_POP_PBB:
		if (in_frame(c, c->lay.pbb_ofs, 4)) {
			uint32_t n = (uint32_t)c->lay.pbb_ofs + 4;
			if (n <= plen(c)) { rte_pktmbuf_adj(c->m, (uint16_t)n); c->parse_stale = true; }
		}
		break;
	case OFPAT_SET_MPLS_TTL:
		if (in_frame(c, c->lay.mpls_ofs, 4)) pdata(c)[c->lay.mpls_ofs + 3] = a[4];
		break;
	case OFPAT_DEC_MPLS_TTL:
		if (in_frame(c, c->lay.mpls_ofs, 4)) {
			uint8_t *t = pdata(c) + c->lay.mpls_ofs + 3;
			if (*t <= 1) return ttl_expired(c);
			(*t)--;
		}
		break;
	case OFPAT_SET_NW_TTL: case OFPAT_DEC_NW_TTL: {
		if (c->lay.l3_ofs < 0) break;  /* ip_ttl_ofs: the TTL byte is in the frame */
		uint16_t iet;
		int t = ip_ttl_ofs(c, c->lay.l3_ofs, &iet);
		uint16_t et = ntohs(c->key.eth_type);
		if (t < 0 || (et != OFS_ETH_P_IPV4 && et != OFS_ETH_P_IPV6)) break;
		p = pdata(c);
		if (type == OFPAT_DEC_NW_TTL && p[t] <= 1)
			return ttl_expired(c);
		uint8_t ttl = type == OFPAT_SET_NW_TTL ? a[4] : (uint8_t)(p[t] - 1);
		if (iet != et || (et == OFS_ETH_P_IPV4 && !in_frame(c, c->lay.l3_ofs, 20))) {
			/* the version nibble says another IP than the key: recomputed as before */
			p[t] = ttl;
			c->csum_dirty = true;
		} else if (et == OFS_ETH_P_IPV4) {
			/* RFC 1624 on the (TTL, protocol) word, as OVS's packet_set_ipv4 does: the
			 * TTL is in no L4 checksum; a header fix_checksums would leave alone (not
			 * whole in the frame) is left alone here too */
			uint8_t *ip = p + c->lay.l3_ofs;
			uint16_t old = rd16(ip + 8), now = (uint16_t)(ttl << 8 | (old & 0xff));
			wr16(ip + 8, now);
			if ((ip[0] & 0xf) >= 5 && ip4_whole(c, ip))
				csum_replace16(ip + 10, old, now);
		} else {
			p[t] = ttl;  /* IPv6: no header checksum, the hop limit is in no L4 one */
		}
		break;
	}
	case OFPAT_COPY_TTL_OUT: case OFPAT_COPY_TTL_IN: {
		if (!in_frame(c, c->lay.mpls_ofs, 4)) break;
		p = pdata(c);
		int outer = c->lay.mpls_ofs + 3;
		int inner;
		uint16_t iet;
		if (!(p[c->lay.mpls_ofs + 2] & 1)) {
			inner = c->lay.mpls_ofs + 4 + 3;
		} else {
			int ip = ip_under_mpls(c);
			if (ip < 0) break;
			inner = ip_ttl_ofs(c, ip, &iet);
			if (inner < 0) break;
		}
		if ((uint32_t)inner >= plen(c)) break;
		if (type == OFPAT_COPY_TTL_OUT) {
			p[outer] = p[inner];
		} else {
			p[inner] = p[outer];
			/* an IPv4 header under MPLS needs its checksum fixed by hand here; one the
			 * frame does not hold whole is left alone (as fix_checksums leaves one) */
			if (p[c->lay.mpls_ofs + 2] & 1) {
				int ip = ip_under_mpls(c);
				uint32_t ihl = ip >= 0 ? (p[ip] & 0xf) * 4u : 0;
				if (ip >= 0 && (p[ip] >> 4) == 4 && ihl >= 20 && in_frame(c, ip, ihl)) {
					wr16(p + ip + 10, 0);
					wr16(p + ip + 10, csum_fold(csum_add(0, p + ip, ihl)));
				}
			}
		}
		break;
	}
	default:
		break;
	}
	LAYOUT_ASSERT(c, "an action");
	return !c->dropped && c->m != NULL;
}

/* Action set order (OF1.3 5.10). */
static const uint16_t aset_order[] = {
	OFPAT_COPY_TTL_IN, OFPAT_POP_VLAN, OFPAT_POP_MPLS, OFPAT_POP_PBB, OFPAT_PUSH_MPLS,
	OFPAT_PUSH_PBB, OFPAT_PUSH_VLAN, OFPAT_COPY_TTL_OUT, OFPAT_DEC_MPLS_TTL,
	OFPAT_DEC_NW_TTL, OFPAT_SET_MPLS_TTL, OFPAT_SET_NW_TTL, OFPAT_SET_FIELD,
	OFPAT_SET_QUEUE, OFPAT_GROUP, OFPAT_OUTPUT,
};

void ofs_act_exec_action_set(struct pkt_ctx *c)
{
	if (!c->aset_any)
		return;
	c->pin_reason = c->aset_reason;
	for (unsigned i = 0; i < RTE_DIM(aset_order) && c->m && !c->dropped; i++) {
		uint16_t t = aset_order[i];
		if (t == OFPAT_SET_FIELD) {
			for (int f = 0; f < OXM_N_FIELDS && c->m; f++)
				if (c->aset_setf[f] && !ofs_act_exec_one(c, c->aset_setf[f]))
					return;
			continue;
		}
		if (!c->aset[t])
			continue;
		if (t == OFPAT_OUTPUT && c->aset[OFPAT_GROUP])
			continue; /* group wins over output */
		if (!ofs_act_exec_one(c, c->aset[t]))
			return;
	}
}
