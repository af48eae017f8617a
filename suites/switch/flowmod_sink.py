"""A null switch for the control-plane benchmark's sender ceiling: connects to the controller
like a switch, says HELLO, answers FEATURES_REQUEST, BARRIER_REQUEST and ECHO_REQUEST, and
drops everything else. It only frames messages (no parsing of their bodies), in its own
process, so what limits the bulk rate measured against it is the sending client.
Usage: python -m suites.switch.flowmod_sink HOST PORT"""
from __future__ import annotations

import socket
import struct
import sys


def serve(conn: socket.socket) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sendall(struct.pack("!BBHI", 4, 0, 8, 1))
    buf = bytearray()
    unpack = struct.unpack_from
    while True:
        chunk = conn.recv(1 << 20)
        if not chunk:
            return
        buf += chunk
        o, n, out = 0, len(buf), []
        while n - o >= 8:
            t, length, xid = buf[o + 1], unpack("!H", buf, o + 2)[0], unpack("!I", buf, o + 4)[0]
            if length < 8:
                return
            if n - o < length:
                break
            if t == 20:  # BARRIER_REQUEST
                out.append(struct.pack("!BBHI", 4, 21, 8, xid))
            elif t == 5:  # FEATURES_REQUEST
                out.append(struct.pack("!BBHIQIBB2xII", 4, 6, 32, xid, 0xF0, 0, 1, 0, 0, 0))
            elif t == 2:  # ECHO_REQUEST
                out.append(struct.pack("!BBHI", 4, 3, length, xid) + bytes(buf[o + 8:o + length]))
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
