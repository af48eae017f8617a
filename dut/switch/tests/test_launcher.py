"""Unit tests of dut/switch/launcher.py's pure parts (argv building, devargs) and the switch's C
test binaries (test_ofswitch_unit: the agent; test_ofswitch_actions: the datapath's rewrites;
test_ofswitch_bounds: the datapath's frame accesses)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from dut.switch import launcher


def test_argv_vdev_ports_and_options():
    argv = launcher.switch_argv("/b/ofswitch", ["-l", "1", "--no-huge"],
                                [(1, "net_af_xdp1,iface=v1"), (2, "net_ring0")],
                                controller=("127.0.0.1", 6653), dpid=0x1a, workers=1,
                                stats_sock="/tmp/s", idle_sleep_us=50)
    sep = argv.index("--")
    assert argv[:3] == ["/b/ofswitch", "-l", "1"]
    assert argv[1:sep].count("--vdev") == 2 and "net_af_xdp1,iface=v1" in argv[1:sep]
    tail = argv[sep + 1:]
    assert tail[tail.index("--dpid") + 1] == "0x1a"
    assert tail[tail.index("--controller") + 1] == "tcp:127.0.0.1:6653"
    assert "1=net_af_xdp1" in tail and "2=net_ring0" in tail
    assert tail[tail.index("--stats-sock") + 1] == "/tmp/s"
    assert tail[tail.index("--idle-sleep-us") + 1] == "50"


def test_argv_pci_and_port_id():
    argv = launcher.switch_argv("b", [], [(1, "0000:3b:00.0"), (2, "1")],
                                controller=("h", 1), dpid=1)
    sep = argv.index("--")
    assert argv[1:sep] == ["-a", "0000:3b:00.0"]
    assert "1=0000:3b:00.0" in argv and "2=1" in argv


def test_argv_replay_port_needs_no_eal_device():
    argv = launcher.switch_argv("b", ["-l", "1"], [(1, "replay:/t/x.pcap,copy=1"),
                                                   (2, "net_null0")],
                                controller=("h", 1), dpid=1)
    sep = argv.index("--")
    assert argv[1:sep] == ["-l", "1", "--vdev", "net_null0"]
    assert "1=replay:/t/x.pcap,copy=1" in argv and "2=net_null0" in argv


def test_argv_vhost_port_is_the_switchs_own():
    argv = launcher.switch_argv("b", ["-l", "1"], [(1, "vhost:/r/g1.sock,client=1")],
                                controller=("h", 1), dpid=1)
    sep = argv.index("--")
    assert argv[1:sep] == ["-l", "1"]  # no --vdev, no -a: librte_vhost, not an EAL device
    assert "1=vhost:/r/g1.sock,client=1" in argv


@pytest.mark.parametrize("ports, why", [
    ([], "at least one port"),
    ([(0, "net_ring0")], "out of 1..254"),
    ([(255, "net_ring0")], "out of 1..254"),
    ([(1, "net_ring0"), (1, "net_ring1")], "given twice"),
    ([(1, ",iface=x")], "empty port devargs"),
])
def test_argv_rejects_bad_ports(ports, why):
    with pytest.raises(ValueError, match=why):
        launcher.switch_argv("b", [], ports, controller=("h", 1), dpid=1)


def test_argv_rejects_bad_lookup_and_workers():
    with pytest.raises(ValueError, match="lookup"):
        launcher.switch_argv("b", [], [(1, "net_ring0")], controller=("h", 1), dpid=1,
                             lookup="nope")
    with pytest.raises(ValueError, match="workers"):
        launcher.switch_argv("b", [], [(1, "net_ring0")], controller=("h", 1), dpid=1,
                             workers=0)


def test_argv_cache_lines():
    argv = launcher.switch_argv("b", [], [(1, "net_ring0")], controller=("h", 1), dpid=1,
                                cache_lines=4096)
    assert argv[argv.index("--cache-lines") + 1] == "4096"
    assert "--cache-lines" not in launcher.switch_argv("b", [], [(1, "net_ring0")],
                                                       controller=("h", 1), dpid=1)
    for bad in (1000, 32):
        with pytest.raises(ValueError, match="power of 2"):
            launcher.switch_argv("b", [], [(1, "net_ring0")], controller=("h", 1), dpid=1,
                                 cache_lines=bad)


def test_build_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv("OFBENCH_BUILD_DIR", str(tmp_path))
    assert launcher.binary_path() == tmp_path / "dut" / "switch" / "ofswitch"


def test_wait_of_connected_times_out_without_socket(tmp_path):
    t = [0.0]
    assert not launcher.wait_of_connected(tmp_path / "none", timeout_s=1.0,
                                          now=lambda: t[0],
                                          sleep=lambda s: t.__setitem__(0, t[0] + s))


@pytest.mark.parametrize("build", ["release", "sanitized"])
@pytest.mark.parametrize("name", ["test_ofswitch_unit", "test_ofswitch_actions",
                                  "test_ofswitch_bounds"])
def test_c_tests(build, name):
    """The switch's C tests, also in the sanitizer build (ASan + UBSan: a report aborts): the
    agent's unit tests (tests/test_unit.c), the datapath's rewrites against the full
    checksum recomputation and a fresh parse (tests/test_actions.c), and no parse or action
    touching a byte past a frame that lies about its headers (tests/test_bounds.c)."""
    binary = launcher.builds()[build] / "dut" / "switch" / name
    if not binary.exists():
        pytest.skip(f"{binary} not built" + (": scripts/build_san.sh" if build == "sanitized"
                                             else ""))
    cp = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert " 0 failures" in cp.stdout, cp.stdout
    assert not launcher.sanitizer_reports(cp.stdout + cp.stderr), cp.stderr[-4000:]


def test_one_lookup_default_for_binary_launcher_and_profile():
    """--lookup: the C binary's default and names (src/ofswitch.h), the launcher's default and
    the profile schema's are one (the launcher owns the names; the schema imports them)."""
    import inspect
    import re
    from dut.profiles import schema
    from dut.switch.launcher import DEFAULT_LOOKUP, LOOKUPS as SWITCH_LOOKUPS
    assert (schema.DEFAULT_LOOKUP, schema.SWITCH_LOOKUPS) == (DEFAULT_LOOKUP, SWITCH_LOOKUPS)
    header = (Path(launcher.__file__).parent / "src" / "ofswitch.h").read_text()
    with_cls = header.split("#ifdef OFS_HAVE_CLASSIFIER", 1)[1].split("#else", 1)[0]
    c_default = re.search(r'#define OFS_LOOKUP_DEFAULT "(\w+)"', with_cls).group(1)
    c_names = re.search(r'#define OFS_LOOKUP_NAMES "([\w|]+)"', with_cls).group(1).split("|")
    assert c_default == DEFAULT_LOOKUP == "tuple"
    assert tuple(c_names) == SWITCH_LOOKUPS
    assert inspect.signature(launcher.switch_argv).parameters["lookup"].default == DEFAULT_LOOKUP
    flowtable = (Path(launcher.__file__).parent / "src" / "flowtable.c").read_text()
    for name in SWITCH_LOOKUPS:  # each name is a backend the binary registers
        assert f'.name = "{name}"' in flowtable, name
    # "trie" runs document 003's hybrid trie, "tuple" the classifier's tuples
    assert re.search(r"cls_create_trie\(.*?OFB_CLS_ALGO_HYBRID", flowtable, re.S)
    assert re.search(r"cls_create_tuple\(.*?OFB_CLS_ALGO_OURS", flowtable, re.S)
    assert re.search(r"cls_create_dtree\(.*?OFB_CLS_ALGO_DTREE", flowtable, re.S)
