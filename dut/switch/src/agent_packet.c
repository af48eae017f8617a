/* agent_packet.c -- packets between the controller and the datapath: PACKET_IN (built from
 * what workers put on pin_ring) and PACKET_OUT (checked here, run by worker 0 from pout_ring;
 * OpenFlow 1.3.5 7.3.7, 7.4.1).
 *
 * No packet buffering: every PACKET_IN carries OFP_NO_BUFFER and the frame (up to the
 * controller's max_len); a PACKET_OUT naming a buffer is refused (BUFFER_UNKNOWN).
 * A PACKET_OUT is checked whole (length, in_port, actions, a frame of at least an Ethernet
 * header) before it is queued; the flow tables are committed first, so the packet sees every
 * FLOW_MOD sent before it. A full pout_ring blocks the agent until worker 0 drains it.
 * Concurrency: agent thread; ring handoff to worker 0 (SP/SC). Byte order: wire order in
 * messages; ofs_pin metadata/tunnel_id hold wire bytes (copied from the key).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "agent_internal.h"

void ofs_send_packet_in(struct obuf *out, const struct ofs_pin *pin)
{
	size_t at = ofs_msg_begin(out, OFPT_PACKET_IN, 0);
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
	/* the frame, cut where the message would pass OFS_MSG_MAX (total_len keeps its length:
	 * OF1.3.5 7.4.1 lets data be a prefix); frames are at most an mbuf's data room, so this
	 * only guards against a larger data room ever being configured */
	size_t room = OFS_MSG_MAX - (out->len - at);
	memcpy(ob_put(out, pin->data_len < room ? pin->data_len : room), pin->data,
	       pin->data_len < room ? pin->data_len : room);
	ofs_msg_end(out, at);
}

#define OFS_ETH_HDR_LEN 14u
#define OFS_IPPROTO_ICMPV6 58

/* What a frame's headers say, as a match: every field of its key, and as present the ones the
 * set-field prerequisites look at (ethertype, VLAN tag, ip_proto, ICMPv6 type). */
static void frame_fields(const uint8_t *frame, size_t len, uint32_t in_port,
			 struct ofs_match *m)
{
	struct ofs_layout lay;
	memset(m, 0, sizeof(*m));
	ofs_key_extract(frame, (uint32_t)len, &m->value, &lay);
	m->value.in_port = htonl(in_port);
	m->fields = 1ull << OXM_IN_PORT | 1ull << OXM_ETH_TYPE;
	if (m->value.vlan_vid & htons(OFPVID_PRESENT))
		m->fields |= 1ull << OXM_VLAN_VID;
	uint16_t et = ntohs(m->value.eth_type);
	if ((et == OFS_ETH_P_IPV4 || et == OFS_ETH_P_IPV6) && lay.l3_ofs >= 0) {
		m->fields |= 1ull << OXM_IP_PROTO;
		if (m->value.ip_proto == OFS_IPPROTO_ICMPV6 && lay.l4_ofs >= 0)
			m->fields |= 1ull << OXM_ICMPV6_TYPE;
	}
}

int ofs_on_packet_out(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_packet_out: header 8, buffer_id 4, in_port 4, actions_len 2, pad 6 = 24 */
	if (len < 24) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return 0;
	}
	uint32_t buffer_id = rd32(msg + 8), in_port = rd32(msg + 12);
	uint16_t alen = rd16(msg + 16);
	if (24u + alen > len) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return 0;
	}
	if (buffer_id != OFP_NO_BUFFER) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BUFFER_UNKNOWN));
		return 0;
	}
	if (!(in_port == OFPP_CONTROLLER || in_port == OFPP_LOCAL || ofs_port_is_real(in_port))) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_PORT));
		return 0;
	}
	uint32_t e = ofs_actions_check(msg + 24, alen, true);
	if (e) {
		ofs_send_error(out, msg, len, e);
		return 0;
	}
	size_t dlen = len - 24 - alen;
	if (dlen < OFS_ETH_HDR_LEN || dlen > OFS_MAX_PKT) {
		/* 7.3.7: no buffer and no frame, or less than an Ethernet header, is no packet */
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_PACKET));
		return 0;
	}
	/* 7.2.5: set-field prerequisites; a PACKET_OUT has no match, so they are checked
	 * against the frame itself (the fields its headers carry) */
	struct ofs_match ctx;
	frame_fields(msg + 24 + alen, dlen, in_port, &ctx);
	e = ofs_actions_prereq(msg + 24, alen, &ctx, false);
	if (e) {
		ofs_send_error(out, msg, len, e);
		return 0;
	}
	if (!ofs_dp.pout_ring)
		return 0;
	struct ofs_pout *po = malloc(sizeof(*po) + alen + dlen);
	if (!po) {  /* out of memory: refused (agent_internal.h) */
		ofs_send_error(out, msg, len, OFS_ERR_NO_MEMORY);
		return 0;
	}
	po->in_port = in_port;
	po->actions_len = alen;
	po->data_len = (uint16_t)dlen;
	po->actions = po->buf;
	po->data = po->buf + alen;
	memcpy(po->actions, msg + 24, alen);
	memcpy(po->data, msg + 24 + alen, dlen);
	ofs_commit(); /* the packet must see every flow-mod sent before it */
	while (rte_ring_sp_enqueue(ofs_dp.pout_ring, po) != 0) {
		if (ofs_dp.force_quit) { free(po); return 0; }
		usleep(100);
	}
	return 0;
}
