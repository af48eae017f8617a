"""Pipeline benchmark: 64-byte packets through ONE switch lcore with 100k wildcard flows of
mixed masks installed by FLOW_MOD; ofbench's ofswitch against OVS-DPDK with the same flows and
the same I/O, in the same run.

I/O, identical for both switches: port 1 = DPDK's pcap PMD replaying (``infinite_rx=1``, from
memory) a pcap of distinct 64-byte UDP frames that each match some flow; port 2 = net_null
(discards). So no generator competes for the 2 cores, and what is measured is rx + pipeline +
tx of the switch itself. Rate = growth of port 2's tx_packets (OpenFlow port stats) over
``duration_s`` after a warm-up.

Flows (table 0, all output:2), four mask shapes, 25 % each, random priorities:
  ipv4_dst/32 + udp_dst;  ipv4_dst/24;  ipv4_src/16 + ipv4_dst/16;  eth_dst/24 (OUI) + ipv4_dst/28

The pure parts (flows, frames, pcap bytes) are functions with unit tests; ``run_pipeline_bench``
does the I/O. CLI: ``python -m suites.switch.pipeline [--flows N] [--kinds ofbench,ovs-dpdk]``.
"""
from __future__ import annotations

import argparse
import json
import itertools
import os
import random
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dut.profiles.schema import DEFAULT_LOOKUP, SWITCH_LOOKUPS
from dut.switch.tests import ofwire as w

SHAPES = ("dst32_udp", "dst24", "src16_dst16", "oui_dst28")


@dataclass(frozen=True)
class BenchFlow:
    shape: str
    priority: int
    ipv4_src: int
    ipv4_dst: int
    udp_dst: int
    eth_dst: bytes


def make_flows(n: int, seed: int = 1) -> list[BenchFlow]:
    rng = random.Random(seed)
    flows = []
    for i in range(n):
        shape = SHAPES[i % 4]
        flows.append(BenchFlow(shape, rng.randint(1, 60000), rng.getrandbits(32) & 0xFFFF0000,
                               rng.getrandbits(32), rng.randint(1, 65535),
                               bytes([0x02, rng.randrange(256), rng.randrange(256)]) + b"\0\0\0"))
    return flows


def _mask32(bits: int) -> int:
    return (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF if bits else 0


def flow_match(f: BenchFlow) -> bytes:
    et = w.oxm(5, b"\x08\x00")
    ip4 = lambda field, v, bits: w.oxm(field, struct.pack("!I", v & _mask32(bits)),  # noqa: E731
                                      None if bits == 32 else struct.pack("!I", _mask32(bits)))
    if f.shape == "dst32_udp":
        return w.match(et, w.oxm(10, b"\x11"), ip4(12, f.ipv4_dst, 32),
                       w.oxm(16, struct.pack("!H", f.udp_dst)))
    if f.shape == "dst24":
        return w.match(et, ip4(12, f.ipv4_dst, 24))
    if f.shape == "src16_dst16":
        return w.match(et, ip4(11, f.ipv4_src, 16), ip4(12, f.ipv4_dst, 16))
    return w.match(w.oxm(3, f.eth_dst, b"\xff\xff\xff\0\0\0"), et, ip4(12, f.ipv4_dst, 28))


def flow_mod_msg(f: BenchFlow, out_port: int = 2, xid: int = 0) -> bytes:
    return w.flow_mod(priority=f.priority, match_=flow_match(f),
                      instructions=w.apply_actions(w.action_output(out_port, 0)), xid=xid)


def _csum(b: bytes) -> int:
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def frame_for(f: BenchFlow, rng: random.Random) -> bytes:
    """A 60-byte (64 with FCS) Ethernet/IPv4/UDP frame that matches flow f."""
    eth_dst = f.eth_dst[:3] + bytes(rng.randrange(256) for _ in range(3))
    dst = f.ipv4_dst
    if f.shape == "dst24":
        dst = (dst & 0xFFFFFF00) | rng.randrange(256)
    elif f.shape == "src16_dst16":
        dst = (dst & 0xFFFF0000) | rng.randrange(65536)
    elif f.shape == "oui_dst28":
        dst = (dst & 0xFFFFFFF0) | rng.randrange(16)
    src = f.ipv4_src | rng.randrange(65536)
    udp_dst = f.udp_dst if f.shape == "dst32_udp" else rng.randint(1, 65535)
    payload = bytes(18)
    udp = struct.pack("!HHHH", rng.randint(1024, 65535), udp_dst, 8 + len(payload), 0) + payload
    ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst))
    struct.pack_into("!H", ip, 10, _csum(bytes(ip)))
    return eth_dst + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + bytes(ip) + udp


def pcap_bytes(frames: list[bytes]) -> bytes:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, fr in enumerate(frames):
        out.append(struct.pack("<IIII", i // 1000000, i % 1000000, len(fr), len(fr)) + fr)
    return b"".join(out)


def make_pcap(path: Path, flows: list[BenchFlow], n_frames: int, seed: int = 2) -> None:
    rng = random.Random(seed)
    frames = [frame_for(rng.choice(flows), rng) for _ in range(n_frames)]
    path.write_bytes(pcap_bytes(frames))


# ---- I/O ------------------------------------------------------------------------------------
def _install(s: w.Session, flows: list[BenchFlow], batch: int = 2000) -> float:
    t0 = time.monotonic()
    buf = []
    for i, f in enumerate(flows):
        buf.append(flow_mod_msg(f, xid=i + 100))
        if len(buf) >= batch:
            s.send(b"".join(buf))
            buf = []
    if buf:
        s.send(b"".join(buf))
    if s.wait_for(w.BARRIER_REPLY, None, 0) is None:
        s.send(w.msg(w.BARRIER_REQUEST, xid=0xB0B0))
        if s.wait_for(w.BARRIER_REPLY, 0xB0B0, 600) is None:
            raise TimeoutError("no barrier reply after installing flows")
    errors = [m for m in s.msgs if m[0] == w.ERROR]
    if errors:
        raise RuntimeError(f"switch refused {len(errors)} flow-mods, first error "
                           f"{errors[0][2][:4].hex()}")
    return time.monotonic() - t0


def cache_hit_ratio(before: dict | None, after: dict | None) -> float | None:
    """Flow-cache hit ratio between two ofswitch stats documents (None if unknown)."""
    if not before or not after:
        return None
    hits = after.get("cache_hits", 0) - before.get("cache_hits", 0)
    misses = after.get("cache_misses", 0) - before.get("cache_misses", 0)
    return round(hits / (hits + misses), 4) if hits + misses > 0 else None


def _measure(s: w.Session, port: int, warmup_s: float, duration_s: float,
             during=None) -> float:
    """Mpps on `port` over duration_s after warmup_s; during(duration_s) runs (e.g. a
    profiler) instead of the plain sleep when given."""
    time.sleep(warmup_s)
    a = s.port_stats(0x1001)[port]["tx_packets"]
    t0 = time.monotonic()
    if during:
        during(duration_s)
    else:
        time.sleep(duration_s)
    b = s.port_stats(0x1002)[port]["tx_packets"]
    return (b - a) / (time.monotonic() - t0) / 1e6


def _perf_during(pid: int, out: str):
    """OFBENCH_BENCH_PERF=<file>: `perf record -g` of the switch process while measuring."""
    import subprocess

    def run(duration_s: float) -> None:
        subprocess.run(["perf", "record", "-g", "-p", str(pid), "-o", out, "--", "sleep",
                        str(duration_s)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
    return run


def _accept(listener: socket.socket, timeout_s: float = 60) -> w.Session:
    listener.settimeout(timeout_s)
    conn, _ = listener.accept()
    s = w.Session(conn)
    s.handshake()
    s.send(w.msg(w.FEATURES_REQUEST, xid=2))
    s.wait_for(6, 2)
    return s


def run_one(lab, kind: str, flows: list[BenchFlow], pcap: Path, *, lcore: int,
            warmup_s: float = 3.0, duration_s: float = 5.0, lookup: str = DEFAULT_LOOKUP,
            tag: str = "bench") -> dict:
    """One switch, one measurement. ``tag`` names its processes and state (OVS db, stats
    socket): unique per run of the bench in a lab, since OVS state dirs outlive a stop."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(2)
    port = listener.getsockname()[1]
    rx_devargs = f"net_pcap0,rx_pcap={pcap},infinite_rx=1"
    stop = None
    stats_of = lambda: None  # noqa: E731
    during = None
    try:
        if kind == "ofbench":
            from drivers.lab.switches import start_switch
            proc = start_switch(lab, "ofbench", name=f"{tag}-ofswitch", ports=[],
                                extra_ports=[(1, {"devargs": rx_devargs}), (2, {"devargs": "net_null0"})],
                                controller=("127.0.0.1", port), dpid=0xB1, lookup=lookup,
                                idle_sleep_us=0, lcores=str(lcore), mem_mb=1024).proc
            stop = lambda: lab.supervisor.stop(proc)  # noqa: E731
            from dut.switch.launcher import read_stats
            sock = Path(lab.state_dir) / f"{tag}-ofswitch.stats"
            stats_of = lambda: read_stats(sock)  # noqa: E731
            if os.environ.get("OFBENCH_BENCH_PERF"):
                during = _perf_during(proc.pid, os.environ["OFBENCH_BENCH_PERF"])
        elif kind == "ovs-dpdk":
            from drivers.lab.ovs import OvsInstance
            ovs = OvsInstance(lab, f"{tag}-ovsdpdk", dpdk=True, dpdk_mem_mb=1024,
                              dpdk_lcore=0, pmd_cpu_mask=hex(1 << lcore))
            stop = ovs.stop
            ovs.start()
            ovs.add_bridge("br0", dpid=0xB2, controller=f"tcp:127.0.0.1:{port}")
            ovs.add_port("br0", "p1", ofport=1, type="dpdk",
                         options={"dpdk-devargs": rx_devargs})
            ovs.add_port("br0", "p2", ofport=2, type="dpdk", options={"dpdk-devargs": "net_null0"})
        else:
            raise ValueError(f"bench: unsupported switch kind {kind!r}")
        s = _accept(listener)
        s.send(w.flow_mod(command=3, table=0xFF))
        install_s = _install(s, flows)
        time.sleep(warmup_s)
        st0 = stats_of()
        mpps = _measure(s, 2, 0, duration_s, during)
        st1 = stats_of()
        s.close()
        out = {"mpps": round(mpps, 3), "install_s": round(install_s, 2)}
        hit = cache_hit_ratio(st0, st1)
        if hit is not None:
            out["cache_hit_ratio"] = hit
        return out
    finally:
        listener.close()
        if stop:
            stop()


_RUNS = itertools.count()  # bench runs in this process: a unique tag for each


def run_pipeline_bench(lab, kinds=("ofbench", "ovs-dpdk"), n_flows: int = 100_000,
                       n_frames: int = 8192, lcore: int = 1, duration_s: float = 5.0,
                       lookup: str = DEFAULT_LOOKUP) -> dict:
    tag = f"bench{next(_RUNS)}"
    flows = make_flows(n_flows)
    pcap = Path(lab.state_dir) / f"{tag}-64b.pcap"
    make_pcap(pcap, flows, n_frames)
    out = {}
    for kind in kinds:
        out[kind] = run_one(lab, kind, flows, pcap, lcore=lcore, duration_s=duration_s,
                            lookup=lookup, tag=tag)
    return out


def metrics_of(res: dict) -> dict:
    m = {}
    if "ofbench" in res:
        m["ofbench_mpps"] = res["ofbench"]["mpps"]
        m["ofbench_install_s"] = res["ofbench"]["install_s"]
        if "cache_hit_ratio" in res["ofbench"]:
            m["ofbench_cache_hit_ratio"] = res["ofbench"]["cache_hit_ratio"]
    if "ovs-dpdk" in res:
        m["ovs_dpdk_mpps"] = res["ovs-dpdk"]["mpps"]
        m["ovs_dpdk_install_s"] = res["ovs-dpdk"]["install_s"]
    if m.get("ofbench_mpps") and m.get("ovs_dpdk_mpps"):
        m["speedup_vs_ovs_dpdk"] = round(m["ofbench_mpps"] / m["ovs_dpdk_mpps"], 2)
    return m


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m suites.switch.pipeline", description=__doc__.split("\n")[0])
    p.add_argument("--flows", type=int, default=100_000)
    p.add_argument("--kinds", default="ofbench,ovs-dpdk")
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--lookup", default=DEFAULT_LOOKUP, choices=SWITCH_LOOKUPS)
    p.add_argument("--frames", type=int, default=8192,
                   help="distinct frames in the pcap (the flow cache's working set)")
    p.add_argument("--profile", default="local")
    a = p.parse_args(argv)
    from datetime import datetime, timezone
    import secrets
    import tempfile
    from dut.profiles.schema import load_profile
    from drivers.lab.local import LocalLab
    prof = load_profile(a.profile)
    run_id = f"run-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    run_dir = Path(tempfile.mkdtemp(prefix="ofb-bench-")) / run_id
    run_dir.mkdir(parents=True)
    lab = LocalLab(prof, run_id, run_dir)
    try:
        res = run_pipeline_bench(lab, tuple(a.kinds.split(",")), a.flows, n_frames=a.frames,
                                 duration_s=a.duration, lookup=a.lookup)
    finally:
        lab.close()
    print(json.dumps({"suite": "switch", "name": f"pipeline_64b_{a.flows // 1000}k_flows",
                      "metrics": metrics_of(res), "params": {"flows": a.flows,
                      "lookup": a.lookup, "frames": a.frames, "io": "pcap infinite_rx -> null", "logs": str(run_dir)}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
