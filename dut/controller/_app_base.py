"""os-ken glue shared by the FIFO and the prioritised apps: config, table-miss, Packet-Out.

Thin on purpose: the behaviour is in engine.py (tested without os-ken). The config comes from
the launcher (``--config`` -> ``OFBENCH_APP_CONFIG``) and is validated before any switch
connects, so a bad config stops the controller at start with the error naming the key.
"""
from __future__ import annotations

import threading

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3

from dut.controller.config import ConfigError, load_config
from dut.controller.launcher import app_config_path
from dut.controller.ofutil import OFPP_FLOOD, packet_out_bytes, reset_and_install_table_miss


def config_from_env():
    path = app_config_path()
    if path is None:
        raise ConfigError("no config: start the app with "
                          "`python -m dut.controller.launcher --config <file.yaml>`")
    return load_config(path)


class PayloadSearchApp(app_manager.OSKenApp):
    """Base: subclasses set ENGINE (FifoEngine or PriorityEngine)."""

    OFP_VERSIONS = [ofproto_v1_3.OFP_VERSION]
    ENGINE = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cfg = config_from_env()
        self._xid_lock = threading.Lock()  # workers send concurrently; xids stay unique
        self._xid = 0
        self._out_port = OFPP_FLOOD if self.cfg.out_port == "flood" else self.cfg.out_port
        self._current_dp = None
        self.engine = None
        self.engine = self.ENGINE(self.cfg, self._send_packet_out)
        self.logger.info("%s: matcher=%s patterns=%d high_workers=%d mode=%s",
                         type(self).__name__, self.cfg.matcher, len(self.cfg.patterns),
                         self.cfg.high_workers, self.cfg.worker_mode)

    @set_ev_cls(ofp_event.EventOFPSwitchFeatures, CONFIG_DISPATCHER)
    def on_features(self, ev):
        dp = ev.msg.datapath
        # Every packet of the trace becomes a Packet-In carrying its full payload for the search.
        reset_and_install_table_miss(dp)
        dp.send_msg(dp.ofproto_parser.OFPBarrierRequest(dp))
        self.logger.info("datapath %016x connected; table-miss installed", dp.id)

    @set_ev_cls(ofp_event.EventOFPBarrierReply, MAIN_DISPATCHER)
    def on_barrier(self, ev):
        # The suite waits for this line: the table-miss flow is in place.
        self.logger.info("datapath %016x ready", ev.msg.datapath.id)

    @set_ev_cls(ofp_event.EventOFPPacketIn, MAIN_DISPATCHER)
    def on_packet_in(self, ev):
        msg = ev.msg
        # One switch per experiment: the workers answer on the datapath of the latest Packet-In.
        self._current_dp = msg.datapath
        self.engine.handle(bytes(msg.data), msg.match["in_port"])

    def _send_packet_out(self, data: bytes, in_port: int) -> None:
        # Raw bytes (ofutil.packet_out_bytes, byte-identical to os-ken's OFPPacketOut) handed
        # to Datapath.send, which is thread-safe (a queue drained by os-ken's send thread).
        with self._xid_lock:
            self._xid = (self._xid + 1) & 0xFFFFFFFF
            xid = self._xid
        self._current_dp.send(packet_out_bytes(xid, in_port, self._out_port, data))

    def close(self):
        if self.engine is not None:
            self.engine.stop()
        super().close()
