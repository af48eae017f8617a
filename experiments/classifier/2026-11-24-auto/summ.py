"""Medians (best) of measure.out: batched Mlps per set, SIMD path and algorithm; the default's
ratio to rte_acl; build, updates, mismatches.  python3 summ.py measure.out"""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for line in open(sys.argv[1] if len(sys.argv) > 1 else "measure.out"):
    parts = line.split(" ", 3)
    if len(parts) < 4 or not parts[3].startswith("{"):
        continue
    rep, kind, path, obj = parts[0], parts[1], parts[2], json.loads(parts[3])
    runs[(kind, path, obj["algo"])].append(obj)


def med(xs):
    return statistics.median(xs) if xs else None


print("| set | path | algo (runs) | batched Mlps median (best) | single | build s | updates/s | mismatches | / rte_acl |")
print("|---|---|---|---|---|---|---|---|---|")
for (kind, path, algo), objs in sorted(runs.items()):
    ok = [o for o in objs if "error" not in o]
    if not ok:
        print(f"| {kind} | {path} | {algo} | {objs[0]['error']} |")
        continue
    b = [o["batch_mlps"] for o in ok]
    acl = [o["batch_mlps"] for o in runs.get((kind, "avx2", "acl"), []) if "error" not in o]
    ratio = f"{med(b) / med(acl):.2f}x" if acl and algo != "acl" else "-"
    print(f"| {kind} | {path} | {algo} ({ok[0].get('runs', algo)}) | {med(b):.2f} ({max(b):.2f}) | "
          f"{med([o['mlps'] for o in ok]):.2f} | {med([o['build_s'] for o in ok]):.2f} | "
          f"{(med([o.get('updates_per_s') or 0 for o in ok]) or 0) / 1e6:.2f} M | "
          f"{sum(o.get('mismatches', 0) for o in ok)} | {ratio} |")
