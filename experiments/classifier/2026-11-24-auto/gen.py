"""ntt (slide 19) 100k rules and uniform keys into /tmp/clsb2, as the suite makes them (seed 1)."""
from traces import rulesets as r
rs = r.make("ntt", 100_000, 1)
rs.write_rules("/tmp/clsb2/ntt_100000.rules")
r.write_keys("/tmp/clsb2/ntt_100000.keys", rs.keys(1 << 16, 2, hit_fraction=0.0))
