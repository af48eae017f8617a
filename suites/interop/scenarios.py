"""The interop suite's scenarios (issue 41 part 1), apart from its tests (issue 43: no test
module imports another): each scenario's hosts, FAUCET config and checks by traffic
(``SCENARIOS``: name -> body), the Scenario record and ``run_scenario`` that builds the network,
runs the checks, stops everything and records; and the second controller's network
(ovs-testcontroller). suites/interop/test_interop.py runs them per switch kind."""
from __future__ import annotations

import time

import pytest

from drivers.lab.faucet import FAUCET_VERSION, parse_ovs_testcontroller_log
from drivers.supervisor import ProcessStartError
from suites.interop import configs
from suites.interop.net import FaucetNet, Host, ScenarioError
CONTROLLER_VERSIONS = {"faucet": FAUCET_VERSION, "ovs-testcontroller": "3.1.0 (Debian 12)"}
COLLECT = "interop"


class Scenario:
    """Runs one scenario's checks; records and asserts them with FAUCET's counters."""

    def __init__(self, lab, kind, results, collector, name):
        self.lab, self.kind, self.results, self.collector = lab, kind, results, collector
        self.name = name
        self.checks: dict[str, bool] = {}
        self.metrics: dict = {}
        self.expected_disconnects = 0
        self.controller = "faucet"

    def check(self, what: str, ok: bool) -> bool:
        self.checks[what] = bool(ok)
        return ok

    def finish(self, net: FaucetNet | None, error: str | None = None) -> None:
        c = net.final if net is not None else None
        errors = c.ofp_errors if c else 0
        disconnects = c.disconnects if c else 0
        unexpected = max(0, disconnects - self.expected_disconnects)
        failed = [k for k, ok in self.checks.items() if not ok]
        passed = error is None and not failed and errors == 0 and unexpected == 0
        metrics = {"ofp_errors": errors, "disconnects": disconnects,
                   "unexpected_disconnects": unexpected, "checks": len(self.checks),
                   "checks_failed": len(failed), "passed": passed, **self.metrics}
        self.results.record(self.name, metrics,
                            params={"scenario": self.name, "controller": self.controller,
                                    "controller_version": CONTROLLER_VERSIONS[self.controller],
                                    "checks": sorted(self.checks)},
                            provenance={"dut_switch_kind": self.kind, "port_kind": "veth",
                                        "generator": "kernel hosts"})
        self.collector.section(COLLECT)[(self.name, self.kind)] = {
                                     "scenario": self.name, "switch": self.kind,
                                     "passed": passed, "ofp_errors": errors,
                                     "disconnects": disconnects,
                                     "failed": ", ".join(failed) or (error or "")}
        where = f"interop {self.name} on {self.kind}"
        assert error is None, error
        assert not failed, f"{where}: failed checks: {', '.join(failed)}; {self.metrics}"
        assert errors == 0, f"{where}: FAUCET received {errors} OFPT_ERROR(s): {c.errors}"
        assert unexpected == 0, (f"{where}: {disconnects} disconnect(s), "
                                 f"{self.expected_disconnects} expected")


# Findings FAUCET exposed in a switch, written down in suites/interop/README.md: the scenario
# still runs and records; its failure is reported as an expected failure (strict: once the
# switch is fixed the XPASS fails the run, and the entry goes).
KNOWN: dict[tuple[str, str], str] = {
    # (scenario, switch kind): the finding (suites/interop/README.md "Findings") while it is
    # open; findings 1 and 2 (ofbench's link state, its table-miss packet-in reason) are fixed
}


def run_scenario(lab, kind, results, collector, name, body, net_cls=None):
    """Build the scenario's network (``body`` returns hosts, config and the checks), run the
    checks, stop everything, record, assert."""
    known = KNOWN.get((name, kind))
    if known:
        try:
            _run_scenario(lab, kind, results, collector, name, body, net_cls)
        except AssertionError as e:
            pytest.xfail(f"{known}: {e}")
        pytest.fail(f"interop {name} on {kind} passed: the known finding is fixed; remove it "
                    f"from KNOWN and the README ({known})", pytrace=False)
    _run_scenario(lab, kind, results, collector, name, body, net_cls)


def _run_scenario(lab, kind, results, collector, name, body, net_cls=None):
    sc = Scenario(lab, kind, results, collector, name)
    hosts, config, abbr, checks = body()
    net = (net_cls or FaucetNet)(lab, kind, name, abbr, hosts, config)
    sc.controller = getattr(net, "controller_name", "faucet")
    error = None
    try:
        with net:
            checks(net, sc)
    except ScenarioError as e:
        error = str(e)
    sc.finish(net, error)  # FAUCET's logs outlive it: the counters are read after the stop


# ---- scenarios -------------------------------------------------------------------------------
def l2_learning(net: FaucetNet, sc: Scenario) -> None:
    """Three hosts on one VLAN: each reaches the others; a broadcast floods to all; once
    learned, unicast goes only to its host (the third host's counter stays still)."""
    sc.check("h1->h2", net.reachable("h1", "10.41.0.2"))
    sc.check("h1->h3", net.reachable("h1", "10.41.0.3"))
    sc.check("h2->h3", net.reachable("h2", "10.41.0.3"))
    got = net.udp_bcast("h1", ["h2", "h3"], "10.41.0.255", count=10)
    sc.metrics.update(flood_rx_h2=got["h2"], flood_rx_h3=got["h3"])
    sc.check("broadcast flooded to h2 and h3", got["h2"] == got["h3"] == 10)
    b3 = net.rx_packets("h3")
    got = net.udp("h1", "h2", 9000, count=50)
    d3 = net.rx_packets("h3") - b3
    sc.metrics.update(unicast_rx=got["rx"], unicast_tx=got["tx"], unicast_leak_h3=d3)
    sc.check("learned unicast delivered", got["rx"] == got["tx"] == 50)
    sc.check("learned unicast not flooded to h3", d3 < 10)


def _l2():
    hosts = [Host(f"h{i}", i, f"10.41.0.{i}/24") for i in (1, 2, 3)]
    return hosts, configs.l2(ports=[1, 2, 3]), "l2", l2_learning


def _routed_unreachable(net: FaucetNet, src: str, ip: str) -> bool:
    return net.ping(src, ip, count=3, interval_s=0.2, wait_s=1.0)["rx"] == 0


def vlan_isolation(net: FaucetNet, sc: Scenario) -> None:
    """Two VLANs, the same subnet: hosts reach their own VLAN only; a broadcast stays in its
    VLAN."""
    sc.check("h1->h2 (v100)", net.reachable("h1", "10.42.0.2"))
    sc.check("h3->h4 (v200)", net.reachable("h3", "10.42.0.4"))
    sc.check("h1-/->h3 (v100 to v200)", _routed_unreachable(net, "h1", "10.42.0.3"))
    sc.check("h2-/->h4 (v100 to v200)", _routed_unreachable(net, "h2", "10.42.0.4"))
    d = net.udp_bcast("h1", ["h2", "h3", "h4"], "10.42.0.255", count=10)
    sc.metrics.update(bcast_rx_same_vlan=d["h2"], bcast_rx_other_vlan=d["h3"] + d["h4"])
    sc.check("broadcast reaches its VLAN", d["h2"] == 10)
    sc.check("broadcast stays in its VLAN", d["h3"] + d["h4"] == 0)


def _vlan_isolation():
    hosts = [Host("h1", 1, "10.42.0.1/24"), Host("h2", 2, "10.42.0.2/24"),
             Host("h3", 3, "10.42.0.3/24"), Host("h4", 4, "10.42.0.4/24")]
    cfg = configs.vlans({1: "v100", 2: "v100", 3: "v200", 4: "v200"},
                        vids={"v100": 100, "v200": 200})
    return hosts, cfg, "vi", vlan_isolation


def tagged_untagged(net: FaucetNet, sc: Scenario) -> None:
    """Port 2 is a trunk (tagged v100 and v200), ports 1 and 3 untagged (v100, v200), port 4
    tagged v200. The tagged hosts write and count 802.1Q frames themselves: a frame tagged 100
    from the trunk reaches the untagged v100 host without its tag, tagged 200 the v200 host;
    the untagged host's answer leaves the trunk tagged 100; tagged to tagged keeps the tag;
    nothing crosses VLANs."""
    # h1's kernel cannot ARP for a host without a kernel address: a static neighbour
    net.lab.netns_exec(net.ns["h1"], ["ip", "neigh", "replace", net.hosts["h2"].addr,
                                      "lladdr", net.hosts["h2"].mac, "dev", "eth0"])
    a = net.raw("h2", "h1", 9000, vid=100)
    b = net.raw("h2", "h3", 9000, vid=200)
    wrong = net.raw("h2", "h1", 9001, vid=200)  # h1's MAC, but on VLAN 200: not delivered
    back = net.udp_finish(([net._recv("h2", [9000], 2.0, raw=True)],
                           net._send("h1", ["send", "--to", net.hosts["h2"].addr, "--port",
                                            "9000", "--count", "20", "--pps", "200"]), 20))
    tt = net.raw("h2", "h4", 9000, vid=200)
    sc.metrics.update(trunk100_to_untagged_rx=a["rx"], trunk200_to_untagged_rx=b["rx"],
                      cross_vlan_rx=wrong["rx"], untagged_to_trunk_tagged100=back["frames"]
                      .get("100/9000", 0), untagged_to_trunk_untagged=back["frames"]
                      .get("none/9000", 0), trunk_to_tagged200=tt["frames"].get("200/9000", 0))
    sc.check("tagged 100 -> untagged v100 host", a["rx"] == 20)
    sc.check("tagged 200 -> untagged v200 host", b["rx"] == 20)
    sc.check("tagged 200 to the v100 host's MAC: dropped", wrong["rx"] == 0)
    sc.check("untagged v100 -> trunk, tagged 100", back["frames"] == {"100/9000": 20})
    sc.check("trunk tagged 200 -> tagged v200 host, tag kept", tt["frames"] == {"200/9000": 20})


def _tagged_untagged():
    hosts = [Host("h1", 1, "10.43.100.1/24"), Host("h2", 2, "10.43.100.2/24", vid=100),
             Host("h3", 3, "10.43.200.3/24"), Host("h4", 4, "10.43.200.4/24", vid=200)]
    cfg = configs.vlans({1: "v100", 3: "v200"}, tagged={2: ["v100", "v200"], 4: ["v200"]},
                        vids={"v100": 100, "v200": 200})
    return hosts, cfg, "tu", tagged_untagged


ACL_RULES = {"port1_in": [
    {"rule": {"dl_type": 0x800, "nw_proto": 17, "udp_dst": 9001, "actions": {"allow": 0}}},
    {"rule": {"dl_type": 0x800, "nw_proto": 17, "udp_dst": 9002,
              "actions": {"allow": 1, "output": {"set_fields": [{"udp_dst": 9003}]}}}},
    {"rule": {"actions": {"allow": 1}}},
]}


def port_acls(net: FaucetNet, sc: Scenario) -> None:
    """A port ACL on h1's port: UDP 9001 dropped, UDP 9002 rewritten to 9003, the rest
    allowed (ping, UDP 9000); the reverse direction has no ACL."""
    sc.check("allow: h1->h2 ping", net.reachable("h1", "10.45.0.2"))
    ok = net.udp("h1", "h2", 9000, count=20)
    drop = net.udp("h1", "h2", 9001, count=20)
    rw = net.udp("h1", "h2", 9002, count=20, listen=[9002, 9003])
    back = net.udp("h2", "h1", 9001, count=20)
    sc.metrics.update(allow_rx=ok["rx"], drop_rx=drop["rx"], rewrite_rx_9003=rw["ports"][9003],
                      rewrite_rx_9002=rw["ports"][9002], reverse_9001_rx=back["rx"])
    sc.check("allow: UDP 9000 delivered", ok["rx"] == ok["tx"] == 20)
    sc.check("drop: UDP 9001 dropped", drop["tx"] == 20 and drop["rx"] == 0)
    sc.check("rewrite: UDP 9002 arrives as 9003", rw["ports"][9003] == 20
             and rw["ports"][9002] == 0)
    sc.check("no ACL on h2's port: UDP 9001 h2->h1 delivered", back["rx"] == 20)


def _port_acls():
    hosts = [Host("h1", 1, "10.45.0.1/24"), Host("h2", 2, "10.45.0.2/24")]
    cfg = configs.vlans({1: "v100", 2: "v100"}, vids={"v100": 100},
                        acls_in={1: "port1_in"}, acls=ACL_RULES)
    return hosts, cfg, "ac", port_acls


def inter_vlan_routing(net: FaucetNet, sc: Scenario) -> None:
    """FAUCET's router between two VLANs (virtual IPs .254): hosts in different subnets
    reach each other through its FIB; the TTL is one less at the receiver."""
    sc.check("h1 -> its gateway (FAUCET's VIP)", net.reachable("h1", "10.44.1.254"))
    sc.check("h1 (v100) -> h2 (v200) routed", net.reachable("h1", "10.44.2.2", tries=10))
    p = net.ping("h1", "10.44.2.2", count=5)
    got = net.udp("h1", "h2", 9000, count=20)
    sc.metrics.update(routed_ping_rx=p["rx"], routed_udp_rx=got["rx"],
                      receiver_ttl=min(got["ttls"]) if got["ttls"] else None,
                      reply_ttl=min(p["ttls"]) if p["ttls"] else None)
    sc.check("routed ping 5/5", p["rx"] == 5)
    sc.check("routed UDP 20/20", got["rx"] == got["tx"] == 20)
    sc.check("TTL 64 -> 63 at the receiver", got["ttls"] == [63])
    sc.check("reply TTL 63 at the sender", p["ttls"] and set(p["ttls"]) == {63})


def _routing():
    hosts = [Host("h1", 1, "10.44.1.1/24", gw="10.44.1.254"),
             Host("h2", 2, "10.44.2.2/24", gw="10.44.2.254")]
    cfg = configs.vlans({1: "v100", 2: "v200"}, vids={"v100": 100, "v200": 200},
                        vips={"v100": "10.44.1.254/24", "v200": "10.44.2.254/24"}, route=True)
    return hosts, cfg, "rt", inter_vlan_routing


SCENARIOS = {"l2_learning": _l2, "vlan_isolation": _vlan_isolation,
             "tagged_untagged": _tagged_untagged, "port_acls": _port_acls,
             "inter_vlan_routing": _routing}


def host_move(net: FaucetNet, sc: Scenario) -> None:
    """h1 (port 1) moves to port 3: its cable on port 1 goes down and the same MAC and
    address come up on port 3 (h1b). Once it has sent a frame there, traffic to it follows it
    to port 3."""
    sc.check("h2->h1 before the move", net.reachable("h2", "10.46.0.1"))
    mark = net.port_mark()
    net.set_link("h1", False)
    t0 = time.monotonic()
    net.set_link("h1b", True)
    # the port's PORT_STATUS is link_down_up's check; here the host's frames show the move
    sc.metrics.update(port3_up_seen_s=net.wait_port(3, True, mark, timeout_s=3.0))
    sc.check("h1 (moved) -> h2", net.reachable("h1b", "10.46.0.2", tries=10))
    sc.check("h2->h1 after the move", net.reachable("h2", "10.46.0.1", tries=10))
    sc.metrics.update(move_s=round(time.monotonic() - t0, 2))
    got = net.udp("h2", "h1b", 9000, count=20)
    sc.metrics.update(after_move_udp_rx=got["rx"])
    sc.check("UDP to the moved host 20/20", got["rx"] == got["tx"] == 20)


def _host_move():
    hosts = [Host("h1", 1, "10.46.0.1/24", mac="02:46:00:00:00:01"),
             Host("h2", 2, "10.46.0.2/24"),
             Host("h1b", 3, "10.46.0.1/24", mac="02:46:00:00:00:01", up=False)]
    return hosts, configs.l2(ports=[1, 2, 3]), "hm", host_move


def link_down_up(net: FaucetNet, sc: Scenario) -> None:
    """h2's cable goes down and up: FAUCET hears of both (the switch's PORT_STATUS), the path
    stops while it is down and comes back when it is up."""
    sc.check("h1->h2 before", net.reachable("h1", "10.47.0.2"))
    mark = net.port_mark()
    net.set_link("h2", False)
    down_s = net.wait_port(2, False, mark)
    sc.check("FAUCET saw port 2 go down", down_s is not None)
    sc.check("no path while down", _routed_unreachable(net, "h1", "10.47.0.2"))
    mark = net.port_mark()
    t0 = time.monotonic()
    net.set_link("h2", True)
    up_s = net.wait_port(2, True, mark)
    sc.check("FAUCET saw port 2 come up", up_s is not None)
    sc.check("h1->h2 after the link is up", net.reachable("h1", "10.47.0.2", tries=10))
    sc.metrics.update(port_down_seen_s=down_s, port_up_seen_s=up_s,
                      recovered_s=round(time.monotonic() - t0, 2))
    got = net.udp("h1", "h2", 9000, count=20)
    sc.check("UDP after the link is up 20/20", got["rx"] == got["tx"] == 20)


def _link_down_up():
    hosts = [Host("h1", 1, "10.47.0.1/24"), Host("h2", 2, "10.47.0.2/24")]
    return hosts, configs.l2(ports=[1, 2]), "ld", link_down_up


def controller_restart(net: FaucetNet, sc: Scenario) -> None:
    """FAUCET stopped during a UDP stream and started again: the installed paths keep
    forwarding while it is away (fail secure: flows kept), the switch reconnects, and the
    network works after FAUCET's cold start."""
    sc.check("h1->h2 before", net.reachable("h1", "10.48.0.2"))
    sc.check("h2->h1 before", net.reachable("h2", "10.48.0.1"))
    sc.expected_disconnects = 1
    stream = net.udp_start("h1", "h2", 9000, count=1400, pps=200, wait_s=4)
    time.sleep(1.0)
    net.stop_faucet()
    t_down = time.monotonic()
    time.sleep(0.5)
    during = net.udp("h2", "h1", 9001, count=200, pps=200)
    sc.check("UDP h2->h1 while FAUCET is down 200/200", during["rx"] == during["tx"] == 200)
    net.start_faucet_again()
    net.wait_connected(1)
    reconnect_s = time.monotonic() - t_down
    got = net.udp_finish(stream)
    after = net.udp("h1", "h2", 9002, count=20)
    sc.metrics.update(down_udp_rx=during["rx"], stream_tx=got["tx"], stream_rx=got["rx"],
                      stream_lost=got["tx"] - got["rx"], reconnect_s=round(reconnect_s, 2),
                      after_udp_rx=after["rx"])
    # FAUCET's cold start on the new connection deletes and re-adds every flow: a frame may
    # meet the gap (1 of 1400 on OVS once); the flows kept while it was away are the check
    # above, this bounds the rest
    sc.check("stream across the restart: <= 1 % lost", got["tx"] == 1400
             and got["tx"] - got["rx"] <= 14)
    sc.check("UDP after the restart 20/20", after["rx"] == after["tx"] == 20)


def _controller_restart():
    hosts = [Host("h1", 1, "10.48.0.1/24"), Host("h2", 2, "10.48.0.2/24")]
    return hosts, configs.l2(ports=[1, 2]), "cr", controller_restart


def config_reload(net: FaucetNet, sc: Scenario) -> None:
    """FAUCET's config changed and SIGHUP'd: port 3 moves from VLAN 100 to VLAN 200. h3 is
    cut off from h1, h1 still reaches h2, and the switch was reconfigured on its running
    connection (no reconnect)."""
    sc.check("h1->h3 before", net.reachable("h1", "10.49.0.3"))
    sc.check("h1->h2 before", net.reachable("h1", "10.49.0.2"))
    net.faucet.reload(configs.vlans({1: "v100", 2: "v100", 3: "v200"},
                                    vids={"v100": 100, "v200": 200}))
    t0 = time.monotonic()
    while net.faucet.counters().reloads < 1 and time.monotonic() - t0 < 10:
        time.sleep(0.1)
    c = net.faucet.counters()
    sc.metrics.update(reload_applied_s=round(time.monotonic() - t0, 2), reloads=c.reloads)
    sc.check("FAUCET applied the new config", c.reloads >= 1)
    time.sleep(1.0)
    net.lab.netns_exec(net.ns["h1"], ["ip", "neigh", "flush", "dev", "eth0"])
    sc.check("h1-/->h3 after the reload", _routed_unreachable(net, "h1", "10.49.0.3"))
    sc.check("h1->h2 after the reload", net.reachable("h1", "10.49.0.2"))
    sc.check("no reconnect for the reload", net.faucet.counters().connects == 1)


def _config_reload():
    hosts = [Host(f"h{i}", i, f"10.49.0.{i}/24") for i in (1, 2, 3)]
    return hosts, configs.l2(ports=[1, 2, 3]), "rl", config_reload


SCENARIOS.update({"host_move": _host_move, "link_down_up": _link_down_up,
                  "controller_restart": _controller_restart, "config_reload": _config_reload})


# ---- bad input: one clear message naming the scenario, everything stopped ---------------------
def _left_behind(lab, net: FaucetNet) -> list[str]:
    ns = [n for n in getattr(lab, "namespaces", []) if n.startswith(lab.ns_name(net.tag))]
    procs = [p.name for p in lab.supervisor.procs if net.tag in p.name and p.alive()]
    return ns + procs


# ---- a second controller: Open vSwitch's test controller (Debian) ------------------------------
class OvsTestControllerNet(FaucetNet):
    controller_name = "ovs-testcontroller"
    """The same hosts and switch, with ovs-testcontroller (an L2 learning controller) instead
    of FAUCET; its counters come from its vconn:dbg log."""

    def _start(self) -> None:
        from drivers.lab.faucet import FaucetError
        from drivers.lab.switches import start_ovs_testcontroller
        port = self.lab.free_tcp_port()
        if self.kind != "ofbench":
            self._start_switch(port)
        try:
            self.ctl, _ = start_ovs_testcontroller(self.lab, f"ovstc-{self.tag}",
                                                   netns=self.ns["sw"], port=port)
        except (FaucetError, ProcessStartError) as e:
            raise self.fail(f"ovs-testcontroller did not start: {e}") from e
        self.procs.append(self.ctl)
        if self.kind == "ofbench":
            self._start_switch(port)
        deadline = time.monotonic() + self.connect_timeout_s
        while self.counters().connects < 1:
            if time.monotonic() > deadline:
                raise self.fail(f"the switch never connected to ovs-testcontroller; log "
                                f"{self.ctl.log_path}")
            time.sleep(0.1)
        time.sleep(0.5)

    def counters(self):
        return parse_ovs_testcontroller_log(self.ctl.log_path.read_text(errors="replace"))

    def close(self) -> None:
        if self.final is None and getattr(self, "ctl", None) is not None:
            self.final = self.counters()
        super().close()


def _l2_ovs_testcontroller():
    hosts, _, _, checks = _l2()
    return hosts, "", "t2", checks
