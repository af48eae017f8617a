"""The SSH lab against a real sshd in a namespace this test creates (drivers.lab.emulated):
every way a lab can be unusable stops it at open with one message naming the profile key, and
nothing of a run is left on a host after close or after the run died."""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from dut.profiles.schema import parse_profile
from drivers.lab import LabError
from drivers.lab.emulated import EmulatedLab, segment_of
from drivers.lab.base import parse_cores
from drivers.lab.remote import RemoteLab
from paths import REPO

pytestmark = pytest.mark.skipif(not Path("/usr/sbin/sshd").exists(),
                                reason="openssh-server missing (make setup installs it)")
ADDR = "198.18.7.2"   # a segment of its own: never the one of dut/profiles/lab-emu.yaml


def _profile(tmp, **over):
    host = {"address": ADDR, "key_file": str(tmp / "keys" / "id"), "workdir": str(tmp / "wd")}
    host.update(over.pop("host", {}))
    lab = {"kind": "remote", "hosts": {"switch": host}, "known_hosts": str(tmp / "keys" / "kh"),
           "state_dir": str(tmp / "hoststate")}
    lab.update(over.pop("lab", {}))
    switch = {"kind": "ofbench", "host": "switch", **over.pop("switch", {})}
    gen = {"kind": "softgen", "host": "switch"}
    return parse_profile({"schema_version": 1, "lab": lab, "switch": switch, "generator": gen,
                          **over},
                         where="emu-test.yaml", path=tmp / "emu-test.yaml")


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("emu")
    run_id = f"run-20990101T000000Z-{os.getpid() % 0xffff:04x}"
    lab = EmulatedLab(_profile(tmp, lab={"emulated": True}), run_id).up()
    # the lab's key and known_hosts live in its run's state folder; the plain SSH profiles of
    # these tests name copies of them
    (tmp / "keys").mkdir(exist_ok=True)
    shutil.copy(lab.key_file, tmp / "keys" / "id")
    shutil.copy(lab.known_hosts, tmp / "keys" / "kh")
    yield tmp, lab
    lab.down()
    assert not [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                            text=True).stdout.split() if run_id[-4:] in ns]


def _open(profile, run="run-20990101T000001Z-aaa1", tmp=None):
    return RemoteLab(profile, run, tmp / "run", deploy=False)


def test_segment_rules_name_the_key():
    with pytest.raises(LabError, match=r"x.yaml: lab.hosts.a.address: 198.18.0.1 is the "
                                       r"segment's .1"):
        segment_of({"a": {"address": "198.18.0.1"}}, "x.yaml")
    with pytest.raises(LabError, match="share one /24"):
        segment_of({"a": {"address": "198.18.0.2"}, "b": {"address": "198.18.1.2"}}, "x.yaml")
    with pytest.raises(LabError, match="benchmarking range"):
        segment_of({"a": {"address": "10.0.0.2"}}, "x.yaml")
    assert parse_cores("0-2,5") == [0, 1, 2, 5]


def test_processes_run_and_nothing_is_left_after_close(emu):
    tmp, _ = emu
    lab = _open(_profile(tmp), tmp=tmp)
    h = lab.host("switch")
    assert h.facts["cpus"] and "boot_id" in h.facts
    p = h.start("echoer", ["sh", "-c", "echo hello-from-host; sleep 60"], cwd="/")
    assert p.alive() and "hello-from-host" in p.log_path.read_text()
    state = h.state_dir
    lab.close()
    assert not Path(state).exists()
    assert subprocess.run(["kill", "-0", str(p.pid)], capture_output=True).returncode != 0


def test_a_dead_runs_leftovers_on_the_host_are_removed_at_open(emu):
    tmp, _ = emu
    lab = _open(_profile(tmp), "run-20990101T000002Z-dea1", tmp)
    h = lab.host("switch")
    p = h.start("orphan", ["sleep", "300"], cwd="/")
    dpdk = Path("/var/run/dpdk/ofbdea1x")
    dpdk.mkdir(parents=True, exist_ok=True)
    # the run dies without closing: its owner pid becomes one that is not alive
    owner = Path(h.state_dir) / "owner.json"
    rec = json.loads(owner.read_text())
    owner.write_text(json.dumps({**rec, "pid": 999_999_999}))
    h.procs.clear()
    h.close()
    lab2 = _open(_profile(tmp), "run-20990101T000003Z-bee2", tmp)
    try:
        assert any("stale run run-20990101T000002Z-dea1" in w for w in lab2.warnings), lab2.warnings
        assert not dpdk.exists()
        deadline = time.monotonic() + 5
        while subprocess.run(["kill", "-0", str(p.pid)], capture_output=True).returncode == 0:
            assert time.monotonic() < deadline, "the dead run's process survived"
            time.sleep(0.1)
    finally:
        lab2.close()


def test_a_connection_made_on_the_host_arrives_here(emu):
    """listen_here: a process on the host connects to its own loopback and this side talks to
    it (SSH remote forwarding: how a controller on this box reaches a switch on the host)."""
    tmp, _ = emu
    lab = _open(_profile(tmp), tmp=tmp)
    try:
        h = lab.host("switch")
        ls = h.listen_here()
        proc = h.start("client", cwd="/", argv=["python3", "-c",
                                  "import socket,sys; s=socket.create_connection(('127.0.0.1',"
                                  f"{ls.port})); s.sendall(b'hello'); print(s.recv(5).decode())"])
        conn = ls.accept(10)
        got = b""
        while len(got) < 5:
            got += conn.recv(5 - len(got))
        assert got == b"hello"
        conn.sendall(b"world")
        assert proc.wait(10) == 0
        assert "world" in proc.log_path.read_text()
        conn.close()
        ls.close()
        with pytest.raises(TimeoutError, match="nothing on switch connected"):
            h.listen_here().accept(0.2)
    finally:
        lab.close()


def test_cores_the_host_lacks_are_named(emu):
    tmp, _ = emu
    with pytest.raises(LabError, match=r"emu-test.yaml: switch.cores: '0-4095' names core"):
        _open(_profile(tmp, switch={"cores": "0-4095"}), tmp=tmp)


def test_a_pci_address_not_on_the_host_is_named(emu):
    tmp, _ = emu
    with pytest.raises(LabError, match=r"switch.ports.p1.pci: 0000:99:1f.7 is not a PCI device"):
        _open(_profile(tmp, switch={"ports": {"p1": {"pci": "0000:99:1f.7"}}}), tmp=tmp)


def test_a_conformance_cable_not_on_the_host_is_named(emu):
    tmp, _ = emu
    conf = {"tester_host": "switch", "links": [{"tester": "lo", "switch": "lo"},
                                               {"tester": "lo2", "switch": "nocable2"},
                                               {"tester": "lo3", "switch": "nocable3"}]}
    with pytest.raises(LabError, match=r"conformance.links\[1\].tester: 'lo2' is not a "
                                       r"network interface on switch \(198.18.7.2\)"):
        _open(_profile(tmp, conformance=conf), tmp=tmp)


def test_authentication_failure_names_the_key_file(emu):
    tmp, _ = emu
    other = tmp / "other_key"
    if not other.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)],
                       check=True)
    with pytest.raises(LabError, match=r"lab.hosts.switch.key_file: SSH authentication as "
                                       r"root@198.18.7.2 failed"):
        _open(_profile(tmp, host={"key_file": str(other)}), tmp=tmp)


def test_an_unknown_host_key_is_refused_not_accepted(emu):
    tmp, _ = emu
    empty = tmp / "empty_known_hosts"
    empty.write_text("")
    with pytest.raises(LabError, match=r"emu-test.yaml: lab.known_hosts: SSH to 198.18.7.2 "
                                       r"refused"):
        _open(_profile(tmp, lab={"known_hosts": str(empty)}), tmp=tmp)


# ---- rsync --delete only into a workdir that carries ofbench's marker (issue 38 part 3) ------

def test_a_missing_workdir_is_marked_then_synced_and_the_marker_survives_delete(emu):
    from drivers.lab.remote import WORKDIR_MARKER
    tmp, _ = emu
    wd = tmp / "wd-new" / "ofbench"
    repo = tmp / "fake-repo"
    (repo / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    (repo / "README.md").write_text("tree\n")
    lab = _open(_profile(tmp, host={"workdir": str(wd)}), "run-20990101T000004Z-aaa4", tmp)
    try:
        h = lab.host("switch")
        h.sync_tree(repo)
        assert (wd / WORKDIR_MARKER).is_file() and (wd / "README.md").read_text() == "tree\n"
        assert "ofbench workdir" in (wd / WORKDIR_MARKER).read_text()
        (wd / "stale-file").write_text("from an older tree\n")
        h.sync_tree(repo)   # marked: --delete runs, removes what the tree no longer has
        assert not (wd / "stale-file").exists() and (wd / WORKDIR_MARKER).is_file()
    finally:
        lab.close()


def test_a_non_empty_workdir_without_the_marker_stops_and_nothing_is_deleted(emu):
    tmp, _ = emu
    wd = tmp / "someones-dir"
    wd.mkdir(exist_ok=True)
    (wd / "precious.txt").write_text("keep me\n")
    repo = tmp / "fake-repo2"
    (repo / ".venv").mkdir(parents=True, exist_ok=True)
    lab = _open(_profile(tmp, host={"workdir": str(wd)}), "run-20990101T000005Z-aaa5", tmp)
    try:
        with pytest.raises(LabError, match=rf"emu-test.yaml: lab.hosts.switch.workdir: {wd} is "
                                           r"not empty and has no ofbench marker .*precious.txt"):
            lab.host("switch").sync_tree(repo)
        assert (wd / "precious.txt").read_text() == "keep me\n"
        assert sorted(p.name for p in wd.iterdir()) == ["precious.txt"]
    finally:
        lab.close()


@pytest.mark.timeout(180)
def test_a_run_on_a_workdir_without_the_marker_exits_4_naming_the_key(tmp_path):
    """The whole harness: the emulated lab comes up, opening it stops at the workdir."""
    import sys
    import yaml
    repo = REPO
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "precious.txt").write_text("keep me\n")
    prof = tmp_path / "emu-marker.yaml"
    prof.write_text(yaml.safe_dump({
        "schema_version": 1,
        "lab": {"kind": "remote", "emulated": True, "known_hosts": str(tmp_path / "kh"),
                "state_dir": str(tmp_path / "hoststate"),
                "hosts": {"switch": {"address": "198.18.9.2", "workdir": str(wd),
                                     "key_file": str(tmp_path / "id")}}},
        "switch": {"kind": "ofbench", "host": "switch"},
        "generator": {"kind": "softgen", "host": "switch"}}))
    cp = subprocess.run([sys.executable, "-m", "pytest", "suites/smoke/test_links.py",
                         f"--dut={prof}", f"--reports-dir={tmp_path / 'reports'}", "-q"],
                        cwd=repo, capture_output=True, text=True, timeout=170)
    out = cp.stdout + cp.stderr
    assert cp.returncode == 4, out[-3000:]
    assert f"emu-marker.yaml: lab.hosts.switch.workdir: {wd} is not empty and has no ofbench " \
           f"marker" in out, out[-3000:]
    assert sorted(p.name for p in wd.iterdir()) == ["precious.txt"]


def test_an_emulated_lab_never_touches_key_files_the_profile_names(tmp_path):
    """Issue 38: an emulated profile copied from a hardware lab names that lab's key
    (~/.ssh/ofbench_lab) and known_hosts; the emulated lab makes its own in its run's state
    folder and neither rewrites nor deletes the named files."""
    keys = tmp_path / "dot-ssh"
    keys.mkdir()
    precious = {keys / "ofbench_lab": "PRIVATE KEY of lab1\n",
                keys / "ofbench_lab.pub": "ssh-ed25519 AAAA lab1\n",
                keys / "known_hosts": "192.0.2.10 ssh-ed25519 AAAA\n"}
    for p, text in precious.items():
        p.write_text(text)
    prof = _profile(tmp_path, host={"address": "198.18.9.2", "key_file": str(keys / "ofbench_lab")},
                    lab={"emulated": True, "known_hosts": str(keys / "known_hosts")})
    # through the SSH lab, as a run opens it: the hosts are reached with the lab's own key
    remote = _open(prof, f"run-20990101T000009Z-{(os.getpid() + 7) % 0xffff:04x}", tmp_path)
    lab = remote.emulation
    try:
        assert lab.key_file.parent == lab.state_dir and lab.key_file.is_file()
        assert lab.known_hosts.parent == lab.state_dir and "198.18.9.2" in lab.known_hosts.read_text()
        assert remote.known_hosts == str(lab.known_hosts)
        assert remote.host("switch").run(["echo", "reached"]).stdout.strip() == "reached"
        assert str(lab.key_file) in remote.host("switch").ssh_command()
        assert {p: p.read_text() for p in precious} == precious
    finally:
        remote.close()
    assert {p: p.read_text() for p in precious} == precious
    assert not lab.state_dir.exists()


def test_an_unreadable_owner_record_on_a_host_is_left_alone(emu):
    """Issue 38: a host's run folder whose owner.json does not read is not taken for a dead
    run of this machine: its processes and folder stay (with a warning)."""
    tmp, _ = emu
    lab = _open(_profile(tmp), "run-20990101T000004Z-dea4", tmp)
    h = lab.host("switch")
    p = h.start("bystander", ["sleep", "300"], cwd="/")
    state = Path(h.state_dir)
    (state / "owner.json").write_text('{"controller": "x", "pid": 4')   # torn
    h.procs.clear()
    if getattr(lab, "testbed_lock", None) is not None:
        lab.testbed_lock.release()   # the testbed lock is not what this test is about
    h.close()
    try:
        lab2 = _open(_profile(tmp), "run-20990101T000005Z-bee5", tmp)
        try:
            assert any("run-20990101T000004Z-dea4" in w and "owner.json unreadable" in w
                       for w in lab2.warnings), lab2.warnings
            assert state.is_dir()
            assert subprocess.run(["kill", "-0", str(p.pid)], capture_output=True).returncode == 0
        finally:
            lab2.close()
    finally:
        subprocess.run(["kill", "-KILL", str(p.pid)], capture_output=True)
        shutil.rmtree(state.parent, ignore_errors=True)
