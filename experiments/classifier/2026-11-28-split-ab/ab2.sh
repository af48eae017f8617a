#!/usr/bin/env bash
D=/tmp/cls/ab
for r in 1 2 3; do
  for s in ntt_100000 cb_acl_10000; do
    for v in "$@"; do
      taskset -c 1 /tmp/cls/$v/cls-bench --rules $D/$s.rules --keys $D/$s.keys --algos ours --min-time 0.3 --updates 0 2>/dev/null \
        | grep '^{' | sed "s/^/$r $v $s /"
    done
  done
done
