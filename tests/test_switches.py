"""drivers.lab.switches: which switch can run, and which of the profile's settings reach ours."""
from types import SimpleNamespace

import pytest

from drivers.lab.switches import ofbench_settings, switch_available


def _profile(switch: dict, features=("ovs",), lab_kind="local"):
    return SimpleNamespace(switch=switch, features=frozenset(features), lab_kind=lab_kind,
                           name="p")


def test_profile_switch_settings_reach_ofbench():
    prof = _profile({"kind": "ofbench", "lookup": "simple", "workers": 2})
    assert ofbench_settings(prof, "ofbench", env={}) == {"lookup": "simple", "workers": 2}


def test_profile_cache_lines_reach_ofbench():
    prof = _profile({"kind": "ofbench", "lookup": "tuple", "workers": 1, "cache_lines": 1024})
    assert ofbench_settings(prof, "ofbench", env={})["cache_lines"] == 1024
    peer = _profile({"kind": "ovs", "cache_lines": 1024})
    assert "cache_lines" not in ofbench_settings(peer, "ofbench", env={})


def test_profile_cores_reach_ofbench():
    prof = _profile({"kind": "ofbench", "lookup": "trie", "workers": 1, "cores": "2-3"})
    assert ofbench_settings(prof, "ofbench", env={})["lcores"] == "2-3"


def test_ofbench_as_a_peer_gets_the_one_default():
    from dut.switch.launcher import DEFAULT_LOOKUP
    prof = _profile({"kind": "ovs", "lookup": "simple", "workers": 2})
    assert ofbench_settings(prof, "ofbench", env={}) == {"lookup": DEFAULT_LOOKUP, "workers": 1}


def test_env_overrides_lookup():
    prof = _profile({"kind": "ofbench", "lookup": "trie", "workers": 1})
    got = ofbench_settings(prof, "ofbench", env={"OFBENCH_SWITCH_LOOKUP": "simple"})
    assert got == {"lookup": "simple", "workers": 1}


def test_unavailable_switches_say_why():
    prof = _profile({"kind": "ofbench"}, features=())
    assert "lacks feature ovs" in switch_available("ovs", prof)
    assert "lacks feature ovs_dpdk" in switch_available("ovs-dpdk", prof)
    assert "unknown switch kind" in switch_available("p4", prof)
    remote = _profile({"kind": "ofbench"}, features=("ovs",), lab_kind="remote")
    assert "runs on this box only" in switch_available("ovs", remote)


# OVS 3.1's dpif-netdev/pmd-stats-show (abridged to the lines that matter; one PMD, the main
# thread's block, which is not a PMD's)
PMD_STATS = """pmd thread numa_id 0 core_id 1:
  packets received: 5000
  emc hits: 4990
  idle cycles: 3000 (30.00%)
  processing cycles: 7000 (70.00%)
  avg cycles per packet: 2.00 (10000/5000)
main thread:
  packets received: 12
  idle cycles: 900 (10.00%)
  processing cycles: 8100 (90.00%)
"""


def test_ovs_pmd_cycles_count_pmd_threads_only():
    from drivers.lab.switches import parse_ovs_pmd_cycles
    assert parse_ovs_pmd_cycles(PMD_STATS) == {"busy_cycles": 7000, "idle_cycles": 3000}
    two = PMD_STATS.replace("main thread:", "pmd thread numa_id 0 core_id 2:\n  idle cycles: 1 (50.00%)\n"
                                            "  processing cycles: 1 (50.00%)\nmain thread:")
    assert parse_ovs_pmd_cycles(two) == {"busy_cycles": 7001, "idle_cycles": 3001}
    assert parse_ovs_pmd_cycles("main thread:\n  idle cycles: 5 (100%)\n") == {"busy_cycles": 0, "idle_cycles": 0}


def test_ofbench_worker_cycles_sum_and_busy_share():
    from drivers.lab.switches import busy_share, ofbench_pmd_cycles
    st = {"workers": [{"lcore": 1, "busy_cycles": 60, "idle_cycles": 40},
                      {"lcore": 2, "busy_cycles": 40, "idle_cycles": 60}]}
    c0 = ofbench_pmd_cycles(st)
    assert c0 == {"busy_cycles": 100, "idle_cycles": 100}
    assert ofbench_pmd_cycles({"ports": []}) is None and ofbench_pmd_cycles(None) is None
    c1 = {"busy_cycles": 190, "idle_cycles": 110}
    assert busy_share(c0, c1) == (0.9, 90)
    assert busy_share(c0, c0) is None and busy_share(None, c1) is None


# OVS 3.1's dpif-netdev/pmd-stats-show whole, one PMD on core 1 (read from a real OVS-DPDK)
PMD_FULL = """pmd thread numa_id 0 core_id 1:
  packets received: {rx}
  packet recirculations: 0
  avg. datapath passes per packet: 1.00
  phwol hits: 0
  mfex opt hits: 0
  simple match hits: 0
  emc hits: {emc}
  smc hits: 0
  megaflow hits: {mf}
  avg. subtable lookups per megaflow hit: 1.00
  miss with success upcall: {up}
  miss with failed upcall: 0
  avg. packets per output batch: 31.50
  idle cycles: {idle} (40.00%)
  processing cycles: {busy} (60.00%)
  avg cycles per packet: 300.00 (1000/{rx})
  avg processing cycles per packet: 180.00 (600/{rx})
main thread:
  packets received: 7
  idle cycles: 1 (1.00%)
  processing cycles: 99 (99.00%)
"""


def test_ovs_pmd_stats_per_trial_are_the_counters_change():
    from drivers.lab.switches import ovs_pmd_telemetry, parse_ovs_pmd_stats
    before = parse_ovs_pmd_stats(PMD_FULL.format(rx=1000, emc=900, mf=90, up=10, idle=4000, busy=6000))
    after = parse_ovs_pmd_stats(PMD_FULL.format(rx=11000, emc=9900, mf=1090, up=10, idle=5000,
                                                busy=36000))
    assert list(before) == ["1"] and before["1"]["rx_packets"] == 1000
    assert before["1"]["busy_cycles"] == 6000 and "avg_cycles" not in before["1"]
    t = ovs_pmd_telemetry(before, after)
    assert t["pmd_rx_packets"] == 10000 and t["pmd_emc_hits"] == 9000
    assert t["pmd_megaflow_hits"] == 1000 and t["pmd_upcalls"] == 0
    assert t["cycles_per_packet"] == 3.0 and t["cache_hit_ratio"] == 0.9
    assert t["worker_1_cpu_share"] == pytest.approx(30000 / 31000)
    # a missing sample or a restarted PMD (counters back to 0) gives nothing, not a negative
    assert ovs_pmd_telemetry(None, after) == {} and ovs_pmd_telemetry(after, before) == {}
    assert parse_ovs_pmd_stats("main thread:\n  packets received: 3\n") == {}
