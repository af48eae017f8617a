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


ROUNDS = 3  # each switch started afresh ROUNDS times, ofbench and OVS-DPDK alternating
RECORDINGS_ENV = "OFBENCH_FAUCET_RECORDINGS"  # a folder: reuse faucet-<N>-hosts.of from it


def _recording(lab, run_dir, n_hosts: int, progress):
    """FAUCET's flows for ``n_hosts`` per VLAN: recorded now, or (OFBENCH_FAUCET_RECORDINGS=dir
    holding faucet-<N>-hosts.of from an earlier run's folder) loaded, so a 10k-host recording
    (minutes of FAUCET learning) need not sit inside a benchmark's quiet window."""
    import os
    import shutil
    from pathlib import Path
    from suites.interop.faucet_pipeline import load_recording, record, table_counts
    d = os.environ.get(RECORDINGS_ENV)
    cached = Path(d) / f"faucet-{n_hosts}-hosts.of" if d else None
    if cached is not None and cached.exists():
        msgs = load_recording(cached)
        shutil.copy(cached, Path(run_dir) / cached.name)
        return msgs, {"hosts_learned": 2 * n_hosts, "flow_mods": len(msgs),
                      "tables": table_counts(msgs), "recording": str(cached)}
    progress(f"FAUCET pipeline: recording FAUCET's flows for {n_hosts} hosts per VLAN")
    return record(lab, n_hosts, run_dir)


def _bench(lab, profile, results, progress, run_dir, n_hosts: int):
    import subprocess
    from drivers.lab.switches import switch_available
    from suites.interop.faucet_pipeline import FaucetWorkload, merge_rounds, round_ratios
    from suites.switch.pipeline import metrics_of, run_pipeline_bench
    kinds = tuple(k for k in ("ofbench", "ovs-dpdk") if switch_available(k, profile) is None)
    if "ofbench" not in kinds:
        pytest.skip(switch_available("ofbench", profile))
    load = [subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    msgs, info = _recording(lab, run_dir, n_hosts, progress)
    wl = FaucetWorkload(f"faucet_pipeline_{n_hosts}_hosts", kind="faucet", n_frames=8192,
                        msgs=tuple(msgs), n_hosts=min(n_hosts, info["hosts_learned"] // 2))
    progress(f"FAUCET pipeline: {info}; bench {' vs '.join(kinds)}, {ROUNDS} rounds")
    rounds = []
    for r in range(ROUNDS):
        rounds.append(run_pipeline_bench(lab, kinds=kinds, n_flows=1, workload=wl,
                                         ceilings=r == ROUNDS - 1))
        load.append(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
        progress(f"FAUCET pipeline round {r + 1}: " + ", ".join(
            f"{k} {v['mpps']}" for k, v in rounds[-1].items() if "/" in k and "mpps" in v))
    res = merge_rounds(rounds)
    metrics = metrics_of(res)
    ratios = round_ratios(rounds)
    if ratios:
        metrics.update(speedup_vs_ovs_dpdk_min=min(ratios), speedup_vs_ovs_dpdk_max=max(ratios))
    for k, v in res.items():  # each round's median, beside the median of them and the best
        if isinstance(v, dict) and "mpps_runs" in v:
            for i, x in enumerate(v["mpps_runs"], 1):
                metrics[f"{k.replace('/', '_').replace('-', '_')}_round{i}_mpps"] = x
    metrics.update(flow_mods=info["flow_mods"], hosts_learned=info["hosts_learned"],
                   **{f"table{t}_flows": n for t, n in info["tables"].items()})
    results.record(wl.name, metrics,
                   params={"hosts_per_vlan": n_hosts, "frame_size_b": 64, "lcores": 1,
                           "distinct_frames": 8192, "windows": 3, "rounds": ROUNDS,
                           "controller": "faucet", "controller_version": FAUCET_VERSION,
                           "round_speedups": ratios, "uptime": load,
                           "recording": info.get("recording", "recorded in this run"),
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
