"""measure.out -> median / best of the repetitions per (rules, budget, algo)."""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure.out"):
    if line.startswith("# rep"):
        f = line.split()
        cfg = (int(f[4]), int(f[6]))
    elif line.startswith("{"):
        o = json.loads(line)
        runs[cfg + (o["algo"],)].append(o)
print("rules budget_MB algo | updates/s med / best | full rebuild s (build_s) med -> rebuilds/s |"
      " batched Mlps before / after the updates (med) | n")
for key in sorted(runs):
    n, mb, algo = key
    if algo == "htrie" and mb:
        continue  # htrie ignores the budget
    rs = runs[key]
    med = lambda k: statistics.median(x[k] for x in rs)
    print(f"{n} {mb} {algo} | {med('updates_per_s'):.0f} / {max(x['updates_per_s'] for x in rs):.0f}"
          f" | {med('build_s'):.4f} -> {1 / med('build_s'):.0f}"
          f" | {med('batch_mlps'):.3f} / {med('batch_mlps_after_updates'):.3f} | {len(rs)}")
