"""os-ken app that replays a recorded controller's messages into a switch (issue 41 part 2):
FAUCET's FLOW_MODs as suites/interop/ofrelay.py recorded them, sent in order as they were on
the wire (only their xids renumbered), then a barrier; the done file is written when the
barrier reply comes, so no trial starts on a half-filled table. The app stays connected
(os-ken answers the switch's echo requests) and installs nothing else: a frame FAUCET's
tables send to the controller is dropped here.

Config (YAML, via the launcher's --config): {recording: /path/faucet-1000-hosts.of,
done_file: /path}. The done file says ``installed <n> errors <e>``; the first OFPT_ERROR's
type and code are logged.
"""
from __future__ import annotations

import struct
from pathlib import Path


def messages(blob: bytes) -> list[bytes]:
    """The recording's messages in order, each with xid 0x52000000 + its index (pure)."""
    out, i = [], 0
    while i + 8 <= len(blob):
        n = struct.unpack_from("!H", blob, i + 2)[0]
        if n < 8 or i + n > len(blob):
            raise ValueError(f"recording cut at byte {i}: message of {n} B")
        m = blob[i:i + n]
        out.append(m[:4] + struct.pack("!I", 0x52000000 + len(out)) + m[8:])
        i += n
    if i != len(blob):
        raise ValueError(f"recording cut at byte {i}: {len(blob) - i} B left over")
    return out


try:
    from os_ken.base import app_manager
    from os_ken.controller import ofp_event
    from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
    from os_ken.ofproto import ofproto_v1_3
except ImportError:  # pragma: no cover
    app_manager = None

if app_manager is not None:
    from dut.controller.launcher import app_config_yaml

    class Replay(app_manager.OSKenApp):
        OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.cfg = app_config_yaml()
            self.installed = self.errors = 0

        @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
        def on_features(self, ev):
            dp = ev.msg.datapath
            ofp, parser = dp.ofproto, dp.ofproto_parser
            dp.send_msg(parser.OFPFlowMod(dp, command=ofp.OFPFC_DELETE, table_id=ofp.OFPTT_ALL,
                                          out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY))
            msgs = messages(Path(self.cfg["recording"]).read_bytes())
            for m in msgs:
                dp.send(m)
            self.installed = len(msgs)
            dp.send_msg(parser.OFPBarrierRequest(dp))

        @set_ev_cls(ofp_event.EventOFPErrorMsg, [CONFIG_DISPATCHER, MAIN_DISPATCHER])
        def on_error(self, ev):
            self.errors += 1
            if self.errors == 1:
                self.logger.error("replay: OFPT_ERROR type %d code %d", ev.msg.type, ev.msg.code)

        @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
        def on_barrier(self, ev):
            done = self.cfg.get("done_file")
            if done:
                Path(done).write_text(f"installed {self.installed} errors {self.errors}")
