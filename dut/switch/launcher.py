"""Start ofswitch (dut/switch, C + DPDK) under the lab's supervisor.

``start_ofswitch`` builds the command line (EAL args from the lab, one ``--vdev`` per port
devargs, then the switch's own options), starts it, and waits until the switch's stats socket
answers (ports are up, the agent runs). With ``wait_connected=True`` it also waits until the
OpenFlow session to the controller is established.

Pure parts (argv building, devargs parsing, stats decoding) are functions with unit tests in
dut/switch/tests/test_launcher.py; the I/O around them is thin.
"""
from __future__ import annotations

import contextlib
import json
import re
import socket
import time
from pathlib import Path

from paths import build_dir, san_build_dir  # the release and the sanitizer build

# port specs the switch builds itself: the pcap replay port (src/replay_port.h) and a
# vhost-user socket driven through librte_vhost without the net_vhost PMD (src/vhost_port.h)
REPLAY_PREFIX = "replay:"
VHOST_PREFIX = "vhost:"
OWN_PORT_PREFIXES = (REPLAY_PREFIX, VHOST_PREFIX)

# The switch's flow lookup (`--lookup`), owned here beside the binary it starts; the lab schema
# (dut/profiles/schema.py), the fuzzer and the suites import these names. "tuple" =
# dut/classifier's filtered merged tuples (the fast one), "dtree" = its compiled decision tree
# (flows added since the tree's build go to the tuples; the tree is rebuilt on a thread),
# "trie" = document 003's hybrid H-Trie/SP-Trie through the same library (updated through a
# delta trie merged now and then: slower to change, for comparisons), "simple" = a
# priority-sorted array (the reference). One default for the profile, the launcher and the C
# binary (OFS_LOOKUP_DEFAULT in dut/switch/src/ofswitch.h); dut/switch/tests/test_launcher.py
# checks they agree.
LOOKUPS = ("tuple", "dtree", "trie", "simple")
DEFAULT_LOOKUP = "tuple"


# What the sanitizer build prints when it finds something (it then aborts, or for leaks exits
# non-zero at the end): a test of a sanitized binary fails on any of these in its output.
SANITIZER_RE = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|"
                          r"UndefinedBehaviorSanitizer")


def sanitizer_reports(text: str) -> list[str]:
    """The distinct sanitizer report headlines in a binary's output (empty: clean)."""
    return sorted({m.group(0) for m in SANITIZER_RE.finditer(text)})


def builds() -> dict[str, Path]:
    """The builds a C test runs in: the release build and the sanitizer build."""
    return {"release": build_dir(), "sanitized": san_build_dir()}


def binary_path() -> Path:
    return build_dir() / "dut" / "switch" / "ofswitch"


def device_name(devargs: str) -> str | None:
    """The DPDK device name of a port spec, or None when the spec is a DPDK port id / PCI
    address that needs no --vdev ("net_af_packet1,iface=v1" -> "net_af_packet1")."""
    name = devargs.split(",", 1)[0].strip()
    if not name:
        raise ValueError(f"empty port devargs {devargs!r}")
    return name if name.startswith(("net_", "eth_")) else None


FAIL_MODES = ("secure", "standalone")
MAX_CONTROLLERS = 4  # ofswitch.h OFS_MAX_CONTROLLERS


def switch_argv(binary: str | Path, eal_args: list[str], ports: list[tuple[int, str]], *,
                controller: tuple[str, int] | list[tuple[str, int]], dpid: int,
                workers: int = 1, lookup: str = DEFAULT_LOOKUP,
                stats_sock: str | Path | None = None, idle_sleep_us: int = 0,
                fail_mode: str | None = None, echo_interval_ms: int | None = None,
                mbufs: int | None = None, cache_lines: int | None = None) -> list[str]:
    """Command line of ofswitch. ``ports`` = [(openflow port number, devargs or port id)];
    ``controller`` one (host, port) or a list of them (one connection each, roles per OF1.3.5
    6.3.6); ``fail_mode`` secure (the binary's default) or standalone (a learning switch while
    no controller is connected); ``echo_interval_ms`` the keepalive (default 5000 in the
    binary, 0 off); ``mbufs``: size of the switch's mbuf pool (default: the switch's own
    sizing; a net_pcap ``infinite_rx`` port keeps its whole pcap in it); ``cache_lines``:
    each worker's flow cache in 64-byte lines, a power of 2 (default: the binary's)."""
    if not ports:
        raise ValueError("ofswitch needs at least one port")
    if lookup not in LOOKUPS:
        raise ValueError(f"lookup {lookup!r}: expected one of {LOOKUPS}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    seen: set[int] = set()
    vdevs, port_opts = [], []
    for ofport, spec in ports:
        if not 1 <= int(ofport) <= 254:
            raise ValueError(f"OpenFlow port number {ofport} out of 1..254")
        if ofport in seen:
            raise ValueError(f"OpenFlow port number {ofport} given twice")
        seen.add(ofport)
        own = spec.startswith(OWN_PORT_PREFIXES)
        name = None if own else device_name(spec)
        if own:
            port_opts += ["--port", f"{ofport}={spec}"]  # the switch creates it, no --vdev
        elif name is not None:
            vdevs += ["--vdev", spec]
            port_opts += ["--port", f"{ofport}={name}"]
        else:
            if not (spec.isascii() and spec.isdigit()):
                vdevs += ["-a", spec]
            port_opts += ["--port", f"{ofport}={spec}"]
    controllers = [controller] if isinstance(controller, tuple) else list(controller)
    if not 1 <= len(controllers) <= MAX_CONTROLLERS:
        raise ValueError(f"{len(controllers)} controllers: ofswitch takes 1..{MAX_CONTROLLERS}")
    if fail_mode is not None and fail_mode not in FAIL_MODES:
        raise ValueError(f"fail_mode {fail_mode!r}: expected one of {FAIL_MODES}")
    ctl_opts = [o for host, port in controllers for o in ("--controller", f"tcp:{host}:{port}")]
    argv = [str(binary), *eal_args, *vdevs, "--", "--dpid", hex(dpid), *ctl_opts,
            *port_opts, "--workers", str(workers), "--lookup", lookup]
    if stats_sock:
        argv += ["--stats-sock", str(stats_sock)]
    if idle_sleep_us:
        argv += ["--idle-sleep-us", str(idle_sleep_us)]
    if fail_mode is not None:
        argv += ["--fail-mode", fail_mode]
    if echo_interval_ms is not None:
        argv += ["--echo-interval-ms", str(echo_interval_ms)]
    if mbufs:
        argv += ["--mbufs", str(int(mbufs))]
    if cache_lines is not None:
        n = int(cache_lines)
        if n < 64 or n & (n - 1):
            raise ValueError(f"cache_lines {cache_lines!r}: expected a power of 2 >= 64")
        argv += ["--cache-lines", str(n)]
    return argv


def read_stats(sock_path: str | Path, timeout_s: float = 2.0, connect=None) -> dict | None:
    """One JSON document from the switch's stats socket, or None if it does not answer.
    ``connect(path, timeout_s)`` reaches a socket on a lab host (default: this box)."""
    try:
        if connect is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout_s)
            s.connect(str(sock_path))
        else:
            s = connect(str(sock_path), timeout_s)
        with contextlib.closing(s):
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
    except (OSError, EOFError):
        return None
    try:
        return json.loads(buf.decode())
    except ValueError:
        return None


def start_ofswitch(lab, name: str, ports: list[tuple[int, str]], controller: tuple[str, int],
                   dpid: int = 1, netns: str | None = None, workers: int = 1,
                   lookup: str = DEFAULT_LOOKUP, wait_connected: bool = False,
                   idle_sleep_us: int | None = None, mem_mb: int = 512,
                   lcores: str | None = None, ready_timeout_s: float = 30.0, host=None,
                   fail_mode: str | None = None, echo_interval_ms: int | None = None,
                   mbufs: int | None = None, cache_lines: int | None = None):
    """Start ofswitch on ``host`` (a lab host; default: ``lab`` itself, the local box) with
    that host's own build; returns the host's process handle once the switch answers on its
    stats socket (and, if asked, has its OpenFlow session up). ``proc.stats_sock`` is the
    socket's path on the host, ``proc.host`` the host.

    ``idle_sleep_us`` (default: 50) makes an idle worker sleep instead of spinning, so
    functional tests share the 2 cores politely; 0 busy-polls like OVS-DPDK's PMD."""
    host = host or lab
    stats_sock = Path(host.state_dir) / f"{name}.stats"
    if host is lab:
        stats_sock.unlink(missing_ok=True)
    if lcores is None:
        lcores = ",".join(str(host.next_core()) for _ in range(workers)) if workers > 1 else None
    # PCI ports (a lab's NICs) need the PCI bus; vdev-only switches keep --no-pci.
    no_pci = all(spec.startswith(OWN_PORT_PREFIXES) or device_name(spec) is not None
                 for _, spec in ports)
    eal = host.eal_args(name, mem_mb=mem_mb, lcores=lcores, no_pci=no_pci)
    if idle_sleep_us is None:
        idle_sleep_us = 50
    binary = host.build_path("dut/switch/ofswitch") if hasattr(host, "build_path") \
        else binary_path()
    argv = switch_argv(binary, eal, ports, controller=controller, dpid=dpid,
                       workers=workers, lookup=lookup, stats_sock=stats_sock,
                       idle_sleep_us=idle_sleep_us, fail_mode=fail_mode,
                       echo_interval_ms=echo_interval_ms, mbufs=mbufs,
                       cache_lines=cache_lines)
    if not host.exists(binary):
        raise FileNotFoundError(f"{binary} not built on {getattr(host, 'role', 'this box')} "
                                "(run `make setup` or set OFBENCH_BUILD_DIR)")
    connect = getattr(host, "connect_unix", None)

    def ready() -> bool:
        st = read_stats(stats_sock, 2.0, connect=connect) if host.exists(stats_sock) else None
        return bool(st) and (st.get("of_connected") or not wait_connected)

    proc = host.start(name, argv, netns=netns, ready=ready, ready_timeout_s=ready_timeout_s)
    proc.stats_sock, proc.host = stats_sock, host
    return proc


def wait_of_connected(stats_sock: str | Path, timeout_s: float = 30.0, now=time.monotonic,
                      sleep=time.sleep) -> bool:
    """Poll the stats socket until the OpenFlow session is up; False on timeout."""
    deadline = now() + timeout_s
    while now() < deadline:
        st = read_stats(stats_sock, 0.5)
        if st and st.get("of_connected"):
            return True
        sleep(0.1)
    return False
