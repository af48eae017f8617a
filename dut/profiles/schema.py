"""Lab profiles: what a lab is (dut/profiles/<name>.yaml, or a path).

A profile is parsed strictly before anything starts: unknown keys are rejected, types are
checked, required keys are named. Every error is a :class:`ProfileError` whose message names the
file and the dotted key (``lab1.yaml: switch.workers: expected int, got str 'two'``), so a
typo in a 40-line lab file costs seconds, not a wasted night run.

Sections owned by one system (``vmwire``, ``wan``) are validated by that system's module, named
in ``SECTION_VALIDATORS``; the schema here only checks they are mappings and delegates.

Schema version 1 (``schema_version: 1``)::

    schema_version: 1
    name: str                      # defaults to the file's stem
    description: str
    lab: {kind: local | remote, emulated: bool, known_hosts: str, state_dir: str,
          hosts: {<role>: {address, user, ssh_port, key_file, workdir}}}
                                   # remote: each role (switch, controller, generator) a host
                                   # reached over SSH; workdir = its ofbench tree (synced and
                                   # built there); emulated: the harness builds the hosts as
                                   # namespaces with sshd on this box (drivers/lab/emulated.py)
    features: [str]                # from FEATURES; tests declare what they need
    switch: {kind: ofbench|ovs|ovs-dpdk, workers: int, cores: str, lookup: str, host: <role>,
             busy_poll: bool,        # idle workers spin (dedicated cores) instead of sleeping
             fail_mode: secure|standalone,  # ofbench with no controller (default secure)
             ports: {<name>: {devargs: str, speed_gbps: num, pci: str}}}
    peers: [ofbench|ovs|ovs-dpdk]  # switches measured side by side with `switch`
    controller: {host: str, port: int}            # port 0 = pick a free one per run
    generator: {kind: softgen|trex, server: str, sync_port: int, async_port: int, cores: str,
                low_end: bool, limit_memory_mb: int,
                ports: {<name>: {devargs: str, speed_gbps: num, trex_port: int}}}
               # trex: server "local" = the lab starts a TRex server on this box (cores: its
               # CPUs, "1" with low_end: true, "<master>,<rx>,<dp>..." without); an address =
               # a running server
    links: [{generator: <generator port>, switch: <switch port>}]
    targets: {<suite>: {<test name>: {<metric>: "<op> <number>"}}}
    influx: {url: str, token: str, org: str, bucket: str}
    vmwire: {...}   wan: {...}
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROFILE_DIR = Path(__file__).resolve().parent
SCHEMA_VERSION = 1

SWITCH_KINDS = ("ofbench", "ovs", "ovs-dpdk")
# ofbench's flow lookup: one default for the profile, the launcher and the C binary.
SWITCH_LOOKUPS = ("trie", "simple")
DEFAULT_LOOKUP = "trie"
GENERATOR_KINDS = ("softgen", "trex")
LAB_KINDS = ("local", "remote")
FEATURES = {
    "netns": "network namespaces and veth pairs on the local box",
    "hugepages": "2 MB hugepages with a hugetlbfs mount",
    "softgen": "the ofbench DPDK generator",
    "trex": "a reachable TRex server",
    "line_rate_nic": "physical NICs that reach 10GbE line rate",
    "kvm": "usable KVM for QEMU guests",
    "vm_guests": "QEMU guests can be started (TCG or KVM)",
    "ovs": "Open vSwitch userspace (netdev datapath)",
    "ovs_dpdk": "Open vSwitch with DPDK",
    "influxdb": "an InfluxDB server for results",
    "wanem": "the user-space WAN emulator",
}
TARGET_RE = re.compile(r"^\s*(>=|<=|>|<|==)\s*(-?\d+(\.\d+)?([eE][-+]?\d+)?)\s*$")

# Sections owned by a system, validated by "module:function(section, where) -> section".
SECTION_VALIDATORS = {
    "vmwire": "dut.vmwire.tenants:validate_profile_section",
    "wan": "dut.wan.config:validate_profile_section",
}


class ProfileError(ValueError):
    """A profile that must not be used. The message names the file and the key."""


# ---- a tiny strict schema language: dict specs with types, required keys, enums ------------
class Spec:
    def __init__(self, kind, *, required=False, default=None, choices=None, fields=None,
                 items=None, values=None, check=None):
        self.kind, self.required, self.default = kind, required, default
        self.choices, self.fields, self.items, self.values = choices, fields, items, values
        self.check = check


_TYPE_NAMES = {str: "str", int: "int", float: "number", bool: "bool", dict: "mapping",
               list: "list"}


def _type_ok(kind, value) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _validate(spec: Spec, value: Any, key: str, fail) -> Any:
    if not _type_ok(spec.kind, value):
        fail(key, f"expected {_TYPE_NAMES[spec.kind]}, got {type(value).__name__} {value!r}")
    if spec.choices is not None and value not in spec.choices:
        fail(key, f"{value!r} is not one of {', '.join(map(str, spec.choices))}")
    if spec.kind is dict and spec.fields is not None:
        out = {}
        for k in value:
            if k not in spec.fields:
                fail(f"{key}.{k}" if key else str(k),
                     f"unknown key (allowed: {', '.join(sorted(spec.fields))})")
        for k, sub in spec.fields.items():
            sub_key = f"{key}.{k}" if key else k
            if k in value:
                out[k] = _validate(sub, value[k], sub_key, fail)
            elif sub.required:
                fail(sub_key, "required key is missing")
            elif sub.default is not None:
                out[k] = sub.default() if callable(sub.default) else sub.default
        value = out
    elif spec.kind is dict and spec.values is not None:
        value = {k: _validate(spec.values, v, f"{key}.{k}", fail) for k, v in value.items()}
    elif spec.kind is list and spec.items is not None:
        value = [_validate(spec.items, v, f"{key}[{i}]", fail) for i, v in enumerate(value)]
    if spec.check is not None:
        problem = spec.check(value)
        if problem:
            fail(key, problem)
    return value


def _check_target(expr: str) -> str | None:
    return None if TARGET_RE.match(expr) else (
        f"bad target {expr!r}: write '<op> <number>' with op one of >= <= > < ==")


def _check_port(p: int) -> str | None:
    return None if 0 <= p <= 65535 else f"port {p} out of range 0..65535"


HOST = Spec(dict, fields={
    "address": Spec(str, required=True),
    "user": Spec(str, default="root"),
    "ssh_port": Spec(int, default=22, check=_check_port),
    "key_file": Spec(str),
    "workdir": Spec(str, default="/opt/ofbench"),
})
PORT = Spec(dict, fields={
    "devargs": Spec(str),
    "pci": Spec(str),
    "speed_gbps": Spec(float),
    "trex_port": Spec(int),
})
PROFILE = Spec(dict, fields={
    "schema_version": Spec(int, required=True, choices=(SCHEMA_VERSION,)),
    "name": Spec(str),
    "description": Spec(str, default=""),
    "lab": Spec(dict, required=True, fields={
        "kind": Spec(str, required=True, choices=LAB_KINDS),
        "hosts": Spec(dict, values=HOST),
        "state_dir": Spec(str),
        "known_hosts": Spec(str),
        "emulated": Spec(bool, default=False),
    }),
    "features": Spec(list, default=list, items=Spec(str, choices=tuple(sorted(FEATURES)))),
    "switch": Spec(dict, required=True, fields={
        "kind": Spec(str, required=True, choices=SWITCH_KINDS),
        "workers": Spec(int, default=1, check=lambda n: None if n >= 1 else "must be >= 1"),
        "cores": Spec(str),
        "lookup": Spec(str, default=DEFAULT_LOOKUP, choices=SWITCH_LOOKUPS),
        "host": Spec(str),
        "busy_poll": Spec(bool, default=False),
        # ofbench with no controller connected (OF1.3.5 6.4): secure keeps the flow tables
        # and drops what needs a controller; standalone forwards as a learning switch
        # (drivers/lab/switches.py passes it to ofbench, and to OVS as the profile's switch)
        "fail_mode": Spec(str, choices=("secure", "standalone")),
        "ports": Spec(dict, values=PORT),
    }),
    "peers": Spec(list, default=list, items=Spec(str, choices=SWITCH_KINDS)),
    "controller": Spec(dict, default=lambda: {"host": "127.0.0.1", "port": 0}, fields={
        "host": Spec(str, default="127.0.0.1"),
        "port": Spec(int, default=0, check=_check_port),
    }),
    "generator": Spec(dict, default=lambda: {"kind": "softgen"}, fields={
        "kind": Spec(str, required=True, choices=GENERATOR_KINDS),
        "host": Spec(str),
        "server": Spec(str),
        "sync_port": Spec(int, check=_check_port),
        "async_port": Spec(int, check=_check_port),
        "cores": Spec(str),
        "low_end": Spec(bool),
        "limit_memory_mb": Spec(int, check=lambda n: None if n >= 64 else "must be >= 64"),
        "ports": Spec(dict, values=PORT),
    }),
    "links": Spec(list, default=list, items=Spec(dict, fields={
        "generator": Spec(str, required=True),
        "switch": Spec(str, required=True),
        "speed_gbps": Spec(float),
    })),
    "targets": Spec(dict, default=dict, values=Spec(dict, values=Spec(dict, values=Spec(
        str, check=_check_target)))),
    "influx": Spec(dict, fields={
        "url": Spec(str, required=True),
        "token": Spec(str, default="-"),
        "org": Spec(str, default="-"),
        "bucket": Spec(str, default="ofbench/autogen"),
    }),
    "vmwire": Spec(dict),
    "wan": Spec(dict),
})


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    data: dict

    @property
    def features(self) -> frozenset[str]:
        return frozenset(self.data["features"])

    @property
    def lab_kind(self) -> str:
        return self.data["lab"]["kind"]

    @property
    def switch(self) -> dict:
        return self.data["switch"]

    @property
    def switch_kinds(self) -> list[str]:
        """The profile's switch first, then its peers (deduplicated): what suites compare."""
        kinds = [self.data["switch"]["kind"]]
        kinds += [p for p in self.data["peers"] if p not in kinds]
        return kinds

    @property
    def peers(self) -> list[str]:
        return list(self.data["peers"])

    @property
    def generator(self) -> dict:
        return self.data["generator"]

    @property
    def controller(self) -> dict:
        return self.data["controller"]

    @property
    def targets(self) -> dict:
        return self.data["targets"]

    def section(self, name: str) -> dict:
        return self.data.get(name) or {}

    def has(self, *features: str) -> bool:
        return set(features) <= self.features


def resolve_path(name_or_path: str) -> Path:
    """``local`` -> dut/profiles/local.yaml; anything with a slash or .yaml is a path."""
    if "/" in name_or_path or name_or_path.endswith((".yaml", ".yml")):
        return Path(name_or_path).expanduser().resolve()
    return PROFILE_DIR / f"{name_or_path}.yaml"


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def load_profile(name_or_path: str) -> Profile:
    path = resolve_path(name_or_path)
    where = path.name if path.parent == PROFILE_DIR else str(path)
    if not path.is_file():
        hint = f" (known profiles: {', '.join(available_profiles())})" if "/" not in name_or_path else ""
        raise ProfileError(f"{where}: no such profile file{hint}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ProfileError(f"{where}: not valid YAML: {e}") from None
    return parse_profile(raw, where=where, path=path)


def parse_profile(raw: Any, *, where: str, path: Path | None = None) -> Profile:
    def fail(key, msg):
        raise ProfileError(f"{where}: {key}: {msg}" if key else f"{where}: {msg}")

    if not isinstance(raw, dict):
        fail("", f"a profile is a mapping of keys, got {type(raw).__name__}")
    data = _validate(PROFILE, raw, "", fail)
    _cross_checks(data, fail)
    for section, target in SECTION_VALIDATORS.items():
        if section in data:
            data[section] = _delegate(target, data[section], f"{where}: {section}", fail, section)
    name = data.get("name") or (path.stem if path else "profile")
    data["name"] = name
    return Profile(name=name, path=path or Path(where), data=data)


def _cross_checks(data: dict, fail) -> None:
    lab = data["lab"]
    if lab["kind"] == "remote" and not lab.get("hosts"):
        fail("lab.hosts", "a remote lab needs its hosts (e.g. switch, controller, trex)")
    if lab.get("emulated") and lab["kind"] != "remote":
        fail("lab.emulated", "only a remote lab (lab.kind: remote) is emulated")
    hosts = lab.get("hosts") or {}
    for section in ("switch", "generator"):
        role = data[section].get("host")
        if role and hosts and role not in hosts:
            fail(f"{section}.host", f"{role!r} is not a host in lab.hosts "
                 f"(known: {', '.join(hosts)})")
    gen = data["generator"]
    if gen["kind"] == "trex" and "server" not in gen:
        fail("generator.server", "required key is missing for generator.kind trex")
    sw_ports = data["switch"].get("ports") or {}
    gen_ports = gen.get("ports") or {}
    for section, ports in (("switch", sw_ports), ("generator", gen_ports)):
        for name, port in ports.items():
            if port.get("devargs") and port.get("pci"):
                fail(f"{section}.ports.{name}", "give devargs (a DPDK vdev) or pci (a NIC), "
                     "not both")
    for i, link in enumerate(data["links"]):
        if not gen_ports or not sw_ports:
            fail(f"links[{i}]", "links join generator.ports to switch.ports: both sections "
                 "need their ports")
        if link["generator"] not in gen_ports:
            fail(f"links[{i}].generator", f"no generator port {link['generator']!r} "
                 f"(known: {', '.join(gen_ports)})")
        if link["switch"] not in sw_ports:
            fail(f"links[{i}].switch", f"no switch port {link['switch']!r} "
                 f"(known: {', '.join(sw_ports)})")
    if data["switch"]["kind"] in data["peers"]:
        fail("peers", f"{data['switch']['kind']!r} is already the profile's switch")


def _delegate(target: str, section: dict, where: str, fail, key: str) -> dict:
    mod_name, func_name = target.split(":")
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError:
        return section  # that system is not built yet: its section stays as written
    func = getattr(mod, func_name, None)
    if func is None:
        return section
    try:
        return func(section, where)
    except ValueError as e:
        msg = str(e)
        if msg.startswith(where):
            raise ProfileError(msg) from None
        fail(key, msg)
