"""Issue 38: nothing ofbench starts listens on every address of a box or lab host: a
listener binds 127.0.0.1, or the lab address it serves."""
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from paths import REPO

SKIP = {".venv", "tools", "build", "build-san", ".git", "node_modules"}
WILDCARD = re.compile(r"""bind\(\(\s*(?:"0\.0\.0\.0"|'0\.0\.0\.0'|""|''|"::"|'::')\s*,"""
                      r"""|["']0\.0\.0\.0["']|INADDR_ANY|in6addr_any""")


def _sources():
    """The repository's own files (git ls-files: no venv, build or tool tree of any name)."""
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                               check=True).stdout.decode().split("\0")
        paths = [REPO / n for n in names if n]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for p in REPO.rglob("*")
                 if not p.relative_to(REPO).parts[0].startswith(".venv")]
    for p in paths:
        rel = p.relative_to(REPO)
        if rel.parts[0] in SKIP or not p.is_file() or p.suffix not in (".py", ".c", ".h", ".sh"):
            continue
        if rel.parts[-1] == "test_listeners.py":
            continue
        yield rel, p


# Sources allowed a wildcard bind, each with why it cannot listen beyond the run.
ALLOWED = {
    # the interop hosts' UDP receiver runs only inside a host namespace the run made (whose only
    # addresses are the run's own) and must bind the wildcard to see the flooding scenarios'
    # broadcasts (suites/interop/net.py starts it in the host's namespace)
    "suites/interop/udp_probe.py",
}


def test_no_source_binds_every_address():
    found = [f"{rel}:{n}: {line.strip()}" for rel, p in _sources() if str(rel) not in ALLOWED
             for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1)
             if WILDCARD.search(line)]
    assert found == []


def _tcp_listeners(port: int) -> set[str]:
    """Local addresses listening on TCP `port` (from /proc/net/tcp, state 0A)."""
    out = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        addr, p = f[1].split(":")
        if int(p, 16) == port and f[3] == "0A":
            out.add(".".join(str(b) for b in bytes.fromhex(addr)[::-1]))
    return out


def _udp_bound(port: int) -> set[str]:
    out = set()
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        f = line.split()
        addr, p = f[1].split(":")
        if int(p, 16) == port:
            out.add(".".join(str(b) for b in bytes.fromhex(addr)[::-1]))
    return out


@pytest.mark.parametrize("listen", [None, "127.0.0.3"])
def test_the_flowmod_client_listens_on_loopback_or_the_address_given(tmp_path, listen):
    port_file = tmp_path / "port"
    argv = [sys.executable, "-m", "suites.switch.flowmod_rate", "client", "--kind", "null",
            "--flows", "10", "--port-file", str(port_file), "--out", str(tmp_path / "out.json"),
            "--accept-timeout", "20"] + (["--listen", listen] if listen else [])
    p = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not port_file.exists():
            assert p.poll() is None, p.stderr.read()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _tcp_listeners(int(port_file.read_text())) == {listen or "127.0.0.1"}
    finally:
        p.kill()
        p.wait()


def test_the_wan_receiver_binds_loopback_or_the_address_given(tmp_path):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scn = tmp_path / "s.yaml"
    scn.write_text("apps:\n  - {name: a, length_bytes: 500, interval_ms: 10, deadline_ms: 50, "
                   f"udp_port: {port}}}\n")
    for listen in (None, "127.0.0.4"):
        ready = tmp_path / f"ready-{listen}"
        p = subprocess.Popen([sys.executable, "-m", "traces.wan_apps", "recv", "--scenario",
                              str(scn), "--out", str(tmp_path / "r.csv"), "--ready-file",
                              str(ready)] + (["--listen", listen] if listen else []),
                             cwd=REPO, stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while not ready.exists():
                assert p.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            assert _udp_bound(port) == {listen or "127.0.0.1"}
        finally:
            p.terminate()
            p.wait(10)

