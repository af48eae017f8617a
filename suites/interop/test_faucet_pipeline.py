"""FAUCET's pipeline as a workload (issue 41 part 2): the flows FAUCET installs for a routed
two-VLAN network with 1k (and, nightly, 10k) learned hosts per VLAN, replayed into the switch
pipeline bench, ofbench vs OVS-DPDK in the same run (suites/interop/faucet_pipeline.py)."""
from __future__ import annotations

import pytest

from drivers.lab.faucet import FAUCET_VERSION, faucet_available

pytestmark = [pytest.mark.features("netns", "hugepages"), pytest.mark.local_lab]


@pytest.fixture(autouse=True)
def _needs_faucet():
    why = faucet_available()
    if why:
        pytest.skip(why)


def test_faucet_recording_rebuilds_its_tables(lab, run_dir):
    """50 hosts per VLAN: FAUCET's recording holds a learned flow and a /32 route per host."""
    from suites.interop.faucet_pipeline import record
    msgs, info = record(lab, 50, run_dir)
    t = info["tables"]
    assert info["hosts_learned"] >= 100, info
    # FAUCET's tables: 0 vlan, 1 eth_src, 2 ipv4_fib, 3 vip, 4 eth_dst, 5 flood
    assert t.get(1, 0) >= 100 and t.get(2, 0) >= 100 and t.get(4, 0) >= 100, info


def _bench(lab, profile, results, progress, run_dir, n_hosts: int):
    from drivers.lab.switches import switch_available
    from suites.interop.faucet_pipeline import FaucetWorkload, record
    from suites.switch.pipeline import metrics_of, run_pipeline_bench
    kinds = tuple(k for k in ("ofbench", "ovs-dpdk") if switch_available(k, profile) is None)
    if "ofbench" not in kinds:
        pytest.skip(switch_available("ofbench", profile))
    progress(f"FAUCET pipeline: recording FAUCET's flows for {n_hosts} hosts per VLAN")
    msgs, info = record(lab, n_hosts, run_dir)
    wl = FaucetWorkload(f"faucet_pipeline_{n_hosts}_hosts", kind="faucet", n_frames=8192,
                        msgs=tuple(msgs), n_hosts=min(n_hosts, info["hosts_learned"] // 2))
    progress(f"FAUCET pipeline: {info}; bench {' vs '.join(kinds)}")
    res = run_pipeline_bench(lab, kinds=kinds, n_flows=1, workload=wl)
    metrics = metrics_of(res)
    metrics.update(flow_mods=info["flow_mods"], hosts_learned=info["hosts_learned"],
                   **{f"table{t}_flows": n for t, n in info["tables"].items()})
    results.record(wl.name, metrics,
                   params={"hosts_per_vlan": n_hosts, "frame_size_b": 64, "lcores": 1,
                           "distinct_frames": 8192, "windows": 3, "controller": "faucet",
                           "controller_version": FAUCET_VERSION,
                           "io": "ofbench: replay-copy and net_pcap; OVS-DPDK: net_pcap"},
                   provenance={"dut_switch_kind": "ofbench", "generator": "drivers/replay+net_pcap",
                               "generator_version": "dpdk-22.11", "port_kind": "ring/pcap/null"})
    assert metrics.get("ofbench_mpps", 0) > 0, f"ofbench forwarded nothing: {res}"


@pytest.mark.bench
def test_faucet_pipeline_1k_hosts(lab, profile, results, progress, run_dir):
    _bench(lab, profile, results, progress, run_dir, 1000)


@pytest.mark.bench
@pytest.mark.nightly
def test_faucet_pipeline_10k_hosts(lab, profile, results, progress, run_dir):
    _bench(lab, profile, results, progress, run_dir, 10_000)
