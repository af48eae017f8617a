"""Pcap files of raw Ethernet frames: the one writer and reader of traces and benches.

Written and read through scapy's pcap classes (the field's library, pinned in
requirements.lock), little-endian classic pcap with microsecond timestamps and link type 1
(Ethernet): frame ``i`` is stamped ``i`` microseconds after the epoch, so the same frames give
the same bytes (trace sidecars record the file's sha256). Frames are ``bytes`` without FCS.

Used by the ToS traces (traces/tos_trace.py) and the controller suite that replays them, the
switch pipeline bench's feeds (suites/switch/pipeline.py) and the vmwire suite's captures.
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO, Iterable

LINKTYPE_ETHERNET = 1


def write_frames(f: BinaryIO, frames: Iterable[bytes], snaplen: int = 65535) -> None:
    """Write a pcap (header and ``frames``) to the open binary file ``f``."""
    from scapy.utils import PcapWriter  # scapy's import takes ~0.3 s: only when used

    w = PcapWriter(f, linktype=LINKTYPE_ETHERNET, sync=False, snaplen=snaplen)
    w.write_header(None)
    for i, fr in enumerate(frames):
        w.write_packet(fr, sec=i // 1_000_000, usec=i % 1_000_000)
    w.flush()


def pcap_bytes(frames: Iterable[bytes]) -> bytes:
    """The bytes of a pcap of ``frames``."""
    buf = io.BytesIO()
    write_frames(buf, frames)
    return buf.getvalue()


def write_pcap(path: str | Path, frames: Iterable[bytes]) -> None:
    """Write the pcap of ``frames`` to ``path``."""
    with open(path, "wb") as f:
        write_frames(f, frames)


def read_pcap(path: str | Path) -> list[bytes]:
    """The frames of the pcap file at ``path`` (any byte order, micro- or nanosecond stamps);
    [] for an empty file; ValueError naming the file for anything that is not a pcap."""
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapReader

    if Path(path).stat().st_size == 0:
        return []
    try:
        with RawPcapReader(str(path)) as r:
            return [bytes(data) for data, _meta in r]
    except Scapy_Exception as exc:
        raise ValueError(f"{path}: not a pcap file ({exc})") from None
