"""The rig's own measurements per trial, and the cause of a failed trial (issue 44).

On one shared box a trial can fail because the switch dropped packets, or because a polling
thread of the rig (the generator's worker, the switch's worker) was off its core for longer
than a ring can absorb. Each trial therefore carries what the rig measured:

- ``gen_max_gap_ns``: the longest gap between two passes of a generator worker's loop during
  the trial (softgen: exact, reset at each start; one TSC read per pass). softgen's worker
  both sends and receives, so this is the generator's TX and RX gap at once.
- ``gen_rx_backlog_pkts``: a lower bound of the generator's RX ring high-water mark: burst x
  the longest run of full RX bursts (memif and virtio_user have no rx_queue_count in DPDK
  22.11, so the burst-size proxy is used on every PMD).
- ``switch_max_gap_ns``: the longest pass of the switch's worker loop, from the difference of
  its cumulative log2 gap histogram around the trial (within a factor of 2: the top bucket's
  upper bound; ``switch_max_gap_lo_ns`` its lower bound, on which a cause is judged; passes
  under the floor, ~15 us, are not counted).
- ``switch_rx_backlog_pkts``: the same burst-run proxy for the switch's RX rings, from its
  cumulative log2 histogram of runs (upper bound of the top bucket, x burst).

The measurer (drivers/trafficgen/base.make_measure and the suites' wrappers) puts them in
``Counters.rig`` so they travel with the trial result whatever search consumes it; the search
copies them to its trial record with :func:`classify`'s cause.
"""
from __future__ import annotations

from typing import Iterable, Sequence

CAUSES = ("ok", "DUT loss", "DUT backpressure", "generator stall", "rig stall", "generator limit",
          "generator RX limit")
# A switch worker busy less than this share of a trial had cycles to spare: a loss at its
# egress (received, not sent) is then the peer's full RX ring, not the switch's forwarding.
IDLE_SWITCH_SHARE = 0.5
# ... when at least this share of the trial's loss is the switch's egress shortfall
EGRESS_SHARE_OF_LOSS = 0.9
# A gap shorter than this never explains a failed trial, whatever the rate (a scheduler tick is
# 1-4 ms; a quiet polling loop's pass is a few microseconds).
MIN_STALL_NS = 50_000


def hist_delta(before: Sequence[int] | None, after: Sequence[int]) -> list[int]:
    """after - before, bucket by bucket (before None or shorter: counted as zeros)."""
    before = list(before or [])
    before += [0] * (len(after) - len(before))
    return [int(a) - int(b) for a, b in zip(after, before)]


def top_bucket(delta: Iterable[int]) -> int | None:
    """Index of the highest non-empty bucket, None when every bucket is empty."""
    top = None
    for i, n in enumerate(delta):
        if n > 0:
            top = i
    return top


def switch_worker_rig(before: dict | None, after: dict | None, tsc_hz: float,
                      burst: int = 32) -> dict[str, float]:
    """Rig figures of one switch worker from two stats reads around a trial (pure).
    {} when either read lacks the histograms (an older switch, OVS)."""
    if not before or not after or "gap_hist" not in after or "gap_hist" not in before:
        return {}
    out: dict[str, float] = {}
    floor = float(after.get("gap_floor_cycles") or 0)
    gaps = hist_delta(before["gap_hist"], after["gap_hist"])
    top = top_bucket(gaps)
    # bucket i: [2^i, 2^(i+1)) x floor; its upper bound is the (pessimistic) longest gap
    out["switch_max_gap_ns"] = 0.0 if top is None or floor <= 0 or tsc_hz <= 0 else \
        floor * 2 ** (top + 1) / tsc_hz * 1e9
    # and its lower bound: the longest gap was at least this long (what a cause is judged on)
    out["switch_max_gap_lo_ns"] = out["switch_max_gap_ns"] / 2
    out["switch_stalls"] = float(sum(gaps))
    runs = hist_delta(before.get("backlog_hist"), after.get("backlog_hist") or [])
    top = top_bucket(runs)
    # a run of k full bursts: the ring held >= k bursts; bucket i holds runs of [2^i, 2^(i+1))
    out["switch_rx_backlog_pkts"] = 0.0 if top is None else float(burst * (2 ** (top + 1) - 1))
    return out


def switch_rig(before: dict | None, after: dict | None, burst: int = 32) -> dict[str, float]:
    """The switch's rig figures over all its workers (the worst one), from two stats reads."""
    if not before or not after:
        return {}
    hz = float(after.get("tsc_hz") or 0)
    per = [switch_worker_rig(b, a, hz, burst)
           for b, a in zip(before.get("workers") or [], after.get("workers") or [])]
    per = [p for p in per if p]
    if not per:
        return {}
    return {k: max(p[k] for p in per) for k in per[0]}


def switch_egress(before: dict | None, after: dict | None, ports: tuple[int, int], lost: int) -> dict[str, float]:
    """The switch's side of a trial's loss (pure): what its ingress port received and its
    egress port did not send (``switch_egress_short_pkts``), that share of the trial's loss,
    and its busiest worker's share of the trial (``switch_busy_share``). {} without port
    counters (or without workers: OVS)."""
    if not before or not after or not after.get("ports") or not before.get("ports"):
        return {}

    def port(st, n, key):
        return next((int(p.get(key, 0)) for p in st.get("ports", []) if int(p["port"]) == n), 0)
    short = (port(after, ports[0], "rx_packets") - port(before, ports[0], "rx_packets")) - \
        (port(after, ports[1], "tx_packets") - port(before, ports[1], "tx_packets"))
    out = {"switch_egress_short_pkts": float(short)}
    if lost > 0:
        out["switch_egress_share_of_loss"] = short / lost
    wb = {int(w["lcore"]): w for w in before.get("workers") or [] if "lcore" in w}
    shares = []
    for w in after.get("workers") or []:
        b = wb.get(int(w.get("lcore", -1)))
        if b is None or "busy_cycles" not in w:
            continue
        busy = int(w["busy_cycles"]) - int(b["busy_cycles"])
        idle = int(w["idle_cycles"]) - int(b["idle_cycles"])
        if busy + idle > 0:
            shares.append(busy / (busy + idle))
    if shares:
        out["switch_busy_share"] = max(shares)
    return out


def softgen_rig(stats: list[dict]) -> dict[str, float]:
    """The generator's rig figures from the stats replies of its processes (the worst worker)."""
    rigs = [st["rig"] for st in stats if st.get("rig")]
    if not rigs:
        return {}
    backlog = max(max(r.get("rx_full_run_max") or [0]) * r.get("burst", 32) for r in rigs)
    return {"gen_max_gap_ns": float(max(r["max_gap_ns"] for r in rigs)),
            "gen_rx_backlog_pkts": float(backlog)}


def stall_threshold_ns(rate_pps: float, ring_slots: int) -> float:
    """The shortest gap that alone can overflow a ring of ring_slots at rate_pps: the time the
    ring takes to fill (never below MIN_STALL_NS)."""
    if rate_pps <= 0:
        return float("inf")
    return max(MIN_STALL_NS, ring_slots / rate_pps * 1e9)


def classify(passed: bool, reason: str, rig: dict | None, rate_pps: float, ring_slots: int) -> str:
    """The cause of a trial (pure): "ok" when it passed, else

    - "rig stall": the switch's worker was off its core longer than its ring lasts at this
      rate (the box's scheduler, not the switch's forwarding);
    - "generator stall": the generator's worker was, and the switch's was not;
    - "DUT backpressure": no stall; the generator's TX ring stayed full (the switch did not
      take packets in time: refused / unsent);
    - "DUT loss": no stall; packets sent and not received;
    - "generator limit": no stall; the generator's core fell behind its schedule (a rate
      above its ceiling);
    - "generator RX limit": no stall; the switch received the packets and dropped them at its
      egress while its worker idled most of the trial (busy < IDLE_SWITCH_SHARE, the shortfall
      >= EGRESS_SHARE_OF_LOSS of the loss): the generator's RX ring was full (TRex's low_end
      RX core sleeps between polls), not the switch's forwarding.

    A stall outranks the judge's reason: a stall of that length overflows a ring by itself."""
    if passed:
        return "ok"
    rig = rig or {}
    limit = stall_threshold_ns(rate_pps, ring_slots)
    # the switch's gap is known within 2x: judged on its lower bound, so a rig stall is certain
    if rig.get("switch_max_gap_lo_ns", rig.get("switch_max_gap_ns", 0.0)) >= limit:
        return "rig stall"
    if rig.get("gen_max_gap_ns", 0.0) >= limit:
        return "generator stall"
    if reason == "backpressure":
        return "DUT backpressure"
    if reason == "generator limit":
        return "generator limit"
    if rig.get("switch_busy_share", 1.0) < IDLE_SWITCH_SHARE and \
            rig.get("switch_egress_share_of_loss", 0.0) >= EGRESS_SHARE_OF_LOSS:
        return "generator RX limit"
    return "DUT loss"


def trial_cause(passed: bool, reason: str, rig: dict | None, rate_pps: float) -> str:
    """classify() with the ring size the measurer recorded in the rig figures (``ring_slots``;
    1024, the wires' default, when it did not)."""
    return classify(passed, reason, rig, rate_pps, int((rig or {}).get("ring_slots") or 1024))


def cause_summary(causes: Iterable[str]) -> dict[str, int]:
    """{cause: count} of failed trials, for a record's metrics."""
    out: dict[str, int] = {}
    for c in causes:
        if c != "ok":
            out[c] = out.get(c, 0) + 1
    return out


def fmt_rig(rig: dict | None) -> str:
    """' [gen gap 12 us, switch gap <= 31 us, ...]' for a progress line; '' without figures."""
    if not rig:
        return ""
    parts = []
    if "gen_max_gap_ns" in rig:
        parts.append(f"gen gap {rig['gen_max_gap_ns'] / 1e3:.0f} us")
    if "switch_max_gap_ns" in rig:
        parts.append(f"switch gap <= {rig['switch_max_gap_ns'] / 1e3:.0f} us")
    if rig.get("gen_rx_backlog_pkts"):
        parts.append(f"gen rx backlog >= {rig['gen_rx_backlog_pkts']:.0f}")
    if rig.get("switch_rx_backlog_pkts"):
        parts.append(f"switch rx backlog <= {rig['switch_rx_backlog_pkts']:.0f}")
    return " [" + ", ".join(parts) + "]" if parts else ""
