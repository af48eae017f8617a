"""Markdown table: medians (best) over rounds per path and set: new default, old main's default, rte_acl."""
import json, statistics, sys
from collections import defaultdict
rows = defaultdict(list)
for f in sys.argv[1:]:
    for line in open(f):
        r, p, s, tag, js = line.split(" ", 4)
        d = json.loads(js)
        rows[(p, s, tag if d["algo"] in ("auto", "acl") else tag + ":" + d["algo"])].append(d)
def m(k, f):
    v = [x.get(f) or 0 for x in rows.get(k, [])]
    return (statistics.median(v), max(v), len(v)) if v else (0, 0, 0)
order = ["acl1"] + [f"{k}_{n}" for n in (1000, 10000) for k in ("cb_acl", "cb_fw", "cb_ipc")]
print("| set | path | default batched (best) / single | old main's default batched / single | rte_acl batched / single | x rte_acl batched / single | new / old batched, single | B/rule new / old | n |")
print("|---|---|---|---|---|---|---|---|---|")
for s in order:
    for p in ("avx2", "avx512"):
        nb, nbb, n = m((p, s, "new"), "batch_mlps"); ns = m((p, s, "new"), "mlps")[0]
        ob = m((p, s, "old"), "batch_mlps")[0]; os_ = m((p, s, "old"), "mlps")[0]
        ab = m((p, s, "acl"), "batch_mlps")[0]; as_ = m((p, s, "acl"), "mlps")[0]
        if not n:
            continue
        bn = rows[(p, s, "new")][0]["bytes_per_rule"]; bo = rows[(p, s, "old")][0]["bytes_per_rule"]
        acl = f"{ab:.2f} / {as_:.2f}" if ab else "does not build in 2 GB" if s.startswith(("cb_fw_100", "cb_ipc_100")) else "-"
        x = f"**{nb / ab:.2f}** / {ns / as_:.2f}" if ab else "-"
        print(f"| {s} | {p} | {nb:.2f} ({nbb:.2f}) / {ns:.2f} | {ob:.2f} / {os_:.2f} | {acl} | {x} | {nb / ob:.2f}, {ns / os_:.2f} | {bn:.0f} / {bo:.0f} | {n} |")
