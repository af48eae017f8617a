"""The raw Packet-In intake of the apps (_app_base.PayloadSearchApp, packet_in_intake: raw):
os-ken's receive loop hands Packet-In bytes straight to the engine and builds no message."""
import struct

import pytest
from os_ken.controller.handler import CONFIG_DISPATCHER, MAIN_DISPATCHER
from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from dut.controller.launcher import CONFIG_ENV


class _FakeEngine:
    def __init__(self):
        self.handled = []

    def handle(self, data, in_port):
        self.handled.append((data, in_port))

    def stop(self):
        pass


class _FakeDatapath:
    ofproto = ofp
    ofproto_parser = parser

    def __init__(self, state):
        self.state = state


def _packet_in(in_port: int, frame: bytes) -> bytearray:
    body = bytearray()
    parser.OFPMatch(in_port=in_port).serialize(body, 0)
    body += b"\x00\x00" + frame
    return bytearray(struct.pack("!BBHIIHBBQ", ofp.OFP_VERSION, ofp.OFPT_PACKET_IN,
                                 24 + len(body), 9, ofp.OFP_NO_BUFFER, len(frame), 0, 0, 0)
                     + body)


@pytest.fixture
def make_app(tmp_path, monkeypatch):
    apps = []

    def make(intake: str):
        conf = tmp_path / f"c-{intake}.yaml"
        conf.write_text(f"patterns: [ABCDEFGHIJ]\npacket_in_intake: {intake}\n")
        monkeypatch.setenv(CONFIG_ENV, str(conf))
        from dut.controller.fifo_app import FifoController
        app = FifoController()
        app.engine.stop()
        app.engine = _FakeEngine()
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


def _receive(dp, buf):
    """What os-ken's Datapath._recv_loop does with one message."""
    return ofproto_parser.msg(dp, ofp.OFP_VERSION, ofp.OFPT_PACKET_IN, len(buf), 9, buf)


def test_raw_intake_hands_frame_and_port_to_the_engine_without_a_message(make_app):
    app = make_app("raw")
    frame = bytes(range(200)) * 7
    assert _receive(_FakeDatapath(MAIN_DISPATCHER), _packet_in(3, frame)) is None
    assert app.engine.handled == [(frame, 3)]


def test_raw_intake_ignores_packet_ins_before_the_handshake(make_app):
    app = make_app("raw")
    assert _receive(_FakeDatapath(CONFIG_DISPATCHER), _packet_in(3, b"x" * 64)) is None
    assert app.engine.handled == []


def test_close_gives_os_ken_its_parser_back(make_app):
    app = make_app("raw")
    app.close()
    msg = _receive(_FakeDatapath(MAIN_DISPATCHER), _packet_in(5, b"y" * 64))
    assert isinstance(msg, parser.OFPPacketIn) and msg.match["in_port"] == 5
    assert app.engine.handled == []


def test_osken_intake_leaves_os_ken_parsing(make_app):
    app = make_app("osken")
    msg = _receive(_FakeDatapath(MAIN_DISPATCHER), _packet_in(4, b"z" * 64))
    assert isinstance(msg, parser.OFPPacketIn) and bytes(msg.data) == b"z" * 64
    assert app.engine.handled == []
