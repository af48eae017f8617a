"""The controller side of one OpenFlow 1.3 connection to a switch, blocking, in two flavours:

- ``Session``: a reader thread drains the socket all the time (a switch blocked on a full
  socket would stop reading our messages: deadlock) and keeps the parsed messages for
  ``wait_for``; echo requests are answered on that thread. For probes and tests that send and
  then look at what came back (the switch's tests, negative conformance, pipeline, churn,
  reliability).
- ``SyncSession``: no thread; ``wait`` reads until the wanted message arrives, answering echo
  requests and counting errors on the way. For the flow-mod rate bench, where a second thread
  would be measured too.

Both take a connected socket (the switch connects to us: ``listen``, then accept it).
"""
from __future__ import annotations

import socket
import threading
import time

from openflow import wire as w


def listen(host: str = "127.0.0.1", port: int = 0, backlog: int = 4) -> socket.socket:
    """A listening TCP socket for switches to connect to (port 0: any free port; read it with
    ``getsockname()[1]``); SO_REUSEADDR, so a restarted controller takes its port back."""
    ls = socket.socket()
    try:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((host, port))
        ls.listen(backlog)
    except OSError:
        ls.close()
        raise
    return ls


def close_connection(conn: socket.socket) -> None:
    """Shut the connection down both ways (the peer sees EOF at once) and close it."""
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()


class Session:
    """The controller side of one switch connection with a reader thread (see the module)."""

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
                while True:
                    try:
                        length = w.message_length(buf)
                    except ValueError:
                        length = None
                    if length is None:
                        break
                    m, buf = buf[:length], buf[length:]
                    if m[1] == w.ECHO_REQUEST and self.answer_echo:
                        self.conn.sendall(m[:1] + bytes([w.ECHO_REPLY]) + m[2:])
                        continue
                    with self.cond:
                        self.n_received += 1
                        self.n_packet_in += m[1] == w.PACKET_IN
                        if m[1] != w.PACKET_IN:  # packet-ins are counted, not kept
                            self.msgs.append((m[1], w.xid_of(m), m[8:]))
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
        """The first kept message of ``type_`` (and ``xid``), removing it; None on timeout.
        A message is (type, xid, body after the header)."""
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
        close_connection(self.conn)
        self.reader.join(timeout=2)

    def handshake(self) -> None:
        self.send(w.msg(w.HELLO, xid=1))
        if self.wait_for(w.HELLO) is None:
            raise TimeoutError("no HELLO from the switch")

    def echo_ok(self, xid: int = 0xEC40, timeout_s: float = 5.0) -> bool:
        self.send(w.msg(w.ECHO_REQUEST, b"ping", xid))
        m = self.wait_for(w.ECHO_REPLY, xid, timeout_s)
        return m is not None and m[2] == b"ping"

    def port_stats(self, xid: int = 0x5747) -> dict[int, dict]:
        self.send(w.port_stats_request(xid))
        m = self.wait_for(w.MULTIPART_REPLY, xid)
        if m is None:
            raise TimeoutError("no port stats reply")
        return w.parse_port_stats(m[2][8:])

    def barrier(self, xid: int = 0xBA55) -> bool:
        self.send(w.msg(w.BARRIER_REQUEST, xid=xid))
        return self.wait_for(w.BARRIER_REPLY, xid) is not None


class SyncSession:
    """The controller side of one connection without a reader thread (see the module): ``wait``
    reads until the wanted message arrives; errors on the way are counted (the first kept)."""

    def __init__(self, conn: socket.socket):
        self.conn = conn
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(None)
        self.buf = bytearray()
        self.errors = 0
        self.first_error: bytes | None = None

    def send(self, data: bytes) -> None:
        self.conn.sendall(data)

    def _next(self, deadline: float) -> tuple[int, int, int, memoryview]:
        while True:
            length = w.message_length(self.buf)
            if length is not None:
                m = bytes(self.buf[:length])
                del self.buf[:length]
                return m[1], w.xid_of(m), length, memoryview(m)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("switch did not answer in time")
            self.conn.settimeout(left)
            try:
                chunk = self.conn.recv(1 << 20)
            except TimeoutError:
                raise TimeoutError("switch did not answer in time") from None
            if not chunk:
                raise ConnectionError("switch closed the connection")
            self.buf += chunk

    def wait(self, type_: int, xid: int | None = None, timeout_s: float = 120.0):
        """The whole next message of ``type_`` (and ``xid``) as a memoryview."""
        deadline = time.monotonic() + timeout_s
        while True:
            t, x, n, m = self._next(deadline)
            if t == w.ERROR:
                self.errors += 1
                self.first_error = self.first_error or bytes(m[8:16])
            if t == w.ECHO_REQUEST:
                self.send(w.msg(w.ECHO_REPLY, bytes(m[8:]), x))
            if t == type_ and (xid is None or x == xid):
                return m

    def handshake(self) -> None:
        self.send(w.msg(w.HELLO, xid=1))
        self.wait(w.HELLO, timeout_s=30)
        self.send(w.msg(w.FEATURES_REQUEST, xid=2))
        self.wait(w.FEATURES_REPLY, 2, timeout_s=30)

    def sync(self, xid: int = 0xBA55) -> None:
        self.send(w.msg(w.BARRIER_REQUEST, xid=xid))
        self.wait(w.BARRIER_REPLY, xid)

    def round_trip(self, payload: bytes, xid: int) -> float:
        """Seconds from sending payload + BARRIER(xid) to the BARRIER reply."""
        data = payload + w.msg(w.BARRIER_REQUEST, xid=xid)
        t0 = time.perf_counter()
        self.conn.sendall(data)
        self.wait(w.BARRIER_REPLY, xid)
        return time.perf_counter() - t0

    def echo_round_trip(self, xid: int) -> float:
        """Seconds for an ECHO round trip: the same path without any table change."""
        data = w.msg(w.ECHO_REQUEST, b"fm", xid)
        t0 = time.perf_counter()
        self.conn.sendall(data)
        self.wait(w.ECHO_REPLY, xid)
        return time.perf_counter() - t0

    def flow_stats(self, xid: int) -> tuple[float, int]:
        """Seconds to the last part of an all-flows stats reply, and the entries counted."""
        t0 = time.perf_counter()
        self.send(w.flow_stats_request(xid))
        entries = 0
        while True:
            m = self.wait(w.MULTIPART_REPLY, xid)
            entries += w.count_entries(m)
            if not w.multipart_flags(m) & w.OFPMPF_REPLY_MORE:
                return time.perf_counter() - t0, entries

    def close(self) -> None:
        close_connection(self.conn)
