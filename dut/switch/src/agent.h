/* agent.h -- OpenFlow message handling of ofswitch, callable without the network loop
 * (unit tests drive ofs_handle_msg directly). Agent thread only. */
#ifndef OFB_AGENT_H
#define OFB_AGENT_H
#include <stddef.h>
#include <stdint.h>

struct obuf { uint8_t *data; size_t len, cap; };
void ob_init(struct obuf *b);
void ob_free(struct obuf *b);
uint8_t *ob_put(struct obuf *b, size_t n);

struct ofs_pin;
/* Handle one framed message (len >= 8, len == header length). Replies are appended to out.
 * Returns -1 when the session must be closed (failed version negotiation). */
int ofs_handle_msg(struct obuf *out, const uint8_t *msg, size_t len);
void ofs_send_error(struct obuf *out, const uint8_t *msg, size_t len, uint32_t err);
void ofs_send_hello(struct obuf *out);
void ofs_send_packet_in(struct obuf *out, const struct ofs_pin *pin);
void ofs_expire_flows(struct obuf *out, uint64_t now_ns);
void ofs_commit(void);
void ofs_send_port_status(struct obuf *out, unsigned port_idx, uint8_t reason);
void ofs_agent_reset_session(void);
#endif
