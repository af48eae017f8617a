"""Packet templates for streams: UDP/IPv4 frames of a given size, IMIX, pcap loading, and the
byte offsets of the fields a stream may vary.  Frame sizes here include the 4 B FCS (RFC 2544
convention: a "64 B frame" is 60 B of data handed to the port)."""
from __future__ import annotations

import struct
from pathlib import Path

FCS_LEN = 4
SIG_LEN = 18           # softgen signature at the end of every frame (softgen.h)
MIN_FRAME = 64
MAX_FRAME = 9018
WIRE_OVERHEAD = 20     # preamble + SFD + inter-frame gap, per frame on an Ethernet wire
RFC2544_SIZES = (64, 128, 256, 512, 1024, 1280, 1518)
# IMIX as CSIT's IMIX_v4_1: 64 B x7, 570 B x4, 1518 B x1 (templates cycled in this order).
IMIX_SIZES = (64,) * 7 + (570,) * 4 + (1518,)

VARIABLE_FIELDS = ("src_ip", "dst_ip", "src_port", "dst_port")


class FrameError(ValueError):
    """A packet template that cannot be used (names the reason)."""


def udp_frame(frame_size: int, *, src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:02",
              src_ip="10.0.0.1", dst_ip="10.1.0.1", sport=1024, dport=1024,
              vlan: int | None = None, tos: int = 0) -> bytes:
    """Ethernet/IPv4/UDP frame of frame_size bytes including FCS (so returns frame_size - 4 B).
    UDP checksum 0 (allowed for IPv4) so per-packet field variation needs no L4 checksum."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1Q, Ether
    if not MIN_FRAME <= frame_size <= MAX_FRAME:
        raise FrameError(f"frame size {frame_size} B outside {MIN_FRAME}..{MAX_FRAME}")
    l2 = Ether(src=src_mac, dst=dst_mac)
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    hdr = l2 / IP(src=src_ip, dst=dst_ip, tos=tos, ttl=64) / UDP(sport=sport, dport=dport, chksum=0)
    pad = frame_size - FCS_LEN - len(hdr)
    if pad < SIG_LEN:
        raise FrameError(f"frame size {frame_size} B leaves {pad} B payload, signature needs {SIG_LEN}")
    pkt = hdr / (b"\x00" * pad)
    return bytes(pkt)


def l3_offset(pkt: bytes) -> int | None:
    """Offset of the IPv4 header, or None when the frame is not IPv4 (VLAN tags skipped)."""
    off = 12
    while off + 2 <= len(pkt):
        ethertype = struct.unpack_from("!H", pkt, off)[0]
        if ethertype in (0x8100, 0x88A8):
            off += 4
            continue
        if ethertype == 0x0800 and len(pkt) >= off + 2 + 20 and pkt[off + 2] >> 4 == 4:
            return off + 2
        return None
    return None


def headers_end(pkt: bytes) -> int:
    """End of the L2/L3/L4 headers (where a payload would start); 14 for non-IP frames."""
    l3 = l3_offset(pkt)
    if l3 is None:
        return 14
    ihl = (pkt[l3] & 0x0F) * 4
    proto = pkt[l3 + 9]
    l4 = l3 + ihl
    return l4 + {17: 8, 6: 20}.get(proto, 0)


def field_offset(pkt: bytes, field: str) -> tuple[int, int]:
    """(offset, length in bytes) of a variable field in the frame."""
    if field not in VARIABLE_FIELDS:
        raise FrameError(f"field '{field}' cannot vary; choose one of {', '.join(VARIABLE_FIELDS)}")
    l3 = l3_offset(pkt)
    if l3 is None:
        raise FrameError(f"field '{field}' needs an IPv4 frame")
    if field == "src_ip":
        return l3 + 12, 4
    if field == "dst_ip":
        return l3 + 16, 4
    proto = pkt[l3 + 9]
    if proto not in (6, 17):
        raise FrameError(f"field '{field}' needs UDP or TCP, the frame has IP protocol {proto}")
    l4 = l3 + (pkt[l3] & 0x0F) * 4
    return (l4, 2) if field == "src_port" else (l4 + 2, 2)


def fit_for_signature(pkt: bytes) -> bytes:
    """Pads a frame so the signature (last SIG_LEN bytes) does not overwrite its headers."""
    need = headers_end(pkt) + SIG_LEN
    return pkt if len(pkt) >= need else pkt + b"\x00" * (need - len(pkt))


def load_pcap(path: str | Path) -> list[bytes]:
    """Frames of a pcap/pcapng file; FrameError naming the file when it is missing or bad."""
    p = Path(path)
    if not p.is_file():
        raise FrameError(f"pcap {p} does not exist")
    from scapy.utils import rdpcap
    try:
        frames = [bytes(pkt) for pkt in rdpcap(str(p))]
    except Exception as exc:  # scapy raises Scapy_Exception/struct.error/EOFError on bad files
        raise FrameError(f"pcap {p} does not parse: {exc}") from exc
    if not frames:
        raise FrameError(f"pcap {p} holds no packets")
    return frames


def imix_frames(**kw) -> list[bytes]:
    return [udp_frame(size, **kw) for size in IMIX_SIZES]


def line_rate_pps(speed_mbps: float, mean_frame_size: float) -> float:
    """Packets per second a wire of speed_mbps carries at this mean frame size (with FCS)."""
    return speed_mbps * 1e6 / ((mean_frame_size + WIRE_OVERHEAD) * 8)
