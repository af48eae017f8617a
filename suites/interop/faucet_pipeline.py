"""FAUCET's pipeline as a workload (issue 41 part 2): the flows FAUCET installs for a routed
two-VLAN network with N learned hosts per VLAN, replayed into the switch pipeline bench
(suites/switch/pipeline.py) for ofbench and OVS-DPDK.

Recording: FAUCET runs a network on ofbench (port 1: VLAN 100, 10.100.0.0/16; port 2: VLAN
200, 10.200.0.0/16; its router between them, VIPs .255.254) through suites/interop/ofrelay.py,
which keeps every FLOW_MOD FAUCET sends. N hosts on each port ARP for their VIP (a raw socket
in the host's namespace): FAUCET learns each (eth_src, eth_dst flows) and adds its /32 route
(ipv4_fib: set eth_src/eth_dst, set vlan_vid, dec TTL). Replayed in order into a fresh switch,
the recording rebuilds FAUCET's tables: vlan (push tag), eth_src, ipv4_fib, vip, eth_dst (pop
tag, output), flood.

Feed: 64 B UDP frames from VLAN-100 hosts to VLAN-200 hosts through the router (eth_dst =
FAUCET's MAC), each pair once per pass: every frame crosses vlan -> eth_src -> ipv4_fib ->
eth_dst with push VLAN, two set-fields, set VLAN, dec TTL and pop VLAN, out port 2 (the bench's
sink).
"""
from __future__ import annotations

import random
import re
import statistics
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scapy.utils import checksum  # the internet checksum (RFC 1071)

from suites.interop import configs
from suites.interop.udp_probe import host_addr, host_mac
from suites.switch.pipeline import Workload

FAUCET_MAC = bytes.fromhex("0e0000000001")  # FAUCET's default faucet_mac
V100_BASE, V200_BASE = "10.100.0.1", "10.200.0.1"
V100_VIP, V200_VIP = "10.100.255.254", "10.200.255.254"
PREFIX = {1: 0x01, 2: 0x02}  # host MACs 0e:01:..., 0e:02:...
MAX_UNREPLIED_ECHOES = 60  # FAUCET's echo every 3 s: the channel kept through 3 busy minutes


def config(n_hosts: int) -> str:
    cfg = configs.vlans({1: "v100", 2: "v200"}, vids={"v100": 100, "v200": 200},
                        vips={"v100": "10.100.255.254/16", "v200": "10.200.255.254/16"},
                        route=True)
    import yaml
    d = yaml.safe_load(cfg)
    for v in d["vlans"].values():  # FAUCET's defaults: 256 per VLAN, 255 per port
        v["max_hosts"] = n_hosts + 16
    for i in d["dps"]["sw"]["interfaces"].values():
        i["max_hosts"] = n_hosts + 16
    return yaml.safe_dump(d, sort_keys=False)


def split(blob: bytes) -> list[bytes]:
    out, i = [], 0
    while i + 8 <= len(blob):
        n = struct.unpack("!H", blob[i + 2:i + 4])[0]
        out.append(blob[i:i + n])
        i += n
    return out


def table_counts(msgs: list[bytes]) -> dict[int, int]:
    """FLOW_MOD adds per table (command OFPFC_ADD = 0) in a recording."""
    out: dict[int, int] = {}
    for m in msgs:
        if m[1] == 14 and m[25] == 0:
            out[m[24]] = out.get(m[24], 0) + 1
    return dict(sorted(out.items()))


def routed_frame(i: int, j: int, seq: int) -> bytes:
    """64 B (60 + FCS) UDP frame from VLAN-100 host i to VLAN-200 host j via FAUCET's router."""
    payload = struct.pack("!I", seq).ljust(18, b"\0")
    udp = struct.pack("!HHHH", 1024 + (seq & 0x3FFF), 9000, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0, 64, 17, 0,
                     socket.inet_aton(host_addr(V100_BASE, i)),
                     socket.inet_aton(host_addr(V200_BASE, j)))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return FAUCET_MAC + host_mac(PREFIX[1], i) + b"\x08\x00" + ip + udp


@dataclass(frozen=True)
class FaucetWorkload(Workload):
    """A pipeline Workload whose flows are FAUCET's recording (``msgs``), replayed in order,
    and whose frames are routed VLAN 100 -> VLAN 200 between the recorded hosts."""
    msgs: tuple = ()
    n_hosts: int = 0
    count_flows: bool = True  # every run says what it installed and which flows it crossed

    @property
    def rewrites(self) -> bool:
        return True

    def flow_mods(self, flows):
        for k, m in enumerate(self.msgs):
            yield m[:4] + struct.pack("!I", 0x41000000 + k) + m[8:]

    def frames(self, flows, seed: int = 2) -> list[bytes]:
        rng = random.Random(seed)
        return [routed_frame(rng.randrange(self.n_hosts), rng.randrange(self.n_hosts), k)
                for k in range(self.n_frames)]


def record(lab, n_hosts: int, log_dir: Path, *, pps: float = 300.0,
           settle_timeout_s: float = 120.0, kind: str = "ofbench") -> tuple[list[bytes], dict]:
    """Run FAUCET's routed two-VLAN network on ofbench through the recording relay, let
    ``n_hosts`` hosts per VLAN ARP for their gateway, return FAUCET's FLOW_MODs and what it
    learned ({"hosts_learned", "routes", "tables"})."""
    from suites.interop.net import FaucetNet, Host, ScenarioError

    class RecordingNet(FaucetNet):
        def _start_switch(self, port: int) -> None:
            self.rec = Path(log_dir) / f"faucet-{n_hosts}-hosts.of"
            self.rec.unlink(missing_ok=True)
            relay_port = self.lab.free_tcp_port()
            ready = self.lab.sock_path(f"{self.tag}-relay.ready")
            self.relay = self.lab.supervisor.start(
                f"ofrelay-{self.tag}", [sys.executable, "-m", "suites.interop.ofrelay",
                                        "--listen", str(relay_port), "--to", str(port),
                                        "--record", str(self.rec), "--ready-file", str(ready)],
                netns=self.ns["sw"], ready=ready.exists, env={"PYTHONPATH": "."})
            self.procs.append(self.relay)
            super()._start_switch(relay_port)

    hosts = [Host("h1", 1, "10.100.255.1/16"), Host("h2", 2, "10.200.255.2/16")]
    net = RecordingNet(lab, kind, f"faucet_pipeline_{n_hosts}", f"p{n_hosts // 1000}k",
                       hosts, config(n_hosts))
    # FAUCET learning thousands of hosts keeps its own loop busy past its 5 unanswered echoes
    # (~15 s) on a small box and drops the channel: every drop is a cold start (its tables
    # emptied and rebuilt), so the recording would end with the last start's hosts only
    net.max_unreplied_echoes = MAX_UNREPLIED_ECHOES
    with net:
        sides = (("h1", V100_BASE, V100_VIP), ("h2", V200_BASE, V200_VIP))
        for h, base, _ in sides:  # the hosts answer FAUCET's re-resolution of its next hops
            net._send(h, ["arp-responder", "--iface", "eth0", "--count", str(n_hosts),
                          "--prefix", str(PREFIX[net.hosts[h].port]), "--base-ip", base])
        for _ in range(2):  # a second pass for hosts whose first ARP FAUCET did not take
            senders = [net._send(h, ["arps", "--iface", "eth0", "--count", str(n_hosts),
                                     "--prefix", str(PREFIX[net.hosts[h].port]),
                                     "--base-ip", base, "--target", vip, "--pps", str(pps)])
                       for h, base, vip in sides]
            for s in senders:
                s.wait(timeout_s=n_hosts / pps + 60)
        # settled: FAUCET has added a route for (nearly) every host and nothing new for 3 s
        deadline = time.monotonic() + settle_timeout_s
        last, still = -1, 0.0
        while time.monotonic() < deadline:
            n = len(split(net.rec.read_bytes())) if net.rec.exists() else 0
            if n == last:
                still += 0.5
                if still >= 3.0:
                    break
            else:
                last, still = n, 0.0
            time.sleep(0.5)
        log = net.faucet.log.read_text(errors="replace")
        learned = len(set(re.findall(r"L2 learned on Port \d+ (\S+)", log)))
        routes = len(set(re.findall(r"Adding new route (\S+)", log)))
        dead = len(set(re.findall(r"expiring dead route (\S+)", log)))
        downs = log.count("datapath down")
        c = net.faucet.counters()
        if c.ofp_errors:
            raise ScenarioError(f"FAUCET got {c.ofp_errors} OFPT_ERRORs while recording: "
                                f"{c.errors[:3]}")
    msgs = split(net.rec.read_bytes())
    return msgs, {"hosts_learned": learned, "routes_added": routes, "routes_expired": dead,
                  "flow_mods": len(msgs), "tables": table_counts(msgs),
                  "channel_downs": downs, "switch": kind}


VLAN_TABLE_FLOWS = 3  # FAUCET's vlan table after one cold start of this network
HIT_SLACK = 2  # flows crossed may differ by this many between switches (table_mismatches)


def recording_problem(info: dict, n_hosts: int) -> str | None:
    """Why a recording is not FAUCET's tables for ``n_hosts`` hosts per VLAN (pure), or None.
    FAUCET cold-starts the switch (deletes every flow, installs its pipeline again) each time
    its channel comes back, so a recording with a channel loss ends with only the hosts learned
    after the last one: frames to the others would go to the controller, another workload."""
    downs = info.get("channel_downs", 0)
    starts = info.get("tables", {}).get(0, 0) // VLAN_TABLE_FLOWS
    if downs or starts > 1:
        return (f"FAUCET's channel went down {downs} time(s) while learning ({starts} cold "
                f"starts in the recording): its tables hold only the hosts of the last start")
    learned = info.get("hosts_learned", 0)
    if learned < 2 * n_hosts:
        return f"FAUCET learned {learned} of {2 * n_hosts} hosts"
    return None


def table_mismatches(metrics: dict, a: str = "ofbench_pcap", b: str = "ovs_dpdk_pcap"
                     ) -> list[str]:
    """Tables whose flow count or count of flows the frames crossed differs between two runs
    of the same recording (pure; from metrics_of's ``<kind>_<feed>_table<t>_flows[_hit]``):
    both switches must hold FAUCET's tables, and the frames cross the same flows, for their
    rates to compare the same pipeline. Flows held must be equal; flows crossed may differ by
    HIT_SLACK (the feed runs from the switch's start, so a frame or two crosses the tables
    before FAUCET's flows are all in, and OVS's flow counters trail its datapath's)."""
    out = []
    for t in range(256):
        for suffix in ("flows", "flows_hit"):
            ka, kb = f"{a}_table{t}_{suffix}", f"{b}_table{t}_{suffix}"
            if not (ka in metrics or kb in metrics):
                continue
            va, vb = metrics.get(ka), metrics.get(kb)
            if suffix == "flows_hit" and va is not None and vb is not None and \
                    abs(va - vb) <= max(HIT_SLACK, 0.01 * max(va, vb)):
                continue
            if va != vb:
                out.append(f"table {t} {suffix.replace('_', ' ')}: {a} {metrics.get(ka)}, "
                           f"{b} {metrics.get(kb)}")
    return out


def merge_rounds(rounds: list[dict]) -> dict:
    """Several run_pipeline_bench results of the same plan (one per round: each switch started
    afresh, the switches alternating) -> one result of the same shape (pure): per kind/feed
    ``mpps`` = median of the rounds' medians, ``mpps_best`` = the best window of any round,
    ``mpps_runs`` = the rounds' medians, cpu_share / mpps_per_cpu / other_load_cores medians,
    cache_hit_ratio the lowest, ``datapath`` and ``tables`` from the last round; ceilings and
    memory from whichever round measured them (the last)."""
    out: dict = {}
    for res in rounds:
        for name, r in res.items():
            if name == "frames" or name == "memory" or name.startswith("ceiling/"):
                out[name] = r
                continue
            out.setdefault(name, []).append(r)
    for name, runs in list(out.items()):
        if not isinstance(runs, list):
            continue
        merged = {"mpps": round(statistics.median(r["mpps"] for r in runs), 3),
                  "mpps_best": max(r["mpps_best"] for r in runs),
                  "mpps_runs": [r["mpps"] for r in runs],
                  "install_s": round(statistics.median(r["install_s"] for r in runs), 2),
                  "feed": runs[-1].get("feed"), "rounds": len(runs)}
        for k in ("cpu_share", "mpps_per_cpu", "other_load_cores"):
            vals = [r[k] for r in runs if k in r]
            if vals:
                merged[k] = round(statistics.median(vals), 3)
        hits = [r["cache_hit_ratio"] for r in runs if "cache_hit_ratio" in r]
        if hits:
            merged["cache_hit_ratio"] = min(hits)
        for k in ("datapath", "tables"):
            if k in runs[-1]:
                merged[k] = runs[-1][k]
        out[name] = merged
    return out


def round_ratios(rounds: list[dict], a: str = "ofbench/pcap", b: str = "ovs-dpdk/pcap"
                 ) -> list[float]:
    """a / b (medians) in each round that measured both (pure): the ratio's spread."""
    return [round(r[a]["mpps"] / r[b]["mpps"], 3) for r in rounds
            if a in r and b in r and r[b]["mpps"] > 0]


def load_recording(path: Path) -> list[bytes]:
    """A recording written by ``record`` (or ofrelay ``--record``): its messages in order."""
    blob = Path(path).read_bytes()
    msgs = split(blob)
    if sum(len(m) for m in msgs) != len(blob) or not msgs:
        raise ValueError(f"{path}: not a whole OpenFlow message stream "
                         f"({len(msgs)} messages, {len(blob)} bytes)")
    return msgs


def main(argv: list[str] | None = None) -> int:
    """``python -m suites.interop.faucet_pipeline --hosts N --out DIR``: record FAUCET's flows
    for N hosts per VLAN into DIR/faucet-N-hosts.of (for OFBENCH_FAUCET_RECORDINGS: a 10k-host
    recording takes minutes of FAUCET learning, outside any benchmark's quiet window)."""
    import argparse
    import json
    import secrets
    import shutil
    from datetime import datetime, timezone
    from dut.profiles.schema import load_profile
    from drivers.lab.local import LocalLab
    p = argparse.ArgumentParser(prog="python -m suites.interop.faucet_pipeline")
    p.add_argument("--hosts", type=int, required=True, help="hosts per VLAN")
    p.add_argument("--out", type=Path, required=True, help="folder for faucet-N-hosts.of")
    p.add_argument("--profile", default="local")
    p.add_argument("--pps", type=float, default=300.0, help="ARPs per second per VLAN")
    p.add_argument("--switch", default="ofbench", help="the switch FAUCET runs the network on")
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    run_id = f"run-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    run_dir = a.out / run_id
    run_dir.mkdir()
    lab = LocalLab(load_profile(a.profile), run_id, run_dir)
    try:
        msgs, info = record(lab, a.hosts, run_dir, pps=a.pps, kind=a.switch)
    finally:
        lab.close()
    shutil.copy(run_dir / f"faucet-{a.hosts}-hosts.of", a.out / f"faucet-{a.hosts}-hosts.of")
    print(json.dumps({**info, "tables": {str(k): v for k, v in info["tables"].items()},
                      "recording": str(a.out / f"faucet-{a.hosts}-hosts.of")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
