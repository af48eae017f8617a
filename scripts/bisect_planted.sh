#!/usr/bin/env bash
# Issue 40's bisect goal, end to end: a throwaway repository of this checkout's HEAD + 8 commits
# (reports/tests/bisect_fixture.py: 7 comment changes in dut/switch/src, the 5th adds a fixed
# busy delay per rx burst in the switch's worker), then `reports bisect` over it on a lab, in
# steps of at most STEP_S seconds (--stop-after; each trial holds the exclusive bench lock on
# its own, each build its shared side), resumed from WORK/bisect-state.json until it answers.
#   scripts/bisect_planted.sh REPO_DIR WORK_DIR [DELAY_US] [DUT] [TRIALS]
# REPO_DIR and WORK_DIR must not exist yet (or be empty); nothing outside them is written, and
# /work/main's history is never touched (the fixture is a `git clone --shared`, never pushed).
# Remove both folders when done.
set -euo pipefail
repo=${1:?usage: scripts/bisect_planted.sh REPO_DIR WORK_DIR [DELAY_US] [DUT] [TRIALS]}
work=${2:?usage: scripts/bisect_planted.sh REPO_DIR WORK_DIR [DELAY_US] [DUT] [TRIALS]}
delay=${3:-1}
dut=${4:-lab-emu}
trials=${5:-3}
py=${PYTHON:-.venv/bin/python}
lock=${OFBENCH_LOCK:-/tmp/ofbench-bench.lock}
step_s=${STEP_S:-840}
opts=()
[ "${dut#lab-emu}" != "$dut" ] && opts=(--pytest-opt=--lab-coordinator=local)

mkdir -p "$work"
if [ ! -e "$repo/.git" ]; then
    flock -s "$lock" nice -n 10 "$py" -m reports.tests.bisect_fixture "$repo" --delay-us "$delay" \
        | tee "$work/fixture.shas"
fi
eval "$(cat "$work/fixture.shas")"          # good=... bad=... planted=...
step=0
while :; do
    step=$((step + 1))
    echo "=== step $step $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
    rc=0
    "$py" -m reports bisect --repo "$repo" --good "$good" --bad "$bad" \
        --metric switch/pipeline_64b_100k_flows/ofbench_mpps --trials "$trials" \
        --dut "$dut" "${opts[@]}" \
        --pytest 'suites/switch/test_pipeline_bench.py::test_pipeline_64b_100k_flows[8192frames]' \
        --targets dut/switch/ofswitch --lock "$lock" --work "$work" --stop-after "$step_s" || rc=$?
    echo "=== step $step rc=$rc $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"
    [ "$rc" = 3 ] || break
done
echo "planted: $planted"
exit "$rc"
