/* fuzz_agent.c -- libFuzzer harness of the switch's OpenFlow agent (dut/switch/README.md,
 * "Fuzzing"). Built only by clang, in the sanitizer build (scripts/build_san.sh): ASan + UBSan
 * with no recovery, so any report is a crash and a finding.
 *
 * One input is the byte stream a controller sends on one connection. It is split into
 * messages by their OpenFlow header lengths as the agent's network loop does (main.c); a
 * length below 8 ends the stream (the real agent closes such a session) and a length beyond
 * the input's end is clamped to what is left (the message the controller could have sent).
 * Each message is copied into a heap buffer of exactly its length, so a read past the message
 * is an ASan report even in the middle of the stream, and handed to ofs_handle_msg() -- the
 * one entry point the network loop uses. After each message, as the loop and worker 0 do:
 * ofs_commit(); the PACKET_OUTs the agent queued run through the real datapath
 * (ofs_run_packet_out: actions, groups, meters, the pipeline for OFPP_TABLE, the flow cache,
 * output to DPDK null ports); the Packet-Ins they made go back to the agent
 * (ofs_send_packet_in). At the end of the input every timed flow expires
 * (ofs_expire_flows with a clock an hour ahead). A session the agent closes (failed HELLO) is
 * reopened and the stream goes on, as after a reconnect.
 *
 * Every reply goes to a sink that checks its framing: a sequence of OpenFlow 1.3 messages
 * whose header lengths add up to the bytes written, none over 64 KiB. A bad reply traps.
 *
 * State: one datapath for the whole run (3 net_null ports, OpenFlow ports 1-3, one worker,
 * no QSBR: removed flows, groups and meters are freed at once, so a stale pointer is a
 * use-after-free report). Between inputs everything a message can change is reset: flows,
 * groups and meters deleted through the agent (and checked gone, else the harness aborts),
 * role and HELLO state (ofs_agent_reset_session), async config (SET_ASYNC), switch config
 * and port config. Not reset: the role generation_id
 * (no entry point; a later ROLE_REQUEST may be refused as STALE), the lookup structures of
 * tables that once had flows (kept by design) and the flow cache (entries are tagged).
 *
 * EAL: once, --no-huge --no-shconf --no-pci, a unique --file-prefix; its runtime folder is
 * removed right after init (it holds nothing).
 * Env OFS_FUZZ_LOOKUP=tuple|dtree|trie|simple picks the tables' lookup backend (default: the
 * switch's, OFS_LOOKUP_DEFAULT). */
#include "fuzz_common.h"
#include <arpa/inet.h>
#include "../src/agent.h"

#define N_PORTS 3
#define REPLY_MAX 65535u

static struct obuf out;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	fuzz_eal_init("fuzz_agent", "fuzz", (*argv)[0], "128", N_PORTS, 0xf022);
	fuzz_lookup_init(true);
	struct rte_mempool *pool = rte_pktmbuf_pool_create("fuzz_pool", 2047, 0, 0,
		RTE_MBUF_DEFAULT_BUF_SIZE + OFS_MAX_PKT, rte_socket_id());
	if (!pool)
		fuzz_die("mbuf pool");
	fuzz_ports_init(pool, N_PORTS);
	fuzz_worker_init(pool, N_PORTS);
	ofs_dp.pin_ring = rte_ring_create("fuzz_pin", 4096, rte_socket_id(), RING_F_SC_DEQ);
	ofs_dp.pout_ring = rte_ring_create("fuzz_pout", 1024, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!ofs_dp.pin_ring || !ofs_dp.pout_ring)
		fuzz_die("rings");
	ob_init(&out);
	return 0;
}

/* The replies must be well-framed OpenFlow 1.3 messages; then they are dropped. */
static void sink(void)
{
	size_t o = 0;
	while (o < out.len) {
		if (out.len - o < 8)
			fuzz_die("reply: a truncated header");
		uint16_t ml = rd16(out.data + o + 2);
		if (out.data[o] != OFP13_VERSION || ml < 8 || ml > out.len - o || ml > REPLY_MAX)
			fuzz_die("reply: bad version or length");
		o += ml;
	}
	out.len = 0;
}

/* What worker 0 and the agent loop do between two messages of the controller. */
static void run_datapath(void)
{
	struct ofs_worker *w = &ofs_dp.workers[0];
	void *objs[8];
	unsigned n;
	while ((n = rte_ring_sc_dequeue_burst(ofs_dp.pout_ring, objs, 8, NULL)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			ofs_run_packet_out(w, objs[i]);
			free(objs[i]);
		}
	}
	for (unsigned p = 0; p < ofs_dp.n_ports; p++)
		rte_eth_tx_buffer_flush(ofs_dp.ports[p].dpdk_id, 0, w->txb[p]);
	/* leave the lookup structures the pipeline entered (datapath.c ofs_reader_leave_all) */
	for (uint64_t e = w->entered; e; e &= e - 1)
		ofs_dp.lookup_ops->reader_leave(ofs_dp.tables[__builtin_ctzll(e)].lx, w->idx);
	w->entered = 0;
	while ((n = rte_ring_sc_dequeue_burst(ofs_dp.pin_ring, objs, 8, NULL)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			ofs_send_packet_in(&out, objs[i]);
			free(objs[i]);
		}
	}
	sink();
}

static void handle(const uint8_t *msg, size_t len)
{
	uint8_t *copy = malloc(len);
	if (!copy)
		fuzz_die("malloc");
	memcpy(copy, msg, len);
	if (ofs_handle_msg(&out, copy, len) < 0)
		ofs_agent_reset_session();  /* the session closes; the controller reconnects */
	free(copy);
	ofs_commit();
	sink();
	run_datapath();
}

static void control(uint8_t type, const uint8_t *body, size_t n)
{
	uint8_t m[64] = { OFP13_VERSION, type };
	wr16(m + 2, (uint16_t)(8 + n));
	wr32(m + 4, 0xfffffff0u);
	memcpy(m + 8, body, n);
	handle(m, 8 + n);
}

/* Back to the state of a fresh connection to a switch with no flows, groups or meters. */
static void reset(void)
{
	ofs_agent_reset_session();  /* first: a SLAVE role would refuse the deletes (IS_SLAVE) */
	/* ofp_flow_mod after the header: cookie 0, cookie_mask 8, table_id 16, command 17,
	 * timeouts 18/20, priority 22, buffer_id 24, out_port 28, out_group 32, flags 36, match 40 */
	uint8_t fm[48] = {0};
	fm[16] = OFPTT_ALL;
	fm[17] = OFPFC_DELETE;
	wr32(fm + 24, OFP_NO_BUFFER);
	wr32(fm + 28, OFPP_ANY);
	wr32(fm + 32, OFPG_ANY);
	wr16(fm + 40, 1);  /* OFPMT_OXM, an empty match */
	wr16(fm + 42, 4);
	control(OFPT_FLOW_MOD, fm, 48);
	uint8_t gm[8] = {0};
	wr16(gm, OFPGC_DELETE);
	wr32(gm + 4, OFPG_ALL);
	control(OFPT_GROUP_MOD, gm, 8);
	uint8_t mm[8] = {0};
	wr16(mm, OFPMC_DELETE);
	wr32(mm + 4, OFPM_ALL);
	control(OFPT_METER_MOD, mm, 8);
	static const uint32_t async_default[6] = { 0x7, 0x7, 0x7, 0x7, 0xf, 0x0 };
	uint8_t as[24];
	for (int i = 0; i < 6; i++)
		wr32(as + 4 * i, async_default[i]);
	control(OFPT_SET_ASYNC, as, 24);
	ofs_dp.config_flags = 0;
	ofs_dp.miss_send_len = 128;
	for (unsigned i = 0; i < ofs_dp.n_ports; i++)
		ofs_dp.ports[i].config = 0;
	out.len = 0;
	/* the deletes must have emptied everything: each input starts from the same state */
	for (unsigned t = 0; t < OFS_N_TABLES; t++)
		if (ofs_dp.tables[t].n_flows)
			fuzz_die("reset: DELETE of every flow left flows");
	unsigned it = 0;
	if (ofs_idt_next(&ofs_dp.groups, &it))
		fuzz_die("reset: DELETE of OFPG_ALL left a group");
	it = 0;
	if (ofs_idt_next(&ofs_dp.meters, &it))
		fuzz_die("reset: DELETE of OFPM_ALL left a meter");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t o = 0;
	while (size - o >= 8) {
		size_t ml = rd16(data + o + 2);
		if (ml < 8)
			break;
		if (ml > size - o) {
			/* clamp: the same message with its header length fixed */
			uint8_t *m = malloc(size - o);
			if (!m)
				fuzz_die("malloc");
			memcpy(m, data + o, size - o);
			wr16(m + 2, (uint16_t)(size - o));
			handle(m, size - o);
			free(m);
			break;
		}
		handle(data + o, ml);
		o += ml;
	}
	ofs_expire_flows(&out, ofs_now_ns() + 3600ull * 1000000000ull);
	ofs_commit();
	sink();
	reset();
	return 0;
}
