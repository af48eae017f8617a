#!/bin/sh
# Updates per second (delete + insert of the same rule, each published on its own) of the
# incremental htrie / hybrid, ntt (slide 19); 3 repetitions.
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-incremental/measure.sh
B=${BUILD:-build}/dut/classifier/cls-bench
D=${CLSB:-/tmp/clsb-cls}
for rep in 1 2 3; do
  for cfg in "10000 0 20000" "10000 16 20000" "100000 0 4000" "100000 64 4000" "1000000 0 200"; do
    set -- $cfg
    echo "# rep $rep n $1 budget_mb $2 updates $3"
    nice -n 10 "$B" --rules "$D/ntt_$1.rules" --keys "$D/ntt_$1.keys" --algos htrie,hybrid \
      --budget-mb "$2" --min-time 0.1 --updates "$3"
  done
done
