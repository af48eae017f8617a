"""L2 learning switch app (OpenFlow 1.3) for the smoke suite.

os-ken ships no sample apps, so this is ours. The logic lives in :class:`MacTable` (pure, takes
``now``), the os-ken handlers only translate events into calls and decisions into messages.

Behaviour: a table-miss flow sends unknown traffic to the controller (full packet, no buffer);
source MACs are learned per datapath with an aging time; a known unicast destination gets a
flow ``in_port, eth_src, eth_dst -> output`` with an idle timeout, unknown or multicast
destinations are flooded.
"""
from __future__ import annotations

from dataclasses import dataclass, field

FLOOD = "flood"


@dataclass
class MacTable:
    """Learned MAC -> (port, last_seen) per datapath. Pure: callers pass ``now`` (seconds)."""

    aging_s: float = 300.0
    entries: dict[int, dict[str, tuple[int, float]]] = field(default_factory=dict)

    def learn(self, dpid: int, mac: str, port: int, now: float) -> bool:
        """Record that ``mac`` was seen on ``port``; True if this is new or moved."""
        if is_multicast(mac):
            return False  # never learn group addresses (a spoofed source must not poison)
        table = self.entries.setdefault(dpid, {})
        old = table.get(mac)
        table[mac] = (port, now)
        return old is None or old[0] != port

    def lookup(self, dpid: int, mac: str, now: float) -> int | str:
        """The output port for ``mac``, or FLOOD when unknown, aged out or multicast."""
        if is_multicast(mac):
            return FLOOD
        hit = self.entries.get(dpid, {}).get(mac)
        if hit is None or now - hit[1] > self.aging_s:
            return FLOOD
        return hit[0]


def is_multicast(mac: str) -> bool:
    return int(mac.split(":")[0], 16) & 1 == 1


def decide(table: MacTable, dpid: int, in_port: int, src: str, dst: str, now: float):
    """Learn ``src`` and return the output decision for ``dst`` (port or FLOOD).

    A decision equal to ``in_port`` is turned into a drop (None): sending a frame back where it
    came from would loop it.
    """
    table.learn(dpid, src, in_port, now)
    out = table.lookup(dpid, dst, now)
    if out == in_port:
        return None
    return out


# ---- os-ken glue (imported lazily so the pure logic above is testable without os-ken) ------
try:
    from os_ken.base import app_manager
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
    from os_ken.lib.packet import ethernet, packet
    from os_ken.ofproto import ofproto_v1_3

    from dut.controller.ofutil import reset_and_install_table_miss
except ImportError:  # pragma: no cover - os-ken is in the venv; this keeps the logic importable
    app_manager = None

if app_manager is not None:
    import time

    class L2Learning(app_manager.OSKenApp):
        OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]
        FLOW_IDLE_TIMEOUT_S = 60

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.table = MacTable()

        @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
        def on_features(self, ev):
            dp = ev.msg.datapath
            reset_and_install_table_miss(dp)
            self.logger.info("datapath %016x connected; table-miss installed", dp.id)

        def _add_flow(self, dp, priority, match, actions, idle_timeout):
            ofp, parser = dp.ofproto, dp.ofproto_parser
            inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]
            dp.send_msg(parser.OFPFlowMod(datapath=dp, priority=priority, match=match,
                                          instructions=inst, idle_timeout=idle_timeout))

        @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
        def on_packet_in(self, ev):
            msg = ev.msg
            dp = msg.datapath
            ofp, parser = dp.ofproto, dp.ofproto_parser
            in_port = msg.match["in_port"]
            eth = packet.Packet(msg.data).get_protocol(ethernet.ethernet)
            if eth is None:
                return
            out = decide(self.table, dp.id, in_port, eth.src, eth.dst, time.monotonic())
            if out is None:
                return
            out_port = ofp.OFPP_FLOOD if out == FLOOD else out
            actions = [parser.OFPActionOutput(out_port)]
            if out != FLOOD:
                match = parser.OFPMatch(in_port=in_port, eth_src=eth.src, eth_dst=eth.dst)
                self._add_flow(dp, 10, match, actions, self.FLOW_IDLE_TIMEOUT_S)
            data = msg.data if msg.buffer_id == ofp.OFP_NO_BUFFER else None
            dp.send_msg(parser.OFPPacketOut(datapath=dp, buffer_id=msg.buffer_id,
                                            in_port=in_port, actions=actions, data=data))
