"""Document 000's experiment on the local lab: the rig and one measured configuration.

Topology (star, as in the document): sender host (netns ``c6<k>h1``) -- switch (netns
``c6<k>sw``; the controller runs beside it on that namespace's loopback) -- receiver host
(netns ``c6<k>h2``). The switch is ofbench's (``switch_kind`` ofbench) or Open vSwitch
userspace (``ovs``); RIG_KINDS. Both see the same trace, controller and receiver.

The sender's link on OVS is an OVS *internal* port (a tap device on the netdev datapath) moved
into the sender's namespace, not a veth: OVS reads a veth through an af_packet socket whose
receive buffer (net.core.rmem_default, global and not settable per namespace) holds ~90 frames
of 1514 B, and with the box loaded it dropped 26 % of a 10 kpps burst and up to 30 % at 5 kpps
(measured). The tap's queue (txqueuelen 4000) holds the whole 1000-packet burst; measured
1000/1000 Packet-Ins at 100 kpps. OVS logs warnings about ioctls on the moved tap (it looks
the name up in its own namespace); the data path works.

On ofbench the sender's link is a veth the switch opens with af_xdp (as every ofbench port on
kernel interfaces, drivers/lab/switches.start_switch): no socket buffer in between, the
frames wait in the XDP rings until a worker polls them, and the switch's Packet-In ring (4096)
holds the whole burst. ofbench never buffers: every Packet-In carries OFP_NO_BUFFER and the
frame up to max_len (dut/switch/src/agent_packet.c), which with the app's OFPCML_NO_BUFFER is
the whole frame; it refuses a Packet-Out naming a buffer, and the app sends none. Its
controller address is fixed at start, so the rig gives every configuration's controller the
same TCP port and the switch reconnects to each (backoff 100 ms doubling to 4 s).

The controller app installs a table-miss flow to the controller with OFPCML_NO_BUFFER, so
every packet of the trace arrives as a Packet-In with its full payload; the Packet-Out sends it
to port 2 (the receiver).

One repetition: note the controller's completion-log size, replay the trace (1000 packets as a
paced burst), wait until the log has a record for every trace packet (or a stall timeout),
compute the document's metric from the new records (dut/controller/timing.py) and the
receiver's arrival times as the cross-check.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from drivers.lab.switches import start_controller, start_switch
from dut.controller.timing import arrival_ms, completion_ms, intake_ms, parse_lines, ratio
from traces.tos_trace import load_spec, write_trace
from paths import REPO

TRACE_DIR = REPO / "traces" / "controller"
APPS = {"fifo": "dut.controller.fifo_app", "priority": "dut.controller.priority_app"}
# The whole trace as one burst (~10 ms at the raw sender's ~100 kpps), as in the document: the
# controller needs 0.1-10 s for it, so its queue builds up at once. See Rig for why the sender's
# link is an OVS internal port and not a veth.
SEND_PPS = 100000
# The switches the rig can run on (see the module doc for each one's sender link).
RIG_KINDS = ("ofbench", "ovs")
TAGS = {"ofbench": "b", "ovs": "o"}
PORT_KIND = {"ofbench": "veth (af_xdp)",
             "ovs": "ovs internal port (sender), veth (receiver, af_packet)"}


@dataclass
class Rep:
    high_ms: float | None
    low_ms: float | None
    recv_high_ms: float | None
    recv_low_ms: float | None
    packet_ins: int
    received: int
    intake_ms: float | None  # first to last Packet-In at the handler (timing.intake_ms)
    sent: int
    matches_ok: bool
    cpu_ms: dict = field(default_factory=dict)  # CPU time used during the rep, per role


@dataclass
class Config:
    app: str                 # fifo | priority
    matcher: str
    high_workers: int = 0    # 0 for fifo
    worker_mode: str = "threads"
    low_worker_nice: int = 0
    strict_priority: bool = False
    high_worker_nice: int = 0
    intake: str = "raw"      # packet_in_intake of the app: raw | osken (dut/controller/config.py)

    @property
    def suffix(self) -> str:
        """``_proc`` for worker_mode processes, ``_strict`` for strict priority, ``_nice`` when
        the search processes run at other nice values than 0, ``_osken`` for os-ken's own
        Packet-In intake."""
        return (("_proc" if self.worker_mode == "processes" else "")
                + ("_strict" if self.strict_priority else "")
                + ("_nice" if self.low_worker_nice or self.high_worker_nice else "")
                + ("_osken" if self.intake == "osken" else ""))

    @property
    def short_label(self) -> str:
        """Without the matcher: ``fifo``, ``8thr``, ``8thr_proc_strict``."""
        return "fifo" + self.suffix if self.app == "fifo" else \
            f"{self.high_workers}thr{self.suffix}"

    @property
    def label(self) -> str:
        if self.app == "fifo":
            return f"fifo_{self.matcher}{self.suffix}"
        return f"{self.high_workers}thr_{self.matcher}{self.suffix}"


@dataclass
class Outcome:
    cfg: Config
    reps: list[Rep] = field(default_factory=list)
    lost_reps: int = 0

    def values(self, attr: str) -> list[float]:
        return [getattr(r, attr) for r in self.reps if getattr(r, attr) is not None]

    def mean(self, attr: str) -> float | None:
        v = self.values(attr)
        return statistics.fmean(v) if v else None

    def stdev(self, attr: str) -> float | None:
        v = self.values(attr)
        return statistics.stdev(v) if len(v) > 1 else (0.0 if v else None)


def make_trace(order: str, patterns: int, out_dir: Path) -> tuple[Path, dict]:
    spec = load_spec(TRACE_DIR / f"{order}.yaml", {"pattern_count": patterns})
    pcap, side = write_trace(spec, out_dir, source=str(TRACE_DIR / f"{order}.yaml"))
    return pcap, json.loads(side.read_text())


class Rig:
    """Namespaces, veths, the switch and the receiver; controllers come and go per config."""

    def __init__(self, lab, switch_kind: str = "ovs"):
        if switch_kind not in RIG_KINDS:
            raise ValueError(f"the controller rig runs on {' or '.join(RIG_KINDS)}; got switch "
                             f"kind {switch_kind!r}")
        self.lab = lab
        self.switch_kind = switch_kind
        self.switch = None
        self.ctl = None
        self.recv_proc = None
        self.h1 = self.h2 = self.sw = None
        t = f"c6{TAGS[switch_kind]}"
        try:
            self._build(t)
        except BaseException:
            self.close()
            raise
        self._n = 0
        self.send_pps = SEND_PPS
        # ofbench keeps one controller address for its life: every controller gets this port
        self.ctl_port = lab.free_tcp_port() if switch_kind == "ofbench" else None

    def _build(self, t: str) -> None:
        lab = self.lab
        self.h1 = lab.add_netns(f"{t}h1")
        self.h2 = lab.add_netns(f"{t}h2")
        self.sw = lab.add_netns(f"{t}sw")
        self.tap, self.p2 = lab.ifname(f"{t}a"), lab.ifname(f"{t}b")
        for ns in (self.h1, self.h2, self.sw):  # no IPv6 ND/MLD chatter becoming Packet-Ins
            for k in ("all", "default"):
                lab.netns_exec(ns, ["sysctl", "-qw", f"net.ipv6.conf.{k}.disable_ipv6=1"],
                               check=False)
        lab.add_veth(self.h2, "eth0", self.sw, self.p2)
        if self.switch_kind == "ofbench":
            # the sender's link: a veth whose switch end ofbench opens with af_xdp
            lab.add_veth(self.h1, "eth0", self.sw, self.tap)
            lab.netns_exec(self.h1, ["ip", "link", "set", "eth0", "txqueuelen", "4000"])
            self.send_iface = "eth0"
        else:
            self.send_iface = self.tap  # the OVS internal port, moved here at switch start
        self.arrivals = Path(lab.state_dir) / f"{t}-arrivals.csv"
        self.arrivals.write_text("")
        ready = lab.sock_path(f"{t}-recv.ready")
        self.recv_proc = lab.supervisor.start(
            f"{t}-recv", [sys.executable, "-m", "suites.controller.hosts", "recv", "--iface",
                          "eth0", "--out", str(self.arrivals), "--ready-file", str(ready)],
            netns=self.h2, ready=ready.exists, env={"PYTHONPATH": str(REPO)}, cwd=REPO)

    # ---- controller per configuration --------------------------------------------------------
    def start_controller(self, cfg: Config, meta: dict) -> Path:
        self.stop_controller()
        self._n += 1
        log = Path(self.lab.state_dir) / f"c6-completion-{self._n}.csv"
        conf = Path(self.lab.state_dir) / f"c6-ctl-{self._n}.yaml"
        conf.write_text(yaml.safe_dump({
            "matcher": cfg.matcher, "patterns": meta["patterns"],
            "high_workers": max(cfg.high_workers, 1), "worker_mode": cfg.worker_mode,
            "low_worker_nice": cfg.low_worker_nice, "high_worker_nice": cfg.high_worker_nice,
            "strict_priority": cfg.strict_priority,
            "packet_in_intake": cfg.intake, "out_port": 2,
            "completion_log": str(log)}))
        self.ctl, port = start_controller(self.lab, f"c6-ctl-{self._n}-{cfg.label}",
                                          APPS[cfg.app], netns=self.sw, config=str(conf),
                                          port=self.ctl_port)
        if self.switch is None and self.switch_kind == "ofbench":
            self.switch = start_switch(self.lab, "ofbench", name=f"c6sw{TAGS['ofbench']}",
                                       netns=self.sw, ports=[(1, self.tap), (2, self.p2)],
                                       controller=("127.0.0.1", port))
        elif self.switch is None:
            self.switch = start_switch(self.lab, self.switch_kind, name="c6sw", netns=self.sw,
                                       ports=[(2, self.p2)], controller=("127.0.0.1", port))
            self.switch.ovs.add_port("br0", self.tap, ofport=1, type="internal")
            if not wait_for(lambda: self.lab.netns_exec(self.sw, ["ip", "link", "show",
                                                                  self.tap], check=False
                                                        ).returncode == 0, 10):
                raise RuntimeError(f"OVS internal port {self.tap} did not appear")
            self.lab.netns_exec(self.sw, ["ip", "link", "set", self.tap, "netns", self.h1])
            self.lab.netns_exec(self.h1, ["ip", "link", "set", self.tap, "txqueuelen", "4000",
                                          "up"])
        elif self.switch_kind == "ovs":
            self.switch.ovs.vsctl("set-controller", "br0", f"tcp:127.0.0.1:{port}")
        # (ofbench reconnects to the same port on its own)
        if not wait_for(lambda: "ready" in _tail(self.ctl.log_path) and
                        _ready_line(self.ctl.log_path), 30):
            raise RuntimeError(f"switch never became ready with the controller; see "
                               f"{self.ctl.log_path}")
        return log

    def stop_controller(self) -> None:
        if self.ctl is not None:
            self.lab.supervisor.stop(self.ctl)
            self.ctl = None

    def close(self) -> None:
        self.stop_controller()
        if self.switch is not None:
            self.switch.stop()
        if self.recv_proc is not None:
            self.lab.supervisor.stop(self.recv_proc)
        for ns in (self.h1, self.h2, self.sw):
            if ns is not None:
                self.lab.del_netns(ns)

    # ---- one repetition ----------------------------------------------------------------------
    def run_rep(self, log: Path, pcap: Path, meta: dict, stall_s: float = 15.0) -> Rep:
        n = len(meta["classes"])
        per_class = n // 2
        cpu_before = self.cpu_ns_by_role()
        log_off = log.stat().st_size if log.exists() else 0
        arr_off = self.arrivals.stat().st_size
        out = self.lab.netns_exec(self.h1, [sys.executable, "-m", "suites.controller.hosts",
                                            "send", "--iface", self.send_iface,
                                            "--pcap", str(pcap),
                                            "--pps", str(self.send_pps)], timeout=60)
        sent = json.loads(out.stdout.strip().splitlines()[-1])["sent"]
        recs, last_count, last_change = [], -1, time.monotonic()
        tail = LogTail(log, log_off)  # reads only what was added: this poller shares the CPU
        while True:
            recs += [r for r in parse_lines(tail.new_lines()) if r.ip_id >= 0]
            if len(recs) >= n:
                break
            if len(recs) != last_count:
                last_count, last_change = len(recs), time.monotonic()
            elif time.monotonic() - last_change > stall_s:
                break
            time.sleep(0.05)
        cpu_after = self.cpu_ns_by_role()
        cpu_ms = {k: round((cpu_after[k] - cpu_before.get(k, 0)) / 1e6, 1) for k in cpu_after}
        comp = completion_ms(recs, per_class)
        # The last Packet-Outs on their way to the receiver, which writes its lines once the
        # link is idle (hosts.py): wait for every packet handled, at most 2 s.
        lines = _read_from(self.arrivals, arr_off)
        deadline = time.monotonic() + 2.0
        while len(lines) < len(recs) and time.monotonic() < deadline:
            time.sleep(0.05)
            lines = _read_from(self.arrivals, arr_off)
        arrivals = {"high": [], "low": []}
        for line in lines:
            ip_id, _prec, t = line.split(",")
            klass = meta["classes"][int(ip_id)] if int(ip_id) < n else None
            if klass:
                arrivals[klass].append(int(t))
        recv = arrival_ms(arrivals, comp.t0_ns, per_class) if comp.t0_ns else \
            {"high": None, "low": None}
        expected = meta["expected_matches"]
        matches_ok = all(r.matches == expected[r.ip_id] for r in recs if r.ip_id < n)
        return Rep(comp.ms["high"], comp.ms["low"], recv["high"], recv["low"], len(recs),
                   len(arrivals["high"]) + len(arrivals["low"]), intake_ms(recs), sent,
                   matches_ok, cpu_ms)

    def cpu_ns_by_role(self) -> dict[str, int]:
        """CPU time (ns, all threads) so far of the controller, its search processes, the
        switch and the receiver host; a repetition reports the difference (from the sending of
        the trace until the last record, so it covers both classes, not only the high window).
        Search processes are counted while alive: each rep's controller starts fresh ones."""
        ctl = self.ctl.pid if self.ctl is not None else None
        ovs = self.switch_pid()
        rcv = self.recv_proc.pid if self.recv_proc is not None else None
        return {"controller": process_cpu_ns(ctl) if ctl else 0,
                "search": sum(process_cpu_ns(c) for c in child_pids(ctl)) if ctl else 0,
                "switch": process_cpu_ns(ovs) if ovs else 0,
                "receiver": process_cpu_ns(rcv) if rcv else 0}

    def switch_pid(self) -> int | None:
        """The switch's process (ovs-vswitchd for OVS, ofswitch for ofbench)."""
        if self.switch is None:
            return None
        if self.switch.ovs is not None:
            return self.switch.ovs.procs[-1].pid
        return getattr(self.switch.proc, "pid", None)

    def provenance(self) -> dict:
        """What every record of this rig says about its switch (kind, lookup, ports)."""
        prov = {"dut_switch_kind": self.switch_kind, "port_kind": PORT_KIND[self.switch_kind]}
        if self.switch is not None and self.switch_kind == "ofbench":
            prov["dut_lookup"] = self.switch.info.get("lookup")
            prov["dut_workers"] = self.switch.info.get("workers")
        return prov

    def run_config(self, cfg: Config, pcap: Path, meta: dict, reps: int,
                   retries: int = 2, outcome: Outcome | None = None) -> Outcome:
        """``reps`` valid repetitions with a fresh controller; a repetition that lost Packet-Ins
        is repeated up to ``retries`` times and counted in ``lost_reps``."""
        log = self.start_controller(cfg, meta)
        outcome = outcome or Outcome(cfg)
        n = len(meta["classes"])
        try:
            for _ in range(reps):
                for attempt in range(retries + 1):
                    rep = self.run_rep(log, pcap, meta)
                    if rep.packet_ins >= n or attempt == retries:
                        break
                    outcome.lost_reps += 1
                outcome.reps.append(rep)
        finally:
            self.stop_controller()
        return outcome

    def run_interleaved(self, cfgs: list[Config], pcap: Path, meta: dict, reps: int
                        ) -> list[Outcome]:
        """Repetition-major order (rep 1 of every config, then rep 2, ...): on a shared box
        the background load drifts over minutes, and running all of one config first would
        turn that drift into a difference between configs (a run without interleaving had the
        FIFO baseline, measured first, ~2x slower per packet than the configs after it).
        Each repetition gets a fresh controller."""
        outs = [Outcome(c) for c in cfgs]
        for _ in range(reps):
            for c, o in zip(cfgs, outs):
                self.run_config(c, pcap, meta, 1, outcome=o)
        return outs


def summary_metrics(o: Outcome, fifo: Outcome) -> dict:
    """The record's metrics: means over repetitions, spread, FIFO baseline and ratios."""
    m = {
        "high_ms": o.mean("high_ms"), "low_ms": o.mean("low_ms"),
        "high_ms_stdev": o.stdev("high_ms"), "low_ms_stdev": o.stdev("low_ms"),
        "fifo_high_ms": fifo.mean("high_ms"), "fifo_low_ms": fifo.mean("low_ms"),
        "recv_high_ms": o.mean("recv_high_ms"), "recv_low_ms": o.mean("recv_low_ms"),
        "intake_ms": o.mean("intake_ms"),
        **{f"cpu_{role}_ms": statistics.fmean(r.cpu_ms[role] for r in o.reps)
           for role in ("controller", "search", "switch", "receiver")
           if o.reps and all(role in r.cpu_ms for r in o.reps)},
        "packet_ins_min": min((r.packet_ins for r in o.reps), default=0),
        "received_min": min((r.received for r in o.reps), default=0),
        "sent_min": min((r.sent for r in o.reps), default=0),
        "matches_ok": all(r.matches_ok for r in o.reps),
        "reps": len(o.reps),
        "lost_reps": o.lost_reps,
    }
    m["high_ratio"] = ratio(m["high_ms"], m["fifo_high_ms"])
    m["low_ratio"] = ratio(m["low_ms"], m["fifo_low_ms"])
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in m.items()}


def process_cpu_ns(pid: int) -> int:
    """CPU time (ns) of all live threads of ``pid`` (/proc/<pid>/task/*/schedstat, first
    field: time on CPU); 0 if the process is gone."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def child_pids(pid: int) -> list[int]:
    """Direct children of ``pid`` (any thread's), from /proc/<pid>/task/*/children."""
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            pass
    return kids


def wait_for(pred, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _ready_line(path: Path) -> bool:
    return any(line.rstrip().endswith(" ready") for line in _tail(path).splitlines())


class LogTail:
    """Complete lines appended to a file since ``offset``, a little more on every call."""

    def __init__(self, path: Path, offset: int):
        self.path, self.offset = path, offset

    def new_lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1  # only complete lines: a writer may be in one
        self.offset += end
        return data[:end].decode().splitlines()


def _read_from(path: Path, offset: int) -> list[str]:
    try:
        with open(path) as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return []
    # Only complete lines: a writer may be in the middle of one.
    return data[:data.rfind("\n") + 1].splitlines() if "\n" in data else []


def rig_skip_reason(kind: str, profile) -> str | None:
    """Why the rig does not run on ``kind`` with this profile (None: it runs)."""
    from drivers.lab.switches import switch_available
    kinds = profile.suite_switch_kinds()
    if kind not in kinds:
        return (f"switch {kind} is not one the profile runs here ({', '.join(kinds)}"
                f"{'; one_dut: true' if profile.one_dut else ''})")
    return switch_available(kind, profile)


def switch_rows(by_switch: dict) -> list[dict]:
    """One row per configuration measured on more than one switch, each switch's ratios and
    times beside the other's."""
    keys = sorted({k for ours in by_switch.values() for k in ours},
                  key=lambda k: tuple(map(str, k)))
    rows = []
    for key in keys:
        have = {kind: ours[key] for kind, ours in sorted(by_switch.items()) if key in ours}
        if len(have) < 2:
            continue
        row = {"trace": key[0], "patterns": key[1], "config": key[2], "matcher": key[3]}
        for kind, m in have.items():
            for metric in ("high_ms", "low_ms", "high_ratio", "low_ratio", "intake_ms"):
                row[f"{kind} {metric}"] = m.get(metric)
        rows.append(row)
    return rows
