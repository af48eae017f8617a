"""os-ken app for the port-to-port throughput topology: installs the forwarding flows the
trial needs and says when they are in (barrier reply), so no trial starts on a half-filled table.

Config (YAML, via the launcher's --config): {pairs: [[1, 2]], flows: 1000, udp_src_base: 1024,
done_file: /path}.  flows <= 1: one `in_port=a -> output:b` rule per direction.  flows = N: N
exact rules per direction, `in_port=a, udp, udp_src=base+i -> output:b` (the generator varies
the UDP source port over the same N values), so the switch's table really holds N entries.

Started by name (``dut.controller.p2p_app``) by the throughput topology
(suites/throughput/topology.py) and the lab's links (drivers/lab/links.py); it lived in
suites/throughput/ until issue 43 (a driver must not start a suite's module).
"""
from __future__ import annotations


def flow_specs(cfg: dict) -> list[tuple[int, int | None, int]]:
    """(in_port, udp_src or None, out_port) of every flow to install (pure)."""
    pairs = cfg.get("pairs") or [[1, 2]]
    n = int(cfg.get("flows", 1))
    base = int(cfg.get("udp_src_base", 1024))
    out = []
    for a, b in pairs:
        for src, dst in ((a, b), (b, a)):
            if n <= 1:
                out.append((src, None, dst))
            else:
                out.extend((src, base + i, dst) for i in range(n))
    return out


try:
    from os_ken.base import app_manager
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
    from os_ken.ofproto import ofproto_v1_3
except ImportError:  # pragma: no cover
    app_manager = None

if app_manager is not None:
    from pathlib import Path

    from dut.controller.launcher import app_config_yaml

    class PortToPort(app_manager.OSKenApp):
        OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.cfg = app_config_yaml()

        @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
        def on_features(self, ev):
            dp = ev.msg.datapath
            ofp, parser = dp.ofproto, dp.ofproto_parser
            dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                          out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
            specs = flow_specs(self.cfg)
            for in_port, udp_src, out_port in specs:
                if udp_src is None:
                    match = parser.OFPMatch(in_port=in_port)
                else:
                    match = parser.OFPMatch(in_port=in_port, eth_type=0x0800, ip_proto=17, udp_src=udp_src)
                inst = [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, [parser.OFPActionOutput(out_port)])]
                dp.send_msg(parser.OFPFlowMod(dp, priority=100, match=match, instructions=inst))
            self.installed = len(specs)
            dp.send_msg(parser.OFPBarrierRequest(dp))

        @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
        def on_barrier(self, ev):
            done = self.cfg.get("done_file")
            if done:
                Path(done).write_text(str(getattr(self, "installed", 0)))
