"""OpenFlow 1.3 on the wire: constants, message encoders and the few decoders ofbench needs.

The one place Python writes or reads OpenFlow bytes by hand (issue 43): the switch's tests, the
suites' probes and benches (pipeline, flow-mod rate, churn, reliability, negative conformance,
the fuzz corpus) and the os-ken apps' hot path (``packet_out_bytes``, ``packet_in_fields``).
os-ken's message objects stay where an app builds messages through its datapath
(``dut/controller/ofutil.py``); this module imports nothing of ofbench and no third-party
package, so every layer may use it (it sits at the bottom, beside ``configschema``).

Byte layouts per the OpenFlow Switch Specification 1.3.5 (ONF TS-023); every field big-endian.
Builders return ``bytes``; the ``*_raw`` builders and the ``length=`` / ``type_=`` arguments
let a caller write malformed messages on purpose (the negative conformance cases).
"""
from __future__ import annotations

import struct

OFP_VERSION = 4

# ---- message types (7.1, ofp_type) ------------------------------------------------------------
HELLO, ERROR, ECHO_REQUEST, ECHO_REPLY, EXPERIMENTER = 0, 1, 2, 3, 4
FEATURES_REQUEST, FEATURES_REPLY, GET_CONFIG_REQUEST, GET_CONFIG_REPLY, SET_CONFIG = 5, 6, 7, 8, 9
PACKET_IN, FLOW_REMOVED, PORT_STATUS, PACKET_OUT, FLOW_MOD, GROUP_MOD = 10, 11, 12, 13, 14, 15
PORT_MOD, TABLE_MOD, MULTIPART_REQUEST, MULTIPART_REPLY = 16, 17, 18, 19
BARRIER_REQUEST, BARRIER_REPLY, QUEUE_GET_CONFIG_REQUEST = 20, 21, 22
ROLE_REQUEST, ROLE_REPLY, GET_ASYNC_REQUEST, GET_ASYNC_REPLY, SET_ASYNC, METER_MOD = (
    24, 25, 26, 27, 28, 29)

# ---- reserved numbers -------------------------------------------------------------------------
OFPP_IN_PORT, OFPP_TABLE, OFPP_NORMAL, OFPP_FLOOD = 0xFFFFFFF8, 0xFFFFFFF9, 0xFFFFFFFA, 0xFFFFFFFB
OFPP_ALL, OFPP_CONTROLLER, OFPP_LOCAL, OFPP_ANY = 0xFFFFFFFC, 0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF
OFPG_ANY = 0xFFFFFFFF
OFPM_ALL = 0xFFFFFFFF
OFPTT_ALL = 0xFF
NO_BUFFER = 0xFFFFFFFF
OFPCML_MAX = 0xFFE5        # max_len of an output action to the controller (os-ken's default)
OFPCML_NO_BUFFER = 0xFFFF  # send the whole packet to the controller

# flow_mod commands, group and meter mod values
OFPFC_ADD, OFPFC_MODIFY, OFPFC_MODIFY_STRICT, OFPFC_DELETE, OFPFC_DELETE_STRICT = 0, 1, 2, 3, 4
OFPGC_ADD, OFPGC_MODIFY, OFPGC_DELETE = 0, 1, 2
OFPGT_ALL, OFPGT_SELECT, OFPGT_INDIRECT, OFPGT_FF = 0, 1, 2, 3
OFPMC_ADD, OFPMC_MODIFY, OFPMC_DELETE = 0, 1, 2
OFPMF_KBPS, OFPMF_PKTPS, OFPMF_BURST, OFPMF_STATS = 1, 2, 4, 8
OFPMBT_DROP, OFPMBT_DSCP_REMARK = 1, 2

# multipart types and flags
OFPMP_DESC, OFPMP_FLOW, OFPMP_AGGREGATE, OFPMP_TABLE, OFPMP_PORT_STATS = 0, 1, 2, 3, 4
OFPMP_GROUP, OFPMP_GROUP_DESC, OFPMP_METER, OFPMP_METER_CONFIG, OFPMP_PORT_DESC = 6, 7, 9, 10, 13
OFPMPF_REPLY_MORE = 1

# action types (7.2.5) and instruction types (7.2.4)
OFPAT_OUTPUT, OFPAT_PUSH_VLAN, OFPAT_POP_VLAN, OFPAT_PUSH_MPLS, OFPAT_POP_MPLS = 0, 17, 18, 19, 20
OFPAT_GROUP, OFPAT_SET_FIELD = 22, 25
OFPIT_GOTO_TABLE, OFPIT_WRITE_METADATA, OFPIT_WRITE_ACTIONS, OFPIT_APPLY_ACTIONS = 1, 2, 3, 4
OFPIT_CLEAR_ACTIONS, OFPIT_METER = 5, 6

# OXM basic-class field numbers (7.2.3.7, table 12)
OFPXMC_OPENFLOW_BASIC = 0x8000
IN_PORT, METADATA, ETH_DST, ETH_SRC, ETH_TYPE, VLAN_VID, VLAN_PCP = 0, 2, 3, 4, 5, 6, 7
IP_DSCP, IP_PROTO, IPV4_SRC, IPV4_DST, TCP_SRC, TCP_DST, UDP_SRC, UDP_DST = (
    8, 10, 11, 12, 13, 14, 15, 16)
MPLS_LABEL = 34
OFPVID_PRESENT = 0x1000

_HEADER = struct.Struct("!BBHI")  # version, type, length, xid
_OXM_BASIC = struct.Struct("!HBB")  # oxm_class, field << 1 | hasmask, length
_MATCH_OXM = struct.Struct("!HH")   # ofp_match type, length


# ---- framing ----------------------------------------------------------------------------------
def msg(type_: int, body: bytes = b"", xid: int = 0) -> bytes:
    """One message: the 8-byte header (version 4, ``type_``, length, ``xid``) and ``body``."""
    return _HEADER.pack(OFP_VERSION, type_, 8 + len(body), xid & 0xFFFFFFFF) + body


def message_length(buf, off: int = 0) -> int | None:
    """The length of the message starting at ``buf[off]`` when all of it is there, else None.
    ValueError when its header says less than 8 bytes (the stream cannot be framed)."""
    if len(buf) - off < 8:
        return None
    length = buf[off + 2] << 8 | buf[off + 3]
    if length < 8:
        raise ValueError(f"OpenFlow header length {length} < 8: the stream cannot be framed")
    return length if len(buf) - off >= length else None


def xid_of(m, off: int = 0) -> int:
    """The xid of the message starting at ``m[off]``."""
    return struct.unpack_from("!I", m, off + 4)[0]


def hello(xid: int = 1, version_bitmap: bool = True) -> bytes:
    """HELLO (7.5.1), with the version-bitmap element that offers OF1.3 only unless told not."""
    return msg(HELLO, struct.pack("!HHI", 1, 8, 1 << OFP_VERSION) if version_bitmap else b"", xid)


def with_length(message: bytes, length: int) -> bytes:
    """``message`` with its header length field set to ``length`` (bytes unchanged)."""
    return message[:2] + struct.pack("!H", length) + message[4:]


def retype(message: bytes, version: int | None = None, type_: int | None = None) -> bytes:
    """``message`` with another version and/or type byte in its header."""
    b = bytearray(message)
    if version is not None:
        b[0] = version
    if type_ is not None:
        b[1] = type_
    return bytes(b)


def _pad8(b: bytes) -> bytes:
    return b + bytes(-len(b) % 8)


# ---- match (7.2.3) ----------------------------------------------------------------------------
def oxm_raw(field_: int, payload: bytes, hasmask: bool = False, length: int | None = None,
            oxm_class: int = OFPXMC_OPENFLOW_BASIC) -> bytes:
    """An OXM TLV with any length field (``payload`` = value, then mask if ``hasmask``)."""
    n = len(payload) if length is None else length
    return struct.pack("!HBB", oxm_class, field_ << 1 | int(hasmask), n) + payload


def oxm(field: int, value: bytes, mask: bytes | None = None) -> bytes:
    """An OpenFlow-basic OXM TLV: ``value``, and ``mask`` when given. (``oxm_raw`` with the
    length it implies, written out: the benches build ~4 per FLOW_MOD, 100k FLOW_MODs a run,
    inside the timed install.)"""
    payload = value + mask if mask else value
    return _OXM_BASIC.pack(OFPXMC_OPENFLOW_BASIC, field << 1 | (1 if mask else 0),
                           len(payload)) + payload


def match_raw(body: bytes, type_: int = 1, length: int | None = None) -> bytes:
    """ofp_match with any type/length field around ``body`` (OXM TLVs), padded to 8 bytes."""
    m = struct.pack("!HH", type_, 4 + len(body) if length is None else length) + body
    return _pad8(m)


def match(*oxms: bytes) -> bytes:
    """An OXM ofp_match of the given TLVs (none: match everything); ``match_raw`` written out
    for the same reason as ``oxm``."""
    body = b"".join(oxms)
    m = _MATCH_OXM.pack(1, 4 + len(body)) + body
    return m + bytes(-len(m) % 8)


def match_oxms(m: bytes) -> list[bytes]:
    """The OXM TLVs inside an ofp_match built by ``match``."""
    (length,) = struct.unpack_from("!H", m, 2)
    out, off = [], 4
    while off < length:
        n = m[off + 3]
        out.append(m[off:off + 4 + n])
        off += 4 + n
    return out


# ---- actions (7.2.5) --------------------------------------------------------------------------
def action_output(port: int, max_len: int = 0xFFFF) -> bytes:
    return struct.pack("!HHIH6x", OFPAT_OUTPUT, 16, port, max_len)


def action_group(group_id: int) -> bytes:
    return struct.pack("!HHI", OFPAT_GROUP, 8, group_id)


def action_push(kind: int, ethertype: int) -> bytes:
    """A push action (``kind`` = OFPAT_PUSH_VLAN / _PUSH_MPLS / _PUSH_PBB) or POP_MPLS (whose
    ethertype is the one left after the pop): 8 bytes."""
    return struct.pack("!HHH2x", kind, 8, ethertype)


def action_push_vlan(ethertype: int = 0x8100) -> bytes:
    return action_push(OFPAT_PUSH_VLAN, ethertype)


def action_pop_vlan() -> bytes:
    return struct.pack("!HH4x", OFPAT_POP_VLAN, 8)


def action_push_mpls(ethertype: int = 0x8847) -> bytes:
    return action_push(OFPAT_PUSH_MPLS, ethertype)


def action_pop_mpls(ethertype: int = 0x0800) -> bytes:
    return action_push(OFPAT_POP_MPLS, ethertype)


def action_set_field(oxm_tlv: bytes) -> bytes:
    """SET_FIELD with one OXM TLV, padded to 8 bytes."""
    n = 4 + len(oxm_tlv)
    pad = -n % 8
    return struct.pack("!HH", OFPAT_SET_FIELD, n + pad) + oxm_tlv + bytes(pad)


# ---- instructions (7.2.4) ---------------------------------------------------------------------
def instruction(type_: int, body: bytes = b"", length: int | None = None) -> bytes:
    """Any instruction: its 4-byte head (with any length field) and ``body``."""
    return struct.pack("!HH", type_, 4 + len(body) if length is None else length) + body


def apply_actions(*actions: bytes) -> bytes:
    a = b"".join(actions)
    return struct.pack("!HH4x", OFPIT_APPLY_ACTIONS, 8 + len(a)) + a


def write_actions(*actions: bytes) -> bytes:
    a = b"".join(actions)
    return struct.pack("!HH4x", OFPIT_WRITE_ACTIONS, 8 + len(a)) + a


def goto_table(table: int) -> bytes:
    return struct.pack("!HHB3x", OFPIT_GOTO_TABLE, 8, table)


def write_metadata(value: int, mask: int = 0xFFFFFFFFFFFFFFFF) -> bytes:
    return struct.pack("!HH4xQQ", OFPIT_WRITE_METADATA, 24, value, mask)


def meter_instruction(meter_id: int) -> bytes:
    return struct.pack("!HHI", OFPIT_METER, 8, meter_id)


# ---- controller-to-switch messages ------------------------------------------------------------
def flow_mod(*, command: int = OFPFC_ADD, table: int = 0, priority: int = 0x8000,
             match_: bytes = b"", instructions: bytes = b"", cookie: int = 0, flags: int = 0,
             xid: int = 0, out_port: int = OFPP_ANY, buffer_id: int = NO_BUFFER,
             idle_timeout: int = 0, hard_timeout: int = 0) -> bytes:
    """FLOW_MOD (7.3.4.1); no ``match_`` = match everything."""
    body = struct.pack("!QQBBHHHIIIH2x", cookie, 0, table, command, idle_timeout, hard_timeout,
                       priority, buffer_id, out_port, OFPG_ANY, flags)
    return msg(FLOW_MOD, body + (match_ or match()) + instructions, xid)


def bucket(*actions: bytes, weight: int = 0, watch_port: int = OFPP_ANY,
           watch_group: int = OFPG_ANY, length: int | None = None) -> bytes:
    a = b"".join(actions)
    return struct.pack("!HHII4x", 16 + len(a) if length is None else length, weight, watch_port,
                       watch_group) + a


def group_mod(xid: int = 0, *, command: int = OFPGC_ADD, type_: int = OFPGT_ALL,
              group_id: int = 1, buckets: bytes | None = None) -> bytes:
    """GROUP_MOD (7.3.4.2); default one bucket that outputs to port 2."""
    if buckets is None:
        buckets = bucket(action_output(2))
    return msg(GROUP_MOD, struct.pack("!HBxI", command, type_, group_id) + buckets, xid)


def band_drop(rate: int = 1000, burst: int = 0) -> bytes:
    return struct.pack("!HHII4x", OFPMBT_DROP, 16, rate, burst)


def band_dscp(rate: int = 1000, prec_level: int = 1, burst: int = 0) -> bytes:
    return struct.pack("!HHIIB3x", OFPMBT_DSCP_REMARK, 16, rate, burst, prec_level)


def meter_mod(xid: int = 0, *, command: int = OFPMC_ADD, flags: int = OFPMF_KBPS,
              meter_id: int = 1, bands: bytes | None = None) -> bytes:
    """METER_MOD (7.3.4.4); default one drop band at 1000 kb/s."""
    if bands is None:
        bands = band_drop()
    return msg(METER_MOD, struct.pack("!HHI", command, flags, meter_id) + bands, xid)


def port_mod(xid: int, port: int, hw_addr: bytes, config: int = 0, mask: int = 0,
             advertise: int = 0) -> bytes:
    return msg(PORT_MOD, struct.pack("!I4x6s2xIII4x", port, hw_addr, config, mask, advertise),
               xid)


def table_mod(xid: int, table: int = 0, config: int = 0) -> bytes:
    return msg(TABLE_MOD, struct.pack("!B3xI", table, config), xid)


def role_request(xid: int, role: int, generation_id: int = 0) -> bytes:
    return msg(ROLE_REQUEST, struct.pack("!I4xQ", role, generation_id), xid)


def set_config(xid: int, flags: int = 0, miss_send_len: int = 128) -> bytes:
    return msg(SET_CONFIG, struct.pack("!HH", flags, miss_send_len), xid)


def packet_out(data: bytes, actions: bytes, in_port: int = OFPP_CONTROLLER, xid: int = 0, *,
               buffer_id: int = NO_BUFFER, actions_len: int | None = None) -> bytes:
    """PACKET_OUT (7.3.7) of ``data`` with the ``actions`` (any actions_len field)."""
    body = struct.pack("!IIH6x", buffer_id, in_port,
                       len(actions) if actions_len is None else actions_len) + actions + data
    return msg(PACKET_OUT, body, xid)


def multipart(mp_type: int, body: bytes = b"", xid: int = 0) -> bytes:
    return msg(MULTIPART_REQUEST, struct.pack("!HH4x", mp_type, 0) + body, xid)


def port_stats_request(xid: int = 0) -> bytes:
    return multipart(OFPMP_PORT_STATS, struct.pack("!I4x", OFPP_ANY), xid)


def flow_stats_body(match_: bytes = b"", table: int = OFPTT_ALL) -> bytes:
    """The body of an OFPMP_FLOW request: any out port/group/cookie, ``match_``."""
    return struct.pack("!B3xII4xQQ", table, OFPP_ANY, OFPG_ANY, 0, 0) + (match_ or match())


def flow_stats_request(xid: int = 0, match_: bytes = b"", table: int = OFPTT_ALL) -> bytes:
    """All flows' stats (of ``table``, every table by default) matching ``match_``."""
    return multipart(OFPMP_FLOW, flow_stats_body(match_, table), xid)


# ---- switch-to-controller messages (the null switch's answers) --------------------------------
def features_reply(xid: int, datapath_id: int = 0xF0, n_buffers: int = 0, n_tables: int = 1,
                   auxiliary_id: int = 0, capabilities: int = 0) -> bytes:
    return msg(FEATURES_REPLY, struct.pack("!QIBB2xII", datapath_id, n_buffers, n_tables,
                                           auxiliary_id, capabilities, 0), xid)


# ---- decoders ---------------------------------------------------------------------------------
def parse_port_stats(body: bytes) -> dict[int, dict]:
    """MULTIPART_REPLY body (after the 8-byte multipart header) -> {port: {rx, tx}}."""
    out = {}
    for off in range(0, len(body) - 111, 112):
        port, = struct.unpack_from("!I", body, off)
        rx, tx = struct.unpack_from("!QQ", body, off + 8)
        out[port] = {"rx_packets": rx, "tx_packets": tx}
    return out


def parse_flow_packets(bodies: list[bytes]) -> dict[tuple[int, bytes], int]:
    """OFPMP_FLOW reply bodies (after the multipart header) -> {(priority, match): packets};
    the match is its unpadded ofp_match bytes."""
    out = {}
    for body in bodies:
        off = 0
        while off + 56 <= len(body):
            length, = struct.unpack_from("!H", body, off)
            prio, = struct.unpack_from("!H", body, off + 12)
            packets, = struct.unpack_from("!Q", body, off + 32)
            mlen, = struct.unpack_from("!H", body, off + 50)
            out[(prio, body[off + 48: off + 48 + mlen])] = packets
            off += length
    return out


def multipart_flags(m) -> int:
    """The flags of a whole MULTIPART_REPLY message (OFPMPF_REPLY_MORE: more parts follow)."""
    return struct.unpack_from("!H", m, 10)[0]


def count_entries(m) -> int:
    """Entries (each led by its 16-bit length) in a whole MULTIPART_REPLY message."""
    entries, o = 0, 16
    while o + 2 <= len(m):
        ln = struct.unpack_from("!H", m, o)[0]
        if ln == 0:
            break
        entries += 1
        o += ln
    return entries


def error_type_code(body: bytes) -> tuple[int, int]:
    """(type, code) of an OFPT_ERROR message's body."""
    return struct.unpack_from("!HH", body)


# ---- the os-ken apps' hot path: raw Packet-Out / Packet-In without message objects ------------
_PACKET_OUT_HEAD = struct.Struct("!BBHIIIH6x")  # ofp_header + buffer_id, in_port, actions_len
_ACTION_OUTPUT = struct.Struct("!HHIH6x")       # ofp_action_output (16 B)


def packet_out_bytes(xid: int, in_port: int, out_port: int, data: bytes) -> bytes:
    """The wire bytes of an OF1.3 Packet-Out (no buffer, one output action, ``data`` attached),
    byte-identical to os-ken's OFPPacketOut (openflow/tests/test_os_ken_agreement.py).

    Why not os-ken's OFPPacketOut: building and serialising the message object costs tens of
    microseconds of Python per packet on the thread that also holds the GIL for everyone else;
    both apps (FIFO and prioritised) send through this, so the comparison stays like for like.
    """
    head_len = _PACKET_OUT_HEAD.size + _ACTION_OUTPUT.size
    return b"".join((
        _PACKET_OUT_HEAD.pack(OFP_VERSION, PACKET_OUT, head_len + len(data),
                              xid & 0xFFFFFFFF, NO_BUFFER, in_port, _ACTION_OUTPUT.size),
        _ACTION_OUTPUT.pack(OFPAT_OUTPUT, _ACTION_OUTPUT.size, out_port, OFPCML_MAX),
        data))


_PACKET_IN_HEAD = struct.Struct("!BBHIIHBBQ")  # ofp_header, buffer_id, total_len, reason,
#                                                table_id, cookie: 24 B, then ofp_match
_MATCH_HEAD = struct.Struct("!HH")             # ofp_match type, length (without padding)
_OXM_HEAD = struct.Struct("!HBB")              # oxm_class, field<<1 | hasmask, length


class PacketInError(ValueError):
    """A Packet-In whose lengths do not add up (the switch sent a malformed message)."""


def packet_in_fields(buf) -> tuple[int | None, int]:
    """(in_port, offset of the frame) of one OF1.3 Packet-In message in ``buf``
    (bytes/bytearray/memoryview holding exactly the message, ``len(buf)`` = its length).

    Layout (OF1.3 7.4.1): 24 B head, then ofp_match (type, length, OXM TLVs) padded to a
    multiple of 8, then 2 B pad, then the frame. ``in_port`` comes from the match's
    IN_PORT OXM (None when absent). Raises PacketInError when the lengths are inconsistent.
    Pure; called on os-ken's receive thread for every Packet-In, so it reads only the few
    fields it needs instead of building os-ken's OFPPacketIn.
    """
    n = len(buf)
    head = _PACKET_IN_HEAD.size
    if n < head + _MATCH_HEAD.size:
        raise PacketInError(f"Packet-In of {n} B is shorter than its fixed part")
    _mtype, match_len = _MATCH_HEAD.unpack_from(buf, head)
    if match_len < _MATCH_HEAD.size:
        raise PacketInError(f"Packet-In match length {match_len} < 4")
    data_off = head + (match_len + 7) // 8 * 8 + 2
    if data_off > n:
        raise PacketInError(f"Packet-In match length {match_len} runs past the message ({n} B)")
    in_port = None
    off, end = head + _MATCH_HEAD.size, head + match_len
    while off + _OXM_HEAD.size <= end:
        oxm_class, field_mask, oxm_len = _OXM_HEAD.unpack_from(buf, off)
        if (oxm_class == OFPXMC_OPENFLOW_BASIC and field_mask >> 1 == IN_PORT
                and oxm_len == 4 and off + 8 <= end):
            in_port = int.from_bytes(buf[off + 4:off + 8], "big")
            break
        off += _OXM_HEAD.size + oxm_len
    return in_port, data_off
