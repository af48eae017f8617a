"""The testbed lock (drivers/lab/testbed_lock.py), its snippet and shell check run for real by a
host that is this box's shell (what a RemoteHost runs over SSH, run here directly)."""
from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from drivers.lab.base import LabError
from drivers.lab.testbed_lock import TestbedLock, lock_path


class ShellHost:
    role, address = "switch", "198.18.99.2"

    def run(self, cmd, check=True, timeout=30.0):
        cp = subprocess.run(cmd if isinstance(cmd, str) else list(map(str, cmd)),
                            shell=isinstance(cmd, str), capture_output=True, text=True,
                            timeout=timeout)
        if check and cp.returncode:
            raise LabError(cp.stderr)
        return cp

    def python_snippet(self, code, *args):
        return self.run(["python3", "-c", code, *args]).stdout


def lock(tmp_path, run_id, controller="box/boot"):
    (tmp_path / run_id / "switch").mkdir(parents=True, exist_ok=True)  # its folder on the host
    return TestbedLock(ShellHost(), tmp_path, run_id, controller, "lab.yaml")


def test_second_run_is_refused_naming_the_first(tmp_path):
    a = lock(tmp_path, "run-a")
    a.take()
    owner = json.loads(lock_path(tmp_path, "198.18.99.2").read_text())
    assert owner["run_id"] == "run-a" and owner["pid"] == os.getpid()
    with pytest.raises(LabError, match=r"lab.yaml: the testbed is locked by run run-a \(pid"):
        lock(tmp_path, "run-b", controller="other/boot").take()
    a.check()
    a.release()
    assert not lock_path(tmp_path, "198.18.99.2").exists()
    lock(tmp_path, "run-b").take()


def test_dead_run_of_this_machine_or_stale_heartbeat_is_taken_over(tmp_path):
    p = subprocess.Popen(["true"])
    p.wait()
    dead = lock(tmp_path, "run-dead")
    dead.me["pid"], dead.me["start_time"] = p.pid, 1
    dead.take()
    b = lock(tmp_path, "run-b")
    b.take()
    assert "taken over from run run-dead" in b.notes[0]
    other = lock(tmp_path, "run-c", controller="other/boot")
    with pytest.raises(LabError, match="locked by run run-b"):
        other.take()
    old = time.time() - 2 * 24 * 3600
    os.utime(lock_path(tmp_path, "198.18.99.2"), (old, old))
    other.take()
    assert other.notes and "heartbeat" in other.notes[0]


def test_check_stops_a_run_whose_lock_was_replaced_or_removed(tmp_path):
    a = lock(tmp_path, "run-a")
    a.take()
    path = lock_path(tmp_path, "198.18.99.2")
    (tmp_path / "run-x" / "switch").mkdir(parents=True)
    path.write_text(json.dumps({"run_id": "run-x", "controller": "elsewhere", "pid": 7,
                                "role": "switch"}))
    with pytest.raises(LabError, match="no longer this run's: now held by run run-x"):
        a.check()
    b = lock(tmp_path, "run-b", controller="other/boot")
    path.unlink()
    b.take()
    path.unlink()
    with pytest.raises(LabError, match="removed"):
        b.check()


def test_a_run_whose_state_folder_is_gone_from_the_host_is_taken_over(tmp_path):
    a = lock(tmp_path, "run-a", controller="other/boot")
    a.take()
    (tmp_path / "run-a" / "switch").rmdir()   # the host's stale-run cleanup removed it
    b = lock(tmp_path, "run-b")
    b.take()
    assert "taken over from run run-a" in b.notes[0]


def test_release_leaves_another_runs_lock(tmp_path):
    a = lock(tmp_path, "run-a")
    a.take()
    lock_path(tmp_path, "198.18.99.2").write_text(json.dumps({"run_id": "run-x"}))
    a.release()
    assert json.loads(lock_path(tmp_path, "198.18.99.2").read_text())["run_id"] == "run-x"
