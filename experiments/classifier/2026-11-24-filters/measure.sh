#!/bin/sh
# filter_exp on ntt (slide 19) 100k / 1M, uniform and hit-heavy keys, one run each per setting
# (b1 b2 pairs: log2 level-1 bits per mask, log2 level-2 bits per mask or 0).
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-filters/measure.sh
D=${CLSB:-/tmp/clsb-fast}
gcc -O2 -mavx2 -mbmi -o /tmp/filter_exp "$(dirname "$0")/filter_exp.c" || exit 1
date -u +"start %FT%TZ"; uptime
for keys in keys hkeys; do
  echo "## n 1000000 trace $keys"
  /tmp/filter_exp "$D/ntt_1000000.rules" "$D/ntt_1000000.$keys" 12 18 14 0 15 0 15 18 16 18 16 19 17 0 18 0 19 0
  echo "## n 100000 trace $keys"
  /tmp/filter_exp "$D/ntt_100000.rules" "$D/ntt_100000.$keys" 10 0 12 0 12 15 13 0 14 0 15 0 16 0
done
date -u +"end %FT%TZ"; uptime
