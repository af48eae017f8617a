"""Start the switch under test of any kind with the same call, so a suite compares
``ofbench``, ``ovs`` and ``ovs-dpdk`` through identical topology and controller.

Ports are kernel interfaces (veth ends in ``netns``) given as ``(ofport, ifname)``: ``ovs`` and
``ovs-dpdk`` attach them as netdev ports. Fast
wires (memif, vhost-user) are added by the suites that need rates, through ``extra_ports``.
``ofbench`` reads kernel interfaces with DPDK's af_xdp PMD.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from drivers.lab.base import LabError, hugepages_usable, is_remote
from drivers.lab.ovs import OvsInstance
from paths import build_dir


def switch_available(kind: str, profile) -> str | None:
    """None if switch ``kind`` can run in this lab, else the reason it cannot (for a skip)."""
    if kind == "ofbench":
        binary = build_dir() / "dut/switch/ofswitch"
        if profile.lab_kind == "local" and not binary.exists():
            return f"ofbench switch not built ({binary} missing)"
        return None
    if profile.lab_kind != "local":
        return (f"{kind} as a peer runs on this box only so far; profile {profile.name!r} "
                f"puts the switch on a remote host")
    if kind == "ovs":
        return None if "ovs" in profile.features else "profile lacks feature ovs"
    if kind == "ovs-dpdk":
        if "ovs_dpdk" not in profile.features:
            return "profile lacks feature ovs_dpdk"
        if profile.lab_kind == "local" and not hugepages_usable():
            return ("ovs-dpdk needs hugepages (it always runs --in-memory) and none are free "
                    "or /dev/hugepages-ofbench is not mounted")
        return None
    return f"unknown switch kind {kind!r}"


_OVS_PMD_RE = re.compile(r"pmd thread numa_id \S+ core_id \S+:(.*?)(?=\n\S|\Z)", re.S)


def parse_ovs_pmd_cycles(text: str) -> dict[str, int]:
    """OVS-DPDK's ``dpif-netdev/pmd-stats-show``: the PMD threads' idle and processing
    (busy) TSC cycles, summed ({"busy_cycles", "idle_cycles"}; zeros without a PMD thread).
    The main thread's block is not a PMD's and is left out."""
    out = {"busy_cycles": 0, "idle_cycles": 0}
    for m in _OVS_PMD_RE.finditer(text):
        body = m.group(1)
        for key, name in (("busy_cycles", "processing cycles"), ("idle_cycles", "idle cycles")):
            mm = re.search(rf"^\s*{name}:\s*(\d+)", body, re.M)
            if mm:
                out[key] += int(mm.group(1))
    return out


# dpif-netdev/pmd-stats-show's counters per PMD thread -> our names (OVS 3.1; a line an older or
# newer OVS lacks is left out, never guessed)
OVS_PMD_COUNTERS = {"packets received": "rx_packets", "packet recirculations": "recirculations",
                    "phwol hits": "phwol_hits", "mfex opt hits": "mfex_opt_hits",
                    "simple match hits": "simple_match_hits", "emc hits": "emc_hits",
                    "smc hits": "smc_hits", "megaflow hits": "megaflow_hits",
                    "miss with success upcall": "upcalls",
                    "miss with failed upcall": "failed_upcalls",
                    "idle cycles": "idle_cycles", "processing cycles": "busy_cycles"}
_OVS_PMD_CORE_RE = re.compile(r"^pmd thread numa_id \S+ core_id (\S+):(.*?)(?=\n\S|\Z)", re.S | re.M)


def parse_ovs_pmd_stats(text: str) -> dict[str, dict[str, int]]:
    """OVS-DPDK's ``dpif-netdev/pmd-stats-show`` -> {core id: {counter: value}} for every PMD
    thread (OVS_PMD_COUNTERS' names; the main thread's block is not a PMD's and is left out)."""
    out: dict[str, dict[str, int]] = {}
    for m in _OVS_PMD_CORE_RE.finditer(text):
        counters = {}
        for label, key in OVS_PMD_COUNTERS.items():
            mm = re.search(rf"^\s*{re.escape(label)}:\s*(\d+)", m.group(2), re.M)
            if mm:
                counters[key] = int(mm.group(1))
        out[m.group(1)] = counters
    return out


EXACT_MATCH_HITS = ("phwol_hits", "mfex_opt_hits", "simple_match_hits", "emc_hits", "smc_hits")


def ovs_pmd_telemetry(before: dict[str, dict[str, int]] | None,
                      after: dict[str, dict[str, int]] | None) -> dict[str, float]:
    """OVS-DPDK's own view of one trial from two parse_ovs_pmd_stats samples read outside it
    (pure): every counter's change summed over the PMD threads as ``pmd_<counter>``, each
    PMD's CPU share (``worker_<core>_cpu_share``: processing / (processing + idle) cycles),
    ``cycles_per_packet`` (processing cycles per received packet) and ``cache_hit_ratio`` (the
    exact-match caches' hits, EMC/SMC/simple match/offload, per received packet: OVS's
    counterpart of ofbench's flow cache; megaflow hits are its wildcard classifier). {} when a
    sample is missing or a PMD thread restarted (a counter went back)."""
    if not before or not after:
        return {}
    out: dict[str, float] = {}
    sums: dict[str, int] = {}
    for core, a in after.items():
        b = before.get(core)
        if b is None:
            continue
        d = {k: a[k] - b[k] for k in a if k in b}
        if any(v < 0 for v in d.values()):
            return {}
        for k, v in d.items():
            sums[k] = sums.get(k, 0) + v
        busy, idle = d.get("busy_cycles", 0), d.get("idle_cycles", 0)
        if busy + idle > 0:
            out[f"worker_{core}_cpu_share"] = busy / (busy + idle)
    if not sums:
        return {}
    out.update({f"pmd_{k}": float(v) for k, v in sorted(sums.items())})
    rx = sums.get("rx_packets", 0)
    if rx > 0:
        if "busy_cycles" in sums:
            out["cycles_per_packet"] = sums["busy_cycles"] / rx
        out["cache_hit_ratio"] = sum(sums.get(k, 0) for k in EXACT_MATCH_HITS) / rx
    return out


def ofbench_pmd_cycles(stats: dict | None) -> dict[str, int] | None:
    """ofbench's stats-socket answer -> its workers' busy and idle TSC cycles, summed (None
    for a switch too old to report them)."""
    workers = (stats or {}).get("workers")
    if not workers:
        return None
    return {"busy_cycles": sum(int(w["busy_cycles"]) for w in workers),
            "idle_cycles": sum(int(w["idle_cycles"]) for w in workers)}


def busy_share(c0: dict | None, c1: dict | None) -> tuple[float, int] | None:
    """(busy share of the forwarding threads' cycles, busy cycles) between two pmd_cycles
    samples; None when either is missing or no cycles passed. A share well below 1 means the
    switch waited for its feed: the feed, not the switch, set the rate."""
    if not c0 or not c1:
        return None
    busy = c1["busy_cycles"] - c0["busy_cycles"]
    total = busy + c1["idle_cycles"] - c0["idle_cycles"]
    if total <= 0:
        return None
    return busy / total, busy


def ofbench_settings(profile, kind: str, env=os.environ) -> dict:
    """The profile's settings for our switch (``switch.lookup``, ``switch.workers``,
    ``switch.cores``, ``switch.fail_mode``, ``switch.cache_lines``) when ``kind`` is the
    profile's own switch; env
    ``OFBENCH_SWITCH_LOOKUP`` (an alias kept for old scripts) overrides the lookup. For
    ofbench as a peer, the defaults."""
    from dut.switch.launcher import DEFAULT_LOOKUP
    out: dict = {"lookup": DEFAULT_LOOKUP, "workers": 1}
    sw = profile.switch if profile is not None else {}
    if kind == "ofbench" and sw.get("kind") == "ofbench":
        out = {"lookup": sw.get("lookup", DEFAULT_LOOKUP), "workers": int(sw.get("workers", 1))}
        if sw.get("cores"):
            out["lcores"] = sw["cores"]
        if sw.get("fail_mode"):
            out["fail_mode"] = sw["fail_mode"]
        if sw.get("cache_lines"):
            out["cache_lines"] = int(sw["cache_lines"])
    if kind == "ofbench" and env.get("OFBENCH_SWITCH_LOOKUP"):
        out["lookup"] = env["OFBENCH_SWITCH_LOOKUP"]
    return out


@dataclass
class SwitchHandle:
    kind: str
    name: str
    dpid: int
    stop_fn: object
    ovs: OvsInstance | None = None
    proc: object | None = None
    info: dict = field(default_factory=dict)
    host: object | None = None

    def stop(self) -> None:
        self.stop_fn()

    def stats(self) -> dict | None:
        """ofbench's stats socket (ports, flows, OpenFlow session), wherever it runs."""
        if self.proc is None or not hasattr(self.proc, "stats_sock"):
            return None
        from dut.switch.launcher import read_stats
        return read_stats(self.proc.stats_sock, 2.0,
                          connect=getattr(self.proc.host, "connect_unix", None))

    def pmd_stats(self) -> dict[str, dict[str, int]] | None:
        """OVS-DPDK's per-PMD counters so far (parse_ovs_pmd_stats); None for other kinds."""
        if self.ovs is None or self.kind != "ovs-dpdk":
            return None
        return parse_ovs_pmd_stats(self.ovs.appctl("dpif-netdev/pmd-stats-show"))

    def pmd_cycles(self) -> dict[str, int] | None:
        """The forwarding threads' busy and idle TSC cycles so far, as OVS-DPDK's
        pmd-stats-show counts them, for ofbench (its stats socket) and OVS-DPDK (appctl);
        None for a switch that does not count them (OVS netdev)."""
        if self.ovs is not None:
            if self.kind != "ovs-dpdk":
                return None
            return parse_ovs_pmd_cycles(self.ovs.appctl("dpif-netdev/pmd-stats-show"))
        return ofbench_pmd_cycles(self.stats())


def start_switch(lab, kind: str, *, name: str, ports: list[tuple[int, str]],
                 controller: tuple[str, int] | list[tuple[str, int]],
                 netns: str | None = None, dpid: int = 1,
                 extra_ports: list[tuple[int, dict]] | None = None, host=None,
                 lookup: str | None = None, workers: int | None = None,
                 lcores: str | None = None, idle_sleep_us: int | None = None,
                 mem_mb: int = 512, wait_connected: bool = False,
                 ready_timeout_s: float = 30.0, mbufs: int | None = None) -> SwitchHandle:
    """Start switch ``kind`` connected to ``controller`` with ``ports``; the one way every
    suite starts a switch, of any kind, on any host.

    ``controller`` is one (host, port) or a list of them (a connection to each; roles are
    the controllers' business, OF1.3.5 6.3.6).
    ``ports`` are kernel interfaces ``(ofport, ifname)`` (OVS netdev ports; ofbench reads them
    with af_xdp); ``extra_ports`` are fast wires ``(ofport, {"ovs": {...}, "devargs": str})``.
    ``host`` is the lab host (default: the profile's switch host; a local lab's is this box).
    ``lookup``/``workers``/``lcores`` default to the profile's ``switch`` section when ``kind``
    is the profile's switch; ``idle_sleep_us=0`` busy-polls (rate tests), default sleeps 50 us
    when idle (functional tests on shared cores); ``mbufs`` sizes ofbench's mbuf pool.
    """
    host = host or switch_host(lab)
    if kind in ("ovs", "ovs-dpdk"):
        if host is not lab:
            raise LabError(f"{kind} on a remote host is not supported yet (host {host.role})")
        ovs = OvsInstance(lab, name, dpdk=(kind == "ovs-dpdk"), netns=netns).start()
        sw = getattr(getattr(lab, "profile", None), "switch", None) or {}
        fail_mode = sw.get("fail_mode") if sw.get("kind") == kind else None
        ctls = [controller] if isinstance(controller, tuple) else list(controller)
        ovs.add_bridge("br0", dpid=dpid, controller=[f"tcp:{h}:{p}" for h, p in ctls],
                       fail_mode=fail_mode or "secure")
        for ofport, ifname in ports:
            ovs.add_port("br0", ifname, ofport=ofport)
        for ofport, spec in extra_ports or []:
            ovs.add_port("br0", spec["ovs"]["name"], ofport=ofport,
                         type=spec["ovs"].get("type"), options=spec["ovs"].get("options"))
        return SwitchHandle(kind, name, dpid, ovs.stop, ovs=ovs, host=host)
    if kind == "ofbench":
        from dut.switch.launcher import start_ofswitch
        # af_xdp, not af_packet: the kernel strips VLAN tags before af_packet sees them and the
        # PMD re-inserts them as 0x8100, which turns 802.1ad into 802.1Q (QinQ/PBB break).
        devports = [(ofport, f"net_af_xdp{ofport},iface={ifname}")
                    for ofport, ifname in ports]
        devports += [(ofport, spec["devargs"]) for ofport, spec in extra_ports or []]
        settings = ofbench_settings(getattr(lab, "profile", None), kind)
        settings.update({k: v for k, v in (("lookup", lookup), ("workers", workers),
                                           ("lcores", lcores)) if v is not None})
        proc = start_ofswitch(lab, name, ports=devports, controller=controller, dpid=dpid,
                              netns=netns, idle_sleep_us=idle_sleep_us, mem_mb=mem_mb,
                              wait_connected=wait_connected, ready_timeout_s=ready_timeout_s,
                              host=host, mbufs=mbufs, **settings)
        return SwitchHandle(kind, name, dpid, lambda: host.stop(proc), proc=proc,
                            info=settings, host=host)
    raise ValueError(f"unknown switch kind {kind!r}")


def section_host(lab, section: str):
    """The host that runs the profile's ``section`` (switch, generator: its ``host`` role);
    every role of a local lab is this box."""
    if not is_remote(lab):
        return lab
    return lab.host(lab.role_of(section))


def switch_host(lab):
    """The host that runs the profile's switch (a local lab: this box)."""
    return section_host(lab, "switch")


def controller_host(lab):
    """The host that runs the controller apps: the ``controller`` role of a remote lab."""
    if not is_remote(lab):
        return lab
    return lab.host("controller")


def start_controller(lab, name: str, app: str | list[str], *, netns: str | None,
                     port: int | None = None, config: str | None = None, hub: str = "native",
                     extra: list[str] | None = None, ready_timeout_s: float = 30.0,
                     host=None, listen: str | None = None):
    """Start os-ken app(s) through dut.controller.launcher on ``host`` (default: the lab's
    controller host); returns ``(proc, port)`` once the OpenFlow listener accepts connections.
    ``listen`` defaults to 127.0.0.1 on a local lab and to the profile's ``controller.host``
    on a remote one (the address the switch host connects to)."""
    host = host or controller_host(lab)
    remote = host is not lab
    if listen is None:
        listen = lab.profile.controller["host"] if remote else "127.0.0.1"
    if port is None:
        port = (lab.profile.controller.get("port") or 6653) if remote else lab.free_tcp_port()
    ready = Path(host.state_dir) / f"{name}.ready"
    if not remote:
        ready.unlink(missing_ok=True)
    apps = [app] if isinstance(app, str) else list(app)
    argv = [host.python, "-m", "dut.controller.launcher",
            *sum((["--app", a] for a in apps), []),
            "--ofp-listen-host", listen, "--ofp-port", str(port), "--hub", hub,
            "--ready-file", str(ready)]
    if config:
        argv += ["--config", str(config)]
    if extra:
        argv += ["--", *extra]
    proc = host.start(name, argv, netns=netns, cwd=host.workdir,
                      env={"PYTHONPATH": str(host.workdir), "PYTHONUNBUFFERED": "1"},
                      ready=lambda: host.exists(ready), ready_timeout_s=ready_timeout_s)
    return proc, port


def start_faucet(lab, name: str, config: str, *, netns: str | None, port: int | None = None,
                 ready_timeout_s: float = 30.0, check: bool = True, max_unreplied_echoes: int = 5):
    """Start FAUCET (drivers/lab/faucet.py) with the YAML ``config`` (its text) on this box's
    controller host, listening on 127.0.0.1:``port`` (default: a free port) inside ``netns``;
    returns a :class:`drivers.lab.faucet.FaucetProcess` once the OpenFlow listener is bound.

    The config is checked with FAUCET's own parser first (``check``): a config FAUCET refuses
    raises FaucetError naming the file and FAUCET's reason, before anything starts. Its files
    (config, FAUCET_LOG, FAUCET_EXCEPTION_LOG) go to the test's log folder; Prometheus binds
    127.0.0.1 inside ``netns``. ``max_unreplied_echoes``: os-ken's
    maximum_unreplied_echo_requests (FAUCET ships 5: the channel down after ~15 s of no echo
    reply; a FAUCET learning thousands of hosts on a small box can be that busy itself)."""
    from drivers.lab.faucet import (FaucetError, FaucetProcess, check_config,
                                    faucet_available, faucet_venv, listening_in_netns_of)
    if is_remote(lab):
        raise FaucetError("FAUCET runs on a local lab only so far (its venv is not synced to "
                          "lab hosts)")
    why = faucet_available()
    if why:
        raise FaucetError(why)
    logs = Path(lab.supervisor.log_dir)
    logs.mkdir(parents=True, exist_ok=True)
    cfg = logs / f"{name}.yaml"
    cfg.write_text(config)
    if check:
        check_config(cfg)
    port = port or lab.free_tcp_port()
    prom_port = lab.free_tcp_port()
    log, exc_log = logs / f"{name}.faucet.log", logs / f"{name}.exception.log"
    venv = faucet_venv()
    env = {"FAUCET_CONFIG": str(cfg), "FAUCET_LOG": str(log),
           "FAUCET_EXCEPTION_LOG": str(exc_log),
           "FAUCET_PROMETHEUS_ADDR": "127.0.0.1", "FAUCET_PROMETHEUS_PORT": str(prom_port),
           # FAUCET's launcher execs `osken-manager` from PATH: its venv's, not ours
           "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
           "PYTHONUNBUFFERED": "1"}
    # os-ken's settings from our own file: else FAUCET reads /etc/faucet/ryu.conf if the box
    # has one (FAUCET's sdist build writes it there when run as root); the values are the ones
    # FAUCET ships (an echo every 3 s, the channel down after 5 unanswered)
    osken_conf = logs / f"{name}.os_ken.conf"
    osken_conf.write_text("[DEFAULT]\necho_request_interval=3\n"
                          f"maximum_unreplied_echo_requests={int(max_unreplied_echoes)}\n")
    argv = [str(venv / "bin" / "faucet"), f"--ryu-config-file={osken_conf}",
            "--ryu-ofp-listen-host=127.0.0.1", f"--ryu-ofp-tcp-listen-port={port}"]

    def ready() -> bool:  # the supervisor records the process before it awaits readiness
        p = next((p for p in lab.supervisor.procs if p.name == name and p.alive()), None)
        return p is not None and listening_in_netns_of(p.pid, port)

    proc = lab.start(name, argv, netns=netns, env=env, cwd=str(logs), ready=ready,
                     ready_timeout_s=ready_timeout_s)
    return FaucetProcess(lab, name, proc, port, prom_port, cfg, log, exc_log, netns)


OVS_TESTCONTROLLER = "/usr/bin/ovs-testcontroller"


def start_ovs_testcontroller(lab, name: str, *, netns: str | None, port: int | None = None,
                             ready_timeout_s: float = 15.0):
    """Start Open vSwitch's test controller (Debian ``openvswitch-testcontroller``: an L2
    learning controller in C, nobody here wrote it) on 127.0.0.1:``port`` inside ``netns``,
    OpenFlow 1.3 only, every OpenFlow message it sends and receives in its log (vconn:dbg,
    so OFPT_ERRORs can be counted); returns ``(proc, port)`` once it listens."""
    from drivers.lab.faucet import FaucetError, listening_in_netns_of
    if is_remote(lab):
        raise FaucetError("ovs-testcontroller runs on a local lab only so far")
    if not Path(OVS_TESTCONTROLLER).exists():
        raise FaucetError(f"{OVS_TESTCONTROLLER} missing: apt package openvswitch-testcontroller"
                          f" (scripts/setup.sh installs it)")
    port = port or lab.free_tcp_port()
    # its control socket in the run's state folder, not /var/run/openvswitch
    argv = [OVS_TESTCONTROLLER, "-O", "OpenFlow13", "--no-chdir",
            f"--unixctl={Path(lab.state_dir) / (name + '.ctl')}", "-vconsole:info",
            "-vvconn:console:dbg", "-vrconn:console:info", f"ptcp:{port}:127.0.0.1"]

    def ready() -> bool:
        p = next((p for p in lab.supervisor.procs if p.name == name and p.alive()), None)
        return p is not None and listening_in_netns_of(p.pid, port)

    proc = lab.start(name, argv, netns=netns, ready=ready, ready_timeout_s=ready_timeout_s)
    return proc, port
