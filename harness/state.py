"""RunState: what the plugin keeps for one pytest session, stored in ``config.stash``.

Suites read it through :func:`run_state` (the profile, the lab), never through private
attributes of the config.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest


class RunState:
    """Everything the plugin keeps for one pytest session."""

    def __init__(self, config):
        self.config = config
        self.profile = None
        self.run_dir: Path | None = None
        self.writer = None
        self.lab = None
        self.lease = None      # the lab place this run holds (harness/lease.py), if any
        self.coordinator = None   # --lab-coordinator=local: the run's own coordinator
        self.fingerprint = None   # the testbed's identity (drivers/lab/fingerprint.py)
        self.counts = {"passed": 0, "failed": 0, "skipped": 0, "error": 0}
        self.started = time.time()
        self.regression = False
        self.influx = None
        self.influxd = None
        self.influx_settings: dict = {}
        self.failed_tests: list[str] = []
        self.collected: dict[str, dict] = {}   # the session collector's sections


class Collector:
    """What a suite's tests hand to its summary test in the same session (instead of module
    globals): ``collector.section("controller")`` is one dict per suite, shared by the
    session's tests. A test marked ``summary`` runs after every other test of the session."""

    def __init__(self, store: dict[str, dict]):
        self._store = store

    def section(self, name: str) -> dict:
        return self._store.setdefault(name, {})


RUN_STATE = pytest.StashKey[RunState]()


def run_state(config) -> RunState:
    """The session's RunState (the profile, the run folder, the lab once it is up)."""
    return config.stash[RUN_STATE]
