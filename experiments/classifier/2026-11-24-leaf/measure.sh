#!/bin/bash
# dtree with compact leaves (this branch) vs dtree at the base commit vs rte_acl, ClassBench-like
# 100k, 3 repetitions, the two builds alternating within each repetition, each run under the lock:
#   experiments/classifier/2026-11-24-leaf/measure.sh NEW_BUILD_DIR BASE_BUILD_DIR > measure.out
#   python3 experiments/classifier/2026-11-24-leaf/summ.py measure.out
# Base build: git archive 588bd23 | tar -x -C /tmp/leaf-base-src; cd /tmp/leaf-base-src;
#   meson setup /tmp/build-leaf-base --buildtype=release; ninja -C /tmp/build-leaf-base dut/classifier/cls-bench
# Rule/key files in /tmp/clsb (as the dtree section of README.md says, /tmp/clscb there).
NEW=${1:-build}; BASE=${2:-/tmp/build-leaf-base}
NEW=$(cd "$NEW" && pwd); BASE=$(cd "$BASE" && pwd)
cd /tmp/clsb
EAL="--no-huge -m 2048 --no-pci --no-shconf --file-prefix clsleaf-$$ --log-level lib.eal:error"
L="flock /tmp/ofbench-bench.lock"
date -u +"start %FT%TZ"; uptime; grep -m1 "model name" /proc/cpuinfo
echo "new $(git -C /work/wt/cls-leaf rev-parse --short HEAD) base 588bd23"
for rep in 1 2 3; do
  for s in cb_acl cb_fw cb_ipc; do
    f=${s}_100000
    echo "## rep=$rep set=$f path=avx2 build=base"; OFB_CLS_SIMD=avx2 $L $BASE/dut/classifier/cls-bench --rules $f.rules --keys $f.keys --algos dtree --min-time 0.5 --updates 200000
    echo "## rep=$rep set=$f path=avx2 build=new"; OFB_CLS_SIMD=avx2 $L $NEW/dut/classifier/cls-bench $EAL -- --rules $f.rules --keys $f.keys --algos acl,dtree --min-time 0.5 --updates 200000
    echo "## rep=$rep set=$f path=scalar build=base"; OFB_CLS_SIMD=scalar $L $BASE/dut/classifier/cls-bench --rules $f.rules --keys $f.keys --algos dtree --min-time 0.5 --updates 0
    echo "## rep=$rep set=$f path=scalar build=new"; OFB_CLS_SIMD=scalar $L $NEW/dut/classifier/cls-bench --rules $f.rules --keys $f.keys --algos dtree --min-time 0.5 --updates 0
  done
done
date -u +"end %FT%TZ"; uptime
