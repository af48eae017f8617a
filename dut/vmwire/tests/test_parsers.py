"""Pure parsers and builders: ctx/CPU counters, testpmd stats, capture, isolation probe."""

import pytest

from dut.vmwire import capture as cap
from drivers.vmwire.ctxstats import (Sample, cost_per_packet, is_disturbed, other_load, parse_proc_stat,
                                     parse_proc_stat_steal, parse_stat_cpu_ticks, parse_status_ctxt)
from drivers.vmwire.isoprobe import make_frames, tag_of, tally
from drivers.vmwire.testpmd import parse_port_stats, pmd_argv, virtio_user_vdev
from dut.vmwire.wiring import af_packet_port, pcap_port, switch_support, vhost_port


def test_proc_stat_and_status():
    ctxt, busy, total = parse_proc_stat("cpu  10 0 5 100 5 0 0 0 0 0\ncpu0 1 2 3 4\nctxt 777\n")
    assert (ctxt, busy, total) == (777, 15, 120)
    assert parse_status_ctxt("Name:\tx\nvoluntary_ctxt_switches:\t5\n"
                             "nonvoluntary_ctxt_switches:\t7\n") == 12
    stat = "42 (qemu (x) y) S " + " ".join(str(i) for i in range(1, 50))
    # fields after ')': state=S, then 1.. ; utime is field 14 overall -> index 11 after state
    assert parse_stat_cpu_ticks(stat) == 11 + 12


def test_cost_per_packet_leaves_out_vanished_processes():
    a = Sample(1000, 0, {1: 10, 2: 5}, {1: 100, 2: 50})
    b = Sample(3000, 0, {1: 30}, {1: 200})
    m = cost_per_packet(a, b, packets=10_000, seconds=2.0, clk_tck=100)
    assert m["proc_ctx_switches"] == 20 and m["proc_ctx_per_kpkt"] == 2.0
    assert m["host_ctx_per_kpkt"] == 200.0 and m["host_ctx_per_s"] == 1000.0
    assert m["proc_cpu_s"] == 1.0 and m["proc_cpu_us_per_pkt"] == 100.0
    assert cost_per_packet(a, b, 0, 1.0)["proc_ctx_per_kpkt"] is None


def test_cost_per_packet_names_other_load_and_steal():
    """The box's busy time beyond the measured processes, and the hypervisor's steal, are
    reported apart, so a slow trial shows whether something else had the cores."""
    assert parse_proc_stat_steal("cpu  10 0 5 100 5 0 0 7 0 0\ncpu0 1 2 3 4 0 0 0 7\n") == 7
    a = Sample(0, 1000, {1: 0}, {1: 100}, system_steal_jiffies=10)
    b = Sample(0, 1450, {1: 0}, {1: 400}, system_steal_jiffies=60)
    m = cost_per_packet(a, b, packets=1000, seconds=2.0, clk_tck=100)
    assert m["proc_cpu_s"] == 3.0
    assert m["host_steal_s"] == 0.5
    assert m["host_other_cpu_s"] == 1.0   # 450 busy - 50 steal - 300 measured = 100 jiffies
    assert other_load(m) == 0.75            # (1.0 + 0.5) s over a 2 s window
    assert is_disturbed(m, 0.1) and not is_disturbed(m, 0.8)
    assert other_load({"seconds": 0}) == 0.0


def test_testpmd_stats_and_argv():
    text = ("junk\n  ######################## NIC statistics for port 0  ########################\n"
            "  RX-packets: 5     RX-missed: 1          RX-bytes:  320\n  RX-errors: 0\n"
            "  RX-nombuf:  0\n  TX-packets: 9    TX-errors: 0          TX-bytes:  576\n"
            "  ############################################################################\n")
    assert parse_port_stats(text) == {0: {"rx_packets": 5, "rx_missed": 1, "rx_bytes": 320,
                                          "rx_errors": 0, "rx_nombuf": 0, "tx_packets": 9,
                                          "tx_errors": 0, "tx_bytes": 576}}
    argv = pmd_argv(["-l", "1", "--file-prefix", "p"], ["net_null0"], fwd="io", cpu=1)
    assert "-l" not in argv and argv[argv.index("--lcores") + 1] == "0@1,1@1"
    assert "--forward-mode=io" in argv and "-i" in argv
    with pytest.raises(ValueError):
        pmd_argv([], [], fwd="flowgen", cpu=0)
    assert virtio_user_vdev(2, "/s", server=True, mac="02:00:00:00:00:01") == \
        "net_virtio_user2,path=/s,queues=1,queue_size=256,server=1,mac=02:00:00:00:00:01"


def test_port_specs_for_every_switch_kind():
    n, spec = vhost_port("g1", 3, "/r/g1.sock")
    assert n == 3 and spec["ovs"]["type"] == "dpdkvhostuserclient"
    assert spec["devargs"] == "vhost:/r/g1.sock,client=1"  # the switch's own librte_vhost port
    _, spec = vhost_port("g1", 3, "/r/g1.sock", switch_client=False, driver="net_vhost")
    assert spec["devargs"] == "net_vhost3,iface=/r/g1.sock,queues=1,client=0,legacy-ol-flags=1"
    with pytest.raises(ValueError, match="vhost driver"):
        vhost_port("g1", 3, "/r/g1.sock", driver="virtio")
    _, spec = af_packet_port("k1", 4, "k1s", create="veth", peer="k1g")
    assert spec["ovs"]["options"]["dpdk-devargs"] == "net_af_packet4,iface=k1s"
    assert pcap_port("c", 9, "/x.pcap")[1]["devargs"] == "net_pcap9,tx_pcap=/x.pcap"
    assert switch_support("ovs", "vhost-user") and switch_support("ovs-dpdk", "vhost-user") is None
    with pytest.raises(ValueError):
        af_packet_port("k", 1, "k", create="veth")


def test_capture_args():
    args = cap.ovs_mirror_args("br0", "m", ["g1", "g2"], "cap")
    s = " ".join(args)
    assert "select-src-port=@p0,@p1" in s and "select-dst-port=@p0,@p1" in s
    assert "output-port=@out" in s and s.endswith("add Bridge br0 mirrors @m")
    assert cap.pdump_argv("pfx", 0, "/r.pcap", "/t.pcap")[-1] == \
        "port=0,queue=*,rx-dev=/r.pcap,tx-dev=/t.pcap"


GUESTS = [{"name": "a1", "tenant": "A", "mac": "02:00:00:00:01:01"},
          {"name": "a2", "tenant": "A", "mac": "02:00:00:00:02:01"},
          {"name": "b1", "tenant": "B", "mac": "02:00:00:00:03:01"}]


def test_isoprobe_frames_are_varied_and_tagged():
    frames = make_frames(GUESTS, 400, seed=5)
    assert make_frames(GUESTS, 400, seed=5) == frames       # reproducible from the seed
    kinds = {d["dst"] for _, _, d in frames} | {d["src"] for _, _, d in frames}
    assert {"guest", "broadcast", "multicast", "random", "own", "spoof-guest",
            "spoof-random"} <= kinds
    assert any(len(d["vlans"]) == 2 for _, _, d in frames)
    for seq, (s, f, d) in enumerate(frames):
        assert tag_of(f) == (s, seq) and len(f) >= 60
        # the kernel strips the outer tag on receive: the tag must still be found
        assert tag_of(f[:12] + f[16:]) == (s, seq) if d["vlans"] else True


def test_tally_counts_leaks_and_delivery():
    sent = [2, 1, 1]
    received = {0: [(1, 0)], 1: [(0, 1), (0, 2)], 2: [(0, 1), (2, 5)]}   # b1 got one from A
    t = tally(GUESTS, sent, received)
    assert t["leaks"] == 1 and t["same_tenant_received"] == 3
    assert t["same_tenant_expected"] == 3 and t["delivered_ratio"] == 1.0
    assert t["received_by_tenant"]["b1"] == {"A": 1}   # own frames (2,5) are not counted


def test_median_trial_is_one_whole_trial_with_every_value():
    from drivers.vmwire.ctxstats import median_trial
    trials = [{"rx_mbps": 30.0, "ctx": 3}, {"rx_mbps": 10.0, "ctx": 1},
              {"rx_mbps": 20.0, "ctx": 2}]
    m = median_trial(trials, "rx_mbps")
    assert m["rx_mbps"] == 20.0 and m["ctx"] == 2
    assert m["rx_mbps_trials"] == [30.0, 10.0, 20.0]
    assert median_trial(trials[:2], "rx_mbps")["rx_mbps"] == 10.0  # lower middle
    with pytest.raises(ValueError):
        median_trial([], "rx_mbps")


# what testpmd 22.11 prints at "stop" with --record-burst-stats (abridged)
FWD_STATS = """
  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 27867488       RX-dropped: 0             RX-total: 27867488
  RX-bursts : 300 [99% of 0 pkts + 1% of 32 pkts]
  TX-bursts : 870844 [0% of 0 pkts + 100% of 32 pkts]
  ----------------------------------------------------------------------------

  ---------------------- Forward statistics for port 1  ----------------------
  RX-bursts : 100 [50% of 0 pkts + 40% of 32 pkts + 10% of others]
  TX-bursts : 870875 [0% of 0 pkts + 100% of 32 pkts]
"""


def test_rx_empty_burst_share_weights_ports_and_reads_the_last_stop():
    from drivers.vmwire.testpmd import parse_rx_empty_burst_share
    assert parse_rx_empty_burst_share(FWD_STATS) == round((300 * 0.99 + 100 * 0.5) / 400, 3)
    # an earlier stop's block is not this trial's
    older = FWD_STATS.replace("99% of 0", "10% of 0")
    assert parse_rx_empty_burst_share(older + FWD_STATS.split("----\n\n", 1)[0] + "\n") == 0.99
    assert parse_rx_empty_burst_share("Forward statistics for port 0\n  RX-packets: 5\n") is None
    assert parse_rx_empty_burst_share("no statistics") is None
