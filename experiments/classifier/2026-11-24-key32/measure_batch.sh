#!/bin/bash
# key32 batch: the sweep of all keys of a batch chunk before any filter word (NEW) against the
# per-key sweep + drain (OLD = commit 7b2229b), ntt 100k / 1M, AVX2 and scalar, 3 repetitions
# interleaved.  B_OLD / B_NEW: cls-bench of each build.
# flock /tmp/ofbench-bench.lock env B_OLD=... B_NEW=... experiments/classifier/2026-11-24-key32/measure_batch.sh
cd "${CLSB:-/tmp/clsb-fast}" || exit 1
date -u +"start %FT%TZ"; uptime
for rep in 1 2 3; do
  for f in ntt_1000000 ntt_100000; do
    for path in avx2 scalar; do
      for v in old new; do
        B=$B_OLD; [ $v = new ] && B=$B_NEW
        for t in keys hkeys; do
          echo "## rep=$rep set=$f trace=$t path=$path key32=$v"
          OFB_CLS_SIMD=$path $B --rules $f.rules --keys $f.$t --algos ours --min-time 0.5 --updates 0
        done
      done
    done
  done
done
date -u +"end %FT%TZ"; uptime
