"""Medians (best) per path, set, tag/algo; x rte_acl of same path+set."""
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for f in sys.argv[1:]:
    for line in open(f):
        r, p, s, tag, js = line.split(" ", 4)
        d = json.loads(js)
        a = d["algo"] if d["algo"] == "acl" else f"{tag}:{d['algo']}"
        rows[(p, s, a)].append(d)
def med(k, f):
    v = [x.get(f) or 0 for x in rows[k]]
    return statistics.median(v), max(v)
print(f"{'path':7} {'set':14} {'algo':12} {'single med (best)':>18} {'batch med (best)':>18} {'xacl b':>7} {'xacl s':>7} {'B/rule':>8} {'ready s':>8} n mism runs")
def key(k):
    p, s, a = k; kind, _, n = s.rpartition('_')
    return (p, kind if n.isdigit() else s, int(n) if n.isdigit() else 0, a)
for (p, s, a) in sorted(rows, key=key):
    sm, sb = med((p, s, a), "mlps"); bm, bb = med((p, s, a), "batch_mlps")
    am = med((p, s, "acl"), "batch_mlps")[0] if (p, s, "acl") in rows else 0
    asm = med((p, s, "acl"), "mlps")[0] if (p, s, "acl") in rows else 0
    x = rows[(p, s, a)]
    print(f"{p:7} {s:14} {a:12} {sm:8.2f} ({sb:6.2f}) {bm:8.2f} ({bb:6.2f}) {bm/am if am else 0:7.2f} {sm/asm if asm else 0:7.2f} "
          f"{x[0].get('bytes_per_rule', 0):8.1f} {statistics.median([y.get('ready_s', y.get('build_s', 0)) for y in x]):8.4f} "
          f"{len(x)} {max(y.get('mismatches', 0) for y in x)} {x[0].get('runs','')}")
