"""packet_out_bytes must produce exactly what os-ken's OFPPacketOut serialises to."""
import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from dut.controller.ofutil import OFPP_FLOOD, packet_out_bytes


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
