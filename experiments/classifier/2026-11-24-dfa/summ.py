"""measure.out -> table: median of the repetitions (best in brackets) per set, path, algo."""
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
cur = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure.out"):
    if line.startswith("## "):
        kv = dict(x.split("=") for x in line[3:].split())
        cur = (kv["set"], kv["path"])
    elif line.startswith("{") and cur:
        o = json.loads(line)
        rows[(cur[0], cur[1], o["algo"])].append(o)
keys = ["mlps", "batch_mlps", "build_s", "ready_s", "updates_per_s", "updates_per_s_all_threads", "batch_mlps_after_updates", "bytes_per_rule"]
print("| set | path | algo | " + " | ".join(keys) + " | mismatches |")
print("|---|---|---|" + "---|" * (len(keys) + 1))
for (s, p, a), os in sorted(rows.items()):
    cells = []
    for k in keys:
        v = [o[k] for o in os if o.get(k) is not None]
        if not v:
            cells.append("-")
            continue
        best = min(v) if k in ("build_s", "bytes_per_rule") else max(v)
        cells.append(f"{statistics.median(v):.3g} ({best:.3g})")
    print(f"| {s} | {p} | {a} | " + " | ".join(cells) + f" | {sum(o['mismatches'] for o in os)} |")
# ratios to rte_acl's batched rate in the same run (avx2 path), median (best) over the repetitions
print()
print("| set | algo | batch_mlps / rte_acl batch_mlps, same run |")
print("|---|---|---|")
by_run = defaultdict(dict)
cur = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure.out"):
    if line.startswith("## "):
        kv = dict(x.split("=") for x in line[3:].split())
        cur = (kv["rep"], kv["set"], kv["path"])
    elif line.startswith("{") and cur and cur[2] == "avx2":
        o = json.loads(line)
        by_run[cur][o["algo"]] = o.get("batch_mlps")
ratios = defaultdict(list)
for (rep, s, p), d in by_run.items():
    for a in ("dfa", "dtree"):
        if d.get(a) and d.get("acl"):
            ratios[(s, a)].append(d[a] / d["acl"])
for (s, a), r in sorted(ratios.items()):
    print(f"| {s} | {a} | {statistics.median(r):.3f} ({max(r):.3f}) |")
