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
keys = ["mlps", "batch_mlps", "build_s", "updates_per_s", "updates_per_s_all_threads", "batch_mlps_after_updates", "bytes_per_rule"]
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
