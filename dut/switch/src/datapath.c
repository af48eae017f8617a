/* datapath.c -- worker lcores: rx burst, OpenFlow pipeline, tx (and, in fail-standalone mode
 * while no controller is connected, learning-switch forwarding instead). The flow cache is
 * flowcache.h/.c, the actions actions.c, checksums pkt_csum.c, meters meter.c
 * (datapath_internal.h says what each unit holds). See ofswitch.h for the threading rules and
 * the flow cache, flowtable.h for how tables change under the workers. Per packet: no lock, no allocation except copies for multi-output and
 * packets for the controller. Per poll loop: each table's lookup structure is entered (its
 * reader protocol) at its first lookup and left before the QSBR quiescent report; table 0's
 * cache misses of a burst are looked up together (lookup_burst). Transmission goes through
 * per-worker tx buffers: a full one is sent at once, partial ones when the loop found nothing
 * to do or every OFS_TX_DRAIN_US (DPDK l2fwd's drain timer), and at exit. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_hash_crc.h>
#include <rte_cycles.h>
#include <rte_prefetch.h>
#include "ofswitch.h"
#include "flowarena.h"
#include "vhost_port.h"
#include "datapath_internal.h"
#include "flowcache.h"
#include "pipecache.h"

struct ofs_dp ofs_dp;

uint64_t ofs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- agent wake-up -------------------------------------------------------------------------- */
/* After a Packet-In enqueue: wake the agent if it sleeps in poll(). The fence orders the ring's
 * tail store before the load of agent_sleeping (the agent stores agent_sleeping, then reads the
 * ring): one of the two sides always sees the other, so no Packet-In waits for the 100 ms tick.
 * Costs a fence per Packet-In and a write() only when the agent actually sleeps. */
void __rte_cold ofs_wake_agent(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ofs_dp.agent_sleeping, __ATOMIC_RELAXED) &&
	    __atomic_exchange_n(&ofs_dp.agent_sleeping, 0, __ATOMIC_ACQ_REL)) {
		uint64_t one = 1;
		ssize_t r = write(ofs_dp.agent_wake_fd, &one, sizeof(one));
		(void)r;
	}
}

/* ---- ports: rx, tx buffering ---------------------------------------------------------------- */
/* A burst from a port's rx queue 0: an ethdev's, or a vhost-user guest's tx ring. */
static inline uint16_t port_rx(struct ofs_worker *w, int pidx, struct rte_mbuf **pkts)
{
	struct ofs_port *p = &ofs_dp.ports[pidx];
	if (p->vhost)
		return ofs_vhost_rx(p->vhost, w->pool, pkts, OFS_BURST);
	return rte_eth_rx_burst(p->dpdk_id, 0, pkts, OFS_BURST);
}

/* Send what the worker buffered for a port (DPDK's rte_eth_tx_buffer_flush, with a vhost-user
 * port's tx beside the ethdev's); the rest a queue did not take goes to the buffer's error
 * callback (ofs_tx_unsent). */
static void port_tx_flush(struct ofs_worker *w, int pidx)
{
	struct rte_eth_dev_tx_buffer *b = w->txb[pidx];
	uint16_t n = b->length;
	if (n == 0)
		return;
	struct ofs_port *p = &ofs_dp.ports[pidx];
	uint16_t sent = p->vhost ? ofs_vhost_tx(p->vhost, b->pkts, n)
				 : rte_eth_tx_burst(p->dpdk_id, w->txq[pidx].queue_id, b->pkts, n);
	b->length = 0;
	if (unlikely(sent < n))
		b->error_callback(&b->pkts[sent], (uint16_t)(n - sent), b->error_userdata);
}

void ofs_dp_tx_one(struct ofs_worker *w, int pidx, struct rte_mbuf *m)
{
	struct ofs_port *p = &ofs_dp.ports[pidx];
	if (!p->link_up || (p->config & (OFPPC_PORT_DOWN | OFPPC_NO_FWD))) {
		w->port_stats[pidx].tx_dropped++;
		rte_pktmbuf_free(m);
		return;
	}
	w->port_stats[pidx].tx_packets++;
	w->port_stats[pidx].tx_bytes += rte_pktmbuf_pkt_len(m);
	struct rte_eth_dev_tx_buffer *b = w->txb[pidx];
	b->pkts[b->length++] = m;
	if (b->length == b->size)
		port_tx_flush(w, pidx);
}

/* The tx buffer's error callback: the queue took only part of a burst (e.g. a vhost-user
 * guest's rx ring is full). Drop the rest and count it as tx_dropped, taking it back out of
 * tx_packets/tx_bytes, which ofs_dp_tx_one counted when it buffered the packet (DPDK's default
 * callback frees silently, so the OpenFlow port counters claimed packets that never left).
 * No retry: a retry-while-progress loop as OVS-DPDK has sent 0 packets in the vmwire loop
 * (the switch drops only the start-up overflow there). */
void ofs_tx_unsent(struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct ofs_txq *q = arg;
	for (uint16_t i = 0; i < n; i++) {
		q->stats->tx_packets--;
		q->stats->tx_bytes -= rte_pktmbuf_pkt_len(pkts[i]);
		q->stats->tx_dropped++;
		rte_pktmbuf_free(pkts[i]);
	}
}

/* ---- pipeline ----------------------------------------------------------------------------- */
/* Enter table t's lookup structure (once per poll loop; ofs_reader_leave_all leaves). */
static inline void reader_enter(struct ofs_worker *w, unsigned t, const struct ofs_table_view *v)
{
	if (!(w->entered >> t & 1)) {
		ofs_dp.lookup_ops->reader_enter(v->lx, w->idx);
		w->entered |= 1ull << t;
	}
}

static void ofs_reader_leave_all(struct ofs_worker *w)
{
	for (uint64_t e = w->entered; e; e &= e - 1)
		ofs_dp.lookup_ops->reader_leave(ofs_dp.tables[__builtin_ctzll(e)].lx, w->idx);
	w->entered = 0;
}

/* A hit on p's entry: when it is a fast entry and the packet may take run_pipeline's fast_out
 * way (ofs_port_idx of the output, not back out of its in_port, at least 60 bytes), count it in
 * the entry now, while its line is at hand and before a store of this burst may take the line
 * (ck_store flushes what it overwrites); process_burst sends it. Else p->fast = 0: the general
 * way. */
static inline void ck_take_fast(struct ofs_worker *w, struct ck_probe *p, struct pkt_ctx *c)
{
	if (!p->fast)
		return;
	uint32_t len = rte_pktmbuf_data_len(c->m);
	if (len < 60 || ofs_dp.ports[p->fast - 1].ofport == c->in_port) {
		p->fast = 0;
		return;
	}
	ck_count(w, p->line, len);
}

static struct ofs_flow *table_lookup(struct pkt_ctx *c, uint8_t t)
{
	struct ck_probe p;
	const struct ofs_table_view *v = __atomic_load_n(&ofs_dp.tables[t].view, __ATOMIC_ACQUIRE);
	if (v)
		reader_enter(c->w, t, v);
	ensure_parsed(c);
	ck_prepare(&c->key, v, c->w->cache_mask, &p);
	return ck_lookup(c->w, &c->key, &p);
}

/* A frame's way through the tables as run_pipeline_x records it for the pipeline cache. */
struct pc_rec {
	unsigned n;                  /* hops taken (may exceed OFS_PC_HOPS: then not stored) */
	uint8_t t[OFS_PC_HOPS];
	struct ofs_flow *f[OFS_PC_HOPS];
};

/* first: table `table`'s flow when the caller already looked it up (burst pre-pass), or NULL.
 * hops: a pipeline-cache hit (pipecache.h): its flows stand for the lookups, table 0 on.
 * rec: the way taken is written there. */
static __rte_always_inline void run_pipeline_x(struct pkt_ctx *c, uint8_t table,
					       struct ofs_flow *first,
					       const struct ofs_pc_entry *hops, struct pc_rec *rec)
{
	uint8_t t = table;
	bool pre = first != NULL || c->pre_looked_up;
	unsigned hop = 0;
	c->pre_looked_up = false;
	for (;;) {
		struct ofs_flow *f;
		if (hops && likely(hop < hops->n_hops))
			f = hops->flow[hop++];  /* the same table: the same flows led here */
		else
			f = pre ? first : table_lookup(c, t);
		pre = false;
		if (rec) {
			if (rec->n < OFS_PC_HOPS) {
				rec->t[rec->n] = t;
				rec->f[rec->n] = f;
			}
			rec->n++;
		}
		c->w->lookup_count[t]++;
		if (!f)
			break; /* table miss without a table-miss entry: drop */
		c->w->matched_count[t]++;
		uint32_t len = plen(c);
		/* sole writer: plain adds on the flow's hot line (the agent's aligned 64-bit
		 * reads are not torn); several workers: each its own counters (flowarena.h) */
		if (ofs_dp.n_workers == 1) {
			f->packets++;
			f->bytes += len;
		} else {
			struct ofs_flow_ctr *k = f->ctr + c->w->ctr_off;
			k->packets++;
			k->bytes += len;
		}
		if (unlikely(f->idle_timeout)) {
			/* one clock read per burst (idle timeouts count in seconds): a vDSO
			 * clock_gettime per packet was a tenth of a FAUCET frame's cycles */
			if (!c->w->burst_now_ns)
				c->w->burst_now_ns = ofs_now_ns();
			f->last_used_ns = c->w->burst_now_ns;
		}
		c->table_id = t;
		c->cookie = f->cookie;
		c->pin_reason = f->table_miss ? OFPR_NO_MATCH : OFPR_ACTION;
		if (f->meter_id && !ofs_dp_meter_apply(c, f->meter_id)) {
			c->dropped = true;
			break;
		}
		/* The common flow (f->fast_out): apply-actions = one output to a switch port,
		 * nothing else to do; what exec_actions + ofs_act_emit would do, without their
		 * generality, and without reading the action bytes. */
		if (f->fast_out && !c->aset_any && c->pending == NO_PORT && !c->csum_dirty &&
		    len >= 60 && c->m->nb_segs == 1) {
			uint32_t out = f->fast_out;
			int idx = ofs_port_idx(out);
			if (out != c->in_port && idx >= 0) {
				ofs_dp_tx_one(c->w, idx, c->m);
				c->m = NULL;
				return;
			}
		}
		if (f->apply_len)
			exec_actions(c, f->apply, f->apply_len);
		if (!c->m || c->dropped)
			break;
		if (f->clear_actions) {
			memset(c->aset, 0, sizeof(c->aset));
			memset(c->aset_setf, 0, sizeof(c->aset_setf));
			c->aset_any = false;
		}
		if (f->write_len)
			write_actions(c, f->write, f->write_len);
		if (f->has_write_md)
			c->key.metadata = (c->key.metadata & ~f->md_mask) | (f->md_value & f->md_mask);
		if (f->goto_table == 0xff || f->goto_table <= t)
			break;
		/* a pending output:CONTROLLER is this flow's packet-in (its reason, table, cookie),
		 * sent before the next flow's match overwrites them (no mbuf copy: the data is
		 * copied into the packet-in either way) */
		if (unlikely(c->pending == OFPP_CONTROLLER))
			flush_pending(c);
		t = f->goto_table;
	}
	if (c->m && !c->dropped) {
		/* Pending apply-action output first, then the action set. */
		if (c->aset_any) {
			flush_pending(c);
			ofs_act_exec_action_set(c);
		}
		if (c->m && !c->dropped && c->pending != NO_PORT) {
			uint32_t p = c->pending;
			c->pending = NO_PORT;
			ofs_act_emit(c, p, c->pending_max_len, true);
		}
	}
	if (c->m) {
		rte_pktmbuf_free(c->m);
		c->m = NULL;
	}
}

static void run_pipeline(struct pkt_ctx *c, uint8_t table, struct ofs_flow *first)
{
	run_pipeline_x(c, table, first, NULL, NULL);
}

/* ---- pipeline cache (pipecache.h) --------------------------------------------------------- */
/* A pipeline-cache hit: the entry's compiled program (pipecache.h) when it has one and the
 * frame passes its checks, with every hop's counts as run_pipeline_x keeps them (the frame's
 * length at each hop from the program); else the entry's flows instead of the lookups. */
static __rte_noinline void run_pipeline_hit(struct pkt_ctx *c, const struct ofs_pc_entry *e,
					    const struct ofs_pc_prog *g)
{
	if (!g || !g->kind || !pc_prog_ready(c, g)) {
		run_pipeline_x(c, 0, NULL, e, NULL);
		return;
	}
	struct ofs_worker *w = c->w;
	unsigned n = e->n_hops;  /* the table counts from the entry's first line and g alone */
	for (unsigned h = 0; h < n; h++) {
		w->lookup_count[e->table[h]]++;
		w->matched_count[e->table[h]] += h + 1 < n || !g->last_miss;
	}
	pc_prog_count(w, (uint32_t)(g - w->pc_prog), plen(c));
	w->pc_prog_hits++;
	pc_prog_run(c, g);
}

/* A miss's way, kept until the burst's end (process_burst), then stored for its probe. */
struct pc_pend {
	struct pc_rec rec;
	struct ofs_layout lay;       /* as received: the program is compiled for it */
	uint16_t et;                 /* its eth_type, host order */
	uint16_t j;                  /* its frame in the burst (its probe) */
};

/* A miss: the per-table way (first: table 0's flow from the burst pre-pass), kept in *pd for
 * the store when it crossed two tables or more through actions the key determines. */
static __rte_noinline bool run_pipeline_store(struct pkt_ctx *c, struct ofs_flow *first,
					      struct pc_pend *pd)
{
	pd->lay = c->lay;
	pd->et = ntohs(c->key.eth_type);
	pd->rec.n = 0;
	run_pipeline_x(c, 0, first, NULL, &pd->rec);
	return pd->rec.n >= 2 && pd->rec.n <= OFS_PC_HOPS && pc_way_ok(pd->rec.n, pd->rec.f);
}

/* The burst's kept ways, stored once every frame of it ran (pc_store's why). */
static __rte_noinline void pc_store_pending(struct ofs_worker *w, const struct pc_probe *pcp,
					    const struct pc_pend *pd, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const struct pc_pend *x = &pd[i];
		struct ofs_pc_entry *e = pc_store(w, &pcp[x->j], x->rec.n, x->rec.t, x->rec.f);
		if (w->pc_prog && w->pc_prog_on)
			pc_compile(&w->pc_prog[e - w->pc], x->rec.n, x->rec.f, &x->lay, x->et);
		else if (w->pc_prog)
			w->pc_prog[e - w->pc].kind = 0;
	}
}

void ofs_pc_flush_all(struct ofs_worker *w)
{
	for (uint32_t k = 0; k < w->pc_n_dirty; k++)
		pc_prog_flush(w, w->pc_dirty[k]);
	w->pc_n_dirty = 0;
}

/* The words of the pipeline cache's key after the views changed (ofs_dp.pipe_gen): the union
 * of every table's masks, in_port, eth_type, VLAN and ip_proto whole. Off for a pipeline of
 * one table, a table in a mask-union transition (its view not cacheable), or more words than
 * an entry holds. */
static __rte_noinline void ofs_pc_refresh(struct ofs_worker *w, uint64_t gen)
{
	uint64_t u[OFS_KEY_WORDS] = { 0 };
	struct ofs_key k;
	unsigned n_tables = 0;
	bool ok = w->pc != NULL && !__atomic_load_n(&ofs_dp.pipe_cache_off, __ATOMIC_ACQUIRE);
	w->pc_gen = gen;
	uint32_t sets = __atomic_load_n(&ofs_dp.pipe_test_sets, __ATOMIC_ACQUIRE);
	uint32_t sig_mask = __atomic_load_n(&ofs_dp.pipe_test_sig_mask, __ATOMIC_ACQUIRE);
	w->pc_set_mask = sets && sets <= OFS_PC_SETS && !(sets & (sets - 1)) ? sets - 1
									   : OFS_PC_SETS - 1;
	w->pc_sig_mask = sig_mask ? sig_mask : ~0u;
	for (unsigned t = 0; t < OFS_N_TABLES && ok; t++) {
		const struct ofs_table_view *v = __atomic_load_n(&ofs_dp.tables[t].view,
								 __ATOMIC_ACQUIRE);
		if (!v)
			continue;
		n_tables++;
		ok = v->cacheable;
		for (unsigned i = 0; i < v->n_words && i < OFS_KEY_WORDS; i++)
			u[v->word[i]] |= v->mask[i];
	}
	memset(&k, 0, sizeof(k));
	memset(&k.in_port, 0xff, sizeof(k.in_port));
	memset(&k.eth_type, 0xff, sizeof(k.eth_type));
	memset(&k.vlan_vid, 0xff, sizeof(k.vlan_vid));
	memset(&k.vlan_pcp, 0xff, sizeof(k.vlan_pcp));
	memset(&k.ip_proto, 0xff, sizeof(k.ip_proto));
	const uint64_t *kw = (const uint64_t *)&k;
	unsigned n = 0;
	for (unsigned i = 0; i < OFS_KEY_WORDS && ok; i++) {
		uint64_t m = u[i] | kw[i];
		if (!m)
			continue;
		if (n == OFS_PC_WORDS - 2) {
			ok = false;
			break;
		}
		w->pc_word[n] = (uint8_t)i;
		w->pc_mask_w[n++] = m;
	}
	w->pc_n_words = (uint8_t)n;
	w->pc_on = ok && n_tables >= 2;
	w->pc_prog_on = w->pc_prog != NULL && !__atomic_load_n(&ofs_dp.pipe_prog_off,
								__ATOMIC_ACQUIRE);
}

/* an output to TABLE (actions.c): the pipeline from table 0 (run_pipeline stays this file's, so
 * the compiler specialises it for table 0 as before) */
void ofs_dp_resubmit(struct pkt_ctx *c)
{
	run_pipeline(c, 0, NULL);
}

/* po's actions on m, which holds po's frame (fuzz/fuzz_datapath.c passes a guarded one) */
static void run_packet_out(struct ofs_worker *w, struct ofs_pout *po, struct rte_mbuf *m)
{
	struct pkt_ctx *c = malloc(sizeof(*c));
	w->burst_now_ns = 0;  /* run_pipeline reads the clock afresh (an OUTPUT to TABLE) */
	if (!c) {
		rte_pktmbuf_free(m);
		return;
	}
	memset(c, 0, sizeof(*c));
	c->w = w;
	c->m = m;
	c->in_port = po->in_port;
	c->key.in_port = htonl(po->in_port);
	c->key.in_phy_port = c->key.in_port;
	c->pin_reason = OFPR_ACTION;
	c->table_id = 0xff;
	c->cookie = ~0ull; /* OF1.3 7.4.1: packet-ins caused by a PACKET_OUT carry cookie -1 */
	reparse(c);
	exec_actions(c, po->actions, po->actions_len);
	if (c->m && !c->dropped && c->pending != NO_PORT)
		ofs_act_emit(c, c->pending, c->pending_max_len, true);
	if (c->m)
		rte_pktmbuf_free(c->m);
	free(c);
}

void ofs_run_packet_out(struct ofs_worker *w, struct ofs_pout *po)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(w->pool);
	if (!m)
		return;
	char *d = rte_pktmbuf_append(m, po->data_len);
	if (!d) {
		rte_pktmbuf_free(m);
		return;
	}
	memcpy(d, po->data, po->data_len);
	run_packet_out(w, po, m);
}

/* ---- worker loop -------------------------------------------------------------------------- */
/* Burst pre-pass for one received packet: set up its context and parse it. Returns false
 * when the packet was consumed (port does not receive, cannot linearise). */
static bool prepare_rx(struct ofs_worker *w, int pidx, struct rte_mbuf *m, struct pkt_ctx *c)
{
	struct ofs_port *port = &ofs_dp.ports[pidx];
	w->port_stats[pidx].rx_packets++;
	w->port_stats[pidx].rx_bytes += rte_pktmbuf_pkt_len(m);
	if (port->config & OFPPC_NO_RECV) {
		rte_pktmbuf_free(m);
		return false;
	}
	if (m->nb_segs > 1 && rte_pktmbuf_linearize(m) != 0) {
		rte_pktmbuf_free(m);
		return false;
	}
	/* Reset only what the pipeline reads before writing. */
	c->w = w;
	c->m = m;
	c->in_port = port->ofport;
	c->key.in_port = htonl(port->ofport);
	c->key.in_phy_port = c->key.in_port;
	c->key.metadata = 0;
	c->key.tunnel_id = 0;
	c->pending = NO_PORT;
	c->csum_dirty = false;
	c->csum_layout_proto = 0;
	c->dropped = false;
	c->depth = 0;
	c->aset_any = false;    /* aset/aset_setf are cleared by the first write_actions */
	c->pre_looked_up = false;
	reparse(c);
	return true;
}

/* Fail-standalone forwarding (no controller connected): learn the source MAC on the ingress
 * port, send to the port the destination was learnt on (drop when that is the ingress port),
 * flood when unknown or multicast. The table is the worker's own (no locks); a worker that
 * does not see a host's frames floods towards it. No aging: a moved host is relearnt by its
 * next frame. */
static void standalone_forward(struct pkt_ctx *c, int pidx)
{
	const uint8_t *eth = pdata(c);
	uint64_t *tab = c->w->mac_learned;
	c->pending = NO_PORT;
	if (plen(c) < 14) {  /* no Ethernet header to learn from or look up: flooded */
		ofs_act_emit(c, OFPP_FLOOD, 0, true);
		return;
	}
	uint64_t src = (uint64_t)rd16(eth + 6) << 32 | rd32(eth + 8);
	uint64_t dst = (uint64_t)rd16(eth) << 32 | rd32(eth + 2);
	if (!(eth[6] & 1))  /* unicast sources only */
		tab[rte_hash_crc_8byte(src, 0) & (OFS_MAC_TABLE - 1)] =
			src | (uint64_t)(pidx + 1) << 48;
	uint64_t e = tab[rte_hash_crc_8byte(dst, 0) & (OFS_MAC_TABLE - 1)];
	int out = !(eth[0] & 1) && (e & ((1ull << 48) - 1)) == dst ? (int)(e >> 48) - 1 : -1;
	if (out == pidx) {  /* the destination is behind the ingress port: filtered */
		rte_pktmbuf_free(c->m);
		c->m = NULL;
	} else {
		ofs_act_emit(c, out >= 0 ? ofs_dp.ports[out].ofport : OFPP_FLOOD, 0, true);
	}
}

/* Multi-table pipelines (goto-table, write-metadata): the next table's cache entry of each
 * packet whose table-0 flow goes on with nothing before the goto but write-metadata (no
 * apply-actions, no meter: nothing that could change the key first) follows from the flow,
 * so its line is prefetched for the whole burst here instead of being waited for one packet
 * at a time in run_pipeline, which looks it up again (this pass only warms lines). */
static __rte_noinline void prefetch_next_tables(struct ofs_worker *w, struct pkt_ctx *ctx,
						struct ofs_flow *const *first, const bool *live,
						uint16_t n)
{
	for (uint16_t j = 0; j < n; j++) {
		const struct ofs_flow *f = first[j];
		if (!live[j] || !f || f->goto_table == 0xff || f->apply_len || f->meter_id)
			continue;
		const struct ofs_table_view *v = __atomic_load_n(&ofs_dp.tables[f->goto_table].view,
								 __ATOMIC_ACQUIRE);
		if (!v || !v->cacheable)
			continue;
		struct ofs_key *k = &ctx[j].key;
		uint64_t md = k->metadata;
		if (f->has_write_md)
			k->metadata = (md & ~f->md_mask) | (f->md_value & f->md_mask);
		struct ck_probe p;
		ck_prepare(k, v, w->cache_mask, &p);
		k->metadata = md;
		ck_prefetch(w, &p, 0);
	}
}

/* A burst from one port, l3fwd style, in passes so each one's memory loads overlap: parse every
 * packet and hash its table-0 cache key (prefetch the entry's first place); probe it there
 * (prefetch the second place when it is not); probe the second places and look the misses up
 * in one batch (lookup_burst); send the hits on fast entries (counted at the hit,
 * ck_take_fast); prefetch the other flows' hot line and actions; run their pipelines. The view
 * and the flows stay valid: the worker reports its RCU quiescent state only after the burst. */
static void process_burst(struct ofs_worker *w, int pidx, struct rte_mbuf **pkts, uint16_t n,
			  struct pkt_ctx *ctx)
{
	struct ofs_flow *first[OFS_BURST];
	struct ck_probe probe[OFS_BURST];
	struct pc_probe pcp[OFS_BURST];
	bool live[OFS_BURST];
	const struct ofs_key *mkeys[OFS_BURST];
	struct ofs_flow *mflows[OFS_BURST];
	uint16_t miss[OFS_BURST], n_miss = 0;
	const struct ofs_table_view *ix0 = __atomic_load_n(&ofs_dp.tables[0].view,
							    __ATOMIC_ACQUIRE);
	if (ix0)
		reader_enter(w, 0, ix0);
	w->burst_now_ns = 0;  /* read at the burst's first idle-timeout flow (run_pipeline) */
	if (__atomic_load_n(&ofs_dp.standalone, __ATOMIC_ACQUIRE)) {
		/* fail-standalone with no controller (ofswitch.h): a learning switch, tables
		 * untouched */
		for (uint16_t j = 0; j < n; j++)
			if (prepare_rx(w, pidx, pkts[j], &ctx[j]))
				standalone_forward(&ctx[j], pidx);
		return;
	}
	for (uint16_t j = 0; j < n && j < 4; j++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[j], void *));
	for (uint16_t j = 0; j < n; j++) {
		if (j + 4 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[j + 4], void *));
		live[j] = prepare_rx(w, pidx, pkts[j], &ctx[j]);
	}
	/* The pipeline cache (pipecache.h): every frame's entry, its set prefetched, then found;
	 * a hit skips table 0's pre-pass below (its pipeline runs in order with the others). */
	uint64_t gen = __atomic_load_n(&ofs_dp.pipe_gen, __ATOMIC_ACQUIRE);
	if (unlikely(gen != w->pc_gen))
		ofs_pc_refresh(w, gen);
	bool pc_on = w->pc_on;
	bool slow[OFS_BURST];
	if (pc_on) {
		/* hash, the set's signatures prefetched; the matching ways' entry and program
		 * prefetched; the words compared (pipecache.h "Probes") */
		for (uint16_t j = 0; j < n; j++) {
			if (!live[j])
				continue;
			pc_prepare(w, &ctx[j].key, &ctx[j].lay, &pcp[j]);
			pc_prefetch(w, &pcp[j]);
		}
		for (uint16_t j = 0; j < n; j++) {
			if (!live[j])
				continue;
			pc_scan(w, &pcp[j]);
			if (pcp[j].cand && w->pc_prog_on)
				rte_prefetch0(&w->pc_prog[pc_way(w, pcp[j].set, (unsigned)
							__builtin_ctz(pcp[j].cand)) - w->pc]);
		}
		for (uint16_t j = 0; j < n; j++) {
			slow[j] = live[j];
			if (live[j] && pcp[j].cand && pc_find(w, &pcp[j])) {
				slow[j] = false;
				/* a program's hit reads no flow (its counts wait in the program) */
				if (!w->pc_prog_on || !w->pc_prog[pcp[j].hit - w->pc].kind)
					rte_prefetch0(&pcp[j].hit->flow[0]);
			}
		}
		for (uint16_t j = 0; j < n; j++)
			if (live[j] && pcp[j].hit) {
				const struct ofs_pc_entry *e = pcp[j].hit;
				if (w->pc_prog_on && w->pc_prog[e - w->pc].kind)
					continue;
				for (unsigned h = 0; h < e->n_hops; h++)
					if (e->flow[h])
						rte_prefetch0(e->flow[h]);
			}
	} else {
		memcpy(slow, live, sizeof(live[0]) * n);
	}
	/* A pass of its own: the parser writes the key in narrow stores, and an 8-byte load of a
	 * word just written that way cannot be forwarded from the store buffer (it waits for the
	 * stores to retire); a burst later they have. */
	for (uint16_t j = 0; j < n; j++) {
		if (!slow[j])
			continue;
		ck_prepare(&ctx[j].key, ix0, w->cache_mask, &probe[j]);
		if (probe[j].cacheable)
			ck_prefetch(w, &probe[j], 0);
	}
	/* the entries at their first place; the rest prefetch their second */
	bool second[OFS_BURST];
	for (uint16_t j = 0; j < n; j++) {
		first[j] = NULL;
		second[j] = false;
		if (!slow[j])
			continue;
		ctx[j].pre_looked_up = true;
		if (!ix0 || !probe[j].cacheable)
			continue;
		probe[j].stale = -1;
		if (ck_find_at(w, &probe[j], 0, &first[j])) {
			w->cache_hits++;
			ck_take_fast(w, &probe[j], &ctx[j]);
			continue;
		}
		second[j] = true;
		ck_prefetch(w, &probe[j], 1);
	}
	for (uint16_t j = 0; j < n; j++) {
		if (!slow[j] || !ix0)
			continue;
		if (probe[j].cacheable) {
			if (!second[j])
				continue;
			if (ck_find_at(w, &probe[j], 1, &first[j])) {
				w->cache_hits++;
				ck_take_fast(w, &probe[j], &ctx[j]);
				continue;
			}
		}
		w->cache_misses++;
		miss[n_miss] = j;
		mkeys[n_miss++] = &ctx[j].key;
	}
	if (n_miss) {
		ofs_dp.lookup_ops->lookup_burst(ix0->lx, mkeys, n_miss, mflows);
		for (uint16_t i = 0; i < n_miss; i++)  /* ck_store reads their priority */
			if (mflows[i])
				rte_prefetch0(mflows[i]);
		for (uint16_t i = 0; i < n_miss; i++) {
			uint16_t j = miss[i];
			struct ofs_flow *cached;
			first[j] = mflows[i];
			/* the same key twice in one burst: store it once */
			if (probe[j].cacheable && !ck_find(w, &probe[j], &cached))
				ck_store(w, &probe[j], first[j]);
			probe[j].fast = 0;  /* a miss goes the general way */
		}
	}
	/* Hits on fast entries (ofswitch.h), counted in their entry at the hit (ck_take_fast):
	 * the common flow's output, as run_pipeline's fast_out path sends it, without reading the
	 * flow's line. */
	for (uint16_t j = 0; j < n; j++) {
		if (!slow[j] || !probe[j].fast)
			continue;
		w->lookup_count[0]++;
		w->matched_count[0]++;
		ofs_dp_tx_one(w, probe[j].fast - 1, ctx[j].m);
		ctx[j].m = NULL;
		slow[j] = false;
	}
	for (uint16_t j = 0; j < n; j++)
		if (slow[j] && first[j])
			rte_prefetch0(first[j]);
	/* the actions of flows that are not the common one (fast_out), and the cold line of
	 * those that write metadata or an action set: one more dependent load per packet,
	 * overlapped across the burst */
	bool goes_on = false;
	for (uint16_t j = 0; j < n; j++) {
		const struct ofs_flow *f = first[j];
		if (!slow[j] || !f || f->fast_out)
			continue;
		if (f->apply)
			rte_prefetch0(f->apply);
		if (f->has_write_md || f->write_len)
			rte_prefetch0((const char *)f + RTE_CACHE_LINE_SIZE);
		goes_on |= f->goto_table != 0xff;
	}
	if (unlikely(goes_on))
		prefetch_next_tables(w, ctx, first, slow, n);
	if (!pc_on) {
		for (uint16_t j = 0; j < n; j++)
			if (slow[j])
				run_pipeline(&ctx[j], 0, first[j]);
		return;
	}
	struct pc_pend pend[OFS_BURST];
	unsigned n_pend = 0;
	for (uint16_t j = 0; j < n; j++) {
		if (!slow[j] && live[j] && pcp[j].hit) {
			w->pc_hits++;
			run_pipeline_hit(&ctx[j], pcp[j].hit,
					 w->pc_prog_on ? &w->pc_prog[pcp[j].hit - w->pc] : NULL);
		} else if (slow[j]) {
			pend[n_pend].j = j;
			n_pend += run_pipeline_store(&ctx[j], first[j], &pend[n_pend]);
		}
	}
	if (n_pend)
		pc_store_pending(w, pcp, pend, n_pend);
}

/* Rig measurements (issue 44, OFS_RIG_BUCKETS): the bucket of a value v >= 1 in units. */
static inline unsigned rig_bucket(uint64_t units)
{
	unsigned b = 63 - (unsigned)__builtin_clzll(units);
	return b < OFS_RIG_BUCKETS ? b : OFS_RIG_BUCKETS - 1;
}

/* A loop pass longer than the floor: count it in the gap histogram (rare: not per pass). */
static __rte_noinline void rig_note_gap(struct ofs_worker *w, uint64_t gap_tsc)
{
	w->gap_hist[rig_bucket(gap_tsc / w->gap_floor_tsc)]++;
}

int ofs_worker_main(void *arg)
{
	struct ofs_worker *w = arg;
	struct rte_mbuf *pkts[OFS_BURST];
	struct pkt_ctx *c = rte_zmalloc("ctx", sizeof(*c) * OFS_BURST, RTE_CACHE_LINE_SIZE);
	if (!c) {  /* start-up of the worker: fail loudly and stop the switch */
		fprintf(stderr, "ofswitch: worker %u: no memory for its packet contexts\n", w->idx);
		ofs_dp.force_quit = true;
		return -1;
	}
	/* the pipeline cache (pipecache.h): without its memory the worker runs without it */
	w->pc = rte_zmalloc_socket("pipecache", sizeof(struct ofs_pc_entry) * OFS_PC_ENTRIES,
				   RTE_CACHE_LINE_SIZE, (int)rte_socket_id());
	w->pc_set = w->pc ? rte_zmalloc_socket("pipecache_sets", sizeof(struct ofs_pc_set) *
						OFS_PC_SETS, RTE_CACHE_LINE_SIZE,
						(int)rte_socket_id()) : NULL;
	if (!w->pc_set) {
		rte_free(w->pc);
		w->pc = NULL;
	}
	w->pc_prog = w->pc ? rte_zmalloc_socket("pipecache_prog", sizeof(struct ofs_pc_prog) *
						 OFS_PC_ENTRIES, RTE_CACHE_LINE_SIZE,
						 (int)rte_socket_id()) : NULL;
	w->pc_dirty = w->pc_prog ? rte_zmalloc_socket("pipecache_dirty", sizeof(uint32_t) *
						  OFS_PC_DIRTY, 0, (int)rte_socket_id()) : NULL;
	if (!w->pc_dirty) {
		rte_free(w->pc_prog);
		w->pc_prog = NULL;
	}
	w->pc_n_dirty = 0;
	w->pc_set_mask = OFS_PC_SETS - 1;
	w->pc_sig_mask = ~0u;
	w->pc_on = false;
	w->pc_gen = ~0ull;  /* refreshed at the first burst */
	if (!w->pc)
		fprintf(stderr, "ofswitch: worker %u: no memory for its pipeline cache: running "
			"without it\n", w->idx);
	unsigned idle = 0;
	const uint64_t drain_tsc = rte_get_tsc_hz() * OFS_TX_DRAIN_US / 1000000;
	const uint64_t word_tsc = RTE_MAX(rte_get_tsc_hz() / 1000000 * OFS_CTR_SWEEP_US /
					  w->ctr_words, (uint64_t)1);
	uint64_t last_drain = rte_rdtsc(), pass_tsc = last_drain;
	w->gap_floor_tsc = RTE_MAX(rte_get_tsc_hz() >> 16, (uint64_t)1);  /* ~15 us */
	w->ctr_next_tsc = last_drain;
	w->ctr_off = (size_t)w->idx * ofs_arena_ctr_stride;
	rte_rcu_qsbr_thread_register(ofs_dp.qsbr, w->idx);
	rte_rcu_qsbr_thread_online(ofs_dp.qsbr, w->idx);
	while (!ofs_dp.force_quit) {
		unsigned got = 0;
		for (unsigned i = 0; i < w->n_rx_ports; i++) {
			int pidx = w->rx_ports[i];
			uint16_t n = port_rx(w, pidx, pkts);
			got += n;
			if (unlikely(n == OFS_BURST)) {  /* the ring holds more: a run of full bursts */
				w->full_run[pidx]++;
			} else if (unlikely(w->full_run[pidx])) {
				w->backlog_hist[rig_bucket(w->full_run[pidx])]++;
				w->full_run[pidx] = 0;
			}
			if (n)
				process_burst(w, pidx, pkts, n, c);
		}
		if (w->idx == 0) {
			void *objs[8];
			unsigned n = rte_ring_sc_dequeue_burst(ofs_dp.pout_ring, objs, 8, NULL);
			for (unsigned i = 0; i < n; i++) {
				ofs_run_packet_out(w, objs[i]);
				free(objs[i]);
			}
			got += n;
		}
		/* TX drain (DPDK l2fwd's BURST_TX_DRAIN_US): a full tx buffer goes out by itself;
		 * partial ones are flushed when the loop found nothing to do (no latency added at
		 * low rates) or every OFS_TX_DRAIN_US, not after every poll. */
		uint64_t now_tsc = rte_rdtsc();
		if (unlikely(now_tsc - pass_tsc >= w->gap_floor_tsc))
			rig_note_gap(w, now_tsc - pass_tsc);
		if (got)
			w->busy_tsc += now_tsc - pass_tsc;
		else
			w->idle_tsc += now_tsc - pass_tsc;
		pass_tsc = now_tsc;
		if (got == 0 || now_tsc - last_drain >= drain_tsc) {
			last_drain = now_tsc;
			for (unsigned p = 0; p < ofs_dp.n_ports; p++)
				port_tx_flush(w, (int)p);
		}
		ofs_reader_leave_all(w);
		ctr_sweep(w, now_tsc, word_tsc);
		rte_rcu_qsbr_quiescent(ofs_dp.qsbr, w->idx);
		if (got == 0 && ofs_dp.idle_sleep_us) {
			if (++idle > 100) {
				/* nothing left pending while asleep (ofs_counters_sync does not wait
				 * for a worker without pending counts) */
				if (w->ctr_dirty_lines)
					ofs_ctr_flush_all(w);
				/* offline while asleep: a grace period does not wait for the nap */
				rte_rcu_qsbr_thread_offline(ofs_dp.qsbr, w->idx);
				usleep(ofs_dp.idle_sleep_us);
				rte_rcu_qsbr_thread_online(ofs_dp.qsbr, w->idx);
				uint64_t woke = rte_rdtsc();  /* the nap is idle time */
				w->idle_tsc += woke - pass_tsc;
				pass_tsc = woke;
			}
		} else {
			idle = 0;
		}
	}
	for (unsigned p = 0; p < ofs_dp.n_ports; p++)
		port_tx_flush(w, (int)p);
	ofs_ctr_flush_all(w);
	rte_rcu_qsbr_thread_offline(ofs_dp.qsbr, w->idx);
	rte_rcu_qsbr_thread_unregister(ofs_dp.qsbr, w->idx);
	rte_free(c);
	rte_free(w->pc);
	rte_free(w->pc_set);
	rte_free(w->pc_prog);
	rte_free(w->pc_dirty);
	w->pc = NULL;
	w->pc_set = NULL;
	w->pc_prog = NULL;
	w->pc_dirty = NULL;
	w->pc_on = false;
	return 0;
}
