/* pipecache.h -- the worker's pipeline cache: the flows a frame crossed, table after table,
 * remembered by the frame's key so the next frame of the same key skips every lookup (issue 41:
 * FAUCET's four tables cost a lookup each, where OVS-DPDK's megaflow costs one).
 *
 * Goal: a frame of a multi-table pipeline (goto-table) costs one probe for all its tables, not
 * one per table, with the same outputs, frames and counters as the per-table path.
 * Design: per worker, OFS_PC_SETS sets of OFS_PC_WAYS 128-byte entries (struct ofs_pc_entry,
 * ofswitch.h), each set fronted by one line of signatures (struct ofs_pc_set: the generation
 * the set is of and each way's key hash). The key is the frame's key as table 0 sees it,
 * restricted to the words the
 * tables' flows use (the union of every table's view masks, ofs_pc_refresh) plus, whole, the
 * words of in_port, eth_type/VLAN and ip_proto, and the frame's layout (which headers are whole
 * in the frame). An entry holds the hops of the frame's way: (table, flow) per table crossed,
 * the last one possibly a miss (NULL), and beside it (ofs_worker.pc_prog) the way's compiled
 * action program when it has one ("compiled action programs" below). A hit on an entry with a
 * program runs the program: the net header rewrite and the output in one pass, the hops'
 * counts held in the program until a flush ("Counts" below). Any other hit runs run_pipeline
 * with the entry's flows instead of lookups (datapath.c): every action, meter, group, output,
 * counter and idle-time update is done as on the per-table path, at run time.
 * Why the answers are the same: a table's answer depends only on the key's words under its
 * masks; the key a later table sees is the first key changed by the apply-actions of the
 * flows before it. Those changes depend only on the entry's key when they are set-fields (a
 * constant), write-metadata (a constant; metadata is 0 at rx), push-VLAN (copies the VLAN
 * word, in the key) and pop-VLAN of a tag pushed on the way. A way through an action that
 * could reveal bytes the key does not hold (pop of a tag the frame came with, MPLS or PBB
 * push/pop, set-field of eth_type, ip_proto or MPLS fields) before its last table is not
 * stored (pc_way_ok). The last flow's actions and the action set run after every lookup:
 * anything goes there.
 * Validity: ofs_dp.pipe_gen counts every view published (flowtable.c publish_view, the agent,
 * release); a set is tagged with the generation the worker read (acquire) before the
 * lookups that made its entries (a store into a set of an older one first empties every
 * way), so any commit of any table makes every entry a miss, and its flows are never read
 * again (they may be freed after the grace period).
 * Probes (issue 41, pcsig), in passes over the burst so their loads overlap (as DPDK's
 * rte_hash bulk lookup and OVS's EMC batch): hash the key once (CRC32-C over its words; the
 * set from it through a mixer, the signature from it whole) and prefetch the set's signature
 * line; compare the eight signatures with the key's and prefetch the first matching way's
 * entry (and its program); compare the words of the matching ways only. A set of eight ways
 * holds a working set of a quarter of the entries with next to no conflicts (on FAUCET's
 * repeating 8192 frames two ways at the same load stored 6 % of the frames again, eight ways
 * 0.12 %); a full set gives its ways in turn. Stores wait until every frame of the burst ran, so no entry a later
 * frame of the burst hit changes under it. Only pipelines of two tables
 * or more use the cache (a one-table pipeline has its fast entries, flowcache.h), and only
 * ways of two hops or more are stored.
 * Threads: a worker's cache is its own (no atomics); the agent only bumps pipe_gen.
 */
#ifndef OFS_PIPECACHE_H
#define OFS_PIPECACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <rte_common.h>
#include <rte_hash_crc.h>
#include <rte_prefetch.h>
#include "ofswitch.h"
#include "datapath_internal.h"

/* A frame's pipeline-cache probe: its key compacted to the worker's words, its set, and the
 * ways of the set whose signature is the key's. */
struct pc_probe {
	uint32_t sig, set;
	uint32_t cand;                   /* ways whose signature matches (pc_scan), a bit each */
	struct ofs_pc_entry *hit;        /* the entry that holds the key, or NULL */
	uint64_t w[OFS_PC_WORDS];
};

/* murmur3's finaliser: the set index from every bit of the CRC (a CRC is linear in the key's
 * bits, so keys that differ in a few counters' bits would fall into a few sets by its low
 * bits alone) */
static inline uint32_t pc_mix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

/* The worker's words over the frame key (the layout's two words last), its hash once: the
 * set from it mixed, the signature from it as is. */
static inline void pc_prepare(const struct ofs_worker *w, const struct ofs_key *key,
			      const struct ofs_layout *lay, struct pc_probe *p)
{
	const uint64_t *kw = (const uint64_t *)key;
	uint32_t h = 0;
	unsigned n = w->pc_n_words;
	for (unsigned i = 0; i < n; i++) {
		p->w[i] = kw[w->pc_word[i]] & w->pc_mask_w[i];
		h = rte_hash_crc_8byte(p->w[i], h);
	}
	/* the layout's 13 bytes (not its padding) as two words, each one 8-byte load: a copy
	 * through a 16-byte buffer waited for its two stores (no store-to-load forwarding) */
	_Static_assert(offsetof(struct ofs_layout, l4_proto) == 12 &&
		       sizeof(struct ofs_layout) >= 14, "the layout's two words");
	uint64_t l0, l1;
	memcpy(&l0, lay, 8);
	memcpy(&l1, (const uint8_t *)lay + 6, 8);
	l1 = (l1 >> 16) & 0xffffffffffull;  /* bytes 8..12, as a little-endian copy of them */
	p->w[n] = l0;
	p->w[n + 1] = l1;
	h = rte_hash_crc_8byte(l0, h);
	h = rte_hash_crc_8byte(l1, h);
	p->sig = (h & w->pc_sig_mask) | 1;  /* never 0: an empty way's */
	p->set = pc_mix(h) & w->pc_set_mask;
	p->cand = 0;
	p->hit = NULL;
}

/* the set's signature line */
static inline void pc_prefetch(const struct ofs_worker *w, const struct pc_probe *p)
{
	rte_prefetch0(&w->pc_set[p->set]);
}

static inline struct ofs_pc_entry *pc_way(const struct ofs_worker *w, uint32_t set, unsigned i)
{
	return &w->pc[set * OFS_PC_WAYS + i];
}

/* The ways of p's set whose signature is p's (none when the set is of another generation),
 * the first one's entry prefetched (both its lines when the key reaches the second). */
static inline void pc_scan(const struct ofs_worker *w, struct pc_probe *p)
{
	const struct ofs_pc_set *s = &w->pc_set[p->set];
	uint32_t m = 0;
	if (s->gen == w->pc_gen)
		for (unsigned i = 0; i < OFS_PC_WAYS; i++)
			m |= (uint32_t)(s->sig[i] == p->sig) << i;
	p->cand = m;
	if (m) {
		const char *e = (const char *)pc_way(w, p->set, (unsigned)__builtin_ctz(m));
		rte_prefetch0(e);
		if (w->pc_n_words + 2u > 7)
			rte_prefetch0(e + RTE_CACHE_LINE_SIZE);
	}
}

static inline bool pc_words_eq(const struct ofs_worker *w, const struct ofs_pc_entry *e,
			       const struct pc_probe *p)
{
	for (unsigned i = 0; i < w->pc_n_words + 2u; i++)
		if (e->w[i] != p->w[i])
			return false;
	return true;
}

/* The entry of p's key among its candidate ways, or NULL (p->hit too): an entry is read only
 * where the signature matched; one that holds another key is counted (pc_sig_checks). */
static inline struct ofs_pc_entry *pc_find(struct ofs_worker *w, struct pc_probe *p)
{
	for (uint32_t m = p->cand; m; m &= m - 1) {
		struct ofs_pc_entry *e = pc_way(w, p->set, (unsigned)__builtin_ctz(m));
		if (likely(pc_words_eq(w, e, p))) {
			p->hit = e;
			return e;
		}
		w->pc_sig_checks++;
	}
	return NULL;
}

/* ---- Counts (issue 41): a program's hits count in the program, not in its hops' flows ----
 * A hit on a compiled program adds 1 and the received length to the program's pending counts
 * (the frame's length at hop h is the received one + len_delta[h], a constant of the
 * program) and the burst's time when a hop's flow has an idle timeout; the four flows' lines
 * are not touched. pc_prog_flush adds them to each hop's flow (or the MODIFY copy that
 * carries it on, as ofs_ck_flush_line): packets += n, bytes += sum + n * len_delta[h],
 * last_used_ns = the later of the two. A program is flushed before its entry is overwritten,
 * before a count would overflow, at the end of every sweep of the flow cache and at every
 * full flush (ofs_ctr_flush_all: the agent's ofs_counters_sync before flow stats, flow
 * removed and the idle-timeout scan, the worker's sleep and exit). A program with pending
 * counts is one of ctr_dirty_lines: the agent frees a removed flow only after every worker
 * swept since or has nothing pending (ofs_counters_swept), so the flows a program flushes to
 * are valid, whatever generation its entry is of. */
static inline void pc_prog_flush(struct ofs_worker *w, uint32_t i)
{
	struct ofs_pc_prog *g = &w->pc_prog[i];
	const struct ofs_pc_entry *e = &w->pc[i];
	uint64_t pk = g->pend_pk, by = g->pend_by;
	if (!pk)
		return;
	for (unsigned h = 0; h < e->n_hops; h++) {
		struct ofs_flow *f = e->flow[h];
		if (!f)
			break;
		while (unlikely(__atomic_load_n(&f->replaced, __ATOMIC_ACQUIRE)))
			f = f->succ;
		uint64_t b = by + (uint64_t)((int64_t)pk * g->len_delta[h]);
		if (ofs_dp.n_workers == 1) {
			f->packets += pk;
			f->bytes += b;
		} else {
			struct ofs_flow_ctr *k = f->ctr + w->ctr_off;
			k->packets += pk;
			k->bytes += b;
		}
		if (f->idle_timeout && g->pend_used_ns > f->last_used_ns)
			f->last_used_ns = g->pend_used_ns;
	}
	g->pend_pk = 0;
	g->pend_by = 0;
	g->pend_used_ns = 0;
	/* last, with release (as ofs_ck_flush_line) */
	__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines - 1, __ATOMIC_RELEASE);
}

/* Remember a frame's way (n hops at t[], f[]) for p's key: in the way that holds the key
 * already (the same key missed twice in one burst), else an empty way of the set (every way
 * of a set of an older generation is), else the set's next way in turn. Called only after
 * every frame of the burst ran (datapath.c), so no entry a frame of the burst hit is
 * overwritten under it. */
static inline struct ofs_pc_entry *pc_store(struct ofs_worker *w, const struct pc_probe *p,
					    unsigned n, const uint8_t *t,
					    struct ofs_flow *const *f)
{
	struct ofs_pc_set *s = &w->pc_set[p->set];
	unsigned way = OFS_PC_WAYS;
	if (s->gen != w->pc_gen) {
		memset(s->sig, 0, sizeof(s->sig));
		s->gen = w->pc_gen;
		s->next = 0;
	}
	for (unsigned i = 0; i < OFS_PC_WAYS && way == OFS_PC_WAYS; i++)
		if (s->sig[i] == p->sig && pc_words_eq(w, pc_way(w, p->set, i), p))
			way = i;
	for (unsigned i = 0; i < OFS_PC_WAYS && way == OFS_PC_WAYS; i++)
		if (!s->sig[i])
			way = i;
	if (way == OFS_PC_WAYS) {
		way = s->next;
		s->next = (s->next + 1) % OFS_PC_WAYS;
	}
	struct ofs_pc_entry *e = pc_way(w, p->set, way);
	w->pc_stores++;
	if (w->pc_prog)
		pc_prog_flush(w, (uint32_t)(e - w->pc));  /* its old hops' counts */
	s->sig[way] = p->sig;
	memcpy(e->w, p->w, (w->pc_n_words + 2u) * sizeof(p->w[0]));
	e->n_hops = (uint8_t)n;
	memcpy(e->table, t, n);
	memcpy(e->flow, f, n * sizeof(f[0]));
	return e;
}

/* Before a way is stored: do the apply-actions of its flows before the last only change the
 * key in ways the entry's key determines (the header's "Why")? */
static inline bool pc_way_ok(unsigned n, struct ofs_flow *const *f)
{
	int pushed = 0;  /* VLAN tags pushed on the way and not popped yet */
	for (unsigned i = 0; i + 1 < n; i++) {
		const uint8_t *a = f[i]->apply;
		uint32_t len = f[i]->apply_len, o = 0;
		while (o + 4 <= len) {
			uint16_t type = (uint16_t)(a[o] << 8 | a[o + 1]);
			uint16_t l = (uint16_t)(a[o + 2] << 8 | a[o + 3]);
			if (l < 8 || o + l > len)
				return false;
			switch (type) {
			case OFPAT_PUSH_VLAN:
				pushed++;
				break;
			case OFPAT_POP_VLAN:
				if (--pushed < 0)
					return false;  /* the frame's own tag: what is under it? */
				break;
			case OFPAT_PUSH_MPLS: case OFPAT_POP_MPLS: case OFPAT_PUSH_PBB:
			case OFPAT_POP_PBB:
				return false;
			case OFPAT_SET_FIELD: {
				uint8_t fld = a[o + 6] >> 1;
				if (fld == OXM_ETH_TYPE || fld == OXM_IP_PROTO ||
				    fld == OXM_MPLS_LABEL || fld == OXM_MPLS_TC ||
				    fld == OXM_MPLS_BOS || fld == OXM_PBB_ISID ||
				    a[o + 4] != 0x80 || a[o + 5] != 0x00)
					return false;  /* reparses, or not a basic-class field */
				break;
			}
			default:
				break;
			}
			o += l;
		}
	}
	return true;
}

/* ---- compiled action programs (struct ofs_pc_prog) -----------------------------------------
 * Goal: a hit on a way whose actions only rewrite headers and send the frame to one port costs
 * one program run, not each hop's actions (OVS's megaflow nets them the same way: FAUCET's
 * push VLAN, set-fields, TTL - 1 and pop VLAN become set(eth), set(ipv4(ttl)), output).
 * pc_compile walks the hops' apply-actions once, at the store, over a model of the frame's
 * head: its VLAN tag stack (each tag's TCI as (received TCI & m) | v, so a push copying the
 * outer TCI and the set-fields of VID and PCP compose), the MACs written, the TTL decrements
 * and the one output at the very end. Everything else is refused (the entry replays): a meter,
 * write-actions (the action set), an output before the end or to CONTROLLER/TABLE/FLOOD/ALL,
 * groups, MPLS/PBB, set-fields other than eth_dst/eth_src/vlan_vid/vlan_pcp, TTL on anything
 * but IPv4, a frame with MPLS, PBB or more than one tag, more than OFS_PC_TAGS tags at the end.
 * What the model cannot know from the key (the TTL value, the IP version nibble, the header's
 * length, the mbuf's headroom) pc_prog_ready checks per frame before anything is written: a
 * frame it refuses replays the hops, so an expiring TTL goes to the controller as before.
 * Why the result is the replay's byte for byte: the entry's key holds in_port, eth_type, the
 * VLAN word and the layout (which tags the frame has) whole; set-fields write constants; a
 * VLAN push's TCI is the outer tag's or 0 (pushed on an untagged frame); pops remove the
 * outer tag without trimming (only MPLS pops trim); the TTL's checksum update is the same
 * RFC 1624 step per decrement on the same words (in-place, as actions.c does it). */

/* The per-frame checks of a compiled program (nothing is written): false = replay. */
static inline bool pc_prog_ready(struct pkt_ctx *c, const struct ofs_pc_prog *g)
{
	/* a push the replay could not make (no headroom) stops its hop's actions there: the
	 * replay's way then, not the program's */
	if (rte_pktmbuf_headroom(c->m) < g->max_grow)
		return false;
	if (g->n_dec_ttl) {
		const uint8_t *p = pdata(c);
		int l3 = g->l3_ofs;
		if (!in_frame(c, l3, 20) || p[l3] >> 4 != 4 || p[l3 + 8] <= g->n_dec_ttl)
			return false;
	}
	return true;
}

/* A hit of program i on a frame of len bytes: counted in the program ("Counts" above). */
static inline void pc_prog_count(struct ofs_worker *w, uint32_t i, uint32_t len)
{
	struct ofs_pc_prog *g = &w->pc_prog[i];
	if (unlikely(g->pend_pk == UINT32_MAX))
		pc_prog_flush(w, i);
	if (!g->pend_pk) {
		if (unlikely(w->pc_n_dirty == OFS_PC_DIRTY))
			ofs_pc_flush_all(w);
		w->pc_dirty[w->pc_n_dirty++] = i;
		__atomic_store_n(&w->ctr_dirty_lines, w->ctr_dirty_lines + 1, __ATOMIC_RELEASE);
	}
	g->pend_pk++;
	g->pend_by += len;
	if (g->idle) {
		if (!w->burst_now_ns)
			w->burst_now_ns = ofs_now_ns();
		g->pend_used_ns = w->burst_now_ns;
	}
}

/* Run g on the frame (pc_prog_ready said yes), then send it or drop it as its last hop would. */
static inline void pc_prog_run(struct pkt_ctx *c, const struct ofs_pc_prog *g)
{
	uint8_t *p = pdata(c);
	uint16_t rx_tpid = 0, rx_tci = 0;
	int d = 4 * ((int)g->tags_out - (int)g->tags_in);
	if (!g->out) {
		rte_pktmbuf_free(c->m);
		c->m = NULL;
		return;
	}
	if (g->tags_in) {
		rx_tpid = rd16(p + 12);
		rx_tci = rd16(p + 14);
	}
	if (d > 0) {
		uint8_t *q = (uint8_t *)rte_pktmbuf_prepend(c->m, (uint16_t)d);
		uint64_t a, b;
		memcpy(&a, q + d, 8);
		memcpy(&b, q + d + 4, 8);
		memcpy(q, &a, 8);
		memcpy(q + 4, &b, 8);
		p = q;
	} else if (d < 0) {
		uint64_t a, b;
		memcpy(&a, p, 8);
		memcpy(&b, p + 4, 8);
		p = (uint8_t *)rte_pktmbuf_adj(c->m, (uint16_t)-d);
		memcpy(p, &a, 8);
		memcpy(p + 4, &b, 8);
	}
	if (g->set_mac & 1)
		memcpy(p, g->eth_dst, 6);
	if (g->set_mac & 2)
		memcpy(p + 6, g->eth_src, 6);
	for (unsigned i = 0; i < g->tags_out; i++) {
		wr16(p + 12 + 4 * i, g->tag[i].tpid ? g->tag[i].tpid : rx_tpid);
		wr16(p + 14 + 4 * i, (uint16_t)((rx_tci & g->tag[i].m) | g->tag[i].v));
	}
	if (g->n_dec_ttl) {
		uint8_t *ip = p + g->l3_ofs + d;
		bool whole = (ip[0] & 0xf) >= 5 &&
			     (uint32_t)(g->l3_ofs + d) + (ip[0] & 0xf) * 4u <= plen(c);
		for (unsigned k = 0; k < g->n_dec_ttl; k++) {
			uint16_t old = rd16(ip + 8);
			uint16_t now = (uint16_t)((uint16_t)(ip[8] - 1) << 8 | (old & 0xff));
			wr16(ip + 8, now);
			if (whole)
				csum_replace16(ip + 10, old, now);
		}
	}
	/* ofs_act_emit's way for a port: padded to 60 bytes, never back out of in_port unless
	 * IN_PORT says so, a port the switch does not have drops */
	ofs_pad_min(c);
	uint32_t port = g->out_port == OFPP_IN_PORT ? c->in_port : g->out_port;
	int idx = g->out_port != OFPP_IN_PORT && port == c->in_port ? -1 : ofs_port_idx(port);
	if (idx >= 0)
		ofs_dp_tx_one(c->w, idx, c->m);
	else
		rte_pktmbuf_free(c->m);
	c->m = NULL;
}

/* The program of a way of n hops (f[i]; the last may be NULL, a miss) for frames of layout
 * lay and ethertype et (host order), into g; false (g->kind 0) when it cannot be compiled. */
static inline bool pc_compile(struct ofs_pc_prog *g, unsigned n, struct ofs_flow *const *f,
			      const struct ofs_layout *lay, uint16_t et)
{
	struct { uint16_t tpid, m, v; } tag[OFS_PC_TAGS + 2];  /* tag[0]: the outermost */
	unsigned nt;
	int len = 0;
	memset(g, 0, offsetof(struct ofs_pc_prog, pend_pk));  /* pc_store flushed the counts */
	if (lay->mpls_ofs >= 0 || lay->pbb_ofs >= 0)
		return false;
	if (lay->vlan_ofs < 0 && lay->l2_end == 12) {
		nt = 0;
	} else if (lay->vlan_ofs == 12 && lay->l2_end == 16) {
		nt = 1;
		tag[0].tpid = 0;
		tag[0].m = 0xffff;
		tag[0].v = 0;
	} else {
		return false;
	}
	g->tags_in = (uint8_t)nt;
	g->l3_ofs = lay->l3_ofs;
	bool out = false;
	for (unsigned h = 0; h < n; h++) {
		const struct ofs_flow *fl = f[h];
		g->len_delta[h] = (int8_t)len;
		if (!fl) {
			if (h + 1 != n)
				return false;
			g->last_miss = true;
			break;  /* a miss: dropped */
		}
		if (fl->meter_id || fl->write_len)
			return false;
		g->idle |= fl->idle_timeout != 0;
		if (h + 1 == n ? fl->goto_table != 0xff && fl->goto_table > fl->table_id
			       : fl->goto_table == 0xff || fl->goto_table <= fl->table_id)
			return false;
		const uint8_t *a = fl->apply;
		uint32_t alen = fl->apply_len, o = 0;
		while (o + 4 <= alen) {
			uint16_t type = rd16(a + o), l = rd16(a + o + 2);
			if (l < 8 || o + l > alen || out)
				return false;  /* anything after the output: not this program */
			switch (type) {
			case OFPAT_OUTPUT: {
				uint32_t port = rd32(a + o + 4);
				if (h + 1 != n || o + l != alen || port == OFPP_CONTROLLER ||
				    port == OFPP_TABLE || port == OFPP_FLOOD || port == OFPP_ALL)
					return false;
				out = true;
				g->out_port = port;
				break;
			}
			case OFPAT_PUSH_VLAN: {
				uint16_t tpid = rd16(a + o + 4);
				if ((tpid != OFS_ETH_P_8021Q && tpid != OFS_ETH_P_8021AD) ||
				    nt == RTE_DIM(tag))
					return false;
				memmove(&tag[1], &tag[0], nt * sizeof(tag[0]));
				if (nt == 0) {
					tag[0].m = 0;
					tag[0].v = 0;
				}  /* else the outer tag's TCI: tag[1]'s (m, v) copied */
				tag[0].tpid = tpid;
				nt++;
				len += 4;
				if (len > g->max_grow)
					g->max_grow = (uint8_t)len;
				break;
			}
			case OFPAT_POP_VLAN:
				if (nt == 0)
					break;
				memmove(&tag[0], &tag[1], (nt - 1) * sizeof(tag[0]));
				nt--;
				len -= 4;
				break;
			case OFPAT_SET_FIELD: {
				const uint8_t *x = a + o + 4;
				if (rd16(x) != 0x8000 || l < 4 + 4 + (x[3] & 0xff))
					return false;
				uint8_t fld = x[2] >> 1;
				const uint8_t *v = x + 4;
				if (x[2] & 1)
					return false;  /* masked set-field: not in OF1.3 */
				if (fld == OXM_ETH_DST) {
					memcpy(g->eth_dst, v, 6);
					g->set_mac |= 1;
				} else if (fld == OXM_ETH_SRC) {
					memcpy(g->eth_src, v, 6);
					g->set_mac |= 2;
				} else if (fld == OXM_VLAN_VID) {
					if (nt) {
						tag[0].m &= 0xf000;
						tag[0].v = (uint16_t)((tag[0].v & 0xf000) |
								      (rd16(v) & 0xfff));
					}
				} else if (fld == OXM_VLAN_PCP) {
					if (nt) {
						tag[0].m &= 0x1fff;
						tag[0].v = (uint16_t)((tag[0].v & 0x1fff) |
								      (uint16_t)(v[0] & 7) << 13);
					}
				} else {
					return false;
				}
				break;
			}
			case OFPAT_DEC_NW_TTL:
				if (lay->l3_ofs < 0)
					break;  /* no IP header: nothing to do, as actions.c */
				if (et != OFS_ETH_P_IPV4 || g->n_dec_ttl == 255)
					return false;
				g->n_dec_ttl++;
				break;
			default:
				return false;
			}
			o += l;
		}
	}
	if (nt > OFS_PC_TAGS)
		return false;
	g->tags_out = (uint8_t)nt;
	memcpy(g->tag, tag, sizeof(g->tag));
	g->out = out;
	g->kind = 1;
	return true;
}

#endif
