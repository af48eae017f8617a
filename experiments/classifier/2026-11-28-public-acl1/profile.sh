#!/usr/bin/env bash
# Where the cycles go on the public acl1 set: perf record of the default (auto -> dtree) and of rte_acl,
# both on AVX-512 (OFB_CLS_SIMD / --acl-simd), single-key then batched lookups (cls-bench runs both).
# Run under flock /tmp/ofbench-bench.lock (exclusive). BIN: cls-bench; D: rules/keys; OUT: folder.
BIN=${1:?cls-bench}; D=${D:-/tmp/clsops}; OUT=${OUT:-/tmp/clsops/perf}
R=$D/acl1_20000.rules; K=$D/acl1_20000.keys
mkdir -p "$OUT"
OFB_CLS_SIMD=avx512 taskset -c 1 perf record -q -o "$OUT/auto.data" -- "$BIN" --rules $R --keys $K --algos auto \
  --min-time 2 --updates 0 > "$OUT/auto.json" 2>/dev/null
taskset -c 1 perf record -q -o "$OUT/acl.data" -- "$BIN" -l 1 --no-huge -m 2048 --no-pci --no-shconf \
  --file-prefix ofb-clsops-perf --log-level lib.eal:error -- --rules $R --keys $K --algos acl --min-time 2 \
  --acl-simd avx512 > "$OUT/acl.json" 2>/dev/null
for x in auto acl; do
  perf report -q -i "$OUT/$x.data" --no-children --sort symbol --percent-limit 2 --stdio 2>/dev/null | head -25 > "$OUT/$x.top"
done
