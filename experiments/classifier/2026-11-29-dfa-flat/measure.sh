#!/usr/bin/env bash
# Issue 42: the default (auto: dtree with the one-DFA front and dfa_flat.h's lockstep walk) vs the same
# binary with the new parts off ("auto_old": OFB_CLS_AUTO_DFA=0 OFB_DFA_FLAT=0 = main's default), dtree,
# dfa, and rte_acl, AVX2 then AVX-512 forced in turn (OFB_CLS_SIMD, --acl-simd), 3 rounds, on the public
# acl1 set and the generated cb_* sets. One JSON line per result prefixed with "round path set".
# Run under flock /tmp/ofbench-bench.lock (exclusive). BIN: cls-bench; D: rules/keys (see README.md).
BIN=${1:?cls-bench}; D=${D:-/tmp/acl42}
SETS=${SETS:-"acl1 cb_acl_100000 cb_fw_10000 cb_ipc_10000"}
for r in 1 2 3; do
  for p in avx2 avx512; do
    for s in $SETS; do
      R=$D/$s.rules; K=$D/$s.keys; U=0; [[ $s == acl1 ]] && U=20000
      OFB_CLS_SIMD=$p taskset -c 1 timeout 300 "$BIN" --rules $R --keys $K --algos auto,dtree,dfa \
        --min-time 0.3 --updates $U 2>/dev/null | grep '^{' | sed "s/^/$r $p $s /"
      OFB_CLS_AUTO_DFA=0 OFB_DFA_FLAT=0 OFB_CLS_SIMD=$p taskset -c 1 timeout 300 "$BIN" --rules $R --keys $K \
        --algos auto,dfa --min-time 0.3 --updates $U 2>/dev/null | grep '^{' | sed 's/"algo":"\([a-z]*\)"/"algo":"\1_old"/' \
        | sed "s/^/$r $p $s /"
      taskset -c 1 timeout 120 "$BIN" -l 1 --no-huge -m 2048 --no-pci --no-shconf --file-prefix ofb-acl42-$$ \
        --log-level lib.eal:error -- --rules $R --keys $K --algos acl --min-time 0.3 --acl-simd $p 2>/dev/null \
        | grep '^{' | sed "s/^/$r $p $s /"
    done
  done
done
