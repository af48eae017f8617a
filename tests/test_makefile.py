"""Every make variable that reaches a shell is quoted: a DUT (the nightly workflow's dispatch
input reaches it) is one argument to pytest, never shell code. The recipes run for real with a
stand-in Python that records its argv (setup skipped with `make -o setup`)."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from paths import REPO


HOSTILE = [
    "lab1; touch {mark} #",
    "lab1'; touch {mark} #",
    "lab1\"; touch {mark}; echo \"",
    "`touch {mark}`",
    "$$(touch {mark})",           # make reads $$ as $: the shell would see $(touch ...)
    "lab1 && touch {mark}",
]


@pytest.fixture
def fake_python(tmp_path):
    """A stand-in for .venv/bin/python that appends its argv (JSON) to calls.jsonl."""
    calls = tmp_path / "calls.jsonl"
    py = tmp_path / "python"
    py.write_text("#!/usr/bin/env python3\nimport json, sys\n"
                  f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    py.chmod(0o755)
    return py, calls


def run_make(target: str, py: Path, dut: str, extra_env=None, timeout=60):
    env = dict(os.environ, **(extra_env or {}))
    env.pop("MAKEFLAGS", None)
    return subprocess.run(["make", "-s", "-C", str(REPO), "-o", "setup", target, f"PY={py}",
                           f"DUT={dut}"], capture_output=True, text=True, env=env,
                          timeout=timeout)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["nightly", "suites", "bench"])
@pytest.mark.parametrize("template", HOSTILE)
def test_dut_reaches_pytest_as_one_argument_and_runs_nothing(tmp_path, fake_python, target,
                                                             template):
    py, calls = fake_python
    mark = tmp_path / "injected"
    dut = template.format(mark=mark)
    cp = run_make(target, py, dut)
    assert not mark.exists(), f"make {target} DUT={dut!r} ran shell code:\n{cp.stdout}{cp.stderr}"
    argvs = [json.loads(line) for line in calls.read_text().splitlines()]
    pytest_argv = next(a for a in argvs if a[:2] == ["-m", "pytest"])
    make_value = dut.replace("$$", "$")
    assert f"--dut={make_value}" in pytest_argv, pytest_argv


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_nightly_passes_no_token_in_argv(tmp_path, fake_python):
    py, calls = fake_python
    token = "tok-in-env-0123456789"
    tf = tmp_path / "token"
    tf.write_text(token)
    run_make("nightly", py, "local", {"OFBENCH_INFLUX_TOKEN": token,
                                      "OFBENCH_INFLUX_URL": "http://127.0.0.1:8086",
                                      "OFBENCH_INFLUX_TOKEN_FILE": str(tf)})
    text = calls.read_text()
    assert token not in text
    (pytest_argv,) = [a for a in map(json.loads, text.splitlines()) if a[:2] == ["-m", "pytest"]]
    assert "--influx-url=http://127.0.0.1:8086" in pytest_argv
    assert f"--influx-token-file={tf}" in pytest_argv
    assert not any(a.startswith("--influx-token=") for a in pytest_argv)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_help_prints_a_hostile_dut_as_text(tmp_path):
    mark = tmp_path / "injected"
    cp = subprocess.run(["make", "-s", "-C", str(REPO), "help",
                         f"DUT=x\"; touch {mark}; echo \""], capture_output=True, text=True,
                        timeout=30)
    assert cp.returncode == 0 and not mark.exists()
    assert f"--dut=x\"; touch {mark}; echo \"" in cp.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("template", ["lab1\ntouch {mark}", "lab1'\ntouch {mark} #"])
def test_a_dut_with_a_newline_stops_make_before_any_line_runs(tmp_path, fake_python, template):
    py, calls = fake_python
    mark = tmp_path / "injected"
    cp = run_make("nightly", py, template.format(mark=mark))
    assert cp.returncode != 0 and "a make variable reaching the shell has a newline" in cp.stderr
    assert not mark.exists() and not calls.exists()  # not even the fuzzer's line ran
