"""Control-plane benchmark (issue 20): how fast a switch takes FLOW_MODs with N flows installed.

Per switch (ofbench ``--lookup tuple`` with null ports, Open vSwitch userspace netdev), one at a
time, in the same run, with the same pre-serialised messages:

* bulk install: N flows (the issue's four mask shapes, 25 % each, random priorities, output:2)
  in batches of 1000 FLOW_MODs, each batch followed by a BARRIER whose reply is awaited before
  the next batch; ``bulk_reps`` installs (a DELETE-all + BARRIER between them, not timed);
* single round trips on the full table: ADD + BARRIER of a new flow, MODIFY_STRICT + BARRIER
  of an installed flow (new output port), DELETE_STRICT + BARRIER of an added flow, and the
  non-strict MODIFY / DELETE with one flow's exact match; p50 / p99 / max of ``singles`` each;
* flow stats: one OFPMP_FLOW request for every flow, time to the last reply part (entries
  counted), ``stats_reps`` times;
* the sender's own ceiling: the same client against a null switch (a separate process that
  answers BARRIER and nothing else), so a reader sees when the client is the limit.

The client is synchronous (``openflow.session.SyncSession``: no reader thread, one ``recv``
loop, headers parsed in place) and sends pre-serialised bytes; the messages are built before any clock starts.
"""
from __future__ import annotations

import random
import socket
import statistics
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import openflow as w
from openflow.session import SyncSession

SHAPES = ("ethtype_dst32_udp", "dst24", "src16_dst16", "dst28_proto")
BATCH = 1000


# ---- flows (pure) ---------------------------------------------------------------------------
def _mask32(bits: int) -> int:
    return (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF if bits else 0


def _ip4(field_: int, v: int, bits: int) -> bytes:
    return w.oxm(field_, struct.pack("!I", v & _mask32(bits)),
                 None if bits == 32 else struct.pack("!I", _mask32(bits)))


def shape_match(shape: str, src: int, dst: int, udp: int) -> bytes:
    """The issue's four shapes: eth_type + ipv4_dst/32 + udp_dst; ipv4_dst/24;
    ipv4_src/16 + ipv4_dst/16; ipv4_dst/28 + ip_proto."""
    et = w.oxm(5, b"\x08\x00")
    if shape == "ethtype_dst32_udp":
        return w.match(et, w.oxm(10, b"\x11"), _ip4(12, dst, 32), w.oxm(16, struct.pack("!H", udp)))
    if shape == "dst24":
        return w.match(et, _ip4(12, dst, 24))
    if shape == "src16_dst16":
        return w.match(et, _ip4(11, src, 16), _ip4(12, dst, 16))
    if shape == "dst28_proto":
        return w.match(et, w.oxm(10, b"\x11"), _ip4(12, dst, 28))
    raise ValueError(f"unknown shape {shape!r}")


def make_flows(n: int, seed: int = 20, prio_lo: int = 1, prio_hi: int = 60000
               ) -> list[tuple[int, bytes]]:
    """n distinct (priority, match) pairs, shapes in turn."""
    rng = random.Random(seed)
    seen: set[tuple[int, bytes]] = set()
    out = []
    while len(out) < n:
        shape = SHAPES[len(out) % 4]
        key = (rng.randint(prio_lo, prio_hi),
               shape_match(shape, rng.getrandbits(32), rng.getrandbits(32), rng.randint(1, 65535)))
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


def flow_mod(prio: int, match_: bytes, *, command: int = 0, port: int = 2, xid: int = 0) -> bytes:
    return w.flow_mod(command=command, priority=prio, match_=match_,
                      instructions=w.apply_actions(w.action_output(port, 0)), xid=xid)


def barrier(xid: int) -> bytes:
    return w.msg(w.BARRIER_REQUEST, xid=xid)


def percentiles_ms(samples_s: list[float]) -> dict:
    xs = sorted(samples_s)
    if not xs:
        return {}
    p = lambda q: xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]  # noqa: E731
    return {"p50_ms": round(p(0.5) * 1e3, 4), "p99_ms": round(p(0.99) * 1e3, 4),
            "max_ms": round(xs[-1] * 1e3, 4), "n": len(xs)}


# ---- one switch ------------------------------------------------------------------------------
@dataclass
class Plan:
    n_flows: int
    bulk_reps: int = 3
    singles: int = 300
    nonstrict_singles: int = 100
    stats_reps: int = 3
    flows: list = field(default_factory=list)
    extra: list = field(default_factory=list)
    batches: list = field(default_factory=list)
    delete_all: bytes = b""

    def build(self) -> "Plan":
        allf = make_flows(self.n_flows + self.singles + self.nonstrict_singles)
        self.flows = allf[:self.n_flows]
        # extra flows get priorities above the table's (60001..65000): an ADD never replaces
        self.extra = [(60001 + i % 5000, m) for i, (_, m) in enumerate(allf[self.n_flows:])]
        self.batches = []
        for i in range(0, self.n_flows, BATCH):
            chunk = self.flows[i:i + BATCH]
            self.batches.append(b"".join(flow_mod(p, m, xid=i + j) for j, (p, m) in
                                         enumerate(chunk)))
        self.delete_all = w.flow_mod(command=3, table=0xFF)
        return self


def bulk_install(c: SyncSession, plan: Plan) -> float:
    """Seconds to install plan's flows, BARRIER after every batch, lock-step."""
    t0 = time.perf_counter()
    for i, b in enumerate(plan.batches):
        c.send(b + barrier(0x10000000 + i))
        c.wait(w.BARRIER_REPLY, 0x10000000 + i)
    return time.perf_counter() - t0


def measure_switch(c: SyncSession, plan: Plan, progress=print, label: str = "") -> dict:
    out: dict = {}
    c.send(plan.delete_all)
    c.sync(1)
    bulk = []
    for r in range(plan.bulk_reps):
        if r:
            c.send(plan.delete_all)
            c.sync(2)
        bulk.append(bulk_install(c, plan))
        progress(f"{label}: bulk install {plan.n_flows} flows in {bulk[-1]:.2f} s "
                 f"({plan.n_flows / bulk[-1]:.0f} flows/s)")
    out["bulk_s"] = [round(x, 4) for x in bulk]
    out["bulk_flows_per_s_median"] = round(plan.n_flows / statistics.median(bulk))
    out["bulk_flows_per_s_best"] = round(plan.n_flows / min(bulk))
    rng = random.Random(5)
    xid = 0x20000000
    adds, mods, dels, nmods, ndels, echos = [], [], [], [], [], []
    strict_extra = plan.extra[:plan.singles]
    # an ECHO round trip before each FLOW_MOD one: the same client, socket and agent loop
    # without a table change, sampled in the same moments (the box's own noise)
    for p, m in strict_extra:
        echos.append(c.echo_round_trip(xid)); xid += 1
        adds.append(c.round_trip(flow_mod(p, m, xid=xid), xid + 1)); xid += 2
    for i in range(plan.singles):
        p, m = plan.flows[rng.randrange(len(plan.flows))]
        echos.append(c.echo_round_trip(xid)); xid += 1
        mods.append(c.round_trip(flow_mod(p, m, command=2, port=1 + i % 2, xid=xid), xid + 1))
        xid += 2
    for p, m in strict_extra:
        echos.append(c.echo_round_trip(xid)); xid += 1
        dels.append(c.round_trip(flow_mod(p, m, command=4, xid=xid), xid + 1)); xid += 2
    # non-strict MODIFY / DELETE carrying one flow's exact match (the table is scanned or
    # searched by the switch; it selects that flow)
    for p, m in plan.extra[plan.singles:]:
        c.round_trip(flow_mod(p, m, xid=xid), xid + 1); xid += 2
        nmods.append(c.round_trip(flow_mod(p, m, command=1, port=1, xid=xid), xid + 1))
        xid += 2
        ndels.append(c.round_trip(flow_mod(p, m, command=3, xid=xid), xid + 1)); xid += 2
    out["echo"] = percentiles_ms(echos)
    out["add"] = percentiles_ms(adds)
    out["modify_strict"] = percentiles_ms(mods)
    out["delete_strict"] = percentiles_ms(dels)
    out["modify_nonstrict"] = percentiles_ms(nmods)
    out["delete_nonstrict"] = percentiles_ms(ndels)
    progress(f"{label}: single + BARRIER p50/p99 ms: add {out['add']['p50_ms']}/"
             f"{out['add']['p99_ms']}, modify {out['modify_strict']['p50_ms']}/"
             f"{out['modify_strict']['p99_ms']}, delete {out['delete_strict']['p50_ms']}/"
             f"{out['delete_strict']['p99_ms']}, echo {out['echo']['p50_ms']}/"
             f"{out['echo']['p99_ms']}")
    stats, entries = [], []
    for r in range(plan.stats_reps):
        s, e = c.flow_stats(0x30000000 + r)
        stats.append(s)
        entries.append(e)
    out["flow_stats_s"] = [round(x, 4) for x in stats]
    out["flow_stats_s_median"] = round(statistics.median(stats), 4)
    out["flow_stats_s_best"] = round(min(stats), 4)
    out["flow_stats_entries"] = entries[-1]
    progress(f"{label}: flow stats of {entries[-1]} flows in {min(stats):.3f} s (best)")
    out["errors"] = c.errors
    if c.first_error:
        out["first_error"] = c.first_error.hex()
    return out


def sender_ceiling(c: SyncSession, plan: Plan) -> dict:
    """The client against the null switch: bulk rate and round-trip floor."""
    bulk = [bulk_install(c, plan) for _ in range(plan.bulk_reps)]
    rtt = [c.round_trip(flow_mod(p, m, xid=7), 8) for p, m in plan.extra[:plan.singles]]
    return {"bulk_flows_per_s_median": round(plan.n_flows / statistics.median(bulk)),
            "bulk_flows_per_s_best": round(plan.n_flows / min(bulk)),
            "round_trip": percentiles_ms(rtt)}


# ---- the run ----------------------------------------------------------------------------------
def _accept(ls: socket.socket, timeout_s: float = 60) -> SyncSession:
    ls.settimeout(timeout_s)
    conn, _ = ls.accept()
    c = SyncSession(conn)
    c.handshake()
    return c


def start_target(lab, host, kind: str, plan: Plan, tag: str, addr: str, port: int, stops: list):
    """Switch ``kind`` (ofbench with null ports, OVS netdev, or the null switch) on ``host``,
    connecting to the client at addr:port; its stop goes into ``stops`` as soon as it exists."""
    if kind == "ofbench":
        from drivers.lab.switches import start_switch
        handle = start_switch(lab, "ofbench", name=f"{tag}-ofswitch", ports=[], host=host,
                              extra_ports=[(1, {"devargs": "net_null0,no-rx=1"}),
                                           (2, {"devargs": "net_null1,no-rx=1"})],
                              controller=(addr, port), dpid=0xF1, lookup="tuple",
                              mem_mb=1024 if plan.n_flows < 500_000 else 2048)
        stops.append(handle.stop)
    elif kind == "ovs":
        from drivers.lab.ovs import OvsInstance
        ovs = OvsInstance(lab, f"{tag}-ovs", host=host)
        stops.append(ovs.stop)
        ovs.start()
        ovs.add_bridge("br0", dpid=0xF2, controller=f"tcp:{addr}:{port}")
    elif kind == "null":
        proc = host.start(f"{tag}-nullswitch", [host.python, "-m", "suites.switch.flowmod_sink",
                                                addr, str(port)],
                          cwd=str(host.workdir), env={"PYTHONPATH": str(host.workdir)})
        stops.append(lambda: host.stop(proc))
    else:
        raise ValueError(f"flowmod bench: unsupported switch kind {kind!r}")


def run_one(lab, kind: str, plan: Plan, tag: str, progress=print) -> dict:
    ls = w.listen()
    stops: list = []
    c = None
    try:
        start_target(lab, lab, kind, plan, tag, "127.0.0.1", ls.getsockname()[1], stops)
        c = _accept(ls)
        if kind == "null":
            return sender_ceiling(c, plan)
        return measure_switch(c, plan, progress, label=f"{kind} N={plan.n_flows}")
    finally:
        if c:
            c.close()
        ls.close()
        for stop in stops:
            stop()


def run_one_remote(lab, kind: str, plan: Plan, tag: str, progress=print,
                   timeout_s: float = 3600) -> dict:
    """The same measurement on a remote lab: the client runs on the controller host (where a
    lab's controller sits; ``client`` below), the switch on the switch host connects to it at
    the profile's ``controller.host``; the result comes back as JSON."""
    import json
    from drivers.lab.switches import controller_host, switch_host
    ctl, sw = controller_host(lab), switch_host(lab)
    addr = lab.profile.controller["host"]
    port_file, out = ctl.state_dir / f"{tag}-{kind}.port", ctl.state_dir / f"{tag}-{kind}.json"
    env = {"PYTHONPATH": str(ctl.workdir)}
    client = ctl.start(f"{tag}-{kind}-client",
                       [ctl.python, "-m", "suites.switch.flowmod_rate", "client", "--kind", kind,
                        "--flows", str(plan.n_flows), "--bulk-reps", str(plan.bulk_reps),
                        "--singles", str(plan.singles),
                        "--nonstrict-singles", str(plan.nonstrict_singles),
                        "--stats-reps", str(plan.stats_reps), "--port-file", str(port_file),
                        "--out", str(out), "--listen", addr],
                       cwd=ctl.workdir, env=env, ready=lambda: ctl.exists(port_file),
                       ready_timeout_s=120)
    stops: list = []
    try:
        port = int(ctl.run(["cat", str(port_file)]).stdout.strip())
        start_target(lab, sw, kind, plan, tag, addr, port, stops)
        rc = client.wait(timeout_s)
        if rc != 0:
            raise RuntimeError(f"flowmod client on {ctl.role} exited {rc}: "
                               f"{client.log_tail(15)}")
        res = json.loads(ctl.run(["cat", str(out)]).stdout)
        progress(f"{kind} N={plan.n_flows} (client on {ctl.role}, switch on {sw.role}): done")
        return res
    finally:
        ctl.stop(client)
        for stop in stops:
            stop()


def run_flowmod_bench(lab, n_flows: int, kinds=("ofbench", "ovs"), progress=print,
                      **plan_kw) -> dict:
    plan = Plan(n_flows, **plan_kw).build()
    tag = f"fm{n_flows}-{int(time.time() * 1000) % 100000}"
    from drivers.lab.base import is_remote
    one = run_one_remote if is_remote(lab) else run_one
    res = {"sender": one(lab, "null", plan, tag, progress)}
    progress(f"sender ceiling N={n_flows}: {res['sender']}")
    for kind in kinds:
        res[kind] = one(lab, kind, plan, tag, progress)
    return res


def client(argv: list[str]) -> int:
    """``python -m suites.switch.flowmod_rate client --kind K --flows N ... --port-file F
    --out J [--listen ADDR]``: listen on ADDR (127.0.0.1, or the lab address the switch host
    reaches, never every address), write the port to F, take one switch's connection,
    measure it (``null``: the sender ceiling), write the result as JSON to J."""
    import argparse
    import json
    p = argparse.ArgumentParser(prog="python -m suites.switch.flowmod_rate client")
    p.add_argument("--kind", required=True)
    p.add_argument("--flows", type=int, required=True)
    p.add_argument("--bulk-reps", type=int, default=3)
    p.add_argument("--singles", type=int, default=300)
    p.add_argument("--nonstrict-singles", type=int, default=100)
    p.add_argument("--stats-reps", type=int, default=3)
    p.add_argument("--port-file", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--accept-timeout", type=float, default=120)
    p.add_argument("--listen", default="127.0.0.1", help="address to listen on (default "
                   "127.0.0.1; on a lab the controller address the switch connects to)")
    a = p.parse_args(argv)
    plan = Plan(a.flows, a.bulk_reps, a.singles, a.nonstrict_singles, a.stats_reps).build()
    ls = w.listen(a.listen)
    tmp = Path(a.port_file + ".tmp")
    tmp.write_text(str(ls.getsockname()[1]))
    tmp.rename(a.port_file)
    c = _accept(ls, a.accept_timeout)
    try:
        res = sender_ceiling(c, plan) if a.kind == "null" else measure_switch(
            c, plan, lambda m: print(m, flush=True), label=f"{a.kind} N={a.flows}")
    finally:
        c.close()
        ls.close()
    Path(a.out).write_text(json.dumps(res))
    return 0


def metrics_of(res: dict, n_flows: int) -> dict:
    """Flat metrics with units in their names, and the issue's goals checked as values."""
    m: dict = {}
    s = res.get("sender", {})
    if s:
        m["sender_bulk_flows_per_s"] = s["bulk_flows_per_s_median"]
        m["sender_round_trip_p50_ms"] = s["round_trip"]["p50_ms"]
        m["sender_round_trip_p99_ms"] = s["round_trip"]["p99_ms"]
    for kind in ("ofbench", "ovs"):
        r = res.get(kind)
        if not r:
            continue
        k = kind
        m[f"{k}_bulk_flows_per_s"] = r["bulk_flows_per_s_median"]
        m[f"{k}_bulk_flows_per_s_best"] = r["bulk_flows_per_s_best"]
        for op in ("echo", "add", "modify_strict", "delete_strict", "modify_nonstrict",
                   "delete_nonstrict"):
            for q in ("p50_ms", "p99_ms", "max_ms"):
                if q in r.get(op, {}):
                    m[f"{k}_{op}_{q}"] = r[op][q]
        m[f"{k}_flow_stats_s"] = r["flow_stats_s_median"]
        m[f"{k}_flow_stats_s_best"] = r["flow_stats_s_best"]
        m[f"{k}_flow_stats_entries"] = r["flow_stats_entries"]
        m[f"{k}_errors"] = r["errors"]
    if "ofbench_bulk_flows_per_s" in m and "ovs_bulk_flows_per_s" in m:
        m["bulk_ratio_vs_ovs"] = round(m["ofbench_bulk_flows_per_s"] /
                                       m["ovs_bulk_flows_per_s"], 2)
        m["goal_bulk_ge_ovs_met"] = m["bulk_ratio_vs_ovs"] >= 1.0
    if "ofbench_add_p99_ms" in m:
        worst = max(m[f"ofbench_{op}_p99_ms"] for op in ("add", "modify_strict", "delete_strict"))
        goal = 1.0 if n_flows <= 100_000 else 2.0
        m["ofbench_single_p99_worst_ms"] = worst
        m["goal_single_p99_ms"] = goal
        m["goal_single_p99_met"] = worst < goal
        if "ovs_add_p99_ms" in m:
            m["single_p99_ratio_vs_ovs"] = round(
                worst / max(m[f"ovs_{op}_p99_ms"] for op in
                            ("add", "modify_strict", "delete_strict")), 2)
    if "ofbench_flow_stats_s" in m and n_flows == 100_000:
        m["goal_flow_stats_100k_lt_1s_met"] = m["ofbench_flow_stats_s"] < 1.0
    return m


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m suites.switch.flowmod_rate --flows 100000 [--kinds ofbench,ovs]``
    (a local lab of its own; OFBENCH_BUILD_DIR picks the ofswitch build)."""
    import argparse
    import json
    import secrets
    import tempfile
    from datetime import datetime, timezone
    p = argparse.ArgumentParser(prog="python -m suites.switch.flowmod_rate",
                                description=__doc__.split("\n")[0])
    p.add_argument("--flows", type=int, default=100_000)
    p.add_argument("--kinds", default="ofbench,ovs")
    p.add_argument("--bulk-reps", type=int, default=3)
    p.add_argument("--singles", type=int, default=300)
    p.add_argument("--nonstrict-singles", type=int, default=100)
    p.add_argument("--stats-reps", type=int, default=3)
    p.add_argument("--profile", default="local")
    a = p.parse_args(argv)
    from dut.profiles.schema import load_profile
    from drivers.lab.local import LocalLab
    prof = load_profile(a.profile)
    run_id = f"run-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    run_dir = Path(tempfile.mkdtemp(prefix="ofb-flowmod-")) / run_id
    run_dir.mkdir(parents=True)
    lab = LocalLab(prof, run_id, run_dir)
    try:
        res = run_flowmod_bench(lab, a.flows, tuple(a.kinds.split(",")),
                                progress=lambda s: print(s, file=sys.stderr, flush=True),
                                bulk_reps=a.bulk_reps, singles=a.singles,
                                nonstrict_singles=a.nonstrict_singles, stats_reps=a.stats_reps)
    finally:
        lab.close()
    print(json.dumps({"suite": "switch", "name": f"flow_mod_rate_{a.flows // 1000}k",
                      "metrics": metrics_of(res, a.flows), "raw": res,
                      "params": {**vars(a), "logs": str(run_dir)}}))
    return 0


if __name__ == "__main__":
    sys.exit(client(sys.argv[2:]) if sys.argv[1:2] == ["client"] else main())
