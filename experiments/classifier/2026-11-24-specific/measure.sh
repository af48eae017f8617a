#!/bin/bash
# ClassBench-like 100k sets, priority by specificity (traces/rulesets.py), 3 reps each:
# ours, dtree, dfa (one process) and rte_acl (own process, EAL, build capped at 8 GB).
B=${B:-/work/main/build/dut/classifier/cls-bench}
D=${D:-/tmp/clsb2}
for rep in 1 2 3; do
  for k in cb_acl cb_fw cb_ipc; do
    for path in avx2 scalar; do
      OFB_CLS_SIMD=$path flock /tmp/ofbench-bench.lock $B --rules $D/${k}_100000.rules --keys $D/${k}_100000.keys --algos ${ALGOS:-ours,dtree,dfa} 2>/dev/null | sed "s/^/$rep $k $path /"
    done
    if [ $rep = 1 ] || [ $k = cb_acl ]; then
      flock /tmp/ofbench-bench.lock timeout 300 $B -l 0 --no-huge -m 2048 --no-pci --no-shconf --file-prefix cbm-acl --log-level lib.eal:error -- --rules $D/${k}_100000.rules --keys $D/${k}_100000.keys --algos acl 2>/dev/null | grep '^{' | sed "s/^/$rep $k avx2 /"
    fi
  done
done
rm -rf /var/run/dpdk/cbm-acl  # rte_acl's EAL runtime folder (the file prefix above)
