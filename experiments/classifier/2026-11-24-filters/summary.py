"""median / best per setting over the repetitions: python3 summary.py measure_reps.out"""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure_reps.out"):
    if line.startswith("{"):
        r = json.loads(line)
        runs[(r["rules"], r["b1"], r["b2"])].append(r)
keys = ["mlps_phase1_only", "mlps_avx2", "mlps_avx2_batched", "mlps_scalar"]
print("rules b1 b2 l1_kb l2_kb passes_l1 passes_l2 | " + " | ".join(f"{k} med/best" for k in keys))
for (n, b1, b2), rs in sorted(runs.items(), key=lambda x: (-x[0][0], x[0][1], x[0][2])):
    assert all(r["wrong"] == 0 for r in rs)
    cells = []
    for k in keys:
        v = [r[k] for r in rs]
        cells.append(f"{statistics.median(v):.2f}/{max(v):.2f}")
    print(f"{n} {b1} {b2} {rs[0]['l1_kb']:.0f} {rs[0]['l2_kb']:.0f} {rs[0]['passes_l1']:.2f} "
          f"{rs[0]['passes_l2']:.2f} | " + " | ".join(cells) + f" (n={len(rs)})")
