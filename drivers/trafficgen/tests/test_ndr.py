"""NDR/PDR search against a synthetic DUT: a capacity, a loss curve above it, a generator limit."""
import pytest

from drivers.trafficgen.counters import Counters, StreamCounters
from drivers.trafficgen.ndr import SearchConfig, judge, search_ndr_pdr

from .synthetic_dut import synthetic


def test_finds_capacity_within_precision_and_verifies():
    measure, calls = synthetic(3.3e6)
    lines = []
    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=10e6, precision=0.01, final_duration_s=5), lines.append)
    assert 3.3e6 * 0.99 <= r.ndr.rate_pps <= 3.3e6
    assert r.ndr.verified and not r.ndr.generator_limited
    assert any(d == 5 for d, _ in calls), "a final verification trial of final_duration_s"
    assert any("ndr trial 1" in l for l in lines) and any("ndr =" in l for l in lines)
    # latency at 10/50/90 % of the PDR rate
    assert sorted(r.latency) == [0.1, 0.5, 0.9]
    assert r.latency[0.9].p50_us == pytest.approx(0.9 * r.pdr.rate_pps / 1e6)
    m = r.metrics()
    assert m["ndr_mpps"] == pytest.approx(r.ndr.rate_pps / 1e6) and "latency_p99_us" in m


def test_pdr_tolerates_small_loss_and_is_at_least_ndr():
    measure, _ = synthetic(3e6, pdr_slope=0.002)  # 0.1 % loss reached at 2x capacity
    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=10e6, precision=0.01), lambda _: None)
    assert r.ndr.rate_pps <= 3e6
    assert r.pdr.rate_pps >= 5.5e6 and r.pdr.rate_pps >= r.ndr.rate_pps


def test_max_rate_passes_at_once():
    measure, calls = synthetic(1e9)
    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=5e6, latency_fractions=()), lambda _: None)
    assert r.ndr.rate_pps == 5e6 and r.ndr.fail_rate_pps is None
    assert len(calls) == 4  # ndr top + verify, pdr top + verify


def test_generator_limit_is_not_blamed_on_the_dut():
    measure, _ = synthetic(1e9, gen_max_pps=2e6)
    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=10e6, precision=0.01, latency_fractions=()), lambda _: None)
    assert r.ndr.rate_pps <= 2e6 and r.ndr.rate_pps >= 1.98e6 * 0.99
    assert r.ndr.generator_limited


def test_failed_verification_searches_lower():
    measure, _ = synthetic(4e6)
    cfg = SearchConfig(max_rate_pps=8e6, precision=0.25, final_duration_s=2, latency_fractions=())
    # the bracket stops at 4.0 Mpps (first pass); make its long trial lose one packet
    measure2, calls = synthetic(4e6, flaky_at=4e6)
    r = search_ndr_pdr(measure2, cfg, lambda _: None)
    assert r.ndr.verified and r.ndr.rate_pps < 4e6


def test_even_min_rate_fails():
    measure, _ = synthetic(1.0)
    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=1e6, min_rate_pps=1e5, latency_fractions=(0.5,)),
                       lambda _: None)
    assert r.ndr.rate_pps == 0 and r.pdr.rate_pps == 0 and r.latency == {0.5: None}


def test_judge_and_config_errors():
    c = Counters(streams={"s": StreamCounters("s", tx=1000, rx=999, offered=1000, lost=1)})
    assert judge(c, 0.0, 0.001) == (False, "loss")
    assert judge(c, 0.001, 0.001) == (True, "ok")
    c0 = Counters(streams={"s": StreamCounters("s", tx=0, offered=10, unsent=10)})
    assert judge(c0, 0.5, 0.001) == (False, "generator limit")
    with pytest.raises(ValueError, match="min_rate_pps"):
        SearchConfig(max_rate_pps=1, min_rate_pps=2)
    with pytest.raises(ValueError, match="precision"):
        SearchConfig(max_rate_pps=1e6, precision=2)


def test_forwarded_rate_of_the_top_trial_is_tried_next():
    """A DUT far below max rate: the top trial's forwarded rate seeds the bracket, so the
    search needs a handful of trials, not one per halving from the top."""
    measure, calls = synthetic(0.2e6)
    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=10e6, min_rate_pps=5e3, precision=0.05,
                                             latency_fractions=()), lambda _: None)
    assert 0.2e6 * 0.95 <= r.ndr.rate_pps <= 0.2e6 and r.ndr.verified
    ndr_trials = [t for t in r.trials if t.target == "ndr"]
    assert ndr_trials[1].rate_pps == pytest.approx(0.2e6, rel=0.01)
    assert len(ndr_trials) <= 6


def test_estimate_above_capacity_steps_down():
    """A lossy DUT forwards more than it can without loss: the estimate fails, the search
    steps down from it."""
    measure, _ = synthetic(1e6, pdr_slope=0.5)
    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=10e6, precision=0.02, latency_fractions=()),
                       lambda _: None)
    assert 1e6 * 0.98 <= r.ndr.rate_pps <= 1e6 and r.ndr.verified


def test_max_trials_bounds_a_search_that_never_settles():
    """Every trial is noise (random loss): the search still ends within max_trials per target."""
    import random
    rnd = random.Random(1)
    base, _ = synthetic(1e6)

    def noisy(duration_s, rate_pps):
        c = base(duration_s, rate_pps)
        if rnd.random() < 0.5:
            s = c.streams["s"]
            s.lost += 1
            s.rx -= 1
        return c
    cfg = SearchConfig(max_rate_pps=10e6, precision=0.01, max_trials=10, max_verifications=2, latency_fractions=())
    r = search_ndr_pdr(noisy, cfg, lambda _: None)
    assert len(r.ndr.trials) <= 10 + 2 * 2 + 1 and len(r.pdr.trials) <= 10 + 2 * 2 + 1
