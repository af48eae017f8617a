"""Behaviour of the user-space WAN emulator: delay, rate, loss, control socket, stats.

One network namespace (ofbx-wan-<pid>) with two veth pairs: gen -> in (path input) and
out -> sink (path output).  Frames are raw Ethernet, sent and received with AF_PACKET; the
sink timestamps them in the kernel (SO_TIMESTAMPNS, CLOCK_REALTIME, the emulator's clock).
"""
import ctypes
import os
import socket
import struct
import subprocess
import time

import pytest

from drivers.wanem.driver import PathSpec, Wanem, WanemControl, accuracy_metrics, binary, wanem_argv

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not binary().exists(),
                                reason="needs root and the built emulator (ninja -C build)")

SO_TIMESTAMPNS = 35
ETH_P_ALL = 0x0003


def sh(*argv):
    subprocess.run(argv, check=True, capture_output=True)


@pytest.fixture
def ns():
    name = f"ofbx-wan-{os.getpid()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    sh("ip", "netns", "add", name)
    try:
        # No IPv6 chatter (router solicitations) on the test links: count only our frames.
        sh("ip", "netns", "exec", name, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
        for a, b in (("gen", "in"), ("out", "sink")):
            sh("ip", "-n", name, "link", "add", a, "type", "veth", "peer", "name", b)
            sh("ip", "-n", name, "link", "set", a, "up")
            sh("ip", "-n", name, "link", "set", b, "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_argv_and_bad_path_spec():
    argv = wanem_argv([PathSpec("p1", "a", "b", 100, 2)], "/c", "/s", exe="w")
    assert argv[:3] == ["w", "--path", "p1:a:b:100:2:0"] and "--ctl" in argv
    with pytest.raises(ValueError, match="rate_mbps must be > 0"):
        PathSpec("p", "a", "b", 0, 1).arg()
    with pytest.raises(ValueError, match="without ':'"):
        PathSpec("p", "a:x", "b", 1, 1).arg()


def test_emulator_rejects_zero_rate():
    r = subprocess.run([str(binary()), "--path", "p:lo:lo:0:1"], capture_output=True, text=True)
    assert r.returncode == 2 and "rate must be > 0" in r.stderr


_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


def _open_raw(ns_name, ifname, rx):
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{ns_name}", os.O_RDONLY)
    try:
        _setns(target)
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((ifname, 0))
        if rx:
            s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        return s
    finally:
        _setns(own)
        os.close(own)
        os.close(target)


def frame(seq, size=1000):
    hdr = bytes.fromhex("02aaaaaaaaaa02bbbbbbbbbb") + struct.pack("!H", 0x88b5)
    return hdr + struct.pack("!IQ", seq, time.clock_gettime_ns(time.CLOCK_REALTIME)) + bytes(size - 26)


def receive(sock, n, timeout_s):
    out = {}
    sock.settimeout(0.2)
    end = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < end:
        try:
            data, anc, _, _ = sock.recvmsg(2048, 64)
        except socket.timeout:
            continue
        if len(data) < 26 or data[12:14] != b"\x88\xb5":
            continue
        seq, sent = struct.unpack("!IQ", data[14:26])
        ts = next(struct.unpack("qq", d[:16]) for lvl, t, d in anc if t == SO_TIMESTAMPNS)
        out[seq] = (sent, ts[0] * 10**9 + ts[1])
    return out


def test_delay_rate_and_control(ns, tmp_path):
    spec = PathSpec("p1", "in", "out", rate_mbps=20, delay_ms=5)
    with Wanem([spec], ns, str(tmp_path), rt_prio=0) as w:
        tx = _open_raw(ns, "gen", rx=False)
        rx = _open_raw(ns, "sink", rx=True)
        try:
            # Paced well under the rate: each frame sees only the fixed delay + serialisation.
            for i in range(40):
                tx.send(frame(i))
                time.sleep(0.002)
            got = receive(rx, 40, 3)
            assert len(got) == 40
            ser_ms = (1000 + 24) * 8 / 20e6 * 1e3
            delays = sorted((r - s) / 1e6 for s, r in got.values())
            assert 5 + ser_ms <= delays[len(delays) // 2] < 5 + ser_ms + 2.0
            # A burst queues behind the 20 Mbit/s serialisation clock.
            w.ctl.reset()
            for i in range(100, 200):
                tx.send(frame(i))
            got = receive(rx, 100, 3)
            assert len(got) == 100
            span_ms = (max(r for _, r in got.values()) - min(r for _, r in got.values())) / 1e6
            assert span_ms == pytest.approx(99 * ser_ms, rel=0.15)
            st = w.ctl.stats()["paths"][0]
            assert st["tx_frames"] == 100 and st["rate_mbps"] == pytest.approx(20, rel=0.15)
            # Rate change through the control socket applies to later frames.
            w.ctl.set("p1", rate_mbps=200, delay_ms=1)
            for i in range(300, 320):
                tx.send(frame(i))
            got = receive(rx, 20, 3)
            span_ms = (max(r for _, r in got.values()) - min(r for _, r in got.values())) / 1e6
            assert span_ms < 19 * ser_ms / 2
            with pytest.raises(RuntimeError, match="no path nope"):
                w.ctl.set("nope", rate_mbps=1)
        finally:
            tx.close()
            rx.close()
    m = accuracy_metrics(w.final_stats)
    # The accuracy itself is a benchmark (suites/wan records it); here only that it is
    # measured and sane: under a loaded 2-core box the p99 went 5.04 ms once (2026-11-23).
    assert m["path1_tx_frames"] == 120 and 0 <= m["path1_delay_err_p99_us"] < 20_000


def test_loss(ns, tmp_path):
    with Wanem([PathSpec("p1", "in", "out", 100, 0.5, loss_pct=50)], ns, str(tmp_path), rt_prio=0) as w:
        tx = _open_raw(ns, "gen", rx=False)
        rx = _open_raw(ns, "sink", rx=True)
        try:
            for i in range(400):
                tx.send(frame(i, 200))
                if i % 50 == 0:
                    time.sleep(0.001)
            got = receive(rx, 400, 1.0)
        finally:
            tx.close()
            rx.close()
        st = w.ctl.stats()["paths"][0]
    assert 120 < len(got) < 280 and st["drop_loss"] + len(got) == 400
