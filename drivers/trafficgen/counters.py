"""Counters a generator reports after a trial, and the checks that make them trustworthy.

- tx: packets the port accepted; unsent: packets the schedule asked for that the generator
  could not send (port refused them, or the core fell behind) -- never counted as loss.
  refused: the part of unsent the port refused.  On shared-memory wires (memif, vhost) a
  receiver that cannot keep up fills the ring, so its overload shows as refused, not as loss.
- rx: packets received with this stream's signature; duplicate: seen twice (counted in rx);
  out_of_order: arrived after a later sequence number.
- lost = tx - (rx - duplicate), computed after the trial has drained.  A stream that received
  more distinct packets than it sent (rx - duplicate > tx) raises CounterError: that is a broken
  measurement (stale packets from an earlier trial, a looping topology, a counting bug), not a
  result.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .latency import LatencyStats


class CounterError(RuntimeError):
    """Counters that cannot be a measurement (e.g. rx > tx)."""


@dataclass
class PortCounters:
    tx: int = 0
    rx: int = 0
    unsent: int = 0
    tx_bytes: int = 0
    rx_bytes: int = 0
    rx_other: int = 0   # received frames without a generator signature (LLDP, floods, ...)


@dataclass
class StreamCounters:
    name: str
    tx: int = 0
    rx: int = 0
    unsent: int = 0
    refused: int = 0    # part of unsent the port refused: a full ring on memif/vhost = backpressure
    offered: int = 0
    out_of_order: int = 0
    duplicate: int = 0
    lost: int = 0
    tx_bytes: int = 0
    latency: LatencyStats | None = None
    # first to last burst the port accepted (0: unknown or < 2 bursts); a TX rate over it does
    # not count start-up or the end-of-schedule catch-up grace as sending time
    tx_window_s: float = 0.0

    @property
    def tx_rate_pps(self) -> float:
        """Packets accepted per second of the TX window; 0 when the window is unknown."""
        return self.tx / self.tx_window_s if self.tx_window_s > 0 else 0.0


@dataclass
class Counters:
    ports: dict[str, PortCounters] = field(default_factory=dict)
    streams: dict[str, StreamCounters] = field(default_factory=dict)
    duration_s: float = 0.0    # time the streams were sending (wall clock, for rates)
    # the DUT's own counters over the trial, read outside its window (issue 40 part 6):
    # flat {name: number}, e.g. cycles_per_packet, cache_hit_ratio, cpu_share, port_1_rx_packets
    dut: dict[str, float] = field(default_factory=dict)
    # the rig's own measurements of the trial (drivers/trafficgen/rig.py: the generator's and
    # the switch's longest polling gaps, ring backlog); {} when nobody measured them
    rig: dict[str, float] = field(default_factory=dict)

    @property
    def tx(self) -> int:
        return sum(s.tx for s in self.streams.values())

    @property
    def rx(self) -> int:
        return sum(s.rx - s.duplicate for s in self.streams.values())

    @property
    def unsent(self) -> int:
        return sum(s.unsent for s in self.streams.values())

    @property
    def refused(self) -> int:
        return sum(s.refused for s in self.streams.values())

    @property
    def lost(self) -> int:
        return sum(s.lost for s in self.streams.values())

    @property
    def loss_ratio(self) -> float:
        """Lost over packets actually sent (not offered); 0 when nothing was sent."""
        return self.lost / self.tx if self.tx else 0.0

    def tx_pps(self) -> float:
        return self.tx / self.duration_s if self.duration_s > 0 else 0.0

    def rx_pps(self) -> float:
        return self.rx / self.duration_s if self.duration_s > 0 else 0.0


def finish_stream(sc: StreamCounters) -> StreamCounters:
    """Fills `lost` and applies the rx <= tx rule to one stream; returns it."""
    distinct = sc.rx - sc.duplicate
    if distinct > sc.tx:
        raise CounterError(f"stream '{sc.name}': received {distinct} distinct packets but sent {sc.tx} "
                           f"(rx > tx: stale or looping packets, not a result)")
    if min(sc.tx, sc.rx, sc.unsent, sc.duplicate, sc.out_of_order) < 0:
        raise CounterError(f"stream '{sc.name}': negative counter {sc}")
    sc.lost = sc.tx - distinct
    return sc


def check_counters(c: Counters) -> Counters:
    for sc in c.streams.values():
        finish_stream(sc)
    return c
