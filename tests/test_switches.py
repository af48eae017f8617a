"""drivers.lab.switches: which switch can run, and which of the profile's settings reach ours."""
from types import SimpleNamespace

from drivers.lab.switches import ofbench_settings, switch_available


def _profile(switch: dict, features=("ovs",), lab_kind="local"):
    return SimpleNamespace(switch=switch, features=frozenset(features), lab_kind=lab_kind,
                           name="p")


def test_profile_switch_settings_reach_ofbench():
    prof = _profile({"kind": "ofbench", "lookup": "simple", "workers": 2})
    assert ofbench_settings(prof, "ofbench", env={}) == {"lookup": "simple", "workers": 2}


def test_profile_cores_reach_ofbench():
    prof = _profile({"kind": "ofbench", "lookup": "trie", "workers": 1, "cores": "2-3"})
    assert ofbench_settings(prof, "ofbench", env={})["lcores"] == "2-3"


def test_ofbench_as_a_peer_gets_the_one_default():
    from dut.profiles.schema import DEFAULT_LOOKUP
    prof = _profile({"kind": "ovs", "lookup": "simple", "workers": 2})
    assert ofbench_settings(prof, "ofbench", env={}) == {"lookup": DEFAULT_LOOKUP, "workers": 1}


def test_env_overrides_lookup():
    prof = _profile({"kind": "ofbench", "lookup": "trie", "workers": 1})
    got = ofbench_settings(prof, "ofbench", env={"OFBENCH_SWITCH_LOOKUP": "simple"})
    assert got == {"lookup": "simple", "workers": 1}


def test_unavailable_switches_say_why():
    prof = _profile({"kind": "ofbench"}, features=())
    assert "lacks feature ovs" in switch_available("ovs", prof)
    assert "lacks feature ovs_dpdk" in switch_available("ovs-dpdk", prof)
    assert "unknown switch kind" in switch_available("p4", prof)
    remote = _profile({"kind": "ofbench"}, features=("ovs",), lab_kind="remote")
    assert "runs on this box only" in switch_available("ovs", remote)
