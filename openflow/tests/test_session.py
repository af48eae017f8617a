"""openflow.session against a scripted switch on the other end of a loopback TCP connection."""
import socket
import struct
import threading

import pytest

from openflow import wire as w
from openflow.session import Session, SyncSession, listen


def _read_msg(sock) -> bytes:
    head = b""
    while len(head) < 8:
        head += sock.recv(8 - len(head))
    n = struct.unpack_from("!H", head, 2)[0]
    body = b""
    while len(body) < n - 8:
        body += sock.recv(n - 8 - len(body))
    return head + body


@pytest.fixture
def pair():
    """(controller end, switch end) of a TCP connection on loopback, as a switch makes it."""
    with listen() as ls:
        sw = socket.create_connection(ls.getsockname())
        ctl, _ = ls.accept()
    yield ctl, sw
    sw.close()


def test_session_answers_echo_keeps_replies_and_counts_packet_ins(pair):
    ctl, sw = pair
    s = Session(ctl)
    try:
        sw.sendall(w.msg(w.HELLO, xid=9) + w.msg(w.ECHO_REQUEST, b"ka", 0x77)
                   + w.msg(w.PACKET_IN, bytes(30), 1))
        s.handshake()
        # the reader thread answers the echo as soon as it reads it, which may be before
        # handshake() sends HELLO: the two come in either order
        got = {_read_msg(sw), _read_msg(sw)}
        assert got == {w.msg(w.HELLO, xid=1), w.msg(w.ECHO_REPLY, b"ka", 0x77)}
        sw.sendall(w.msg(w.ERROR, struct.pack("!HH", 4, 9), 5))
        assert s.wait_for(w.ERROR, 5) == (w.ERROR, 5, struct.pack("!HH", 4, 9))
        assert s.n_packet_in == 1
        assert s.wait_for(w.BARRIER_REPLY, 1, timeout_s=0.05) is None
    finally:
        s.close()
    assert s.closed and not s.reader.is_alive()


def test_session_port_stats_and_echo_ok(pair):
    ctl, sw = pair
    s = Session(ctl)

    def switch():
        req = _read_msg(sw)
        assert req == w.port_stats_request(0x5747)
        entry = struct.pack("!I4xQQ", 2, 7, 8) + bytes(112 - 24)
        sw.sendall(w.msg(w.MULTIPART_REPLY, struct.pack("!HH4x", w.OFPMP_PORT_STATS, 0) + entry,
                         0x5747))
        m = _read_msg(sw)
        sw.sendall(w.retype(m, type_=w.ECHO_REPLY))

    t = threading.Thread(target=switch)
    t.start()
    try:
        assert s.port_stats() == {2: {"rx_packets": 7, "tx_packets": 8}}
        assert s.echo_ok()
    finally:
        t.join(5)
        s.close()


def test_session_on_a_closed_connection_stops_waiting(pair):
    ctl, sw = pair
    s = Session(ctl)
    sw.close()
    assert s.wait_for(w.HELLO, timeout_s=5) is None and s.closed
    s.close()


def test_sync_session_handshake_errors_echo_and_flow_stats(pair):
    ctl, sw = pair
    c = SyncSession(ctl)

    def switch():
        assert _read_msg(sw) == w.msg(w.HELLO, xid=1)
        sw.sendall(w.msg(w.HELLO, xid=1))
        assert _read_msg(sw) == w.msg(w.FEATURES_REQUEST, xid=2)
        sw.sendall(w.msg(w.ERROR, struct.pack("!HH", 5, 1) + bytes(4), 0)
                   + w.msg(w.ECHO_REQUEST, b"q", 3) + w.features_reply(2))
        assert _read_msg(sw) == w.msg(w.ECHO_REPLY, b"q", 3)
        assert _read_msg(sw) == w.flow_stats_request(8)
        part = struct.pack("!H", 16) + bytes(14)
        sw.sendall(w.msg(w.MULTIPART_REPLY, struct.pack("!HH4x", 1, w.OFPMPF_REPLY_MORE)
                         + part * 2, 8) + w.msg(w.MULTIPART_REPLY, struct.pack("!HH4x", 1, 0)
                                                + part, 8))

    t = threading.Thread(target=switch)
    t.start()
    try:
        c.handshake()
        assert (c.errors, c.first_error) == (1, struct.pack("!HH", 5, 1) + bytes(4))
        _, entries = c.flow_stats(8)
        assert entries == 3
    finally:
        t.join(5)
        c.close()


def test_sync_session_says_when_the_switch_is_gone_or_silent(pair):
    ctl, sw = pair
    c = SyncSession(ctl)
    with pytest.raises(TimeoutError, match="did not answer"):
        c.wait(w.BARRIER_REPLY, timeout_s=0.05)
    sw.close()
    with pytest.raises(ConnectionError, match="closed the connection"):
        c.wait(w.BARRIER_REPLY, timeout_s=5)
    c.close()


def test_listen_takes_a_restarted_controllers_port_back():
    with listen() as ls:
        port = ls.getsockname()[1]
        peer = socket.create_connection(("127.0.0.1", port))
        conn, _ = ls.accept()
        conn.close()          # we close first: our side keeps the port in TIME_WAIT
        peer.close()
    with listen(port=port) as again:
        assert again.getsockname()[1] == port
