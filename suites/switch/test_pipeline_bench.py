"""Switch pipeline benchmark (issues 4, 16): 64-byte packets through one switch lcore with 100k
wildcard flows of mixed masks installed by FLOW_MOD, ofbench vs OVS-DPDK in the same run, the
sink net_null (no rx).

Feeds (suites/switch/pipeline.py rx_spec): ofbench is measured on its replay port (frames handed
out from memory by reference: the feed whose own ceiling is far above the switch) and on DPDK's
net_pcap infinite_rx, the feed OVS-DPDK can load too (its memif ports do not come up here, see
suites/throughput/topology.py), so the ofbench / OVS-DPDK ratio compares equal feeds. Each
feed's ceiling (feed -> net_null on the same lcore, no switch work) is in the same record.

Two working sets: 8192 distinct frames (what OVS's exact-match cache holds) and 24576 (most of
our switch's 32k-entry flow cache, where misses go to the wildcard lookup), so the report shows
the cache's limit next to its best case."""
import pytest

from drivers.lab.switches import switch_available

# On a remote lab ofbench runs on the switch host (its feed, sink and the feed ceiling there;
# OVS-DPDK beside it only on a local lab); the feed check against softgen is this box's.

# distinct frames in the replayed pcap -> record name
WORKING_SETS = {8192: "pipeline_64b_100k_flows", 24576: "pipeline_64b_100k_flows_24k_frames"}


@pytest.mark.bench
@pytest.mark.features("hugepages")
@pytest.mark.parametrize("n_frames", list(WORKING_SETS), ids=lambda n: f"{n}frames")
def test_pipeline_64b_100k_flows(lab, profile, results, progress, n_frames):
    kinds = [k for k in ("ofbench", "ovs-dpdk") if switch_available(k, profile) is None
             and (k == "ofbench" or (profile.has("ovs_dpdk") and profile.lab_kind == "local"))]
    if "ofbench" not in kinds:
        pytest.skip(switch_available("ofbench", profile))
    from suites.switch.pipeline import metrics_of, run_pipeline_bench, series_kinds
    progress(f"pipeline bench: 100k flows, {n_frames} distinct 64 B frames, one lcore, "
             f"{' vs '.join(kinds)}, 3 windows each, feed ceilings")
    res = run_pipeline_bench(lab, kinds=tuple(kinds), n_flows=100_000, n_frames=n_frames)
    metrics = metrics_of(res)
    progress(f"pipeline bench: {metrics}")
    results.record(WORKING_SETS[n_frames], metrics,
                   params={"flows": 100_000, "frame_size_b": 64, "lcores": 1,
                           "distinct_frames": n_frames, "windows": 3,
                           "io": "ofbench: replay (by reference) and net_pcap infinite_rx; "
                                 "OVS-DPDK: net_pcap infinite_rx; -> net_null,no-rx=1",
                           "series_kind": series_kinds(metrics)},
                   provenance={"dut_switch_kind": "ofbench", "generator": "drivers/replay+net_pcap",
                               "generator_version": "dpdk-22.11", "port_kind": "ring/pcap/null"})
    assert metrics.get("ofbench_mpps", 0) > 0, f"ofbench forwarded nothing: {res}"


@pytest.mark.quick
@pytest.mark.local_lab
def test_replay_feed_equals_softgen(lab):
    """The replay feed is not a toy: the same 2000 frames three times, from the replay port (by
    reference, and copied from its packed array in stream mode) and from softgen over memif (20 kpps), give a fresh ofswitch the same port counters
    and the same packet count on each of its 1000 flows."""
    from suites.switch.pipeline import feed_check
    r = feed_check(lab)
    assert r["softgen_unsent"] == 0 and r["softgen_tx"] == r["expect"], \
        f"softgen did not send every frame: {r['softgen_tx']} of {r['expect']}"
    rep, sg = r["replay"], r["softgen"]
    assert rep["ports"][1]["rx_packets"] == sg["ports"][1]["rx_packets"] == r["expect"]
    assert rep["ports"][2]["tx_packets"] == sg["ports"][2]["tx_packets"] == r["expect"]
    assert len(rep["flows"]) == 1000 and sum(rep["flows"].values()) == r["expect"]
    assert rep["flows"] == sg["flows"]
    st = r["replay_stream"]
    assert st["ports"][1]["rx_packets"] == st["ports"][2]["tx_packets"] == r["expect"]
    assert st["flows"] == sg["flows"]


# issue 16 part 2: workloads that do not flatter the flow cache (long: make nightly)
PART2 = ["pipeline_64b_100k_flows_distinct", "pipeline_64b_100k_flows_zipf1.0",
         "pipeline_64b_100k_flows_zipf0.8", "pipeline_64b_100k_flows_multitable",
         "pipeline_64b_100k_flows_setfield", "pipeline_64b_100k_flows_pushvlan",
         "pipeline_64b_100k_flows_popvlan", "pipeline_64b_100k_flows_pushmpls",
         "pipeline_64b_100k_flows_popmpls"]


@pytest.mark.bench
@pytest.mark.nightly
@pytest.mark.features("hugepages")
@pytest.mark.parametrize("record", PART2)
def test_pipeline_workload(lab, profile, results, progress, record):
    kinds = [k for k in ("ofbench", "ovs-dpdk") if switch_available(k, profile) is None
             and (k == "ofbench" or (profile.has("ovs_dpdk") and profile.lab_kind == "local"))]
    if "ofbench" not in kinds:
        pytest.skip(switch_available("ofbench", profile))
    from suites.switch.pipeline import WORKLOADS, metrics_of, run_pipeline_bench, series_kinds
    wl = WORKLOADS[record]
    progress(f"pipeline bench {record}: {wl}, {' vs '.join(kinds)}")
    res = run_pipeline_bench(lab, kinds=tuple(kinds), n_flows=100_000, workload=wl)
    metrics = metrics_of(res)
    progress(f"pipeline bench {record}: {metrics}")
    results.record(record, metrics,
                   params={"flows": 100_000, "frame_size_b": 64, "lcores": 1, "windows": 3,
                           "actions": wl.kind, "mix": wl.mix, "frames": wl.n_frames,
                           **({"zipf_s": wl.zipf_s, "distinct_frames": wl.n_distinct}
                              if wl.mix == "zipf" else {}),
                           "io": "ofbench: replay (replay-copy when rewriting) and net_pcap "
                                 "infinite_rx; OVS-DPDK: net_pcap infinite_rx; -> net_null",
                           "series_kind": series_kinds(metrics)},
                   provenance={"dut_switch_kind": "ofbench", "generator": "drivers/replay+net_pcap",
                               "generator_version": "dpdk-22.11", "port_kind": "ring/pcap/null"})
    assert metrics.get("ofbench_mpps", 0) > 0, f"ofbench forwarded nothing: {res}"


def worker_counts(n_cores: int) -> list[int]:
    """1, 2, 4, 8 workers, as many as the switch has cores (on a 2-core box the second worker
    shares its core with the agent)."""
    return [n for n in (1, 2, 4, 8) if n <= max(1, n_cores)]


def switch_core_count(profile, host, remote: bool) -> int:
    """The cores the switch may use: the profile's ``switch.cores`` when it names them (the
    lab's single source of truth), else the switch host's (this box: its affinity)."""
    import os
    from drivers.lab.base import parse_cores
    spec = profile.switch.get("cores")
    if spec:
        return len(parse_cores(str(spec)))
    return len(host.cores()) if remote else len(os.sched_getaffinity(0))


# issue 16 part 4: the same 100k flows and 8192 frames through 1, 2, ... workers, one replay
# port per worker (main.c: worker w polls the ports whose index % workers == w) carrying that
# worker's share of the frames split by 5-tuple, as a NIC's RSS queues them. The rate of
# each count, each worker thread's share of its core in the windows, and the per-CPU
# efficiency (rate per CPU-second at n workers / n x that of one worker): a shared core
# halves a rate without saying anything about the switch, the share shows it.
@pytest.mark.bench
@pytest.mark.features("hugepages")
def test_pipeline_worker_scaling(lab, profile, results, progress):
    if switch_available("ofbench", profile) is not None:
        pytest.skip(switch_available("ofbench", profile))
    from drivers.lab.switches import switch_host
    from suites.switch.pipeline import run_pipeline_bench
    host = switch_host(lab)
    n_cores = switch_core_count(profile, host, host is not lab)
    counts = worker_counts(n_cores)
    if len(counts) < 2:
        pytest.skip(f"the switch has {n_cores} core(s) in profile {profile.name} "
                    f"(switch.cores {profile.switch.get('cores')!r}): nothing to scale across")
    metrics: dict = {}
    for n in counts:
        progress(f"pipeline bench, {n} worker(s): 100k flows, 8192 distinct 64 B frames, "
                 f"one replay port per worker, 3 windows")
        res = run_pipeline_bench(lab, kinds=("ofbench",), n_flows=100_000, n_frames=8192,
                                 plan=(("ofbench", "replay"),), workers=n, ceilings=(n == 1))
        r = res["ofbench/replay"]
        if "per_worker" in res["frames"]:
            metrics[f"workers_{n}_frames_min"] = min(res["frames"]["per_worker"])
        metrics[f"workers_{n}_mpps"] = r["mpps"]
        metrics[f"workers_{n}_best_mpps"] = r["mpps_best"]
        if "cpu_share" in r:
            metrics[f"workers_{n}_cpu_share"] = r["cpu_share"]
            metrics[f"workers_{n}_mpps_per_cpu"] = r["mpps_per_cpu"]
        if "ceiling/replay" in res:
            metrics["feed_replay_ceiling_mpps"] = res["ceiling/replay"]["mpps"]
        progress(f"pipeline bench, {n} worker(s): {r['mpps']} Mpps "
                 f"(share {r.get('cpu_share', '?')})")
    top = counts[-1]
    metrics["workers_max"] = top
    metrics["speedup_max_vs_1_worker"] = round(metrics[f"workers_{top}_mpps"]
                                               / max(metrics["workers_1_mpps"], 1e-9), 3)
    if f"workers_{top}_mpps_per_cpu" in metrics and "workers_1_mpps_per_cpu" in metrics:
        metrics["per_cpu_efficiency_max"] = round(
            metrics[f"workers_{top}_mpps_per_cpu"]
            / (top * max(metrics["workers_1_mpps_per_cpu"], 1e-9)), 3)
    progress(f"pipeline bench, worker scaling: {metrics}")
    results.record("pipeline_64b_100k_flows_worker_scaling", metrics,
                   params={"flows": 100_000, "frame_size_b": 64, "distinct_frames": 8192,
                           "workers": counts, "host_cores": n_cores, "windows": 3,
                           "io": "ofbench: one replay port per worker (by reference), "
                                 "the frames split across them by 5-tuple hash (RSS-like) -> "
                                 "net_null,no-rx=1",
                           "series_kind": {"feed_replay_ceiling_mpps": "rig"}
                           if "feed_replay_ceiling_mpps" in metrics else {}},
                   provenance={"dut_switch_kind": "ofbench", "generator": "drivers/replay",
                               "generator_version": "dpdk-22.11", "port_kind": "ring/null"})
    assert metrics["workers_1_mpps"] > 0 and metrics[f"workers_{top}_mpps"] > 0, metrics
