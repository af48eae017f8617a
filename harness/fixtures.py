"""The fixture chain: profile -> lab -> switch_kind / results / progress, and lab_lease.

``lab`` is session-scoped and torn down in every exit path (also atexit and on SIGTERM, which
the plugin turns into KeyboardInterrupt). Processes a test starts log into
``reports/<run>/tests/<test>/`` on whichever host they run.
"""
from __future__ import annotations

import atexit
import re
import sys
from pathlib import Path

import pytest

from harness.results import Results, progress_line, suite_of
from harness.state import Collector, run_state


@pytest.fixture(scope="session")
def profile(request):
    return run_state(request.config).profile


@pytest.fixture(scope="session")
def run_dir(request, tmp_path_factory):
    state = run_state(request.config)
    if state.run_dir is None:  # unit-test run that still wants a lab: a throwaway folder
        from reports.results import create_run_dir
        state.run_dir = create_run_dir(tmp_path_factory.mktemp("reports"))
    return state.run_dir


@pytest.fixture(scope="session")
def lab(request, profile, run_dir):
    """The lab the profile describes, torn down in every exit path (also atexit)."""
    from drivers.lab import open_lab
    state = run_state(request.config)
    lab = state.lab or open_lab(profile, run_dir.name, run_dir)  # a remote lab opens at start
    state.lab = lab
    atexit.register(lab.close)
    for w in getattr(lab, "warnings", []):
        print(f"[ofbench] WARNING: {w}", file=sys.stderr)
    try:
        yield lab
    finally:
        lab.close()


@pytest.fixture(autouse=True)
def _per_test_logs(request):
    """Processes a test starts log into reports/<run>/tests/<test>/."""
    state = run_state(request.config)
    if state.lab is None or "lab" not in request.fixturenames:
        yield
        return
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", request.node.nodeid)[-150:]
    with state.lab.test_logs(state.run_dir / "tests" / safe):
        yield


# Suites that build their own topology; with the profile's ``one_dut: true`` they run on its
# switch only (dut/profiles/schema.py), like conformance and throughput's switch under test.
ONE_DUT_SUITES = ("controller", "wan", "vmwire")


@pytest.fixture
def switch_kind(request, profile):
    from drivers.lab.switches import switch_available
    kind = request.param
    why = switch_available(kind, profile)
    if why:
        pytest.skip(why)
    from harness.results import suite_of
    if (suite_of(request.node.path) in ONE_DUT_SUITES
            and kind not in profile.suite_switch_kinds()):
        pytest.skip(f"one_dut: true: this suite runs on the profile's switch "
                    f"{profile.switch['kind']} only")
    return kind


@pytest.fixture(scope="session")
def collector(request) -> Collector:
    """Measurements a suite's summary test (marked ``summary``) reads after the others."""
    return Collector(run_state(request.config).collected)


@pytest.fixture
def lab_lease(request):
    """The lab place this run holds on the coordinator (harness/lease.py: ``place``, ``pool``,
    ``waited_s``, ``acquired_at``, ``checks``), or None on a lab that names no coordinator.
    Suites take it here instead of reading the harness's run state."""
    return run_state(request.config).lease


@pytest.fixture
def progress(request):
    """``progress("trial 3/12: 4.1 Mpps, 0 lost")``: a live line on the terminal."""
    return lambda message: progress_line(request.config, message)


@pytest.fixture
def results(request, run_dir):
    from harness.lease import check
    check(run_state(request.config))   # before the measurement: the place is still ours
    node = request.node

    def attach(path: Path, title: str) -> None:
        extras = getattr(node, "_ofbench_extras", None)
        if extras is None:
            extras = node._ofbench_extras = []
        extras.append((Path(path), title))

    return Results(run_state(request.config), suite_of(node.path), node.nodeid, attach=attach,
                   progress=lambda m: progress_line(request.config, m))
