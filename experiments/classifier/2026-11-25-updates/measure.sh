#!/bin/bash
# The default (auto -> dtree) on the ClassBench-like 100k sets: updates per writer-CPU second
# (200k: delete + insert of 100k rules, each published), before (BASE: main at 61e696f) and
# after this change (NEW), alternating which runs first, REPS repetitions, under the bench lock.
# Files: /tmp/clsb2/<set>_100000.{rules,keys} from traces/rulesets.py (seed 1, keys seed 2,
# 65536 keys), as in ../2026-11-24-specific.
BASE=${BASE:-/work/wt/base/build/dut/classifier/cls-bench}
NEW=${NEW:-/work/main/build/dut/classifier/cls-bench}
D=${D:-/tmp/clsb2}
for rep in $(seq 1 ${REPS:-3}); do
  for k in cb_acl cb_fw cb_ipc; do
    if (( rep % 2 )); then order="base new"; else order="new base"; fi
    for w in $order; do
      B=$BASE; [[ $w == new ]] && B=$NEW
      flock /tmp/ofbench-bench.lock $B --rules $D/${k}_100000.rules --keys $D/${k}_100000.keys \
        --algos auto --min-time 0.3 --updates 200000 2>/dev/null | sed "s/^/$rep $k $w /"
    done
  done
done
