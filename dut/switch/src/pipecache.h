/* pipecache.h -- the worker's pipeline cache: the flows a frame crossed, table after table,
 * remembered by the frame's key so the next frame of the same key skips every lookup (issue 41:
 * FAUCET's four tables cost a lookup each, where OVS-DPDK's megaflow costs one).
 *
 * Goal: a frame of a multi-table pipeline (goto-table) costs one probe for all its tables, not
 * one per table, with the same outputs, frames and counters as the per-table path.
 * Design: per worker, OFS_PC_SETS sets of two 128-byte entries (struct ofs_pc_entry,
 * ofswitch.h). The key is the frame's key as table 0 sees it, restricted to the words the
 * tables' flows use (the union of every table's view masks, ofs_pc_refresh) plus, whole, the
 * words of in_port, eth_type/VLAN and ip_proto, and the frame's layout (which headers are whole
 * in the frame). An entry holds the hops of the frame's way: (table, flow) per table crossed,
 * the last one possibly a miss (NULL). A hit runs run_pipeline with those flows instead of
 * lookups (datapath.c): every action, meter, group, output, counter and idle-time update is done
 * as on the per-table path, at run time; only the lookups' answers are remembered.
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
 * release); an entry is tagged with the generation the worker read (acquire) before the
 * lookups that made it, so any commit of any table makes every entry a miss, and its flows are
 * never read again (they may be freed after the grace period). Only pipelines of two tables
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

/* A frame's pipeline-cache probe: its key compacted to the worker's words, and its set. */
struct pc_probe {
	uint32_t sig, set;
	struct ofs_pc_entry *hit;        /* the entry that holds the key, or NULL */
	uint64_t w[OFS_PC_WORDS];
};

/* The worker's words over the frame key (the layout's two words last). */
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
	uint64_t l[2] = { 0, 0 };
	memcpy(l, lay, offsetof(struct ofs_layout, l4_proto) + 1);  /* not its padding */
	p->w[n] = l[0];
	p->w[n + 1] = l[1];
	h = rte_hash_crc_8byte(l[0], h);
	h = rte_hash_crc_8byte(l[1], h);
	p->sig = h | 1;  /* never 0: an empty entry's */
	p->set = (h ^ (h >> 15)) & w->pc_set_mask;
	p->hit = NULL;
}

static inline void pc_prefetch(const struct ofs_worker *w, const struct pc_probe *p)
{
	rte_prefetch0(&w->pc[p->set * 2]);
	rte_prefetch0(&w->pc[p->set * 2 + 1]);
}

static inline bool pc_match(const struct ofs_worker *w, const struct ofs_pc_entry *e,
			    const struct pc_probe *p)
{
	if (e->gen != w->pc_gen || e->sig != p->sig)
		return false;
	for (unsigned i = 0; i < w->pc_n_words + 2u; i++)
		if (e->w[i] != p->w[i])
			return false;
	return true;
}

/* The entry of p's key in its set, or NULL (p->hit too). */
static inline struct ofs_pc_entry *pc_find(const struct ofs_worker *w, struct pc_probe *p)
{
	struct ofs_pc_entry *e = &w->pc[p->set * 2];
	p->hit = pc_match(w, e, p) ? e : pc_match(w, e + 1, p) ? e + 1 : NULL;
	return p->hit;
}

/* Remember a frame's way (n hops at t[], f[]) for p's key: in an empty or outdated place of
 * the set, else in one chosen by the worker's store count. */
static inline void pc_store(struct ofs_worker *w, const struct pc_probe *p, unsigned n,
			    const uint8_t *t, struct ofs_flow *const *f)
{
	struct ofs_pc_entry *e = &w->pc[p->set * 2];
	if (e->gen == w->pc_gen && e->sig && !(e[1].gen == w->pc_gen && e[1].sig) )
		e++;
	else if (e->gen == w->pc_gen && e->sig)
		e += w->pc_stores & 1;
	w->pc_stores++;
	e->gen = w->pc_gen;
	e->sig = p->sig;
	memcpy(e->w, p->w, (w->pc_n_words + 2u) * sizeof(p->w[0]));
	e->n_hops = (uint8_t)n;
	memcpy(e->table, t, n);
	memcpy(e->flow, f, n * sizeof(f[0]));
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

#endif
