"""Smoke over the profile's own cabling: the generator on its host sends through each link into
the profile's switch on its host, whose port-to-port flows come from the controller app on the
controller host; every frame must come back on the paired link, and the counters of generator
and switch must agree. On a remote lab everything here goes over SSH (the emulated lab
dut/profiles/lab-emu.yaml runs it in `make test`). Topology: drivers/lab/links.py.
"""
from __future__ import annotations

import pytest

from drivers.lab.links import links_topology, why_not
from drivers.trafficgen.model import Stream

PACKETS = 20_000
PPS = 25_000


@pytest.mark.quick
def test_forwarding_over_the_profile_links(lab, profile, results):
    why = why_not(profile)
    if why:
        pytest.skip(why)
    topo = links_topology(lab, profile, name="links")
    try:
        a, b = topo.tx_port, topo.rx_port
        c = topo.gen.run([Stream("ab", a, rx_port=b, frame_size=64, rate_pps=PPS, count=PACKETS),
                          Stream("ba", b, rx_port=a, frame_size=64, rate_pps=PPS, count=PACKETS)],
                         drain_s=0.5)
        stats = topo.switch.stats() or {}
    finally:
        topo.close()
    metrics = {"tx_packets": 0, "rx_packets": 0, "lost_packets": 0, "unsent_packets": 0}
    for name in ("ab", "ba"):
        s = c.streams[name]
        assert s.rx <= s.tx, f"counter error on {name}: received {s.rx} > sent {s.tx}"
        metrics["tx_packets"] += s.tx
        metrics["rx_packets"] += s.rx
        metrics["lost_packets"] += s.lost
        metrics["unsent_packets"] += s.unsent
    ports = stats.get("ports", [])
    sw_rx = sum(p["rx_packets"] for p in ports)
    sw_tx = sum(p["tx_packets"] for p in ports)
    metrics.update({"switch_rx_packets": sw_rx, "switch_tx_packets": sw_tx,
                    "passed": metrics["rx_packets"] == metrics["tx_packets"] > 0})
    results.record("links_forwarding_64b", metrics,
                   params={"packets_per_direction": PACKETS, "rate_pps": PPS,
                           "links": ",".join(f"{p['generator']}-{p['switch']}" for p in topo.plan)},
                   provenance={"dut_switch_kind": "ofbench", "port_kind": "memif",
                               "generator": profile.generator["kind"],
                               "generator_version": topo.generator_version,
                               **topo.hosts})
    assert sw_tx <= sw_rx, f"switch counters: tx {sw_tx} > rx {sw_rx}"
    # A generator starved of CPU on a shared box sends less (counted unsent, never lost): the
    # smoke judges forwarding, not the box's speed.
    assert metrics["tx_packets"] > 0 and \
        metrics["tx_packets"] + metrics["unsent_packets"] == 2 * PACKETS, metrics
    assert metrics["rx_packets"] == metrics["tx_packets"], \
        f"{metrics['lost_packets']} of {metrics['tx_packets']} frames lost across the links"
    assert sw_rx >= metrics["rx_packets"], "the switch forwarded more than it received"
