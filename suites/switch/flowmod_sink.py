"""A null switch for the control-plane benchmark's sender ceiling: connects to the controller
like a switch, says HELLO, answers FEATURES_REQUEST, BARRIER_REQUEST and ECHO_REQUEST, and
drops everything else. It only frames messages (no parsing of their bodies), in its own
process, so what limits the bulk rate measured against it is the sending client.
Usage: python -m suites.switch.flowmod_sink HOST PORT"""
from __future__ import annotations

import socket
import sys

import openflow as w


def serve(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(w.msg(w.HELLO, xid=1))
    buf = bytearray()
    # locals: this loop runs once per message the client sends (the bench's bulk FLOW_MODs)
    message_length, xid_of = w.message_length, w.xid_of
    barrier, features, echo = w.BARRIER_REQUEST, w.FEATURES_REQUEST, w.ECHO_REQUEST
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk:
            return
        buf += chunk
        o, out = 0, []
        while True:
            try:
                length = message_length(buf, o)
            except ValueError:
                return
            if length is None:
                break
            t = buf[o + 1]
            if t == barrier:
                out.append(w.msg(w.BARRIER_REPLY, xid=xid_of(buf, o)))
            elif t == features:
                out.append(w.features_reply(xid_of(buf, o)))
            elif t == echo:
                out.append(w.retype(bytes(buf[o:o + length]), type_=w.ECHO_REPLY))
            o += length
        del buf[:o]
        if out:
            conn.sendall(b"".join(out))


def main(argv: list[str]) -> int:
    host, port = argv[0], int(argv[1])
    with socket.create_connection((host, port), timeout=30) as conn:
        conn.settimeout(None)
        try:
            serve(conn)
        except (ConnectionError, OSError):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
