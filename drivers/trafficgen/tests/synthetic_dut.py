"""A synthetic DUT for the search tests (test_ndr.py, test_mlr.py): a helper module of the tests,
not a test module (no test module imports another, tests/test_import_graph.py)."""
from drivers.trafficgen.counters import Counters, StreamCounters
from drivers.trafficgen.latency import LatencyStats


def synthetic(capacity_pps, gen_max_pps=1e12, pdr_slope=0.0, flaky_at=None):
    """Lossless up to capacity; above it loses (rate - capacity)/rate, or pdr_slope * that
    (a soft DUT); the generator cannot send above gen_max_pps."""
    calls = []

    def measure(duration_s, rate_pps):
        calls.append((duration_s, rate_pps))
        offered = int(rate_pps * duration_s)
        sent = int(min(rate_pps, gen_max_pps) * duration_s)
        over = max(0.0, (rate_pps - capacity_pps) / rate_pps)
        lost = int(sent * over * (pdr_slope or 1.0))
        if flaky_at and duration_s > 1 and abs(rate_pps - flaky_at) < 1:
            lost = 1
        sc = StreamCounters("s", tx=sent, rx=sent - lost, unsent=offered - sent, offered=offered, lost=lost,
                            latency=LatencyStats(samples=10, p50_us=rate_pps / 1e6, p99_us=2 * rate_pps / 1e6))
        return Counters(streams={"s": sc}, duration_s=duration_s)

    return measure, calls
