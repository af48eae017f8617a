"""Summary of measure.out: median / best of the repetitions per (rules, trace, algo)."""
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
cur = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure.out"):
    if line.startswith("# rep"):
        w = line.split()
        cur = ("scalar", "1000000", "keys") if "scalar" in line else (None, w[4], w[6])
    elif line.startswith("{"):
        o = json.loads(line)
        path = cur[0] or o["simd"]
        rows[(int(cur[1]), cur[2], o["algo"], path)].append(o)
print(f"{'rules':>8} {'trace':6} {'algo':7} {'path':6} {'runs':7} {'batch med/best':>16} {'single med':>10} "
      f"{'build s':>8} {'B/rule':>8} {'upd/s med':>10} {'after upd':>10} n")
for k in sorted(rows, key=lambda k: (-k[0], k[1], k[3], k[2])):
    v = rows[k]
    b = [o["batch_mlps"] for o in v]
    print(f"{k[0]:>8} {k[1]:6} {k[2]:7} {k[3]:6} {v[0]['runs']:7} {statistics.median(b):7.2f} /{max(b):6.2f} "
          f"{statistics.median(o['mlps'] for o in v):10.2f} {statistics.median(o['build_s'] for o in v):8.2f} "
          f"{v[0]['bytes_per_rule']:8.0f} {statistics.median(o['updates_per_s'] for o in v):10.0f} "
          f"{statistics.median(o['batch_mlps_after_updates'] for o in v):10.2f} {len(v)}")
