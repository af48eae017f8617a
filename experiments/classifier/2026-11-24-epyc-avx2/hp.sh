#!/bin/bash
B=/work/wt/cls/build/dut/classifier/cls-bench
cd /tmp/clsb
for rep in 1 2 3; do for f in ntt_1000000 ntt_100000 cb_acl_100000; do for h in 0 1; do
echo "## rep=$rep set=$f trace=uniform path=avx2_hp$h"; OFB_CLS_HUGEPAGES=$h OFB_CLS_SIMD=avx2 $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 200000
done; done; done
