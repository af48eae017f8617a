"""ofbench's pytest plugin (labgrid-style): the ``ofbench`` option group, the session fixture
chain profile -> lab -> switch/results, feature markers that skip with a reason, and the run's
reports (results.jsonl, HTML index, InfluxDB export, trend check).

A *suite run* is any run that collects from suites/: it gets a run folder
``reports/<run-id>/`` (``reports/latest`` points at it) with results.jsonl, pytest.html,
index.html and the logs of every process each test started. Unit-test runs get none of that.
"""
from __future__ import annotations

import atexit
import base64
import json
import os
import re
import signal
import sys
import time
from contextlib import nullcontext as _nullcontext
from pathlib import Path

import pytest

from dut.profiles.schema import FEATURES, ProfileError, load_profile
from dut.profiles.targets import check_targets
from drivers.lab.switches import switch_available

REPO = Path(__file__).resolve().parent
SUITES = REPO / "suites"


# ---- options ----------------------------------------------------------------------------------
def pytest_addoption(parser):
    g = parser.getgroup("ofbench", "ofbench lab options")
    g.addoption("--dut", default="local", metavar="PROFILE",
                help="lab profile: a name in dut/profiles/ or a path to a YAML file "
                     "(default: local)")
    g.addoption("--reports-dir", default=str(REPO / "reports"), metavar="DIR",
                help="where run folders are written (default: reports/)")
    g.addoption("--influx-url", default=None, metavar="URL",
                help="also export every record to InfluxDB at URL; 'local' starts the "
                     "repo's influxd on 127.0.0.1 (default: no export)")
    g.addoption("--influx-token", default="-", help="InfluxDB token (1.8: 'user:pass' or '-'; "
                "default '-')")
    g.addoption("--influx-org", default="-", help="InfluxDB org (1.8: '-'; default '-')")
    g.addoption("--influx-bucket", default="ofbench/autogen",
                help="InfluxDB bucket (1.8: '<db>/<rp>'; default ofbench/autogen)")
    g.addoption("--nightly", action="store_true", default=False,
                help="run the long matrices (tests marked nightly) and the trend check; exit "
                     "!= 0 on a regression (default: off)")


# ---- configure: profile first, so a bad profile stops everything before it starts ---------------
class RunState:
    """Everything the plugin keeps for one pytest session."""

    def __init__(self, config):
        self.config = config
        self.profile = None
        self.run_dir: Path | None = None
        self.writer = None
        self.lab = None
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
        self.started = time.time()
        self.regression = False
        self.influx = None
        self.influxd = None
        self.influx_settings: dict = {}
        self.failed_tests: list[str] = []


def _is_suite_run(config) -> bool:
    for arg in config.args or []:
        p = Path(arg.split("::")[0]).resolve()
        if p == SUITES or SUITES in p.parents:
            return True
    return False


def pytest_configure(config):
    state = RunState(config)
    config._ofbench = state
    _STATE["state"] = state
    try:
        state.profile = load_profile(config.getoption("--dut"))
    except ProfileError as e:
        raise pytest.UsageError(f"bad lab profile: {e}") from None
    if _is_suite_run(config) and not getattr(config, "workerinput", None):
        from reports.results import create_run_dir
        state.run_dir = create_run_dir(Path(config.getoption("--reports-dir")))
        if not config.getoption("htmlpath", None):
            config.option.htmlpath = str(state.run_dir / "pytest.html")
            config.option.self_contained_html = True
    # SIGTERM (CI timeouts, kill) must unwind like Ctrl-C so teardown stops every process.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def _raise_keyboard_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_report_header(config):
    state = config._ofbench
    lines = [f"ofbench profile: {state.profile.name} ({state.profile.path}); switch kinds "
             f"{', '.join(state.profile.switch_kinds)}; features "
             f"{', '.join(sorted(state.profile.features)) or 'none'}"]
    if state.run_dir:
        lines.append(f"ofbench run folder: {state.run_dir}")
    return lines


def pytest_sessionstart(session):
    state = session.config._ofbench
    if state.run_dir is None:
        return
    from drivers.lab.cleanup import cleanup_stale
    from reports.results import prune_run_dirs
    cleanup_stale(log=lambda m: print(m, file=sys.stderr))
    prune_run_dirs(Path(session.config.getoption("--reports-dir")), keep=50)
    _start_influx_export(state)


def _start_influx_export(state) -> None:
    """--influx-url: export every record; 'local' = the repo's influxd on 127.0.0.1, with its
    history kept in tools/influxdb-data so nightly trend runs compare against earlier runs."""
    cfg = state.config
    url = cfg.getoption("--influx-url")
    if not url:
        return
    from reports.influx import InfluxExporter
    settings = {"url": url, "token": cfg.getoption("--influx-token"),
                "org": cfg.getoption("--influx-org"), "bucket": cfg.getoption("--influx-bucket")}
    if url == "local":
        from reports.influxd import LocalInfluxd
        srv = LocalInfluxd(log_path=state.run_dir / "logs" / "influxd.log")
        try:
            srv.start()
        except Exception as e:  # records are spooled, nothing is lost; say so loudly
            print(f"[ofbench] WARNING: local influxd did not start ({e}); records will be "
                  f"spooled to reports/spool/", file=sys.stderr)
            settings["url"] = "http://127.0.0.1:1"
        else:
            state.influxd = srv
            settings.update(srv.client_settings())
    state.influx_settings = settings
    state.influx = InfluxExporter(spool_dir=REPO / "reports" / "spool", **settings)
    replay = state.influx.replay_spool()
    if replay.replayed:
        print(f"[ofbench] replayed {replay.replayed} spooled record(s) to {settings['url']}",
              file=sys.stderr)


# ---- markers ------------------------------------------------------------------------------------
def pytest_collection_modifyitems(config, items):
    state = config._ofbench
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


# ---- fixtures: profile -> lab -> switch / results ------------------------------------------------
@pytest.fixture(scope="session")
def profile(request):
    return request.config._ofbench.profile


@pytest.fixture(scope="session")
def run_dir(request, tmp_path_factory):
    state = request.config._ofbench
    if state.run_dir is None:  # unit-test run that still wants a lab: a throwaway folder
        from reports.results import create_run_dir
        state.run_dir = create_run_dir(tmp_path_factory.mktemp("reports"))
    return state.run_dir


@pytest.fixture(scope="session")
def lab(request, profile, run_dir):
    """The lab the profile describes, torn down in every exit path (also atexit)."""
    state = request.config._ofbench
    if profile.lab_kind == "local":
        from drivers.lab.local import LocalLab
        lab = LocalLab(profile, run_dir.name, run_dir)
    else:
        from drivers.lab.remote import RemoteLab
        lab = RemoteLab(profile, run_dir.name, run_dir)
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
    state = request.config._ofbench
    if state.lab is None or "lab" not in request.fixturenames:
        yield
        return
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", request.node.nodeid)[-150:]
    sup = state.lab.supervisor
    old = sup.log_dir
    sup.log_dir = state.run_dir / "tests" / safe
    try:
        yield
    finally:
        sup.log_dir = old


def pytest_generate_tests(metafunc):
    """``switch_kind`` runs a test once per switch of the profile: its switch, then its peers."""
    if "switch_kind" in metafunc.fixturenames:
        kinds = metafunc.config._ofbench.profile.switch_kinds
        metafunc.parametrize("switch_kind", kinds, ids=kinds, indirect=True)


@pytest.fixture
def switch_kind(request, profile):
    kind = request.param
    why = switch_available(kind, profile)
    if why:
        pytest.skip(why)
    return kind


class Results:
    """What a suite test records: ``results.record(name, metrics, params, provenance)``.

    The suite name is the folder under suites/. Targets from the profile are checked on every
    record: misses are written into the record (``target_misses``) and then fail the test with
    the amount they are off by.
    """

    def __init__(self, state, request):
        self.state, self.request = state, request
        self.suite = self._suite_of(request.node.path)
        self.started = _now_rfc3339()
        self.misses: list[str] = []
        self.records: list[dict] = []

    @staticmethod
    def _suite_of(path: Path) -> str:
        try:
            rel = Path(path).resolve().relative_to(SUITES)
            return rel.parts[0]
        except ValueError:
            return "adhoc"

    def _writer(self):
        if self.state.writer is None:
            from reports.results import ResultWriter, collect_provenance
            prof = self.state.profile
            base = collect_provenance(REPO)
            base.update({"profile": prof.name, "dut_switch_kind": prof.switch["kind"],
                         "generator": prof.generator["kind"], "generator_version": "n/a",
                         "port_kind": "n/a"})
            self.state.writer = ResultWriter(self.state.run_dir, base)
        return self.state.writer

    def record(self, name: str, metrics: dict, params: dict | None = None,
               provenance: dict | None = None, check_targets_now: bool = True) -> dict:
        prov = {"start_time": self.started, **(provenance or {})}
        # Targets are the profile's promises about *its* switch; peers' records are context.
        kind = prov.get("dut_switch_kind") or (params or {}).get("switch_kind")
        misses = [] if kind and kind != self.state.profile.switch["kind"] else \
            check_targets(self.state.profile.targets, self.suite, name, metrics)
        rec = self._writer().write(self.suite, name, metrics, params, prov,
                                   target_misses=misses or None,
                                   test_id=self.request.node.nodeid)
        self.records.append(rec)
        self._export([rec])
        self.misses += [m["message"] for m in misses]
        if misses and check_targets_now:
            pytest.fail(f"{self.suite}/{name} missed its target(s): "
                        + "; ".join(m["message"] for m in misses), pytrace=False)
        return rec

    def progress(self, message: str) -> None:
        """A live progress line for long tests (shown even though pytest captures output)."""
        progress_line(self.request.config, f"{self.suite}: {message}")

    def _export(self, records):
        if self.state.influx is not None:
            self.state.influx.export(records)

    def add_plot(self, fig_or_png, title: str):
        from reports.html import add_plot
        path = add_plot(self.state.run_dir, self.suite, fig_or_png, title)
        self._attach(path, title)
        return path

    def add_table(self, rows: list[dict], title: str):
        from reports.html import add_table
        path = add_table(self.state.run_dir, self.suite, rows, title)
        self._attach(path, title)
        return path

    def _attach(self, path, title):
        extras = getattr(self.request.node, "_ofbench_extras", None)
        if extras is None:
            extras = self.request.node._ofbench_extras = []
        extras.append((Path(path), title))


def progress_line(config, message: str) -> None:
    tr = config.pluginmanager.get_plugin("terminalreporter")
    stamp = time.strftime("%H:%M:%S")
    if tr is not None:
        # pytest captures fd 1 while a test runs: suspend capture so the line reaches the
        # terminal (or the CI log) now, not in the test's captured output.
        capman = config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else _nullcontext():
            tr.write_line(f"[{stamp}] {message}")
            tr.flush()
    else:
        print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


@pytest.fixture
def progress(request):
    """``progress("trial 3/12: 4.1 Mpps, 0 lost")``: a live line on the terminal."""
    return lambda message: progress_line(request.config, message)


@pytest.fixture
def results(request, run_dir):
    return Results(request.config._ofbench, request)


def _now_rfc3339() -> str:
    from reports.results import utc_rfc3339
    return utc_rfc3339()


# ---- reporting --------------------------------------------------------------------------------
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    extras = getattr(item, "_ofbench_extras", None)
    if report.when == "call" and extras:
        try:
            import pytest_html
        except ImportError:
            return
        found = list(getattr(report, "extras", []))
        for path, title in extras:
            if path.suffix == ".png":
                found.append(pytest_html.extras.png(
                    base64.b64encode(path.read_bytes()).decode(), name=title))
            elif path.suffix == ".html":
                found.append(pytest_html.extras.html(path.read_text()))
        report.extras = found


def pytest_runtest_logreport(report):
    state = _STATE.get("state")  # reports carry no config; the session's state is global
    if state is None:
        return
    if report.when == "call":
        state.counts[report.outcome] = state.counts.get(report.outcome, 0) + 1
    elif report.outcome == "skipped":
        state.counts["skipped"] += 1
    elif report.outcome == "failed":
        state.counts["error"] += 1
    if report.outcome == "failed":
        state.failed_tests.append(report.nodeid)


_STATE: dict = {}


def pytest_sessionfinish(session, exitstatus):
    state = session.config._ofbench
    if state.lab is not None:
        state.lab.close()
    if state.run_dir is None or not _is_suite_run(session.config):
        return
    trend_note = _nightly_trend(session, state)
    summary = dict(state.counts, failed_tests=state.failed_tests,
                   duration_s=round(time.time() - state.started, 1),
                   profile=state.profile.name, exitstatus=int(exitstatus),
                   command=" ".join(["pytest", *sys.argv[1:]]))
    (state.run_dir / "session.json").write_text(json.dumps(summary, indent=2))
    try:
        from reports.html import render_run_index
        index = render_run_index(state.run_dir)
    except Exception as e:  # the report must never hide the test outcome
        index = None
        print(f"[ofbench] could not render the run index: {e!r}", file=sys.stderr)
    if state.influx is not None:
        state.influx.close()
    if state.influxd is not None:
        state.influxd.stop()
    if trend_note:
        print(f"\n[ofbench] {trend_note}", file=sys.stderr)
    if index:
        print(f"\n[ofbench] report: {index}", file=sys.stderr)


def _nightly_trend(session, state) -> str | None:
    """--nightly with InfluxDB: compare each metric with its history; a regression beyond the
    noise band makes the run exit != 0 (the trend page says which and by how much)."""
    if not session.config.getoption("--nightly") or state.influx is None:
        return None
    from reports.trend import run_trend
    s = state.influx_settings
    report = run_trend(state.run_dir, s["url"], s["token"], s["org"], s["bucket"])
    if report.any_regression or report.error:
        session.exitstatus = max(int(session.exitstatus), 1)
    return report.summary()
