"""Strict YAML config of the controller apps (FIFO baseline and prioritised).

Every key is checked at app start (configschema/'s language, spec :data:`CONFIG`); a bad value
stops the app with an error naming the file, the line and the key
(``c.yaml:2: high_workers: must be in 1..64, got 0``). Example (all keys; only ``patterns`` is
required)::

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


from configschema import SchemaError, Spec, load_yaml, validate
from dut.controller.matching import MATCHERS

WORKER_MODES = ("threads", "processes")
INTAKES = ("raw", "osken")
MAX_PATTERN_LEN = 256
OFPP_MAX = 0xFFFFFF00  # OpenFlow 1.3: the highest port number (above: reserved ports)


class ConfigError(SchemaError):
    """A controller config that must not be used; names the file, line and key."""


def _out_port(v) -> str | None:
    if v == "flood" or (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= OFPP_MAX):
        return None
    return f"expected 'flood' or an OpenFlow port number 1..{OFPP_MAX:#x}, got {v!r}"


# Defaults live in ControllerConfig; the spec says what a file may hold (configschema/).
CONFIG = Spec(dict, what="a mapping of keys", fields={
    "matcher": Spec(str, choices=MATCHERS),
    "patterns": Spec(list, required=True, min_len=1, items=Spec(
        str, min_len=1, max_len=MAX_PATTERN_LEN, check=lambda p: None if p.isascii() else
        f"expected an ASCII string, got {p!r}"), convert=lambda ps: tuple(p.encode() for p in ps)),
    "high_workers": Spec(int, ge=1, le=64),
    "high_precedence_min": Spec(int, ge=0, le=7),
    "worker_mode": Spec(str, choices=WORKER_MODES),
    "strict_priority": Spec(bool),
    "low_worker_nice": Spec(int, ge=0, le=19),
    "high_worker_nice": Spec(int, ge=-20, le=19),
    "packet_in_intake": Spec(str, choices=INTAKES),
    "out_port": Spec((str, int), check=_out_port),
    "completion_log": Spec((str, type(None)), min_len=1),
})


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


def parse_config(data, source: str = "<dict>", node=None) -> ControllerConfig:
    """Validate a mapping (already loaded from YAML) into a ControllerConfig; ``node`` (the
    YAML document's node) adds lines to errors."""
    checked = validate(CONFIG, data, source=source, error=ConfigError, node=node)
    return ControllerConfig(**checked, source=source)


def load_config(path: str | Path) -> ControllerConfig:
    """Load and validate a YAML file; errors name the file, the line and the key."""
    data, node = load_yaml(path, ConfigError)
    return parse_config(data if data is not None else {}, source=str(path), node=node)
