"""Strict YAML config of the controller apps (FIFO baseline and prioritised).

Every key is checked at app start; a bad value stops the app with an error naming the file,
the key and its line. Example (all keys; only ``patterns`` is required)::

    matcher: naive            # naive | naive_c | aho_corasick   (dut/controller/matching.py)
    patterns: [ABCDEFGHIJ, ...]   # byte strings (ASCII), each 1..256 bytes
    high_workers: 8           # prioritised app: threads serving the high queue (1 low + N high)
    high_precedence_min: 5    # IP precedence (ToS >> 5) >= this is high priority
    worker_mode: threads      # threads: the document's design (Python threads; search under the
                              #   GIL unless the matcher releases it) | processes: each worker
                              #   thread hands the search to its own search process
    strict_priority: false    # true: the low worker takes a packet only while no high packet
                              #   is queued (false: the document's independent queues)
    low_worker_nice: 0        # processes mode: nice value of the low worker's process (0..19)
    high_worker_nice: 0       # processes mode: nice value of each high worker's process
                              #   (-20..19; below 0 needs root / CAP_SYS_NICE)
    packet_in_intake: raw     # raw: Packet-Ins are taken from os-ken's receive loop as bytes
                              #   (in_port + frame, no message object, no event queue) |
                              #   osken: os-ken's OFPPacketIn event (both apps either way)
    out_port: flood           # Packet-Out destination: flood, or an OpenFlow port number
    completion_log: /path/log.csv  # per-packet timestamps (timing.py); none if unset
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


from dut.controller.matching import MATCHERS
from dut.profiles.yamlfile import load_with_key_lines

WORKER_MODES = ("threads", "processes")
INTAKES = ("raw", "osken")
KEYS = ("matcher", "patterns", "high_workers", "high_precedence_min", "worker_mode",
        "strict_priority", "low_worker_nice", "high_worker_nice", "packet_in_intake", "out_port",
        "completion_log")
MAX_PATTERN_LEN = 256


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class ControllerConfig:
    patterns: tuple[bytes, ...]
    matcher: str = "naive"
    high_workers: int = 1
    high_precedence_min: int = 5
    worker_mode: str = "threads"
    strict_priority: bool = False
    low_worker_nice: int = 0
    high_worker_nice: int = 0
    packet_in_intake: str = "raw"
    out_port: int | str = "flood"
    completion_log: str | None = None
    source: str = field(default="<dict>", compare=False)


def _where(source: str, key: str, lines: dict[str, int]) -> str:
    line = lines.get(key)
    return f"{source}: key '{key}'" + (f" (line {line})" if line else "")


def parse_config(data, source: str = "<dict>", lines: dict[str, int] | None = None
                 ) -> ControllerConfig:
    """Validate a mapping (already loaded from YAML) into a ControllerConfig."""
    lines = lines or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping of keys, got "
                          f"{type(data).__name__}")
    for key in data:
        if key not in KEYS:
            raise ConfigError(f"{_where(source, str(key), lines)}: unknown key "
                              f"(known: {', '.join(KEYS)})")

    def err(key: str, msg: str) -> ConfigError:
        return ConfigError(f"{_where(source, key, lines)}: {msg}, got {data.get(key)!r}")

    def integer(key: str, default: int, lo: int, hi: int) -> int:
        v = data.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise err(key, f"must be an integer in {lo}..{hi}")
        return v

    if "patterns" not in data:
        raise ConfigError(f"{source}: key 'patterns' is required (a non-empty list of strings)")
    pats = data["patterns"]
    if not isinstance(pats, list) or not pats:
        raise err("patterns", "must be a non-empty list of strings")
    patterns = []
    for i, p in enumerate(pats):
        if not isinstance(p, str) or not 1 <= len(p) <= MAX_PATTERN_LEN or not p.isascii():
            raise ConfigError(f"{_where(source, 'patterns', lines)}: item {i} must be an ASCII "
                              f"string of 1..{MAX_PATTERN_LEN} characters, got {p!r}")
        patterns.append(p.encode("ascii"))

    matcher = data.get("matcher", "naive")
    if matcher not in MATCHERS:
        raise err("matcher", f"unknown matcher (known: {', '.join(MATCHERS)})")
    worker_mode = data.get("worker_mode", "threads")
    if worker_mode not in WORKER_MODES:
        raise err("worker_mode", f"must be one of {', '.join(WORKER_MODES)}")
    strict = data.get("strict_priority", False)
    if not isinstance(strict, bool):
        raise err("strict_priority", "must be true or false")
    intake = data.get("packet_in_intake", "raw")
    if intake not in INTAKES:
        raise err("packet_in_intake", f"must be one of {', '.join(INTAKES)}")
    out_port = data.get("out_port", "flood")
    if out_port != "flood" and (isinstance(out_port, bool) or not isinstance(out_port, int)
                                or not 1 <= out_port <= 0xffffff00):
        raise err("out_port", "must be 'flood' or an OpenFlow port number 1..0xffffff00")
    log = data.get("completion_log")
    if log is not None and (not isinstance(log, str) or not log):
        raise err("completion_log", "must be a file path")
    return ControllerConfig(
        patterns=tuple(patterns),
        matcher=matcher,
        high_workers=integer("high_workers", 1, 1, 64),
        high_precedence_min=integer("high_precedence_min", 5, 0, 7),
        worker_mode=worker_mode,
        strict_priority=strict,
        low_worker_nice=integer("low_worker_nice", 0, 0, 19),
        high_worker_nice=integer("high_worker_nice", 0, -20, 19),
        packet_in_intake=intake,
        out_port=out_port,
        completion_log=log,
        source=source,
    )


def load_config(path: str | Path) -> ControllerConfig:
    """Load and validate a YAML file; errors name the file, the key and its line."""
    path = str(path)
    data, lines = load_with_key_lines(path, ConfigError)
    return parse_config(data if data is not None else {}, source=path, lines=lines)
