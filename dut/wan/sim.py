"""Frame-level simulation of the WAN experiment: a delay model that knows the sender.

The analytic models (dut.wan.model) see each path as one queue of whole messages.  The real
system differs in two ways that matter at the document's loads:
  - the sender's access link (rate A) interleaves the datagrams of all apps with pending data
    round-robin, one datagram per app per round, so a short message does not wait behind a
    whole long one: it shares the access link with it;
  - the path (rate W, FIFO at frame level, delay T) only queues what the access link has
    already delivered, so its backlog is bounded by the access/path rate mismatch.
This module replays a message schedule (arrival time, app, length) through exactly that:
round-robin access link -> per-path FIFO link -> propagation delay, and returns each app's mean
delay from its message's first datagram (the sender's send start, like the measurement) to the
last frame's arrival.  Given the schedule a run will send, its prediction is for that very
sample path; given another seed's schedule, for the same process (compare both to see how much
of the accuracy is the sample).

Pure function, no I/O; ~1 s of CPU per 60 s of the document's traffic.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Iterable, Mapping, Sequence

from dut.wan.config import App, Framing, Path

IP_UDP_HEADER_BYTES = 28       # what the sender's access budget charges beyond the payload


def simulate_mean_delays_ms(messages: Iterable[tuple[float, int, int]], assignment: Mapping[str, str],
                            apps: Sequence[App], paths: Sequence[Path], framing: Framing | None = None,
                            access_mbps: float = 1000.0) -> dict[str, float]:
    """Mean delay (ms) per assigned app.  `messages`: (at_s, app_index, length_bytes), any order.

    Apps not in `assignment` are not sent (like an unassigned app in the experiment)."""
    if not access_mbps > 0:
        raise ValueError(f"access_mbps must be > 0, got {access_mbps}")
    framing = framing or Framing()
    by_path = {p.name: p for p in paths}
    app_path = [by_path[assignment[a.name]] if a.name in assignment else None for a in apps]
    msgs = sorted((m for m in messages if app_path[m[1]] is not None), key=lambda m: m[0])
    access_Bps = access_mbps * 1e6 / 8.0
    step = framing.data_bytes_per_frame
    per_frame_wire = framing.app_header_bytes + framing.frame_header_bytes + framing.wire_overhead_bytes
    path_free = {p.name: 0.0 for p in paths}
    pending: list[deque] = [deque() for _ in apps]   # per app: [remaining bytes, start_s or None]
    sums = [0.0] * len(apps)
    counts = [0] * len(apps)
    n_active = 0
    t, i, rr = 0.0, 0, 0
    n_apps = len(apps)
    while i < len(msgs) or n_active:
        if not n_active:
            t = max(t, msgs[i][0])
        while i < len(msgs) and msgs[i][0] <= t:
            _, k, length = msgs[i]
            if not pending[k]:
                n_active += 1
            pending[k].append([length, None])
            i += 1
        # Next app in round-robin order with pending data.
        for off in range(n_apps):
            k = (rr + off) % n_apps
            if pending[k]:
                break
        rr = k + 1
        job = pending[k][0]
        if job[1] is None:
            job[1] = t
        size = min(step, job[0]) if job[0] > 0 else 0
        t += (size + framing.app_header_bytes + IP_UDP_HEADER_BYTES) / access_Bps
        p = app_path[k]
        start = max(path_free[p.name], t)
        path_free[p.name] = start + (size + per_frame_wire) * 8.0 / p.bandwidth_bps
        job[0] -= size
        if job[0] <= 0:
            done = path_free[p.name] + p.delay_ms / 1000.0
            sums[k] += done - job[1]
            counts[k] += 1
            pending[k].popleft()
            if not pending[k]:
                n_active -= 1
    return {a.name: (sums[k] / counts[k] * 1000.0 if counts[k] else math.nan)
            for k, a in enumerate(apps) if app_path[k] is not None}
