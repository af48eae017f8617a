/* datapath_internal.h -- what the datapath's units share: the packet context and the calls
 * between the units (private to dut/switch/src and its C tests; the agent sees ofswitch.h).
 *
 * A packet's way through a worker, and the unit of each step:
 *   datapath.c    the worker loop: rx burst, the burst's table-0 pre-pass (cache probes in
 *                 passes, the misses looked up in one batch, fast entries sent at once), the
 *                 pipeline (tables, goto, metadata, the action set at the end), PACKET_OUT, tx
 *                 buffering and drain
 *   flowcache.h/.c  the worker's exact-match flow cache in front of each table's lookup, and the
 *                 counts its fast entries hold until a sweep flushes them to the flow
 *   actions.c     OpenFlow actions on one packet: output (emit, to the controller, FLOOD/ALL,
 *                 TABLE), group buckets, set-field, push/pop of VLAN/MPLS/PBB, TTLs, action set
 *   pkt_csum.c    a rewritten packet's checksums: the full recomputation before it leaves
 *                 (fix_checksums) and the RFC 1624 updates in place of a set-field (csum.h holds
 *                 the byte-level sums)
 *   meter.c       meter bands: token buckets under the meter's spinlock, drop or DSCP remark
 *
 * The packet context (struct pkt_ctx) is the state of one packet between actions: its mbuf, its
 * key and layout (parsed lazily: parse_stale / key_stale, ensure_parsed / ensure_layout), the
 * output not yet emitted (one output is sent without a copy), the action set and the checksum
 * debt (csum_dirty). Each unit reads and writes it only through the rules written beside its
 * fields.
 *
 * Inlining (the fast path is as it was when datapath.c was one file): what the compiler inlined
 * there is static inline here or in flowcache.h (the context helpers, the action loop, the
 * pending output, fix_checksums' test, the cache probe); a call between units is one it kept
 * out of line before too (emit, exec_one, tx_one, fix_checksums' body, the cache flush), or a
 * rare one (a meter). suites/switch/test_pipeline_bench.py measures it.
 *
 * Threads: every function here runs on a worker lcore (or a C test without EAL), with the
 * tables' reader protocol entered by the caller (datapath.c); none takes a lock but a meter's.
 */
#ifndef OFS_DATAPATH_INTERNAL_H
#define OFS_DATAPATH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <rte_mbuf.h>
#include "ofswitch.h"
#include "csum.h"

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
static inline void layout_assert(struct pkt_ctx *c, const char *where)
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

static inline void reparse(struct pkt_ctx *c)
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

/* Offset of the TTL (hop limit) of the IP header at l3, by its version nibble, or -1 when
 * there is none in the frame. */
static inline int ip_ttl_ofs(struct pkt_ctx *c, int l3, uint16_t *et_out)
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

/* ---- datapath.c --------------------------------------------------------------------------- */
/* Buffer m for transmission on port pidx (counted; dropped when the port is down or NO_FWD). */
void ofs_dp_tx_one(struct ofs_worker *w, int pidx, struct rte_mbuf *m);
/* The pipeline from table 0 for a packet a PACKET_OUT sent to OFPP_TABLE. */
void ofs_dp_resubmit(struct pkt_ctx *c);

/* ---- meter.c ------------------------------------------------------------------------------ */
/* The packet through meter meter_id: false when a band drops it (or the meter is gone). */
bool ofs_dp_meter_apply(struct pkt_ctx *c, uint32_t meter_id);

/* ---- pkt_csum.c: checksums of a rewritten packet ------------------------------------------ */
/* Checksums updated in place (RFC 1624), as Open vSwitch's packet_set_* do. A set-field of an IPv4/IPv6 header field or a TCP/UDP port changes a few 16-bit words that a
 * checksum covers: the checksum is updated from their old and new values instead of being
 * recomputed over the packet (fix_checksums), which would read back the bytes the set-field
 * just stored (a store-forwarding stall per word). On a packet whose checksums were right the
 * result is byte for byte the full recomputation's (test_actions.c checks both ways on every
 * field and protocol); a wrong checksum stays wrong by the same amount, as in OVS. The IPv4
 * header's own checksum can always be updated so (or is left alone, as fix_checksums leaves it,
 * when the header is not whole in the frame); l4_csum_replace returns false where it cannot
 * stand in for fix_checksums exactly (the caller marks the packet csum_dirty then): SCTP's CRC
 * over changed ports, ip_proto rewritten earlier (csum_layout_proto). */

/* The full recomputation of the checksums a rewrite left wrong (c->csum_dirty). */
void ofs_csum_fix(struct pkt_ctx *c);
static inline void fix_checksums(struct pkt_ctx *c)
{
	if (c->csum_dirty)
		ofs_csum_fix(c);
}

/* Is the IPv4 header at l3 whole in the frame? fix_checksums leaves one that is not alone,
 * so an in-place update does too. */
static inline bool ip4_whole(struct pkt_ctx *c, const uint8_t *ip)
{
	return (uint32_t)c->lay.l3_ofs + (ip[0] & 0xf) * 4u <= plen(c);
}

/* The IPv4 header's own checksum, after n bytes of it changed (old -> new). */
static inline void ip4_csum_replace(struct pkt_ctx *c, const uint8_t *old, const uint8_t *new,
				    uint32_t n)
{
	uint8_t *ip = pdata(c) + c->lay.l3_ofs;
	if (ip4_whole(c, ip))
		csum_replace(ip + 10, old, new, n);
}

/* An IPv4 header's first word (version, IHL, DSCP, ECN) set to w, its checksum updated. */
void ofs_csum_ip4_set_word0(struct pkt_ctx *c, uint16_t w);

/* The L4 checksum (TCP, UDP, ICMPv6), after n bytes it covers changed (old -> new): the IP
 * addresses of its pseudo-header (pseudo) or a port (!pseudo). Mirrors fix_checksums' tests of
 * what the frame holds. False where it cannot stand in for fix_checksums exactly (the caller
 * marks the packet csum_dirty then). */
bool ofs_csum_l4_update(struct pkt_ctx *c, bool pseudo, const uint8_t *old, const uint8_t *new,
			uint32_t n);
static inline bool l4_csum_replace(struct pkt_ctx *c, bool pseudo, const uint8_t *old,
				   const uint8_t *new, uint32_t n)
{
	if (c->csum_layout_proto)
		return false;  /* ip_proto was rewritten: the L4 bytes are still the old protocol's */
	return ofs_csum_l4_update(c, pseudo, old, new, n);
}

/* Pad a frame to the Ethernet minimum (60 bytes without FCS) as a NIC would on the wire: a pop
 * can leave a frame shorter than what the sender gave us (ofs_act_emit and pipecache.h's
 * programs, before a port). */
static inline void ofs_pad_min(struct pkt_ctx *c)
{
	if (plen(c) < 60 && c->m->nb_segs == 1) {
		uint32_t pad = 60 - plen(c);
		uint8_t *z = (uint8_t *)rte_pktmbuf_append(c->m, (uint16_t)pad);
		if (z)
			memset(z, 0, pad);
	}
}

/* ---- actions.c ---------------------------------------------------------------------------- */
/* Send the packet to one port (OpenFlow port number, or CONTROLLER, TABLE, FLOOD, ALL,
 * IN_PORT); use_original hands over c->m itself, else a copy goes. */
void ofs_act_emit(struct pkt_ctx *c, uint32_t port, uint16_t max_len, bool use_original);
/* One action (its header at a, length already checked): false when the packet stops. */
bool ofs_act_exec_one(struct pkt_ctx *c, const uint8_t *a);
/* One set-field (the OXM TLV at oxm) as exec_one runs it (for the C tests). */
void ofs_act_set_field(struct pkt_ctx *c, const uint8_t *oxm);
/* The action set (written by write_actions) in OF1.3 5.10's order. */
void ofs_act_exec_action_set(struct pkt_ctx *c);

/* Emit the output an OUTPUT action held back (a copy: the packet goes on). */
static inline void flush_pending(struct pkt_ctx *c)
{
	if (c->pending != NO_PORT) {
		uint32_t p = c->pending;
		c->pending = NO_PORT;
		ofs_act_emit(c, p, c->pending_max_len, false);
	}
}

/* An action list (apply-actions, a bucket, a PACKET_OUT) until its end or the packet stops. */
static inline void exec_actions(struct pkt_ctx *c, const uint8_t *a, uint32_t len)
{
	uint32_t o = 0;
	while (o + 4 <= len && c->m && !c->dropped) {
		uint16_t l = rd16(a + o + 2);
		if (l < 8 || o + l > len)
			break;
		if (!ofs_act_exec_one(c, a + o))
			break;
		o += l;
	}
}

/* Write-actions: each action into its slot of the action set (set-fields one per field). */
static inline void write_actions(struct pkt_ctx *c, const uint8_t *a, uint32_t len)
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

#endif
