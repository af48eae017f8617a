#!/usr/bin/env bash
# Build the TRex v3.08 server (stateless, interactive) once per machine, cache its minimal runtime
# outside the clone, and link it into the clone as tools/trex.  Called by scripts/setup.sh.
#
#   scripts/build_trex.sh             build if needed, link tools/trex; exit 0 even if the build
#                                     fails (the reason is printed and recorded; TRex tests skip)
#   scripts/build_trex.sh --locate    print the cached runtime dir for this source+CPU, or exit 1
#   scripts/build_trex.sh --source    print the source it would build from: "<kind> <path>"
#                                     (kind tarball, dir or git), e.g. for a lab host to copy
#
# Source, first found: $OFBENCH_TREX_SRC (a directory or a .tar.xz/.tar.gz), else
# ../shared/vendor/trex-core-v3.08.tar.xz beside the repo, else a shallow clone of the official
# repository at tag v3.08, checked against the pinned commit.
#
# Cache: /var/cache/ofbench/trex/ ($OFBENCH_TREX_CACHE)
#   <key>/                 the runtime: _t-rex-64 (stripped), so/x86_64/{libbpf-64.so,libzmq.so.5},
#                          ofbench-trex.json (the stamp, written last: no stamp = no runtime)
#   <key>.build.log        the build's log;  <key>.failed  why the last build failed
#   build-<src16>/         the build tree while building (~475 MB), removed after success
# key = v3.08-src<16 hex of the source hash>-cpu<12 hex>-flags<8 hex>: the build uses
# -march=native, so the CPU signature is what gcc expands -march=native into on this host (a
# different CPU rebuilds); the flags hash covers the configure/build flags and the gcc version.
# A failed build is not retried by later setups unless OFBENCH_TREX_REBUILD=1 (a failed git
# clone is: no network is not a build failure).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
say() { printf '[setup] trex: %s\n' "$*" >&2; }

TREX_VERSION=v3.08
TREX_COMMIT=27e0153b5ff833c51d48f1625ace979a2868d8a0
TREX_REPO=https://github.com/cisco-system-traffic-generator/trex-core.git
CACHE=${OFBENCH_TREX_CACHE:-/var/cache/ofbench/trex}
# gcc 12 turns two known upstream warnings into errors without the -Wno-error flags
BUILD_CXXFLAGS="-Wno-error=dangling-pointer -Wno-error=maybe-uninitialized"
CONFIGURE_ARGS="--no-mlx=all --no-bnxt"
BUILD_ARGS="-j${OFBENCH_TREX_JOBS:-2} --targets=_t-rex-64"
APT_NEEDED=(build-essential zlib1g-dev python3 binutils xz-utils git ca-certificates)

MODE=build
[[ ${1:-} == --locate ]] && MODE=locate
[[ ${1:-} == --source ]] && MODE=source

# ---- source and key -----------------------------------------------------------------------------
vendored_tarball() {
  # ../shared/vendor/ beside the clone; for a git worktree also beside its main clone; for a
  # clone of a local repository (a CI clone in /tmp of /work/main) also beside that one
  local roots=("$ROOT") common origin
  common=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  [[ -n $common ]] && roots+=("$(dirname "$common")")
  origin=$(git -C "$ROOT" remote get-url origin 2>/dev/null || true)
  origin=${origin#file://}
  [[ $origin == /* && -d $origin ]] && roots+=("$(readlink -f "$origin")")
  for r in "${roots[@]}"; do
    if [[ -f $r/../shared/vendor/trex-core-$TREX_VERSION.tar.xz ]]; then
      readlink -f "$r/../shared/vendor/trex-core-$TREX_VERSION.tar.xz"
      return 0
    fi
  done
  return 1
}

src_kind="" src_path="" src_commit=unknown
if [[ -n ${OFBENCH_TREX_SRC:-} ]]; then
  src_path=$(readlink -f "$OFBENCH_TREX_SRC")
  if [[ -d $src_path ]]; then
    src_kind=dir
    src_commit=$(git -C "$src_path" rev-parse HEAD 2>/dev/null || echo unknown)
  elif [[ -f $src_path ]]; then src_kind=tarball
  else say "OFBENCH_TREX_SRC=$OFBENCH_TREX_SRC is neither a directory nor a file"; exit 1; fi
elif vendored=$(vendored_tarball) ; then
  # the vendored snapshot of the pinned commit (see its README.md)
  src_kind=tarball src_path=$vendored src_commit=$TREX_COMMIT
else
  src_kind=git src_path=$TREX_REPO src_commit=$TREX_COMMIT
fi

if [[ $MODE == source ]]; then
  echo "$src_kind $src_path"
  exit 0
fi

source_hash() {
  case $src_kind in
    tarball) sha256sum "$src_path" | cut -c1-64 ;;
    # a git tree: its commit plus any local change; any other tree: names, sizes, mtimes of
    # every source file (cheap; contents would take minutes on a 1 GB tree)
    dir) if git -C "$src_path" rev-parse HEAD >/dev/null 2>&1; then
           { git -C "$src_path" rev-parse HEAD; git -C "$src_path" diff HEAD; } | sha256sum | cut -c1-64
         else
           (cd "$src_path" && find . -type f -not -path './linux_dpdk/build_dpdk/*' -printf '%P %s %T@\n' \
              | LC_ALL=C sort | sha256sum | cut -c1-64)
         fi ;;
    git) printf 'git %s\n' "$TREX_COMMIT" | sha256sum | cut -c1-64 ;;
  esac
}

cpu_signature() {
  # what -march=native means to this gcc on this CPU (ISA flags and cache parameters)
  local sig
  sig=$(echo | gcc -march=native -E -v - 2>&1 | grep -m1 '/cc1 ' | grep -oE -- ' -m[^ ]+| --param [^ ]+' || true)
  [[ -n $sig ]] || sig=$(grep -m1 -E '^(model name|flags)' /proc/cpuinfo; grep -m1 '^flags' /proc/cpuinfo)
  printf '%s\n' "$sig" | sha256sum | cut -c1-12
}

flags_hash() {
  printf '%s|%s|%s|%s\n' "$BUILD_CXXFLAGS" "$CONFIGURE_ARGS" "--targets=_t-rex-64" \
    "$(gcc -dumpfullversion 2>/dev/null || echo nogcc)" | sha256sum | cut -c1-8
}

SRC_HASH=$(source_hash)
KEY="$TREX_VERSION-src${SRC_HASH:0:16}-cpu$(cpu_signature)-flags$(flags_hash)"
RUNTIME=$CACHE/$KEY
STAMP=$RUNTIME/ofbench-trex.json
LOG=$CACHE/$KEY.build.log
FAILED=$CACHE/$KEY.failed
BUILD_DIR=$CACHE/build-${SRC_HASH:0:16}

same_commit_runtime() {
  # a runtime built here from another copy of the same pinned commit (the vendored tarball vs
  # a clone of the tag) with the same CPU signature and flags: the same build, reuse it
  [[ $src_commit == unknown ]] && return 1
  local stamp dir
  for stamp in "$CACHE"/"$TREX_VERSION"-src*-"${KEY#*-src*-}"/ofbench-trex.json; do
    [[ -f $stamp ]] || continue
    dir=$(dirname "$stamp")
    if grep -q "\"commit\": \"$src_commit\"" "$stamp"; then echo "$dir"; return 0; fi
  done
  return 1
}

if [[ $MODE == locate ]]; then
  [[ -f $STAMP ]] && { echo "$RUNTIME"; exit 0; }
  same_commit_runtime && exit 0
  exit 1
fi

link_runtime() {
  # tools/ is git-ignored; in a worktree whose tools/ is a link into another clone, the caller
  # may set OFBENCH_TREX_LINK to put the link elsewhere (or the driver finds the cache by key)
  local link=${OFBENCH_TREX_LINK:-$ROOT/tools/trex}
  mkdir -p "$(dirname "$link")"
  ln -sfn "$RUNTIME" "$link"
  say "runtime $RUNTIME (linked as ${link#$ROOT/})"
}

# ---- fast paths ----------------------------------------------------------------------------------
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock-$KEY"
if ! flock -n 9; then
  say "another setup is building $KEY; waiting for it"
  flock 9
fi
if [[ -f $STAMP && ${OFBENCH_TREX_REBUILD:-0} != 1 ]]; then
  link_runtime
  exit 0
fi
if [[ ${OFBENCH_TREX_REBUILD:-0} != 1 ]] && other=$(same_commit_runtime); then
  say "the runtime of commit ${src_commit:0:7} built from another copy of it is here"
  RUNTIME=$other
  link_runtime
  exit 0
fi
if [[ -f $FAILED && ${OFBENCH_TREX_REBUILD:-0} != 1 ]]; then
  say "SKIPPED: the TRex build failed before ($(head -1 "$FAILED")); log $LOG." \
      "Fix it and run OFBENCH_TREX_REBUILD=1 make setup. TRex tests skip until then."
  exit 0
fi

report_failure() {
  say "FAILED: $1"
  say "log: $LOG (last lines below); the rest of the project stays usable, TRex tests skip."
  tail -n 15 "$LOG" 2>/dev/null | sed 's/^/[setup] trex:   /' >&2 || true
  exit 0
}

# a build failure: marked, later setups skip the build until OFBENCH_TREX_REBUILD=1
fail() {
  printf '%s\nat %s, source %s (%s)\n' "$1" "$(date -u +%FT%TZ)" "$src_path" "$src_kind" > "$FAILED"
  report_failure "$1"
}

# not a build failure (no source reachable): not marked, a later setup retries
fail_retry() {
  rm -rf "$BUILD_DIR"
  report_failure "$1"
}

# ---- apt packages the build needs -----------------------------------------------------------------
missing=()
for p in "${APT_NEEDED[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  say "apt: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
           "${missing[@]}" >/dev/null; } || fail "apt could not install ${missing[*]}"
fi

# ---- unpack (or reuse a build tree of the same source) ----------------------------------------------
: > "$LOG"
rm -f "$FAILED"
key_file=$BUILD_DIR/.ofbench-build-key
if [[ -d $BUILD_DIR/linux_dpdk ]] && { [[ ! -f $key_file ]] || [[ $(cat "$key_file") == "$KEY" ]]; }; then
  # same source: waf rebuilds only what is missing (a build tree without a key file was made
  # by hand on this host with these flags, e.g. the first build of the project)
  say "reusing the build tree $BUILD_DIR"
else
  rm -rf "$BUILD_DIR"
  mkdir -p "$BUILD_DIR"
  case $src_kind in
    tarball)
      say "unpacking $src_path"
      tar -xf "$src_path" -C "$BUILD_DIR" --strip-components=1 >>"$LOG" 2>&1 || fail "cannot unpack $src_path" ;;
    dir)
      say "copying $src_path"
      (cd "$src_path" && tar -cf - --exclude=./linux_dpdk/build_dpdk .) | tar -xf - -C "$BUILD_DIR" >>"$LOG" 2>&1 \
        || fail "cannot copy $src_path" ;;
    git)
      say "cloning $TREX_REPO at $TREX_VERSION"
      git clone -q --depth 1 --branch "$TREX_VERSION" "$TREX_REPO" "$BUILD_DIR" >>"$LOG" 2>&1 \
        || fail_retry "git clone $TREX_REPO $TREX_VERSION failed (no network? the vendored tarball ../shared/vendor/trex-core-$TREX_VERSION.tar.xz was not found beside the clone)"
      got=$(git -C "$BUILD_DIR" rev-parse HEAD)
      [[ $got == "$TREX_COMMIT" ]] || fail "tag $TREX_VERSION is commit $got, pinned $TREX_COMMIT" ;;
  esac
fi
echo "$KEY" > "$key_file"

# ---- build -------------------------------------------------------------------------------------------
say "building the TRex $TREX_VERSION server (~26 CPU-minutes the first time; log $LOG)"
t0=$(date +%s)
(
  cd "$BUILD_DIR/linux_dpdk"
  # a tree configured with this key's flags is not configured again (waf could then rebuild all)
  compgen -G "build_dpdk/c4che/*_cache.py" >/dev/null || CXXFLAGS="$BUILD_CXXFLAGS" ./b configure $CONFIGURE_ARGS
  # shellcheck disable=SC2086
  nice -n 10 ./b build $BUILD_ARGS
) >>"$LOG" 2>&1 || fail "waf configure/build failed in $BUILD_DIR/linux_dpdk"

# ---- install the minimal runtime ---------------------------------------------------------------------
bin=$BUILD_DIR/linux_dpdk/build_dpdk/linux_dpdk/_t-rex-64
[[ -f $bin ]] || bin=$BUILD_DIR/scripts/_t-rex-64
[[ -f $bin ]] || fail "the build ended without _t-rex-64"
bpf=$(readlink -f "$BUILD_DIR/scripts/so/x86_64/libbpf-64.so" 2>/dev/null || true)
[[ -f $bpf ]] || bpf=$BUILD_DIR/linux_dpdk/build_dpdk/linux_dpdk/libbpf-64.so
zmq=$BUILD_DIR/scripts/so/x86_64/libzmq.so.5
[[ -f $bpf && -f $zmq ]] || fail "runtime libraries missing (libbpf-64.so: $bpf, libzmq.so.5: $zmq)"
tmp=$CACHE/.install-$KEY
rm -rf "$tmp" && mkdir -p "$tmp/so/x86_64"
cp "$bin" "$tmp/_t-rex-64" && strip "$tmp/_t-rex-64"
cp "$bpf" "$tmp/so/x86_64/libbpf-64.so" && cp "$zmq" "$tmp/so/x86_64/libzmq.so.5"
# the binary finds its libraries through its RUNPATH (so/x86_64, relative to the cwd) or
# LD_LIBRARY_PATH; check that nothing else is missing before calling it a runtime
if (cd "$tmp" && LD_LIBRARY_PATH=$tmp/so/x86_64 ldd ./_t-rex-64 | grep -q 'not found'); then
  (cd "$tmp" && LD_LIBRARY_PATH=$tmp/so/x86_64 ldd ./_t-rex-64) >>"$LOG" 2>&1
  fail "the installed runtime misses shared libraries (ldd in the log)"
fi
secs=$(( $(date +%s) - t0 ))
cat > "$tmp/ofbench-trex.json" <<EOF
{"version": "$TREX_VERSION", "commit": "$src_commit", "key": "$KEY",
 "source": "$src_path", "source_kind": "$src_kind", "source_sha256": "$SRC_HASH",
 "cxxflags": "$BUILD_CXXFLAGS", "configure": "$CONFIGURE_ARGS", "build": "$BUILD_ARGS",
 "gcc": "$(gcc -dumpfullversion)", "built_utc": "$(date -u +%FT%TZ)", "build_wall_s": $secs,
 "files": ["_t-rex-64", "so/x86_64/libbpf-64.so", "so/x86_64/libzmq.so.5"]}
EOF
rm -rf "$RUNTIME" && mv "$tmp" "$RUNTIME"
rm -rf "$BUILD_DIR"
say "built in ${secs} s; build tree removed"
link_runtime
