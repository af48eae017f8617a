/* agent.h -- the OpenFlow 1.3 agent of ofswitch as the rest of the switch (and tests, fuzzers)
 * see it. Agent thread only.
 *
 * The entry point: ofs_handle_msg() handles ONE complete OpenFlow message received on a
 * controller connection, in the session chosen with ofs_session_use (a default session when
 * none was), and appends every reply (and OFPT_ERROR, and the asynchronous messages it causes,
 * e.g. FLOW_REMOVED of a DELETE) to an output buffer; agent_conn.c routes them to the
 * connections. It needs no socket and no running workers (ofs_dp.qsbr NULL: frees are
 * immediate), so unit tests and a fuzz harness drive the real parse/handle path through it.
 * Which file handles what: agent_internal.h.
 *
 * What the agent advertises is what it accepts: the table-features reply lists, per table,
 * the instructions, next tables, actions, match/wildcard fields and set-fields that the
 * FLOW_MOD validation (ofs_actions_check, instruction parsing, ofs_setfield_parse) enforces;
 * setting table features is refused (TABLE_FEATURES_FAILED/EPERM). No OpenFlow queues are
 * configured: set_queue is accepted and has no effect, queue stats and queue-get-config answer
 * an empty list for OFPP_ANY or a real port (BAD_PORT otherwise; BAD_QUEUE for a named queue).
 * Multipart replies are split under 64 KiB with REPLY_MORE; one entry never straddles two.
 * Byte order: message buffers are wire order (big-endian).
 */
#ifndef OFB_AGENT_H
#define OFB_AGENT_H
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "ofmsg.h"   /* struct obuf, the output buffer */

struct ofs_pin;
/* THE entry point: handle one framed message from the controller connection (len >= 8,
 * len == the header's length field). Replies are appended to out. Returns -1 when the
 * session must be closed (failed version negotiation), else 0. */
int ofs_handle_msg(struct obuf *out, const uint8_t *msg, size_t len);
void ofs_send_error(struct obuf *out, const uint8_t *msg, size_t len, uint32_t err);
void ofs_send_hello(struct obuf *out);
void ofs_send_packet_in(struct obuf *out, const struct ofs_pin *pin);
void ofs_expire_flows(struct obuf *out, uint64_t now_ns);
/* Make the staged flow-table changes visible (flowtable.h); removed flows, groups and
 * meters are freed after a grace period (agent_flows.c). */
void ofs_commit(void);
void ofs_send_port_status(struct obuf *out, unsigned port_idx, uint8_t reason);
/* Kernel-backed ports (agent_ports.c): p->kif from the ethdev's driver and devargs
 * ("net_af_xdp" + "iface=v1,..." -> "v1"; other drivers: ""), and that interface's link:
 * 1 running (IFF_RUNNING: up, carrier), 0 not (or gone), -1 unknown (p->kif empty, error). */
void ofs_port_set_kif(struct ofs_port *p, const char *driver, const char *devargs);
int ofs_kif_link_up(const struct ofs_port *p);
/* Sessions (agent_session.c): one per controller connection. A message is handled in the
 * session last chosen with ofs_session_use (a default one exists for tests and fuzzers). */
struct ofs_session;
#ifndef OFS_MAX_CONTROLLERS
#define OFS_MAX_CONTROLLERS 4
#endif
/* A fresh session for a new connection (role EQUAL, default async config), or NULL when
 * OFS_MAX_CONTROLLERS + 1 are open. */
struct ofs_session *ofs_session_open(void);
void ofs_session_close(struct ofs_session *s);
void ofs_session_use(struct ofs_session *s);  /* NULL: the default session */
/* Has s done the HELLO exchange? */
bool ofs_session_ready(const struct ofs_session *s);
/* Does s want this asynchronous message (PACKET_IN, PORT_STATUS, FLOW_REMOVED: the only
 * types the agent sends unasked), given its role and SET_ASYNC masks (OF1.3.5 6.3.6, 7.3.10)? */
bool ofs_session_wants(const struct ofs_session *s, const uint8_t *msg);
/* Reset the current session (a new connection on it). */
void ofs_agent_reset_session(void);
#endif
