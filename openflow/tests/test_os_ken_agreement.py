"""openflow.wire against os-ken, the field's OF1.3 library: every encoder must produce exactly
the bytes os-ken's message object serialises to, every constant must be os-ken's, and
packet_in_fields must read what os-ken's OFPPacketIn parser reads."""
import struct

import pytest
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from openflow import wire as w
from openflow.wire import OFPP_CONTROLLER, OFPP_FLOOD, PacketInError, packet_in_fields, packet_out_bytes


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
    assert w.PACKET_IN == ofp.OFPT_PACKET_IN


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


# ---- every encoder against os-ken's serialiser ---------------------------------------------------
def _os_ken(msg_obj, xid: int = 0x11) -> bytes:
    msg_obj.set_xid(xid)
    msg_obj.serialize()
    return bytes(msg_obj.buf)


_DP = _FakeDatapath()


def test_message_type_and_reserved_constants_are_os_kens():
    names = {"HELLO": "OFPT_HELLO", "ERROR": "OFPT_ERROR", "FLOW_MOD": "OFPT_FLOW_MOD",
             "GROUP_MOD": "OFPT_GROUP_MOD", "METER_MOD": "OFPT_METER_MOD",
             "PACKET_OUT": "OFPT_PACKET_OUT", "FEATURES_REPLY": "OFPT_FEATURES_REPLY",
             "MULTIPART_REQUEST": "OFPT_MULTIPART_REQUEST", "ROLE_REQUEST": "OFPT_ROLE_REQUEST",
             "SET_ASYNC": "OFPT_SET_ASYNC", "BARRIER_REPLY": "OFPT_BARRIER_REPLY",
             "OFPP_ANY": "OFPP_ANY", "OFPP_ALL": "OFPP_ALL", "OFPP_IN_PORT": "OFPP_IN_PORT",
             "OFPG_ANY": "OFPG_ANY", "OFPTT_ALL": "OFPTT_ALL", "NO_BUFFER": "OFP_NO_BUFFER",
             "OFPCML_MAX": "OFPCML_MAX", "OFPMP_FLOW": "OFPMP_FLOW",
             "OFPMP_PORT_DESC": "OFPMP_PORT_DESC", "OFPAT_SET_FIELD": "OFPAT_SET_FIELD",
             "OFPAT_POP_MPLS": "OFPAT_POP_MPLS", "OFPIT_METER": "OFPIT_METER",
             "OFPMBT_DSCP_REMARK": "OFPMBT_DSCP_REMARK", "OFPGT_FF": "OFPGT_FF"}
    assert {n: getattr(w, n) for n in names} == {n: getattr(ofp, o) for n, o in names.items()}
    assert w.MPLS_LABEL == ofp.OFPXMT_OFB_MPLS_LABEL and w.UDP_DST == ofp.OFPXMT_OFB_UDP_DST


def test_flow_mod_with_match_actions_goto_and_metadata_equals_os_ken():
    ours = w.flow_mod(table=0, priority=77, cookie=5, flags=1, xid=0x11, match_=w.match(
        w.oxm(w.ETH_TYPE, b"\x08\x00"), w.oxm(w.IP_PROTO, b"\x11"),
        w.oxm(w.IPV4_DST, bytes([10, 0, 0, 0]), bytes([255, 255, 255, 0]))),
        instructions=w.apply_actions(w.action_push_vlan(),
                                     w.action_set_field(w.oxm(w.VLAN_VID, b"\x10\x64")),
                                     w.action_output(2, 0))
        + w.write_metadata(9, 0xFF) + w.goto_table(1))
    theirs = parser.OFPFlowMod(
        _DP, cookie=5, table_id=0, priority=77, flags=1, buffer_id=ofp.OFP_NO_BUFFER, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
        match=parser.OFPMatch(eth_type=0x0800, ip_proto=17,
                              ipv4_dst=("10.0.0.0", "255.255.255.0")),
        instructions=[parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
            parser.OFPActionPushVlan(0x8100), parser.OFPActionSetField(vlan_vid=0x1064),
            parser.OFPActionOutput(2, 0)]),
            parser.OFPInstructionWriteMetadata(9, 0xFF), parser.OFPInstructionGotoTable(1)])
    assert ours == _os_ken(theirs)


def test_flow_mod_delete_all_and_mpls_actions_equal_os_ken():
    assert w.flow_mod(command=w.OFPFC_DELETE, table=w.OFPTT_ALL, xid=0x11) == _os_ken(
        parser.OFPFlowMod(_DP, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL, priority=0x8000,
                          buffer_id=ofp.OFP_NO_BUFFER, out_port=ofp.OFPP_ANY,
                          out_group=ofp.OFPG_ANY))
    acts = w.apply_actions(w.action_push_mpls(), w.action_pop_mpls(), w.action_pop_vlan(),
                           w.action_group(3))
    theirs = parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [
        parser.OFPActionPushMpls(0x8847), parser.OFPActionPopMpls(0x0800),
        parser.OFPActionPopVlan(), parser.OFPActionGroup(3)])
    buf = bytearray()
    theirs.serialize(buf, 0)
    assert acts == bytes(buf)


def test_group_and_meter_mod_equal_os_ken():
    assert w.group_mod(0x11, type_=w.OFPGT_SELECT, group_id=4, buckets=w.bucket(
        w.action_output(2), weight=3)) == _os_ken(parser.OFPGroupMod(
            _DP, ofp.OFPGC_ADD, ofp.OFPGT_SELECT, 4,
            [parser.OFPBucket(3, ofp.OFPP_ANY, ofp.OFPG_ANY, [parser.OFPActionOutput(2, 0xFFFF)])]))
    assert w.meter_mod(0x11, meter_id=2, bands=w.band_drop(500, 10) + w.band_dscp(9, 2)) == \
        _os_ken(parser.OFPMeterMod(_DP, ofp.OFPMC_ADD, ofp.OFPMF_KBPS, 2, [
            parser.OFPMeterBandDrop(500, 10), parser.OFPMeterBandDscpRemark(9, 0, 2)]))


def test_small_requests_equal_os_ken():
    assert w.flow_stats_request(0x11) == _os_ken(parser.OFPFlowStatsRequest(_DP))
    assert w.port_stats_request(0x11) == _os_ken(parser.OFPPortStatsRequest(_DP, 0,
                                                                             ofp.OFPP_ANY))
    assert w.role_request(0x11, ofp.OFPCR_ROLE_SLAVE, 7) == _os_ken(
        parser.OFPRoleRequest(_DP, ofp.OFPCR_ROLE_SLAVE, 7))
    assert w.table_mod(0x11, 1, 3) == _os_ken(parser.OFPTableMod(_DP, 1, 3))
    assert w.set_config(0x11, 0, 128) == _os_ken(parser.OFPSetConfig(_DP, 0, 128))
    mac = b"\x02\0\0\0\0\x01"
    assert w.port_mod(0x11, 1, mac, 1, 1, 0) == _os_ken(
        parser.OFPPortMod(_DP, 1, "02:00:00:00:00:01", 1, 1, 0))
    data = bytes(range(60))
    assert w.packet_out(data, w.action_output(2), 1, 0x11) == _os_ken(parser.OFPPacketOut(
        _DP, ofp.OFP_NO_BUFFER, 1, [parser.OFPActionOutput(2, 0xFFFF)], data))
    assert w.msg(w.BARRIER_REQUEST, xid=0x11) == _os_ken(parser.OFPBarrierRequest(_DP))


def test_features_reply_parses_in_os_ken():
    m = w.features_reply(9, datapath_id=0xAB, n_tables=254)
    r = parser.OFPSwitchFeatures.parser(_DP, 4, w.FEATURES_REPLY, len(m), 9, bytearray(m))
    assert (r.datapath_id, r.n_tables, r.xid) == (0xAB, 254, 9)
