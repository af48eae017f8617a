#!/bin/sh
# 1M rules, more updates (the first delete converts the plain bulk-built base into a keep-mode
# base with one merge, ~1.4 s, which dominates 200 updates): 4000 delete+insert rounds, 3 reps.
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-incremental/measure_1m.sh
B=${BUILD:-build}/dut/classifier/cls-bench
D=${CLSB:-/tmp/clsb-cls}
for rep in 1 2 3; do
  echo "# rep $rep n 1000000 budget_mb 0 updates 4000"
  nice -n 10 "$B" --rules "$D/ntt_1000000.rules" --keys "$D/ntt_1000000.keys" --algos htrie \
    --min-time 0.1 --updates 4000
done
