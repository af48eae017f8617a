"""The apps of source document 002 as traffic: a sender and a receiver over UDP.

Each app sends messages of (mean) length L at exponentially distributed intervals of mean E.
A message is cut into UDP datagrams that each carry a 32-byte header (app id, message id,
offset, total length, send-start time), so the receiver can time every message from its send
start to its last byte, whatever path or order its datagrams took (flows may move between
paths mid-message when the controller re-selects).

Clock: CLOCK_REALTIME in both programs (same machine, namespaces share it); the receiver
takes the arrival time of each datagram from the kernel (SO_TIMESTAMPNS, CLOCK_REALTIME), so
its own Python latency is not counted.

Sender pacing: the sender host's access link is emulated by a token bucket at --access-mbps
(1 Gbit/s like the document's GbE servers); apps with pending data share it round-robin, one
datagram per app per round, like per-app sockets on one NIC.

CLI (run each side inside its network namespace):
  python -m traces.wan_apps recv --scenario S.yaml --out recv.csv [--duration-s N] [--listen IP]
  python -m traces.wan_apps send --scenario S.yaml --dst IP --duration-s N --out sent.csv
"""
from __future__ import annotations

import argparse
import csv
import heapq
import math
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass
from typing import Iterable, Sequence

from dut.wan.config import App, Framing, Scenario, load_scenario

HEADER = struct.Struct("!2sHIIIQ8x")          # magic, app id, msg id, offset, total, start ns
MAGIC = b"W2"
assert HEADER.size == 32
SO_TIMESTAMPNS = 35
IP_PKTINFO = 8


@dataclass(frozen=True)
class Message:
    at_ns: int          # offset from the start of the run (scheduled generation time)
    app_index: int      # index in scenario.apps (app id on the wire = index + 1)
    msg_id: int
    length_bytes: int


def message_schedule(apps: Sequence[App], duration_s: float, seed: int) -> list[Message]:
    """Every message of every app in [0, duration): Poisson arrivals (exponential intervals of
    mean E), lengths fixed or exponential with mean L.  Deterministic for a seed."""
    out: list[Message] = []
    for idx, app in enumerate(apps):
        rng = random.Random(f"{seed}/{app.name}")
        t, msg_id = 0.0, 0
        while True:
            t += rng.expovariate(1000.0 / app.interval_ms)
            if t >= duration_s:
                break
            if app.size_distribution == "exponential":
                length = max(1, int(round(rng.expovariate(1.0 / app.length_bytes))))
            else:
                length = app.length_bytes
            out.append(Message(int(t * 1e9), idx, msg_id, length))
            msg_id += 1
    out.sort(key=lambda m: m.at_ns)
    return out


def chunks(length_bytes: int, framing: Framing) -> list[tuple[int, int]]:
    """(offset, size) of the data in each datagram of one message."""
    step = framing.data_bytes_per_frame
    return [(off, min(step, length_bytes - off)) for off in range(0, length_bytes, step)] or [(0, 0)]


def pack(app_id: int, msg_id: int, offset: int, total: int, start_ns: int) -> bytes:
    return HEADER.pack(MAGIC, app_id, msg_id, offset, total, start_ns)


def unpack(data: bytes) -> tuple[int, int, int, int, int] | None:
    if len(data) < HEADER.size or data[:2] != MAGIC:
        return None
    _, app_id, msg_id, offset, total, start = HEADER.unpack_from(data)
    return app_id, msg_id, offset, total, start


class Reassembler:
    """Counts bytes per (app, message); a message completes when all its bytes arrived.
    Duplicate datagrams (same offset) are counted once."""

    def __init__(self) -> None:
        self.partial: dict[tuple[int, int], tuple[int, set[int], int]] = {}
        self.done: set[tuple[int, int]] = set()

    def feed(self, app_id: int, msg_id: int, offset: int, total: int, start_ns: int,
             nbytes: int, rx_ns: int) -> tuple[int, int, int, int] | None:
        """Returns (app_id, msg_id, start_ns, rx_ns of the last byte) when complete."""
        key = (app_id, msg_id)
        if key in self.done:
            return None
        got, offsets, _ = self.partial.get(key, (0, set(), start_ns))
        if offset in offsets:
            return None
        offsets.add(offset)
        got += nbytes
        if got >= total:
            self.partial.pop(key, None)
            self.done.add(key)
            return app_id, msg_id, start_ns, rx_ns
        self.partial[key] = (got, offsets, start_ns)
        return None


# --- results --------------------------------------------------------------------------------

def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    k = (len(sorted_values) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def app_stats(delays_ms: Iterable[float], deadline_ms: float, sent: int | None = None) -> dict:
    """mean/p50/p99 delay and deadline hit rate (lost messages count as misses when `sent`)."""
    d = sorted(delays_ms)
    n = len(d)
    hits = sum(x <= deadline_ms for x in d)
    denom = max(n, sent or 0)
    return {"count": n, "mean_ms": sum(d) / n if n else math.nan, "p50_ms": percentile(d, 0.5),
            "p99_ms": percentile(d, 0.99), "max_ms": d[-1] if d else math.nan,
            "deadline_hit_pct": 100.0 * hits / denom if denom else math.nan,
            "lost": (sent - n) if sent is not None else 0}


def histogram(delays_ms: Iterable[float], bin_ms: float = 5.0) -> dict[float, int]:
    """Counts per bin start (ms), like the document's Figures 7-8 (5 ms bins)."""
    out: dict[float, int] = {}
    for x in delays_ms:
        b = math.floor(x / bin_ms) * bin_ms
        out[b] = out.get(b, 0) + 1
    return dict(sorted(out.items()))


def read_recv_csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return [{"app": r["app"], "msg_id": int(r["msg_id"]), "start_ns": int(r["start_ns"]),
                 "done_ns": int(r["done_ns"]), "delay_ms": float(r["delay_ms"]), "last_if": r["last_if"]}
                for r in csv.DictReader(f)]


def read_sent_csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return [{"app": r["app"], "msg_id": int(r["msg_id"]), "start_ns": int(r["start_ns"]),
                 "length": int(r["length"])} for r in csv.DictReader(f)]


# --- I/O ------------------------------------------------------------------------------------

_stop = False


def _on_signal(*_):
    global _stop
    _stop = True


def run_sender(scn: Scenario, dst: str, duration_s: float, seed: int, access_mbps: float,
               out_path: str, tick_s: float = 0.0002, burst_bytes: int = 64000) -> None:
    apps = scn.apps
    if any(a.udp_port is None for a in apps):
        raise SystemExit(f"{scn.source}: every app needs udp_port to be sent")
    socks = []
    for a in apps:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.connect((dst, a.udp_port))
        socks.append(s)
    schedule = message_schedule(apps, duration_s, seed)
    pending: list[list] = [[] for _ in apps]       # per app: [msg, chunk list, next index, start]
    rate_Bps = access_mbps * 1e6 / 8
    # Bursts of at most burst_bytes (~43 full frames): the switch reads the sender's veth
    # through an AF_PACKET socket whose receive buffer (rmem_default, 208 KiB ~ 90 frames, not
    # settable per namespace) overflows on larger bursts.  The budget accrues at the access
    # rate, so the rate holds as long as the loop wakes at least every burst_bytes/rate.
    budget, burst_cap = 0.0, float(max(burst_bytes, scn.framing.udp_payload_bytes))
    sent_rows = []
    payload = bytes(scn.framing.udp_payload_bytes)
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    last = t0
    i = 0
    while not _stop:
        now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        budget = min(burst_cap, budget + (now - last) / 1e9 * rate_Bps)
        last = now
        while i < len(schedule) and schedule[i].at_ns <= now - t0:
            m = schedule[i]
            pending[m.app_index].append([m, chunks(m.length_bytes, scn.framing), 0, 0])
            i += 1
        active = [k for k in range(len(apps)) if pending[k]]
        if not active:
            if i >= len(schedule):
                break
            time.sleep(max(0.0, (schedule[i].at_ns - (now - t0)) / 1e9))
            continue
        while budget > 0 and active:
            for k in list(active):
                job = pending[k][0]
                m, parts, j, start = job
                if j == 0:
                    start = job[3] = time.clock_gettime_ns(time.CLOCK_REALTIME)
                    sent_rows.append((apps[k].name, m.msg_id, start, m.length_bytes))
                off, size = parts[j]
                hdr = pack(k + 1, m.msg_id, off, m.length_bytes, start)
                try:
                    socks[k].send(hdr + payload[:size])
                except (BlockingIOError, ConnectionRefusedError):
                    pass
                budget -= size + HEADER.size + 28
                job[2] = j + 1
                if job[2] >= len(parts):
                    pending[k].pop(0)
                    if not pending[k]:
                        active.remove(k)
        time.sleep(tick_s)
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["app", "msg_id", "start_ns", "length"])
        w.writerows(sent_rows)


SO_RCVBUFFORCE = 33


def _big_rcvbuf(s: socket.socket, nbytes: int) -> None:
    """SO_RCVBUF is capped at net.core.rmem_max (not settable per namespace); as root,
    SO_RCVBUFFORCE is not, so a receiver descheduled for a while on the shared box does not
    drop datagrams (which would lose whole messages)."""
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, nbytes)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, nbytes)


def run_receiver(scn: Scenario, out_path: str, duration_s: float | None,
                 ready_file: str | None = None, listen: str = "127.0.0.1") -> None:
    socks = {}
    for idx, a in enumerate(scn.apps):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        _big_rcvbuf(s, 16 << 20)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
        s.bind((listen, a.udp_port))
        s.setblocking(False)
        socks[s.fileno()] = s
    names = {i + 1: a.name for i, a in enumerate(scn.apps)}
    ifnames: dict[int, str] = {}
    rs = Reassembler()
    rows = []
    poller = select.poll()
    for fd in socks:
        poller.register(fd, select.POLLIN)
    end = time.monotonic() + duration_s if duration_s else math.inf
    bufsize = scn.framing.udp_payload_bytes + 64
    print("wan_apps recv: ready", flush=True)
    if ready_file:
        with open(ready_file, "w") as f:
            f.write(f"{os.getpid()}\n")
    while not _stop and time.monotonic() < end:
        for fd, _ in poller.poll(200):
            s = socks[fd]
            while True:
                try:
                    data, anc, _, _ = s.recvmsg(bufsize, 256)
                except BlockingIOError:
                    break
                h = unpack(data)
                if h is None:
                    continue
                rx_ns, ifindex = 0, 0
                for lvl, typ, d in anc:
                    if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", d[:16])
                        rx_ns = sec * 10**9 + nsec
                    elif lvl == socket.IPPROTO_IP and typ == IP_PKTINFO:
                        ifindex = struct.unpack("i", d[:4])[0]
                rx_ns = rx_ns or time.clock_gettime_ns(time.CLOCK_REALTIME)
                done = rs.feed(*h, len(data) - HEADER.size, rx_ns)
                if done:
                    if ifindex not in ifnames:
                        try:
                            ifnames[ifindex] = socket.if_indextoname(ifindex)
                        except OSError:
                            ifnames[ifindex] = str(ifindex)
                    app_id, msg_id, start, last = done
                    rows.append((names.get(app_id, str(app_id)), msg_id, start, last,
                                 f"{(last - start) / 1e6:.4f}", ifnames[ifindex]))
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["app", "msg_id", "start_ns", "done_ns", "delay_ms", "last_if"])
        w.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m traces.wan_apps", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--scenario", required=True)
    s.add_argument("--dst", required=True)
    s.add_argument("--duration-s", type=float, required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--access-mbps", type=float, default=1000.0, help="sender access link (default 1000)")
    s.add_argument("--burst-bytes", type=int, default=64000,
                   help="largest back-to-back burst on the access link (default 64000)")
    s.add_argument("--out", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--scenario", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--duration-s", type=float, default=None)
    r.add_argument("--ready-file", default=None, help="written once the sockets are bound")
    r.add_argument("--listen", default="127.0.0.1",
                   help="address the receiver's sockets are bound to (default 127.0.0.1)")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    scn = load_scenario(a.scenario)
    if a.cmd == "send":
        run_sender(scn, a.dst, a.duration_s, a.seed, a.access_mbps, a.out, burst_bytes=a.burst_bytes)
    else:
        run_receiver(scn, a.out, a.duration_s, a.ready_file, a.listen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
