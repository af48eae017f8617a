"""Switch pipeline benchmark (issue 4): 64-byte packets through one switch lcore with 100k
wildcard flows of mixed masks installed by FLOW_MOD, the same pcap replayed into both switches
with the same I/O (net_pcap infinite_rx -> net_null), ofbench vs OVS-DPDK in the same run."""
import pytest

from drivers.lab.switches import switch_available


@pytest.mark.bench
@pytest.mark.features("hugepages", "ovs_dpdk")
def test_pipeline_64b_100k_flows(lab, profile, results, progress):
    kinds = [k for k in ("ofbench", "ovs-dpdk") if switch_available(k, profile) is None]
    if "ofbench" not in kinds:
        pytest.skip(switch_available("ofbench", profile))
    from dut.switch.bench import metrics_of, run_pipeline_bench
    progress(f"pipeline bench: 100k flows, 64 B, one lcore, {' vs '.join(kinds)}")
    res = run_pipeline_bench(lab, kinds=tuple(kinds), n_flows=100_000)
    metrics = metrics_of(res)
    progress(f"pipeline bench: {metrics}")
    results.record("pipeline_64b_100k_flows", metrics,
                   params={"flows": 100_000, "frame_size_b": 64, "lcores": 1,
                           "io": "net_pcap infinite_rx -> net_null"},
                   provenance={"dut_switch_kind": "ofbench", "generator": "net_pcap",
                               "generator_version": "dpdk-22.11", "port_kind": "pcap/null"})
    assert metrics.get("ofbench_mpps", 0) > 0, f"ofbench forwarded nothing: {res}"
