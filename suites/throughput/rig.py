"""The rig of an end-to-end NDR search on one box (issue 44): the generator's own ceiling
measured in the same run (the search's upper bound), a warm-up before the first trial, the
switch's rig figures around each trial, and a summary of what the trials' rig measured.

The generator's ceiling: softgen's own memif loopback, asked for the 64 B line rate of the
virtual wire, for a few short trials; the median received rate (over the TX window). Two are
measured: in the layout of the switch run (one process, one worker sending on p0 and receiving
on p1, the switch run's ring size: the yardstick, ``ceiling_metrics``) and with a second
process receiving on the other core (two workers: recorded beside it). A net_ring port looped
onto one worker measured 77-96 Mpps here: softgen's loop without a wire, no yardstick for a
switch behind a wire.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

from drivers.trafficgen.counters import Counters
from drivers.trafficgen.model import Stream
from drivers.trafficgen.rig import cause_summary, switch_egress, switch_rig

CEILING_TRIALS = 3
CEILING_TRIAL_S = 0.5
WARM_UP_S = 1.0
WARM_UP_FRACTION = 0.1


def received_rate_pps(c: Counters, duration_s: float) -> float:
    """What came back per second of the trial: rx over the TX window when known (start-up and
    the catch-up grace excluded), else over the scheduled duration (pure)."""
    window = max((s.tx_window_s for s in c.streams.values()), default=0.0)
    span = window if window > 0 else duration_s
    return c.rx / span if span > 0 else 0.0


def generator_ceiling_pps(gen, port: str, rx_port: str | None = None, size: int = 64, ask_pps: float = 40e6,
                          trials: int = CEILING_TRIALS, trial_s: float = CEILING_TRIAL_S) -> tuple[float, list[float]]:
    """(median, every trial's) received rate of ``gen`` from ``port`` to ``rx_port`` (default:
    the same port, looped onto itself), asked ``ask_pps`` (more than one core sends)."""
    rates = []
    for _ in range(trials):
        c = gen.run([Stream("ceiling", port, rx_port=rx_port or port, frame_size=size, rate_pps=ask_pps,
                            duration_s=trial_s)], drain_s=0.05)
        rates.append(received_rate_pps(c, trial_s))
    return statistics.median(rates), rates


def ceiling_metrics(ndr_mpps: float, same_config_pps: float | None,
                    two_core_pps: float | None = None) -> dict[str, float]:
    """A record's ceilings and ratios (pure). Issue 44's goal (NDR >= 0.5 of the generator's
    own loopback ceiling) is judged on ``ndr_vs_gen_ceiling``: the NDR over the ceiling of
    the generator in the layout it has in the switch run (``ceiling_same_config_mpps``: one
    softgen worker sending and receiving; TRex's own server and cores), as TRex's NDR bench and
    NFVbench measure their loopback with the cores the test uses. softgen's loopback with a
    second process receiving on the other core (``ceiling_two_core_mpps``: twice the
    generator's cores) is recorded beside it, with its ratio ``ndr_vs_ceiling_two_core``."""
    m: dict[str, float] = {}
    if same_config_pps and same_config_pps > 0:
        m["ceiling_same_config_mpps"] = same_config_pps / 1e6
        m["ndr_vs_gen_ceiling"] = ndr_mpps / (same_config_pps / 1e6)
    if two_core_pps and two_core_pps > 0:
        m["ceiling_two_core_mpps"] = two_core_pps / 1e6
        m["ndr_vs_ceiling_two_core"] = ndr_mpps / (two_core_pps / 1e6)
    return m


def warm_up(measure: Callable[[float, float], Counters], max_rate_pps: float,
            duration_s: float = WARM_UP_S, fraction: float = WARM_UP_FRACTION) -> Counters:
    """One trial, not judged, before the search: page faults, flow-cache fills, the first
    scheduler migrations happen here rather than in the first judged trial."""
    return measure(duration_s, max_rate_pps * fraction)


def with_switch_rig(measure: Callable[[float, float], Counters], read_stats: Callable[[], dict | None],
                    ring_slots: int, ports: tuple[int, int] = (1, 2)) -> Callable[[float, float], Counters]:
    """measure() plus the switch's rig figures (its worker's longest gap, rx backlog, its
    egress shortfall and busy share: rig.switch_egress) from its stats around the trial, and
    the ring size the cause is judged against, in Counters.rig."""
    def measured(duration_s: float, rate_pps: float) -> Counters:
        before = read_stats() if read_stats else None
        c = measure(duration_s, rate_pps)
        after = read_stats() if read_stats else None
        c.rig.update(switch_rig(before, after))
        c.rig.update(switch_egress(before, after, ports, c.lost))
        c.rig["ring_slots"] = float(ring_slots)
        return c
    return measured


def spread(values: list[float]) -> float | None:
    """(max - min) / median; None for fewer than 2 values or a median of 0 (pure)."""
    if len(values) < 2:
        return None
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med > 0 else None


def trial_metrics(trials) -> dict[str, float]:
    """A record's metrics from a search's trials (anything with passed, cause and rig): the
    longest gaps seen in any trial, and how many failed trials had each cause."""
    m: dict[str, float] = {}
    for key in ("gen_max_gap_ns", "switch_max_gap_ns", "gen_rx_backlog_pkts", "switch_rx_backlog_pkts"):
        vals = [t.rig[key] for t in trials if t.rig and key in t.rig]
        if vals:
            unit = "us" if key.endswith("_ns") else "pkts"
            name = key.removesuffix("_ns").removesuffix("_pkts")
            m[f"rig_{name}_{unit}_max"] = max(vals) / (1e3 if unit == "us" else 1)
            m[f"rig_{name}_{unit}_median"] = statistics.median(vals) / (1e3 if unit == "us" else 1)
    for cause, n in cause_summary(t.cause for t in trials).items():
        m[f"failed_trials_{cause.lower().replace(' ', '_')}"] = float(n)
    return m


# ---- keeping the run's other threads off the pollers' cores (issue 44 part 2) -------------------
# On a 2-core box the switch's worker and the generator's worker own one core each, so every
# other thread of the run (the switch's agent and EAL service threads, softgen's control
# thread, the controller, this harness) has to share one of them: the "housekeeping" core.
# OFBENCH_RIG_HOUSEKEEPING picks it: "gen" (the generator worker's core), "switch", or "off"
# (leave the scheduler free, as before).
HOUSEKEEPING_ENV = "OFBENCH_RIG_HOUSEKEEPING"
HOUSEKEEPING_DEFAULT = "off"
# OFBENCH_RIG_POLLER_NICE: the nice value of the pollers for the search ("" = unchanged)
POLLER_NICE_ENV = "OFBENCH_RIG_POLLER_NICE"


# OFBENCH_RIG_SWITCH_POLICY: the switch's worker in the fair scheduler ("other") or SCHED_FIFO
SWITCH_POLICY_ENV = "OFBENCH_RIG_SWITCH_POLICY"
RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
WIRE_ENV = "OFBENCH_RIG_WIRE"          # <wire>[:<ring log2>], e.g. memif:14, vhost:12
MEMIF_MAX_RING_LOG2 = 14               # DPDK's memif: rsize at most 14 (16384 slots)


@dataclass(frozen=True)
class RigSettings:
    """The rig of one run: the profile's ``rig`` section (dut/profiles/schema.py), each field
    overridable by its OFBENCH_RIG_* variable (experiments)."""
    wire: str = "vhost"
    ring_log2: int | None = None
    housekeeping: str = HOUSEKEEPING_DEFAULT
    poller_nice: int | None = None
    switch_policy: str = "other"

    @property
    def wire_label(self) -> str:
        return self.wire + (f":{self.ring_log2}" if self.ring_log2 else "")


def parse_wire(value: str) -> tuple[str, int | None]:
    """"memif:14" -> ("memif", 14); "vhost" -> ("vhost", None); a clear error otherwise."""
    kind, _, log2 = value.partition(":")
    if kind not in ("vhost", "memif"):
        raise ValueError(f"{WIRE_ENV}={value!r}: want vhost or memif, optionally :<ring log2>")
    try:
        n = int(log2) if log2 else None
    except ValueError:
        raise ValueError(f"{WIRE_ENV}={value!r}: the ring's log2 must be an integer") from None
    return kind, n


def rig_settings(section: dict | None, environ: dict) -> RigSettings:
    """The profile's rig section with the environment's overrides (pure)."""
    sec = dict(section or {})
    wire, log2 = sec.get("wire", "vhost"), sec.get("ring_log2")
    if environ.get(WIRE_ENV):
        wire, log2 = parse_wire(environ[WIRE_ENV])
    if log2 is not None and not 8 <= log2 <= (MEMIF_MAX_RING_LOG2 if wire == "memif" else 15):
        raise ValueError(f"rig: ring_log2 {log2} out of range for {wire} (8..{MEMIF_MAX_RING_LOG2 if wire == 'memif' else 15})")
    hk = environ.get(HOUSEKEEPING_ENV) or sec.get("housekeeping") or HOUSEKEEPING_DEFAULT
    housekeeping_core(hk, 0, 1)  # validates
    nice = poller_nice_from_env(environ.get(POLLER_NICE_ENV)) if environ.get(POLLER_NICE_ENV) \
        else sec.get("poller_nice")
    policy = environ.get(SWITCH_POLICY_ENV) or sec.get("switch_policy") or "other"
    if policy not in ("other", "fifo"):
        raise ValueError(f"{SWITCH_POLICY_ENV}={policy!r}: want other or fifo")
    if policy == "fifo" and hk in ("switch", "", "off"):
        raise ValueError(f"rig: switch_policy fifo needs housekeeping gen (got {hk!r}): the run's other "
                         "threads would wait behind a real-time poller on the switch's core")
    return RigSettings(wire, log2, hk, nice, policy)


def fifo_refusal(rt_runtime_us: str | None) -> str | None:
    """Why SCHED_FIFO for the switch's worker would be unsafe on this box (None: safe): the
    kernel's RT throttling must leave the fair scheduler a share of every period, or a
    polling FIFO thread owns its core for good (pure; the sysctl's text)."""
    try:
        v = int((rt_runtime_us or "").strip())
    except ValueError:
        return f"{RT_RUNTIME} unreadable ({rt_runtime_us!r}): RT throttling unknown"
    if v < 0:
        return f"{RT_RUNTIME} is -1: no RT throttling, a FIFO poller would never give its core up"
    return None


def is_switch_poller(pid_comm: str, pid: int, tid: int, comm: str) -> bool:
    """A polling thread of the switch (its main lcore, or a worker lcore of an ofswitch)."""
    return pid_comm == "ofswitch" and is_poller(pid, tid, comm)


def poller_nice_from_env(value: str | None) -> int | None:
    """The nice value asked for by OFBENCH_RIG_POLLER_NICE (None: leave it)."""
    if value in (None, ""):
        return None
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"{POLLER_NICE_ENV}={value!r}: want an integer in -20..19") from None
    if not -20 <= n <= 19:
        raise ValueError(f"{POLLER_NICE_ENV}={value!r}: want an integer in -20..19")
    return n


def is_poller(pid: int, tid: int, comm: str) -> bool:
    """A busy-polling thread of the run: an EAL worker lcore (softgen's worker, the switch's
    second and later workers: "lcore-worker-N", or "rte-worker-N" as this box's DPDK names
    them), or the switch's main thread (its main lcore is worker 0)."""
    return comm.startswith(("lcore-worker", "rte-worker")) or (tid == pid and comm == "ofswitch")


def plan_pinning(threads: list[tuple[int, int, str]], core: int) -> dict[int, set[int]]:
    """{tid: {core}} for every thread of ``threads`` ((pid, tid, comm)) that is not a poller."""
    return {tid: {core} for pid, tid, comm in threads if not is_poller(pid, tid, comm)}


def _descendants(pids: list[int]) -> list[int]:
    import os
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, todo = set(), list(pids)
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.add(p)
        todo += [c for c, pp in parent.items() if pp == p]
    return sorted(out)


def _threads(pids: list[int]) -> list[tuple[int, int, str]]:
    import os
    out = []
    for pid in pids:
        try:
            tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    out.append((pid, tid, f.read().strip()))
            except OSError:
                continue
    return out


def housekeeping_core(choice: str, switch_core: int, gen_core: int) -> int | None:
    """The core the run's other threads go to for a choice of OFBENCH_RIG_HOUSEKEEPING."""
    if choice in ("", "off"):
        return None
    if choice == "gen":
        return gen_core
    if choice == "switch":
        return switch_core
    raise ValueError(f"{HOUSEKEEPING_ENV}={choice!r}: want gen, switch or off")


def box_changes(pin, settings: RigSettings) -> dict[str, object]:
    """What the run changed on the box for its rig, for a trial's provenance (flat scalars):
    the core the run's other threads were moved to, the pollers' nice, the switch worker's
    policy and how many of its threads got it (all of them the run's own; undone at exit)."""
    return {"rig_housekeeping_core": pin.core, "rig_poller_nice": pin.poller_nice,
            "rig_switch_policy": settings.switch_policy, "rig_fifo_threads": len(pin.fifo),
            "rig_threads_moved": pin.moved}


class pin_others:
    """Context: every non-polling thread of the lab's processes (and of this harness) on one
    core; the harness's own threads get their affinity back at exit (the lab's processes end
    with the topology)."""

    def __init__(self, lab, core: int | None, poller_nice: int | None = None, switch_policy: str = "other"):
        self.lab, self.core, self.poller_nice, self.switch_policy = lab, core, poller_nice, switch_policy
        self.saved: dict[int, set[int]] = {}
        self.moved = 0
        self.reniced = 0
        self.fifo: list[int] = []

    def __enter__(self):
        import os
        if self.core is None and self.poller_nice is None and self.switch_policy == "other":
            return self  # nothing to do (a remote lab: its processes are on other hosts)
        sup = getattr(self.lab, "supervisor", None)
        procs = [p.pid for p in getattr(sup, "procs", []) if p.alive()]
        me = os.getpid()
        if self.poller_nice is not None:
            # the pollers ahead of everything else of the box in the fair scheduler (a nice -20
            # thread weighs ~87x a nice 0 one): shorter preemptions, not none
            for pid, tid, comm in _threads(_descendants(procs)):
                if is_poller(pid, tid, comm):
                    try:
                        os.setpriority(os.PRIO_PROCESS, tid, self.poller_nice)
                        self.reniced += 1
                    except OSError:
                        continue
        if self.switch_policy == "fifo":
            self._fifo(procs)
        if self.core is None:
            return self
        plan = plan_pinning(_threads(_descendants(procs)) + _threads([me]), self.core)
        for tid, cpus in plan.items():
            try:
                if tid in {t for _, t, _ in _threads([me])}:
                    self.saved[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, cpus)
                self.moved += 1
            except OSError:
                continue
        return self

    def _fifo(self, procs: list[int]) -> None:
        """The switch's pollers at SCHED_FIFO 1 (only them: the generator's worker and every
        other thread stay in the fair scheduler, so both cores keep a non-RT path), refused
        when RT throttling is off. The switch's process ends with the topology; __exit__
        puts them back anyway."""
        import os
        try:
            with open(RT_RUNTIME) as f:
                why = fifo_refusal(f.read())
        except OSError as e:
            why = f"{RT_RUNTIME}: {e}"
        if why:
            raise RuntimeError(f"rig: switch_policy fifo refused: {why}")
        for pid, tid, comm in _threads(_descendants(procs)):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    pcomm = f.read().strip()
            except OSError:
                continue
            if is_switch_poller(pcomm, pid, tid, comm):
                os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(1))
                self.fifo.append(tid)

    def __exit__(self, *exc):
        import os
        for tid in self.fifo:
            try:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass
        for tid, cpus in self.saved.items():
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:
                pass
        return False
