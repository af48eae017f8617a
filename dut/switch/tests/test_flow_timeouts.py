"""An idle timeout counts from the flow's last packet, never from a time after the agent's
``now`` (OF1.3.5 5.5). The agent reads ``now`` at the top of its loop and expires flows later
in the same pass; a worker forwarding through an idle-timeout flow writes its last_used_ns in
between, so the flow looked younger than ``now``: the unsigned age wrapped to ~2^64 and the
busiest flows were idle-expired within a tick (found with FAUCET's eth_dst flows, idle
timeout 400 s, in the FAUCET pipeline bench: suites/interop/README.md "Findings" 3).

The switch here forwards for real: port 1 is the replay port (src/replay_port.c) handing out one
UDP frame again and again, port 2 a net_null sink; the flow's idle timeout is 30 s and the
test looks after 1.5 s of traffic (15 expiry ticks)."""
from __future__ import annotations

import os
import socket
import struct
import time

import pytest

import openflow as w
from dut.switch import launcher
from dut.switch.tests.switchproc import switch_process
from dut.switch.tests.switchproc import MACS, accept_sync


def udp_dst(port: int) -> bytes:
    return w.match(w.oxm(5, b"\x08\x00"), w.oxm(10, b"\x11"), w.oxm(16, struct.pack("!H", port)))


def udp_frame(port: int) -> bytes:
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, 0, 0, 64, 17, 0, bytes(4), bytes(4))
    return MACS + b"\x08\x00" + ip + struct.pack("!HHHH", 1, port, 26, 0) + bytes(18)


def one_frame_pcap(frame: bytes) -> bytes:
    return (struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
            + struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame)


@pytest.fixture
def fed_switch(tmp_path):
    binary = launcher.builds()["release"] / "dut" / "switch" / "ofswitch"
    if not binary.exists():
        pytest.skip(f"{binary} not built")
    pcap = tmp_path / "udp9.pcap"
    pcap.write_bytes(one_frame_pcap(udp_frame(9)))
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(2)
    prefix = f"ofb-swtimeouts-{os.getpid()}"
    eal = ["-l", "0", "--no-huge", "-m", "256", "--no-pci", "--file-prefix", prefix,
           "--log-level", "lib.eal:error"]
    argv = launcher.switch_argv(binary, eal, [(1, f"replay:{pcap}"), (2, "net_null1,no-rx=1")],
                                controller=("127.0.0.1", listener.getsockname()[1]), dpid=0xB5,
                                idle_sleep_us=50)
    try:
        with switch_process(argv, tmp_path / "ofswitch.log", prefix) as proc:
            yield proc, listener
    finally:
        listener.close()


def test_a_flow_carrying_traffic_is_not_idle_expired(fed_switch):
    proc, listener = fed_switch
    s = accept_sync(listener, proc)
    base = s.flow_stats(0xF5)[1]
    s.send(w.flow_mod(priority=200, match_=udp_dst(9), idle_timeout=30, hard_timeout=60,
                      instructions=w.apply_actions(w.action_output(2)), xid=0x900))
    s.sync()
    time.sleep(1.5)
    assert s.flow_stats(0xF6)[1] == base + 1, "the busy idle-timeout flow was expired"
    s.close()
