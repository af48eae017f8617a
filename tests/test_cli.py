"""The harness as a user meets it: `pytest suites/ --dut=...` from the repo root."""
import subprocess
import sys
import textwrap

from paths import REPO


def pytest_run(*args, cwd=REPO, timeout=120):
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def test_profile_with_unknown_key_stops_the_run_naming_the_key(tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text(textwrap.dedent("""
        schema_version: 1
        lab: {kind: local}
        switch: {kind: ovs, wokers: 2}
    """))
    cp = pytest_run("suites/", f"--dut={bad}", f"--reports-dir={tmp_path / 'reports'}",
                    "--collect-only", "-q")
    assert cp.returncode != 0
    assert "typo.yaml:4: switch.wokers: unknown key (did you mean 'workers'?" in \
        cp.stderr + cp.stdout
    assert not (tmp_path / "reports").exists(), "nothing may start before the profile is valid"


def test_feature_marker_skips_with_the_reason(tmp_path):
    suite = tmp_path / "test_needs_trex.py"
    suite.write_text(textwrap.dedent("""
        import pytest
        @pytest.mark.features("trex")
        def test_line_rate():
            pass
    """))
    cp = pytest_run(str(suite), "--dut=local", "-rs", f"--rootdir={REPO}", "-c",
                    str(REPO / "pyproject.toml"), "-p", "conftest")
    out = cp.stdout + cp.stderr
    assert "profile 'local' lacks feature(s): trex" in out, out


def test_local_lab_marker_skips_on_a_remote_lab_with_the_reason(tmp_path):
    # lab1 is the example remote profile; a skipped test never builds the lab, so nothing is
    # contacted (its addresses are RFC 5737 documentation addresses anyway)
    suite = tmp_path / "test_needs_local.py"
    suite.write_text(textwrap.dedent("""
        import pytest
        @pytest.mark.local_lab
        def test_namespaces_here(lab):
            pass
    """))
    cp = pytest_run(str(suite), "--dut=lab1", "-rs", f"--rootdir={REPO}", "-c",
                    str(REPO / "pyproject.toml"), "-p", "conftest",
                    f"--reports-dir={tmp_path / 'reports'}")
    out = cp.stdout + cp.stderr
    assert "profile 'lab1' is a remote lab" in out, out
    assert cp.returncode == 0, out


def test_unreachable_lab_stops_the_run_once_at_the_start(tmp_path):
    import socket
    with socket.socket() as s:  # a loopback port nobody listens on: refused at once
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    prof = tmp_path / "downlab.yaml"
    prof.write_text(textwrap.dedent(f"""
        schema_version: 1
        lab:
          kind: remote
          hosts: {{switch: {{address: 127.0.0.1, ssh_port: {closed}}}}}
        switch: {{kind: ofbench, host: switch}}
        generator: {{kind: softgen, host: switch}}
    """))
    cp = pytest_run("suites/smoke", f"--dut={prof}", f"--reports-dir={tmp_path / 'reports'}",
                    "-q")
    out = cp.stdout + cp.stderr
    assert cp.returncode == 4, out
    assert f"downlab.yaml: lab.hosts.switch: 127.0.0.1:{closed} unreachable" in out, out
    # one stop before collection: no test ran, none repeats the error
    assert "passed" not in out and "failed" not in out and "test_smoke" not in out, out
