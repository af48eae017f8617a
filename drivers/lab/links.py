"""The profile's own cabling as a running topology, on any lab (local or over SSH):

    generator host [generator.ports]  ==links==  [switch.ports] switch host  <-OpenFlow- controller host

``links_topology(lab, profile, ...)`` starts, each on the host the profile names: the
port-to-port controller app (``dut.controller.p2p_app``: flows between the switch ports of
the first two links, per flow a ``udp_src`` match when ``flows`` > 1), the profile's switch with
every ``switch.ports`` entry (OpenFlow port numbers in the order the ports are listed), and
softgen with the generator ports of those links; it waits until the links are up and the flows
are in. The profile is the single source of truth: ``switch.cores``, ``generator.cores``
(control lcore first), ``switch.busy_poll`` (workers spin: dedicated cores only),
``controller.host``/``port``, ports' ``devargs`` and ``speed_gbps``.
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field

from drivers.lab.base import LabError, parse_cores
from drivers.lab.switches import (SwitchHandle, controller_host, section_host, start_controller,
                                  start_switch, switch_host)


def link_plan(profile) -> list[dict]:
    """Each link of the profile: generator port, switch port, its OpenFlow number (pure)."""
    sw_ports = list(profile.switch.get("ports") or {})
    return [{"generator": link["generator"], "switch": link["switch"],
             "ofport": sw_ports.index(link["switch"]) + 1} for link in profile.data["links"]]


def link_speed_mbps(*ends: dict) -> float:
    """A link runs at the slower of its ends' ``speed_gbps``; 0 when neither states one
    (a memif wire has no line rate) (pure)."""
    stated = [end["speed_gbps"] * 1000 for end in ends if end.get("speed_gbps")]
    return min(stated) if stated else 0.0


def port_spec(port: dict) -> str:
    """What a profile port is to DPDK: its devargs (a vdev) or its PCI address (a NIC)."""
    return port.get("devargs") or port["pci"]


def generator_lcores(spec: str | None, fallback: tuple[int, int] = (0, 1)) -> tuple[int, int]:
    """(control lcore, worker lcore) from ``generator.cores`` (pure)."""
    cores = parse_cores(spec) if spec else []
    if len(cores) >= 2:
        return cores[0], cores[1]
    if len(cores) == 1:
        return cores[0], cores[0]
    return fallback


def why_not(profile) -> str | None:
    """None when the profile's links can be driven here, else the reason (for a skip)."""
    if len(profile.data["links"]) < 2:
        return (f"profile {profile.name!r} cables fewer than 2 links (links: generator ports to "
                f"switch ports)")
    if profile.generator["kind"] == "trex" and len(profile.data["links"]) % 2:
        return "TRex needs an even number of ports: cable an even number of links"
    if profile.switch["kind"] != "ofbench":
        return "the profile's switch ports are DPDK devargs, which only ofbench takes"
    return None


@dataclass
class LinksTopology:
    gen: object                     # a drivers.trafficgen TrafficGenerator (softgen)
    tx_port: str
    rx_port: str
    switch: SwitchHandle
    plan: list[dict]
    hosts: dict[str, str]
    max_rate_pps: float
    stops: list = field(default_factory=list)
    generator_version: str = ""

    def close(self) -> None:
        for stop in reversed(self.stops):
            with contextlib.suppress(Exception):
                stop()
        self.stops.clear()


def links_topology(lab, profile, *, name: str = "links", flows: int = 1,
                   timeout_s: float = 30.0) -> LinksTopology:
    """Controller app, switch and generator (softgen or a TRex server) on their hosts."""
    why = why_not(profile)
    if why:
        raise LabError(why)
    plan = link_plan(profile)[:2]
    sw_host, ctl_host = switch_host(lab), controller_host(lab)
    gen_host = section_host(lab, "generator")
    sw_ports = profile.switch["ports"]
    done = ctl_host.sock_path(f"{name}-p2p.flows")
    cfg = ctl_host.sock_path(f"{name}-p2p.yaml")
    ctl_host.write_text(cfg, json.dumps({"pairs": [[plan[0]["ofport"], plan[1]["ofport"]]],
                                         "flows": flows, "udp_src_base": 1024,
                                         "done_file": str(done)}))
    topo = LinksTopology(None, plan[0]["generator"], plan[1]["generator"], None, plan,
                         {"switch_host": getattr(sw_host, "address", "local"),
                          "generator_host": getattr(gen_host, "address", "local"),
                          "controller_host": getattr(ctl_host, "address", "local")}, 0.0)
    try:
        ctl, port = start_controller(lab, f"{name}-ctl", "dut.controller.p2p_app", netns=None,
                                     config=str(cfg), host=ctl_host)
        topo.stops.append(lambda: ctl_host.stop(ctl))
        topo.switch = start_switch(
            lab, "ofbench", name=f"{name}-sw", ports=[], host=sw_host,
            controller=(profile.controller["host"], port), wait_connected=True,
            idle_sleep_us=0 if profile.switch.get("busy_poll") else None,
            extra_ports=[(i + 1, {"devargs": port_spec(p)}) for i, p in
                         enumerate(sw_ports.values())])
        topo.stops.append(topo.switch.stop)
        speeds = [link_speed_mbps(profile.generator["ports"][p["generator"]],
                                  sw_ports[p["switch"]]) for p in plan]
        if profile.generator["kind"] == "trex":
            topo.gen, topo.generator_version = _start_trex(lab, gen_host, name, plan, profile)
            topo.stops.append(topo.gen.close_all)
        else:
            _start_softgen(topo, gen_host, name, plan, profile, timeout_s)
        deadline = time.monotonic() + timeout_s
        while not ctl_host.exists(done):
            if time.monotonic() > deadline:
                raise LabError(f"the controller did not install the flows in {timeout_s:.0f} s")
            time.sleep(0.2)
        warm_up(topo, timeout_s)
        # 64 B frames take 84 B on the wire; without a stated speed, memif has no line rate;
        # never above what the generator's own port carries (TRex reports its port speed)
        from drivers.trafficgen.frames import line_rate_pps
        topo.max_rate_pps = min(s for s in speeds) * 1e6 / (84 * 8) if all(speeds) else 20e6
        gen_port = topo.gen.ports().get(topo.tx_port)
        if gen_port is not None and gen_port.speed_mbps:
            topo.max_rate_pps = min(topo.max_rate_pps, line_rate_pps(gen_port.speed_mbps, 64))
    except BaseException:
        topo.close()
        raise
    return topo


def warm_up(topo: LinksTopology, timeout_s: float = 30.0, frames: int = 32) -> int:
    """Exchange a few frames both ways until every one comes back: a generator sees its link
    up before the switch's agent does (it polls link state on its 100 ms tick and drops what
    it would send to a port it still thinks down), so traffic measured right after "link up"
    lost its first ~70 ms. Returns the number of tries; raises LabError on a path that never
    forwards."""
    from drivers.trafficgen.model import Stream
    deadline = time.monotonic() + timeout_s
    tries = 0
    while True:
        tries += 1
        c = topo.gen.run([Stream("warm-ab", topo.tx_port, rx_port=topo.rx_port, frame_size=64,
                                 rate_pps=1000, count=frames),
                          Stream("warm-ba", topo.rx_port, rx_port=topo.tx_port, frame_size=64,
                                 rate_pps=1000, count=frames)], drain_s=0.2)
        if all(c.streams[n].rx == c.streams[n].tx == frames for n in ("warm-ab", "warm-ba")):
            return tries
        if time.monotonic() > deadline:
            raise LabError(f"the links do not forward both ways after {timeout_s:.0f} s "
                           f"({tries} warm-up exchanges of {frames} frames)")
        time.sleep(0.1)


def _start_softgen(topo: LinksTopology, host, name: str, plan: list[dict], profile,
                   timeout_s: float) -> None:
    from drivers.softgen.driver import VERSION, Softgen, SoftgenPort, start_on_host, wait_links_up
    gen_ports = profile.generator["ports"]
    ports = []
    for p in plan:
        speed = gen_ports[p["generator"]].get("speed_gbps")
        ports.append(SoftgenPort(p["generator"], port_spec(gen_ports[p["generator"]]),
                                 speed_mbps=speed * 1000 if speed else None))
    inst = start_on_host(host, f"{name}-gen", ports,
                         generator_lcores(profile.generator.get("cores")))
    topo.gen = Softgen([inst])
    topo.generator_version = f"softgen {VERSION}"
    topo.stops.append(lambda: (topo.gen.close(), host.stop(inst.managed)))
    if not wait_links_up(topo.gen, timeout_s):
        raise LabError(f"the generator's links to the switch did not come up in "
                       f"{timeout_s:.0f} s ({', '.join(p['generator'] + '-' + p['switch'] for p in plan)})")


class _TrexOnHost:
    """The TRex client (drivers.trex.driver.Trex) plus the server it started on a lab host."""

    def __init__(self, client, stop_server):
        self.client, self._stop_server = client, stop_server

    def __getattr__(self, item):
        return getattr(self.client, item)

    def close_all(self) -> None:
        try:
            self.client.close()
        finally:
            self._stop_server()


def _start_trex(lab, host, name: str, plan: list[dict], profile):
    """A TRex v3.08 server on the generator host with the links' generator ports (their
    devargs, in link order: TRex port i = link i), reached by the TRex client over the lab's
    network at the host's address (``generator.server``), ports ``sync_port``/``async_port``."""
    from drivers.trex.driver import Trex
    from drivers.trex.server import (BIND_SHIM, TrexServerError, config_yaml, cores_from_profile,
                                     find_runtime, local_shim, server_argv, server_env,
                                     server_version, trex_config)
    gen = profile.generator
    remote = host is not lab
    runtime = getattr(lab, "trex_runtime", None) if remote else find_runtime()[0]
    if runtime is None:
        raise LabError("generator.kind: trex, but no TRex runtime is built for the generator "
                       "host (make setup builds it; scripts/build_trex.sh)")
    address = gen.get("server") if remote else "127.0.0.1"
    try:
        # TRex listens on this address only (bindshim.c); the host's own build holds the shim
        shim = host.build_path(BIND_SHIM) if remote else local_shim()
    except TrexServerError as e:
        raise LabError(f"{profile.path.name}: generator: {e}") from None
    if remote and host.run(["test", "-f", str(shim)], check=False).returncode != 0:
        # ld.so would only warn and TRex would listen on every address of the host
        raise LabError(f"{profile.path.name}: generator: {shim} is missing on "
                       f"{getattr(host, 'role', 'the generator host')}: TRex must not listen on "
                       f"every address (the host's build makes it: ninja -C build {BIND_SHIM})")
    rpc, pub = int(gen.get("sync_port") or 4501), int(gen.get("async_port") or 4500)
    ports = gen["ports"]
    try:
        cores = cores_from_profile(gen, cpus=len(host.cores()) if remote else None)
        cfg = trex_config([port_spec(ports[p["generator"]]) for p in plan],
                          prefix=host.file_prefix(f"{name}-trex"), rpc_port=rpc, pub_port=pub,
                          cores=cores, limit_memory_mb=int(gen.get("limit_memory_mb", 512)))
    except TrexServerError as e:
        raise LabError(f"{profile.path.name}: generator: {e}") from None
    cfg_path = host.sock_path(f"{name}-trex.yaml")
    host.write_text(cfg_path, config_yaml(cfg))
    seen: dict = {}

    def ready() -> bool:
        seen["version"] = server_version(address, rpc, timeout_s=1.0)
        return bool(seen["version"])

    proc = host.start(f"{name}-trex", server_argv(cfg_path), cwd=runtime,
                      env=server_env(runtime, address, shim), ready=ready, ready_timeout_s=90)
    speeds = {p["generator"]: (ports[p["generator"]].get("speed_gbps") or 10) * 1000 for p in plan}
    try:
        client = Trex(address, {p["generator"]: (i, speeds[p["generator"]])
                                for i, p in enumerate(plan)}, sync_port=rpc, async_port=pub)
        deadline = time.monotonic() + 30
        while not all(p.get("link") == "UP" for p in client.rpc("port_info")["ports"]):
            if time.monotonic() > deadline:
                raise LabError("TRex's ports to the switch did not come up in 30 s")
            time.sleep(0.3)
    except BaseException:
        host.stop(proc, timeout_s=10)
        raise
    return _TrexOnHost(client, lambda: host.stop(proc, timeout_s=10)), \
        f"TRex {seen.get('version') or '?'} (server, stateless)"
