"""The steering app's pure parts: strict config, flows for an assignment, moves, hand-off file."""
import pytest

from dut.wan.steering_app import (SteeringConfigError, applied_version, changed_flows, flows_for,
                                  parse_config, wait_applied, write_applied, write_assignment)

CFG = {"in_port": 1, "paths": {"path1": 2, "path2": 3}, "apps": {"app1": 47001, "app3": 47003},
       "assignment_file": "/tmp/x.json"}


def test_flows_and_moves():
    cfg = parse_config(CFG)
    old = flows_for(cfg, {"app1": "path2", "app3": "path2"})
    new = flows_for(cfg, {"app1": "path1", "app3": "path2"})
    assert new == {47001: 2, 47003: 3}
    assert changed_flows(old, new) == ({47001: 2}, [])
    assert changed_flows(new, {47003: 3}) == ({}, [47001])


def test_unknown_names_never_guessed():
    cfg = parse_config(CFG)
    with pytest.raises(SteeringConfigError, match="unknown path 'path9'"):
        flows_for(cfg, {"app1": "path9"})
    with pytest.raises(SteeringConfigError, match="unknown app 'app7'"):
        flows_for(cfg, {"app7": "path1"})


@pytest.mark.parametrize("bad,msg", [
    (dict(CFG, inport=1), r"steer.yaml: inport: unknown key \(did you mean 'in_port'"),
    ({k: v for k, v in CFG.items() if k != "apps"}, "steer.yaml: apps: required key is missing"),
    (dict(CFG, paths={"path1": 0}), "steer.yaml: paths.path1: expected an OpenFlow port number 1..0xfffffeff, got 0"),
    (dict(CFG, in_port="1"), "steer.yaml: in_port: expected an OpenFlow port number 1..0xfffffeff, got str '1'"),
])
def test_bad_config(bad, msg):
    with pytest.raises(SteeringConfigError, match=msg):
        parse_config(bad, "steer.yaml")


def test_assignment_handoff(tmp_path):
    f = str(tmp_path / "a.json")
    write_assignment(f, 3, {"app1": "path1"})
    assert applied_version(f) is None
    (tmp_path / "a.json.applied").write_text('{"version": 3}')
    assert wait_applied(f, 3, timeout_s=1) < 1
    with pytest.raises(TimeoutError, match="version 4"):
        wait_applied(f, 4, timeout_s=0.05)


def test_write_applied_is_read_back_by_the_selector_side(tmp_path):
    f = str(tmp_path / "assign.json")
    assert applied_version(f) is None
    write_applied(f, 3, moved=2)
    assert applied_version(f) == 3
    assert wait_applied(f, 3, timeout_s=0.1) >= 0.0
    assert not list(tmp_path.glob("*.tmp"))
