"""Switch pipeline benchmark (issue 4): 64-byte packets through one switch lcore with 100k
wildcard flows of mixed masks installed by FLOW_MOD, the same pcap replayed into both switches
with the same I/O (net_pcap infinite_rx -> net_null), ofbench vs OVS-DPDK in the same run.

Two working sets: 8192 distinct frames (what OVS's exact-match cache holds) and 24576 (most of
our switch's 32k-entry flow cache, where misses go to the wildcard lookup), so the report shows
the cache's limit next to its best case."""
import pytest

from drivers.lab.switches import switch_available

pytestmark = pytest.mark.local_lab

# distinct frames in the replayed pcap -> record name
WORKING_SETS = {8192: "pipeline_64b_100k_flows", 24576: "pipeline_64b_100k_flows_24k_frames"}


@pytest.mark.bench
@pytest.mark.features("hugepages", "ovs_dpdk")
@pytest.mark.parametrize("n_frames", list(WORKING_SETS), ids=lambda n: f"{n}frames")
def test_pipeline_64b_100k_flows(lab, profile, results, progress, n_frames):
    kinds = [k for k in ("ofbench", "ovs-dpdk") if switch_available(k, profile) is None]
    if "ofbench" not in kinds:
        pytest.skip(switch_available("ofbench", profile))
    from suites.switch.pipeline import metrics_of, run_pipeline_bench
    progress(f"pipeline bench: 100k flows, {n_frames} distinct 64 B frames, one lcore, "
             f"{' vs '.join(kinds)}")
    res = run_pipeline_bench(lab, kinds=tuple(kinds), n_flows=100_000, n_frames=n_frames)
    metrics = metrics_of(res)
    progress(f"pipeline bench: {metrics}")
    results.record(WORKING_SETS[n_frames], metrics,
                   params={"flows": 100_000, "frame_size_b": 64, "lcores": 1,
                           "distinct_frames": n_frames,
                           "io": "net_pcap infinite_rx -> net_null"},
                   provenance={"dut_switch_kind": "ofbench", "generator": "net_pcap",
                               "generator_version": "dpdk-22.11", "port_kind": "pcap/null"})
    assert metrics.get("ofbench_mpps", 0) > 0, f"ofbench forwarded nothing: {res}"
