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
import time

from drivers.trafficgen.base import TrafficGenerator
from drivers.trafficgen.counters import Counters, PortCounters, StreamCounters, check_counters
from drivers.trafficgen.latency import PERCENTILES, LatencyStats
from drivers.trafficgen.model import PortInfo, ResolvedStream

from .translate import stream_spec
from paths import REPO

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


def latency_from_trex(lat: dict, rx: int | None = None) -> LatencyStats:
    """latency[pg]['latency'] of TRex -> LatencyStats; percentiles from its usec histogram
    (upper edge of the bucket holding the rank, clamped to total_max).

    TRex's bucket "0" (samples under 10 us) is a running maximum that CTimeHistogram::Reset()
    does not clear (v3.08, time_histogram.cpp: m_short_latency), so after the first trial on a
    server it can hold the previous trials' count (README finding 5).  Every received latency
    packet is in exactly one bucket, so with rx (the pg_id's flow-stats rx) the "0" bucket is
    rx minus the other buckets."""
    raw = {float(k): int(v) for k, v in (lat.get("histogram") or {}).items()}
    if rx is not None:
        raw[0.0] = max(0, int(rx) - sum(v for k, v in raw.items() if k > 0))
    hist = sorted((k, v) for k, v in raw.items() if v)
    n = sum(c for _, c in hist)
    tmax = float(lat.get("total_max") or 0)
    if n and not tmax:
        # TRex v3.08 leaves total_max (and last_max) at 0 until its RX core's periodic update,
        # i.e. for trials of ~1 s it is 0 with thousands of samples (README finding 3): the upper
        # edge of the highest non-empty bucket is then the bound we can state
        tmax = max(low + _bucket_width_us(low) for low, c in hist if c)
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


def latency_unsettled(specs: list[dict], stats: dict) -> list[int]:
    """pg_ids with received latency packets whose total_min/average TRex has not published yet
    (pure).  TRex folds min, max and the average into them in a periodic update (every 0.5 s,
    CTimeHistogram::update); read right after a short trial they are still 0 (README finding 4).
    The histogram buckets themselves are counted per packet."""
    flow = stats.get("flow_stats") or {}
    lat = stats.get("latency") or {}
    out = []
    for spec in specs:
        for sub in spec["substreams"]:
            if not sub["latency"]:
                continue
            rx = int(((_get(flow, sub["pg_id"]) or {}).get("rx_pkts") or {}).get("total", 0))
            ls = (_get(lat, sub["pg_id"]) or {}).get("latency") or {}
            if rx and not (ls.get("total_min") and ls.get("average")):
                out.append(sub["pg_id"])
    return out


def map_trex_stats(specs: list[dict], stats: dict, port_names: dict[int, str]) -> Counters:
    """TRex get_stats() -> Counters.  Per port: opackets/ipackets/obytes/ibytes.  Per stream:
    the sum over its sub-streams of flow_stats[pg]['tx_pkts'|'rx_pkts']['total']; latency and
    dup/out-of-order from latency[pg] (first sub-stream).  unsent = burst size - tx, plus what
    the TX ring refused (_move_tx_drops_to_unsent)."""
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
            offered = sub["total_pkts"] if sub["total_pkts"] is not None else (sub.get("offered") or tx)
            # a timed stream may send a few more than rate * duration (TRex's stop is a timer)
            offered = max(offered, tx)
            sc.offered += offered
            sc.unsent += max(0, offered - tx)
            if sub["latency"]:
                ls = _get(lat, sub["pg_id"])
                if ls:
                    sc.latency = latency_from_trex(ls.get("latency") or {}, rx=rx)
                    err = ls.get("err_cntrs") or {}
                    sc.duplicate += int(err.get("dup", 0))
                    sc.out_of_order += int(err.get("out_of_order", 0))
                else:
                    sc.latency = LatencyStats()
        c.streams[sc.name] = sc
    _move_tx_drops_to_unsent(c, specs, port_names)
    return check_counters(c)


def _split(total: int, weights: list[int]) -> list[int]:
    """total split in proportion to weights, in integers that add up to total (largest remainder)."""
    w = sum(weights)
    if not w:
        return [0] * len(weights)
    raw = [total * x / w for x in weights]
    out = [int(r) for r in raw]
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)[:total - sum(out)]:
        out[i] += 1
    return out


def _move_tx_drops_to_unsent(c: Counters, specs: list[dict], port_names: dict[int, str]) -> None:
    """TRex counts a packet in its flow stats when its DP core builds it; in low_end mode a
    packet the port's TX ring refuses is then dropped, not retried (main_dpdk.cpp send_burst:
    m_is_queuefull_retry is off in low_end), and it never reaches the wire (README finding 6).
    Per TX port, flow tx - port opackets is that drop: it is moved from tx to unsent/refused,
    so it never counts as loss.  Exact per port; over a port's streams it is split in
    proportion to what each is missing (tx - rx), never more than that, so no stream ends with
    rx > tx (an estimate per stream when a port has several)."""
    by_port: dict[str, list[StreamCounters]] = {}
    for spec in specs:
        name = port_names.get(spec["port"])
        if name is not None and spec["name"] in c.streams:
            by_port.setdefault(name, []).append(c.streams[spec["name"]])
    for name, streams in by_port.items():
        dropped = sum(s.tx for s in streams) - c.ports[name].tx
        if dropped <= 0:
            continue
        missing = [max(0, s.tx - (s.rx - s.duplicate)) for s in streams]
        shares = _split(min(dropped, sum(missing)), missing)
        if dropped > sum(missing):  # more refused than missing: the rest by tx (then rx > tx shows)
            shares = [a + b for a, b in zip(shares, _split(dropped - sum(missing), [s.tx for s in streams]))]
        for s, d in zip(streams, shares):
            s.tx -= d
            s.unsent += d
            s.refused += d
        c.ports[name].unsent += dropped


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
        self._epoch = -1   # pg_id block of the current load (translate.pg_ids)
        self._duration: float | None = None   # timed trial: start(duration) stops it
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
        self._epoch += 1
        # one duration for every stream: continuous streams that TRex stops at the end of the
        # schedule (translate.stream_spec, timed); else single bursts
        durations = {r.duration_s if r.count is None else None for r in streams}
        self._duration = durations.pop() if len(durations) == 1 and None not in durations else None
        self._specs = [stream_spec(r, self._index[r.port], self._epoch, timed=self._duration is not None)
                       for r in streams]
        self.rpc("load", streams=self._specs)

    def start(self) -> None:
        self.rpc("start", duration=self._duration if self._duration is not None else -1)

    def stop(self) -> None:
        self.rpc("stop")

    def is_running(self) -> bool:
        return self.rpc("running")["running"]

    def counters(self, settle_timeout_s: float = 3.0) -> Counters:
        """Counters once TRex's latency statistics have caught up with its flow counters (see
        latency_unsettled); after settle_timeout_s they are returned as they are."""
        deadline = time.monotonic() + settle_timeout_s
        while True:
            stats = self.rpc("stats")["stats"]
            if not latency_unsettled(self._specs, stats) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
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
