"""Reliability of the control plane (OpenFlow 1.3.5 6.3-6.4, issue 15 part 4), each switch of
the profile side by side (ofbench, OVS 3.1 netdev): what the data plane does when the
controller dies, how two controllers share a switch, what happens to a controller that stops
answering.

Topology: two kernel hosts in namespaces, the switch between them in a third; the controller
is suites/reliability/raw_controller.py (scripted, logs every event with a CLOCK_MONOTONIC
timestamp), started and killed by the test. It installs "wire" flows (in_port 1 <-> 2). Both
switches run fail-secure (ofbench's default; OVS bridges are made with fail_mode=secure) with
their default keepalive (5 s: ofbench --echo-interval-ms, OVS inactivity_probe).

* controller killed during traffic: a UDP stream h1 -> h2 (kernel_udp, 500 pps for 6 s); the
  controller is killed after 1.5 s and restarted after 3.5 s. Recorded: packets lost (goal 0:
  installed flows keep forwarding), the reconnect time after the restart (the switch's
  backoff), whether the wire flows were there all along.
* two controllers: A becomes master (generation 10); B asks slave (10), sends a FLOW_MOD
  (must be refused IS_SLAVE), asks master with generation 5 (STALE), then master with 11; A
  then finds itself slave.
* silent controller: it stops answering echoes; recorded: seconds until the switch drops the
  connection (both switches' defaults: an echo after 5 s of silence, drop after 5 s more).
"""
from __future__ import annotations

import json
import sys
import time

import pytest

from drivers.lab.switches import start_switch

H1_IP, H2_IP = "10.12.0.1", "10.12.0.2"
UDP_PACKETS, UDP_PPS = 3000, 500
KILL_AT_S, RESTART_AT_S = 1.5, 3.5
IS_SLAVE = 1 << 16 | 10
STALE = 11 << 16 | 0
TAGS = {"ofbench": "rofb", "ovs": "rovs", "ovs-dpdk": "rdpd"}


def events(proc) -> list[dict]:
    out = []
    for line in proc.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def wait_event(proc, name: str, timeout_s: float, count: int = 1) -> dict | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = [e for e in events(proc) if e["event"] == name]
        if len(got) >= count:
            return got[count - 1]
        time.sleep(0.05)
    return None


class Topo:
    """h1 -- sw -- h2, namespaces of this run; the controller(s) run in sw's namespace."""

    def __init__(self, lab, kind: str):
        self.lab, self.kind, tag = lab, kind, TAGS[kind]
        self.tag = tag
        self.h1, self.h2, self.sw = (lab.add_netns(f"{tag}h1"), lab.add_netns(f"{tag}h2"),
                                     lab.add_netns(f"{tag}sw"))
        self.p1, self.p2 = lab.ifname(f"{tag}1"), lab.ifname(f"{tag}2")
        lab.add_veth(self.h1, "eth0", self.sw, self.p1)
        lab.add_veth(self.h2, "eth0", self.sw, self.p2)
        lab.netns_exec(self.h1, ["ip", "addr", "add", f"{H1_IP}/24", "dev", "eth0"])
        lab.netns_exec(self.h2, ["ip", "addr", "add", f"{H2_IP}/24", "dev", "eth0"])
        self.procs: list = []
        self.switch = None
        self.n = 0

    def controller(self, port: int, *args: str):
        self.n += 1
        ready = self.lab.sock_path(f"{self.tag}-ctl{self.n}.ready")
        p = self.lab.supervisor.start(
            f"{self.tag}-ctl{self.n}",
            [sys.executable, "-m", "suites.reliability.raw_controller", "--port", str(port),
             "--ready-file", str(ready), *args],
            netns=self.sw, ready=ready.exists, env={"PYTHONPATH": "."})
        self.procs.append(p)
        return p

    def start_switch(self, ports: list[int]):
        ctl = [("127.0.0.1", p) for p in ports]
        self.switch = start_switch(self.lab, self.kind, name=f"sw-{self.tag}", netns=self.sw,
                                   ports=[(1, self.p1), (2, self.p2)],
                                   controller=ctl[0] if len(ctl) == 1 else ctl)
        return self.switch

    def close(self):
        if self.switch is not None:
            self.switch.stop()
        for p in self.procs:
            self.lab.supervisor.stop(p)
        for ns in (self.h1, self.h2, self.sw):
            self.lab.del_netns(ns)


@pytest.fixture
def topo(lab, switch_kind):
    if getattr(lab, "kind", "local") != "local":
        pytest.skip("reliability runs on a local lab: the scripted controllers are local "
                    "processes in the switch's namespace")
    t = Topo(lab, switch_kind)
    try:
        yield t
    finally:
        t.close()


def provenance(kind: str) -> dict:
    return {"dut_switch_kind": kind, "port_kind": "veth", "generator": "kernel_udp",
            "generator_version": "1"}


@pytest.mark.features("netns")
def test_controller_killed_during_traffic(topo, lab, switch_kind, results):
    port = lab.free_tcp_port()
    ctl = topo.controller(port, "--wire", "1:2,2:1")
    topo.start_switch([port])
    assert wait_event(ctl, "wire_installed", 30), f"{switch_kind} never connected"
    lab.netns_exec(topo.h1, ["ping", "-c", "1", "-W", "5", H2_IP], check=False)  # ARP
    ready = lab.sock_path(f"{topo.tag}-udprecv.ready")
    recv = lab.supervisor.start(
        f"{topo.tag}-udp-recv",
        [sys.executable, "-m", "drivers.kernel_udp", "recv", "--bind", f"{H2_IP}:9000",
         "--count", str(UDP_PACKETS), "--timeout", "15", "--ready-file", ready],
        netns=topo.h2, ready=ready.exists, env={"PYTHONPATH": "."})
    topo.procs.append(recv)
    send = lab.supervisor.start(
        f"{topo.tag}-udp-send",
        [sys.executable, "-m", "drivers.kernel_udp", "send", "--to", f"{H2_IP}:9000",
         "--count", str(UDP_PACKETS), "--pps", str(UDP_PPS)],
        netns=topo.h1, env={"PYTHONPATH": "."})
    topo.procs.append(send)
    t0 = time.monotonic()
    time.sleep(KILL_AT_S)
    lab.supervisor.stop(ctl)
    killed_at = time.monotonic()
    time.sleep(max(0.0, RESTART_AT_S - (killed_at - t0)))
    ctl2 = topo.controller(port, "--wire", "1:2,2:1")
    restarted_at = time.monotonic()
    back = wait_event(ctl2, "connected", 30)
    send.wait(timeout_s=30)
    recv.wait(timeout_s=30)
    sent = json.loads(send.log_path.read_text().strip().splitlines()[-1])
    got = json.loads(recv.log_path.read_text().strip().splitlines()[-1])
    tx, rx = sent["tx_packets"], got["rx_packets"]
    assert rx <= tx, f"counter error: received {rx} > sent {tx}"
    reconnect_s = round(back["t"] - restarted_at, 3) if back else None
    metrics = {"udp_tx_packets": tx, "udp_rx_packets": rx, "udp_lost_packets": tx - rx,
               "controller_down_s": round(restarted_at - killed_at, 3),
               "reconnect_after_restart_s": reconnect_s, "reconnected": back is not None}
    results.record(f"controller_killed_{switch_kind}", metrics,
                   params={"udp_packets": UDP_PACKETS, "udp_pps": UDP_PPS,
                           "kill_at_s": KILL_AT_S, "restart_at_s": RESTART_AT_S,
                           "fail_mode": "secure"},
                   provenance=provenance(switch_kind))
    assert back is not None, f"{switch_kind} did not reconnect within 30 s of the restart"
    assert tx - rx == 0, f"{switch_kind} lost {tx - rx} of {tx} on installed flows " \
                         "while the controller was down"


@pytest.mark.features("netns")
def test_two_controllers_roles(topo, lab, switch_kind, results):
    pa, pb = lab.free_tcp_port(), lab.free_tcp_port()
    a = topo.controller(pa, "--script", "role:master:10,sleep:3,role:nochange:0")
    b = topo.controller(pb, "--script", "sleep:1,role:slave:10,flow_mod,role:master:5,"
                                        "role:master:11")
    topo.start_switch([pa, pb])
    assert wait_event(a, "connected", 30) and wait_event(b, "connected", 30), \
        f"{switch_kind} did not connect to both controllers"
    ra = wait_event(a, "role", 15, count=2)
    rb = wait_event(b, "role", 15, count=3)
    fm = wait_event(b, "flow_mod", 15)
    a_roles = [e for e in events(a) if e["event"] == "role"]
    b_roles = [e for e in events(b) if e["event"] == "role"]
    assert ra and rb and fm, f"scripts did not finish: {a_roles} {b_roles} {fm}"
    checks = {
        "a_master": a_roles[0].get("role") == "master",
        "b_slave": b_roles[0].get("role") == "slave",
        "slave_flow_mod_is_slave": fm.get("error") == IS_SLAVE,
        "stale_generation_refused": b_roles[1].get("error") == STALE,
        "b_master_gen_11": b_roles[2].get("role") == "master",
        "a_demoted_to_slave": a_roles[1].get("role") == "slave",
    }
    results.record(f"two_controllers_{switch_kind}",
                   {**checks, "checks_ok": sum(checks.values()), "checks_total": len(checks)},
                   params={"controllers": 2}, provenance=provenance(switch_kind))
    failed = [k for k, v in checks.items() if not v]
    assert not failed, f"{switch_kind}: {failed} (a: {a_roles}, b: {b_roles}, flow_mod: {fm})"


@pytest.mark.features("netns")
def test_silent_controller_is_dropped(topo, lab, switch_kind, results):
    port = lab.free_tcp_port()
    ctl = topo.controller(port, "--echo", "ignore")
    topo.start_switch([port])
    assert wait_event(ctl, "connected", 30), f"{switch_kind} never connected"
    gone = wait_event(ctl, "disconnected", 40)
    after = gone["after_s"] if gone else None
    results.record(f"silent_controller_{switch_kind}",
                   {"dropped": gone is not None, "dropped_after_s": after},
                   params={"keepalive": "default (5 s)"}, provenance=provenance(switch_kind))
    assert gone is not None, f"{switch_kind} kept a silent controller for 40 s"
