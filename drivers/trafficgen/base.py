"""TrafficGenerator: the abstract interface softgen and TRex implement, and the measure()
adapter the NDR/PDR search talks to (CSIT style: the search never sees a generator)."""
from __future__ import annotations

import abc
import os
import time
from typing import Callable

from .counters import Counters
from .model import PortInfo, ResolvedStream, Stream, validate_streams


POLL_DURING_TRIAL_ENV = "OFBENCH_RIG_POLL_DURING_TRIAL"
QUIET_MARGIN_S = 0.02  # polling starts this long before a trial's scheduled end


class TrafficGenerator(abc.ABC):
    """Lifecycle per trial: load(streams) -> start() -> wait()/stop() -> counters().

    load() validates every stream against ports() and raises StreamError before anything is
    sent; counters() raises CounterError when rx > tx.  Implementations are not thread-safe:
    one trial at a time, from one thread."""

    name: str = "abstract"
    version: str = "0"

    @abc.abstractmethod
    def ports(self) -> dict[str, PortInfo]: ...

    def load(self, streams: list[Stream]) -> list[ResolvedStream]:
        resolved = validate_streams(streams, self.ports())
        self._load(resolved)
        return resolved

    @abc.abstractmethod
    def _load(self, streams: list[ResolvedStream]) -> None: ...

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    @abc.abstractmethod
    def is_running(self) -> bool: ...

    @abc.abstractmethod
    def counters(self) -> Counters: ...

    def close(self) -> None:
        pass

    def wait(self, timeout_s: float, poll_s: float = 0.02) -> bool:
        """Waits until every finite stream has ended; False on timeout (streams keep going)."""
        deadline = time.monotonic() + timeout_s
        while self.is_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)
        return True

    def run(self, streams: list[Stream], drain_s: float = 0.1, timeout_s: float | None = None) -> Counters:
        """One trial of finite streams: load, start, wait, stop, let in-flight packets arrive,
        read counters.  duration_s of the result = the longest stream's scheduled length."""
        resolved = self.load(streams)
        longest = max((r.duration_s or (r.count or 0) / r.rate_pps) for r in resolved)
        self.start()
        try:
            if os.environ.get(POLL_DURING_TRIAL_ENV) != "1":
                # no stream ends before its schedule: sleep through it, then poll. Each poll
                # wakes this process and the generator's control thread, on a 2-core box on a
                # polling thread's core (issue 44); OFBENCH_RIG_POLL_DURING_TRIAL=1 polls
                # from the start (the A/B)
                time.sleep(max(0.0, longest - QUIET_MARGIN_S))
            if not self.wait(timeout_s if timeout_s is not None else longest * 3 + 5):
                raise TimeoutError(f"{self.name}: streams still running after {timeout_s} s")
        finally:
            self.stop()
        time.sleep(drain_s)
        c = self.counters()
        c.duration_s = longest
        return c


def make_measure(gen: TrafficGenerator, build_streams: Callable[[float, float], list[Stream]],
                 drain_s: float = 0.1) -> Callable[[float, float], Counters]:
    """measure(duration_s, rate_pps) -> Counters for ndr.search; build_streams(rate_pps,
    duration_s) returns the streams of one trial (the rate is the aggregate of all of them)."""

    def measure(duration_s: float, rate_pps: float) -> Counters:
        return gen.run(build_streams(rate_pps, duration_s), drain_s=drain_s)

    return measure
