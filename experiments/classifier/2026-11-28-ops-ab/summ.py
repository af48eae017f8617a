import json, sys, statistics as st
from collections import defaultdict
d = defaultdict(list)
for line in open(sys.argv[1]):
    r, b, s, js = line.split(' ', 3)
    o = json.loads(js)
    if 'error' in o:
        d[(s, o['algo'], b, 'err')].append(o['error'][:60]); continue
    d[(s, o['algo'], b, 'mlps')].append(o['mlps'])
    d[(s, o['algo'], b, 'batch')].append(o['batch_mlps'])
    d[(s, o['algo'], b, 'mism')].append(o['mismatches'])
keys = sorted({(s, a) for (s, a, b, m) in d})
print(f"{'set':14} {'algo':8} {'single old':>18} {'single new':>18} {'ratio':>6} {'batch old':>18} {'batch new':>18} {'ratio':>6}")
for s, a in keys:
    if (s, a, 'old', 'err') in d or (s, a, 'new', 'err') in d:
        print(f"{s:14} {a:8} error: old {d.get((s,a,'old','err'))} new {d.get((s,a,'new','err'))}"); continue
    row = f"{s:14} {a:8}"
    for m in ('mlps', 'batch'):
        o, n = d[(s, a, 'old', m)], d[(s, a, 'new', m)]
        mo, mn = st.median(o), st.median(n)
        row += f" {mo:8.2f} ({max(o):6.2f}) {mn:8.2f} ({max(n):6.2f}) {mn/mo:6.2f}"
    row += f"  n={len(d[(s,a,'old','mlps')])}/{len(d[(s,a,'new','mlps')])} mism={sum(d[(s,a,'old','mism')])}/{sum(d[(s,a,'new','mism')])}"
    print(row)
