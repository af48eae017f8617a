#!/usr/bin/env bash
# ofbench setup: idempotent. Run as root on Debian 12 (`make setup`, also run by `make test`
# and `make suites`). A second run checks each step and changes nothing.
#   1. apt packages (DPDK 22.11, OVS, QEMU, Chromium, ...)   -- skipped when all are installed
#   2. .venv with exactly requirements.lock                    -- skipped when the lock is unchanged
#      and .venv-labgrid with exactly requirements-labgrid.lock (labgrid's coordinator/client)
#   3. meson/ninja build of every C part into build/           -- ninja is incremental
#      and the switch's sanitizer build (clang, ASan+UBSan, the agent fuzzer) into build-san/
#   4. 2 MB hugepages + a hugetlbfs mount at /dev/hugepages-ofbench (warn and fall back to --no-huge)
#   5. influxd 1.8.10 built with `go install` into tools/bin (git-ignored), once
#   6. a tiny QEMU guest (Debian kernel + busybox initramfs) in tools/guest, once
#   7. the TRex v3.08 server (scripts/build_trex.sh): built once per source+CPU into
#      /var/cache/ofbench/trex/, linked as tools/trex; a failed build warns and setup goes on
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
say() { printf '[setup] %s\n' "$*"; }

APT_PACKAGES=(
  dpdk libdpdk-dev dpdk-dev meson ninja-build pkg-config build-essential libpcap-dev libnuma-dev
  libbsd-dev openvswitch-switch openvswitch-switch-dpdk openvswitch-common qemu-system-x86
  qemu-utils busybox-static chromium iproute2 iputils-ping tcpdump iperf3 python3-venv python3-dev
  procps psmisc ethtool cpio kmod golang-go openssh-server openssh-client rsync
  clang-14 libclang-rt-14-dev llvm-14
)

# ---- 1. apt ----------------------------------------------------------------------------------
installed=$(bash scripts/host_setup.sh apt "${APT_PACKAGES[@]}" 2> >(sed 's/^\[host-setup\]/[setup]/' >&2))
if [[ -n $installed ]]; then
  # We start OVS by hand with our own dirs per run; the distro service must not hold the db.
  systemctl disable --now openvswitch-switch >/dev/null 2>&1 || true
  # openssh-server is here for the emulated lab, whose hosts run sshd of their own in their
  # namespaces; a freshly installed distro sshd must not listen on this box's addresses.
  if grep -qx openssh-server <<<"$installed"; then
    systemctl disable --now ssh >/dev/null 2>&1 || true
  fi
else
  say "apt: all ${#APT_PACKAGES[@]} packages present"
fi

# ---- 2. venv ---------------------------------------------------------------------------------
PY=/usr/bin/python3
stamp=.venv/.lock-sha256
want=$(sha256sum requirements.lock | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || ! -f $stamp || "$(cat $stamp)" != "$want" ]]; then
  say "venv: creating .venv from requirements.lock"
  rm -rf .venv
  $PY -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -r requirements.lock
  echo "$want" > $stamp
else
  say "venv: up to date"
fi

# labgrid's coordinator and client (lab leases: drivers/lab/lease.py) in a venv of their own,
# exactly requirements-labgrid.lock (why not in .venv: the lock file's header)
stamp=.venv-labgrid/.lock-sha256
want=$(sha256sum requirements-labgrid.lock | cut -d' ' -f1)
if [[ ! -x .venv-labgrid/bin/python || ! -f $stamp || "$(cat $stamp)" != "$want" ]]; then
  say "venv: creating .venv-labgrid from requirements-labgrid.lock"
  rm -rf .venv-labgrid
  $PY -m venv .venv-labgrid
  .venv-labgrid/bin/pip install -q --disable-pip-version-check --no-deps -r requirements-labgrid.lock
  echo "$want" > $stamp
else
  say "venv: .venv-labgrid up to date"
fi

# ---- 3. C builds -----------------------------------------------------------------------------
if [[ ! -f build/build.ninja ]]; then
  say "build: meson setup build"
  meson setup build --buildtype=release >/dev/null
fi
say "build: ninja -C build"
ninja -C build >/dev/null
# the switch under ASan + UBSan and its libFuzzer harness (scripts/build_san.sh, incremental)
bash scripts/build_san.sh 2> >(sed 's/^\[build-san\]/[setup] build-san:/' >&2)

# ---- 4. hugepages (the part of a lab host's setup this box needs too) ---------------------------
bash scripts/host_setup.sh hugepages | sed 's/^\[host-setup\]/[setup]/'

# ---- 5. influxd 1.8.10 -------------------------------------------------------------------------
mkdir -p tools/bin
if [[ ! -x tools/bin/influxd ]]; then
  say "influxd: go install github.com/influxdata/influxdb/cmd/influxd@v1.8.10 (first time ~3 min)"
  GO=$(command -v go || echo /usr/lib/go/bin/go)
  GOBIN=$ROOT/tools/bin GOFLAGS=-mod=mod GOPATH=${GOPATH:-/root/go} \
    $GO install -ldflags "-s -w" github.com/influxdata/influxdb/cmd/influxd@v1.8.10
else
  say "influxd: present"
fi

# ---- 6. guest image (dut/vmwire) ---------------------------------------------------------------
if [[ -x drivers/vmwire/build_guest.sh ]]; then
  # The guest builder asks apt for the kernel package: it needs package lists.
  if [[ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ]]; then
    apt-get update -qq
  fi
  drivers/vmwire/build_guest.sh "$ROOT/tools/guest"
fi

# ---- 7. TRex server (drivers/trex) --------------------------------------------------------------
bash scripts/build_trex.sh || say "WARNING: scripts/build_trex.sh failed ($?); TRex tests will skip"
say "done"
