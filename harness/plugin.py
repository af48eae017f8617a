"""ofbench's pytest plugin: configure (profile first, so a bad profile stops everything before
it starts), the lab opened once at the start of a suite run (an unreachable or misconfigured lab
stops the run there, with one message naming the profile file and key), feature / local_lab /
nightly markers that skip with the reason, and ``switch_kind`` parametrisation.

A *suite run* is any run that collects from suites/: it gets a run folder
``reports/<run-id>/`` (``reports/latest`` points at it) with results.jsonl, pytest.html,
index.html and the logs of every process each test started. Unit-test runs get none of that.
"""
from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from dut.profiles.schema import FEATURES, ProfileError, load_profile
from paths import SUITES
from harness.reporting import RunReporter, start_influx_export
from harness.results import progress_line
from harness.state import RUN_STATE, RunState, run_state
from harness import lease

pytest_plugins = ["harness.options", "harness.fixtures"]


def is_suite_run(config) -> bool:
    for arg in config.args or []:
        p = Path(arg.split("::")[0]).resolve()
        if p == SUITES or SUITES in p.parents:
            return True
    return False


def pytest_configure(config):
    state = RunState(config)
    config.stash[RUN_STATE] = state
    dut = config.getoption("--dut")
    suite_run = is_suite_run(config) and not getattr(config, "workerinput", None)
    helping = config.getoption("help", False)
    if helping and lease.is_pool(dut):
        dut = "local"   # --help leases nothing; the help text needs some profile
    if lease.is_pool(dut) and not suite_run:
        raise pytest.UsageError(f"--dut={dut}: a pool's place is leased by suite runs "
                                f"(pytest suites/...)")
    if not lease.is_pool(dut):
        try:
            state.profile = load_profile(dut)
        except ProfileError as e:
            raise pytest.UsageError(f"bad lab profile: {e}") from None
    if suite_run:
        from reports.results import create_run_dir
        state.run_dir = create_run_dir(Path(config.getoption("--reports-dir")))
        # the lab's place is taken before any host is touched (harness/lease.py)
        said = lambda m: progress_line(config, f"lease: {m}")  # noqa: E731
        if lease.is_pool(dut):
            state.profile = lease.lease_pool(config, state, dut, progress=said)
        elif not helping:
            lease.lease_profile(config, state, progress=said)
        if not config.getoption("htmlpath", None):
            config.option.htmlpath = str(state.run_dir / "pytest.html")
            config.option.self_contained_html = True
    config.pluginmanager.register(RunReporter(state, suite_run), "ofbench-reporter")
    # SIGTERM (CI timeouts, kill) must unwind like Ctrl-C so teardown stops every process.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def pytest_unconfigure(config):
    state = config.stash.get(RUN_STATE, None)
    if state is not None:
        if state.lab is not None:   # the place is released after the lab is down
            state.lab.close()
        lease.release(state)


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_report_header(config):
    state = run_state(config)
    prof = state.profile
    lines = [f"ofbench profile: {prof.name} ({prof.path}); {prof.lab_kind} lab; switch kinds "
             f"{', '.join(prof.switch_kinds)}; generator {prof.generator['kind']}; features "
             f"{', '.join(sorted(prof.features)) or 'none'}"]
    if state.run_dir:
        lines.append(f"ofbench run folder: {state.run_dir}")
    if state.lease is not None:
        lines.append(f"ofbench lab place: {state.lease.place} on {state.lease.coordinator}, "
                     f"held as {state.lease.holder}"
                     + (f" (pool {state.lease.pool})" if state.lease.pool else ""))
    return lines


def pytest_sessionstart(session):
    state = run_state(session.config)
    if state.run_dir is None:
        return
    from drivers.lab import LabError, open_lab
    from drivers.lab.cleanup import cleanup_stale
    from reports.results import prune_run_dirs
    cleanup_stale(log=lambda m: print(m, file=sys.stderr))
    prune_run_dirs(Path(session.config.getoption("--reports-dir")), keep=50)
    if state.profile.lab_kind != "local":
        # A remote lab is opened (hosts reached, checked, stale state removed) before anything
        # is collected: a lab that cannot be used stops the run once, here.
        try:
            state.lab = open_lab(state.profile, state.run_dir.name, state.run_dir,
                                 progress=lambda m: progress_line(session.config, f"lab: {m}"))
        except LabError as e:
            pytest.exit(f"lab {state.profile.name!r} cannot be used: {e}", returncode=4)
    try:   # what the testbed is: session.json and every record's provenance
        state.fingerprint = lease.testbed(
            state, progress=lambda m: progress_line(session.config, f"lab: {m}"))
    except LabError as e:
        pytest.exit(f"lab {state.profile.name!r} cannot be used: {e}", returncode=4)
    start_influx_export(state)


def pytest_collection_modifyitems(config, items):
    # Summary tests read what the session's other tests put in the collector: they run last
    # (a stable partition: every other order stays as collected).
    items[:] = ([i for i in items if not i.get_closest_marker("summary")]
                + [i for i in items if i.get_closest_marker("summary")])
    state = run_state(config)
    nightly = config.getoption("--nightly")
    for item in items:
        m = item.get_closest_marker("features")
        if m:
            unknown = [f for f in m.args if f not in FEATURES]
            if unknown:
                raise pytest.UsageError(f"{item.nodeid}: unknown feature(s) {unknown} in "
                                        f"@pytest.mark.features")
            lacking = [f for f in m.args if f not in state.profile.features]
            if lacking:
                item.add_marker(pytest.mark.skip(
                    reason=f"profile {state.profile.name!r} lacks feature(s): "
                           f"{', '.join(lacking)}"))
        if item.get_closest_marker("local_lab") and state.profile.lab_kind != "local":
            item.add_marker(pytest.mark.skip(
                reason=f"builds its topology on this box (namespaces, local processes); profile "
                       f"{state.profile.name!r} is a {state.profile.lab_kind} lab"))
        if item.get_closest_marker("nightly") and not nightly:
            item.add_marker(pytest.mark.skip(reason="nightly matrix: run with --nightly "
                                                    "(make nightly)"))


@pytest.hookimpl(tryfirst=True)  # before a module's own hook: the kind leads the test id
def pytest_generate_tests(metafunc):
    """``switch_kind`` runs a test once per switch of the profile: its switch, then its peers;
    a test marked ``peers_first`` runs the peers first and the switch under test last (the
    throughput matrix)."""
    if "switch_kind" in metafunc.fixturenames:
        kinds = list(run_state(metafunc.config).profile.switch_kinds)
        if metafunc.definition.get_closest_marker("peers_first"):
            kinds = kinds[1:] + kinds[:1]
        metafunc.parametrize("switch_kind", kinds, ids=kinds, indirect=True)
