"""Flows changing during traffic (dut/switch/tests/test_churn.c): a real worker lcore forwards
between two net_ring ports while the test changes table 0 and commits ~1000 times a second;
every forwarded frame must carry the tag of its key's best flow in a table state of its
moment (between the state published when it was fed and the one published when it was
collected). Runs without hugepages (--no-huge --no-shconf); the EAL runtime directory is
removed even when the binary crashes."""
from __future__ import annotations

import pytest

from dut.switch import launcher
from dut.switch.tests.switchproc import run_dp_rig_binary

SECONDS = 1.5


@pytest.mark.parametrize("build", ["release", "sanitized"])
@pytest.mark.parametrize("backend", ["tuple", "dtree", "trie", "simple"])
def test_forwarding_follows_flow_changes(backend, build):
    rc, out = run_dp_rig_binary(build, "test_ofswitch_churn", [backend, str(SECONDS)], "ofs-churn", 60)
    summary = [line for line in out.splitlines() if line.startswith("churn ")]
    assert rc == 0 and summary, out[-3000:]
    assert " wrong 0," in summary[0] and "unexplained drops 0" in summary[0], summary[0]
    assert not launcher.sanitizer_reports(out), out[-4000:]


@pytest.mark.parametrize("build", ["release", "sanitized"])
@pytest.mark.parametrize("backend", ["tuple", "simple"])
def test_flow_counts_held_in_cache_entries(backend, build):
    """Flows that only output: their counts wait in cache entries (dut/switch/src/ofswitch.h,
    fast entries) and must all reach the flows: after a sync, through a MODIFY's copy (or not,
    with RESET_COUNTS) and in every FLOW_REMOVED (test_churn.c counts mode)."""
    rc, out = run_dp_rig_binary(build, "test_ofswitch_churn", [backend, str(SECONDS), "counts"], "ofs-churn", 60)
    summary = [line for line in out.splitlines() if line.startswith("counts ")]
    assert rc == 0 and summary, out[-3000:]
    assert " wrong 0" in summary[0], summary[0]
    assert not launcher.sanitizer_reports(out), out[-4000:]
