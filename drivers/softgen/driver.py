"""Python side of softgen: builds its command line, talks to its control socket, and implements
drivers.trafficgen.base.TrafficGenerator over one or more softgen processes.

One process has one worker core and any number of DPDK ports.  Several processes are used when
the two ends of a wire must be different processes (memif: a server and a client cannot share
one process), e.g. the generator loopback check softgen A --memif--> softgen B.  Port names are
the user's (e.g. "p0"); streams are numbered globally so that whichever process receives a
stream's packets counts them under the same id.

Processes are started by the lab supervisor in suites (argv from softgen_argv(), ready when
control_ready(path) is true) or by spawn() here (tests, tools), which always cleans up.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from drivers.trafficgen.base import TrafficGenerator
from drivers.trafficgen.counters import Counters, PortCounters, StreamCounters, check_counters
from drivers.trafficgen.latency import merge_bucket_lists, stats_from_softgen
from drivers.trafficgen.model import PortInfo, ResolvedStream
from drivers.trafficgen.rig import softgen_rig
from paths import build_dir

VERSION = "0.1.0"  # keep equal to SOFTGEN_VERSION in softgen.h (the stats reply carries it)
# Nominal speed of shared-memory wires, which have no line rate: high enough never to cap a
# software switch, and stated so the "% of line rate" arithmetic is explicit.
VIRTUAL_WIRE_MBPS = 100_000.0


class SoftgenError(RuntimeError):
    pass


def binary() -> Path:
    return build_dir() / "drivers" / "softgen" / "softgen"


@dataclass(frozen=True)
class SoftgenPort:
    """A port of a softgen process: a user-facing name and DPDK device arguments."""
    name: str
    devargs: str                 # "net_memif0,role=server,socket=/x.sock" or a PCI address
    kind: str = ""               # memif, vhost, virtio_user, af_packet, af_xdp, ring, null, pci
    speed_mbps: float | None = None

    def resolved_kind(self) -> str:
        if self.kind:
            return self.kind
        d = self.devargs.split(",")[0]
        for k in ("memif", "virtio_user", "vhost", "af_packet", "af_xdp", "ring", "null", "tap", "pcap"):
            if d.startswith(f"net_{k}") or d.startswith(f"eth_{k}"):
                return k
        return "pci"

    def eal_args(self) -> list[str]:
        if self.resolved_kind() == "pci":
            return ["-a", self.devargs]
        return ["--vdev", self.devargs]


def default_eal_args(tag: str) -> list[str]:
    """EAL memory flags when no lab supplies them: no hugepages, nothing left on disk."""
    return ["--no-huge", "--no-shconf", "-m", "256", "--file-prefix", f"ofb-softgen-{tag}-{os.getpid()}"]


def softgen_argv(ports: list[SoftgenPort], ctl_path: str | Path, eal_args: list[str],
                 lcores: tuple[int, int] = (0, 1), bin_path: Path | None = None) -> list[str]:
    """Command line: lcores = (control lcore, worker lcore)."""
    argv = [str(bin_path or binary())]
    if "-l" not in eal_args and "--lcores" not in eal_args:
        argv += ["-l", f"{lcores[0]},{lcores[1]}"]
    if "--main-lcore" not in eal_args:
        argv += ["--main-lcore", str(lcores[0])]
    argv += list(eal_args)
    if all(p.resolved_kind() != "pci" for p in ports) and "--no-pci" not in eal_args:
        argv.append("--no-pci")
    for p in ports:
        argv += p.eal_args()
    argv += ["--", "--ctl", str(ctl_path)]
    return argv


def control_ready(ctl_path: str | Path) -> bool:
    """True once softgen accepts connections on its control socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(0.5)
        s.connect(str(ctl_path))
        return True
    except OSError:
        return False
    finally:
        s.close()


class Control:
    """Request/reply client of one softgen control socket (one line each way)."""

    def __init__(self, ctl_path: str | Path, timeout_s: float = 10.0, connect=None):
        """``connect(path, timeout_s)`` gives a socket-like object (a lab host's
        ``connect_unix``: a local socket, or an SSH channel to the socket on a remote host)."""
        self.path = str(ctl_path)
        if connect is None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout_s)
            self.sock.connect(self.path)
        else:
            self.sock = connect(self.path, timeout_s)
        self.file = self.sock.makefile("rwb")

    def request(self, line: str) -> dict:
        self.file.write(line.encode() + b"\n")
        self.file.flush()
        reply = self.file.readline()
        if not reply:
            raise SoftgenError(f"softgen at {self.path} closed the control socket on '{line[:40]}'")
        msg = json.loads(reply)
        if not msg.get("ok"):
            raise SoftgenError(f"softgen at {self.path}: {msg.get('error')} (request '{line[:60]}')")
        return msg

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
            self.sock.close()


@dataclass
class Instance:
    """One softgen process seen through its control socket and its ports (in probe order)."""
    ctl_path: Path
    ports: list[SoftgenPort]
    control: Control | None = None
    proc: subprocess.Popen | None = None     # set when spawn() started it
    port_ids: dict[str, int] = field(default_factory=dict)
    host: object | None = None               # the lab host it runs on (None: this box)

    def connect(self) -> None:
        self.control = Control(self.ctl_path,
                               connect=getattr(self.host, "connect_unix", None))
        reply = self.control.request("ports")
        if len(reply["ports"]) != len(self.ports):
            raise SoftgenError(f"softgen at {self.ctl_path} has {len(reply['ports'])} ports, "
                               f"expected {len(self.ports)} ({', '.join(p.name for p in self.ports)})")
        self.port_ids = {p.name: i for i, p in enumerate(self.ports)}
        self.link_info = reply["ports"]


def stream_request(r: ResolvedStream, port_id: int) -> list[str]:
    """Control lines that define one resolved stream on its TX process (pure, unit-tested)."""
    line = f"stream id={r.id} port={port_id} pps={max(1, round(r.rate_pps))}"
    if r.count is not None:
        line += f" count={r.count}"
    if r.duration_s is not None:
        line += f" duration_us={max(1, round(r.duration_s * 1e6))}"
    line += f" lat={1 if r.latency else 0}"
    if r.vars and r.l3_offset is not None:
        line += f" l3={r.l3_offset}"
    for off, ln, count, step in r.vars:
        line += f" var={off}:{ln}:{count}:{step}"
    return [line] + [f"tpl id={r.id} hex={t.hex()}" for t in r.templates]


def merge_stats(streams: list[ResolvedStream], stats: list[dict]) -> dict[str, StreamCounters]:
    """Per-stream counters from the stats replies of every process (pure, unit-tested).
    TX figures come from the process that defines the stream, RX figures are summed."""
    by_id = {r.id: r for r in streams}
    out = {r.name: StreamCounters(name=r.name) for r in streams}
    lat: dict[int, dict] = {}
    for st in stats:
        for t in st.get("tx_streams", []):
            if t["id"] in by_id:
                sc = out[by_id[t["id"]].name]
                sc.tx += t["tx"]
                sc.unsent += t["unsent"]
                sc.refused += t.get("refused", 0)
                sc.offered += t["offered"]
                sc.tx_bytes += t["tx_bytes"]
                sc.tx_window_s = max(sc.tx_window_s, t.get("tx_window_ns", 0) / 1e9)
        for r in st.get("rx_streams", []):
            if r["id"] not in by_id:
                continue
            sc = out[by_id[r["id"]].name]
            sc.rx += r["rx"]
            sc.duplicate += r["dup"]
            sc.out_of_order += r["ooo"]
            if r["lat_n"]:
                a = lat.setdefault(r["id"], {"n": 0, "min": None, "max": 0, "sum": 0, "hist": []})
                a["n"] += r["lat_n"]
                a["min"] = r["lat_min_ns"] if a["min"] is None else min(a["min"], r["lat_min_ns"])
                a["max"] = max(a["max"], r["lat_max_ns"])
                a["sum"] += r["lat_sum_ns"]
                a["hist"] = merge_bucket_lists(a["hist"], [tuple(x) for x in r["hist"]])
    for sid, a in lat.items():
        out[by_id[sid].name].latency = stats_from_softgen(a["n"], a["min"], a["max"], a["sum"], a["hist"])
    for r in streams:
        if r.latency and out[r.name].latency is None:
            out[r.name].latency = stats_from_softgen(0, 0, 0, 0, [])
    return out


class Softgen(TrafficGenerator):
    name = "softgen"
    version = VERSION

    def __init__(self, instances: list[Instance]):
        self.instances = instances
        names = [p.name for inst in instances for p in inst.ports]
        if len(set(names)) != len(names):
            raise SoftgenError(f"port names must be unique across softgen processes: {names}")
        for inst in instances:
            if inst.control is None:
                inst.connect()
        self._streams: list[ResolvedStream] = []

    def _where(self, port: str) -> tuple[Instance, int]:
        for inst in self.instances:
            if port in inst.port_ids:
                return inst, inst.port_ids[port]
        raise SoftgenError(f"no softgen port named '{port}'")

    def ports(self) -> dict[str, PortInfo]:
        out = {}
        for inst in self.instances:
            for p, info in zip(inst.ports, inst.link_info):
                kind = p.resolved_kind()
                speed = p.speed_mbps or (VIRTUAL_WIRE_MBPS if kind in ("memif", "vhost", "virtio_user", "ring", "null")
                                         else float(info.get("speed_mbps") or 10_000))
                out[p.name] = PortInfo(p.name, speed, kind)
        return out

    def port_kinds(self) -> list[str]:
        return sorted({p.resolved_kind() for inst in self.instances for p in inst.ports})

    def _load(self, streams: list[ResolvedStream]) -> None:
        for inst in self.instances:
            inst.control.request("clear")
        for r in streams:
            inst, pid = self._where(r.port)
            for line in stream_request(r, pid):
                inst.control.request(line)
        self._streams = streams

    def start(self) -> None:
        for inst in self.instances:
            inst.control.request("start")

    def stop(self) -> None:
        for inst in self.instances:
            inst.control.request("stop")

    def is_running(self) -> bool:
        return any(inst.control.request("stats")["running"] for inst in self.instances)

    def raw_stats(self) -> list[dict]:
        return [inst.control.request("stats") for inst in self.instances]

    def live_counters(self) -> dict[str, tuple[int, int]]:
        """{stream: (tx, rx)} so far, read while the streams run (a soak's 1 s buckets); no
        rx <= tx check: packets in flight make a window's difference either sign."""
        return {name: (sc.tx, sc.rx)
                for name, sc in merge_stats(self._streams, self.raw_stats()).items()}

    def counters(self) -> Counters:
        stats = self.raw_stats()
        c = Counters(streams=merge_stats(self._streams, stats), rig=softgen_rig(stats))
        for inst, st in zip(self.instances, stats):
            for p, ps in zip(inst.ports, st["ports"]):
                c.ports[p.name] = PortCounters(tx=ps["tx"], rx=ps["rx"], unsent=ps["unsent"], tx_bytes=ps["tx_bytes"],
                                               rx_bytes=ps["rx_bytes"], rx_other=ps["rx_other"])
        return check_counters(c)

    def close(self) -> None:
        for inst in self.instances:
            if inst.control is not None:
                inst.control.close()
                inst.control = None


def _runtime_dir(argv: list[str]) -> Path | None:
    """/var/run/dpdk/<file-prefix>: EAL leaves it behind even with --no-shconf."""
    if "--file-prefix" in argv:
        return Path("/var/run/dpdk") / argv[argv.index("--file-prefix") + 1]
    return None


def _stop_proc(proc: subprocess.Popen, ctl: Path) -> None:
    if proc.poll() is None:
        with contextlib.suppress(Exception):
            c = Control(ctl, timeout_s=2)
            c.request("quit")
            c.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    with contextlib.suppress(FileNotFoundError):
        ctl.unlink()
    rt = _runtime_dir(proc.args if isinstance(proc.args, list) else [])
    if rt is not None and rt.name.startswith("ofb"):
        import shutil
        shutil.rmtree(rt, ignore_errors=True)


@contextlib.contextmanager
def spawn(groups: list[list[SoftgenPort]], workdir: Path, tag: str = "t",
          eal_args=None, ready_timeout_s: float = 30.0):
    """Starts one softgen process per port group (outside the lab supervisor: tests, tools),
    yields a connected Softgen, and stops every process in every exit path.  Workers of
    successive processes go to alternating cores (the box may have only two)."""
    procs: list[tuple[subprocess.Popen, Path]] = []
    gen = None
    try:
        instances = []
        for n, ports in enumerate(groups):
            ctl = Path(workdir) / f"softgen-{tag}-{n}.ctl"
            eal = eal_args(n) if callable(eal_args) else default_eal_args(f"{tag}{n}")
            lcores = (0, 1) if n % 2 == 0 else (1, 0)
            log = open(Path(workdir) / f"softgen-{tag}-{n}.log", "wb")
            proc = subprocess.Popen(softgen_argv(ports, ctl, eal, lcores), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
            log.close()
            procs.append((proc, ctl))
            deadline = time.monotonic() + ready_timeout_s
            while not control_ready(ctl):
                if proc.poll() is not None:
                    tail = (Path(workdir) / f"softgen-{tag}-{n}.log").read_text(errors="replace")[-2000:]
                    raise SoftgenError(f"softgen {n} exited with {proc.returncode}:\n{tail}")
                if time.monotonic() > deadline:
                    raise SoftgenError(f"softgen {n} not ready after {ready_timeout_s} s")
                time.sleep(0.05)
            instances.append(Instance(ctl, ports, proc=proc))
        gen = Softgen(instances)
        yield gen
    finally:
        if gen is not None:
            gen.close()
        for proc, ctl in reversed(procs):
            _stop_proc(proc, ctl)


def wait_links_up(gen: Softgen, timeout_s: float = 10.0) -> bool:
    """memif/vhost links come up when both ends are there; True once every port is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        up = all(p["link_up"] for inst in gen.instances for p in inst.control.request("ports")["ports"])
        if up:
            return True
        time.sleep(0.05)
    return False


def start_on_host(host, name: str, ports: list[SoftgenPort], lcores: tuple[int, int],
                  mem_mb: int = 256, netns: str | None = None,
                  ready_timeout_s: float = 30.0) -> Instance:
    """Start one softgen process on a lab host (local or over SSH) with the host's own build,
    EAL arguments and state folder; returns its Instance once the control socket answers.
    ``instance.managed`` is the host's process handle (``host.stop(instance.managed)``)."""
    ctl = host.sock_path(f"{name}.ctl")
    in_memory = any(p.resolved_kind() == "virtio_user" for p in ports)
    eal = host.eal_args(name, mem_mb=mem_mb, lcores=f"{lcores[0]},{lcores[1]}",
                        in_memory=in_memory)
    argv = softgen_argv(ports, ctl, eal + ["--main-lcore", str(lcores[0])],
                        bin_path=host.build_path("drivers/softgen/softgen"))

    proc = host.start(name, argv, netns=netns, ready=lambda: host.unix_listening(ctl),
                      ready_timeout_s=ready_timeout_s)
    inst = Instance(Path(ctl), ports, host=host)
    inst.managed = proc
    return inst
