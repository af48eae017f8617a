"""OpenFlow 1.3 message helpers shared by our os-ken apps (no os-ken import at module level:
callers pass the datapath, whose ofproto/parser modules carry everything)."""
from __future__ import annotations

import struct


def reset_and_install_table_miss(dp) -> None:
    """Empty every table, then add the table-miss entry (priority 0) that sends the *whole*
    packet to the controller (OFPCML_NO_BUFFER), so Packet-Ins carry the full payload."""
    ofp, parser = dp.ofproto, dp.ofproto_parser
    dp.send_msg(parser.OFPFlowMod(datapath=dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                  out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                                  match=parser.OFPMatch()))
    actions = [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
    inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
    dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=0, match=parser.OFPMatch(),
                                  instructions=inst))


# OpenFlow 1.3 constants used by packet_out_bytes (ofproto_v1_3; checked against os-ken's
# serializer in dut/controller/tests/test_ofutil.py).
OFP13_VERSION = 0x04
OFPT_PACKET_OUT = 13
OFP_NO_BUFFER = 0xFFFFFFFF
OFPP_FLOOD = 0xFFFFFFFB
OFPP_CONTROLLER = 0xFFFFFFFD
OFPAT_OUTPUT = 0
OFPCML_MAX = 0xFFE5  # max_len of an output action (only used for OFPP_CONTROLLER); os-ken default
_PACKET_OUT_HEAD = struct.Struct("!BBHIIIH6x")  # ofp_header + buffer_id, in_port, actions_len
_ACTION_OUTPUT = struct.Struct("!HHIH6x")       # ofp_action_output (16 B)


def packet_out_bytes(xid: int, in_port: int, out_port: int, data: bytes) -> bytes:
    """The wire bytes of an OF1.3 Packet-Out (no buffer, one output action, ``data`` attached).

    Why not os-ken's OFPPacketOut: building and serialising the message object costs tens of
    microseconds of Python per packet on the thread that also holds the GIL for everyone else;
    both apps (FIFO and prioritised) send through this, so the comparison stays like for like.
    All fields big-endian (network order), as OpenFlow requires.
    """
    head_len = _PACKET_OUT_HEAD.size + _ACTION_OUTPUT.size
    return b"".join((
        _PACKET_OUT_HEAD.pack(OFP13_VERSION, OFPT_PACKET_OUT, head_len + len(data),
                              xid & 0xFFFFFFFF, OFP_NO_BUFFER, in_port, _ACTION_OUTPUT.size),
        _ACTION_OUTPUT.pack(OFPAT_OUTPUT, _ACTION_OUTPUT.size, out_port, OFPCML_MAX),
        data))


# ---- Packet-In intake without os-ken's message objects ------------------------------------------
OFPT_PACKET_IN = 10
OFPXMC_OPENFLOW_BASIC = 0x8000
OFPXMT_OFB_IN_PORT = 0
_PACKET_IN_HEAD = struct.Struct("!BBHIIHBBQ")  # ofp_header, buffer_id, total_len, reason,
#                                                table_id, cookie: 24 B, then ofp_match
_MATCH_HEAD = struct.Struct("!HH")             # ofp_match type, length (without padding)
_OXM_HEAD = struct.Struct("!HBB")              # oxm_class, field<<1 | hasmask, length


class PacketInError(ValueError):
    """A Packet-In whose lengths do not add up (the switch sent a malformed message)."""


def packet_in_fields(buf) -> tuple[int | None, int]:
    """(in_port, offset of the frame) of one OF1.3 Packet-In message in ``buf``
    (bytes/bytearray/memoryview holding exactly the message, ``len(buf)`` = its length).

    Layout (OF1.3 7.4.1): 24 B head, then ofp_match (type, length, OXM TLVs) padded to a
    multiple of 8, then 2 B pad, then the frame. ``in_port`` comes from the match's
    OFPXMT_OFB_IN_PORT OXM (None when absent). All fields big-endian. Raises PacketInError when
    the lengths are inconsistent. Pure; called on os-ken's receive thread for every Packet-In,
    so it reads only the few fields it needs instead of building os-ken's OFPPacketIn.
    """
    n = len(buf)
    head = _PACKET_IN_HEAD.size
    if n < head + _MATCH_HEAD.size:
        raise PacketInError(f"Packet-In of {n} B is shorter than its fixed part")
    _mtype, match_len = _MATCH_HEAD.unpack_from(buf, head)
    if match_len < _MATCH_HEAD.size:
        raise PacketInError(f"Packet-In match length {match_len} < 4")
    data_off = head + (match_len + 7) // 8 * 8 + 2
    if data_off > n:
        raise PacketInError(f"Packet-In match length {match_len} runs past the message ({n} B)")
    in_port = None
    off, end = head + _MATCH_HEAD.size, head + match_len
    while off + _OXM_HEAD.size <= end:
        oxm_class, field_mask, oxm_len = _OXM_HEAD.unpack_from(buf, off)
        if (oxm_class == OFPXMC_OPENFLOW_BASIC and field_mask >> 1 == OFPXMT_OFB_IN_PORT
                and oxm_len == 4 and off + 8 <= end):
            in_port = int.from_bytes(buf[off + 4:off + 8], "big")
            break
        off += _OXM_HEAD.size + oxm_len
    return in_port, data_off
