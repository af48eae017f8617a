import json, sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    parts = line.split(" ", 3)
    if len(parts) < 4 or not parts[3].startswith("{"): continue
    rep, k, path, js = parts
    d = json.loads(js)
    rows[(k, path, d["algo"])].append(d)
def med(ds, key):
    v = [d[key] for d in ds if d.get(key) is not None]
    return (round(statistics.median(v), 3), round(max(v) if "mlps" in key or "per_s" in key else min(v), 3)) if v else None
print("| set | path | algo | single Mlps | batched Mlps | build s | B/rule | updates/s | mismatches | n |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (k, path, a), ds in sorted(rows.items()):
    if "error" in ds[0]:
        print(f"| {k} | {path} | {a} | {ds[0]['error']} |"); continue
    f = lambda key: "%s (%s)" % med(ds, key) if med(ds, key) else "-"
    print(f"| {k} | {path} | {a} | {f('mlps')} | {f('batch_mlps')} | {f('build_s')} | {ds[0].get('bytes_per_rule')} | {f('updates_per_s')} | {max(d.get('mismatches') or 0 for d in ds)} | {len(ds)} |")
