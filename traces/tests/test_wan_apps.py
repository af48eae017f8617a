"""Behaviour of the document-002 app traffic model (schedule, framing, reassembly, stats)."""
import math
import socket
import threading

import pytest

from dut.wan.config import App, Framing
from traces.wan_apps import (HEADER, Reassembler, app_stats, chunks, histogram, message_schedule,
                             pack, unpack)


def test_schedule_is_poisson_with_mean_interval_and_deterministic():
    apps = [App("a", 1000, 10, 50), App("b", 5000, 100, 50, size_distribution="exponential")]
    s1 = message_schedule(apps, 200.0, seed=7)
    assert s1 == message_schedule(apps, 200.0, seed=7)
    a = [m.at_ns for m in s1 if m.app_index == 0]
    gaps = [(y - x) / 1e6 for x, y in zip(a, a[1:])]
    mean = sum(gaps) / len(gaps)
    assert mean == pytest.approx(10, rel=0.05)
    # Exponential: standard deviation ~ mean.
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / len(gaps))
    assert sd == pytest.approx(mean, rel=0.1)
    b = [m.length_bytes for m in s1 if m.app_index == 1]
    assert sum(b) / len(b) == pytest.approx(5000, rel=0.1) and len(set(b)) > 100
    assert all(m.length_bytes == 1000 for m in s1 if m.app_index == 0)
    assert [m.at_ns for m in s1] == sorted(m.at_ns for m in s1)


def test_chunks_cover_message_exactly():
    fr = Framing()
    parts = chunks(100_000, fr)
    assert sum(n for _, n in parts) == 100_000 and all(n <= fr.data_bytes_per_frame for _, n in parts)
    assert len(parts) == fr.frames(100_000)
    assert [o for o, _ in parts] == list(range(0, 100_000, fr.data_bytes_per_frame))


def test_header_roundtrip_and_foreign_data_ignored():
    h = pack(3, 12, 2880, 100_000, 123456789)
    assert len(h) == HEADER.size == 32
    assert unpack(h + b"x") == (3, 12, 2880, 100_000, 123456789)
    assert unpack(b"XX" + h[2:]) is None and unpack(b"W2") is None


def test_reassembly_out_of_order_and_duplicates():
    r = Reassembler()
    assert r.feed(1, 5, 1440, 2000, 10, 560, 100) is None
    assert r.feed(1, 5, 1440, 2000, 10, 560, 101) is None       # duplicate
    assert r.feed(1, 5, 0, 2000, 10, 1440, 150) == (1, 5, 10, 150)
    assert r.feed(1, 5, 0, 2000, 10, 1440, 160) is None          # late copy after completion


def test_app_stats_counts_lost_as_misses():
    st = app_stats([5, 10, 30], deadline_ms=20, sent=4)
    assert st["count"] == 3 and st["lost"] == 1
    assert st["deadline_hit_pct"] == pytest.approx(50.0)
    assert st["mean_ms"] == pytest.approx(15) and st["p50_ms"] == 10


def test_histogram_5ms_bins():
    assert histogram([0.1, 4.9, 5.0, 12.0]) == {0.0: 2, 5.0: 1, 10.0: 1}


def test_sender_receiver_over_loopback(tmp_path):
    """Both programs end to end on 127.0.0.1: every message arrives and is timed."""
    import subprocess, sys, time
    import socket
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for s in socks:  # free UDP ports: fixed ones collided with a concurrent run of this test
        s.bind(("127.0.0.1", 0))
    pa, pb = (s.getsockname()[1] for s in socks)
    for s in socks:
        s.close()
    scn = tmp_path / "s.yaml"
    scn.write_text(f"apps:\n  - {{name: a, length_bytes: 20000, interval_ms: 20, deadline_ms: 50, udp_port: {pa}}}\n"
                   f"  - {{name: b, length_bytes: 500, interval_ms: 10, deadline_ms: 50, udp_port: {pb}}}\n")
    recv_csv, sent_csv, ready = tmp_path / "r.csv", tmp_path / "s.csv", tmp_path / "ready"
    py = [sys.executable, "-m", "traces.wan_apps"]
    rp = subprocess.Popen(py + ["recv", "--scenario", str(scn), "--out", str(recv_csv), "--ready-file", str(ready)])
    try:
        t0 = time.monotonic()
        while not ready.exists() and time.monotonic() - t0 < 10:
            time.sleep(0.05)
        subprocess.run(py + ["send", "--scenario", str(scn), "--dst", "127.0.0.1", "--duration-s", "1",
                             "--out", str(sent_csv)], check=True, timeout=30)
        time.sleep(0.3)
    finally:
        rp.terminate()
        rp.wait(timeout=10)
    from traces.wan_apps import read_recv_csv, read_sent_csv
    recv, sent = read_recv_csv(str(recv_csv)), read_sent_csv(str(sent_csv))
    assert len(sent) > 50 and len(recv) == len(sent)
    assert all(0 < r["delay_ms"] < 1000 for r in recv)
