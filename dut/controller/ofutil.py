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
