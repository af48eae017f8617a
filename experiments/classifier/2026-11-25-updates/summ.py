"""measure.sh output -> per set and build: updates/s (writer CPU) and all threads, batched
Mlps, build s: median, min, max over the repetitions."""
import collections, json, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    parts = line.split(" ", 3)
    if len(parts) < 4 or not parts[3].startswith("{"):
        continue
    rows[(parts[1], parts[2])].append(json.loads(parts[3]))
print("set     build  n  updates/s writer (median min..max)   all threads (median)  batched Mlps (median)  build s")
for (k, w), ds in sorted(rows.items()):
    u = [d["updates_per_s"] / 1e6 for d in ds]
    ua = [d["updates_per_s_all_threads"] / 1e6 for d in ds]
    b = [d["batch_mlps"] for d in ds]
    bs = [d["build_s"] for d in ds]
    print(f"{k:7} {w:5} {len(ds)}  {statistics.median(u):.2f} M ({min(u):.2f}..{max(u):.2f})"
          f"             {statistics.median(ua):.2f} M              {statistics.median(b):.2f}"
          f"                  {statistics.median(bs):.2f}")
