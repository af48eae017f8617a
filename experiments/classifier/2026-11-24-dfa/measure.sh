#!/bin/bash
# dfa vs dtree vs rte_acl on the ClassBench-like 100k sets, 3 repetitions, one lock for the whole set:
#   flock /tmp/ofbench-bench.lock experiments/classifier/2026-11-24-dfa/measure.sh BENCH_BINARY > measure.out 2> measure.err
# (stderr: OFB_DFA_STATS=1 lines, the DFA alone: groups, nodes, bytes, build seconds)
# Rule/key files in /tmp/clsb (65536 keys, 90 % hits), made by
#   .venv/bin/python -c "from traces import rulesets as r
#   for k in ('cb_acl','cb_fw','cb_ipc'):
#       rs=r.make(k,100000,1); rs.write_rules(f'/tmp/clsb/{k}_100000.rules'); r.write_keys(f'/tmp/clsb/{k}_100000.keys', rs.keys(65536, 2))"
B=$(realpath ${1:-build/dut/classifier/cls-bench})
cd /tmp/clsb
EAL="--no-huge -m 2048 --no-pci --no-shconf --file-prefix clsb-dfa-$$ --log-level lib.eal:error"
trap 'rm -rf /var/run/dpdk/clsb-dfa-$$' EXIT   # the EAL runtime dir, even after a failure
export OFB_DFA_STATS=1
date -u +"start %FT%TZ"; uptime; grep -m1 "model name" /proc/cpuinfo
for rep in 1 2 3; do
  for s in cb_acl cb_fw cb_ipc; do
    f=${s}_100000
    echo "## rep=$rep set=$f path=avx2"; echo "## rep=$rep set=$f path=avx2" >&2
    OFB_CLS_SIMD=avx2 $B $EAL -- --rules $f.rules --keys $f.keys --algos acl,dtree,dfa --min-time 0.5 --updates 200000 2> >(grep -v "layer" >&2)
    echo "## rep=$rep set=$f path=scalar"; echo "## rep=$rep set=$f path=scalar" >&2
    OFB_CLS_SIMD=scalar $B --rules $f.rules --keys $f.keys --algos dtree,dfa --min-time 0.5 --updates 200000 2> >(grep -v "layer" >&2)
  done
done
date -u +"end %FT%TZ"; uptime
