"""measure.sh output -> medians (best) of 3 per SIMD path and algorithm, and x rte_acl."""
import json
import statistics as st
import sys
from collections import defaultdict

d = defaultdict(list)
err = {}
for line in open(sys.argv[1]):
    r, p, js = line.split(" ", 2)
    o = json.loads(js)
    if "error" in o:
        err[(p, o["algo"])] = o["error"][:90]
        continue
    d[(p, o["algo"])].append(o)
print(f"{'path':7} {'algo':7} {'single med (best)':>18} {'batch med (best)':>18} {'xacl b':>7} {'xacl s':>7} "
      f"{'B/rule':>8} {'build s':>8} {'upd/s':>9} n mism")
for p in ("avx2", "avx512"):
    acl = d.get((p, "acl"))
    ab = st.median(o["batch_mlps"] for o in acl) if acl else None
    asg = st.median(o["mlps"] for o in acl) if acl else None
    for a in ("auto", "dtree", "dfa", "ours", "tss", "linear", "htrie", "hybrid", "louds", "sptrie", "acl"):
        if (p, a) in err and (p, a) not in d:
            print(f"{p:7} {a:7} error: {err[(p, a)]}")
            continue
        os_ = d.get((p, a))
        if not os_:
            continue
        s = [o["mlps"] for o in os_]
        b = [o["batch_mlps"] for o in os_]
        upd = os_[-1].get("updates_per_s") or 0
        print(f"{p:7} {a:7} {st.median(s):9.2f} ({max(s):6.2f}) {st.median(b):9.2f} ({max(b):6.2f}) "
              f"{(st.median(b) / ab if ab else 0):7.2f} {(st.median(s) / asg if asg else 0):7.2f} "
              f"{os_[-1]['bytes_per_rule']:8.1f} {os_[-1]['build_s']:8.4f} {upd:9.0f} {len(os_)} "
              f"{sum(o.get('mismatches', 0) for o in os_)}")
