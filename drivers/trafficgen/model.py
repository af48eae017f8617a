"""Ports and streams of the generator interface, and their validation.

A Stream is what a user writes (like a TRex STLStream): a packet template (bytes built with
scapy, or a pcap, or a frame size/"imix" to get a UDP template), a rate (pps or % of line
rate), a length (count or duration, or neither = until stop), per-packet field variation
(flows), and whether to measure latency.  validate_streams() turns streams into
ResolvedStreams (templates padded to size, offsets of the varied fields, rate in pps) or
raises StreamError naming the stream and the reason, before any traffic is sent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import frames


class StreamError(ValueError):
    """A stream definition that cannot be run; the message names the stream."""


@dataclass(frozen=True)
class PortInfo:
    name: str
    speed_mbps: float          # line rate used for "% of line rate" and the rate check
    kind: str = "unknown"      # memif, vhost, af_packet, null, ring, pci, trex...


@dataclass(frozen=True)
class FieldVar:
    """Per-packet variation: packet i carries base + (i % count) * step in `field`."""
    field: str                 # one of frames.VARIABLE_FIELDS
    count: int
    step: int = 1


@dataclass
class Stream:
    name: str
    port: str                               # TX port name
    rx_port: str | None = None              # where it should come back (None: any port)
    packet: bytes | None = None             # template without FCS (scapy: bytes(pkt))
    pcap: str | Path | None = None          # replay these frames instead (cycled)
    frame_size: int | str | None = None     # with FCS; "imix"; None: the template's own size
    rate_pps: float | None = None
    rate_percent: float | None = None       # of the TX port's line rate
    count: int | None = None
    duration_s: float | None = None
    flows: int = 1                          # shorthand: vary src_port over `flows` values
    vary: list[FieldVar] = field(default_factory=list)
    latency: bool = False


@dataclass
class ResolvedStream:
    id: int
    name: str
    port: str
    rx_port: str | None
    templates: list[bytes]
    rate_pps: float
    count: int | None
    duration_s: float | None
    vars: list[tuple[int, int, int, int]]   # (offset, length, count, step)
    l3_offset: int | None
    latency: bool
    mean_frame_size: float                  # with FCS
    flows: int


def _err(stream: Stream | None, msg: str) -> StreamError:
    return StreamError(f"stream '{stream.name}': {msg}" if stream else msg)


def _templates(s: Stream) -> list[bytes]:
    if s.packet is not None and s.pcap is not None:
        raise _err(s, "give either packet or pcap, not both")
    if s.pcap is not None:
        try:
            tpls = frames.load_pcap(s.pcap)
        except frames.FrameError as exc:
            raise _err(s, str(exc)) from exc
        if s.frame_size is not None:
            raise _err(s, "frame_size cannot be combined with pcap (the pcap gives the sizes)")
        return tpls
    try:
        if s.frame_size == "imix":
            if s.packet is not None:
                return [_resize(s.packet, size) for size in frames.IMIX_SIZES]
            return frames.imix_frames()
        if s.frame_size is not None and not isinstance(s.frame_size, int):
            raise _err(s, f"frame_size must be an int or 'imix', got {s.frame_size!r}")
        if s.packet is not None:
            return [_resize(s.packet, s.frame_size) if s.frame_size else s.packet]
        if s.frame_size is None:
            raise _err(s, "needs a packet, a pcap or a frame_size")
        return [frames.udp_frame(s.frame_size)]
    except frames.FrameError as exc:
        raise _err(s, str(exc)) from exc


def _resize(pkt: bytes, frame_size: int) -> bytes:
    """Pads (zeros) or truncates a template to frame_size - FCS bytes, fixing IPv4/UDP lengths."""
    if not frames.MIN_FRAME <= frame_size <= frames.MAX_FRAME:
        raise frames.FrameError(f"frame size {frame_size} B outside {frames.MIN_FRAME}..{frames.MAX_FRAME}")
    want = frame_size - frames.FCS_LEN
    if want < frames.headers_end(pkt) + frames.SIG_LEN:
        raise frames.FrameError(f"frame size {frame_size} B is too small for the headers plus the "
                                f"{frames.SIG_LEN} B signature")
    out = bytearray(pkt[:want] + b"\x00" * max(0, want - len(pkt)))
    l3 = frames.l3_offset(bytes(out))
    if l3 is not None:
        import struct

        from scapy.utils import checksum  # the internet checksum (RFC 1071)
        total = want - l3
        struct.pack_into("!H", out, l3 + 2, total)
        struct.pack_into("!H", out, l3 + 10, 0)
        struct.pack_into("!H", out, l3 + 10, checksum(bytes(out[l3:l3 + (out[l3] & 0x0F) * 4])))
        if out[l3 + 9] == 17:
            l4 = l3 + (out[l3] & 0x0F) * 4
            struct.pack_into("!H", out, l4 + 4, total - (out[l3] & 0x0F) * 4)
            struct.pack_into("!H", out, l4 + 6, 0)
    return bytes(out)


def validate_streams(streams: list[Stream], ports: dict[str, PortInfo],
                     max_flows: int = 1 << 24) -> list[ResolvedStream]:
    """Checks every stream against the ports; returns them resolved or raises StreamError."""
    if not isinstance(streams, (list, tuple)) or not streams:
        raise StreamError("no streams given")
    names: set[str] = set()
    out: list[ResolvedStream] = []
    # Total rate per TX port, checked against its line rate once all streams are known.
    per_port_bps: dict[str, float] = {}
    for sid, s in enumerate(streams):
        if not isinstance(s, Stream):
            raise StreamError(f"stream #{sid} is a {type(s).__name__}, not a Stream")
        if not s.name or not isinstance(s.name, str):
            raise StreamError(f"stream #{sid} has no name")
        if s.name in names:
            raise _err(s, "name used twice")
        names.add(s.name)
        known = ", ".join(sorted(ports)) or "(none)"
        if s.port not in ports:
            raise _err(s, f"port '{s.port}' is not one of the profile's ports: {known}")
        if s.rx_port is not None and s.rx_port not in ports:
            raise _err(s, f"rx_port '{s.rx_port}' is not one of the profile's ports: {known}")
        tpls = [frames.fit_for_signature(t) for t in _templates(s)]
        mean_size = sum(len(t) + frames.FCS_LEN for t in tpls) / len(tpls)
        line_pps = frames.line_rate_pps(ports[s.port].speed_mbps, mean_size)
        if (s.rate_pps is None) == (s.rate_percent is None):
            raise _err(s, "give exactly one of rate_pps and rate_percent")
        if s.rate_percent is not None:
            if not 0 < s.rate_percent <= 100:
                raise _err(s, f"rate_percent {s.rate_percent} is not in (0, 100]")
            rate = line_pps * s.rate_percent / 100.0
        else:
            if not isinstance(s.rate_pps, (int, float)) or s.rate_pps <= 0:
                raise _err(s, f"rate_pps {s.rate_pps!r} must be a positive number")
            rate = float(s.rate_pps)
        if s.count is not None and s.duration_s is not None:
            raise _err(s, "give count or duration_s, not both")
        if s.count is not None and (not isinstance(s.count, int) or s.count <= 0):
            raise _err(s, f"count {s.count!r} must be a positive int")
        if s.duration_s is not None and (not isinstance(s.duration_s, (int, float)) or s.duration_s <= 0):
            raise _err(s, f"duration_s {s.duration_s!r} must be positive")
        if not isinstance(s.flows, int) or not 1 <= s.flows <= max_flows:
            raise _err(s, f"flows {s.flows!r} must be an int in 1..{max_flows}")
        vary = list(s.vary)
        if s.flows > 1:
            if any(v.field == "src_port" for v in vary):
                raise _err(s, "flows > 1 varies src_port; do not also list src_port in vary")
            vary.append(FieldVar("src_port", s.flows))
        resolved_vars = []
        for v in vary:
            if not isinstance(v, FieldVar):
                raise _err(s, f"vary entry {v!r} is not a FieldVar")
            if not isinstance(v.count, int) or v.count < 1 or not isinstance(v.step, int):
                raise _err(s, f"vary {v.field}: count must be an int >= 1 and step an int")
            offs = set()
            for t in tpls:
                try:
                    offs.add(frames.field_offset(t, v.field))
                except frames.FrameError as exc:
                    raise _err(s, str(exc)) from exc
            if len(offs) != 1:
                raise _err(s, f"vary {v.field}: the templates put it at different offsets")
            off, ln = offs.pop()
            if v.count > (1 << (8 * ln)):
                raise _err(s, f"vary {v.field}: count {v.count} exceeds a {ln}-byte field")
            resolved_vars.append((off, ln, v.count, v.step))
        l3s = {frames.l3_offset(t) for t in tpls}
        l3 = l3s.pop() if len(l3s) == 1 else None
        per_port_bps[s.port] = per_port_bps.get(s.port, 0.0) + rate * (mean_size + frames.WIRE_OVERHEAD) * 8
        flows = 1
        for v in resolved_vars:
            flows *= v[2]
        out.append(ResolvedStream(id=sid, name=s.name, port=s.port, rx_port=s.rx_port, templates=tpls,
                                  rate_pps=rate, count=s.count, duration_s=s.duration_s,
                                  vars=resolved_vars, l3_offset=l3, latency=bool(s.latency),
                                  mean_frame_size=mean_size, flows=flows))
    for port, bps in per_port_bps.items():
        cap = ports[port].speed_mbps * 1e6
        if bps > cap * 1.000001:
            who = ", ".join(f"'{r.name}'" for r in out if r.port == port)
            raise StreamError(f"port '{port}': streams {who} ask for {bps / 1e6:.1f} Mb/s on the wire, "
                              f"above its line rate {ports[port].speed_mbps:.0f} Mb/s")
    return out
