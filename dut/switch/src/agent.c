/* agent.c -- the entry point of the OpenFlow 1.3 agent of ofswitch: ofs_handle_msg() takes one
 * complete message from the controller connection and appends every reply to an output
 * buffer (framing: ofmsg.c). The agent is the only writer of flow tables, groups and meters (see ofswitch.h for
 * the publish/RCU protocol); agent_internal.h says which file handles which message.
 *
 * Goals: every refused message gets the OFPT_ERROR type/code OpenFlow 1.3.5 names, sent from
 * one place (agent_error.c); the handling can be driven without DPDK workers or a socket (unit
 * tests, the fuzzer) since its only input is the message and its only output the buffer.
 * Dispatch: a table indexed by message type holds each type's handler, the exact length the
 * type has when fixed (else the handler checks), and whether a slave may send it (OF1.3.5
 * 6.3.6: a slave's state-changing messages are refused with BAD_REQUEST/IS_SLAVE, checked
 * before the length, as before any other content).
 * Concurrency: agent thread only.
 * Byte order: msg is wire order; read through rd16/32/64 only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent_internal.h"

/* ---- dispatch ----------------------------------------------------------------------------- */
#define SLAVE_REFUSED 1u  /* changes the switch's state: refused from a slave */
static const struct msg_type {
	ofs_msg_handler *fn;
	uint16_t exact_len;   /* 0: variable, the handler checks */
	uint8_t flags;
} msg_types[] = {
	[OFPT_HELLO]                  = { ofs_on_hello, 0, 0 },
	[OFPT_ERROR]                  = { ofs_on_ignored, 0, 0 },
	[OFPT_ECHO_REQUEST]           = { ofs_on_echo_request, 0, 0 },
	[OFPT_ECHO_REPLY]             = { ofs_on_ignored, 0, 0 },
	[OFPT_EXPERIMENTER]           = { ofs_on_experimenter, 0, 0 },
	[OFPT_FEATURES_REQUEST]       = { ofs_on_features_request, 8, 0 },
	[OFPT_GET_CONFIG_REQUEST]     = { ofs_on_get_config_request, 8, 0 },
	[OFPT_SET_CONFIG]             = { ofs_on_set_config, 12, 0 },
	[OFPT_PACKET_OUT]             = { ofs_on_packet_out, 0, SLAVE_REFUSED },
	[OFPT_FLOW_MOD]               = { ofs_on_flow_mod, 0, SLAVE_REFUSED },
	[OFPT_GROUP_MOD]              = { ofs_on_group_mod, 0, SLAVE_REFUSED },
	[OFPT_PORT_MOD]               = { ofs_on_port_mod, 40, SLAVE_REFUSED },
	[OFPT_TABLE_MOD]              = { ofs_on_table_mod, 16, SLAVE_REFUSED },
	[OFPT_MULTIPART_REQUEST]      = { ofs_on_multipart_request, 0, 0 },
	[OFPT_BARRIER_REQUEST]        = { ofs_on_barrier, 8, 0 },
	[OFPT_QUEUE_GET_CONFIG_REQUEST] = { ofs_on_queue_get_config, 16, 0 },
	[OFPT_ROLE_REQUEST]           = { ofs_on_role_request, 24, 0 },
	[OFPT_GET_ASYNC_REQUEST]      = { ofs_on_get_async_request, 8, 0 },
	[OFPT_SET_ASYNC]              = { ofs_on_set_async, 32, 0 },
	[OFPT_METER_MOD]              = { ofs_on_meter_mod, 0, SLAVE_REFUSED },
};

/* THE entry point: handle one OpenFlow message received on the controller connection. */
int ofs_handle_msg(struct obuf *out, const uint8_t *msg, size_t len)
{
	uint8_t type = msg[1];
	ofs_agent_requests++;
	if (msg[0] != OFP13_VERSION && type != OFPT_HELLO) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_VERSION));
		return 0;
	}
	const struct msg_type *mt = type < RTE_DIM(msg_types) ? &msg_types[type] : NULL;
	if (!mt || !mt->fn) {  /* replies and asynchronous messages a controller does not send */
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_TYPE));
		return 0;
	}
	if ((mt->flags & SLAVE_REFUSED) && ofs_session_role() == OFPCR_ROLE_SLAVE) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_IS_SLAVE));
		return 0;
	}
	if (mt->exact_len && len != mt->exact_len) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_LEN));
		return 0;
	}
	return mt->fn(out, msg, len);
}
