#!/usr/bin/env bash
# The default (auto -> dtree) on cb_acl 100k: main's binary (NEW) vs 6fcd266's (OLD), ROUNDS interleaved
# rounds, per SIMD path, alternating order, cls-bench pinned to core 1, --min-time 0.3, --updates 20000.
# The set: python mk.py 100000 cb_acl 1 65536 (/tmp/kscan2). Output: "round path set tag json".
NEW=${NEW:?}; OLD=${OLD:?}; D=${D:-/tmp/kscan2}; s=cb_acl_100000
for r in $(seq 1 ${ROUNDS:-3}); do
  uptime
  for p in avx2 avx512; do
    for t in $( ((r % 2)) && echo "new old" || echo "old new"); do
      b=$NEW; [[ $t == old ]] && b=$OLD
      OFB_CLS_SIMD=$p taskset -c 1 timeout 120 "$b" --rules $D/$s.rules --keys $D/$s.keys --algos auto --min-time 0.3 \
        --updates 20000 2>/dev/null | grep '^{' | sed "s/^/$r $p 100000 $t /"
    done
  done
done
uptime
