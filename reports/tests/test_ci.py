"""The CI workflow definitions (.github/workflows/): parse them (yaml.safe_load) and check what
the lab relies on: the nightly matrix over a pool's places with one InfluxDB, the per-change job
on any free place of the pool below the nightly's priority, secrets only in the environment."""
import re

import yaml

from paths import REPO

WORKFLOWS = REPO / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "nightly.yml"
CHANGE = WORKFLOWS / "change.yml"


def _load(path):
    return yaml.safe_load(path.read_text())


def _priority(text: str) -> float:
    m = re.search(r"--lab-priority[= ](\d+(?:\.\d+)?)", text)
    assert m, text
    return float(m.group(1))


def test_every_workflow_parses_and_keeps_secrets_out_of_argv():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"nightly.yml", "change.yml"}
    for f in files:
        wf = _load(f)
        assert wf["jobs"], f
        for name, job in wf["jobs"].items():
            for step in job.get("steps", []):
                # a secret reaches a step through env only, never a command line
                assert "secrets." not in step.get("run", ""), (f.name, name, step)
                assert "secrets." not in str(step.get("with", {})), (f.name, name, step)


def test_nightly_workflow_runs_make_nightly_and_keeps_the_report():
    wf = _load(WORKFLOW)
    triggers = wf[True]  # YAML 1.1 reads the key `on` as true
    assert "schedule" in triggers and "workflow_dispatch" in triggers
    job = wf["jobs"]["nightly"]
    assert "self-hosted" in job["runs-on"]
    assert job["env"]["OFBENCH_INFLUX_URL"] == "${{ secrets.OFBENCH_INFLUX_URL }}"
    assert job["env"]["OFBENCH_INFLUX_TOKEN"] == "${{ secrets.OFBENCH_INFLUX_TOKEN }}"
    runs = [s.get("run", "") for s in job["steps"]]
    assert any("make nightly" in r for r in runs)
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["clean"] is False  # keeps tools/, the spool and local history
    upload = next(s for s in job["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["if"].startswith("always()") and "RUN_DIR" in upload["with"]["path"]
    assert "matrix.place" in upload["with"]["name"]   # one artifact per place


def test_nightly_is_a_matrix_over_the_pools_places_with_one_influxdb():
    wf = _load(WORKFLOW)
    places, job = wf["jobs"]["places"], wf["jobs"]["nightly"]
    assert "drivers.lab.lease matrix" in "".join(s.get("run", "") for s in places["steps"])
    assert job["needs"] == "places"
    assert job["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.places.outputs.matrix) }}"
    assert job["strategy"]["fail-fast"] is False
    assert job["env"]["DUT"] == "${{ matrix.profile }}"      # --dut=<profile> per place
    assert _priority(job["env"]["PYTEST_ADDOPTS"]) == 10
    guard = " ".join(s.get("run", "") for s in job["steps"])
    assert '[ -z "$OFBENCH_INFLUX_URL" ]' in guard            # no runner-local history split


def test_change_reserves_any_free_place_of_the_pool_below_the_nightly():
    wf = _load(CHANGE)
    assert "pull_request" in wf[True]
    job = wf["jobs"]["quick-on-pool"]
    assert "head.repo.full_name == github.repository" in job["if"]   # no fork on lab runners
    assert "self-hosted" in job["runs-on"]
    run = next(s["run"] for s in job["steps"] if "pytest" in s.get("run", ""))
    assert '--dut="pool:$POOL"' in run and "-m quick" in run
    nightly = _load(WORKFLOW)["jobs"]["nightly"]["env"]["PYTEST_ADDOPTS"]
    assert _priority(run) < _priority(nightly)
    assert "LG_COORDINATOR" in job["env"]
    assert "secrets." not in str(job)                          # exports nothing, needs none
