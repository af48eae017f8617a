"""The former NDR/PDR search (RFC 2544 binary search), kept only as the baseline of the
side-by-side comparison (suites/throughput: test_search_methods_side_by_side, issue 40 part 2).
Every throughput result comes from drivers/trafficgen/mlr.py (RFC 9971, FD.io CSIT's
MLRsearch): in the comparison on this box this search ended at 0 Mpps once in 10 (a failed
verification after passes below it, issue 44) and its NDR spread was 3x MLRsearch's.

Search against measure(duration_s, rate_pps) -> Counters.

Written once for every generator (CSIT's rule: the search never talks to a generator).

- A trial passes when lost <= loss_target * tx, with tx the packets actually sent (not offered)
  and when the generator really sent what was asked (unsent <= max_unsent_ratio * offered).
  Too much unsent fails the trial either as "backpressure" (mostly refused by the port: on
  memif/vhost the receiver's ring is full, i.e. the DUT does not keep up) or as "generator
  limit" (the generator's core fell behind its schedule), so a found rate is never above what
  the generator itself can do, and the result says which limit was hit.
- The first trial is at max rate; when it fails, the rate the DUT forwarded in it is tried
  next and the bracket [pass, fail] is opened geometrically around it (MLRsearch's idea), then
  binary search until the bracket is narrower than `precision` (relative to the failing bound).
- NDR (loss target 0) first; PDR (default 0.1 %) then starts from the NDR rate (which passes
  PDR too).  A final verification trial of final_duration_s at the found rate; when it fails the
  search continues below it (at most max_verifications times).
- Latency: one trial at 10/50/90 % of the found PDR rate (as CSIT does), stats of the latency
  streams that measure() returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .counters import Counters
from .latency import LatencyStats
from .rig import fmt_rig as _fmt_rig, trial_cause
from .trial import Trial, judge  # noqa: F401  (judge: this module's API before trial.py)

Measure = Callable[[float, float], Counters]


@dataclass
class SearchConfig:
    max_rate_pps: float
    min_rate_pps: float = 10_000.0
    trial_duration_s: float = 1.0
    final_duration_s: float | None = None     # verification trial; None = trial_duration_s
    precision: float = 0.02                   # stop when (fail - pass) / fail <= precision
    ndr_loss: float = 0.0
    pdr_loss: float = 0.001
    max_unsent_ratio: float = 0.001           # more unsent than this = the generator's limit
    latency_fractions: tuple[float, ...] = (0.1, 0.5, 0.9)
    max_trials: int = 40                      # per loss target, a safety stop
    max_verifications: int = 3

    def __post_init__(self):
        if not 0 < self.min_rate_pps <= self.max_rate_pps:
            raise ValueError(f"need 0 < min_rate_pps ({self.min_rate_pps}) <= max_rate_pps ({self.max_rate_pps})")
        if not 0 < self.precision < 1:
            raise ValueError(f"precision {self.precision} must be in (0, 1)")
        if self.trial_duration_s <= 0:
            raise ValueError(f"trial_duration_s {self.trial_duration_s} must be > 0")
        for name in ("ndr_loss", "pdr_loss"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} {getattr(self, name)} must be in [0, 1)")


@dataclass
class SearchResult:
    target: str
    loss_target: float
    rate_pps: float                  # highest rate that passed (0 if even min_rate failed)
    fail_rate_pps: float | None      # lowest rate that failed (None: max rate passed)
    verified: bool
    generator_limited: bool          # some failure above the result was the generator's
    trials: list[Trial] = field(default_factory=list)


@dataclass
class NdrPdrResult:
    ndr: SearchResult
    pdr: SearchResult
    latency: dict[float, LatencyStats | None]
    trials: list[Trial]

    def metrics(self) -> dict[str, float]:
        m = {"ndr_mpps": self.ndr.rate_pps / 1e6, "pdr_mpps": self.pdr.rate_pps / 1e6,
             "trials": float(len(self.trials))}
        for frac, lat in self.latency.items():
            if lat is not None and lat.samples:
                pct = int(round(frac * 100))
                m[f"latency_p50_us_at_{pct}pct"] = lat.p50_us
                m[f"latency_p99_us_at_{pct}pct"] = lat.p99_us
        top = self.latency.get(max(self.latency)) if self.latency else None
        if top is not None and top.samples:
            m["latency_p50_us"] = top.p50_us
            m["latency_p99_us"] = top.p99_us
        return m


def _fmt(pps: float | None) -> str:
    return "-" if pps is None else f"{pps / 1e6:.3f} Mpps"


class _Searcher:
    def __init__(self, measure: Measure, cfg: SearchConfig, progress: Callable[[str], None]):
        self.measure, self.cfg, self.progress = measure, cfg, progress
        self.trials: list[Trial] = []

    def trial(self, target: str, rate: float, duration: float, loss_target: float) -> Trial:
        c = self.measure(duration, rate)
        ok, why = judge(c, loss_target, self.cfg.max_unsent_ratio)
        offered = sum(s.offered for s in c.streams.values()) or (c.tx + c.unsent)
        t = Trial(target, rate, duration, offered, c.tx, c.rx, c.lost, c.unsent, c.loss_ratio, ok, why,
                  dict(c.dut), trial_cause(ok, why, c.rig, rate), dict(c.rig))
        self.trials.append(t)
        self.progress(f"{target} trial {len(self.trials)}: {_fmt(rate)} for {duration:g} s: tx {c.tx} "
                      f"rx {c.rx} lost {c.lost} ({100 * c.loss_ratio:.4f} %) unsent {c.unsent} -> "
                      f"{'pass' if ok else 'FAIL (' + why + ', ' + t.cause + ')'}{_fmt_rig(c.rig)}")
        self.last_counters = c
        return t

    def bracket_from_estimate(self, target: str, loss_target: float, top: Trial, lo: float | None,
                              hi: float, res: SearchResult, start: int) -> tuple[float | None, float]:
        """After the top rate failed: what the DUT forwarded in that trial (rx / duration) is a
        good guess of its capacity (MLRsearch's first step).  Try it, then step away from it
        geometrically (2x precision, doubling) until the bracket [pass, fail] closes, so a
        small capacity far below max_rate costs a few trials instead of a halving per octave."""
        cfg = self.cfg
        est = top.rx / top.duration_s if top.duration_s > 0 else 0.0
        low_bound = max(cfg.min_rate_pps, lo or 0.0)
        if not low_bound < est < hi * (1 - cfg.precision):
            return lo, hi
        t = self.trial(target, est, cfg.trial_duration_s, loss_target)
        step = 2 * cfg.precision
        if t.passed:
            lo = est
            while len(self.trials) - start < cfg.max_trials:
                cand = lo * (1 + step)
                if cand >= hi * (1 - cfg.precision):
                    break
                t = self.trial(target, cand, cfg.trial_duration_s, loss_target)
                if not t.passed:
                    res.generator_limited |= t.reason == "generator limit"
                    return lo, cand
                lo, step = cand, step * 2
            return lo, hi
        res.generator_limited |= t.reason == "generator limit"
        hi = est
        while len(self.trials) - start < cfg.max_trials:
            cand = hi * (1 - step)
            if cand <= low_bound:
                break
            t = self.trial(target, cand, cfg.trial_duration_s, loss_target)
            if t.passed:
                return cand, hi
            res.generator_limited |= t.reason == "generator limit"
            hi, step = cand, min(0.5, step * 2)
        return lo, hi

    def search(self, target: str, loss_target: float, lo: float | None) -> SearchResult:
        cfg = self.cfg
        res = SearchResult(target, loss_target, 0.0, None, False, False)
        start = len(self.trials)
        hi: float | None = None
        # lo: highest known pass (None: none yet).  First look at the top.
        t = self.trial(target, cfg.max_rate_pps, cfg.trial_duration_s, loss_target)
        if t.passed:
            lo = cfg.max_rate_pps
        else:
            hi = cfg.max_rate_pps
            res.generator_limited |= t.reason == "generator limit"
            lo, hi = self.bracket_from_estimate(target, loss_target, t, lo, hi, res, start)
        verifications = 0
        while True:
            n = len(self.trials) - start
            while hi is not None and n < cfg.max_trials:
                low = lo if lo is not None else cfg.min_rate_pps
                if lo is not None and (hi - lo) / hi <= cfg.precision:
                    break
                if lo is None and hi <= cfg.min_rate_pps:
                    break
                mid = (low + hi) / 2 if lo is not None else max(cfg.min_rate_pps, hi / 2)
                t = self.trial(target, mid, cfg.trial_duration_s, loss_target)
                if t.passed:
                    lo = mid
                else:
                    hi = mid
                    res.generator_limited |= t.reason == "generator limit"
                self.progress(f"{target}: bracket [{_fmt(lo)}, {_fmt(hi)}]")
                n += 1
            if lo is None:
                self.progress(f"{target}: even {_fmt(cfg.min_rate_pps)} fails")
                break
            final = cfg.final_duration_s or cfg.trial_duration_s
            t = self.trial(f"{target}-verify", lo, final, loss_target)
            if t.passed:
                res.verified = True
                break
            verifications += 1
            hi, lo = lo, None if lo <= cfg.min_rate_pps else max(cfg.min_rate_pps, lo * (1 - 4 * cfg.precision))
            if verifications >= cfg.max_verifications:
                self.progress(f"{target}: verification failed {verifications} times, giving up at {_fmt(lo)}")
                break
            if lo is not None:
                t2 = self.trial(target, lo, cfg.trial_duration_s, loss_target)
                if not t2.passed:
                    hi, lo = lo, None
        res.rate_pps = lo or 0.0
        res.fail_rate_pps = hi
        res.trials = self.trials[start:]
        self.progress(f"{target} = {_fmt(res.rate_pps)} (fails at {_fmt(hi)}, verified {res.verified}, "
                      f"generator limited {res.generator_limited})")
        return res


def search_ndr_pdr(measure: Measure, cfg: SearchConfig,
                   progress: Callable[[str], None] = print) -> NdrPdrResult:
    s = _Searcher(measure, cfg, progress)
    ndr = s.search("ndr", cfg.ndr_loss, None)
    pdr = s.search("pdr", cfg.pdr_loss, ndr.rate_pps or None) if cfg.pdr_loss > cfg.ndr_loss else ndr
    if ndr.verified and pdr.rate_pps < ndr.rate_pps:
        # A verified zero-loss rate passes any loss target; a lower PDR is trial noise.
        progress(f"pdr {_fmt(pdr.rate_pps)} below the verified ndr: pdr = ndr = {_fmt(ndr.rate_pps)}")
        pdr.rate_pps, pdr.verified = ndr.rate_pps, True
    latency: dict[float, LatencyStats | None] = {}
    base = pdr.rate_pps
    for frac in cfg.latency_fractions:
        if base <= 0:
            latency[frac] = None
            continue
        s.trial(f"latency@{int(frac * 100)}%", base * frac, cfg.trial_duration_s, 1.0)
        lats = [sc.latency for sc in s.last_counters.streams.values() if sc.latency and sc.latency.samples]
        latency[frac] = lats[0] if lats else None
        if lats:
            progress(f"latency at {int(frac * 100)} % of PDR ({_fmt(base * frac)}): p50 {lats[0].p50_us:.1f} us "
                     f"p99 {lats[0].p99_us:.1f} us max {lats[0].max_us:.1f} us")
    return NdrPdrResult(ndr, pdr, latency, s.trials)
