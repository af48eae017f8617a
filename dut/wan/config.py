"""Strict configuration of WAN apps and paths (source document 002, Tables 2 and 3).

A scenario YAML has two lists, `apps` and `paths` (either may be absent when a file only
describes one side), plus an optional `framing` mapping:

    apps:
      - {name: app1, length_bytes: 1000000, interval_ms: 200, deadline_ms: 1000}
    paths:
      - {name: path1, bandwidth_mbps: 100, delay_ms: 100}
    framing: {udp_payload_bytes: 1472}

Every error names the file, the entry, the key and the YAML line, and unknown keys are
rejected (a typo such as `lenght_bytes` must not silently fall back to a default).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

import yaml


class ConfigError(ValueError):
    """Bad WAN scenario input; the message names file, entry, key and line."""


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


# --- YAML with line numbers -----------------------------------------------------------------

class _LineDict(dict):
    line: int = 0


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _LineDict:
    d = _LineDict(loader.construct_mapping(node, deep=True))
    d.line = node.start_mark.line + 1
    return d


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

_APP_KEYS = {"name": str, "length_bytes": int, "interval_ms": float, "deadline_ms": float,
             "size_distribution": str, "udp_port": int}
_APP_REQUIRED = ("name", "length_bytes", "interval_ms", "deadline_ms")
_PATH_KEYS = {"name": str, "bandwidth_mbps": float, "delay_ms": float, "loss_pct": float}
_PATH_REQUIRED = ("name", "bandwidth_mbps", "delay_ms")
_FRAMING_KEYS = {"udp_payload_bytes": int, "app_header_bytes": int, "frame_header_bytes": int,
                 "wire_overhead_bytes": int}
_TOP_KEYS = ("apps", "paths", "framing")


def _where(src: str, what: str, d: Any) -> str:
    line = getattr(d, "line", 0)
    return f"{src}: {what}" + (f" (line {line})" if line else "")


def _typed(src: str, what: str, d: dict, schema: dict, required: tuple[str, ...]) -> dict:
    if not isinstance(d, dict):
        raise ConfigError(f"{src}: {what} must be a mapping, got {type(d).__name__}")
    unknown = sorted(set(d) - set(schema))
    if unknown:
        raise ConfigError(f"{_where(src, what, d)}: unknown key {unknown[0]!r} "
                          f"(allowed: {', '.join(schema)})")
    missing = [k for k in required if k not in d]
    if missing:
        raise ConfigError(f"{_where(src, what, d)}: missing key {missing[0]!r}")
    out = {}
    for k, v in d.items():
        want = schema[k]
        if want is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if not isinstance(v, want) or isinstance(v, bool):
            raise ConfigError(f"{_where(src, what, d)}: key {k!r} must be {want.__name__}, got {v!r}")
        out[k] = v
    return out


def _wrap(src: str, what: str, d: Any, fn):
    try:
        return fn()
    except ConfigError as e:
        raise ConfigError(f"{_where(src, what, d)}: {e}") from None


def parse_scenario(data: Any, source: str = "<memory>") -> Scenario:
    """Validate a parsed YAML document (dict) into a Scenario; raises ConfigError."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping with keys {_TOP_KEYS}")
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown top-level key {unknown[0]!r} (allowed: {', '.join(_TOP_KEYS)})")
    apps: list[App] = []
    for i, d in enumerate(data.get("apps") or []):
        what = f"apps[{i}]"
        kw = _typed(source, what, d, _APP_KEYS, _APP_REQUIRED)
        apps.append(_wrap(source, what, d, lambda kw=kw: App(**kw)))
    paths: list[Path] = []
    for i, d in enumerate(data.get("paths") or []):
        what = f"paths[{i}]"
        kw = _typed(source, what, d, _PATH_KEYS, _PATH_REQUIRED)
        paths.append(_wrap(source, what, d, lambda kw=kw: Path(**kw)))
    for kind, items in (("app", apps), ("path", paths)):
        names = [x.name for x in items]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigError(f"{source}: duplicate {kind} name {dup[0]!r}")
    ports = [a.udp_port for a in apps if a.udp_port is not None]
    if len(ports) != len(set(ports)):
        raise ConfigError(f"{source}: two apps share one udp_port; steering needs one port per app")
    fr = data.get("framing") or {}
    fkw = _typed(source, "framing", fr, _FRAMING_KEYS, ())
    framing = _wrap(source, "framing", fr, lambda: Framing(**fkw))
    return Scenario(apps=tuple(apps), paths=tuple(paths), framing=framing, source=source)


def load_scenario(path: str | FsPath) -> Scenario:
    path = FsPath(path)
    try:
        data = yaml.load(path.read_text(), Loader=_LineLoader)  # noqa: S506 (SafeLoader subclass)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {e}") from None
    return parse_scenario(data, str(path))
