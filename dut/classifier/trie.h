/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OFB_CLS_TRIE_H
#define OFB_CLS_TRIE_H 1

/*
 * Document 003's tries (internal to the classifier library; classifier.h's
 * OFB_CLS_ALGO_HTRIE / SPTRIE / HYBRID put them behind the public API).
 * ======================================================================
 *
 * Goal: reproduce the document's algorithms as it describes them, to compare
 * them with each other and with TSS/OURS on its own workload; not to be the
 * fast default.
 *
 * One builder, three modes, over a key of key_len bytes read as bits, most
 * significant bit of byte 0 first:
 *  - HTRIE: Hierarchical Trie, 0, 1, * branching; a lookup follows the key's
 *    0/1 child AND the * child (backtracking), visiting every node a key
 *    can match.
 *  - SPTRIE: Set-Pruning Trie: the rules of the * subtree are copied into the
 *    0 and 1 subtrees at every node, so a lookup follows one path (no
 *    backtracking); memory grows as O(2^L).
 *  - HYBRID: H-Trie whose nodes are merged (the * subtree's rules pushed into
 *    the 0/1 subtrees, as the SP-Trie does) node by node in breadth-first order
 *    from the root, while the estimated size stays within a memory budget
 *    (budget 0 = H-Trie, unlimited = SP-Trie).  The document's "root first,
 *    breadth-first" choice.
 *
 * Node (16 bytes): the bit it branches on, which of the children 0, 1, * exist,
 * the best rule that ends at it (all its remaining bits are *: every key that
 * reaches the node matches it), and the best rule anywhere in its subtree
 * (for pruning: a subtree whose best rule cannot beat the best match found so
 * far is skipped).  Bits no rule of a node's set cares about are skipped (path
 * compression of don't-care levels); a node left with one rule is a leaf that
 * checks that rule's full value/mask.  Rules are numbered by rank (priority
 * descending, then rule id ascending), so "better" is "smaller rank".  Rules
 * that rank below the best rule ending at a node are dropped from its subtree
 * (they can never win there).
 *
 * Layout: Double-Array style (a node's children are one contiguous block at
 * node.base, child c at base + popcount(have & ((1 << c) - 1)), no pointers),
 * blocks ordered by a van Emde Boas recursive layout of the block tree (top
 * half of the levels, then each bottom subtree, recursively), so a root-to-
 * leaf walk touches few cache lines.
 *
 * LOUDS layout (the document's succinct comparison point; OFB_TRIE_LOUDS): the
 * same trie (same nodes, same walk, same pruning) with the tree shape as a
 * level-order unary degree sequence ("10", then per node in BFS order
 * 1^degree 0) navigated with rank/select (rank: ones per 512-bit block +
 * popcount; select0: one sample per 256 zeros + block scan), the edge labels
 * (0, 1, *) as 2 bits per node, and per node only what the walk needs: the
 * subtree's best rule (32 bits; a leaf's rule is that one), inner/leaf/term
 * flags as bit vectors (rank indexes the packed arrays of branch bits, 16 bits
 * per inner node, and of ending rules, 32 bits per node that has one).  No
 * child pointers: ~6 bytes per node instead of 16, each step a few dependent
 * rank/select reads instead of one array index.  Read-only: the classifier
 * builds it once (OFB_CLS_ALGO_LOUDS) and refuses updates with a message.
 *
 * Incremental scheme (the document's "insert as H-Trie first, merge later";
 * classifier.c does the bookkeeping): a big BASE trie built in keep mode
 * (OFB_TRIE_KEEP) plus a small DELTA H-Trie of the rules inserted since the
 * base was built, rebuilt at each publish; both swapped in together (RCU), a
 * lookup takes the better of the two.  A rule deleted from the base is killed
 * in place (ofb_trie_kill: its del_v = the version from which readers skip
 * it); keep mode therefore drops nothing below an ending rule and keeps every
 * ending rule of a node as a list (best first), so the next alive one wins.
 * When the delta grows past a fraction of the base, the base is rebuilt from
 * all rules (the merge) and the delta starts empty.  Add-then-delete: new
 * structures are built beside the published ones and swapped in; the old
 * ones are freed after the readers left.  Lookups never block.
 *
 * Hybrid budget: a merge happens while (rule arrays + nodes built so far +
 * 32 B per pending rule copy) stays within the budget; it is an estimate at
 * decision time, and the finished trie ran 1.5-2.2x over it on the document's
 * workload (copies keep splitting below merged nodes; measured, README.md).
 *
 * Limits: key_len <= OFB_TRIE_MAX_KEY_LEN = 128 bytes (the lookup stack holds
 * at most key bits + 1 nodes; a longer key fails the build with a message
 * naming it); 2^32-2 rules;
 * the build fails (NULL, message in err) when the estimated size exceeds the
 * budget (SP-Trie: mem_budget or 256 MiB by default) or memory runs out.
 */

#include <stddef.h>
#include <stdint.h>

#define OFB_TRIE_MAX_KEY_LEN 128
#define OFB_TRIE_KEEP 1u   /* build flag: an incremental base (kill-able rules, nothing dropped; DA+vEB only) */

enum ofb_trie_mode { OFB_TRIE_H = 0, OFB_TRIE_SP = 1, OFB_TRIE_HYBRID = 2 };
enum ofb_trie_layout { OFB_TRIE_DA_VEB = 0, OFB_TRIE_LOUDS = 1 };

struct ofb_trie;

/* rules[i]: priority, id, handle, value words (masked) and mask words (nwk
 * words each), in any order.  budget_bytes: HYBRID's merge budget; for SP the
 * hard limit (0 = 256 MiB); for H unused.  On failure returns NULL and writes a
 * message to err (errlen bytes). */
struct ofb_trie_rule {
    uint32_t prio, id;
    uint64_t handle;
    const uint64_t *value, *mask;
};
struct ofb_trie *ofb_trie_build(enum ofb_trie_mode mode, enum ofb_trie_layout layout, uint32_t key_len,
                                const struct ofb_trie_rule *rules, size_t n, uint64_t budget_bytes,
                                unsigned flags, char *err, size_t errlen);
void ofb_trie_free(struct ofb_trie *);
size_t ofb_trie_bytes(const struct ofb_trie *);
uint64_t ofb_trie_nodes(const struct ofb_trie *);
uint64_t ofb_trie_merged(const struct ofb_trie *);  /* nodes whose * subtree was merged */
/* best rule for the key given as words (key bytes memcpy'd into nwk = key_len/8
 * rounded up uint64 words, zero padded): handle, id in *id_out (0 = none) */
uint64_t ofb_trie_lookup(const struct ofb_trie *, const uint64_t *kw, uint32_t *id_out);
/* the same, skipping (keep mode) rules killed for readers at version v; also
 * the rule's priority in *prio_out (set only when *id_out != 0) */
uint64_t ofb_trie_lookup_v(const struct ofb_trie *, const uint64_t *kw, uint64_t v, uint32_t *id_out,
                           uint32_t *prio_out);
/* keep mode: rule `id` is dead for readers at versions >= v (writer; the trie
 * stays published).  0, or -1 when the rule is not in this trie. */
int ofb_trie_kill(struct ofb_trie *, uint32_t id, uint64_t v);
uint32_t ofb_trie_rules(const struct ofb_trie *);

#endif
