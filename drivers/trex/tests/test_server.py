"""The TRex server's config and RPC probe (pure parts; the real server: test_trex_real.py)."""
import json
import socket
import struct
import threading

import pytest
import yaml

from drivers.trex.server import (TrexCores, TrexServerError, config_yaml, find_runtime, memif_vdev, rpc_call,
                                 server_argv, server_version, trex_config)


def test_config_for_two_memif_ports_in_low_end_mode():
    ifs = [memif_vdev(0, "server", "/run/x/a.sock"), memif_vdev(1, "client", "/run/x/a.sock")]
    cfg = trex_config(ifs, prefix="ofbabcdtrex", rpc_port=4601, pub_port=4600,
                      cores=TrexCores(low_end=True, low_end_core=1), limit_memory_mb=256)
    assert cfg["interfaces"] == ["--vdev=net_memif0,id=0,role=server,socket=/run/x/a.sock,socket-abstract=no",
                                 "--vdev=net_memif1,id=0,role=client,socket=/run/x/a.sock,socket-abstract=no"]
    assert (cfg["port_limit"], cfg["version"], cfg["prefix"]) == (2, 2, "ofbabcdtrex")
    assert (cfg["zmq_rpc_port"], cfg["zmq_pub_port"], cfg["limit_memory"]) == (4601, 4600, 256)
    assert (cfg["low_end"], cfg["low_end_core"]) == (True, 1) and "platform" not in cfg
    # L2 mode, each port sends to its pair's MAC: no ARP needed through a switch
    assert cfg["port_info"][0]["dest_mac"] == cfg["port_info"][1]["src_mac"]
    assert cfg["port_info"][1]["dest_mac"] == cfg["port_info"][0]["src_mac"]
    # TRex reads the first element of a YAML list
    assert yaml.safe_load(config_yaml(cfg)) == [cfg]


def test_config_normal_mode_and_bad_input():
    ifs = [memif_vdev(0, "server", "/s"), memif_vdev(1, "server", "/t")]
    cfg = trex_config(ifs, prefix="p", rpc_port=1, pub_port=2, cores=TrexCores(low_end=False, master=0, rx=1, dp=(2, 3)))
    assert cfg["c"] == 2 and cfg["platform"] == {"master_thread_id": 0, "rx_thread_id": 1,
                                                  "dual_if": [{"socket": 0, "threads": [2, 3]}]}
    assert "low_end" not in cfg
    with pytest.raises(TrexServerError, match="distinct CPUs"):
        trex_config(ifs, prefix="p", rpc_port=1, pub_port=2, cores=TrexCores(low_end=False, master=0, rx=1, dp=(1,)))
    assert trex_config([ifs[0], "dummy"], prefix="p", rpc_port=1, pub_port=2)["interfaces"][1] == "dummy"
    with pytest.raises(TrexServerError, match="even number of ports"):
        trex_config(ifs[:1], prefix="p", rpc_port=1, pub_port=2)
    with pytest.raises(TrexServerError, match="role"):
        memif_vdev(0, "master", "/s")


def test_argv_runs_from_the_runtime_dir():
    assert server_argv("/run/c.yaml") == ["./_t-rex-64", "-i", "--cfg", "/run/c.yaml", "--no-scapy-server",
                                          "--no-termio"]
    assert server_argv("/run/c.yaml", watchdog=False)[-1] == "--no-watchdog"


def test_find_runtime_says_why(tmp_path):
    rt, why = find_runtime(repo=tmp_path, env={"OFBENCH_TREX_CACHE": str(tmp_path / "cache")})
    assert rt is None and "not built" in why and "make setup" in why
    d = tmp_path / "rt"
    for f in ("_t-rex-64", "so/x86_64/libbpf-64.so", "so/x86_64/libzmq.so.5", "ofbench-trex.json"):
        (d / f).parent.mkdir(parents=True, exist_ok=True)
        (d / f).write_text("{}")
    assert find_runtime(repo=tmp_path, env={"OFBENCH_TREX_DIR": str(d)}) == (d.resolve(), "")


def _fake_zmtp_rep(reply: dict):
    """A ZMTP 3.0 REP peer answering one request: checks rpc_call's framing."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    got = {}

    def serve():
        c, _ = srv.accept()
        with c:
            greet = c.recv(64, socket.MSG_WAITALL)
            got["greeting"] = greet
            c.sendall(b"\xff" + b"\0" * 8 + b"\x7f\x03\x01" + b"NULL".ljust(20, b"\0") + b"\0" * 32)
            flags, size = c.recv(2, socket.MSG_WAITALL)
            got["ready"] = c.recv(size, socket.MSG_WAITALL)
            body = b"\x05READY\x0bSocket-Type" + struct.pack("!I", 3) + b"REP"
            c.sendall(bytes([4, len(body)]) + body)
            assert c.recv(2, socket.MSG_WAITALL) == b"\x01\x00"  # REQ's empty delimiter
            flags, size = c.recv(2, socket.MSG_WAITALL)
            got["request"] = json.loads(c.recv(size, socket.MSG_WAITALL))
            out = json.dumps(reply).encode()
            c.sendall(b"\x01\x00" + bytes([2]) + struct.pack("!Q", len(out)) + out)
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1], got


def test_rpc_call_speaks_zmtp3_req():
    port, got = _fake_zmtp_rep({"jsonrpc": "2.0", "id": 1, "result": {"version": "v3.08", "pad": "x" * 300}})
    reply = rpc_call("127.0.0.1", port, "get_version")
    assert reply["result"]["version"] == "v3.08"
    assert got["greeting"][:11] == b"\xff" + b"\0" * 8 + b"\x7f\x03" and got["greeting"][12:16] == b"NULL"
    assert b"Socket-Type" in got["ready"] and got["ready"].endswith(b"REQ")
    assert got["request"]["method"] == "get_version"


def test_server_version_is_none_when_nothing_listens():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert server_version("127.0.0.1", port, timeout_s=0.5) is None


def test_cores_from_profile():
    from drivers.trex.server import cores_from_profile
    assert cores_from_profile({"low_end": True, "cores": "1"}) == TrexCores(low_end=True, low_end_core=1)
    assert cores_from_profile({}, cpus=2) == TrexCores(low_end=True, low_end_core=1)
    assert cores_from_profile({}, cpus=8) == TrexCores(low_end=False, master=0, rx=1, dp=(2,))
    assert cores_from_profile({"low_end": False, "cores": "3,4,5,6"}) == TrexCores(False, 1, 3, 4, (5, 6))
    for bad, msg in (({"low_end": True, "cores": "1,2"}, "one CPU"), ({"low_end": False, "cores": "0,1"}, "master"),
                     ({"low_end": False, "cores": "0,1,1"}, "distinct"), ({"cores": "x"}, "comma-separated")):
        with pytest.raises(TrexServerError, match=msg):
            cores_from_profile(bad, cpus=8)


def test_a_hardware_labs_pci_ports_are_not_vdevs():
    cfg = trex_config(["0000:04:00.0", "04:00.1"], prefix="p", rpc_port=1, pub_port=2)
    assert cfg["interfaces"] == ["0000:04:00.0", "04:00.1"]
