"""Raw OF1.3 bytes: packet_out_bytes must produce exactly what os-ken's OFPPacketOut serialises
to; packet_in_fields must read what os-ken's OFPPacketIn parser reads."""
import struct

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from dut.controller.ofutil import (OFPP_CONTROLLER, OFPP_FLOOD, OFPT_PACKET_IN, PacketInError,
                                   packet_in_fields, packet_out_bytes)


class _FakeDatapath:
    ofproto = ofp
    ofproto_parser = parser


@pytest.mark.parametrize("out_port", [2, OFPP_FLOOD])
@pytest.mark.parametrize("data", [b"", b"\x01\x02" * 757])
def test_packet_out_bytes_equal_os_ken_serialisation(out_port, data):
    msg = parser.OFPPacketOut(datapath=_FakeDatapath(), buffer_id=ofp.OFP_NO_BUFFER, in_port=7,
                              actions=[parser.OFPActionOutput(out_port)], data=data)
    msg.set_xid(0x12345678)
    msg.serialize()
    assert packet_out_bytes(0x12345678, 7, out_port, data) == bytes(msg.buf)


def test_constants_match_os_ken():
    assert OFPP_FLOOD == ofp.OFPP_FLOOD
    assert OFPP_CONTROLLER == ofp.OFPP_CONTROLLER
    assert OFPT_PACKET_IN == ofp.OFPT_PACKET_IN


# ---- packet_in_fields: differential against os-ken's OFPPacketIn parser ---------------------------


def _packet_in_bytes(match, data: bytes, xid: int = 5) -> bytes:
    body = bytearray()
    match_len = match.serialize(body, 0)  # os-ken pads the match to 8 B
    body += b"\x00\x00" + data
    head = struct.pack("!BBHIIHBBQ", ofp.OFP_VERSION, ofp.OFPT_PACKET_IN, 24 + len(body), xid,
                       ofp.OFP_NO_BUFFER, len(data), ofp.OFPR_NO_MATCH, 0, 0)
    assert match_len >= 4
    return head + bytes(body)


@pytest.mark.parametrize("match", [
    parser.OFPMatch(in_port=1),
    parser.OFPMatch(in_port=0xfffffff0, eth_type=0x0800),
    parser.OFPMatch(eth_type=0x0800, in_port=3, ip_proto=6),  # in_port not first
    parser.OFPMatch(metadata=(7, 0xff), in_port=9, tunnel_id=77),
    parser.OFPMatch(),                                          # no in_port at all
], ids=["in_port", "in_port_eth", "in_port_second", "masked_before", "empty"])
@pytest.mark.parametrize("data", [b"", bytes(range(256)) * 6])
def test_packet_in_fields_agree_with_os_ken(match, data):
    buf = _packet_in_bytes(match, data)
    msg = parser.OFPPacketIn.parser(_FakeDatapath(), ofp.OFP_VERSION, ofp.OFPT_PACKET_IN,
                                    len(buf), 5, bytearray(buf))
    in_port, off = packet_in_fields(buf)
    assert in_port == msg.match.get("in_port")
    assert buf[off:] == bytes(msg.data)
    assert packet_in_fields(memoryview(bytearray(buf))) == (in_port, off)


@pytest.mark.parametrize("cut", [10, 27])
def test_packet_in_fields_too_short(cut):
    buf = _packet_in_bytes(parser.OFPMatch(in_port=1), b"x" * 60)[:cut]
    with pytest.raises(PacketInError):
        packet_in_fields(buf)


def test_packet_in_fields_match_length_past_end():
    buf = bytearray(_packet_in_bytes(parser.OFPMatch(in_port=1), b""))
    struct.pack_into("!H", buf, 26, 200)
    with pytest.raises(PacketInError, match="runs past"):
        packet_in_fields(bytes(buf))


def test_packet_in_fields_match_length_below_header():
    buf = bytearray(_packet_in_bytes(parser.OFPMatch(in_port=1), b"abc"))
    struct.pack_into("!H", buf, 26, 2)
    with pytest.raises(PacketInError, match="< 4"):
        packet_in_fields(bytes(buf))
