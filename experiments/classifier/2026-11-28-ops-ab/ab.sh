#!/usr/bin/env bash
# A/B of cls-bench lookups: OLD vs NEW binary, alternating (old first in odd rounds, new first
# in even ones), 3 rounds; one JSON line per result, prefixed with "round bin set".
# Run under flock /tmp/ofbench-bench.lock (exclusive).  D: the rule/key files (README).
OLD=$1; NEW=$2; D=${D:-/tmp/clsops/ab}
sets=("ntt_100000:ours,tss,auto,keymap" "cb_acl_10000:ours,tss,linear,dtree,dfa,auto,htrie,sptrie,hybrid,louds" "of_10000:ours,tss,auto")
for r in 1 2 3; do
  if (( r % 2 )); then order="old new"; else order="new old"; fi
  for s in "${sets[@]}"; do
    set_=${s%%:*}; algos=${s#*:}
    for b in $order; do
      bin=$OLD; [[ $b == new ]] && bin=$NEW
      taskset -c 1 "$bin" --rules $D/$set_.rules --keys $D/$set_.keys --algos "$algos" --min-time 0.3 --updates 0 2>/dev/null \
        | grep '^{' | sed "s/^/$r $b $set_ /"
    done
  done
done
