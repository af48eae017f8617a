#!/usr/bin/env bash
# The public ClassBench-ng acl1 set (traces/classbench/acl1_20000.txt, 2572 filters -> 3937 rules),
# every algorithm and rte_acl, OURS' phase 1 and rte_acl's classify forced to AVX2 then AVX-512 in
# turn (OFB_CLS_SIMD, cls-bench --acl-simd), 3 rounds; one JSON line per result prefixed with
# "round path". Run under flock /tmp/ofbench-bench.lock (exclusive). BIN: cls-bench; D: rules/keys.
BIN=${1:?cls-bench}; D=${D:-/tmp/clsops}
R=$D/acl1_20000.rules; K=$D/acl1_20000.keys
for r in 1 2 3; do
  for p in avx2 avx512; do
    OFB_CLS_SIMD=$p taskset -c 1 timeout 300 "$BIN" --rules $R --keys $K --algos ours,tss,linear,dtree,dfa,auto,htrie,hybrid,louds \
      --min-time 0.3 --updates 20000 2>/dev/null | grep '^{' | sed "s/^/$r $p /"
    OFB_CLS_SIMD=$p taskset -c 1 timeout 60 "$BIN" --rules $R --keys $K --algos sptrie --min-time 0.3 --updates 0 2>/dev/null \
      | grep '^{' | sed "s/^/$r $p /"
    taskset -c 1 timeout 120 "$BIN" -l 1 --no-huge -m 2048 --no-pci --no-shconf --file-prefix ofb-clsops-$$ \
      --log-level lib.eal:error -- --rules $R --keys $K --algos acl --min-time 0.3 --acl-simd $p 2>/dev/null \
      | grep '^{' | sed "s/^/$r $p /"
  done
done
