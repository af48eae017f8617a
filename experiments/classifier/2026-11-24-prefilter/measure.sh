#!/bin/bash
# OURS with and without the per-table prefilter bitmap (AVX2 and scalar), ntt (slide 19) 100k/1M,
# 3 repetitions interleaved.  Files as in ../2026-11-24-epyc-avx2 (CLSB dir, default /tmp/clsb-fast).
# Needs the prefilter of commit e3adb33 (reverted after this measurement: slower); on a later tree the
# OFB_CLS_PREFILTER/OFB_CLS_PF_BITS variables are ignored and every row measures plain OURS.
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-prefilter/measure.sh
B=${B:-$(cd "$(dirname "$0")/../../.." && pwd)/build/dut/classifier/cls-bench}
cd "${CLSB:-/tmp/clsb-fast}" || exit 1
date -u +"start %FT%TZ"; uptime
for rep in 1 2 3; do
  for f in ntt_1000000 ntt_100000; do
    for cfg in "avx2 0 2" "avx2 1 1" "avx2 1 2" "avx2 1 3" "scalar 0 2" "scalar 1 2"; do
      set -- $cfg
      echo "## rep=$rep set=$f path=$1 pf=$2 bits=$3"
      OFB_CLS_SIMD=$1 OFB_CLS_PREFILTER=$2 OFB_CLS_PF_BITS=$3 $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 0
    done
  done
done
date -u +"end %FT%TZ"; uptime
