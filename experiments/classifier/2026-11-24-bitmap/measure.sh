#!/bin/sh
# bitmap_exp on ntt (slide 19) 10k / 100k / 1M, uniform and hit-heavy keys, one run each.
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-bitmap/measure.sh
D=${CLSB:-/tmp/clsb-cls}
gcc -O2 -mavx2 -o /tmp/bitmap_exp "$(dirname "$0")/bitmap_exp.c" || exit 1
for n in 10000 100000 1000000; do
  for keys in keys hkeys; do
    echo "## n $n trace $keys"
    nice -n 10 /tmp/bitmap_exp "$D/ntt_$n.rules" "$D/ntt_$n.$keys"
  done
done
