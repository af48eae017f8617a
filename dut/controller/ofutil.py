"""OpenFlow 1.3 helpers shared by our os-ken apps that go through os-ken's message objects (no
os-ken import at module level: callers pass the datapath, whose ofproto/parser modules carry
everything). The raw wire bytes of the apps' hot path (Packet-Out, Packet-In intake) live in
``openflow.wire``, the one place Python writes OpenFlow by hand."""
from __future__ import annotations


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
