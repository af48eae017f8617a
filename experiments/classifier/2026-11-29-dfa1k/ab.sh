#!/usr/bin/env bash
# One round of the A/B (issue 42, dfa1k): per path and set, in alternating order per round: the new binary's
# default (auto), main's binary's default (auto), rte_acl of the same path. Output: "round path set tag json".
NEW=${NEW:?}; OLD=${OLD:?}; D=/tmp/dfa1k; r=${ROUND:?}
SETS=${SETS:-"acl1 cb_acl_1000 cb_fw_1000 cb_ipc_1000 cb_acl_10000 cb_fw_10000 cb_ipc_10000"}
run() { # tag bin
  OFB_CLS_SIMD=$p taskset -c 1 timeout 120 "$2" --rules $D/$s.rules --keys $D/$s.keys --algos auto --min-time ${MT:-0.3} \
    --updates 20000 2>/dev/null | grep '^{' | sed "s/^/$r $p $s $1 /"; }
acl() {
  taskset -c 1 timeout 60 "$NEW" -l 1 --no-huge -m 2048 --no-pci --no-shconf --file-prefix ofb-dfa1k-$$ \
    --log-level lib.eal:error -- --rules $D/$s.rules --keys $D/$s.keys --algos acl --min-time ${MT:-0.3} --acl-simd $p 2>/dev/null \
    | grep '^{' | sed "s/^/$r $p $s acl /"; }
for p in avx2 avx512; do for s in $SETS; do
  if (( r % 2 )); then run new "$NEW"; run old "$OLD"; acl
  else acl; run old "$OLD"; run new "$NEW"; fi
done; done
