#!/bin/sh
# one exclusive hold: kscan (AVX2, AVX-512), keymap, at 1M and 100k, plus the h sweep
B=/work/wt-cls1m/build/dut/classifier/cls-bench
D=/tmp/cls1m
uptime
for n in 1000000; do
  for p in avx2 avx512; do
    OFB_KMAP_DEBUG=1 OFB_CLS_SIMD=$p /usr/bin/time -f "maxrss_kb=%M" $B --rules $D/ntt_$n.rules --keys $D/ntt_$n.keys --algos kscan,auto --min-time 0.5 --updates 2000
  done
  OFB_CLS_SIMD=avx2 /usr/bin/time -f "maxrss_kb=%M" $B --rules $D/ntt_$n.rules --keys $D/ntt_$n.keys --algos keymap --min-time 0.5 --updates 2000
done
uptime
