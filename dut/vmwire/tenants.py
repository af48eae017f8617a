"""Tenants of the vmwire lab: which guest ports belong to which user (RISE 4.0's slices).

RISE 4.0 identifies a user by the *logical port* its VM is wired to, not by a VLAN, so users
keep every VLAN id for themselves. Here a tenant is a set of named switch ports; the slice
controller (dut/vmwire/slice_app.py) lets a frame entering a port leave only through ports of
the same tenant, whatever its MACs or VLAN tags say.

The profile section (validated here, called by dut/profiles/schema.py)::

    vmwire:
      ports:                 # logical switch ports that carry a guest: name -> OpenFlow port
        g1: 1
        g2: 2
        g3: 3
      tenants:               # tenant -> its ports (each port in at most one tenant)
        t1: [g1, g2]
        t2: [g3]
      switch_vhost_mode: client   # optional: the switch's vhost-user side, client (default;
                                  # the guest owns the socket and the switch reconnects when
                                  # it restarts) or server

The same mapping, without the ``vmwire:`` level, is the YAML config of the slice app
(:func:`load_config_file`, errors there also carry the line).

Invariants after validation: port numbers are unique ints in 1..0xfffffeff (OpenFlow 1.3
physical/logical range); every tenant has >= 1 port; every tenant port is a known port; no port
is in two tenants. Ports in no tenant are isolated (they reach nothing).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

OFPP_MAX = 0xFFFFFF00  # OpenFlow 1.3: port numbers >= this are reserved
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
VHOST_MODES = ("client", "server")
KEYS = ("ports", "tenants", "switch_vhost_mode")


class VmwireConfigError(ValueError):
    """A vmwire section or slice config that must not be used; names file, key (and line)."""


@dataclass(frozen=True)
class VmwireConfig:
    ports: dict[str, int]
    tenants: dict[str, tuple[str, ...]]
    switch_vhost_mode: str = "client"
    tenant_of: dict[str, str] = field(default_factory=dict, compare=False)

    def tenant_of_ofport(self, ofport: int) -> str | None:
        for name, num in self.ports.items():
            if num == ofport:
                return self.tenant_of.get(name)
        return None

    def ofports_of(self, tenant: str) -> list[int]:
        return [self.ports[p] for p in self.tenants[tenant]]

    def as_dict(self) -> dict:
        return {"ports": dict(self.ports),
                "tenants": {t: list(ps) for t, ps in self.tenants.items()},
                "switch_vhost_mode": self.switch_vhost_mode}


def parse_config(section, where: str, line_of=None, extra_keys: tuple = ()) -> VmwireConfig:
    """Validate a vmwire mapping; ``where`` prefixes every error (file name and section).

    ``line_of(path_tuple) -> int | None`` adds ``(line N)`` to errors when the caller knows it.
    """
    def fail(path: tuple, msg: str):
        key = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in path)
        key = key.replace(".[", "[")
        line = line_of(path) if line_of else None
        at = f" (line {line})" if line else ""
        raise VmwireConfigError(f"{where}: {key}{at}: {msg}" if key else f"{where}{at}: {msg}")

    if not isinstance(section, dict):
        fail((), f"expected a mapping with keys {', '.join(KEYS)}, got {type(section).__name__}")
    for k in section:
        if k not in KEYS and k not in extra_keys:
            fail((k,), f"unknown key (known: {', '.join(KEYS + tuple(extra_keys))})")
    ports_raw = section.get("ports")
    if not isinstance(ports_raw, dict) or not ports_raw:
        fail(("ports",), "required: a non-empty mapping of port name -> OpenFlow port number")
    ports: dict[str, int] = {}
    seen_num: dict[int, str] = {}
    for name, num in ports_raw.items():
        if not isinstance(name, str) or not NAME_RE.match(name):
            fail(("ports", name), "port names are 1-32 characters [A-Za-z0-9_-], starting "
                 "with a letter")
        if isinstance(num, bool) or not isinstance(num, int) or not 1 <= num < OFPP_MAX:
            fail(("ports", name), f"expected an OpenFlow port number 1..{OFPP_MAX - 1}, got "
                 f"{num!r}")
        if num in seen_num:
            fail(("ports", name), f"port number {num} is already used by port "
                 f"{seen_num[num]!r}")
        seen_num[num] = name
        ports[name] = num
    tenants_raw = section.get("tenants")
    if not isinstance(tenants_raw, dict) or not tenants_raw:
        fail(("tenants",), "required: a non-empty mapping of tenant name -> list of ports")
    tenants: dict[str, tuple[str, ...]] = {}
    tenant_of: dict[str, str] = {}
    for tname, members in tenants_raw.items():
        if not isinstance(tname, str) or not NAME_RE.match(tname):
            fail(("tenants", tname), "tenant names are 1-32 characters [A-Za-z0-9_-], "
                 "starting with a letter")
        if not isinstance(members, list) or not members:
            fail(("tenants", tname), "expected a non-empty list of port names")
        for i, p in enumerate(members):
            if p not in ports:
                fail(("tenants", tname, i), f"unknown port {p!r} (known ports: "
                     f"{', '.join(sorted(ports))})")
            if p in tenant_of:
                owner = tenant_of[p]
                fail(("tenants", tname, i), f"port {p!r} is already in tenant {owner!r}" if
                     owner != tname else f"port {p!r} is listed twice")
            tenant_of[p] = tname
        tenants[tname] = tuple(members)
    mode = section.get("switch_vhost_mode", "client")
    if mode not in VHOST_MODES:
        fail(("switch_vhost_mode",), f"expected one of {', '.join(VHOST_MODES)}, got {mode!r}")
    return VmwireConfig(ports, tenants, mode, tenant_of)


def validate_profile_section(section, where: str) -> dict:
    """Hook for dut/profiles/schema.py: validate and return the section (as plain data)."""
    return parse_config(section, where).as_dict()


def load_config_file(path: str | Path, extra_keys: tuple = ()) -> tuple[VmwireConfig, dict]:
    """The slice app's YAML config: the vmwire mapping, top level or under ``vmwire:``.

    Returns the config and the values of ``extra_keys`` found (the caller validates those)."""
    path = Path(path)
    if not path.is_file():
        raise VmwireConfigError(f"{path}: no such vmwire config file")
    text = path.read_text()
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise VmwireConfigError(f"{path}: not valid YAML: {e}") from None
    prefix: tuple = ()
    if isinstance(data, dict) and "vmwire" in data and len(data) == 1:
        data, prefix = data["vmwire"], ("vmwire",)
    cfg = parse_config(data, str(path), line_of=lambda p: _line_of(node, prefix + p),
                       extra_keys=extra_keys)
    return cfg, {k: data[k] for k in extra_keys if k in data}


def _line_of(node, path: tuple) -> int | None:
    """1-based line of the YAML node at ``path`` (keys or list indexes), best effort."""
    line = None
    for key in path:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(key):
                    line, node = k.start_mark.line + 1, v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def write_config_file(cfg: VmwireConfig, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump(cfg.as_dict(), sort_keys=False))
    return path
