"""Slice flows: the isolation invariant over random tenant configs, capture, app config."""
import random

import pytest

from dut.vmwire.slice_app import (PRIORITY_MISS, SliceFlow, load_app_config, slice_flows)
from dut.vmwire.tenants import VmwireConfigError, parse_config


def _random_cfg(rng):
    n = rng.randint(1, 12)
    ports = {f"p{i}": rng.randint(1, 5000) for i in range(n)}
    # unique numbers
    nums = rng.sample(range(1, 5000), n)
    ports = {f"p{i}": nums[i] for i in range(n)}
    names = list(ports)
    rng.shuffle(names)
    tenants, i, t = {}, 0, 0
    while i < len(names):
        k = rng.randint(1, 4)
        chunk = names[i:i + k]
        if rng.random() < 0.8:           # some ports stay in no tenant
            tenants[f"t{t}"] = chunk
            t += 1
        i += k
    if not tenants:
        tenants["t0"] = [names[0]]
    return parse_config({"ports": ports, "tenants": tenants}, "rand")


def test_isolation_invariant_over_random_configs():
    rng = random.Random(1234)
    for _ in range(300):
        cfg = _random_cfg(rng)
        flows = slice_flows(cfg)
        by_in = {f.in_port: f for f in flows}
        assert by_in[None] == SliceFlow(PRIORITY_MISS, None, ())     # table-miss drops
        for name, ofport in cfg.ports.items():
            f = by_in[ofport]
            t = cfg.tenant_of.get(name)
            mates = {cfg.ports[p] for p in cfg.tenants[t] if p != name} if t else set()
            assert set(f.outputs) == mates                            # reaches its whole slice
            assert ofport not in f.outputs                            # never back out
            for o in f.outputs:                                       # never another tenant
                assert cfg.tenant_of_ofport(o) == t


def test_two_port_slice_is_a_wire_and_singletons_drop():
    cfg = parse_config({"ports": {"a": 1, "b": 2, "c": 3, "d": 4},
                        "tenants": {"x": ["a", "b"], "y": ["c"]}}, "w")
    got = {f.in_port: f.outputs for f in slice_flows(cfg)}
    assert got == {None: (), 1: (2,), 2: (1,), 3: (), 4: ()}
    assert slice_flows(cfg)[1].describe() == "priority=100,in_port=1 actions=output:2"


def test_capture_copies_both_directions_of_the_port():
    cfg = parse_config({"ports": {"a": 1, "b": 2, "c": 3, "d": 4},
                        "tenants": {"x": ["a", "b"], "y": ["c", "d"]}}, "w")
    got = {f.in_port: f.outputs for f in slice_flows(cfg, 99, ["a"])}
    assert got[1] == (2, 99) and got[2] == (1, 99)   # into a, out of a
    assert got[3] == (4,) and got[4] == (3,)         # other slice untouched


def test_app_config_with_capture(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("ports: {a: 1, b: 2}\ntenants: {x: [a, b]}\ncapture: {ofport: 9, ports: [b]}\n")
    cfg, cap_port, cap_names = load_app_config(p)
    assert (cap_port, cap_names) == (9, ("b",))
    p.write_text("ports: {a: 1, b: 2}\ntenants: {x: [a, b]}\ncapture: {ofport: 2, ports: [b]}\n")
    with pytest.raises(VmwireConfigError, match="capture.ofport"):
        load_app_config(p)
    p.write_text("ports: {a: 1, b: 2}\ntenants: {x: [a, b]}\ncapture: {ofport: 9, ports: [z]}\n")
    with pytest.raises(VmwireConfigError, match=r"s.yaml:3: capture.ports\[0\]: unknown port 'z'"):
        load_app_config(p)


def test_app_module_imports_under_os_ken():
    import dut.vmwire.slice_app as m
    assert m.app_manager is not None and hasattr(m, "SliceApp")
