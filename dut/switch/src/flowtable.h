/* flowtable.h -- incremental flow tables of ofswitch: what a FLOW_MOD changes in a table's
 * lookup structure, how a batch of changes becomes visible, and when old memory is freed.
 * Agent thread only (workers only read views, see ofswitch.h "Flow lookup").
 *
 * Goal: a FLOW_MOD into a table of 100k (1M) flows costs what it touches, not the table: one
 * FLOW_MOD + BARRIER well under a millisecond, bulk installs at Open vSwitch's rate or better.
 *
 * How a change travels:
 *  1. Stage (per FLOW_MOD): ofs_table_prepare() makes sure the table has its lookup structure,
 *     its mask-bit counters and a spare view, so nothing after it can fail for lack of memory
 *     except inserts; ofs_table_stage_add()/stage_remove() stage one flow in the structure
 *     (lookup_ops insert/remove) and in the counters of the union of the table's masks. The
 *     agent inserts a FLOW_MOD's new flows before it removes the ones they replace, so an insert
 *     that fails leaves the old state: the agent unstages what that FLOW_MOD staged and answers
 *     it with OFPT_ERROR. Staged changes are invisible to workers.
 *  2. Commit (ofs_tables_commit, before every BARRIER reply, PACKET_OUT, multipart reply and
 *     at the end of each batch of received messages): per changed table, lookup_ops publish
 *     (dut/classifier: ofb_cls_batch_commit, one version for all the staged rules), then the
 *     spare view (new serial, new mask union) is published with a release store. A reader thus
 *     sees a table's batch all or nothing. Tables are published one after another: a packet
 *     that crosses several tables during one commit may see some of them changed and others not
 *     (OpenFlow orders messages, not tables; the same held for the former full rebuilds).
 *     The view also says how much of the workers' flow cache survives (ofswitch.h, struct
 *     ofs_table_view): a commit that keeps the mask union and changes at most OFS_VIEW_LOG
 *     flows keeps the epoch and logs its changes (recorded at staging time: an added flow as
 *     its value/mask on the union's words, a removed one as its address), so cached answers
 *     are revalidated on their next hit instead of all being recomputed; any other commit
 *     opens a new epoch.
 *  3. The old view (ofs_defer_free) and the removed flows (ofs_defer_free_flow) are queued with a
 *     QSBR token and freed by a later commit or housekeeping tick once every worker has passed a
 *     quiescent state, flows only after every worker has then also swept the counts its cache
 *     entries hold (ofswitch.h, struct ofs_cache_line; a flow's slot goes back to the flow
 *     arena then, flowarena.h, and only then may
 *     its counters be reset for a new flow); the commit itself never waits for the workers,
 *     except in step 4 and when an ADD finds the arena full (agent_flows.c arena_flow).
 *  4. Mask-union growth: a cached answer is keyed on the packet key ANDed with the published
 *     union. A worker that still holds the previous view (old union, old serial) while the
 *     structure already answers with a flow whose mask reaches beyond that union could cache
 *     a wrong answer under the old serial and reuse it for another packet of that burst. So
 *     when a commit widens a table's union, the table first gets an uncacheable view, the
 *     agent waits for a grace period (rte_rcu_qsbr_synchronize), and only then publishes.
 *     With a fixed set of mask shapes this happens a handful of times per table.
 *
 * Invariants: every flow in a table's list is staged in its lookup structure; tb->view, once
 * set, is never NULL; a dirty table has a spare view; a view's union covers the mask of every
 * flow visible under it.
 * Out of memory: everything a commit needs is reserved while staging: prepare allocates the
 * spare views and has the lookup backend reserve its next published index (lookup_ops
 * reserve; insert reserves for its own flow), so a failed allocation fails prepare or insert,
 * and the FLOW_MOD is answered with OFPT_ERROR (FLOW_MOD_FAILED/TABLE_FULL for an add,
 * FLOW_MOD_FAILED/UNKNOWN for a modify or delete) with the table as it was. The commit then
 * cannot fail for lack of memory; were a backend to fail its publish anyway, the old view and
 * index stay published and the table stays dirty (retried at the next commit). A full defer
 * queue falls back to a blocking grace period. Nothing publishes an empty or NULL index for a
 * failure.
 * Non-strict MODIFY/DELETE: flows are grouped by mask (one group per distinct mask, kept when
 * it empties, so their number is that of distinct masks ever seen in the table); a request
 * scans the packed masked values of the groups whose mask contains the request's and touches
 * only the flows it selects (ADD with CHECK_OVERLAP likewise): at 100k flows of 4 shapes, ~1 MB of sequential reads instead of
 * a pointer chase through 100k flows (~40 MB).
 * Limits: the simple backend (reference, small tables) re-sorts its array at each publish;
 * the classifier backends (tuple, trie) keep rules matching IPv6 ND fields (beyond
 * OFS_KEY_CLS_LEN) in such a simple array beside the classifier, published just before it.
 */
#ifndef OFB_FLOWTABLE_H
#define OFB_FLOWTABLE_H
#include "ofswitch.h"

/* ---- a table's flows (agent thread) ---------------------------------------------------------
 * This file owns a table's flows: its list (tb->flows, doubly linked through next/pprev, read
 * only through OFS_TABLE_FOR_EACH), its hash of (priority, match) (ADD and strict commands
 * find their flow without a scan), its mask groups (non-strict selection, below) and the
 * staging in its lookup structure. An ADD: ofs_table_prepare, ofs_table_reserve_flow,
 * ofs_table_stage_add (each may fail: the table is as it was), then ofs_table_link (cannot).
 * The caller (agent_flows.c) keeps what is the agent's: timeouts, FLOW_REMOVED, the frees. */

/* Every flow of tb, in list order (newest first); the body may unlink f (not nx). */
#define OFS_TABLE_FOR_EACH_SAFE(f, nx, tb) \
	for (struct ofs_flow *f = (tb)->flows, *nx; f && ((nx = f->next), 1); f = nx)
#define OFS_TABLE_FOR_EACH(f, tb) \
	for (struct ofs_flow *f = (tb)->flows; f; f = f->next)

/* Same priority-independent match (value and mask)? */
bool ofs_match_equal(const struct ofs_match *a, const struct ofs_match *b);
/* The flow of tb with exactly this priority and match, or NULL (the hash). */
struct ofs_flow *ofs_table_find_exact(struct ofs_table *tb, uint16_t priority,
				     const struct ofs_match *m);
/* Room for one more flow, f, in tb's hash and f's mask group. 0, or -1 when out of memory
 * (a hash that cannot grow keeps working with longer chains). */
int ofs_table_reserve_flow(struct ofs_table *tb, const struct ofs_flow *f);
/* f (staged, room reserved) into tb's list, hash and mask group. Cannot fail. */
void ofs_table_link(struct ofs_table *tb, struct ofs_flow *f);
/* f out of tb's list, hash and mask group, its removal staged (tb prepared). The caller frees
 * f after the commit (ofs_defer_free_flow). */
void ofs_table_unlink(struct ofs_table *tb, struct ofs_flow *f);
/* MODIFY: c (staged) takes old's place in the list, the hash and the mask group; old's removal
 * staged. */
void ofs_table_replace(struct ofs_table *tb, struct ofs_flow *old, struct ofs_flow *c);

/* Get tb ready for staging changes. 0, or -1 when out of memory (nothing changed). */
int ofs_table_prepare(struct ofs_table *tb);
/* Stage f (already prepared). 0, or -1 when out of memory (nothing staged). */
int ofs_table_stage_add(struct ofs_table *tb, struct ofs_flow *f);
/* Stage f's removal (f was staged by stage_add). Cannot fail. */
void ofs_table_stage_remove(struct ofs_table *tb, struct ofs_flow *f);
/* One mask group of a table (agent-private). */
struct ofs_mask_group {
	struct ofs_key mask;
	uint32_t hash;
	uint8_t n_words;
	uint8_t word[OFS_KEY_WORDS];   /* the mask's nonzero words */
	uint32_t n, cap;
	struct ofs_flow **flows;       /* dense */
	uint64_t *vals;                /* n x n_words: flows[i]'s value, those words */
};

/* Mask groups (non-strict selection): reserve room for f's group before staging it, then
 * add; remove/replace cannot fail. */
int ofs_table_group_reserve(struct ofs_table *tb, const struct ofs_flow *f);
void ofs_table_group_add(struct ofs_table *tb, struct ofs_flow *f);
void ofs_table_group_remove(struct ofs_table *tb, struct ofs_flow *f);
void ofs_table_group_replace(struct ofs_table *tb, struct ofs_flow *old, struct ofs_flow *f);
/* The flows of tb whose match lies inside r (OpenFlow's non-strict selection; priority,
 * cookie and out_port are the caller's to check) into a malloc'ed *out. Count, or -1 when out
 * of memory. */
int ofs_table_covered(struct ofs_table *tb, const struct ofs_match *r, struct ofs_flow ***out);

/* Is there a flow of this priority in tb, with another match, that a packet could match
 * together with m (OFPFF_CHECK_OVERLAP)? Scans the packed values, reads only candidates. */
bool ofs_table_overlaps(const struct ofs_table *tb, const struct ofs_match *m, uint16_t priority);

/* Publish every dirty table (see above). false when some table stays unpublished (out of
 * memory; it keeps its old view and is retried by the next commit). */
bool ofs_tables_commit(void);
/* Free p with fn once no worker can hold it (now when there are no workers). */
void ofs_defer_free(void *p, void (*fn)(void *));
/* A removed flow: freed after its grace period and, then, every worker's sweep of the pending
 * counts its flow cache holds (ofswitch.h, struct ofs_cache_line). */
void ofs_defer_free_flow(void *p, void (*fn)(void *));
/* Free what the workers have left behind; wait for them when `wait`. */
void ofs_reclaim(bool wait);

/* A lookup structure over flows[0..n) built from scratch through the same ops (the "full
 * rebuild" the differential tests compare the incremental path against). NULL on failure. */
void *ofs_lookup_build(const struct ofs_lookup_ops *ops, struct ofs_flow *const *flows,
		       uint32_t n);

#endif
