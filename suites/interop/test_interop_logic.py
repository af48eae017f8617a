"""The interop suite's pure parts: the probe frames, FAUCET configs FAUCET itself accepts."""
from __future__ import annotations

import struct

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
    assert recording_problem({**whole, "hosts_learned": 1990}, 1000) == (
        "the recording holds 1990 of 2000 hosts whole (eth_src, eth_dst flows and /32 route)")
    # what the recording holds counts, not what FAUCET's log says it learned
    assert "holds 1999 of 2000" in recording_problem({**whole, "hosts_in_tables": 1999}, 1000)


def _flow_mod(table: int, command: int = 0, **match) -> bytes:
    """An OpenFlow 1.3 FLOW_MOD as os-ken writes it."""
    from os_ken.ofproto import ofproto_protocol, ofproto_v1_3, ofproto_v1_3_parser as p
    dp = ofproto_protocol.ProtocolDesc(ofproto_v1_3.OFP_VERSION)
    m = p.OFPFlowMod(dp, table_id=table, command=command, match=p.OFPMatch(**match),
                     out_port=ofproto_v1_3.OFPP_ANY, out_group=ofproto_v1_3.OFPG_ANY)
    m.serialize()
    return bytes(m.buf)


@pytest.mark.quick
def test_missing_hosts_are_those_without_both_flows_and_a_route():
    from suites.interop.faucet_pipeline import flow_mod_match, learned, missing_hosts
    mac = lambda p, i: f"0e:{p:02x}:00:00:00:{i:02x}"  # noqa: E731 - host_mac's form
    msgs = []
    for port, net in ((1, "10.100"), (2, "10.200")):
        for i in range(3):
            msgs += [_flow_mod(1, in_port=port, vlan_vid=0x1064, eth_src=mac(port, i)),
                     _flow_mod(4, vlan_vid=0x1064, eth_dst=mac(port, i)),
                     _flow_mod(2, eth_type=0x800, vlan_vid=0x1064,
                               ipv4_dst=(f"{net}.0.{1 + i}", "255.255.255.255"))]
    assert flow_mod_match(msgs[2])[:2] == (2, 0)
    assert flow_mod_match(msgs[2])[2][12] == bytes([10, 100, 0, 1])  # /32: its mask all ones
    assert missing_hosts(msgs, 3) == {1: [], 2: []}
    assert missing_hosts(msgs, 4) == {1: [3], 2: [3]}
    # host 1 of port 1 loses its eth_dst flow (a strict delete), port 2's host 0 its route
    gone = msgs + [_flow_mod(4, 4, vlan_vid=0x1064, eth_dst=mac(1, 1)),
                   _flow_mod(2, 3, eth_type=0x800, ipv4_dst=("10.200.0.1", "255.255.255.255"))]
    assert missing_hosts(gone, 3) == {1: [1], 2: [0]}
    # a cold start (delete everything in every table) empties the tables
    cold = msgs + [_flow_mod(0xFF, 3)]
    assert learned(cold) == {"eth_src": set(), "eth_dst": set(), "ipv4_dst": set()}
    assert missing_hosts(cold, 3) == {1: [0, 1, 2], 2: [0, 1, 2]}
    assert flow_mod_match(b"\x04\x0a\x00\x08\x00\x00\x00\x00") is None  # not a FLOW_MOD


@pytest.mark.quick
def test_the_relay_counts_packet_in_sources_from_the_wire():
    from os_ken.ofproto import ofproto_protocol, ofproto_v1_3, ofproto_v1_3_parser as p
    from suites.interop.ofrelay import packet_in_source, split_messages
    frame = bytes.fromhex("ffffffffffff" "0e0100000007" "0806") + bytes(46)
    # os-ken parses PACKET_IN but does not write one: its match from os-ken, the rest per
    # OF1.3.5 7.4.1 (buffer_id, total_len, reason, table_id, cookie, match, 2 pad, frame)
    match = bytearray()
    p.OFPMatch(in_port=2, metadata=7).serialize(match, 0)
    body = struct.pack("!IHBBQ", ofproto_v1_3.OFP_NO_BUFFER, len(frame), 1, 1, 5) + \
        bytes(match) + b"\0\0" + frame
    pin = struct.pack("!BBHI", 4, 10, 8 + len(body), 9) + body
    parsed = p.OFPPacketIn.parser(ofproto_protocol.ProtocolDesc(ofproto_v1_3.OFP_VERSION),
                                  4, 10, 8 + len(body), 9, pin)
    assert parsed.match["in_port"] == 2 and parsed.data == frame  # os-ken reads it so
    wire = bytearray(pin + _flow_mod(1))
    msgs = split_messages(wire)
    assert [m[1] for m in msgs] == [10, 14] and not wire
    assert packet_in_source(msgs[0]) == (2, bytes.fromhex("0e0100000007"))
    assert packet_in_source(msgs[1]) is None


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


@pytest.mark.quick
@pytest.mark.skipif(faucet.faucet_available() is not None, reason="FAUCET not installed")
def test_the_recording_config_carries_the_learning_options_faucet_accepts(tmp_path):
    import yaml
    from suites.interop.faucet_pipeline import DP_OPTIONS, config
    d = yaml.safe_load(config(10_000))
    dp = d["dps"]["sw"]
    assert {k: dp[k] for k in DP_OPTIONS} == DP_OPTIONS
    assert dp["ignore_learn_ins"] == 0 and dp["metrics_rate_limit_sec"] > 0
    assert all(v["max_hosts"] == 10_016 for v in d["vlans"].values())
    (tmp_path / "f.yaml").write_text(config(10_000))
    faucet.check_config(tmp_path / "f.yaml")  # FAUCET's own parser takes every option


@pytest.mark.quick
def test_every_rfc_kind_has_its_own_topology_tag():
    """OVS and OVS-DPDK in one RFC 2544 run must not share names (kind[:3] did: "ovs")."""
    from suites.interop.faucet_pipeline import RFC_KINDS, rfc_tag
    assert RFC_KINDS[-1] == "ofbench" and {"ovs", "ovs-dpdk"} <= set(RFC_KINDS)
    tags = {rfc_tag(k, n) for k in RFC_KINDS for n in (1000, 10_000)}
    assert len(tags) == 2 * len(RFC_KINDS)
    assert rfc_tag("ovs-dpdk", 1000) == "fr1ovd" and rfc_tag("ofbench", 10_000) == "fr10ofb"


@pytest.mark.quick
def test_faucet_pipeline_runs_every_kind_and_gives_ovs_its_own_record():
    from suites.interop.faucet_pipeline import (kind_rows, merge_rounds, pipeline_plan,
                                                split_kind_metrics)
    from suites.switch.pipeline import metrics_of
    assert pipeline_plan(("ofbench", "ovs-dpdk", "ovs")) == (
        ("ofbench", "replay-copy"), ("ofbench", "pcap"), ("ovs-dpdk", "pcap"), ("ovs", "veth"))
    assert pipeline_plan(("ofbench",)) == (("ofbench", "replay-copy"), ("ofbench", "pcap"))
    rounds = [_round(5.0, 1.0, 5.5) for _ in range(3)]
    for r in rounds:
        r["ofbench/pcap"]["switch_cache"] = {"pipe_cache_hits": 900, "pipe_cache_stores": 10,
                                             "cache_hits": 0, "cache_misses": 0,
                                             "rx_packets": 1000}
        r["ovs-dpdk/pcap"]["datapath"] = {"pmd": {"packets_received": 100, "emc_hits": 20,
                                                  "smc_hits": 0, "megaflow_hits": 80}}
        r["ovs/veth"] = {"mpps": 0.07, "mpps_best": 0.08, "install_s": 1.0, "feed": "veth",
                         "datapath": {"pmd": {"packets_received": 50, "emc_hits": 50}},
                         "veth": {"offered_mpps": 0.3}}
    rounds[-1]["ceiling/veth"] = {"mpps": 0.1, "mpps_best": 0.1}
    rounds[-1]["ceiling/pcap"] = {"mpps": 20.0, "mpps_best": 21.0}
    m = metrics_of(merge_rounds(rounds))
    m["flow_mods"] = 8046
    rest, ovs = split_kind_metrics(m)
    assert ovs["ovs_veth_mpps"] == 0.07 and ovs["feed_veth_ceiling_mpps"] == 0.1
    assert ovs["flow_mods"] == 8046 and ovs["ovs_veth_emc_hits_share"] == 1.0
    assert not any(k.startswith(("ofbench_", "ovs_dpdk_", "speedup", "feed_pcap")) for k in ovs)
    assert not any(k.startswith(("ovs_veth", "feed_veth", "ovs_mpps")) for k in rest)
    assert rest["ofbench_pcap_pipe_cache_hits_share"] == 0.9 and rest["flow_mods"] == 8046
    rows = kind_rows(rest, ovs, {})
    by = {(r["switch"], r["port_kind"][:4]): r for r in rows}
    assert [r["switch"] for r in rows] == ["ofbench", "ovs-dpdk", "ovs"]
    assert "pipeline cache 90.0 %" in by[("ofbench", "DPDK")]["cache_served"]
    assert by[("ovs-dpdk", "DPDK")]["cache_served"].startswith("EMC 20.0 %, SMC 0.0 %, megaflow 80.0 %")
    assert by[("ovs", "veth")]["feed_ceiling_mpps"] == 0.1
    assert by[("ovs", "veth")]["note"].startswith("bounded by the switch's core, not the port: "
                                                  "0.07 Mpps is 70% of the veth ceiling")
    rows = kind_rows(rest, None, {"ovs": "profile lacks feature ovs"})
    assert rows[-1] == {"switch": "ovs", "port_kind": "-", "mpps": None, "best_mpps": None,
                        "feed_ceiling_mpps": None, "cache_served": "",
                        "note": "not run: profile lacks feature ovs"}


@pytest.mark.quick
def test_the_veth_records_say_what_bounds_their_rate():
    from suites.interop.faucet_pipeline import veth_bound
    port = veth_bound({"ovs_veth_mpps": 0.46, "feed_veth_ceiling_mpps": 0.48})
    assert port.startswith("the veth port kind: 0.46 Mpps is 96% of") and "not comparable" in port
    core = veth_bound({"ovs_veth_mpps": 0.24, "feed_veth_ceiling_mpps": 0.48,
                       "ovs_veth_cpu_share": 0.97})
    assert core.startswith("the switch's core, not the port: 0.24 Mpps is 50%")
    assert "CPU share 0.97" in core
    assert veth_bound({}).startswith("the veth port kind (ceiling not measured)")
