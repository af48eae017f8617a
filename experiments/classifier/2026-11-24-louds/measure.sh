#!/bin/sh
# DA+vEB (hybrid) vs LOUDS (the same hybrid trie), document 003 slide 19 workload (ntt),
# 3 repetitions alternating, one core. Rule/key files: see ../LOG.md (LOUDS section).
# Run as: flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-louds/measure.sh
B=${BUILD:-build}/dut/classifier/cls-bench
D=${CLSB:-/tmp/clsb-cls}
for rep in 1 2 3; do
  for cfg in "10000 0" "10000 16" "100000 0" "100000 64" "1000000 0"; do
    set -- $cfg
    for keys in keys hkeys; do
      echo "# rep $rep n $1 budget_mb $2 trace $keys"
      nice -n 10 "$B" --rules "$D/ntt_$1.rules" --keys "$D/ntt_$1.$keys" \
        --algos hybrid,louds --budget-mb "$2" --min-time 0.3 --updates 0
    done
  done
done
