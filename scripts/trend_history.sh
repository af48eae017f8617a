#!/usr/bin/env bash
# A trend history the way `python -m reports trend-eval` reads it: N "nights" of the same binary,
# each one short command under the exclusive bench lock (the box quiet while it measures):
#   - the quick throughput tests (softgen loopback sanity / NDR / latency floor), a run folder;
#   - the switch pipeline bench (ofbench, 100k flows, replay feed, REPS windows of 1 s): the
#     windows are the night's trials (CSIT trends per-run medians with the trials' spread).
# Each night's folder holds night.json: date, CPU, load average before/after, git sha, commands.
#   scripts/trend_history.sh OUT_DIR [NIGHTS] [REPS]
# then: python -m reports trend-eval --history-dir OUT_DIR --save-history FILE
set -euo pipefail
out=${1:?usage: scripts/trend_history.sh OUT_DIR [NIGHTS] [REPS]}
nights=${2:-30}
reps=${3:-5}
lock=${OFBENCH_LOCK:-/tmp/ofbench-bench.lock}
py=${PYTHON:-.venv/bin/python}
mkdir -p "$out"
quick=(suites/throughput/test_throughput.py::test_generator_loopback_sanity
       suites/throughput/test_throughput.py::test_generator_loopback_sanity_memif
       suites/throughput/test_throughput.py::test_ndr_search_on_generator_loopback
       suites/throughput/test_throughput.py::test_latency_floor_memif)
for i in $(seq -w 1 "$nights"); do
    d="$out/night-$i"
    [ -e "$d/night.json" ] && continue
    mkdir -p "$d"
    flock "$lock" bash -c '
        set -e
        d=$1; py=$2; reps=$3; shift 3
        load0=$(cut -d" " -f1-3 /proc/loadavg); t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
        "$py" -m pytest "$@" --dut=local --reports-dir "$d/runs" -q -p no:cacheprovider \
            > "$d/pytest.log" 2>&1 || echo "pytest failed: $d/pytest.log" >&2
        "$py" -m suites.switch.pipeline --kinds ofbench --plan ofbench/replay --reps "$reps" \
            --duration 1 > "$d/pipeline.json" 2> "$d/pipeline.log"
        load1=$(cut -d" " -f1-3 /proc/loadavg); t1=$(date -u +%Y-%m-%dT%H:%M:%SZ)
        "$py" - "$d" "$t0" "$t1" "$load0" "$load1" "$reps" "$@" <<PY
import json, platform, subprocess, sys
d, t0, t1, l0, l1, reps, *quick = sys.argv[1:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
json.dump({"start": t0, "end": t1, "cpu": cpu, "cores": len(__import__("os").sched_getaffinity(0)),
           "loadavg_before": l0, "loadavg_after": l1, "git_sha": sha,
           "build_dir": __import__("os").environ.get("OFBENCH_BUILD_DIR", "build"),
           "commands": ["pytest " + " ".join(quick) + " --dut=local",
                        f"python -m suites.switch.pipeline --kinds ofbench --plan ofbench/replay --reps {reps} --duration 1"]},
          open(f"{d}/night.json", "w"), indent=1)
PY
    ' _ "$d" "$py" "$reps" "${quick[@]}"
    echo "night $i done: $(cat "$d/night.json" | tr -d '\n' | cut -c1-200)"
done
