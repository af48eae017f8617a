#!/bin/bash
B=/work/wt/cls/build/dut/classifier/cls-bench
cd /tmp/clsb
for rep in 1 2 3; do for t in 0 1; do
echo "## rep=$rep set=ntt_1000000 trace=uniform path=thp$t"; GLIBC_TUNABLES=glibc.malloc.hugetlb=$t OFB_CLS_SIMD=avx2 $B --rules ntt_1000000.rules --keys ntt_1000000.keys --algos ours --min-time 0.5 --updates 1000
done; done
