"""Tenants of the vmwire lab: which guest ports belong to which user (RISE 4.0's slices).

RISE 4.0 identifies a user by the *logical port* its VM is wired to, not by a VLAN, so users
keep every VLAN id for themselves. Here a tenant is a set of named switch ports; the slice
controller (dut/vmwire/slice_app.py) lets a frame entering a port leave only through ports of
the same tenant, whatever its MACs or VLAN tags say.

The profile section (spec :data:`VMWIRE` here, in configschema's language; the profile schema
dut/profiles/schema.py checks it in place, so errors name the profile, line and key path)::

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

The same mapping, with or without the ``vmwire:`` level, is the YAML config of the slice app
(:func:`load_config_file`; errors there also carry the line).

Invariants after validation: port numbers are unique ints in 1..0xfffffeff (OpenFlow 1.3
physical/logical range); every tenant has >= 1 port; every tenant port is a known port; no port
is in two tenants. Ports in no tenant are isolated (they reach nothing).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from configschema import Invalid, SchemaError, Spec, load_yaml, validate

OFPP_MAX = 0xFFFFFF00  # OpenFlow 1.3: port numbers >= this are reserved
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
NAME_WHAT = "a name of 1-32 characters [A-Za-z0-9_-] starting with a letter"
VHOST_MODES = ("client", "server")
KEYS = ("ports", "tenants", "switch_vhost_mode")


class VmwireConfigError(SchemaError):
    """A vmwire section or slice config that must not be used; names file, line and key."""


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


def tenant_checks(section: dict) -> None:
    """Port numbers unique; every tenant port known and in one tenant only."""
    seen_num: dict[int, str] = {}
    for name, num in section["ports"].items():
        if num in seen_num:
            raise Invalid(f"port number {num} is already used by port {seen_num[num]!r}",
                          at=("ports", name))
        seen_num[num] = name
    tenant_of: dict[str, str] = {}
    for tname, members in section["tenants"].items():
        for i, p in enumerate(members):
            if p not in section["ports"]:
                raise Invalid(f"unknown port {p!r} (known ports: "
                              f"{', '.join(sorted(section['ports']))})", at=("tenants", tname, i))
            if p in tenant_of:
                owner = tenant_of[p]
                raise Invalid(f"port {p!r} is already in tenant {owner!r}" if owner != tname
                              else f"port {p!r} is listed twice", at=("tenants", tname, i))
            tenant_of[p] = tname


# The profile's ``vmwire:`` section and the slice app's config (configschema's language).
VMWIRE = Spec(dict, what=f"a mapping with keys {', '.join(KEYS)}", check=tenant_checks, fields={
    "ports": Spec(dict, required=True, min_len=1, keys=Spec(str, pattern=NAME_RE, what=NAME_WHAT),
                  values=Spec(int, ge=1, lt=OFPP_MAX,
                              what=f"an OpenFlow port number 1..{OFPP_MAX - 1}")),
    "tenants": Spec(dict, required=True, min_len=1, keys=Spec(str, pattern=NAME_RE, what=NAME_WHAT),
                    values=Spec(list, min_len=1, items=Spec(str, what="a port name"))),
    "switch_vhost_mode": Spec(str, default="client", choices=VHOST_MODES),
})


def config_from(data: dict) -> VmwireConfig:
    """The VmwireConfig of a section :data:`VMWIRE` has validated."""
    tenants = {t: tuple(ps) for t, ps in data["tenants"].items()}
    tenant_of = {p: t for t, ps in tenants.items() for p in ps}
    return VmwireConfig(dict(data["ports"]), tenants, data["switch_vhost_mode"], tenant_of)


def parse_config(section, where: str, node=None, prefix: tuple = ()) -> VmwireConfig:
    """Validate a vmwire mapping; ``where`` (the file) prefixes every error; ``node``, the
    document's YAML node, adds lines; ``prefix`` is the section's key path in that document."""
    return config_from(validate(VMWIRE, section, source=where, error=VmwireConfigError,
                                node=node, prefix=prefix))


def load_config_file(path: str | Path, spec: Spec = VMWIRE) -> tuple[VmwireConfig, dict]:
    """The slice app's YAML config: the vmwire mapping, top level or under ``vmwire:``.

    ``spec`` is :data:`VMWIRE` or one extended with the caller's keys (the slice app's
    ``capture``). Returns the config and the whole validated mapping."""
    path = Path(path)
    if not path.is_file():
        raise VmwireConfigError.at(str(path), (), "no such vmwire config file")
    data, node = load_yaml(path, VmwireConfigError)
    prefix: tuple = ()
    if isinstance(data, dict) and "vmwire" in data and len(data) == 1:
        data, prefix = data["vmwire"], ("vmwire",)
    checked = validate(spec, data, source=str(path), error=VmwireConfigError, node=node,
                       prefix=prefix)
    return config_from(checked), checked


def write_config_file(cfg: VmwireConfig, path: str | Path) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump(cfg.as_dict(), sort_keys=False))
    return path
