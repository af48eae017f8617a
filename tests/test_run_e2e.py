"""A whole suite run as `make suites` does it (smoke on OVS userspace), then the checks a lab
engineer cares about: a report was written, and nothing of the run is left behind, also when
the run was killed with SIGKILL."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paths import REPO


def leftovers(short: str) -> list[str]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found = [f"netns {line.split()[0]}" for line in ns.splitlines()
             if line.startswith(f"ofb-{short}-")]
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"ofb{short}" in cmd or f"/run/ofbench/run-" in cmd and short in cmd:
                found.append(f"process {pid}: {cmd[:80]}")
    if Path("/dev/hugepages-ofbench").is_dir():
        found += [f"hugepage file {f}" for f in os.listdir("/dev/hugepages-ofbench")
                  if f.startswith(f"ofb{short}")]
    if Path("/var/run/dpdk").is_dir():
        found += [f"DPDK runtime folder {f}" for f in os.listdir("/var/run/dpdk")
                  if f.startswith(f"ofb{short}")]
    state = Path("/run/ofbench")
    if state.is_dir():
        found += [f"state {d}" for d in state.iterdir() if d.name.endswith(short)]
    return found


def run_dirs(reports: Path) -> list[Path]:
    return sorted(p for p in reports.glob("run-*") if p.is_dir())


@pytest.mark.features("netns", "ovs")
def test_smoke_run_writes_report_and_leaves_nothing(tmp_path):
    reports = tmp_path / "reports"
    cp = subprocess.run([sys.executable, "-m", "pytest", "suites/smoke", "--dut=local-ovs",
                         f"--reports-dir={reports}", "-q"], cwd=REPO, capture_output=True,
                        text=True, timeout=300)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    (run,) = run_dirs(reports)
    assert (reports / "latest").resolve() == run.resolve()
    assert (run / "index.html").is_file() and (run / "pytest.html").is_file()
    recs = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert recs and recs[0]["metrics"]["passed"] is True
    assert f"report: {run}/index.html" in cp.stderr + cp.stdout
    assert leftovers(run.name[-4:]) == []


@pytest.mark.features("netns", "ovs")
def test_sigkilled_run_is_cleaned_up_by_the_next_run(tmp_path):
    reports = tmp_path / "reports"
    p = subprocess.Popen([sys.executable, "-m", "pytest", "suites/smoke", "--dut=local-ovs",
                          f"--reports-dir={reports}", "-q"], cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    short = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the run has processes and namespaces
        dirs = run_dirs(reports) if reports.exists() else []
        if dirs:
            short = dirs[0].name[-4:]
            if any(l.startswith("process") for l in leftovers(short)) and \
                    any(l.startswith("netns") for l in leftovers(short)):
                break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert short and leftovers(short), "the killed run should have left something to clean"
    cp = subprocess.run([sys.executable, "-m", "drivers.lab.cleanup"], cwd=REPO,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    time.sleep(0.3)
    assert leftovers(short) == []


@pytest.mark.skipif(not Path("/usr/sbin/sshd").exists(), reason="openssh-server missing")
def test_sigkilled_ssh_lab_run_leaves_nothing_after_the_next_cleanup(tmp_path):
    """The emulated SSH lab killed mid-test: its hosts' sshd, the switch, generator and
    controller started over SSH, the namespaces and the hosts' run folders all go."""
    reports = tmp_path / "reports"
    p = subprocess.Popen([sys.executable, "-m", "pytest", "suites/smoke/test_links.py",
                          "--dut=lab-emu", f"--reports-dir={reports}", "-q"], cwd=REPO,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    short, seen = None, False
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and p.poll() is None:
        dirs = run_dirs(reports) if reports.exists() else []
        if dirs:
            short = dirs[0].name[-4:]
            # the switch runs on the switch host: the lab is up, deployed and in the test
            if subprocess.run(["pgrep", "-f", f"file-prefix ofb{short}links-sw"],
                              capture_output=True).returncode == 0:
                seen = True
                break
        time.sleep(0.1)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert seen, "the lab-emu run never started its switch"
    assert leftovers(short), "the killed run should have left something to clean"
    cp = subprocess.run([sys.executable, "-m", "drivers.lab.cleanup"], cwd=REPO,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    time.sleep(0.5)
    assert leftovers(short) == []
    sshd = subprocess.run(["pgrep", "-af", f"/run/ofbench/run-.*{short}/.*sshd_config"],
                          capture_output=True, text=True).stdout
    assert sshd == "", sshd
