#!/bin/bash
# keymap (the key-space map in front of OURS) vs OURS vs TSS, and auto (the default), on slide
# 19's condition (ntt, seed 1, 100 masks, uniform keys from seed 2 and the hit-heavy trace),
# 3 repetitions with the algorithm order reversed every other one; then the scalar path.
# Files: .venv/bin/python -c "from traces import rulesets ..." as in README.md ("keymap").
# Run: flock /tmp/ofbench-bench.lock bash measure.sh > measure.out 2> measure.err
B=${B:-build/dut/classifier/cls-bench}
D=${D:-/tmp/clsb-km}
for rep in 1 2 3; do
  if [ $((rep % 2)) = 1 ]; then order=tss,ours,keymap,auto; else order=auto,keymap,ours,tss; fi
  for n in 1000000 100000; do
    for t in keys hkeys; do
      up=0; [ $t = keys ] && up=200000
      echo "# rep $rep n $n trace $t order $order $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      $B --rules $D/ntt_$n.rules --keys $D/ntt_$n.$t --algos $order --min-time 0.5 --updates $up
    done
  done
  echo "# rep $rep scalar path, n 1000000 keys $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
  OFB_CLS_SIMD=scalar $B --rules $D/ntt_1000000.rules --keys $D/ntt_1000000.keys --algos ours,keymap --min-time 0.5 --updates 0
done
