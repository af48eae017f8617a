import json, re, statistics, collections, sys
rows = collections.defaultdict(list)
cur = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "/tmp/clsb/measure.out"):
    line = line.strip()
    if line.startswith("## rep="):
        d = dict(kv.split("=") for kv in line[3:].split())
        cur = (d["set"], d["trace"], d["path"])
    elif line.startswith("## "):
        cur = None
    elif line.startswith("{") and cur:
        o = json.loads(line)
        rows[cur].append(o)
for k, obs in rows.items():
    def ms(key):
        v = [o[key] for o in obs if o.get(key) is not None]
        return (statistics.median(v), max(v), len(v)) if v else None
    out = {x: ms(x) for x in ("mlps", "batch_mlps", "updates_per_s", "build_s")}
    f = lambda t, d=2: "-" if t is None else f"{t[0]:.{d}f} / {t[1]:.{d}f} (n={t[2]})"
    bs = ms("build_s")
    print(f"{k[0]:15s} {k[1]:8s} {k[2]:7s} single {f(out['mlps'])}  batch {f(out['batch_mlps'])}  upd/s {f(out['updates_per_s'],0)}  build_s med {bs[0] if bs else '-'} min {min(o['build_s'] for o in obs if 'build_s' in o) if bs else '-'}  err {[o.get('error') for o in obs if 'error' in o][:1]}")
