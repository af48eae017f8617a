"""Smoke: two kernel hosts in namespaces, the profile's switch between them, our L2 learning
app as controller. Ping and a short UDP burst must pass on every switch kind of the profile."""
from __future__ import annotations

import json
import re
import sys
import time

import pytest

from distributions import quantiles_from_samples
from drivers.lab.switches import start_controller, start_switch

H1_IP, H2_IP = "10.11.0.1", "10.11.0.2"
UDP_PACKETS = 1000
UDP_PPS = 2000
# 20 echoes 50 ms apart: the same second as 5 at 200 ms, enough for a round-trip CDF
PINGS, PING_INTERVAL_S = 20, 0.05


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


def ping_times_ms(out: str) -> list[float]:
    """Each echo's round trip (ms) from ping's per-reply lines ('... time=0.062 ms')."""
    return [float(t) for t in re.findall(r"\btime=([\d.]+) ms", out)]


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
        ping_out = lab.netns_exec(h1, ["ping", "-c", str(PINGS), "-i", str(PING_INTERVAL_S),
                                       "-W", "2", H2_IP], check=False).stdout
        ping, rtt_ms = parse_ping(ping_out), ping_times_ms(ping_out)
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
    rtt = quantiles_from_samples(rtt_ms)
    results.record(f"ping_udp_{switch_kind}", metrics,
                   params={"udp_packets": UDP_PACKETS, "udp_pps": UDP_PPS, "hosts": 2,
                           "pings": PINGS, "ping_interval_s": PING_INTERVAL_S},
                   provenance={"dut_switch_kind": switch_kind, "port_kind": "veth",
                               "generator": "kernel_udp", "generator_version": "1"},
                   distributions={"ping_rtt_ms": rtt} if rtt else None)
    assert ping["ping_rx"] == ping["ping_tx"] > 0, f"ping failed through {switch_kind}: {ping}"
    assert rx == tx, f"UDP burst through {switch_kind}: {tx - rx} of {tx} lost"


@pytest.mark.quick
def test_ping_parsers():
    out = ("PING 10.11.0.2 (10.11.0.2) 56(84) bytes of data.\n"
           "64 bytes from 10.11.0.2: icmp_seq=1 ttl=64 time=0.062 ms\n"
           "64 bytes from 10.11.0.2: icmp_seq=2 ttl=64 time=1.50 ms\n\n"
           "--- 10.11.0.2 ping statistics ---\n"
           "2 packets transmitted, 2 received, 0% packet loss, time 51ms\n"
           "rtt min/avg/max/mdev = 0.062/0.781/1.500/0.719 ms\n")
    assert ping_times_ms(out) == [0.062, 1.5]
    assert parse_ping(out)["ping_rtt_avg_ms"] == 0.781 and parse_ping(out)["ping_tx"] == 2
