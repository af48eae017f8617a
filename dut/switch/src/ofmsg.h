/* ofmsg.h -- OpenFlow message framing (ofmsg.c): the output buffer every reply and
 * asynchronous message is written to, and a message's begin/end.
 *
 * Design: an obuf is one growing byte buffer (doubling; ob_put hands out zeroed bytes). A
 * message is begun with ofs_msg_begin (its header: version, type, xid; the length left 0),
 * its body appended with ob_put, and closed with ofs_msg_end, which writes the header's
 * length from the bytes appended since: so a handler never counts bytes by hand, and a
 * message built in pieces (multipart entries, an error echoing the request) is framed once.
 * Invariants: every message ofs_msg_end closes is at most OFS_MSG_MAX bytes (one over is
 * dropped, never cut: a cut length would desynchronise the controller's stream; the
 * sanitizer build aborts, OFS_CHECK_INVARIANTS). Out of memory: ob_put aborts (without the
 * buffer not even an error could be sent: agent_internal.h's one policy).
 * Threads: agent thread only (each connection has its own obuf in agent_conn.c).
 * Byte order: the bytes are wire order (big-endian), written through wr16/32/64 (ofp13.h).
 * This is the bottom of the agent's files: it calls none of them.
 */
#ifndef OFB_OFMSG_H
#define OFB_OFMSG_H
#include <stddef.h>
#include <stdint.h>

struct obuf { uint8_t *data; size_t len, cap; };
void ob_init(struct obuf *b);
void ob_free(struct obuf *b);
/* n more bytes (zeroed) at the end of b; their address (valid until the next ob_put). */
uint8_t *ob_put(struct obuf *b, size_t n);

/* The longest OpenFlow message (its header's 16-bit length) and the longest multipart reply
 * entry: one reply of OFS_MSG_MAX bytes less its 16-byte ofp_multipart_reply header. An entry
 * never straddles two replies (OF1.3.5 7.3.5), so what a reply entry would echo (a flow's
 * match and instructions, a group's buckets, a meter's bands) is refused at FLOW_MOD /
 * GROUP_MOD / METER_MOD time when its entry could not fit (agent_flows.c, agent_groups_meters.c). */
#define OFS_MSG_MAX 65535u
#define OFS_MP_ENTRY_MAX (OFS_MSG_MAX - 16u)
/* Checked invariants (the sanitizer build): every message ofs_msg_end closes is at most
 * OFS_MSG_MAX bytes and what the agent hands to a connection is a sequence of whole messages
 * (agent_conn.c route); a breach aborts with a message there, while the release build drops
 * the message and logs it (a cut length would desynchronise the controller's stream). */
#if defined(__SANITIZE_ADDRESS__)
#define OFS_CHECK_INVARIANTS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OFS_CHECK_INVARIANTS 1
#endif
#endif
#ifndef OFS_CHECK_INVARIANTS
#define OFS_CHECK_INVARIANTS 0
#endif
/* Start a message of this type in b; returns its offset for msg_end (which writes length). */
size_t ofs_msg_begin(struct obuf *b, uint8_t type, uint32_t xid);
void ofs_msg_end(struct obuf *b, size_t at);
/* A whole message: header + n bytes of body. */
void ofs_msg_simple(struct obuf *out, uint8_t type, uint32_t xid, const void *body, size_t n);
/* An agent invariant breach ("Checked invariants" above): printed; the sanitizer build then
 * aborts. */
void ofs_invariant_failed(const char *what, unsigned type, size_t len);
/* Messages dropped by ofs_msg_end for being over 65535 bytes (the stats socket shows it). */
extern uint64_t ofs_msgs_dropped_too_long;

/* duration_sec, duration_nsec (8 bytes, wire order) since since_ns (flow and meter stats) */
void ofs_put_duration(uint8_t *p, uint64_t since_ns);

#endif
