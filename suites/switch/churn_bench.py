"""Forwarding during churn (issue 20 part 3): 64 B frames through one switch lcore with 100k
flows installed, while a controller changes the table with ``rate`` FLOW_MODs per second, each
sent on its own (no batching), half ADDs of new flows and half DELETE_STRICTs of the flows the
churn added before; every flow (old and new) outputs to port 2, so a correct switch keeps
forwarding everything. Rate (port 2 tx) and loss (port 1 rx - port 2 tx) before, during and
after the churn, each over ``window_s``.

I/O as the pipeline benchmark (suites/switch/pipeline.py): port 1 = net_pcap ``infinite_rx`` of
``n_frames`` distinct frames that match installed flows, port 2 = net_null; ofbench (tuple) and
OVS-DPDK one after the other, same flows, same pcap, same churn.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

from suites.switch import pipeline as pb
import openflow as w


def _stats(s: w.Session, xid: int) -> tuple[int, int]:
    ps = s.port_stats(xid)
    return ps[1]["rx_packets"], ps[2]["tx_packets"]


def _window(s: w.Session, seconds: float, xid: int, work=None) -> dict:
    rx0, tx0 = _stats(s, xid)
    t0 = time.monotonic()
    sent = work(seconds) if work else time.sleep(seconds)
    rx1, tx1 = _stats(s, xid + 1)
    dt = time.monotonic() - t0
    out = {"mpps": round((tx1 - tx0) / dt / 1e6, 3), "rx_mpps": round((rx1 - rx0) / dt / 1e6, 3),
           "loss_ratio": round(max(0, (rx1 - rx0) - (tx1 - tx0)) / max(1, rx1 - rx0), 5)}
    if sent is not None:
        out["flow_mods_sent"] = sent
        out["flow_mods_per_s"] = round(sent / dt)
    return out


def churn_worker(s: w.Session, rate: float, seed: int = 9):
    """A function(seconds) sending ``rate`` FLOW_MODs/s one at a time; returns how many."""
    rng = random.Random(seed)
    pool = pb.make_flows(40_000, seed=seed + 100)
    added: list = []

    def run(seconds: float) -> int:
        period = 1.0 / rate
        t_end = time.perf_counter() + seconds
        nxt = time.perf_counter()
        sent = 0
        while True:
            now = time.perf_counter()
            if now >= t_end:
                break
            if now < nxt:
                time.sleep(min(nxt - now, 0.0005))
                continue
            nxt += period
            if sent % 2 == 0 or not added:
                f = pool[rng.randrange(len(pool))]
                s.send(pb.flow_mod_msg(f, xid=0x40000000 + sent))
                added.append(f)
            else:
                f = added.pop(rng.randrange(len(added)))
                s.send(w.flow_mod(command=4, priority=f.priority, match_=pb.flow_match(f),
                                  xid=0x40000000 + sent))
            sent += 1
        return sent
    return run


def run_one(lab, kind: str, flows, pcap: Path, *, lcore: int, rate: float, window_s: float,
            warmup_s: float, tag: str) -> dict:
    ls = lab.listen_here()  # the controller side, on the switch host's loopback
    port = ls.port
    rx_devargs = f"net_pcap0,rx_pcap={pcap},infinite_rx=1"
    stop = None
    pid = None
    try:
        if kind == "ofbench":
            from drivers.lab.switches import start_switch
            proc = start_switch(lab, "ofbench", name=f"{tag}-ofswitch", ports=[],
                                extra_ports=[(1, {"devargs": rx_devargs}), (2, {"devargs": pb.SINK})],
                                controller=("127.0.0.1", port), dpid=0xC1, lookup="tuple",
                                idle_sleep_us=0, lcores=str(lcore), mem_mb=1024).proc
            stop = lambda: lab.supervisor.stop(proc)  # noqa: E731
            pid = proc.pid
        elif kind == "ovs-dpdk":
            from drivers.lab.ovs import OvsInstance
            ovs = OvsInstance(lab, f"{tag}-ovsdpdk", dpdk=True, dpdk_mem_mb=1024,
                              dpdk_lcore=0, pmd_cpu_mask=hex(1 << lcore))
            stop = ovs.stop
            ovs.start()
            ovs.add_bridge("br0", dpid=0xC2, controller=f"tcp:127.0.0.1:{port}")
            ovs.add_port("br0", "p1", ofport=1, type="dpdk", options={"dpdk-devargs": rx_devargs})
            ovs.add_port("br0", "p2", ofport=2, type="dpdk", options={"dpdk-devargs": pb.SINK})
        else:
            raise ValueError(f"churn bench: unsupported switch kind {kind!r}")
        s = pb._accept(ls)
        s.send(w.flow_mod(command=3, table=0xFF))
        install_s = pb._install(s, flows)
        time.sleep(warmup_s)
        churn = churn_worker(s, rate)
        # OFBENCH_CHURN_PERF=<file>: `perf record -g` of ofswitch during the churn window
        # (OFBENCH_CHURN_PERF_PHASE=before: during the window before it, for comparison)
        perf_out = os.environ.get("OFBENCH_CHURN_PERF")
        phase = os.environ.get("OFBENCH_CHURN_PERF_PHASE", "during")

        def profiled(work):
            def run(seconds: float):
                pr = subprocess.Popen(["perf", "record", "-g", "-p", str(pid), "-o", perf_out,
                                       "--", "sleep", str(seconds)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    return work(seconds) if work else time.sleep(seconds)
                finally:
                    pr.wait(timeout=seconds + 30)
            return run
        prof = bool(perf_out and pid)
        out = {"install_s": round(install_s, 2),
               "before": _window(s, window_s, 0x100,
                                 profiled(None) if prof and phase == "before" else None),
               "during": _window(s, window_s, 0x200,
                                 profiled(churn) if prof and phase == "during" else churn)}
        if not s.barrier(0xBA77):
            raise TimeoutError(f"{kind}: no barrier reply after the churn")
        out["after"] = _window(s, window_s, 0x300)
        errors = [m for m in s.msgs if m[0] == w.ERROR]
        out["errors"] = len(errors)
        s.close()
        return out
    finally:
        ls.close()
        if stop:
            stop()


def run_churn_bench(lab, kinds=("ofbench", "ovs-dpdk"), n_flows: int = 100_000,
                    n_frames: int = 8192, rate: float = 1000.0, window_s: float = 5.0,
                    warmup_s: float = 3.0, lcore: int = 1) -> dict:
    tag = f"churn{int(time.time() * 1000) % 100000}"
    flows = pb.make_flows(n_flows)
    pcap = Path(lab.state_dir) / f"{tag}-64b.pcap"
    pb.make_pcap(pcap, flows, n_frames)
    return {kind: run_one(lab, kind, flows, pcap, lcore=lcore, rate=rate, window_s=window_s,
                          warmup_s=warmup_s, tag=tag) for kind in kinds}


def metrics_of(res: dict) -> dict:
    m: dict = {}
    for kind, r in res.items():
        k = kind.replace("-", "_")
        for phase in ("before", "during", "after"):
            m[f"{k}_{phase}_mpps"] = r[phase]["mpps"]
            m[f"{k}_{phase}_loss_ratio"] = r[phase]["loss_ratio"]
        m[f"{k}_flow_mods_per_s"] = r["during"].get("flow_mods_per_s")
        if r["before"]["mpps"]:
            m[f"{k}_during_vs_before"] = round(r["during"]["mpps"] / r["before"]["mpps"], 3)
        m[f"{k}_errors"] = r["errors"]
    if "ofbench_during_vs_before" in m:
        m["goal_within_10pct_met"] = m["ofbench_during_vs_before"] >= 0.9
    if m.get("ofbench_during_mpps") and m.get("ovs_dpdk_during_mpps"):
        m["during_ratio_vs_ovs_dpdk"] = round(m["ofbench_during_mpps"] /
                                              m["ovs_dpdk_during_mpps"], 2)
    return m


def main(argv: list[str] | None = None) -> int:
    """CLI: ``python -m suites.switch.churn_bench [--kinds ofbench,ovs-dpdk] [--rate 1000]``;
    OFBENCH_CHURN_PERF=<file> records a perf profile of ofswitch during the churn."""
    import argparse
    import json
    import secrets
    import tempfile
    from datetime import datetime, timezone
    p = argparse.ArgumentParser(prog="python -m suites.switch.churn_bench")
    p.add_argument("--kinds", default="ofbench,ovs-dpdk")
    p.add_argument("--flows", type=int, default=100_000)
    p.add_argument("--rate", type=float, default=1000.0)
    p.add_argument("--window", type=float, default=5.0)
    p.add_argument("--profile", default="local")
    a = p.parse_args(argv)
    from dut.profiles.schema import load_profile
    from drivers.lab.local import LocalLab
    run_id = f"run-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    run_dir = Path(tempfile.mkdtemp(prefix="ofb-churn-")) / run_id
    run_dir.mkdir(parents=True)
    lab = LocalLab(load_profile(a.profile), run_id, run_dir)
    try:
        res = run_churn_bench(lab, tuple(a.kinds.split(",")), a.flows, rate=a.rate,
                              window_s=a.window)
    finally:
        lab.close()
    print(json.dumps({"metrics": metrics_of(res), "raw": res, "logs": str(run_dir)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
