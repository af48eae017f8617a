"""RFC 2544 NDR/PDR over the profile's own cabling, on any lab whose profile lists links (the
emulated SSH lab included): generator host -> links -> the profile's switch on its host, flows
from the controller host (drivers/lab/links.py). The search is the one every generator uses
(drivers/trafficgen/ndr.py, through the measure() adapter); loss is counted against what was
really sent; the switch's own port counters are read beside the generator's.
"""
from __future__ import annotations

import pytest

from drivers.lab.links import links_topology, why_not
from drivers.trafficgen.base import make_measure
from drivers.trafficgen.model import Stream
from drivers.trafficgen.ndr import SearchConfig, search_ndr_pdr



def _streams(tx: str, rx: str, flows: int):
    def build(rate_pps: float, duration_s: float) -> list[Stream]:  # make_measure's order
        return [Stream("t", tx, rx_port=rx, frame_size=64, rate_pps=rate_pps,
                       duration_s=duration_s, flows=flows)]
    return build


@pytest.mark.bench
@pytest.mark.parametrize("flows", [1, 1000], ids=["1flows", "1000flows"])
def test_ndr_pdr_over_links(lab, profile, results, progress, flows):
    why = why_not(profile)
    if why:
        pytest.skip(why)
    topo = links_topology(lab, profile, name=f"ndr{flows}", flows=flows)
    try:
        # Bounded: on a shared box the generator can be the limit at every rate, and the
        # search then walks down to min_rate with verifications (minutes); 12 trials a search.
        cfg = SearchConfig(max_rate_pps=min(topo.max_rate_pps, 4e6), min_rate_pps=20_000,
                           trial_duration_s=1.0, final_duration_s=2.0, precision=0.1,
                           max_trials=12, max_verifications=2, latency_fractions=(0.5,))
        before = topo.switch.stats() or {}
        measure = make_measure(topo.gen, _streams(topo.tx_port, topo.rx_port, flows), drain_s=0.05)
        r = search_ndr_pdr(measure, cfg, lambda line: progress(f"links ndr {flows} flows: {line}"))
        after = topo.switch.stats() or {}
    finally:
        topo.close()
    assert r.trials and all(t.tx + t.unsent == t.offered for t in r.trials)
    assert all(t.rx <= t.tx for t in r.trials), "a trial received more than was sent"
    sw_rx = sum(p["rx_packets"] for p in after.get("ports", [])) - \
        sum(p["rx_packets"] for p in before.get("ports", []))
    sent = sum(t.tx for t in r.trials)
    metrics = {**r.metrics(), "switch_rx_packets": sw_rx, "generator_tx_packets": sent,
               "generator_limited": float(r.ndr.generator_limited or r.pdr.generator_limited)}
    results.record(f"links_ndr_64b_{flows}flows", metrics,
                   params={"frame_size": 64, "flows": flows, "trial_s": cfg.trial_duration_s,
                           "precision": cfg.precision,
                           "links": ",".join(f"{p['generator']}-{p['switch']}" for p in topo.plan)},
                   provenance={"dut_switch_kind": "ofbench", "port_kind": "memif",
                               "generator": profile.generator["kind"],
                               "generator_version": topo.generator_version,
                               **topo.hosts})
    assert sw_rx <= sent, f"the switch counted {sw_rx} received frames of {sent} sent"
