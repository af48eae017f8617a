"""The two end hosts of the controller experiment (run inside their network namespaces).

  send  replay a pcap on an interface with a raw AF_PACKET socket at a fixed packet rate
        (tcpreplay is not installed; scapy's sendp is ~13 kpps and jittery). Prints a JSON
        line: sent, unsent, duration.
  recv  capture the trace's frames (IPv4 to --dst-ip, TCP --dport) with kernel receive
        timestamps (SO_TIMESTAMPNS, CLOCK_REALTIME, the controller log's clock) and append one
        ``ip_id,precedence,t_ns`` line per frame to --out until SIGTERM. Lines are buffered
        and flushed once the link has been idle for 20 ms (the timestamps are the kernel's,
        so writing late changes nothing): no write syscall per frame while the controller
        under test needs the CPU. ``--nice`` lowers its priority for the same reason.

    python -m suites.controller.hosts send --iface eth0 --pcap t.pcap --pps 10000
    python -m suites.controller.hosts recv --iface eth0 --out arrivals.csv --ready-file r
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from dut.controller.search_worker import set_nice
from traces.pcap import read_pcap

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35
SCM_TIMESTAMPNS = SO_TIMESTAMPNS


def pace_schedule(n: int, pps: float, start: float) -> list[float]:
    """Send time of each packet (seconds, monotonic) for a constant rate."""
    return [start + i / pps for i in range(n)]


def send(iface: str, pcap: str, pps: float) -> dict:
    frames = read_pcap(pcap)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    sent = unsent = 0
    t0 = time.monotonic()
    for f, t in zip(frames, pace_schedule(len(frames), pps, t0)):
        while time.monotonic() < t:
            pass  # busy-wait: sleep() granularity (~60 us) is coarser than 100 us gaps
        try:
            s.send(f)
            sent += 1
        except OSError:
            unsent += 1
    dur = time.monotonic() - t0
    s.close()
    return {"sent": sent, "unsent": unsent, "duration_s": round(dur, 4),
            "tx_kpps": round(sent / dur / 1e3, 2) if dur > 0 else None}


def parse_trace_frame(frame: bytes, dst_ip: bytes, dport: int):
    """(ip_id, precedence) if ``frame`` is a trace packet (IPv4 to dst_ip, TCP dport), else None."""
    if len(frame) < 14 + 20 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    if ip[9] != 6 or ip[16:20] != dst_ip:
        return None
    l4 = (ip[0] & 0x0F) * 4
    if struct.unpack("!H", ip[l4 + 2:l4 + 4])[0] != dport:
        return None
    return struct.unpack("!H", ip[4:6])[0], ip[1] >> 5


IDLE_FLUSH_S = 0.02


def recv(iface: str, out: str, dst_ip: str, dport: int, ready_file: str | None,
         nice: int = 0) -> None:
    if nice:
        set_nice(nice)  # the supervisor starts us in our own session: os.nice alone is void
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.settimeout(IDLE_FLUSH_S)
    dst = ipaddress.IPv4Address(dst_ip).packed
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))
    with open(out, "a", buffering=1 << 20) as f:
        if ready_file:
            Path(ready_file).write_text("ready\n")
        while not stop["now"]:
            try:
                data, anc, _flags, addr = s.recvmsg(65535, 64)
            except socket.timeout:
                f.flush()  # idle: the burst (or a pause in it) is over
                continue
            except InterruptedError:
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            hit = parse_trace_frame(data, dst, dport)
            if hit is None:
                continue
            t_ns = time.time_ns()
            for level, kind, cdata in anc:
                if level == socket.SOL_SOCKET and kind == SCM_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", cdata[:16])
                    t_ns = sec * 1_000_000_000 + nsec
            f.write(f"{hit[0]},{hit[1]},{t_ns}\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m suites.controller.hosts")
    sub = p.add_subparsers(dest="cmd", required=True)
    ps = sub.add_parser("send")
    ps.add_argument("--iface", required=True)
    ps.add_argument("--pcap", required=True)
    ps.add_argument("--pps", type=float, default=10000.0)
    pr = sub.add_parser("recv")
    pr.add_argument("--iface", required=True)
    pr.add_argument("--out", required=True)
    pr.add_argument("--dst-ip", default="10.66.0.2")
    pr.add_argument("--dport", type=int, default=5001)
    pr.add_argument("--ready-file")
    pr.add_argument("--nice", type=int, default=0,
                    help="nice value of the receiver (process and its session's autogroup)")
    a = p.parse_args(argv)
    if a.cmd == "send":
        print(json.dumps(send(a.iface, a.pcap, a.pps)))
    else:
        recv(a.iface, a.out, a.dst_ip, a.dport, a.ready_file, a.nice)
    return 0


if __name__ == "__main__":
    sys.exit(main())
