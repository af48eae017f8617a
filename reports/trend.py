"""Nightly trend: compare each metric of a run with its history in InfluxDB.

Five detectors; the default (DETECTOR_DEFAULT) was chosen by `python -m reports trend-eval`
(reports/trend_eval.py, figures in reports/README.md): ``auto``, jumpavg for rates (higher is
better) and mad2 for latencies and times (lower is better). On the quiet box's history it found
every 10 % step in the DUT's rates within 2 nights with no false alarm (jumpavg alone does the
same there, but raises about 8x mad2's false alarms on heavy-tailed latencies, where mad2 is the
quietest), and it raised the fewest false alarms per step found over all series; on the loaded
box (no DUT series at all) it ties mad2. jumpavg's segments are drawn on the trend page either
way (``--detector jumpavg|mad|mad2|csit`` lets one rule decide every series). A DUT rate is
judged divided by the same night's ceiling of its feed, a rig probe of the same record
(NORMALISE_DEFAULT, ``--normalise``; see "normalising" below), so a host that got faster or
slower is not read as the switch's doing:

- ``jumpavg`` (FD.io CSIT's change-point grouping, PyPI jumpavg): the history and the new value
  are split into statistically consistent segments (minimum description length, each segment
  a normal population of its own). A regression / progression is a last segment that started
  in the last RECENT_DEFAULT runs and is worse / better than the segment before it by at least
  REL_FLOOR; its size is the change of the segment averages and it starts in the commit range
  (last commit of the previous segment, first commit of the new one]. The trend page draws the
  segments.
- ``mad``: the rule below (each value against the median +- noise band of the last N points).
- ``mad2``: the MAD rule confirmed by a second run (judge_confirmed): tonight's value and last
  night's both beyond the band of the runs before last night, the same way.
- ``auto``: jumpavg for a higher-is-better metric, mad2 for a lower-is-better one
  (detector_for).
- ``csit``: FD.io CSIT's trending practice on the same library (judge_csit): each run enters
  jumpavg as its trials where a record keeps them (``<metric>_reps`` params: the run's spread is
  its trials' spread), a change below CSIT_MIN_STEP (5 %) is not reported, and the new segment
  must already hold CSIT_CONFIRM (2) runs, so one odd night raises nothing and a real step is
  named on its second night. The nightly reads one value per point from InfluxDB, so there it
  groups single values; trend-eval (reports/trend_eval.py) reads the trials from run folders.

For every record of the run and every metric in it, the history is the last N points of the
same series before the run started: same suite (measurement), name, profile, dut_switch_kind,
generator and port_kind, and the testbed (testbed_id, pool: a new testbed or firmware is a new
series, not a regression; git_sha is deliberately not part of the key: the point is to compare
across commits). Then:

    median  = median(history)
    mad     = median(|x - median|)                     (median absolute deviation)
    band    = max(K * 1.4826 * mad, REL_FLOOR * |median|, ABS_FLOOR)
    verdict = ok           if |value - median| <= band
              regression   if the value moved beyond the band in the worse direction
              progression  if it moved beyond the band in the better direction
              untracked    if the metric has no better direction (counts, sizes, ...)
              new          if there are fewer than MIN_HISTORY points of history

1.4826 * MAD estimates the standard deviation for normal noise, and unlike the standard
deviation one outlier night does not widen the band. REL_FLOOR keeps a perfectly stable history
(MAD = 0) from flagging every tiny wobble. K = 3 by default.

Direction of a metric (metric_direction), from the snake_case tokens of its name, first rule
that applies wins:

    1. a token in LOWER_WORDS  (latency, lost, loss, drop(s), error(s), fail(ed), miss(es),
       jitter, timeout(s), unsent, retries, cycles, ooo, dup, spread, ...)    -> lower is better
    2. the last token is a rate unit in HIGHER_UNITS (mpps, kpps, pps, mlps, mbps, gbps, ...)
                                                                              -> higher is better
    3. the last token is a time unit in LOWER_UNITS (ns, us, ms, s, sec)      -> lower is better
    4. any other token is a rate unit (tx_mpps_vs_testpmd_ratio)              -> higher is better
    5. any other token is a time unit (p99_us_vs_peer_ratio)                  -> lower is better
    6. a token in HIGHER_WORDS (ok, pass(ed), hit(s), ndr, pdr, throughput, goodput, speedup,
       score, success, rate)                                                  -> higher is better
    7. otherwise                                                              -> 0: not judged

So `rx_mpps`, `ndr_mpps`, `ok`, `ndr_vs_peer_ratio` are higher-is-better; `latency_p99_us`,
`high_ms`, `loss_ratio`, `latency_vs_peer_ratio`, `lost_pkts` are lower-is-better; `tx_pkts`
and `flows` are not judged. A plain `*_ratio` gets its direction from its other words (ratios
against a peer are ratios of throughput or of latency). DIRECTION_OVERRIDES wins over the
rules for names that read wrong.

Booleans count as 1/0 (True better for `ok`). Pure functions take plain values; the only I/O is
fetch_history (Flux over influxdb-client) and write_trend_page.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
import statistics
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from reports.metrics import (DIRECTION_OVERRIDES, HIGHER_UNITS, HIGHER_WORDS,  # noqa: F401
                             LOWER_UNITS, LOWER_WORDS, metric_direction)

DETECTORS = ("jumpavg", "mad", "mad2", "csit", "jlog", "auto")
DETECTOR_DEFAULT = "auto"      # trend-eval's winner on this box's histories (reports/README.md)
RECENT_DEFAULT = 3             # jumpavg: a change-point this young (in runs) is reported
K_DEFAULT = 3.0
MAD_TO_SIGMA = 1.4826
REL_FLOOR = 0.02
ABS_FLOOR = 1e-9
MIN_HISTORY = 3
CSIT_MIN_STEP = 0.05          # csit: a segment change below this is not reported (relative)
CSIT_CONFIRM = 2              # csit: the new segment must hold this many runs (a confirmation)
LAST_N_DEFAULT = 30  # jumpavg groups whole segments: a month of nights (the MAD rule used 20)
TREND_HTML = "trend.html"
TREND_JSON = "trend.json"
MAX_PLOTS = 400  # more plots than that make a page nobody reads; the table still has all

def detector_for(detector: str, direction: int) -> str:
    """The detector that judges a series: ``auto`` is jumpavg for a higher-is-better metric
    (rates: near-normal night to night, where jumpavg's segments found every 10 % step with no
    false alarm) and mad2 for a lower-is-better one (latencies and times: heavy tails, where
    jumpavg's normal segments split at every outlier); the others judge every series."""
    if detector != "auto":
        return detector
    return "jumpavg" if direction > 0 else "mad2"


def median_mad(values: Sequence[float]) -> tuple[float, float]:
    """(median, median absolute deviation). ValueError on an empty sequence."""
    if not values:
        raise ValueError("median_mad of no values")
    med = statistics.median(values)
    return med, statistics.median(abs(v - med) for v in values)


def noise_band(median: float, mad: float, k: float = K_DEFAULT,
               rel_floor: float = REL_FLOOR, abs_floor: float = ABS_FLOOR) -> float:
    """Half-width of the band around the median inside which a change is noise."""
    return max(k * MAD_TO_SIGMA * mad, rel_floor * abs(median), abs_floor)


@dataclasses.dataclass
class Judgement:
    verdict: str            # ok | regression | progression | untracked | new | not_measured
    value: float | None
    median: float | None = None
    mad: float | None = None
    band: float | None = None
    n_history: int = 0
    direction: int = 0
    change_pct: float | None = None


def as_number(value) -> float | None:
    if value is None or isinstance(value, str):
        return None
    v = float(value)  # bool -> 1.0/0.0
    return v if math.isfinite(v) else None


def judge(value, history: Sequence[float], direction: int, k: float = K_DEFAULT,
          rel_floor: float = REL_FLOOR, min_history: int = MIN_HISTORY,
          other_mad: float = 0.0) -> Judgement:
    """Verdict for one new value against its history (oldest first; only values matter).

    This is the one rule for "moved beyond the noise": the nightly trend (history = earlier
    nights) and `reports compare` (history = run A's repetitions, value = run B's median,
    other_mad = the MAD of run B's own repetitions; the wider of the two noises counts) both
    call it."""
    v = as_number(value)
    hist = [h for h in (as_number(x) for x in history) if h is not None]
    if v is None:
        return Judgement("not_measured", None, n_history=len(hist), direction=direction)
    if len(hist) < min_history:
        return Judgement("new" if direction else "untracked", v, n_history=len(hist),
                         direction=direction)
    med, mad = median_mad(hist)
    mad = max(mad, other_mad or 0.0)
    band = noise_band(med, mad, k, rel_floor)
    delta = v - med
    change = (delta / abs(med) * 100.0) if med != 0 else None
    j = Judgement("ok", v, med, mad, band, len(hist), direction, change)
    if direction == 0:
        j.verdict = "untracked"
    elif abs(delta) > band:
        j.verdict = "progression" if delta * direction > 0 else "regression"
    return j


def judge_confirmed(value, history: Sequence[float], direction: int, k: float = K_DEFAULT,
                    rel_floor: float = REL_FLOOR, min_history: int = MIN_HISTORY,
                    last_n: int = 20) -> Judgement:
    """``mad2``: the MAD rule confirmed by a second run. The value and the run before it are
    both judged against the last_n runs before that one; a regression / progression only when
    both moved beyond the band the same way (one odd night raises nothing; a step is named on
    its second night). The judgement's figures are the value's."""
    hist = [h for h in (as_number(x) for x in history) if h is not None]
    base = hist[:-1][-last_n:]
    j = judge(value, base, direction, k, rel_floor, min_history)
    j.n_history = len(hist)
    if j.verdict not in ("regression", "progression"):
        return j
    prev = judge(hist[-1], base, direction, k, rel_floor, min_history)
    if prev.verdict != j.verdict:
        j.verdict = "ok"
    return j


# ---- change-point grouping (jumpavg) -----------------------------------------------------------

@dataclasses.dataclass
class Segment:
    """A statistically consistent run of a series: values[start:end]."""
    start: int
    end: int
    avg: float
    stdev: float
    verdict: str                 # first | ok (a step below rel_floor) | regression | progression
                                 # | changed (a metric without direction)
    change_pct: float | None = None   # avg against the previous segment's, %


def _run_of(x) -> float | list[float] | None:
    """A run as jumpavg takes it: a number, or the list of its trials' numbers (None: no value)."""
    if isinstance(x, (list, tuple)):
        trials = [t for t in (as_number(v) for v in x) if t is not None]
        if not trials:
            return None
        return trials if len(trials) > 1 else trials[0]
    return as_number(x)


def _run_value(run) -> float:
    """The run's point value: its trials' median (CSIT trends per-run values of its trials)."""
    return statistics.median(run) if isinstance(run, list) else float(run)


def group_series(values: Sequence, direction: int,
                 rel_floor: float = REL_FLOOR) -> list[Segment]:
    """jumpavg's grouping of a series (oldest first) into segments, each judged against the one
    before it by the metric's direction. A step smaller than rel_floor is "ok" (real, but not
    worth a night's attention). A value may be a list of the run's trials: jumpavg then takes
    the run as one indivisible sample whose spread is the trials' (AvgStdevStats.for_runs)."""
    from jumpavg import classify
    vals = [[float(t) for t in v] if isinstance(v, (list, tuple)) else float(v) for v in values]
    if not vals:
        return []
    low = min(min(v) if isinstance(v, list) else v for v in vals)
    shift = -low if low < 0 else 0.0    # jumpavg counts bits of non-negative values
    groups = classify([[t + shift for t in v] if isinstance(v, list) else v + shift
                       for v in vals])
    out: list[Segment] = []
    pos = 0
    for g in groups:
        n = len(g.run_list)
        avg = g.stats.avg - shift
        verdict, change = "first", None
        if out:
            prev = out[-1].avg
            change = (avg - prev) / abs(prev) * 100.0 if prev else None
            rel = abs(avg - prev) / abs(prev) if prev else math.inf
            if rel < rel_floor:
                verdict = "ok"
            elif direction == 0:
                verdict = "changed"
            else:
                verdict = "progression" if (avg - prev) * direction > 0 else "regression"
        out.append(Segment(pos, pos + n, avg, g.stats.stdev, verdict, change))
        pos += n
    return out


def judge_jumpavg(value, history: Sequence[float], direction: int, rel_floor: float = REL_FLOOR,
                  min_history: int = MIN_HISTORY, recent: int = RECENT_DEFAULT
                  ) -> tuple[Judgement, list[Segment]]:
    """Verdict for a new value: group history + [value]; a regression / progression when the
    last segment began within the last `recent` points and is worse / better than the one
    before it. median = the reference segment's average (the one before a change, else the
    last one), band = its standard deviation."""
    v = as_number(value)
    hist = [h for h in (as_number(x) for x in history) if h is not None]
    if v is None:
        return Judgement("not_measured", None, n_history=len(hist), direction=direction), []
    if len(hist) < min_history:
        return Judgement("new" if direction else "untracked", v, n_history=len(hist),
                         direction=direction), []
    segs = group_series(hist + [v], direction, rel_floor)
    last = segs[-1]
    n = len(hist) + 1
    changed = len(segs) >= 2 and last.start >= n - recent and \
        last.verdict in ("regression", "progression")
    return _segments_judgement(v, segs, changed, len(hist), direction), segs


def _segments_judgement(point: float, segs: list, changed: bool, n_history: int,
                        direction: int) -> Judgement:
    """The verdict of a grouped series whose last segment is (``changed``) or is not a step:
    against the segment before it, or against its own average (pure)."""
    last = segs[-1]
    ref = segs[-2] if changed else last
    change = (point - ref.avg) / abs(ref.avg) * 100.0 if ref.avg else None
    j = Judgement("ok", point, ref.avg, None, ref.stdev, n_history, direction,
                  last.change_pct if changed else change)
    if direction == 0:
        j.verdict = "untracked"
    elif changed:
        j.verdict = last.verdict
    return j


def judge_jumpavg_log(value, history: Sequence[float], direction: int,
                      rel_floor: float = REL_FLOOR, min_history: int = MIN_HISTORY,
                      recent: int = RECENT_DEFAULT) -> tuple[Judgement, list[Segment]]:
    """``jlog``: jumpavg on the values' logarithms (1 + ln(v / min)), for a latency or a time whose
    nights scatter multiplicatively with a long upper tail: there jumpavg's normal segments
    split at every tail night, while in log space a tail is a few widths, not a few hundred.
    The segments come back in the values' units (avg = the segment's geometric mean) and are
    judged as judge_jumpavg's: a step >= rel_floor, begun within the last ``recent`` runs. A
    series with a value <= 0 has no logarithm: judge_jumpavg judges it."""
    v = as_number(value)
    hist = [h for h in (as_number(x) for x in history) if h is not None]
    if v is None or v <= 0 or min(hist, default=1.0) <= 0 or len(hist) < min_history:
        return judge_jumpavg(value, history, direction, rel_floor, min_history, recent)
    low = min(hist + [v])
    # 1 + ln(v / min): jumpavg counts bits against the largest value, which must be > 0
    logs = group_series([1.0 + math.log(x / low) for x in hist + [v]], direction, 0.0)
    segs: list[Segment] = []
    for g in logs:
        avg = low * math.exp(g.avg - 1.0)
        verdict, change = "first", None
        if segs:
            prev = segs[-1].avg
            change = (avg - prev) / prev * 100.0
            if abs(avg - prev) / prev < rel_floor:
                verdict = "ok"
            elif direction == 0:
                verdict = "changed"
            else:
                verdict = "progression" if (avg - prev) * direction > 0 else "regression"
        # the spread in the values' units: the geometric sd's upper half-width
        segs.append(Segment(g.start, g.end, avg, avg * math.expm1(g.stdev), verdict, change))
    n = len(hist) + 1
    last = segs[-1]
    changed = len(segs) >= 2 and last.start >= n - recent and \
        last.verdict in ("regression", "progression")
    return _segments_judgement(v, segs, changed, len(hist), direction), segs


def judge_csit(value, history: Sequence, direction: int, min_step: float = CSIT_MIN_STEP,
               confirm: int = CSIT_CONFIRM, min_history: int = MIN_HISTORY,
               recent: int = RECENT_DEFAULT) -> tuple[Judgement, list[Segment]]:
    """FD.io CSIT's trending practice on jumpavg: each run enters the grouping as its trials
    (a list: the run's spread is the trials' spread; a plain number where a run kept one value),
    a change smaller than ``min_step`` (relative) is not reported, and the new segment must
    already hold ``confirm`` runs (the run that started it and a confirmation), so one odd night
    raises nothing and a real step is named on its second night. Otherwise as judge_jumpavg:
    a regression / progression is a last segment begun within the last ``recent`` runs."""
    v = _run_of(value)
    hist = [h for h in (_run_of(x) for x in history) if h is not None]
    if v is None:
        return Judgement("not_measured", None, n_history=len(hist), direction=direction), []
    point = _run_value(v)
    if len(hist) < min_history:
        return Judgement("new" if direction else "untracked", point, n_history=len(hist),
                         direction=direction), []
    segs = group_series(hist + [v], direction, min_step)
    last = segs[-1]
    n = len(hist) + 1
    changed = len(segs) >= 2 and n - recent <= last.start <= n - max(1, confirm) and \
        last.verdict in ("regression", "progression")
    return _segments_judgement(point, segs, changed, len(hist), direction), segs


# ---- normalising a DUT rate by the same night's rig probes (issue 40) --------------------------
#
# A host that gets faster or slower moves every rate measured on it: on the 64 nights of one
# build (reports/history/quiet-box-6fcd266-64-nights.json) ofbench's rate rose 4.5 % between two
# lock holds while the feed alone on the same lcore (the feed's ceiling, a rig probe in the same
# record) rose 3.5 %. Dividing the DUT's rate by the same night's ceiling of the same feed keeps
# what the switch did and leaves most of what the host did out (the ratio moved 0.8 %).
#
#   none       the raw value
#   ceiling    value / feed_<feed>_ceiling_mpps of the same record (the feed named in the metric,
#              or the record's only feed)
#   rig-index  value / the geometric mean of that feed's ceiling probes (the windows' median and
#              the best window: feed_<feed>_ceiling_mpps, feed_<feed>_ceiling_best_mpps)
#
# Only a DUT rate (a rate unit in its name: mpps, mlps, ...) is normalised; a ratio, a time or a
# rig series is judged as measured. A night whose probe is missing is never divided by anything
# else: tonight without it is judged raw against the raw history (and says so); a history night
# without it is left out of the normalised history (and the row says how many).

NORMALISERS = ("none", "ceiling", "rig-index")
# the nightly's default: on both 64-night histories every 10 % step of the DUT's rates found
# within 2 nights with no false alarm (raw: 82.5 % / 0.46 on the one where the host moved;
# reports/README.md "Normalised by the rig")
NORMALISE_DEFAULT = "ceiling"
CEILING = re.compile(r"^feed_(?P<feed>[a-z0-9_]+?)_ceiling(?P<best>_best)?_mpps$")


def rig_metric_names(record: Mapping) -> set[str]:
    """The metrics a record says measure the rig: params ``series_kind`` "rig" (the whole
    record) or {metric: "rig"}, or every metric when provenance dut_switch_kind is "none"."""
    mark = (record.get("params") or {}).get("series_kind")
    metrics = record.get("metrics") or {}
    if mark == "rig" or str((record.get("provenance") or {}).get("dut_switch_kind")) == "none":
        return set(metrics)
    if isinstance(mark, Mapping):
        return {m for m, k in mark.items() if k == "rig" and m in metrics}
    return set()


def normaliser_for(metric: str, rig_metrics: Iterable[str], how: str = NORMALISE_DEFAULT
                   ) -> tuple[tuple[str, ...], str]:
    """(the rig metrics whose geometric mean divides ``metric``, why none when that is empty).
    ``how`` one of NORMALISERS; a metric is normalised only when it is a rate (a rate unit
    among its words) and not itself a probe; the probe is the ceiling of the feed the metric
    names (the longest feed name that is a run of its words), else of the record's only feed."""
    if how not in NORMALISERS:
        raise ValueError(f"--normalise: expected one of {', '.join(NORMALISERS)}, got {how!r}")
    if how == "none":
        return (), ""
    rig = set(rig_metrics)
    if metric in rig or CEILING.match(metric):
        return (), "a rig probe"
    if not set(metric.lower().split("_")) & HIGHER_UNITS:
        return (), "not a rate"
    feeds: dict[str, list[str]] = {}
    for m in sorted(rig):
        c = CEILING.match(m)
        if c:
            feeds.setdefault(c.group("feed"), []).append(m)
    if not feeds:
        return (), "no feed ceiling in the record"
    named = sorted((f for f in feeds if f"_{f}_" in f"_{metric}_"), key=len, reverse=True)
    if named:
        feed = named[0]
    elif len(feeds) == 1:
        feed = next(iter(feeds))
    else:
        return (), f"{len(feeds)} feeds' ceilings, none named in the metric"
    median = f"feed_{feed}_ceiling_mpps"
    if how == "ceiling":
        return ((median,) if median in feeds[feed] else (feeds[feed][0],)), ""
    return tuple(feeds[feed]), ""


def normaliser_label(probes: Sequence[str]) -> str:
    """How the page and the figures name a normaliser: the probe, or geomean(probes)."""
    return probes[0] if len(probes) == 1 else f"geomean({', '.join(probes)})" if probes else ""


def divisor(values: Sequence) -> float | None:
    """The geometric mean of one night's probe values; None when one is missing or not > 0."""
    nums = [as_number(v) for v in values]
    if not nums or any(x is None or x <= 0 for x in nums):
        return None
    return math.exp(sum(math.log(x) for x in nums) / len(nums))


def _scale(run, d: float):
    return [x / d for x in run] if isinstance(run, list) else run / d


def normalised(value, value_div: float | None, history: Sequence,
               history_divs: Sequence[float | None], name: str
               ) -> tuple[object, list, list[int], str]:
    """(value, history, the kept history's indices, note) as the detector judges them: each
    divided by its own night's probe (``*_div``, divisor()). Tonight without its probe: the raw
    value against the raw history, noted; history nights without theirs are left out, noted.
    A value may be a run's trials (a list: each trial divided)."""
    if value_div is None:
        return value, list(history), list(range(len(history))), \
            f"{name} missing tonight: judged raw"
    keep = [i for i, d in enumerate(history_divs) if d is not None]
    hist = [_scale(history[i], history_divs[i]) for i in keep]
    dropped = len(history) - len(keep)
    note = f"/ {name}" + (f"; {dropped} history night(s) without it left out" if dropped else "")
    return _scale(value, value_div), hist, keep, note


# ---- series keys -----------------------------------------------------------------------------

SERIES_TAGS = ("name", "profile", "dut_switch_kind", "generator", "port_kind")
# the testbed (drivers/lab/fingerprint.py) and the pool it was leased from: a new testbed or a
# BIOS/firmware change starts a new series instead of reading as a regression of the DUT
TESTBED_TAGS = ("testbed_id", "pool")


@dataclasses.dataclass(frozen=True, order=True)
class SeriesKey:
    suite: str
    name: str
    profile: str
    dut_switch_kind: str
    generator: str
    port_kind: str
    metric: str
    testbed_id: str = ""
    pool: str = ""

    def label(self) -> str:
        bed = "".join(f", {v}" for v in (self.testbed_id, self.pool) if v)
        return f"{self.suite}/{self.name} [{self.dut_switch_kind}, {self.generator}, " \
               f"{self.port_kind}{bed}] {self.metric}"

    def without_testbed(self) -> "SeriesKey":
        return dataclasses.replace(self, testbed_id="", pool="")


def record_keys(record: Mapping) -> list[tuple[SeriesKey, object]]:
    """(key, value) for every metric of a record."""
    prov = record.get("provenance", {})
    base = [record["suite"], record["name"]] + [str(prov.get(t, "")) for t in SERIES_TAGS[1:]]
    testbed = {t: str(prov.get(t, "")) for t in TESTBED_TAGS}
    return [(SeriesKey(*base, metric, **testbed), value)
            for metric, value in record.get("metrics", {}).items()]


@dataclasses.dataclass
class TrendRow:
    key: SeriesKey
    judgement: Judgement
    time: str                                   # the record's end_time
    history: list[tuple[str, float]]            # (RFC 3339 time, value), oldest first
    segments: list[Segment] = dataclasses.field(default_factory=list)  # jumpavg's, history + value
    commits: str = ""                           # jumpavg: "<last sha before>..<first sha of>" the
                                                # new segment (git's range: after a, up to b)
    normaliser: str = ""                        # what the value and history were divided by
    note: str = ""                              # how the normaliser was applied (or why not)
    raw_value: float | None = None              # the value as measured, when normalised


def _commit_range(segs: Sequence[Segment], shas: Sequence[str]) -> str:
    """(last commit of the previous segment, first commit of the last one]; '' unknown."""
    if len(segs) < 2 or not shas:
        return ""
    start = segs[-1].start
    first = shas[start] if start < len(shas) else ""
    before = shas[start - 1] if 0 < start <= len(shas) else ""
    return f"{before[:12]}..{first[:12]}" if before or first else ""


def evaluate(records: Iterable[Mapping], history: Mapping[SeriesKey, Sequence[tuple[str, float]]],
             k: float = K_DEFAULT, rel_floor: float = REL_FLOOR,
             min_history: int = MIN_HISTORY, detector: str = DETECTOR_DEFAULT,
             commits: Mapping[SeriesKey, Sequence[str]] | None = None,
             recent: int = RECENT_DEFAULT, normalise: str = NORMALISE_DEFAULT
             ) -> list[TrendRow]:
    """Judge every metric of every record against history[key] (pure). A key with a testbed
    falls back to the same series without one (history exported before testbeds were named).
    commits[key]: the git sha of each history point (jumpavg's commit range). ``normalise``
    (NORMALISERS): a DUT rate and its history divided by the same night's rig probes of the
    same record (normaliser_for; the probes' history: the same series with the probe's metric,
    paired by time)."""
    if detector not in DETECTORS:
        raise ValueError(f"--detector: expected one of {', '.join(DETECTORS)}, got {detector!r}")
    if normalise not in NORMALISERS:
        raise ValueError(f"--normalise: expected one of {', '.join(NORMALISERS)}, "
                         f"got {normalise!r}")
    rows = []
    # the feed ceilings each record's series had before (a probe missing tonight is still named)
    hist_probes: dict = {}
    if normalise != "none":
        for hk in history:
            if CEILING.match(hk.metric):
                hist_probes.setdefault(dataclasses.replace(hk, metric=""), set()).add(hk.metric)
    for rec in records:
        rig = rig_metric_names(rec)
        metrics = rec.get("metrics") or {}
        for key, value in record_keys(rec):
            hkey = key if key in history or not (key.testbed_id or key.pool) else key.without_testbed()
            if normalise != "none":
                rig = rig | hist_probes.get(dataclasses.replace(hkey, metric=""), set())
            hist = list(history.get(hkey, []))
            shas_h = list((commits or {}).get(hkey, []))
            direction = metric_direction(key.metric)
            how = detector_for(detector, direction)
            probes, _why = normaliser_for(key.metric, rig, normalise) \
                if direction > 0 and key.metric not in rig else ((), "")
            norm = dict(normaliser="", note="", raw_value=None)
            if probes and as_number(value) is not None:
                name = normaliser_label(probes)
                at = [dict(history.get(dataclasses.replace(hkey, metric=p), [])) for p in probes]
                v, hv, keep, note = normalised(
                    as_number(value), divisor([metrics.get(p) for p in probes]),
                    [v for _, v in hist], [divisor([a.get(t) for a in at]) for t, _ in hist],
                    name)
                hist = [(hist[i][0], x) for i, x in zip(keep, hv)]
                shas_h = [shas_h[i] for i in keep if i < len(shas_h)]
                norm = dict(normaliser=name, note=note, raw_value=as_number(value))
                value = v
            if how in ("mad", "mad2"):
                j = judge(value, [v for _, v in hist], direction, k, rel_floor, min_history) \
                    if how == "mad" else \
                    judge_confirmed(value, [v for _, v in hist], direction, k, rel_floor,
                                    min_history)
                v = as_number(value)
                nums = [as_number(x) for _, x in hist]
                # jumpavg's segments drawn beside the band (they do not decide here)
                segs = group_series(nums + [v], direction, rel_floor) \
                    if v is not None and direction and len(hist) >= min_history \
                    and None not in nums else []
                rows.append(TrendRow(key, j, rec["provenance"]["end_time"], hist, segs,
                                     **norm))
                continue
            if how == "csit":
                j, segs = judge_csit(value, [v for _, v in hist], direction,
                                     max(rel_floor, CSIT_MIN_STEP), CSIT_CONFIRM, min_history,
                                     recent)
            elif how == "jlog":
                j, segs = judge_jumpavg_log(value, [v for _, v in hist], direction, rel_floor,
                                            min_history, recent)
            else:
                j, segs = judge_jumpavg(value, [v for _, v in hist], direction, rel_floor,
                                        min_history, recent)
            shas = shas_h + [str(rec["provenance"].get("git_sha", ""))]
            rng = _commit_range(segs, shas) if j.verdict in ("regression", "progression") else ""
            rows.append(TrendRow(key, j, rec["provenance"]["end_time"], hist, segs, rng, **norm))
    order = {"regression": 0, "progression": 1, "ok": 2, "new": 3, "untracked": 4,
             "not_measured": 5}
    rows.sort(key=lambda r: (order.get(r.judgement.verdict, 9), r.key))
    return rows


# ---- pools: one trend across identical testbeds (issue 39 part 4) ------------------------------
#
# A pool is a set of places of one testbed type (drivers/lab/lease.py). The same commit measured
# on each of them should give the same figure; what differs is the testbed. So the pool view
# keys a series WITHOUT testbed_id and WITHOUT profile (each place of a pool runs its own
# profile file: lab-emu and lab-emu-b are one pool) but WITH the pool, and for each git_sha
# keeps the value per testbed (CSIT's trend per testbed type):
#
#     spread(sha)  = (max - min) / |median|   over the testbeds that measured sha (>= 2)
#
# A testbed is flagged when its figures sit outside the pool's spread. The rule (pool_status):
#
#     for each of the last POOL_LAST_N commits measured by >= 2 testbeds of the pool:
#         M_c     = median of the testbeds' values at c   (a testbed's repeats: their median)
#         d_t,c   = (v_t,c - M_c) / |M_c|                  (relative deviation from the pool)
#     D_t     = median over c of d_t,c                     (testbed t's typical offset)
#     sigma   = 1.4826 * median over all t, c of |d_t,c|   (robust sigma of testbed-to-testbed
#                                                           scatter; 0-centred by construction)
#     flagged = |D_t| > max(k * sigma, rel_floor)  and  t has >= POOL_MIN_COMMITS such commits
#               and the pool has >= POOL_MIN_TESTBEDS testbeds in the window
#
# Why this rule: normalising by the commit's pool median removes what the commit itself did
# (a real DUT regression moves every testbed alike and flags none); medians over commits and
# over all deviations keep one bad night or one odd testbed from widening the band it is judged
# by (as the MAD rule above: 1.4826 * MAD estimates sigma for normal noise, K = 3); rel_floor
# keeps a perfectly uniform pool from flagging sub-percent offsets. With two testbeds each one
# is the other's mirror, so nothing can be singled out: the spread is shown, no flag is raised.

POOL_LAST_N = 10
POOL_MIN_COMMITS = 3
POOL_MIN_TESTBEDS = 3
POOL_K = K_DEFAULT


@dataclasses.dataclass(frozen=True)
class PoolPoint:
    """One measurement of a pool series: which commit, which testbed, where, when."""
    git_sha: str
    testbed_id: str
    value: float
    place: str = ""
    time: str = ""               # RFC 3339 UTC; orders commits (first seen) and points


@dataclasses.dataclass
class CommitSpread:
    git_sha: str
    values: dict[str, float]     # testbed_id -> value (median of its repeats at this commit)
    spread: float | None         # (max - min) / |median|; None with < 2 testbeds or median 0


@dataclasses.dataclass
class TestbedStatus:
    testbed_id: str
    place: str
    last_value: float | None     # at the newest commit this testbed measured
    median: float | None         # over its last POOL_LAST_N commits
    n_commits: int               # commits in the window shared with >= 1 other testbed
    deviation: float | None      # D_t (relative, 0.05 = 5 % above the pool)
    flagged: bool = False
    reason: str = ""


@dataclasses.dataclass
class PoolTable:
    key: SeriesKey               # testbed_id = profile = "", pool set
    commits: list[CommitSpread]  # oldest first
    testbeds: list[TestbedStatus]
    sigma: float | None          # robust sigma of the relative deviations (see above)
    band: float | None           # max(k * sigma, rel_floor)


def pool_key(key: SeriesKey) -> SeriesKey:
    """The series of a pool: no testbed, no profile (one per place), the pool kept."""
    return dataclasses.replace(key, testbed_id="", profile="")


def spread(values: Iterable[float]) -> float | None:
    """(max - min) / |median| of the values; None with fewer than two or a median of 0."""
    vals = [float(v) for v in values]
    if len(vals) < 2:
        return None
    med = statistics.median(vals)
    return (max(vals) - min(vals)) / abs(med) if med else None


def _tsort(p: PoolPoint):
    return (p.time, p.git_sha, p.testbed_id)


def commit_spreads(points: Iterable[PoolPoint]) -> list[CommitSpread]:
    """Per git_sha (ordered by when it was first measured): value per testbed and the spread."""
    first: dict[str, str] = {}
    per: dict[str, dict[str, list[float]]] = {}
    for p in sorted(points, key=_tsort):
        if not p.git_sha or not p.testbed_id:
            continue
        first.setdefault(p.git_sha, p.time)
        per.setdefault(p.git_sha, {}).setdefault(p.testbed_id, []).append(float(p.value))
    out = []
    for sha in sorted(per, key=lambda s: (first[s], s)):
        vals = {t: statistics.median(v) for t, v in sorted(per[sha].items())}
        out.append(CommitSpread(sha, vals, spread(vals.values())))
    return out


def pool_status(points: Sequence[PoolPoint], last_n: int = POOL_LAST_N, k: float = POOL_K,
                rel_floor: float = REL_FLOOR, min_commits: int = POOL_MIN_COMMITS,
                min_testbeds: int = POOL_MIN_TESTBEDS) -> tuple[list[TestbedStatus],
                                                                 float | None, float | None]:
    """(status per testbed, sigma, band) of one pool series; pure (the rule above)."""
    commits = commit_spreads(points)
    shared = [c for c in commits if len(c.values) >= 2][-last_n:] if last_n > 0 else []
    dev: dict[str, list[float]] = {}
    for c in shared:
        m = statistics.median(c.values.values())
        if not m:
            continue
        for t, v in c.values.items():
            dev.setdefault(t, []).append((v - m) / abs(m))
    all_dev = [abs(d) for ds in dev.values() for d in ds]
    sigma = MAD_TO_SIGMA * statistics.median(all_dev) if all_dev else None
    band = max(k * sigma, rel_floor) if sigma is not None else None
    place: dict[str, str] = {}
    for p in sorted(points, key=_tsort):
        if p.place:
            place[p.testbed_id] = p.place
    testbeds = sorted({t for c in commits for t in c.values})
    window = {c.git_sha for c in shared}
    out = []
    for t in testbeds:
        mine = [c.values[t] for c in commits if t in c.values]
        in_window = [c.values[t] for c in commits if t in c.values and c.git_sha in window] \
            or mine[-last_n:]
        d = dev.get(t, [])
        s = TestbedStatus(t, place.get(t, ""), mine[-1] if mine else None,
                          statistics.median(in_window) if in_window else None, len(d),
                          statistics.median(d) if d else None)
        if len(dev) < min_testbeds:
            s.reason = f"pool has {len(dev)} testbed(s) measuring the same commits " \
                       f"(< {min_testbeds}): spread shown, none singled out"
        elif len(d) < min_commits:
            s.reason = f"{len(d)} shared commit(s) (< {min_commits})"
        elif band is not None and abs(s.deviation) > band:
            s.flagged = True
            s.reason = f"{s.deviation * 100:+.1f} % from the pool median (band ±{band * 100:.1f} %)"
        out.append(s)
    return out, sigma, band


def pool_tables(series: Mapping[SeriesKey, Sequence[PoolPoint]], last_n: int = POOL_LAST_N,
                k: float = POOL_K, rel_floor: float = REL_FLOOR) -> list[PoolTable]:
    """One table per pool series with at least one testbed; flagged ones first. Metrics
    without a better direction (counts, sizes) are left out, as the trend leaves them unjudged."""
    out = []
    for key, pts in series.items():
        if not key.pool or not pts or metric_direction(key.metric) == 0:
            continue
        beds, sigma, band = pool_status(pts, last_n, k, rel_floor)
        if beds:
            out.append(PoolTable(key, commit_spreads(pts), beds, sigma, band))
    out.sort(key=lambda t: (not any(b.flagged for b in t.testbeds), t.key.pool, t.key))
    return out


def record_pool_points(records: Iterable[Mapping]) -> dict[SeriesKey, list[PoolPoint]]:
    """The run's own records as pool points (records with a pool and a testbed id only)."""
    out: dict[SeriesKey, list[PoolPoint]] = {}
    for rec in records:
        prov = rec.get("provenance", {})
        if not prov.get("pool") or not prov.get("testbed_id"):
            continue
        for key, value in record_keys(rec):
            v = as_number(value)
            if v is None or metric_direction(key.metric) == 0:
                continue
            out.setdefault(pool_key(key), []).append(PoolPoint(
                str(prov.get("git_sha", "")), key.testbed_id, v, str(prov.get("place", "")),
                str(prov.get("end_time", ""))))
    return out


def merge_pool_points(*sources: Mapping[SeriesKey, Sequence[PoolPoint]]
                      ) -> dict[SeriesKey, list[PoolPoint]]:
    """Union of pool points; the same point twice (the run's record, also read back from
    InfluxDB) counts once: same testbed, commit, value and time to the microsecond."""
    from reports.results import parse_rfc3339
    out: dict[SeriesKey, list[PoolPoint]] = {}
    seen: set = set()
    for src in sources:
        for key, pts in src.items():
            for p in pts:
                try:
                    when = parse_rfc3339(p.time[:26] + "Z" if len(p.time) > 27 else p.time) \
                        if p.time else None
                except ValueError:
                    when = p.time
                ident = (key, p.testbed_id, p.git_sha, p.value, when)
                if ident in seen:
                    continue
                seen.add(ident)
                out.setdefault(key, []).append(p)
    return out


# ---- InfluxDB history (Flux) -------------------------------------------------------------------

def flux_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("${", "\\${") + '"'


HISTORY_DAYS_DEFAULT = 400


def history_query(bucket: str, suite: str, profile: str, before: str, last_n: int,
                  history_days: float = HISTORY_DAYS_DEFAULT) -> str:
    """Flux: the last `last_n` points per series and field of one suite+profile in the
    `history_days` before `before` (RFC 3339). run_id is a string field, not a metric."""
    from reports.results import parse_rfc3339, utc_rfc3339
    start = utc_rfc3339(parse_rfc3339(before) - dt.timedelta(days=history_days))
    return f"""from(bucket: {flux_string(bucket)})
  |> range(start: {start}, stop: {before})
  |> filter(fn: (r) => r._measurement == {flux_string(suite)} and r.profile == {flux_string(profile)})
  |> filter(fn: (r) => r._field != "run_id")
  |> group(columns: ["_measurement", "name", "profile", "dut_switch_kind", "generator", "port_kind", "testbed_id", "pool", "_field"])
  |> sort(columns: ["_time"])
  |> tail(n: {int(last_n)})
"""


def _rfc3339_of(t) -> str:
    if isinstance(t, dt.datetime):
        return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(t)


def fetch_history(url: str, token: str, org: str, bucket: str,
                  wanted: Iterable[tuple[str, str]], before: str,
                  last_n: int = LAST_N_DEFAULT, timeout_ms: int = 20000,
                  history_days: float = HISTORY_DAYS_DEFAULT,
                  commits: dict | None = None
                  ) -> dict[SeriesKey, list[tuple[str, float]]]:
    """History of every series of the (suite, profile) pairs in `wanted`, points strictly
    before `before` (RFC 3339 UTC) and at most `history_days` older, oldest first. Raises on
    connection/query errors. `commits`, when given, is filled with each point's git_sha tag
    (aligned with the points)."""
    from influxdb_client import InfluxDBClient
    from reports.influx import check_url
    problem = check_url(url)
    if problem:
        raise ValueError(problem)
    out: dict[SeriesKey, list[tuple[str, float]]] = {}
    with InfluxDBClient(url=url, token=token, org=org, timeout=timeout_ms, retries=False) as c:
        api = c.query_api()
        for suite, profile in sorted(set(wanted)):
            query = history_query(bucket, suite, profile, before, last_n, history_days)
            for table in api.query(query):
                for r in table.records:
                    v = r.get_value()
                    num = as_number(v)
                    if num is None:
                        continue
                    key = SeriesKey(suite, str(r.values.get("name", "")), profile,
                                    *(str(r.values.get(t) or "") for t in SERIES_TAGS[2:]),
                                    r.get_field(),
                                    **{t: str(r.values.get(t) or "") for t in TESTBED_TAGS})
                    out.setdefault(key, []).append((_rfc3339_of(r.get_time()), num,
                                                    str(r.values.get("git_sha") or "")))
    for key, pts in out.items():
        pts.sort()
        if commits is not None:
            commits[key] = [sha for _, _, sha in pts]
        out[key] = [(t, v) for t, v, _ in pts]
    return out


def pool_history_query(bucket: str, suite: str, pool: str, start: str, stop: str,
                       last_n: int) -> str:
    """Flux: the last `last_n` points per testbed of every series of one suite in one pool
    (any profile: each place of a pool has its own), between start and stop (RFC 3339)."""
    return f"""from(bucket: {flux_string(bucket)})
  |> range(start: {start}, stop: {stop})
  |> filter(fn: (r) => r._measurement == {flux_string(suite)} and r.pool == {flux_string(pool)})
  |> filter(fn: (r) => r._field != "run_id")
  |> group(columns: ["_measurement", "name", "dut_switch_kind", "generator", "port_kind", "testbed_id", "pool", "_field"])
  |> sort(columns: ["_time"])
  |> tail(n: {int(last_n)})
"""


def fetch_pool_history(url: str, token: str, org: str, bucket: str,
                       wanted: Iterable[tuple[str, str]], since: str,
                       last_n: int = LAST_N_DEFAULT, timeout_ms: int = 20000,
                       history_days: float = HISTORY_DAYS_DEFAULT
                       ) -> dict[SeriesKey, list[PoolPoint]]:
    """Pool points of the (suite, pool) pairs in `wanted`, from `history_days` before `since`
    (the run's start, RFC 3339) up to now: the other places of the pool may have measured the
    same commit after this run started (the nightly matrix)."""
    from influxdb_client import InfluxDBClient
    from reports.influx import check_url
    from reports.results import parse_rfc3339, utc_rfc3339
    problem = check_url(url)
    if problem:
        raise ValueError(problem)
    now = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    start = utc_rfc3339(parse_rfc3339(since) - dt.timedelta(days=history_days))
    stop = utc_rfc3339(max(now, parse_rfc3339(since) + dt.timedelta(seconds=1)))
    out: dict[SeriesKey, list[PoolPoint]] = {}
    with InfluxDBClient(url=url, token=token, org=org, timeout=timeout_ms, retries=False) as c:
        api = c.query_api()
        for suite, pool in sorted(set(wanted)):
            for table in api.query(pool_history_query(bucket, suite, pool, start, stop, last_n)):
                for r in table.records:
                    num = as_number(r.get_value())
                    tb = str(r.values.get("testbed_id") or "")
                    if num is None or not tb:
                        continue
                    key = SeriesKey(suite, str(r.values.get("name", "")), "",
                                    *(str(r.values.get(t) or "") for t in SERIES_TAGS[2:]),
                                    r.get_field(), "", pool)
                    out.setdefault(key, []).append(PoolPoint(
                        str(r.values.get("git_sha") or ""), tb, num,
                        str(r.values.get("place") or ""), _rfc3339_of(r.get_time())))
    return out


# ---- page ------------------------------------------------------------------------------------

VERDICT_STYLE = {"regression": ("miss", "▼ regression"), "progression": ("met", "▲ progression"),
                 "ok": ("", "ok"), "new": ("", "new (little history)"),
                 "untracked": ("", "not judged"), "not_measured": ("", "not measured")}


def _plot_row(row: TrendRow, out_png: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from reports.results import parse_rfc3339
    j = row.judgement
    fig, ax = plt.subplots(figsize=(4.6, 2.6), dpi=100)
    try:
        if row.history:
            xs = [parse_rfc3339(t) for t, _ in row.history]
            ax.plot(xs, [v for _, v in row.history], "o-", color="#1f5fbf", ms=3, lw=1,
                    label="history")
        if j.value is not None:
            colour = {"regression": "#c62828", "progression": "#2e7d32"}.get(j.verdict, "#111")
            ax.plot([parse_rfc3339(row.time)], [j.value], "*", color=colour, ms=12,
                    label="this run")
        if j.median is not None and j.band is not None and j.mad is not None:  # the MAD band
            ax.axhline(j.median, color="#888", lw=0.8, ls="--")
            ax.axhspan(j.median - j.band, j.median + j.band, color="#1f5fbf", alpha=0.08)
        if row.segments:   # jumpavg's groups: each segment's average over its span
            times = [parse_rfc3339(t) for t, _ in row.history] + [parse_rfc3339(row.time)]
            for seg in row.segments:
                xs_ = times[seg.start:seg.end]
                colour = {"regression": "#c62828", "progression": "#2e7d32"}.get(seg.verdict,
                                                                                "#555")
                ax.plot([xs_[0], xs_[-1]], [seg.avg, seg.avg], "-", color=colour, lw=2.2,
                        alpha=0.7)
                ax.axvspan(xs_[0], xs_[-1], color=colour, alpha=0.05)
        per = f" / {row.normaliser}" if row.normaliser and not row.note.endswith("raw") else ""
        ax.set_title(f"{row.key.suite}/{row.key.name} [{row.key.dut_switch_kind}]\n"
                     f"{row.key.metric}{per}", fontsize=8 if not per else 7, loc="left")
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d"))
        ax.grid(alpha=0.3)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        fig.tight_layout()
        out_png.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_png)
    finally:
        plt.close(fig)
    return out_png


def pool_section(pools: Sequence[PoolTable], max_commits: int = 5) -> str:
    """HTML: a pool's testbeds side by side, one table per pool series (testbed id, place, last
    value, median, deviation, flag), then the spread of the last commits measured there."""
    from reports.html import cell, esc
    if not pools:
        return ""
    parts = [f"<h2>pools: testbeds side by side ({len(pools)} series)</h2>"
             '<p class="note">same commit, different testbeds of one pool; spread = (max − min)'
             " / median across testbeds; a testbed is flagged when its median offset from the "
             "pool over the last commits exceeds max(k·σ, floor), σ = 1.4826 · median |offset| "
             "(reports/trend.py, pool_status)</p>"]
    for t in pools:
        flagged = sum(b.flagged for b in t.testbeds)
        k = t.key
        title = (f"pool {k.pool} · {k.suite}/{k.name} [{k.dut_switch_kind}, {k.generator}, "
                 f"{k.port_kind}] {k.metric}")
        band = f" · band ±{t.band * 100:.1f} %" if t.band is not None else ""
        trs = "".join(
            f'<tr><td class="name">{esc(b.testbed_id)}</td><td>{esc(b.place)}</td>'
            f"{cell(b.last_value)}{cell(b.median)}{cell(b.n_commits)}"
            f"{cell(None if b.deviation is None else b.deviation * 100)}"
            f'<td class="{"miss" if b.flagged else ""}">'
            f'{"⚑ outside the pool" if b.flagged else "ok" if not b.reason else "—"}</td>'
            f"<td>{esc(b.reason)}</td></tr>" for b in t.testbeds)
        recent = t.commits[-max_commits:]
        beds = [b.testbed_id for b in t.testbeds]
        spread_rows = "".join(
            f"<tr><td>{esc(c.git_sha[:12])}</td>"
            + "".join(cell(c.values.get(b)) for b in beds)
            + f"{cell(None if c.spread is None else c.spread * 100)}</tr>" for c in recent)
        parts.append(
            f'<h3 class="pool">{esc(title)}{" · " + str(flagged) + " flagged" if flagged else ""}'
            f"{esc(band)}</h3>"
            '<div class="scroll"><table class="pool"><thead><tr><th>testbed id</th><th>place'
            "</th><th>last value</th><th>median</th><th>commits</th><th>offset %</th>"
            "<th>flag</th><th>why</th></tr></thead><tbody>" + trs + "</tbody></table>"
            '<table class="pool-spread"><thead><tr><th>commit</th>'
            + "".join(f"<th>{esc(b)}</th>" for b in beds)
            + "<th>spread %</th></tr></thead><tbody>" + spread_rows + "</tbody></table></div>")
    return "\n".join(parts)


def write_trend_page(run_dir: Path, rows: Sequence[TrendRow], error: str | None = None,
                     settings: Mapping | None = None,
                     pools: Sequence[PoolTable] = ()) -> Path:
    """run_dir/trend.html (summary table, a pool's testbeds side by side, one plot per judged
    metric) and trend.json."""
    from reports.html import cell, esc, page, slug
    run_dir = Path(run_dir)
    counts = {v: sum(1 for r in rows if r.judgement.verdict == v) for v in VERDICT_STYLE}
    chips = "".join(
        f'<span class="chip {"fail" if v == "regression" and n else "pass" if v == "progression" and n else ""}">'
        f"{n} {esc(VERDICT_STYLE[v][1])}</span>" for v, n in counts.items() if n)
    body = [f'<div class="chips">{chips}</div>' if chips else ""]
    if error:
        body.append(f'<p class="false">history unavailable: {esc(error)}</p>')
    if settings:
        body.append('<p class="note">' + esc(", ".join(f"{k}={v}" for k, v in settings.items()))
                    + "</p>")
    head = ["verdict", "suite", "name", "switch", "generator", "port", "metric", "value",
            "median", "band ±", "change %", "history n", "starts in", "normalised by"]
    trs = []
    for r in rows:
        j = r.judgement
        cls, text = VERDICT_STYLE.get(j.verdict, ("", j.verdict))
        trs.append(
            f'<tr><td class="{cls}">{esc(text)}</td><td>{esc(r.key.suite)}</td>'
            f'<td class="name">{esc(r.key.name)}</td><td>{esc(r.key.dut_switch_kind)}</td>'
            f"<td>{esc(r.key.generator)}</td><td>{esc(r.key.port_kind)}</td>"
            f"<td>{esc(r.key.metric)}</td>{cell(j.value)}{cell(j.median)}{cell(j.band)}"
            f"{cell(j.change_pct)}{cell(j.n_history)}<td>{esc(r.commits)}</td>"
            f"<td>{esc(r.note or '—')}"
            f"{'' if r.raw_value is None else ' (measured ' + esc(fmt(r.raw_value)) + ')'}"
            "</td></tr>")
    body.append('<div class="scroll"><table class="trend"><thead><tr>'
                + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
                + "".join(trs) + "</tbody></table></div>")
    body.append(pool_section(pools))
    plotted = [r for r in rows if r.judgement.value is not None and r.judgement.direction != 0
               and r.history]
    figs = []
    for i, r in enumerate(plotted[:MAX_PLOTS]):
        png = _plot_row(r, run_dir / "plots" / f"trend-{i:04d}-{slug(r.key.label(), 80)}.png")
        rel = png.relative_to(run_dir).as_posix()
        figs.append(f'<figure><img src="{esc(rel)}" alt="{esc(r.key.label())}"><figcaption>'
                    f"{esc(VERDICT_STYLE[r.judgement.verdict][1])}</figcaption></figure>")
    if figs:
        note = f" (first {MAX_PLOTS} of {len(plotted)})" if len(plotted) > MAX_PLOTS else ""
        body.append(f"<h2>metrics over time{note}</h2>"
                    '<div style="display:grid;grid-template-columns:repeat(auto-fill,'
                    'minmax(470px,1fr));gap:8px">' + "".join(figs) + "</div>")
    how = ("rates (higher is better) grouped into consistent segments with their history "
           "(jumpavg); latencies and times against the median ± noise band of theirs, a change "
           "only when the run before was beyond the band the same way (mad2)"
           if (settings or {}).get("detector", DETECTOR_DEFAULT) == "auto" else
           "each metric's history and this run grouped into consistent segments (jumpavg): "
           "median = the reference segment's average, band = its standard deviation"
           if (settings or {}).get("detector", DETECTOR_DEFAULT) in ("jumpavg", "csit")
           else "each metric against the median ± noise band of its history"
           + (", a change only when the run before was beyond the band the same way"
              if (settings or {}).get("detector", DETECTOR_DEFAULT) == "mad2" else "")
           + " (lines: jumpavg's consistent segments, drawn, not judged)")
    normalise = (settings or {}).get("normalise", "none")
    if normalise != "none":
        how += (f"; DUT rates divided by the same night's rig probes ({normalise}: "
                + ("the feed's ceiling" if normalise == "ceiling" else
                   "the geometric mean of the feed's ceiling probes")
                + "), value, median and band in those units; the column 'normalised by' names "
                "each row's probe, or why it was judged raw")
    header = (f"<h1>ofbench trend · {esc(run_dir.name)}</h1><div class=\"sub\">{esc(how)} · "
              '<a href="index.html">run index</a></div>')
    out = run_dir / TREND_HTML
    out.write_text(page(f"ofbench trend {run_dir.name}", header, "\n".join(body)),
                   encoding="utf-8")
    (run_dir / TREND_JSON).write_text(json.dumps({
        "error": error, "settings": dict(settings or {}), "counts": counts,
        "rows": [{**dataclasses.asdict(r.key), **dataclasses.asdict(r.judgement),
                  "time": r.time, "history": r.history, "commits": r.commits,
                  "normaliser": r.normaliser, "note": r.note, "raw_value": r.raw_value,
                  "segments": [dataclasses.asdict(g) for g in r.segments]} for r in rows],
        "pools": [{**dataclasses.asdict(t.key), "sigma": t.sigma, "band": t.band,
                   "testbeds": [dataclasses.asdict(b) for b in t.testbeds],
                   "commits": [dataclasses.asdict(c) for c in t.commits]} for t in pools]},
        indent=1))
    return out


@dataclasses.dataclass
class TrendReport:
    rows: list[TrendRow]
    path: Path
    error: str | None = None
    pools: list[PoolTable] = dataclasses.field(default_factory=list)

    @property
    def flagged_testbeds(self) -> list[str]:
        """'<testbed id> (<place>, pool <pool>)' of each testbed outside its pool (a note on
        the testbed, not a regression of the DUT: it does not change the exit code)."""
        return sorted({f"{b.testbed_id} ({b.place}, pool {t.key.pool})" for t in self.pools
                       for b in t.testbeds if b.flagged})

    @property
    def regressions(self) -> list[TrendRow]:
        return [r for r in self.rows if r.judgement.verdict == "regression"]

    @property
    def any_regression(self) -> bool:
        return bool(self.regressions)

    @property
    def exit_code(self) -> int:
        """0 = fine, 1 = regression, 2 = history could not be read (nothing was compared)."""
        return 1 if self.any_regression else 2 if self.error else 0

    def summary(self) -> str:
        if self.error:
            return f"trend: history unavailable ({self.error}); see {self.path}"
        regs = "; ".join(f"{r.key.label()} {fmt(r.judgement.value)} vs median "
                         f"{fmt(r.judgement.median)}" for r in self.regressions[:10])
        beds = self.flagged_testbeds
        return (f"trend: {len(self.regressions)} regression(s) of {len(self.rows)} metrics"
                + (f": {regs}" if regs else "")
                + (f"; testbed outside its pool: {', '.join(beds)}" if beds else "")
                + f"; see {self.path}")


def fmt(v) -> str:
    return "—" if v is None else f"{v:.4g}"


def run_trend(run_dir: Path, url: str, token: str = "-", org: str = "-",
              bucket: str = "ofbench/autogen", last_n: int = LAST_N_DEFAULT,
              k: float = K_DEFAULT, rel_floor: float = REL_FLOOR,
              min_history: int = MIN_HISTORY, run_start: str | None = None,
              detector: str = DETECTOR_DEFAULT,
              normalise: str = NORMALISE_DEFAULT) -> TrendReport:
    """Compare the run's records with their history; write trend.html/json.

    History = points strictly before `run_start` (default: the earliest start_time among the
    run's records), so the run's own exported records are never part of their own history.
    Call it after the run's records were exported (or spooled)."""
    from reports.results import load_results
    run_dir = Path(run_dir)
    load_errors: list[str] = []
    records = load_results(run_dir, validate=True, errors=load_errors)
    before = run_start or (min(r["provenance"]["start_time"] for r in records) if records
                           else None)
    if detector not in DETECTORS:
        raise ValueError(f"--detector: expected one of {', '.join(DETECTORS)}, got {detector!r}")
    if normalise not in NORMALISERS:
        raise ValueError(f"--normalise: expected one of {', '.join(NORMALISERS)}, "
                         f"got {normalise!r}")
    settings = {"detector": detector, "normalise": normalise, "last_n": last_n, "k": k,
                "rel_floor": rel_floor,
                "min_history": min_history, "history_before": before, "bucket": bucket}
    if detector in ("jumpavg", "csit"):
        settings.pop("k")
    if detector in ("jumpavg", "csit", "auto"):
        settings["recent"] = RECENT_DEFAULT
    if detector == "csit":
        settings.update(min_step=max(rel_floor, CSIT_MIN_STEP), confirm=CSIT_CONFIRM)
    if load_errors:
        settings["skipped_unreadable_records"] = len(load_errors)
    error = None
    history: dict = {}
    commits: dict = {}
    if records:
        wanted = {(r["suite"], r["provenance"]["profile"]) for r in records}
        try:
            history = fetch_history(url, token, org, bucket, wanted, before, last_n,
                                    commits=commits)
        except Exception as e:  # report it on the page and in the exit code, don't crash
            error = f"{type(e).__name__}: {e}"[:500]
    rows = evaluate(records, history, k, rel_floor, min_history, detector, commits,
                    normalise=normalise) \
        if not error else evaluate(records, {}, k, rel_floor, min_history=math.inf)
    own = record_pool_points(records)
    pool_hist: dict = {}
    if own and not error:
        wanted_pools = {(key.suite, key.pool) for key in own}
        try:
            pool_hist = fetch_pool_history(url, token, org, bucket, wanted_pools, before,
                                           last_n)
        except Exception as e:  # the pools' view is extra: the run's own records still show
            settings["pool_history_error"] = f"{type(e).__name__}: {e}"[:300]
    pools = pool_tables(merge_pool_points(pool_hist, own), k=k, rel_floor=rel_floor) \
        if own else []
    path = write_trend_page(run_dir, rows, error, settings, pools)
    return TrendReport(rows, path, error, pools)
