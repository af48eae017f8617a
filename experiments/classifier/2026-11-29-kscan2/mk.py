# the sets of ab1m.sh / curve.sh: python mk.py N ntt 1 65536 -> /tmp/kscan2 (run from the repo root)
import sys
sys.path.insert(0, ".")   # run from the repo root
from traces import rulesets
SEED = int(sys.argv[3]); NK = int(sys.argv[4])
n = int(sys.argv[1]); kind = sys.argv[2]
rs = rulesets.make(kind, n, SEED)
rs.write_rules(f"/tmp/kscan2/{kind}_{n}.rules")
rulesets.write_keys(f"/tmp/kscan2/{kind}_{n}.keys", rs.keys(NK, SEED + 1))
rulesets.write_keys(f"/tmp/kscan2/{kind}_{n}.hkeys", rs.keys(NK, SEED + 1, hit_fraction=1.0))
print("ok", n)
