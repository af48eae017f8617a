#!/bin/bash
# mk2.sh DIR PICFLAG: the library's sources with meson's library flags, the bench with its own
cd $1/dut/classifier
F="-O3 -DNDEBUG -D_FILE_OFFSET_BITS=64 -std=gnu11 -pthread -msse4.2 -fno-strict-aliasing -I."
rm -f *.o
for s in *.c; do cc $F $2 -c $s -o ${s%.c}.o || exit 1; done
ar rcs libofbcls.a *.o
cc $F -march=corei7 -I/usr/include/dpdk -I/usr/include/dpdk/../x86_64-linux-gnu/dpdk -include rte_config.h -c bench/cls_bench.c -o cb.o
cc -o $1/cls-bench cb.o libofbcls.a $(pkg-config --libs libdpdk) -lm -pthread
