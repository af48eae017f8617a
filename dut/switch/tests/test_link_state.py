"""PORT_STATUS when the link of a kernel-backed port goes down and up (suites/interop finding
1). DPDK 22.11's af_packet and af_xdp PMDs report their link up whatever the interface's
carrier; the switch now reads the kernel interface's state (its devargs' iface=) in the agent's
periodic link check and sends PORT_STATUS (OFPPR_MODIFY) with OFPPS_LINK_DOWN set, then
cleared, and PORT_DESC says the same.

The switch's port 1 is an af_packet (or af_xdp) port on one end of a veth pair whose peer sits in a network
namespace the test creates; `ip link set <peer> down` takes the carrier away from the switch's
end. Port 2 is net_null (no rx)."""
from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import time

import pytest

from dut.switch import launcher
from dut.switch.tests.switchproc import switch_process
import openflow as w

OFPPR_MODIFY = 2
OFPPS_LINK_DOWN = 1
OFPMP_PORT_DESC = 13


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@pytest.fixture
def veth():
    """(switch end in this namespace, peer in a namespace of its own, that namespace)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 (a veth pair and a network namespace)")
    tag = f"{os.getpid() % 10**7}"
    ns, end, peer = f"ofbx-swlink-{tag}", f"ofbl{tag}a", f"ofbl{tag}b"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "link", "add", end, "type", "veth", "peer", "name", peer, "netns", ns)
        sh("ip", "link", "set", end, "up")
        sh("ip", "-n", ns, "link", "set", peer, "up")
        yield end, peer, ns
    finally:
        subprocess.run(["ip", "link", "del", end], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


@pytest.fixture(params=["af_packet", "af_xdp"])
def switch(veth, tmp_path, request):
    binary = launcher.binary_path()
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    end, peer, ns = veth
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(2)
    prefix = f"ofb-swlink-{os.getpid()}"
    eal = ["-l", "0", "--no-huge", "-m", "256", "--no-pci", "--file-prefix", prefix,
           "--log-level", "lib.eal:error"]
    argv = launcher.switch_argv(binary, eal, [(1, f"net_{request.param}{os.getpid()},iface={end}"),
                                              (2, "net_null0,no-rx=1")],
                                controller=("127.0.0.1", listener.getsockname()[1]), dpid=0xB1,
                                stats_sock=tmp_path / "stats", idle_sleep_us=50)
    try:
        with switch_process(argv, tmp_path / "ofswitch.log", prefix) as proc:
            yield proc, listener, tmp_path, peer, ns
    finally:
        listener.close()


def port_status(s: w.SyncSession) -> tuple[int, int, int]:
    """(reason, port_no, state) of the next PORT_STATUS."""
    m = bytes(s.wait(w.PORT_STATUS, timeout_s=5.0))
    reason, = struct.unpack_from("!B", m, 8)
    port_no, = struct.unpack_from("!I", m, 16)
    state, = struct.unpack_from("!I", m, 16 + 36)
    return reason, port_no, state


def desc_state(s: w.SyncSession, port: int, xid: int) -> int:
    s.send(w.multipart(OFPMP_PORT_DESC, b"", xid))
    m = bytes(s.wait(w.MULTIPART_REPLY, xid, timeout_s=5.0))
    for off in range(16, len(m), 64):
        if struct.unpack_from("!I", m, off)[0] == port:
            return struct.unpack_from("!I", m, off + 36)[0]
    raise AssertionError(f"port {port} not in PORT_DESC")


def test_port_status_when_a_kernel_port_loses_and_regains_its_link(switch):
    proc, listener, tmp, peer, ns = switch
    listener.settimeout(15)
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        raise AssertionError("switch did not connect: "
                             + (tmp / "ofswitch.log").read_text(errors="replace")[-2000:])
    s = w.SyncSession(conn)
    s.handshake()
    assert not desc_state(s, 1, 0x10) & OFPPS_LINK_DOWN, "port 1 down at the start"
    sh("ip", "-n", ns, "link", "set", peer, "down")
    t0 = time.monotonic()
    assert port_status(s) == (OFPPR_MODIFY, 1, OFPPS_LINK_DOWN), "no PORT_STATUS link down"
    assert desc_state(s, 1, 0x11) & OFPPS_LINK_DOWN, "PORT_DESC: port 1 still up"
    assert desc_state(s, 2, 0x12) & OFPPS_LINK_DOWN == 0, "the null port went down"
    sh("ip", "-n", ns, "link", "set", peer, "up")
    reason, port, state = port_status(s)
    assert (reason, port) == (OFPPR_MODIFY, 1) and not state & OFPPS_LINK_DOWN, \
        f"no PORT_STATUS link up (state {state:#x})"
    assert not desc_state(s, 1, 0x13) & OFPPS_LINK_DOWN, "PORT_DESC: port 1 still down"
    assert time.monotonic() - t0 < 10
    s.close()
    assert proc.poll() is None, (tmp / "ofswitch.log").read_text(errors="replace")[-2000:]
