"""A real TRex server (v3.08, stateless interactive) started by the lab supervisor.

Split so the lead can start the same server on a remote host over SSH:
  * pure:   trex_config() -> the YAML dict; config_yaml(); server_argv(); find_runtime()
  * local:  start_trex_server(lab, ...) writes the YAML into the lab's state dir, starts
            `./_t-rex-64 -i --cfg <yaml> --no-scapy-server --no-termio` (cwd = the runtime dir)
            under lab.supervisor, and is ready when TRex's JSON-RPC port answers `get_version`
            (rpc_call: a tiny ZMTP 3.0 REQ client, so the main process needs no pyzmq and never
            imports the TRex client, which replaces yaml/scapy/zmq process-wide).
  * stop:   SIGTERM through the supervisor, then the DPDK runtime dir /var/run/dpdk/<prefix>
            is removed (TRex's EAL leaves it behind: see README.md, findings).

Ports are DPDK vdevs (memif here: TRex v3.08 compiles in net_memif, net_af_packet, net_tap,
not net_ring/net_null/virtio_user).  TRex runs them with `--no-huge --no-pci -m <limit_memory>`
whatever we say (vdev mode), so it takes no hugepages.

Modes (TrexCores):
  low_end   every lcore (master, RX, one DP) time-shares one CPU (`low_end_core`) with a
            sleeping scheduler; on a full TX ring it drops (counted, not retried).  Fits a
            2-CPU box.
  normal    master, RX and DP lcores on distinct CPUs, busy polling, retry on a full ring: what
            a lab with cores to spare should use.  Needs >= 3 CPUs.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import struct
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from paths import REPO

TREX_VERSION = "v3.08"
RUNTIME_FILES = ("_t-rex-64", "so/x86_64/libbpf-64.so", "so/x86_64/libzmq.so.5")
DPDK_RUN_DIR = Path("/var/run/dpdk")
# A NIC port of a hardware lab: TRex takes its PCI address as is (a vdev gets --vdev=).
PCI_RE = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


class TrexServerError(RuntimeError):
    pass


# ---- where the runtime is ----------------------------------------------------------------------
def find_runtime(repo: Path = REPO, env: dict | None = None) -> tuple[Path | None, str]:
    """(runtime dir, "") or (None, why it is missing).  Order: $OFBENCH_TREX_DIR, the clone's
    tools/trex link, then scripts/build_trex.sh --locate (the cache by source+CPU key)."""
    env = os.environ if env is None else env
    tried = []
    cands = []
    if env.get("OFBENCH_TREX_DIR"):
        cands.append(Path(env["OFBENCH_TREX_DIR"]))
    cands.append(repo / "tools" / "trex")
    for c in cands:
        if (c / "ofbench-trex.json").is_file() and all((c / f).is_file() for f in RUNTIME_FILES):
            return c.resolve(), ""
        tried.append(str(c))
    script = repo / "scripts" / "build_trex.sh"
    if script.exists():
        try:
            out = subprocess.run(["bash", str(script), "--locate"], capture_output=True, text=True,
                                 timeout=30)
            if out.returncode == 0 and out.stdout.strip():
                return Path(out.stdout.strip()), ""
        except (OSError, subprocess.SubprocessError):
            pass
        tried.append("the cache (build_trex.sh --locate)")
    why = f"TRex {TREX_VERSION} server not built (looked in {', '.join(tried)}); run `make setup`"
    failed = list(Path(env.get("OFBENCH_TREX_CACHE", "/var/cache/ofbench/trex")).glob("*.failed"))
    if failed:
        why += f"; last failed build: {failed[0].read_text().splitlines()[0]} (log {failed[0].with_suffix('.build.log')})"
    return None, why


def runtime_info(runtime: Path) -> dict:
    try:
        return json.loads((runtime / "ofbench-trex.json").read_text())
    except (OSError, ValueError):
        return {}


# ---- the config (pure) ------------------------------------------------------------------------
def memif_vdev(n: int, role: str, sock: str | Path, memif_id: int = 0) -> str:
    """A memif port for TRex's `interfaces:` (a socket file, not an abstract socket)."""
    if role not in ("server", "client"):
        raise TrexServerError(f"memif role {role!r} is not server or client")
    return f"net_memif{n},id={memif_id},role={role},socket={sock},socket-abstract=no"


@dataclass(frozen=True)
class TrexCores:
    low_end: bool = True
    low_end_core: int = 1            # low_end: the CPU every TRex lcore shares
    master: int = 0                  # normal: distinct CPUs
    rx: int = 1
    dp: tuple[int, ...] = (2,)

    def check(self) -> None:
        if not self.low_end:
            used = [self.master, self.rx, *self.dp]
            if len(set(used)) != len(used):
                raise TrexServerError(f"TRex normal mode needs distinct CPUs for master, RX and DP lcores, got {used}"
                                      " (use low_end on a box with fewer than 3 CPUs)")


def cores_from_profile(generator: dict, cpus: int | None = None) -> TrexCores:
    """TrexCores from a profile's generator section (pure): low_end (default: fewer than 4
    CPUs) and cores ("1" in low_end; "<master>,<rx>,<dp>[,<dp>...]" in normal mode)."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    low_end = generator.get("low_end", cpus < 4)
    raw = str(generator.get("cores") or "").strip()
    try:
        ids = [int(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise TrexServerError(f"generator.cores {raw!r}: expected comma-separated CPU numbers") from None
    if low_end:
        if len(ids) > 1:
            raise TrexServerError(f"generator.cores {raw!r}: low_end runs TRex on one CPU, give one")
        return TrexCores(low_end=True, low_end_core=ids[0] if ids else min(1, cpus - 1))
    if not ids:
        ids = [0, 1, 2]
    if len(ids) < 3:
        raise TrexServerError(f"generator.cores {raw!r}: normal mode needs <master>,<rx>,<dp>[,<dp>...]")
    cores = TrexCores(low_end=False, master=ids[0], rx=ids[1], dp=tuple(ids[2:]))
    cores.check()
    return cores


def trex_config(interfaces: list[str], *, prefix: str, rpc_port: int, pub_port: int,
                cores: TrexCores = TrexCores(), limit_memory_mb: int = 512,
                macs: list[tuple[str, str]] | None = None) -> dict:
    """The one-element TRex platform config for vdev ports (pure).

    interfaces: DPDK vdev arguments, one per port, in TRex port order (port i = interfaces[i]),
    e.g. "net_memif0,id=0,role=server,socket=/run/x.sock,socket-abstract=no", or "dummy" (a
    TRex placeholder port: for one real port, TRex needs an even count).  macs: per port (src_mac, dest_mac) for L2 mode (no ARP: the far end
    may be a switch that floods or drops ARP); default: each port sends to its pair's MAC."""
    if not interfaces or len(interfaces) % 2:
        raise TrexServerError(f"TRex needs an even number of ports, got {len(interfaces)}")
    cores.check()
    if macs is None:
        mine = [f"02:00:00:00:{0x7E:02x}:{i:02x}" for i in range(len(interfaces))]
        macs = [(mine[i], mine[i ^ 1]) for i in range(len(interfaces))]
    if len(macs) != len(interfaces):
        raise TrexServerError(f"{len(macs)} MAC pairs for {len(interfaces)} ports")
    cfg = {
        "version": 2,
        "port_limit": len(interfaces),
        "interfaces": [i if i == "dummy" or PCI_RE.match(i) else f"--vdev={i}" for i in interfaces],
        "prefix": prefix,
        "zmq_rpc_port": int(rpc_port),
        "zmq_pub_port": int(pub_port),
        "limit_memory": int(limit_memory_mb),
        "port_info": [{"src_mac": s, "dest_mac": d} for s, d in macs],
    }
    if cores.low_end:
        cfg.update({"low_end": True, "low_end_core": int(cores.low_end_core)})
    else:
        cfg.update({"c": len(cores.dp), "platform": {
            "master_thread_id": cores.master, "rx_thread_id": cores.rx,
            "dual_if": [{"socket": 0, "threads": list(cores.dp)}]}})
    return cfg


def config_yaml(cfg: dict) -> str:
    """TRex reads the first element of a YAML list (its yaml-cpp 0.2 wants block style)."""
    return yaml.safe_dump([cfg], default_flow_style=False, sort_keys=False)


def server_argv(cfg_path: str | Path, watchdog: bool = True) -> list[str]:
    """Run with cwd = the runtime dir (the binary finds so/x86_64/ relative to it).
    ``watchdog=False`` (``--no-watchdog``): for a server that is paused on purpose
    (Supervisor.pause), whose threads the watchdog would find stuck on resume and abort."""
    return ["./_t-rex-64", "-i", "--cfg", str(cfg_path), "--no-scapy-server", "--no-termio",
            *([] if watchdog else ["--no-watchdog"])]


BIND_SHIM = "drivers/trex/libofb_trex_bind.so"   # in the meson build (drivers/trex/bindshim.c)


def server_env(runtime: str | Path, bind_addr: str, shim: str | Path) -> dict:
    """TRex's environment: its own libraries, and the bind shim (``shim``, a path on the host
    that runs TRex) that puts TRex's RPC and publisher listeners on ``bind_addr`` (loopback, or
    the lab address the generator serves) instead of every address (TRex writes "tcp://*" in
    its source; see bindshim.c)."""
    if not bind_addr:
        raise TrexServerError("TRex needs the one address to listen on (loopback or the "
                              "generator's lab address); none was given")
    return {"LD_LIBRARY_PATH": f"{runtime}/so/x86_64", "LD_PRELOAD": str(shim),
            "OFB_TREX_BIND_ADDR": bind_addr}


def local_shim() -> Path:
    """The bind shim of this box's build, or a clear error naming what to run."""
    from paths import build_dir
    shim = build_dir() / BIND_SHIM
    if not shim.is_file():
        raise TrexServerError(f"{shim} is missing: TRex must not listen on every address, and "
                              f"this library binds it to one; `make setup` builds it "
                              f"(ninja -C {build_dir()} {BIND_SHIM})")
    return shim


# ---- TRex's JSON-RPC over ZMQ, without pyzmq -------------------------------------------------
def _zmtp_frame(body: bytes, more: bool = False, command: bool = False) -> bytes:
    flags = (1 if more else 0) | (4 if command else 0)
    if len(body) > 255:
        return bytes([flags | 2]) + struct.pack("!Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed the ZMQ connection")
        buf += chunk
    return buf


def _recv_frame(s: socket.socket) -> tuple[int, bytes]:
    flags = _recv_exact(s, 1)[0]
    size = struct.unpack("!Q", _recv_exact(s, 8))[0] if flags & 2 else _recv_exact(s, 1)[0]
    return flags, _recv_exact(s, size)


def rpc_call(host: str, port: int, method: str, params: dict | None = None, timeout_s: float = 2.0) -> dict:
    """One JSON-RPC 2.0 call on a TRex RPC port through a ZMTP 3.0 REQ socket (NULL security).
    Returns the reply's JSON object (with "result" or "error")."""
    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.settimeout(timeout_s)
        s.sendall(b"\xff" + b"\0" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + b"\0" + b"\0" * 31)
        greeting = _recv_exact(s, 64)
        if greeting[0] != 0xFF or greeting[9] != 0x7F or greeting[10] < 3:
            raise ConnectionError(f"not a ZMTP 3 peer on {host}:{port}")
        ready = b"\x05READY" + b"\x0bSocket-Type" + struct.pack("!I", 3) + b"REQ"
        s.sendall(_zmtp_frame(ready, command=True))
        flags, body = _recv_frame(s)
        if not flags & 4 or not body.startswith(b"\x05READY"):
            raise ConnectionError(f"unexpected ZMTP handshake from {host}:{port}: {body[:20]!r}")
        req = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}).encode()
        s.sendall(_zmtp_frame(b"", more=True) + _zmtp_frame(req))
        parts = []
        while True:
            flags, body = _recv_frame(s)
            if flags & 4:
                continue  # a command (e.g. PING): not part of the reply
            parts.append(body)
            if not flags & 1:
                break
        return json.loads(parts[-1])


def server_version(host: str, port: int, timeout_s: float = 2.0) -> str | None:
    """TRex's version string (e.g. "v3.08") if its RPC port answers, else None."""
    try:
        reply = rpc_call(host, port, "get_version", timeout_s=timeout_s)
    except (OSError, ValueError, ConnectionError):
        return None
    res = reply.get("result") or {}
    return str(res.get("version") or "") or ("?" if "error" in reply else None)


# ---- start / stop on the local lab -------------------------------------------------------------
def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_port_pair(host: str = "127.0.0.1") -> tuple[int, int]:
    """Two free TCP ports (rpc, pub); ZMQ binds them a moment later, so a race with another
    process is possible but rare; a start that fails on it says 'Address already in use'."""
    a = free_port(host)
    b = free_port(host)
    while b == a:
        b = free_port(host)
    return a, b


@dataclass
class TrexServer:
    """A running TRex server: what a client needs (server, sync_port=rpc, async_port=pub)."""
    name: str
    host: str
    rpc_port: int
    pub_port: int
    prefix: str
    version: str
    config: dict
    proc: object = None
    stop_fn: object = None
    cleaned: list = field(default_factory=list)

    @property
    def generator_version(self) -> str:
        return f"TRex {self.version} (server, stateless)"

    def stop(self) -> None:
        if self.stop_fn is not None:
            fn, self.stop_fn = self.stop_fn, None
            fn()


def dpdk_runtime_dir(prefix: str) -> Path:
    return DPDK_RUN_DIR / prefix


def start_trex_server(lab, name: str, interfaces: list[str], *, cores: TrexCores | None = None,
                      limit_memory_mb: int = 512, macs: list[tuple[str, str]] | None = None,
                      runtime: Path | None = None, ready_timeout_s: float = 60.0,
                      watchdog: bool = True) -> TrexServer:
    """Start a TRex server on this box under lab.supervisor with the given vdev ports
    (``watchdog``: see server_argv)."""
    if runtime is None:
        runtime, why = find_runtime()
        if runtime is None:
            raise TrexServerError(why)
    shim = local_shim()
    if cores is None:
        cores = TrexCores(low_end=True, low_end_core=1 if (os.cpu_count() or 1) > 1 else 0)
    # the lab's unique DPDK file prefix (LocalLab.file_prefix); a lab without one: name + pid
    prefix = lab.file_prefix(name) if hasattr(lab, "file_prefix") else f"ofb{os.getpid()}{name}"
    cfg_path = Path(lab.sock_path(f"{name}.trex.yaml"))
    seen: dict = {}

    def cleanup_runtime_dir():
        d = dpdk_runtime_dir(prefix)
        if d.exists():
            shutil.rmtree(d, ignore_errors=True)
            srv.cleaned.append(str(d))

    for attempt in range(3):
        rpc, pub = free_port_pair()
        cfg = trex_config(interfaces, prefix=prefix, rpc_port=rpc, pub_port=pub, cores=cores,
                          limit_memory_mb=limit_memory_mb, macs=macs)
        cfg_path.write_text(config_yaml(cfg))

        def ready(rpc=rpc) -> bool:
            v = server_version("127.0.0.1", rpc, timeout_s=1.0)
            if v:
                seen["version"] = v
            return bool(v)
        try:
            proc = lab.supervisor.start(name, server_argv(cfg_path, watchdog), cwd=runtime,
                                        env=server_env(runtime, "127.0.0.1", shim),
                                        ready=ready, ready_timeout_s=ready_timeout_s)
            break
        except BaseException as e:
            shutil.rmtree(dpdk_runtime_dir(prefix), ignore_errors=True)
            # another process took a port between free_port_pair() and TRex's bind: new ports
            if attempt < 2 and "Address already in use" in str(e):
                continue
            raise

    def stop():
        lab.supervisor.stop(proc, timeout_s=10)
        cleanup_runtime_dir()

    srv = TrexServer(name=name, host="127.0.0.1", rpc_port=rpc, pub_port=pub, prefix=prefix,
                     version=seen.get("version", "?"), config=cfg, proc=proc, stop_fn=stop)
    return srv
