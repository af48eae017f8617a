"""medians (best) per (n, path, tag) of ab1m.out / curve.out lines "round path n tag json"."""
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    parts = line.split(" ", 4)
    if len(parts) < 5 or not parts[4].startswith("{"):
        continue
    _, path, n, tag, js = parts
    o = json.loads(js)
    if "error" in o:
        rows[(int(n), path, tag)].append(None)
        continue
    rows[(int(n), path, tag)].append(o)
for (n, path, tag), os_ in sorted(rows.items()):
    ok = [o for o in os_ if o]
    if not ok:
        print(n, path, tag, "did not build"); continue
    b = [o["batch_mlps"] for o in ok]; s = [o["mlps"] for o in ok]
    print(f"{n:>8} {path:7} {tag:8} batched {statistics.median(b):7.2f} ({max(b):.2f}) single "
          f"{statistics.median(s):6.2f} ({max(s):.2f})  B/rule {statistics.median(o['bytes_per_rule'] for o in ok):7.1f}"
          f"  build {statistics.median(o['build_s'] for o in ok):.2f} s  n={len(ok)} mism={sum(o['mismatches'] for o in ok)}")
