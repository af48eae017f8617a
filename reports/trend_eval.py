"""Which trend detector a nightly should trust: both run on real histories with injected steps.

    python -m reports trend-eval RUN_DIR... | --history FILE [--steps 5,10,20] [--reps 10]
                                 [--seed 1] [--min-nights 30] [--save-history FILE] [--out FILE]
                                 [--normalise none|ceiling|rig-index]

A history is every tracked metric (one with a better direction, reports.metrics) of every
record that all the given runs share, one value per run ("night"), oldest first: runs of the
same quick suites on one box, read from their folders, or a history file saved from them
(``--save-history``; reports/history/ keeps the one the README's figures come from).

For each series, step size s (5, 10, 20 %) and repetition, a night k is drawn at random (seeded)
in the second half of the series (not the last night: a step has two nights to be found on)
and every value from k on is made s worse (x (1 - s) for a higher-is-better metric,
x (1 + s) for lower-is-better). Each detector then sees the nights one by one, as a nightly would (the value of night t against the nights before it):

- detection rate: the share of injected steps flagged as a regression within MAX_DELAY nights
  of k; "within 2" counts those flagged on night k or k + 1 (the issue's goal: >= 95 % of
  10 % steps);
- nights to detect: median of (first flagged night - k + 1) over the detected steps;
- false alarms per 100 series-nights: on the series as recorded (nothing injected), every night
  from MIN_START on that is flagged (regression or progression) counts (goal: <= 1).

Detectors: ``mad`` (reports.trend.judge: median +- max(3 x 1.4826 x MAD, 2 %) of the last 20),
``mad2`` (reports.trend.judge_confirmed: the MAD rule, tonight and last night both beyond the
band of the 20 nights before last night), ``jumpavg`` (reports.trend.judge_jumpavg: a new segment
in the last 3 nights, >= 2 % worse) and
``csit`` (reports.trend.judge_csit: jumpavg over each night's trials where the records keep them
(``<metric>_reps`` / ``_trials`` / ``_samples`` params), a step >= 5 %, confirmed by a second
night), ``jlog`` (reports.trend.judge_jumpavg_log: jumpavg on the values' logarithms, a
candidate for latencies) and ``auto`` (the nightly's default: jumpavg for rates, mad2 for
latencies and times). A step injected at night k scales that night's trials too.

``--normalise`` (reports.trend.NORMALISERS) divides each DUT rate by the same night's rig probe
of the same record (the feed's ceiling) before any detector sees it; the steps are injected into
the DUT's raw values, never into the probe. The DUT rates that have a probe are also evaluated
raw and under every normaliser, side by side (``by_normaliser`` in the figures).

A night is a run folder (its results.jsonl), or with ``--nights DIR`` every sub-folder of DIR
(scripts/trend_history.sh writes them): the records of every results.jsonl below it and of every
``*.json`` record file in it (a suite CLI's printed record: suite, name, metrics, params).
"""
from __future__ import annotations

import dataclasses
import json
import random
import re
import statistics
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from reports.metrics import metric_direction
from reports.trend import (CEILING, CSIT_CONFIRM, CSIT_MIN_STEP, K_DEFAULT, MIN_HISTORY,
                           NORMALISE_DEFAULT, NORMALISERS, RECENT_DEFAULT, REL_FLOOR, detector_for,
                           divisor, judge, judge_confirmed, judge_csit, judge_jumpavg,
                           judge_jumpavg_log, normalised, normaliser_for, normaliser_label,
                           record_keys)
from reports.noise import REP_SUFFIXES

MAD_LAST_N = 20          # the MAD rule's history (its nightly default before jumpavg)
JUMPAVG_LAST_N = 30      # jumpavg's: whole segments
MIN_START = 10           # nights of history before a step can be injected / an alarm counted
MAX_DELAY = 5            # a step flagged later than this many nights counts as missed
MIN_NIGHTS_DEFAULT = 30
DETECTORS = ("mad", "mad2", "jumpavg", "csit", "jlog", "auto")


class HistoryError(ValueError):
    """A history that cannot be evaluated; the message names the option."""


@dataclasses.dataclass
class Series:
    label: str
    direction: int
    values: list[float]
    trials: list[list[float]] | None = None   # each night's trials (csit), when kept
    series_kind: str = ""     # dut_rate | dut_latency | rig as its records say (record_kind)
    normaliser: str = ""      # the rig probe(s) a night's value is divided by (attach_normalisers)
    divs: list | None = None  # each night's divisor (None: that night's probe is missing)

    @property
    def kind(self) -> str:
        """dut_rate | dut_latency | rig: what its records said (series_kind), else (a history
        saved before records named it) from the label's switch kind."""
        if self.series_kind:
            return self.series_kind
        m = LABEL.match(self.label)
        return series_kind(m.group(2).split(", ")[0] if m else "", self.direction)

    def runs(self) -> list:
        """What csit groups: each night's trials where kept, else its value."""
        if not self.trials:
            return list(self.values)
        return [t if t else v for v, t in zip(self.values, self.trials)]


def trials_of(record: Mapping, metric: str) -> list[float]:
    """The record's repetitions of ``metric`` (params ``<metric>_reps`` / ``_trials`` /
    ``_samples``, reports/noise.py's convention), [] when it kept none."""
    params = record.get("params") or {}
    for suffix in REP_SUFFIXES:
        reps = params.get(metric + suffix)
        if isinstance(reps, list):
            nums = [float(x) for x in reps if isinstance(x, (int, float))
                    and not isinstance(x, bool)]
            if len(nums) >= 2:
                return nums
    return []


def night_records(night: Path) -> list[dict]:
    """Every record of one night: a run folder's results.jsonl, every results.jsonl below a
    night folder, and the night folder's own ``*.json`` record files (suite, name, metrics)."""
    from reports.results import RESULTS_FILE, load_results
    night = Path(night)
    if (night / RESULTS_FILE).exists():
        return load_results(night, errors=[])
    out: list[dict] = []
    for f in sorted(night.rglob(RESULTS_FILE)):
        out += load_results(f.parent, errors=[])
    for f in sorted(night.glob("*.json")):
        try:
            rec = json.loads(f.read_text())
        except ValueError:
            continue
        if isinstance(rec, dict) and {"suite", "name", "metrics"} <= set(rec):
            out.append({**rec, "provenance": rec.get("provenance") or {}})
    return out


SERIES_KIND_PARAM = "series_kind"   # a record's params: "rig", or {metric: "rig" | "dut"}
SERIES_MARKS = ("rig", "dut")


def record_kind(record: Mapping, metric: str, where: str = "") -> str:
    """What a record's metric measures: ``rig`` when the record marks it so (params
    ``series_kind``: "rig" for the whole record, or {metric: "rig"}: e.g. the pipeline bench's
    memory-latency probe and feed ceilings beside the switch's rates) or when the record has
    no switch in the path (provenance dut_switch_kind "none"); else the DUT's, by the metric's
    direction (series_kind). A mark other than "rig" / "dut" is a HistoryError naming it."""
    mark = (record.get("params") or {}).get(SERIES_KIND_PARAM)
    if isinstance(mark, Mapping):
        mark = mark.get(metric)
    if mark is not None and mark not in SERIES_MARKS:
        raise HistoryError(f"{where or 'record'}: {record.get('suite')}/{record.get('name')} "
                           f"params.{SERIES_KIND_PARAM}[{metric}]: expected one of "
                           f"{', '.join(SERIES_MARKS)}, got {mark!r}")
    direction = metric_direction(metric)
    if mark == "rig":
        return "rig"
    if mark == "dut":
        return series_kind("", direction)
    return series_kind(str((record.get("provenance") or {}).get("dut_switch_kind", "")),
                       direction)


def series_from_runs(run_dirs: Sequence[Path], probes: dict | None = None) -> list[Series]:
    """One series per (record key, metric) present with a number in every run, oldest run
    first (run folders sort by their start time). A run may also be a night folder
    (night_records). Trials are kept when the metric's record holds them every night; the
    series' kind is what its newest night's record says (record_kind). ``probes``, when given,
    is filled with the rig probes (feed ceilings) measured on some nights but not all:
    {label: [value or None per night]} (a normaliser's missing nights, attach_normalisers)."""
    per: dict = {}
    trials: dict = {}
    kinds: dict = {}
    runs = sorted(Path(d) for d in run_dirs)
    for i, d in enumerate(runs):
        for rec in night_records(d):
            for key, value in record_keys(rec):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                per.setdefault(key, {})[i] = float(value)
                kinds[key] = record_kind(rec, key.metric, str(d))
                t = trials_of(rec, key.metric)
                if t:
                    trials.setdefault(key, {})[i] = t
    out = []
    for key, vals in sorted(per.items()):
        direction = metric_direction(key.metric)
        if probes is not None and len(vals) != len(runs) and CEILING.match(key.metric) \
                and kinds[key] == "rig":
            probes[key.label()] = [vals.get(i) for i in range(len(runs))]
        if direction == 0 or len(vals) != len(runs):
            continue
        xs = [vals[i] for i in range(len(runs))]
        if statistics.median(xs) <= 0:     # a 10 % step of 0 is 0: nothing to find
            continue
        ts = trials.get(key, {})
        out.append(Series(key.label(), direction, xs,
                          [ts[i] for i in range(len(runs))] if len(ts) == len(runs) else None,
                          kinds[key]))
    return out


def save_history(series: Sequence[Series], path: Path, source: str,
                 provenance: Sequence[Mapping] | None = None,
                 probes: Mapping[str, list] | None = None) -> Path:
    """Write the series (and each night's provenance, when known) as a history file; ``probes``:
    rig probes missing on some nights (series_from_runs), kept so a normaliser's gaps stay
    visible."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict = {"source": source}
    if provenance:
        data["nights"] = list(provenance)
    data["series"] = [{k: v for k, v in dataclasses.asdict(s).items()
                       if (v is not None or k != "trials") and (v or k != "series_kind")
                       and k not in ("normaliser", "divs")}
                      for s in series]
    if probes:
        data["probes"] = dict(probes)
    path.write_text(json.dumps(data, indent=0) + "\n")
    return path


def load_history(path: Path) -> list[Series]:
    data = json.loads(Path(path).read_text())
    out = [Series(s["label"], int(s["direction"]), [float(v) for v in s["values"]],
                  [[float(x) for x in t] for t in s["trials"]] if s.get("trials") else None,
                  str(s.get("series_kind") or "")) for s in data["series"]]
    for s in out:
        if s.series_kind and s.series_kind not in KINDS:
            raise HistoryError(f"--history: {path}: series {s.label!r}: series_kind expected "
                               f"one of {', '.join(KINDS)}, got {s.series_kind!r}")
    return out


def load_probes(path: Path) -> dict[str, list]:
    """The partial rig probes a history file keeps (save_history's ``probes``), {} if none."""
    data = json.loads(Path(path).read_text())
    return {str(k): [None if v is None else float(v) for v in vals]
            for k, vals in (data.get("probes") or {}).items()}


def attach_normalisers(series: Sequence[Series], how: str = NORMALISE_DEFAULT,
                       probes: Mapping[str, list] | None = None
                       ) -> tuple[list[Series], list[str]]:
    """Copies of the series, each DUT rate with its normaliser (reports.trend.normaliser_for:
    the same record's feed ceiling, ``how`` one of NORMALISERS) and each night's divisor, and a
    line per normalised series saying by what, or that a night's probe is missing (that night:
    judged raw against the raw history, reports.trend.normalised). The probes are the same
    record's rig series (a label's suite/name and tags), in ``series`` (every night) or
    ``probes`` (some nights); a history saved before records named their kinds (no
    series_kind) takes the feed ceilings by their names."""
    if how not in NORMALISERS:
        raise HistoryError(f"--normalise: expected one of {', '.join(NORMALISERS)}, "
                           f"got {how!r}")
    by_record: dict[str, dict[str, list]] = {}
    for s in series:
        m = LABEL.match(s.label)
        if m and (s.kind == "rig" or not s.series_kind and CEILING.match(m.group(3))):
            by_record.setdefault(f"{m.group(1)} [{m.group(2)}]", {})[m.group(3)] = s.values
    for label, vals in (probes or {}).items():
        m = LABEL.match(label)
        if m:
            by_record.setdefault(f"{m.group(1)} [{m.group(2)}]", {})[m.group(3)] = vals
    out, notes = [], []
    for s in series:
        m = LABEL.match(s.label)
        s = dataclasses.replace(s, normaliser="", divs=None)
        if how != "none" and m and s.kind == "dut_rate":
            rig = by_record.get(f"{m.group(1)} [{m.group(2)}]", {})
            names, _why = normaliser_for(m.group(3), rig, how)
            if names:
                divs = [divisor([rig[p][i] if i < len(rig[p]) else None for p in names])
                        for i in range(len(s.values))]
                s.normaliser, s.divs = normaliser_label(names), divs
                missing = [i + 1 for i, d in enumerate(divs) if d is None]
                notes.append(f"{s.label}: / {s.normaliser}" + (
                    f"; probe missing on night(s) {', '.join(map(str, missing))}: those nights "
                    f"judged raw against the raw history, left out of later nights' history"
                    if missing else ""))
        out.append(s)
    return out, notes


LABEL = re.compile(r"^(\S+) \[([^\]]*)\] (\S+)$")    # SeriesKey.label()
KINDS = ("dut_rate", "dut_latency", "rig")
# A 10 % step found within 2 nights (>= 95 %) with <= 1 false alarm per 100 nights from one
# value a night needs, for normal noise of standard deviation sigma and a known baseline, a
# threshold at z(0.99) = 2.33 sigma that 2 nights cross at least once with p >= 0.95 (each
# misses with p <= sqrt(0.05) = 0.224: z = 0.76): 10 % >= 3.09 sigma, sigma <= 3.2 %.
REACH_SIGMA = 0.10 / (2.326 + 0.759)


def series_kind(dut_switch_kind: str, direction: int) -> str:
    """What a series measures by its record's switch kind: ``rig`` when dut_switch_kind is
    "none" (no switch in the path: the generator or the rig measuring itself, e.g. softgen's
    own loopback), else the DUT's: ``dut_rate`` (higher is better) or ``dut_latency`` (lower is
    better: latencies and times). A record without the field counts as the DUT's: only a
    record that says so is set apart (record_kind also reads a record's per-metric marks)."""
    if dut_switch_kind == "none":
        return "rig"
    return "dut_rate" if direction > 0 else "dut_latency"


def by_kind(series: Sequence["Series"]) -> dict[str, list["Series"]]:
    groups = {k: [s for s in series if s.kind == k] for k in KINDS}
    return {k: v for k, v in groups.items() if v}


def sigma_of(s: "Series") -> float:
    """Robust relative standard deviation of the nights: 1.4826 MAD / median."""
    return 1.4826 * noise_of(s)


REACH_OUTLIERS = 0.05   # nights beyond +-10 % of the median: a grid or a tail, not sigma


def outlier_share(s: "Series", step: float = 0.10) -> float:
    """The share of nights as recorded that lie beyond +-step of the series' median: each one
    looks like a step of that size (a latency on a 10 ns grid whose MAD is 0 can jump 25 %)."""
    med = statistics.median(s.values)
    return sum(abs(v - med) > step * abs(med) for v in s.values) / len(s.values)


def within_reach(s: "Series") -> bool:
    """Whether a detector could meet the goal on this series from one value a night: the
    nights' sigma <= REACH_SIGMA (3.2 %) and at most REACH_OUTLIERS of them already 10 % off."""
    return sigma_of(s) <= REACH_SIGMA and outlier_share(s) <= REACH_OUTLIERS


def trials_vs_nights(s: "Series") -> tuple[float, float] | None:
    """(median relative standard deviation of a night's own trials, robust relative standard
    deviation of the nights' medians): what jumpavg takes for a run's spread (the first, CSIT's
    per-run samples) against how much the nights really move (the second). None without
    trials."""
    if not s.trials:
        return None
    within = [statistics.stdev(t) / statistics.mean(t) for t in s.trials
              if len(t) >= 2 and statistics.mean(t)]
    meds = [statistics.median(t) for t in s.trials if t]
    med = statistics.median(meds)
    mad = statistics.median(abs(m - med) for m in meds)
    return (statistics.median(within) if within else 0.0, 1.4826 * mad / abs(med) if med else 0.0)


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


def _point(run) -> float:
    return statistics.median(run) if isinstance(run, list) else run


def verdict(detector: str, history: Sequence, value, direction: int,
            divs: Sequence | None = None) -> str:
    """One night's verdict; history and value are runs (a number, or a night's trials: mad and
    jumpavg take the night's recorded value, csit the trials; auto: jumpavg for a rate, mad2
    for a latency or time, reports.trend.detector_for). ``divs``: each night's divisor, history
    then tonight (a normalised series: reports.trend.normalised, as the nightly judges it)."""
    if divs is not None:
        value, history, _, _ = normalised(value, divs[len(history)], history,
                                          divs[:len(history)], "")
    detector = detector_for(detector, direction)
    if detector == "csit":
        return judge_csit(value, history[-JUMPAVG_LAST_N:], direction, CSIT_MIN_STEP,
                          CSIT_CONFIRM, MIN_HISTORY, RECENT_DEFAULT)[0].verdict
    value = _point(value)
    history = [_point(h) for h in history]
    if detector == "mad":
        return judge(value, history[-MAD_LAST_N:], direction, K_DEFAULT, REL_FLOOR,
                     MIN_HISTORY).verdict
    if detector == "mad2":
        return judge_confirmed(value, history[-MAD_LAST_N - 1:], direction, K_DEFAULT, REL_FLOOR,
                               MIN_HISTORY, MAD_LAST_N).verdict
    if detector == "jlog":
        return judge_jumpavg_log(value, history[-JUMPAVG_LAST_N:], direction, REL_FLOOR,
                                 MIN_HISTORY, RECENT_DEFAULT)[0].verdict
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
        """A detector that meets the goal (>= 95 % of 10 % steps within 2 nights, <= 1 false
        alarm per 100 series-nights) wins; otherwise fewer false alarms per 10 % step found
        within 2 nights (what a reader of the nightly pays for each real regression it is told
        of); ties go to the better 10 % rate within 2 nights."""
        def score(d):
            s10 = next((s for s in self.steps if s.detector == d and s.step_pct == 10), None)
            within = s10.within_2_rate if s10 else 0.0
            fa = self.false_alarms_per_100(d)
            return (within >= 0.95 and fa <= 1.0, -(fa / within if within else float("inf")),
                    within)
        return max([d for d in DETECTORS if d in self.false_alarms], key=score)

    def false_alarms_per_step_found(self, detector: str) -> float | None:
        """False alarms per 100 series-nights / share of 10 % steps found within 2 nights."""
        s10 = next((s for s in self.steps if s.detector == detector and s.step_pct == 10), None)
        if s10 is None or not s10.within_2_rate:
            return None
        return self.false_alarms_per_100(detector) / (100 * s10.within_2_rate)

    def as_dict(self) -> dict:
        return {"n_series": self.n_series, "n_nights": self.n_nights,
                "series_nights": self.series_nights,
                "false_alarms_per_100_series_nights": {d: round(self.false_alarms_per_100(d), 3)
                                                       for d in DETECTORS},
                "steps": [{"detector": s.detector, "step_pct": s.step_pct, "injected": s.injected,
                           "detection_rate": round(s.detection_rate, 4),
                           "within_2_nights_rate": round(s.within_2_rate, 4),
                           "median_nights_to_detect": s.median_nights} for s in self.steps],
                "false_alarms_per_10pct_step_found": {
                    d: (None if self.false_alarms_per_step_found(d) is None
                        else round(self.false_alarms_per_step_found(d), 3)) for d in DETECTORS},
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


def scaled(run, factor: float):
    return [x * factor for x in run] if isinstance(run, list) else run * factor


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
                # the step has two nights to be seen on (the goal: found within 2 runs)
                k = rnd.randint(max(MIN_START, len(s.values) // 2), len(s.values) - 2)
                factor = 1 - pct / 100 if s.direction > 0 else 1 + pct / 100
                xs = [v * factor if i >= k else v for i, v in enumerate(s.values)]
                rs = [scaled(r, factor) if i >= k else r for i, r in enumerate(s.runs())]
                # the step is the DUT's: injected into its raw values, never into the probe
                # (a normalised series divides the stepped value by the night's own probe)
                for d in DETECTORS:
                    r = per[d]
                    r.injected += 1
                    ys = rs if d == "csit" else xs
                    for t in range(k, min(len(xs), k + MAX_DELAY)):
                        if verdict(d, ys[:t], ys[t], s.direction, s.divs) == "regression":
                            r.detected += 1
                            r.within_2 += t - k + 1 <= 2
                            r.nights_to_detect.append(t - k + 1)
                            break
        results += [per[d] for d in DETECTORS]
    false = {d: 0 for d in DETECTORS}
    series_nights = 0
    for s in series:
        runs = s.runs()
        for t in range(MIN_START, len(s.values)):
            series_nights += 1
            for d in DETECTORS:
                ys = runs if d == "csit" else s.values
                if verdict(d, ys[:t], ys[t], s.direction, s.divs) in ("regression",
                                                                                  "progression"):
                    false[d] += 1
    return Evaluation(results, false, series_nights, len(series), nights)


def _detector_cells(ev: Evaluation, step_pct: float) -> list[str]:
    """Each detector's "found within 2 nights %/false alarms per 100" cell, * = meets the goal."""
    cells = []
    for d in DETECTORS:
        st = next(x for x in ev.steps if x.detector == d and x.step_pct == step_pct)
        fa = ev.false_alarms_per_100(d)
        ok = "*" if st.within_2_rate >= 0.95 and fa <= 1.0 else " "
        cells.append(f"{100 * st.within_2_rate:5.1f}%/{fa:5.1f}{ok}")
    return cells


def side_by_side(evals: Mapping[str, Evaluation], groups: Mapping[str, Sequence[Series]],
                 step_pct: float = 10) -> str:
    """One line per group: series (within reach), then each detector's share of step_pct %
    steps found within 2 nights / false alarms per 100 series-nights; * = meets the goal."""
    head = f"{'group':12} {'series':>6} {'reach':>5}  " + "  ".join(f"{d:>14}" for d in DETECTORS)
    lines = [head, "-" * len(head)]
    for name, ev in evals.items():
        cells = _detector_cells(ev, step_pct)
        ss = groups[name]
        lines.append(f"{name:12} {len(ss):6} {sum(within_reach(x) for x in ss):5}  "
                     + "  ".join(f"{c:>14}" for c in cells))
    lines.append(f"({step_pct:g} % steps found within 2 nights / false alarms per 100 "
                 f"series-nights; * meets the goal)")
    return "\n".join(lines)


def normaliser_table(evals: Mapping[str, Evaluation], step_pct: float = 10) -> str:
    """One line per normaliser: each detector's step_pct % steps found within 2 nights / false
    alarms per 100 series-nights on the same series; * = meets the goal."""
    head = f"{'normaliser':12}  " + "  ".join(f"{d:>14}" for d in DETECTORS)
    lines = [head, "-" * len(head)]
    for name, ev in evals.items():
        cells = _detector_cells(ev, step_pct)
        lines.append(f"{name:12}  " + "  ".join(f"{c:>14}" for c in cells))
    lines.append(f"({step_pct:g} % steps found within 2 nights / false alarms per 100 "
                 f"series-nights; * meets the goal)")
    return "\n".join(lines)


def main(args) -> int:
    nights_prov = None
    probes: dict = {}
    how = getattr(args, "normalise", NORMALISE_DEFAULT) or NORMALISE_DEFAULT
    if how not in NORMALISERS:
        raise HistoryError(f"--normalise: expected one of {', '.join(NORMALISERS)}, "
                           f"got {how!r}")
    if args.history:
        series = load_history(Path(args.history))
        probes = load_probes(Path(args.history))
        source = args.history
    elif args.nights:
        root = Path(args.nights)
        nights = sorted(d for d in root.iterdir() if d.is_dir()) if root.is_dir() else []
        if not nights:
            raise HistoryError(f"--nights: no night folders in {root}")
        series = series_from_runs(nights, probes)
        source = f"{len(nights)} night folders ({root.name})"
        nights_prov = [json.loads((d / "night.json").read_text()) if (d / "night.json").exists()
                       else {"folder": d.name} for d in nights]
    else:
        if not args.run_dirs:
            raise HistoryError("RUN_DIR: give the runs' folders, --nights DIR or --history FILE")
        series = series_from_runs([Path(d) for d in args.run_dirs], probes)
        source = f"{len(args.run_dirs)} run folders"
    if args.save_history:
        saved = save_history(series, Path(args.save_history), source, nights_prov, probes)
        print(f"history: {saved}")
    steps = [float(x) for x in str(args.steps).split(",") if x.strip()]
    raw = series
    series, notes = attach_normalisers(raw, how, probes)
    print(f"normalise: {how}" + "".join(f"\n  {n}" for n in notes)
          + ("" if notes or how == "none" else " (no DUT rate has a rig probe to divide by)"))
    # the same DUT rates raw and under every normaliser, the same injected steps (seed)
    by_norm: dict = {}
    normalisable = {s.label for s in attach_normalisers(raw, "ceiling", probes)[0] if s.divs}
    if normalisable:
        rates = [s for s in raw if s.label in normalisable]
        for h in NORMALISERS:
            by_norm[h] = evaluate([x for x in attach_normalisers(raw, h, probes)[0]
                                   if x.label in normalisable], steps, args.reps,
                                  args.seed, args.min_nights)
        print(f"\nDUT rates with a rig probe ({len(rates)}: "
              f"{', '.join(s.label.split()[-1] for s in rates)}), raw and normalised:\n"
              + normaliser_table(by_norm, 10.0 if 10.0 in steps else steps[0]))
        for h, e in by_norm.items():
            print(f"\n{h}:\n{e.table()}")
    ev = evaluate(series, steps, args.reps, args.seed, args.min_nights)
    print(f"all series:\n{ev.table()}")
    parts = {}
    for name, subset in {**by_noise(series),
                         **({"with_trials": [x for x in series if x.trials]}
                            if any(x.trials for x in series) else {})}.items():
        parts[name] = evaluate(subset, steps, args.reps, args.seed, args.min_nights)
        what = "their nights' trials kept" if name == "with_trials" else \
            f"MAD/median {'<' if name == 'steady' else '>='} {STEADY_NOISE * 100:g} %"
        print(f"\n{name} series ({what}: {', '.join(s.label for s in subset[:4])}"
              f"{', ...' if len(subset) > 4 else ''}):\n{parts[name].table()}")
    groups = by_kind(series)
    reach = [s for s in series if within_reach(s)]
    if reach:
        groups["within_reach"] = reach
    kinds = {k: evaluate(v, steps, args.reps, args.seed, args.min_nights)
             for k, v in groups.items()}
    print(f"\nby kind (rig: what the records mark rig (params series_kind) or records with "
          f"dut_switch_kind none, outside the regression goal, "
          f"counted apart; reach: series within reach of the goal, the nights' sigma "
          f"<= {100 * REACH_SIGMA:.1f} % and <= {100 * REACH_OUTLIERS:g} % of them 10 % off "
          f"the median):\n"
          + side_by_side({"all": ev, **kinds}, {"all": series, **groups},
                         10.0 if 10.0 in steps else steps[0]))
    for s in series:
        tv = trials_vs_nights(s)
        if tv:
            print(f"trials vs nights, {s.label}: a night's trials sd {100 * tv[0]:.2f} %, "
                  f"the nights' sd {100 * tv[1]:.2f} %")
    if args.out:
        Path(args.out).write_text(json.dumps(
            {"source": source, "seed": args.seed, "reps": args.reps, "normalise": how,
             "normalisers": {s.label: s.normaliser for s in series if s.normaliser},
             "normalise_notes": notes, **ev.as_dict(),
             "by_normaliser": {h: {**e.as_dict(), "series": sorted(normalisable)}
                               for h, e in by_norm.items()},
             "by_noise": {k: {**v.as_dict(), "series": [s.label for s in series
                                                        if k == "with_trials" and s.trials
                                                        or s in by_noise(series).get(k, [])]}
                          for k, v in parts.items()},
             "by_kind": {k: {**v.as_dict(), "series": [s.label for s in groups[k]],
                             "within_reach": [s.label for s in groups[k] if within_reach(s)],
                             "sigma_pct": {s.label: round(100 * sigma_of(s), 2)
                                           for s in groups[k]},
                             "nights_10pct_off_pct": {s.label: round(100 * outlier_share(s), 1)
                                                      for s in groups[k]}}
                         for k, v in kinds.items()},
             "trials_vs_nights_sd_pct": {s.label: [round(100 * x, 3) for x in tv]
                                         for s in series
                                         if (tv := trials_vs_nights(s)) is not None}},
            indent=1) + "\n")
        print(f"figures: {args.out}")
    return 0


def add_arguments(p) -> None:
    p.add_argument("run_dirs", nargs="*", help="run folders of the same quick suites, one a night")
    p.add_argument("--history", default=None, help="a history file (--save-history) instead")
    p.add_argument("--nights", default=None,
                   help="a folder of night folders (scripts/trend_history.sh) instead")
    p.add_argument("--save-history", default=None, help="write the series read from RUN_DIRs here")
    p.add_argument("--steps", default="5,10,20", help="step sizes in %% (default 5,10,20)")
    p.add_argument("--reps", type=int, default=10, help="random nights per series and step")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--min-nights", type=int, default=MIN_NIGHTS_DEFAULT)
    p.add_argument("--out", default=None, help="write the figures as JSON here")
    p.add_argument("--normalise", choices=NORMALISERS, default=NORMALISE_DEFAULT,
                   help="divide each DUT rate by the same night's rig probes (reports.trend)")


def as_mapping(ev: Evaluation) -> Mapping:
    return ev.as_dict()
