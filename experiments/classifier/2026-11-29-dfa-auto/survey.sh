#!/usr/bin/env bash
# one round: sets x paths: auto,dtree,dfa (+env) and rte_acl
BIN=${1:?}; D=/tmp/dfaauto; TAG=${TAG:-x}; ALGOS=${ALGOS:-auto,dtree,dfa}; ACL=${ACL:-1}
SETS=${SETS:-"acl1 cb_acl_1000 cb_fw_1000 cb_ipc_1000 cb_acl_10000 cb_fw_10000 cb_ipc_10000 cb_acl_100000 cb_fw_100000 cb_ipc_100000"}
PATHS=${PATHS:-"avx2 avx512"}; R0=${R0:-1}; RN=${RN:-1}
for r in $(seq $R0 $RN); do for p in $PATHS; do for s in $SETS; do
  U=0
  OFB_CLS_SIMD=$p taskset -c 1 timeout 300 "$BIN" --rules $D/$s.rules --keys $D/$s.keys --algos $ALGOS \
     --min-time ${MT:-0.3} --updates $U 2>/dev/null | grep '^{' | sed "s/^/$r $p $s $TAG /"
  if [[ $ACL == 1 ]]; then
  taskset -c 1 timeout 60 "$BIN" -l 1 --no-huge -m 2048 --no-pci --no-shconf --file-prefix ofb-dfaauto-$$ \
     --log-level lib.eal:error -- --rules $D/$s.rules --keys $D/$s.keys --algos acl --min-time ${MT:-0.3} --acl-simd $p 2>/dev/null \
     | grep '^{' | sed "s/^/$r $p $s $TAG /"
  fi
done; done; done
