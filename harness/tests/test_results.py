"""harness.results.Results: targets checked on the profile's own switch only, misses written
into the record and failing the test, provenance from the profile, the lab and the test."""
import json
from types import SimpleNamespace

import pytest

from dut.profiles.schema import parse_profile
from harness.results import Results, base_provenance, suite_of
from paths import SUITES
from harness.state import RunState


def _state(tmp_path, **extra):
    prof = parse_profile({
        "schema_version": 1,
        "lab": {"kind": "remote", "hosts": {"switch": {"address": "198.18.0.2"},
                                            "generator": {"address": "198.18.0.4"}}},
        "switch": {"kind": "ofbench", "host": "switch"}, "peers": ["ovs"],
        "generator": {"kind": "softgen", "host": "generator"},
        "targets": {"smoke": {"fwd": {"rx_mpps": ">= 1.0"}}}, **extra}, where="t.yaml")
    st = RunState(SimpleNamespace())
    st.profile = prof
    from reports.results import create_run_dir
    st.run_dir = create_run_dir(tmp_path / "reports")
    st.lab = SimpleNamespace(dut_build="sha256:0123456789abcdef")
    return st


def _records(state):
    return [json.loads(line) for line in (state.run_dir / "results.jsonl").read_text().splitlines()]


def test_suite_is_the_folder_under_suites():
    assert suite_of(SUITES / "smoke" / "test_links.py") == "smoke"
    assert suite_of("/elsewhere/test_x.py") == "adhoc"


def test_a_missed_target_is_recorded_and_fails_the_test(tmp_path):
    st = _state(tmp_path)
    r = Results(st, "smoke", "t::fwd")
    with pytest.raises(pytest.fail.Exception, match=r"smoke/fwd missed its target\(s\)"):
        r.record("fwd", {"rx_mpps": 0.5}, provenance={"dut_switch_kind": "ofbench",
                                                      "port_kind": "memif"})
    (rec,) = _records(st)
    assert rec["target_misses"] and rec["target_misses"][0]["metric"] == "rx_mpps"


def test_a_peers_record_is_context_not_a_promise(tmp_path):
    st = _state(tmp_path)
    r = Results(st, "smoke", "t::fwd")
    r.record("fwd", {"rx_mpps": 0.5}, provenance={"dut_switch_kind": "ovs", "port_kind": "veth"})
    (rec,) = _records(st)
    assert not rec.get("target_misses")


def test_met_target_passes_and_can_be_checked_later(tmp_path):
    st = _state(tmp_path)
    r = Results(st, "smoke", "t::fwd")
    r.record("fwd", {"rx_mpps": 2.0}, provenance={"dut_switch_kind": "ofbench"})
    r.record("fwd", {"rx_mpps": 0.1}, provenance={"dut_switch_kind": "ofbench"},
             check_targets_now=False)
    assert len(r.misses) == 1 and len(_records(st)) == 2


def test_provenance_names_profile_lab_hosts_generator_and_the_switch_hosts_build(tmp_path):
    st = _state(tmp_path)
    base = base_provenance(st)
    assert base["profile"] == "profile" and base["lab_kind"] == "remote"
    assert base["lab_hosts"] == "generator=198.18.0.4,switch=198.18.0.2"
    assert base["generator"] == "softgen" and base["dut_build"] == "sha256:0123456789abcdef"
    r = Results(st, "smoke", "t::x")
    r.record("x", {"v": 1}, provenance={"generator_version": "9.9", "port_kind": "memif"})
    (rec,) = _records(st)
    assert rec["provenance"]["generator_version"] == "9.9"  # the test's own keys win
    assert rec["provenance"]["port_kind"] == "memif" and rec["test_id"] == "t::x"


def test_run_shaping_environment_is_recorded_but_secrets_are_not():
    from harness.results import env_provenance
    got = env_provenance({"OFBENCH_SWITCH_LOOKUP": "simple", "OFBENCH_INFLUX_TOKEN": "u:p",
                          "HOME": "/root"})
    assert got == {"env_ofbench_switch_lookup": "simple"}


def test_every_record_names_its_switch_kind_and_lookup(tmp_path, monkeypatch):
    """Issue 41 part 4: the kind the record is of (the suite's provenance, params' switch_kind,
    else the profile's switch) and the lookup that switch ran with, in every record."""
    monkeypatch.delenv("OFBENCH_SWITCH_LOOKUP", raising=False)
    st = _state(tmp_path, one_dut=True)
    st.profile.data["switch"]["lookup"] = "dtree"
    r = Results(st, "wan", "t::x")
    r.record("plain", {"v": 1})
    r.record("peer", {"v": 1}, params={"switch_kind": "ovs"})
    r.record("own", {"v": 1}, provenance={"dut_switch_kind": "ofbench", "dut_lookup": "trie"})
    recs = {x["name"]: x["provenance"] for x in _records(st)}
    assert (recs["plain"]["dut_switch_kind"], recs["plain"]["dut_lookup"]) == ("ofbench", "dtree")
    assert (recs["peer"]["dut_switch_kind"], recs["peer"]["dut_lookup"]) == ("ovs", "n/a")
    assert recs["own"]["dut_lookup"] == "trie"
    assert all(p["one_dut"] is True for p in recs.values())
