"""Smoke: the run holds its lab place on the coordinator (profile ``lab.coordinator`` or
``--dut=pool:<tags>``, drivers/lab/lease.py), from its first measurement to its last.

Skipped on a lab that names no coordinator (a private lab: nothing to lease). Each test takes
the ``results`` fixture, so the harness re-checks the lease before it, as before any
measurement. ``OFBENCH_LEASE_HOLD_S`` keeps the first test holding the place that many seconds
(to try contention by hand: a second run waits in the queue meanwhile)."""
from __future__ import annotations

import os
import time

import pytest


@pytest.fixture
def lease(lab_lease):
    """The harness's ``lab_lease`` fixture; skipped on a lab without a coordinator."""
    lease = lab_lease
    if lease is None:
        pytest.skip("the profile names no lab coordinator (lab.coordinator): nothing to lease")
    return lease


@pytest.mark.quick
def test_lab_place_held(lease, results):
    t0 = time.time()
    hold_s = float(os.environ.get("OFBENCH_LEASE_HOLD_S", "0"))
    if hold_s:
        results.progress(f"holding place {lease.place} for {hold_s:.1f} s")
        time.sleep(hold_s)
    results.record("lab_place_held", {"lease_waited_s": lease.waited_s, "held": True,
                                      "lease_acquired_at_s": round(lease.acquired_at, 3),
                                      "hold_start_s": round(t0, 3),
                                      "hold_end_s": round(time.time(), 3)},
                   params={"place": lease.place, "pool": lease.pool or "none"})


@pytest.mark.quick
def test_lab_place_still_held(lease, results):
    """The next measurement: a place taken from the run stops it here, naming the holder."""
    results.record("lab_place_still_held", {"held": True, "lease_checks": lease.checks + 1})
