"""Fuzz the switch's OpenFlow agent: >= 10k random and mutated messages, then check the switch
still answers ECHO and still forwards.

No lab and no network namespace: the switch runs with two DPDK ring ports (net_ring: what a
port transmits comes back on its own rx), and this test is the controller on a free loopback
port. Forwarding is checked through OpenFlow only: flow in_port=1 -> output:2, PACKET_OUT to
port 1 (which loops back into port 1), then port 2's tx counter must grow.
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import time

import pytest

from dut.switch import launcher
from dut.switch.tests.switchproc import accept, switch_process
import openflow as w

N_MESSAGES = 12000
SEED = 4242


def _corpus() -> list[bytes]:
    """Valid messages of every kind the agent handles; mutations start from these."""
    eth_ip = w.oxm(5, b"\x08\x00")
    tcp = w.match(eth_ip, w.oxm(10, b"\x06"), w.oxm(14, b"\x00\x50"))
    masked = w.match(w.oxm(3, b"\x22" * 6, b"\xff\xff\xff\x00\x00\x00"))
    set_field = struct.pack("!HH", 25, 16) + w.oxm(12, b"\x0a\x00\x00\x01") + b"\0" * 4
    push_vlan = struct.pack("!HHH2x", 17, 8, 0x8100)
    goto = struct.pack("!HHB3x", 1, 8, 1)
    wmd = struct.pack("!HH4xQQ", 2, 24, 5, 0xFF)
    meter_inst = struct.pack("!HHI", 6, 8, 1)
    bucket = struct.pack("!HHII4x", 32, 0, w.OFPP_ANY, w.OFPG_ANY) + w.action_output(2)
    frame = b"\x22" * 6 + b"\x11" * 6 + b"\x08\x00" + bytes(46)
    return [
        w.msg(w.HELLO, struct.pack("!HHI", 1, 8, 1 << 4)),
        w.msg(w.ECHO_REQUEST, b"x" * 16),
        w.msg(w.FEATURES_REQUEST),
        w.msg(7), w.msg(9, struct.pack("!HH", 0, 128)), w.msg(w.BARRIER_REQUEST),
        w.flow_mod(match_=tcp, instructions=w.apply_actions(w.action_output(2))),
        w.flow_mod(match_=masked, instructions=w.apply_actions(push_vlan, set_field,
                                                                 w.action_output(1))),
        w.flow_mod(table=0, instructions=goto + wmd, priority=1),
        w.flow_mod(command=3, table=0xFF),
        w.flow_mod(command=4, match_=tcp),
        w.flow_mod(instructions=meter_inst + w.apply_actions(w.action_output(2))),
        w.msg(w.GROUP_MOD, struct.pack("!HBxI", 0, 0, 7) + bucket),
        w.msg(w.GROUP_MOD, struct.pack("!HBxI", 2, 0, 0xFFFFFFFC)),
        w.msg(w.METER_MOD, struct.pack("!HHI", 0, 2, 1) + struct.pack("!HHII4x", 1, 16, 100, 0)),
        w.msg(w.METER_MOD, struct.pack("!HHI", 2, 0, 0xFFFFFFFF)),
        *[w.multipart(t) for t in (0, 3, 8, 11, 12, 13)],
        w.multipart(1, struct.pack("!B3xII4xQQ", 0xFF, w.OFPP_ANY, w.OFPG_ANY, 0, 0) + w.match()),
        w.multipart(2, struct.pack("!B3xII4xQQ", 0xFF, w.OFPP_ANY, w.OFPG_ANY, 0, 0) + w.match()),
        w.port_stats_request(), w.multipart(6, struct.pack("!I4x", 0xFFFFFFFC)),
        w.multipart(7), w.multipart(9, struct.pack("!I4x", 0xFFFFFFFF)),
        w.multipart(10, struct.pack("!I4x", 0xFFFFFFFF)),
        w.packet_out(frame, w.action_output(2)),
        w.msg(24, struct.pack("!I4xQ", 2, 1)), w.msg(26), w.msg(28, bytes(24)),
        w.msg(16, struct.pack("!I4x6s2xIII4x", 1, b"\0" * 6, 0, 0, 0)),
        w.msg(17, struct.pack("!B3xI", 0, 0)), w.msg(22, struct.pack("!I4x", 1)),
        w.msg(4, struct.pack("!II", 0x2320, 1)),
    ]


def mutate(rng: random.Random, base: bytes) -> bytes:
    """One mutated message; the header's length always equals the bytes sent, so the stream
    stays framed (a broken header is tested separately)."""
    b = bytearray(base)
    op = rng.randrange(5)
    if op == 0:      # flip bytes
        for _ in range(rng.randint(1, 6)):
            if len(b) > 8:
                b[rng.randrange(8, len(b))] = rng.randrange(256)
    elif op == 1:    # truncate
        b = b[:rng.randint(8, len(b))]
    elif op == 2:    # append garbage
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif op == 3:    # random body, random type
        b = bytearray(b[:8]) + bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
        b[1] = rng.randrange(35)
    else:            # 16-bit fields set to edge values (lengths, types, counts)
        for _ in range(rng.randint(1, 3)):
            if len(b) >= 10:
                off = rng.randrange(8, len(b) - 1)
                b[off:off + 2] = struct.pack("!H", rng.choice([0, 1, 4, 7, 8, 0xFFFF, 0x8000]))
    if rng.random() < 0.05:
        b[0] = rng.choice([1, 3, 5, 0xFF])
    b = b[:0xFFFF]
    struct.pack_into("!H", b, 2, len(b))
    return bytes(b)


@pytest.fixture(params=["release", "sanitized"])
def ring_switch(tmp_path, request):
    """The switch of the release build, or of the sanitizer build (ASan + UBSan, which aborts
    on a report: then the switch dies and the test fails with the report in its log)."""
    binary = launcher.builds()[request.param] / "dut" / "switch" / "ofswitch"
    if not binary.exists():
        pytest.skip(f"{binary} not built" + (": scripts/build_san.sh"
                                             if request.param == "sanitized" else ""))
    listener = w.listen()
    port = listener.getsockname()[1]
    eal = ["-l", "0", "--no-huge", "-m", "256", "--no-pci",
           "--file-prefix", f"ofb-swfuzz-{os.getpid()}", "--log-level", "lib.eal:error"]
    argv = launcher.switch_argv(binary, eal, [(1, "net_ring0"), (2, "net_ring1")],
                                controller=("127.0.0.1", port), dpid=0xF0,
                                stats_sock=tmp_path / "stats", idle_sleep_us=50)
    try:
        with switch_process(argv, tmp_path / "ofswitch.log", None) as proc:
            yield proc, listener, tmp_path
    finally:
        listener.close()
        # a sanitized switch also reports at exit (leaks); the release build prints nothing
        text = (tmp_path / "ofswitch.log").read_text(errors="replace")
        assert not launcher.sanitizer_reports(text), text[-6000:]
        # --no-huge still leaves the EAL runtime directory behind
        shutil.rmtree(f"/var/run/dpdk/ofb-swfuzz-{os.getpid()}", ignore_errors=True)


def check_forwarding(s: w.Session, n: int = 20) -> int:
    """Install in_port=1 -> output:2, inject n frames into port 1; returns port 2's tx delta."""
    s.send(w.flow_mod(command=3, table=0xFF))
    s.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 1))),
                      instructions=w.apply_actions(w.action_output(2)), priority=10))
    assert s.barrier(), "no barrier reply"
    before = s.port_stats()[2]["tx_packets"]
    frame = b"\x22" * 6 + b"\x11" * 6 + b"\x08\x00" + bytes(46)
    for _ in range(n):
        s.send(w.packet_out(frame, w.action_output(1)))
    deadline = time.monotonic() + 5
    delta = 0
    while time.monotonic() < deadline:
        delta = s.port_stats()[2]["tx_packets"] - before
        if delta >= n:
            break
        time.sleep(0.1)
    return delta


def test_fuzz_agent_survives_and_forwards(ring_switch):
    proc, listener, tmp = ring_switch
    s = accept(listener, proc)
    assert check_forwarding(s) >= 20, "no forwarding before fuzzing"
    rng = random.Random(SEED)
    corpus = _corpus()
    sent = 0
    for i in range(N_MESSAGES):
        m = mutate(rng, rng.choice(corpus)) if rng.random() < 0.9 else \
            w.msg(rng.randrange(35), bytes(rng.randrange(256) for _ in range(rng.randrange(64))))
        s.send(m)
        sent += 1
        if i % 1000 == 999:  # pace: keep the switch's reply queue drained
            assert s.echo_ok(xid=0xE000 + i, timeout_s=20), f"no ECHO reply after {sent} messages"
    assert sent >= 10000
    assert proc.poll() is None, f"switch died: {(tmp / 'ofswitch.log').read_text()[-2000:]}"
    assert s.echo_ok(), "switch does not answer ECHO after fuzzing"
    assert check_forwarding(s) >= 20, "switch stopped forwarding after fuzzing"
    # a header that cannot be framed closes the session; the switch reconnects
    s.send(struct.pack("!BBHI", 4, 0, 4, 0))
    s.close()
    s2 = accept(listener, proc)
    assert s2.echo_ok()
    s2.close()
    assert proc.poll() is None
