"""Which trend detector a nightly should trust: both run on real histories with injected steps.

    python -m reports trend-eval RUN_DIR... | --history FILE [--steps 5,10,20] [--reps 10]
                                 [--seed 1] [--min-nights 30] [--save-history FILE] [--out FILE]

A history is every tracked metric (one with a better direction, reports.metrics) of every
record that all the given runs share, one value per run ("night"), oldest first: runs of the
same quick suites on one box, read from their folders, or a history file saved from them
(``--save-history``; reports/history/ keeps the one the README's figures come from).

For each series, step size s (5, 10, 20 %) and repetition, a night k is drawn at random (seeded)
in the second half of the series and every value from k on is made s worse (x (1 - s) for a
higher-is-better metric, x (1 + s) for lower-is-better). Each detector then sees the nights
one by one, as a nightly would (the value of night t against the nights before it):

- detection rate: the share of injected steps flagged as a regression within MAX_DELAY nights
  of k; "within 2" counts those flagged on night k or k + 1 (the issue's goal: >= 95 % of
  10 % steps);
- nights to detect: median of (first flagged night - k + 1) over the detected steps;
- false alarms per 100 series-nights: on the series as recorded (nothing injected), every night
  from MIN_START on that is flagged (regression or progression) counts (goal: <= 1).

Detectors: ``mad`` (reports.trend.judge: median +- max(3 x 1.4826 x MAD, 2 %) of the last 20) and
``jumpavg`` (reports.trend.judge_jumpavg: a new segment in the last 3 nights, >= 2 % worse).
"""
from __future__ import annotations

import dataclasses
import json
import random
import statistics
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from reports.metrics import metric_direction
from reports.trend import (K_DEFAULT, MIN_HISTORY, RECENT_DEFAULT, REL_FLOOR, judge,
                           judge_jumpavg, record_keys)

MAD_LAST_N = 20          # the MAD rule's history (its nightly default before jumpavg)
JUMPAVG_LAST_N = 30      # jumpavg's: whole segments
MIN_START = 10           # nights of history before a step can be injected / an alarm counted
MAX_DELAY = 5            # a step flagged later than this many nights counts as missed
MIN_NIGHTS_DEFAULT = 30
DETECTORS = ("mad", "jumpavg")


class HistoryError(ValueError):
    """A history that cannot be evaluated; the message names the option."""


@dataclasses.dataclass
class Series:
    label: str
    direction: int
    values: list[float]


def series_from_runs(run_dirs: Sequence[Path]) -> list[Series]:
    """One series per (record key, metric) present with a number in every run, oldest run
    first (run folders sort by their start time)."""
    from reports.results import load_results
    per: dict = {}
    runs = sorted(Path(d) for d in run_dirs)
    for i, d in enumerate(runs):
        for rec in load_results(d, errors=[]):
            for key, value in record_keys(rec):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                per.setdefault(key, {})[i] = float(value)
    out = []
    for key, vals in sorted(per.items()):
        direction = metric_direction(key.metric)
        if direction == 0 or len(vals) != len(runs):
            continue
        xs = [vals[i] for i in range(len(runs))]
        if statistics.median(xs) <= 0:     # a 10 % step of 0 is 0: nothing to find
            continue
        out.append(Series(key.label(), direction, xs))
    return out


def save_history(series: Sequence[Series], path: Path, source: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"source": source, "series": [dataclasses.asdict(s) for s in series]},
                               indent=0) + "\n")
    return path


def load_history(path: Path) -> list[Series]:
    data = json.loads(Path(path).read_text())
    return [Series(s["label"], int(s["direction"]), [float(v) for v in s["values"]])
            for s in data["series"]]


STEADY_NOISE = 0.05      # MAD / median below this: a "steady" series (a 10 % step stands out)


def noise_of(s: Series) -> float:
    """Robust relative noise of a series: MAD / median."""
    med = statistics.median(s.values)
    mad = statistics.median(abs(v - med) for v in s.values)
    return mad / abs(med) if med else float("inf")


def by_noise(series: Sequence[Series]) -> dict[str, list[Series]]:
    """{"steady": MAD/median < 5 %, "noisy": the rest}, each only when it has series."""
    groups = {"steady": [s for s in series if noise_of(s) < STEADY_NOISE],
              "noisy": [s for s in series if noise_of(s) >= STEADY_NOISE]}
    return {k: v for k, v in groups.items() if v}


def verdict(detector: str, history: Sequence[float], value: float, direction: int) -> str:
    if detector == "mad":
        return judge(value, history[-MAD_LAST_N:], direction, K_DEFAULT, REL_FLOOR,
                     MIN_HISTORY).verdict
    j, _ = judge_jumpavg(value, history[-JUMPAVG_LAST_N:], direction, REL_FLOOR, MIN_HISTORY,
                         RECENT_DEFAULT)
    return j.verdict


@dataclasses.dataclass
class StepResult:
    detector: str
    step_pct: float
    injected: int
    detected: int
    within_2: int
    nights_to_detect: list[int]

    @property
    def detection_rate(self) -> float:
        return self.detected / self.injected if self.injected else 0.0

    @property
    def within_2_rate(self) -> float:
        return self.within_2 / self.injected if self.injected else 0.0

    @property
    def median_nights(self) -> float | None:
        return statistics.median(self.nights_to_detect) if self.nights_to_detect else None


@dataclasses.dataclass
class Evaluation:
    steps: list[StepResult]
    false_alarms: dict[str, int]
    series_nights: int
    n_series: int
    n_nights: int

    def false_alarms_per_100(self, detector: str) -> float:
        return 100.0 * self.false_alarms[detector] / self.series_nights if self.series_nights \
            else 0.0

    def best(self) -> str:
        """Fewer false alarms per detected 10 % step wins; ties go to the better 10 % rate
        within 2 nights, then to fewer false alarms."""
        def score(d):
            s10 = next((s for s in self.steps if s.detector == d and s.step_pct == 10), None)
            within = s10.within_2_rate if s10 else 0.0
            return (within >= 0.95 and self.false_alarms_per_100(d) <= 1.0, within
                    - self.false_alarms_per_100(d) / 100.0)
        return max(DETECTORS, key=score)

    def as_dict(self) -> dict:
        return {"n_series": self.n_series, "n_nights": self.n_nights,
                "series_nights": self.series_nights,
                "false_alarms_per_100_series_nights": {d: round(self.false_alarms_per_100(d), 3)
                                                       for d in DETECTORS},
                "steps": [{"detector": s.detector, "step_pct": s.step_pct, "injected": s.injected,
                           "detection_rate": round(s.detection_rate, 4),
                           "within_2_nights_rate": round(s.within_2_rate, 4),
                           "median_nights_to_detect": s.median_nights} for s in self.steps],
                "best": self.best()}

    def table(self) -> str:
        lines = ["detector  step  detected  within 2 nights  median nights to detect",
                 "--------  ----  --------  ---------------  -----------------------"]
        for s in self.steps:
            med = "-" if s.median_nights is None else f"{s.median_nights:g}"
            lines.append(f"{s.detector:8}  {s.step_pct:3g} %  {100 * s.detection_rate:6.1f} %  "
                         f"{100 * s.within_2_rate:13.1f} %  {med:>23}")
        lines.append("")
        for d in DETECTORS:
            lines.append(f"{d}: {self.false_alarms_per_100(d):.2f} false alarms per 100 "
                         f"series-nights ({self.false_alarms[d]} of {self.series_nights})")
        lines.append(f"{self.n_series} series x {self.n_nights} nights; better: {self.best()}")
        return "\n".join(lines)


def evaluate(series: Sequence[Series], steps_pct: Iterable[float] = (5, 10, 20), reps: int = 10,
             seed: int = 1, min_nights: int = MIN_NIGHTS_DEFAULT) -> Evaluation:
    series = list(series)
    if not series:
        raise HistoryError("--history/RUN_DIR: no tracked series with a value in every run")
    nights = min(len(s.values) for s in series)
    if nights < min_nights:
        raise HistoryError(f"--min-nights: history too short to group: {nights} runs, need >= "
                           f"{min_nights}")
    if nights < MIN_START + 2:
        raise HistoryError(f"--min-nights: history too short to group: {nights} runs, need >= "
                           f"{MIN_START + 2}")
    rnd = random.Random(seed)
    results = []
    for pct in steps_pct:
        per = {d: StepResult(d, float(pct), 0, 0, 0, []) for d in DETECTORS}
        for s in series:
            for _ in range(reps):
                k = rnd.randint(max(MIN_START, len(s.values) // 2), len(s.values) - 1)
                factor = 1 - pct / 100 if s.direction > 0 else 1 + pct / 100
                xs = [v * factor if i >= k else v for i, v in enumerate(s.values)]
                for d in DETECTORS:
                    r = per[d]
                    r.injected += 1
                    for t in range(k, min(len(xs), k + MAX_DELAY)):
                        if verdict(d, xs[:t], xs[t], s.direction) == "regression":
                            r.detected += 1
                            r.within_2 += t - k + 1 <= 2
                            r.nights_to_detect.append(t - k + 1)
                            break
        results += [per[d] for d in DETECTORS]
    false = {d: 0 for d in DETECTORS}
    series_nights = 0
    for s in series:
        for t in range(MIN_START, len(s.values)):
            series_nights += 1
            for d in DETECTORS:
                if verdict(d, s.values[:t], s.values[t], s.direction) in ("regression",
                                                                          "progression"):
                    false[d] += 1
    return Evaluation(results, false, series_nights, len(series), nights)


def main(args) -> int:
    if args.history:
        series = load_history(Path(args.history))
        source = args.history
    else:
        if not args.run_dirs:
            raise HistoryError("RUN_DIR: give the runs' folders or --history FILE")
        series = series_from_runs([Path(d) for d in args.run_dirs])
        source = f"{len(args.run_dirs)} run folders"
    if args.save_history:
        print(f"history: {save_history(series, Path(args.save_history), source)}")
    steps = [float(x) for x in str(args.steps).split(",") if x.strip()]
    ev = evaluate(series, steps, args.reps, args.seed, args.min_nights)
    print(f"all series:\n{ev.table()}")
    parts = {}
    for name, subset in by_noise(series).items():
        parts[name] = evaluate(subset, steps, args.reps, args.seed, args.min_nights)
        print(f"\n{name} series (MAD/median {'<' if name == 'steady' else '>='} "
              f"{STEADY_NOISE * 100:g} %: {', '.join(s.label for s in subset[:4])}"
              f"{', ...' if len(subset) > 4 else ''}):\n{parts[name].table()}")
    if args.out:
        Path(args.out).write_text(json.dumps(
            {"source": source, "seed": args.seed, "reps": args.reps, **ev.as_dict(),
             "by_noise": {k: {**v.as_dict(), "series": [s.label for s in by_noise(series)[k]]}
                          for k, v in parts.items()}}, indent=1) + "\n")
        print(f"figures: {args.out}")
    return 0


def add_arguments(p) -> None:
    p.add_argument("run_dirs", nargs="*", help="run folders of the same quick suites, one a night")
    p.add_argument("--history", default=None, help="a history file (--save-history) instead")
    p.add_argument("--save-history", default=None, help="write the series read from RUN_DIRs here")
    p.add_argument("--steps", default="5,10,20", help="step sizes in %% (default 5,10,20)")
    p.add_argument("--reps", type=int, default=10, help="random nights per series and step")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-nights", type=int, default=MIN_NIGHTS_DEFAULT)
    p.add_argument("--out", default=None, help="write the figures as JSON here")


def as_mapping(ev: Evaluation) -> Mapping:
    return ev.as_dict()
