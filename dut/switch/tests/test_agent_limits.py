"""The agent at OpenFlow's size limits, with a slow controller, and when it is told to stop
(issue 37 findings 1, 3 and 4), on the real ofswitch with DPDK null ports and this test as the
controllers on loopback ports.

* Finding 1: a FLOW_MOD / GROUP_MOD whose stats entry cannot fit one 65535-byte multipart
  reply (65528 bytes) is refused at once with BAD_ACTION/TOO_MANY (a MODIFY that would make
  such a flow too; a METER_MOD with such a band: BAD_BAND), the largest one that fits is
  accepted and answered whole in OFPMP_FLOW / OFPMP_GROUP_DESC, and ECHO is answered after.
* Finding 3: a controller that connects and never reads is dropped when its output queue
  passes the limit, while another controller's ECHOs are answered in < 1 s all along.
* Finding 4: SIGTERM ends a switch whose agent thread never returns (the OFS_TEST_HANG_ON_STOP
  hook) within the --stop-timeout-s bound, exit code 3, naming the agent thread; a normal stop
  exits 0.

Each runs on the release build and on the sanitizer build (ASan + UBSan, where the agent's
invariants abort: agent_internal.h "Checked invariants"); a sanitizer report or an invariant
line in the switch's log fails the test.
"""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest

from dut.switch import launcher
import openflow as w

_SWITCHES = itertools.count()
MP_FLOW, MP_GROUP_DESC, MPF_REPLY_MORE = 1, 7, 1
OFPET_BAD_ACTION, OFPBAC_TOO_MANY = 2, 7
OFPET_METER_MOD_FAILED, OFPMMFC_BAD_BAND = 12, 8
MP_METER_CONFIG = 10
POP_VLAN = struct.pack("!HH4x", 18, 8)
MSG_MAX = 65535


def listen(rcvbuf: int | None = None) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:  # inherited by the accepted connection: a small window fills fast
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    return s


@pytest.fixture(params=["release", "sanitized"])
def build(request) -> str:
    return request.param


@contextmanager
def null_switch(tmp_path, build: str, ports: list[int], extra: list[str] = (),
                env: dict | None = None):
    """ofswitch of ``build`` with one net_null port, connecting to 127.0.0.1:<each of
    ports>."""
    binary = launcher.builds()[build] / "dut" / "switch" / "ofswitch"
    if not binary.exists():
        pytest.skip(f"{binary} not built" + (": scripts/build_san.sh"
                                             if build == "sanitized" else ""))
    prefix = f"ofb-swlim-{os.getpid()}-{next(_SWITCHES)}"
    eal = ["-l", "0", "--no-huge", "-m", "256", "--no-pci", "--file-prefix", prefix,
           "--log-level", "lib.eal:error"]
    argv = launcher.switch_argv(binary, eal, [(1, "net_null0")],
                                controller=[("127.0.0.1", p) for p in ports], dpid=0xC7,
                                stats_sock=tmp_path / "stats", idle_sleep_us=50)
    argv += list(extra)
    log = open(tmp_path / "ofswitch.log", "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, **(env or {})})
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()  # a test that stopped it on purpose has waited already
            proc.wait()
        log.close()
        shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
    text = (tmp_path / "ofswitch.log").read_text(errors="replace")
    assert not launcher.sanitizer_reports(text), text[-6000:]
    assert "agent invariant" not in text, text[-6000:]


def accept(listener: socket.socket, proc, timeout_s: float = 15.0) -> socket.socket:
    listener.settimeout(timeout_s)
    try:
        conn, _ = listener.accept()
    except socket.timeout:
        raise AssertionError(f"switch did not connect (alive={proc.poll() is None})")
    return conn


def session(listener, proc) -> w.Session:
    s = w.Session(accept(listener, proc))
    s.handshake()
    return s


def error_code(m) -> int:
    t, c = struct.unpack_from("!HH", m[2])
    return t << 16 | c


def big_flow_mod(n_actions: int, xid: int) -> bytes:
    return w.flow_mod(instructions=w.apply_actions(*[POP_VLAN] * n_actions), xid=xid)


def big_group_mod(n_actions: int, xid: int, group_id: int = 1) -> bytes:
    acts = POP_VLAN * n_actions
    bucket = struct.pack("!HHII4x", 16 + len(acts), 0, w.OFPP_ANY, w.OFPG_ANY) + acts
    return w.msg(w.GROUP_MOD, struct.pack("!HBxI", 0, 0, group_id) + bucket, xid)


def flow_stats_request(xid: int) -> bytes:
    return w.multipart(MP_FLOW, struct.pack("!B3xII4xQQ", 0xFF, w.OFPP_ANY, w.OFPG_ANY, 0, 0)
                       + w.match(), xid)


def multipart_entries(s: w.Session, xid: int, timeout_s: float = 5.0) -> list[bytes]:
    """The entries of one multipart reply (every REPLY_MORE part), each cut by its own
    16-bit length at offset 0; fails when a part does not come or is not well framed."""
    entries = []
    while True:
        m = s.wait_for(w.MULTIPART_REPLY, xid, timeout_s)
        assert m is not None, f"no (complete) multipart reply for xid {xid}"
        body = m[2]
        assert len(body) + 8 <= MSG_MAX
        flags, = struct.unpack_from("!H", body, 2)
        off = 8
        while off < len(body):
            n, = struct.unpack_from("!H", body, off)
            assert n >= 8 and off + n <= len(body), f"entry length {n} at {off} of {len(body)}"
            entries.append(body[off:off + n])
            off += n
        if not flags & MPF_REPLY_MORE:
            return entries


def test_flow_mod_too_large_for_a_stats_reply_is_refused(tmp_path, build):
    with listen() as ls, null_switch(tmp_path, build, [ls.getsockname()[1]]) as proc:
        s = session(ls, proc)
        try:
            # 48 + 8 (empty match) + 8 + 8183 * 8 = 65528: its flow stats entry is 65528
            # bytes, the reply 65544: it cannot be answered, so it is refused now
            fm = big_flow_mod(8183, xid=11)
            assert len(fm) == 65528
            s.send(fm)
            assert s.barrier(12), "no BARRIER_REPLY after the 65528-byte FLOW_MOD"
            e = s.wait_for(w.ERROR, 11, 1.0)
            assert e is not None and error_code(e) == OFPET_BAD_ACTION << 16 | OFPBAC_TOO_MANY
            s.send(flow_stats_request(13))
            assert multipart_entries(s, 13) == []
            assert s.echo_ok(0xE1, 2.0), "ECHO not answered after the large FLOW_MOD"
            # the largest flow that fits (65512 bytes: a 65528-byte reply) is kept and
            # answered whole
            fm = big_flow_mod(8181, xid=14)
            assert len(fm) == 65512
            s.send(fm)
            assert s.barrier(15)
            assert s.wait_for(w.ERROR, 14, 0.5) is None
            s.send(flow_stats_request(16))
            (entry,) = multipart_entries(s, 16)
            assert len(entry) == 65512 and entry[48 + 8:] == fm[56:]
            assert s.echo_ok(0xE2, 2.0)
            # MODIFY checks each flow it would change: the same instructions on a flow whose
            # match is 8 bytes longer (in_port) would make a 65520-byte entry
            s.send(w.flow_mod(command=3, table=0xFF, xid=17))
            s.send(w.flow_mod(match_=w.match(w.oxm(0, struct.pack("!I", 1))), xid=18))
            s.send(w.flow_mod(command=1, instructions=w.apply_actions(*[POP_VLAN] * 8181),
                              xid=19))
            assert s.barrier(20)
            e = s.wait_for(w.ERROR, 19, 1.0)
            assert e is not None and error_code(e) == OFPET_BAD_ACTION << 16 | OFPBAC_TOO_MANY
            s.send(flow_stats_request(21))
            (entry,) = multipart_entries(s, 21)
            assert len(entry) == 48 + 16, "the refused MODIFY changed the flow"
        finally:
            s.close()


def test_meter_mod_too_large_for_a_config_reply_is_refused(tmp_path, build):
    with listen() as ls, null_switch(tmp_path, build, [ls.getsockname()[1]]) as proc:
        s = session(ls, proc)
        try:
            # one DROP band of 65512 bytes: a 65528-byte METER_MOD, a 65520-byte meter config
            # entry, a 65536-byte reply
            band = struct.pack("!HHII", 1, 65512, 1000, 0) + bytes(65512 - 12)
            mm = w.msg(w.METER_MOD, struct.pack("!HHI", 0, 2, 1) + band, 41)  # ADD, PKTPS
            assert len(mm) == 65528
            s.send(mm)
            assert s.barrier(42)
            e = s.wait_for(w.ERROR, 41, 1.0)
            assert e is not None
            assert error_code(e) == OFPET_METER_MOD_FAILED << 16 | OFPMMFC_BAD_BAND
            s.send(w.multipart(MP_METER_CONFIG, struct.pack("!I4x", 0xFFFFFFFF), 43))
            assert multipart_entries(s, 43) == []
            assert s.echo_ok(0xE7, 2.0)
        finally:
            s.close()


def test_group_mod_too_large_for_a_desc_reply_is_refused(tmp_path, build):
    with listen() as ls, null_switch(tmp_path, build, [ls.getsockname()[1]]) as proc:
        s = session(ls, proc)
        try:
            # 16 + 16 (bucket) + 8187 * 8 = 65528: the group desc entry (8 + buckets =
            # 65520) and its reply (65536) cannot be answered
            gm = big_group_mod(8187, xid=21)
            assert len(gm) == 65528
            s.send(gm)
            assert s.barrier(22)
            e = s.wait_for(w.ERROR, 21, 1.0)
            assert e is not None and error_code(e) == OFPET_BAD_ACTION << 16 | OFPBAC_TOO_MANY
            s.send(w.multipart(MP_GROUP_DESC, xid=23))
            assert multipart_entries(s, 23) == []
            assert s.echo_ok(0xE3, 2.0), "ECHO not answered after the large GROUP_MOD"
            gm = big_group_mod(8186, xid=24)  # 65520: a 65512-byte entry, a 65528-byte reply
            s.send(gm)
            assert s.barrier(25)
            assert s.wait_for(w.ERROR, 24, 0.5) is None
            s.send(w.multipart(MP_GROUP_DESC, xid=26))
            (entry,) = multipart_entries(s, 26)
            assert len(entry) == 8 + len(gm) - 16 and entry[8:] == gm[16:]
            assert s.echo_ok(0xE4, 2.0)
        finally:
            s.close()


def test_a_reading_controller_gets_a_reply_larger_than_its_queue_limit(tmp_path, build):
    """The queue limit stops a controller that does not read, not one that asked for a large
    answer: with a 64 KiB limit, a FLOW stats reply of 3000 flows (~170 KB) arrives whole and
    the connection stays (before: "not reading ... dropped" at 100k flows and the default 4 MiB,
    the flow-mod bench's FLOW stats)."""
    with listen() as ls, null_switch(tmp_path, build, [ls.getsockname()[1]],
                                     ["--ctl-queue-kb", "64"]) as proc:
        s = session(ls, proc)
        try:
            for i in range(3000):
                s.send(w.flow_mod(priority=i + 1, xid=0x1000 + i))
            # generous waits: a starved box (the switch at nice 10 beside busy loops) took
            # over 5 s for the 3000 FLOW_MODs; what is asserted is that nothing is dropped
            s.send(w.msg(w.BARRIER_REQUEST, xid=0x9000))
            assert s.wait_for(w.BARRIER_REPLY, 0x9000, 60.0) is not None, \
                "no BARRIER_REPLY after 3000 FLOW_MODs"
            s.send(flow_stats_request(0x9001))
            assert len(multipart_entries(s, 0x9001, 30.0)) == 3000
            assert s.echo_ok(0xE3, 30.0), "the connection did not survive the large reply"
            s.send(flow_stats_request(0x9002))  # and again: the limit is per request
            assert len(multipart_entries(s, 0x9002, 30.0)) == 3000
            log = (tmp_path / "ofswitch.log").read_text(errors="replace")
            assert "not reading" not in log, log[-2000:]
        finally:
            s.close()


def test_controller_that_stops_reading_is_dropped_others_go_on(tmp_path, build):
    """One controller sends large ECHOs and never reads the replies; the other's ECHOs must be
    answered in < 1 s throughout, and the stalled one dropped (log and stats counter)."""
    with listen(rcvbuf=4096) as ls_slow, listen() as ls_ok, \
            null_switch(tmp_path, build,
                        [ls_slow.getsockname()[1], ls_ok.getsockname()[1]]) as proc:
        slow = accept(ls_slow, proc)
        ok = session(ls_ok, proc)
        stop = threading.Event()
        sent = [0]

        def flood():  # write only: the switch's replies pile up on its side
            echo = w.msg(w.ECHO_REQUEST, bytes(60000), 0x51)
            slow.settimeout(0.5)
            try:
                slow.sendall(w.msg(w.HELLO, xid=1))
                while not stop.is_set() and sent[0] < (256 << 20):
                    try:
                        slow.sendall(echo)
                        sent[0] += len(echo)
                    except socket.timeout:
                        continue   # the switch is not reading us (now)
            except OSError:
                pass               # dropped by the switch

        t = threading.Thread(target=flood, daemon=True)
        t.start()
        worst, dropped = 0.0, False
        try:
            deadline = time.monotonic() + 30
            xid = 0x100
            while time.monotonic() < deadline:
                t0 = time.monotonic()
                assert ok.echo_ok(xid, 3.0), (f"ECHO on the reading connection not answered "
                                              f"({sent[0]} bytes flooded)")
                worst = max(worst, time.monotonic() - t0)
                xid += 1
                st = launcher.read_stats(tmp_path / "stats")
                if st and st.get("ctl_dropped_slow", 0) >= 1:
                    dropped = True
                    break
                time.sleep(0.05)
            assert dropped, f"the controller that does not read was not dropped ({sent[0]} B)"
            assert worst < 1.0, f"an ECHO took {worst:.2f} s"
            assert ok.echo_ok(xid + 1, 1.0)
            log = (tmp_path / "ofswitch.log").read_text(errors="replace")
            assert "not reading" in log and "dropped" in log, log[-3000:]
        finally:
            stop.set()
            slow.close()
            t.join(timeout=5)
            ok.close()


STOP_TIMEOUT_S = 2


def test_sigterm_ends_a_switch_whose_agent_does_not_stop(tmp_path, build):
    with listen() as ls, null_switch(tmp_path, build, [ls.getsockname()[1]],
                                     extra=["--stop-timeout-s", str(STOP_TIMEOUT_S)],
                                     env={"OFS_TEST_HANG_ON_STOP": "agent"}) as proc:
        s = session(ls, proc)
        # what stalled the agent before finding 1 was fixed, then a working connection
        s.send(big_flow_mod(8183, xid=31))
        s.send(flow_stats_request(32))
        s.echo_ok(0xE5, 2.0)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=STOP_TIMEOUT_S + 8)
        except subprocess.TimeoutExpired:
            pytest.fail("SIGTERM did not end the switch")
        finally:
            s.close()
        took = time.monotonic() - t0
        log = (tmp_path / "ofswitch.log").read_text(errors="replace")
        assert rc == 3, log[-3000:]
        assert "not stopped" in log and "agent thread" in log, log[-3000:]
        assert took >= STOP_TIMEOUT_S - 0.5


def test_sigterm_normal_stop_exits_zero(tmp_path, build):
    with listen() as ls, null_switch(tmp_path, build, [ls.getsockname()[1]],
                                     extra=["--stop-timeout-s", str(STOP_TIMEOUT_S)]) as proc:
        s = session(ls, proc)
        assert s.echo_ok(0xE6, 2.0)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=STOP_TIMEOUT_S + 8)
        s.close()
        log = (tmp_path / "ofswitch.log").read_text(errors="replace")
        assert rc == 0 and "ofswitch: stopped" in log and "not stopped" not in log, log[-3000:]
