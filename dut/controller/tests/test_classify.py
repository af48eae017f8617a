"""Classification by IP precedence on raw frames."""
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1Q, Ether

from dut.controller.classify import HIGH, LOW, parse_frame, precedence_class


def _tcp(tos, payload=b"P" * 40, **tcp):
    return bytes(Ether() / IP(tos=tos, id=77) / TCP(**tcp) / payload)


@pytest.mark.parametrize("tos,prec", [(0x00, 0), (0xA0, 5), (0xB8, 5), (0x80, 4), (0xE0, 7)])
def test_precedence_is_top_three_bits_of_tos(tos, prec):
    info = parse_frame(_tcp(tos))
    assert info.precedence == prec
    assert info.ip_id == 77


def test_default_threshold_five_is_high():
    assert precedence_class(5, 5) == HIGH
    assert precedence_class(7, 5) == HIGH
    assert precedence_class(4, 5) == LOW
    assert precedence_class(0, 5) == LOW


def test_threshold_is_configurable():
    assert precedence_class(3, 3) == HIGH
    assert precedence_class(2, 3) == LOW
    assert precedence_class(0, 0) == HIGH


def test_non_ip_goes_low():
    for frame in (bytes(Ether() / ARP()), bytes(Ether() / IPv6() / UDP()), b"\x00" * 10):
        info = parse_frame(frame)
        assert info.precedence is None
        assert precedence_class(info.precedence, 5) == LOW


def test_vlan_tagged_frame_is_parsed():
    frame = bytes(Ether() / Dot1Q(vlan=10) / IP(tos=0xA0) / TCP() / b"xyz")
    info = parse_frame(frame)
    assert info.precedence == 5
    assert frame[info.payload_offset:] == b"xyz"


def test_payload_offset_skips_tcp_options_and_udp_header():
    f = _tcp(0, payload=b"HELLO", options=[("MSS", 1460), ("NOP", None), ("NOP", None)])
    assert f[parse_frame(f).payload_offset:] == b"HELLO"
    u = bytes(Ether() / IP() / UDP() / b"WORLD")
    assert u[parse_frame(u).payload_offset:] == b"WORLD"


def test_truncated_ip_header_is_low_not_a_crash():
    f = _tcp(0xA0)[:14 + 10]
    assert parse_frame(f).precedence is None
