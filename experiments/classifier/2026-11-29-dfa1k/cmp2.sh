for s in ${SETS:-cb_acl_1000 cb_ipc_1000 acl1}; do echo "== $s"; for b in $BINS; do taskset -c 1 ./$b $s.rules $s.keys 100 | grep TSC | grep -E "${PAT:-avx}" | sed "s/^/$b /"; done; done
