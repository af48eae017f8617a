"""Smoke over the profile's own cabling: the generator on its host sends through each link into
the profile's switch on its host, whose port-to-port flows come from the controller app on the
controller host; every frame must come back on the paired link, and the counters of generator
and switch must agree. On a remote lab everything here goes over SSH (the emulated lab
dut/profiles/lab-emu.yaml runs it in `make test`).

The profile is the source of truth: ``switch.ports`` (OpenFlow port numbers in the order they
are listed), ``generator.ports``, ``links`` (which generator port is cabled to which switch
port), ``switch.cores`` / ``generator.cores``, ``controller.host``/``port``.
"""
from __future__ import annotations

import json
import time

import pytest

from drivers.lab.switches import controller_host, start_controller, start_switch, switch_host
from drivers.softgen.driver import VERSION as SOFTGEN_VERSION
from drivers.softgen.driver import Softgen, SoftgenPort, start_on_host, wait_links_up
from drivers.trafficgen.model import Stream

PACKETS = 20_000
PPS = 50_000


def link_plan(profile) -> list[dict]:
    """Each link of the profile: generator port, switch port, its OpenFlow number (pure)."""
    sw_ports = list((profile.switch.get("ports") or {}))
    out = []
    for link in profile.data["links"]:
        out.append({"generator": link["generator"], "switch": link["switch"],
                    "ofport": sw_ports.index(link["switch"]) + 1})
    return out


def _lcores(spec: str | None, fallback: tuple[int, int]) -> tuple[int, int]:
    from drivers.lab.remote import parse_cores
    cores = parse_cores(spec) if spec else []
    if len(cores) >= 2:
        return cores[0], cores[1]
    if len(cores) == 1:
        return cores[0], cores[0]
    return fallback


def _wait(check, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not done after {timeout_s:.0f} s")
        time.sleep(0.2)


@pytest.mark.quick
@pytest.mark.features("softgen")
def test_forwarding_over_the_profile_links(lab, profile, results):
    if len(profile.data["links"]) < 2:
        pytest.skip(f"profile {profile.name!r} cables fewer than 2 links (links: generator "
                    f"ports to switch ports); nothing to forward between")
    if profile.generator["kind"] != "softgen":
        pytest.skip("this smoke drives softgen; the TRex path is the throughput suite's")
    if profile.switch["kind"] != "ofbench":
        pytest.skip("the profile's switch ports are DPDK devargs, which only ofbench takes")
    plan = link_plan(profile)[:2]
    sw_host, ctl_host, gen_host = switch_host(lab), controller_host(lab), \
        (lab if lab.kind == "local" else lab.host(lab.role_of("generator")))
    sw_ports = profile.switch["ports"]
    gen_ports = profile.generator["ports"]
    done = ctl_host.sock_path("links-p2p.flows")
    cfg = ctl_host.sock_path("links-p2p.yaml")
    ctl_host.write_text(cfg, json.dumps({"pairs": [[plan[0]["ofport"], plan[1]["ofport"]]],
                                         "flows": 1, "done_file": str(done)}))
    stops = []
    try:
        ctl, port = start_controller(lab, "links-ctl", "suites.throughput.p2p_app", netns=None,
                                     config=str(cfg), host=ctl_host)
        stops.append(lambda: ctl_host.stop(ctl))
        switch = start_switch(
            lab, "ofbench", name="links-sw", ports=[], host=sw_host,
            controller=(profile.controller["host"], port),
            extra_ports=[(i + 1, {"devargs": p["devargs"]}) for i, p in
                         enumerate(sw_ports.values())], wait_connected=True)
        stops.append(switch.stop)
        inst = start_on_host(gen_host, "links-gen",
                             [SoftgenPort(name, gen_ports[name]["devargs"])
                              for name in (plan[0]["generator"], plan[1]["generator"])],
                             _lcores(profile.generator.get("cores"), (1, 1)))
        gen = Softgen([inst])
        stops.append(lambda: (gen.close(), gen_host.stop(inst.managed)))
        assert wait_links_up(gen, 20), "the generator's links to the switch did not come up"
        _wait(lambda: ctl_host.exists(done), 30, "the controller's flow install")
        a, b = plan[0]["generator"], plan[1]["generator"]
        c = gen.run([Stream("ab", a, rx_port=b, frame_size=64, rate_pps=PPS, count=PACKETS),
                     Stream("ba", b, rx_port=a, frame_size=64, rate_pps=PPS, count=PACKETS)],
                    drain_s=0.5)
        stats = switch.stats() or {}
    finally:
        for stop in reversed(stops):
            try:
                stop()
            except Exception:  # keep stopping the rest
                pass
    by_port = {p["port"]: p for p in stats.get("ports", [])}
    metrics = {"tx_packets": 0, "rx_packets": 0, "lost_packets": 0, "unsent_packets": 0}
    for name in ("ab", "ba"):
        s = c.streams[name]
        assert s.rx <= s.tx, f"counter error on {name}: received {s.rx} > sent {s.tx}"
        metrics["tx_packets"] += s.tx
        metrics["rx_packets"] += s.rx
        metrics["lost_packets"] += s.lost
        metrics["unsent_packets"] += s.unsent
    sw_rx = sum(p["rx_packets"] for p in by_port.values())
    sw_tx = sum(p["tx_packets"] for p in by_port.values())
    metrics.update({"switch_rx_packets": sw_rx, "switch_tx_packets": sw_tx,
                    "passed": metrics["rx_packets"] == metrics["tx_packets"] == 2 * PACKETS})
    hosts = {"switch_host": getattr(sw_host, "address", "local"),
             "generator_host": getattr(gen_host, "address", "local"),
             "controller_host": getattr(ctl_host, "address", "local")}
    results.record("links_forwarding_64b", metrics,
                   params={"packets_per_direction": PACKETS, "rate_pps": PPS,
                           "links": ",".join(f"{p['generator']}-{p['switch']}" for p in plan)},
                   provenance={"dut_switch_kind": "ofbench", "port_kind": "memif",
                               "generator": "softgen", "generator_version": SOFTGEN_VERSION,
                               **hosts})
    assert sw_tx <= sw_rx, f"switch counters: tx {sw_tx} > rx {sw_rx}"
    assert metrics["tx_packets"] == 2 * PACKETS, f"generator sent {metrics['tx_packets']}"
    assert metrics["rx_packets"] == metrics["tx_packets"], \
        f"{metrics['lost_packets']} of {metrics['tx_packets']} frames lost across the links"
    assert sw_rx >= metrics["rx_packets"], "the switch forwarded more than it received"
