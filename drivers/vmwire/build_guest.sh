#!/usr/bin/env bash
# Build the tiny QEMU guest of dut/vmwire from Debian packages only (no downloads but apt's).
#
#   drivers/vmwire/build_guest.sh <out-dir>      (scripts/setup.sh passes <repo>/tools/guest)
#
# Output, in <out-dir>:
#   vmlinuz         the Debian kernel (linux-image-6.1.*-amd64, unpacked with dpkg-deb, not installed)
#   initramfs.gz    busybox-static + iperf3 (binary and its shared libraries, found with ldd)
#                   + the NIC modules (virtio_net, e1000, 8021q and their dependencies)
#                   + /init (drivers/vmwire/guest_init.sh), which configures the NIC from the kernel
#                   command line and runs the role asked for (see guest_init.sh)
#   stamp           what was built from; a second run with the same inputs exits at once
#
# Idempotent: the stamp holds the kernel package version and the sha256 of this script and of
# guest_init.sh; when they match, nothing is done (< 1 s).
set -euo pipefail
OUT=${1:?usage: build_guest.sh <out-dir>}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
say() { printf '[build_guest] %s\n' "$*"; }

KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6\.1\.[^ ]*-amd64$|Depends: linux-image-[0-9][^ ]*-amd64$/{print $2; exit}')
[[ -n $KPKG ]] || { echo "build_guest: cannot resolve linux-image-amd64 to a kernel package (apt-get update?)" >&2; exit 1; }
KVER_PKG=$(apt-cache policy "$KPKG" | awk '/Candidate:/{print $2}')
want="$KPKG $KVER_PKG $(cat "$0" "$HERE/guest_init.sh" | sha256sum | cut -d' ' -f1)"
if [[ -f $OUT/stamp && "$(cat "$OUT/stamp")" == "$want" && -f $OUT/vmlinuz && -f $OUT/initramfs.gz ]]; then
  say "guest up to date in $OUT"
  exit 0
fi

for tool in busybox iperf3 cpio gzip dpkg-deb modinfo; do
  command -v $tool >/dev/null || { echo "build_guest: missing $tool (apt packages busybox-static iperf3 cpio kmod)" >&2; exit 1; }
done
BUSYBOX=$(command -v busybox)
{ ldd "$BUSYBOX" 2>&1 || true; } | grep -q 'not a dynamic' || { echo "build_guest: $BUSYBOX is not static (install busybox-static)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/ofb-build-guest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
say "kernel: apt-get download $KPKG ($KVER_PKG)"
(cd "$WORK" && apt-get download "$KPKG" >/dev/null 2>&1) || { echo "build_guest: apt-get download $KPKG failed" >&2; exit 1; }
mkdir -p "$WORK/k"
# Only the kernel image and the modules we load: faster than unpacking all 400 MB.
dpkg-deb --fsys-tarfile "$WORK"/"$KPKG"_*.deb | tar -x -C "$WORK/k" --wildcards \
  './boot/vmlinuz-*' './lib/modules/*/kernel/drivers/net/*' './lib/modules/*/kernel/drivers/virtio/*' \
  './lib/modules/*/kernel/net/8021q/*' './lib/modules/*/kernel/net/802/*' './lib/modules/*/kernel/net/llc/*' \
  './lib/modules/*/kernel/net/core/*' 2>/dev/null || true
KIMG=$(ls "$WORK"/k/boot/vmlinuz-* | head -1)
MODROOT=$(ls -d "$WORK"/k/lib/modules/* | head -1)
[[ -f $KIMG && -d $MODROOT ]] || { echo "build_guest: $KPKG has no vmlinuz or modules" >&2; exit 1; }

R=$WORK/root
mkdir -p "$R"/{bin,sbin,dev,proc,sys,tmp,etc,lib/modules,lib64,usr/bin,usr/lib}
cp "$BUSYBOX" "$R/bin/busybox"
for a in $("$BUSYBOX" --list); do
  [[ -e $R/bin/$a ]] || ln -s busybox "$R/bin/$a"
done
# iperf3 and its shared libraries (same paths inside, so the dynamic loader finds them).
IPERF=$(command -v iperf3)
cp "$IPERF" "$R/usr/bin/iperf3"
for lib in $(ldd "$IPERF" | awk '/=> \//{print $3} /^\t\/lib/{print $1}'); do
  mkdir -p "$R$(dirname "$lib")"
  cp -L "$lib" "$R$lib"
done

# Modules in load order (dependencies first), resolved with modinfo -F depends.
declare -A seen=()
ORDER=()
find_ko() { find "$MODROOT/kernel" -name "$1.ko" | head -1; }
add_mod() {
  local name=$1 ko deps d
  [[ -n ${seen[$name]:-} ]] && return 0
  seen[$name]=1
  ko=$(find_ko "$name")
  [[ -n $ko ]] || { echo "build_guest: module $name not in $KPKG" >&2; exit 1; }
  deps=$(modinfo -F depends "$ko" | tr ',' ' ')
  for d in $deps; do add_mod "$d"; done
  cp "$ko" "$R/lib/modules/"
  ORDER+=("$name")
}
for m in virtio_pci virtio_net e1000 8021q; do add_mod $m; done
printf '%s\n' "${ORDER[@]}" > "$R/lib/modules/load-order"

cp "$HERE/guest_init.sh" "$R/init"
chmod 755 "$R/init"

mkdir -p "$OUT"
cp "$KIMG" "$OUT/vmlinuz.new"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 > "$OUT/initramfs.gz.new")
mv "$OUT/vmlinuz.new" "$OUT/vmlinuz"
mv "$OUT/initramfs.gz.new" "$OUT/initramfs.gz"
echo "$want" > "$OUT/stamp"
say "guest built in $OUT: $(du -h "$OUT/vmlinuz" | cut -f1) kernel, $(du -h "$OUT/initramfs.gz" | cut -f1) initramfs, modules: ${ORDER[*]}"
