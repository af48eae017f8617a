"""os-ken glue shared by the FIFO and the prioritised apps: config, table-miss, Packet-Out.

Thin on purpose: the behaviour is in engine.py (tested without os-ken). The config comes from
the launcher (``--config`` -> ``OFBENCH_APP_CONFIG``) and is validated before any switch
connects, so a bad config stops the controller at start with the error naming the key.

Packet-In intake (config ``packet_in_intake``, the same for both apps):
  raw    (default) os-ken's receive loop hands each OF1.3 Packet-In's bytes to the engine
         directly: the app replaces os-ken's Packet-In message parser (one entry of
         ``ofproto_v1_3_parser._MSG_PARSERS``) by a function that reads in_port and the frame
         offset (openflow.wire.packet_in_fields), calls ``engine.handle`` on the receive thread and
         returns None, so os-ken builds no OFPPacketIn/OFPMatch objects, no event, and no
         hand-over through the app's event queue (a thread switch and a GIL hand-over per
         packet). Every other message type goes through os-ken as before. Why: the
         prioritised app's one serial step is the intake; every microsecond of Python there
         delays when high packets reach their workers and takes CPU from the searches.
         The FIFO baseline gets the same intake, so the comparison stays like for like (its
         search now runs on the receive thread; the kernel's socket buffer holds the backlog
         that os-ken's 128-deep event queue plus the socket buffer held before).
  osken  os-ken's EventOFPPacketIn handler (the earlier path, kept to measure the difference).
Concurrency: with ``raw``, ``engine.handle`` runs on the datapath's receive thread; with
``osken`` on the app's event thread. Either way one thread calls it (one switch).
"""
from __future__ import annotations

import threading

from os_ken.base import app_manager
from os_ken.controller import ofp_event
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER, set_ev_cls
from os_ken.ofproto import ofproto_v1_3, ofproto_v1_3_parser

from dut.controller.config import ConfigError, load_config
from dut.controller.launcher import app_config_path
from dut.controller.ofutil import reset_and_install_table_miss
from openflow.wire import OFPP_CONTROLLER, OFPP_FLOOD, packet_in_fields, packet_out_bytes
from openflow.wire import PACKET_IN as OFPT_PACKET_IN


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
        self._osken_packet_in_parser = None
        self.engine = self.ENGINE(self.cfg, self._send_packet_out)
        if self.cfg.packet_in_intake == "raw":
            parsers = ofproto_v1_3_parser._MSG_PARSERS
            self._osken_packet_in_parser = parsers[OFPT_PACKET_IN]
            parsers[OFPT_PACKET_IN] = self._raw_packet_in
        self.logger.info("%s: matcher=%s patterns=%d high_workers=%d mode=%s intake=%s",
                         type(self).__name__, self.cfg.matcher, len(self.cfg.patterns),
                         self.cfg.high_workers, self.cfg.worker_mode,
                         self.cfg.packet_in_intake)

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

    def _raw_packet_in(self, datapath, version, msg_type, msg_len, xid, buf):
        """Stands in for os-ken's OFPPacketIn.parser (same signature), on the receive thread.
        Returns None: os-ken then creates no message and no event for this Packet-In. A
        malformed message raises PacketInError, which os-ken logs with the message bytes."""
        if datapath.state != MAIN_DISPATCHER:
            return None  # as with the event handler: Packet-Ins before the handshake are ignored
        in_port, data_off = packet_in_fields(buf)
        self._current_dp = datapath
        # No in_port OXM (OF1.3 requires one; be lenient): answer as if from the controller.
        self.engine.handle(bytes(memoryview(buf)[data_off:msg_len]),
                           OFPP_CONTROLLER if in_port is None else in_port)
        return None

    def _send_packet_out(self, data: bytes, in_port: int) -> None:
        # Raw bytes (openflow.wire.packet_out_bytes, byte-identical to os-ken's OFPPacketOut) handed
        # to Datapath.send, which is thread-safe (a queue drained by os-ken's send thread).
        with self._xid_lock:
            self._xid = (self._xid + 1) & 0xFFFFFFFF
            xid = self._xid
        self._current_dp.send(packet_out_bytes(xid, in_port, self._out_port, data))

    def close(self):
        if self._osken_packet_in_parser is not None:
            ofproto_v1_3_parser._MSG_PARSERS[OFPT_PACKET_IN] = self._osken_packet_in_parser
            self._osken_packet_in_parser = None
        if self.engine is not None:
            self.engine.stop()
        super().close()
