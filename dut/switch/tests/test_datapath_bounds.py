"""Frames that lie about their headers, sent to a running switch (issue 37, finding 2).

An IPv4 header whose IHL says 60 bytes in a 40-byte frame, and an IPv6 hop-by-hop header whose
length byte says 2 KB, used to put the switch's L4 offset past the frame's end, and a
[SET_FIELD tcp_src, OUTPUT] then wrote the port (and the TCP checksum) there: from a
PACKET_OUT, and from the data plane where a flow rewrites TCP ports (here reached through
PACKET_OUT to OFPP_TABLE). Now a header the frame cuts short is absent: the frame carries no
TCP header, so the PACKET_OUT's set-field is refused (OF1.3.5 7.2.5, BAD_ACTION /
MATCH_INCONSISTENT) and the TCP flows do not match it; the switch goes on (ECHO). Controls: a
whole TCP frame is rewritten and forwarded, and a frame with a whole IPv4 header but only 2
bytes of TCP is accepted and sent unchanged (its ports are absent, nothing is written).

The switch runs with two net_null ports (no rx: only these frames go through the datapath),
in the release build and in the sanitizer build (ASan + UBSan abort on a report; the mbufs'
memory is DPDK's, which ASan does not see: tests/test_bounds.c and the fuzz target
fuzz_datapath put frames in ASan-tracked memory)."""
from __future__ import annotations

import struct
import time

from dut.switch.tests.switchproc import MACS, accept, error_of, flow_packets
import openflow as w

OFPP_TABLE = 0xFFFFFFF9
OXM_ETH_TYPE, OXM_IP_PROTO, OXM_TCP_SRC = 5, 10, 13
MATCH_INCONSISTENT = 2 << 16 | 10   # OFPET_BAD_ACTION, OFPBAC_MATCH_INCONSISTENT
COOKIE_V4, COOKIE_V6 = 0x44, 0x66


def ipv4(ihl_words: int, proto: int, total: int) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x40 | ihl_words, 0, total, 1, 0x4000, 64, proto, 0,
                       bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))


def tcp(sport: int = 1234, dport: int = 80) -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x02, 8192, 0, 0)


def ipv6(nh: int, payload_len: int) -> bytes:
    return struct.pack("!IHBB16s16s", 6 << 28, payload_len, nh, 64, b"\x20" + bytes(15),
                       b"\x20" + bytes(14) + b"\x01")


def frames() -> dict[str, bytes]:
    return {
        # IHL 15 (60 bytes) in a 40-byte frame: the L4 offset was 74
        "ipv4_ihl60_short": MACS + b"\x08\x00" + ipv4(15, 6, 80) + b"\xaa" * 6,
        # hop-by-hop header, next header TCP, length byte 0xff (2048 bytes): offset ~2.1 KB
        "ipv6_hbh_2k": MACS + b"\x86\xdd" + ipv6(0, 2100) + bytes([6, 0xFF]) + bytes(6) + tcp(),
    }


def whole_tcp6() -> bytes:
    return MACS + b"\x86\xdd" + ipv6(6, 20) + tcp()


def tcp_cut_short() -> bytes:
    return MACS + b"\x08\x00" + ipv4(5, 6, 22) + b"\x04\xd2"


def set_tcp_src(port: int) -> bytes:
    return struct.pack("!HH", 25, 16) + w.oxm(OXM_TCP_SRC, struct.pack("!H", port)) + bytes(6)


def tx_packets(s: w.Session, port: int) -> int:
    return s.port_stats()[port]["tx_packets"]


def wait_tx(s: w.Session, port: int, want: int, timeout_s: float = 5.0) -> int:
    deadline = time.monotonic() + timeout_s
    n = tx_packets(s, port)
    while n < want and time.monotonic() < deadline:
        time.sleep(0.05)
        n = tx_packets(s, port)
    return n


def test_frames_lying_about_headers_are_not_written_past(null_switch):
    proc, listener, tmp = null_switch
    s = accept(listener, proc)
    tcp_flow = w.apply_actions(set_tcp_src(0xBEEF), w.action_output(2))
    for cookie, et in ((COOKIE_V4, b"\x08\x00"), (COOKIE_V6, b"\x86\xdd")):
        s.send(w.flow_mod(cookie=cookie, priority=10, instructions=tcp_flow,
                          match_=w.match(w.oxm(OXM_ETH_TYPE, et), w.oxm(OXM_IP_PROTO, b"\x06"))))
    assert s.barrier(), "no barrier reply after the flows"
    xid = 0x100
    for name, frame in frames().items():
        # PACKET_OUT [SET_FIELD tcp_src, OUTPUT:1]: the frame has no TCP header
        xid += 1
        s.send(w.packet_out(frame, set_tcp_src(0xBEEF) + w.action_output(1), xid=xid))
        assert error_of(s, xid, 3.0) == MATCH_INCONSISTENT, \
            f"{name}: a set-field of tcp_src on a frame whose TCP header is not in it"
        # the data plane: the TCP flows must not match it
        xid += 1
        s.send(w.packet_out(frame, w.action_output(OFPP_TABLE), xid=xid))
        assert s.echo_ok(xid=xid), f"{name}: no ECHO reply after the frame"
        assert proc.poll() is None, f"{name}: the switch died"
    counts = flow_packets(s, 0x200)
    assert counts.get(COOKIE_V4) == 0 and counts.get(COOKIE_V6) == 0, \
        f"a TCP flow matched a frame whose TCP header is not in it: {counts}"
    # controls: a whole TCP frame matches its flow and is sent; one with 2 bytes of TCP is
    # accepted (ip_proto is there) and sent as it is
    tx1, tx2 = tx_packets(s, 1), tx_packets(s, 2)
    s.send(w.packet_out(whole_tcp6(), w.action_output(OFPP_TABLE), xid=0x300))
    s.send(w.packet_out(whole_tcp6(), set_tcp_src(0xBEEF) + w.action_output(1), xid=0x301))
    s.send(w.packet_out(tcp_cut_short(), set_tcp_src(0xBEEF) + w.action_output(1), xid=0x302))
    assert wait_tx(s, 2, tx2 + 1) == tx2 + 1, "the whole TCP frame did not go out of its flow"
    assert wait_tx(s, 1, tx1 + 2) == tx1 + 2, "the PACKET_OUTs to port 1 were not all sent"
    assert error_of(s, 0x302, 0.5) is None, "the frame with a whole IPv4 header was refused"
    assert flow_packets(s, 0x201).get(COOKIE_V6) == 1
    assert s.echo_ok(), "no ECHO reply at the end"
    s.close()
    assert proc.poll() is None, (tmp / "ofswitch.log").read_text(errors="replace")[-2000:]
