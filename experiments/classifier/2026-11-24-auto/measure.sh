#!/bin/bash
# The library's default ("auto": by key shape) beside ours and dtree, and rte_acl, on the
# ClassBench-like 100k sets (priority by specificity) and on ntt (slide 19) 100k, 3 reps.
# Files: /tmp/clsb2/<kind>_100000.{rules,keys} made as in ../2026-11-24-specific (cb_*) and
# by gen.py here (ntt).
B=${B:-/work/main/build/dut/classifier/cls-bench}
D=${D:-/tmp/clsb2}
for rep in 1 2 3; do
  for k in cb_acl cb_fw cb_ipc ntt; do
    for path in avx2 scalar; do
      OFB_CLS_SIMD=$path flock /tmp/ofbench-bench.lock $B --rules $D/${k}_100000.rules --keys $D/${k}_100000.keys --algos ${ALGOS:-auto,ours,dtree} 2>/dev/null | sed "s/^/$rep $k $path /"
    done
    if [ $k = cb_acl ] || { [ $rep = 1 ] && [ $k != ntt ]; }; then
      flock /tmp/ofbench-bench.lock timeout 300 $B -l 0 --no-huge -m 2048 --no-pci --no-shconf --file-prefix cbauto-acl --log-level lib.eal:error -- --rules $D/${k}_100000.rules --keys $D/${k}_100000.keys --algos acl 2>/dev/null | grep '^{' | sed "s/^/$rep $k avx2 /"
    fi
  done
done
rm -rf /var/run/dpdk/cbauto-acl  # rte_acl's EAL runtime folder (the file prefix above)
