"""Every strict config of ofbench refuses each kind of bad file the same way (FAUCET's model).

The strict configs share one schema language (configschema/); for each of them (the six
systems' configs and the suites' report.yaml), one case per kind
of bad config - unknown key, wrong type, missing required key, out of range, bad choice, bad
nesting, and a cross-check no single key can make - is written to a file and read by that
system's own loader. Each must fail with the system's error class (a SchemaError, so a
ValueError) and one message naming the file, the line and the full key path.
"""
import copy
import re

import pytest
import yaml

from configschema import SchemaError
from dut.controller.config import ConfigError as ControllerConfigError, load_config
from dut.profiles.schema import ProfileError, load_profile
from dut.vmwire.slice_app import load_app_config
from dut.vmwire.tenants import VmwireConfigError, load_config_file
from dut.wan.config import ConfigError as WanConfigError, load_scenario
from dut.wan.steering_app import SteeringConfigError, load_config as load_steering
from reports.goals import GoalError, read_suite_report
from traces.tos_trace import TraceSpecError, load_spec

# schema -> (its loader, its error class, a good file)
SCHEMAS = {
    "profile": (load_profile, ProfileError, {
        "schema_version": 1, "lab": {"kind": "local"},
        "switch": {"kind": "ovs", "ports": {"p1": {"devargs": "net_memif0"}}},
        "generator": {"kind": "softgen", "ports": {"g0": {"devargs": "net_null0"}}},
        "links": [{"generator": "g0", "switch": "p1"}]}),
    "controller": (load_config, ControllerConfigError, {
        "patterns": ["ABCDEFGHIJ"], "worker_mode": "threads", "high_workers": 2}),
    "vmwire": (load_config_file, VmwireConfigError, {
        "ports": {"g1": 1, "g2": 2}, "tenants": {"t1": ["g1", "g2"]}}),
    "slice_app": (load_app_config, VmwireConfigError, {
        "ports": {"g1": 1, "g2": 2}, "tenants": {"t1": ["g1", "g2"]},
        "capture": {"ofport": 9, "ports": ["g1"]}}),
    "wan_scenario": (load_scenario, WanConfigError, {
        "apps": [{"name": "a1", "length_bytes": 1000, "interval_ms": 10, "deadline_ms": 100,
                  "udp_port": 47001, "size_distribution": "fixed"}],
        "paths": [{"name": "p1", "bandwidth_mbps": 10, "delay_ms": 5}]}),
    "steering": (load_steering, SteeringConfigError, {
        "in_port": 1, "paths": {"p1": 2}, "apps": {"a1": 47001},
        "assignment_file": "/run/x/assign.json"}),
    "tos_trace": (load_spec, TraceSpecError, {"name": "t", "seed": 1, "order": "random"}),
    "suite_report": (read_suite_report, GoalError, {
        "goals": [{"id": "g1", "record": "r1", "conditions": {"mpps": ">= 1"}}],
        "charts": [{"metrics": ["mpps"], "x": "record", "series": "switch"}]}),
}


def put(path, value):
    def f(d):
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return f


def drop(path):
    def f(d):
        for k in path[:-1]:
            d = d[k]
        del d[path[-1]]
    return f


# (schema, kind, change to the good file, key path named, reason)
CASES = [
    ("profile", "unknown key", put(["switch", "wrkers"], 2), "switch.wrkers",
     "unknown key (did you mean 'workers'?"),
    ("profile", "wrong type", put(["switch", "workers"], "two"), "switch.workers",
     "expected int >= 1, got str 'two'"),
    ("profile", "missing required", drop(["lab", "kind"]), "lab.kind", "required key is missing"),
    ("profile", "out of range", put(["controller"], {"port": 70000}), "controller.port",
     "must be in 0..65535, got 70000"),
    ("profile", "failed check", put(["switch", "cache_lines"], 100000), "switch.cache_lines",
     "expected a power of 2, got 100000"),
    ("profile", "wrong type", put(["one_dut"], "yes"), "one_dut", "expected bool"),
    ("profile", "bad choice", put(["switch", "kind"], "cisco"), "switch.kind",
     "expected one of ofbench, ovs, ovs-dpdk, got 'cisco'"),
    ("profile", "bad nesting", put(["switch", "ports", "p1"], "net_memif0"), "switch.ports.p1",
     "expected mapping, got str 'net_memif0'"),
    ("profile", "bad nesting", put(["links"], {"generator": "g0", "switch": "p1"}), "links",
     "expected list, got dict"),
    ("profile", "cross-check", put(["links", 0, "switch"], "p7"), "links[0].switch",
     "no switch port 'p7' (known: p1)"),
    ("profile", "bad nesting", put(["vmwire"], {"ports": {"g1": 1}, "tenants": {"t": "g1"}}),
     "vmwire.tenants.t", "expected list, got str 'g1'"),

    ("controller", "unknown key", put(["high_threads"], 8), "high_threads",
     "unknown key (did you mean 'high_workers'?"),
    ("controller", "wrong type", put(["high_workers"], "8"), "high_workers",
     "expected int in 1..64, got str '8'"),
    ("controller", "missing required", drop(["patterns"]), "patterns", "required key is missing"),
    ("controller", "out of range", put(["high_precedence_min"], 8), "high_precedence_min",
     "must be in 0..7, got 8"),
    ("controller", "bad choice", put(["worker_mode"], "greenlets"), "worker_mode",
     "expected one of threads, processes, got 'greenlets'"),
    ("controller", "bad nesting", put(["patterns"], [["ABC"]]), "patterns[0]",
     "expected str, got list"),
    ("controller", "out of range", put(["patterns"], ["A" * 257]), "patterns[0]",
     "must have 1..256 characters, got 257"),

    ("vmwire", "unknown key", put(["tenant"], {}), "tenant",
     "unknown key (did you mean 'tenants'?"),
    ("vmwire", "wrong type", put(["ports", "g1"], "1"), "ports.g1",
     "expected an OpenFlow port number 1..4294967039, got str '1'"),
    ("vmwire", "missing required", drop(["tenants"]), "tenants", "required key is missing"),
    ("vmwire", "out of range", put(["ports", "g1"], 0xFFFFFF00), "ports.g1",
     "expected an OpenFlow port number 1..4294967039, got 4294967040"),
    ("vmwire", "bad choice", put(["switch_vhost_mode"], "both"), "switch_vhost_mode",
     "expected one of client, server, got 'both'"),
    ("vmwire", "bad nesting", put(["tenants", "t1"], "g1"), "tenants.t1",
     "expected list, got str 'g1'"),
    ("vmwire", "cross-check", put(["tenants", "t1"], ["g1", "g9"]), "tenants.t1[1]",
     "unknown port 'g9' (known ports: g1, g2)"),
    ("vmwire", "cross-check", put(["ports", "g2"], 1), "ports.g2",
     "port number 1 is already used by port 'g1'"),

    ("slice_app", "unknown key", put(["capture", "port"], ["g1"]), "capture.port",
     "unknown key (did you mean 'ports'?"),
    ("slice_app", "missing required", drop(["capture", "ofport"]), "capture.ofport",
     "required key is missing"),
    ("slice_app", "bad nesting", put(["capture", "ports"], "g1"), "capture.ports",
     "expected list, got str 'g1'"),
    ("slice_app", "cross-check", put(["capture", "ofport"], 2), "capture.ofport",
     "expected a port number that is no tenant port, got 2"),

    ("wan_scenario", "unknown key", put(["apps", 0, "lenght_bytes"], 10),
     "apps[0].lenght_bytes", "unknown key (did you mean 'length_bytes'?"),
    ("wan_scenario", "wrong type", put(["apps", 0, "length_bytes"], "1k"),
     "apps[0].length_bytes", "expected int > 0, got str '1k'"),
    ("wan_scenario", "missing required", drop(["paths", 0, "delay_ms"]), "paths[0].delay_ms",
     "required key is missing"),
    ("wan_scenario", "out of range", put(["paths", 0, "loss_pct"], 100), "paths[0].loss_pct",
     "must be in [0, 100), got 100"),
    ("wan_scenario", "out of range", put(["paths", 0, "bandwidth_mbps"], 0),
     "paths[0].bandwidth_mbps", "must be > 0, got 0"),
    ("wan_scenario", "bad choice", put(["apps", 0, "size_distribution"], "uniform"),
     "apps[0].size_distribution", "expected one of fixed, exponential, got 'uniform'"),
    ("wan_scenario", "bad nesting", put(["paths"], {"name": "p1"}), "paths",
     "expected list or null, got dict"),
    ("wan_scenario", "cross-check", lambda d: d["paths"].append(
        {"name": "p1", "bandwidth_mbps": 1, "delay_ms": 1}),
     "paths[1].name", "'p1' is already used by paths[0]"),
    ("wan_scenario", "cross-check", put(["framing"], {"udp_payload_bytes": 32}),
     "framing.udp_payload_bytes", "must exceed app_header_bytes (32), got 32"),

    ("steering", "unknown key", put(["inport"], 1), "inport",
     "unknown key (did you mean 'in_port'?"),
    ("steering", "wrong type", put(["priority"], "high"), "priority",
     "expected int in 0..65535, got str 'high'"),
    ("steering", "missing required", drop(["assignment_file"]), "assignment_file",
     "required key is missing"),
    ("steering", "out of range", put(["apps", "a1"], 70000), "apps.a1",
     "expected a UDP port 1..65535, got 70000"),
    ("steering", "bad nesting", put(["paths"], [2]), "paths", "expected mapping, got list"),
    ("steering", "out of range", put(["paths"], {}), "paths", "must not be empty"),

    ("tos_trace", "unknown key", put(["bogus"], 3), "bogus", "unknown key (allowed: name, seed"),
    ("tos_trace", "wrong type", put(["seed"], "one"), "seed",
     "expected int in 0..0x8000000000000000"),
    ("tos_trace", "missing required", drop(["order"]), "order", "required key is missing"),
    ("tos_trace", "out of range", put(["high_precedence"], 8), "high_precedence",
     "must be in 0..7, got 8"),
    ("tos_trace", "bad choice", put(["order"], "sideways"), "order",
     "expected one of high_low, low_high, random, got 'sideways'"),
    ("tos_trace", "bad nesting", put(["ip_bytes"], {"value": 1500}), "ip_bytes",
     "expected int in 53..9000, got dict"),
    ("tos_trace", "cross-check", lambda d: d.update(ip_bytes=100, occurrences=9), "occurrences",
     "9 patterns of 10 B do not fit in a 48 B payload"),
    ("suite_report", "unknown key", put(["goals", 0, "conditon"], {}), "goals[0].conditon",
     "unknown key (did you mean 'conditions'?"),
    ("suite_report", "wrong type", put(["charts", 0, "log"], "yes"), "charts[0].log",
     "expected bool (true or false), got str 'yes'"),
    ("suite_report", "missing required", drop(["goals", 0, "record"]), "goals[0].record",
     "required key is missing"),
    ("suite_report", "out of range", put(["charts", 0, "metrics"], []), "charts[0].metrics",
     "must not be empty"),
    ("suite_report", "bad choice", put(["charts", 0, "x"], "time"), "charts[0].x",
     "expected one of record, metric, got 'time'"),
    ("suite_report", "bad nesting", put(["goals", 0, "conditions"], ">= 1"),
     "goals[0].conditions", "expected mapping, got str '>= 1'"),
    ("suite_report", "cross-check", put(["goals", 0, "conditions", "mpps"], "at least 1"),
     "goals[0].conditions.mpps", "bad condition 'at least 1'"),
    ("suite_report", "cross-check", put(["charts", 0, "labels"], ["a", "b"]), "charts[0].labels",
     "one per metric (1), got 2"),
]
# steering has no key with a fixed set of values, so no "bad choice" case
KINDS = ("unknown key", "wrong type", "missing required", "out of range", "bad choice",
         "bad nesting")


def test_every_schema_has_a_case_of_every_kind():
    for schema in SCHEMAS:
        kinds = {k for s, k, *_ in CASES if s == schema}
        missing = set(KINDS) - kinds - ({"bad choice"} if schema == "steering" else set())
        if schema == "slice_app":   # the vmwire spec plus `capture`: vmwire's cases cover it
            missing -= {"wrong type", "out of range", "bad choice"}
        assert not missing, (schema, missing)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_good_file_loads(tmp_path, schema):
    loader, _, good = SCHEMAS[schema]
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(good, sort_keys=False))
    assert loader(str(path))


@pytest.mark.parametrize("schema, kind, change, key, reason", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in CASES])
def test_bad_config_names_file_line_and_key(tmp_path, schema, kind, change, key, reason):
    loader, error, good = SCHEMAS[schema]
    data = copy.deepcopy(good)
    change(data)
    path = tmp_path / "bad.yaml"
    text = yaml.safe_dump(data, sort_keys=False, default_flow_style=False)
    path.write_text(text)
    with pytest.raises(error) as e:
        loader(str(path))
    err = e.value
    assert isinstance(err, SchemaError) and isinstance(err, ValueError)
    msg = str(err)
    assert re.match(rf".*bad\.yaml(:\d+)?: {re.escape(key)}: {re.escape(reason)}", msg), msg
    assert err.key == key and err.source.endswith("bad.yaml") and err.reason.startswith(reason)
    # the line is that of the deepest key or item of the path present in the file (a missing
    # key: its parent's; none for a missing top-level key)
    parts = re.findall(r"[^.\[\]]+", key)
    if kind == "missing required":
        parts = parts[:-1]
    if not parts:
        assert err.line is None, msg
        return
    line = text.splitlines()[err.line - 1]
    if parts[-1].isdigit():
        assert line.lstrip().startswith("- "), (err.line, text)
    else:
        assert re.match(rf"\s*(- )?{re.escape(parts[-1])}:", line), (err.line, text)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_not_a_mapping_and_not_yaml(tmp_path, schema):
    loader, error, _ = SCHEMAS[schema]
    path = tmp_path / "bad.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(error, match=r"bad.yaml: (expected |a profile is )"):
        loader(str(path))
    path.write_text("key: [unclosed\n")
    with pytest.raises(error, match=r"bad.yaml: not valid YAML"):
        loader(str(path))
