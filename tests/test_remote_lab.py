import pytest

from dut.profiles.schema import parse_profile
from drivers.lab.local import LabError, LocalLab
from drivers.lab.remote import RemoteLab


def test_unreachable_lab_host_is_named(tmp_path):
    # A loopback port nobody listens on: refused at once, nothing leaves this box.
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
    prof = parse_profile({"schema_version": 1,
                          "lab": {"kind": "remote", "hosts": {
                              "switch": {"address": "127.0.0.1", "ssh_port": closed_port}}},
                          "switch": {"kind": "ofbench"}}, where="mylab.yaml",
                         path=tmp_path / "mylab.yaml")
    with pytest.raises(LabError, match=rf"mylab.yaml: lab.hosts.switch: 127.0.0.1:{closed_port} "
                                       r"unreachable"):
        RemoteLab(prof, "run-x-0000", tmp_path)


def test_interface_names_respect_the_kernel_limit(tmp_path, monkeypatch):
    import drivers.lab.local as local
    monkeypatch.setattr(local, "STATE_ROOT", tmp_path)
    prof = parse_profile({"schema_version": 1, "lab": {"kind": "local"},
                          "switch": {"kind": "ovs"}}, where="t.yaml")
    lab = LocalLab(prof, "run-20990101T000000Z-abcd", tmp_path / "run")
    try:
        assert lab.ifname("sw1") == "oabcdsw1"
        with pytest.raises(LabError, match="longer than 15"):
            lab.ifname("averyverylongtag")
        assert "--no-huge" in lab.eal_args("x")  # profile has no hugepages feature
        assert lab.eal_args("x")[lab.eal_args("x").index("--file-prefix") + 1] == "ofbabcdx"
    finally:
        lab.close()


def test_workdir_action_decides_where_rsync_delete_may_go():
    from drivers.lab.remote import WORKDIR_MARKER, workdir_action
    key = "lab1.yaml: lab.hosts.switch.workdir"
    assert workdir_action({"exists": False}, key, "/opt/ofbench") == "mark"
    assert workdir_action({"exists": True, "is_dir": True, "entries": []}, key, "/opt/x") == "mark"
    assert workdir_action({"exists": True, "is_dir": True, "marker": True,
                           "entries": [WORKDIR_MARKER, "dut"], "count": 2}, key, "/o/x") == "sync"
    with pytest.raises(LabError, match=r"^lab1.yaml: lab.hosts.switch.workdir: /opt/data is not "
                                       r"empty and has no ofbench marker \(.ofbench-workdir\); "
                                       r"rsync --delete would remove what it holds \(a, b, c, d, "
                                       r"e, ...\).*touch /opt/data/.ofbench-workdir"):
        workdir_action({"exists": True, "is_dir": True, "entries": list("abcdefgh"),
                        "count": 40}, key, "/opt/data")
    with pytest.raises(LabError, match=r"workdir: /opt/f exists on the host and is not a folder"):
        workdir_action({"exists": True, "is_dir": False}, key, "/opt/f")
    # an emulated lab's cache tree from before the marker: adopted only when asked and a tree
    tree = {"exists": True, "is_dir": True, "entries": [".venv", "harness"], "count": 9,
            "ofbench_tree": True}
    assert workdir_action(tree, key, "/var/cache/ofbench/lab-emu/sw", adopt_tree=True) == "adopt"
    with pytest.raises(LabError, match="no ofbench marker"):
        workdir_action(tree, key, "/var/cache/ofbench/lab-emu/sw")
    with pytest.raises(LabError, match="no ofbench marker"):
        workdir_action({**tree, "ofbench_tree": False}, key, "/x/y", adopt_tree=True)


def test_stop_never_signals_a_process_whose_start_time_differs(tmp_path):
    """The stop script run on a host: with the wrong start time (a reused pid) nothing is
    signalled, neither TERM nor KILL; with the right one the group is stopped."""
    import subprocess
    import time
    from drivers.lab.remote import stop_script
    from drivers.supervisor import proc_start_time
    p = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        st = proc_start_time(p.pid)
        subprocess.run(["sh", "-c", stop_script(p.pid, st + 1, 0.2)], check=True, timeout=10)
        subprocess.run(["sh", "-c", stop_script(p.pid, None, 0.2)], check=True, timeout=10)
        time.sleep(0.1)
        assert p.poll() is None, "a process whose start time did not match was signalled"
        subprocess.run(["sh", "-c", stop_script(p.pid, st, 2)], check=True, timeout=10)
        assert p.wait(5) == -15  # TERM was enough
    finally:
        p.kill()
        p.wait()


def test_names_that_reach_a_host_shell_are_checked():
    from drivers.lab.base import check_name
    for good in ("links-sw", "t0-trex", "flowmod.ofbench_client", "a+b"):
        assert check_name(good) == good
    for bad in ("-x", "a b", "a;id", "a/b", ".hidden", "x$(id)", 'q"', "", "a\nb"):
        with pytest.raises(ValueError, match=r"bad process name"):
            check_name(bad, "process name")


def test_a_process_record_on_the_host_is_valid_json_for_any_allowed_name(tmp_path):
    """RemoteHost.start's command run by a local shell (the SSH channel replaced): the name
    is passed to printf as an argument, the record is JSON, the process runs in its session."""
    import json
    import time
    import types
    from drivers.lab.remote import RemoteHost

    class LocalShellHost(RemoteHost):
        def run(self, argv, *, check=True, timeout=30.0, input=None):
            import shlex
            import subprocess
            cmd = argv if isinstance(argv, str) else " ".join(shlex.quote(str(a)) for a in argv)
            return subprocess.run(["sh", "-c", cmd], capture_output=True, text=True,
                                  timeout=timeout, check=check)

    lab = types.SimpleNamespace(state_root=str(tmp_path / "state"), run_id="run-x-0000",
                                log_dir=str(tmp_path / "logs"), where="t.yaml", warnings=[])
    h = LocalShellHost(lab, "switch", {"address": "127.0.0.1", "workdir": str(tmp_path)})
    p = h.start("odd.name+1", ["sleep", "30"], cwd=str(tmp_path))
    try:
        (rec,) = [json.loads(line) for line in
                  (h.state_dir / "pids.jsonl").read_text().splitlines()]
        assert rec == {"name": "odd.name+1", "pid": p.pid, "start_time": p.start_time}
        with pytest.raises(ValueError, match="bad process name"):
            h.start('x"; touch pwned; "', ["true"], cwd=str(tmp_path))
    finally:
        h.stop(p, timeout_s=1)
    deadline = time.monotonic() + 5
    while h.alive(p):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not (tmp_path / "pwned").exists()


def test_the_host_side_workdir_snippet_marks_only_an_empty_folder(tmp_path):
    """hostside.WORKDIR run by this box's python3, as a host runs it."""
    import json
    import subprocess
    import sys
    from drivers.lab import hostside
    from drivers.lab.remote import WORKDIR_MARKER

    def snippet(wd, *more):
        return subprocess.run([sys.executable, "-c", hostside.WORKDIR, str(wd), WORKDIR_MARKER,
                               *more], capture_output=True, text=True, timeout=30)
    new = tmp_path / "a" / "b"
    assert json.loads(snippet(new).stdout) == {"exists": False, "is_dir": False,
                                               "marker": False, "entries": []}
    st = json.loads(snippet(new, "mark", "ofbench workdir\n").stdout)
    assert st["marker"] and (new / WORKDIR_MARKER).read_text() == "ofbench workdir\n"
    full = tmp_path / "full"
    (full / "harness").mkdir(parents=True)
    (full / ".venv").mkdir()
    (full / "harness" / "plugin.py").write_text("")
    cp = snippet(full, "mark", "x")
    assert cp.returncode != 0 and "no longer empty" in cp.stderr
    assert not (full / WORKDIR_MARKER).exists()
    st = json.loads(snippet(full).stdout)
    assert st["ofbench_tree"] and not st["marker"] and st["count"] == 2
    assert json.loads(snippet(full, "adopt", "x").stdout)["marker"]
