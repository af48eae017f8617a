"""The nightly CI workflow definition (moved by the lead to .github/workflows/)."""
import yaml

from paths import REPO

WORKFLOW = REPO / ".github" / "workflows" / "nightly.yml"


def test_nightly_workflow_runs_make_nightly_and_keeps_the_report():
    wf = yaml.safe_load(WORKFLOW.read_text())
    triggers = wf[True]  # YAML 1.1 reads the key `on` as true
    assert "schedule" in triggers and "workflow_dispatch" in triggers
    job = wf["jobs"]["nightly"]
    assert "self-hosted" in job["runs-on"]
    assert job["env"]["OFBENCH_INFLUX_URL"] == "${{ secrets.OFBENCH_INFLUX_URL }}"
    runs = [s.get("run", "") for s in job["steps"]]
    assert any("make nightly" in r for r in runs)
    checkout = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["clean"] is False  # keeps tools/, the spool and local history
    upload = next(s for s in job["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["if"].startswith("always()") and "RUN_DIR" in upload["with"]["path"]
