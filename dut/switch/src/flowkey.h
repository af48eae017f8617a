/* flowkey.h -- the packed flow key of ofswitch and the OXM <-> key mapping.
 *
 * Goal: an OpenFlow 1.3 match is exactly (value, mask) over struct ofs_key, so a wildcard
 * lookup backend (the simple list here, dut/classifier later) only compares bytes and never
 * knows about protocols.
 *
 * Invariants:
 *  - Every field is stored in network byte order with the width of its OXM payload (so an OXM
 *    value/mask is memcpy'd to key offset), except vlan_vid, which holds OFPVID_PRESENT|vid
 *    for a tagged packet and 0 for an untagged one, exactly the OXM's encoding.
 *  - A field a packet does not carry is zero in the key. Matches are only accepted with their
 *    prerequisites present (ofs_match_parse checks them), so "zero because absent" never
 *    matches a rule that needs the field.
 *  - TCP/UDP/SCTP ports share tp_src/tp_dst and ICMPv4/ICMPv6 share icmp_type/code: the
 *    prerequisite on ip_proto tells them apart.
 *  - sizeof(struct ofs_key) is a multiple of 8: masked compares run on uint64_t words.
 *
 * Concurrency: pure functions on caller-owned memory; safe from any thread.
 */
#ifndef OFB_FLOWKEY_H
#define OFB_FLOWKEY_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

struct ofs_key {
	uint32_t in_port;
	uint32_t in_phy_port;
	uint64_t metadata;
	uint64_t tunnel_id;
	uint8_t eth_dst[6];
	uint8_t eth_src[6];
	uint16_t eth_type;
	uint16_t vlan_vid;
	uint8_t vlan_pcp;
	uint8_t ip_dscp;
	uint8_t ip_ecn;
	uint8_t ip_proto;
	uint32_t ipv4_src;
	uint32_t ipv4_dst;
	uint16_t tp_src;
	uint16_t tp_dst;
	uint8_t icmp_type;
	uint8_t icmp_code;
	uint16_t arp_op;
	uint32_t arp_spa;
	uint32_t arp_tpa;
	uint8_t arp_sha[6];
	uint8_t arp_tha[6];
	uint8_t ipv6_src[16];
	uint8_t ipv6_dst[16];
	uint32_t ipv6_flabel;
	uint32_t mpls_label;
	uint8_t mpls_tc;
	uint8_t mpls_bos;
	uint8_t pbb_isid[3];
	uint8_t pad0;
	uint16_t ipv6_exthdr;
	/* ---- byte 128: fields after this line are outside OFS_KEY_CLS_LEN (the part the
	 * dut/classifier backend indexes); rules that match on them take the slow list. */
	uint8_t nd_target[16];
	uint8_t nd_sll[6];
	uint8_t nd_tll[6];
	uint8_t pad1[4];
} __attribute__((aligned(8)));

#define OFS_KEY_WORDS (sizeof(struct ofs_key) / 8)
#define OFS_KEY_CLS_LEN 128 /* leading bytes indexed by the classifier backend */
_Static_assert(offsetof(struct ofs_key, nd_target) == OFS_KEY_CLS_LEN, "key layout");
_Static_assert(sizeof(struct ofs_key) % 8 == 0, "key size");

/* Where the parser found each layer in the frame; -1 = absent. An offset is set only when its
 * header is wholly inside the frame (issue 37: a header the frame cuts short is absent, its
 * match fields too, as in Open vSwitch): VLAN tag, MPLS shim and PBB I-TAG 4 bytes (the tag
 * also with the ethertype behind it), IPv4 its IHL (>= 20), IPv6 40, ARP 28, L4 at least
 * ofs_l4_min_len(l4_proto). ofs_layout_ok() states it; the debug build asserts it after every
 * parse and action (datapath.c). Every action still checks the bytes it touches against the
 * frame's length. */
struct ofs_layout {
	int16_t l2_end;    /* offset of the ethertype that follows MACs and VLAN tags */
	int16_t vlan_ofs;  /* offset of the outermost VLAN TPID */
	int16_t mpls_ofs;  /* offset of the first MPLS shim */
	int16_t pbb_ofs;   /* offset of the I-TAG TCI (after the 0x88e7 ethertype) */
	int16_t l3_ofs;    /* IPv4/IPv6/ARP header */
	int16_t l4_ofs;    /* TCP/UDP/SCTP/ICMP header */
	uint8_t l4_proto;  /* ip_proto of l4 (after IPv6 ext headers) */
};

/* Fill key (except in_port/metadata/tunnel_id, which the caller sets) from a frame. */
void ofs_key_extract(const uint8_t *pkt, uint32_t len, struct ofs_key *key,
		     struct ofs_layout *lay);

/* The bytes of an L4 header that must be in the frame for lay.l4_ofs (and the key's L4
 * fields) to be set: TCP 20, UDP 8, SCTP 12 (their fixed headers, as OVS), ICMPv4/ICMPv6 4
 * (type, code, checksum); 0 for another protocol (only its start is known; the offset is then
 * at most the frame's length). */
static inline uint32_t ofs_l4_min_len(uint8_t proto)
{
	switch (proto) {
	case 6: return 20;
	case 17: return 8;
	case 132: return 12;
	case 1: case 58: return 4;
	default: return 0;
	}
}

/* Is every offset of lay a header wholly inside the frame pkt[0..len) (the rule above)? */
bool ofs_layout_ok(const uint8_t *pkt, uint32_t len, const struct ofs_layout *lay);

/* OXM field description: where it lives in the key and what it needs. */
struct ofs_field_info {
	uint16_t key_ofs;
	uint8_t len;        /* OXM payload length */
	bool maskable;
};
extern const struct ofs_field_info ofs_fields[40];

/* A parsed match: value/mask over the key plus which OXM fields are present. */
struct ofs_match {
	struct ofs_key value;
	struct ofs_key mask;
	uint64_t fields;        /* bit i set: OXM field i present */
};

/* Parse an ofp_match (type, length, oxm_fields). buf points at the ofp_match; avail = bytes
 * available. On success returns 0 and sets *padded_len (match length rounded up to 8). On
 * failure returns (type << 16 | code) of the OFPT_ERROR to send. */
uint32_t ofs_match_parse(const uint8_t *buf, size_t avail, struct ofs_match *m,
			 size_t *padded_len);

/* Check the prerequisites of every field in m (OF1.3 table 12). 0 or error as above. */
uint32_t ofs_match_prereq(const struct ofs_match *m);
/* Are field f's prerequisites (OF1.3 table 12) met by what m says of the packet (the fields
 * m has, with their values)? Also for set-field (7.2.5): m then describes the packet at the
 * action (the flow's match as changed by earlier push/pop/set actions). */
bool ofs_field_prereq_ok(const struct ofs_match *m, int f);

/* Parse one OXM TLV as used by set-field: field id, value (no mask allowed). Returns 0 or error. */
uint32_t ofs_setfield_parse(const uint8_t *oxm, size_t len, int *field);

static inline bool ofs_key_matches(const struct ofs_key *k, const struct ofs_match *m)
{
	const uint64_t *a = (const uint64_t *)k, *v = (const uint64_t *)&m->value,
		       *mk = (const uint64_t *)&m->mask;
	for (size_t i = 0; i < OFS_KEY_WORDS; i++)
		if ((a[i] & mk[i]) != v[i])
			return false;
	return true;
}

#define OFS_ERR(type, code) ((uint32_t)(type) << 16 | (uint32_t)(code))

#endif
