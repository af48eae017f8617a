"""The WAN experiment's topology on the local lab, and one run of one path assignment.

    [snd ns]            [sw ns: switch + controller]         [wem ns: wanem]          [rcv ns]
    ws0 10.77.0.1 ---- wsi (of 1)   wp1 (of 2) --------- wi1 ==path1==> wo1 ------- wr1 10.77.0.2
                                    wp2 (of 3) --------- wi2 ==path2==> wo2 ------- wr2 (same MAC)

The switch is the profile's (``ofbench`` reads the veths with DPDK's af_xdp PMD; ``ovs`` and
``ovs-dpdk`` attach them as netdev ports); see ``wan_switch_kind`` for the choice.

The sender reaches 10.77.0.2 through a static ARP entry (MAC RX_MAC); both receiver interfaces
carry RX_MAC and rp_filter is off, so a datagram arriving on either path is delivered to the
same sockets (the receiver records which interface brought each message's last byte).  The
controller app (dut.wan.steering_app) points each app's UDP port at path 1 or 2.
"""
from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path as FsPath

import yaml

from drivers.lab.local import run
from drivers.lab.switches import SwitchHandle, start_controller, start_switch
from drivers.wanem.driver import PathSpec, WanemControl, binary as wanem_binary, wanem_argv
from dut.wan.config import Scenario
from dut.wan.steering_app import wait_applied, write_assignment
from traces.wan_apps import read_recv_csv, read_sent_csv
from paths import REPO

RX_MAC = "02:77:00:00:00:02"
SND_IP, RCV_IP = "10.77.0.1", "10.77.0.2"
SWITCH_ENV = "OFBENCH_WAN_SWITCH"
SWITCH_KINDS = ("ofbench", "ovs", "ovs-dpdk")
# Port of each switch kind on the veths (for provenance).
PORT_KIND = {"ofbench": "veth (af_xdp)", "ovs": "veth (ovs netdev, af_packet)",
             "ovs-dpdk": "veth (ovs-dpdk netdev, af_packet)"}


def wan_switch_kind(profile_kind: str, env: dict, one_dut: bool = False) -> str:
    """The switch the WAN experiment runs on: env OFBENCH_WAN_SWITCH if set, else the
    profile's switch kind.  A name that is no switch kind is a clear error, never a default;
    so is another kind than the profile's when the profile says ``one_dut: true``."""
    kind = (env.get(SWITCH_ENV) or "").strip() or profile_kind
    if kind not in SWITCH_KINDS:
        src = f"env {SWITCH_ENV}" if env.get(SWITCH_ENV) else "profile switch.kind"
        raise ValueError(f"{src}: unknown switch kind {kind!r} (expected one of "
                         f"{', '.join(SWITCH_KINDS)})")
    if one_dut and kind != profile_kind:
        raise ValueError(f"env {SWITCH_ENV}={kind}: the profile says one_dut: true, so the WAN "
                         f"suite runs on its switch {profile_kind}; unset {SWITCH_ENV}")
    return kind


@dataclass
class WanTopo:
    lab: object
    scn: Scenario
    ns: dict[str, str]
    ifs: dict[str, str]
    wanem: WanemControl
    assign_file: str
    path_port: dict[str, int]
    version: int = 0
    procs: list = field(default_factory=list)
    switch: object = None

    def steer(self, assignment: dict[str, str], timeout_s: float = 10.0) -> float:
        """Install `assignment` (app -> path) on the switch; returns seconds until in force."""
        self.version += 1
        write_assignment(self.assign_file, self.version, assignment)
        return wait_applied(self.assign_file, self.version, timeout_s)


def build(lab, scn: Scenario, switch_kind: str = "ovs", rt_prio: int = 10,
          max_backlog_ms: float = 3000.0, lookup: str = "simple",
          idle_sleep_us: int = 50) -> WanTopo:
    """lookup, idle_sleep_us: ofbench only (its flow lookup; how long its idle worker
    sleeps instead of spinning, so wanem keeps a core for its timing on the 2-core box).

    max_backlog_ms: each path's buffer in time.  The document's model has no loss; at the
    Table 2 loads (path utilisation up to ~0.6, 1 MB messages) a 500 ms buffer overflowed
    now and then in 60 s, and a dropped frame loses a whole message, so the default is large
    (the 32768 slots per path hold ~4 s at 100 Mbit/s)."""
    if len(scn.paths) != 2:
        raise ValueError("the local WAN topology has exactly two paths")
    ns = {t: lab.add_netns(t) for t in ("wsnd", "wsw", "wem", "wrcv")}
    ifs = {t: lab.ifname(t) for t in ("ws0", "wsi", "wp1", "wp2", "wi1", "wi2", "wo1", "wo2", "wr1", "wr2")}
    for n in ns.values():
        run(["ip", "netns", "exec", n, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
             "net.ipv6.conf.default.disable_ipv6=1"], check=False)
    lab.add_veth(ns["wsnd"], ifs["ws0"], ns["wsw"], ifs["wsi"])
    lab.add_veth(ns["wsw"], ifs["wp1"], ns["wem"], ifs["wi1"])
    lab.add_veth(ns["wsw"], ifs["wp2"], ns["wem"], ifs["wi2"])
    lab.add_veth(ns["wem"], ifs["wo1"], ns["wrcv"], ifs["wr1"])
    lab.add_veth(ns["wem"], ifs["wo2"], ns["wrcv"], ifs["wr2"])
    # Hosts.
    run(["ip", "-n", ns["wsnd"], "addr", "add", f"{SND_IP}/24", "dev", ifs["ws0"]])
    run(["ip", "-n", ns["wsnd"], "neigh", "replace", RCV_IP, "lladdr", RX_MAC, "dev", ifs["ws0"],
         "nud", "permanent"])
    rcv = ns["wrcv"]
    for i, ifn in enumerate((ifs["wr1"], ifs["wr2"]), start=1):
        run(["ip", "-n", rcv, "link", "set", ifn, "address", RX_MAC])
    run(["ip", "-n", rcv, "addr", "add", f"{RCV_IP}/24", "dev", ifs["wr1"]])
    run(["ip", "-n", rcv, "addr", "add", "10.77.1.2/24", "dev", ifs["wr2"]])
    for key in ("all", "default", ifs["wr1"], ifs["wr2"]):
        run(["ip", "netns", "exec", rcv, "sysctl", "-q", "-w", f"net.ipv4.conf.{key}.rp_filter=0"],
            check=False)
    # WAN emulator.
    wem_dir = FsPath(lab.state_dir) / "wanem"
    wem_dir.mkdir(parents=True, exist_ok=True)
    ctl = str(wem_dir / "ctl.sock")
    specs = [PathSpec(p.name, ifs[f"wi{i}"], ifs[f"wo{i}"], p.bandwidth_mbps, p.delay_ms, p.loss_pct)
             for i, p in enumerate(scn.paths, start=1)]
    wctl = WanemControl(ctl)
    if not wanem_binary().exists():
        raise FileNotFoundError(f"{wanem_binary()} not built (make setup / ninja -C build)")
    wp = lab.supervisor.start("wanem", wanem_argv(specs, ctl, str(wem_dir / "stats.json"), rt_prio=rt_prio,
                                         max_backlog_ms=max_backlog_ms),
                              netns=ns["wem"], ready=lambda: bool(wctl.stats()), ready_timeout_s=15)
    # Controller + switch.
    assign_file = str(FsPath(lab.state_dir) / "wan-assign.json")
    path_port = {p.name: 2 + i for i, p in enumerate(scn.paths)}
    steer_cfg = FsPath(lab.state_dir) / "wan-steer.yaml"
    steer_cfg.write_text(yaml.safe_dump({
        "in_port": 1, "paths": path_port,
        "apps": {a.name: a.udp_port for a in scn.apps}, "assignment_file": assign_file}))
    cproc, cport = start_controller(lab, "wan-ctl", "dut.wan.steering_app", netns=ns["wsw"],
                                    config=str(steer_cfg))
    ports = [(1, ifs["wsi"]), (2, ifs["wp1"]), (3, ifs["wp2"])]
    # Registered before the switch starts, so teardown removes the namespaces even when the
    # switch fails to come up.
    topo = WanTopo(lab, scn, ns, ifs, wctl, assign_file, path_port, procs=[wp, cproc])
    try:
        if switch_kind == "ofbench":
            topo.switch = _start_ofbench(lab, ns["wsw"], ports, ("127.0.0.1", cport), lookup,
                                         idle_sleep_us)
        else:
            topo.switch = start_switch(lab, switch_kind, name="wansw", netns=ns["wsw"],
                                       ports=ports, controller=("127.0.0.1", cport), dpid=0x77)
        if switch_kind == "ovs":
            _realtime_switch(topo.switch, rt_prio)
        # The first assignment also proves the controller is connected (flows + barrier).
        _wait_connected(topo)
    except BaseException:
        teardown(topo)
        raise
    return topo


def _start_ofbench(lab, netns: str, ports: list[tuple[int, str]], controller: tuple[str, int],
                   lookup: str, idle_sleep_us: int) -> SwitchHandle:
    """ofswitch on the veths through af_xdp, one worker, with an explicit idle sleep: a
    spinning worker would take one of the box's two cores from wanem and the hosts."""
    sw = start_switch(lab, "ofbench", name="wansw", netns=netns, ports=ports,
                      controller=controller, dpid=0x77, workers=1, lookup=lookup,
                      idle_sleep_us=idle_sleep_us)
    sw.info.update({"stats_sock": str(sw.proc.stats_sock), "lookup": lookup,
                    "idle_sleep_us": idle_sleep_us})
    return sw


def _realtime_switch(sw, rt_prio: int) -> None:
    """OVS userspace reads each veth through an AF_PACKET socket whose receive buffer is
    rmem_default (208 KiB, ~90 full frames; not settable per namespace and OVS has no option
    for it).  On the shared 2-core box its main thread can be off the CPU for longer than that
    buffer lasts at 100 Mbit/s, and the socket drops frames (each loses a whole message).
    SCHED_FIFO (below wanem's priority) makes it wake on every poll; it sleeps in poll(), so
    it does not hog a core.  Only for ``ovs``: ovs-dpdk's PMD thread and ofbench's worker
    poll, and under SCHED_FIFO a poller would starve wanem and the hosts."""
    if sw.ovs is None or rt_prio <= 0:
        return
    vswitchd = sw.ovs.procs[-1]
    subprocess.run(["chrt", "-a", "-f", "-p", str(max(1, rt_prio - 1)), str(vswitchd.pid)],
                   capture_output=True, check=False)


def _wait_connected(topo: WanTopo, timeout_s: float = 30.0) -> None:
    t0 = time.monotonic()
    while True:
        try:
            topo.steer({a.name: topo.scn.paths[-1].name for a in topo.scn.apps}, timeout_s=2.0)
            return
        except TimeoutError:
            if time.monotonic() - t0 > timeout_s:
                raise


@dataclass
class RunOutput:
    recv: list[dict]
    sent: list[dict]
    wanem: dict
    events: list[dict]
    link_drops: dict


_SKMEM_DROPS = re.compile(r"skmem:\([^)]*\bd(\d+)\)")


def parse_ss_drops(text: str) -> int:
    """Sum of the per-socket drop counters (skmem ...,dN) in `ss -m` output."""
    return sum(int(m.group(1)) for m in _SKMEM_DROPS.finditer(text))


def parse_snmp(text: str, proto: str = "Udp") -> dict[str, int]:
    """One protocol's counters from /proc/net/snmp (a header line, then a value line)."""
    rows = [ln.split() for ln in text.splitlines() if ln.startswith(proto + ":")]
    if len(rows) < 2:
        return {}
    return {k: int(v) for k, v in zip(rows[0][1:], rows[1][1:])}


def ofbench_port_counters(stats: dict | None) -> dict[str, int]:
    """Per-port packet counters from ofswitch's stats socket document, as flat keys
    (``switch_p1_rx_packets``...); {} when the switch did not answer."""
    out = {}
    for p in (stats or {}).get("ports", []):
        out[f"switch_p{p['port']}_rx_packets"] = int(p.get("rx_packets", 0))
        out[f"switch_p{p['port']}_tx_packets"] = int(p.get("tx_packets", 0))
    return out


def switch_loss(delta: dict[str, int]) -> dict[str, int]:
    """Frames lost at ofbench over one run, from counter deltas: sent by the sender's veth
    but not read by the switch (af_xdp ring full / not polled), and read but not sent on
    (no flow, tx ring full).  Empty when the switch counters are missing."""
    need = ("ws0_tx_packets", "switch_p1_rx_packets", "switch_p2_tx_packets",
            "switch_p3_tx_packets")
    if not all(k in delta for k in need):
        return {}
    return {"switch_ingress_drops": delta["ws0_tx_packets"] - delta["switch_p1_rx_packets"],
            "switch_forward_drops": delta["switch_p1_rx_packets"]
            - delta["switch_p2_tx_packets"] - delta["switch_p3_tx_packets"]}


def link_counters(topo: WanTopo) -> dict[str, int]:
    """Counters where frames can be lost on the way: kernel interfaces, the switch's packet
    sockets (OVS userspace reads veths through AF_PACKET) or ofbench's per-port counters,
    the receiver's UDP sockets."""
    out = {}
    sock = (topo.switch.info or {}).get("stats_sock") if topo.switch is not None else None
    if sock:
        from dut.switch.launcher import read_stats
        out.update(ofbench_port_counters(read_stats(sock)))
    ss = run(["ip", "netns", "exec", topo.ns["wsw"], "ss", "-0", "-a", "-m", "-n"], check=False)
    out["switch_socket_drops"] = parse_ss_drops(ss.stdout or "")
    snmp = run(["ip", "netns", "exec", topo.ns["wrcv"], "cat", "/proc/net/snmp"], check=False)
    udp = parse_snmp(snmp.stdout or "")
    out["recv_udp_rcvbuf_errors"] = udp.get("RcvbufErrors", 0)
    out["recv_udp_in_errors"] = udp.get("InErrors", 0)
    for tag, ns in (("ws0", "wsnd"), ("wsi", "wsw"), ("wp1", "wsw"), ("wp2", "wsw"), ("wr1", "wrcv"), ("wr2", "wrcv")):
        cp = run(["ip", "-n", topo.ns[ns], "-s", "-j", "link", "show", topo.ifs[tag]], check=False)
        try:
            st = json.loads(cp.stdout)[0]["stats64"]
        except (ValueError, IndexError, KeyError):
            continue
        out[f"{tag}_rx_packets"] = st["rx"]["packets"]
        out[f"{tag}_rx_dropped"] = st["rx"]["dropped"]
        out[f"{tag}_tx_packets"] = st["tx"]["packets"]
        out[f"{tag}_tx_dropped"] = st["tx"]["dropped"]
    return out


def run_traffic(topo: WanTopo, scenario_file: str, duration_s: float, seed: int, tag: str,
                actions: list[tuple[float, callable]] | None = None, drain_s: float = 2.0,
                access_mbps: float = 250.0, burst_bytes: int = 16000, rt_prio: int = 8) -> RunOutput:
    """Receiver up, wanem stats reset, sender for duration_s; `actions` (t_s, fn) run mid-run."""
    lab = topo.lab
    out_dir = FsPath(lab.supervisor.log_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    recv_csv, sent_csv = out_dir / f"{tag}-recv.csv", out_dir / f"{tag}-sent.csv"
    ready = out_dir / f"{tag}-recv.ready"
    ready.unlink(missing_ok=True)
    py = str(REPO / ".venv/bin/python") if (REPO / ".venv/bin/python").exists() else "python3"
    env = {"PYTHONPATH": str(REPO)}
    rproc = lab.supervisor.start(f"wan-recv-{tag}", [py, "-m", "traces.wan_apps", "recv", "--scenario",
                                                     scenario_file, "--out", str(recv_csv),
                                                     "--ready-file", str(ready), "--listen", RCV_IP],
                                 netns=topo.ns["wrcv"], env=env, cwd=REPO, ready=ready.exists)
    try:
        topo.wanem.reset()
        before = link_counters(topo)
        t0 = time.monotonic()
        # The sender under SCHED_FIFO (it sleeps between ticks): a send start descheduled by
        # other work on the shared box would add to the measured delay of its message.
        rt = ["chrt", "-f", str(rt_prio)] if rt_prio > 0 else []
        sproc = lab.supervisor.start(f"wan-send-{tag}", [*rt, py, "-m", "traces.wan_apps", "send", "--scenario",
                                                         scenario_file, "--dst", RCV_IP, "--duration-s",
                                                         str(duration_s), "--seed", str(seed), "--access-mbps",
                                                         str(access_mbps), "--burst-bytes",
                                                         str(burst_bytes), "--out", str(sent_csv)],
                                     netns=topo.ns["wsnd"], env=env, cwd=REPO)
        events = []
        for at_s, fn in sorted(actions or [], key=lambda a: a[0]):
            time.sleep(max(0.0, t0 + at_s - time.monotonic()))
            ev = fn() or {}
            ev.update({"t_s": round(time.monotonic() - t0, 3), "wall_ns": time.clock_gettime_ns(time.CLOCK_REALTIME)})
            events.append(ev)
        rc = sproc.wait(timeout_s=duration_s + 60)
        if rc != 0:
            raise RuntimeError(f"sender exited {rc}: {sproc.log_tail()}")
        wstats = _drain(topo, drain_s)
        after = link_counters(topo)
        drops = {k: after[k] - before.get(k, 0) for k in after}
        drops.update(switch_loss(drops))
    finally:
        lab.supervisor.stop(rproc)
    return RunOutput(read_recv_csv(str(recv_csv)), read_sent_csv(str(sent_csv)), wstats, events, drops)


def _drain(topo: WanTopo, max_s: float, settle_s: float = 0.1) -> dict:
    """Wait until the emulator holds no frame (then settle_s for the receiver), at most
    max_s; returns the emulator's stats."""
    t_end = time.monotonic() + max_s
    while True:
        st = topo.wanem.stats()
        if all(p.get("queued", 0) == 0 for p in st.get("paths", [])) or time.monotonic() > t_end:
            break
        time.sleep(0.02)
    time.sleep(settle_s)
    return topo.wanem.stats()


def teardown(topo: WanTopo) -> None:
    lab = topo.lab
    try:
        if topo.switch is not None:
            topo.switch.stop()
    finally:
        for p in reversed(topo.procs):
            lab.supervisor.stop(p)
        for n in topo.ns.values():
            lab.del_netns(n)
