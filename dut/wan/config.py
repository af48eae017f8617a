"""Strict configuration of WAN apps and paths (source document 002, Tables 2 and 3).

A scenario YAML has two lists, `apps` and `paths` (either may be absent when a file only
describes one side), plus an optional `framing` mapping:

    apps:
      - {name: app1, length_bytes: 1000000, interval_ms: 200, deadline_ms: 1000}
    paths:
      - {name: path1, bandwidth_mbps: 100, delay_ms: 100}
    framing: {udp_payload_bytes: 1472}

The file is checked against :data:`SCENARIO` (configschema/'s language): every error names the
file, the YAML line and the key path (``s.yaml:3: apps[0].lenght_bytes: unknown key (did you
mean 'length_bytes'? ...)``); unknown keys are rejected (a typo must not silently fall back to a
default), as are wrong types, values out of range and two apps or paths of one name.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from pathlib import Path as FsPath
from typing import Any

from configschema import Invalid, SchemaError, Spec, load_yaml, validate


class ConfigError(SchemaError):
    """Bad WAN scenario input; the message names file, line and key path."""


SIZE_DISTRIBUTIONS = ("fixed", "exponential")


@dataclass(frozen=True)
class App:
    """One application D_j: messages of mean length L (bytes) every E ms (mean, exponential)
    that must arrive within F ms (the document's required delay)."""
    name: str
    length_bytes: int
    interval_ms: float
    deadline_ms: float
    size_distribution: str = "fixed"
    udp_port: int | None = None

    def __post_init__(self) -> None:
        if self.length_bytes <= 0:
            raise ConfigError(f"app {self.name}: length_bytes must be > 0, got {self.length_bytes}")
        if not self.interval_ms > 0:
            raise ConfigError(f"app {self.name}: interval_ms must be > 0, got {self.interval_ms}")
        if not self.deadline_ms > 0:
            raise ConfigError(f"app {self.name}: deadline_ms must be > 0, got {self.deadline_ms}")
        if self.size_distribution not in SIZE_DISTRIBUTIONS:
            raise ConfigError(f"app {self.name}: size_distribution must be one of "
                              f"{SIZE_DISTRIBUTIONS}, got {self.size_distribution!r}")

    @property
    def offered_bps(self) -> float:
        """Mean offered load L/E in bit/s (the document's L_k / E_k)."""
        return self.length_bytes * 8.0 / (self.interval_ms / 1000.0)


@dataclass(frozen=True)
class Path:
    """One path R_i: bandwidth W (Mbit/s), one-way transmission delay T (ms), optional loss."""
    name: str
    bandwidth_mbps: float
    delay_ms: float
    loss_pct: float = 0.0

    def __post_init__(self) -> None:
        if not (self.bandwidth_mbps > 0 and math.isfinite(self.bandwidth_mbps)):
            raise ConfigError(f"path {self.name}: bandwidth_mbps must be > 0, got {self.bandwidth_mbps}"
                              " (a path without bandwidth cannot carry any app)")
        if not self.delay_ms >= 0:
            raise ConfigError(f"path {self.name}: delay_ms must be >= 0, got {self.delay_ms}")
        if not 0 <= self.loss_pct < 100:
            raise ConfigError(f"path {self.name}: loss_pct must be in [0, 100), got {self.loss_pct}")

    @property
    def bandwidth_bps(self) -> float:
        return self.bandwidth_mbps * 1e6


@dataclass(frozen=True)
class Framing:
    """How a message becomes frames on the wire (the paper's model ignores this; ours uses it).

    udp_payload_bytes: UDP payload per datagram (1472 for a 1500 B MTU), of which
    app_header_bytes carry the app id / message id / offset header of traces.wan_apps.
    frame_header_bytes: Ethernet 14 + IPv4 20 + UDP 8.
    wire_overhead_bytes: what the emulator's rate limiter charges per frame beyond the frame
    (preamble 8 + FCS 4 + inter-frame gap 12 = 24, like a real Ethernet link).
    """
    udp_payload_bytes: int = 1472
    app_header_bytes: int = 32
    frame_header_bytes: int = 42
    wire_overhead_bytes: int = 24

    def __post_init__(self) -> None:
        if self.udp_payload_bytes <= self.app_header_bytes:
            raise ConfigError("framing: udp_payload_bytes must exceed app_header_bytes")

    @property
    def data_bytes_per_frame(self) -> int:
        return self.udp_payload_bytes - self.app_header_bytes

    def frames(self, length_bytes: int) -> int:
        return max(1, math.ceil(length_bytes / self.data_bytes_per_frame))

    def wire_bytes(self, length_bytes: int) -> int:
        """Bytes the path's rate limiter charges for one message of length_bytes."""
        n = self.frames(length_bytes)
        return length_bytes + n * (self.app_header_bytes + self.frame_header_bytes
                                   + self.wire_overhead_bytes)


@dataclass(frozen=True)
class Scenario:
    apps: tuple[App, ...] = ()
    paths: tuple[Path, ...] = ()
    framing: Framing = field(default_factory=Framing)
    source: str = "<memory>"

    def app(self, name: str) -> App:
        return next(a for a in self.apps if a.name == name)

    def path(self, name: str) -> Path:
        return next(p for p in self.paths if p.name == name)


# --- the file's spec (configschema/); the dataclasses above keep their own invariants for
# objects built in code ------------------------------------------------------------------------

def _finite(v: float) -> str | None:
    return None if math.isfinite(v) else f"must be a finite number, got {v!r}"


def _framing_fits(d: dict) -> None:
    fr = {**_FRAMING_DEFAULTS, **(d or {})}
    if fr["udp_payload_bytes"] <= fr["app_header_bytes"]:
        raise Invalid(f"must exceed app_header_bytes ({fr['app_header_bytes']}), got "
                      f"{fr['udp_payload_bytes']}", at=("udp_payload_bytes",))


_FRAMING_DEFAULTS = {f.name: f.default for f in fields(Framing)}
APP = Spec(dict, fields={
    "name": Spec(str, required=True, min_len=1),
    "length_bytes": Spec(int, required=True, gt=0),
    "interval_ms": Spec(float, required=True, gt=0, check=_finite, convert=float),
    "deadline_ms": Spec(float, required=True, gt=0, check=_finite, convert=float),
    "size_distribution": Spec(str, choices=SIZE_DISTRIBUTIONS),
    "udp_port": Spec(int, ge=1, le=65535),
})
PATH = Spec(dict, fields={
    "name": Spec(str, required=True, min_len=1),
    "bandwidth_mbps": Spec(float, required=True, gt=0, check=_finite, convert=float),
    "delay_ms": Spec(float, required=True, ge=0, check=_finite, convert=float),
    "loss_pct": Spec(float, ge=0, lt=100, convert=float),
})
FRAMING = Spec((dict, type(None)), check=_framing_fits, fields={
    "udp_payload_bytes": Spec(int, ge=1, le=65507),
    "app_header_bytes": Spec(int, ge=0),
    "frame_header_bytes": Spec(int, ge=0),
    "wire_overhead_bytes": Spec(int, ge=0),
})
# `apps:` or `paths:` with nothing after it (YAML null) is an empty list, as before.
SCENARIO = Spec(dict, what="a mapping with keys apps, paths, framing", fields={
    "apps": Spec((list, type(None)), items=APP, unique=("name", "udp_port")),
    "paths": Spec((list, type(None)), items=PATH, unique=("name",)),
    "framing": FRAMING,
})


def parse_scenario(data: Any, source: str = "<memory>", node=None) -> Scenario:
    """Validate a parsed YAML document (dict) into a Scenario; raises ConfigError naming the
    file, the line (when ``node``, the YAML document, is given) and the key path."""
    d = validate(SCENARIO, {} if data is None else data, source=source, error=ConfigError,
                 node=node)
    return Scenario(apps=tuple(App(**a) for a in d.get("apps") or ()),
                    paths=tuple(Path(**p) for p in d.get("paths") or ()),
                    framing=Framing(**(d.get("framing") or {})), source=source)


def load_scenario(path: str | FsPath) -> Scenario:
    data, node = load_yaml(path, ConfigError)
    return parse_scenario(data, str(path), node)
