"""Interop (issue 41 part 1): FAUCET 1.10.12, a controller nobody here wrote, runs a real
network on every switch kind of the profile (ofbench, OVS, OVS-DPDK). Kernel hosts in
network namespaces on the switch's ports; every scenario is checked by traffic between the
hosts (ping, UDP with the port and TTL each datagram arrived with, the hosts' interface
counters), never by flow dumps alone, and every OFPT_ERROR FAUCET received and every
disconnection it saw is counted (FAUCET's log) and must be 0 (a scenario that restarts FAUCET
expects exactly those disconnects it caused).

One record per scenario and switch: suite interop, name = the scenario, provenance
dut_switch_kind, metrics ofp_errors, disconnects, passed (+ the scenario's own counts); the
summary test draws the per-scenario table.
"""
from __future__ import annotations

import pytest

from drivers.lab.faucet import FAUCET_VERSION, faucet_available
from suites.interop import configs
from suites.interop.net import FaucetNet, Host, ScenarioError
from suites.interop.scenarios import (COLLECT, SCENARIOS, OvsTestControllerNet, _l2,
                                      _l2_ovs_testcontroller, _left_behind, run_scenario)

pytestmark = [pytest.mark.features("netns"), pytest.mark.local_lab]


@pytest.fixture(autouse=True)
def _needs_faucet(lab):
    why = faucet_available()
    if why:
        pytest.skip(why)
    from drivers.lab.base import is_remote
    if is_remote(lab):
        pytest.skip("interop runs kernel hosts in namespaces of this box (local labs only)")


@pytest.mark.quick
def test_faucet_l2_ofbench_quick(lab, profile, results, collector):
    """`make test`'s interop scenario: FAUCET L2 learning and flooding on ofbench."""
    from drivers.lab.switches import switch_available
    why = switch_available("ofbench", profile)
    if why:
        pytest.skip(why)
    run_scenario(lab, "ofbench", results, collector, "l2_learning_quick", _l2)


EVENTS = ["host_move", "link_down_up", "controller_restart", "config_reload"]


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if s not in EVENTS])
def test_faucet(lab, switch_kind, scenario, results, collector):
    run_scenario(lab, switch_kind, results, collector, scenario, SCENARIOS[scenario])


@pytest.mark.parametrize("scenario", EVENTS)
def test_faucet_events(lab, switch_kind, scenario, results, collector):
    run_scenario(lab, switch_kind, results, collector, scenario, SCENARIOS[scenario])


@pytest.mark.quick
def test_a_config_faucet_refuses_fails_the_scenario(lab):
    bad = ("vlans: {v100: {vid: 100}}\n"
           "dps: {sw: {dp_id: 1, interfaces: {1: {native_vlan: v999}}}}\n")
    net = FaucetNet(lab, "ofbench", "bad_config", "bc", [Host("h1", 1, "10.50.0.1/24")], bad)
    with pytest.raises(ScenarioError) as e:
        with net:
            pass
    msg = str(e.value)
    assert msg.startswith("interop bad_config on ofbench: ") and "FAUCET refuses" in msg
    assert "v999" in msg and "faucet-obc.yaml" in msg, msg
    assert _left_behind(lab, net) == []


@pytest.mark.quick
def test_hosts_that_cannot_be_created_fail_the_scenario(lab):
    net = FaucetNet(lab, "ofbench", "bad_hosts", "bh", [Host("h1", 1, "10.50.0.300/24")],
                    configs.l2(ports=[1]))
    with pytest.raises(ScenarioError) as e:
        with net:
            pass
    msg = str(e.value)
    assert msg.startswith("interop bad_hosts on ofbench: hosts could not be created"), msg
    assert "10.50.0.300" in msg
    assert _left_behind(lab, net) == []


def test_a_switch_that_never_connects_fails_the_scenario(lab, profile):
    from drivers.lab.switches import switch_available
    why = switch_available("ofbench", profile)
    if why:
        pytest.skip(why)
    # the switch is pointed at a port nothing listens on: FAUCET never sees it
    net = FaucetNet(lab, "ofbench", "no_connect", "nc", [Host("h1", 1, "10.51.0.1/24")],
                    configs.l2(ports=[1]), connect_timeout_s=5.0,
                    controller_port=lab.free_tcp_port())
    with pytest.raises(ScenarioError) as e:
        with net:
            pass
    msg = str(e.value)
    assert msg.startswith("interop no_connect on ofbench: the switch never connected to FAUCET")
    assert _left_behind(lab, net) == []


# ---- the table ---------------------------------------------------------------------------------
@pytest.mark.quick
@pytest.mark.summary
def test_interop_table(results, collector, profile):
    """The per-scenario table (scenario x switch: passed, OFPT_ERRORs, disconnects) and one
    summary record per switch kind (the goals in report.yaml read it)."""
    rows = collector.section(COLLECT)
    if not rows:
        pytest.skip("no interop scenario ran in this session")
    kinds = [k for k in profile.switch_kinds if any(s == k for _, s in rows)]
    table = []
    for scenario in dict.fromkeys(n for n, _ in rows):
        row = {"scenario": scenario}
        for k in kinds:
            r = rows.get((scenario, k))
            row[k] = ("-" if r is None else
                      f"{'pass' if r['passed'] else 'FAIL'} ({r['ofp_errors']} errors, "
                      f"{r['disconnects']} disconnects)"
                      + ("" if r["passed"] else f": {r['failed'][:120]}"))
        table.append(row)
    results.add_table(table, f"FAUCET {FAUCET_VERSION} on each switch: scenarios")
    for k in kinds:
        mine = [r for (_, s), r in rows.items() if s == k]
        results.record("summary", {
            "scenarios": len(mine), "scenarios_passed": sum(r["passed"] for r in mine),
            "scenarios_failed": sum(not r["passed"] for r in mine),
            "ofp_errors": sum(r["ofp_errors"] for r in mine),
            "disconnects": sum(r["disconnects"] for r in mine)},
            params={"controller": "faucet", "controller_version": FAUCET_VERSION,
                    "scenarios": sorted(r["scenario"] for r in mine)},
            provenance={"dut_switch_kind": k, "port_kind": "veth", "generator": "kernel hosts"})


def test_ovs_testcontroller_l2(lab, switch_kind, results, collector):
    """The second third-party controller: ovs-testcontroller's L2 learning on each switch,
    the same checks as FAUCET's l2_learning."""
    run_scenario(lab, switch_kind, results, collector, "l2_learning_ovs_testcontroller",
                 _l2_ovs_testcontroller, OvsTestControllerNet)
