"""measure.out -> median / best of the 3 repetitions per (rules, budget, trace, algo)."""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
cfg = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure.out"):
    if line.startswith("# rep"):
        f = line.split()
        cfg = (int(f[4]), int(f[6]), f[8])
    elif line.startswith("{"):
        o = json.loads(line)
        runs[cfg + (o["algo"],)].append(o)
print("rules budget_MB trace | DA+vEB batched Mlps med/best | LOUDS med/best | LOUDS/DA (medians) |"
      " trie B/rule DA, LOUDS, saving | single Mlps DA, LOUDS (med) | build s DA, LOUDS")
for (n, mb, trace, algo) in sorted(k for k in runs if k[3] == "hybrid"):
    da, lo = runs[(n, mb, trace, "hybrid")], runs[(n, mb, trace, "louds")]
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    best = lambda xs, k: max(x[k] for x in xs)
    assert all(x["mismatches"] == 0 for x in lo)
    print(f"{n} {mb} {'uniform' if trace == 'keys' else 'hit'} | {med(da, 'batch_mlps'):.3f} / {best(da, 'batch_mlps'):.3f}"
          f" | {med(lo, 'batch_mlps'):.3f} / {best(lo, 'batch_mlps'):.3f}"
          f" | {med(lo, 'batch_mlps') / med(da, 'batch_mlps'):.2f}"
          f" | {da[0]['trie_bytes_per_rule']:.1f}, {lo[0]['trie_bytes_per_rule']:.1f},"
          f" {1 - lo[0]['trie_bytes_per_rule'] / da[0]['trie_bytes_per_rule']:.0%}"
          f" | {med(da, 'mlps'):.3f}, {med(lo, 'mlps'):.3f} | {med(da, 'build_s'):.2f}, {med(lo, 'build_s'):.2f}"
          f" (n={len(da)},{len(lo)})")
