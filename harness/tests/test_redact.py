"""Every command, URL and environment value the harness, the supervisor's logs and the reports'
pages record or show goes through the one redaction (redact/, its own rules in
redact/tests/test_redact.py); a token or URL credentials on the command line are refused."""
import json
import subprocess
import sys

import pytest

import redact
from paths import REPO

TOKEN = "tok-9f8e7d6c5b4a"
PASSWORD = "s3cr3tpw"


@pytest.fixture(autouse=True)
def _no_registered_secrets(monkeypatch):
    monkeypatch.setattr(redact, "_registered", set())


def test_provenance_records_no_secret_variable_and_no_url_credentials():
    from harness.results import env_provenance
    got = env_provenance({"OFBENCH_INFLUX_TOKEN": TOKEN, "OFBENCH_API_KEY": TOKEN,
                          "OFBENCH_INFLUX_URL": f"http://user:{PASSWORD}@127.0.0.1:1/",
                          "OFBENCH_SWITCH_LOOKUP": "simple", "HOME": "/root"})
    assert got == {"env_ofbench_influx_url": "http://***@127.0.0.1:1/",
                   "env_ofbench_switch_lookup": "simple"}


def _pytest(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_harness_refuses_a_token_or_url_credentials_on_the_command_line(tmp_path):
    reports = tmp_path / "reports"
    for bad in (f"--influx-token={TOKEN}", f"--influx-url=http://u:{PASSWORD}@127.0.0.1:1/"):
        cp = _pytest("suites/smoke", "--collect-only", "-q", f"--reports-dir={reports}", bad)
        out = cp.stdout + cp.stderr
        assert cp.returncode == 4, out  # a usage error, before anything starts
        assert "OFBENCH_INFLUX_TOKEN" in out and TOKEN not in out and PASSWORD not in out
        assert not reports.exists()


def test_reports_cli_refuses_a_token_on_the_command_line(tmp_path, capsys):
    from reports.__main__ import main
    assert main(["replay", "--influx-url", "http://127.0.0.1:1", "--token", TOKEN]) == 2
    err = capsys.readouterr().err
    assert "--token: a token on the command line" in err and "--token-file PATH" in err
    assert TOKEN not in err


def test_supervisor_log_shows_the_command_redacted(tmp_path, monkeypatch):
    from drivers.supervisor import Supervisor
    monkeypatch.setenv("OFBENCH_INFLUX_TOKEN", TOKEN)
    sup = Supervisor(state_dir=tmp_path / "state", log_dir=tmp_path / "logs")
    p = sup.start("echo", ["true", f"--influx-token={TOKEN}", f"http://u:{PASSWORD}@h/", TOKEN])
    p.wait(10)
    sup.stop(p)
    log = (tmp_path / "logs" / "echo.log").read_text()
    assert "start: true --influx-token=*** http://***@h/ ***" in log, log
    assert TOKEN not in log and PASSWORD not in log


def test_html_index_and_compare_page_show_old_records_redacted(tmp_path):
    from reports.compare import compare_runs, write_compare_page
    from reports.html import render_run_index
    runs = []
    for name in ("run-20260101T000000Z-aaaa", "run-20260101T000100Z-bbbb"):
        run = tmp_path / name
        run.mkdir()
        rec = {"schema_version": 1, "run_id": name, "suite": "smoke", "name": "x",
               "test_id": "t::x", "metrics": {"rx_mpps": 1.0}, "params": {},
               "provenance": {"profile": "local", "git_sha": "0" * 40,
                              "env_ofbench_influx_url": f"http://u:{PASSWORD}@h:1/",
                              "env_ofbench_influx_token": TOKEN}}
        (run / "results.jsonl").write_text(json.dumps(rec) + "\n")
        (run / "session.json").write_text(json.dumps(
            {"passed": 1, "command": f"pytest suites/ --influx-token={TOKEN} "
                                     f"--influx-url=http://u:{PASSWORD}@h:1/"}))
        runs.append(run)
    index = render_run_index(runs[0]).read_text()
    page = write_compare_page(compare_runs(*runs), tmp_path / "cmp.html").read_text()
    for text in (index, page):
        assert TOKEN not in text and PASSWORD not in text
    assert "--influx-token=***" in index and "http://***@h:1/" in index
