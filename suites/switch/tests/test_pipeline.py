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
    m = bench.metrics_of({
        "frames": {"in_pcap": 10, "distinct": 8},
        "ofbench/replay": {"mpps": 9.0, "mpps_best": 9.5, "install_s": 1.0,
                           "cache_hit_ratio": 0.99},
        "ofbench/pcap": {"mpps": 3.0, "mpps_best": 3.1, "install_s": 1.0, "cpu_share": 0.5,
                         "mpps_per_cpu": 6.0, "other_load_cores": 0.25},
        "ovs-dpdk/pcap": {"mpps": 0.6, "mpps_best": 0.7, "install_s": 2.0, "cpu_share": 1.0,
                          "mpps_per_cpu": 0.6},
        "ceiling/replay": {"mpps": 100.0, "mpps_best": 110.0},
        "memory": {1: 14.5, 8: 112.0}})
    # the ratio compares the same feed; ofbench_mpps is its best feed
    assert m["speedup_vs_ovs_dpdk"] == 5.0
    assert m["ofbench_mpps"] == 9.0 and m["ofbench_replay_best_mpps"] == 9.5
    assert m["ofbench_cache_hit_ratio"] == 0.99 and m["ovs_dpdk_mpps"] == 0.6
    assert m["feed_replay_ceiling_mpps"] == 100.0 and m["frames_distinct"] == 8
    assert m["ofbench_pcap_cpu_share"] == 0.5 and m["speedup_per_cpu_vs_ovs_dpdk"] == 10.0
    assert m["ofbench_pcap_other_load_cores"] == 0.25
    assert m["host_mem_latency_1mib_ns"] == 14.5 and m["host_mem_latency_8mib_ns"] == 112.0
    assert m["host_cache_mib_est"] == 1 and m["working_set_mib_est"] == 0.0
    # the rig's own measurements are marked as such for the trend; the switch's are not
    assert bench.series_kinds(m) == {
        "feed_replay_ceiling_best_mpps": "rig", "feed_replay_ceiling_mpps": "rig",
        "host_cache_mib_est": "rig", "host_mem_latency_1mib_ns": "rig",
        "host_mem_latency_8mib_ns": "rig"}


def test_host_cache_and_working_set():
    assert bench.host_cache_mib({1: 16.5, 4: 17.5, 8: 104.7, 16: 145.0}) == 4
    assert bench.host_cache_mib({1: 16.5, 4: 126.0, 8: 144.0, 16: 152.0}) == 1
    assert bench.host_cache_mib({1: 14.0, 4: 16.0, 8: 17.7, 16: 119.9}) == 8
    assert bench.host_cache_mib({}) is None
    assert bench.working_set_mib(24576) == 6.0 and bench.working_set_mib(8192) == 2.0
    assert "speedup_vs_ovs_dpdk" not in bench.metrics_of({"ofbench/replay": {
        "mpps": 1.0, "mpps_best": 1.0, "install_s": 1.0}})


def test_rx_spec_per_feed():
    from pathlib import Path
    assert bench.rx_spec("replay", Path("/x.pcap")) == "replay:/x.pcap"
    assert bench.rx_spec("replay-copy", Path("/x.pcap")) == "replay:/x.pcap,copy=1"
    assert bench.rx_spec("replay-stream", Path("/x.pcap")) == "replay:/x.pcap,copy=stream"
    assert bench.rx_spec("pcap", Path("/x.pcap")).startswith("net_pcap0,rx_pcap=/x.pcap")
    with pytest.raises(ValueError):
        bench.rx_spec("nic", Path("/x.pcap"))


def test_zipf_sequence_is_skewed_and_deterministic():
    a = bench.zipf_sequence(1000, 20000, 1.0)
    assert a == bench.zipf_sequence(1000, 20000, 1.0)
    top = a.count(0) / len(a)
    # P(rank 1) = 1 / H(1000) ~ 0.134 for s = 1.0; flatter for s = 0.8
    assert 0.12 < top < 0.15
    assert a.count(0) > bench.zipf_sequence(1000, 20000, 0.8).count(0)


def test_workload_messages():
    flows = bench.make_flows(8)
    mt = list(bench.WORKLOADS["pipeline_64b_100k_flows_multitable"].flow_mods(flows))
    assert len(mt) == bench.N_MD_FLOWS + 8
    # a goto-table instruction (type 1 -> table 1) after a write-metadata (type 2)
    assert struct.pack("!HH4xQQ", 2, 24, 7, 2**64 - 1) + struct.pack("!HHB3x", 1, 8, 1) in mt[-1]
    sf = bench.action_set_field(bench.w.oxm(12, bytes(4)))
    assert len(sf) == 16 and struct.unpack_from("!HH", sf) == (25, 16)
    assert bench.WORKLOADS["pipeline_64b_100k_flows_pushvlan"].rewrites
    z = bench.Workload("z", mix="zipf", n_frames=500, n_distinct=100)
    fr = z.frames(flows)
    assert len(fr) == 500 and len(set(fr)) <= 100


def test_encapsulated_frames_and_flows():
    """popvlan / popmpls frames carry their tag and stay 60 bytes; their flows match the tag;
    pushmpls sets the flow's own label."""
    flows = bench.make_flows(8)
    pv = bench.WORKLOADS["pipeline_64b_100k_flows_popvlan"]
    fr = pv.frames(flows)
    assert all(len(f) == 60 and f[12:18] == bench.vlan_tag(bench.VLAN_VID) for f in fr)
    assert all(f[18 + 9] == 17 for f in fr)  # IPv4 protocol UDP below the tag
    m = list(pv.flow_mods(flows))[0]
    assert bench.w.oxm(6, struct.pack("!H", 0x1000 | bench.VLAN_VID)) in m
    assert bench.action_pop_vlan() in m
    pm = bench.WORKLOADS["pipeline_64b_100k_flows_popmpls"]
    for f in pm.frames(flows):
        assert len(f) == 60 and f[12:14] == b"\x88\x47"
        lse = struct.unpack_from("!I", f, 14)[0]
        assert lse & 0x100 and lse & 0xFF == 64 and lse >> 12 < 8  # bottom of stack, ttl, label
        assert f[18] == 0x45
    mods = list(pm.flow_mods(flows))
    assert bench.w.oxm(34, struct.pack("!I", 5)) in mods[5] and bench.action_pop_mpls() in mods[5]
    push = list(bench.WORKLOADS["pipeline_64b_100k_flows_pushmpls"].flow_mods(flows))
    assert bench.action_push_mpls() in push[3]
    assert bench.action_set_field(bench.w.oxm(34, struct.pack("!I", 3))) in push[3]
    assert all(bench.WORKLOADS[n].rewrites for n in (
        "pipeline_64b_100k_flows_popvlan", "pipeline_64b_100k_flows_popmpls",
        "pipeline_64b_100k_flows_pushmpls"))
    assert bench.w.match_oxms(bench.w.match(bench.w.oxm(5, b"\x08\x00"), bench.w.oxm(10, b"\x11"))) == [
        bench.w.oxm(5, b"\x08\x00"), bench.w.oxm(10, b"\x11")]


def test_rss_split_keeps_each_flow_on_one_queue():
    """Worker feeds split as RSS would: a flow's frames stay together and in order, every
    frame goes somewhere, the queues are roughly even, and an empty queue is refused."""
    flows = bench.make_flows(2000)
    frames = bench.Workload("pipeline", n_frames=4096).frames(flows)
    parts = bench.rss_split(frames, 4)
    assert sorted(f for p in parts for f in p) == sorted(frames)
    assert min(len(p) for p in parts) > len(frames) // 4 * 0.8
    where = {}
    for q, part in enumerate(parts):
        for fr in part:
            assert where.setdefault(fr[23:24] + fr[26:38], q) == q
    assert parts[0] == [f for f in frames if f in set(parts[0])]
    with pytest.raises(ValueError, match="empty"):
        bench.rss_split(frames[:1], 2)


def test_stream_feed_alone_still_gives_ofbench_mpps():
    m = bench.metrics_of({"ofbench/replay-stream": {"mpps": 7.7, "mpps_best": 8.2,
                                                     "install_s": 1.0}})
    assert m["ofbench_replay_stream_mpps"] == 7.7 and m["ofbench_mpps"] == 7.7


def test_window_reps_are_the_printed_records_repetitions():
    from suites.switch.pipeline import window_reps
    res = {"frames": {"in_pcap": 1}, "ofbench/replay": {"mpps": 2.0, "mpps_runs": [1.0, 2.0, 3.0]},
           "ovs-dpdk/pcap": {"mpps": 1.0, "mpps_runs": [1.0, 1.1]},
           "ceiling/replay": {"mpps": 9.0}, "memory": {1: 5.0}}
    assert window_reps(res) == {"ofbench_replay_mpps_reps": [1.0, 2.0, 3.0],
                                "ovs_dpdk_pcap_mpps_reps": [1.0, 1.1]}


PMD_STATS = """pmd thread numa_id 0 core_id 1:
  packets received: 1000
  packet recirculations: 0
  avg. datapath passes per packet: 1.00
  phwol hits: 0 (0.0 %)
  emc hits: 800 (80.0 %)
  smc hits: 0 (0.0 %)
  megaflow hits: 190 (19.0 %)
  avg. subtable lookups per megaflow hit: 1.50
  miss with success upcall: 10 (1.0 %)
  miss with failed upcall: 0 (0.0 %)
main thread:
  packets received: 5
  emc hits: 5
"""
UPCALL_SHOW = """netdev@ovs-netdev:
  flows         : (current 8156) (avg 8100) (max 8156) (limit 149000)
  offloaded flows : 0
  dump duration : 5ms
  ufid enabled : true
"""


def test_ovs_datapath_stats_parse_and_become_metrics():
    from suites.switch.pipeline import datapath_metrics, parse_pmd_stats, parse_upcall_show
    pmd = parse_pmd_stats(PMD_STATS)
    assert pmd["packets_received"] == 1000 and pmd["emc_hits"] == 800  # pmd threads only
    assert pmd["avg_datapath_passes_per_packet"] == 1.0
    up = parse_upcall_show(UPCALL_SHOW)
    assert up == {"flows": 8156, "flows_avg": 8100, "flows_max": 8156, "flow_limit": 149000,
                  "dump_duration_ms": 5}
    m = datapath_metrics("ovs_dpdk_pcap", {"pmd": pmd, "upcall": up})
    assert m["ovs_dpdk_pcap_emc_hits_share"] == 0.8 and m["ovs_dpdk_pcap_upcalls"] == 10
    assert m["ovs_dpdk_pcap_megaflows"] == 8156 and m["ovs_dpdk_pcap_flow_limit"] == 149000
    assert datapath_metrics("x", {"pmd": {"error": "no"}, "upcall": {}}) == {}


def test_flow_table_summary_counts_flows_and_hits_per_table():
    from suites.switch.pipeline import flow_table_summary

    def entry(table: int, packets: int) -> bytes:
        e = bytearray(56)
        struct.pack_into("!HB", e, 0, 56, table)
        struct.pack_into("!Q", e, 32, packets)
        return bytes(e)
    body = entry(0, 5) + entry(2, 0) + entry(2, 7) + entry(2, 0)
    assert flow_table_summary([body, entry(4, 1)]) == {
        0: {"flows": 1, "hit": 1}, 2: {"flows": 3, "hit": 1}, 4: {"flows": 1, "hit": 1}}


def test_ovs_netdev_stats_are_its_main_threads():
    from suites.switch.pipeline import parse_pmd_stats
    main = parse_pmd_stats(PMD_STATS, "main thread")
    assert main == {"packets_received": 5.0, "emc_hits": 5.0}


def test_switch_cache_counts_say_which_cache_served_the_frames():
    before = {"cache_hits": 10, "cache_misses": 2, "pipe_cache_hits": 100, "pipe_cache_stores": 7,
              "ports": [{"port": 1, "rx_packets": 1000}, {"port": 2, "rx_packets": 0}]}
    after = {"cache_hits": 10, "cache_misses": 2, "pipe_cache_hits": 1090, "pipe_cache_stores": 9,
             "ports": [{"port": 1, "rx_packets": 2000}, {"port": 2, "rx_packets": 0}]}
    c = bench.switch_cache_counts(before, after)
    assert c == {"pipe_cache_hits": 990, "pipe_cache_stores": 2, "cache_hits": 0,
                 "cache_misses": 0, "rx_packets": 1000}
    assert bench.switch_cache_counts(None, after) is None
    m = bench.metrics_of({"ofbench/pcap": {"mpps": 1.0, "mpps_best": 1.1, "install_s": 0.1,
                                           "switch_cache": c}})
    assert m["ofbench_pcap_pipe_cache_hits"] == 990 and m["ofbench_pcap_pipe_cache_stores"] == 2
    assert m["ofbench_pcap_pipe_cache_hits_share"] == 0.99
    assert m["ofbench_pcap_cache_hits_share"] == 0.0 and m["ofbench_pcap_switch_rx_packets"] == 1000


def test_veth_feed_rates_and_ovs_metrics():
    b = {"g0": {"rx_packets": 0, "tx_packets": 0, "rx_dropped": 0, "tx_dropped": 0},
         "w0": {"rx_packets": 0, "tx_packets": 0, "rx_dropped": 0, "tx_dropped": 0}}
    a = {"g0": {"rx_packets": 0, "tx_packets": 400_000, "rx_dropped": 0, "tx_dropped": 3},
         "w0": {"rx_packets": 390_000, "tx_packets": 0, "rx_dropped": 5, "tx_dropped": 0}}
    r = bench.veth_rates(b, a, "g0", "w0", 2.0)
    assert r == {"offered_mpps": 0.2, "switch_port_rx_mpps": 0.195,
                 "switch_port_rx_dropped": 5, "feeder_tx_dropped": 3}
    assert bench.veth_rates(b, a, "g0", "w0", 0) == {}
    m = bench.metrics_of({"ovs/veth": {"mpps": 0.07, "mpps_best": 0.08, "install_s": 1.0,
                                       "veth": r},
                          "ceiling/veth": {"mpps": 0.1, "mpps_best": 0.11}})
    assert m["ovs_mpps"] == 0.07 and m["ovs_veth_veth_offered_mpps"] == 0.2
    assert m["feed_veth_ceiling_mpps"] == 0.1 and "speedup_vs_ovs_dpdk" not in m


def test_the_veth_feed_is_only_for_kinds_without_dpdk_ports():
    from pathlib import Path
    for kind, feed in (("ofbench", "veth"), ("ovs", "pcap"), ("ovs-dpdk", "veth")):
        with pytest.raises(ValueError):
            bench.run_one(None, kind, [], Path("/x.pcap"), lcore=1, feed=feed)
