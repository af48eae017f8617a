/* agent.c -- the entry point of the OpenFlow 1.3 agent of ofswitch: ofs_handle_msg() takes one
 * complete message from the controller connection and appends every reply to an output
 * buffer. The agent is the only writer of flow tables, groups and meters (see ofswitch.h for
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

/* ---- output buffer ------------------------------------------------------------------------ */
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

/* Make the staged flow-table changes visible (flowtable.h); removed flows, groups and meters
 * are freed after a grace period (ofs_defer_free). */
void ofs_commit(void)
{
	ofs_flows_commit();
}

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
uint64_t ofs_agent_requests;

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
