"""The TRex driver against a real TRex v3.08 server: two memif ports of one server joined to
each other (port 0 = memif server, port 1 = memif client on the same socket), started by the
lab supervisor.  Everything test_trex.py checks against FakeTrexServerDouble is checked here
against the real server; the double keeps only what a loss-free loopback cannot do (a chosen
loss ratio, see test_trex.py).  Skips with the reason when the server is not built."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from drivers.trafficgen.frames import line_rate_pps
from drivers.trafficgen.model import FieldVar, Stream, StreamError
from drivers.trex.driver import Trex, TrexError
from drivers.trex.server import dpdk_runtime_dir, find_runtime, memif_vdev, start_trex_server
from drivers.trex.translate import pg_ids

SPEED_MBPS = 10_000
_SEQ = iter(range(1 << 30))


@pytest.fixture(scope="module")
def trex_runtime():
    rt, why = find_runtime()
    if rt is None:
        pytest.skip(why)
    return rt


@pytest.fixture(scope="module")
def real(lab, trex_runtime):
    """(Trex driver, TrexServer) on a memif loopback; the server is stopped and its DPDK runtime
    dir checked gone at the end."""
    sock = Path(lab.sock_path(f"trex-loop-{next(_SEQ)}.sock"))
    sock.unlink(missing_ok=True)
    srv = start_trex_server(lab, f"trexloop{next(_SEQ)}", [memif_vdev(0, "server", sock), memif_vdev(1, "client", sock)],
                            runtime=trex_runtime)
    try:
        gen = Trex(srv.host, {"p0": (0, SPEED_MBPS), "p1": (1, SPEED_MBPS)}, sync_port=srv.rpc_port,
                   async_port=srv.pub_port)
    except BaseException:
        srv.stop()
        raise
    try:
        yield gen, srv
    finally:
        gen.close()
        srv.stop()
    assert not srv.proc.alive()
    assert not dpdk_runtime_dir(srv.prefix).exists(), f"TRex left {dpdk_runtime_dir(srv.prefix)}"


def _tcp_listeners(port: int) -> set[str]:
    """Addresses listening on TCP ``port`` (IPv4 and IPv6, from /proc/net/tcp{,6}, state 0A)."""
    out = set()
    for name in ("tcp", "tcp6"):
        f = Path("/proc/net") / name
        for line in (f.read_text().splitlines()[1:] if f.exists() else []):
            col = line.split()
            addr, p = col[1].split(":")
            if int(p, 16) == port and col[3] == "0A":
                out.add(addr)
    return {".".join(str(b) for b in bytes.fromhex(a)[::-1]) if len(a) == 8 else a for a in out}


def test_server_listens_on_loopback_only(real):
    """Issue 38: TRex writes "tcp://*" into its source; bindshim.c (LD_PRELOAD) binds its RPC
    and publisher sockets to the address the run gives (here loopback) instead."""
    _, srv = real
    assert _tcp_listeners(srv.rpc_port) == {"127.0.0.1"}
    assert _tcp_listeners(srv.pub_port) == {"127.0.0.1"}


def test_server_is_trex_308_with_two_memif_ports_up(real):
    gen, srv = real
    assert srv.version == "v3.08"
    assert gen.connect_reply["double"] is False and gen.connect_reply["server_version"] == "v3.08"
    assert "v3.08" in gen.version
    info = gen.rpc("port_info")["ports"]
    assert [p["driver"] for p in info] == ["net_memif", "net_memif"]
    assert all(p["link"] == "UP" for p in info), info


def test_trial_counts_add_up(real):
    """Two streams of fixed counts, one with latency: every packet sent arrives (a memif
    loopback loses nothing), port and per-pg_id counters agree, latency has one sample per packet."""
    gen, _ = real
    c = gen.run([Stream("a", "p0", rx_port="p1", frame_size=64, rate_pps=20_000, count=10_000, latency=True),
                 Stream("b", "p1", rx_port="p0", frame_size="imix", rate_pps=12_000, count=1_200)], drain_s=0.2)
    a, b = c.streams["a"], c.streams["b"]
    # low_end TRex drops what a full TX ring refuses (the RX lcore shares its CPU and sleeps):
    # that is unsent (refused), never loss; on a quiet box it is 0
    assert (a.tx + a.unsent, b.tx + b.unsent) == (10_000, 1_200)
    assert a.refused == a.unsent and b.refused == b.unsent
    assert (a.rx, a.lost, b.rx, b.lost) == (a.tx, 0, b.tx, 0)
    assert c.ports["p0"].tx == a.tx and c.ports["p1"].rx == a.rx
    assert c.ports["p1"].tx == b.tx and c.ports["p0"].rx == b.rx
    lat = a.latency
    assert lat.samples == a.rx
    assert 0 < lat.min_us <= lat.avg_us <= lat.max_us
    assert lat.p50_us <= lat.p90_us <= lat.p99_us <= lat.p99_9_us <= lat.max_us
    assert sum(n for _, _, n in lat.histogram) == lat.samples


def test_flow_stats_by_pg_id(real):
    """Three streams on one port: each is counted under its own pg_ids, not mixed."""
    gen, _ = real
    counts = {"x": 1_000, "y": 2_000, "z": 3_000}
    c = gen.run([Stream(n, "p0", rx_port="p1", frame_size=128, rate_pps=10_000, count=k) for n, k in counts.items()],
                drain_s=0.2)
    assert {n: (s.tx + s.unsent, s.lost) for n, s in c.streams.items()} == {n: (k, 0) for n, k in counts.items()}
    assert c.ports["p0"].tx == sum(s.tx for s in c.streams.values()) == c.ports["p1"].rx


def test_rate_in_pps_is_paced(real):
    """TRex sends at the asked rate, never faster: 20 000 packets at 20 kpps take ~1 s
    (the lower bound is the check; a loaded machine only makes it longer)."""
    gen, _ = real
    gen.load([Stream("r", "p0", rx_port="p1", frame_size=64, rate_pps=20_000, count=20_000)])
    t0 = time.monotonic()
    gen.start()
    assert gen.wait(30)
    took = time.monotonic() - t0
    gen.stop()
    time.sleep(0.2)
    s = gen.counters().streams["r"]
    assert s.tx + s.unsent == 20_000
    assert took >= 0.8, f"20k packets at 20 kpps took {took:.2f} s: faster than asked"


def test_rate_in_percent_of_line(real):
    """rate_percent is of the profile's port speed: 0.05 % of 10 Gb/s at 64 B = 7440 pps."""
    gen, _ = real
    [r] = gen.load([Stream("pct", "p0", rx_port="p1", frame_size=64, rate_percent=0.05, count=3_000)])
    assert r.rate_pps == pytest.approx(line_rate_pps(SPEED_MBPS, 64) * 0.0005)
    t0 = time.monotonic()
    gen.start()
    assert gen.wait(30)
    took = time.monotonic() - t0
    gen.stop()
    time.sleep(0.2)
    s = gen.counters().streams["pct"]
    assert s.tx + s.unsent == 3_000
    assert took >= 0.8 * 3_000 / r.rate_pps


def _ipv4_checksum_ok(hdr: bytes) -> bool:
    s = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, len(hdr), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def test_field_variation_on_the_wire(real):
    """dst_ip over 10 values and src_port over 100 flows: captured on the receiving port, every
    combination's fields are there and every IPv4 checksum is right (TRex's FixIpv4)."""
    gen, _ = real
    gen.load([Stream("v", "p0", rx_port="p1", frame_size=64, rate_pps=5_000, count=1_000, flows=100,
                     vary=[FieldVar("dst_ip", 10, 1)])])
    cap = gen.rpc("capture_start", rx_ports=[1], limit=2_000)["capture_id"]
    try:
        gen.start()
        assert gen.wait(30)
        gen.stop()
        time.sleep(0.3)
    finally:
        pkts = gen.rpc("capture_stop", capture_id=cap)["packets"]
    frames = [bytes.fromhex(p["hex"]) for p in pkts]
    s = gen.counters().streams["v"]
    assert len(frames) == s.rx == s.tx > 900
    l3 = 14
    dst_ips = {f[l3 + 16:l3 + 20] for f in frames}
    src_ports = {int.from_bytes(f[l3 + 20:l3 + 22], "big") for f in frames}
    assert len(dst_ips) == 10 and len(src_ports) == 100
    assert all(_ipv4_checksum_ok(f[l3:l3 + 20]) for f in frames)


def test_back_to_back_trials_do_not_mix(real):
    """Trial 2 reports only its own packets and latency samples (stats are cleared on load)."""
    gen, _ = real
    gen.run([Stream("l", "p0", rx_port="p1", frame_size=64, rate_pps=10_000, count=5_000, latency=True)], drain_s=0.2)
    c = gen.run([Stream("l", "p0", rx_port="p1", frame_size=64, rate_pps=10_000, count=700, latency=True)], drain_s=0.2)
    s = c.streams["l"]
    assert s.tx + s.unsent == 700 and s.rx == s.tx
    assert s.latency.samples == s.rx
    assert sum(n for _, _, n in s.latency.histogram) == s.rx


def test_bad_streams_are_refused(real):
    gen, _ = real
    with pytest.raises(StreamError, match="port 'p7'"):   # ours, before anything reaches TRex
        gen.load([Stream("x", "p7", frame_size=64, rate_pps=1)])
    with pytest.raises(StreamError, match="above its line rate"):
        gen.load([Stream("x", "p0", frame_size=64, rate_pps=20e6)])
    # one TRex refuses itself: two streams claiming one pg_id
    [pg] = pg_ids(0, 1, 7)
    sub = {"pg_id": pg, "packet_hex": "00" * 60, "pps": 10.0, "total_pkts": 10, "latency": False, "vm": [],
           "fix_ipv4": None}
    spec = {"name": "dup", "id": 0, "port": 0, "substreams": [sub, dict(sub)]}
    with pytest.raises(TrexError, match="load"):
        gen.rpc("load", streams=[spec])
    # and the driver is still usable afterwards
    c = gen.run([Stream("ok", "p0", rx_port="p1", frame_size=64, rate_pps=10_000, count=100)], drain_s=0.2)
    assert c.streams["ok"].rx + c.streams["ok"].unsent == 100


def test_timed_trial_counts_what_was_not_built_as_unsent(real):
    """Streams with one duration run as continuous streams TRex stops at the end of the
    schedule: at a rate far above what low_end TRex can build or the ring takes, tx + unsent
    is the schedule and nothing is lost on the loopback; at a low rate unsent is ~0."""
    gen, _ = real
    c = gen.run([Stream("slow", "p0", rx_port="p1", frame_size=64, rate_pps=5_000, duration_s=0.5)], drain_s=0.2)
    s = c.streams["slow"]
    # TRex's stop is a timer: it may send a packet or so past rate * duration (offered follows)
    assert 2_500 <= s.offered <= 2_525 and s.tx + s.unsent == s.offered and s.unsent <= 25 and s.lost == 0
    c = gen.run([Stream("fast", "p0", rx_port="p1", frame_size=64, rate_pps=14e6, duration_s=0.5)], drain_s=0.2)
    s = c.streams["fast"]
    assert s.offered == 7_000_000 and s.tx + s.unsent == s.offered and s.unsent > 0 and s.lost == 0
