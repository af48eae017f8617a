#!/bin/bash
# dtree vs OURS vs rte_acl on the ClassBench-like 100k sets, 3 repetitions, one lock for the whole set:
#   flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-dtree/measure.sh BENCH_BINARY > measure.out
# Rule/key files (written once, same as the suite's): in /tmp/clscb, made by
#   .venv/bin/python -c "from traces import rulesets as r
#   for k in ('cb_acl','cb_fw','cb_ipc'):
#       rs=r.make(k,100000,1); rs.write_rules(f'/tmp/clscb/{k}_100000.rules'); r.write_keys(f'/tmp/clscb/{k}_100000.keys', rs.keys(100000, 2))"
B=${1:-build/dut/classifier/cls-bench}
cd /tmp/clscb
EAL="--no-huge -m 2048 --no-pci --no-shconf --file-prefix clscb-dtree-$$ --log-level lib.eal:error"
date -u +"start %FT%TZ"; uptime; grep -m1 "model name" /proc/cpuinfo
for rep in 1 2 3; do
  for s in cb_acl cb_fw cb_ipc; do
    f=${s}_100000
    echo "## rep=$rep set=$f path=avx2"; OFB_CLS_SIMD=avx2 $B $EAL -- --rules $f.rules --keys $f.keys --algos acl,ours,dtree --min-time 0.5 --updates 200000
    echo "## rep=$rep set=$f path=scalar"; OFB_CLS_SIMD=scalar $B --rules $f.rules --keys $f.keys --algos ours,dtree --min-time 0.5 --updates 200000
  done
done
date -u +"end %FT%TZ"; uptime
