"""Minimal OpenFlow 1.3 message builders and a blocking controller-side session, for the
switch's tests (fuzz, forwarding). Only what the tests need; byte layouts per the OF1.3 spec."""
from __future__ import annotations

import socket
import struct
import threading
import time

OFP_VERSION = 4
HELLO, ERROR, ECHO_REQUEST, ECHO_REPLY, FEATURES_REQUEST = 0, 1, 2, 3, 5
PACKET_IN, PACKET_OUT, FLOW_MOD, GROUP_MOD, MULTIPART_REQUEST, MULTIPART_REPLY = 10, 13, 14, 15, 18, 19
BARRIER_REQUEST, BARRIER_REPLY, METER_MOD = 20, 21, 29
OFPP_CONTROLLER, OFPP_ANY = 0xFFFFFFFD, 0xFFFFFFFF
OFPG_ANY = 0xFFFFFFFF
NO_BUFFER = 0xFFFFFFFF


def msg(type_: int, body: bytes = b"", xid: int = 0) -> bytes:
    return struct.pack("!BBHI", OFP_VERSION, type_, 8 + len(body), xid) + body


def oxm(field: int, value: bytes, mask: bytes | None = None) -> bytes:
    payload = value + (mask or b"")
    return struct.pack("!HBB", 0x8000, field << 1 | (1 if mask else 0), len(payload)) + payload


def match(*oxms: bytes) -> bytes:
    body = b"".join(oxms)
    m = struct.pack("!HH", 1, 4 + len(body)) + body
    return m + b"\0" * (-len(m) % 8)


def action_output(port: int, max_len: int = 0xFFFF) -> bytes:
    return struct.pack("!HHIH6x", 0, 16, port, max_len)


def apply_actions(*actions: bytes) -> bytes:
    a = b"".join(actions)
    return struct.pack("!HH4x", 4, 8 + len(a)) + a


def flow_mod(*, command: int = 0, table: int = 0, priority: int = 0x8000, match_: bytes = b"",
             instructions: bytes = b"", cookie: int = 0, flags: int = 0, xid: int = 0,
             out_port: int = OFPP_ANY) -> bytes:
    body = struct.pack("!QQBBHHHIIIH2x", cookie, 0, table, command, 0, 0, priority, NO_BUFFER,
                       out_port, OFPG_ANY, flags)
    return msg(FLOW_MOD, body + (match_ or match()) + instructions, xid)


def packet_out(data: bytes, actions: bytes, in_port: int = OFPP_CONTROLLER, xid: int = 0) -> bytes:
    body = struct.pack("!IIH6x", NO_BUFFER, in_port, len(actions)) + actions + data
    return msg(PACKET_OUT, body, xid)


def multipart(mp_type: int, body: bytes = b"", xid: int = 0) -> bytes:
    return msg(MULTIPART_REQUEST, struct.pack("!HH4x", mp_type, 0) + body, xid)


def port_stats_request(xid: int = 0) -> bytes:
    return multipart(4, struct.pack("!I4x", OFPP_ANY), xid)


def parse_port_stats(body: bytes) -> dict[int, dict]:
    """MULTIPART_REPLY body (after the 8-byte multipart header) -> {port: {rx, tx}}."""
    out = {}
    for off in range(0, len(body) - 111, 112):
        port, = struct.unpack_from("!I", body, off)
        rx, tx = struct.unpack_from("!QQ", body, off + 8)
        out[port] = {"rx_packets": rx, "tx_packets": tx}
    return out


class Session:
    """The controller side of one switch connection. A reader thread drains the socket all the
    time (a switch blocked on a full socket would stop reading our messages: deadlock), and
    keeps the parsed messages for wait_for()."""

    def __init__(self, conn: socket.socket):
        self.conn = conn
        self.msgs: list[tuple[int, int, bytes]] = []
        self.cond = threading.Condition()
        self.closed = False
        self.n_received = 0
        self.n_packet_in = 0
        self.answer_echo = True  # as a controller does (the switch's keepalive probes)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        buf = b""
        try:
            while True:
                chunk = self.conn.recv(65536)
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 8:
                    length, = struct.unpack_from("!H", buf, 2)
                    if length < 8 or len(buf) < length:
                        break
                    m, buf = buf[:length], buf[length:]
                    if m[1] == ECHO_REQUEST and self.answer_echo:
                        self.conn.sendall(m[:1] + bytes([ECHO_REPLY]) + m[2:])
                        continue
                    with self.cond:
                        self.n_received += 1
                        self.n_packet_in += m[1] == PACKET_IN
                        if m[1] != PACKET_IN:  # packet-ins are counted, not kept
                            self.msgs.append((m[1], struct.unpack_from("!I", m, 4)[0], m[8:]))
                            del self.msgs[:-1000]
                        self.cond.notify_all()
        except OSError:
            pass
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def send(self, data: bytes) -> None:
        self.conn.sendall(data)

    def wait_for(self, type_: int, xid: int | None = None, timeout_s: float = 5.0):
        """The first kept message of ``type_`` (and ``xid``), removing it; None on timeout."""
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while True:
                for i, m in enumerate(self.msgs):
                    if m[0] == type_ and (xid is None or m[1] == xid):
                        return self.msgs.pop(i)
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    return None
                self.cond.wait(left)

    def close(self) -> None:
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.conn.close()
        self.reader.join(timeout=2)

    def handshake(self) -> None:
        self.send(msg(HELLO, xid=1))
        if self.wait_for(HELLO) is None:
            raise TimeoutError("no HELLO from the switch")

    def echo_ok(self, xid: int = 0xEC40, timeout_s: float = 5.0) -> bool:
        self.send(msg(ECHO_REQUEST, b"ping", xid))
        m = self.wait_for(ECHO_REPLY, xid, timeout_s)
        return m is not None and m[2] == b"ping"

    def port_stats(self, xid: int = 0x5747) -> dict[int, dict]:
        self.send(port_stats_request(xid))
        m = self.wait_for(MULTIPART_REPLY, xid)
        if m is None:
            raise TimeoutError("no port stats reply")
        return parse_port_stats(m[2][8:])

    def barrier(self, xid: int = 0xBA55) -> bool:
        self.send(msg(BARRIER_REQUEST, xid=xid))
        return self.wait_for(BARRIER_REPLY, xid) is not None
