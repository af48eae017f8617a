/* datapath.c -- worker lcores: rx burst, flow cache, OpenFlow pipeline, actions, tx (and, in
 * fail-standalone mode while no controller is connected, learning-switch forwarding instead).
 * See ofswitch.h for the threading rules and the flow cache, flowtable.h for how tables change
 * under the workers. Per packet: no lock, no allocation except copies for multi-output and
 * packets for the controller. Per poll loop: each table's lookup structure is entered (its
 * reader protocol) at its first lookup and left before the QSBR quiescent report; table 0's
 * cache misses of a burst are looked up together (lookup_burst). Transmission goes through
 * per-worker tx buffers: a full one is sent at once, partial ones when the loop found nothing
 * to do or every OFS_TX_DRAIN_US (DPDK l2fwd's drain timer), and at exit. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_hash_crc.h>
#include <rte_cycles.h>
#include <rte_prefetch.h>
#include "ofswitch.h"
#include "flowarena.h"
#include "vhost_port.h"
#include "csum.h"

struct ofs_dp ofs_dp;

uint64_t ofs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- per-packet context ------------------------------------------------------------------- */
#define NO_PORT 0u
struct pkt_ctx {
	struct ofs_worker *w;
	struct rte_mbuf *m;
	struct ofs_key key;
	struct ofs_layout lay;
	uint32_t in_port;
	uint32_t pending;           /* output port not yet emitted, NO_PORT: none */
	uint16_t pending_max_len;
	bool csum_dirty;
	uint8_t csum_layout_proto;  /* L4 header layout whose checksum we fix (0: lay.l4_proto);
				     * set when ip_proto is rewritten: the bytes are still the old L4 */
	bool dropped;               /* stop executing (meter drop, invalid ttl) */
	uint8_t table_id;
	uint64_t cookie;
	uint8_t pin_reason;         /* of the flow executing: NO_MATCH for a table-miss entry
				     * (f->table_miss), else ACTION; PACKET_OUT: ACTION */
	uint32_t depth;             /* group recursion */
	bool pre_looked_up;         /* table 0 was looked up by the burst pre-pass (maybe miss) */
	bool parse_stale;           /* a push/pop moved the headers: key/lay are re-extracted by
				     * ensure_parsed() before anything reads them (an output
				     * right after a pop never pays for the parse) */
	bool key_stale;             /* a set-field changed a value the key holds, the layout
				     * holds: the key is re-extracted by ensure_parsed() before
				     * it is read; ensure_layout() readers of lay (set-field,
				     * checksums) need no parse (two set-fields and an output
				     * parse nothing) */
	/* action set (write-actions): one slot per action type, set-fields per field */
	const uint8_t *aset[32];
	const uint8_t *aset_setf[OXM_N_FIELDS];
	bool aset_any;
	uint8_t aset_reason;        /* pin_reason of the flow that wrote the set's output/group */
};

static void exec_actions(struct pkt_ctx *c, const uint8_t *a, uint32_t len);
static void run_pipeline(struct pkt_ctx *c, uint8_t table, struct ofs_flow *first);

static inline uint8_t *pdata(struct pkt_ctx *c) { return rte_pktmbuf_mtod(c->m, uint8_t *); }
static inline uint32_t plen(struct pkt_ctx *c) { return rte_pktmbuf_data_len(c->m); }

/* Are the n bytes at offset ofs (-1: a layer the frame does not have) inside the frame? Every
 * read and write of an action at a layout offset asks (issue 37: the layout's own rule,
 * flowkey.h, makes most of these true by construction; the check keeps each access honest on
 * its own). */
static inline bool in_frame(struct pkt_ctx *c, int ofs, uint32_t n)
{
	return ofs >= 0 && (uint32_t)ofs + n <= plen(c);
}

/* Debug and sanitizer builds (not NDEBUG; issue 37 part 3): the layout that actions read is
 * inside the frame (ofs_layout_ok) after every parse and every action, unless it is marked
 * stale (then it is parsed again before anyone reads it). A violation aborts with the
 * layout, naming where it was seen. */
#ifndef NDEBUG
static void layout_assert(struct pkt_ctx *c, const char *where)
{
	if (!c->m || c->parse_stale || ofs_layout_ok(pdata(c), plen(c), &c->lay))
		return;
	fprintf(stderr, "ofswitch: layout outside the frame after %s: len %u, l2_end %d vlan %d "
		"mpls %d pbb %d l3 %d l4 %d (proto %u)\n", where, plen(c), c->lay.l2_end,
		c->lay.vlan_ofs, c->lay.mpls_ofs, c->lay.pbb_ofs, c->lay.l3_ofs, c->lay.l4_ofs,
		c->lay.l4_proto);
	abort();
}
#define LAYOUT_ASSERT(c, where) layout_assert(c, where)
#else
#define LAYOUT_ASSERT(c, where) ((void)0)
#endif

static void reparse(struct pkt_ctx *c)
{
	c->parse_stale = false;
	c->key_stale = false;
	ofs_key_extract(pdata(c), plen(c), &c->key, &c->lay);
	LAYOUT_ASSERT(c, "the parse");
}

/* Every reader of c->key / c->lay after an action may have moved the headers or changed a
 * field calls this. */
static inline void ensure_parsed(struct pkt_ctx *c)
{
	if (unlikely(c->parse_stale | c->key_stale))
		reparse(c);
}

/* A reader of c->lay (and of key.eth_type, which only set-fields that reparse at once change)
 * after an action may have moved the headers calls this. */
static inline void ensure_layout(struct pkt_ctx *c)
{
	if (unlikely(c->parse_stale))
		reparse(c);
}

/* ---- checksums ---------------------------------------------------------------------------- */

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

static void fix_checksums(struct pkt_ctx *c)
{
	if (!c->csum_dirty)
		return;
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

/* ---- agent wake-up -------------------------------------------------------------------------- */
/* After a Packet-In enqueue: wake the agent if it sleeps in poll(). The fence orders the ring's
 * tail store before the load of agent_sleeping (the agent stores agent_sleeping, then reads the
 * ring): one of the two sides always sees the other, so no Packet-In waits for the 100 ms tick.
 * Costs a fence per Packet-In and a write() only when the agent actually sleeps. */
void __rte_cold ofs_wake_agent(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ofs_dp.agent_sleeping, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&ofs_dp.agent_sleeping, 0, __ATOMIC_ACQ_REL)) {
		uint64_t one = 1;
		ssize_t r = write(ofs_dp.agent_wake_fd, &one, sizeof(one));
		(void)r;
	}
}

/* ---- ports: rx, tx buffering ---------------------------------------------------------------- */
/* A burst from a port's rx queue 0: an ethdev's, or a vhost-user guest's tx ring. */
static inline uint16_t port_rx(struct ofs_worker *w, int pidx, struct rte_mbuf **pkts)
{
	struct ofs_port *p = &ofs_dp.ports[pidx];
	if (p->vhost)
		return ofs_vhost_rx(p->vhost, w->pool, pkts, OFS_BURST);
	return rte_eth_rx_burst(p->dpdk_id, 0, pkts, OFS_BURST);
}

/* Send what the worker buffered for a port (DPDK's rte_eth_tx_buffer_flush, with a vhost-user
 * port's tx beside the ethdev's); the rest a queue did not take goes to the buffer's error
 * callback (ofs_tx_unsent). */
static void port_tx_flush(struct ofs_worker *w, int pidx)
{
	struct rte_eth_dev_tx_buffer *b = w->txb[pidx];
	uint16_t n = b->length;
	if (n == 0)
		return;
	struct ofs_port *p = &ofs_dp.ports[pidx];
	uint16_t sent = p->vhost ? ofs_vhost_tx(p->vhost, b->pkts, n)
				 : rte_eth_tx_burst(p->dpdk_id, w->txq[pidx].queue_id, b->pkts, n);
	b->length = 0;
	if (unlikely(sent < n))
		b->error_callback(&b->pkts[sent], (uint16_t)(n - sent), b->error_userdata);
}

static void tx_one(struct ofs_worker *w, int pidx, struct rte_mbuf *m)
{
	struct ofs_port *p = &ofs_dp.ports[pidx];
	if (!p->link_up || (p->config & (OFPPC_PORT_DOWN | OFPPC_NO_FWD))) {
		w->port_stats[pidx].tx_dropped++;
		rte_pktmbuf_free(m);
		return;
	}
	w->port_stats[pidx].tx_packets++;
	w->port_stats[pidx].tx_bytes += rte_pktmbuf_pkt_len(m);
	struct rte_eth_dev_tx_buffer *b = w->txb[pidx];
	b->pkts[b->length++] = m;
	if (b->length == b->size)
		port_tx_flush(w, pidx);
}

/* The tx buffer's error callback: the queue took only part of a burst (e.g. a vhost-user
 * guest's rx ring is full). Drop the rest and count it as tx_dropped, taking it back out of
 * tx_packets/tx_bytes, which tx_one counted when it buffered the packet (DPDK's default
 * callback frees silently, so the OpenFlow port counters claimed packets that never left).
 * No retry: a retry-while-progress loop as OVS-DPDK has sent 0 packets in the vmwire loop
 * (the switch drops only the start-up overflow there). */
void ofs_tx_unsent(struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct ofs_txq *q = arg;
	for (uint16_t i = 0; i < n; i++) {
		q->stats->tx_packets--;
		q->stats->tx_bytes -= rte_pktmbuf_pkt_len(pkts[i]);
		q->stats->tx_dropped++;
		rte_pktmbuf_free(pkts[i]);
	}
}

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
static void emit(struct pkt_ctx *c, uint32_t port, uint16_t max_len, bool use_original)
{
	fix_checksums(c);
	/* Pad to the Ethernet minimum (60 bytes without FCS) as a NIC would on the wire: a pop
	 * can leave a frame shorter than what the sender gave us. */
	if (plen(c) < 60 && c->m->nb_segs == 1) {
		uint32_t pad = 60 - plen(c);
		uint8_t *z = (uint8_t *)rte_pktmbuf_append(c->m, (uint16_t)pad);
		if (z)
			memset(z, 0, pad);
	}
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
		run_pipeline(sub, 0, NULL);
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
			tx_one(c->w, idx[i], m);
	}
	if (use_original && c->m) {
		rte_pktmbuf_free(c->m);
		c->m = NULL;
	}
}

static void flush_pending(struct pkt_ctx *c)
{
	if (c->pending != NO_PORT) {
		uint32_t p = c->pending;
		c->pending = NO_PORT;
		emit(c, p, c->pending_max_len, false);
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

/* Offset of the TTL (hop limit) of the IP header at l3, by its version nibble, or -1 when
 * there is none in the frame. */
static int ip_ttl_ofs(struct pkt_ctx *c, int l3, uint16_t *et_out)
{
	if (!in_frame(c, l3, 1))
		return -1;
	uint8_t *p = pdata(c);
	uint8_t v = p[l3] >> 4;
	int t = v == 4 ? l3 + 8 : v == 6 ? l3 + 7 : -1;
	if (!in_frame(c, t, 1))
		return -1;
	*et_out = v == 4 ? OFS_ETH_P_IPV4 : OFS_ETH_P_IPV6;
	return t;
}

/* ---- checksums updated in place (RFC 1624), as Open vSwitch's packet_set_* do ------------
 * A set-field of an IPv4/IPv6 header field or a TCP/UDP port changes a few 16-bit words that a
 * checksum covers: the checksum is updated from their old and new values instead of being
 * recomputed over the packet (fix_checksums), which would read back the bytes the set-field
 * just stored (a store-forwarding stall per word). On a packet whose checksums were right the
 * result is byte for byte the full recomputation's (test_actions.c checks both ways on every
 * field and protocol); a wrong checksum stays wrong by the same amount, as in OVS. The IPv4
 * header's own checksum can always be updated so (or is left alone, as fix_checksums leaves it,
 * when the header is not whole in the frame); l4_csum_replace returns false where it cannot
 * stand in for fix_checksums exactly (the caller marks the packet csum_dirty then): SCTP's CRC
 * over changed ports, ip_proto rewritten earlier (csum_layout_proto). */

/* The checksum field at cs after the n bytes (n even) at old became those at new. Neither
 * may be bytes just stored narrower than 16 bits (a load across such a store waits for it:
 * a word changed in part is passed by value, csum_replace16). */
static inline void csum_replace(uint8_t *cs, const uint8_t *old, const uint8_t *new, uint32_t n)
{
	uint32_t s = (uint16_t)~rd16(cs);
	for (uint32_t i = 0; i < n; i += 2)
		s += (uint16_t)~rd16(old + i) + (uint32_t)rd16(new + i);
	wr16(cs, csum_fold(s));
}

/* The checksum field at cs after one 16-bit word (host order values) went from old to new. */
static inline void csum_replace16(uint8_t *cs, uint16_t old, uint16_t new)
{
	wr16(cs, csum_fold((uint32_t)(uint16_t)~rd16(cs) + (uint16_t)~old + new));
}

/* Is the IPv4 header at l3 whole in the frame? fix_checksums leaves one that is not alone,
 * so an in-place update does too. */
static inline bool ip4_whole(struct pkt_ctx *c, const uint8_t *ip)
{
	return (uint32_t)c->lay.l3_ofs + (ip[0] & 0xf) * 4u <= plen(c);
}

/* The IPv4 header's own checksum, after n bytes of it changed (old -> new). */
static void ip4_csum_replace(struct pkt_ctx *c, const uint8_t *old, const uint8_t *new,
			     uint32_t n)
{
	uint8_t *ip = pdata(c) + c->lay.l3_ofs;
	if (ip4_whole(c, ip))
		csum_replace(ip + 10, old, new, n);
}

/* An IPv4 header's first word (version, IHL, DSCP, ECN) set to w, its checksum updated. */
static void ip4_set_word0(struct pkt_ctx *c, uint16_t w)
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
static bool l4_csum_replace(struct pkt_ctx *c, bool pseudo, const uint8_t *old,
			    const uint8_t *new, uint32_t n)
{
	if (c->csum_layout_proto)
		return false;
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

static void set_field(struct pkt_ctx *c, const uint8_t *oxm)
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
			ip4_set_word0(c, (uint16_t)((rd16(p + l3) & 0xff03) | (v[0] & 0x3f) << 2));
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
			ip4_set_word0(c, (uint16_t)((rd16(p + l3) & 0xfffc) | (v[0] & 3)));
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

static bool exec_one(struct pkt_ctx *c, const uint8_t *a)
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
		/* the reason stays the executing flow's (run_pipeline): NO_MATCH from a
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
					emit(sub, sub->pending, sub->pending_max_len, true);
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
		if (type == OFPAT_SET_NW_TTL) {
			p[t] = a[4];
		} else {
			if (p[t] <= 1) return ttl_expired(c);
			p[t]--;
		}
		c->csum_dirty = true;
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

static void exec_actions(struct pkt_ctx *c, const uint8_t *a, uint32_t len)
{
	uint32_t o = 0;
	while (o + 4 <= len && c->m && !c->dropped) {
		uint16_t l = rd16(a + o + 2);
		if (l < 8 || o + l > len)
			break;
		if (!exec_one(c, a + o))
			break;
		o += l;
	}
}

/* Action set order (OF1.3 5.10). */
static const uint16_t aset_order[] = {
	OFPAT_COPY_TTL_IN, OFPAT_POP_VLAN, OFPAT_POP_MPLS, OFPAT_POP_PBB, OFPAT_PUSH_MPLS,
	OFPAT_PUSH_PBB, OFPAT_PUSH_VLAN, OFPAT_COPY_TTL_OUT, OFPAT_DEC_MPLS_TTL,
	OFPAT_DEC_NW_TTL, OFPAT_SET_MPLS_TTL, OFPAT_SET_NW_TTL, OFPAT_SET_FIELD,
	OFPAT_SET_QUEUE, OFPAT_GROUP, OFPAT_OUTPUT,
};

static void write_actions(struct pkt_ctx *c, const uint8_t *a, uint32_t len)
{
	uint32_t o = 0;
	if (!c->aset_any) {  /* empty set: the slots may hold an earlier packet's pointers */
		memset(c->aset, 0, sizeof(c->aset));
		memset(c->aset_setf, 0, sizeof(c->aset_setf));
	}
	while (o + 4 <= len) {
		uint16_t t = rd16(a + o), l = rd16(a + o + 2);
		if (l < 8 || o + l > len)
			break;
		if (t == OFPAT_SET_FIELD)
			c->aset_setf[a[o + 6] >> 1 & 0x7f] = a + o;
		else if (t < 32)
			c->aset[t] = a + o;
		if (t == OFPAT_OUTPUT || t == OFPAT_GROUP)
			c->aset_reason = c->pin_reason;  /* the writer flow's reason */
		c->aset_any = true;
		o += l;
	}
}

static void exec_action_set(struct pkt_ctx *c)
{
	if (!c->aset_any)
		return;
	c->pin_reason = c->aset_reason;
	for (unsigned i = 0; i < RTE_DIM(aset_order) && c->m && !c->dropped; i++) {
		uint16_t t = aset_order[i];
		if (t == OFPAT_SET_FIELD) {
			for (int f = 0; f < OXM_N_FIELDS && c->m; f++)
				if (c->aset_setf[f] && !exec_one(c, c->aset_setf[f]))
					return;
			continue;
		}
		if (!c->aset[t])
			continue;
		if (t == OFPAT_OUTPUT && c->aset[OFPAT_GROUP])
			continue; /* group wins over output */
		if (!exec_one(c, c->aset[t]))
			return;
	}
}

/* ---- meters ------------------------------------------------------------------------------- */
/* Returns false when the packet is dropped. */
static bool apply_meter(struct pkt_ctx *c, uint32_t meter_id)
{
	struct ofs_meter *m = ofs_meter_find(meter_id);
	if (!m)
		return false;
	uint32_t len = plen(c);
	uint64_t now = ofs_now_ns();
	int hit = -1;
	rte_spinlock_lock(&m->lock);
	double dt = m->last_ns ? (double)(now - m->last_ns) * 1e-9 : 0;
	m->last_ns = now;
	m->packets++;
	m->bytes += len;
	for (int i = 0; i < m->n_bands; i++) {
		struct ofs_band *b = &m->bands[i];
		double add = (m->flags & OFPMF_PKTPS) ? b->rate * dt : b->rate * 1000.0 / 8 * dt;
		b->tokens = RTE_MIN(b->depth, b->tokens + add);
		double cost = (m->flags & OFPMF_PKTPS) ? 1.0 : len;
		if (b->tokens >= cost)
			b->tokens -= cost;
		else if (hit < 0 || b->rate > m->bands[hit].rate)
			hit = i;
	}
	if (hit >= 0) {
		m->bands[hit].packets++;
		m->bands[hit].bytes += len;
	}
	rte_spinlock_unlock(&m->lock);
	if (hit < 0)
		return true;
	struct ofs_band *b = &m->bands[hit];
	if (b->type == OFPMBT_DSCP_REMARK) {
		ensure_parsed(c);
		int l3 = c->lay.l3_ofs;
		uint16_t et = ntohs(c->key.eth_type);
		uint8_t *p = pdata(c);
		if (l3 >= 0 && (et == OFS_ETH_P_IPV4 || et == OFS_ETH_P_IPV6)) {
			flush_pending(c);
			uint8_t dscp = c->key.ip_dscp;
			/* raise the AF drop precedence (bits 1-2 of the DSCP) by prec_level */
			uint8_t prec = ((dscp >> 1) & 3) + b->prec_level;
			if (prec > 3) prec = 3;
			dscp = (uint8_t)((dscp & ~0x6) | prec << 1);
			if (et == OFS_ETH_P_IPV4) p[l3 + 1] = (uint8_t)(dscp << 2) | (p[l3 + 1] & 3);
			else wr32(p + l3, (rd32(p + l3) & ~(0xfcu << 20)) | (uint32_t)dscp << 22);
			c->csum_dirty = true;
			reparse(c);
		}
		return true;
	}
	return false;
}

/* ---- pipeline ----------------------------------------------------------------------------- */
/* One exact-match cache probe: the packet key compacted to the index's used words. */
struct ck_probe {
	const struct ofs_table_view *ix; /* NULL: table never had a flow */
	bool cacheable;                  /* ix->cacheable */
	bool wide;                       /* an entry of this table takes two lines */
	uint32_t sig;                    /* hash of (serial, compacted key) */
	uint32_t idx[2];                 /* the entry's two places (ck_index) */
	int stale;                       /* place (0, 1) of a stale entry for this key, or -1 */
	uint32_t line;                   /* a hit: the entry's first line */
	uint8_t fast;                    /* a hit on a fast entry: its output's ports[] index + 1 */
	uint64_t w[OFS_CK_WORDS];
};

/* The two places of an entry of hash sig in a cache of m + 1 lines: indexes of its first
 * line, even for a two-line entry, never the same. The first is the hash's low bits, the
 * second the high bits of a multiplicative mix of it (Fibonacci hashing: every bit of sig
 * moves them), so keys that share a first place spread over the whole cache for their
 * second, whatever the size. */
static inline void ck_index(struct ck_probe *p, uint32_t m)
{
	uint32_t a = p->sig & m;
	uint32_t b = (uint32_t)(((uint64_t)(p->sig * 0x9e3779b1u) * ((uint64_t)m + 1)) >> 32);
	if (p->wide) {
		a &= ~1u;
		b &= ~1u;
	}
	if (b == a)
		b = a ^ 2;
	p->idx[0] = a;
	p->idx[1] = b;
}

static inline void ck_prepare(const struct ofs_key *key, const struct ofs_table_view *ix,
			      uint32_t cache_mask, struct ck_probe *p)
{
	p->ix = ix;
	p->fast = 0;
	p->cacheable = ix && ix->cacheable;
	if (!p->cacheable)
		return;
	const uint64_t *kw = (const uint64_t *)key;
	uint32_t h = (uint32_t)ix->serial;
	for (unsigned i = 0; i < ix->n_words; i++) {
		p->w[i] = kw[ix->word[i]] & ix->mask[i];
		h = rte_hash_crc_8byte(p->w[i], h);
	}
	p->sig = h ^ (h >> 15);  /* spread the high bits into the index */
	p->wide = ix->n_words > OFS_CK_LINE1_WORDS;
	ck_index(p, cache_mask);
}

static inline void ck_prefetch(struct ofs_worker *w, const struct ck_probe *p, int place)
{
	rte_prefetch0(&w->cache[p->idx[place]]);
	if (p->wide)
		rte_prefetch0(&w->cache[p->idx[place] + 1]);
}

/* Enter table t's lookup structure (once per poll loop; ofs_reader_leave_all leaves). */
static inline void reader_enter(struct ofs_worker *w, unsigned t, const struct ofs_table_view *v)
{
	if (!(w->entered >> t & 1)) {
		ofs_dp.lookup_ops->reader_enter(v->lx, w->idx);
		w->entered |= 1ull << t;
	}
}

static void ofs_reader_leave_all(struct ofs_worker *w)
{
	for (uint64_t e = w->entered; e; e &= e - 1)
		ofs_dp.lookup_ops->reader_leave(ofs_dp.tables[__builtin_ctzll(e)].lx, w->idx);
	w->entered = 0;
}

static inline uint64_t ck_tag(const struct ofs_table_view *v)
{
	return v->serial << OFS_VERSION_BITS | v->version;
}

/* An entry of an older version of v's epoch: is its flow still the answer at v? Not if its
 * version is older than v's log, if its flow was removed since, or if a flow added since
 * matches its key with a priority at least its flow's (ties: the lookup decides). The flow
 * itself is not read (its priority is in the bucket): a cold flow line would cost a memory
 * round trip per packet. */
static __rte_noinline bool ck_revalidate(const struct ofs_table_view *v, uint32_t version,
					 const struct ofs_flow *f, uint16_t prio, const uint64_t *w)
{
	if (version < v->log_base)
		return false;
	uint32_t i = v->n_log;
	while (i > 0 && v->log[i - 1].version > version)
		i--;
	for (uint32_t j = i; j < v->n_log; j++) {
		const struct ofs_change *c = &v->log[j];
		if (!c->added) {
			if (c->removed == f && f)
				return false;
			continue;
		}
		if (f && c->priority < prio)
			continue;
		unsigned k = 0;
		while (k < v->n_words && (w[k] & c->m[k]) == c->v[k])
			k++;
		if (k == v->n_words)
			return false;
	}
	return true;
}

#define CK_FLOW_BITS 48
static inline struct ofs_flow *ck_flow(uint64_t x0)
{
	return (struct ofs_flow *)(uintptr_t)(x0 & ((1ull << CK_FLOW_BITS) - 1));
}

/* ---- counts held in fast entries (ofswitch.h, struct ofs_cache_line) ---------------------- */
#define CK_FAST_SHIFT 56
#define CK_PEND_PK_SHIFT 32
#define CK_PEND_PK_MAX 0xffffffull
#define CK_PEND_MASK ((1ull << CK_FAST_SHIFT) - 1)

static inline bool ctr_is_dirty(const struct ofs_worker *w, uint32_t line)
{
	return w->ctr_dirty[line / 64] >> (line % 64) & 1;
}

/* Add line's pending counts to its flow (or to the MODIFY copy that carries it on) and clear
 * them. The flow is valid: it was in a view this worker used since its last sweep of this
 * line, and removed flows wait for the sweep (ofs_counters_swept). */
static void ck_flush_line(struct ofs_worker *w, uint32_t line)
{
	struct ofs_cache_line *l = &w->cache[line];
	uint64_t x = l->x[6];
	w->ctr_dirty[line / 64] &= ~(1ull << (line % 64));
	l->x[6] = x & ~CK_PEND_MASK;
	struct ofs_flow *f = ck_flow(l->x[0]);
	while (unlikely(__atomic_load_n(&f->replaced, __ATOMIC_ACQUIRE)))
		f = f->succ;
	uint64_t pk = x >> CK_PEND_PK_SHIFT & CK_PEND_PK_MAX, by = (uint32_t)x;
	if (ofs_dp.n_workers == 1) {  /* as run_pipeline counts (flowarena.h) */
		f->packets += pk;
		f->bytes += by;
	} else {
		struct ofs_flow_ctr *k = f->ctr + w->ctr_off;
		k->packets += pk;
		k->bytes += by;
	}
	/* last, with release: an agent that reads 0 pending lines (ofs_counters_sync,
	 * ofs_counters_swept) sees these adds, and no flush of this worker still writes to a
	 * flow it may free */
	__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines - 1, __ATOMIC_RELEASE);
}

/* A packet of len bytes forwarded by the fast entry at line: counted in the entry. */
static inline void ck_count(struct ofs_worker *w, uint32_t line, uint32_t len)
{
	struct ofs_cache_line *l = &w->cache[line];
	/* a fast entry's line is dirty exactly when it holds a packet: ask its own word, at hand,
	 * not the bitmap (one line of it per 64 entries: a line more per frame in L1) */
	if (!(l->x[6] & CK_PEND_MASK)) {
		w->ctr_dirty[line / 64] |= 1ull << (line % 64);
		__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines + 1, __ATOMIC_RELEASE);
	} else if (unlikely((l->x[6] >> CK_PEND_PK_SHIFT & CK_PEND_PK_MAX) == CK_PEND_PK_MAX ||
			    (uint32_t)l->x[6] + len < (uint32_t)l->x[6])) {
		ck_flush_line(w, line);  /* a count would overflow: flush, then start again */
		w->ctr_dirty[line / 64] |= 1ull << (line % 64);
		__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines + 1, __ATOMIC_RELEASE);
	}
	l->x[6] += (1ull << CK_PEND_PK_SHIFT) + len;
}

/* A hit on p's entry: when it is a fast entry and the packet may take run_pipeline's fast_out
 * way (ofs_port_idx of the output, not back out of its in_port, at least 60 bytes), count it in
 * the entry now, while its line is at hand and before a store of this burst may take the line
 * (ck_store flushes what it overwrites); process_burst sends it. Else p->fast = 0: the general
 * way. */
static inline void ck_take_fast(struct ofs_worker *w, struct ck_probe *p, struct pkt_ctx *c)
{
	if (!p->fast)
		return;
	uint32_t len = rte_pktmbuf_data_len(c->m);
	if (len < 60 || ofs_dp.ports[p->fast - 1].ofport == c->in_port) {
		p->fast = 0;
		return;
	}
	ck_count(w, p->line, len);
}

static void ctr_flush_word(struct ofs_worker *w, uint32_t word)
{
	uint64_t bits = w->ctr_dirty[word];
	for (uint64_t b = bits; b; b &= b - 1)
		rte_prefetch0(&w->cache[word * 64 + (uint32_t)__builtin_ctzll(b)]);
	for (uint64_t b = bits; b; b &= b - 1)
		rte_prefetch0(ck_flow(w->cache[word * 64 + (uint32_t)__builtin_ctzll(b)].x[0]));
	for (; bits; bits &= bits - 1)
		ck_flush_line(w, word * 64 + (uint32_t)__builtin_ctzll(bits));
}

/* Flush every line with pending counts (the agent asked, or the worker is about to sleep or
 * stop). */
static __rte_cold void ctr_flush_all(struct ofs_worker *w)
{
	for (uint32_t i = 0; i < w->ctr_words; i++)
		if (w->ctr_dirty[i])
			ctr_flush_word(w, i);
	__atomic_store_n(&w->ctr_sweeps, w->ctr_sweeps + 2, __ATOMIC_RELEASE);
}

/* Once per poll loop: the sweep's words that are due (a whole sweep per OFS_CTR_SWEEP_US),
 * and a full flush when the agent asked for one. */
static inline void ctr_sweep(struct ofs_worker *w, uint64_t now_tsc, uint64_t word_tsc)
{
	uint64_t seq = __atomic_load_n(&ofs_dp.ctr_flush_seq, __ATOMIC_ACQUIRE);
	if (unlikely(seq != w->ctr_ack_seq)) {
		ctr_flush_all(w);
		__atomic_store_n(&w->ctr_ack_seq, seq, __ATOMIC_RELEASE);
	}
	if (now_tsc < w->ctr_next_tsc)
		return;
	if (now_tsc - w->ctr_next_tsc > w->ctr_words * word_tsc)
		w->ctr_next_tsc = now_tsc;  /* the worker was held up: no catch-up burst */
	for (unsigned k = 0; k < 8 && now_tsc >= w->ctr_next_tsc; k++) {
		if (w->ctr_dirty[w->ctr_sweep_word])
			ctr_flush_word(w, w->ctr_sweep_word);
		w->ctr_next_tsc += word_tsc;
		if (++w->ctr_sweep_word == w->ctr_words) {
			w->ctr_sweep_word = 0;
			__atomic_store_n(&w->ctr_sweeps, w->ctr_sweeps + 1, __ATOMIC_RELEASE);
		}
	}
}

void ofs_worker_set_cache(struct ofs_worker *w, struct ofs_cache_line *cache, uint64_t *dirty,
			  uint32_t lines)
{
	RTE_VERIFY(rte_is_power_of_2(lines) && lines >= OFS_CACHE_LINES_MIN &&
		   lines <= OFS_CACHE_LINES_MAX);
	w->cache = cache;
	w->cache_mask = lines - 1;
	w->ctr_dirty = dirty;
	w->ctr_words = lines / 64;
}

void ofs_counters_sync(void)
{
	uint64_t seq = __atomic_add_fetch(&ofs_dp.ctr_flush_seq, 1, __ATOMIC_ACQ_REL);
	uint64_t give_up = ofs_now_ns() + 500000000ull;  /* a worker that never loops: stuck */
	for (unsigned i = 0; i < ofs_dp.n_workers; i++) {
		struct ofs_worker *w = &ofs_dp.workers[i];
		while (__atomic_load_n(&w->ctr_ack_seq, __ATOMIC_ACQUIRE) < seq &&
		       __atomic_load_n(&w->ctr_dirty_lines, __ATOMIC_ACQUIRE) != 0 &&
		       !ofs_dp.force_quit && ofs_now_ns() < give_up)
			rte_pause();
	}
}

void ofs_counters_snapshot(uint64_t snap[OFS_MAX_WORKERS])
{
	for (unsigned i = 0; i < ofs_dp.n_workers; i++)
		snap[i] = __atomic_load_n(&ofs_dp.workers[i].ctr_sweeps, __ATOMIC_ACQUIRE);
}

bool ofs_counters_swept(const uint64_t snap[OFS_MAX_WORKERS])
{
	for (unsigned i = 0; i < ofs_dp.n_workers; i++) {
		const struct ofs_worker *w = &ofs_dp.workers[i];
		/* a sweep in progress at the snapshot may have passed a line already: two */
		if (__atomic_load_n(&w->ctr_sweeps, __ATOMIC_ACQUIRE) < snap[i] + 2 &&
		    __atomic_load_n(&w->ctr_dirty_lines, __ATOMIC_ACQUIRE) != 0)
			return false;
	}
	return true;
}

/* Does the entry at p's place hold p's key of p->ix's epoch? Then *f is its flow, after
 * revalidation when the entry is of an older version (a stale one is noted in p->stale). */
static inline bool ck_find_at(struct ofs_worker *w, struct ck_probe *p, int place,
			      struct ofs_flow **f)
{
	struct ofs_cache_line *l = &w->cache[p->idx[place]];
	unsigned n = p->ix->n_words, n1 = RTE_MIN(n, (unsigned)OFS_CK_LINE1_WORDS);
	uint64_t tag = ck_tag(p->ix);
	if (l->tag >> OFS_VERSION_BITS != p->ix->serial)
		return false;
	for (unsigned i = 0; i < n1; i++)
		if (l->x[1 + i] != p->w[i])
			return false;
	if (p->wide) {
		const struct ofs_cache_line *l2 = l + 1;
		if (l2->tag != l->tag)
			return false;  /* its second line was taken by another entry */
		for (unsigned i = OFS_CK_LINE1_WORDS; i < n; i++)
			if (l2->x[i - OFS_CK_LINE1_WORDS] != p->w[i])
				return false;
	}
	if (unlikely(l->tag != tag)) {
		uint32_t ver = (uint32_t)(l->tag & ((1u << OFS_VERSION_BITS) - 1));
		if (!ck_revalidate(p->ix, ver, ck_flow(l->x[0]),
				   (uint16_t)(l->x[0] >> CK_FLOW_BITS), p->w)) {
			p->stale = place;  /* the caller looks up and overwrites it */
			return false;
		}
		l->tag = tag;
		if (p->wide)
			l[1].tag = tag;
		w->cache_revalidated++;
	}
	*f = ck_flow(l->x[0]);
	p->line = p->idx[place];
	p->fast = n <= OFS_CK_FAST_WORDS ? (uint8_t)(l->x[6] >> CK_FAST_SHIFT) : 0;
	return true;
}

/* The cached flow of p->ix for the probe's key, or false when the cache does not hold it (a
 * stale entry for the key is noted in p->stale, so ck_store replaces it). */
static inline bool ck_find(struct ofs_worker *w, struct ck_probe *p, struct ofs_flow **f)
{
	p->stale = -1;
	return ck_find_at(w, p, 0, f) || ck_find_at(w, p, 1, f);
}

/* Remember f as the answer of p->ix for the probe's key (a miss too): in place of the key's
 * stale entry, else in the first free place, else in one of the two chosen by the worker's
 * miss count (pseudo-random: a fixed choice would make two keys that share both places evict
 * each other every time). */
static inline void ck_store(struct ofs_worker *w, const struct ck_probe *p, struct ofs_flow *f)
{
	if (unlikely((uintptr_t)f >> CK_FLOW_BITS))
		return;  /* not representable next to its priority: not cached */
	int place = p->stale >= 0 ? p->stale
		: !w->cache[p->idx[0]].tag ? 0
		: !w->cache[p->idx[1]].tag ? 1
		: (int)(w->cache_misses & 1);
	uint32_t line = p->idx[place];
	struct ofs_cache_line *l = &w->cache[line];
	unsigned n = p->ix->n_words, n1 = RTE_MIN(n, (unsigned)OFS_CK_LINE1_WORDS);
	uint64_t tag = ck_tag(p->ix);
	if (unlikely(ctr_is_dirty(w, line)))
		ck_flush_line(w, line);
	if (p->wide && unlikely(ctr_is_dirty(w, line + 1)))
		ck_flush_line(w, line + 1);
	l->tag = tag;
	l->x[0] = (uint64_t)(uintptr_t)f | (uint64_t)(f ? f->priority : 0) << CK_FLOW_BITS;
	memcpy(&l->x[1], p->w, n1 * sizeof(p->w[0]));
	if (n <= OFS_CK_FAST_WORDS) {
		int out = f && f->fast_out && !f->meter_id && !f->idle_timeout
			? ofs_port_idx(f->fast_out) : -1;
		l->x[6] = out >= 0 ? (uint64_t)(out + 1) << CK_FAST_SHIFT : 0;
	}
	if (p->wide) {
		l[1].tag = tag;
		memcpy(l[1].x, &p->w[OFS_CK_LINE1_WORDS], (n - n1) * sizeof(p->w[0]));
	}
}

/* Flow of p->ix for key: from the cache when it holds the same (epoch, compacted key) and the
 * answer is still valid (ck_find),
 * else from the wildcard lookup, then remembered (a miss too). The caller has entered the
 * table (reader_enter). */
static inline struct ofs_flow *ck_lookup(struct ofs_worker *w, const struct ofs_key *key,
					 struct ck_probe *p)
{
	struct ofs_flow *f;
	if (!p->ix)
		return NULL;
	if (unlikely(!p->cacheable)) {
		w->cache_misses++;
		return ofs_dp.lookup_ops->lookup(p->ix->lx, key);
	}
	if (ck_find(w, p, &f)) {
		w->cache_hits++;
		return f;
	}
	w->cache_misses++;
	f = ofs_dp.lookup_ops->lookup(p->ix->lx, key);
	ck_store(w, p, f);
	return f;
}

static struct ofs_flow *table_lookup(struct pkt_ctx *c, uint8_t t)
{
	struct ck_probe p;
	const struct ofs_table_view *v = __atomic_load_n(&ofs_dp.tables[t].view, __ATOMIC_ACQUIRE);
	if (v)
		reader_enter(c->w, t, v);
	ensure_parsed(c);
	ck_prepare(&c->key, v, c->w->cache_mask, &p);
	return ck_lookup(c->w, &c->key, &p);
}

/* first: table `table`'s flow when the caller already looked it up (burst pre-pass), or NULL */
static void run_pipeline(struct pkt_ctx *c, uint8_t table, struct ofs_flow *first)
{
	uint8_t t = table;
	uint64_t now = 0;
	bool pre = first != NULL || c->pre_looked_up;
	c->pre_looked_up = false;
	for (;;) {
		struct ofs_flow *f = pre ? first : table_lookup(c, t);
		pre = false;
		c->w->lookup_count[t]++;
		if (!f)
			break; /* table miss without a table-miss entry: drop */
		c->w->matched_count[t]++;
		uint32_t len = plen(c);
		/* sole writer: plain adds on the flow's hot line (the agent's aligned 64-bit
		 * reads are not torn); several workers: each its own counters (flowarena.h) */
		if (ofs_dp.n_workers == 1) {
			f->packets++;
			f->bytes += len;
		} else {
			struct ofs_flow_ctr *k = f->ctr + c->w->ctr_off;
			k->packets++;
			k->bytes += len;
		}
		if (unlikely(f->idle_timeout)) {
			if (!now) now = ofs_now_ns();
			f->last_used_ns = now;
		}
		c->table_id = t;
		c->cookie = f->cookie;
		c->pin_reason = f->table_miss ? OFPR_NO_MATCH : OFPR_ACTION;
		if (f->meter_id && !apply_meter(c, f->meter_id)) {
			c->dropped = true;
			break;
		}
		/* The common flow (f->fast_out): apply-actions = one output to a switch port,
		 * nothing else to do; what exec_actions + emit would do, without their
		 * generality, and without reading the action bytes. */
		if (f->fast_out && !c->aset_any && c->pending == NO_PORT && !c->csum_dirty &&
		    len >= 60 && c->m->nb_segs == 1) {
			uint32_t out = f->fast_out;
			int idx = ofs_port_idx(out);
			if (out != c->in_port && idx >= 0) {
				tx_one(c->w, idx, c->m);
				c->m = NULL;
				return;
			}
		}
		if (f->apply_len)
			exec_actions(c, f->apply, f->apply_len);
		if (!c->m || c->dropped)
			break;
		if (f->clear_actions) {
			memset(c->aset, 0, sizeof(c->aset));
			memset(c->aset_setf, 0, sizeof(c->aset_setf));
			c->aset_any = false;
		}
		if (f->write_len)
			write_actions(c, f->write, f->write_len);
		if (f->has_write_md)
			c->key.metadata = (c->key.metadata & ~f->md_mask) | (f->md_value & f->md_mask);
		if (f->goto_table == 0xff || f->goto_table <= t)
			break;
		/* a pending output:CONTROLLER is this flow's packet-in (its reason, table, cookie),
		 * sent before the next flow's match overwrites them (no mbuf copy: the data is
		 * copied into the packet-in either way) */
		if (unlikely(c->pending == OFPP_CONTROLLER))
			flush_pending(c);
		t = f->goto_table;
	}
	if (c->m && !c->dropped) {
		/* Pending apply-action output first, then the action set. */
		if (c->aset_any) {
			flush_pending(c);
			exec_action_set(c);
		}
		if (c->m && !c->dropped && c->pending != NO_PORT) {
			uint32_t p = c->pending;
			c->pending = NO_PORT;
			emit(c, p, c->pending_max_len, true);
		}
	}
	if (c->m) {
		rte_pktmbuf_free(c->m);
		c->m = NULL;
	}
}

/* po's actions on m, which holds po's frame (fuzz/fuzz_datapath.c passes a guarded one) */
static void run_packet_out(struct ofs_worker *w, struct ofs_pout *po, struct rte_mbuf *m)
{
	struct pkt_ctx *c = malloc(sizeof(*c));
	if (!c) {
		rte_pktmbuf_free(m);
		return;
	}
	memset(c, 0, sizeof(*c));
	c->w = w;
	c->m = m;
	c->in_port = po->in_port;
	c->key.in_port = htonl(po->in_port);
	c->key.in_phy_port = c->key.in_port;
	c->pin_reason = OFPR_ACTION;
	c->table_id = 0xff;
	c->cookie = ~0ull; /* OF1.3 7.4.1: packet-ins caused by a PACKET_OUT carry cookie -1 */
	reparse(c);
	exec_actions(c, po->actions, po->actions_len);
	if (c->m && !c->dropped && c->pending != NO_PORT)
		emit(c, c->pending, c->pending_max_len, true);
	if (c->m)
		rte_pktmbuf_free(c->m);
	free(c);
}

void ofs_run_packet_out(struct ofs_worker *w, struct ofs_pout *po)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(w->pool);
	if (!m)
		return;
	char *d = rte_pktmbuf_append(m, po->data_len);
	if (!d) {
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(d, po->data, po->data_len);
	run_packet_out(w, po, m);
}

/* ---- worker loop -------------------------------------------------------------------------- */
/* Burst pre-pass for one received packet: set up its context and parse it. Returns false
 * when the packet was consumed (port does not receive, cannot linearise). */
static bool prepare_rx(struct ofs_worker *w, int pidx, struct rte_mbuf *m, struct pkt_ctx *c)
{
	struct ofs_port *port = &ofs_dp.ports[pidx];
	w->port_stats[pidx].rx_packets++;
	w->port_stats[pidx].rx_bytes += rte_pktmbuf_pkt_len(m);
	if (port->config & OFPPC_NO_RECV) {
		rte_pktmbuf_free(m);
		return false;
	}
	if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) {
		rte_pktmbuf_free(m);
		return false;
	}
	/* Reset only what the pipeline reads before writing. */
	c->w = w;
	c->m = m;
	c->in_port = port->ofport;
	c->key.in_port = htonl(port->ofport);
	c->key.in_phy_port = c->key.in_port;
	c->key.metadata = 0;
	c->key.tunnel_id = 0;
	c->pending = NO_PORT;
	c->csum_dirty = false;
	c->csum_layout_proto = 0;
	c->dropped = false;
	c->depth = 0;
	c->aset_any = false;    /* aset/aset_setf are cleared by the first write_actions */
	c->pre_looked_up = false;
	reparse(c);
	return true;
}

/* Fail-standalone forwarding (no controller connected): learn the source MAC on the ingress
 * port, send to the port the destination was learnt on (drop when that is the ingress port),
 * flood when unknown or multicast. The table is the worker's own (no locks); a worker that
 * does not see a host's frames floods towards it. No aging: a moved host is relearnt by its
 * next frame. */
static void standalone_forward(struct pkt_ctx *c, int pidx)
{
	const uint8_t *eth = pdata(c);
	uint64_t *tab = c->w->mac_learned;
	c->pending = NO_PORT;
	if (plen(c) < 14) {  /* no Ethernet header to learn from or look up: flooded */
		emit(c, OFPP_FLOOD, 0, true);
		return;
	}
	uint64_t src = (uint64_t)rd16(eth + 6) << 32 | rd32(eth + 8);
	uint64_t dst = (uint64_t)rd16(eth) << 32 | rd32(eth + 2);
	if (!(eth[6] & 1))  /* unicast sources only */
		tab[rte_hash_crc_8byte(src, 0) & (OFS_MAC_TABLE - 1)] =
			src | (uint64_t)(pidx + 1) << 48;
	uint64_t e = tab[rte_hash_crc_8byte(dst, 0) & (OFS_MAC_TABLE - 1)];
	int out = !(eth[0] & 1) && (e & ((1ull << 48) - 1)) == dst ? (int)(e >> 48) - 1 : -1;
	if (out == pidx) {  /* the destination is behind the ingress port: filtered */
		rte_pktmbuf_free(c->m);
		c->m = NULL;
	} else {
		emit(c, out >= 0 ? ofs_dp.ports[out].ofport : OFPP_FLOOD, 0, true);
	}
}

/* Multi-table pipelines (goto-table, write-metadata): the next table's cache entry of each
 * packet whose table-0 flow goes on with nothing before the goto but write-metadata (no
 * apply-actions, no meter: nothing that could change the key first) follows from the flow,
 * so its line is prefetched for the whole burst here instead of being waited for one packet
 * at a time in run_pipeline, which looks it up again (this pass only warms lines). */
static __rte_noinline void prefetch_next_tables(struct ofs_worker *w, struct pkt_ctx *ctx,
						struct ofs_flow *const *first, const bool *live,
						uint16_t n)
{
	for (uint16_t j = 0; j < n; j++) {
		const struct ofs_flow *f = first[j];
		if (!live[j] || !f || f->goto_table == 0xff || f->apply_len || f->meter_id)
			continue;
		const struct ofs_table_view *v = __atomic_load_n(&ofs_dp.tables[f->goto_table].view,
								 __ATOMIC_ACQUIRE);
		if (!v || !v->cacheable)
			continue;
		struct ofs_key *k = &ctx[j].key;
		uint64_t md = k->metadata;
		if (f->has_write_md)
			k->metadata = (md & ~f->md_mask) | (f->md_value & f->md_mask);
		struct ck_probe p;
		ck_prepare(k, v, w->cache_mask, &p);
		k->metadata = md;
		ck_prefetch(w, &p, 0);
	}
}

/* A burst from one port, l3fwd style, in passes so each one's memory loads overlap: parse every
 * packet and hash its table-0 cache key (prefetch the entry's first place); probe it there
 * (prefetch the second place when it is not); probe the second places and look the misses up
 * in one batch (lookup_burst); send the hits on fast entries (counted at the hit,
 * ck_take_fast); prefetch the other flows' hot line and actions; run their pipelines. The view
 * and the flows stay valid: the worker reports its RCU quiescent state only after the burst. */
static void process_burst(struct ofs_worker *w, int pidx, struct rte_mbuf **pkts, uint16_t n,
			  struct pkt_ctx *ctx)
{
	struct ofs_flow *first[OFS_BURST];
	struct ck_probe probe[OFS_BURST];
	bool live[OFS_BURST];
	const struct ofs_key *mkeys[OFS_BURST];
	struct ofs_flow *mflows[OFS_BURST];
	uint16_t miss[OFS_BURST], n_miss = 0;
	const struct ofs_table_view *ix0 = __atomic_load_n(&ofs_dp.tables[0].view,
							    __ATOMIC_ACQUIRE);
	if (ix0)
		reader_enter(w, 0, ix0);
	if (__atomic_load_n(&ofs_dp.standalone, __ATOMIC_ACQUIRE)) {
		/* fail-standalone with no controller (ofswitch.h): a learning switch, tables
		 * untouched */
		for (uint16_t j = 0; j < n; j++)
			if (prepare_rx(w, pidx, pkts[j], &ctx[j]))
				standalone_forward(&ctx[j], pidx);
		return;
	}
	for (uint16_t j = 0; j < n && j < 4; j++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[j], void *));
	for (uint16_t j = 0; j < n; j++) {
		if (j + 4 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[j + 4], void *));
		live[j] = prepare_rx(w, pidx, pkts[j], &ctx[j]);
	}
	/* A pass of its own: the parser writes the key in narrow stores, and an 8-byte load of a
	 * word just written that way cannot be forwarded from the store buffer (it waits for the
	 * stores to retire); a burst later they have. */
	for (uint16_t j = 0; j < n; j++) {
		if (!live[j])
			continue;
		ck_prepare(&ctx[j].key, ix0, w->cache_mask, &probe[j]);
		if (probe[j].cacheable)
			ck_prefetch(w, &probe[j], 0);
	}
	/* the entries at their first place; the rest prefetch their second */
	bool second[OFS_BURST];
	for (uint16_t j = 0; j < n; j++) {
		first[j] = NULL;
		second[j] = false;
		if (!live[j])
			continue;
		ctx[j].pre_looked_up = true;
		if (!ix0 || !probe[j].cacheable)
			continue;
		probe[j].stale = -1;
		if (ck_find_at(w, &probe[j], 0, &first[j])) {
			w->cache_hits++;
			ck_take_fast(w, &probe[j], &ctx[j]);
			continue;
		}
		second[j] = true;
		ck_prefetch(w, &probe[j], 1);
	}
	for (uint16_t j = 0; j < n; j++) {
		if (!live[j] || !ix0)
			continue;
		if (probe[j].cacheable) {
			if (!second[j])
				continue;
			if (ck_find_at(w, &probe[j], 1, &first[j])) {
				w->cache_hits++;
				ck_take_fast(w, &probe[j], &ctx[j]);
				continue;
			}
		}
		w->cache_misses++;
		miss[n_miss] = j;
		mkeys[n_miss++] = &ctx[j].key;
	}
	if (n_miss) {
		ofs_dp.lookup_ops->lookup_burst(ix0->lx, mkeys, n_miss, mflows);
		for (uint16_t i = 0; i < n_miss; i++)  /* ck_store reads their priority */
			if (mflows[i])
				rte_prefetch0(mflows[i]);
		for (uint16_t i = 0; i < n_miss; i++) {
			uint16_t j = miss[i];
			struct ofs_flow *cached;
			first[j] = mflows[i];
			/* the same key twice in one burst: store it once */
			if (probe[j].cacheable && !ck_find(w, &probe[j], &cached))
				ck_store(w, &probe[j], first[j]);
			probe[j].fast = 0;  /* a miss goes the general way */
		}
	}
	/* Hits on fast entries (ofswitch.h), counted in their entry at the hit (ck_take_fast):
	 * the common flow's output, as run_pipeline's fast_out path sends it, without reading the
	 * flow's line. */
	for (uint16_t j = 0; j < n; j++) {
		if (!live[j] || !probe[j].fast)
			continue;
		w->lookup_count[0]++;
		w->matched_count[0]++;
		tx_one(w, probe[j].fast - 1, ctx[j].m);
		ctx[j].m = NULL;
		live[j] = false;
	}
	for (uint16_t j = 0; j < n; j++)
		if (live[j] && first[j])
			rte_prefetch0(first[j]);
	/* the actions of flows that are not the common one (fast_out), and the cold line of
	 * those that write metadata or an action set: one more dependent load per packet,
	 * overlapped across the burst */
	bool goes_on = false;
	for (uint16_t j = 0; j < n; j++) {
		const struct ofs_flow *f = first[j];
		if (!live[j] || !f || f->fast_out)
			continue;
		if (f->apply)
			rte_prefetch0(f->apply);
		if (f->has_write_md || f->write_len)
			rte_prefetch0((const char *)f + RTE_CACHE_LINE_SIZE);
		goes_on |= f->goto_table != 0xff;
	}
	if (unlikely(goes_on))
		prefetch_next_tables(w, ctx, first, live, n);
	for (uint16_t j = 0; j < n; j++)
		if (live[j])
			run_pipeline(&ctx[j], 0, first[j]);
}

/* Rig measurements (issue 44, OFS_RIG_BUCKETS): the bucket of a value v >= 1 in units. */
static inline unsigned rig_bucket(uint64_t units)
{
	unsigned b = 63 - (unsigned)__builtin_clzll(units);
	return b < OFS_RIG_BUCKETS ? b : OFS_RIG_BUCKETS - 1;
}

/* A loop pass longer than the floor: count it in the gap histogram (rare: not per pass). */
static __rte_noinline void rig_note_gap(struct ofs_worker *w, uint64_t gap_tsc)
{
	w->gap_hist[rig_bucket(gap_tsc / w->gap_floor_tsc)]++;
}

int ofs_worker_main(void *arg)
{
	struct ofs_worker *w = arg;
	struct rte_mbuf *pkts[OFS_BURST];
	struct pkt_ctx *c = rte_zmalloc("ctx", sizeof(*c) * OFS_BURST, RTE_CACHE_LINE_SIZE);
	if (!c) {  /* start-up of the worker: fail loudly and stop the switch */
		fprintf(stderr, "ofswitch: worker %u: no memory for its packet contexts\n", w->idx);
		ofs_dp.force_quit = true;
		return -1;
	}
	unsigned idle = 0;
	const uint64_t drain_tsc = rte_get_tsc_hz() * OFS_TX_DRAIN_US / 1000000;
	const uint64_t word_tsc = RTE_MAX(rte_get_tsc_hz() / 1000000 * OFS_CTR_SWEEP_US /
					  w->ctr_words, (uint64_t)1);
	uint64_t last_drain = rte_rdtsc(), pass_tsc = last_drain;
	w->gap_floor_tsc = RTE_MAX(rte_get_tsc_hz() >> 16, (uint64_t)1);  /* ~15 us */
	w->ctr_next_tsc = last_drain;
	w->ctr_off = (size_t)w->idx * ofs_arena_ctr_stride;
	rte_rcu_qsbr_thread_register(ofs_dp.qsbr, w->idx);
	rte_rcu_qsbr_thread_online(ofs_dp.qsbr, w->idx);
	while (!ofs_dp.force_quit) {
		unsigned got = 0;
		for (unsigned i = 0; i < w->n_rx_ports; i++) {
			int pidx = w->rx_ports[i];
			uint16_t n = port_rx(w, pidx, pkts);
			got += n;
			if (unlikely(n == OFS_BURST)) {  /* the ring holds more: a run of full bursts */
				w->full_run[pidx]++;
			} else if (unlikely(w->full_run[pidx])) {
				w->backlog_hist[rig_bucket(w->full_run[pidx])]++;
				w->full_run[pidx] = 0;
			}
			if (n)
				process_burst(w, pidx, pkts, n, c);
		}
		if (w->idx == 0) {
			void *objs[8];
			unsigned n = rte_ring_sc_dequeue_burst(ofs_dp.pout_ring, objs, 8, NULL);
			for (unsigned i = 0; i < n; i++) {
				ofs_run_packet_out(w, objs[i]);
				free(objs[i]);
			}
			got += n;
		}
		/* TX drain (DPDK l2fwd's BURST_TX_DRAIN_US): a full tx buffer goes out by itself;
		 * partial ones are flushed when the loop found nothing to do (no latency added at
		 * low rates) or every OFS_TX_DRAIN_US, not after every poll. */
		uint64_t now_tsc = rte_rdtsc();
		if (unlikely(now_tsc - pass_tsc >= w->gap_floor_tsc))
			rig_note_gap(w, now_tsc - pass_tsc);
		if (got)
			w->busy_tsc += now_tsc - pass_tsc;
		else
			w->idle_tsc += now_tsc - pass_tsc;
		pass_tsc = now_tsc;
		if (got == 0 || now_tsc - last_drain >= drain_tsc) {
			last_drain = now_tsc;
			for (unsigned p = 0; p < ofs_dp.n_ports; p++)
				port_tx_flush(w, (int)p);
		}
		ofs_reader_leave_all(w);
		ctr_sweep(w, now_tsc, word_tsc);
		rte_rcu_qsbr_quiescent(ofs_dp.qsbr, w->idx);
		if (got == 0 && ofs_dp.idle_sleep_us) {
			if (++idle > 100) {
				/* nothing left pending while asleep (ofs_counters_sync does not wait
				 * for a worker without pending counts) */
				if (w->ctr_dirty_lines)
					ctr_flush_all(w);
				/* offline while asleep: a grace period does not wait for the nap */
				rte_rcu_qsbr_thread_offline(ofs_dp.qsbr, w->idx);
				usleep(ofs_dp.idle_sleep_us);
				rte_rcu_qsbr_thread_online(ofs_dp.qsbr, w->idx);
				uint64_t woke = rte_rdtsc();  /* the nap is idle time */
				w->idle_tsc += woke - pass_tsc;
				pass_tsc = woke;
			}
		} else {
			idle = 0;
		}
	}
	for (unsigned p = 0; p < ofs_dp.n_ports; p++)
		port_tx_flush(w, (int)p);
	ctr_flush_all(w);
	rte_rcu_qsbr_thread_offline(ofs_dp.qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(ofs_dp.qsbr, w->idx);
	rte_free(c);
	return 0;
}
