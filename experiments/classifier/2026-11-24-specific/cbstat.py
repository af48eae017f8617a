import collections, sys
from traces import rulesets as r
from dut.classifier.binding import Classifier
for kind in ("cb_acl", "cb_fw", "cb_ipc"):
    rs = r.make(kind, 100000, 1)
    keys = rs.keys(1 << 14, 2)
    rules = [(int(rs.priorities[i]), rs.values[i].tobytes(), rs.masks[i].tobytes(), i + 1) for i in range(len(rs))]
    keys = [k.tobytes() for k in keys]
    c = Classifier(rs.key_len, algo="ours")
    c.build_bulk(rules)
    res = c.lookup_batch(keys)
    cnt = collections.Counter(h for _, h in res)
    miss = cnt.pop(0, 0)
    top = cnt.most_common(5)
    # width of the top rules: number of wildcard bits
    def wild(h):
        m = rules[h - 1][2]; return sum(8 - bin(b).count("1") for b in m)
    print(kind, "keys", len(keys), "miss", miss, "distinct answers", len(cnt),
          "top", [(h, n, wild(h), rules[h-1][0]) for h, n in top])
