"""Control-plane faults (OpenFlow 1.3.5 section 6.3-6.4; issue 15 part 4): what traffic on
installed flows sees when the controller goes away, for the profile's switch and its peers in
the same run.

* ``test_controller_loss_during_traffic[kind]``: softgen -> switch -> softgen at a steady
  ``RATE_PPS`` over the flows a p2p controller installed; the controller is killed 1.5 s in,
  restarted on the same port 2 s later, and the stream goes on to ``DURATION_S``. Records
  ``controller_loss`` per switch: packets lost (the goal: 0 on installed flows; a switch in
  fail-secure mode keeps its flows and forwards on), the time from the controller's restart
  to the switch reconnected and its flows re-sent (the switch's reconnect backoff), and the
  same stream's loss in a control trial without the fault just before, so a loss the box
  itself causes is not blamed on the fault.

Wires as the throughput suite's switch matrix (suites/throughput/topology.py): ofbench over
memif, OVS-DPDK over vhost-user, OVS netdev over veth. Built on this box (local_lab).
Several controllers with roles, echo keepalive and fail-standalone (the rest of part 4) are
the switch agent's to implement first; they are not measured here yet.
"""
from __future__ import annotations

import itertools
import time

import pytest

from drivers.lab.switches import switch_available
from drivers.trafficgen.model import Stream
from suites.throughput import topology

pytestmark = [pytest.mark.local_lab, pytest.mark.features("softgen")]

RATE_PPS = 20_000       # far below every wire's ceiling here: the control trial loses nothing
DURATION_S = 8.0
KILL_AT_S, DOWN_S = 1.5, 2.0
FLOWS = 100
RECONNECT_TIMEOUT_S = 30.0
_TAGS = itertools.count()


def pytest_generate_tests(metafunc):
    if "kind" in metafunc.fixturenames:
        from harness.state import run_state
        kinds = list(run_state(metafunc.config).profile.switch_kinds)
        metafunc.parametrize("kind", kinds[1:] + kinds[:1], ids=kinds[1:] + kinds[:1])


def _stream(duration_s: float) -> list[Stream]:
    return [Stream("load", "p0", rx_port="p1", frame_size=64, rate_pps=RATE_PPS,
                   duration_s=duration_s, flows=FLOWS)]


def _trial(gen, duration_s: float, during=None) -> tuple[object, dict]:
    """One stream of ``duration_s``; ``during(t0)`` runs while it sends (the fault)."""
    gen.load(_stream(duration_s))
    gen.start()
    t0 = time.monotonic()
    info = during(t0) if during else {}
    left = t0 + duration_s + 0.3 - time.monotonic()
    if left > 0:
        time.sleep(left)
    gen.stop()
    time.sleep(0.2)
    return gen.counters().streams["load"], info


def controller_fault(ctl, progress):
    """Kill at KILL_AT_S, restart DOWN_S later, wait for the flows to be re-sent."""
    def during(t0: float) -> dict:
        time.sleep(max(0.0, t0 + KILL_AT_S - time.monotonic()))
        ctl.kill()
        killed = time.monotonic()
        time.sleep(DOWN_S)
        ctl.restart()
        restarted = time.monotonic()
        while not ctl.done.exists():
            if time.monotonic() - restarted > RECONNECT_TIMEOUT_S:
                return {"controller_down_s": restarted - killed, "reconnect_s": None}
            time.sleep(0.02)
        reconnect = time.monotonic() - restarted
        progress(f"controller back after {restarted - killed:.2f} s down; switch reconnected "
                 f"and flows re-sent {reconnect:.2f} s after the restart")
        return {"controller_down_s": restarted - killed, "reconnect_s": reconnect}
    return during


@pytest.mark.bench
def test_controller_loss_during_traffic(lab, profile, kind, results, progress):
    why = switch_available(kind, profile)
    if why:
        pytest.skip(why)
    wire = "memif" if kind == "ofbench" else "vhost"
    topo = topology.switch_p2p(lab, kind, FLOWS, tag=f"rel{next(_TAGS)}", wire=wire)
    try:
        control, _ = _trial(topo.gen, DURATION_S)
        fault, info = _trial(topo.gen, DURATION_S, controller_fault(topo.controller, progress))
    finally:
        topo.close()
    for s in (control, fault):
        assert s.tx > 0 and s.rx <= s.tx and s.rx + s.lost == s.tx, s
    m = {"tx_packets": fault.tx, "rx_packets": fault.rx, "lost_packets": fault.lost,
         "control_lost_packets": control.lost,
         "lost_packets_beyond_control": max(0, fault.lost - control.lost),
         "controller_down_s": round(info["controller_down_s"], 3),
         "reconnected": info["reconnect_s"] is not None}
    if info["reconnect_s"] is not None:
        m["reconnect_s"] = round(info["reconnect_s"], 3)
    progress(f"{kind}: {fault.lost} of {fault.tx} lost with the controller down "
             f"({control.lost} in the control trial); reconnect {m.get('reconnect_s')} s")
    results.record("controller_loss", m,
                   params={"switch_kind": kind, "rate_pps": RATE_PPS, "duration_s": DURATION_S,
                           "kill_at_s": KILL_AT_S, "down_s": DOWN_S, "flows": FLOWS,
                           "frame_size": 64, "wire": topo.port_kind},
                   provenance={"dut_switch_kind": kind, "port_kind": topo.port_kind,
                               "generator": "softgen"})
