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
