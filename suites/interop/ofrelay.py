"""A recording OpenFlow relay, run in the switch's namespace: the switch connects to
``--listen``, the relay connects on to the controller at ``--to`` and passes every byte both
ways; every FLOW_MOD / GROUP_MOD / METER_MOD the controller sends is appended, as it was on the
wire, to ``--record``. What a controller installs can then be replayed into another switch
(suites/interop/faucet_pipeline.py). ``--counts``: a JSON file with the messages of each type each way (``to_controller`` /
``to_switch``, by OpenFlow type number) and the distinct (in_port, eth_src) of the PACKET_INs
the switch sent: what reached the controller, counted on the wire between the two. Rewritten
every half second while it changes.

    python -m suites.interop.ofrelay --listen 6700 --to 6653 --record flows.of [--ready-file F]
        [--counts counts.json]
"""
from __future__ import annotations

import argparse
import os
import socket
import struct
import json
import threading
import time

RECORDED = {14, 15, 29}  # OFPT_FLOW_MOD, OFPT_GROUP_MOD, OFPT_METER_MOD


def split_messages(buf: bytearray) -> list[bytes]:
    """Whole OpenFlow messages at the front of ``buf`` (removed from it)."""
    out = []
    while len(buf) >= 8:
        length = struct.unpack("!H", buf[2:4])[0]
        if length < 8 or len(buf) < length:
            break
        out.append(bytes(buf[:length]))
        del buf[:length]
    return out


def packet_in_source(m: bytes) -> tuple[int, bytes] | None:
    """(in_port, eth_src) of an OpenFlow 1.3 PACKET_IN (type 10), None if it has neither."""
    if len(m) < 32 or m[1] != 10:
        return None
    mlen = struct.unpack("!H", m[26:28])[0]  # the match after a 24-byte fixed part
    in_port, o = None, 28
    while o + 4 <= 24 + mlen and o + 4 <= len(m):
        cls, fld, n = struct.unpack("!HBB", m[o:o + 4])
        if cls == 0x8000 and fld >> 1 == 0 and n == 4:
            in_port = struct.unpack("!I", m[o + 4:o + 8])[0]
        o += 4 + n
    data = 24 + (mlen + 7) // 8 * 8 + 2  # the match padded to 8, then 2 bytes of pad
    if in_port is None or len(m) < data + 12:
        return None
    return in_port, bytes(m[data + 6:data + 12])


class Counts:
    """Messages by type each way and the distinct PACKET_IN sources, dumped to ``path``."""

    def __init__(self, path: str):
        self.path, self.lock, self.changed = path, threading.Lock(), True
        self.types = {"to_controller": {}, "to_switch": {}}
        self.sources: set = set()

    def every(self, period_s: float = 0.5) -> None:
        """Dump whenever something changed, each ``period_s`` (a daemon thread's loop)."""
        while True:
            with self.lock:
                if self.changed:
                    self.dump()
            time.sleep(period_s)

    def add(self, way: str, msgs: list[bytes]) -> None:
        with self.lock:
            for m in msgs:
                t = self.types[way]
                t[m[1]] = t.get(m[1], 0) + 1
                s = packet_in_source(m) if way == "to_controller" else None
                if s is not None:
                    self.sources.add(s)
            self.changed = True

    def dump(self) -> None:
        self.changed = False
        ports: dict = {}
        for port, _ in self.sources:
            ports[port] = ports.get(port, 0) + 1
        out = {**self.types, "packet_in_sources": len(self.sources),
               "packet_in_sources_by_port": ports}
        with open(self.path + ".tmp", "w") as f:
            json.dump(out, f)
        os.replace(self.path + ".tmp", self.path)


def _pipe(src: socket.socket, dst: socket.socket, record=None, lock=None,
          counts: Counts | None = None, way: str = "") -> None:
    buf = bytearray()
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            if record is not None or counts is not None:
                buf += data
                msgs = split_messages(buf)
                if counts is not None:
                    counts.add(way, msgs)
                rec = [m for m in msgs if m[1] in RECORDED]
                if rec and record is not None:
                    with lock:
                        record.write(b"".join(rec))
                        record.flush()
    except OSError:
        pass
    finally:
        if counts is not None:
            with counts.lock:
                counts.dump()
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m suites.interop.ofrelay")
    p.add_argument("--listen", type=int, required=True)
    p.add_argument("--to", type=int, required=True)
    p.add_argument("--record", required=True)
    p.add_argument("--ready-file")
    p.add_argument("--counts", help="JSON file: messages each way, PACKET_IN sources")
    a = p.parse_args(argv)
    counts = Counts(a.counts) if a.counts else None
    if counts is not None:
        threading.Thread(target=counts.every, daemon=True).start()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", a.listen))
    ls.listen(4)
    if a.ready_file:
        with open(a.ready_file + ".tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(a.ready_file + ".tmp", a.ready_file)
    lock = threading.Lock()
    with open(a.record, "ab") as record:
        while True:
            sw, _ = ls.accept()
            try:
                ctl = socket.create_connection(("127.0.0.1", a.to), timeout=5)
            except OSError:
                sw.close()
                continue
            ctl.settimeout(None)
            threading.Thread(target=_pipe, args=(sw, ctl, None, None, counts, "to_controller"),
                             daemon=True).start()
            threading.Thread(target=_pipe, args=(ctl, sw, record, lock, counts, "to_switch"),
                             daemon=True).start()


if __name__ == "__main__":
    raise SystemExit(main())
