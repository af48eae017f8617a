"""Seeds and reproducers of the datapath's libFuzzer harness (fuzz_datapath.c, README
"Fuzzing"): inputs in its record format, written to corpus_datapath/ and regress_datapath/.

    python -m dut.switch.fuzz.datapath_seeds      # (re)write both folders' files

A record is ctl (port in bits 0-1; bit 2 PACKET_OUT; bit 3 fail-standalone), prog (the
PACKET_OUT's action list, 0 = OUTPUT:TABLE; bit 7 in_port CONTROLLER), the frame's length (2
bytes, big-endian) and the frame. Seeds: a frame of every kind the parser knows (VLAN stacks, MPLS stacks, PBB,
IPv4 with options, IPv6 with extension headers, TCP/UDP/SCTP/ICMP/ICMPv6 with ND options,
ARP, frames of 0-13 bytes, a 9000-byte jumbo frame) on each port's table and as PACKET_OUTs.
Reproducers: the frames of issue 37 finding 2 (an IPv4 IHL of 60 in a short frame, IPv6
extension headers whose length byte runs 1-2 KB past the frame, an IPv4 header under MPLS cut
short for COPY_TTL_IN) where the flows rewrite the L4 fields. The files are committed; this
module says how they were made.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus_datapath"
REGRESS = HERE / "regress_datapath"
MACS = bytes.fromhex("020000000002" "020000000001")


def rec(frame: bytes, port: int = 0, packet_out: bool = False, prog: int = 0,
        standalone: bool = False) -> bytes:
    ctl = (port & 3) | (4 if packet_out else 0) | (8 if standalone else 0)
    return bytes([ctl, prog & 0xFF]) + struct.pack("!H", len(frame)) + frame


def eth(et: int, *tags: int) -> bytes:
    return MACS + b"".join(struct.pack("!HH", t, 0x2005) for t in tags) + struct.pack("!H", et)


def ipv4(proto: int, l4: bytes, ihl: int = 5, total: int | None = None, frag: int = 0x4000,
         options: bytes | None = None) -> bytes:
    opts = options if options is not None else bytes(4 * (ihl - 5))
    tot = total if total is not None else 4 * ihl + len(l4)
    return struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0x28, tot, 7, frag, 64, proto, 0,
                       bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + opts + l4


def ipv6(nh: int, rest: bytes, plen: int | None = None) -> bytes:
    return struct.pack("!IHBB16s16s", 0x6AB12345, len(rest) if plen is None else plen, nh, 64,
                       bytes.fromhex("fe80" + "00" * 13 + "01"),
                       bytes.fromhex("ff02" + "00" * 13 + "02")) + rest


def tcp() -> bytes:
    return struct.pack("!HHIIBBHHH", 1234, 80, 1, 0, 5 << 4, 0x12, 8192, 0, 0) + b"data"


def udp(n: int = 8) -> bytes:
    return struct.pack("!HHHH", 5353, 53, 8 + n, 0) + bytes(i % 251 for i in range(n))


def sctp() -> bytes:
    return struct.pack("!HHII", 3868, 3868, 7, 0) + bytes(16)


def icmp() -> bytes:
    return struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"ping"


def nd(kind: int) -> bytes:
    opt = struct.pack("!BB", 1 if kind == 135 else 2, 1) + bytes.fromhex("020000000001")
    return struct.pack("!BBH4x", kind, 0, 0) + bytes.fromhex("fe80" + "00" * 13 + "07") + opt


def ext(nh: int, body_len8: int = 0, frag_ofs: int = 0, kind: int = 0) -> bytes:
    """An IPv6 extension header (kind: 0 hop/dest/routing, 44 fragment, 51 AH) whose next
    header is nh; length byte body_len8."""
    if kind == 44:
        return struct.pack("!BBHI", nh, 0, frag_ofs << 3, 99)
    if kind == 51:
        return struct.pack("!BB", nh, body_len8) + bytes(4 * body_len8 + 6)
    return struct.pack("!BB", nh, body_len8) + bytes(8 * body_len8 + 6)


def mpls(*labels: int, ttl: int = 33) -> bytes:
    n = len(labels)
    return b"".join(struct.pack("!I", lb << 12 | (0x100 if i == n - 1 else 0) | ttl)
                    for i, lb in enumerate(labels))


def arp() -> bytes:
    return struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, bytes.fromhex("020000000001"),
                       bytes([10, 0, 0, 1]), bytes(6), bytes([10, 0, 0, 2]))


def frames() -> dict[str, bytes]:
    f = {
        "ipv4_tcp": eth(0x0800) + ipv4(6, tcp()),
        "ipv4_udp": eth(0x0800) + ipv4(17, udp()),
        "ipv4_sctp": eth(0x0800) + ipv4(132, sctp()),
        "ipv4_icmp": eth(0x0800) + ipv4(1, icmp()),
        "ipv4_opts_tcp": eth(0x0800) + ipv4(6, tcp(), ihl=8),
        "ipv4_frag": eth(0x0800) + ipv4(17, udp(), frag=0x2010),
        "ipv4_udp_padded": eth(0x0800) + ipv4(17, udp(0)) + bytes(18),
        "ipv6_tcp": eth(0x86DD) + ipv6(6, tcp()),
        "ipv6_udp": eth(0x86DD) + ipv6(17, udp()),
        "ipv6_sctp": eth(0x86DD) + ipv6(132, sctp()),
        "ipv6_nd_sol": eth(0x86DD) + ipv6(58, nd(135)),
        "ipv6_nd_adv": eth(0x86DD) + ipv6(58, nd(136)),
        "ipv6_hbh_dst_tcp": eth(0x86DD) + ipv6(0, ext(60) + ext(6, 1) + tcp()),
        "ipv6_rt_frag_udp": eth(0x86DD) + ipv6(43, ext(44) + ext(17, kind=44) + udp()),
        "ipv6_ah_tcp": eth(0x86DD) + ipv6(51, ext(6, 4, kind=51) + tcp()),
        "ipv6_esp": eth(0x86DD) + ipv6(50, bytes(24)),
        "ipv6_nonext": eth(0x86DD) + ipv6(59, b""),
        "arp": eth(0x0806) + arp(),
        "vlan_ipv4_tcp": eth(0x0800, 0x8100) + ipv4(6, tcp()),
        "qinq_ipv6_udp": eth(0x86DD, 0x88A8, 0x8100) + ipv6(17, udp()),
        "vlan3_arp": eth(0x0806, 0x88A8, 0x8100, 0x8100) + arp(),
        "mpls_ipv4_tcp": eth(0x8847) + mpls(100) + ipv4(6, tcp()),
        "mpls3_ipv6": eth(0x8848) + mpls(1, 2, 3) + ipv6(17, udp()),
        "vlan_mpls2_ipv4": eth(0x8847, 0x8100) + mpls(7, 8) + ipv4(1, icmp()),
        "pbb": eth(0x88E7) + bytes.fromhex("00abcdef") + eth(0x0800) + ipv4(17, udp()),
        "other_ethertype": eth(0x88CC) + bytes(46),
        "jumbo_ipv4_udp": eth(0x0800) + ipv4(17, udp(9000 - 14 - 20 - 8)),
    }
    for n in (0, 1, 6, 12, 13, 14):
        f[f"short_{n}"] = (eth(0x0800) + ipv4(6, tcp()))[:n]
    return f


def reproducers() -> dict[str, bytes]:
    """Issue 37 finding 2: each frame on port index 0 (table 1: the flow of its protocol
    rewrites the L4 ports or copies the TTL in), 2 (table 3: groups whose buckets set
    tcp_src, ICMP type and ND fields with no prerequisite) and as a PACKET_OUT running the
    flows (OUTPUT:TABLE, in_port 1)."""
    short_tail = b"\xaa" * 6
    bad = {
        "ipv4_ihl60_tcp": eth(0x0800) + ipv4(6, short_tail, ihl=15, total=80, options=b""),
        "ipv4_ihl60_icmp": eth(0x0800) + ipv4(1, short_tail, ihl=15, total=80, options=b""),
        "ipv6_hbh_2k_tcp": eth(0x86DD) + ipv6(0, struct.pack("!BB", 6, 0xFF) + bytes(6) + tcp(),
                                              plen=2100),
        "ipv6_dst_2k_udp": eth(0x86DD) + ipv6(60, struct.pack("!BB", 17, 0xFF) + bytes(6) +
                                              udp(), plen=2100),
        "ipv6_ah_1k_icmp6": eth(0x86DD) + ipv6(51, struct.pack("!BB", 58, 0xFF) + bytes(6) +
                                               nd(135), plen=1100),
        "mpls_ipv4_ihl60_ttl_in": eth(0x8847) + mpls(100) + ipv4(6, b"", ihl=15, total=80,
                                                                 options=b""),
        "ipv4_tcp_2_bytes": eth(0x0800) + ipv4(6, b"\x04\xd2", total=22),
    }
    out = {}
    for name, frame in bad.items():
        out[f"finding2-{name}"] = (rec(frame, port=0) + rec(frame, port=2) +
                                   rec(frame, port=1) + rec(frame, port=0, packet_out=True,
                                                            prog=0))
    return out


def seeds() -> dict[str, bytes]:
    out = {}
    for name, frame in frames().items():
        # every port's table, a burst of two on port 0, and PACKET_OUTs with a few programs
        out[f"rx-{name}"] = b"".join(rec(frame, port=p) for p in range(4)) + rec(frame)
        out[f"po-{name}"] = b"".join(rec(frame, port=p, packet_out=True, prog=17 * p + 3)
                                     for p in range(4))
    out["standalone-mix"] = b"".join(rec(fr, port=i % 4, standalone=True)
                                     for i, fr in enumerate(frames().values()))
    return out


def write(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / f"{name}.bin").write_bytes(data)


def main() -> int:
    write(CORPUS, seeds())
    write(REGRESS, reproducers())
    print(f"{len(seeds())} seeds in {CORPUS}, {len(reproducers())} reproducers in {REGRESS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
