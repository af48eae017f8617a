#!/bin/bash
# OURS with (default) and without (OFB_CLS_KEY32=0) the key32 bitmaps, ntt (slide 19) 100k / 1M,
# uniform and hit-heavy keys, AVX2 and scalar, 3 repetitions interleaved, updates (delete +
# insert) on the uniform rows.  Files: see dut/classifier/README.md (CLSB dir, default /tmp/clsb-fast).
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-key32/measure.sh
B=${B:-$(cd "$(dirname "$0")/../../.." && pwd)/build/dut/classifier/cls-bench}
cd "${CLSB:-/tmp/clsb-fast}" || exit 1
date -u +"start %FT%TZ"; uptime
for rep in 1 2 3; do
  for f in ntt_1000000 ntt_100000; do
    for path in avx2 scalar; do
      for k32 in 1 0; do
        echo "## rep=$rep set=$f trace=uniform path=$path key32=$k32"
        OFB_CLS_SIMD=$path OFB_CLS_KEY32=$k32 $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 200000
        echo "## rep=$rep set=$f trace=hit path=$path key32=$k32"
        OFB_CLS_SIMD=$path OFB_CLS_KEY32=$k32 $B --rules $f.rules --keys $f.hkeys --algos ours --min-time 0.5 --updates 0
      done
    done
  done
done
date -u +"end %FT%TZ"; uptime
