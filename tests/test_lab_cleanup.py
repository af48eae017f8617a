"""A run killed with SIGKILL leaves processes and namespaces; the next run's cleanup removes
them, and leaves a live run's alone."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from drivers.lab import cleanup
from drivers.supervisor import proc_start_time

REPO = Path(__file__).resolve().parents[1]

VICTIM = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from dut.profiles.schema import parse_profile
    from drivers.lab.local import LocalLab
    prof = parse_profile({"schema_version": 1, "lab": {"kind": "local"},
                          "features": ["netns"], "switch": {"kind": "ovs"}}, where="t.yaml")
    lab = LocalLab(prof, sys.argv[1], Path(sys.argv[2]))
    lab.add_netns("a")
    lab.supervisor.start("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"])
    print("READY", flush=True)
    time.sleep(600)
""")


def _netns():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.fixture
def state_root(tmp_path, monkeypatch):
    root = tmp_path / "state"
    root.mkdir()
    monkeypatch.setattr(cleanup, "STATE_ROOT", root)
    return root


def _start_victim(tmp_path, state_root, run_id):
    env = {**os.environ, "OFBENCH_STATE_ROOT": str(state_root), "PYTHONPATH": str(REPO)}
    p = subprocess.Popen([sys.executable, "-c", VICTIM, run_id, str(tmp_path / run_id)],
                         stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    assert p.stdout.readline().strip() == "READY"
    return p


def test_sigkilled_run_is_cleaned_by_the_next(tmp_path, state_root):
    run_id = "run-20990101T000000Z-f00d"
    victim = _start_victim(tmp_path, state_root, run_id)
    sleeper_pid = int((state_root / run_id / "pids.jsonl").read_text().split('"pid": ')[1]
                      .split(",")[0])
    assert "ofb-f00d-a" in _netns()
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert proc_start_time(sleeper_pid) is not None  # orphaned, still running

    removed = cleanup.cleanup_stale(state_root, log=lambda m: None)
    time.sleep(0.2)
    assert proc_start_time(sleeper_pid) is None
    assert "ofb-f00d-a" not in _netns()
    assert not (state_root / run_id).exists()
    assert any("netns ofb-f00d-a" in r for r in removed)


def test_live_run_is_left_alone(tmp_path, state_root):
    run_id = "run-20990101T000000Z-beef"
    victim = _start_victim(tmp_path, state_root, run_id)
    try:
        cleanup.cleanup_stale(state_root, log=lambda m: None)
        assert "ofb-beef-a" in _netns() and (state_root / run_id).exists()
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        cleanup.cleanup_stale(state_root, log=lambda m: None)
    assert "ofb-beef-a" not in _netns()


def test_dpdk_runtime_folders_of_dead_runs_and_tools_go(tmp_path, state_root, monkeypatch):
    import drivers.lab.cleanup as cleanup
    rt = tmp_path / "dpdk"
    monkeypatch.setattr(cleanup, "DPDK_RUNTIME_DIR", rt)
    live = state_root / "run-20990101T000000Z-beef"
    live.mkdir()
    (live / "owner.json").write_text(json.dumps(
        {"pid": os.getpid(), "start_time": cleanup.proc_start_time(os.getpid())}))
    for name in ("ofbdeadsw-ofb", "ofbdeadgen", "ofbbeefsw", f"ofb-softgen-x-{os.getpid()}",
                 "ofb-swfuzz-999999999", "other-prefix"):
        (rt / name).mkdir(parents=True)
    cleanup.cleanup_stale(state_root, log=lambda m: None)
    assert sorted(p.name for p in rt.iterdir()) == sorted(
        ["ofbbeefsw", f"ofb-softgen-x-{os.getpid()}", "other-prefix"])
