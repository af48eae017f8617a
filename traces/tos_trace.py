"""ToS-priority traces of document 000: YAML + seed -> pcap + sidecar JSON of provenance.

One trace = ``packets_high`` frames with IP precedence ``high_precedence`` and ``packets_low``
with ``low_precedence`` (document: 500 + 500, precedence 5 and 0), every one an IPv4/TCP
packet of ``ip_bytes`` (document: 1500 B, TCP payload 1448 B: 20 B IP + 32 B TCP with the
timestamp option + 1448 B), in one of three orders: ``high_low``, ``low_high``, ``random``.

Payload search work is real and known: ``pattern_count`` patterns of ``pattern_len`` bytes are
drawn from ``pattern_seed`` (upper-case letters, all distinct); a fraction ``match_fraction``
of the packets carries ``occurrences`` of them at random positions, separated by filler bytes
drawn from lower-case letters and digits, so no pattern can occur by accident or across a
boundary and each packet's expected match count is exact (sidecar ``expected_matches``).
The IP id of a packet is its index in the trace, which is how the controller's log and the
receiver identify it.

Example YAML (every key; spec :data:`TRACE` in configschema/'s language: an unknown key, a
wrong type or a value out of range is an error naming the file, line and key)::

    name: random
    seed: 6
    order: random             # high_low | low_high | random
    packets_high: 500
    packets_low: 500
    high_precedence: 5
    low_precedence: 0
    ip_bytes: 1500
    pattern_count: 20
    pattern_len: 10
    pattern_seed: 1
    match_fraction: 0.5
    occurrences: 1
    src_mac: "02:00:00:00:06:01"
    dst_mac: "02:00:00:00:06:02"
    src_ip: 10.66.0.1
    dst_ip: 10.66.0.2
    sport: 40000
    dport: 5001

CLI: ``python -m traces.tos_trace traces/controller/random.yaml --out traces/out
[--set pattern_count=50]`` prints the pcap path.
"""
from __future__ import annotations

import argparse
import hashlib
import ipaddress
import json
import random
import re
import string
import struct
import sys
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path

import yaml
from scapy.utils import checksum  # the internet checksum (RFC 1071)

from configschema import Invalid, SchemaError, Spec, load_yaml, validate
from traces.pcap import write_pcap

GENERATOR = "traces.tos_trace/1"
ORDERS = ("high_low", "low_high", "random")
ETH_HLEN = 14
IP_HLEN = 20
TCP_HLEN = 32  # 20 + NOP NOP TIMESTAMP (12): the document's 1500 B packet carries 1448 B
PATTERN_ALPHABET = string.ascii_uppercase
FILLER_ALPHABET = (string.ascii_lowercase + string.digits).encode()
# random byte -> filler byte (256 % 36 != 0: a slight bias towards the first 4, harmless)
FILLER_TABLE = bytes(FILLER_ALPHABET[i % len(FILLER_ALPHABET)] for i in range(256))
MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


class TraceSpecError(SchemaError):
    """A trace spec that must not be used; names the file, line and key."""


@dataclass(frozen=True)
class TraceSpec:
    name: str
    seed: int
    order: str
    packets_high: int = 500
    packets_low: int = 500
    high_precedence: int = 5
    low_precedence: int = 0
    ip_bytes: int = 1500
    pattern_count: int = 20
    pattern_len: int = 10
    pattern_seed: int = 1
    match_fraction: float = 0.5
    occurrences: int = 1
    src_mac: str = "02:00:00:00:06:01"
    dst_mac: str = "02:00:00:00:06:02"
    src_ip: str = "10.66.0.1"
    dst_ip: str = "10.66.0.2"
    sport: int = 40000
    dport: int = 5001

    @property
    def payload_bytes(self) -> int:
        return self.ip_bytes - IP_HLEN - TCP_HLEN

    @property
    def packets(self) -> int:
        return self.packets_high + self.packets_low


def _ipv4(v: str) -> str | None:
    try:
        ipaddress.IPv4Address(v)
    except ValueError:
        return f"expected an IPv4 address, got {v!r}"
    return None


def _fits(d: dict) -> None:
    """What no single key can say (every key is present: defaults are filled in)."""
    if d["packets_high"] + d["packets_low"] > 65536:
        raise Invalid("packets_high + packets_low must be <= 65536 (the IP id numbers the "
                      "packets)", at=("packets_low",))
    if d["pattern_count"] > 26 ** d["pattern_len"] // 2:
        raise Invalid(f"too many distinct patterns of length {d['pattern_len']}, got "
                      f"{d['pattern_count']}", at=("pattern_count",))
    payload = d["ip_bytes"] - IP_HLEN - TCP_HLEN
    if d["match_fraction"] > 0 and d["occurrences"] * (d["pattern_len"] + 1) > payload:
        raise Invalid(f"{d['occurrences']} patterns of {d['pattern_len']} B do not fit in a "
                      f"{payload} B payload", at=("occurrences",))


MAC = dict(pattern=MAC_RE, what="a MAC address like 02:00:00:00:06:01")
# The spec of a trace YAML (configschema/); defaults are TraceSpec's, filled in below.
TRACE = Spec(dict, what="a mapping of keys", check=_fits, fields={
    "name": Spec(str, required=True, pattern=r"[A-Za-z0-9_.-]+",
                 what="a word of letters, digits, _ . -"),
    "seed": Spec(int, required=True, ge=0, le=2**63),
    "order": Spec(str, required=True, choices=ORDERS),
    "packets_high": Spec(int, ge=0, le=65535),
    "packets_low": Spec(int, ge=0, le=65535),
    "high_precedence": Spec(int, ge=0, le=7),
    "low_precedence": Spec(int, ge=0, le=7),
    "ip_bytes": Spec(int, ge=IP_HLEN + TCP_HLEN + 1, le=9000),
    "pattern_count": Spec(int, ge=1, le=4096),
    "pattern_len": Spec(int, ge=1, le=256),
    "pattern_seed": Spec(int, ge=0, le=2**63),
    "match_fraction": Spec(float, ge=0, le=1),
    "occurrences": Spec(int, ge=0, le=64),
    "src_mac": Spec(str, **MAC),
    "dst_mac": Spec(str, **MAC),
    "src_ip": Spec(str, check=_ipv4),
    "dst_ip": Spec(str, check=_ipv4),
    "sport": Spec(int, ge=1, le=65535),
    "dport": Spec(int, ge=1, le=65535),
})
for _f in fields(TraceSpec):
    if _f.default is not MISSING:
        TRACE.fields[_f.name].default = _f.default


def parse_spec(data, source: str = "<dict>", node=None, overrides: dict | None = None
               ) -> TraceSpec:
    """Validate a mapping into a TraceSpec; ``node`` (the YAML document) adds lines to errors;
    ``overrides`` (the CLI's --set) replace keys before validation."""
    if isinstance(data, dict):
        data = {**data, **(overrides or {})}
    return TraceSpec(**validate(TRACE, data, source=source, error=TraceSpecError, node=node))


def load_spec(path: str | Path, overrides: dict | None = None) -> TraceSpec:
    data, node = load_yaml(path, TraceSpecError)
    return parse_spec(data, str(path), node, overrides)


def patterns_for(count: int, length: int, seed: int) -> list[str]:
    """``count`` distinct upper-case patterns; the first k are the same for any count >= k."""
    rnd = random.Random(f"patterns/{seed}/{length}")
    out: list[str] = []
    seen = set()
    while len(out) < count:
        p = "".join(rnd.choice(PATTERN_ALPHABET) for _ in range(length))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def class_order(spec: TraceSpec) -> list[str]:
    classes = ["high"] * spec.packets_high + ["low"] * spec.packets_low
    if spec.order == "low_high":
        classes = ["low"] * spec.packets_low + ["high"] * spec.packets_high
    elif spec.order == "random":
        random.Random(f"order/{spec.seed}").shuffle(classes)
    return classes


def build_frame(spec: TraceSpec, ip_id: int, precedence: int, payload: bytes) -> bytes:
    """Ethernet + IPv4 (ToS = precedence << 5, DF) + TCP (PSH|ACK, timestamps) + payload."""
    src_ip = ipaddress.IPv4Address(spec.src_ip).packed
    dst_ip = ipaddress.IPv4Address(spec.dst_ip).packed
    ip_hdr = struct.pack("!BBHHHBBH4s4s", 0x45, precedence << 5, spec.ip_bytes, ip_id,
                         0x4000, 64, 6, 0, src_ip, dst_ip)
    ip_hdr = ip_hdr[:10] + struct.pack("!H", checksum(ip_hdr)) + ip_hdr[12:]
    opts = b"\x01\x01\x08\x0a" + struct.pack("!II", 1000 + ip_id, 0)
    seq = 1 + ip_id * len(payload)
    tcp = struct.pack("!HHIIBBHHH", spec.sport, spec.dport, seq & 0xFFFFFFFF, 1,
                      (TCP_HLEN // 4) << 4, 0x18, 65535, 0, 0) + opts
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 6, len(tcp) + len(payload))
    csum = checksum(pseudo + tcp + payload)
    tcp = tcp[:16] + struct.pack("!H", csum) + tcp[18:]
    eth = bytes.fromhex(spec.dst_mac.replace(":", "")) + \
        bytes.fromhex(spec.src_mac.replace(":", "")) + b"\x08\x00"
    return eth + ip_hdr + tcp + payload


def build_payload(spec: TraceSpec, rnd: random.Random, patterns: list[str],
                  with_match: bool) -> tuple[bytes, int]:
    """Filler with ``occurrences`` patterns at random non-adjacent spots; returns (payload,
    expected match count)."""
    n = spec.payload_bytes
    buf = bytearray(rnd.randbytes(n).translate(FILLER_TABLE))
    if not with_match or spec.occurrences == 0:
        return bytes(buf), 0
    plen = spec.pattern_len
    slots = n // (plen + 1)  # slot k covers [k*(plen+1), k*(plen+1)+plen): a filler byte between
    for k in rnd.sample(range(slots), spec.occurrences):
        pat = rnd.choice(patterns).encode()
        buf[k * (plen + 1):k * (plen + 1) + plen] = pat
    return bytes(buf), spec.occurrences


def build_trace(spec: TraceSpec) -> tuple[list[bytes], dict]:
    """Frames and the sidecar metadata (without file hashes). Pure: same spec, same bytes."""
    rnd = random.Random(f"payload/{spec.seed}")
    patterns = patterns_for(spec.pattern_count, spec.pattern_len, spec.pattern_seed)
    classes = class_order(spec)
    frames, expected = [], []
    for ip_id, klass in enumerate(classes):
        prec = spec.high_precedence if klass == "high" else spec.low_precedence
        payload, m = build_payload(spec, rnd, patterns, rnd.random() < spec.match_fraction)
        frames.append(build_frame(spec, ip_id, prec, payload))
        expected.append(m)
    meta = {
        "generator": GENERATOR,
        "spec": asdict(spec),
        "patterns": patterns,
        "classes": classes,
        "expected_matches": expected,
        "frame_bytes": ETH_HLEN + spec.ip_bytes,
        "tcp_payload_bytes": spec.payload_bytes,
    }
    return frames, meta


def trace_basename(spec: TraceSpec) -> str:
    return f"{spec.name}_{spec.pattern_count}pat_s{spec.seed}"


def write_trace(spec: TraceSpec, out_dir: str | Path, source: str | None = None
                ) -> tuple[Path, Path]:
    """Write <out>/<name>_<N>pat_s<seed>.pcap and .json; returns both paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frames, meta = build_trace(spec)
    base = trace_basename(spec)
    pcap, side = out / f"{base}.pcap", out / f"{base}.json"
    write_pcap(pcap, frames)
    meta["source_yaml"] = source
    meta["pcap"] = pcap.name
    meta["pcap_sha256"] = hashlib.sha256(pcap.read_bytes()).hexdigest()
    side.write_text(json.dumps(meta, indent=1))
    return pcap, side


def _parse_set(items: list[str]) -> dict:
    out = {}
    for it in items:
        k, _, v = it.partition("=")
        out[k] = yaml.safe_load(v)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m traces.tos_trace")
    p.add_argument("yaml")
    p.add_argument("--out", default="traces/out")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    try:
        spec = load_spec(args.yaml, _parse_set(args.set))
    except TraceSpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    pcap, _ = write_trace(spec, args.out, source=args.yaml)
    print(pcap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
