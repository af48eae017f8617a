"""Trex(TrafficGenerator): the generator interface on a TRex server, through client_proc.

The TRex client runs in a child process (see client_proc.py for why); this side keeps the
generator interface, the stream translation (translate.py) and the counter mapping
(map_trex_stats, pure and unit-tested), and talks JSON lines over the child's stdin/stdout.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from drivers.trafficgen.base import TrafficGenerator
from drivers.trafficgen.counters import Counters, PortCounters, StreamCounters, check_counters
from drivers.trafficgen.latency import PERCENTILES, LatencyStats
from drivers.trafficgen.model import PortInfo, ResolvedStream

from .translate import stream_spec

REPO = Path(__file__).resolve().parents[2]
TREX_CLIENT_VERSION = "lbr-trex-client 3.4.0 (TRex v3.04 STL API)"


class TrexError(RuntimeError):
    pass


def _get(d: dict, key):
    """TRex dicts use int keys; after the JSON pipe they are strings."""
    if key in d:
        return d[key]
    return d.get(str(key))


def _bucket_width_us(low: float) -> float:
    return 10.0 if low < 10 else 10.0 ** math.floor(math.log10(low))


def latency_from_trex(lat: dict, err: dict | None = None) -> LatencyStats:
    """latency[pg]['latency'] of TRex -> LatencyStats; percentiles from its usec histogram
    (upper edge of the bucket holding the rank, clamped to total_max)."""
    hist = sorted((float(k), int(v)) for k, v in (lat.get("histogram") or {}).items())
    n = sum(c for _, c in hist)
    tmax = float(lat.get("total_max") or 0)
    pct = {}
    for p in PERCENTILES:
        rank, seen, val = max(1, math.ceil(n * p / 100)), 0, tmax
        for low, c in hist:
            seen += c
            if seen >= rank:
                val = min(low + _bucket_width_us(low), tmax) if tmax else low + _bucket_width_us(low)
                break
        pct[p] = val if n else 0.0
    return LatencyStats(samples=n, min_us=float(lat.get("total_min") or 0), avg_us=float(lat.get("average") or 0),
                        max_us=tmax, p50_us=pct[50.0], p90_us=pct[90.0], p99_us=pct[99.0], p99_9_us=pct[99.9],
                        jitter_us=float(lat["jitter"]) if lat.get("jitter") is not None else None,
                        histogram=[(low, low + _bucket_width_us(low), c) for low, c in hist])


def map_trex_stats(specs: list[dict], stats: dict, port_names: dict[int, str]) -> Counters:
    """TRex get_stats() -> Counters.  Per port: opackets/ipackets/obytes/ibytes.  Per stream:
    the sum over its sub-streams of flow_stats[pg]['tx_pkts'|'rx_pkts']['total']; latency and
    dup/out-of-order from latency[pg] (first sub-stream).  unsent = burst size - tx."""
    c = Counters()
    for idx, name in port_names.items():
        ps = _get(stats, idx) or {}
        c.ports[name] = PortCounters(tx=int(ps.get("opackets", 0)), rx=int(ps.get("ipackets", 0)),
                                     tx_bytes=int(ps.get("obytes", 0)), rx_bytes=int(ps.get("ibytes", 0)))
    flow = stats.get("flow_stats") or {}
    lat = stats.get("latency") or {}
    for spec in specs:
        sc = StreamCounters(name=spec["name"])
        for sub in spec["substreams"]:
            fs = _get(flow, sub["pg_id"]) or {}
            tx = int((fs.get("tx_pkts") or {}).get("total", 0))
            rx = int((fs.get("rx_pkts") or {}).get("total", 0))
            sc.tx += tx
            sc.rx += rx
            sc.tx_bytes += int((fs.get("tx_bytes") or {}).get("total", 0))
            offered = sub["total_pkts"] if sub["total_pkts"] is not None else tx
            sc.offered += offered
            sc.unsent += max(0, offered - tx)
            if sub["latency"]:
                ls = _get(lat, sub["pg_id"])
                if ls:
                    sc.latency = latency_from_trex(ls.get("latency") or {})
                    err = ls.get("err_cntrs") or {}
                    sc.duplicate += int(err.get("dup", 0))
                    sc.out_of_order += int(err.get("out_of_order", 0))
                else:
                    sc.latency = LatencyStats()
        c.streams[sc.name] = sc
    return check_counters(c)


class Trex(TrafficGenerator):
    name = "trex"
    version = TREX_CLIENT_VERSION

    def __init__(self, server: str, ports: dict[str, tuple[int, float]], sync_port: int = 4501,
                 async_port: int = 4500, python: str | None = None, timeout_s: float = 60.0):
        """ports: name -> (TRex port index, line rate in Mb/s), from the profile's port map.
        server "double[:loss]" runs against FakeTrexServerDouble (tests only)."""
        self._ports = {n: PortInfo(n, float(speed), "trex") for n, (_, speed) in ports.items()}
        self._index = {n: int(i) for n, (i, _) in ports.items()}
        self._specs: list[dict] = []
        env = dict(os.environ, PYTHONPATH=str(REPO))
        self.proc = subprocess.Popen([python or sys.executable, "-m", "drivers.trex.client_proc"], cwd=REPO, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.timeout_s = timeout_s
        try:
            self.rpc("hello")
            self.connect_reply = self.rpc("connect", server=server, sync_port=sync_port, async_port=async_port,
                                          ports=sorted(self._index.values()))
            srv = self.connect_reply.get("server_version")
            # provenance: the server that generated the traffic, then the client that drove it
            self.version = f"TRex {srv} (server), {TREX_CLIENT_VERSION}" if srv else \
                f"{TREX_CLIENT_VERSION} against FakeTrexServerDouble (a test double, not a TRex)"
        except Exception:
            self.close()
            raise

    def rpc(self, op: str, **kw) -> dict:
        if self.proc.poll() is not None:
            raise TrexError(f"TRex client process exited with {self.proc.returncode}: {self.proc.stderr.read()[-2000:]}")
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise TrexError(f"TRex client process closed the pipe on '{op}': {self.proc.stderr.read()[-2000:]}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise TrexError(f"TRex {op}: {reply.get('error')}")
        return reply

    def ports(self) -> dict[str, PortInfo]:
        return dict(self._ports)

    def _load(self, streams: list[ResolvedStream]) -> None:
        self._specs = [stream_spec(r, self._index[r.port]) for r in streams]
        self.rpc("load", streams=self._specs)

    def start(self) -> None:
        self.rpc("start", duration=-1)

    def stop(self) -> None:
        self.rpc("stop")

    def is_running(self) -> bool:
        return self.rpc("running")["running"]

    def counters(self) -> Counters:
        stats = self.rpc("stats")["stats"]
        return map_trex_stats(self._specs, stats, {i: n for n, i in self._index.items()})

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.rpc("close")
            except Exception:
                pass
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f:
                f.close()
