"""harness/services.py: the run's local influxd runs under the supervisor, in a state folder
of its own that the stale-run cleanup (the next run, `make clean-stale`) handles."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from drivers.lab import cleanup
from drivers.supervisor import proc_start_time
from paths import REPO


RUN = r"""
import sys, time
from pathlib import Path
from harness.services import start_local_influxd
srv = start_local_influxd("run-20990101T000000Z-1f1d", Path(sys.argv[1]) / "logs" / "influxd.log",
                          sys.argv[3], data_dir=Path(sys.argv[1]) / "db",
                          state_root=Path(sys.argv[2]), flux_enabled=False)
print(srv.pid, flush=True)
time.sleep(600)
"""


def _start(tmp_path, root, token="-"):
    child = subprocess.Popen([sys.executable, "-c", RUN, str(tmp_path), str(root), token],
                             stdout=subprocess.PIPE, text=True, cwd=REPO,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    return child, int(child.stdout.readline())


def test_a_killed_runs_influxd_is_stopped_by_the_stale_run_cleanup(tmp_path):
    root = tmp_path / "state"
    state = root / "run-20990101T000000Z-1f1d.influxd"
    child, pid = _start(tmp_path, root, token="ofb:pw-s3cret")
    try:
        recorded = [json.loads(x) for x in (state / "pids.jsonl").read_text().splitlines()]
        assert [(r["name"], r["pid"]) for r in recorded] == [("influxd", pid)]
        assert json.loads((state / "owner.json").read_text())["pid"] == child.pid
        for f in [*state.iterdir(), *(tmp_path / "logs").iterdir()]:
            assert "s3cret" not in f.read_text(errors="replace"), f
        assert b"s3cret" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        # a live run's server is left alone
        cleanup.cleanup_stale(root, log=lambda m: None)
        assert proc_start_time(pid) is not None and state.is_dir()
        child.send_signal(signal.SIGKILL)   # the run dies; its server lives on, recorded
        child.wait()
        assert proc_start_time(pid) is not None
        removed = cleanup.cleanup_stale(root, log=lambda m: None)
        assert any(f"influxd({pid})" in r for r in removed), removed
        for _ in range(100):
            if proc_start_time(pid) is None:
                break
            time.sleep(0.05)
        assert proc_start_time(pid) is None and not state.exists()
    finally:
        child.kill()
        child.wait()
        if proc_start_time(pid) is not None:
            os.kill(pid, signal.SIGKILL)


def test_stop_stops_the_server_and_removes_its_folder(tmp_path):
    from harness.services import start_local_influxd, stop_local_influxd
    srv = start_local_influxd("run-20990101T000000Z-3f3d", tmp_path / "logs" / "influxd.log",
                              data_dir=tmp_path / "db", state_root=tmp_path / "state",
                              flux_enabled=False)
    pid = srv.pid
    assert srv.is_ready() and srv.state_dir.is_dir()
    stop_local_influxd(srv)
    assert proc_start_time(pid) is None and not srv.state_dir.exists()
    assert (tmp_path / "logs" / "influxd.log").is_file()
