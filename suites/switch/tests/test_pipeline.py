"""Pure parts of the pipeline benchmark (suites/switch/pipeline.py): flows, frames, pcap, metrics."""
import random
import struct

import pytest

from suites.switch import pipeline as bench

pytestmark = pytest.mark.quick


def _ip(b: bytes, ofs: int) -> int:
    return struct.unpack_from("!I", b, ofs)[0]


def test_make_flows_cycles_shapes_and_is_deterministic():
    a, b = bench.make_flows(8, seed=3), bench.make_flows(8, seed=3)
    assert a == b
    assert [f.shape for f in a] == list(bench.SHAPES) * 2


def test_frame_matches_its_flow():
    rng = random.Random(5)
    for f in bench.make_flows(40, seed=4):
        fr = bench.frame_for(f, rng)
        assert len(fr) == 60
        assert fr[12:14] == b"\x08\x00" and fr[23] == 17
        src, dst = _ip(fr, 26), _ip(fr, 30)
        if f.shape == "dst32_udp":
            assert dst == f.ipv4_dst and struct.unpack_from("!H", fr, 36)[0] == f.udp_dst
        elif f.shape == "dst24":
            assert dst >> 8 == f.ipv4_dst >> 8
        elif f.shape == "src16_dst16":
            assert src >> 16 == f.ipv4_src >> 16 and dst >> 16 == f.ipv4_dst >> 16
        else:
            assert fr[:3] == f.eth_dst[:3] and dst >> 4 == f.ipv4_dst >> 4


def test_pcap_bytes_layout():
    frames = [bytes(60), bytes(range(60))]
    p = bench.pcap_bytes(frames)
    assert struct.unpack_from("<I", p)[0] == 0xA1B2C3D4
    assert len(p) == 24 + 2 * (16 + 60)
    assert p[24 + 16 + 60 + 16:] == frames[1]


def test_cache_hit_ratio():
    assert bench.cache_hit_ratio({"cache_hits": 10, "cache_misses": 5},
                                 {"cache_hits": 100, "cache_misses": 15}) == 0.9
    assert bench.cache_hit_ratio(None, {"cache_hits": 1}) is None
    assert bench.cache_hit_ratio({"cache_hits": 3}, {"cache_hits": 3}) is None


def test_metrics_of():
    m = bench.metrics_of({"ofbench": {"mpps": 3.0, "install_s": 1.0, "cache_hit_ratio": 0.99},
                          "ovs-dpdk": {"mpps": 0.6, "install_s": 2.0}})
    assert m["speedup_vs_ovs_dpdk"] == 5.0
    assert m["ofbench_cache_hit_ratio"] == 0.99
    assert "speedup_vs_ovs_dpdk" not in bench.metrics_of({"ofbench": {"mpps": 1.0,
                                                                      "install_s": 1.0}})
