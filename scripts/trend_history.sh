#!/usr/bin/env bash
# A trend history the way `python -m reports trend-eval --nights DIR` reads it: N "nights" of the
# same binary, measured under the exclusive bench lock (the box quiet while it measures), BATCH
# nights per lock hold (each hold stops after HOLD_S seconds, ~15 min at most, and the next one
# waits for the lock again). A night is:
#   - the quick throughput tests (softgen loopback sanity / NDR / latency floor), a run folder;
#   - the switch pipeline bench (ofbench, 100k flows, replay feed, REPS windows of 1 s): the
#     windows are the night's trials (CSIT trends per-run values with the trials' spread); its
#     record gets the provenance the pytest bench's carries (switch kind ofbench), so the trend
#     keys it as the DUT's.
# Each night's folder holds night.json: date, CPU, load average before/after, git sha, commands,
# the build's hash and, when OFBENCH_BUILD_SHA says it, the commit the build was made from
# (git_sha is the checkout the script runs in, which may move while a history is recorded).
# PAUSE_S seconds between two lock holds (default 0) leave the bench to other engineers.
#   scripts/trend_history.sh OUT_DIR [NIGHTS] [REPS] [BATCH]
#   python -m reports trend-eval --nights OUT_DIR --save-history FILE
set -euo pipefail
py=${PYTHON:-.venv/bin/python}
quick=(suites/throughput/test_throughput.py::test_generator_loopback_sanity
       suites/throughput/test_throughput.py::test_generator_loopback_sanity_memif
       suites/throughput/test_throughput.py::test_ndr_search_on_generator_loopback
       suites/throughput/test_throughput.py::test_latency_floor_memif)

one_night() {   # DIR REPS (under the lock)
    local d=$1 reps=$2 load0 load1 t0 t1
    mkdir -p "$d"
    load0=$(cut -d" " -f1-3 /proc/loadavg); t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    "$py" -m pytest "${quick[@]}" --dut=local --reports-dir "$d/runs" -q -p no:cacheprovider \
        > "$d/pytest.log" 2>&1 || echo "pytest failed: $d/pytest.log" >&2
    "$py" -m suites.switch.pipeline --kinds ofbench --plan ofbench/replay --reps "$reps" \
        --duration 1 > "$d/pipeline.json" 2> "$d/pipeline.log"
    load1=$(cut -d" " -f1-3 /proc/loadavg); t1=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    "$py" - "$d" "$t0" "$t1" "$load0" "$load1" "$reps" "${quick[@]}" <<'PY'
import json, os, subprocess, sys
d, t0, t1, l0, l1, reps, *quick = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
# the binaries measured (a history is one build's: a rebuild mid-way is a real step, not noise)
import hashlib, pathlib
build = pathlib.Path(os.environ.get("OFBENCH_BUILD_DIR") or "build")
h = hashlib.sha256()
for f in sorted(build.rglob("*")):
    if f.is_file() and not any(p.endswith(".p") for p in f.relative_to(build).parts) \
            and (os.access(f, os.X_OK) or ".so" in f.name):
        h.update(str(f.relative_to(build)).encode() + b"\0" + f.read_bytes())
json.dump({"start": t0, "end": t1, "cpu": cpu, "cores": len(os.sched_getaffinity(0)),
           "loadavg_before": l0, "loadavg_after": l1, "git_sha": sha,
           "build_dir": str(build), "build_sha256": h.hexdigest(),
           **({"build_git_sha": os.environ["OFBENCH_BUILD_SHA"]}
              if os.environ.get("OFBENCH_BUILD_SHA") else {}),
           "commands": ["pytest " + " ".join(quick) + " --dut=local",
                        f"python -m suites.switch.pipeline --kinds ofbench --plan ofbench/replay --reps {reps} --duration 1"]},
          open(f"{d}/night.json", "w"), indent=1)
# the pipeline CLI prints its record without provenance: give it the switch pytest's record
# carries (suites/switch/test_pipeline_bench.py), so the trend keys it as ofbench's rate
try:
    rec = json.load(open(f"{d}/pipeline.json"))
except (OSError, ValueError):
    rec = None
if isinstance(rec, dict) and "provenance" not in rec:
    rec["provenance"] = {"dut_switch_kind": "ofbench", "generator": "drivers/replay+net_pcap",
                         "port_kind": "ring/pcap/null"}
    json.dump(rec, open(f"{d}/pipeline.json", "w"))
PY
    echo "night $(basename "$d"): $t0 load $load0 -> $load1"
}

if [ "${1:-}" = "--batch" ]; then   # under the lock: up to COUNT missing nights, HOLD_S at most
    shift; out=$1 nights=$2 reps=$3 count=$4 hold=${HOLD_S:-780}
    start=$SECONDS done=0
    for i in $(seq -w 1 "$nights"); do
        [ -e "$out/night-$i/night.json" ] && continue
        [ "$done" -ge "$count" ] && break
        [ $((SECONDS - start)) -ge "$hold" ] && break
        rm -rf "$out/night-$i"    # a night cut short by Ctrl-C: this script's own folder
        one_night "$out/night-$i" "$reps"
        done=$((done + 1))
    done
    exit 0
fi

out=${1:?usage: scripts/trend_history.sh OUT_DIR [NIGHTS] [REPS] [BATCH]}
nights=${2:-30}
reps=${3:-5}
batch=${4:-15}
lock=${OFBENCH_LOCK:-/tmp/ofbench-bench.lock}
mkdir -p "$out"
while [ "$(ls "$out"/night-*/night.json 2>/dev/null | wc -l)" -lt "$nights" ]; do
    flock "$lock" "$0" --batch "$out" "$nights" "$reps" "$batch"
    [ "$(ls "$out"/night-*/night.json 2>/dev/null | wc -l)" -lt "$nights" ] && sleep "${PAUSE_S:-0}"
done
