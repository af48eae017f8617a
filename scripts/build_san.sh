#!/usr/bin/env bash
# The sanitizer build of the switch: build-san/ (or $OFBENCH_SAN_BUILD_DIR), made by clang-14
# with AddressSanitizer + UndefinedBehaviorSanitizer (no recovery: the first report aborts) and
# libFuzzer coverage instrumentation (-fsanitize=fuzzer-no-link) in every object, so the switch,
# its C tests and the libFuzzer harness (dut/switch/fuzz) are all checked. Only the switch's
# targets (and the classifier library it links) are built. Idempotent and incremental: a second
# run is one ninja no-op. Run by scripts/setup.sh; `make test` uses what it builds.
#   scripts/build_san.sh           configure once, then build
#   scripts/build_san.sh --locate  print the build folder when the fuzzer is built, else fail
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${OFBENCH_SAN_BUILD_DIR:-build-san}
CC_SAN=${OFBENCH_SAN_CC:-clang-14}
TARGETS=(dut/switch/ofswitch dut/switch/test_ofswitch_unit dut/switch/test_ofswitch_actions
         dut/switch/fuzz_agent dut/switch/fuzz_conn)
say() { printf '[build-san] %s\n' "$*" >&2; }

if [[ ${1:-} == --locate ]]; then
  [[ -x $DIR/dut/switch/fuzz_agent ]] || { say "$DIR/dut/switch/fuzz_agent is not built"; exit 1; }
  readlink -f "$DIR"
  exit 0
fi
if ! command -v "$CC_SAN" >/dev/null; then
  say "$CC_SAN not found (apt: clang-14 libclang-rt-14-dev llvm-14, see scripts/setup.sh)"
  exit 1
fi
if [[ ! -f $DIR/build.ninja ]]; then
  say "meson setup $DIR ($CC_SAN, address+undefined, fuzzer-no-link)"
  CC=$CC_SAN meson setup "$DIR" --buildtype=debugoptimized \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dc_args="-fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link -fno-omit-frame-pointer" \
    >/dev/null
fi
# the churn test needs DPDK's ring PMD as a library: its target exists only where meson found it.
# The target list is read whole first: `ninja ... | grep -q` under pipefail fails at random when
# grep quits before ninja has written the rest (SIGPIPE), and the test was then skipped.
all_targets=$(ninja -C "$DIR" -t targets all 2>/dev/null || true)
if grep -q '^dut/switch/test_ofswitch_churn:' <<<"$all_targets"; then
  TARGETS+=(dut/switch/test_ofswitch_churn dut/switch/test_ofswitch_pipecache)
fi
# the datapath's frame-bounds test and its fuzz target (issue 37)
TARGETS+=(dut/switch/test_ofswitch_bounds dut/switch/fuzz_datapath)
nice -n 10 ninja -C "$DIR" -j2 "${TARGETS[@]}" >/dev/null
say "built ${TARGETS[*]} in $DIR"
