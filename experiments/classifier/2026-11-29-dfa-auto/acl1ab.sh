#!/usr/bin/env bash
# acl1: final (shared nodes) vs round-1 binary (no sharing) vs old main, interleaved, 3 reps per path
D=/tmp/dfaauto; s=acl1
for r in 1 2 3; do for p in avx2 avx512; do
  for v in final:/tmp/dfaauto/cls-bench-final nocons:/tmp/dfaauto/cls-bench-new old:/tmp/dfaauto/src-old/build/dut/classifier/cls-bench; do
    OFB_CLS_SIMD=$p taskset -c 1 timeout 60 ${v#*:} --rules $D/$s.rules --keys $D/$s.keys --algos auto --min-time 0.5 --updates 0 2>/dev/null \
      | grep '^{' | sed "s/^/$r $p $s ${v%%:*} /"
  done
done; done
