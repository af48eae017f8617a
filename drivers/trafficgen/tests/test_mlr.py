"""RFC 9971 search (MLRsearch) against synthetic DUTs and a scripted test double."""
import pytest

from drivers.trafficgen.counters import Counters, StreamCounters
from drivers.trafficgen.latency import LatencyStats
from drivers.trafficgen.mlr import (QUICK_GOALS, Goal, MlrConfig, goals_from_section, search_mlr,
                                    spread)

from .synthetic_dut import synthetic


def quiet(_line):
    pass


def counters(sent, lost, offered=None, refused=0):
    offered = sent if offered is None else offered
    return Counters(streams={"s": StreamCounters(
        "s", tx=sent, rx=sent - lost, unsent=offered - sent, refused=refused, offered=offered,
        lost=lost, latency=LatencyStats(samples=10, p50_us=5.0, p99_us=9.0))})


def test_ndr_and_pdr_goals_in_one_search_with_rfc9971_results():
    measure, calls = synthetic(3.3e6, pdr_slope=0.002)
    r = search_mlr(measure, MlrConfig(max_rate_pps=10e6, goals=QUICK_GOALS), quiet)
    ndr, pdr = r.goals["ndr"], r.goals["pdr"]
    assert 3.3e6 * (1 - 0.05) ** 2 <= ndr.conditional_throughput_pps <= 3.3e6
    assert ndr.relevant_lower_bound_pps < ndr.relevant_upper_bound_pps
    # the trials that decided it: full-length trials at each relevant bound
    assert ndr.lower_bound_trials and all(t.duration_s == 0.5 and t.lost == 0
                                          for t in ndr.lower_bound_trials)
    assert ndr.upper_bound_trials and all(t.lost > 0 for t in ndr.upper_bound_trials)
    assert pdr.rate_pps >= ndr.rate_pps
    rec = r.search_record()
    assert rec["method"] == "mlrsearch" and rec["trials"] == len(r.trials) - 3
    g = rec["goals"][0]
    assert g["name"] == "ndr" and g["goal_loss_ratio"] == 0.0 and g["goal_exceed_ratio"] == 0.5
    assert {"conditional_throughput_pps", "relevant_lower_bound_pps", "relevant_upper_bound_pps",
            "lower_bound_trials", "upper_bound_trials"} <= set(g)
    m = r.metrics()
    assert m["ndr_mpps"] == pytest.approx(ndr.rate_pps / 1e6) and "latency_p99_us" in m
    assert sorted(r.latency) == [0.1, 0.5, 0.9]


def test_any_number_of_goals():
    measure, _ = synthetic(2e6, pdr_slope=0.01)
    goals = (Goal("ndr", 0.0, 0.5, 0.2, 0.5, 2.0, 0.05), Goal("pdr", 0.005, 0.5, 0.2, 0.5, 2.0, 0.05),
             Goal("loss1pct", 0.01, 0.0, 0.5, 0.5, 0.5, 0.05))
    r = search_mlr(measure, MlrConfig(max_rate_pps=10e6, goals=goals, latency_fractions=()), quiet)
    assert list(r.goals) == ["ndr", "pdr", "loss1pct"]
    assert r.goals["ndr"].rate_pps <= r.goals["pdr"].rate_pps <= r.goals["loss1pct"].rate_pps
    assert "loss1pct_mpps" in r.metrics()


def test_generator_limit_is_recorded_not_blamed_on_the_dut():
    measure, _ = synthetic(1e9, gen_max_pps=2e6)
    r = search_mlr(measure, MlrConfig(max_rate_pps=10e6, latency_fractions=()), quiet)
    assert 2e6 * 0.9 <= r.ndr.rate_pps <= 2e6
    assert r.ndr.generator_limited and not r.ndr.backpressure


def test_backpressure_is_recorded():
    def measure(duration_s, rate_pps):
        offered = int(rate_pps * duration_s)
        sent = int(min(rate_pps, 1e6) * duration_s)
        return counters(sent, 0, offered, refused=offered - sent)
    r = search_mlr(measure, MlrConfig(max_rate_pps=4e6, latency_fractions=()), quiet)
    assert r.ndr.backpressure and 0.9e6 <= r.ndr.rate_pps <= 1e6


def test_small_unsent_is_the_generators_slack_not_loss():
    def measure(duration_s, rate_pps):
        offered = int(rate_pps * duration_s)
        return counters(offered - 3, 0, offered)   # 3 unsent per trial, far below 0.1 %
    r = search_mlr(measure, MlrConfig(max_rate_pps=4e6, latency_fractions=()), quiet)
    assert r.ndr.rate_pps == pytest.approx(4e6)


class ScriptedMeasurerDouble:
    """Test double: a DUT that forwards 2 Mpps without loss, and whose script makes exactly one
    full-length (verification) trial at a passing load lose packets: a scheduler stall."""

    def __init__(self, capacity_pps=2e6, stall_at_final_trial=1, final_s=0.5):
        self.capacity, self.stall_at, self.final_s = capacity_pps, stall_at_final_trial, final_s
        self.final_trials = 0
        self.stalled = None

    def __call__(self, duration_s, rate_pps):
        sent = int(rate_pps * duration_s)
        lost = 0
        if rate_pps > self.capacity:
            lost = int(sent * (rate_pps - self.capacity) / rate_pps) + 1
        elif duration_s >= self.final_s:
            self.final_trials += 1
            if self.final_trials == self.stall_at:
                self.stalled = rate_pps
                lost = 71   # issue 44's trial: 71 lost in the 1 s verification
        return counters(sent, lost)


def test_one_failed_verification_trial_never_gives_zero():
    """Issue 44 part 3: passes below, one failed verification: the result is not 0 Mpps (the
    goal exceed ratio absorbs one bad trial), and it stays close to the capacity."""
    for nth in (1, 2):
        dut = ScriptedMeasurerDouble(stall_at_final_trial=nth)
        r = search_mlr(dut, MlrConfig(max_rate_pps=4e6, min_rate_pps=5e3, latency_fractions=()),
                       quiet)
        assert dut.stalled is not None, "the script's stall happened"
        assert any(t.passed for t in r.trials if t.rate_pps < 2e6)
        assert r.ndr.rate_pps > 0.8 * 2e6, (nth, r.ndr.rate_pps)
        assert r.pdr.rate_pps >= r.ndr.rate_pps


def test_min_load_failing_gives_no_lower_bound_not_an_exception():
    measure, _ = synthetic(1.0)
    r = search_mlr(measure, MlrConfig(max_rate_pps=1e6, min_rate_pps=1e5,
                                      latency_fractions=(0.5,)), quiet)
    assert r.ndr.conditional_throughput_pps is None and r.ndr.relevant_lower_bound_pps is None
    assert r.ndr.rate_pps == 0 and r.latency == {0.5: None}


@pytest.mark.parametrize("goal, key", [
    (Goal("g", goal_exceed_ratio=1.0), "goal_exceed_ratio"),
    (Goal("g", goal_exceed_ratio=-0.1), "goal_exceed_ratio"),
    (Goal("g", goal_loss_ratio=1.0), "goal_loss_ratio"),
    (Goal("g", goal_width=0.0), "goal_width"),
    (Goal("g", goal_initial_trial_duration=2.0, goal_final_trial_duration=1.0),
     "goal_final_trial_duration"),
    (Goal("g", goal_final_trial_duration=5.0, goal_duration_sum=2.0), "goal_duration_sum"),
    (Goal("g", goal_initial_trial_duration=0.0), "goal_initial_trial_duration"),
])
def test_contradicting_goals_name_the_key(goal, key):
    with pytest.raises(ValueError, match=rf"^goals\.g\.{key}: "):
        MlrConfig(max_rate_pps=1e6, goals=(goal,))


def test_config_errors():
    with pytest.raises(ValueError, match="^min_load"):
        MlrConfig(max_rate_pps=1e6, min_rate_pps=2e6)
    with pytest.raises(ValueError, match="^goals: goal names must differ"):
        MlrConfig(max_rate_pps=1e6, goals=(Goal("a"), Goal("a", 0.1)))


def test_goals_from_profile_section():
    assert goals_from_section(None) == QUICK_GOALS
    assert goals_from_section({}, nightly=True)[0].goal_duration_sum == 21.0
    gs = goals_from_section({"goals": [{"name": "ndr", "goal_loss_ratio": 0, "goal_width": 0.01}]})
    assert gs == (Goal("ndr", goal_width=0.01),)


def test_spread():
    assert spread([1.0, 2.0, 3.0]) == pytest.approx(1.0)
    assert spread([]) is None and spread([0.0, 0.0]) is None


def test_dut_telemetry_rides_with_each_trial_into_the_record():
    measure, _ = synthetic(2e6)

    def with_dut(duration_s, rate_pps):
        c = measure(duration_s, rate_pps)
        c.dut = {"cycles_per_packet": 120.0, "cache_hit_ratio": 0.99}
        return c
    r = search_mlr(with_dut, MlrConfig(max_rate_pps=4e6, latency_fractions=(0.5,)), quiet)
    rec = r.search_record()
    assert rec["trial_log"] and all(t["dut"]["cycles_per_packet"] == 120.0 for t in rec["trial_log"])
    assert rec["trial_log"][-1]["target"] == "latency@50%"
    assert rec["goals"][0]["lower_bound_trials"][0]["dut"]["cache_hit_ratio"] == 0.99
