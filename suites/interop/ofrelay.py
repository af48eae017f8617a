"""A recording OpenFlow relay, run in the switch's namespace: the switch connects to
``--listen``, the relay connects on to the controller at ``--to`` and passes every byte both
ways; every FLOW_MOD / GROUP_MOD / METER_MOD the controller sends is appended, as it was on the
wire, to ``--record``. What a controller installs can then be replayed into another switch
(suites/interop/faucet_pipeline.py).

    python -m suites.interop.ofrelay --listen 6700 --to 6653 --record flows.of [--ready-file F]
"""
from __future__ import annotations

import argparse
import os
import socket
import struct
import threading

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


def _pipe(src: socket.socket, dst: socket.socket, record=None, lock=None) -> None:
    buf = bytearray()
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            if record is not None:
                buf += data
                msgs = [m for m in split_messages(buf) if m[1] in RECORDED]
                if msgs:
                    with lock:
                        record.write(b"".join(msgs))
                        record.flush()
    except OSError:
        pass
    finally:
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
    a = p.parse_args(argv)
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
            threading.Thread(target=_pipe, args=(sw, ctl), daemon=True).start()
            threading.Thread(target=_pipe, args=(ctl, sw, record, lock), daemon=True).start()


if __name__ == "__main__":
    raise SystemExit(main())
