#!/bin/bash
# dtree alone (dtprobe.c: build from a rule file, 300 keys checked against brute force, single and
# batched Mlps per thread CPU second) in compile-time variants, alternating A/B in rounds:
#   experiments/classifier/2026-11-24-leaf/probe.sh ROUNDS "SETS" VARIANT...
# VARIANT: name=cflags (e.g. leaf24=-DDT_LEAF=24), or name=cflags@path/to/other/dtree.c (an older
# dtree.c, e.g. from git show COMMIT:dut/classifier/dtree.c).  HOT=64 in the environment: only the
# first 64 keys, repeated (their paths and leaves stay in cache: the compute cost alone).
# SIMD=0: the scalar walk and filter (default SIMD=1: the SSE4 walk, SSE2 filter).
# Every timing under flock /tmp/ofbench-bench.lock.  Rule/key files in /tmp/clsb (README, dtree).
set -e
R=$1; shift; SETS=$1; shift
cd "$(dirname "$0")"
for v in "$@"; do n=${v%%=*}; f=${v#*=}; src=../../../dut/classifier/dtree.c
  case "$f" in *@*) src=${f#*@}; f=${f%@*};; esac
  gcc -O2 -msse4.2 $f -I../../../dut/classifier -o /tmp/dtp-$n dtprobe.c $src -lpthread; done
for r in $(seq 1 $R); do for s in $SETS; do for v in "$@"; do n=${v%%=*}
  o=$(env $([ "${SIMD:-1}" = 1 ] && echo DTS=1) flock /tmp/ofbench-bench.lock /tmp/dtp-$n /tmp/clsb/${s}_100000.rules /tmp/clsb/${s}_100000.keys | tr '\n' ' ')
  echo "$r $s $n $o" | sed -E 's/ sink [0-9]+//; s/ Mlps//g; s/trees [0-9]+ //'
done; done; done
