"""Packet-In classification of the prioritised controller (pure functions, no os-ken).

The document reads the IP precedence: the top 3 bits of the IPv4 ToS byte (RFC 791/1349),
chosen over DSCP so that devices without DiffServ still work. Precedence >= threshold is
"high" (default 5, "critical"); everything else, and every non-IPv4 frame, is "low".

Parsing is done on the raw frame bytes with fixed offsets (Ethernet, up to two VLAN tags,
IPv4, TCP/UDP): the main thread of the prioritised app must stay cheap, because it is the
one thread every packet passes through.
"""
from __future__ import annotations

from dataclasses import dataclass

HIGH = "high"
LOW = "low"
CLASSES = (HIGH, LOW)

ETH_P_IP = 0x0800
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
IPPROTO_TCP = 6
IPPROTO_UDP = 17


@dataclass(frozen=True)
class FrameInfo:
    """What the controller needs from one frame. ``precedence`` is None for non-IPv4."""

    precedence: int | None
    ip_id: int | None
    payload_offset: int  # start of the L4 payload (TCP/UDP), or len(frame) when none


def parse_frame(frame: bytes) -> FrameInfo:
    n = len(frame)
    off = 12
    if n < 14:
        return FrameInfo(None, None, n)
    ethertype = int.from_bytes(frame[off:off + 2], "big")
    off += 2
    for _ in range(2):  # QinQ at most
        if ethertype in (ETH_P_8021Q, ETH_P_8021AD) and n >= off + 4:
            ethertype = int.from_bytes(frame[off + 2:off + 4], "big")
            off += 4
    if ethertype != ETH_P_IP or n < off + 20 or frame[off] >> 4 != 4:
        return FrameInfo(None, None, n)
    ihl_bytes = (frame[off] & 0x0F) * 4
    tos = frame[off + 1]
    ip_id = int.from_bytes(frame[off + 4:off + 6], "big")
    proto = frame[off + 9]
    l4 = off + ihl_bytes
    payload = n
    if proto == IPPROTO_TCP and n >= l4 + 20:
        payload = l4 + (frame[l4 + 12] >> 4) * 4
    elif proto == IPPROTO_UDP and n >= l4 + 8:
        payload = l4 + 8
    return FrameInfo(tos >> 5, ip_id, min(payload, n))


def precedence_class(precedence: int | None, high_precedence_min: int) -> str:
    """The queue a packet goes to: HIGH when its IP precedence >= threshold, else LOW."""
    if precedence is not None and precedence >= high_precedence_min:
        return HIGH
    return LOW
