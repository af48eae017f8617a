#!/bin/bash
# Second side-by-side run after making the scalar sweep inline and the two-stage batch AVX2-only:
# old = cls-bench of commit 7b2229b (copied to /tmp/clsb-fast/cls-bench-7b2229b), new = this tree.
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-key32/measure_batch2.sh
cd /tmp/clsb-fast; uptime
for rep in 1 2 3; do for f in ntt_100000 ntt_1000000; do for v in old new; do
  B=${B_OLD:-/tmp/clsb-fast/cls-bench-7b2229b}; [ $v = new ] && B=${B_NEW:-/tmp/cls-fast-rel/dut/classifier/cls-bench}
  for path in scalar avx2; do
  echo "## rep=$rep set=$f trace=keys path=$path key32=$v"; OFB_CLS_SIMD=$path $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 0
  done
done; done; done; uptime
