"""RFC 9971 (MLRsearch) throughput search through FD.io CSIT's own library (PyPI ``mlrsearch``,
module ``MLRsearch``), behind the same ``measure(duration_s, rate_pps) -> Counters`` contract as
every generator (the search never talks to a generator).

Search goals are stated as RFC 9971 names them (:class:`Goal`): goal loss ratio, goal exceed
ratio, goal initial and final trial duration, goal duration sum, goal width; with min and max
load for the whole search. Any number of goals per search: NDR (loss 0) and PDR (loss 0.005 by
default) are two goals of one search, measured together (every trial counts for every goal).

Each goal's result is recorded as the RFC states it (:class:`GoalOutcome`): the conditional
throughput, the relevant lower bound, the relevant upper bound and the trials that decided them
(the full-length trials at those two loads).

Trials: a trial's loss ratio is MLRsearch's (lost + unsent over intended), except that unsent
packets up to ``max_unsent_ratio`` of what was offered are forgiven, as in ndr.judge (the
generator's scheduling slack is not the DUT's loss). Each trial keeps ndr.judge's reason
("loss", "backpressure", "generator limit") against the tightest goal, so the generator limit
and the DUT's backpressure stay recorded as they were.

The goal exceed ratio is what keeps one bad trial (a scheduler stall on a shared box) from
deciding a result: a load is a lower bound when at most that share of its duration sum is bad,
so a single failed verification can never turn passes below it into a result of 0 (issue 44).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from MLRsearch import (AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch,
                       SearchGoal)

from .counters import Counters
from .latency import LatencyStats
from .rig import fmt_rig, trial_cause
from .trial import Trial, judge

Measure = Callable[[float, float], Counters]

LIBRARY = "MLRsearch 1.2.1"

# RFC 9971 goal attribute names (the profile's keys) -> Goal's fields
GOAL_KEYS = ("goal_loss_ratio", "goal_exceed_ratio", "goal_initial_trial_duration",
             "goal_final_trial_duration", "goal_duration_sum", "goal_width")


@dataclass(frozen=True)
class Goal:
    """One RFC 9971 search goal. Durations in seconds; width relative to the upper bound."""
    name: str
    goal_loss_ratio: float = 0.0
    goal_exceed_ratio: float = 0.5
    goal_initial_trial_duration: float = 1.0
    goal_final_trial_duration: float = 1.0
    goal_duration_sum: float = 21.0
    goal_width: float = 0.005

    def problems(self) -> list[tuple[str, str]]:
        """[(key, reason)] of contradicting attributes; [] when the goal is usable."""
        out = []
        if not 0 <= self.goal_loss_ratio < 1:
            out.append(("goal_loss_ratio", f"must be in [0, 1), got {self.goal_loss_ratio}"))
        if not 0 <= self.goal_exceed_ratio < 1:
            out.append(("goal_exceed_ratio", f"must be in [0, 1), got {self.goal_exceed_ratio}"))
        if not 0 < self.goal_width < 1:
            out.append(("goal_width", f"must be in (0, 1), got {self.goal_width}"))
        if not self.goal_initial_trial_duration > 0:
            out.append(("goal_initial_trial_duration",
                        f"must be > 0, got {self.goal_initial_trial_duration}"))
        elif self.goal_final_trial_duration < self.goal_initial_trial_duration:
            out.append(("goal_final_trial_duration",
                        f"{self.goal_final_trial_duration} s is below goal_initial_trial_duration "
                        f"{self.goal_initial_trial_duration} s"))
        elif self.goal_duration_sum < self.goal_final_trial_duration:
            out.append(("goal_duration_sum",
                        f"{self.goal_duration_sum} s is below goal_final_trial_duration "
                        f"{self.goal_final_trial_duration} s"))
        return out

    def search_goal(self) -> SearchGoal:
        return SearchGoal(loss_ratio=self.goal_loss_ratio, exceed_ratio=self.goal_exceed_ratio,
                          relative_width=self.goal_width,
                          initial_trial_duration=self.goal_initial_trial_duration,
                          final_trial_duration=self.goal_final_trial_duration,
                          duration_sum=self.goal_duration_sum,
                          # with 0 preceding targets the library wants initial == sum
                          preceding_targets=2, fail_fast=False)

    def attributes(self) -> dict:
        return {k: getattr(self, k) for k in GOAL_KEYS}


# `make suites`: short trials, a few seconds of evidence per bound; `make nightly`: CSIT's
# usual 1 s final trials and 21 s duration sum, width 0.5 %.
QUICK_GOALS = (Goal("ndr", 0.0, 0.5, 0.2, 0.5, 2.0, 0.05),
               Goal("pdr", 0.005, 0.5, 0.2, 0.5, 2.0, 0.05))
NIGHTLY_GOALS = (Goal("ndr", 0.0, 0.5, 1.0, 1.0, 21.0, 0.005),
                 Goal("pdr", 0.005, 0.5, 1.0, 1.0, 21.0, 0.005))


@dataclass
class MlrConfig:
    max_rate_pps: float                         # RFC 9971 max load
    min_rate_pps: float = 10_000.0              # RFC 9971 min load
    goals: tuple[Goal, ...] = QUICK_GOALS
    max_unsent_ratio: float = 0.001             # forgiven unsent (ndr.judge's)
    latency_fractions: tuple[float, ...] = (0.1, 0.5, 0.9)
    latency_trial_s: float = 1.0
    search_duration_max_s: float = 1800.0       # the library gives up after this long (a safety stop)
    warmup_s: float = 0.0                       # one ignored trial at max load first

    def __post_init__(self):
        if not 0 < self.min_rate_pps < self.max_rate_pps:
            raise ValueError(f"min_load: need 0 < min_load ({self.min_rate_pps}) < max_load "
                             f"({self.max_rate_pps})")
        if not self.goals:
            raise ValueError("goals: at least one search goal is needed")
        names = [g.name for g in self.goals]
        if len(set(names)) != len(names):
            raise ValueError(f"goals: goal names must differ, got {names}")
        for g in self.goals:
            for key, why in g.problems():
                raise ValueError(f"goals.{g.name}.{key}: {why}")

    @property
    def trial_duration_s(self) -> float:
        return max(g.goal_final_trial_duration for g in self.goals)


def goals_from_section(section: dict | None, nightly: bool = False) -> tuple[Goal, ...]:
    """The profile's ``search.goals`` (validated by dut/profiles/schema.py) as Goals; the quick
    or nightly defaults when the profile states none."""
    goals = (section or {}).get("goals")
    if not goals:
        return NIGHTLY_GOALS if nightly else QUICK_GOALS
    return tuple(Goal(name=g["name"], **{k: float(g[k]) for k in GOAL_KEYS if k in g})
                 for g in goals)


@dataclass
class GoalOutcome:
    """One goal's result as RFC 9971 states it. Rates in packets per second; None = no such
    bound (e.g. min load was an upper bound: no lower bound, conditional throughput None)."""
    goal: Goal
    conditional_throughput_pps: float | None
    relevant_lower_bound_pps: float | None
    relevant_upper_bound_pps: float | None
    lower_bound_trials: list[Trial] = field(default_factory=list)
    upper_bound_trials: list[Trial] = field(default_factory=list)
    generator_limited: bool = False     # a generator-limit failure at/above the upper bound
    backpressure: bool = False          # a backpressure failure at/above the upper bound

    # ndr.SearchResult's face, so callers read either search the same way
    @property
    def rate_pps(self) -> float:
        return self.conditional_throughput_pps or 0.0

    @property
    def verified(self) -> bool:
        """A lower bound at the goal's final trial duration was found."""
        return self.relevant_lower_bound_pps is not None

    @property
    def target(self) -> str:
        return self.goal.name

    def as_record(self) -> dict:
        def trial(t: Trial) -> dict:
            out = {"rate_pps": round(t.rate_pps, 3), "duration_s": t.duration_s, "tx": t.tx,
                   "rx": t.rx, "lost": t.lost, "unsent": t.unsent,
                   "loss_ratio": t.loss_ratio, "reason": t.reason}
            if t.dut:
                out["dut"] = {k: v for k, v in t.dut.items() if v is not None}
            if t.cause:
                out["cause"] = t.cause
            if t.rig:
                out["rig"] = dict(t.rig)
            return out
        return {"name": self.goal.name, **self.goal.attributes(),
                "conditional_throughput_pps": self.conditional_throughput_pps,
                "relevant_lower_bound_pps": self.relevant_lower_bound_pps,
                "relevant_upper_bound_pps": self.relevant_upper_bound_pps,
                "lower_bound_trials": [trial(t) for t in self.lower_bound_trials],
                "upper_bound_trials": [trial(t) for t in self.upper_bound_trials],
                "generator_limited": self.generator_limited, "backpressure": self.backpressure}


@dataclass
class MlrResult:
    goals: dict[str, GoalOutcome]
    latency: dict[float, LatencyStats | None]
    trials: list[Trial]
    search_time_s: float
    config: MlrConfig

    @property
    def ndr(self) -> GoalOutcome:
        return self.goals.get("ndr") or min(self.goals.values(),
                                            key=lambda o: o.goal.goal_loss_ratio)

    @property
    def pdr(self) -> GoalOutcome:
        return self.goals.get("pdr") or max(self.goals.values(),
                                            key=lambda o: o.goal.goal_loss_ratio)

    def metrics(self) -> dict[str, float]:
        """<goal>_mpps (its conditional throughput) for every goal, search_trials,
        search_time_s, and latency p50/p99 at the fractions of the PDR goal's rate."""
        m: dict[str, float] = {}
        for name, o in self.goals.items():
            m[f"{name}_mpps"] = o.rate_pps / 1e6
        m["trials"] = float(len(self.trials))
        m["search_time_s"] = self.search_time_s
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

    def search_record(self) -> dict:
        """The record's ``search`` field (reports/schema/result-v2.json)."""
        c = self.config
        out = {"method": "mlrsearch", "library": LIBRARY, "min_load_pps": c.min_rate_pps,
               "max_load_pps": c.max_rate_pps,
               "trials": sum(1 for t in self.trials if t.target == "mlr"),
               "search_time_s": round(self.search_time_s, 3),
               "goals": [o.as_record() for o in self.goals.values()]}
        if any(t.dut for t in self.trials):
            # every trial's DUT telemetry beside its load and loss, in trial order
            out["trial_log"] = [{"target": t.target, "rate_pps": round(t.rate_pps, 3),
                                 "duration_s": t.duration_s, "loss_ratio": t.loss_ratio,
                                 "reason": t.reason, "cause": t.cause, "rig": dict(t.rig),
                                 "dut": {k: v for k, v in t.dut.items() if v is not None}}
                                for t in self.trials][:400]
        return out


def _fmt(pps: float | None) -> str:
    return "-" if pps is None else f"{pps / 1e6:.3f} Mpps"


class CountersMeasurer(AbstractMeasurer):
    """MLRsearch's measurer over ``measure(duration_s, rate_pps) -> Counters``: keeps every
    trial (with ndr.judge's verdict against the tightest goal) for the record."""

    def __init__(self, measure: Measure, cfg: MlrConfig, progress: Callable[[str], None]):
        self._measure, self.cfg, self.progress = measure, cfg, progress
        self.tightest = min(g.goal_loss_ratio for g in cfg.goals)
        self.trials: list[Trial] = []
        self.last_counters: Counters | None = None

    def trial(self, target: str, duration: float, rate: float, loss_target: float
              ) -> tuple[Trial, Counters]:
        c = self._measure(duration, rate)
        self.last_counters = c
        ok, why = judge(c, loss_target, self.cfg.max_unsent_ratio)
        offered = sum(s.offered for s in c.streams.values()) or (c.tx + c.unsent)
        t = Trial(target, rate, duration, offered, c.tx, c.rx, c.lost, c.unsent, c.loss_ratio,
                  ok, why, dict(c.dut), trial_cause(ok, why, c.rig, rate), dict(c.rig))
        self.trials.append(t)
        self.progress(f"{target} trial {len(self.trials)}: {_fmt(rate)} for {duration:g} s: "
                      f"tx {c.tx} rx {c.rx} lost {c.lost} unsent {c.unsent} -> "
                      f"{'ok' if ok else why + ', ' + t.cause}{fmt_rig(c.rig)}")
        return t, c

    def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
        t, c = self.trial("mlr", intended_duration, intended_load, self.tightest)
        # unsent within the generator's slack is forgiven (not the DUT's loss)
        intended = t.offered if t.unsent > self.cfg.max_unsent_ratio * t.offered else c.tx
        return MeasurementResult(intended_duration=intended_duration, intended_load=intended_load,
                                 offered_count=c.tx, loss_count=max(0, c.lost),
                                 intended_count=max(intended, c.tx))


def _near(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1.0)


def search_mlr(measure: Measure, cfg: MlrConfig,
               progress: Callable[[str], None] = print) -> MlrResult:
    """Every goal of cfg in one MLRsearch run, then latency trials at cfg.latency_fractions of
    the PDR goal's conditional throughput."""
    meas = CountersMeasurer(measure, cfg, progress)
    config = Config()
    config.goals = [g.search_goal() for g in cfg.goals]
    config.max_load = cfg.max_rate_pps
    config.min_load = cfg.min_rate_pps
    config.search_duration_max = cfg.search_duration_max_s
    config.warmup_duration = cfg.warmup_s or None
    started = time.monotonic()
    results = MultipleLossRatioSearch(config=config).search(
        measurer=meas, debug=lambda _line: None)
    elapsed = time.monotonic() - started
    search_trials = list(meas.trials)
    outcomes: dict[str, GoalOutcome] = {}
    for goal, search_goal in zip(cfg.goals, config.goals):
        gr = results[search_goal]
        lo = float(gr.relevant_lower_bound) if gr.relevant_lower_bound else None
        hi = float(gr.relevant_upper_bound) if gr.relevant_upper_bound else None
        ct = float(gr.conditional_throughput) if gr.conditional_throughput else None
        long_ = [t for t in search_trials if t.duration_s >= goal.goal_final_trial_duration]
        o = GoalOutcome(goal, ct, lo, hi,
                        [t for t in long_ if lo is not None and _near(t.rate_pps, lo)],
                        [t for t in long_ if hi is not None and _near(t.rate_pps, hi)])
        above = [t for t in search_trials if hi is not None and t.rate_pps >= hi * (1 - 1e-6)
                 and not t.passed]
        o.generator_limited = any(t.reason == "generator limit" for t in above)
        o.backpressure = any(t.reason == "backpressure" for t in above)
        outcomes[goal.name] = o
        progress(f"{goal.name} (loss {goal.goal_loss_ratio:g}, exceed "
                 f"{goal.goal_exceed_ratio:g}): conditional throughput {_fmt(ct)}, relevant "
                 f"bounds [{_fmt(lo)}, {_fmt(hi)}]")
    res = MlrResult(outcomes, {}, search_trials, elapsed, cfg)
    base = res.pdr.rate_pps
    for frac in cfg.latency_fractions:
        if base <= 0:
            res.latency[frac] = None
            continue
        _, c = meas.trial(f"latency@{int(frac * 100)}%", cfg.latency_trial_s, base * frac, 1.0)
        lats = [sc.latency for sc in c.streams.values() if sc.latency and sc.latency.samples]
        res.latency[frac] = lats[0] if lats else None
    res.trials = meas.trials
    return res


def spread(values: Sequence[float]) -> float | None:
    """(max - min) / median of repeated results; None when the median is 0 or no values."""
    import statistics
    if not values:
        return None
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med else None
