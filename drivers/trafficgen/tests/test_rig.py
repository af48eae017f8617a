"""The rig's per-trial bookkeeping and the cause of a failed trial (drivers/trafficgen/rig.py):
pure functions on numbers."""
import pytest

from drivers.trafficgen import rig
from drivers.trafficgen.counters import Counters, StreamCounters
from drivers.trafficgen.ndr import SearchConfig, search_ndr_pdr

pytestmark = pytest.mark.quick

HZ = 2_000_000_000.0
FLOOR = 30_517  # cycles: HZ >> 16, what the switch reports as gap_floor_cycles


def worker(gaps, backlog=None):
    return {"lcore": 0, "busy_cycles": 0, "idle_cycles": 0, "gap_floor_cycles": FLOOR,
            "gap_hist": gaps + [0] * (16 - len(gaps)),
            "backlog_hist": (backlog or []) + [0] * (16 - len(backlog or []))}


def test_hist_delta_and_top_bucket():
    assert rig.hist_delta([1, 2, 3], [1, 5, 3, 7]) == [0, 3, 0, 7]
    assert rig.hist_delta(None, [4, 0]) == [4, 0]
    assert rig.top_bucket([0, 3, 0, 7, 0]) == 3
    assert rig.top_bucket([0, 0]) is None


def test_switch_gap_is_the_top_bucket_of_the_trial_only():
    # a 2 ms stall before the trial (bucket 6: 64..128 floors = 0.98..1.95 ms), 3 passes of
    # 30..61 us during it (bucket 1)
    before = {"tsc_hz": HZ, "workers": [worker([0, 0, 0, 0, 0, 0, 1])]}
    after = {"tsc_hz": HZ, "workers": [worker([0, 3, 0, 0, 0, 0, 1], backlog=[0, 0, 2])]}
    r = rig.switch_rig(before, after)
    assert r["switch_stalls"] == 3
    assert r["switch_max_gap_ns"] == pytest.approx(FLOOR * 4 / HZ * 1e9)  # bucket 1's upper bound
    assert r["switch_max_gap_lo_ns"] == pytest.approx(FLOOR * 2 / HZ * 1e9)  # and its lower bound
    assert r["switch_rx_backlog_pkts"] == 32 * 7  # runs of 4..7 full bursts
    quiet = rig.switch_rig(after, after)
    assert quiet["switch_max_gap_ns"] == 0 and quiet["switch_rx_backlog_pkts"] == 0


def test_switch_rig_is_empty_without_histograms():
    st = {"tsc_hz": HZ, "workers": [{"lcore": 0, "busy_cycles": 1, "idle_cycles": 2}]}
    assert rig.switch_rig(st, st) == {}
    assert rig.switch_rig(None, st) == {}


def test_switch_rig_takes_the_worst_worker():
    before = {"tsc_hz": HZ, "workers": [worker([]), worker([])]}
    after = {"tsc_hz": HZ, "workers": [worker([5]), worker([0, 0, 0, 1])]}
    assert rig.switch_rig(before, after)["switch_max_gap_ns"] == pytest.approx(FLOOR * 16 / HZ * 1e9)


def test_softgen_rig_from_stats_replies():
    stats = [{"rig": {"max_gap_ns": 12_000, "passes": 10, "burst": 32, "rx_full_run_max": [0, 3]}},
             {"rig": {"max_gap_ns": 4_100_000, "passes": 10, "burst": 32, "rx_full_run_max": [0]}},
             {}]
    assert rig.softgen_rig(stats) == {"gen_max_gap_ns": 4_100_000.0, "gen_rx_backlog_pkts": 96.0}
    assert rig.softgen_rig([{}]) == {}


def test_stall_threshold_is_the_time_the_ring_lasts():
    assert rig.stall_threshold_ns(2e6, 1024) == pytest.approx(512_000)
    assert rig.stall_threshold_ns(100e6, 1024) == rig.MIN_STALL_NS
    assert rig.stall_threshold_ns(0, 1024) == float("inf")


@pytest.mark.parametrize("passed, reason, figures, cause", [
    (True, "ok", {"switch_max_gap_ns": 9e6}, "ok"),
    (False, "backpressure", {"switch_max_gap_ns": 4e6, "gen_max_gap_ns": 10e3}, "rig stall"),
    (False, "loss", {"switch_max_gap_ns": 20e3, "gen_max_gap_ns": 3.9e6}, "generator stall"),
    (False, "loss", {"switch_max_gap_ns": 4e6, "gen_max_gap_ns": 4e6}, "rig stall"),
    (False, "backpressure", {"switch_max_gap_ns": 100e3, "gen_max_gap_ns": 20e3}, "DUT backpressure"),
    (False, "loss", {"switch_max_gap_ns": 100e3, "gen_max_gap_ns": 20e3}, "DUT loss"),
    (False, "generator limit", {"gen_max_gap_ns": 20e3}, "generator limit"),
    (False, "loss", {}, "DUT loss"),
    (False, "loss", None, "DUT loss"),
])
def test_classify(passed, reason, figures, cause):
    # 2 Mpps into a 1024-slot ring: a gap of >= 512 us overflows it by itself
    assert rig.classify(passed, reason, figures, 2e6, 1024) == cause


def test_the_switch_gap_is_judged_on_its_lower_bound():
    # the top bucket [0.4, 0.8) ms: maybe longer than the ring lasts (512 us), not surely
    unsure = {"switch_max_gap_ns": 800e3, "switch_max_gap_lo_ns": 400e3, "gen_max_gap_ns": 600e3}
    assert rig.classify(False, "loss", unsure, 2e6, 1024) == "generator stall"
    assert rig.classify(False, "loss", dict(unsure, switch_max_gap_lo_ns=520e3), 2e6, 1024) == "rig stall"


def test_a_deeper_ring_absorbs_the_same_stall():
    figures = {"switch_max_gap_ns": 4e6}
    assert rig.classify(False, "loss", figures, 2e6, 1024) == "rig stall"
    assert rig.classify(False, "loss", figures, 2e6, 16384) == "DUT loss"
    assert rig.trial_cause(False, "loss", dict(figures, ring_slots=16384), 2e6) == "DUT loss"


def test_cause_summary_counts_failures_only():
    assert rig.cause_summary(["ok", "rig stall", "DUT loss", "rig stall"]) == {"rig stall": 2, "DUT loss": 1}


def test_fmt_rig():
    assert rig.fmt_rig({}) == ""
    assert rig.fmt_rig({"gen_max_gap_ns": 12_000.0, "switch_max_gap_ns": 61_000.0}) == \
        " [gen gap 12 us, switch gap <= 61 us]"


def test_the_search_keeps_each_trials_rig_figures_and_cause():
    """What the measurer puts in Counters.rig reaches every trial of the search."""
    def measure(duration_s, rate_pps):
        tx = int(rate_pps * duration_s)
        stalled = rate_pps > 1.5e6
        lost = 500 if stalled else 0
        sc = StreamCounters("s", tx=tx, rx=tx - lost, offered=tx, lost=lost)
        return Counters(streams={"s": sc}, duration_s=duration_s,
                        rig={"gen_max_gap_ns": 10e3, "switch_max_gap_ns": 4e6 if stalled else 30e3,
                             "ring_slots": 1024})

    r = search_ndr_pdr(measure, SearchConfig(max_rate_pps=4e6, latency_fractions=()), lambda line: None)
    assert r.ndr.rate_pps > 1e6
    failed = [t for t in r.trials if not t.passed]
    assert failed and all(t.cause == "rig stall" for t in failed)
    assert all(t.cause == "ok" and t.rig["switch_max_gap_ns"] in (30e3, 4e6) for t in r.trials if t.passed)
    assert any(t.rig["switch_max_gap_ns"] == 30e3 for t in r.trials if t.passed)


def test_mlrsearch_trials_keep_the_rig_figures_and_cause():
    """The same through MLRsearch (drivers/trafficgen/mlr.py), and into its search record."""
    from drivers.trafficgen.mlr import MlrConfig, search_mlr

    def measure(duration_s, rate_pps):
        tx = int(rate_pps * duration_s)
        stalled = rate_pps > 1.5e6
        lost = 500 if stalled else 0
        sc = StreamCounters("s", tx=tx, rx=tx - lost, offered=tx, lost=lost)
        return Counters(streams={"s": sc}, duration_s=duration_s,
                        rig={"switch_max_gap_ns": 4e6 if stalled else 30e3, "ring_slots": 1024})

    r = search_mlr(measure, MlrConfig(max_rate_pps=4e6, min_rate_pps=1e5, latency_fractions=()),
                   lambda line: None)
    failed = [t for t in r.trials if not t.passed]
    assert failed and all(t.cause == "rig stall" for t in failed)
    goal = r.search_record()["goals"][0]
    assert all("rig" in t for t in goal["lower_bound_trials"] + goal["upper_bound_trials"])


def _stats(rx1, tx2, busy, idle):
    return {"ports": [{"port": 1, "rx_packets": rx1, "tx_packets": 0}, {"port": 2, "rx_packets": 0, "tx_packets": tx2}],
            "workers": [{"lcore": 0, "busy_cycles": busy, "idle_cycles": idle}]}


def test_switch_egress_shortfall_and_busy_share():
    e = rig.switch_egress(_stats(0, 0, 0, 0), _stats(1000, 900, 100, 900), (1, 2), lost=100)
    assert e == {"switch_egress_short_pkts": 100.0, "switch_egress_share_of_loss": 1.0, "switch_busy_share": 0.1}
    assert "switch_egress_share_of_loss" not in rig.switch_egress(_stats(0, 0, 0, 0), _stats(10, 10, 1, 1), (1, 2), 0)
    assert rig.switch_egress(None, _stats(1, 1, 1, 1), (1, 2), 0) == {}
    # OVS: ports, no workers
    assert set(rig.switch_egress({"ports": [{"port": 1, "rx_packets": 0}]},
                                {"ports": [{"port": 1, "rx_packets": 5}]}, (1, 2), 5)) == \
        {"switch_egress_short_pkts", "switch_egress_share_of_loss"}


def test_a_loss_at_an_idle_switchs_egress_is_the_generators_rx():
    """TRex on local-trex: the switch received every packet, its worker idled 80-95 % of the
    trial, and what it did not send is the loss: the generator's RX ring was full."""
    idle = {"switch_busy_share": 0.12, "switch_egress_share_of_loss": 1.0}
    assert rig.classify(False, "loss", idle, 4e6, 16384) == "generator RX limit"
    # a busy switch, or a loss elsewhere, stays the DUT's
    assert rig.classify(False, "loss", {**idle, "switch_busy_share": 0.9}, 4e6, 16384) == "DUT loss"
    assert rig.classify(False, "loss", {**idle, "switch_egress_share_of_loss": 0.3}, 4e6, 16384) == "DUT loss"
    assert rig.classify(False, "loss", {}, 4e6, 16384) == "DUT loss"
    # a stall still outranks it
    assert rig.classify(False, "loss", {**idle, "switch_max_gap_lo_ns": 10e6}, 4e6, 16384) == "rig stall"


class _Clock:
    """A generator double whose stream runs for its schedule; counts the polls."""

    def __new__(cls, *a, **kw):
        import time as _t

        from drivers.trafficgen.base import TrafficGenerator
        from drivers.trafficgen.model import PortInfo

        class G(TrafficGenerator):
            name = "double"

            def __init__(self):
                self.polls = 0

            def ports(self):
                return {"a": PortInfo("a", 10_000.0, "memif")}

            def _load(self, streams):
                self.streams = streams

            def start(self):
                self.t0 = _t.monotonic()

            def stop(self):
                pass

            def is_running(self):
                self.polls += 1
                return _t.monotonic() - self.t0 < 0.2

            def counters(self):
                return Counters()
        return G()


def test_a_trial_is_not_polled_before_its_scheduled_end(monkeypatch):
    """Each poll wakes the harness and the generator's control thread (on a poller's core on
    2 cores): the harness sleeps through the trial's schedule first (issue 44)."""
    from drivers.trafficgen.model import Stream
    monkeypatch.delenv("OFBENCH_RIG_POLL_DURING_TRIAL", raising=False)
    g = _Clock()
    g.run([Stream("s", "a", rx_port="a", frame_size=64, rate_pps=1000, duration_s=0.2)], drain_s=0)
    assert g.polls <= 3
    monkeypatch.setenv("OFBENCH_RIG_POLL_DURING_TRIAL", "1")
    g = _Clock()
    g.run([Stream("s", "a", rx_port="a", frame_size=64, rate_pps=1000, duration_s=0.2)], drain_s=0)
    assert g.polls >= 5
