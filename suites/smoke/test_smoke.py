"""Smoke: two kernel hosts in namespaces, the profile's switch between them, our L2 learning
app as controller. Ping and a short UDP burst must pass on every switch kind of the profile."""
from __future__ import annotations

import json
import re
import sys
import time

import pytest

from drivers.lab.switches import start_controller, start_switch

H1_IP, H2_IP = "10.11.0.1", "10.11.0.2"
UDP_PACKETS = 1000
UDP_PPS = 2000


def wait_for_log(proc, pattern: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if re.search(pattern, proc.log_path.read_text(errors="replace")):
            return True
        time.sleep(0.1)
    return False


def parse_ping(out: str) -> dict:
    m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
    rtt = re.search(r"= [\d.]+/([\d.]+)/([\d.]+)/", out)
    tx, rx = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    return {"ping_tx": tx, "ping_rx": rx,
            "ping_loss_pct": round(100.0 * (tx - rx) / tx, 1) if tx else 100.0,
            "ping_rtt_avg_ms": float(rtt.group(1)) if rtt else None,
            "ping_rtt_max_ms": float(rtt.group(2)) if rtt else None}


@pytest.mark.quick
@pytest.mark.features("netns")
def test_ping_and_udp_burst(lab, switch_kind, results):
    tag = {"ofbench": "ofb", "ovs": "ovs", "ovs-dpdk": "dpd"}[switch_kind]
    h1, h2, sw = (lab.add_netns(f"{tag}h1"), lab.add_netns(f"{tag}h2"),
                  lab.add_netns(f"{tag}sw"))
    p1, p2 = lab.ifname(f"{tag}1"), lab.ifname(f"{tag}2")
    lab.add_veth(h1, "eth0", sw, p1)
    lab.add_veth(h2, "eth0", sw, p2)
    lab.netns_exec(h1, ["ip", "addr", "add", f"{H1_IP}/24", "dev", "eth0"])
    lab.netns_exec(h2, ["ip", "addr", "add", f"{H2_IP}/24", "dev", "eth0"])
    procs = []
    try:
        ctl, port = start_controller(lab, f"ctl-{tag}", "dut.controller.l2_learning", netns=sw)
        procs.append(ctl)
        switch = start_switch(lab, switch_kind, name=f"sw-{tag}", netns=sw,
                              ports=[(1, p1), (2, p2)], controller=("127.0.0.1", port))
        assert wait_for_log(ctl, r"table-miss installed", 30), \
            f"{switch_kind} never connected to the controller; see {ctl.log_path}"

        warm = lab.netns_exec(h1, ["ping", "-c", "1", "-W", "5", H2_IP], check=False)
        ping = parse_ping(lab.netns_exec(h1, ["ping", "-c", "5", "-i", "0.2", "-W", "2", H2_IP],
                                         check=False).stdout)
        ready = lab.sock_path(f"udprecv-{tag}.ready")
        recv = lab.supervisor.start(
            f"udp-recv-{tag}",
            [sys.executable, "-m", "drivers.kernel_udp", "recv", "--bind", f"{H2_IP}:9000",
             "--count", str(UDP_PACKETS), "--timeout", "10", "--ready-file", ready],
            netns=h2, ready=ready.exists, env={"PYTHONPATH": "."})
        procs.append(recv)
        sent = json.loads(lab.netns_exec(
            h1, [sys.executable, "-m", "drivers.kernel_udp", "send", "--to", f"{H2_IP}:9000",
                 "--count", str(UDP_PACKETS), "--pps", str(UDP_PPS)], timeout=60).stdout)
        recv.wait(timeout_s=15)
        got = json.loads(recv.log_path.read_text().strip().splitlines()[-1])
        switch.stop()
    finally:
        for p in procs:
            lab.supervisor.stop(p)
        for ns in (h1, h2, sw):
            lab.del_netns(ns)

    tx, rx = sent["tx_packets"], got["rx_packets"]
    assert rx <= tx, f"counter error: received {rx} > sent {tx}"
    metrics = {**ping, "warmup_ping_ok": warm.returncode == 0,
               "udp_tx_packets": tx, "udp_unsent_packets": sent["unsent_packets"],
               "udp_rx_packets": rx, "udp_lost_packets": tx - rx,
               "udp_duplicate_packets": got["duplicate_packets"],
               "udp_out_of_order_packets": got["out_of_order_packets"],
               "udp_tx_kpps": sent["tx_kpps"], "passed": ping["ping_rx"] == ping["ping_tx"] and rx == tx}
    results.record(f"ping_udp_{switch_kind}", metrics,
                   params={"udp_packets": UDP_PACKETS, "udp_pps": UDP_PPS, "hosts": 2},
                   provenance={"dut_switch_kind": switch_kind, "port_kind": "veth",
                               "generator": "kernel_udp", "generator_version": "1"})
    assert ping["ping_rx"] == ping["ping_tx"] > 0, f"ping failed through {switch_kind}: {ping}"
    assert rx == tx, f"UDP burst through {switch_kind}: {tx - rx} of {tx} lost"
