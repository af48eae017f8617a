"""Stream validation: every kind of bad input is refused with an error naming it, before any
traffic; good streams resolve to templates, offsets and rates."""
import struct

import pytest

from drivers.trafficgen import frames
from drivers.trafficgen.model import FieldVar, PortInfo, Stream, StreamError, validate_streams

PORTS = {"p0": PortInfo("p0", 10_000), "p1": PortInfo("p1", 10_000)}


def one(**kw):
    kw.setdefault("name", "s")
    kw.setdefault("port", "p0")
    return validate_streams([Stream(**kw)], PORTS)[0]


def test_udp_frame_sizes_and_flows():
    r = one(frame_size=64, rate_pps=1e6, count=10, flows=1000)
    assert len(r.templates) == 1 and len(r.templates[0]) == 60
    assert r.vars == [(34, 2, 1000, 1)] and r.l3_offset == 14 and r.flows == 1000
    ip_total = struct.unpack_from("!H", r.templates[0], 16)[0]
    assert ip_total == 46


def test_rate_percent_uses_line_rate_of_the_port():
    r = one(frame_size=64, rate_percent=100)
    assert r.rate_pps == pytest.approx(14_880_952, rel=1e-6)


def test_imix_cycles_three_sizes():
    r = one(frame_size="imix", rate_pps=1000)
    assert sorted({len(t) + 4 for t in r.templates}) == [64, 570, 1518]
    assert len(r.templates) == 12


def test_packet_is_resized_and_lengths_fixed():
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    pkt = bytes(Ether() / IP(src="1.1.1.1", dst="2.2.2.2") / UDP(sport=5, dport=6))
    r = one(packet=pkt, frame_size=128, rate_pps=10, vary=[FieldVar("dst_ip", 5, 2)])
    t = r.templates[0]
    assert len(t) == 124
    parsed = IP(t[14:])
    assert parsed.len == 110 and parsed[UDP].len == 90
    assert r.vars == [(30, 4, 5, 2)]
    # the header checksum we wrote is right
    assert IP(bytes(parsed)).chksum == IP(bytes(IP(t[14:]))).chksum


def test_pcap_replay(tmp_path):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap
    p = tmp_path / "t.pcap"
    wrpcap(str(p), [Ether() / IP() / UDP() / (b"x" * n) for n in (30, 100)])
    r = one(pcap=p, rate_pps=100, duration_s=1)
    assert [len(t) for t in r.templates] == [72, 142]


@pytest.mark.parametrize("kw, words", [
    (dict(frame_size=64, rate_pps=1, port="p9"), ["'s'", "port 'p9'", "p0, p1"]),
    (dict(frame_size=64, rate_pps=1, rx_port="nope"), ["rx_port 'nope'"]),
    (dict(frame_size=64, rate_pps=20e6), ["port 'p0'", "above its line rate"]),
    (dict(frame_size=64, rate_percent=150), ["rate_percent 150"]),
    (dict(frame_size=64), ["exactly one of rate_pps and rate_percent"]),
    (dict(frame_size=64, rate_pps=1, rate_percent=1), ["exactly one"]),
    (dict(frame_size=64, rate_pps=-5), ["rate_pps -5"]),
    (dict(frame_size=63, rate_pps=1), ["frame size 63"]),
    (dict(frame_size="jumbo", rate_pps=1), ["frame_size must be"]),
    (dict(rate_pps=1), ["needs a packet, a pcap or a frame_size"]),
    (dict(frame_size=64, rate_pps=1, count=5, duration_s=1), ["count or duration_s"]),
    (dict(frame_size=64, rate_pps=1, count=0), ["count 0"]),
    (dict(frame_size=64, rate_pps=1, duration_s=0), ["duration_s 0"]),
    (dict(frame_size=64, rate_pps=1, flows=0), ["flows 0"]),
    (dict(frame_size=64, rate_pps=1, flows=70000), ["count 70000 exceeds a 2-byte field"]),
    (dict(frame_size=64, rate_pps=1, vary=[FieldVar("ttl", 3)]), ["field 'ttl' cannot vary"]),
    (dict(frame_size=64, rate_pps=1, vary=["src_ip"]), ["not a FieldVar"]),
    (dict(frame_size=64, rate_pps=1, flows=3, vary=[FieldVar("src_port", 3)]), ["do not also list src_port"]),
    (dict(pcap="/nonexistent/x.pcap", rate_pps=1), ["pcap /nonexistent/x.pcap does not exist"]),
    (dict(packet=b"\x00" * 60, pcap="/x", rate_pps=1), ["either packet or pcap"]),
])
def test_bad_streams_name_the_problem(kw, words):
    with pytest.raises(StreamError) as ei:
        one(**kw)
    for w in words:
        assert w in str(ei.value)


def test_unparsable_pcap(tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a pcap file at all")
    with pytest.raises(StreamError, match=r"stream 's': pcap .*bad.pcap does not parse"):
        one(pcap=bad, rate_pps=1)


def test_vary_ip_on_non_ip_packet():
    with pytest.raises(StreamError, match="needs an IPv4 frame"):
        one(packet=b"\x02" * 12 + b"\x88\xb5" + b"\x00" * 46, rate_pps=1, vary=[FieldVar("src_ip", 4)])


def test_duplicate_names_and_sum_of_rates_per_port():
    with pytest.raises(StreamError, match="'a': name used twice"):
        validate_streams([Stream("a", "p0", frame_size=64, rate_pps=1)] * 2, PORTS)
    half = 14_880_952 * 0.6
    with pytest.raises(StreamError, match="port 'p0': streams 'a', 'b'"):
        validate_streams([Stream("a", "p0", frame_size=64, rate_pps=half),
                          Stream("b", "p0", frame_size=64, rate_pps=half)], PORTS)
    with pytest.raises(StreamError, match="no streams"):
        validate_streams([], PORTS)


def test_line_rate_formula():
    assert frames.line_rate_pps(10_000, 64) == pytest.approx(14_880_952.38)
    assert frames.line_rate_pps(10_000, 1518) == pytest.approx(812_743.8, rel=1e-6)
