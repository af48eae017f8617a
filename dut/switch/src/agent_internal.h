/* agent_internal.h -- what the files of the OpenFlow agent share (agent thread only; nothing
 * here is for the datapath or main.c, which use agent.h and ofswitch.h).
 *
 * Where each concern lives (one OpenFlow message enters at ofs_handle_msg in agent.c):
 *   agent.c            the entry point: version check, slave refusal, length check, and a
 *                      table of handlers indexed by message type
 *   ofmsg.c            framing: the output buffer, ofs_msg_begin/end (ofmsg.h)
 *   agent_error.c      the one place that builds OFPT_ERROR
 *   agent_session.c    sessions (one per controller connection) and handshake: HELLO
 *                      (version negotiation), ECHO, FEATURES, GET/SET_CONFIG, BARRIER, ROLE
 *                      (one master, generation_id), GET/SET_ASYNC, who gets async messages
 *   agent_conn.c       the controller connections: connect with backoff, framing, routing
 *                      of replies and async messages, non-blocking output queues with a
 *                      limit (a controller that stops reading is dropped), keepalive,
 *                      fail mode, the agent's
 *                      sleep/wake loop (ofs_agent_main), the stats socket, link polling
 *   agent_flows.c      FLOW_MOD (validation of matches, instructions and actions; add,
 *                      modify, delete), timeouts, FLOW_REMOVED, ofs_commit
 *   agent_groups_meters.c  GROUP_MOD and METER_MOD on the shared id table (idtable.h)
 *   agent_ports.c      PORT_MOD, TABLE_MOD, QUEUE_GET_CONFIG, PORT_STATUS, ofp_port
 *   agent_packet.c     PACKET_IN (from the workers' pin_ring), PACKET_OUT (to worker 0)
 *   agent_multipart.c  MULTIPART requests: one handler per multipart type, table features
 *
 * Calls point one way (no circle between the files): agent.c -> the handlers' files ->
 * agent_flows.c / agent_ports.c (shared helpers) -> agent_error.c -> ofmsg.c; agent_conn.c
 * (the loop) calls down into all of them, and nothing calls back up into agent.c or
 * agent_conn.c.
 * Error convention: a handler answers a refused message itself through ofs_send_error (or
 * returns an OFS_ERR() code to a caller that does); it never both refuses and applies part of
 * a message: every check runs before the first change.
 * Out of memory (one policy): a message whose handling cannot get memory is refused with an
 * OFPT_ERROR and leaves the state it found: FLOW_MOD add TABLE_FULL (also when the flow
 * arena is full, flowarena.h), modify/delete
 * FLOW_MOD_FAILED/UNKNOWN (flowtable.h: also when the next published index cannot be
 * reserved), GROUP_MOD OUT_OF_GROUPS, METER_MOD OUT_OF_METERS, anything else
 * OFS_ERR_NO_MEMORY (BAD_REQUEST/EPERM). Start-up (main.c, a worker's first allocation)
 * fails with a message naming what could not be had. Only the output buffer (ob_put)
 * aborts, since without it not even the error can be sent.
 * Byte order: message buffers are wire (big-endian) bytes, read and written only through
 * rd16/32/64 and wr16/32/64 (ofp13.h); everything in structs is host order.
 */
#ifndef OFB_AGENT_INTERNAL_H
#define OFB_AGENT_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ofswitch.h"
#include "agent.h"

/* ---- messages: ofmsg.h (framing, the output buffer), included through agent.h ---- */

/* ---- errors (agent_error.c) ---- */
/* OFPT_ERROR of err (OFS_ERR) with xid and free-form data (n bytes). */
void ofs_send_error_data(struct obuf *out, uint32_t xid, uint32_t err, const void *data,
			 size_t n);

/* The error for "out of memory" where the message type has no code of its own. */
#define OFS_ERR_NO_MEMORY OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_EPERM)

/* ---- message handlers: 0, or -1 when the session must be closed ---- */
typedef int ofs_msg_handler(struct obuf *out, const uint8_t *msg, size_t len);
ofs_msg_handler ofs_on_hello, ofs_on_echo_request, ofs_on_ignored, ofs_on_experimenter,
	ofs_on_features_request, ofs_on_get_config_request, ofs_on_set_config, ofs_on_barrier,
	ofs_on_role_request, ofs_on_get_async_request, ofs_on_set_async;     /* agent_session.c */
ofs_msg_handler ofs_on_flow_mod;                                           /* agent_flows.c */
ofs_msg_handler ofs_on_group_mod, ofs_on_meter_mod;              /* agent_groups_meters.c */
ofs_msg_handler ofs_on_port_mod, ofs_on_table_mod, ofs_on_queue_get_config; /* agent_ports.c */
ofs_msg_handler ofs_on_packet_out;                                        /* agent_packet.c */
ofs_msg_handler ofs_on_multipart_request;                              /* agent_multipart.c */

/* ---- session (agent_session.c) ---- */
/* The connection's role (OFPCR_ROLE_*): slaves are refused state-changing messages. */
uint32_t ofs_session_role(void);
/* ---- flows (agent_flows.c) ---- */
/* Does one of f's actions output to port (OFPP_ANY: any) or to group (OFPG_ANY: any)? */
bool ofs_flow_outputs(const struct ofs_flow *f, uint32_t port, uint32_t group);
/* Does an action list output to port or group (as above)? */
bool ofs_actions_output_to(const uint8_t *a, uint16_t len, uint32_t port, uint32_t group);
/* flow match f lies inside the (possibly wider) request match r */
bool ofs_match_covers(const struct ofs_match *r, const struct ofs_match *f);
/* Remove every flow (all tables) that pred selects, with FLOW_REMOVED(reason) where asked.
 * -1 when a table cannot be prepared (out of memory): flows of the later tables stay. */
int ofs_remove_flows(struct obuf *out, int table, bool (*pred)(struct ofs_flow *, void *),
		     void *arg, uint8_t reason);
/* Messages handled and expiry passes run so far (agent.c and ofs_expire_flows count them):
 * what ran in one of them shares one ofs_counters_sync (send_flow_removed). */
extern uint64_t ofs_agent_requests;

/* ---- ports (agent_ports.c) ---- */
void ofs_put_port(uint8_t *p, const struct ofs_port *pt);     /* ofp_port, 64 bytes */
void ofs_port_stats_sum(int pidx, struct ofs_port_stats *s);   /* all workers' counters */
/* A port number a request may name as a real port (1..OFPP_MAX, configured) */
bool ofs_port_is_real(uint32_t port);

#endif
