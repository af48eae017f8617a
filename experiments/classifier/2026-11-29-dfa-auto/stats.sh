#!/usr/bin/env bash
# dfa.h statistics per set: algo dfa (unbounded) and auto (this build's policy), DFA built at once
BIN=$1
for s in ${SETS:-acl1 cb_acl_1000 cb_fw_1000 cb_ipc_1000 cb_acl_10000 cb_fw_10000 cb_ipc_10000 cb_acl_100000 cb_fw_100000 cb_ipc_100000}; do
  for a in ${ALGOS:-dfa auto}; do
  echo "== $s $a"; OFB_DFA_STATS=1 OFB_CLS_DFA_BULK_SYNC=1 timeout 120 $BIN --rules /tmp/dfaauto/$s.rules --keys /tmp/dfaauto/$s.keys --algos $a --min-time 0.01 2>&1 | grep -E "^dfa:|^\{" | cut -c1-260
  done
done
