#!/bin/sh
# filter_exp, 3 repetitions of the settings that matter (uniform keys), nothing else of ours running.
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-filters/measure_reps.sh
D=${CLSB:-/tmp/clsb-fast}
gcc -O2 -mavx2 -mbmi -o /tmp/filter_exp "$(dirname "$0")/filter_exp.c" || exit 1
date -u +"start %FT%TZ"; uptime
for rep in 1 2 3; do
  echo "## rep $rep n 1000000 trace keys"
  /tmp/filter_exp "$D/ntt_1000000.rules" "$D/ntt_1000000.keys" 12 0 15 0 15 18 18 0 19 0 20 0
  echo "## rep $rep n 100000 trace keys"
  /tmp/filter_exp "$D/ntt_100000.rules" "$D/ntt_100000.keys" 12 15 16 0 17 0
done
date -u +"end %FT%TZ"; uptime
