/* csum.h -- the Internet checksum (RFC 1071) of the switch's set-field and TTL actions.
 *
 * Goal: a full recomputation of an IPv4 header's and an L4 checksum cheap enough for every
 * rewritten packet (64-byte frames at line rate): words, not bytes.
 * Invariants: csum_add returns an unfolded 32-bit accumulator in the big-endian value domain
 * (the value of each 16-bit word as the wire has it), so callers may add pseudo-header values
 * (protocol, length) to it before csum_fold; csum_fold(csum_add(s, p, n)) equals the fold of
 * s plus the bytes summed one big-endian word at a time (test_unit.c test_checksums checks it
 * against that reference for every length and alignment).
 * Byte order: any host (rte_be_to_cpu_16). Concurrency: pure functions.
 * Limits: n < 2^32 bytes (the 64-bit accumulator cannot overflow).
 */
#ifndef OFB_CSUM_H
#define OFB_CSUM_H

#include <stdint.h>
#include <string.h>
#include <rte_byteorder.h>

/* s plus the one's complement sum of n bytes at p as big-endian 16-bit words (an odd last
 * byte is the high byte of a word), not yet folded: callers add pseudo-header values and fold
 * (csum_fold). The bytes are summed as native 32-bit words into 64 bits, folded to 16 and
 * byte-swapped: the one's complement sum is the same in either byte order (RFC 1071 2.B). */
static inline uint32_t csum_add(uint32_t s, const uint8_t *p, uint32_t n)
{
	uint64_t sum = 0;
	for (; n >= 8; p += 8, n -= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		sum += (v & 0xffffffffu) + (v >> 32);
	}
	for (; n >= 2; p += 2, n -= 2) {  /* at most 3 words left */
		uint16_t v;
		memcpy(&v, p, 2);
		sum += v;
	}
	if (n) {
		uint16_t v = 0;
		memcpy(&v, p, 1);  /* the word's first byte, the second 0 */
		sum += v;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return s + rte_be_to_cpu_16((uint16_t)sum);
}

/* The checksum field's value of accumulator s: its end-around-carry fold, complemented. */
static inline uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* In-place updates (RFC 1624 eqn. 3), as Open vSwitch's packet_set_* do them. */

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

#endif
