"""median / best of the repetitions in measure.out: python3 summary.py measure.out"""
import json
import re
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
head = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure.out"):
    if line.startswith("## "):
        head = dict(re.findall(r"(\w+)=(\S+)", line))
    elif line.startswith("{") and head:
        r = json.loads(line)
        runs[(head["set"], head["path"], head["pf"], head["bits"])].append(r)
print("set path prefilter bits: single Mlps median/best, batched Mlps median/best (n)")
for k, rs in sorted(runs.items()):
    s = [r["mlps"] for r in rs]
    b = [r["batch_mlps"] for r in rs]
    print(f"{k[0]} {k[1]} pf={k[2]} bits={k[3]}: single {statistics.median(s):.2f} / {max(s):.2f}, "
          f"batched {statistics.median(b):.2f} / {max(b):.2f} (n={len(rs)}, bytes/rule {rs[0]['bytes_per_rule']})")
