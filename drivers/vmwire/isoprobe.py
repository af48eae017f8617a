"""Tenant isolation probe: random frames from every guest, counted at every guest.

Run inside the namespace that holds the guests' kernel interfaces (taps bridged to the
switch's vhost-user ports by a testpmd adapter, or veths)::

    ip netns exec <ns> python -m drivers.vmwire.isoprobe --spec spec.json --out result.json

spec.json: ``{"guests": [{"name", "tenant", "iface", "mac"}], "frames": N, "seed": S,
"gap_s": 0.001, "drain_s": 1.0}``.

Each frame carries a tag (``OFBISO`` + sender index + sequence) in its payload, so the receiver
knows who sent it whatever the MACs and VLAN tags say. Frames are random: destination = another
guest's MAC (any tenant), broadcast, multicast or a random unicast; source = the sender's MAC or
a spoofed one (another tenant's guest or random); 0, 1 or 2 VLAN tags with random ids.

Result: per receiver, frames by sender tenant; ``leaks`` = frames received from another tenant
(must be 0); ``delivered_ratio`` = same-tenant deliveries / expected (each frame should reach
every other port of its tenant).

Pure: :func:`make_frames`, :func:`tag_of`, :func:`tally`.
"""
from __future__ import annotations

import argparse
import json
import random
import select
import socket
import struct
import sys
import time

MAGIC = b"OFBISO"
ETH_P_ALL = 0x0003
ETHERTYPE_PROBE = 0x88B5        # IEEE local experimental
PACKET_OUTGOING = 4


def _mac_bytes(mac: str) -> bytes:
    return bytes(int(x, 16) for x in mac.split(":"))


def _rand_unicast(rng: random.Random) -> bytes:
    b = bytearray(rng.getrandbits(8) for _ in range(6))
    b[0] = (b[0] & 0xFC) | 0x02     # locally administered unicast
    return bytes(b)


def make_frames(guests: list[dict], n: int, seed: int) -> list[tuple[int, bytes, dict]]:
    """``n`` random frames as (sender index, frame bytes, description)."""
    rng = random.Random(seed)
    macs = [_mac_bytes(g["mac"]) for g in guests]
    out = []
    for seq in range(n):
        s = rng.randrange(len(guests))
        kind = rng.choice(["guest", "guest", "broadcast", "multicast", "random"])
        if kind == "guest":
            dst = macs[rng.randrange(len(guests))]
        elif kind == "broadcast":
            dst = b"\xff" * 6
        elif kind == "multicast":
            dst = bytes([0x01, 0x00, 0x5E, rng.randrange(128), rng.randrange(256),
                         rng.randrange(256)])
        else:
            dst = _rand_unicast(rng)
        src_kind = rng.choice(["own", "own", "spoof-guest", "spoof-random"])
        src = macs[s] if src_kind == "own" else (
            macs[rng.randrange(len(guests))] if src_kind == "spoof-guest" else _rand_unicast(rng))
        ntags = rng.choice([0, 0, 1, 1, 2])
        tags = b""
        vids = []
        for t in range(ntags):
            vid = rng.randrange(1, 4095)
            vids.append(vid)
            tpid = 0x88A8 if (ntags == 2 and t == 0) else 0x8100
            tags += struct.pack("!HH", tpid, vid)
        payload = MAGIC + struct.pack("!BI", s, seq)
        frame = dst + src + tags + struct.pack("!H", ETHERTYPE_PROBE) + payload
        frame += b"\x00" * max(0, 60 - len(frame))
        out.append((s, frame, {"dst": kind, "src": src_kind, "vlans": vids}))
    return out


def tag_of(frame: bytes) -> tuple[int, int] | None:
    """(sender index, seq) of a probe frame, wherever the VLAN tags left the payload."""
    i = frame.find(MAGIC)
    if i < 0 or i + len(MAGIC) + 5 > len(frame):
        return None
    s, seq = struct.unpack("!BI", frame[i + len(MAGIC):i + len(MAGIC) + 5])
    return s, seq


def tally(guests: list[dict], sent: list[int], received: dict[int, list[tuple[int, int]]]) -> dict:
    """Counts per receiver by sender tenant, leaks, and the same-tenant delivery ratio.

    ``sent[i]`` = frames sent by guest i; ``received[r]`` = (sender, seq) tags seen at r.
    """
    tenant = [g["tenant"] for g in guests]
    per_rx = {}
    leaks = same = 0
    for r, tags in received.items():
        by_tenant: dict[str, int] = {}
        for s, _seq in tags:
            if s == r or s >= len(guests):
                continue
            by_tenant[tenant[s]] = by_tenant.get(tenant[s], 0) + 1
            if tenant[s] == tenant[r]:
                same += 1
            else:
                leaks += 1
        per_rx[guests[r]["name"]] = by_tenant
    expected = sum(sent[i] * (sum(1 for t in tenant if t == tenant[i]) - 1)
                   for i in range(len(guests)))
    return {"sent": {g["name"]: sent[i] for i, g in enumerate(guests)},
            "received_by_tenant": per_rx, "leaks": leaks, "same_tenant_received": same,
            "same_tenant_expected": expected,
            "delivered_ratio": round(same / expected, 4) if expected else None}


def run(spec: dict) -> dict:
    guests = spec["guests"]
    frames = make_frames(guests, spec.get("frames", 600), spec.get("seed", 1))
    gap = spec.get("gap_s", 0.001)
    socks = []
    for g in guests:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((g["iface"], 0))
        s.setblocking(False)
        socks.append(s)
    received: dict[int, list[tuple[int, int]]] = {i: [] for i in range(len(guests))}
    sent = [0] * len(guests)

    def drain(timeout: float) -> None:
        r, _, _ = select.select(socks, [], [], timeout)
        for sock in r:
            idx = socks.index(sock)
            while True:
                try:
                    data, addr = sock.recvfrom(4096)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                tag = tag_of(data)
                if tag:
                    received[idx].append(tag)

    for s_idx, frame, _ in frames:
        socks[s_idx].send(frame)
        sent[s_idx] += 1
        drain(gap)
    end = time.monotonic() + spec.get("drain_s", 1.0)
    while time.monotonic() < end:
        drain(0.05)
    for s in socks:
        s.close()
    return tally(guests, sent, received)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m drivers.vmwire.isoprobe")
    p.add_argument("--spec", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    with open(a.spec) as f:
        spec = json.load(f)
    res = run(spec)
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k != "received_by_tenant"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
