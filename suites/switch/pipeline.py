"""Pipeline benchmark: 64-byte packets through ONE switch lcore with 100k wildcard flows of
mixed masks installed by FLOW_MOD; ofbench's ofswitch against OVS-DPDK with the same flows and
the same I/O, in the same run.

I/O, identical for both switches: port 1 = DPDK's pcap PMD replaying (``infinite_rx=1``, from
memory) a pcap of distinct 64-byte UDP frames that each match some flow; port 2 = net_null
(discards). So no generator competes for the 2 cores, and what is measured is rx + pipeline +
tx of the switch itself. Rate = growth of port 2's tx_packets (OpenFlow port stats) over
``duration_s`` after a warm-up.

Flows (table 0, all output:2), four mask shapes, 25 % each, random priorities:
  ipv4_dst/32 + udp_dst;  ipv4_dst/24;  ipv4_src/16 + ipv4_dst/16;  eth_dst/24 (OUI) + ipv4_dst/28

The pure parts (flows, frames, pcap bytes) are functions with unit tests; ``run_pipeline_bench``
does the I/O. CLI: ``python -m suites.switch.pipeline [--flows N] [--kinds ofbench,ovs-dpdk]``.
"""
from __future__ import annotations

import argparse
import json
import itertools
import os
import random
import re
import statistics
import subprocess
import struct
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from scapy.utils import checksum  # the internet checksum (RFC 1071)

from dut.switch.launcher import DEFAULT_LOOKUP, LOOKUPS as SWITCH_LOOKUPS
import openflow as w
from openflow.wire import (action_pop_mpls, action_pop_vlan, action_push_mpls,  # noqa: F401
                           action_push_vlan, action_set_field, parse_flow_packets)
from traces.pcap import pcap_bytes

SHAPES = ("dst32_udp", "dst24", "src16_dst16", "oui_dst28")


@dataclass(frozen=True)
class BenchFlow:
    shape: str
    priority: int
    ipv4_src: int
    ipv4_dst: int
    udp_dst: int
    eth_dst: bytes


def make_flows(n: int, seed: int = 1) -> list[BenchFlow]:
    rng = random.Random(seed)
    flows = []
    for i in range(n):
        shape = SHAPES[i % 4]
        flows.append(BenchFlow(shape, rng.randint(1, 60000), rng.getrandbits(32) & 0xFFFF0000,
                               rng.getrandbits(32), rng.randint(1, 65535),
                               bytes([0x02, rng.randrange(256), rng.randrange(256)]) + b"\0\0\0"))
    return flows


def _mask32(bits: int) -> int:
    return (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF if bits else 0


def flow_match(f: BenchFlow) -> bytes:
    et = w.oxm(5, b"\x08\x00")
    ip4 = lambda field, v, bits: w.oxm(field, struct.pack("!I", v & _mask32(bits)),  # noqa: E731
                                      None if bits == 32 else struct.pack("!I", _mask32(bits)))
    if f.shape == "dst32_udp":
        return w.match(et, w.oxm(10, b"\x11"), ip4(12, f.ipv4_dst, 32),
                       w.oxm(16, struct.pack("!H", f.udp_dst)))
    if f.shape == "dst24":
        return w.match(et, ip4(12, f.ipv4_dst, 24))
    if f.shape == "src16_dst16":
        return w.match(et, ip4(11, f.ipv4_src, 16), ip4(12, f.ipv4_dst, 16))
    return w.match(w.oxm(3, f.eth_dst, b"\xff\xff\xff\0\0\0"), et, ip4(12, f.ipv4_dst, 28))


def flow_mod_msg(f: BenchFlow, out_port: int = 2, xid: int = 0) -> bytes:
    return w.flow_mod(priority=f.priority, match_=flow_match(f),
                      instructions=w.apply_actions(w.action_output(out_port, 0)), xid=xid)


def frame_for(f: BenchFlow, rng: random.Random, tag: bytes = b"") -> bytes:
    """A 60-byte (64 with FCS) Ethernet/IPv4/UDP frame that matches flow f. ``tag`` (an
    802.1Q tag or an MPLS label stack entry with its ethertype, 4k+2 bytes... see
    ``vlan_tag`` / ``mpls_tag``) goes after the MAC addresses; the UDP payload shrinks by as
    much, so the frame stays 60 bytes."""
    eth_dst = f.eth_dst[:3] + bytes(rng.randrange(256) for _ in range(3))
    dst = f.ipv4_dst
    if f.shape == "dst24":
        dst = (dst & 0xFFFFFF00) | rng.randrange(256)
    elif f.shape == "src16_dst16":
        dst = (dst & 0xFFFF0000) | rng.randrange(65536)
    elif f.shape == "oui_dst28":
        dst = (dst & 0xFFFFFFF0) | rng.randrange(16)
    src = f.ipv4_src | rng.randrange(65536)
    udp_dst = f.udp_dst if f.shape == "dst32_udp" else rng.randint(1, 65535)
    payload = bytes(18 - (len(tag) - 2 if tag else 0))
    udp = struct.pack("!HHHH", rng.randint(1024, 65535), udp_dst, 8 + len(payload), 0) + payload
    ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0, src, dst))
    struct.pack_into("!H", ip, 10, checksum(bytes(ip)))
    return eth_dst + b"\x02\x00\x00\x00\x00\x01" + (tag or b"\x08\x00") + bytes(ip) + udp


def vlan_tag(vid: int) -> bytes:
    """802.1Q TPID + TCI (priority 0) + the inner ethertype (IPv4): 6 bytes."""
    return struct.pack("!HHH", 0x8100, vid & 0xFFF, 0x0800)


def mpls_tag(label: int, ttl: int = 64) -> bytes:
    """MPLS unicast ethertype + one label stack entry (bottom of stack) over IPv4: 6 bytes."""
    return struct.pack("!HI", 0x8847, (label & 0xFFFFF) << 12 | 1 << 8 | ttl)


def rss_split(frames: list[bytes], n: int) -> list[list[bytes]]:
    """The frames as a NIC's RSS would hand them to ``n`` queues: each IPv4 frame by a hash of
    its 5-tuple (protocol, addresses, ports), anything else by a hash of the whole frame; a
    flow's frames all go to one queue, in their order. ValueError if a queue gets none."""
    parts: list[list[bytes]] = [[] for _ in range(n)]
    for fr in frames:
        if len(fr) >= 38 and fr[12:14] == b"\x08\x00":
            key = fr[23:24] + fr[26:38]
        else:
            key = fr
        parts[zlib.crc32(key) % n].append(fr)
    if any(not p for p in parts):
        raise ValueError(f"rss_split: {len(frames)} frames leave a queue of {n} empty")
    return parts


def make_pcap(path: Path, flows: list[BenchFlow], n_frames: int, seed: int = 2) -> None:
    rng = random.Random(seed)
    frames = [frame_for(rng.choice(flows), rng) for _ in range(n_frames)]
    path.write_bytes(pcap_bytes(frames))


def zipf_sequence(n_items: int, length: int, s: float, seed: int = 3) -> list[int]:
    """`length` draws of item indexes 0..n_items-1 with P(rank k) ~ 1 / k**s (rank 1 = item 0;
    the items are shuffled frames, so popularity is not tied to a flow's shape)."""
    rng = random.Random(seed)
    weights = [1.0 / (k ** s) for k in range(1, n_items + 1)]
    return rng.choices(range(n_items), weights=weights, k=length)


VLAN_VID = 100  # the popvlan workload's frames carry this VLAN


N_MD_FLOWS = 1024  # table 1 of the multi-table workload: one flow per metadata value



REWRITING_KINDS = ("setfield", "pushvlan", "pushmpls", "popvlan", "popmpls")


@dataclass(frozen=True)
class Workload:
    """What one pipeline record measures: the flows' instructions (``kind``) and the frame mix.

    kind: ``output`` (table 0, output:2), ``multitable`` (table 0 writes metadata = i % 1024
    and goes to table 1, whose 1024 flows match that metadata and output:2: two lookups per
    packet), ``setfield`` (set ipv4_dst and ip_dscp, so the IPv4 checksum is fixed, then
    output:2), ``pushvlan`` (push 802.1Q, set vlan_vid 100, output:2), ``pushmpls`` (push an
    MPLS label stack entry, set mpls_label to the flow's index, output:2), ``popvlan`` (frames
    tagged with VLAN 100; the flows match it (vlan_vid = 100 beside their own fields), pop the
    tag, output:2), ``popmpls`` (frames carrying one MPLS label over IPv4; flow i matches
    eth_type 0x8847 + mpls_label i, pops the label (ethertype IPv4), output:2: one exact-match
    shape, as an LSR's label table).
    mix: ``uniform`` (``n_frames`` distinct frames, each once per pass, each matching a random
    flow) or ``zipf`` (``n_frames`` frames drawn with Zipf exponent ``zipf_s`` from
    ``n_distinct`` distinct frames). Rewriting kinds need a feed that copies (replay-copy)."""
    name: str
    kind: str = "output"
    mix: str = "uniform"
    n_frames: int = 8192
    n_distinct: int = 0
    zipf_s: float = 1.0
    count_flows: bool = False  # dump the flow tables after the windows (flows, flows hit)

    @property
    def rewrites(self) -> bool:
        return self.kind in REWRITING_KINDS

    def actions(self, i: int = 0) -> bytes:
        """The apply-actions of flow ``i`` (only push MPLS differs per flow: its label)."""
        out = w.action_output(2, 0)
        if self.kind == "setfield":
            # IPv4 fields only: 3 of the 4 flow shapes do not match ip_proto, so a UDP port
            # would be inconsistent with their match (OFPBAC_MATCH_INCONSISTENT)
            return (action_set_field(w.oxm(12, bytes([198, 18, 0, 1])))
                    + action_set_field(w.oxm(8, bytes([46]))) + out)
        if self.kind == "pushvlan":
            return action_push_vlan() + action_set_field(w.oxm(6, struct.pack("!H", 0x1000 | 100))) + out
        if self.kind == "pushmpls":
            return (action_push_mpls()
                    + action_set_field(w.oxm(34, struct.pack("!I", i & 0xFFFFF))) + out)
        if self.kind == "popvlan":
            return action_pop_vlan() + out
        if self.kind == "popmpls":
            return action_pop_mpls() + out
        return out

    def _match(self, i: int, f: BenchFlow) -> bytes:
        if self.kind == "popmpls":
            return w.match(w.oxm(5, b"\x88\x47"), w.oxm(34, struct.pack("!I", i)))
        m = flow_match(f)
        if self.kind == "popvlan":  # + vlan_vid = 100 (OFPVID_PRESENT): pop_vlan's prerequisite
            vid = w.oxm(6, struct.pack("!H", 0x1000 | VLAN_VID))
            m = w.match(vid, *w.match_oxms(m))
        return m

    def flow_mods(self, flows: list[BenchFlow]):
        if self.kind == "multitable":
            for k in range(N_MD_FLOWS):
                yield w.flow_mod(table=1, priority=100, match_=w.match(w.oxm(2, struct.pack("!Q", k))),
                                 instructions=w.apply_actions(w.action_output(2, 0)), xid=50 + k)
            for i, f in enumerate(flows):
                yield w.flow_mod(priority=f.priority, match_=flow_match(f),
                                 instructions=w.write_metadata(i % N_MD_FLOWS) + w.goto_table(1),
                                 xid=i + 100)
            return
        acts = w.apply_actions(self.actions())
        for i, f in enumerate(flows):
            ins = w.apply_actions(self.actions(i)) if self.kind == "pushmpls" else acts
            yield w.flow_mod(priority=f.priority, match_=self._match(i, f), instructions=ins,
                             xid=i + 100)

    def frames(self, flows: list[BenchFlow], seed: int = 2) -> list[bytes]:
        rng = random.Random(seed)

        def one() -> bytes:
            i = rng.randrange(len(flows))
            tag = {"popvlan": vlan_tag(VLAN_VID), "popmpls": mpls_tag(i)}.get(self.kind, b"")
            return frame_for(flows[i], rng, tag)
        if self.mix == "uniform":
            return [one() for _ in range(self.n_frames)]
        distinct = [one() for _ in range(self.n_distinct)]
        return [distinct[i] for i in zipf_sequence(self.n_distinct, self.n_frames, self.zipf_s)]


# the workloads of issue 16 part 2 (record name -> workload); the first two are part 1's
WORKLOADS = {
    "pipeline_64b_100k_flows": Workload("pipeline_64b_100k_flows"),
    "pipeline_64b_100k_flows_24k_frames": Workload("pipeline_64b_100k_flows_24k_frames",
                                                   n_frames=24576),
    "pipeline_64b_100k_flows_distinct": Workload("pipeline_64b_100k_flows_distinct",
                                                 n_frames=100_000),
    "pipeline_64b_100k_flows_zipf1.0": Workload("pipeline_64b_100k_flows_zipf1.0", mix="zipf",
                                               n_frames=131072, n_distinct=100_000, zipf_s=1.0),
    "pipeline_64b_100k_flows_zipf0.8": Workload("pipeline_64b_100k_flows_zipf0.8", mix="zipf",
                                               n_frames=131072, n_distinct=100_000, zipf_s=0.8),
    "pipeline_64b_100k_flows_multitable": Workload("pipeline_64b_100k_flows_multitable",
                                                   kind="multitable"),
    "pipeline_64b_100k_flows_setfield": Workload("pipeline_64b_100k_flows_setfield",
                                                 kind="setfield"),
    "pipeline_64b_100k_flows_pushvlan": Workload("pipeline_64b_100k_flows_pushvlan",
                                                 kind="pushvlan"),
    "pipeline_64b_100k_flows_popvlan": Workload("pipeline_64b_100k_flows_popvlan",
                                                kind="popvlan"),
    "pipeline_64b_100k_flows_pushmpls": Workload("pipeline_64b_100k_flows_pushmpls",
                                                 kind="pushmpls"),
    "pipeline_64b_100k_flows_popmpls": Workload("pipeline_64b_100k_flows_popmpls",
                                                kind="popmpls"),
}


# ---- I/O ------------------------------------------------------------------------------------
def _install(s: w.Session, flows: list[BenchFlow], batch: int = 2000,
             workload: "Workload | None" = None) -> float:
    t0 = time.monotonic()
    buf = []
    msgs = workload.flow_mods(flows) if workload else \
        (flow_mod_msg(f, xid=i + 100) for i, f in enumerate(flows))
    for m in msgs:
        buf.append(m)
        if len(buf) >= batch:
            s.send(b"".join(buf))
            buf = []
    if buf:
        s.send(b"".join(buf))
    if s.wait_for(w.BARRIER_REPLY, None, 0) is None:
        s.send(w.msg(w.BARRIER_REQUEST, xid=0xB0B0))
        if s.wait_for(w.BARRIER_REPLY, 0xB0B0, 600) is None:
            raise TimeoutError("no barrier reply after installing flows")
    errors = [m for m in s.msgs if m[0] == w.ERROR]
    if errors:
        raise RuntimeError(f"switch refused {len(errors)} flow-mods, first error "
                           f"{errors[0][2][:4].hex()}")
    return time.monotonic() - t0


def cache_hit_ratio(before: dict | None, after: dict | None) -> float | None:
    """Flow-cache hit ratio between two ofswitch stats documents (None if unknown)."""
    if not before or not after:
        return None
    hits = after.get("cache_hits", 0) - before.get("cache_hits", 0)
    misses = after.get("cache_misses", 0) - before.get("cache_misses", 0)
    return round(hits / (hits + misses), 4) if hits + misses > 0 else None


def _measure(s: w.Session, port: int, warmup_s: float, duration_s: float,
             during=None) -> float:
    """Mpps on `port` over duration_s after warmup_s; during(duration_s) runs (e.g. a
    profiler) instead of the plain sleep when given."""
    time.sleep(warmup_s)
    a = s.port_stats(0x1001)[port]["tx_packets"]
    t0 = time.monotonic()
    if during:
        during(duration_s)
    else:
        time.sleep(duration_s)
    b = s.port_stats(0x1002)[port]["tx_packets"]
    return (b - a) / (time.monotonic() - t0) / 1e6


def _perf_during(pid: int, out: str):
    """OFBENCH_BENCH_PERF=<file>: `perf record -g` of the switch process while measuring."""
    import subprocess

    def run(duration_s: float) -> None:
        subprocess.run(["perf", "record", "-g", "-p", str(pid), "-o", out, "--", "sleep",
                        str(duration_s)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
    return run


def _accept(listener, timeout_s: float = 60) -> w.Session:
    """The switch's connection on a lab host's listener (drivers/lab: listen_here)."""
    s = w.Session(listener.accept(timeout_s))
    s.handshake()
    s.send(w.msg(w.FEATURES_REQUEST, xid=2))
    s.wait_for(6, 2)
    return s


FEEDS = ("replay", "replay-copy", "replay-stream", "pcap")
# OVS netdev (kind ``ovs``) takes no DPDK port: its feed is a veth pair in a namespace of the
# run, a feeder (dut/switch/bench/feed_ceiling: the pcap's frames copied into mbufs, sent with
# DPDK's net_af_packet) writing into one end, OVS reading the other with its own af_packet
# socket; port 2 is another veth whose far end nobody reads (the kernel drops what arrives).
# Not the DPDK feeds' I/O: the kernel's veth and socket path bounds the rate (veth_ceiling).
VETH_FEED = "veth"
VETH_KINDS = {"ovs": VETH_FEED}  # kinds that take no DPDK port -> their feed
# port 2: discards what it is given and receives nothing (a plain net_null hands out 32 empty
# frames per rx poll, which a switch polling every port then parses and drops: until
# 2026-11-24 both switches of this benchmark spent part of their core on that)
SINK = "net_null0,no-rx=1"


def rx_spec(feed: str, pcap: Path) -> str:
    """Port 1's spec for a feed: ``replay`` = the switch's replay port (dut/switch/src/replay_port.c) handing out the pcap's frames from
    memory by reference (no copy; ofswitch only), ``replay-copy`` = the same frames copied into
    fresh mbufs (what a NIC's DMA costs; for rewriting workloads), ``replay-stream`` = copied into
    fresh mbufs from one packed array read in order (no per-frame template lines in the working
    set, as a NIC's recycled mbufs and streamed frames), ``pcap`` = DPDK's net_pcap
    ``infinite_rx`` (copies; loads into any DPDK application, so OVS-DPDK gets it too)."""
    if feed == "replay":
        return f"replay:{pcap}"
    if feed == "replay-copy":
        return f"replay:{pcap},copy=1"
    if feed == "replay-stream":
        return f"replay:{pcap},copy=stream"
    if feed == "pcap":
        return f"net_pcap0,rx_pcap={pcap},infinite_rx=1"
    raise ValueError(f"feed {feed!r}: expected one of {FEEDS}")


def feed_ceiling(lab, feed: str, pcap: Path, *, lcore: int, seconds: float = 2.0,
                 tag: str = "bench", n_frames: int = 8192) -> float:
    """Mpps the feed alone delivers to net_null on `lcore` (dut/switch/bench/feed_ceiling: rx
    burst -> tx burst, no switch work): the rate above which a switch fed by it cannot go.
    ``lab``: any lab host (this box's local lab, or the switch host of a remote one)."""
    spec = rx_spec(feed, pcap)
    vdevs = ["--vdev", "net_null9"]
    if feed == "pcap":
        vdevs += ["--vdev", spec]
        spec = "net_pcap0"
    argv = [str(lab.build_path("dut/switch/bench/feed_ceiling")),
            *lab.eal_args(f"{tag}-ceiling", mem_mb=1024, lcores=str(lcore)), *vdevs, "--",
            "--rx", spec, "--tx", "net_null9", "--seconds", str(seconds),
            "--mbufs", str(n_frames + 32768)]
    out = lab.run(argv, timeout=60 + seconds)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1]
    return float(json.loads(line)["mpps"])


class UnixListener:
    """A listener on a Unix socket (LocalListener's shape: ``accept(timeout_s)``, ``close``):
    the controller of an OVS that runs in a namespace of the run (its loopback is not this
    one's), reached by path (OVS's ``unix:`` controller target)."""

    def __init__(self, path: Path):
        import socket
        self.path = Path(path)
        self.path.unlink(missing_ok=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen(4)

    def accept(self, timeout_s: float = 60.0):
        import socket
        self.sock.settimeout(timeout_s)
        try:
            conn, _ = self.sock.accept()
        except socket.timeout:
            raise TimeoutError(f"nothing connected to {self.path} in {timeout_s:.0f} s") from None
        conn.settimeout(None)
        return conn

    def close(self) -> None:
        self.sock.close()
        self.path.unlink(missing_ok=True)


def other_core(lcore: int) -> int:
    """The core a feeder takes beside the switch's ``lcore`` (pure on the box's core count)."""
    n = os.cpu_count() or 1
    return (lcore + 1) % n if n > 1 else lcore


class VethRig:
    """The veth feed of a switch that takes no DPDK port (VETH_FEED): namespace ``ns`` with
    veth pairs g0-w0 (feed) and g1-w1 (sink), the switch given w0 and w1; ``feed()`` starts the
    feeder (feed_ceiling: the pcap's frames copied into mbufs, out through net_af_packet on g0,
    qdisc bypassed) on ``feed_lcore`` until stopped; ``close()`` stops it and deletes the
    namespace (and with it the veths)."""

    def __init__(self, lab, tag: str, pcap: Path, *, feed_lcore: int, n_frames: int):
        self.lab, self.tag, self.pcap = lab, tag, pcap
        self.feed_lcore, self.n_frames = feed_lcore, n_frames
        self.procs: list = []
        short = tag.replace("bench", "b")  # interface names: 15 characters at most
        self.ns = lab.add_netns(f"{short}v")
        try:
            # no IPv6 on the wires: no router solicitations or MLD reports among the frames
            for k in ("all", "default"):
                lab.netns_exec(self.ns, ["sysctl", "-qw", f"net.ipv6.conf.{k}.disable_ipv6=1"],
                               check=False)
            self.g0, self.w0, self.g1, self.w1 = (lab.ifname(f"{short}{x}")
                                                  for x in ("g0", "w0", "g1", "w1"))
            lab.add_veth(self.ns, self.g0, self.ns, self.w0)
            lab.add_veth(self.ns, self.g1, self.ns, self.w1)
        except BaseException:
            self.close()
            raise

    def start_reader(self, name: str, iface: str, lcore: int, seconds: float):
        """feed_ceiling reading ``iface`` with net_af_packet into net_null on ``lcore`` for
        ``seconds`` (what a busy DPDK poller gets out of this veth with no switch work)."""
        argv = [str(self.lab.build_path("dut/switch/bench/feed_ceiling")),
                *self.lab.eal_args(f"{self.tag}-{name}", mem_mb=256, lcores=str(lcore)),
                "--vdev", f"net_af_packet0,iface={iface},qdisc_bypass=1",
                "--vdev", "net_null9", "--", "--rx", "net_af_packet0", "--tx", "net_null9",
                "--seconds", str(seconds)]
        p = self.lab.supervisor.start(f"{self.tag}-{name}", argv, netns=self.ns)
        self.procs.append(p)
        return p

    def feed(self):
        argv = [str(self.lab.build_path("dut/switch/bench/feed_ceiling")),
                *self.lab.eal_args(f"{self.tag}-vfeed", mem_mb=512, lcores=str(self.feed_lcore)),
                "--vdev", f"net_af_packet0,iface={self.g0},qdisc_bypass=1", "--",
                "--rx", f"replay:{self.pcap},copy=1", "--tx", "net_af_packet0",
                "--seconds", "3600", "--mbufs", str(max(self.n_frames + 32768, 40960))]
        p = self.lab.supervisor.start(f"{self.tag}-vfeed", argv, netns=self.ns)
        self.procs.append(p)
        return p

    def link_counters(self, ifname: str) -> dict[str, int]:
        """The kernel's counters of ``ifname`` (rx/tx packets and drops)."""
        out = self.lab.netns_exec(self.ns, ["cat"] + [
            f"/sys/class/net/{ifname}/statistics/{k}" for k in VETH_COUNTERS]).stdout.split()
        return dict(zip(VETH_COUNTERS, map(int, out)))

    def close(self) -> None:
        for p in reversed(self.procs):
            try:
                self.lab.supervisor.stop(p)
            except Exception:  # noqa: BLE001 - the namespace goes next either way
                pass
        self.procs.clear()
        self.lab.del_netns(self.ns)


VETH_COUNTERS = ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped")


def _json_line(log: Path) -> dict | None:
    """The last JSON line a feed_ceiling process printed into its log, None if none."""
    try:
        lines = [ln for ln in Path(log).read_text(errors="replace").splitlines()
                 if ln.startswith("{")]
        return json.loads(lines[-1]) if lines else None
    except (OSError, ValueError):
        return None


def veth_ceiling(lab, pcap: Path, *, lcore: int, seconds: float = 2.0, tag: str = "bench",
                 n_frames: int = 8192) -> float:
    """Mpps a busy DPDK af_packet reader on ``lcore`` gets out of the veth feed (the feeder on
    the other core, as for the switch) with no switch work: the rate above which a switch on
    this port kind cannot go here (the veth feed's feed_ceiling)."""
    rig = VethRig(lab, f"{tag}c", pcap, feed_lcore=other_core(lcore), n_frames=n_frames)
    try:
        rig.feed()
        time.sleep(0.5)
        p = rig.start_reader("vread", rig.w0, lcore, seconds)
        p.wait(timeout_s=seconds + 30)
        got = _json_line(p.log_path)
        if got is None:
            raise RuntimeError(f"veth ceiling: the reader printed no result ({p.log_path})")
        return float(got["mpps"])
    finally:
        rig.close()


MEMCHASE_MIB = (1, 4, 8, 16)  # around the frame sets' working sets (8192 frames ~3 MiB, 24576 ~9)


def memory_latency(lab, *, lcore: int, sizes_mib=MEMCHASE_MIB, seconds_per_size: float = 0.5
                   ) -> dict[int, float]:
    """ns per dependent load over a working set of each size, on ``lcore`` of the switch host
    (drivers/probes/memchase): where the host's cache ends for this run. A VM's share of a
    shared L3 moves with its neighbours; a frame set whose working set lies past it runs at
    DRAM latency."""
    argv = [str(lab.build_path("drivers/probes/memchase")), "--cpu", str(lcore),
            "--mib", ",".join(str(m) for m in sizes_mib), "--reps", "3",
            "--loads", str(int(seconds_per_size / 3 / 100e-9))]
    out = lab.run(argv, timeout=60)
    data = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1])
    return {int(s["mib"]): float(s["ns_per_load"]) for s in data["sizes"]}


def _box_busy_ns() -> int | None:
    """Busy CPU time of the whole box so far (ns; /proc/stat, steal left out), None if
    unreadable."""
    from drivers.vmwire.ctxstats import CLK_TCK, parse_proc_stat, parse_proc_stat_steal
    try:
        text = open("/proc/stat").read()
    except OSError:
        return None
    _, busy, _ = parse_proc_stat(text)
    return (busy - parse_proc_stat_steal(text)) * 1_000_000_000 // CLK_TCK


def _busy_threads(kind: str, pid: int | None = None, marker: str | None = None) -> list[str]:
    """schedstat files of the switch's forwarding threads on this box: ofswitch's main thread
    (worker 0), or the pmd threads of the ovs-vswitchd whose command line names `marker`."""
    if kind == "ofbench" and pid:
        out = [f"/proc/{pid}/task/{pid}/schedstat"]  # worker 0 runs on the main thread
        for t in Path(f"/proc/{pid}/task").iterdir():   # and the others on EAL lcore threads
            try:
                if t.name != str(pid) and (t / "comm").read_text().startswith("lcore-worker"):
                    out.append(str(t / "schedstat"))
            except OSError:
                continue
        return out
    if kind == "ovs":  # OVS netdev: the main thread polls the kernel ports (no pmd thread)
        pid = _ovs_vswitchd_pid(marker)
        return [f"/proc/{pid}/task/{pid}/schedstat"] if pid else []
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
            if b"ovs-vswitchd" not in cmd or (marker and marker.encode() not in cmd):
                continue
            for t in (d / "task").iterdir():
                if (t / "comm").read_text().startswith("pmd"):
                    out.append(str(t / "schedstat"))
        except OSError:
            continue
    return out


def _ovs_vswitchd_pid(marker: str | None) -> int | None:
    """The pid of this box's ovs-vswitchd whose command line names ``marker`` (its state dir)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"ovs-vswitchd") and \
                (not marker or any(marker.encode() in a for a in cmd)):
            return int(d.name)
    return None


def _remote_cpu_clock(host, pid: int):
    """() -> (CPU ns so far, thread count) of ofswitch's forwarding threads on a lab host
    (worker 0 = the main thread, the others EAL lcore-worker threads), read with one SSH
    command; (None, 0) if the host does not answer. ``pid`` is the lab's process: the shell
    that runs ofswitch as its child (drivers/lab/remote.py RemoteHost.start)."""
    script = (f"p={pid}; c=$(cat /proc/$p/task/$p/children 2>/dev/null); "
              f"[ -n \"$c\" ] && p=${{c%% *}}; "
              f"cat /proc/$p/task/$p/schedstat; for t in /proc/$p/task/*; do "
              f"[ \"$t\" = /proc/$p/task/$p ] && continue; "
              f"case $(cat $t/comm 2>/dev/null) in lcore-worker*) cat $t/schedstat;; esac; done")

    def read() -> tuple[int | None, int]:
        try:
            r = host.run(["sh", "-c", script], check=False, timeout=10)
            vals = [int(line.split()[0]) for line in r.stdout.splitlines() if line.split()]
        except (OSError, ValueError, subprocess.SubprocessError):
            return None, 0
        return (sum(vals), len(vals)) if vals else (None, 0)
    return read


def _cpu_ns(files: list[str]) -> int | None:
    """CPU time (ns) the threads have run so far (first field of schedstat), None if unknown."""
    try:
        return sum(int(Path(f).read_text().split()[0]) for f in files) if files else None
    except (OSError, ValueError):
        return None


_UPCALL_FLOWS = re.compile(r"flows\s*:\s*\(current (\d+)\)\s*\(avg (\d+)\)\s*\(max (\d+)\)"
                           r"\s*\(limit (\d+)\)")
_DUMP_MS = re.compile(r"dump duration\s*:\s*(\d+)ms")


def parse_pmd_stats(text: str, section: str = "pmd thread") -> dict[str, float]:
    """``ovs-appctl dpif-netdev/pmd-stats-show``, summed over the pmd threads (not the main
    thread): {"packets_received", "emc_hits", "smc_hits", "megaflow_hits",
    "miss_with_success_upcall", "miss_with_failed_upcall", "avg_datapath_passes_per_packet",
    ...}: counts are summed, averages ("avg ...") kept from the last pmd thread.
    ``section="main thread"``: the main thread's instead (OVS netdev without DPDK: it polls the
    kernel ports there, through the same EMC, SMC and megaflow classifier)."""
    out: dict[str, float] = {}
    in_pmd = False
    for line in text.splitlines():
        if not line.startswith(" "):
            in_pmd = line.startswith(section)
            continue
        if not in_pmd or ":" not in line:
            continue
        key, _, val = line.strip().partition(":")
        m = re.match(r"\s*([0-9.]+)", val)
        if not m:
            continue
        k = re.sub(r"[^a-z0-9]+", "_", key.strip().lower()).strip("_")
        v = float(m.group(1))
        out[k] = v if k.startswith("avg") else out.get(k, 0.0) + v
    return out


def parse_upcall_show(text: str) -> dict[str, int]:
    """``ovs-appctl upcall/show``: the datapath's megaflow count and limit (OVS lowers the
    limit when its revalidators' dump takes over 1.3 s, as on a busy box, and then evicts
    megaflows: every frame of an evicted one is an upcall), and the dump duration."""
    out: dict[str, int] = {}
    m = _UPCALL_FLOWS.search(text)
    if m:
        out.update(zip(("flows", "flows_avg", "flows_max", "flow_limit"), map(int, m.groups())))
    m = _DUMP_MS.search(text)
    if m:
        out["dump_duration_ms"] = int(m.group(1))
    return out


def flow_table_summary(bodies: list[bytes]) -> dict[int, dict[str, int]]:
    """OFPMP_FLOW reply bodies (after the multipart header) -> {table_id: {"flows": n,
    "hit": flows with packet_count > 0}} (pure): what a run had installed and which of its
    flows the frames really crossed."""
    out: dict[int, dict[str, int]] = {}
    for body in bodies:
        off = 0
        while off + 56 <= len(body):
            length, = struct.unpack_from("!H", body, off)
            if length < 56:
                break
            t = out.setdefault(body[off + 2], {"flows": 0, "hit": 0})
            t["flows"] += 1
            t["hit"] += struct.unpack_from("!Q", body, off + 32)[0] > 0
            off += length
    return dict(sorted(out.items()))


def _flow_tables(s: w.Session, xid: int = 0xF11) -> dict[int, dict[str, int]]:
    s.send(w.flow_stats_request(xid))
    bodies = []
    while True:
        m = s.wait_for(w.MULTIPART_REPLY, xid, 30)
        if m is None:
            raise TimeoutError("no flow stats reply")
        bodies.append(m[2][8:])
        if not struct.unpack_from("!H", m[2], 2)[0] & w.OFPMPF_REPLY_MORE:
            return flow_table_summary(bodies)


def ovs_datapath_state(ovs, section: str = "pmd thread") -> dict:
    """What OVS-DPDK's datapath did in the windows (after ``pmd-stats-clear``): where its
    frames were classified (EMC, SMC, megaflow, upcall), its megaflows against their limit,
    its pmd threads' cores; {} for whatever OVS does not answer. ``section``: whose counters
    (parse_pmd_stats; OVS netdev's are the main thread's)."""
    out: dict = {"pmd_section": section}
    for cmd, parse, key in (("dpif-netdev/pmd-stats-show",
                             lambda t: parse_pmd_stats(t, section), "pmd"),
                            ("upcall/show", parse_upcall_show, "upcall")):
        try:
            out[key] = parse(ovs.appctl(cmd))
        except Exception as e:  # noqa: BLE001 - a diagnostic: the rate still counts
            out[key] = {"error": str(e)[:200]}
    try:
        out["pmd_cores"] = sorted({int(c) for c in re.findall(
            r"pmd thread numa_id \d+ core_id (\d+)", ovs.appctl("dpif-netdev/pmd-rxq-show"))})
        out["emc_insert_inv_prob"] = ovs.vsctl("--if-exists", "get", "Open_vSwitch", ".",
                                               "other_config:emc-insert-inv-prob").strip() or "100"
        out["smc_enable"] = ovs.vsctl("--if-exists", "get", "Open_vSwitch", ".",
                                      "other_config:smc-enable").strip() or "false"
    except Exception as e:  # noqa: BLE001
        out["placement_error"] = str(e)[:200]
    try:  # one megaflow as the datapath holds it: its match and its (netted) actions
        flows = [ln for ln in ovs.appctl("dpctl/dump-flows").splitlines() if "actions:" in ln]
        if flows:
            out["megaflow_example"] = flows[0].strip()[:600]
    except Exception:  # noqa: BLE001
        pass
    return out


def datapath_metrics(prefix: str, state: dict) -> dict:
    """Record metrics from ovs_datapath_state: the share of received frames each stage
    classified, upcalls, megaflows and their limit, the revalidators' dump time."""
    m: dict = {}
    pmd = state.get("pmd") or {}
    rx = pmd.get("packets_received") or 0
    if rx:
        m[f"{prefix}_dp_packets_received"] = int(rx)
        for k in ("emc_hits", "smc_hits", "megaflow_hits", "miss_with_success_upcall",
                  "miss_with_failed_upcall"):
            if k in pmd:
                m[f"{prefix}_{k}"] = int(pmd[k])
                m[f"{prefix}_{k}_share"] = round(pmd[k] / rx, 4)
        m[f"{prefix}_upcalls"] = int(pmd.get("miss_with_success_upcall", 0)
                                     + pmd.get("miss_with_failed_upcall", 0))
    if "avg_datapath_passes_per_packet" in pmd:
        m[f"{prefix}_datapath_passes_per_packet"] = pmd["avg_datapath_passes_per_packet"]
    up = state.get("upcall") or {}
    for k in ("flows", "flow_limit", "dump_duration_ms"):
        if k in up:
            m[f"{prefix}_megaflows" if k == "flows" else f"{prefix}_{k}"] = up[k]
    return m


# (pipe_cache_prog_hits: hits that ran a compiled program; pipe_cache_sig_checks: entries read
# on a signature match that held another key; from the switches that report them)
SWITCH_CACHE_COUNTERS = ("pipe_cache_hits", "pipe_cache_stores", "pipe_cache_prog_hits",
                         "pipe_cache_sig_checks", "cache_hits", "cache_misses")


def switch_cache_counts(before: dict | None, after: dict | None) -> dict[str, int] | None:
    """What ofbench's caches did between two stats documents (pure): its pipeline cache's hits
    and stores (dut/switch/src/pipecache.h: one probe for every table of a multi-table way),
    its flow cache's hits and misses, and the frames its ports received (``rx_packets``), so a
    record says which cache served the frames. None without both documents."""
    if not before or not after:
        return None
    out = {k: int(after.get(k, 0) - before.get(k, 0)) for k in SWITCH_CACHE_COUNTERS
           if k in after}
    rx0 = {p["port"]: p.get("rx_packets", 0) for p in before.get("ports", [])}
    out["rx_packets"] = int(sum(p.get("rx_packets", 0) - rx0.get(p["port"], 0)
                                for p in after.get("ports", [])))
    return out


def veth_rates(before: dict, after: dict, feed_if: str, switch_if: str, seconds: float
               ) -> dict[str, float]:
    """The veth feed's kernel counters over the windows (pure): Mpps the feeder put on the
    wire (``offered_mpps``: the feed end's tx), Mpps that reached the switch's end (its rx) and
    what the kernel dropped there (the switch's socket full)."""
    if seconds <= 0:
        return {}

    def d(i, k):
        return after[i][k] - before[i][k]
    return {"offered_mpps": round(d(feed_if, "tx_packets") / seconds / 1e6, 4),
            "switch_port_rx_mpps": round(d(switch_if, "rx_packets") / seconds / 1e6, 4),
            "switch_port_rx_dropped": int(d(switch_if, "rx_dropped")),
            "feeder_tx_dropped": int(d(feed_if, "tx_dropped"))}


def run_one(lab, kind: str, flows: list[BenchFlow], pcap: Path, *, lcore: int,
            warmup_s: float = 3.0, duration_s: float = 5.0, lookup: str = DEFAULT_LOOKUP,
            tag: str = "bench", feed: str = "pcap", reps: int = 3,
            workload: Workload | None = None, n_frames: int = 8192, workers: int = 1,
            host=None, worker_pcaps: list[Path] | None = None) -> dict:
    """One switch fed by ``feed`` (rx_spec), ``reps`` measurement windows of ``duration_s``:
    median and best Mpps. ``tag`` names its processes and state (OVS db, stats socket):
    unique per run of the bench in a lab, since OVS state dirs outlive a stop. ``host``: the
    lab host the switch runs on (default this box; ``pcap`` is a path there); on a remote
    one the switch takes the profile's cores, and only ofbench runs."""
    host = host if host is not None else lab
    remote = host is not lab
    if kind == "ovs-dpdk" and feed != "pcap":
        raise ValueError(f"{kind}: only the pcap feed loads into it (replay is ofswitch's)")
    if kind in VETH_KINDS and feed != VETH_KINDS[kind]:
        raise ValueError(f"{kind}: takes no DPDK port; its feed is {VETH_KINDS[kind]!r}")
    if kind == "ofbench" and feed == VETH_FEED:
        raise ValueError("ofbench: the veth feed is for the kinds that take no DPDK port")
    if remote and kind != "ofbench":
        raise ValueError(f"{kind} on a lab host: only ofbench (OVS-DPDK runs on a local lab)")
    if workers > 1 and (kind != "ofbench" or not feed.startswith("replay")):
        raise ValueError("several workers: ofbench on a replay feed only (one feed port each)")
    # the switch on ``host`` connects to 127.0.0.1: a socket here on a local lab, the host's
    # loopback forwarded here over SSH on a remote one
    rig = None
    if kind in VETH_KINDS:  # OVS in the feed's namespace: its controller by a Unix socket
        listener = None     # (made in OVS's run directory, where it lets a controller be)
        port = None
        rx_devargs = None
    else:
        listener = host.listen_here()
        port = listener.port
        rx_devargs = rx_spec(feed, pcap)
    stop = None
    stats_of = lambda: None  # noqa: E731
    during = None
    try:
        if kind == "ofbench":
            from drivers.lab.switches import start_switch
            # worker w polls the ports whose index % workers == w (main.c): one feed port
            # per worker first (OpenFlow ports 1, 3, 4, ...), the sink (port 2) last
            # (worker_pcaps: worker k's share of the frames, as RSS would queue them)
            wp = worker_pcaps or [pcap] * workers
            feeds = [(1, {"devargs": rx_spec(feed, wp[0])})] + \
                [(2 + k, {"devargs": rx_spec(feed, wp[k])}) for k in range(1, workers)]
            # several workers, or a lab host: the lab's next cores / the profile's cores
            lcores = str(lcore) if workers == 1 and not remote else None
            handle = start_switch(lab, "ofbench", name=f"{tag}-ofswitch", ports=[], host=host,
                                  extra_ports=feeds + [(2, {"devargs": SINK})],
                                  controller=("127.0.0.1", port), dpid=0xB1, lookup=lookup,
                                  idle_sleep_us=0, lcores=lcores, mem_mb=2048, workers=workers,
                                  mbufs=max(n_frames + 32768, 40960) if feed == "pcap" else None)
            proc = handle.proc
            stop = handle.stop
            stats_of = handle.stats
            if os.environ.get("OFBENCH_BENCH_PERF") and not remote:
                during = _perf_during(proc.pid, os.environ["OFBENCH_BENCH_PERF"])
        elif kind == "ovs-dpdk":
            from drivers.lab.ovs import OvsInstance
            ovs = OvsInstance(lab, f"{tag}-ovsdpdk", dpdk=True, dpdk_mem_mb=2048,
                              dpdk_lcore=0, pmd_cpu_mask=hex(1 << lcore))
            stop = ovs.stop
            ovs.start()
            ovs.add_bridge("br0", dpid=0xB2, controller=f"tcp:127.0.0.1:{port}")
            ovs.add_port("br0", "p1", ofport=1, type="dpdk",
                         options={"dpdk-devargs": rx_devargs})
            ovs.add_port("br0", "p2", ofport=2, type="dpdk", options={"dpdk-devargs": SINK})
        elif kind == "ovs":
            from drivers.lab.ovs import OvsInstance
            rig = VethRig(lab, tag, pcap, feed_lcore=other_core(lcore), n_frames=n_frames)
            ovs = OvsInstance(lab, f"{tag}-ovs", netns=rig.ns)

            def stop():
                ovs.stop()
                rig.close()
            ovs.start()
            # its forwarding thread (the main thread polls the netdev ports) on the bench's
            # lcore, as the other switches' worker and OVS-DPDK's pmd thread are
            pid = _ovs_vswitchd_pid(str(ovs.dir))
            if pid:
                lab.run(["taskset", "-p", "-c", str(lcore), str(pid)], check=False)
            # ovs-vswitchd connects to a unix: controller only inside its run directory
            listener = UnixListener(Path(ovs.dir) / "bench-ctl.sock")
            ovs.add_bridge("br0", dpid=0xB3, controller=f"unix:{listener.path}")
            ovs.add_port("br0", rig.w0, ofport=1)
            ovs.add_port("br0", rig.w1, ofport=2)
        else:
            raise ValueError(f"bench: unsupported switch kind {kind!r}")
        s = _accept(listener)
        s.send(w.flow_mod(command=3, table=0xFF))
        install_s = _install(s, flows, workload=workload)
        if rig is not None:  # the feed starts once the flows are in, as a NIC's traffic would
            rig.feed()
            stats_of = lambda: {"veth": {i: rig.link_counters(i)  # noqa: E731
                                         for i in (rig.g0, rig.w0)}}
        time.sleep(warmup_s)
        st0 = stats_of()
        t_begin = time.monotonic_ns()
        # how much of its core the forwarding thread really got in each window: on a shared
        # box another busy thread on the same core halves the rate without any change here
        if remote:  # ofbench on a lab host: its threads' schedstat read there over SSH
            cpu_clock = _remote_cpu_clock(host, proc.pid)
        else:
            threads = _busy_threads(kind, proc.pid if kind == "ofbench" else None,
                                    None if kind == "ofbench" else str(ovs.dir))
            cpu_clock = lambda: (_cpu_ns(threads), len(threads))  # noqa: E731
        if kind in ("ovs-dpdk", "ovs"):  # count the windows' classification only
            ovs.appctl("dpif-netdev/pmd-stats-clear")
        runs, shares, others = [], [], []
        for i in range(reps):
            b0 = None if remote else _box_busy_ns()
            (c0, _), t0 = cpu_clock(), time.monotonic_ns()
            runs.append(_measure(s, 2, 0, duration_s, during if i == 0 else None))
            (c1, n_threads), t1 = cpu_clock(), time.monotonic_ns()
            b1 = None if remote else _box_busy_ns()
            if c0 is not None and c1 is not None:
                shares.append((c1 - c0) / (t1 - t0) / max(1, n_threads))
                if b0 is not None and b1 is not None:
                    # the rest of the box (the other core, the agent, this process): work
                    # there shares the L3 and memory bandwidth with the forwarding thread
                    others.append(max(0, (b1 - b0) - (c1 - c0)) / (t1 - t0))
        st1 = stats_of()
        t_end = time.monotonic_ns()
        dp_state = ovs_datapath_state(ovs, "pmd thread" if kind == "ovs-dpdk" else
                                      "main thread") if kind in ("ovs-dpdk", "ovs") else None
        # the tables as the switch holds them after the windows, and the flows crossed
        tables = _flow_tables(s) if workload is not None and workload.count_flows else None
        s.close()
        out = {"mpps": round(statistics.median(runs), 3), "mpps_best": round(max(runs), 3),
               "mpps_runs": [round(r, 3) for r in runs], "install_s": round(install_s, 2),
               "feed": feed}
        if others:
            out["other_load_cores"] = round(statistics.median(others), 3)
            out["other_load_cores_runs"] = [round(o, 3) for o in others]
        if len(shares) == len(runs):
            out["cpu_share"] = round(statistics.median(shares), 3)
            out["mpps_per_cpu"] = round(statistics.median(r / max(sh, 1e-3) for r, sh in
                                                          zip(runs, shares)), 3)
        hit = cache_hit_ratio(st0, st1)
        if hit is not None:
            out["cache_hit_ratio"] = hit
        if kind == "ofbench":
            counts = switch_cache_counts(st0, st1)
            if counts:
                out["switch_cache"] = counts
        if rig is not None and st0 and st1:
            out["veth"] = veth_rates(st0["veth"], st1["veth"], rig.g0, rig.w0,
                                     (t_end - t_begin) / 1e9)
        if dp_state is not None:
            out["datapath"] = dp_state
        if tables is not None:
            out["tables"] = tables
        return out
    finally:
        if listener is not None:
            listener.close()
        if stop:
            stop()


def _flow_packets(s: w.Session, xid: int = 0xF10) -> dict[tuple[int, bytes], int]:
    s.send(w.flow_stats_request(xid))
    bodies = []
    while True:
        m = s.wait_for(w.MULTIPART_REPLY, xid, 10)
        if m is None:
            raise TimeoutError("no flow stats reply")
        bodies.append(m[2][8:])
        if not struct.unpack_from("!H", m[2], 2)[0] & w.OFPMPF_REPLY_MORE:
            return bodies and parse_flow_packets(bodies)


def _counts_after(lab, rx_devargs: str, flows: list[BenchFlow], expect: int, tag: str,
                  lcore: int, send=None, before_stop=None) -> dict:
    """Start ofswitch with port 1 = rx_devargs and port 2 = net_null, install flows, call
    send() (when the feed is external), wait until port 2 sent `expect` frames or 20 s pass,
    and return its port counters and per-flow packet counts."""
    from drivers.lab.switches import start_switch
    listener = lab.listen_here()
    proc = start_switch(lab, "ofbench", name=f"{tag}-ofswitch", ports=[],
                        extra_ports=[(1, {"devargs": rx_devargs}), (2, {"devargs": SINK})],
                        controller=("127.0.0.1", listener.port), dpid=0xB3,
                        idle_sleep_us=0, lcores=str(lcore), mem_mb=512).proc
    try:
        s = _accept(listener)
        _install(s, flows)
        if send:
            send()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ps = s.port_stats()
            if ps[2]["tx_packets"] >= expect:
                break
            time.sleep(0.1)
        time.sleep(0.3)  # nothing more may come
        out = {"ports": s.port_stats(), "flows": _flow_packets(s)}
        s.close()
        if before_stop:  # e.g. the generator's counters, while its memif peer is still up
            out["generator"] = before_stop()
        return out
    finally:
        listener.close()
        lab.supervisor.stop(proc)


def feed_check(lab, n_flows: int = 1000, n_frames: int = 2000, loops: int = 3,
               pps: int = 20_000, lcore: int = 1) -> dict:
    """The replay feed against a real generator: the same frames, `loops` times, once from
    the replay port (``loops=K``, by reference and in stream mode) and once from softgen over memif at a low rate (`pps`) into a
    fresh ofswitch each; returns both switches' port counters and per-flow packet counts and
    softgen's own tx/unsent counts. Equal counters say the feed hands the switch exactly the
    pcap's frames, in order, as a generator would."""
    from drivers.softgen.driver import SoftgenPort, start_on_host, wait_links_up, Softgen
    tag = f"check{next(_RUNS)}"
    flows = make_flows(n_flows, seed=7)
    pcap = Path(lab.state_dir) / f"{tag}.pcap"
    rng = random.Random(8)
    frames = [frame_for(rng.choice(flows), rng) for _ in range(n_frames)]
    pcap.write_bytes(pcap_bytes(frames))
    expect = n_frames * loops
    res = {"expect": expect}
    res["replay"] = _counts_after(lab, f"replay:{pcap},loops={loops},wait_ms=4000", flows, expect,
                                  f"{tag}r", lcore)
    res["replay_stream"] = _counts_after(
        lab, f"replay:{pcap},loops={loops},wait_ms=4000,copy=stream", flows, expect, f"{tag}t",
        lcore)
    sock = Path(lab.sock_path(f"{tag}-memif.sock"))
    sock.unlink(missing_ok=True)
    gen = start_on_host(lab, f"{tag}-softgen",
                        [SoftgenPort("p0", f"net_memif0,role=server,socket={sock},"
                                           "socket-abstract=no,id=0")], (lcore, 1 - lcore))
    try:
        gen.connect()
        sg = Softgen([gen])

        def send():
            if not wait_links_up(sg, 15):
                raise RuntimeError("feed check: the memif link to ofswitch did not come up")
            c = gen.control
            for line in [f"stream id=0 port=0 pps={pps} count={expect}"] + \
                        [f"tpl id=0 hex={fr.hex()}" for fr in frames] + ["start"]:
                r = c.request(line)
                if not r.get("ok"):
                    raise RuntimeError(f"softgen refused {line[:40]}: {r}")
        res["softgen"] = _counts_after(
            lab, f"net_memif0,role=client,socket={sock},socket-abstract=no,id=0", flows,
            expect, f"{tag}s", lcore, send=send,
            before_stop=lambda: gen.control.request("stats"))
        st = res["softgen"].pop("generator")
        res["softgen_tx"] = sum(p["tx"] for p in st["ports"])
        res["softgen_unsent"] = sum(p["unsent"] for p in st["ports"])
    finally:
        gen.control and gen.control.close()
        lab.supervisor.stop(gen.managed)
    return res


_RUNS = itertools.count()  # bench runs in this process: a unique tag for each

# what each switch is measured with: ofbench on the feed that is not its limit (replay, by
# reference) and on the feed OVS-DPDK can load too (pcap), so the ratio compares equal feeds
DEFAULT_PLAN = (("ofbench", "replay"), ("ofbench", "pcap"), ("ovs-dpdk", "pcap"))


# rewriting workloads: ofbench must not write into the replay feed's shared frames
REWRITE_PLAN = (("ofbench", "replay-copy"), ("ofbench", "pcap"), ("ovs-dpdk", "pcap"))


def run_pipeline_bench(lab, kinds=("ofbench", "ovs-dpdk"), n_flows: int = 100_000,
                       n_frames: int = 8192, lcore: int = 1, duration_s: float = 5.0,
                       lookup: str = DEFAULT_LOOKUP, plan=None, reps: int = 3,
                       ceilings: bool = True, workload: Workload | None = None,
                       workers: int = 1) -> dict:
    """Every (kind, feed) of ``plan`` whose kind is in ``kinds``, then each feed's ceiling on the
    same lcore: {"ofbench/replay": {...}, ..., "ceiling/replay": Mpps, ...}. ``workload``
    (default: output-only flows, ``n_frames`` uniform frames) sets flows and frames; ``plan``
    defaults to DEFAULT_PLAN, or REWRITE_PLAN for a rewriting workload."""
    from drivers.lab.switches import switch_host
    host = switch_host(lab)   # this box on a local lab, the switch host over SSH on a remote one
    remote = host is not lab
    if remote:
        kinds = tuple(k for k in kinds if k == "ofbench")
    tag = f"bench{next(_RUNS)}"
    workload = workload or Workload("pipeline", n_frames=n_frames)
    plan = plan or (REWRITE_PLAN if workload.rewrites else DEFAULT_PLAN)
    flows = make_flows(n_flows)
    frames = workload.frames(flows)
    local_pcap = Path(lab.run_dir if remote else lab.state_dir) / f"{tag}-64b.pcap"
    local_pcap.write_bytes(pcap_bytes(frames))
    pcap = local_pcap
    if remote:  # the feed reads it on the switch host
        pcap = Path(host.state_dir) / local_pcap.name
        host.put(local_pcap, pcap)
        local_pcap.unlink()
    out: dict = {"frames": {"in_pcap": len(frames), "distinct": len(set(frames))}}
    worker_pcaps = None
    if workers > 1 and "ofbench" in kinds:
        # several workers: each replay port carries its worker's share of the frames, split
        # by 5-tuple as a NIC's RSS would (not every worker all of them: that would double
        # each flow's cache entries and the working set, which no real NIC does)
        worker_pcaps = []
        parts = rss_split(frames, workers)
        for k, part in enumerate(parts):
            local = Path(lab.run_dir if remote else lab.state_dir) / f"{tag}-64b-q{k}.pcap"
            local.write_bytes(pcap_bytes(part))
            if remote:
                dest = Path(host.state_dir) / local.name
                host.put(local, dest)
                local.unlink()
                local = dest
            worker_pcaps.append(local)
        out["frames"]["per_worker"] = [len(part) for part in parts]
    for kind, feed in plan:
        if kind in kinds:
            out[f"{kind}/{feed}"] = run_one(lab, kind, flows, pcap, lcore=lcore,
                                            duration_s=duration_s, lookup=lookup, tag=tag,
                                            feed=feed, reps=reps, workload=workload,
                                            n_frames=len(frames), host=host,
                                            workers=workers if kind == "ofbench" else 1,
                                            worker_pcaps=worker_pcaps if kind == "ofbench"
                                            else None)
    if ceilings:
        ceiling_lcore = host.cores()[0] if remote else lcore  # a lab host: its own first core
        for feed in sorted({f for k, f in plan if k in kinds}):
            ceiling = veth_ceiling if feed == VETH_FEED else feed_ceiling
            runs = [ceiling(host, *(() if feed == VETH_FEED else (feed,)), pcap,
                            lcore=ceiling_lcore, tag=tag, n_frames=len(frames))
                    for _ in range(reps)]
            out[f"ceiling/{feed}"] = {"mpps": round(statistics.median(runs), 3),
                                      "mpps_best": round(max(runs), 3)}
        out["memory"] = memory_latency(host, lcore=ceiling_lcore)
    return out


def _key(name: str) -> str:
    return name.replace("-", "_")


# Lines a frame of the set keeps warm at a cache hit: mbuf header, frame data, its flow-cache
# entry line, the flow's hot line (docs/results.md "Why the 24576-frame case ..."; 5 until the
# cache dropped its bucket lines, "One line per cache entry").
LINES_PER_FRAME = 4
CACHED_LATENCY_FACTOR = 2.5  # a size within this factor of the 1 MiB latency is still cache


def host_cache_mib(memory: dict[int, float]) -> int | None:
    """The largest memchase size this run still saw at cache latency (within
    CACHED_LATENCY_FACTOR of the smallest size's); None without measurements."""
    if not memory:
        return None
    base = memory[min(memory)]
    return max(mib for mib, ns in memory.items() if ns <= CACHED_LATENCY_FACTOR * base)


def working_set_mib(distinct_frames: int) -> float:
    """The switch's working set at a cache hit for a frame set (LINES_PER_FRAME lines each)."""
    return round(distinct_frames * LINES_PER_FRAME * 64 / (1 << 20), 2)


def metrics_of(res: dict) -> dict:
    """Record metrics: ``<kind>_<feed>_mpps`` (median of the windows) and ``..._best_mpps``;
    ``ofbench_mpps`` is ofbench on its best feed (replay when measured), ``ovs_dpdk_mpps``
    OVS-DPDK's; ``speedup_vs_ovs_dpdk`` compares them on the SAME feed (pcap) when both ran on
    it; ``feed_<feed>_ceiling_mpps`` is the feed alone on the same lcore;
    ``working_set_mib_est`` (the frame set's lines at a hit) beside ``host_cache_mib_est`` (the
    largest memchase size still at cache latency in this run) says whether the host's cache
    held the frame set."""
    m: dict = {}
    for name, r in res.items():
        if name == "frames":
            m["frames_in_pcap"] = r["in_pcap"]
            m["frames_distinct"] = r["distinct"]
            m["working_set_mib_est"] = working_set_mib(r["distinct"])
            continue
        if name == "memory":
            for mib, ns in sorted(r.items()):
                m[f"host_mem_latency_{mib}mib_ns"] = ns
            # where the host's cache ended in this run: a frame set whose working set lies
            # past it runs at DRAM latency (a VM's L3 share moves with its neighbours)
            cache_mib = host_cache_mib(r)
            if cache_mib is not None:
                m["host_cache_mib_est"] = cache_mib
            continue
        who, feed = name.split("/")
        if who == "ceiling":
            m[f"feed_{_key(feed)}_ceiling_mpps"] = r["mpps"]
            m[f"feed_{_key(feed)}_ceiling_best_mpps"] = r["mpps_best"]
            continue
        k = f"{_key(who)}_{_key(feed)}"
        m[f"{k}_mpps"] = r["mpps"]
        m[f"{k}_best_mpps"] = r["mpps_best"]
        m[f"{_key(who)}_install_s"] = r["install_s"]
        if "cache_hit_ratio" in r:
            m[f"{k}_cache_hit_ratio"] = r["cache_hit_ratio"]
        if "cpu_share" in r:
            m[f"{k}_cpu_share"] = r["cpu_share"]
            m[f"{k}_mpps_per_cpu"] = r["mpps_per_cpu"]
        if "other_load_cores" in r:
            m[f"{k}_other_load_cores"] = r["other_load_cores"]
        if "datapath" in r:
            m.update(datapath_metrics(k, r["datapath"]))
        sc = r.get("switch_cache") or {}
        for c in SWITCH_CACHE_COUNTERS:
            if c in sc:
                m[f"{k}_{c}"] = sc[c]
        if sc.get("rx_packets"):  # the share of received frames each cache served
            m[f"{k}_switch_rx_packets"] = sc["rx_packets"]
            for c in ("pipe_cache_hits", "cache_hits"):
                if c in sc:
                    m[f"{k}_{c}_share"] = round(sc[c] / sc["rx_packets"], 4)
        for c, v in (r.get("veth") or {}).items():
            m[f"{k}_veth_{c}"] = v
        for t, c in (r.get("tables") or {}).items():
            m[f"{k}_table{t}_flows"] = c["flows"]
            m[f"{k}_table{t}_flows_hit"] = c["hit"]
    for who in ("ofbench", "ovs_dpdk", "ovs"):
        for feed in ("replay", "replay_copy", "replay_stream", "pcap", VETH_FEED):
            if f"{who}_{feed}_mpps" in m:
                m[f"{who}_mpps"] = m[f"{who}_{feed}_mpps"]
                if f"{who}_{feed}_cache_hit_ratio" in m:
                    m[f"{who}_cache_hit_ratio"] = m[f"{who}_{feed}_cache_hit_ratio"]
                break
    if m.get("ofbench_pcap_mpps") and m.get("ovs_dpdk_pcap_mpps"):
        m["speedup_vs_ovs_dpdk"] = round(m["ofbench_pcap_mpps"] / m["ovs_dpdk_pcap_mpps"], 2)
    elif m.get("ofbench_mpps") and m.get("ovs_dpdk_mpps"):
        m["speedup_vs_ovs_dpdk"] = round(m["ofbench_mpps"] / m["ovs_dpdk_mpps"], 2)
    # the same per CPU-second each forwarding thread really got (a shared core halves a rate)
    if m.get("ofbench_pcap_mpps_per_cpu") and m.get("ovs_dpdk_pcap_mpps_per_cpu"):
        m["speedup_per_cpu_vs_ovs_dpdk"] = round(m["ofbench_pcap_mpps_per_cpu"]
                                                 / m["ovs_dpdk_pcap_mpps_per_cpu"], 2)
    return m


# Metrics a pipeline record holds that measure the rig, not the switch: the host's memory
# latency probe (memchase) and what it derives, and each feed's ceiling (the feed alone on the
# lcore, no switch in the path). A record names them in params ``series_kind`` ({metric: "rig"},
# reports/README.md "Series kinds"), so the trend counts them apart from the DUT's series.
RIG_METRIC = re.compile(r"^(host_mem_latency_\d+mib_ns|host_cache_mib_est"
                        r"|feed_[a-z0-9_]+_ceiling(_best)?_mpps)$")


def series_kinds(metrics: dict) -> dict:
    """params ``series_kind``: {metric: "rig"} for each rig-bound metric of ``metrics``."""
    return {m: "rig" for m in sorted(metrics) if RIG_METRIC.match(m)}


def window_reps(res: dict) -> dict:
    """``<kind>_<feed>_mpps_reps``: every measurement window's rate (the repetitions
    reports/noise.py and the trend's ``csit`` detector read), for each measured (kind, feed)."""
    out = {}
    for name, r in res.items():
        who, _, feed = name.partition("/")
        if feed and who != "ceiling" and isinstance(r, dict) and "mpps_runs" in r:
            out[f"{_key(who)}_{_key(feed)}_mpps_reps"] = list(r["mpps_runs"])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m suites.switch.pipeline", description=__doc__.split("\n")[0])
    p.add_argument("--flows", type=int, default=100_000)
    p.add_argument("--kinds", default="ofbench,ovs-dpdk")
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--lookup", default=DEFAULT_LOOKUP, choices=SWITCH_LOOKUPS)
    p.add_argument("--frames", type=int, default=8192,
                   help="distinct frames in the pcap (the flow cache's working set)")
    p.add_argument("--profile", default="local")
    p.add_argument("--reps", type=int, default=3, help="measurement windows per switch")
    p.add_argument("--plan", default=None,
                   help="kind/feed pairs to measure (feeds: replay, replay-copy, replay-stream, pcap); "
                        "default: both switches, ofbench on replay (replay-copy when the "
                        "workload rewrites) and pcap, OVS-DPDK on pcap")
    p.add_argument("--workers", type=int, default=1,
                   help="ofbench worker lcores, one replay feed port each (plan: ofbench/replay)")
    p.add_argument("--workload", default=None, choices=sorted(WORKLOADS),
                   help="a named workload of issue 16 (sets frames and flows' actions)")
    a = p.parse_args(argv)
    from datetime import datetime, timezone
    import secrets
    import tempfile
    from dut.profiles.schema import load_profile
    from drivers.lab.local import LocalLab
    prof = load_profile(a.profile)
    run_id = f"run-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    run_dir = Path(tempfile.mkdtemp(prefix="ofb-bench-")) / run_id
    run_dir.mkdir(parents=True)
    lab = LocalLab(prof, run_id, run_dir)
    try:
        plan = tuple(tuple(x.split("/")) for x in a.plan.split(",")) if a.plan else None
        res = run_pipeline_bench(lab, tuple(a.kinds.split(",")), a.flows, n_frames=a.frames,
                                 duration_s=a.duration, lookup=a.lookup, plan=plan,
                                 reps=a.reps, workload=WORKLOADS.get(a.workload),
                                 workers=a.workers)
    finally:
        lab.close()
    metrics = metrics_of(res)
    print(json.dumps({"suite": "switch", "name": a.workload or f"pipeline_64b_{a.flows // 1000}k_flows",
                      "metrics": metrics, "params": {"flows": a.flows,
                      "lookup": a.lookup, "frames": a.frames, "io": "feed -> one lcore -> net_null",
                      "plan": a.plan, "logs": str(run_dir), **window_reps(res),
                      "series_kind": series_kinds(metrics)}, "raw": res}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
