"""Medians of 3 (best) per path, set and algorithm from measure.sh's output; x rte_acl of the same path and set."""
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    r, p, s, js = line.split(" ", 3)
    d = json.loads(js)
    rows[(p, s, d["algo"])].append(d)
def med(k, f):
    v = [x.get(f) or 0 for x in rows[k]]
    return statistics.median(v), max(v)
print(f"{'path':7} {'set':14} {'algo':9} {'single med (best)':>18} {'batch med (best)':>18} {'xacl b':>7} {'xacl s':>7} {'B/rule':>8} {'ready s':>8} {'upd/s':>9} n mism")
for (p, s, a) in sorted(rows):
    sm, sb = med((p, s, a), "mlps"); bm, bb = med((p, s, a), "batch_mlps")
    am = med((p, s, "acl"), "batch_mlps")[0] if (p, s, "acl") in rows else 0
    asm = med((p, s, "acl"), "mlps")[0] if (p, s, "acl") in rows else 0
    x = rows[(p, s, a)]
    print(f"{p:7} {s:14} {a:9} {sm:8.2f} ({sb:6.2f}) {bm:8.2f} ({bb:6.2f}) {bm/am if am else 0:7.2f} {sm/asm if asm else 0:7.2f} "
          f"{x[0].get('bytes_per_rule', 0):8.1f} {statistics.median([y.get('ready_s', y.get('build_s', 0)) for y in x]):8.4f} "
          f"{statistics.median([y.get('updates_per_s') or 0 for y in x]):9.0f} {len(x)} {max(y.get('mismatches', 0) for y in x)}")
