"""Reporting of a suite run: outcome counts, pytest-html extras (plots and tables a test
attached), session.json, the run index, the InfluxDB export (started at session start) and the
nightly trend check. Registered by the plugin as an object holding the RunState, because
report hooks carry no config."""
from __future__ import annotations

import base64
import json
import sys
import time

import pytest

from paths import REPORTS
from redact import redact_command, redact_url


class RunReporter:
    def __init__(self, state, is_suite_run):
        self.state = state
        self.is_suite_run = is_suite_run

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        extras = getattr(item, "_ofbench_extras", None)
        if report.when != "call" or not extras:
            return
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

    def pytest_runtest_logreport(self, report):
        counts = self.state.counts
        if report.when == "call":
            counts[report.outcome] = counts.get(report.outcome, 0) + 1
        elif report.outcome == "skipped":
            counts["skipped"] += 1
        elif report.outcome == "failed":
            counts["error"] += 1
        if report.outcome == "failed":
            self.state.failed_tests.append(report.nodeid)

    def pytest_sessionfinish(self, session, exitstatus):
        state = self.state
        if state.lab is not None:
            state.lab.close()
        if state.run_dir is None or not self.is_suite_run:
            return
        trend_note = _nightly_trend(session, state)
        summary = dict(state.counts, failed_tests=state.failed_tests,
                       duration_s=round(time.time() - state.started, 1),
                       profile=state.profile.name, exitstatus=int(exitstatus),
                       command=redact_command(["pytest", *sys.argv[1:]]))
        if getattr(state, "lease", None) is not None:
            summary["lease"] = state.lease.summary()
        if getattr(state, "fingerprint", None):
            summary["testbed"] = state.fingerprint
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


def start_influx_export(state) -> None:
    """--influx-url: export every record; 'local' = the repo's influxd on 127.0.0.1, with its
    history kept in tools/influxdb-data so nightly trend runs compare against earlier runs."""
    cfg = state.config
    url = cfg.getoption("--influx-url")
    if not url:
        return
    from reports.influx import InfluxExporter
    from harness.options import INFLUX_TOKEN
    settings = {"url": url, "token": cfg.stash.get(INFLUX_TOKEN, "-"),
                "org": cfg.getoption("--influx-org"), "bucket": cfg.getoption("--influx-bucket")}
    if url == "local":
        # its port changes every run: the spool is keyed by this name, not the URL, so the
        # next local run replays what this one spooled
        settings["destination"] = "local"
        from harness.services import start_local_influxd
        try:
            # under the supervisor, in a state folder of its own (a SIGKILLed run's server is
            # stopped by the next run's cleanup); auth on when a token is configured
            srv = start_local_influxd(state.run_dir.name, state.run_dir / "logs" / "influxd.log",
                                      settings["token"])
        except Exception as e:  # records are spooled, nothing is lost; say so loudly
            print(f"[ofbench] WARNING: local influxd did not start ({e}); records will be "
                  f"spooled to reports/spool/", file=sys.stderr)
            settings["url"] = "http://127.0.0.1:1"
        else:
            state.influxd = srv
            state.config.pluginmanager.register(_StopInfluxd(srv), "ofbench-influxd-stop")
            settings.update(srv.client_settings())
    state.influx_settings = settings
    state.influx = InfluxExporter(spool_dir=REPORTS / "spool", **settings)
    replay = state.influx.replay_spool()
    if replay.replayed:
        print(f"[ofbench] replayed {replay.replayed} spooled record(s) to "
              f"{redact_url(settings['url'])}",
              file=sys.stderr)


class _StopInfluxd:
    """Stops the run's local influxd after every other session-finish step, whatever they
    raise, and at unconfigure (pytest skips sessionfinish when sessionstart raised); the
    reporter stops it too; stopping twice is harmless."""

    def __init__(self, srv):
        self.srv = srv

    def _stop(self) -> None:
        from harness.services import stop_local_influxd
        stop_local_influxd(self.srv)

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session, exitstatus):
        try:
            return (yield)
        finally:
            self._stop()

    def pytest_unconfigure(self, config):
        self._stop()


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
