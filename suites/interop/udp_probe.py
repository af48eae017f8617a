"""UDP probes for the interop scenarios, run inside a host's namespace: a receiver that listens
on several ports at once and reports, per datagram, the port it arrived on and its IP TTL
(IP_RECVTTL), and a sender (broadcast allowed). Each prints one JSON line.

    python -m suites.interop.udp_probe recv --port 9002 --port 9003 --timeout 3
    python -m suites.interop.udp_probe send --to 10.0.0.2 --port 9002 --count 20 --pps 200

A tagged host without the kernel's 8021q module (this box's kernel has none): ``rawsend``
writes 802.1Q-tagged UDP frames on eth0 with an AF_PACKET socket and ``rawrecv`` counts the
probe's frames that arrive, by VLAN id ("none": untagged) and UDP port:

    python -m suites.interop.udp_probe rawsend --iface eth0 --vid 100 --src-mac .. --dst-mac ..\
        --src-ip 10.0.0.2 --dst-ip 10.0.0.1 --port 9000 --count 20
    python -m suites.interop.udp_probe rawrecv --iface eth0 --port 9000 --timeout 3
"""
from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct
import time

MAGIC = b"ofbench-interop"
SOL_PACKET, PACKET_AUXDATA, TP_STATUS_VLAN_VALID = 263, 8, 0x10  # <linux/if_packet.h>
AUXDATA = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata
IP_RECVTTL = getattr(socket, "IP_RECVTTL", 12)  # Linux <netinet/in.h>; absent from Python's


def recv(bind: str, ports: list[int], timeout_s: float, ready_file: str | None) -> dict:
    socks = {}
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.IPPROTO_IP, IP_RECVTTL, 1)
        s.bind((bind, port))  # 0.0.0.0: broadcasts too
        socks[s] = port
    if ready_file:
        with open(ready_file + ".tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(ready_file + ".tmp", ready_file)
    counts = {p: 0 for p in ports}
    ttls: list[int] = []
    last = time.monotonic()
    while time.monotonic() - last < timeout_s:  # until quiet for timeout_s
        ready, _, _ = select.select(list(socks), [], [], 0.1)
        for s in ready:
            data, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(4))
            if not data.startswith(MAGIC):
                continue
            counts[socks[s]] += 1
            for level, kind, value in anc:
                if level == socket.IPPROTO_IP and kind == socket.IP_TTL:
                    ttls.append(struct.unpack("i", value[:4])[0])
            last = time.monotonic()
    return {"ports": counts, "ttls": sorted(set(ttls)), "rx": sum(counts.values())}


def send(to: str, port: int, count: int, pps: float) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
    sent = 0
    for seq in range(count):
        try:
            s.sendto(MAGIC + seq.to_bytes(4, "big"), (to, port))
            sent += 1
        except OSError:
            pass
        time.sleep(1.0 / pps)
    return {"tx": sent}


def _csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(src_mac: str, dst_mac: str, vid: int | None, src_ip: str, dst_ip: str, port: int,
          seq: int) -> bytes:
    """An Ethernet frame (802.1Q-tagged if ``vid``) carrying one probe datagram (UDP checksum
    0: none, as IPv4 allows)."""
    payload = MAGIC + seq.to_bytes(4, "big")
    udp = struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0, 64, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", ""))
    if vid:
        eth += struct.pack("!HH", 0x8100, vid)
    return eth + struct.pack("!H", 0x0800) + ip + udp


def parse(data: bytes, vid: str = "none") -> tuple[str, int] | None:
    """(vid or "none", UDP dst port) of a probe frame, else None. ``vid``: the tag the
    kernel took off the frame already (PACKET_AUXDATA), if any."""
    off = 12
    et = struct.unpack("!H", data[off:off + 2])[0]
    if et == 0x8100:
        vid = str(struct.unpack("!H", data[14:16])[0] & 0x0FFF)
        off += 4
        et = struct.unpack("!H", data[off:off + 2])[0]
    if et != 0x0800 or len(data) < off + 2 + 28 or data[off + 2 + 9] != 17:
        return None
    ihl = (data[off + 2] & 0x0F) * 4
    udp = data[off + 2 + ihl:]
    if not udp[8:].startswith(MAGIC):
        return None
    return vid, struct.unpack("!H", udp[2:4])[0]


def rawsend(iface: str, count: int, pps: float, **kw) -> dict:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for seq in range(count):
        s.send(frame(seq=seq, **kw))
        time.sleep(1.0 / pps)
    return {"tx": count}


def arp_request(src_mac: bytes, src_ip: str, target_ip: str) -> bytes:
    """A broadcast ARP request from (src_mac, src_ip) for target_ip."""
    return (b"\xff" * 6 + src_mac + struct.pack("!H", 0x0806)
            + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + src_mac + socket.inet_aton(src_ip)
            + b"\0" * 6 + socket.inet_aton(target_ip)).ljust(60, b"\0")


def host_addr(base_ip: str, i: int) -> str:
    """The i-th host address after ``base_ip`` (10.100.0.1 + i)."""
    return socket.inet_ntoa(struct.pack("!I", struct.unpack("!I", socket.inet_aton(base_ip))[0] + i))


def host_mac(prefix: int, i: int) -> bytes:
    """Host i's MAC: 0e:<prefix>:<i as 4 bytes> (locally administered, unicast)."""
    return bytes([0x0E, prefix]) + struct.pack("!I", i)


def arps(iface: str, count: int, prefix: int, base_ip: str, target: str, pps: float,
         only: list[int] | None = None) -> dict:
    """``count`` hosts ARP for ``target`` (a router's address) once each: MAC host_mac(prefix,
    i), address host_addr(base_ip, i); ``only``: just these hosts i. Paced on a schedule (the
    k-th request at k / pps s), so the rate is ``pps`` however long each send takes."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    hosts = range(count) if only is None else only
    t0 = time.monotonic()
    for k, i in enumerate(hosts):
        wait = t0 + k / pps - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        s.send(arp_request(host_mac(prefix, i), host_addr(base_ip, i), target))
    return {"tx": len(hosts), "seconds": round(time.monotonic() - t0, 2)}


def arp_responder(iface: str, count: int, prefix: int, base_ip: str, seconds: float) -> dict:
    """Answer ARP requests for the ``count`` hosts of :func:`arps` (a router re-resolving its
    next hops) for ``seconds``."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
    s.bind((iface, 0))
    s.settimeout(0.2)
    base = struct.unpack("!I", socket.inet_aton(base_ip))[0]
    answered = seen = 0
    stop = []
    import signal
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    end = time.monotonic() + seconds
    while time.monotonic() < end and not stop:
        try:
            data, addr = s.recvfrom(2048)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING or len(data) < 42 or data[20:22] != b"\0\1":
            continue
        seen += 1
        i = struct.unpack("!I", data[38:42])[0] - base
        if not 0 <= i < count:
            continue
        mac = host_mac(prefix, i)
        reply = (data[22:28] + mac + struct.pack("!H", 0x0806)
                 + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 2) + mac + data[38:42]
                 + data[22:28] + data[28:32]).ljust(60, b"\0")
        s.send(reply)
        answered += 1
    return {"requests": seen, "answered": answered}


def rawrecv(iface: str, ports: list[int], timeout_s: float, ready_file: str | None) -> dict:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    # the kernel's receive path moves an 802.1Q tag out of the frame into the skb (whatever
    # the NIC's offloads); PACKET_AUXDATA hands it back
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.settimeout(0.1)
    if ready_file:
        with open(ready_file + ".tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(ready_file + ".tmp", ready_file)
    counts: dict[str, int] = {}
    last = time.monotonic()
    while time.monotonic() - last < timeout_s:
        try:
            data, anc, _, addr = s.recvmsg(4096, socket.CMSG_SPACE(AUXDATA.size))
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        vid = "none"
        for level, kind, value in anc:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(value) >= AUXDATA.size:
                status, _, _, _, _, tci, _ = AUXDATA.unpack(value[:AUXDATA.size])
                if status & TP_STATUS_VLAN_VALID:
                    vid = str(tci & 0x0FFF)
        got = parse(data, vid)
        if got and got[1] in ports:
            key = f"{got[0]}/{got[1]}"
            counts[key] = counts.get(key, 0) + 1
            last = time.monotonic()
    return {"frames": counts, "rx": sum(counts.values())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m suites.interop.udp_probe")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--bind", default="0.0.0.0")
    r.add_argument("--port", type=int, action="append", required=True)
    r.add_argument("--timeout", type=float, default=3.0, help="stop after this long quiet")
    r.add_argument("--ready-file")
    s = sub.add_parser("send")
    s.add_argument("--to", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--count", type=int, default=20)
    s.add_argument("--pps", type=float, default=200.0)
    rs = sub.add_parser("rawsend")
    rs.add_argument("--iface", default="eth0")
    rs.add_argument("--vid", type=int, default=0, help="802.1Q VLAN id (0: untagged)")
    for k in ("src-mac", "dst-mac", "src-ip", "dst-ip"):
        rs.add_argument(f"--{k}", required=True)
    rs.add_argument("--port", type=int, required=True)
    rs.add_argument("--count", type=int, default=20)
    rs.add_argument("--pps", type=float, default=200.0)
    rr = sub.add_parser("rawrecv")
    rr.add_argument("--iface", default="eth0")
    rr.add_argument("--port", type=int, action="append", required=True)
    rr.add_argument("--timeout", type=float, default=3.0)
    rr.add_argument("--ready-file")
    ar = sub.add_parser("arps")
    ar.add_argument("--iface", default="eth0")
    ar.add_argument("--count", type=int, required=True)
    ar.add_argument("--prefix", type=int, required=True, help="second MAC byte")
    ar.add_argument("--base-ip", required=True)
    ar.add_argument("--target", required=True)
    ar.add_argument("--pps", type=float, default=500.0)
    ar.add_argument("--only-file", help="the hosts i to send for, one a line (default: all)")
    rsp = sub.add_parser("arp-responder")
    rsp.add_argument("--iface", default="eth0")
    rsp.add_argument("--count", type=int, required=True)
    rsp.add_argument("--prefix", type=int, required=True)
    rsp.add_argument("--base-ip", required=True)
    rsp.add_argument("--seconds", type=float, default=600.0)
    a = p.parse_args(argv)
    if a.cmd == "arp-responder":
        out = arp_responder(a.iface, a.count, a.prefix, a.base_ip, a.seconds)
    elif a.cmd == "arps":
        only = None
        if a.only_file:
            with open(a.only_file) as f:
                only = [int(x) for x in f.read().split()]
        out = arps(a.iface, a.count, a.prefix, a.base_ip, a.target, a.pps, only)
    elif a.cmd == "recv":
        out = recv(a.bind, a.port, a.timeout, a.ready_file)
    elif a.cmd == "send":
        out = send(a.to, a.port, a.count, a.pps)
    elif a.cmd == "rawsend":
        out = rawsend(a.iface, a.count, a.pps, src_mac=a.src_mac, dst_mac=a.dst_mac,
                      vid=a.vid or None, src_ip=a.src_ip, dst_ip=a.dst_ip, port=a.port)
    else:
        out = rawrecv(a.iface, a.port, a.timeout, a.ready_file)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
