#!/usr/bin/env bash
# kscan at 1M and 100k (ntt, slide 19): this branch's cls-bench (NEW) vs main's (OLD), per SIMD path,
# ROUNDS interleaved rounds (order alternating), cls-bench pinned to core 1.
# Output: "round path n tag json"; the sets: mk.py (/tmp/kscan2).
NEW=${NEW:?}; OLD=${OLD:?}; D=${D:-/tmp/kscan2}
for r in $(seq 1 ${ROUNDS:-3}); do
  uptime
  for n in ${SIZES:-1000000 100000}; do for p in avx2 avx512; do
    for t in $( ((r % 2)) && echo "new old" || echo "old new"); do
      b=$NEW; [[ $t == old ]] && b=$OLD
      OFB_CLS_SIMD=$p taskset -c 1 "$b" --rules $D/ntt_$n.rules --keys $D/ntt_$n.keys --algos kscan --min-time 0.5 \
        --updates 0 2>/dev/null | grep '^{' | sed "s/^/$r $p $n $t /"
    done
  done; done
done
uptime
