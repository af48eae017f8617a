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
    from suites.interop.scenarios import SCENARIOS
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


@pytest.mark.quick
def test_replay_app_renumbers_xids_and_refuses_a_cut_recording():
    import struct
    from suites.interop.replay_app import messages
    a, b = struct.pack("!BBHI", 4, 14, 12, 7) + b"abcd", struct.pack("!BBHI", 4, 20, 8, 9)
    out = messages(a + b)
    assert [m[1] for m in out] == [14, 20] and out[0][8:] == b"abcd"
    assert [struct.unpack_from("!I", m, 4)[0] for m in out] == [0x52000000, 0x52000001]
    with pytest.raises(ValueError, match="recording cut at byte 12"):
        messages(a + b[:6])


@pytest.mark.quick
def test_a_faucet_recording_with_a_channel_loss_is_partial():
    from suites.interop.faucet_pipeline import recording_problem
    whole = {"hosts_learned": 2000, "tables": {0: 3, 1: 2010}, "channel_downs": 0}
    assert recording_problem(whole, 1000) is None
    assert "went down 3 time(s)" in recording_problem(
        {**whole, "channel_downs": 3, "tables": {0: 12}}, 1000)
    assert "4 cold starts" in recording_problem({**whole, "tables": {0: 12}}, 1000)
    assert recording_problem({**whole, "hosts_learned": 1990}, 1000) == \
        "FAUCET learned 1990 of 2000 hosts"


@pytest.mark.quick
def test_table_mismatches_name_the_tables_that_differ():
    from suites.interop.faucet_pipeline import table_mismatches
    m = {"ofbench_pcap_table4_flows": 1002, "ovs_dpdk_pcap_table4_flows": 2001,
         "ofbench_pcap_table4_flows_hit": 1, "ovs_dpdk_pcap_table4_flows_hit": 999,
         "ofbench_pcap_table2_flows": 4007, "ovs_dpdk_pcap_table2_flows": 4007}
    assert table_mismatches(m) == [
        "table 4 flows: ofbench_pcap 1002, ovs_dpdk_pcap 2001",
        "table 4 flows hit: ofbench_pcap 1, ovs_dpdk_pcap 999"]
    assert table_mismatches({"ofbench_pcap_table2_flows": 1, "ovs_dpdk_pcap_table2_flows": 1}) == []
    # after the fix (21:25): a frame or two before the flows were in, OVS's trailing counters
    assert table_mismatches({"ofbench_pcap_table4_flows": 2001, "ovs_dpdk_pcap_table4_flows": 2001,
                             "ofbench_pcap_table4_flows_hit": 1000,
                             "ovs_dpdk_pcap_table4_flows_hit": 999,
                             "ofbench_pcap_table5_flows_hit": 1,
                             "ovs_dpdk_pcap_table5_flows_hit": 0}) == []
