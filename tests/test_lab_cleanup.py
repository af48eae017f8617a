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
from paths import REPO


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
                 "ofb-swfuzz-999999999", "other-prefix", "ofbf00dheld"):
        (rt / name).mkdir(parents=True)
    # a folder whose config file a live process holds (as a DPDK primary does) stays
    import fcntl
    held = open(rt / "ofbf00dheld" / "config", "w")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl,sys,time; f=open(sys.argv[1],"
                               "'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True);"
                               " time.sleep(30)", str(rt / "ofbf00dheld" / "config")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        cleanup.cleanup_stale(state_root, log=lambda m: None)
    finally:
        holder.kill()
        held.close()
    assert sorted(p.name for p in rt.iterdir()) == sorted(
        ["ofbbeefsw", f"ofb-softgen-x-{os.getpid()}", "other-prefix", "ofbf00dheld"])


@pytest.mark.skipif(not Path("/usr/bin/dpdk-testpmd").exists(), reason="dpdk-testpmd missing")
def test_a_live_dpdk_primary_holds_its_runtime_folder(tmp_path):
    """The premise of dpdk_runtime_in_use, against a real EAL (testpmd on net_null)."""
    prefix = f"ofb-lockcheck-{os.getpid()}"
    d = Path("/var/run/dpdk") / prefix
    p = subprocess.Popen(["dpdk-testpmd", "-l", "0,1", "--no-huge", "-m", "64", "--no-pci",
                          "--vdev", "net_null0", "--file-prefix", prefix, "--",
                          "--total-num-mbufs=2048"], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not cleanup.dpdk_runtime_in_use(d):
            assert p.poll() is None and time.monotonic() < deadline, "testpmd did not come up"
            time.sleep(0.2)
    finally:
        p.communicate(b"\n", timeout=20)   # testpmd exits on a line from stdin
    assert not cleanup.dpdk_runtime_in_use(d)
    import shutil
    shutil.rmtree(d, ignore_errors=True)


def test_folders_that_are_not_runs_are_left_alone(tmp_path, state_root):
    """An emulated lab keeps its keys and link sockets beside the runs (lab-emu/)."""
    keep = state_root / "lab-emu" / "links"
    keep.mkdir(parents=True)
    (state_root / "lab-emu" / "id_ed25519").write_text("key")
    old = time.time() - 3600
    os.utime(state_root / "lab-emu", (old, old))
    cleanup.cleanup_stale(state_root, log=lambda m: None)
    assert keep.is_dir() and (state_root / "lab-emu" / "id_ed25519").exists()


def test_a_private_state_root_never_takes_the_systems_live_runs_for_orphans(tmp_path):
    """Issue 38: a process started with OFBENCH_STATE_ROOT set must still see the live runs
    under /run/ofbench: their namespaces are not orphans."""
    import secrets
    while True:
        short = secrets.token_hex(2)
        if f"ofb-{short}-" not in _netns():
            break
    live = cleanup.SYSTEM_STATE_ROOT / f"run-20990101T000000Z-{short}"
    live.mkdir(parents=True)
    ns = f"ofb-{short}-sys"
    try:
        cleanup.write_owner(live, {"pid": os.getpid(),
                                   "start_time": proc_start_time(os.getpid())})
        subprocess.run(["ip", "netns", "add", ns], check=True)
        private = tmp_path / "private-root"
        private.mkdir()
        env = {**os.environ, "OFBENCH_STATE_ROOT": str(private), "PYTHONPATH": str(REPO)}
        out = subprocess.run([sys.executable, "-c", "from drivers.lab import cleanup; "
                              "print(cleanup.STATE_ROOT, cleanup.SYSTEM_STATE_ROOT); "
                              "cleanup.cleanup_stale()"],
                             env=env, cwd=REPO, capture_output=True, text=True, check=True)
        assert out.stdout.split()[:2] == [str(private), "/run/ofbench"], out.stdout
        assert ns in _netns().split(), out.stdout
    finally:
        cleanup.delete_netns(ns)
        import shutil
        shutil.rmtree(live, ignore_errors=True)


def test_an_unreadable_owner_record_is_someone_elses(tmp_path, state_root):
    """Issue 38: an owner.json that does not read (torn, not ours) is never taken for a dead
    run of ours: its processes live on and its folder stays."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        for i, text in enumerate(['{"pid": 12', "[]", '{"pid": "1"}', ""]):
            run = state_root / f"run-20990101T00000{i}Z-c0d{i}"
            run.mkdir()
            (run / "owner.json").write_text(text)
            (run / "pids.jsonl").write_text(json.dumps(
                {"name": "sleeper", "pid": sleeper.pid,
                 "start_time": proc_start_time(sleeper.pid)}) + "\n")
            old = time.time() - 3600
            os.utime(run, (old, old))
        logged = []
        cleanup.cleanup_stale(state_root, log=logged.append)
        assert sleeper.poll() is None
        assert len(list(state_root.iterdir())) == 4
        assert sum("owner.json unreadable" in m for m in logged) == 4
    finally:
        sleeper.kill()
        sleeper.wait()


def test_owner_record_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """owner.json is written to a temporary file and renamed: a writer dying mid-write leaves
    the previous record (or none), never a torn one."""
    cleanup.write_owner(tmp_path, {"pid": 1, "start_time": 2})
    real_fsync = os.fsync

    def die(fd):
        raise KeyboardInterrupt  # the writer dies between write and rename
    monkeypatch.setattr(os, "fsync", die)
    with pytest.raises(KeyboardInterrupt):
        cleanup.write_owner(tmp_path, {"pid": 3, "start_time": 4, "pad": "x" * 100000})
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads((tmp_path / "owner.json").read_text()) == {"pid": 1, "start_time": 2}


def test_only_folders_named_like_a_run_id_are_runs(tmp_path, state_root):
    """A folder under the state root that is not exactly a run id is not cleaned."""
    for name in ("run-mine-beef", "run-20990101T000000Z-beef.bak", "run-x-20990101T000000Z-beef"):
        d = state_root / name
        d.mkdir()
        (d / "keep").write_text("x")
        old = time.time() - 3600
        os.utime(d, (old, old))
    cleanup.cleanup_stale(state_root, log=lambda m: None)
    assert len(list(state_root.iterdir())) == 3


def test_a_lab_takes_only_run_ids_that_cleanup_recognises(tmp_path, state_root):
    from dut.profiles.schema import parse_profile
    from drivers.lab.local import LocalLab
    prof = parse_profile({"schema_version": 1, "lab": {"kind": "local"},
                          "features": ["netns"], "switch": {"kind": "ovs"}}, where="t.yaml")
    for bad in ("run-test-abcd", "run-20990101T000000Z-abcd.influxd", "../run-20990101T000000Z-abcd"):
        with pytest.raises(ValueError, match="run id"):
            LocalLab(prof, bad, tmp_path / "run")
