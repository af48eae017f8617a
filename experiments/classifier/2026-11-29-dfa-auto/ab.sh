#!/usr/bin/env bash
# One round of the A/B: per path and set, in alternating order: new default (auto), old main's default
# (main's binary: auto), new dfa, rte_acl. Output: "round path set tag json".
NEW=${NEW:?}; OLD=${OLD:?}; D=/tmp/dfaauto; r=${ROUND:?}
SETS=${SETS:-"acl1 cb_acl_1000 cb_fw_1000 cb_ipc_1000 cb_acl_10000 cb_fw_10000 cb_ipc_10000 cb_acl_100000 cb_fw_100000 cb_ipc_100000 ntt_100000"}
run() { # tag bin algos
  OFB_CLS_SIMD=$p taskset -c 1 timeout 120 "$2" --rules $D/$s.rules --keys $D/$s.keys --algos $3 --min-time ${MT:-0.3} \
    --updates 20000 2>/dev/null | grep '^{' | sed "s/^/$r $p $s $1 /"; }
acl() {
  [[ $s == cb_fw_100000 || $s == cb_ipc_100000 ]] && return   # rte_acl does not build them in 2 GB
  taskset -c 1 timeout 60 "$NEW" -l 1 --no-huge -m 2048 --no-pci --no-shconf --file-prefix ofb-dfaauto-$$ \
    --log-level lib.eal:error -- --rules $D/$s.rules --keys $D/$s.keys --algos acl --min-time ${MT:-0.3} --acl-simd $p 2>/dev/null \
    | grep '^{' | sed "s/^/$r $p $s acl /"; }
for p in avx2 avx512; do for s in $SETS; do
  A=auto,dfa; [[ $s == ntt* ]] && A=auto
  if (( r % 2 )); then run new "$NEW" $A; run old "$OLD" auto; acl
  else acl; run old "$OLD" auto; run new "$NEW" $A; fi
done; done
