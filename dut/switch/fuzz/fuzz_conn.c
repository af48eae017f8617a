/* fuzz_conn.c -- libFuzzer harness of the agent's connection layer, src/agent_conn.c (included
 * here, to reach its static parts), dut/switch/README.md "Fuzzing". Built by clang in the
 * sanitizer build (scripts/build_san.sh) beside fuzz_agent.
 *
 * What fuzz_agent cannot reach: the framing of a byte stream that arrives in pieces cut
 * anywhere (conn_receive's 128 KiB receive buffer), several sessions at once (replies to the
 * asking connection, PACKET_IN / PORT_STATUS / FLOW_REMOVED to every session that wants them:
 * route()), and sending: non-blocking sockets with small buffers, partial sends resumed later,
 * a peer that stops reading until its output queue passes the limit and it is dropped.
 *
 * The controllers are the far ends of AF_UNIX socketpairs (the agent's fds, non-blocking, a
 * small send buffer), N_CONN of them. An input is a script of operations, one byte each
 * (op & 7; connection (op >> 4) % N_CONN) with their arguments:
 *   0-2  write: 1 + the next byte bytes (op & 8: 1 + two bytes, up to 64 KiB) of the input's
 *        following bytes to the connection, then the agent reads what arrived (as many
 *        times as it takes while the peer's writes would block)
 *   3    the peer reads what the agent sent (unless it is stalled)
 *   4    the peer stops reading / reads again
 *   5    a housekeeping tick: time goes 2 s on, keepalive, flow expiry, routing, sending
 *   6    the peer hangs up; the agent sees it, closes, and the controller reconnects
 *   7    a PACKET_IN (the next byte: its frame length * 64) routed to every session
 * After every operation the agent sends what it queued (conns_send, as its loop does); every
 * byte a peer receives must form well-framed OpenFlow 1.3 messages (version 4, length >= 8)
 * or the harness traps: a lost, doubled or torn byte in a resumed send is a finding. The
 * output limit is 64 KiB (the least --ctl-queue-kb takes) so a stalled peer is dropped
 * within two large ECHO replies.
 * Every connection starts with the controller's HELLO (as a real controller's).
 * Not covered: connect() and its backoff (TCP), the stats socket, poll() itself, link state;
 * the messages' meaning (fuzz_agent does that); no DPDK ports, no datapath (PACKET_OUTs are
 * not queued). At most MAX_OPS operations per input.
 * Between inputs: every connection closed, flows/groups/meters deleted. */
#include "fuzz_common.h"
/* the agent's log lines (one per connection closed) would flood the run: silenced here only;
 * agent.c's invariant reports (a finding: they abort in this build) still print */
#define fprintf(f, ...) ((void)(f), 0)
#include "../src/agent_conn.c"
#undef fprintf
#include "../src/agent_internal.h"

#define N_CONN 3
#define FUZZ_OUT_LIMIT (64u << 10)
#define MAX_OPS 2048   /* operations per input: keeps one input's syscalls bounded */

static struct ofs_agent_cfg cfg;
static int peer[N_CONN] = { -1, -1, -1 };
static bool stalled[N_CONN];
static uint8_t pbuf[N_CONN][1u << 17];   /* what a peer received, not yet a whole message */
static size_t plen_[N_CONN];
static struct obuf tmpb;
static uint64_t fake_now;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	fuzz_eal_init("fuzz_conn", "fuzzc", (*argv)[0], "64", 0, 0xf023);
	fuzz_lookup_init(false);
	ofs_dp.pin_ring = rte_ring_create("fuzzc_pin", 64, rte_socket_id(), RING_F_SC_DEQ);
	/* no pout_ring: a PACKET_OUT is checked and dropped (agent_packet.c), since no worker
	 * would drain a ring that one 128 KiB read can fill */
	ofs_dp.pout_ring = NULL;
	if (!ofs_dp.lookup_ops || !ofs_dp.pin_ring)
		fuzz_die("init");
	cfg.n_ctl = N_CONN;
	for (unsigned i = 0; i < N_CONN; i++) {
		snprintf(cfg.ctl[i].host, sizeof(cfg.ctl[i].host), "peer%u", i);
		conns[i] = (struct conn){ .addr = &cfg.ctl[i], .fd = -1, .backoff_ms = 100 };
		ob_init(&conns[i].out);
	}
	n_conns = N_CONN;
	out_limit = FUZZ_OUT_LIMIT;
	ob_init(&tmpb);
	fake_now = ofs_now_ns();
	return 0;
}

/* What a peer received must be whole OpenFlow 1.3 messages, byte for byte. */
static void peer_check(unsigned k)
{
	size_t o = 0;
	while (plen_[k] - o >= OFP_HDR_LEN) {
		uint16_t ml = rd16(pbuf[k] + o + 2);
		if (pbuf[k][o] != OFP13_VERSION || ml < OFP_HDR_LEN)
			fuzz_die("a peer received a badly framed stream");
		if (plen_[k] - o < ml)
			break;
		o += ml;
	}
	memmove(pbuf[k], pbuf[k] + o, plen_[k] - o);
	plen_[k] -= o;
}

static void peer_drain(unsigned k)
{
	if (peer[k] < 0 || stalled[k])
		return;
	for (;;) {
		ssize_t n = recv(peer[k], pbuf[k] + plen_[k], sizeof(pbuf[k]) - plen_[k],
				 MSG_DONTWAIT);
		if (n <= 0)
			return;
		plen_[k] += (size_t)n;
		peer_check(k);
	}
}

static void peer_open(unsigned k)
{
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp) != 0)
		fuzz_die("socketpair");
	int small = 4096;
	setsockopt(sp[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(sp[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	peer[k] = sp[1];
	stalled[k] = false;
	plen_[k] = 0;
	conn_attach(&conns[k], sp[0], fake_now);
	static const uint8_t hello[16] = { OFP13_VERSION, OFPT_HELLO, 0, 16, 0, 0, 0, 1,
					   0, 1, 0, 8, 0, 0, 0, 1u << OFP13_VERSION };
	ssize_t r = send(peer[k], hello, sizeof(hello), MSG_DONTWAIT);
	(void)r;
}

static void peer_close(unsigned k)
{
	if (peer[k] >= 0)
		close(peer[k]);
	peer[k] = -1;
}

/* What the agent loop does when connection k is readable. */
static void agent_receive(unsigned k)
{
	struct conn *c = &conns[k];
	if (c->fd < 0)
		return;
	struct pollfd pf = { .fd = c->fd, .events = POLLIN };
	if (poll(&pf, 1, 0) <= 0 || !(pf.revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (!conn_receive(c, &tmpb, fake_now))
		conn_close(c, fake_now, "session closed");
}

static void agent_after(void)
{
	route(&tmpb, NULL);
	conns_send(fake_now);
	for (unsigned k = 0; k < N_CONN; k++)
		if (conns[k].fd < 0) {    /* the agent closed it: the controller reconnects */
			peer_close(k);
			peer_open(k);
		}
}

static void peer_write(unsigned k, const uint8_t *d, size_t n)
{
	size_t o = 0;
	for (int tries = 0; o < n && tries < 64; tries++) {
		if (peer[k] < 0)
			return;
		ssize_t w = send(peer[k], d + o, n - o, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0)
			o += (size_t)w;
		else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return;
		agent_receive(k);   /* what arrived so far, as the agent's poll would */
		peer_drain(k);
		agent_after();
	}
}

static void tick(void)
{
	fake_now += 2000000000ull;
	ofs_expire_flows(&tmpb, fake_now);
	ofs_commit();
	for (unsigned i = 0; i < N_CONN; i++)
		conn_keepalive(&conns[i], fake_now, 1000000000ull);
}

static void packet_in(uint8_t sz)
{
	size_t n = 14u + sz * 64u;
	struct ofs_pin *pin = calloc(1, sizeof(*pin) + n);
	if (!pin)
		fuzz_die("malloc");
	pin->reason = OFPR_NO_MATCH;
	pin->in_port = 1;
	pin->total_len = pin->data_len = (uint16_t)n;
	ofs_send_packet_in(&tmpb, pin);
	free(pin);
}

static void reset(void)
{
	for (unsigned k = 0; k < N_CONN; k++) {
		if (conns[k].fd >= 0)
			conn_close(&conns[k], fake_now, "fuzz input done");
		peer_close(k);
	}
	ofs_session_use(NULL);
	ofs_agent_reset_session();
	uint8_t fm[56] = { OFP13_VERSION, OFPT_FLOW_MOD, 0, 56 };
	fm[24] = OFPTT_ALL;
	fm[25] = OFPFC_DELETE;
	wr32(fm + 32, OFP_NO_BUFFER);
	wr32(fm + 36, OFPP_ANY);
	wr32(fm + 40, OFPG_ANY);
	wr16(fm + 48, 1);
	wr16(fm + 50, 4);
	ofs_handle_msg(&tmpb, fm, sizeof(fm));
	uint8_t gm[16] = { OFP13_VERSION, OFPT_GROUP_MOD, 0, 16 };
	wr16(gm + 8, OFPGC_DELETE);
	wr32(gm + 12, OFPG_ALL);
	ofs_handle_msg(&tmpb, gm, sizeof(gm));
	uint8_t mm[16] = { OFP13_VERSION, OFPT_METER_MOD, 0, 16 };
	wr16(mm + 8, OFPMC_DELETE);
	wr32(mm + 12, OFPM_ALL);
	ofs_handle_msg(&tmpb, mm, sizeof(mm));
	ofs_commit();
	tmpb.len = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned k = 0; k < N_CONN; k++)
		peer_open(k);
	size_t i = 0;
	for (unsigned ops = 0; i < size && ops < MAX_OPS; ops++) {
		uint8_t op = data[i++];
		unsigned k = (op >> 4) % N_CONN;
		switch (op & 7) {
		case 0: case 1: case 2: {
			size_t n;
			if (op & 8) {
				if (size - i < 2) { i = size; break; }
				n = 1u + rd16(data + i);
				i += 2;
			} else {
				if (size - i < 1) { i = size; break; }
				n = 1u + data[i++];
			}
			if (n > size - i)
				n = size - i;
			peer_write(k, data + i, n);
			i += n;
			break;
		}
		case 3: peer_drain(k); break;
		case 4: stalled[k] = !stalled[k]; break;
		case 5: tick(); break;
		case 6:
			peer_close(k);
			agent_receive(k);  /* sees the hang-up and closes; agent_after reconnects */
			break;
		case 7:
			packet_in(i < size ? data[i++] : 0);
			break;
		}
		agent_after();
	}
	for (unsigned k = 0; k < N_CONN; k++) {
		stalled[k] = false;
		peer_drain(k);
	}
	reset();
	return 0;
}
