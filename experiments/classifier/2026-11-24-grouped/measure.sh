#!/bin/bash
# OURS with (default) and without (OFB_CLS_GF=0: the key32 bitmaps alone, what ran before) the
# grouped line filter, same binary, 3 repetitions interleaved: ntt (slide 19) 1M / 100k uniform
# and hit-heavy keys, AVX2 and scalar, updates (delete + insert, 200k) on the uniform rows;
# ntt_half (p = 1/2 masks) 1M and cb_acl 100k (13-byte keys: the filter does not apply) as
# regression checks.  Files: see dut/classifier/README.md (CLSB dir, default /tmp/clsb-ntt).
# flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-grouped/measure.sh > measure.out
# (measure.out: commit e190e81, the scalar path grouping from 1024 rules; measure2.out: e267aae,
# the scalar path grouping from 2^18 rules, otherwise the same code)
B=${B:-$(cd "$(dirname "$0")/../../.." && pwd)/build/dut/classifier/cls-bench}
cd "${CLSB:-/tmp/clsb-ntt}" || exit 1
date -u +"start %FT%TZ"; uptime
for rep in 1 2 3; do
  for f in ntt_1000000 ntt_100000; do
    for path in avx2 scalar; do
      for gf in 1 0; do
        echo "## rep=$rep set=$f trace=uniform path=$path gf=$gf"
        OFB_CLS_SIMD=$path OFB_CLS_GF=$gf $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 200000
        echo "## rep=$rep set=$f trace=hit path=$path gf=$gf"
        OFB_CLS_SIMD=$path OFB_CLS_GF=$gf $B --rules $f.rules --keys $f.hkeys --algos ours --min-time 0.5 --updates 0
      done
    done
  done
  for f in ntt_half_1000000 cb_acl_100000; do
    for path in avx2 scalar; do
      for gf in 1 0; do
        echo "## rep=$rep set=$f trace=uniform path=$path gf=$gf"
        OFB_CLS_SIMD=$path OFB_CLS_GF=$gf $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 0
      done
    done
  done
  uptime
done
date -u +"end %FT%TZ"; uptime
