/* test_pipecache.c -- differential test of the pipeline cache (src/pipecache.h): the cached way
 * and the per-table way give the same frames on the same ports, and the same per-flow and
 * per-table counters, on random multi-table pipelines.
 *
 * A real worker lcore (ofs_worker_main) forwards between two net_ring ports (as test_churn.c).
 * Epoch after epoch this thread, as the agent, changes four tables through ofs_handle_msg
 * (ADD, MODIFY_STRICT, DELETE_STRICT; goto-table, write-metadata, push/pop VLAN, set-field
 * eth_src/eth_dst/vlan_vid, dec TTL, output to port 1, 2 or IN_PORT, drop, table-miss drop) and
 * commits, then feeds the same frames eight times: pipeline cache off (every lookup), on without
 * compiled programs (the misses store their ways), on again (hits replay each hop), the
 * same two with programs (pipecache.h pc_compile: stores compile, hits run the program), and
 * three with forced conflicts and signature collisions (ofs_dp.pipe_test_sets: one set of
 * eight ways for the 96 keys, so stores evict entries, programs with pending counts among
 * them; pipe_test_sig_mask: two signatures for every key, so most signature matches are
 * another key's entry): programs twice, then replaying. Each run's frames per port, in order, byte for
 * byte, the flows' packet/byte count deltas (after ofs_counters_sync), which flows' last_used
 * moved, and the tables' lookup/matched count deltas must be the off run's. Frames have TTLs
 * 1..3 (the same key, a TTL that expires or not), are tagged or not, some with Ethernet padding
 * behind the IP packet, some shorter than their IP length; ways push one or two tags (0x8100,
 * 0x88a8), set the priority, pop, decrement the TTL once or twice.
 * Usage: test_ofswitch_pipecache [epochs] (exit 0 = all the same, and the cache was hit). */
#define _GNU_SOURCE  /* nftw */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ftw.h>
#include <limits.h>
#include <arpa/inet.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include "../src/ofswitch.h"
#include "../src/agent.h"
#include "../src/flowtable.h"
#include "../src/flowarena.h"
#include "dp_rig.h"

#define NKEYS 96
#define NFEED 384
#define NT 4
#define MAXF 512

static uint8_t frames[NKEYS][80];
static uint16_t flen[NKEYS];
static struct rte_ring *rx1, *tx1, *tx2;
static struct rte_mempool *pool;
static struct obuf out;
static unsigned refused;


static const uint8_t MAC_DST[3] = { 0x10, 0x20, 0x30 }, MAC_SRC[3] = { 0x01, 0x02, 0x03 };
static void mac(uint8_t *m, uint8_t last) { memcpy(m, "\x02\x00\x00\x00\x00", 5); m[5] = last; }

/* A flow of table t: its match and instructions drawn at random (seeded per flow). */
struct tflow { uint8_t table; uint16_t prio; uint8_t ox[128]; size_t oxlen; uint8_t in[256];
	       size_t inlen; uint16_t idle; bool live; };
static struct tflow tf[MAXF];
static int ntf;

static void random_flow(struct tflow *f, uint8_t t)
{
	uint8_t v[16], m[16];
	size_t o = 0;
	f->table = t;
	/* match */
	if (t == 0) {
		if (rand() % 2) { wr32(v, 1 + rand() % 2); o += dp_oxm(f->ox + o, OXM_IN_PORT, v, NULL, 4); }
		if (rand() % 2) {
			wr16(v, rand() % 2 ? 0 : (uint16_t)(0x1000 | (5 + rand() % 2)));
			o += dp_oxm(f->ox + o, OXM_VLAN_VID, v, NULL, 2);
		}
	} else if (t == 1) {
		if (rand() % 2) { mac(v, MAC_SRC[rand() % 3]); o += dp_oxm(f->ox + o, OXM_ETH_SRC, v, NULL, 6); }
		if (rand() % 2) {
			memset(v, 0, 8); v[7] = (uint8_t)(rand() % 3);
			memset(m, 0, 8); m[7] = 0xff;
			o += dp_oxm(f->ox + o, OXM_METADATA, v, m, 8);
		}
		if (rand() % 3 == 0) {
			wr16(v, (uint16_t)(0x1000 | (5 + rand() % 3)));
			o += dp_oxm(f->ox + o, OXM_VLAN_VID, v, NULL, 2);
		}
	} else if (t == 2) {
		wr16(v, 0x0800); o += dp_oxm(f->ox + o, OXM_ETH_TYPE, v, NULL, 2);
		if (rand() % 4) {
			wr32(v, 0x0a000000u | (uint32_t)(rand() % 4)); wr32(m, rand() % 2 ? 0xffffffffu : 0xfffffffcu);
			o += dp_oxm(f->ox + o, OXM_IPV4_DST, v, m, 4);
		}
	} else {
		if (rand() % 2) { mac(v, rand() % 2 ? MAC_DST[rand() % 3] : (uint8_t)(0x40 + rand() % 2));
				  o += dp_oxm(f->ox + o, OXM_ETH_DST, v, NULL, 6); }
		if (rand() % 2) {
			wr16(v, rand() % 3 == 0 ? 0 : (uint16_t)(0x1000 | (5 + rand() % 3)));
			o += dp_oxm(f->ox + o, OXM_VLAN_VID, v, NULL, 2);
		}
	}
	f->oxlen = o;
	/* instructions: apply-actions, write-metadata, goto */
	uint8_t *b = f->in;
	size_t n = 0, a0 = 8;
	wr16(b, OFPIT_APPLY_ACTIONS);
	uint8_t *a = b + a0;
	size_t al = 0;
	int last = t == NT - 1 || rand() % 6 == 0;
	if (t == 0 && rand() % 2) {
		wr16(a + al, OFPAT_PUSH_VLAN); wr16(a + al + 2, 8);
		wr16(a + al + 4, rand() % 4 ? 0x8100 : 0x88a8); al += 8;
		wr16(a + al, OFPAT_SET_FIELD); wr16(a + al + 2, 16);
		wr16(v, (uint16_t)(0x1000 | (5 + rand() % 3))); dp_oxm(a + al + 4, OXM_VLAN_VID, v, NULL, 2);
		al += 16;
	}
	if (t >= 1 && rand() % 4 == 0) {  /* the outer tag's priority (no tag: nothing) */
		wr16(a + al, OFPAT_SET_FIELD); wr16(a + al + 2, 16);
		v[0] = (uint8_t)(rand() % 8); dp_oxm(a + al + 4, OXM_VLAN_PCP, v, NULL, 1);
		al += 16;
	}
	if (t >= 1 && rand() % 2) {
		wr16(a + al, OFPAT_SET_FIELD); wr16(a + al + 2, 16);
		mac(v, rand() % 2 ? MAC_SRC[rand() % 3] : 0x77);
		dp_oxm(a + al + 4, OXM_ETH_SRC, v, NULL, 6); al += 16;
	}
	if (t == 2 && rand() % 2) {
		wr16(a + al, OFPAT_SET_FIELD); wr16(a + al + 2, 16);
		mac(v, rand() % 2 ? MAC_DST[rand() % 3] : (uint8_t)(0x40 + rand() % 2));
		dp_oxm(a + al + 4, OXM_ETH_DST, v, NULL, 6); al += 16;
		if (rand() % 2) { wr16(a + al, OFPAT_DEC_NW_TTL); wr16(a + al + 2, 8); al += 8; }
	}
	if (t == 1 && rand() % 6 == 0) {  /* a second tag on the way */
		wr16(a + al, OFPAT_PUSH_VLAN); wr16(a + al + 2, 8); wr16(a + al + 4, 0x8100); al += 8;
	}
	if (t == 3 && rand() % 8 == 0) { wr16(a + al, OFPAT_DEC_NW_TTL); wr16(a + al + 2, 8); al += 8; }
	if (t >= 1 && rand() % 3 == 0) { wr16(a + al, OFPAT_POP_VLAN); wr16(a + al + 2, 8); al += 8; }
	if (last && rand() % 5) {
		uint32_t port = rand() % 4 == 0 ? OFPP_IN_PORT : 1 + (uint32_t)(rand() % 2);
		wr16(a + al, OFPAT_OUTPUT); wr16(a + al + 2, 16); wr32(a + al + 4, port);
		wr16(a + al + 8, 0xffff); memset(a + al + 10, 0, 6); al += 16;
	} else if (!last && rand() % 8 == 0) {  /* an output on the way: a copy goes */
		wr16(a + al, OFPAT_OUTPUT); wr16(a + al + 2, 16); wr32(a + al + 4, 2);
		wr16(a + al + 8, 0xffff); memset(a + al + 10, 0, 6); al += 16;
	}
	if (al) {
		wr16(b + 2, (uint16_t)(8 + al));
		memset(b + 4, 0, 4);
		n = 8 + al;
	}
	if (!last && t == 0 && rand() % 2) {
		wr16(b + n, OFPIT_WRITE_METADATA); wr16(b + n + 2, 24); memset(b + n + 4, 0, 4);
		memset(b + n + 8, 0, 8); b[n + 15] = (uint8_t)(rand() % 3);
		memset(b + n + 16, 0, 8); b[n + 23] = 0xff;
		n += 24;
	}
	if (!last) {
		uint8_t to = (uint8_t)(t + 1 + rand() % (NT - 1 - t));
		wr16(b + n, OFPIT_GOTO_TABLE); wr16(b + n + 2, 8); b[n + 4] = to;
		memset(b + n + 5, 0, 3);
		n += 8;
	}
	f->inlen = n;
	f->idle = rand() % 2 ? 1000 : 0;
}

static void send_flow(const struct tflow *f, uint8_t cmd)
{
	uint8_t b[512];
	memset(b, 0, sizeof(b));
	b[0] = 4; b[1] = OFPT_FLOW_MOD;
	b[24] = f->table; b[25] = cmd; wr16(b + 26, f->idle); wr16(b + 30, f->prio);
	wr32(b + 32, OFP_NO_BUFFER); wr32(b + 36, OFPP_ANY); wr32(b + 40, OFPG_ANY);
	size_t ml = 4 + f->oxlen, pl = (ml + 7) / 8 * 8, o = 48;
	wr16(b + o, 1); wr16(b + o + 2, (uint16_t)ml); memcpy(b + o + 4, f->ox, f->oxlen);
	o += pl;
	memcpy(b + o, f->in, f->inlen);
	o += f->inlen;
	wr16(b + 2, (uint16_t)o);
	out.len = 0;
	ofs_handle_msg(&out, b, o);
	if (out.len >= 8 && out.data[1] == OFPT_ERROR)
		refused++;
}

static void random_change(void)
{
	int r = rand() % 10;
	if (r < 5 || ntf < 8) {
		if (ntf == MAXF)
			return;
		struct tflow *f = &tf[ntf++];
		memset(f, 0, sizeof(*f));
		f->prio = (uint16_t)(1 + rand() % 200);
		random_flow(f, (uint8_t)(rand() % NT));
		send_flow(f, OFPFC_ADD);
	} else if (r < 8) {  /* MODIFY_STRICT: new instructions, same match */
		struct tflow *f = &tf[rand() % ntf];
		struct tflow g = *f;
		random_flow(&g, f->table);
		memcpy(f->in, g.in, g.inlen);
		f->inlen = g.inlen;
		send_flow(f, OFPFC_MODIFY_STRICT);
	} else {
		int i = rand() % ntf;
		send_flow(&tf[i], OFPFC_DELETE_STRICT);
		tf[i] = tf[--ntf];
	}
}

static uint16_t ip_csum(const uint8_t *ip)
{
	uint32_t s = 0;
	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void make_frames(void)
{
	for (int k = 0; k < NKEYS; k++) {
		uint8_t *f = frames[k];
		memset(f, 0, sizeof(frames[k]));
		mac(f, rand() % 4 ? MAC_DST[rand() % 3] : 0x40);
		mac(f + 6, MAC_SRC[rand() % 3]);
		size_t o = 12;
		if (rand() % 3 == 0) {
			wr16(f + o, 0x8100); wr16(f + o + 2, (uint16_t)(5 + rand() % 3)); o += 4;
		}
		wr16(f + o, 0x0800); o += 2;
		uint8_t *ip = f + o;
		ip[0] = 0x45; wr16(ip + 2, 46); ip[8] = (uint8_t)(1 + rand() % 3); ip[9] = 17;
		wr32(ip + 12, 0x0b000001u); wr32(ip + 16, 0x0a000000u | (uint32_t)(rand() % 5));
		wr16(ip + 10, ip_csum(ip));
		uint8_t *udp = ip + 20;
		wr16(udp, 1000); wr16(udp + 2, 2000); wr16(udp + 4, 26);
		flen[k] = (uint16_t)(o + 46);
		if (rand() % 3 == 0) {  /* Ethernet padding behind the IP packet (not trimmed) */
			unsigned pad = 1 + (unsigned)(rand() % 6);
			memset(f + flen[k], 0xee, pad);
			flen[k] = (uint16_t)(flen[k] + pad);
		} else if (rand() % 4 == 0 && o == 16) {
			flen[k] = (uint16_t)(flen[k] - 4);  /* short: IP's 46 bytes end past the frame */
		}
	}
}

/* What one run produced. */
struct run {
	unsigned n_out[2];
	uint8_t (*out)[2][NFEED * 2][84];  /* port, index: len byte + frame */
	uint64_t pk[MAXF * 2], by[MAXF * 2];
	bool used[MAXF * 2];
	uint64_t lookups[NT], matched[NT];
	unsigned n_flows;
};

static struct ofs_flow *flow_at[MAXF * 2];
static unsigned n_flow_at;

static void list_flows(void)
{
	n_flow_at = 0;
	for (int t = 0; t < NT; t++)
		for (struct ofs_flow *f = ofs_dp.tables[t].flows; f; f = f->next)
			if (n_flow_at < MAXF * 2)
				flow_at[n_flow_at++] = f;
}

static void wait_idle(void)
{
	while (rte_ring_count(rx1))
		rte_pause();
	/* the burst that took the last frames ended, and the loop after it flushed its tx */
	for (int i = 0; i < 3; i++)
		rte_rcu_qsbr_synchronize(ofs_dp.qsbr, RTE_QSBR_THRID_INVALID);
}

static void drain(struct rte_ring *r, struct run *x, int port)
{
	void *o[256];
	unsigned n;
	while ((n = rte_ring_sc_dequeue_burst(r, o, 256, NULL)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			struct rte_mbuf *m = o[i];
			unsigned len = rte_pktmbuf_data_len(m);
			if (x && x->n_out[port] < NFEED * 2 && len <= 83) {
				uint8_t *d = (*x->out)[port][x->n_out[port]++];
				d[0] = (uint8_t)len;
				memcpy(d + 1, rte_pktmbuf_mtod(m, void *), len);
			}
			rte_pktmbuf_free(m);
		}
	}
}

static void one_run(struct ofs_worker *w, const uint16_t *seq, struct run *x)
{
	uint64_t pk0[MAXF * 2], by0[MAXF * 2];
	ofs_counters_sync();
	for (unsigned i = 0; i < n_flow_at; i++) {
		ofs_flow_counts(flow_at[i], &pk0[i], &by0[i]);
		flow_at[i]->last_used_ns = 1;
	}
	uint64_t lk0[NT], mt0[NT];
	for (int t = 0; t < NT; t++) {
		lk0[t] = w->lookup_count[t];
		mt0[t] = w->matched_count[t];
	}
	x->n_out[0] = x->n_out[1] = 0;
	for (unsigned b = 0; b < NFEED; b += 32) {
		struct rte_mbuf *m[32];
		while (rte_pktmbuf_alloc_bulk(pool, m, 32) != 0)
			rte_pause();
		for (int j = 0; j < 32; j++) {
			uint16_t k = seq[b + j];
			memcpy(rte_pktmbuf_append(m[j], flen[k]), frames[k], flen[k]);
		}
		unsigned q = 0;
		while (q < 32)
			q += rte_ring_sp_enqueue_burst(rx1, (void **)m + q, 32 - q, NULL);
		wait_idle();  /* the same bursts in every run */
		drain(tx1, x, 0);
		drain(tx2, x, 1);
	}
	ofs_counters_sync();
	for (unsigned i = 0; i < n_flow_at; i++) {
		uint64_t pk, by;
		ofs_flow_counts(flow_at[i], &pk, &by);
		x->pk[i] = pk - pk0[i];
		x->by[i] = by - by0[i];
		x->used[i] = flow_at[i]->last_used_ns != 1;
		if (!flow_at[i]->idle_timeout)
			x->used[i] = false;
	}
	for (int t = 0; t < NT; t++) {
		x->lookups[t] = w->lookup_count[t] - lk0[t];
		x->matched[t] = w->matched_count[t] - mt0[t];
	}
	x->n_flows = n_flow_at;
}

static unsigned compare(const struct run *a, const struct run *b, const char *what, unsigned ep)
{
	unsigned bad = 0;
	for (int p = 0; p < 2; p++) {
		if (a->n_out[p] != b->n_out[p]) {
			printf("epoch %u %s: port %d: %u frames, uncached %u\n", ep, what, p + 1,
			       b->n_out[p], a->n_out[p]);
			bad++;
			continue;
		}
		for (unsigned i = 0; i < a->n_out[p]; i++)
			if (memcmp((*a->out)[p][i], (*b->out)[p][i], (*a->out)[p][i][0] + 1u)) {
				printf("epoch %u %s: port %d frame %u differs\n", ep, what, p + 1, i);
				bad++;
				break;
			}
	}
	for (unsigned i = 0; i < a->n_flows; i++)
		if (a->pk[i] != b->pk[i] || a->by[i] != b->by[i] || a->used[i] != b->used[i]) {
			printf("epoch %u %s: flow %u (table %u prio %u): %llu packets %llu bytes "
			       "used %d, uncached %llu %llu %d\n", ep, what, i, flow_at[i]->table_id,
			       flow_at[i]->priority, (unsigned long long)b->pk[i],
			       (unsigned long long)b->by[i], b->used[i], (unsigned long long)a->pk[i],
			       (unsigned long long)a->by[i], a->used[i]);
			bad++;
			break;
		}
	for (int t = 0; t < NT; t++)
		if (a->lookups[t] != b->lookups[t] || a->matched[t] != b->matched[t]) {
			printf("epoch %u %s: table %d lookups %llu matched %llu, uncached %llu %llu\n",
			       ep, what, t, (unsigned long long)b->lookups[t],
			       (unsigned long long)b->matched[t], (unsigned long long)a->lookups[t],
			       (unsigned long long)a->matched[t]);
			bad++;
		}
	return bad;
}

static void set_cache(bool on, bool prog, bool forced)
{
	__atomic_store_n(&ofs_dp.pipe_cache_off, !on, __ATOMIC_RELEASE);
	__atomic_store_n(&ofs_dp.pipe_prog_off, !prog, __ATOMIC_RELEASE);
	__atomic_store_n(&ofs_dp.pipe_test_sets, forced ? 1u : 0u, __ATOMIC_RELEASE);
	__atomic_store_n(&ofs_dp.pipe_test_sig_mask, forced ? 2u : 0u, __ATOMIC_RELEASE);
	__atomic_add_fetch(&ofs_dp.pipe_gen, 1, __ATOMIC_RELEASE);
}



int main(int argc, char **argv)
{
	unsigned epochs = argc > 1 ? (unsigned)atoi(argv[1]) : 60;
	static struct dp_rig rig;
	dp_rig_init(&rig, "test_ofswitch_pipecache", "pcache", OFS_LOOKUP_DEFAULT, 8192, 1024);
	struct ofs_worker *w = rig.w;
	pool = rig.pool;
	rx1 = rig.rx[0];
	tx1 = rig.tx[0];
	tx2 = rig.tx[1];
	srand(41);
	make_frames();
	/* table-miss flows: on to the next table, the last one out of port 2 */
	for (uint8_t t = 0; t < NT; t++) {
		struct tflow *f = &tf[ntf++];
		memset(f, 0, sizeof(*f));
		uint8_t *b = f->in;
		if (t < NT - 1) {
			wr16(b, OFPIT_GOTO_TABLE); wr16(b + 2, 8); b[4] = (uint8_t)(t + 1);
			f->inlen = 8;
		} else {
			wr16(b, OFPIT_APPLY_ACTIONS); wr16(b + 2, 24);
			wr16(b + 8, OFPAT_OUTPUT); wr16(b + 10, 16); wr32(b + 12, 2);
			wr16(b + 16, 0xffff);
			f->inlen = 24;
		}
		f->table = t;
		send_flow(f, OFPFC_ADD);
	}
	for (int i = 0; i < 40; i++)
		random_change();
	ofs_commit();
	unsigned lc = rte_get_next_lcore(-1, 1, 0);
	w->lcore_id = lc;
	rte_eal_remote_launch(ofs_worker_main, w, lc);

	static struct run r[8];
	uint64_t forced_stores = 0, forced_checks = 0;
	for (int i = 0; i < 8; i++)
		r[i].out = calloc(1, sizeof(*r[i].out));
	unsigned bad = 0, forwarded = 0;
	static uint16_t seq[NFEED];
	for (unsigned ep = 0; ep < epochs && bad < 5; ep++) {
		int k = 1 + rand() % 4;
		for (int i = 0; i < k; i++)
			random_change();
		ofs_commit();
		rte_rcu_qsbr_synchronize(ofs_dp.qsbr, RTE_QSBR_THRID_INVALID);
		list_flows();
		for (unsigned i = 0; i < NFEED; i++)
			seq[i] = (uint16_t)(rand() % NKEYS);
		set_cache(false, false, false);
		one_run(w, seq, &r[0]);
		set_cache(true, false, false);
		one_run(w, seq, &r[1]);
		one_run(w, seq, &r[2]);
		set_cache(true, true, false);
		one_run(w, seq, &r[3]);
		one_run(w, seq, &r[4]);
		uint64_t st0 = w->pc_stores, ck0 = w->pc_sig_checks;
		set_cache(true, true, true);
		one_run(w, seq, &r[5]);
		one_run(w, seq, &r[6]);
		set_cache(true, false, true);
		one_run(w, seq, &r[7]);
		forced_stores += w->pc_stores - st0;
		forced_checks += w->pc_sig_checks - ck0;
		bad += compare(&r[0], &r[1], "cache on (stores)", ep);
		bad += compare(&r[0], &r[2], "cache on (hits)", ep);
		bad += compare(&r[0], &r[3], "programs (stores)", ep);
		bad += compare(&r[0], &r[4], "programs (hits)", ep);
		bad += compare(&r[0], &r[5], "forced conflicts, programs (stores)", ep);
		bad += compare(&r[0], &r[6], "forced conflicts, programs (again)", ep);
		bad += compare(&r[0], &r[7], "forced conflicts, replaying", ep);
		forwarded += r[0].n_out[0] + r[0].n_out[1];
	}
	ofs_dp.force_quit = true;
	rte_eal_wait_lcore(lc);
	printf("pipecache: %u epochs, %u frames out uncached, %llu cache hits (%llu by programs), "
	       "%llu stores, %u flow mods refused; forced conflicts: %llu stores into %u ways, "
	       "%llu signature matches on another key; differ %u\n", epochs, forwarded,
	       (unsigned long long)w->pc_hits, (unsigned long long)w->pc_prog_hits,
	       (unsigned long long)w->pc_stores, refused, (unsigned long long)forced_stores,
	       OFS_PC_WAYS, (unsigned long long)forced_checks, bad);
	int fail = bad != 0 || w->pc_hits == 0 || w->pc_prog_hits == 0 || forwarded == 0 ||
		   forced_checks == 0 || forced_stores <= OFS_PC_WAYS * epochs;
	dp_rig_close(&rig);
	printf("%s\n", fail ? "FAIL" : "OK");
	return fail;
}
