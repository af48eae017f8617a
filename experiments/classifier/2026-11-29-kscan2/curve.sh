#!/usr/bin/env bash
# The curve 2^14..2^20 rules (ntt, slide 19; mk.py): per SIMD path kscan of this branch (new), kscan of
# main (old), OURS; keymap once (its lookup has no SIMD path). Output: "round path n tag json".
NEW=${NEW:?}; OLD=${OLD:?}; D=${D:-/tmp/kscan2}; r=${ROUND:-1}
uptime
for e in ${EXPS:-14 15 16 17 18 19 20}; do n=$((1 << e))
  for p in avx2 avx512; do
    for t in new old ours; do
      b=$NEW; a=kscan; [[ $t == old ]] && b=$OLD; [[ $t == ours ]] && a=ours
      OFB_CLS_SIMD=$p taskset -c 1 "$b" --rules $D/ntt_$n.rules --keys $D/ntt_$n.keys --algos $a --min-time 0.3 \
        --updates 0 2>/dev/null | grep '^{' | sed "s/^/$r $p $n $t /"
    done
  done
  OFB_CLS_SIMD=avx2 taskset -c 1 "$NEW" --rules $D/ntt_$n.rules --keys $D/ntt_$n.keys --algos keymap --min-time 0.3 \
    --updates 0 2>/dev/null | grep '^{' | sed "s/^/$r any $n keymap /"
  uptime
done
