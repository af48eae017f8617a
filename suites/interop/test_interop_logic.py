"""The interop suite's pure parts: the probe frames, FAUCET configs FAUCET itself accepts."""
from __future__ import annotations

import pytest

from drivers.lab import faucet
from suites.interop import configs
from suites.interop.udp_probe import frame, parse


@pytest.mark.quick
def test_probe_frames_round_trip_tagged_and_untagged():
    f = frame("02:00:00:00:00:02", "02:00:00:00:00:01", 100, "10.0.0.2", "10.0.0.1", 9000, 7)
    assert f[12:14] == b"\x81\x00" and parse(f) == ("100", 9000)
    u = frame("02:00:00:00:00:02", "02:00:00:00:00:01", None, "10.0.0.2", "10.0.0.1", 9001, 7)
    assert parse(u) == ("none", 9001)
    assert parse(u, vid="200") == ("200", 9001)  # the tag the kernel moved to PACKET_AUXDATA
    assert parse(b"\xff" * 12 + b"\x08\x06" + b"\0" * 40) is None  # ARP: not ours


@pytest.mark.quick
@pytest.mark.skipif(faucet.faucet_available() is not None, reason="FAUCET not installed")
def test_every_scenario_config_is_one_faucet_accepts(tmp_path):
    from suites.interop.test_interop import SCENARIOS
    paths = []
    for name, body in SCENARIOS.items():
        _, cfg, _, _ = body()
        paths.append(tmp_path / f"{name}.yaml")
        paths[-1].write_text(cfg)
    faucet.check_config(*paths)  # one FAUCET start-up for all of them


def _round(of: float, ovs: float, best: float) -> dict:
    return {"frames": {"in_pcap": 8192, "distinct": 8192},
            "ofbench/pcap": {"mpps": of, "mpps_best": best, "install_s": 0.1, "cpu_share": 1.0,
                             "mpps_per_cpu": of, "cache_hit_ratio": 1.0, "feed": "pcap",
                             "tables": {0: {"flows": 3, "hit": 1}}},
            "ovs-dpdk/pcap": {"mpps": ovs, "mpps_best": ovs + 0.1, "install_s": 2.0,
                              "cpu_share": 0.5, "mpps_per_cpu": ovs * 2, "feed": "pcap",
                              "datapath": {"pmd": {"packets_received": 10}}}}


@pytest.mark.quick
def test_faucet_pipeline_rounds_merge_to_medians_beside_best():
    from suites.interop.faucet_pipeline import merge_rounds, round_ratios
    from suites.switch.pipeline import metrics_of
    rounds = [_round(5.0, 7.0, 5.2), _round(6.0, 2.0, 6.5), _round(4.0, 7.5, 4.1)]
    rounds[-1]["ceiling/pcap"] = {"mpps": 100.0, "mpps_best": 101.0}
    m = merge_rounds(rounds)
    assert m["ofbench/pcap"]["mpps"] == 5.0 and m["ofbench/pcap"]["mpps_best"] == 6.5
    assert m["ofbench/pcap"]["mpps_runs"] == [5.0, 6.0, 4.0] and m["ofbench/pcap"]["rounds"] == 3
    assert m["ovs-dpdk/pcap"]["mpps"] == 7.0 and m["ovs-dpdk/pcap"]["cpu_share"] == 0.5
    assert m["ovs-dpdk/pcap"]["datapath"] == {"pmd": {"packets_received": 10}}
    assert m["ceiling/pcap"]["mpps"] == 100.0
    assert round_ratios(rounds) == [0.714, 3.0, 0.533]
    metrics = metrics_of(m)
    assert metrics["speedup_vs_ovs_dpdk"] == round(5.0 / 7.0, 2)
    assert metrics["ofbench_pcap_table0_flows"] == 3 and metrics["ofbench_pcap_table0_flows_hit"] == 1


@pytest.mark.quick
def test_faucet_recording_loads_whole_or_says_why(tmp_path):
    import struct
    from suites.interop.faucet_pipeline import load_recording
    msg = struct.pack("!BBHI", 4, 14, 8, 1)
    (tmp_path / "ok.of").write_bytes(msg * 3)
    assert load_recording(tmp_path / "ok.of") == [msg] * 3
    (tmp_path / "cut.of").write_bytes(msg + msg[:5])
    with pytest.raises(ValueError, match="cut.of: not a whole OpenFlow message stream"):
        load_recording(tmp_path / "cut.of")
