/* SPDX-License-Identifier: Apache-2.0 */
#ifndef OFB_CLASSIFIER_H
#define OFB_CLASSIFIER_H 1

/*
 * ofbench wildcard classifier
 * ===========================
 *
 * A rule is (priority, value[key_len], mask[key_len], handle).  A key matches a
 * rule when (key & mask) == value for every byte; mask bit 1 = "must match".
 * Masks are arbitrary bitmasks (prefixes, MAC masks like ff:ff:ff:00:00:ff,
 * random 32-bit masks, wildcards).  Lookup returns the handle of the
 * highest-priority matching rule.
 *
 * Ties: among matching rules of EQUAL priority, the rule with the LOWER rule id
 * wins.  Rule ids are assigned by this library in insert order (ofb_cls_insert
 * returns them; ofb_cls_build_bulk assigns them in array order), so "earlier
 * insert wins".  Every algorithm below implements exactly this order, which is
 * what the differential tests check.
 *
 * Goals
 * -----
 *  - 1M rules with ~100 distinct arbitrary masks at >= 10M lookups/s on one core
 *    (document 003's target, which its H-Trie/SP-Trie hybrid reached at 0.5M/s).
 *  - >= 1M inserts+deletes per second, concurrent with lookups that never block.
 *  - Build 1M rules in seconds.
 *  - Generic fixed-length byte key (1..OFB_CLS_MAX_KEY_LEN bytes), so the switch
 *    can pack whichever OpenFlow match fields it uses.
 *
 * Algorithms (chosen per classifier at creation)
 * ---------------------------------------------
 *  OFB_CLS_ALGO_AUTO   "auto", the default (binding.py, cls-bench): resolved at
 *                      creation by key shape (ofb_cls_algo_for_key; ofb_cls_algo
 *                      says which ran): DTREE for keys of 5..16 bytes (5-tuple-like
 *                      sets; ClassBench-like 100k: 10.9 / 5.0 / 7.3 Mlps batched,
 *                      4-5x rte_acl on acl, where OURS gives 0.68 / 0.25 / 0.56),
 *                      OURS for 4-byte keys (document 003's condition, the grouped
 *                      line filter; KSCAN from KSCAN_AUTO_MIN = 2^16 rules at the
 *                      first bulk build into an empty classifier with no reader,
 *                      OURS again if its blocks cannot be built: issue 42, before
 *                      it KEYMAP from 2^19) and for longer keys (the switch's 128-byte
 *                      OpenFlow keys with a few mask shapes per table; the switch
 *                      measures both as --lookup tuple|dtree, dut/switch/README.md).
 *                      A second look at the first bulk build into an empty
 *                      classifier with no reader registered yet: a DTREE choice
 *                      whose rules are under 90 % prefix-shaped (every mask
 *                      byte 0x00, 0x80, ..., 0xff) becomes OURS, as arbitrary
 *                      masks give the tree superset ranges (slide 19's masks:
 *                      0.04 Mlps vs OURS' 4.8 at 100k).  Inserts alone keep the
 *                      key-length choice.  A zeroed ofb_cls_params (algo 0)
 *                      still means OURS.
 *  OFB_CLS_ALGO_OURS   "filtered merged tuples" (see below).
 *  OFB_CLS_ALGO_TSS    tuple space search as Open vSwitch's dpcls: one hash
 *                      table per distinct mask, tables probed in order of their
 *                      maximum priority, early exit once the best match found
 *                      outranks the next table's maximum.
 *  OFB_CLS_ALGO_LINEAR one array sorted by (priority desc, id asc), first match
 *                      wins.  Reference for the differential tests.
 *  OFB_CLS_ALGO_HTRIE, _SPTRIE, _HYBRID  document 003's tries (trie.h): the
 *                      rules are kept as LINEAR keeps them; readers walk
 *                      immutable tries (DA-style array, van Emde Boas block
 *                      order) swapped in at publish (RCU): lookups never block.
 *                      HTRIE and HYBRID update incrementally, as the document
 *                      says: new rules go into a small delta H-Trie rebuilt at
 *                      each publish, deleted base rules are killed in place
 *                      (version-stamped), and the base is rebuilt from all
 *                      rules (merged) when the delta exceeds max(32, 2 sqrt(base))
 *                      rules or the first delete of a base rule needs a
 *                      keep-mode base (trie.h).  SPTRIE rebuilds its one trie
 *                      at every publish.  A rebuild that fails (SP-Trie over
 *                      its limit, no memory) leaves the previous tries
 *                      published: insert returns 0 / build_bulk -1 and the new
 *                      rules are dropped, ofb_cls_last_error() says why; a
 *                      failed batch commit keeps the old tries, sets the
 *                      error and returns -1.
 *  OFB_CLS_ALGO_LOUDS  the same hybrid trie (mem_budget_bytes = merge budget,
 *                      0 = H-Trie) laid out as LOUDS (rank/select bit vectors,
 *                      trie.h), the document's succinct comparison point.
 *                      Read-only: ONE ofb_cls_build_bulk into an empty
 *                      classifier; insert, delete and a second build_bulk are
 *                      refused (0 / -1) with a message in ofb_cls_last_error().
 *  OFB_CLS_ALGO_DTREE  a compiled decision tree (dtree.h: HyperSplit-like
 *                      byte splits, rules partitioned CutSplit-like into up to
 *                      4 trees, 3-level super nodes, one-line leaf headers)
 *                      for the bulk, and OURS' tables (below) as the delta of
 *                      rules inserted since the tree was built.  A bulk build
 *                      into an empty classifier builds the tree at once.  A
 *                      delete of a tree rule kills it in place (version-
 *                      stamped: del_v, like the tables' entries).  When the
 *                      delta outgrows max(1024, tree rules / 8), publish takes
 *                      a snapshot of the live rules and a thread builds the
 *                      next tree; a later publish adopts it: the deletes since
 *                      the snapshot are applied to it, the delta rules it holds
 *                      are removed from the tables at the version being written
 *                      (readers of older versions still find them there), the
 *                      tree pointer is swapped (RCU) and the old tree freed
 *                      after the readers left.  A reader whose version is older
 *                      than the tree's min_v (the snapshot's version) re-reads
 *                      the version first.  Lookup: the tree's best rank, then
 *                      the delta's best (tables), the better by (priority, id).
 *                      Updates never wait for a rebuild (the writer pays the
 *                      snapshot: O(rules) copies of pointers).  OFB_CLS_DTREE_
 *                      SYNC=1 rebuilds on the writer; OFB_CLS_DTREE_DELTA=N
 *                      sets the minimum delta (tests); ofb_cls_synchronize
 *                      adopts a rebuild in flight and merges until the delta is
 *                      under its threshold.  AUTO's choice for 5..16-byte keys
 *                      (above).  Measured against
 *                      OURS and rte_acl in README.md ("dtree"): ClassBench-like
 *                      100k batched (AVX2 path, medians of 3) acl 6.00 Mlps, fw
 *                      3.48, ipc 4.90 = 1.4-1.6x OURS, 5.4-10x below rte_acl
 *                      (32.1, 36.1, 30.0 in the same runs); single lookups 1.3-
 *                      1.8, below OURS' 2.2-3.9; build 0.27 / 0.67 / 0.31 s;
 *                      updates 1.1-1.2 M/s of writer CPU, 0.58-0.65 M/s
 *                      counting the rebuild thread's CPU.  Those sets were
 *                      shadowed (priority in generation order); on sets with
 *                      specific rules first (traces/rulesets.py since 2026-11-
 *                      24) dtree with compact leaves batches 10.9 / 5.0 / 7.3
 *                      Mlps, rte_acl 2.4 on acl (fw/ipc: no build in 8 GB),
 *                      OURS 0.68 / 0.25 / 0.56: dtree meets the rte_acl goal
 *                      there, OURS does not (docs/results.md).
 *
 *  OFB_CLS_ALGO_DFA    DTREE (same tree, delta, kills, background rebuilds,
 *                      same code in classifier.c) with a byte-stride DFA
 *                      (dfa.h, rte_acl-like: all rules in one DFA by layered
 *                      subset construction with priority pruning, partitioned
 *                      into groups when that is too big; range/full/path
 *                      nodes) built over the same ranks.  A lookup walks the
 *                      DFA (<= key_len transitions per DFA, no leaf check);
 *                      only when the rule it names is not live at the reader's
 *                      version (deleted since the build) does the key walk the
 *                      tree.  A bulk build into an empty classifier publishes
 *                      the tree at once and builds tree + DFA on the rebuild
 *                      thread (adopted like any rebuild; OFB_CLS_DFA_BULK_SYNC
 *                      =1: before build_bulk returns).  A rule set whose DFA
 *                      passes its budget (32 states per rule + 4096; arbitrary
 *                      masks explode) is served by the tree alone; out of
 *                      memory fails the build with a message.  Not the
 *                      default.  Measured (experiments/classifier/LOG.md "dfa", AVX2, medians of
 *                      3, 100k): batched acl 31.6 Mlps, fw 34.1, ipc 23.3 =
 *                      0.99 / 0.94 / 0.77x rte_acl (32.0, 36.1, 30.4 in the
 *                      same runs; the run before 0.87 / 0.93 / 0.82): acl and
 *                      fw at its rate within the noise, ipc short; that close
 *                      only because these generated sets are heavily shadowed
 *                      (one DFA of 0.07-2.2 MB); partitioned DFAs: 0.17-0.24x.
 *                      Lookups after 0.25-0.59 s (tree), DFA after 0.50-1.19 s
 *                      CPU; 172-365 B/rule with the tree; updates 1.07-1.40
 *                      M/s of writer CPU.  On the specificity-ordered sets:
 *                      6.7 / 4.7 / 5.9 Mlps, below dtree (docs/results.md).
 *
 *  OFB_CLS_ALGO_KEYMAP keys of <= 4 bytes (create refuses longer ones, EINVAL):
 *                      OURS' tables hold every rule, and a key-space map
 *                      (keymap.h: one byte per key of the cared-for bits, 2^B
 *                      bytes, B <= 31, + per-block winner lists) answers in
 *                      front of them while the rule set is the one it was built
 *                      from.  Every publish that changed the set stamps
 *                      km_lcv; a reader at version v asks the map when its
 *                      stamp s satisfies km_lcv <= s <= v (else OURS answers:
 *                      correct at any moment, at OURS' rate).  A map the set
 *                      has left is retired at once (RCU, like the tables'
 *                      blocks); the writer snapshots the live rules right after
 *                      a publish and a thread builds the next map, adopted at a
 *                      later publish or ofb_cls_synchronize if the set has not
 *                      changed since the snapshot.  While the set keeps
 *                      changing, a build starts no sooner than the last one's
 *                      duration after it ended (<= half a core); synchronize
 *                      starts one at once and waits.  The first bulk build into
 *                      an empty classifier builds the map before it returns.  A
 *                      set the map cannot take (B > 31, over mem_budget_bytes
 *                      or, with 0, over 4 GiB / 3/4 of MemAvailable) leaves
 *                      OURS answering with the reason in ofb_cls_last_error();
 *                      it is retried once the set has grown or shrunk by 1/8.
 *                      ofb_cls_trie_bytes() = the map's bytes (0: none).
 *                      OFB_CLS_KEYMAP_SYNC=1 rebuilds at every publish (tests).
 *                      Slide 19 at 1M rules (AVX2 VM, README.md "keymap"):
 *                      ~2.7 KB per rule, batched 16-22 Mlps (medians of 3:
 *                      21.2 as auto) where OURS stops near 2-4; single lookups
 *                      are latency-bound (3 dependent misses, ~4 Mlps).
 *
 *  OFB_CLS_ALGO_KSCAN  keys of <= 4 bytes (create refuses longer ones, EINVAL):
 *                      KEYMAP's scheme (OURS' tables hold every rule; rebuilt
 *                      on a thread, answering while the set is the one it was
 *                      built from, the same stamps and retirement) with
 *                      kscan.h's key-block scan instead of the byte map: 2^h
 *                      blocks by the key's high cared-for bits, each block's
 *                      candidates one u32 each in rank order, scanned 8 (AVX2)
 *                      or 16 (AVX-512) a step, the winner found by (mask, key &
 *                      mask) in a hash table.  h by budget: the largest whose
 *                      structure fits tuning.kscan_bytes_per_rule x rules
 *                      (0 = 512; capped like KEYMAP's by mem_budget_bytes or
 *                      3/4 of MemAvailable); no h fits (wide-open masks, small
 *                      sets of 32-bit keys) -> OURS answers, the reason in
 *                      ofb_cls_last_error().  Slide 19 at 1M (issue 42): ~540
 *                      B/rule with OURS' tables (keymap ~2770), ~25 Mlps
 *                      batched, built in ~2 s; single lookups ~3 Mlps.
 *
 * Why not the document's trie.  We first modelled the H-Trie/SP-Trie hybrid
 * and bit-selection decision trees (HiCuts/HyperSplit style) for the hard case
 * (1M rules, 100 random 32-bit masks, random priorities): a random mask cares
 * about ~16 of 32 bits, so every bit a trie or tree tests is a wildcard for
 * ~half of the rules and each such rule is copied into both children
 * (SP-Trie/decision tree: memory ~N * 2^16) or must be backtracked into
 * (H-Trie: ~all masks visited anyway, as in TSS).  Priority pruning does not
 * rescue it: a region is covered by a single rule only when all of that rule's
 * ~16 care bits are fixed.  So the work per lookup is bounded below by
 * "one test per mask", and what decides speed is where those tests hit:
 * TSS's 100 probes are 100 DRAM misses into 1M-rule hash tables.  (Unless
 * the answer itself is stored per key: KEYMAP does that for keys of <= 31
 * cared-for bits, one byte per key, i.e. the set-pruning trie with one level
 * of full stride, paid in memory.)
 *
 * OURS therefore keeps the tuple structure but makes the per-mask test a
 * small cache-friendly read, and visits rule memory only for the buckets that
 * can hold the answer:
 *
 *  1. Tables (TupleMerge-like).  Each table has a common mask C and holds rules
 *     whose mask M is a superset of C (C & ~M == 0), hashed on (value & C).  A
 *     new rule goes to the most specific existing table of its band (below)
 *     it fits whose group for (value & C) has fewer than OFB_CLS_MERGE_LIMIT
 *     rules (a table with C == M always has room); else a new table for
 *     relax(M) (partial-prefix bytes such as 0xe0 cleared when they sit inside
 *     a prefix: after 0xff or before 0x00), or for M.  ClassBench-like 100k
 *     sets end up with ~40 tables where TSS needs ~1100.  Random NTT masks do
 *     not nest: ~100 tables per band, as TSS.
 *  2. Filter.  One 64-bit word per bucket: up to 4 entries of (quantised
 *     priority q: 7 bits, fingerprint: 9 bits of the hash), in descending q; a
 *     bucket with more than 4 rules keeps the 4th entry as "any key" with the
 *     highest q of the rest.  At most 2 rules per bucket on average, so the
 *     filter is 4-8 bytes per rule.
 *  3. Lookup.  Phase 1 reads one filter word per table (multiplicative hash;
 *     with AVX-512: 8 tables per step, vpermt2q/vpmullq/vpgatherqq, no branch
 *     on gathered data).  A table is a candidate when an entry has the key's
 *     fingerprint or is "any"; its bound is that entry's q.  Phase 2 visits
 *     candidates in descending bound and stops once the best rule found has a
 *     higher q than the next bound.  Quantisation is monotone, so the early
 *     exit is exact; ties in q are visited.
 *  4. Buckets are immutable blocks of rules sorted by (priority desc, id asc);
 *     updates copy the block and rewrite the bucket's filter word (RCU).
 *  5. Priority bands.  Rules are split by priority into 2^k bands (disjoint
 *     priority ranges, band 0 = highest; tables belong to one band).  A lookup
 *     runs phases 1+2 on band 0's tables and stops at the first band with a
 *     match: every rule of a later band has a lower priority.  Bands pay off
 *     when a key matches many rules (NTT: a random key matches ~30 of 1M
 *     rules, so the best is in the top 1/8 of priorities 97% of the time):
 *     the filter words a lookup reads shrink from all rules' (~6 MB at 1M) to
 *     band 0's (~0.8 MB, L2-sized).  The count is chosen by the first bulk
 *     build into an empty classifier (params.bands = 0): the most bands (up to
 *     OFB_CLS_MAX_BANDS) that keep lam = sum over band-0 rules of
 *     2^-popcount(mask) (expected band-0 matches of a random key) >= 2, and 1
 *     below 2^18 rules (the whole filter then fits in L2 anyway).  Priorities
 *     are quantised to 127 * bands levels: the band is the high part, the
 *     filter's 7-bit q the low part, so q (compared only within a band) keeps
 *     its full resolution whatever the band count.
 *  6. Key32 bitmaps (keys <= 4 bytes: document 003's 32-bit condition; not on
 *     the AVX-512 path).  Each table also keeps a bitmap of 64 bits per
 *     bucket (32-64 per rule), bit ((value & C) * 0x9E3779B1) >> shift set for
 *     every entry before it becomes visible, never cleared (a deleted rule's
 *     bit only costs false passes) until the table grows and the bitmap is
 *     rebuilt from its entries.  Phase 1 then tests one bitmap bit per table
 *     (AVX2: 8 tables per step, vpmulld + two vpgatherqq; scalar: one load),
 *     and only the ~1-3 tables per key that pass compute the table hash and
 *     read their filter word (prefetched, tested after the sweep; AVX2
 *     batches sweep all keys of a chunk before any filter word).  The
 *     bitmap is 2^(nb_log + 6) bits, so it is a superset filter with ~2 %
 *     false passes per table.  OFB_CLS_KEY32=0 turns it off (measurement).
 *  7. Grouped line filter (keys <= 4 bytes, with point 6; OFB_CLS_GF=0 turns
 *     it off).  Point 6 costs one random probe per table (~100 per key) into
 *     32-64 bits per rule (6.4 MB at 1M).  Here the tables of a band are
 *     grouped greedily (largest first, then the table sharing the most care
 *     bits with the group, at most 4 per group (OFB_CLS_GF_MAXG: up to 8),
 *     while the group's common mask
 *     G keeps >= log2(lines) + 2 bits); a group owns 2^l lines of 64 B,
 *     indexed by ((key & G) * K) >> (32 - l), sized for ~16 bits per entry
 *     (2^l >= entries of its largest table * 16 * g' / 512, g' = the group
 *     size rounded up to a power of two); lane j of a line (16 / g' dwords:
 *     4 when the group has 3-4 tables, 8 for 2, 16 for 1) belongs to its j-th
 *     table.  An entry sets 3 bits (OFB_CLS_GF_K=4:
 *     4) in one dword of its lane, dword and bits from two multiplicative
 *     hashes of (value & C): a blocked Bloom filter per table and line.  So a
 *     key reads one line per group (29 at ntt 1M instead of 96 bitmap words
 *     spread over 6.4 MB; the lines total 4 MB), and a table passes with
 *     ~0.5 % false passes (ntt 1M: 0.99 passes per key, 0.47 of them true;
 *     point 6 alone 2.2).  Phase 1 tests 8 tables per AVX2 step (vpmulld x3,
 *     vpsrlvd, one vpgatherdd: a group's 4 dwords come from one line;
 *     scalar: one load per table); passes go on exactly as in point 6.
 *     Tables not in a group (created since the last grouping, or past the
 *     4096 largest of a band) keep using their bitmap.  Bits are set (atomic
 *     OR) before a rule is visible and never cleared; the grouping is rebuilt
 *     at a publish once the rules reach 1024 (scalar path: 2^18, where its
 *     ~3x dearer test starts to pay; OFB_CLS_GF_MIN sets both), then whenever
 *     they doubled or as many entries were put as there were rules (churn),
 *     from every entry physically present (a superset of the visible rules):
 *     new lines, tables re-pointed, the snapshot rebuilt, the old lines
 *     retired with the old snapshot (RCU).  A bulk build of >= the current
 *     rule count regroups at its publish.  OFB_CLS_GF_BPE / _MAXG / _SLACK
 *     are the sizing knobs (measurement).
 *
 * Measured (CPU time, shared 2-core VMs; README.md has the tables and
 * commands).  AVX-512 Zen 4, p = 1/2 masks (ntt_half) 1M: 1.0-1.5 Mlps single,
 * 1.7-2.1 batched (8 bands).  AVX2 Zen 3, document 003's own condition
 * (rand()|rand() masks, ~23 care bits, ntt), before key32 bitmaps: 100k 1.64
 * batched (scalar 0.57), 1M 0.74 (scalar 0.33), 6x TSS; ClassBench-like 100k 2.2-3.6 vs rte_acl's
 * 27-36.  NOT the 10 Mlps goal, nor rte_acl's rate.  Bands do not help the
 * document's condition (a key matches ~0.5 rules at 1M: auto picks 1 band).
 * What bounds it: one filter probe per table of band 0 (~100 per key: random
 * masks share too few bits to merge tables) costs ~5 cycles (AVX-512) / ~7
 * (AVX2) even with everything in L1 (NTT 1k: 210-270 ns per lookup), i.e.
 * <= ~5 Mlps for phase 1 alone; at 1M the probes read ~6 MB of filter words
 * (L3/DRAM, TLB misses on 4 KiB pages: transparent huge pages gave +60 %).
 * Tried and dropped (no gain, measured): software prefetch of the next keys'
 * filter words in batches, scalar loads instead of vpgatherqq, 16/32 bands
 * (more block visits and band fall-through than the smaller filter saves).
 * Tried outside the library (experiments/classifier/LOG.md, experiments/classifier/2026-11-24-bitmap): one bit
 * per mask group in an L2-sized bitmap before exact per-mask tables: 14 Mlps
 * at 10k and 6.8 at 100k rules (4-5x OURS), but 1.4 at 1M (a filter that
 * rejects enough misses at 1M is ~25 MB, far past L2).  Then (experiments/classifier/
 * 2026-11-24-filters, batched, 3 runs): best 4.32 Mlps at 1M, 7.09 at 100k;
 * 100 bitmap probes alone cost 71 ns in L1, 132 ns in L2, 180-215 ns in L3,
 * and a filter passing ~1 mask per key at 1M needs >= 6.6 bits per rule (>
 * L2): ~5 Mlps is the ceiling of any design that tests every mask here.
 * Key32 bitmaps (point 6) took that into OURS: ntt AVX2 batched 1M 1.66 ->
 * 2.62, 100k 1.80 -> 3.88; scalar 0.64 -> 2.11, 0.68 -> 3.27 (medians of 3,
 * experiments/classifier/2026-11-24-key32).  Still 3.8x short of 10 Mlps at 1M.  The grouped
 * line filter (point 7; experiments/classifier/2026-11-24-grouped, LOG.md), same binary
 * with OFB_CLS_GF=0 beside it, medians / best of 6 on a shared box: AVX2
 * batched 1M 1.71 / 2.63 -> 3.81 / 4.19 (4.2-4.76 in quieter single runs),
 * 100k 3.42 -> 5.96 / 6.76: 2.1-2.6x short of 10 Mlps at 1M.  Scalar: no
 * clear gain at 1M (0.96x uniform, 1.3x hit-heavy).  What is left
 * per key at 1M: ~29 line misses (the lines are 4 MB, past L2) and ~1 pass
 * (0.47 true), each a filter word, bucket pointer and block from DRAM.
 * Tried with it and dropped: prefetching the next key's lines in a batch (no
 * gain: the misses already saturate), 4-slot groups read with two plain
 * loads + vpermd instead of the gather (no gain), scalar loads instead of
 * the gather (-15 %).  Dropped:
 * an L2-sized bitmap gating OURS' filter-word gather in the same vector step
 * (slower: the dependent gather stopped the misses overlapping; e3adb33).
 *
 * Invariants
 * ----------
 *  - A rule visible at version v is physically present in its table, and its
 *    bucket's filter word covers it (an entry with its fingerprint or "any",
 *    q >= its quantised priority), its table's key32 bitmap bit is set
 *    (keys <= 4 bytes) and, when the table is grouped, its bits in the group's
 *    line (point 7), and the readers' snapshot lists that table
 *    (in its band's slots), before version v is published.  Inside a batch or
 *    bulk build the snapshot rebuild is deferred to publish/reclaim (a 1M
 *    build grows tables thousands of times).
 *  - A table holds only rules of its band; bands are ordered by priority.
 *  - Filter words are only lowered after the rules they covered are physically
 *    removed (after every reader that could see them has left).
 *  - Table max_prio is an upper bound of the priorities it holds.
 *
 * Concurrency (one writer, many readers; RCU with versions)
 * ---------------------------------------------------------
 *  - Writer functions (insert, delete, build_bulk, batch_begin/commit,
 *    synchronize, reclaim, destroy) must be called by ONE thread at a time
 *    (the caller serialises writers).
 *  - Lookups never block and never take locks.  Each rule carries an add and a
 *    remove version; the writer changes the structure, then publishes a new
 *    global version with a release store; a lookup reads the version once and
 *    sees exactly the rules with add <= v < remove, so it sees each update (or
 *    each batch between ofb_cls_batch_begin/commit) completely or not at all.
 *  - A reader thread other than the writer must register once
 *    (ofb_cls_reader_register) and bracket its lookups with
 *    ofb_cls_reader_enter/leave (per burst; enter costs one fence).  The writer
 *    frees memory and physically removes deleted rules only after every
 *    registered reader has left or re-entered at a later version (epoch-based
 *    reclamation).  A reader that stays inside enter forever only delays
 *    reclamation, it never blocks the writer.
 *  - Lookups from the writer thread itself need no enter/leave.
 *
 * Limits and byte order
 * ---------------------
 *  - key_len 1..128 bytes; keys, values and masks are plain byte strings
 *    compared as bytes: put fields in network byte order if prefix masks should
 *    merge (relax() looks at bytes, most significant first).
 *  - Up to OFB_CLS_MAX_READERS registered readers, 2^32-2 rule ids.
 *  - Memory: ~70-130 bytes per rule (see ofb_cls_stats.bytes) plus per-table
 *    overhead (4-byte keys: + ~2-4 B/rule of grouped lines); no explicit budget
 *    is enforced (mem_budget_bytes is advisory).
 *  - Bands are fixed after the first bulk build (or at creation): a rule set
 *    whose priority mix changes later keeps working, only less well.
 *    OFB_CLS_BANDS=N in the environment overrides the automatic choice.
 *  - Phase 1 has three paths with identical results, chosen per classifier at
 *    ofb_cls_create: AVX-512 (F, DQ, VL, BW; 8 tables per step), AVX2 (4 tables
 *    per step; vpmuludq for the 64-bit multiply, vpermd for the key words when
 *    key_len <= 32), scalar.  With key_len <= 4, scalar and AVX2 run the
 *    grouped line filter and key32 bitmap sweeps first (points 6-7; AVX2 8
 *    tables per step).  Default:
 *    the best the CPU has
 *    (__builtin_cpu_supports).  OFB_CLS_SIMD=scalar|avx2|avx512|auto in the
 *    environment forces one (create fails with ENOTSUP and a message on stderr
 *    if the CPU lacks it); OFB_CLS_NO_SIMD=1 = scalar (older switch).
 *    ofb_cls_simd_name() says which path a classifier runs.
 *  - Priorities are uint32.  The quantisation range is taken from params
 *    (prio_min..prio_max, default 0..65535, OpenFlow's range) and re-fitted to
 *    the actual range on a bulk build into an empty classifier; priorities
 *    outside it still work (they clamp to the lowest or highest level, which
 *    stays monotone).
 *  - The library needs no DPDK EAL: plain malloc and C11 atomics.  Blocks of
 *    >= 4 KiB (filter words, bucket arrays, snapshots) come from a process-wide
 *    arena of 2 MiB chunks advised MADV_HUGEPAGE (fewer TLB misses on the ~100
 *    random probes per key: +16 % at NTT 1M, measured); freed blocks are kept
 *    for reuse, not returned to the system.  Smaller objects (bucket blocks,
 *    copied on every update; tables) come from the classifier's own writer
 *    slab: 16-byte size classes with free lists in chunks of 64 KiB doubling
 *    to 2 MiB, freed at destroy (no lock: one writer).  OFB_CLS_HUGEPAGES=0
 *    (read once per process) turns both off (malloc: sanitizer runs).
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OFB_CLS_MAX_KEY_LEN 128
#define OFB_CLS_MAX_READERS 64
#define OFB_CLS_MERGE_LIMIT 8
#define OFB_CLS_BATCH_MAX 64   /* ofb_cls_lookup_batch processes up to this many at once */
#define OFB_CLS_MAX_BANDS 32   /* priority bands of OURS (see design comment) */

enum ofb_cls_algo {
    OFB_CLS_ALGO_OURS = 0,
    OFB_CLS_ALGO_TSS = 1,
    OFB_CLS_ALGO_LINEAR = 2,
    OFB_CLS_ALGO_HTRIE = 3,    /* document 003's Hierarchical Trie (see trie.h) */
    OFB_CLS_ALGO_SPTRIE = 4,   /* its Set-Pruning Trie; mem_budget_bytes = size limit (0 = 256 MiB) */
    OFB_CLS_ALGO_HYBRID = 5,   /* its hybrid: H-Trie merged breadth-first within mem_budget_bytes */
    OFB_CLS_ALGO_LOUDS = 6,    /* the hybrid (budget 0 = H-Trie) in a LOUDS succinct layout; read-only */
    OFB_CLS_ALGO_DTREE = 7,    /* compiled decision tree (dtree.h) for the bulk + OURS tables as the delta */
    OFB_CLS_ALGO_DFA = 8,      /* DTREE with a byte-stride DFA (dfa.h) answering first */
    OFB_CLS_ALGO_AUTO = 9,     /* "auto": the library's default, resolved at ofb_cls_create by
                                  key shape (ofb_cls_algo_for_key); ofb_cls_algo() tells which */
    OFB_CLS_ALGO_KEYMAP = 10,  /* keys of <= 4 bytes: the key-space map (keymap.h) in front of OURS;
                                  mem_budget_bytes = the map's limit (0 = 4 GiB, at most 3/4 of
                                  MemAvailable) */
    OFB_CLS_ALGO_KSCAN = 11,   /* keys of <= 4 bytes: the key-block scan (kscan.h) in front of OURS, rebuilt
                                  as KEYMAP's map; its size: tuning.kscan_bytes_per_rule, capped by
                                  mem_budget_bytes as KEYMAP's */
};

/* Tuning: the measurement and test knobs.  Every field's 0 is the library's
 * default, so a zeroed struct (or none: params = {0}) is the library as
 * measured.  The library reads no environment variable: the tools (cls-bench,
 * cls-test, cls-prof: bench/tuning_env.h) and the Python binding
 * (binding.tuning_from_env) fill this from the variables named below, with the
 * meanings they always had. */
struct ofb_cls_tuning {
    const char *simd;          /* OFB_CLS_SIMD: "scalar", "avx2", "avx512" or "auto"; NULL/"" = auto.
                                  ofb_cls_create fails (ENOTSUP, a message on stderr) for an unknown
                                  name or one this CPU lacks */
    uint8_t no_simd;           /* OFB_CLS_NO_SIMD=1 (older switch): scalar (when simd is auto) */
    uint8_t no_hugepages;      /* OFB_CLS_HUGEPAGES=0: no huge-page regions anywhere (hugepage.h) */
    uint8_t no_key32;          /* OFB_CLS_KEY32=0: no key32 bitmaps */
    uint8_t no_gf;             /* OFB_CLS_GF=0: no grouped line filter */
    uint8_t gf_k;              /* OFB_CLS_GF_K: 4 = 4 bits a probe (else 3) */
    uint8_t gf_debug;          /* OFB_CLS_GF_DEBUG set: groupings and regroup times on stderr */
    uint8_t dtree_sync;        /* OFB_CLS_DTREE_SYNC=1: dtree/dfa rebuild on the writer */
    uint8_t dfa_bulk_sync;     /* OFB_CLS_DFA_BULK_SYNC=1: a DFA bulk build waits for the DFA */
    uint8_t keymap_sync;       /* OFB_CLS_KEYMAP_SYNC=1: the map rebuilt on the writer at publish */
    uint8_t dtree_stats;       /* OFB_DTREE_STATS set: build statistics on stderr */
    uint8_t dtree_no_mid;      /* OFB_DTREE_MID=0: no mask table (value + mask words) */
    uint8_t dtree_no_rid;      /* OFB_DTREE_RID=0: rule ids always by the sorted list */
    uint8_t dfa_stats;         /* OFB_DFA_STATS set */
    uint8_t dfa_key_order;     /* OFB_DFA_ORDER=key: bytes in key order */
    uint8_t dfa_no_paths;      /* OFB_DFA_PATHS=0: no path nodes */
    uint8_t dfa_narrow;        /* OFB_DFA_NARROW=1: > 16 intervals as two range16 levels */
    uint8_t dfa_no_flat;       /* OFB_DFA_FLAT=0: batches walk dfa.h's nodes, not dfa_flat.h's lockstep form */
    uint8_t dfa_no_vbmi;       /* OFB_DFA_VBMI=0: dfa_flat.h's AVX-512 walk gathers the key bytes (no VBMI permutes) */
    uint8_t dfa_no_auto;       /* OFB_CLS_AUTO_DFA=0: AUTO's tree without the DFA front (as before issue 42) */
    uint8_t kmap_debug;        /* OFB_KMAP_DEBUG set: keymap builds on stderr */
    uint8_t dfa_auto_one;      /* OFB_CLS_AUTO_DFA=one: AUTO's DFA front only when all rules fit one DFA (no
                                  partitioned DFA; as 2026-11-29's first issue-42 step) */
    uint32_t bands;            /* OFB_CLS_BANDS: a bulk build's band count (0 = automatic;
                                  rounded down to 2^k, at most OFB_CLS_MAX_BANDS) */
    uint32_t gf_maxg;          /* OFB_CLS_GF_MAXG: masks a group, 1..8 (0 = 4) */
    uint32_t gf_bpe;           /* OFB_CLS_GF_BPE: line bits per entry, 1..256 (0 = 16) */
    uint32_t gf_slack;         /* OFB_CLS_GF_SLACK plus one: 1..17 = a slack of 0..16 (0 = 2) */
    uint32_t gf_min;           /* OFB_CLS_GF_MIN: group from this many rules (0 = 1024; scalar 2^18) */
    uint32_t dtree_delta;      /* OFB_CLS_DTREE_DELTA: merge after this many delta rules (0 = 1024) */
    uint32_t dtree_trees;      /* OFB_DTREE_TREES: at most this many trees, 1..4 (0 = 4) */
    uint32_t dfa_states_per_rule;  /* OFB_DFA_STATES_PER_RULE (0 = the default cap) */
    uint64_t dfa_max_states;   /* OFB_DFA_MAX_STATES: both state caps, exactly (0 = by rules) */
    uint64_t dfa_group_mb;     /* OFB_DFA_GROUP_MB: split a group whose build passes this (0 = none) */
    uint64_t dfa_max_mb;       /* OFB_DFA_MAX_MB: cap of the DFA (0 = none) */
    uint32_t dfa_groups;       /* OFB_DFA_GROUPS: 1..4 first groups at once (0 = one DFA first) */
    uint32_t dfa_full_min;     /* OFB_DFA_FULL_MIN: dfa_flat.h's full nodes above this many intervals (0 = 4, or
                                  16 then 64 past dtree.c's DFLAT_BYTES_PER_RULE) */
    uint32_t kscan_bytes_per_rule; /* OFB_KSCAN_BYTES_PER_RULE: kscan.h's budget per rule (0 = 512): picks its
                                  block resolution */
};

struct ofb_cls_params {
    uint32_t key_len;          /* bytes, 1..OFB_CLS_MAX_KEY_LEN */
    uint32_t expected_rules;   /* sizing hint, 0 = small */
    uint64_t mem_budget_bytes; /* OURS/TSS/LINEAR: advisory, 0 = none.  HYBRID: the merge
                                  budget (0 = no merging = H-Trie); SPTRIE: the size
                                  limit, a build above it fails (0 = 256 MiB) */
    enum ofb_cls_algo algo;
    uint32_t prio_min, prio_max; /* quantisation range; both 0 = 0..65535 */
    uint32_t bands;            /* OURS priority bands: 0 = auto (chosen by the first
                                  bulk build into an empty classifier; 1 before),
                                  1..OFB_CLS_MAX_BANDS = fixed (rounded down to 2^k) */
    struct ofb_cls_tuning tuning;  /* measurement and test knobs, zero = defaults */
};

struct ofb_cls_rule {
    uint32_t priority;
    const uint8_t *value;      /* key_len bytes; bits outside mask are ignored */
    const uint8_t *mask;       /* key_len bytes */
    uint64_t handle;           /* returned by lookup; 0 is allowed but means "no
                                  match" to ofb_cls_lookup: prefer non-zero */
};

struct ofb_cls_stats {
    uint64_t rules;            /* visible rules */
    uint64_t tables;           /* hash tables (OURS/TSS), 1 for LINEAR */
    uint64_t bytes;            /* heap bytes held now, including pending frees */
    uint64_t version;          /* last published version */
    uint64_t pending_frees;    /* retired objects waiting for readers */
    uint64_t pending_removals; /* deleted rules still physically present */
    uint64_t bands;            /* OURS priority bands in use (1 for TSS/LINEAR) */
};

struct ofb_cls;

/* Create/destroy.  Returns NULL on bad params (errno EINVAL) or no memory. */
struct ofb_cls *ofb_cls_create(const struct ofb_cls_params *);
void ofb_cls_destroy(struct ofb_cls *);   /* writer; no reader may be inside */
const char *ofb_cls_algo_name(enum ofb_cls_algo);
/* What OFB_CLS_ALGO_AUTO runs for keys of key_len bytes before it sees rules (above). */
enum ofb_cls_algo ofb_cls_algo_for_key(uint32_t key_len);
/* The algorithm a classifier runs (AUTO resolved). */
enum ofb_cls_algo ofb_cls_algo(const struct ofb_cls *);

/* Writer: insert a rule, publish it (unless in a batch).  Returns the rule id
 * (>= 1) or 0 on failure (no memory). */
uint32_t ofb_cls_insert(struct ofb_cls *, const struct ofb_cls_rule *);
/* Writer: delete by id.  Returns 0, or -1 if there is no such visible rule. */
int ofb_cls_delete_id(struct ofb_cls *, uint32_t rule_id);
/* Writer: delete the visible rule with this exact priority, mask and
 * (value & mask); with duplicates, the lowest id.  Returns its id or 0. */
uint32_t ofb_cls_delete(struct ofb_cls *, const struct ofb_cls_rule *);
/* Writer: insert n rules as one batch (one version), sizing tables for them.
 * Ids of rules[i] are written to ids_out[i] if not NULL.  Returns 0 or -1. */
int ofb_cls_build_bulk(struct ofb_cls *, const struct ofb_cls_rule *rules, size_t n,
                       uint32_t *ids_out);
/* Writer: group updates; readers see all of them at once at commit.  Commit
 * returns 0, or -1 when a trie could not be rebuilt (no memory, SP-Trie over
 * its limit): the previous trie stays what readers walk, ofb_cls_last_error()
 * says why, and the next commit retries. */
void ofb_cls_batch_begin(struct ofb_cls *);
int ofb_cls_batch_commit(struct ofb_cls *);
/* Writer: free what no reader can see any more (also done during updates). */
void ofb_cls_reclaim(struct ofb_cls *);
/* Writer: wait until every registered reader has left or re-entered, then
 * reclaim everything.  Blocks (spins) on readers inside enter. */
void ofb_cls_synchronize(struct ofb_cls *);

/* Readers. */
int ofb_cls_reader_register(struct ofb_cls *);            /* -> reader id or -1 */
void ofb_cls_reader_unregister(struct ofb_cls *, int reader_id);
void ofb_cls_reader_enter(struct ofb_cls *, int reader_id);
void ofb_cls_reader_leave(struct ofb_cls *, int reader_id);

/* Lookup one key (key_len bytes).  Returns the best rule's handle, or 0 when
 * nothing matches.  If rule_id_out is not NULL, the rule id (0 = no match). */
uint64_t ofb_cls_lookup(const struct ofb_cls *, const uint8_t *key);
uint64_t ofb_cls_lookup_id(const struct ofb_cls *, const uint8_t *key, uint32_t *rule_id_out);
/* Lookup n keys (keys[i] each key_len bytes; any n).  handles_out[i] = handle
 * or 0; rule_ids_out may be NULL.  All keys of one call of at most
 * OFB_CLS_BATCH_MAX see one version.  Returns the number of hits. */
size_t ofb_cls_lookup_batch(const struct ofb_cls *, const uint8_t *const keys[], size_t n,
                            uint64_t handles_out[], uint32_t rule_ids_out[]);

void ofb_cls_get_stats(const struct ofb_cls *, struct ofb_cls_stats *);
uint64_t ofb_cls_memory_bytes(const struct ofb_cls *);
/* Bytes of the published trie alone (nodes or LOUDS bit vectors, plus its
 * copy of the rules' value/mask/handle/id), of KEYMAP's published map (0: no
 * map, OURS answers; ofb_cls_last_error() says why); 0 for OURS, TSS and LINEAR. */
uint64_t ofb_cls_trie_bytes(const struct ofb_cls *);
uint32_t ofb_cls_key_len(const struct ofb_cls *);

/* SIMD path of OURS' phase 1, chosen per classifier at creation: "scalar",
 * "avx2" or "avx512" (the best the CPU has, or what OFB_CLS_SIMD forces). */
const char *ofb_cls_simd_name(const struct ofb_cls *);
/* The last writer error as a message naming the algorithm and the cause (a
 * trie over its memory limit, out of memory), or NULL.  Set when insert
 * returns 0 or build_bulk -1; cleared by a successful build_bulk. */
const char *ofb_cls_last_error(const struct ofb_cls *);
/* 1 if this CPU can run the named path ("scalar", "avx2", "avx512"), else 0. */
int ofb_cls_simd_supported(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* OFB_CLASSIFIER_H */
