"""median / best of the repetitions in the given outputs (pooled): python3 summary.py measure2.out [measure3.out ...]"""
import json
import re
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
head = None
for path in sys.argv[1:] or ["measure.out"]:
    for line in open(path):
        if line.startswith("## "):
            head = dict(re.findall(r"(\w+)=(\S+)", line))
        elif line.startswith("{") and head:
            runs[(head["set"], head["trace"], head["path"], head["gf"])].append(json.loads(line))


def mb(rs, k, f="{:.2f}"):
    v = [r[k] for r in rs]
    return f"{f.format(statistics.median(v))} / {f.format(max(v))}"


print("set trace path gf: batched Mlps med/best | single | build s | updates/s | bytes/rule | mismatches")
for k, rs in sorted(runs.items()):
    upd = mb(rs, "updates_per_s", "{:.0f}") if rs[0]["updates_per_s"] else "-"
    print(f"{' '.join(k)}: {mb(rs, 'batch_mlps')} | {mb(rs, 'mlps')} | {mb(rs, 'build_s')} | {upd} | "
          f"{rs[0]['bytes_per_rule']} | {sum(r['mismatches'] for r in rs)} (n={len(rs)})")
