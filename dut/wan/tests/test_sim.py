"""The frame-level simulation model: exact on cases worked by hand, and the interleaving
that the whole-message queueing model misses."""
import math

import pytest

from dut.wan.config import App, Framing, Path
from dut.wan.sim import simulate_mean_delays_ms

FR = Framing()
P = [Path("long", 100, 100), Path("short", 100, 2)]


def app(name, length, interval=100.0, deadline=20.0):
    return App(name, length, interval, deadline)


def test_lone_message_is_propagation_plus_serialisation():
    a = [app("a", 10_000)]
    got = simulate_mean_delays_ms([(0.0, 0, 10_000)], {"a": "short"}, a, P, FR, access_mbps=1e6)
    want = 2.0 + FR.wire_bytes(10_000) * 8 / 100e6 * 1000
    assert got["a"] == pytest.approx(want, rel=1e-3)


def test_short_message_interleaves_with_a_long_one_on_the_access_link():
    apps = [app("big", 1_000_000), app("small", 10_000)]
    msgs = [(0.0, 0, 1_000_000), (0.001, 1, 10_000)]
    got = simulate_mean_delays_ms(msgs, {"big": "long", "small": "short"}, apps, P, FR,
                                  access_mbps=250)
    # Different paths: the small one shares only the access link (half of 250 Mbit/s for its
    # 7 frames), so it is far from waiting for the 1 MB message (32 ms at 250 Mbit/s).
    assert got["small"] < 2.0 + 3.0
    assert got["big"] > 100.0 + 80.0


def test_unassigned_apps_are_not_sent_and_no_messages_give_nan():
    apps = [app("a", 1000), app("b", 1000)]
    got = simulate_mean_delays_ms([(0.0, 1, 1000)], {"a": "short"}, apps, P, FR)
    assert set(got) == {"a"} and math.isnan(got["a"])
    with pytest.raises(ValueError):
        simulate_mean_delays_ms([], {"a": "short"}, apps, P, FR, access_mbps=0)
