"""QEMU guests of the vmwire lab: the tiny Linux built by build_guest.sh, wired to the switch
by vhost-user (the fast path) or by a tap device that the switch reads through af_packet (the
kernel path, with an emulated e1000 or a virtio-net NIC).

Pure parts (unit-tested): :func:`qemu_argv` builds the command line, :func:`parse_serial`
reads what the guest's /init (guest_init.sh) printed on its serial console, the preflight
checks raise :class:`GuestSetupError` with a clear message *before* anything starts (missing
kernel/initramfs, a socket path in use, a bad NIC spec). Thin I/O: :func:`start_qemu_guest`
starts QEMU under the lab supervisor; :func:`wait_guest` polls the serial log.

Facts this relies on (DESIGN.md, measured here): KVM is unusable on the dev box, QEMU 7.2 TCG
works; vhost-user needs guest RAM shared with the backend (memfd, share=on) and, under TCG,
``vectors=0`` on virtio-net-pci (else QEMU segfaults in msix). The guest boots in ~7-12 s.

vhost-user roles: with ``server=True`` QEMU owns the socket (``server=on,wait=off``) and the
switch is the client, which reconnects by itself when the guest restarts (OVS
dpdkvhostuserclient, DPDK net_vhost client=1). With ``server=False`` QEMU is the client and
reconnects every second (``reconnect=1``) when the switch restarts.
"""
from __future__ import annotations

import json
import os
import re
import socket
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from paths import TOOLS

NIC_KINDS = ("vhost-user", "tap")
NIC_MODELS = ("virtio-net-pci", "e1000")
ROLES = ("idle", "ping", "iperf3-server", "iperf3-client")
MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")


class GuestSetupError(RuntimeError):
    """A guest cannot start; raised before any process is started. Says what to fix."""


@dataclass(frozen=True)
class GuestImage:
    kernel: Path
    initrd: Path


def default_guest_dir() -> Path:
    return Path(os.environ.get("OFBENCH_GUEST_DIR", TOOLS / "guest"))


def find_guest_image(guest_dir: str | Path | None = None) -> GuestImage:
    d = Path(guest_dir) if guest_dir else default_guest_dir()
    img = GuestImage(d / "vmlinuz", d / "initramfs.gz")
    for what, p in (("kernel", img.kernel), ("initramfs", img.initrd)):
        if not p.is_file() or p.stat().st_size == 0:
            raise GuestSetupError(f"guest {what} missing: {p} (build it with "
                                  f"`drivers/vmwire/build_guest.sh {d}` or `make setup`)")
    return img


@dataclass(frozen=True)
class Nic:
    kind: str                      # vhost-user | tap
    path: str                      # vhost-user: socket path; tap: interface name
    model: str = "virtio-net-pci"  # virtio-net-pci | e1000 (e1000 only on tap)
    mac: str = "52:54:00:00:00:01"
    server: bool = True            # vhost-user: QEMU owns the socket

    def check(self) -> None:
        if self.kind not in NIC_KINDS:
            raise GuestSetupError(f"NIC kind {self.kind!r}: expected one of {NIC_KINDS}")
        if self.model not in NIC_MODELS:
            raise GuestSetupError(f"NIC model {self.model!r}: expected one of {NIC_MODELS}")
        if self.kind == "vhost-user" and self.model != "virtio-net-pci":
            raise GuestSetupError("a vhost-user NIC is virtio-net-pci (e1000 has no vhost)")
        if not MAC_RE.match(self.mac):
            raise GuestSetupError(f"MAC {self.mac!r}: expected 6 lower-case hex bytes")
        if self.kind == "tap" and not 1 <= len(self.path) <= 15:
            raise GuestSetupError(f"tap name {self.path!r}: 1-15 characters")


@dataclass(frozen=True)
class Role:
    role: str = "idle"
    ip_cidr: str = "10.0.0.1/24"
    peer: str | None = None
    count: int = 10
    seconds: int = 10
    vlan: int | None = None
    wait_s: int = 60

    def check(self) -> None:
        if self.role not in ROLES:
            raise GuestSetupError(f"guest role {self.role!r}: expected one of {ROLES}")
        if self.role in ("ping", "iperf3-client") and not self.peer:
            raise GuestSetupError(f"guest role {self.role} needs a peer address")
        if self.vlan is not None and not 1 <= self.vlan <= 4094:
            raise GuestSetupError(f"VLAN {self.vlan}: expected 1..4094")

    def cmdline(self) -> str:
        parts = [f"ofb.ip={self.ip_cidr}", f"ofb.role={self.role}", f"ofb.count={self.count}",
                 f"ofb.seconds={self.seconds}", f"ofb.wait={self.wait_s}"]
        if self.peer:
            parts.append(f"ofb.peer={self.peer}")
        if self.vlan is not None:
            parts.append(f"ofb.vlan={self.vlan}")
        return " ".join(parts)


def qemu_argv(image: GuestImage, nic: Nic, role: Role, serial_path: str | Path, *,
              kvm: bool = False, mem_mb: int = 256, cpus: int = 1,
              qemu: str = "qemu-system-x86_64") -> list[str]:
    """QEMU command line of one guest (pure)."""
    append = f"console=ttyS0 quiet panic=-1 {role.cmdline()}"
    argv = [qemu, *(["-enable-kvm", "-cpu", "host"] if kvm else ["-accel", "tcg"]),
            "-m", str(mem_mb), "-smp", str(cpus), "-nodefaults", "-no-user-config",
            "-nographic", "-no-reboot", "-display", "none", "-monitor", "none",
            "-kernel", str(image.kernel), "-initrd", str(image.initrd), "-append", append,
            "-serial", f"file:{serial_path}"]  # romfile= below: no iPXE option ROM, boots faster
    if nic.kind == "vhost-user":
        chardev = f"socket,id=chr0,path={nic.path}"
        chardev += ",server=on,wait=off" if nic.server else ",reconnect=1"
        # Under TCG the msix emulation crashes with vhost-user: no MSI-X vectors (INTx).
        vectors = "" if kvm else ",vectors=0"
        argv += ["-object", f"memory-backend-memfd,id=mem0,size={mem_mb}M,share=on",
                 "-numa", "node,memdev=mem0", "-chardev", chardev,
                 "-netdev", "vhost-user,id=net0,chardev=chr0",
                 "-device", f"virtio-net-pci,netdev=net0,mac={nic.mac}{vectors},romfile="]
    else:
        # vnet_hdr=off: no checksum/segmentation offload between guest and tap, so the frames
        # the switch reads with af_packet are complete (as on a real wire).
        argv += ["-netdev", f"tap,id=net0,ifname={nic.path},script=no,downscript=no,"
                 "vnet_hdr=off",
                 "-device", f"{nic.model},netdev=net0,mac={nic.mac},romfile="]
    return argv


def check_socket_path(path: str | Path) -> None:
    """Refuse a vhost-user socket path that is in use; remove a stale socket file.

    In use = something accepts connections on it, or it is not a socket at all (a file we
    must not delete). A stale socket (nobody listening) is removed so the new owner can bind.
    """
    p = Path(path)
    if len(str(p).encode()) > 107:
        raise GuestSetupError(f"socket path {p} is longer than 107 bytes (sun_path limit)")
    if not p.parent.is_dir():
        raise GuestSetupError(f"socket path {p}: directory {p.parent} does not exist")
    try:
        st = p.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise GuestSetupError(f"socket path {p} is in use: it exists and is not a socket")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(0.5)
        s.connect(str(p))
    except (ConnectionRefusedError, FileNotFoundError):
        p.unlink(missing_ok=True)  # stale: its owner is gone
        return
    except OSError as e:
        raise GuestSetupError(f"socket path {p} is in use (connect: {e})") from None
    finally:
        s.close()
    raise GuestSetupError(f"socket path {p} is in use: another process is listening on it")


def preflight(image_dir: str | Path | None, nic: Nic, role: Role, *,
              kvm: bool = False) -> GuestImage:
    """Every check that must pass before the guest (or anything else) starts."""
    nic.check()
    role.check()
    image = find_guest_image(image_dir)
    if nic.kind == "vhost-user" and nic.server:
        check_socket_path(nic.path)
    if kvm and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        raise GuestSetupError("profile feature kvm is set but /dev/kvm is not usable")
    return image


# ---- what the guest printed -----------------------------------------------------------------
@dataclass
class GuestOutput:
    ready: bool = False
    ip: str | None = None
    mac: str | None = None
    ping_tx: int | None = None
    ping_rx: int | None = None
    iperf: dict | None = None
    errors: list[str] = field(default_factory=list)
    done_rc: int | None = None
    stats: dict = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.done_rc is not None

    def iperf_mbps(self) -> float | None:
        """Receiver-side goodput of the iperf3 run (Mbit/s)."""
        try:
            return self.iperf["end"]["sum_received"]["bits_per_second"] / 1e6
        except (TypeError, KeyError):
            return None


def parse_serial(text: str) -> GuestOutput:
    """Parse the OFB-* lines of guest_init.sh from a serial log (tolerates console noise)."""
    out = GuestOutput()
    lines = text.replace("\r", "").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        j = line.find("OFB-")
        body = line[j:] if j >= 0 else ""
        if body.startswith("OFB-READY"):
            out.ready = True
            kv = _kv(body)
            out.ip, out.mac = kv.get("ip"), kv.get("mac")
        elif body.startswith("OFB-PING"):
            kv = _kv(body)
            out.ping_tx, out.ping_rx = int(kv.get("tx", 0)), int(kv.get("rx", 0))
        elif body.startswith("OFB-STATS"):
            out.stats = {k: int(v) for k, v in _kv(body).items() if v.isascii() and v.isdigit()}
        elif body.startswith("OFB-ERROR"):
            out.errors.append(body[len("OFB-ERROR"):].strip())
        elif body.startswith("OFB-DONE"):
            out.done_rc = int(_kv(body).get("rc", -1))
        elif body.startswith("OFB-IPERF-BEGIN"):
            k = i + 1
            while k < len(lines) and "OFB-IPERF-END" not in lines[k]:
                k += 1
            try:
                out.iperf = json.loads("\n".join(lines[i + 1:k]))
            except ValueError:
                out.errors.append("iperf3 output is not JSON: "
                                  + " ".join(lines[i + 1:k])[:200])
            i = k
        i += 1
    return out


def _kv(line: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in line.split()[1:] if "=" in p)


# ---- thin I/O ---------------------------------------------------------------------------------
@dataclass
class QemuGuest:
    name: str
    proc: object
    serial_path: Path
    nic: Nic
    role: Role

    def output(self) -> GuestOutput:
        try:
            return parse_serial(self.serial_path.read_text(errors="replace"))
        except FileNotFoundError:
            return GuestOutput()

    def alive(self) -> bool:
        return self.proc.alive()


def start_qemu_guest(lab, name: str, nic: Nic, role: Role, *, kvm: bool = False,
                     image_dir=None, netns: str | None = None, mem_mb: int = 256,
                     wait_ready: bool = False, ready_timeout_s: float = 90.0) -> QemuGuest:
    """Preflight, then start QEMU under ``lab.supervisor`` (stopped with the test/run)."""
    image = preflight(image_dir, nic, role, kvm=kvm)
    # Beside the process logs of the test, so the report keeps what the guest printed.
    serial = Path(lab.supervisor.log_dir) / f"{name}.serial"
    serial.parent.mkdir(parents=True, exist_ok=True)
    serial.unlink(missing_ok=True)
    argv = qemu_argv(image, nic, role, serial, kvm=kvm, mem_mb=mem_mb)
    g = QemuGuest(name, None, serial, nic, role)
    ready = (lambda: g.output().ready) if wait_ready else None
    g.proc = lab.supervisor.start(name, argv, netns=netns, ready=ready,
                                  ready_timeout_s=ready_timeout_s)
    return g


def wait_guest(guest: QemuGuest, timeout_s: float, *, until: str = "done") -> GuestOutput:
    """Poll the serial log until the guest printed OFB-DONE (``until='done'``) or OFB-READY
    (``'ready'``), it exited, or ``timeout_s`` passed; returns what it printed."""
    deadline = time.monotonic() + timeout_s
    while True:
        out = guest.output()
        if (until == "done" and out.done) or (until == "ready" and out.ready):
            return out
        if not guest.alive() or time.monotonic() > deadline:
            return guest.output()
        time.sleep(0.25)
