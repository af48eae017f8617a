/* agent_session.c -- controller sessions: handshake, roles and per-session state.
 *
 * HELLO negotiates the version (OF1.3.5 6.3.1: ours is 0x04; a peer whose header version is
 * lower, or whose version bitmap lacks bit 4, gets HELLO_FAILED/INCOMPATIBLE and the session
 * is closed); later HELLOs are ignored. ECHO_REQUEST is answered with its payload. FEATURES,
 * GET/SET_CONFIG, BARRIER, ROLE_REQUEST (6.3.6: roles equal/master/slave; a master or slave
 * request whose generation_id is older than the last one seen, in the 64-bit wrapping order
 * of the spec, is STALE) and GET/SET_ASYNC.
 * Several controllers (6.3.6): one session per connection (struct ofs_session: HELLO done,
 * role, SET_ASYNC masks). At most one master: a session that becomes master turns the
 * previous master into a slave. The generation_id is the switch's, not a session's: a
 * MASTER/SLAVE request whose generation is older than the last one seen is STALE (EQUAL and
 * NOCHANGE requests carry none). A slave's state-changing messages are refused with IS_SLAVE
 * (agent.c). Asynchronous messages go to each session whose role and masks want them
 * (ofs_session_wants; defaults as before: master/equal everything, slave no FLOW_REMOVED).
 * OFPRR_METER_DELETE (4) has no bit in 1.3's flow-removed mask: it follows DELETE's.
 * A new connection gets a fresh session (role EQUAL); a session handles the messages of its
 * connection only (ofs_session_use before ofs_handle_msg).
 * Switch-wide configuration (SET_CONFIG flags, miss_send_len) lives in ofs_dp.
 * Concurrency: agent thread only. Byte order: wire order in messages, host order here.
 */
#include <string.h>
#include "agent_internal.h"

/* OFPC_FRAG_* (2 bits) and OFPC_INVALID_TTL_TO_CONTROLLER: the flags SET_CONFIG may set */
#define OFS_CONFIG_FLAGS_ALL 0x7u
/* OFPT_FEATURES_REPLY capabilities: OFPC_FLOW_STATS | TABLE_STATS | PORT_STATS | GROUP_STATS */
#define OFS_CAPABILITIES (0x1u | 0x2u | 0x4u | 0x8u)
#define OFPHET_VERSIONBITMAP 1

/* GET/SET_ASYNC layout: packet_in, port_status, flow_removed masks, each for
 * master/equal then slave */
enum { ASYNC_PIN = 0, ASYNC_PORT_STATUS = 2, ASYNC_FLOW_REMOVED = 4, ASYNC_N = 6 };
static const uint32_t async_default[ASYNC_N] = { 0x7, 0x7, 0x7, 0x7, 0xf, 0x0 };

struct ofs_session {
	bool in_use;
	bool hello_done;         /* version negotiated; later HELLOs are ignored */
	uint32_t role;
	uint32_t async_cfg[ASYNC_N];
};
/* sessions[0] is the default one (tests, fuzzers); connections take any free slot */
static struct ofs_session sessions[OFS_MAX_CONTROLLERS + 1] = {
	{ .in_use = true, .role = OFPCR_ROLE_EQUAL,
	  .async_cfg = { 0x7, 0x7, 0x7, 0x7, 0xf, 0x0 } },
};
static struct ofs_session *cur = &sessions[0];
static uint64_t role_gen;    /* the switch's generation_id (6.3.6) */
static bool role_gen_set;

static void session_reset(struct ofs_session *s)
{
	s->hello_done = false;
	s->role = OFPCR_ROLE_EQUAL;
	memcpy(s->async_cfg, async_default, sizeof(s->async_cfg));
}

struct ofs_session *ofs_session_open(void)
{
	for (unsigned i = 0; i < RTE_DIM(sessions); i++)
		if (!sessions[i].in_use) {
			session_reset(&sessions[i]);
			sessions[i].in_use = true;
			return &sessions[i];
		}
	return NULL;
}

void ofs_session_close(struct ofs_session *s)
{
	s->in_use = false;
	s->role = OFPCR_ROLE_EQUAL;  /* a closed session is nobody's master */
	if (cur == s)
		cur = &sessions[0];
}

void ofs_session_use(struct ofs_session *s) { cur = s ? s : &sessions[0]; }
bool ofs_session_ready(const struct ofs_session *s) { return s->hello_done; }
uint32_t ofs_session_role(void) { return cur->role; }

void ofs_agent_reset_session(void)
{
	session_reset(cur);
}

bool ofs_session_wants(const struct ofs_session *s, const uint8_t *msg)
{
	unsigned slave = s->role == OFPCR_ROLE_SLAVE;
	uint8_t reason;
	unsigned k;
	switch (msg[1]) {
	case OFPT_PACKET_IN:     /* header, buffer_id 4, total_len 2, reason */
		k = ASYNC_PIN; reason = msg[14]; break;
	case OFPT_PORT_STATUS:   /* header, reason */
		k = ASYNC_PORT_STATUS; reason = msg[8]; break;
	case OFPT_FLOW_REMOVED:  /* header, cookie 8, priority 2, reason */
		k = ASYNC_FLOW_REMOVED; reason = msg[18];
		if (reason == OFPRR_METER_DELETE)
			reason = OFPRR_DELETE;
		break;
	default:
		return true;
	}
	return reason < 32 && (s->async_cfg[k + slave] >> reason & 1);
}

void ofs_send_hello(struct obuf *out)
{
	size_t at = ofs_msg_begin(out, OFPT_HELLO, 1);
	uint8_t *p = ob_put(out, 8);
	wr16(p, OFPHET_VERSIONBITMAP);
	wr16(p + 2, 8);
	wr32(p + 4, 1u << OFP13_VERSION);
	ofs_msg_end(out, at);
}

int ofs_on_hello(struct obuf *out, const uint8_t *msg, size_t len)
{
	if (cur->hello_done)
		return 0;
	/* version negotiation: OK if the peer's header version >= 4 and, when it sends a
	 * version bitmap, the bitmap has bit 4 */
	bool ok = msg[0] >= OFP13_VERSION;
	size_t o = OFP_HDR_LEN;
	while (o + 4 <= len) {
		uint16_t et = rd16(msg + o), el = rd16(msg + o + 2);
		if (el < 4 || o + el > len)
			break;
		if (et == OFPHET_VERSIONBITMAP && el >= 8)
			ok = (rd32(msg + o + 4) >> OFP13_VERSION) & 1;
		o += (el + 7u) / 8 * 8;
	}
	if (!ok) {
		static const char why[] = "only OpenFlow 1.3 (0x04) is supported";
		ofs_send_error_data(out, rd32(msg + 4), OFS_ERR(OFPET_HELLO_FAILED,
								 OFPHFC_INCOMPATIBLE),
				    why, sizeof(why) - 1);
		return -1;
	}
	cur->hello_done = true;
	return 0;
}

int ofs_on_ignored(struct obuf *out, const uint8_t *msg, size_t len)
{
	(void)out; (void)msg; (void)len;
	return 0;
}

int ofs_on_echo_request(struct obuf *out, const uint8_t *msg, size_t len)
{
	ofs_msg_simple(out, OFPT_ECHO_REPLY, rd32(msg + 4), msg + OFP_HDR_LEN, len - OFP_HDR_LEN);
	return 0;
}

int ofs_on_experimenter(struct obuf *out, const uint8_t *msg, size_t len)
{
	ofs_send_error(out, msg, len, OFS_ERR(OFPET_BAD_REQUEST, OFPBRC_BAD_EXPERIMENTER));
	return 0;
}

int ofs_on_features_request(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_switch_features body: datapath_id 8, n_buffers 4, n_tables 1, auxiliary_id 1,
	 * pad 2, capabilities 4, reserved 4 */
	(void)len;
	uint8_t b[24] = {0};
	wr64(b, ofs_dp.dpid);
	wr32(b + 8, 0);
	b[12] = OFS_N_TABLES;
	wr32(b + 16, OFS_CAPABILITIES);
	ofs_msg_simple(out, OFPT_FEATURES_REPLY, rd32(msg + 4), b, sizeof(b));
	return 0;
}

int ofs_on_get_config_request(struct obuf *out, const uint8_t *msg, size_t len)
{
	(void)len;
	uint8_t b[4];
	wr16(b, ofs_dp.config_flags);
	wr16(b + 2, ofs_dp.miss_send_len);
	ofs_msg_simple(out, OFPT_GET_CONFIG_REPLY, rd32(msg + 4), b, sizeof(b));
	return 0;
}

int ofs_on_set_config(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_switch_config: header, flags 2, miss_send_len 2 */
	if (rd16(msg + 8) & ~OFS_CONFIG_FLAGS_ALL) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_SWITCH_CONFIG_FAILED, OFPSCFC_BAD_FLAGS));
		return 0;
	}
	ofs_dp.config_flags = rd16(msg + 8);
	ofs_dp.miss_send_len = rd16(msg + 10);
	return 0;
}

int ofs_on_barrier(struct obuf *out, const uint8_t *msg, size_t len)
{
	(void)len;
	ofs_commit();
	ofs_msg_simple(out, OFPT_BARRIER_REPLY, rd32(msg + 4), NULL, 0);
	return 0;
}

int ofs_on_role_request(struct obuf *out, const uint8_t *msg, size_t len)
{
	/* ofp_role_request: header, role 4, pad 4, generation_id 8 */
	uint32_t rl = rd32(msg + 8);
	uint64_t gen = rd64(msg + 16);
	if (rl > OFPCR_ROLE_SLAVE) {
		ofs_send_error(out, msg, len, OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_BAD_ROLE));
		return 0;
	}
	if (rl == OFPCR_ROLE_MASTER || rl == OFPCR_ROLE_SLAVE) {
		if (role_gen_set && (int64_t)(gen - role_gen) < 0) {
			ofs_send_error(out, msg, len, OFS_ERR(OFPET_ROLE_REQUEST_FAILED, OFPRRFC_STALE));
			return 0;
		}
		role_gen = gen;
		role_gen_set = true;
	}
	if (rl == OFPCR_ROLE_MASTER)  /* one master: the previous one becomes a slave */
		for (unsigned i = 0; i < RTE_DIM(sessions); i++)
			if (&sessions[i] != cur && sessions[i].in_use &&
			    sessions[i].role == OFPCR_ROLE_MASTER)
				sessions[i].role = OFPCR_ROLE_SLAVE;
	if (rl != OFPCR_ROLE_NOCHANGE)
		cur->role = rl;
	uint8_t b[16] = {0};
	wr32(b, cur->role);
	wr64(b + 8, role_gen);
	ofs_msg_simple(out, OFPT_ROLE_REPLY, rd32(msg + 4), b, sizeof(b));
	return 0;
}

int ofs_on_get_async_request(struct obuf *out, const uint8_t *msg, size_t len)
{
	(void)len;
	uint8_t b[24];
	for (int i = 0; i < ASYNC_N; i++)
		wr32(b + 4 * i, cur->async_cfg[i]);
	ofs_msg_simple(out, OFPT_GET_ASYNC_REPLY, rd32(msg + 4), b, sizeof(b));
	return 0;
}

int ofs_on_set_async(struct obuf *out, const uint8_t *msg, size_t len)
{
	(void)out; (void)len;
	for (int i = 0; i < ASYNC_N; i++)
		cur->async_cfg[i] = rd32(msg + 8 + 4 * i);
	return 0;
}
