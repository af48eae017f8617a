"""Results: what a suite test records, ``results.record(name, metrics, params, provenance)``.

The suite name is the folder under suites/. The profile's targets are checked on every record
of the profile's own switch (a peer's record is context, not a promise): misses are written
into the record (``target_misses``) and then fail the test with the amount they are off by.
Provenance: the run's base (git sha, DUT build, profile, lab, hosts, generator) plus what the
test adds (switch kind, port kind, generator version); the test's own keys win.
"""
from __future__ import annotations

import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

import pytest

from dut.profiles.targets import check_targets
from paths import REPO, SUITES
from redact import redact_text, secret_name


def suite_of(path: Path | str) -> str:
    """suites/<suite>/... -> <suite>; anything else is 'adhoc'."""
    try:
        return Path(path).resolve().relative_to(SUITES).parts[0]
    except (ValueError, IndexError):
        return "adhoc"


# Environment variables that shape what a run measures (aliases kept for scripts; each is
# documented in the README's table) are recorded in every record as env_<name>.
# A variable whose name looks secret (OFBENCH_INFLUX_TOKEN, *_PASSWORD, *_KEY...) is never
# recorded; URL credentials and known secret values in the others are masked (redact/).
RUN_ENV_PREFIX = "OFBENCH_"


def env_provenance(environ) -> dict:
    """{"env_ofbench_switch_lookup": "simple", ...} for every OFBENCH_* set, secrets dropped or
    masked (pure but for redact's registered secrets)."""
    ours = {k: v for k, v in environ.items() if k.startswith(RUN_ENV_PREFIX)}
    return {f"env_{k.lower()}": redact_text(str(v), environ)[:200]
            for k, v in sorted(ours.items()) if not secret_name(k)}


def base_provenance(state) -> dict:
    """The provenance every record of this run carries (profile, lab, hosts, generator, the
    OFBENCH_* environment)."""
    import os
    from reports.results import collect_provenance
    prof = state.profile
    base = collect_provenance(REPO)
    gen = prof.generator
    base.update({"profile": prof.name, "lab_kind": prof.lab_kind,
                 "dut_switch_kind": prof.switch["kind"], "generator": gen["kind"],
                 "generator_version": "n/a", "port_kind": "n/a", "one_dut": prof.one_dut})
    base.update(env_provenance(os.environ))
    from harness.lease import provenance as lease_provenance
    base.update(lease_provenance(state))
    if getattr(state.lab, "dut_build", None):
        base["dut_build"] = state.lab.dut_build  # the switch host's own build, not this box's
    hosts = prof.data["lab"].get("hosts") or {}
    if hosts:
        base["lab_hosts"] = ",".join(f"{role}={h['address']}" for role, h in sorted(hosts.items()))
    return base


def switch_provenance(profile, prov: dict, params: dict | None) -> dict:
    """``dut_switch_kind`` and ``dut_lookup`` for a record: the kind the suite names (its
    provenance, else params' switch_kind, else the profile's switch) and the flow lookup that
    switch ran with (ofbench: the profile's, or the env alias, as drivers.lab.switches starts
    it; another kind: its own classifier, "n/a"). What the suite states itself is kept."""
    from drivers.lab.switches import ofbench_settings
    kind = prov.get("dut_switch_kind") or (params or {}).get("switch_kind") \
        or profile.switch["kind"]
    lookup = prov.get("dut_lookup") or (ofbench_settings(profile, kind)["lookup"]
                                        if kind == "ofbench" else "n/a")
    return {"dut_switch_kind": kind, "dut_lookup": lookup}


class Results:
    def __init__(self, state, suite: str, test_id: str,
                 attach: Callable[[Path, str], None] | None = None,
                 progress: Callable[[str], None] | None = None):
        self.state, self.suite, self.test_id = state, suite, test_id
        self._attach_fn = attach or (lambda path, title: None)
        self._progress = progress or (lambda m: print(m, file=sys.stderr, flush=True))
        from reports.results import utc_rfc3339
        self.started = utc_rfc3339()
        self.misses: list[str] = []
        self.records: list[dict] = []

    def _writer(self):
        if self.state.writer is None:
            from reports.results import ResultWriter
            self.state.writer = ResultWriter(self.state.run_dir, base_provenance(self.state))
        return self.state.writer

    def target_misses(self, name: str, metrics: dict, params: dict | None,
                      provenance: dict) -> list[dict]:
        """Targets are the profile's promises about *its* switch; peers' records are context."""
        kind = provenance.get("dut_switch_kind") or (params or {}).get("switch_kind")
        if kind and kind != self.state.profile.switch["kind"]:
            return []
        return check_targets(self.state.profile.targets, self.suite, name, metrics)

    def record(self, name: str, metrics: dict, params: dict | None = None,
               provenance: dict | None = None, check_targets_now: bool = True,
               distributions: dict | None = None, search: dict | None = None) -> dict:
        """distributions: {"latency_us": {...}} compact shapes beside the metrics, built with
        distributions/ (drawn by the report, never judged); search: a throughput
        search's RFC 9971 goal results (drivers/trafficgen/mlr.py, MlrResult.search_record())."""
        from harness.lease import check
        check(self.state)   # a figure taken after the place was lost is not written
        prov = {"start_time": self.started, **(provenance or {})}
        prov.update(switch_provenance(self.state.profile, prov, params))
        misses = self.target_misses(name, metrics, params, prov)
        rec = self._writer().write(self.suite, name, metrics, params, prov,
                                   target_misses=misses or None, test_id=self.test_id,
                                   distributions=distributions or None, search=search or None)
        self.records.append(rec)
        if self.state.influx is not None:
            self.state.influx.export([rec])
        self.misses += [m["message"] for m in misses]
        if misses and check_targets_now:
            pytest.fail(f"{self.suite}/{name} missed its target(s): "
                        + "; ".join(m["message"] for m in misses), pytrace=False)
        return rec

    def progress(self, message: str) -> None:
        """A live progress line for long tests (shown even though pytest captures output)."""
        self._progress(f"{self.suite}: {message}")

    def add_plot(self, fig_or_png, title: str):
        from reports.html import add_plot
        path = add_plot(self.state.run_dir, self.suite, fig_or_png, title)
        self._attach_fn(Path(path), title)
        return path

    def add_table(self, rows: list[dict], title: str):
        from reports.html import add_table
        path = add_table(self.state.run_dir, self.suite, rows, title)
        self._attach_fn(Path(path), title)
        return path


def progress_line(config, message: str) -> None:
    """Write ``[HH:MM:SS] message`` to the terminal now, past pytest's output capture."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    stamp = time.strftime("%H:%M:%S")
    if tr is None:
        print(f"[{stamp}] {message}", file=sys.stderr, flush=True)
        return
    capman = config.pluginmanager.get_plugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else nullcontext():
        tr.write_line(f"[{stamp}] {message}")
        tr.flush()
