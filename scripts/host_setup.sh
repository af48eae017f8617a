#!/usr/bin/env bash
# What a lab host needs for its role, run there by the harness over SSH while it deploys the
# tree (drivers/lab/remote.py), and by scripts/setup.sh for this box's hugepages. Idempotent:
# a second run checks and changes nothing (about a second).
#   scripts/host_setup.sh            apt packages to build and run the C parts + hugepages
#   scripts/host_setup.sh hugepages  only the hugepages
#   scripts/host_setup.sh apt PKG...  install those of PKG... that are missing, print them
#                                     (scripts/setup.sh's own package list goes through it)
# Packages: DPDK 22.11 (dev), meson, ninja, a C toolchain, libpcap/libnuma/libbsd, rsync,
# ethtool and Open vSwitch (the conformance tester).
# Hugepages: OFBENCH_HUGEPAGES x 2 MB (default 2048) and a hugetlbfs mount at
# /dev/hugepages-ofbench; where that fails a warning, and DPDK processes run --no-huge.
set -euo pipefail
say() { printf '[host-setup] %s\n' "$*"; }
MODE=${1:-all}

# Installs those of the given packages that are missing; prints the ones it installed.
apt_install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  say "apt: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  printf '%s\n' "${missing[@]}"
}

if [[ $MODE == apt ]]; then
  shift
  apt_install_missing "$@"
  exit 0
fi
if [[ $MODE == all ]]; then
  apt_install_missing dpdk libdpdk-dev meson ninja-build pkg-config build-essential libpcap-dev \
    libnuma-dev libbsd-dev python3 rsync iproute2 procps ethtool openvswitch-switch >/dev/null
fi

HUGE_DIR=/dev/hugepages-ofbench
WANT_PAGES=${OFBENCH_HUGEPAGES:-2048}   # 4 GiB: switch, OVS-DPDK, generators, guests
have=$(cat /proc/sys/vm/nr_hugepages)
if (( have < WANT_PAGES )); then
  echo "$WANT_PAGES" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
  have=$(cat /proc/sys/vm/nr_hugepages)
fi
mkdir -p $HUGE_DIR
if ! mountpoint -q $HUGE_DIR; then
  mount -t hugetlbfs -o pagesize=2M nodev $HUGE_DIR 2>/dev/null || true
fi
if mountpoint -q $HUGE_DIR && (( have > 0 )); then
  say "hugepages: $have x 2 MB, mounted at $HUGE_DIR"
else
  say "WARNING: no usable hugepages ($have reserved, mount $(mountpoint -q $HUGE_DIR && echo ok || echo missing)); DPDK processes fall back to --no-huge (slower)"
fi
