/* ofmsg.c -- OpenFlow message framing for the agent (ofmsg.h): the growing output buffer, a
 * message's header and its length at the end, and the invariant a message over 64 KiB
 * breaks. Every agent file writes its messages through here, and nothing here calls back
 * into the agent's files (no circle: agent_internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ofswitch.h"
#include "ofmsg.h"

void ob_init(struct obuf *b) { b->data = NULL; b->len = b->cap = 0; }
void ob_free(struct obuf *b) { free(b->data); ob_init(b); }
uint8_t *ob_put(struct obuf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 4096;
		while (nc < b->len + n) nc *= 2;
		uint8_t *d = realloc(b->data, nc);
		if (!d) abort();  /* not even an error could be sent: see agent_internal.h */
		b->data = d;
		b->cap = nc;
	}
	uint8_t *p = b->data + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}

size_t ofs_msg_begin(struct obuf *b, uint8_t type, uint32_t xid)
{
	size_t at = b->len;
	uint8_t *h = ob_put(b, OFP_HDR_LEN);
	h[0] = OFP13_VERSION; h[1] = type; wr32(h + 4, xid);
	return at;
}

uint64_t ofs_msgs_dropped_too_long;

void ofs_invariant_failed(const char *what, unsigned type, size_t len)
{
	fprintf(stderr, "ofswitch: agent invariant: %s (message type %u, %zu bytes)\n", what, type,
		len);
	if (OFS_CHECK_INVARIANTS)
		abort();
}

/* Closes the message begun at `at`: its header length is its bytes. A message over
 * OFS_MSG_MAX cannot be framed (a 16-bit length): it is never cut, it is dropped (and the
 * sanitizer build aborts): the handlers refuse what could lead there (agent_internal.h). */
void ofs_msg_end(struct obuf *b, size_t at)
{
	size_t n = b->len - at;
	if (n > OFS_MSG_MAX) {
		ofs_msgs_dropped_too_long++;
		ofs_invariant_failed("message over 65535 bytes dropped", b->data[at + 1], n);
		b->len = at;
		return;
	}
	wr16(b->data + at + 2, (uint16_t)n);
}

void ofs_msg_simple(struct obuf *out, uint8_t type, uint32_t xid, const void *body, size_t n)
{
	size_t at = ofs_msg_begin(out, type, xid);
	if (n)
		memcpy(ob_put(out, n), body, n);
	ofs_msg_end(out, at);
}

void ofs_put_duration(uint8_t *p, uint64_t since_ns)
{
	uint64_t d = ofs_now_ns() - since_ns;
	wr32(p, (uint32_t)(d / 1000000000ull));
	wr32(p + 4, (uint32_t)(d % 1000000000ull));
}
