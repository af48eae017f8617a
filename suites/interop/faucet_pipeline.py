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
# FAUCET's dp options for learning thousands of hosts (faucet/dp.py defaults in brackets):
# - metrics_rate_limit_sec 60 [0]: after each PACKET_IN that learned a host FAUCET re-exports
#   its Prometheus `learned_macs` for every host of the port, sorted (valve.py update_metrics,
#   "TODO: make MAC table updates less expensive"): learning N hosts costs O(N^2 log N), and
#   with the default FAUCET took 300 hosts/s at first and 31/s at 13k hosts (Findings 4). Its
#   5 s metrics timer still exports them all;
# - ignore_learn_ins 0 [10: every 10th PACKET_IN of a second is not learned from, by design,
#   to spare a busy controller]: every host's first ARP is taken;
# - timeout 3600 [300 s, jittered down by up to 3 sqrt(timeout)]: the first hosts must not
#   expire (their eth_src flows' hard timeout, FAUCET's host cache) before the last are learned.
# The flows keep FAUCET's form; their timeouts are an hour's.
DP_OPTIONS = {"metrics_rate_limit_sec": 60, "ignore_learn_ins": 0, "timeout": 3600}
# FAUCET's table ids for this network (routing on: 0 vlan, 1 eth_src, 2 ipv4_fib, 3 vip,
# 4 eth_dst, 5 flood)
ETH_SRC_TABLE, IPV4_FIB_TABLE, ETH_DST_TABLE = 1, 2, 4
OXM_ETH_DST, OXM_ETH_SRC, OXM_IPV4_DST = 3, 4, 12


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
    d["dps"]["sw"].update(DP_OPTIONS)
    return yaml.safe_dump(d, sort_keys=False)


def flow_mod_match(m: bytes) -> tuple[int, int, dict[int, bytes]] | None:
    """(table_id, command, {OXM field: value}) of an OpenFlow 1.3 FLOW_MOD (pure; None for
    another message). A masked field is kept only with an all-ones mask (FAUCET's /32 routes
    carry one), as its value."""
    if len(m) < 52 or m[1] != 14:
        return None
    mlen = struct.unpack("!H", m[50:52])[0]
    fields, o = {}, 52
    while o + 4 <= 48 + mlen and o + 4 <= len(m):
        cls, fld, n = struct.unpack("!HBB", m[o:o + 4])
        if cls == 0x8000 and not fld & 1:
            fields[fld >> 1] = bytes(m[o + 4:o + 4 + n])
        elif cls == 0x8000 and set(m[o + 4 + n // 2:o + 4 + n]) == {0xFF}:
            fields[fld >> 1] = bytes(m[o + 4:o + 4 + n // 2])
        o += 4 + n
    return m[24], m[25], fields


def learned(msgs: list[bytes]) -> dict[str, set[bytes]]:
    """What a recording leaves in the switch for each host (pure): the MACs with a flow in
    FAUCET's eth_src table and in its eth_dst table, the IPv4 addresses with one in its
    ipv4_fib. FLOW_MODs are taken in order: an add adds, a delete whose match names the field
    removes that value, a delete without it (a cold start's) empties the table."""
    want = {"eth_src": (ETH_SRC_TABLE, OXM_ETH_SRC), "eth_dst": (ETH_DST_TABLE, OXM_ETH_DST),
            "ipv4_dst": (IPV4_FIB_TABLE, OXM_IPV4_DST)}
    out: dict[str, set[bytes]] = {k: set() for k in want}
    for m in msgs:
        fm = flow_mod_match(m)
        if fm is None:
            continue
        table, cmd, fields = fm
        for k, (t, f) in want.items():
            if table != t and not (cmd in (3, 4) and table == 0xFF):
                continue
            if cmd == 0 and f in fields:
                out[k].add(fields[f])
            elif cmd in (3, 4):
                if f in fields:
                    out[k].discard(fields[f])
                else:
                    out[k].clear()
    return out


def missing_hosts(msgs: list[bytes], n_hosts: int) -> dict[int, list[int]]:
    """Per switch port (1: VLAN 100, 2: VLAN 200), the hosts i < ``n_hosts`` the recording
    does not hold whole (pure): an eth_src flow, an eth_dst flow and a /32 route each."""
    got = learned(msgs)
    out = {}
    for port, base in ((1, V100_BASE), (2, V200_BASE)):
        out[port] = [i for i in range(n_hosts)
                     if host_mac(PREFIX[port], i) not in got["eth_src"]
                     or host_mac(PREFIX[port], i) not in got["eth_dst"]
                     or socket.inet_aton(host_addr(base, i)) not in got["ipv4_dst"]]
    return out


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


FAUCET_METRICS = ("of_packet_ins", "of_vlan_packet_ins", "of_non_vlan_packet_ins",
                  "of_ignored_packet_ins", "of_unexpected_packet_ins", "of_flowmsgs_sent",
                  "of_dp_connections", "of_dp_disconnections", "vlan_hosts_learned",
                  "port_learn_bans", "vlan_learn_bans")


def _settle(rec: Path, quiet_s: float, timeout_s: float) -> None:
    """Wait until the recording has not grown for ``quiet_s`` (or ``timeout_s`` passed)."""
    deadline = time.monotonic() + timeout_s
    last, still = -1, 0.0
    while time.monotonic() < deadline:
        n = rec.stat().st_size if rec.exists() else 0
        if n == last:
            still += 0.5
            if still >= quiet_s:
                return
        else:
            last, still = n, 0.0
        time.sleep(0.5)


def record(lab, n_hosts: int, log_dir: Path, *, pps: float = 150.0, quiet_s: float = 5.0,
           kind: str = "ofbench", max_passes: int = 6, learn_timeout_s: float | None = None
           ) -> tuple[list[bytes], dict]:
    """Run FAUCET's routed two-VLAN network on ofbench through the recording relay, let
    ``n_hosts`` hosts per VLAN ARP for their gateway, return FAUCET's FLOW_MODs and what it
    learned. The first pass sends an ARP for every host at ``pps`` per VLAN; each next pass
    (at most ``max_passes`` in all, within ``learn_timeout_s``) only for the hosts the
    recording does not yet hold whole (eth_src and eth_dst flows, /32 route: missing_hosts),
    once FAUCET's FLOW_MODs have stopped for ``quiet_s`` (FAUCET takes PACKET_INs more slowly
    than they come, ever more slowly as it holds more hosts: the backlog waits in the
    connection, and a host re-sent before FAUCET has drained it would be learned twice). ``info["stages"]`` counts each stage of the learning
    path: ARPs sent, the switch's port counters, the PACKET_INs on the wire and their distinct
    sources (the relay's), FAUCET's own Prometheus counters, FLOW_MODs back."""
    from suites.interop.net import FaucetNet, Host, ScenarioError
    learn_timeout_s = learn_timeout_s or max(300.0, n_hosts / 25)  # 20k hosts: 400 s

    class RecordingNet(FaucetNet):
        def _start_switch(self, port: int) -> None:
            self.rec = Path(log_dir) / f"faucet-{n_hosts}-hosts.of"
            self.rec.unlink(missing_ok=True)
            self.relay_counts = Path(log_dir) / f"faucet-{n_hosts}-hosts.relay.json"
            self.relay_counts.unlink(missing_ok=True)
            relay_port = self.lab.free_tcp_port()
            ready = self.lab.sock_path(f"{self.tag}-relay.ready")
            self.relay = self.lab.supervisor.start(
                f"ofrelay-{self.tag}", [sys.executable, "-m", "suites.interop.ofrelay",
                                        "--listen", str(relay_port), "--to", str(port),
                                        "--record", str(self.rec), "--ready-file", str(ready),
                                        "--counts", str(self.relay_counts)],
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
    passes: list[dict] = []
    t0 = time.monotonic()
    with net:
        sides = (("h1", V100_BASE, V100_VIP), ("h2", V200_BASE, V200_VIP))
        for h, base, _ in sides:  # the hosts answer FAUCET's re-resolution of its next hops
            net._send(h, ["arp-responder", "--iface", "eth0", "--count", str(n_hosts),
                          "--prefix", str(PREFIX[net.hosts[h].port]), "--base-ip", base,
                          "--seconds", str(learn_timeout_s + n_hosts / pps + 120)])
        todo: dict[int, list[int] | None] = {1: None, 2: None}  # None: every host
        while True:
            senders, sent = [], 0
            for h, base, vip in sides:
                port = net.hosts[h].port
                args = ["arps", "--iface", "eth0", "--count", str(n_hosts), "--prefix",
                        str(PREFIX[port]), "--base-ip", base, "--target", vip, "--pps", str(pps)]
                only = todo[port]
                if only is not None:
                    if not only:
                        continue
                    f = Path(log_dir) / f"faucet-{n_hosts}-pass{len(passes)}-port{port}.hosts"
                    f.write_text("\n".join(map(str, only)) + "\n")
                    args += ["--only-file", str(f)]
                sent += n_hosts if only is None else len(only)
                senders.append(net._send(h, args))
            for snd in senders:
                snd.wait(timeout_s=n_hosts / pps + 60)
            _settle(net.rec, quiet_s, max(quiet_s, learn_timeout_s - (time.monotonic() - t0)))
            todo = missing_hosts(split(net.rec.read_bytes()), n_hosts)
            passes.append({"arps_sent": sent, "missing_after": sum(map(len, todo.values())),
                           "at_s": round(time.monotonic() - t0, 1)})
            if not any(todo.values()) or len(passes) >= max_passes or \
                    time.monotonic() - t0 > learn_timeout_s:
                break
        log = net.faucet.log.read_text(errors="replace")
        learned_log = len(set(re.findall(r"L2 learned on Port \d+ (\S+)", log)))
        routes = len(set(re.findall(r"Adding new route (\S+)", log)))
        dead = len(set(re.findall(r"expiring dead route (\S+)", log)))
        downs = log.count("datapath down")
        stages = {"arps_sent": sum(x["arps_sent"] for x in passes)}
        sw = net.switch.stats() if hasattr(net.switch, "stats") else None
        if sw:
            stages["switch_rx_packets"] = {p["port"]: p["rx_packets"] for p in sw["ports"]}
            stages["switch_ctl_dropped_slow"] = sw.get("ctl_dropped_slow", 0)
        time.sleep(1.0)  # the relay writes its counts every half second
        try:
            import json
            rc = json.loads(net.relay_counts.read_text())
            stages["packet_ins_on_wire"] = rc["to_controller"].get("10", 0)
            stages["packet_in_sources"] = rc["packet_in_sources"]
            stages["flow_mods_on_wire"] = rc["to_switch"].get("14", 0)
            stages["packet_outs_on_wire"] = rc["to_switch"].get("13", 0)
        except (OSError, ValueError, KeyError):
            pass
        try:
            fm = net.faucet.metrics()
            stages.update({f"faucet_{k}": fm[k] for k in FAUCET_METRICS if k in fm})
        except Exception as e:  # noqa: BLE001 - the counts are diagnostics, not the result
            stages["faucet_metrics_error"] = str(e)[:200]
        c = net.faucet.counters()
        if c.ofp_errors:
            raise ScenarioError(f"FAUCET got {c.ofp_errors} OFPT_ERRORs while recording: "
                                f"{c.errors[:3]}")
    msgs = split(net.rec.read_bytes())
    missing = missing_hosts(msgs, n_hosts)
    return msgs, {"hosts_learned": learned_log, "routes_added": routes, "routes_expired": dead,
                  "hosts_in_tables": 2 * n_hosts - sum(map(len, missing.values())),
                  "flow_mods": len(msgs), "tables": table_counts(msgs),
                  "channel_downs": downs, "switch": kind, "passes": passes, "stages": stages,
                  "pps": pps, "dp_options": DP_OPTIONS,
                  "learn_s": round(time.monotonic() - t0, 1)}


def learn_params(info: dict) -> dict:
    """What a recording's learning was, as a result record's params (pure; scalars and lists
    of them, as the record schema allows): FAUCET's options, the ARP rate, one line per pass."""
    passes = info.get("passes")
    return {"faucet_dp_options": dict(info.get("dp_options") or DP_OPTIONS),
            "learn_pps": info.get("pps"),
            "learn_passes": [f"pass {i}: {p['arps_sent']} ARPs, {p['missing_after']} hosts "
                             f"missing after, at {p['at_s']} s" for i, p in enumerate(passes, 1)]
            if passes else "a recording of an earlier run"}


# The RFC 2544 matrix on FAUCET's flows (test_faucet_pipeline._rfc2544): every switch kind the
# throughput rig drives (suites/throughput/topology.py switch_p2p: OVS netdev over veth and
# af_packet, OVS-DPDK and ofbench over vhost-user), the peers first so ofbench's record can
# carry its ratio to each
RFC_KINDS = ("ovs", "ovs-dpdk", "ofbench")
RFC_TAGS = {"ovs": "ovk", "ovs-dpdk": "ovd", "ofbench": "ofb"}


def rfc_tag(kind: str, n_hosts: int) -> str:
    """The topology tag of one switch's RFC 2544 run (pure): distinct per kind and host count
    (its namespaces, sockets and the replay app's done file are named from it)."""
    return f"fr{n_hosts // 1000}{RFC_TAGS[kind]}"


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
    learned = info.get("hosts_in_tables", info.get("hosts_learned", 0))
    if learned < 2 * n_hosts:
        return (f"the recording holds {learned} of {2 * n_hosts} hosts whole (eth_src, eth_dst "
                f"flows and /32 route)")
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
    cache_hit_ratio the lowest, ``datapath``, ``tables``, ``switch_cache`` (ofbench's cache
    counters) and ``veth`` (the veth feed's counters) from the last round; ceilings and
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
        for k in ("datapath", "tables", "switch_cache", "veth"):
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
    p.add_argument("--pps", type=float, default=150.0, help="ARPs per second per VLAN")
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


# ---- every switch kind in the pipeline bench ---------------------------------------------------
# Issue 41: FAUCET's pipeline on every switch kind of the profile. ofbench and OVS-DPDK take
# DPDK ports (the pcap feed into one lcore, net_null sink: suites/switch/pipeline.py); OVS
# netdev takes none, so it is fed through a veth pair by a DPDK af_packet feeder (VETH_FEED),
# another port kind: its rate is bounded by the kernel's veth path, never compared blindly
# with the DPDK ones (its own record, the port kind and generator in its provenance).
PIPELINE_KINDS = ("ofbench", "ovs-dpdk", "ovs")
KIND_KEYS = {"ofbench": "ofbench", "ovs-dpdk": "ovs_dpdk", "ovs": "ovs"}
VETH_GENERATOR = "dut/switch/bench/feed_ceiling: pcap frames copied into mbufs -> net_af_packet"


def pipeline_plan(kinds) -> tuple:
    """(kind, feed) pairs the FAUCET pipeline bench measures for the kinds that run (pure):
    ofbench on replay-copy (FAUCET's flows rewrite) and pcap, OVS-DPDK on pcap, OVS netdev on
    the veth feed."""
    from suites.switch.pipeline import REWRITE_PLAN, VETH_KINDS
    plan = [(k, f) for k, f in REWRITE_PLAN if k in kinds]
    plan += [(k, f) for k, f in VETH_KINDS.items() if k in kinds]
    return tuple(plan)


def split_kind_metrics(metrics: dict, kind: str = "ovs") -> tuple[dict, dict]:
    """(the rest, ``kind``'s) of a FAUCET pipeline run's metrics (pure): the veth-fed kind's
    rates, counters and its feed's ceiling go to its own record; what both share (FAUCET's
    recording, frames, host memory) goes to both."""
    from suites.switch.pipeline import VETH_KINDS
    feed = VETH_KINDS[kind]
    own = (f"{KIND_KEYS[kind]}_{feed}_", f"feed_{feed}_", f"{KIND_KEYS[kind]}_mpps",
           f"{KIND_KEYS[kind]}_install_s", f"{KIND_KEYS[kind]}_cache_hit_ratio")
    mine = {k: v for k, v in metrics.items() if k.startswith(own)}
    rest = {k: v for k, v in metrics.items() if k not in mine}
    other_kinds = tuple(f"{v}_" for k, v in KIND_KEYS.items() if k != kind) + \
        ("speedup_", "feed_")
    shared = {k: v for k, v in rest.items() if not k.startswith(other_kinds)}
    return rest, {**shared, **mine}


def cache_served(metrics: dict, prefix: str) -> str:
    """Which cache classified a run's frames, in words (pure): ofbench's pipeline cache and
    flow cache (their hits over the frames received), OVS's EMC, SMC and megaflow classifier
    (pmd-stats-show over the frames its datapath received); "" when not measured."""
    def pct(k):
        v = metrics.get(f"{prefix}_{k}_share")
        return None if v is None else f"{100 * v:.1f} %"
    if f"{prefix}_pipe_cache_hits" in metrics:
        parts = [f"pipeline cache {pct('pipe_cache_hits') or '?'} of frames "
                 f"({metrics[f'{prefix}_pipe_cache_hits']} hits, "
                 f"{metrics.get(f'{prefix}_pipe_cache_stores', '?')} stores)"]
        if metrics.get(f"{prefix}_cache_hits"):
            parts.append(f"flow cache {pct('cache_hits')} ({metrics[f'{prefix}_cache_hits']} "
                         f"hits, {metrics.get(f'{prefix}_cache_misses', '?')} misses)")
        return "; ".join(parts)
    got = [f"{name} {pct(k)}" for k, name in (("emc_hits", "EMC"), ("smc_hits", "SMC"),
                                               ("megaflow_hits", "megaflow"))
           if pct(k) is not None]
    if got:
        ups = metrics.get(f"{prefix}_upcalls")
        return ", ".join(got) + (f", {ups} upcalls" if ups is not None else "")
    return ""


VETH_BOUND = 0.9  # a rate at this share of the veth feed's ceiling or more is the port's


def veth_bound(metrics: dict, prefix: str = "ovs_veth") -> str:
    """What bounds a veth-fed run's rate, in words (pure): the veth port kind when the rate
    reaches VETH_BOUND of the feed's ceiling (a busy DPDK af_packet reader with no switch
    work, feed_veth_ceiling_mpps), else the switch's own core (its CPU share beside it; OVS
    netdev's core also does its af_packet socket I/O). Either way not comparable with the
    DPDK-port rates."""
    rate, ceiling = metrics.get(f"{prefix}_mpps"), metrics.get("feed_veth_ceiling_mpps")
    tail = "; not comparable with the DPDK-port records (another port kind)"
    if not rate or not ceiling:
        return "the veth port kind (ceiling not measured)" + tail
    share = metrics.get(f"{prefix}_cpu_share")
    if rate >= VETH_BOUND * ceiling:
        return (f"the veth port kind: {rate} Mpps is {rate / ceiling:.0%} of what a busy DPDK "
                f"af_packet reader with no switch work gets out of it ({ceiling} Mpps)" + tail)
    return (f"the switch's core, not the port: {rate} Mpps is {rate / ceiling:.0%} of the veth "
            f"ceiling ({ceiling} Mpps, a busy DPDK af_packet reader with no switch work)"
            + (f", its forwarding thread at CPU share {share}" if share is not None else "")
            + " (OVS netdev's core also does its af_packet socket I/O)" + tail)


def kind_rows(metrics: dict, ovs_metrics: dict | None, not_run: dict[str, str]) -> list[dict]:
    """The FAUCET pipeline table's rows, one per switch kind and feed (pure): rate (median of
    the rounds' medians) beside the best window, the feed's ceiling, which cache served, the
    port kind and generator; a kind that could not run says why."""
    from suites.switch.pipeline import VETH_FEED
    rows = []
    feeds = (("ofbench", "replay_copy", "replay (frames copied into mbufs)", "replay-copy"),
             ("ofbench", "pcap", "DPDK ring: net_pcap in, net_null out", "pcap"),
             ("ovs-dpdk", "pcap", "DPDK ring: net_pcap in, net_null out", "pcap"),
             ("ovs", VETH_FEED, "veth (kernel), OVS's af_packet socket", VETH_FEED))
    for kind, feed, port_kind, ceiling in feeds:
        src = ovs_metrics if kind == "ovs" else metrics
        k = f"{KIND_KEYS[kind]}_{feed}"
        if kind in not_run:
            if not any(r["switch"] == kind for r in rows):
                rows.append({"switch": kind, "port_kind": "-", "mpps": None, "best_mpps": None,
                             "feed_ceiling_mpps": None, "cache_served": "",
                             "note": f"not run: {not_run[kind]}"})
            continue
        if not src or f"{k}_mpps" not in src:
            continue
        note = f"bounded by {veth_bound(src, k)}" if kind == "ovs" else ""
        rows.append({"switch": kind, "port_kind": port_kind, "mpps": src[f"{k}_mpps"],
                     "best_mpps": src.get(f"{k}_best_mpps"),
                     "feed_ceiling_mpps": src.get(f"feed_{ceiling.replace('-', '_')}_ceiling_mpps"),
                     "cache_served": cache_served(src, k), "note": note})
    return rows
