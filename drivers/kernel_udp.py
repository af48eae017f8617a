"""A tiny UDP sender/receiver for kernel hosts in namespaces (smoke tests, functional checks).

Not a rate tool (veth paths top out near 0.1 Mpps; rates are measured with softgen over fast
wires). Every datagram carries a sequence number, so the receiver reports received, duplicate
and out-of-order counts, and the sender reports what it really sent (``unsent`` separately).

    python -m drivers.kernel_udp recv --bind 10.0.0.2:9000 --count 1000 --timeout 5
    python -m drivers.kernel_udp send --to 10.0.0.2:9000 --count 1000 --pps 5000 --size 100

Both print one JSON line with their counters at the end.
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import time

MAGIC = 0x0FB0_5EED
HEADER = struct.Struct("!IQ")  # magic, sequence number


def send(to: tuple[str, int], count: int, pps: float, size: int) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    pad = b"\0" * max(0, size - HEADER.size)
    sent = unsent = 0
    t0 = time.perf_counter()
    for seq in range(count):
        due = t0 + seq / pps
        while (now := time.perf_counter()) < due:
            if due - now > 0.002:
                time.sleep(due - now - 0.001)
        try:
            s.sendto(HEADER.pack(MAGIC, seq) + pad, to)
            sent += 1
        except OSError:
            unsent += 1
    elapsed = time.perf_counter() - t0
    return {"tx_packets": sent, "unsent_packets": unsent, "duration_s": round(elapsed, 4),
            "tx_kpps": round(sent / elapsed / 1e3, 3) if elapsed else 0.0}


def receive(bind: tuple[str, int], count: int, timeout_s: float, ready_file: str | None) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(bind)
    if ready_file:
        open(ready_file, "w").close()
    seen: set[int] = set()
    rx = dup = ooo = foreign = 0
    last = -1
    deadline = time.monotonic() + timeout_s
    s.settimeout(0.2)
    while len(seen) < count and time.monotonic() < deadline:
        try:
            data = s.recv(65535)
        except socket.timeout:
            continue
        if len(data) < HEADER.size or HEADER.unpack_from(data)[0] != MAGIC:
            foreign += 1
            continue
        seq = HEADER.unpack_from(data)[1]
        rx += 1
        if seq in seen:
            dup += 1
            continue
        if seq < last:
            ooo += 1
        last = max(last, seq)
        seen.add(seq)
    return {"rx_packets": len(seen), "rx_datagrams": rx, "duplicate_packets": dup,
            "out_of_order_packets": ooo, "foreign_packets": foreign}


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m drivers.kernel_udp")
    sub = p.add_subparsers(dest="mode", required=True)
    ps = sub.add_parser("send")
    ps.add_argument("--to", type=_addr, required=True)
    ps.add_argument("--count", type=int, default=1000)
    ps.add_argument("--pps", type=float, default=5000.0)
    ps.add_argument("--size", type=int, default=100, help="UDP payload bytes (>= 12)")
    pr = sub.add_parser("recv")
    pr.add_argument("--bind", type=_addr, required=True)
    pr.add_argument("--count", type=int, default=1000)
    pr.add_argument("--timeout", type=float, default=10.0)
    pr.add_argument("--ready-file", default=None)
    a = p.parse_args(argv)
    if a.mode == "send":
        out = send(a.to, a.count, a.pps, a.size)
    else:
        out = receive(a.bind, a.count, a.timeout, a.ready_file)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
