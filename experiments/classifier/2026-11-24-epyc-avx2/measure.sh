#!/bin/bash
# run under: flock /tmp/ofbench-bench.lock /tmp/clsb/measure.sh   (one lock for the whole set)
B=/work/wt/cls/build/dut/classifier/cls-bench
cd /tmp/clsb
EAL="--no-huge -m 2048 --no-pci --no-shconf --file-prefix cls-acl-$$ --log-level lib.eal:error"
date -u +"start %FT%TZ"; uptime
for rep in 1 2 3; do
  for f in ntt_100000 ntt_1000000; do
    for p in scalar avx2; do
      echo "## rep=$rep set=$f trace=uniform path=$p"; OFB_CLS_SIMD=$p $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 200000
      echo "## rep=$rep set=$f trace=hit path=$p"; OFB_CLS_SIMD=$p $B --rules $f.rules --keys $f.hkeys --algos ours --min-time 0.5 --updates 0
    done
    echo "## rep=$rep set=$f trace=uniform path=tss"; $B --rules $f.rules --keys $f.keys --algos tss --min-time 0.5 --updates 0
  done
  for f in cb_acl_100000 cb_fw_100000 cb_ipc_100000; do
    for p in scalar avx2; do
      echo "## rep=$rep set=$f trace=cb path=$p"; OFB_CLS_SIMD=$p $B --rules $f.rules --keys $f.keys --algos ours --min-time 0.5 --updates 200000
    done
    echo "## rep=$rep set=$f trace=cb path=acl"; $B $EAL -- --rules $f.rules --keys $f.keys --algos acl --min-time 0.5
  done
done
echo "## tries"
for f in ntt_1000 ntt_10000 ntt_100000; do
  al=tss,htrie,sptrie,ours; [ $f != ntt_100000 ] && al=linear,$al
  echo "## set=$f trace=uniform tries"; $B --rules $f.rules --keys $f.keys --algos $al --budget-mb 512 --min-time 0.3 --updates 200
done
for mb in 0 1 4 16 64 256; do
  echo "## set=ntt_100000 hybrid budget_mb=$mb"; $B --rules ntt_100000.rules --keys ntt_100000.keys --algos hybrid --budget-mb $mb --min-time 0.3 --updates 2
done
date -u +"end %FT%TZ"; uptime
