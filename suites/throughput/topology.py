"""Port-to-port topologies of the throughput suite, built in the lab:

  generator loopback:  softgen [net_ring: a port that loops onto itself]   (sanity, quick)
                       softgen A [memif server] ---- [memif client] softgen B  (latency floor)
  switch (ovs-dpdk):   OVS-DPDK dpdkvhostuser ports (server: <ovs rundir>/<port>) == softgen
                       virtio_user clients p0, p1
  switch (ofbench):    ofswitch's own vhost-user ports (server, librte_vhost) == softgen virtio_user clients p0, p1
                       (wire="memif": softgen memif servers == ofswitch net_memif clients)
  switch (ovs):        softgen [af_packet] -- veth -- OVS netdev (no DPDK: the kernel path)
  TRex (generator.kind trex, switch_p2p_trex): a TRex v3.08 server with two memif servers ==
                       ofswitch net_memif clients (the same wire as softgen's memif wire); TRex
                       has no virtio_user, so the vhost-user peers cannot be driven by it
Why vhost-user for the DPDK switches: OVS-DPDK's memif ports never come up here (OVS runs with
--in-memory and logs "rte_pmd_memif_probe(): Failed to register mp action callback"), and both
switches must be measured over the same wire to be compared. The switch is the vhost-user
backend and socket server, started first; softgen (the frontend, virtio_user) connects after
it: a virtio_user *server* blocks in probe until a client connects, and a virtio_user process
needs --in-memory EAL memory, not unlinked hugepages (DESIGN.md). The switch's datapath core
and softgen's worker core are pinned apart (SWITCH_CORE, GEN_WORKER_CORE).
Flows are installed by p2p_app (os-ken) through the switch's OpenFlow channel for every kind.
Everything is started by the lab supervisor and stopped at teardown.
"""
from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from drivers.softgen.driver import (VIRTUAL_WIRE_MBPS, Instance, Softgen, SoftgenPort, control_ready, softgen_argv,
                                   wait_links_up)
from drivers.trafficgen.frames import line_rate_pps


# What a TX-ceiling trial asks a sender (softgen, TRex) for: the 64 B line rate of the nominal
# 100 Gb/s virtual wire, 148.8 Mpps, more than one core sends. The ask was 40 Mpps until a Zen 5
# host sent right at it (softgen 39.99 Mpps in every window beside testpmd txonly's 57): a
# ceiling measured below the ask is the sender's, one equal to it is the ask's.
TX_ASK_PPS = line_rate_pps(VIRTUAL_WIRE_MBPS, 64)


_SEQ = iter(range(1, 1 << 30))
# Two busy-polling loops (the generator's worker, the switch's datapath) on one core of a 2-core
# box starve each other: pin them apart. softgen's control thread (blocking) shares the switch's.
SWITCH_CORE, GEN_WORKER_CORE = 0, 1


def fresh_sock(lab, name: str) -> Path:
    """A socket path never used before in this run (memif servers refuse a stale path)."""
    p = Path(lab.sock_path(f"{name}-{next(_SEQ)}.sock"))
    p.unlink(missing_ok=True)
    return p


def memif(n: int, role: str, sock: Path | str, kind_id: int = 0) -> str:
    return f"net_memif{n},role={role},socket={sock},socket-abstract=no,id={kind_id}"


def virtio_user(n: int, sock: Path, queue_size: int = 1024) -> str:
    """The generator's end of a vhost-user wire: virtio_user as the client of the switch's
    socket (a virtio_user server=1 would block in probe until the switch connects)."""
    return f"net_virtio_user{n},path={sock},queues=1,queue_size={queue_size}"


HUGEPAGES_FREE = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")
_HUGE_FLAGS_WITH_VALUE = ("--huge-dir", "-m", "--socket-mem")
_HUGE_FLAGS = ("--huge-unlink", "--in-memory", "--single-file-segments", "--no-huge")


def without_hugepages(args: list[str], mem_mb: int) -> list[str]:
    """EAL args with every hugepage flag replaced by `--no-huge -m mem_mb` (pure)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in _HUGE_FLAGS_WITH_VALUE:
            skip = True
        elif a not in _HUGE_FLAGS:
            out.append(a)
    return out + ["--no-huge", "-m", str(mem_mb)]


def free_hugepage_mb() -> int:
    try:
        return int(HUGEPAGES_FREE.read_text()) * 2
    except (OSError, ValueError):
        return 0


def eal_args(lab, name: str, mem_mb: int, lcores: str, in_memory: bool = False, free_mb=free_hugepage_mb) -> list[str]:
    """lab.eal_args, but --no-huge when the box has fewer free hugepages than this process
    needs: other runs on a shared box hold them, and EAL would exit "Cannot init memory"."""
    args = lab.eal_args(name, mem_mb=mem_mb, lcores=lcores, in_memory=in_memory)
    if "--no-huge" in args or free_mb() >= mem_mb + 32:
        return args
    return without_hugepages(args, mem_mb)


def start_softgen(lab, name: str, ports: list[SoftgenPort], lcores: tuple[int, int] = (0, 1),
                  netns: str | None = None, mem_mb: int = 128) -> Instance:
    ctl = Path(lab.sock_path(f"{name}.ctl"))
    # a virtio_user frontend shares its memory with the backend: no unlinked hugepages
    in_memory = any(p.resolved_kind() == "virtio_user" for p in ports)
    eal = eal_args(lab, name, mem_mb, f"{lcores[0]},{lcores[1]}", in_memory=in_memory)
    argv = softgen_argv(ports, ctl, eal + ["--main-lcore", str(lcores[0])])
    proc = lab.supervisor.start(name, argv, netns=netns, ready=lambda: control_ready(ctl), ready_timeout_s=30)
    inst = Instance(ctl, ports)
    inst.managed = proc
    return inst


@dataclass
class Topology:
    gen: Softgen
    tx_port: str
    rx_port: str
    port_kind: str
    switch_kind: str | None
    max_rate_pps: float
    stop: object
    switch_stats: Path | None = None      # the switch's stats socket (port counters), when known
    switch_ports: tuple[int, int] = (1, 2)  # OpenFlow ports facing tx_port, rx_port
    read_switch_stats: object = None      # () -> the switch's stats on any host, when known
    hosts: dict | None = None             # the lab's hosts of this topology (provenance)
    generator_version: str | None = None
    cross_check: bool = True              # False: switch_stats feed the telemetry only
    ring_slots: int = 1024                # descriptors of the DUT's rx rings (a stall's yardstick)
    read_pmd_stats: object = None         # () -> OVS-DPDK's per-PMD counters (pmd-stats-show)

    def close(self):
        self.gen.close()
        self.stop()


class LinksP2P(Topology):
    """The profile's own cabling on any lab (drivers/lab/links.py) as a switch matrix topology:
    the generator host's first two links to the switch host, flows from the controller host."""

    def close(self):
        self.stop()


def links_p2p(lab, profile, flows: int, tag: str) -> Topology:
    from drivers.lab.links import links_topology
    lt = links_topology(lab, profile, name=f"ndr{tag}", flows=flows)
    ports = profile.switch.get("ports") or {}
    first = ports[lt.plan[0]["switch"]]
    port_kind = "nic" if first.get("pci") else first["devargs"].split(",")[0].rstrip("0123456789") \
        .removeprefix("net_")
    return LinksP2P(lt.gen, lt.tx_port, lt.rx_port, port_kind, profile.switch["kind"],
                    lt.max_rate_pps, lt.close,
                    switch_ports=(lt.plan[0]["ofport"], lt.plan[1]["ofport"]),
                    read_switch_stats=lt.switch.stats, hosts=dict(lt.hosts),
                    generator_version=lt.generator_version)


def ring_loopback(lab, tag: str = "rl") -> Topology:
    """One softgen, one net_ring port that loops onto itself: TX and RX on one worker core, so
    nothing on a busy 2-core box can starve the receiver behind the sender's back."""
    inst = start_softgen(lab, f"{tag}-gen", [SoftgenPort("r", "net_ring0")], (0, 1))
    gen = Softgen([inst])
    return Topology(gen, "r", "r", "ring", None, 5e6, lambda: lab.supervisor.stop(inst.managed))


def loopback(lab, tag: str = "lb") -> Topology:
    sock = fresh_sock(lab, f"{tag}-memif")
    a = start_softgen(lab, f"{tag}-gen-a", [SoftgenPort("a", memif(0, "server", sock))], (0, 1))
    b = start_softgen(lab, f"{tag}-gen-b", [SoftgenPort("b", memif(0, "client", sock))], (1, 0))
    gen = Softgen([a, b])
    if not wait_links_up(gen, 15):
        gen.close()
        raise RuntimeError("generator loopback: memif link did not come up in 15 s")

    def stop():
        for inst in (b, a):
            lab.supervisor.stop(inst.managed)
    return Topology(gen, "a", "b", "memif", None, 10e6, stop)


def same_config_loopback(lab, tag: str = "lbs", ring_log2: int | None = None) -> Topology:
    """The generator's own loopback in the layout it has in the switch run (issue 44's fair
    yardstick): ONE softgen process, its worker on GEN_WORKER_CORE sending on p0 and receiving
    on p1, its control thread on SWITCH_CORE, p0 a memif server, p1 a memif client of p0's
    socket with the ring size the switch's client asks for (``rsize``), 64 B frames from the
    same streams. Per packet the worker does what it does in the switch run: one memif TX copy
    and one memif RX copy. DPDK's memif keys its sockets by path and refuses a server and a
    client on one path in one process, so the client names the same socket file by another
    spelling (``<dir>/./<name>``): one socket, two keys."""
    sock = fresh_sock(lab, f"{tag}-memif")
    alias = f"{sock.parent}/./{sock.name}"
    rs = f",rsize={ring_log2}" if ring_log2 else ""
    inst = start_softgen(lab, f"{tag}-gen", [SoftgenPort("p0", memif(0, "server", sock)),
                                             SoftgenPort("p1", memif(1, "client", alias) + rs)],
                         (SWITCH_CORE, GEN_WORKER_CORE))
    gen = Softgen([inst])

    def stop():
        lab.supervisor.stop(inst.managed)
    if not wait_links_up(gen, 15):
        gen.close()
        stop()
        raise RuntimeError("generator same-config loopback: memif link did not come up in 15 s")
    return Topology(gen, "p0", "p1", "memif", None, TX_ASK_PPS, stop,
                    ring_slots=1 << ring_log2 if ring_log2 else 1024)


def links_ring_log2(profile) -> int | None:
    """The memif ring size (log2) of the profile's first link: the ``rsize`` its client end
    asks for (the client sizes memif rings), None for DPDK's default (pure)."""
    from drivers.lab.links import link_plan, port_spec
    link = link_plan(profile)[0]
    for end in (profile.generator["ports"][link["generator"]], profile.switch["ports"][link["switch"]]):
        kv = dict(x.split("=", 1) for x in port_spec(end).split(",")[1:] if "=" in x)
        if kv.get("role") == "client" and kv.get("rsize"):
            return int(kv["rsize"])
    return None


def links_same_config_unavailable(profile) -> str | None:
    """Why the lab's generator host cannot measure its same-config loopback (None: it can)."""
    from drivers.lab.links import link_plan, port_spec
    if profile.generator["kind"] != "softgen":
        return (f"generator.kind {profile.generator['kind']!r}: the lab's same-config loopback is "
                f"softgen's (a TRex loopback on a lab host is not built yet)")
    link = link_plan(profile)[0]
    spec = port_spec(profile.generator["ports"][link["generator"]])
    if not spec.startswith("net_memif"):
        return (f"generator.ports.{link['generator']} is {spec.split(',')[0]!r}, not memif: a memif "
                f"loopback on the generator host is not the switch run's wire")
    return None


def links_same_config_loopback(lab, profile, tag: str = "lbs") -> Topology:
    """same_config_loopback on a lab's generator host (any lab: over SSH through the Lab
    protocol, as links_topology starts the switch run's softgen): ONE softgen with the
    profile's ``generator.cores`` (control lcore, worker), its worker sending on p0 (a memif
    server) and receiving on p1 (a client of p0's socket by another spelling) with the links'
    ring size (links_ring_log2), the switch run's memif wire without the switch."""
    from drivers.lab.links import generator_lcores
    from drivers.lab.switches import section_host
    from drivers.softgen.driver import start_on_host
    host = section_host(lab, "generator")
    sock = Path(host.sock_path(f"{tag}-memif-{next(_SEQ)}.sock"))  # unique in the run's state dir
    alias = f"{sock.parent}/./{sock.name}"
    log2 = links_ring_log2(profile)
    rs = f",rsize={log2}" if log2 else ""
    inst = start_on_host(host, f"{tag}-gen", [SoftgenPort("p0", memif(0, "server", sock)),
                                              SoftgenPort("p1", memif(1, "client", alias) + rs)],
                         generator_lcores(profile.generator.get("cores")))
    gen = Softgen([inst])

    def stop():
        host.stop(inst.managed)
    try:
        if not wait_links_up(gen, 15):
            raise RuntimeError("generator same-config loopback on the lab's generator host: memif "
                               "link did not come up in 15 s")
    except BaseException:
        with contextlib.suppress(Exception):
            gen.close()
        stop()
        raise
    return Topology(gen, "p0", "p1", "memif", None, TX_ASK_PPS, stop, ring_slots=1 << log2 if log2 else 1024)


def _controller(lab, name: str, flows: int, netns: str | None, ofports: tuple[int, int]):
    from drivers.lab.switches import start_controller
    done = Path(lab.sock_path(f"{name}.flows"))
    done.unlink(missing_ok=True)
    cfg = Path(lab.sock_path(f"{name}.yaml"))
    cfg.write_text(yaml.safe_dump({"pairs": [list(ofports)], "flows": flows, "udp_src_base": 1024,
                                   "done_file": str(done)}))
    proc, port = start_controller(lab, name, "dut.controller.p2p_app", netns=netns, config=str(cfg))
    return proc, port, done


def _wait_file(path: Path, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not done after {timeout_s:.0f} s")
        time.sleep(0.1)


def _wait_paths(ports: list[SoftgenPort], timeout_s: float, kind: str) -> None:
    for p in ports:
        sock = Path(dict(kv.split("=", 1) for kv in p.devargs.split(",")[1:] if "=" in kv)["path"])
        _wait_file(sock, timeout_s, f"{kind}: vhost-user socket {sock}")


def switch_p2p(lab, kind: str, flows: int, tag: str = "sw", wire: str = "vhost", ring_log2: int | None = None,
               controller=None) -> Topology:
    """softgen p0 -> switch port 1 ... switch port 2 -> softgen p1, flows installed.
    ``controller``: ``(lab, name, netns) -> (proc, port, done_file)`` starting the app that
    installs the flows and writes ``done_file`` once they are in (default: p2p_app with
    ``flows`` per direction; ``flows`` then only scales the wait)."""
    from drivers.lab.switches import start_switch
    cleanup: list = []

    def stop():
        for fn in reversed(cleanup):
            with contextlib.suppress(Exception):
                fn()

    try:
        netns = None
        if kind in ("ovs-dpdk", "ofbench") and wire == "vhost":
            # the switch is the vhost-user backend and socket server (OVS dpdkvhostuser: the
            # socket is <its rundir>/<port name>); softgen connects as virtio_user client
            # afterwards (a virtio_user *server* blocks in probe until a client comes)
            port_kind, max_rate = "vhost", TX_ASK_PPS
            kernel_ports: list = []
            names = [f"{tag}vh{i}" for i in (0, 1)]
            if kind == "ovs-dpdk":
                socks = [Path(lab.state_dir) / f"ovs-{tag}-{kind}" / n for n in names]
            else:
                socks = [fresh_sock(lab, f"{tag}-vhost{i}") for i in (0, 1)]
            # ofbench drives librte_vhost itself as OVS-DPDK does (its own "vhost:" port,
            # dut/switch/src/vhost_port.h; server: the switch owns the socket), not the
            # net_vhost PMD (dut/vmwire/wiring.py says why)
            extra = [(i + 1, {"ovs": {"name": names[i], "type": "dpdkvhostuser"},
                              "devargs": f"vhost:{sock},client=0"})
                     for i, sock in enumerate(socks)]
            # the virtio rings' size is the frontend's (softgen's queue_size); the backend takes it
            qs = 1 << ring_log2 if ring_log2 else 1024
            gen_ports = [SoftgenPort("p0", virtio_user(0, socks[0], qs)), SoftgenPort("p1", virtio_user(1, socks[1], qs))]
        elif kind == "ofbench" and wire == "memif":
            s0, s1 = (fresh_sock(lab, f"{tag}-memif{i}") for i in (0, 1))
            gen_ports = [SoftgenPort("p0", memif(0, "server", s0)), SoftgenPort("p1", memif(1, "server", s1))]
            rs = f",rsize={ring_log2}" if ring_log2 else ""  # the client sizes memif rings
            sw_dev = [memif(10, "client", s0) + rs, memif(11, "client", s1) + rs]
            port_kind, max_rate = "memif", TX_ASK_PPS
            kernel_ports = []
            extra = [(1, {"devargs": sw_dev[0]}), (2, {"devargs": sw_dev[1]})]
        elif kind in ("ovs-dpdk", "ofbench"):
            raise ValueError(f"{kind}: wire {wire!r} not supported (vhost; ofbench also memif)")
        else:  # ovs netdev: the kernel path through veth
            netns = lab.add_netns(f"{tag}")
            cleanup.append(lambda: lab.del_netns(netns))
            g0, g1, w0, w1 = (lab.ifname(f"{tag}{x}") for x in ("g0", "g1", "w0", "w1"))
            lab.add_veth(netns, g0, netns, w0)
            lab.add_veth(netns, g1, netns, w1)
            gen_ports = [SoftgenPort("p0", f"net_af_packet0,iface={g0}"), SoftgenPort("p1", f"net_af_packet1,iface={g1}")]
            kernel_ports = [(1, w0), (2, w1)]
            extra = []
            port_kind, max_rate = "af_packet", 1e6
        if controller is None:
            cproc, cport, done = _controller(lab, f"{tag}-ctl", flows, netns, (1, 2))
        else:
            cproc, cport, done = controller(lab, f"{tag}-ctl", netns)
        cleanup.append(lambda: lab.supervisor.stop(cproc))
        stats_sock: list = []
        pmd_reader: list = []

        def switch():
            if kind == "ofbench":  # pinned worker, busy polling, af_packet on the kernel ports
                devports = [(o, {"devargs": f"net_af_packet{o},iface={i}"}) for o, i in kernel_ports]
                proc = start_switch(lab, kind, name=f"{tag}-{kind}", ports=[], extra_ports=devports + extra,
                                    controller=("127.0.0.1", cport), dpid=0x7E, netns=netns,
                                    lcores=str(SWITCH_CORE), idle_sleep_us=0, mem_mb=256).proc
                cleanup.append(lambda: lab.supervisor.stop(proc))
                # its stats socket: every trial cross-checked and its telemetry read around it
                stats_sock.append(getattr(proc, "stats_sock", None))
                return
            sw = start_switch(lab, kind, name=f"{tag}-{kind}", netns=netns, ports=kernel_ports,
                              controller=("127.0.0.1", cport), dpid=0x7E, extra_ports=extra)
            cleanup.append(sw.stop)
            if kind == "ovs-dpdk":  # its PMD thread on the switch core, away from the generator's
                sw.ovs.vsctl("set", "Open_vSwitch", ".", f"other_config:pmd-cpu-mask={1 << SWITCH_CORE:#x}")
                pmd_reader.append(sw.pmd_stats)   # its own counters around every trial

        def generator():
            inst = start_softgen(lab, f"{tag}-gen", gen_ports, (SWITCH_CORE, GEN_WORKER_CORE), netns=netns)
            cleanup.append(lambda: lab.supervisor.stop(inst.managed))
            return inst

        if port_kind == "vhost":  # the switch owns the sockets
            switch()
            _wait_paths(gen_ports, 20, kind)
            gen_inst = generator()
        else:  # the memif servers are the generator's, the switch connects to them
            gen_inst = generator()
            switch()
        _wait_file(done, 60 + flows / 500, f"{kind}: installing {flows} flows")
        gen = Softgen([gen_inst])
        if not wait_links_up(gen, 20):
            raise RuntimeError(f"{kind}: generator links not up after 20 s")
        time.sleep(0.5)  # let the switch finish port setup (first packets may hit a cold path)
        sock = stats_sock[0] if stats_sock and stats_sock[0] else None
        # telemetry only: this wire's trials were never cross-checked against the switch's
        # counters (the memif topology's are), so a stale packet cannot fail a run here
        slots = 1 << ring_log2 if (port_kind in ("memif", "vhost") and ring_log2) else 1024
        return Topology(gen, "p0", "p1", port_kind, kind, max_rate, stop,
                        switch_stats=Path(sock) if sock else None, cross_check=False, ring_slots=slots,
                        read_pmd_stats=pmd_reader[0] if pmd_reader else None)
    except BaseException:
        stop()
        raise


# ---- TRex as the generator ------------------------------------------------------------------------
class TopologyUnavailable(RuntimeError):
    """This generator cannot drive this switch kind here (the message says why: a skip)."""


def trex_port_names(generator: dict) -> tuple[str, str, float]:
    """(tx port, rx port, line rate Mb/s) from the profile's generator.ports, ordered by
    trex_port (default t0/t1 at 10 Gb/s)."""
    ports = generator.get("ports") or {"t0": {"trex_port": 0, "speed_gbps": 10}, "t1": {"trex_port": 1, "speed_gbps": 10}}
    ordered = sorted(ports, key=lambda n: ports[n].get("trex_port", 0))
    if len(ordered) < 2:
        raise ValueError(f"generator.ports: TRex needs two ports, got {ordered}")
    speed = float(ports[ordered[0]].get("speed_gbps", 10)) * 1000
    return ordered[0], ordered[1], speed


# memif rings of 2^14 slots for TRex in low_end mode: its RX lcore sleeps up to 1 ms when idle
# and 100 us per busy tick (README of drivers/trex, finding 7), so DPDK's default 1024-slot ring
# overflows at the switch's egress: NDR through the ofbench switch 0.067-0.093 Mpps with 1024
# slots, 0.89-0.98 Mpps with 16384 (two runs each, alternating, same run, loaded box).
TREX_LOW_END_RING_LOG2 = 14


def switch_p2p_trex(lab, generator: dict, kind: str, flows: int, tag: str = "sw",
                    ring_log2: int | None = -1) -> Topology:
    """TRex p0 -> switch port 1 ... switch port 2 -> TRex p1 over memif, flows installed.
    TRex owns the memif sockets (servers), the switch connects as client, as with softgen.
    ring_log2: memif ring size (the client's rsize); -1 = TREX_LOW_END_RING_LOG2 in low_end,
    DPDK's default otherwise; None = DPDK's default."""
    if kind != "ofbench":
        raise TopologyUnavailable(f"{kind}: TRex v3.08 reaches a switch only over memif or af_packet here; "
                                  "OVS-DPDK's memif ports do not come up and vhost-user needs virtio_user, "
                                  "which TRex does not compile in")
    from drivers.lab.switches import start_switch
    from drivers.trex.driver import Trex
    from drivers.trex.server import cores_from_profile, memif_vdev, start_trex_server
    tx, rx, speed = trex_port_names(generator)
    cores = cores_from_profile(generator)
    if ring_log2 == -1:
        ring_log2 = TREX_LOW_END_RING_LOG2 if cores.low_end else None
    cleanup: list = []

    def stop():
        for fn in reversed(cleanup):
            with contextlib.suppress(Exception):
                fn()

    try:
        s0, s1 = (fresh_sock(lab, f"{tag}-tmemif{i}") for i in (0, 1))
        srv = start_trex_server(lab, f"{tag}-trex", [memif_vdev(0, "server", s0), memif_vdev(1, "server", s1)],
                                cores=cores,
                                limit_memory_mb=int(generator.get("limit_memory_mb", 512)))
        cleanup.append(srv.stop)
        cproc, cport, done = _controller(lab, f"{tag}-ctl", flows, None, (1, 2))
        cleanup.append(lambda: lab.supervisor.stop(cproc))
        name = f"{tag}-{kind}"
        # memif rings are sized by the client (the switch): ring_log2=None keeps DPDK's 1024
        rs = f",rsize={ring_log2}" if ring_log2 else ""
        proc = start_switch(lab, "ofbench", name=name, ports=[],
                            extra_ports=[(1, {"devargs": memif(10, "client", s0) + rs}),
                                         (2, {"devargs": memif(11, "client", s1) + rs})],
                            controller=("127.0.0.1", cport), dpid=0x7E, lcores=str(SWITCH_CORE),
                            idle_sleep_us=0, mem_mb=256).proc
        cleanup.append(lambda: lab.supervisor.stop(proc))
        _wait_file(done, 60 + flows / 500, f"{kind}: installing {flows} flows")
        gen = Trex(srv.host, {tx: (0, speed), rx: (1, speed)}, sync_port=srv.rpc_port, async_port=srv.pub_port)
        cleanup.insert(1, gen.close)  # the client goes before the server
        deadline = time.monotonic() + 20
        while not all(p.get("link") == "UP" for p in gen.rpc("port_info")["ports"]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{kind}: TRex memif ports not up after 20 s")
            time.sleep(0.2)
        time.sleep(0.5)  # let the switch finish port setup (first packets may hit a cold path)
        return Topology(gen, tx, rx, "memif", kind, 10e6, stop, switch_stats=Path(lab.state_dir) / f"{name}.stats",
                        ring_slots=1 << ring_log2 if ring_log2 else 1024)
    except BaseException:
        stop()
        raise


def trex_loopback(lab, generator: dict, tag: str = "tl") -> Topology:
    """TRex's own memif loopback: port 0 (memif server) -> port 1 (memif client of the same
    socket) in one TRex server with the profile's cores; the yardstick of its NDR through the
    switch (the generator's ceiling measured in the run, issue 44 part 4)."""
    from drivers.trex.driver import Trex
    from drivers.trex.server import cores_from_profile, memif_vdev, start_trex_server
    tx, rx, speed = trex_port_names(generator)
    cores = cores_from_profile(generator)
    sock = fresh_sock(lab, f"{tag}-tloop")
    # the switch topology's ring depth on the client side (low_end: TREX_LOW_END_RING_LOG2)
    rs = f",rsize={TREX_LOW_END_RING_LOG2}" if cores.low_end else ""
    srv = start_trex_server(lab, f"{tag}-trex", [memif_vdev(0, "server", sock), memif_vdev(1, "client", sock) + rs],
                            cores=cores, limit_memory_mb=int(generator.get("limit_memory_mb", 512)))
    try:
        gen = Trex(srv.host, {tx: (0, speed), rx: (1, speed)}, sync_port=srv.rpc_port, async_port=srv.pub_port)
        deadline = time.monotonic() + 20
        while not all(p.get("link") == "UP" for p in gen.rpc("port_info")["ports"]):
            if time.monotonic() > deadline:
                raise RuntimeError("TRex loopback: memif ports not up after 20 s")
            time.sleep(0.2)
    except BaseException:
        srv.stop()
        raise
    return Topology(gen, tx, rx, "memif", None, line_rate_pps(speed, 64), srv.stop)


def switch_cross_check(before: dict, after: dict, gen_tx: int, gen_rx: int, ports: tuple[int, int] = (1, 2)) -> dict:
    """The generator's port counters against the switch's over one trial (pure).  The switch
    cannot receive more on its ingress port than the generator sent, nor can the generator
    receive more than the switch sent out of its egress port; either is a broken measurement
    (CounterError).  Snapshots taken before the trial and after the generator's counters were
    read, so packets in flight only ever make the inequalities slacker."""
    from drivers.trafficgen.counters import CounterError

    def port(st, n, key):
        return next((int(p[key]) for p in st.get("ports", []) if int(p["port"]) == n), 0)

    sw_in = port(after, ports[0], "rx_packets") - port(before, ports[0], "rx_packets")
    sw_out = port(after, ports[1], "tx_packets") - port(before, ports[1], "tx_packets")
    if sw_in > gen_tx:
        raise CounterError(f"switch port {ports[0]} received {sw_in} packets but the generator sent {gen_tx}")
    if gen_rx > sw_out:
        raise CounterError(f"generator received {gen_rx} packets but switch port {ports[1]} sent {sw_out}")
    return {"gen_tx": gen_tx, "switch_rx": sw_in, "switch_tx": sw_out, "gen_rx": gen_rx}


def switch_telemetry(before: dict, after: dict, ports: tuple[int, int] = (1, 2)) -> dict:
    """The switch's own counters over one trial, from its stats before and after (pure; issue
    40 part 6): per port rx/tx packets, per worker busy cycles and CPU share, cycles per
    forwarded packet, flow-cache hit ratio. A key is left out when the switch does not
    publish what it needs (OVS's stats carry ports only)."""
    out: dict[str, float] = {}

    def port(st, n, key):
        return next((int(p.get(key, 0)) for p in st.get("ports", []) if int(p["port"]) == n), 0)

    for n in ports:
        out[f"port_{n}_rx_packets"] = float(port(after, n, "rx_packets") - port(before, n, "rx_packets"))
        out[f"port_{n}_tx_packets"] = float(port(after, n, "tx_packets") - port(before, n, "tx_packets"))
    forwarded = out[f"port_{ports[1]}_tx_packets"]
    wb = {int(w["lcore"]): w for w in before.get("workers", [])}
    busy_all = 0
    for w in after.get("workers", []):
        b = wb.get(int(w["lcore"]))
        if b is None:
            continue
        busy = int(w["busy_cycles"]) - int(b["busy_cycles"])
        idle = int(w["idle_cycles"]) - int(b["idle_cycles"])
        busy_all += busy
        if busy + idle > 0:
            out[f"worker_{int(w['lcore'])}_cpu_share"] = busy / (busy + idle)
    if after.get("workers") and forwarded > 0:
        out["cycles_per_packet"] = busy_all / forwarded
    if "cache_hits" in after and "cache_hits" in before:
        hits = int(after["cache_hits"]) - int(before["cache_hits"])
        misses = int(after.get("cache_misses", 0)) - int(before.get("cache_misses", 0))
        if hits + misses > 0:
            out["cache_hit_ratio"] = hits / (hits + misses)
    return out
