"""One trial of a throughput search and its verdict (shared by mlr.py and the baseline ndr.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .counters import Counters


@dataclass
class Trial:
    target: str          # "ndr" / "pdr" / "ndr-verify" / ...
    rate_pps: float
    duration_s: float
    offered: int
    tx: int
    rx: int
    lost: int
    unsent: int
    loss_ratio: float
    passed: bool
    reason: str          # "ok", "loss", "backpressure", "generator limit"
    dut: dict[str, float] = field(default_factory=dict)   # the DUT's counters over the trial
    # the rig's figures of the trial (the measurer's Counters.rig, drivers/trafficgen/rig.py) and
    # the cause of a failure they give: "ok", "DUT loss", "DUT backpressure", "generator stall",
    # "rig stall", "generator limit" (rig.classify)
    cause: str = ""
    rig: dict[str, float] = field(default_factory=dict)


def judge(c: Counters, loss_target: float, max_unsent_ratio: float) -> tuple[bool, str]:
    """Pass/fail of one trial. Loss counted against packets actually sent."""
    offered = sum(s.offered for s in c.streams.values()) or (c.tx + c.unsent)
    if c.tx == 0:
        return False, "generator limit"
    if c.unsent > max_unsent_ratio * offered:
        # A full ring (refused) is the receiver's overload on shared-memory wires; the core
        # falling behind its schedule is the generator's own limit.
        return False, "backpressure" if c.refused * 2 >= c.unsent else "generator limit"
    if c.lost > loss_target * c.tx:
        return False, "loss"
    return True, "ok"
