#!/bin/sh
# medians of 3: kscan (AVX2, AVX-512 forced), keymap, at 1M; 100k: auto (kscan) vs ours per path;
# the budget sweep at 1M; rte_acl tried at 100k and 1M (bounded)
B=/work/wt-cls1m/build/dut/classifier/cls-bench
D=/tmp/cls1m
T="/usr/bin/time -f maxrss_kb=%M"
uptime
for r in 1 2 3; do
  for p in avx2 avx512; do
    OFB_CLS_SIMD=$p $T $B --rules $D/ntt_1000000.rules --keys $D/ntt_1000000.keys --algos kscan --min-time 0.5 --updates 2000
  done
  OFB_CLS_SIMD=avx2 $T $B --rules $D/ntt_1000000.rules --keys $D/ntt_1000000.keys --algos keymap --min-time 0.5 --updates 2000
  uptime
done
for r in 1 2 3; do
  for p in avx2 avx512; do
    OFB_CLS_SIMD=$p $T $B --rules $D/ntt_100000.rules --keys $D/ntt_100000.keys --algos auto,ours --min-time 0.5 --updates 2000
  done
done
uptime
for bpr in 400 700; do
  for p in avx2 avx512; do
    OFB_KMAP_DEBUG=1 OFB_KSCAN_BYTES_PER_RULE=$bpr OFB_CLS_SIMD=$p $T $B --rules $D/ntt_1000000.rules --keys $D/ntt_1000000.keys --algos kscan --min-time 0.5 --updates 0
  done
done
for p in avx2 avx512; do
  OFB_CLS_SIMD=$p $T $B --rules $D/ntt_1000000.rules --keys $D/ntt_1000000.hkeys --algos kscan,keymap --min-time 0.5 --updates 0
done
uptime
for n in 100000 1000000; do
  timeout 150 $T $B -l 0 --no-huge -m 2048 --no-pci --no-shconf --file-prefix ofb-cls1m-acl --log-level lib.eal:error -- --rules $D/ntt_$n.rules --keys $D/ntt_$n.keys --algos acl --min-time 0.5 --acl-max-mb 1024 --acl-simd avx2
  echo "acl $n exit $?"
done
rm -rf /var/run/dpdk/ofb-cls1m-acl
uptime
