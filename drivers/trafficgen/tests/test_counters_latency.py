import random

import pytest

from drivers.trafficgen.counters import Counters, CounterError, StreamCounters, check_counters
from drivers.trafficgen.latency import (bucket_bounds_ns, bucket_index, percentile_from_buckets,
                                        stats_from_softgen)


def test_loss_is_counted_against_packets_sent_not_offered():
    c = check_counters(Counters(streams={"s": StreamCounters("s", tx=900, rx=890, unsent=100, offered=1000)}))
    assert c.lost == 10 and c.unsent == 100
    assert c.loss_ratio == pytest.approx(10 / 900)


def test_duplicates_are_not_received_twice():
    c = check_counters(Counters(streams={"s": StreamCounters("s", tx=10, rx=11, duplicate=1)}))
    assert c.lost == 0 and c.rx == 10


def test_rx_above_tx_is_an_error_not_a_result():
    with pytest.raises(CounterError, match="stream 's': received 11 distinct packets but sent 10"):
        check_counters(Counters(streams={"s": StreamCounters("s", tx=10, rx=11)}))


def test_buckets_are_contiguous_and_narrow():
    prev_high = 0
    for i in range(600):
        low, high = bucket_bounds_ns(i)
        assert low == prev_high
        assert bucket_index(low) == i and bucket_index(high - 1) == i
        if low >= 16:
            assert (high - low) / low <= 1 / 16
        prev_high = high


def test_percentiles_against_sorted_samples():
    rng = random.Random(7)
    samples = [int(rng.lognormvariate(9, 0.7)) for _ in range(20000)]
    buckets: dict[int, int] = {}
    for s in samples:
        buckets[bucket_index(s)] = buckets.get(bucket_index(s), 0) + 1
    ordered = sorted(samples)
    for pct in (50, 90, 99, 99.9):
        exact = ordered[int(len(ordered) * pct / 100) - 1]
        got = percentile_from_buckets(list(buckets.items()), pct, max(samples))
        assert exact <= got <= exact * 1.07 + 1
    st = stats_from_softgen(len(samples), min(samples), max(samples), sum(samples), list(buckets.items()))
    assert st.p50_us <= st.p90_us <= st.p99_us <= st.p99_9_us <= st.max_us
    assert sum(c for _, _, c in st.histogram) == len(samples)


def test_empty_latency():
    assert stats_from_softgen(0, 0, 0, 0, []).samples == 0
