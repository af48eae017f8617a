"""Negative OpenFlow 1.3.5 conformance: one case per refusal the spec mandates or recommends.

Pure data and builders, no I/O (the runner is ``negative_runner.py``, the test
``test_negative.py``). Each :class:`Case` holds the bytes sent on a live session, the
OFPT_ERROR (type, code) the spec names, the other answers the spec leaves open (if any), the
section it cites and, where the spec leaves a choice, which answer we consider right and why.

Sections are those of the OpenFlow Switch Specification 1.3.5 (ONF TS-023): 5.x pipeline,
groups, meters; 6.3.6 multiple controllers; 6.4-6.6 flow/group/meter modification; 7.1 header;
7.2.3 match (7.2.3.5 masking, 7.2.3.6 prerequisites, 7.2.3.7 fields), 7.2.4 instructions, 7.2.5
actions; 7.3.x controller-to-switch messages; 7.5.4 error codes; 7.5.5 experimenter.

Framing: every message's header length equals the bytes sent, so the stream stays framed and
one bad message cannot swallow the next (the ECHO that proves liveness). "Header length shorter
than the message" is a header whose length cuts the body's own structures (a truncated body:
the switch must see BAD_LEN, not read past the message); "longer" is a header whose length
covers bytes past those structures (trailing garbage). The one exception is
``header_len_below_8``, which cannot be framed at all (``reframes=False``).

Messages are built for a :class:`Context` (the switch's port numbers and MAC addresses, read
from PORT_DESC) and carry the xid the runner gives each case.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Callable

from os_ken.ofproto import ofproto_v1_3 as ofp

import openflow as w
# the wire names and encoders the catalogue calls by their bare names (openflow.wire is their
# one home; the catalogue adds only the switch-specific numbers below)
from openflow.wire import (ETH_DST, ETH_SRC, ETH_TYPE, IN_PORT, IP_DSCP, IP_PROTO,  # noqa: F401
                           IPV4_DST, IPV4_SRC, METADATA, OFPP_ALL, OFPP_IN_PORT, OFPP_TABLE,
                           TCP_DST, TCP_SRC, UDP_DST, VLAN_PCP, VLAN_VID, action_group,
                           action_push, band_drop, band_dscp, bucket, flow_stats_request,
                           goto_table, group_mod, instruction, match_raw, meter_instruction,
                           meter_mod, oxm_raw, port_mod, retype, role_request, set_config,
                           table_mod, with_length)
from openflow.wire import action_set_field as set_field  # noqa: F401

OFPT_EXPERIMENTER, OFPT_GET_CONFIG_REQUEST, OFPT_SET_CONFIG = (
    w.EXPERIMENTER, w.GET_CONFIG_REQUEST, w.SET_CONFIG)
OFPT_PORT_MOD, OFPT_TABLE_MOD, OFPT_QUEUE_GET_CONFIG_REQUEST = (
    w.PORT_MOD, w.TABLE_MOD, w.QUEUE_GET_CONFIG_REQUEST)
OFPT_ROLE_REQUEST, OFPT_GET_ASYNC_REQUEST, OFPT_SET_ASYNC = (
    w.ROLE_REQUEST, w.GET_ASYNC_REQUEST, w.SET_ASYNC)
NO_SUCH_PORT = 99          # a valid port number (< OFPP_MAX) the switch does not have
NO_SUCH_GROUP = 77
NO_SUCH_METER = 55

ANY_CODE = -1              # in an acceptable answer: any code of that error type
DISCONNECT = "disconnect"  # in an acceptable answer: the switch closes the connection


@dataclass(frozen=True)
class Context:
    """What the cases need to know about the switch under test."""
    ports: tuple[int, ...] = (1, 2)
    macs: dict = field(default_factory=lambda: {1: b"\x02\0\0\0\0\x01", 2: b"\x02\0\0\0\0\x02"})


@dataclass(frozen=True)
class Case:
    name: str
    category: str
    section: str
    why: str                                   # what is wrong, in the spec's terms
    build: Callable[[Context, int], bytes]     # (context, xid) -> the message
    expected: tuple[int, int]                  # the (type, code) the spec names / we chose
    acceptable: tuple = ()                     # other answers the spec allows
    choice: str = ""                           # where the spec leaves a choice: ours and why
    strength: str = "must"                     # "must" (mandated) or "should" (recommended)
    setup: tuple[Callable[[Context, int], bytes], ...] = ()     # accepted before the case
    teardown: tuple[Callable[[Context, int], bytes], ...] = ()  # restores the session state
    observe: str | None = None                 # state to compare when silent (see runner)
    reframes: bool = True                      # False: the header cannot be framed
    quick: bool = False                        # in the fast subset both switches answer right

    def message(self, ctx: Context, xid: int) -> bytes:
        return self.build(ctx, xid)

    def answers(self) -> tuple:
        return (self.expected, *self.acceptable)


def error_name(type_: int, code: int) -> str:
    """(4, 9) -> 'BAD_MATCH/BAD_PREREQ' from os-ken's constants (numbers if unknown)."""
    prefixes = {0: "OFPHFC_", 1: "OFPBRC_", 2: "OFPBAC_", 3: "OFPBIC_", 4: "OFPBMC_",
                5: "OFPFMFC_", 6: "OFPGMFC_", 7: "OFPPMFC_", 8: "OFPTMFC_", 9: "OFPQOFC_",
                10: "OFPSCFC_", 11: "OFPRRFC_", 12: "OFPMMFC_", 13: "OFPTFFC_"}
    tname = next((n[6:] for n in dir(ofp) if n.startswith("OFPET_")
                  and getattr(ofp, n) == type_), str(type_))
    if code == ANY_CODE:
        return f"{tname}/*"
    pre = prefixes.get(type_)
    cname = next((n[len(pre):] for n in dir(ofp) if pre and n.startswith(pre)
                  and getattr(ofp, n) == code), str(code)) if pre else str(code)
    return f"{tname}/{cname}"


def answer_name(a) -> str:
    return a if isinstance(a, str) else error_name(*a)


def matches_answer(answer, type_: int, code: int) -> bool:
    return (not isinstance(answer, str) and answer[0] == type_
            and (answer[1] == ANY_CODE or answer[1] == code))


# ---- builders (pure) ---------------------------------------------------------------------
ETH_IP = w.oxm(ETH_TYPE, b"\x08\x00")


def flow_add(xid: int, match_: bytes = b"", instructions: bytes = b"", **kw) -> bytes:
    if not instructions:
        instructions = w.apply_actions(w.action_output(2))
    return w.flow_mod(match_=match_, instructions=instructions, xid=xid, **kw)


def flow_mod_raw(xid: int, *, command: int = 0, table: int = 0, buffer_id: int = w.NO_BUFFER,
                 flags: int = 0, priority: int = 0x8000, tail: bytes = b"") -> bytes:
    """FLOW_MOD with every fixed field settable; ``tail`` = match + instructions."""
    return w.flow_mod(command=command, table=table, buffer_id=buffer_id, flags=flags,
                      priority=priority, xid=xid,
                      match_=tail or w.match() + w.apply_actions(w.action_output(2)))


def packet_out_raw(xid: int, actions: bytes, data: bytes, *, in_port: int = w.OFPP_CONTROLLER,
                   buffer_id: int = w.NO_BUFFER, actions_len: int | None = None) -> bytes:
    return w.packet_out(data, actions, in_port, xid, buffer_id=buffer_id,
                        actions_len=actions_len)


# An Ethernet frame that is not IP (local experimental ethertype 0x88b5), and an IPv4/UDP one.
FRAME_NON_IP = b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x88\xb5" + bytes(46)
FRAME_IPV4_UDP = (b"\x02\0\0\0\0\x02" + b"\x02\0\0\0\0\x01" + b"\x08\x00"
                  + bytes.fromhex("450000210000000040110000" "0a000001" "0a000002")
                  + bytes.fromhex("003500350000" "0000") + bytes(13))


def _slave(gen: int):
    return (lambda c, x: role_request(x, ofp.OFPCR_ROLE_SLAVE, gen),)


_EQUAL = (lambda c, x: role_request(x, ofp.OFPCR_ROLE_EQUAL, 0),)
_FLOW_BASE = (lambda c, x: flow_add(x, w.match(ETH_IP), priority=100),)
_GROUP_1 = (lambda c, x: group_mod(x, group_id=1),)
_METER_1 = (lambda c, x: meter_mod(x, meter_id=1),)

E = ofp  # short alias in the table below


def _c(name, category, section, why, build, expected, **kw) -> Case:
    return Case(name, category, section, why, build, expected, **kw)


def catalogue() -> list[Case]:
    """Every case, in the order the runner sends them (role cases use rising generation ids,
    so the order matters)."""
    BR, BM, BI, BA = E.OFPET_BAD_REQUEST, E.OFPET_BAD_MATCH, E.OFPET_BAD_INSTRUCTION, \
        E.OFPET_BAD_ACTION
    FM, GM, MM = E.OFPET_FLOW_MOD_FAILED, E.OFPET_GROUP_MOD_FAILED, E.OFPET_METER_MOD_FAILED
    out2 = w.apply_actions(w.action_output(2))
    cases = [
        # ---- header and lengths (7.1, 7.5.4) -------------------------------------------------
        _c("bad_version", "header/length", "7.1.1, 7.5.4",
           "a message with version 0x03 after 1.3 was negotiated",
           lambda c, x: retype(w.msg(w.FEATURES_REQUEST, xid=x), version=3),
           (BR, E.OFPBRC_BAD_VERSION), quick=True),
        _c("unknown_type", "header/length", "7.1.1, 7.5.4",
           "message type 40 is not defined in 1.3",
           lambda c, x: w.msg(40, xid=x), (BR, E.OFPBRC_BAD_TYPE), quick=True),
        _c("features_request_with_body", "header/length", "7.3.1, 7.5.4",
           "FEATURES_REQUEST is a bare header; header length 16",
           lambda c, x: w.msg(w.FEATURES_REQUEST, bytes(8), x), (BR, E.OFPBRC_BAD_LEN)),
        _c("get_config_request_with_body", "header/length", "7.3.2, 7.5.4",
           "GET_CONFIG_REQUEST is a bare header; header length 12",
           lambda c, x: w.msg(OFPT_GET_CONFIG_REQUEST, bytes(4), x), (BR, E.OFPBRC_BAD_LEN)),
        _c("barrier_request_with_body", "header/length", "7.3.8, 7.5.4",
           "BARRIER_REQUEST is a bare header; header length 16",
           lambda c, x: w.msg(w.BARRIER_REQUEST, bytes(8), x), (BR, E.OFPBRC_BAD_LEN)),
        _c("get_async_request_with_body", "header/length", "7.3.10, 7.5.4",
           "GET_ASYNC_REQUEST is a bare header; header length 16",
           lambda c, x: w.msg(OFPT_GET_ASYNC_REQUEST, bytes(8), x), (BR, E.OFPBRC_BAD_LEN)),
        _c("set_config_truncated", "header/length", "7.3.2, 7.5.4",
           "SET_CONFIG of 10 bytes (needs 12)",
           lambda c, x: w.msg(OFPT_SET_CONFIG, b"\0\0", x), (BR, E.OFPBRC_BAD_LEN),
           observe="config"),
        _c("set_async_truncated", "header/length", "7.3.10, 7.5.4",
           "SET_ASYNC of 16 bytes (needs 32)",
           lambda c, x: w.msg(OFPT_SET_ASYNC, bytes(8), x), (BR, E.OFPBRC_BAD_LEN)),
        _c("role_request_truncated", "header/length", "7.3.9, 7.5.4",
           "ROLE_REQUEST of 16 bytes (needs 24)",
           lambda c, x: w.msg(OFPT_ROLE_REQUEST, struct.pack("!I4x", 0), x),
           (BR, E.OFPBRC_BAD_LEN)),
        _c("flow_mod_truncated", "header/length", "7.3.4.1, 7.5.4",
           "header length 40 cuts FLOW_MOD's fixed part (48 bytes before the match)",
           lambda c, x: with_length(flow_add(x), 40)[:40], (BR, E.OFPBRC_BAD_LEN),
           observe="flows"),
        _c("flow_mod_cuts_match", "header/length", "7.3.4.1, 7.2.3.1",
           "header length ends inside the match (match length says more)",
           lambda c, x: with_length(flow_add(x, w.match(ETH_IP, w.oxm(IP_PROTO, b"\x06"))),
                                    56)[:56],
           (BM, E.OFPBMC_BAD_LEN), acceptable=((BR, E.OFPBRC_BAD_LEN),), observe="flows",
           choice="the header is consistent, the match overruns it: BAD_MATCH/BAD_LEN names "
                  "the structure at fault; BAD_REQUEST/BAD_LEN is as good"),
        _c("flow_mod_trailing_bytes", "header/length", "7.3.4.1, 7.2.4",
           "header length covers 4 bytes past the last instruction (a 4-byte instruction "
           "fragment)",
           lambda c, x: (lambda m: with_length(m + b"\0\0\0\0", len(m) + 4))(flow_add(x)),
           (BI, E.OFPBIC_BAD_LEN), acceptable=((BR, E.OFPBRC_BAD_LEN),), observe="flows",
           choice="the trailing bytes sit where the next instruction would: BAD_INSTRUCTION/"
                  "BAD_LEN; BAD_REQUEST/BAD_LEN is as good"),
        _c("packet_out_truncated", "header/length", "7.3.7, 7.5.4",
           "PACKET_OUT of 20 bytes (fixed part is 24)",
           lambda c, x: w.msg(w.PACKET_OUT, struct.pack("!IIH2x", w.NO_BUFFER,
                                                        w.OFPP_CONTROLLER, 0), x),
           (BR, E.OFPBRC_BAD_LEN)),
        _c("group_mod_truncated", "header/length", "7.3.4.2, 7.5.4",
           "GROUP_MOD of 12 bytes (fixed part is 16)",
           lambda c, x: w.msg(w.GROUP_MOD, struct.pack("!HBx", 0, 0), x),
           (BR, E.OFPBRC_BAD_LEN), observe="groups"),
        _c("meter_mod_truncated", "header/length", "7.3.4.4, 7.5.4",
           "METER_MOD of 12 bytes (fixed part is 16)",
           lambda c, x: w.msg(w.METER_MOD, struct.pack("!HH", 0, 1), x),
           (BR, E.OFPBRC_BAD_LEN), observe="meters"),
        _c("port_mod_truncated", "header/length", "7.3.4.3, 7.5.4",
           "PORT_MOD of 32 bytes (needs 40)",
           lambda c, x: with_length(port_mod(x, c.ports[0], c.macs[c.ports[0]])[:32], 32),
           (BR, E.OFPBRC_BAD_LEN), observe="ports"),
        _c("table_mod_truncated", "header/length", "7.3.3, 7.5.4",
           "TABLE_MOD of 12 bytes (needs 16)",
           lambda c, x: w.msg(OFPT_TABLE_MOD, b"\0\0\0\0", x), (BR, E.OFPBRC_BAD_LEN)),
        _c("multipart_truncated", "header/length", "7.3.5, 7.5.4",
           "MULTIPART_REQUEST of 12 bytes (its header is 16)",
           lambda c, x: w.msg(w.MULTIPART_REQUEST, struct.pack("!HH", 0, 0), x),
           (BR, E.OFPBRC_BAD_LEN)),
        _c("header_len_below_8", "header/length", "7.1.1, 7.5.4",
           "header length 4: the stream cannot be framed any more",
           lambda c, x: struct.pack("!BBHI", 4, w.ECHO_REQUEST, 4, x),
           (BR, E.OFPBRC_BAD_LEN), acceptable=(DISCONNECT,), reframes=False,
           choice="no boundary to resume from: an OFPBRC_BAD_LEN then closing the connection "
                  "is best (the controller learns why); closing alone is acceptable"),
        _c("experimenter_unknown", "header/length", "7.5.5",
           "OFPT_EXPERIMENTER with an experimenter id the switch does not know",
           lambda c, x: w.msg(OFPT_EXPERIMENTER, struct.pack("!II", 0x00FFEE01, 1), x),
           (BR, E.OFPBRC_BAD_EXPERIMENTER), quick=True),

        # ---- bad match (7.2.3) ---------------------------------------------------------------
        _c("match_value_outside_mask", "bad match", "7.2.3.5",
           "ipv4_src 10.0.0.1/255.255.255.0: a value bit set where the mask is 0",
           lambda c, x: flow_add(x, w.match(ETH_IP, w.oxm(IPV4_SRC, b"\x0a\0\0\x01",
                                                          b"\xff\xff\xff\0"))),
           (BM, E.OFPBMC_BAD_WILDCARDS), observe="flows"),
        _c("match_eth_value_outside_mask", "bad match", "7.2.3.5",
           "eth_dst 02:00:00:00:00:01/ff:ff:ff:00:00:00: value bits outside the mask",
           lambda c, x: flow_add(x, w.match(w.oxm(ETH_DST, b"\x02\0\0\0\0\x01",
                                                  b"\xff\xff\xff\0\0\0"))),
           (BM, E.OFPBMC_BAD_WILDCARDS), observe="flows"),
        _c("match_prereq_missing_eth_type", "bad match", "7.2.3.6",
           "ipv4_src without eth_type=0x0800",
           lambda c, x: flow_add(x, w.match(w.oxm(IPV4_SRC, b"\x0a\0\0\x01"))),
           (BM, E.OFPBMC_BAD_PREREQ), observe="flows", quick=True),
        _c("match_prereq_wrong_eth_type", "bad match", "7.2.3.6",
           "ipv4_src with eth_type=0x86dd",
           lambda c, x: flow_add(x, w.match(w.oxm(ETH_TYPE, b"\x86\xdd"),
                                            w.oxm(IPV4_SRC, b"\x0a\0\0\x01"))),
           (BM, E.OFPBMC_BAD_PREREQ), observe="flows"),
        _c("match_prereq_missing_ip_proto", "bad match", "7.2.3.6",
           "tcp_dst with eth_type=0x0800 but no ip_proto=6",
           lambda c, x: flow_add(x, w.match(ETH_IP, w.oxm(TCP_DST, b"\0\x50"))),
           (BM, E.OFPBMC_BAD_PREREQ), observe="flows"),
        _c("match_prereq_vlan_pcp", "bad match", "7.2.3.6",
           "vlan_pcp without a vlan_vid that excludes OFPVID_NONE",
           lambda c, x: flow_add(x, w.match(w.oxm(VLAN_PCP, b"\x03"))),
           (BM, E.OFPBMC_BAD_PREREQ), observe="flows"),
        _c("match_dup_field", "bad match", "7.2.3.6",
           "in_port appears twice",
           lambda c, x: flow_add(x, w.match(w.oxm(IN_PORT, struct.pack("!I", 1)),
                                            w.oxm(IN_PORT, struct.pack("!I", 2)))),
           (BM, E.OFPBMC_DUP_FIELD), observe="flows", quick=True),
        _c("match_in_port_zero", "bad match", "7.2.3.7, 4.1",
           "in_port=0: not a valid port number",
           lambda c, x: flow_add(x, w.match(w.oxm(IN_PORT, struct.pack("!I", 0)))),
           (BM, E.OFPBMC_BAD_VALUE), observe="flows", strength="should",
           choice="7.2.3.7 defines in_port as a physical or logical switch port; 0 is "
                  "neither (4.1), so the value is unsupported: BAD_VALUE"),
        _c("match_in_port_any", "bad match", "7.2.3.7, 4.5",
           "in_port=OFPP_ANY: a wildcard value, never a packet's ingress port",
           lambda c, x: flow_add(x, w.match(w.oxm(IN_PORT, struct.pack("!I", w.OFPP_ANY)))),
           (BM, E.OFPBMC_BAD_VALUE), observe="flows", strength="should",
           choice="OFPP_ANY means 'no port' (4.5): a flow matching it can never match"),
        _c("match_in_port_masked", "bad match", "7.2.3.7 (table 12)",
           "in_port with a mask (in_port is not maskable)",
           lambda c, x: flow_add(x, w.match(w.oxm(IN_PORT, struct.pack("!I", 1),
                                                  b"\xff\xff\xff\x00"))),
           (BM, E.OFPBMC_BAD_MASK), observe="flows"),
        _c("match_field_bad_length", "bad match", "7.2.3.2",
           "eth_type OXM with oxm_length 3 (the field is 2 bytes)",
           lambda c, x: flow_add(x, match_raw(oxm_raw(ETH_TYPE, b"\x08\x00\x00"))),
           (BM, E.OFPBMC_BAD_LEN), acceptable=((BM, E.OFPBMC_BAD_FIELD),), observe="flows",
           choice="BAD_LEN names the defect; BAD_FIELD accepted, since the 32-bit OXM header "
                  "(class, field, hasmask, length) identifies the field (7.2.3.2)"),
        _c("match_unknown_field", "bad match", "7.2.3.7",
           "OXM basic class field 60 (undefined)",
           lambda c, x: flow_add(x, match_raw(oxm_raw(60, b"\0\0\0\0"))),
           (BM, E.OFPBMC_BAD_FIELD), observe="flows"),
        _c("match_bad_value_dscp", "bad match", "7.2.3.7",
           "ip_dscp=64: the field has 6 bits",
           lambda c, x: flow_add(x, w.match(ETH_IP, w.oxm(IP_DSCP, b"\x40"))),
           (BM, E.OFPBMC_BAD_VALUE), observe="flows"),
        _c("match_bad_type", "bad match", "7.2.3.1",
           "ofp_match.type=0 (OFPMT_STANDARD, deprecated; 1.3 uses OFPMT_OXM)",
           lambda c, x: flow_add(x, match_raw(b"", type_=0)),
           (BM, E.OFPBMC_BAD_TYPE), observe="flows"),
        _c("match_length_overrun", "bad match", "7.2.3.1",
           "ofp_match.length 200 in a 64-byte message",
           lambda c, x: flow_add(x, match_raw(ETH_IP, length=200)),
           (BM, E.OFPBMC_BAD_LEN), acceptable=((BR, E.OFPBRC_BAD_LEN),), observe="flows",
           choice="BAD_MATCH/BAD_LEN names the structure at fault; BAD_REQUEST/BAD_LEN is "
                  "as good"),
        _c("flow_stats_dup_field", "bad match", "7.3.5.2, 7.2.3.6",
           "FLOW stats request whose match has eth_type twice",
           lambda c, x: flow_stats_request(x, w.match(ETH_IP, ETH_IP)),
           (BM, E.OFPBMC_DUP_FIELD), strength="should",
           choice="the spec applies the match rules to stats requests by reference (same "
                  "ofp_match); a reply that ignores the defect hides the controller's bug"),

        # ---- bad instruction (7.2.4, 5.9) ----------------------------------------------------
        _c("instruction_unknown_type", "bad instruction", "7.2.4",
           "instruction type 9 (undefined)",
           lambda c, x: flow_add(x, instructions=instruction(9, bytes(4))),
           (BI, E.OFPBIC_UNKNOWN_INST), observe="flows"),
        _c("instruction_goto_backward", "bad instruction", "5.1, 7.2.4",
           "table 1 flow with goto_table 0 (pipeline only goes forward)",
           lambda c, x: flow_add(x, table=1, instructions=goto_table(0)),
           (BI, E.OFPBIC_BAD_TABLE_ID), observe="flows", quick=True),
        _c("instruction_goto_missing_table", "bad instruction", "7.2.4",
           "goto_table 254 (no such table)",
           lambda c, x: flow_add(x, instructions=goto_table(254)),
           (BI, E.OFPBIC_BAD_TABLE_ID), observe="flows"),
        _c("instruction_bad_length", "bad instruction", "7.2.4",
           "apply_actions with length 4 (its header is 8)",
           lambda c, x: flow_add(x, instructions=instruction(ofp.OFPIT_APPLY_ACTIONS,
                                                             length=4) + bytes(4)),
           (BI, E.OFPBIC_BAD_LEN), acceptable=((BA, E.OFPBAC_BAD_LEN),), observe="flows",
           choice="the instruction's own length is wrong: BAD_INSTRUCTION/BAD_LEN; a switch "
                  "that reads the action list first sees a bad action length, accepted"),
        _c("instruction_duplicate", "bad instruction", "5.9",
           "two apply_actions instructions (at most one of each type)",
           lambda c, x: flow_add(x, instructions=out2 + out2),
           (BI, E.OFPBIC_UNSUP_INST), acceptable=((BI, ANY_CODE),
                                                  (E.OFPET_EXPERIMENTER, ANY_CODE)),
           observe="flows",
           choice="1.3 names no code (1.4 added OFPBIC_DUP_INST); any BAD_INSTRUCTION code "
                  "or an experimenter error (OVS's ONF extension) is acceptable, we use "
                  "UNSUP_INST: the combination is not supported"),
        _c("instruction_unknown_meter", "bad instruction", "5.7, 7.3.4.4",
           f"meter instruction to meter {NO_SUCH_METER}, which does not exist",
           lambda c, x: flow_add(x, instructions=meter_instruction(NO_SUCH_METER) + out2),
           (MM, E.OFPMMFC_UNKNOWN_METER), acceptable=((MM, E.OFPMMFC_INVALID_METER),),
           observe="flows",
           choice="the 1.3.5 header comments name both codes for a bad meter in a meter "
                  "instruction; UNKNOWN_METER (it does not exist) is the precise one, "
                  "INVALID_METER accepted"),
        _c("instruction_experimenter_unknown", "bad instruction", "7.2.4",
           "EXPERIMENTER instruction with an experimenter id the switch does not know",
           lambda c, x: flow_add(x, instructions=instruction(ofp.OFPIT_EXPERIMENTER,
                                                             struct.pack("!I", 0x00FFEE01))),
           (BI, E.OFPBIC_BAD_EXPERIMENTER), acceptable=((BI, E.OFPBIC_UNSUP_INST),),
           observe="flows",
           choice="BAD_EXPERIMENTER names the unknown id; UNSUP_INST accepted from a switch "
                  "that supports no experimenter instruction at all"),

        # ---- bad action in FLOW_MOD (7.2.5, 5.12, 4.5) ---------------------------------------
        _c("action_unknown_type", "bad action", "7.2.5",
           "action type 30 (undefined)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(struct.pack("!HH4x", 30, 8))),
           (BA, E.OFPBAC_BAD_TYPE), observe="flows"),
        _c("action_experimenter_unknown", "bad action", "7.2.5",
           "EXPERIMENTER action with an experimenter id the switch does not know",
           lambda c, x: flow_add(x, instructions=w.apply_actions(
               struct.pack("!HHI", ofp.OFPAT_EXPERIMENTER, 8, 0x00FFEE01))),
           (BA, E.OFPBAC_BAD_EXPERIMENTER), observe="flows"),
        _c("action_bad_length", "bad action", "7.2.5",
           "output action with length 8 (it is 16)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(
               struct.pack("!HHI", 0, 8, 2))),
           (BA, E.OFPBAC_BAD_LEN), observe="flows"),
        _c("action_output_port_zero", "bad action", "4.1, 7.2.5",
           "output to port 0 (not a valid port number)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(w.action_output(0))),
           (BA, E.OFPBAC_BAD_OUT_PORT), observe="flows"),
        _c("action_output_port_any", "bad action", "4.5, 7.2.5",
           "output to OFPP_ANY (valid only as a wildcard in requests)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(w.action_output(w.OFPP_ANY))),
           (BA, E.OFPBAC_BAD_OUT_PORT), observe="flows"),
        _c("action_output_table_in_flow", "bad action", "4.5",
           "output to OFPP_TABLE in a flow entry (valid only in PACKET_OUT)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(w.action_output(OFPP_TABLE))),
           (BA, E.OFPBAC_BAD_OUT_PORT), observe="flows"),
        _c("action_output_reserved_gap", "bad action", "4.1, 7.2.5",
           "output to 0xffffff10 (above OFPP_MAX, not a reserved port)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(w.action_output(0xFFFFFF10))),
           (BA, E.OFPBAC_BAD_OUT_PORT), observe="flows"),
        _c("action_unknown_group", "bad action", "5.6, 7.2.5",
           f"group action to group {NO_SUCH_GROUP}, which does not exist",
           lambda c, x: flow_add(x, instructions=w.apply_actions(action_group(NO_SUCH_GROUP))),
           (BA, E.OFPBAC_BAD_OUT_GROUP), observe="flows", quick=True),
        _c("set_field_prereq_not_in_match", "bad action", "7.2.5, 7.2.3.6",
           "set_field ipv4_src in a flow whose match has no eth_type=0x0800",
           lambda c, x: flow_add(x, instructions=w.apply_actions(
               set_field(w.oxm(IPV4_SRC, b"\x0a\0\0\x09")), w.action_output(2))),
           (BA, E.OFPBAC_MATCH_INCONSISTENT), observe="flows"),
        _c("set_field_prereq_wrong_proto", "bad action", "7.2.5, 7.2.3.6",
           "set_field tcp_dst in a flow matching ip_proto=17 (UDP)",
           lambda c, x: flow_add(x, w.match(ETH_IP, w.oxm(IP_PROTO, b"\x11")),
                                 instructions=w.apply_actions(
                                     set_field(w.oxm(TCP_DST, b"\0\x50")),
                                     w.action_output(2))),
           (BA, E.OFPBAC_MATCH_INCONSISTENT), observe="flows"),
        _c("set_field_unknown_field", "bad action", "7.2.5",
           "set_field of OXM field 60 (undefined)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(
               set_field(oxm_raw(60, b"\0\0\0\0")))),
           (BA, E.OFPBAC_BAD_SET_TYPE), observe="flows"),
        _c("set_field_bad_length", "bad action", "7.2.5",
           "set_field eth_type with oxm_length 4 (the field is 2 bytes)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(
               set_field(oxm_raw(ETH_TYPE, b"\x08\x00\0\0")))),
           (BA, E.OFPBAC_BAD_SET_LEN), observe="flows"),
        _c("set_field_masked", "bad action", "7.2.5",
           "set_field with oxm_hasmask=1 (set-field carries no mask in 1.3)",
           lambda c, x: flow_add(x, w.match(ETH_IP), instructions=w.apply_actions(
               set_field(w.oxm(IPV4_SRC, b"\x0a\0\0\x09", b"\xff\xff\xff\xff")))),
           (BA, E.OFPBAC_BAD_SET_ARGUMENT),
           acceptable=((BA, E.OFPBAC_BAD_SET_TYPE), (BA, E.OFPBAC_BAD_SET_LEN)),
           observe="flows",
           choice="1.3 says the OXM in set-field must not be masked but names no code; "
                  "BAD_SET_ARGUMENT fits (the argument is the OXM); SET_TYPE/SET_LEN accepted"),
        _c("set_field_vlan_vid_too_big", "bad action", "7.2.5, 7.2.3.7",
           "set_field vlan_vid 0x2000|0x1fff (13-bit field with OFPVID_PRESENT; value 0x3fff)",
           lambda c, x: flow_add(x, w.match(w.oxm(VLAN_VID, b"\x10\x05")),
                                 instructions=w.apply_actions(
                                     set_field(w.oxm(VLAN_VID, b"\x3f\xff")),
                                     w.action_output(2))),
           (BA, E.OFPBAC_BAD_SET_ARGUMENT), observe="flows"),
        _c("push_vlan_bad_ethertype", "bad action", "7.2.5",
           "push_vlan with ethertype 0x0800 (must be 0x8100 or 0x88a8)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(
               action_push(ofp.OFPAT_PUSH_VLAN, 0x0800), w.action_output(2))),
           (BA, E.OFPBAC_BAD_ARGUMENT), observe="flows"),
        _c("push_mpls_bad_ethertype", "bad action", "7.2.5",
           "push_mpls with ethertype 0x0800 (must be 0x8847 or 0x8848)",
           lambda c, x: flow_add(x, instructions=w.apply_actions(
               action_push(ofp.OFPAT_PUSH_MPLS, 0x0800), w.action_output(2))),
           (BA, E.OFPBAC_BAD_ARGUMENT), observe="flows"),

        # ---- flow-mod failures (6.4, 7.3.4.1) ------------------------------------------------
        _c("flow_mod_bad_command", "flow mod", "7.3.4.1",
           "command 9 (undefined)",
           lambda c, x: flow_mod_raw(x, command=9), (FM, E.OFPFMFC_BAD_COMMAND),
           observe="flows"),
        _c("flow_mod_add_table_all", "flow mod", "6.4, 7.3.4.1",
           "ADD to table OFPTT_ALL (0xff)",
           lambda c, x: flow_mod_raw(x, table=0xFF), (FM, E.OFPFMFC_BAD_TABLE_ID),
           observe="flows"),
        _c("flow_mod_missing_table", "flow mod", "6.4, 7.3.4.1",
           "ADD to table 254 (no such table)",
           lambda c, x: flow_mod_raw(x, table=254), (FM, E.OFPFMFC_BAD_TABLE_ID),
           observe="flows"),
        _c("flow_mod_bad_flags", "flow mod", "7.1.3, 7.3.4.1",
           "flags bit 1<<8 (undefined in 1.3)",
           lambda c, x: flow_mod_raw(x, flags=0x100), (FM, E.OFPFMFC_BAD_FLAGS),
           observe="flows"),
        _c("flow_mod_check_overlap", "flow mod", "6.4",
           "ADD with CHECK_OVERLAP over an overlapping entry of the same priority",
           lambda c, x: flow_mod_raw(x, flags=ofp.OFPFF_CHECK_OVERLAP, priority=100,
                                     tail=w.match(ETH_IP, w.oxm(IP_PROTO, b"\x06")) + out2),
           (FM, E.OFPFMFC_OVERLAP), setup=_FLOW_BASE, observe="flows"),
        _c("flow_mod_unknown_buffer", "flow mod", "6.4, 7.3.4.1",
           "ADD with buffer_id 0x1234 (no such buffer)",
           lambda c, x: flow_mod_raw(x, buffer_id=0x1234),
           (BR, E.OFPBRC_BUFFER_UNKNOWN),
           choice="6.4 names BUFFER_UNKNOWN for a missing buffer; whether the entry is still "
                  "added is left open, so state is not compared"),

        # ---- PACKET_OUT (7.3.7) --------------------------------------------------------------
        _c("packet_out_port_zero", "packet out", "4.1, 7.3.7",
           "PACKET_OUT output to port 0",
           lambda c, x: packet_out_raw(x, w.action_output(0), FRAME_IPV4_UDP),
           (BA, E.OFPBAC_BAD_OUT_PORT)),
        _c("packet_out_missing_port", "packet out", "7.3.7, 7.2.5",
           f"PACKET_OUT output to port {NO_SUCH_PORT}, which does not exist",
           lambda c, x: packet_out_raw(x, w.action_output(NO_SUCH_PORT), FRAME_IPV4_UDP),
           (BA, E.OFPBAC_BAD_OUT_PORT), strength="should",
           choice="a flow may name a port that appears later, a PACKET_OUT runs now: "
                  "BAD_OUT_PORT tells the controller the frame went nowhere"),
        _c("packet_out_unknown_group", "packet out", "7.3.7, 7.2.5",
           f"PACKET_OUT group action to group {NO_SUCH_GROUP}",
           lambda c, x: packet_out_raw(x, action_group(NO_SUCH_GROUP), FRAME_IPV4_UDP),
           (BA, E.OFPBAC_BAD_OUT_GROUP)),
        _c("packet_out_set_field_prereq", "packet out", "7.3.7, 7.2.5, 7.2.3.6",
           "PACKET_OUT set_field ipv4_src on a frame that is not IPv4 (ethertype 0x88b5)",
           lambda c, x: packet_out_raw(x, set_field(w.oxm(IPV4_SRC, b"\x0a\0\0\x09"))
                                       + w.action_output(2), FRAME_NON_IP),
           (BA, E.OFPBAC_MATCH_INCONSISTENT),
           choice="a PACKET_OUT has no match: the prerequisites are checked against the "
                  "frame itself (OVS does the same with the flow it extracts)"),
        _c("packet_out_bad_in_port", "packet out", "7.3.7",
           "PACKET_OUT in_port=OFPP_ALL (must be a standard port or OFPP_CONTROLLER)",
           lambda c, x: packet_out_raw(x, w.action_output(2), FRAME_IPV4_UDP, in_port=OFPP_ALL),
           (BR, E.OFPBRC_BAD_PORT)),
        _c("packet_out_no_frame", "packet out", "7.3.7",
           "PACKET_OUT with buffer_id=NO_BUFFER and no data",
           lambda c, x: packet_out_raw(x, w.action_output(2), b""),
           (BR, E.OFPBRC_BAD_PACKET), acceptable=((BR, E.OFPBRC_BAD_LEN),),
           strength="should",
           choice="with no buffer the data is the packet (7.3.7); an empty one is an "
                  "invalid packet: BAD_PACKET; BAD_LEN accepted"),
        _c("packet_out_runt_frame", "packet out", "7.3.7",
           "PACKET_OUT with a 10-byte frame (shorter than an Ethernet header)",
           lambda c, x: packet_out_raw(x, w.action_output(2), FRAME_IPV4_UDP[:10]),
           (BR, E.OFPBRC_BAD_PACKET), acceptable=((BR, E.OFPBRC_BAD_LEN),),
           strength="should",
           choice="a frame without a whole Ethernet header cannot be parsed for the actions: "
                  "BAD_PACKET; BAD_LEN accepted"),
        _c("packet_out_actions_overrun", "packet out", "7.3.7",
           "actions_len 64 in a PACKET_OUT with 16 bytes of actions and no data",
           lambda c, x: packet_out_raw(x, w.action_output(2), b"", actions_len=64),
           (BR, E.OFPBRC_BAD_LEN), acceptable=((BA, E.OFPBAC_BAD_LEN),),
           choice="actions_len is a field of the message, which it overruns: BAD_REQUEST/"
                  "BAD_LEN; BAD_ACTION/BAD_LEN (the action list is short) accepted"),
        _c("packet_out_unknown_buffer", "packet out", "7.3.7",
           "PACKET_OUT with buffer_id 0x1234 (no such buffer)",
           lambda c, x: packet_out_raw(x, w.action_output(2), b"", buffer_id=0x1234),
           (BR, E.OFPBRC_BUFFER_UNKNOWN)),

        # ---- group mod (6.5, 7.3.4.2, 5.6.1) -------------------------------------------------
        _c("group_exists", "group mod", "6.5",
           "ADD of group 1, which exists",
           lambda c, x: group_mod(x, group_id=1), (GM, E.OFPGMFC_GROUP_EXISTS),
           setup=_GROUP_1, observe="groups", quick=True),
        _c("group_modify_unknown", "group mod", "6.5",
           f"MODIFY of group {NO_SUCH_GROUP}, which does not exist",
           lambda c, x: group_mod(x, command=ofp.OFPGC_MODIFY, group_id=NO_SUCH_GROUP),
           (GM, E.OFPGMFC_UNKNOWN_GROUP), observe="groups"),
        _c("group_id_reserved", "group mod", "6.5, 7.3.4.2",
           "ADD of group OFPG_ALL (0xfffffffc, above OFPG_MAX)",
           lambda c, x: group_mod(x, group_id=0xFFFFFFFC), (GM, E.OFPGMFC_INVALID_GROUP),
           observe="groups"),
        _c("group_bad_command", "group mod", "7.3.4.2",
           "command 7 (undefined)",
           lambda c, x: group_mod(x, command=7), (GM, E.OFPGMFC_BAD_COMMAND),
           observe="groups"),
        _c("group_bad_type", "group mod", "7.3.4.2",
           "type 9 (undefined)",
           lambda c, x: group_mod(x, type_=9), (GM, E.OFPGMFC_BAD_TYPE), observe="groups"),
        _c("group_indirect_two_buckets", "group mod", "5.6.1",
           "INDIRECT group with two buckets (it has exactly one)",
           lambda c, x: group_mod(x, type_=ofp.OFPGT_INDIRECT,
                                  buckets=bucket(w.action_output(1))
                                  + bucket(w.action_output(2))),
           (GM, E.OFPGMFC_INVALID_GROUP), acceptable=((GM, E.OFPGMFC_BAD_BUCKET),),
           observe="groups",
           choice="5.6.1 says an indirect group has one bucket but names no code: "
                  "INVALID_GROUP (the group as a whole is invalid); BAD_BUCKET accepted"),
        _c("group_bucket_bad_out_port", "group mod", "6.5, 7.2.5",
           "bucket action output to port 0",
           lambda c, x: group_mod(x, buckets=bucket(w.action_output(0))),
           (BA, E.OFPBAC_BAD_OUT_PORT), observe="groups"),
        _c("group_bucket_unknown_group", "group mod", "6.5, 7.2.5",
           f"bucket group action to group {NO_SUCH_GROUP}, which does not exist",
           lambda c, x: group_mod(x, buckets=bucket(action_group(NO_SUCH_GROUP))),
           (BA, E.OFPBAC_BAD_OUT_GROUP),
           acceptable=((GM, E.OFPGMFC_CHAINING_UNSUPPORTED), (GM, E.OFPGMFC_UNKNOWN_GROUP)),
           observe="groups",
           choice="bucket actions are validated like a flow's (6.5): BAD_OUT_GROUP; a switch "
                  "without chaining answers CHAINING_UNSUPPORTED, UNKNOWN_GROUP also names "
                  "the defect: both accepted"),
        _c("group_ff_no_watch", "group mod", "5.6.1, 7.3.4.2",
           "FAST_FAILOVER bucket with neither watch_port nor watch_group",
           lambda c, x: group_mod(x, type_=ofp.OFPGT_FF, buckets=bucket(w.action_output(2))),
           (GM, E.OFPGMFC_BAD_WATCH), observe="groups"),
        _c("group_loop", "group mod", "6.5",
           "MODIFY group 2 to forward to group 1, which forwards to group 2 (a loop)",
           lambda c, x: group_mod(x, command=ofp.OFPGC_MODIFY, group_id=2,
                                  buckets=bucket(action_group(1))),
           (GM, E.OFPGMFC_LOOP), acceptable=((GM, E.OFPGMFC_CHAINING_UNSUPPORTED),),
           choice="6.5 requires the loop be refused with LOOP; a switch without chaining "
                  "refuses the setup's chain already (then the note says so)",
           setup=(lambda c, x: group_mod(x, group_id=2),
                  lambda c, x: group_mod(x, group_id=1, buckets=bucket(action_group(2)))),
           observe="groups"),
        _c("group_bucket_bad_length", "group mod", "7.3.4.2",
           "bucket length 8 (a bucket header is 16)",
           lambda c, x: group_mod(x, buckets=bucket(length=8)),
           (GM, E.OFPGMFC_BAD_BUCKET), acceptable=((BR, E.OFPBRC_BAD_LEN),),
           observe="groups",
           choice="BAD_BUCKET names the structure at fault; BAD_REQUEST/BAD_LEN accepted"),

        # ---- meter mod (6.6, 7.3.4.4, 5.7) ---------------------------------------------------
        _c("meter_exists", "meter mod", "6.6",
           "ADD of meter 1, which exists",
           lambda c, x: meter_mod(x, meter_id=1), (MM, E.OFPMMFC_METER_EXISTS),
           setup=_METER_1, observe="meters"),
        _c("meter_modify_unknown", "meter mod", "6.6",
           f"MODIFY of meter {NO_SUCH_METER}, which does not exist",
           lambda c, x: meter_mod(x, command=ofp.OFPMC_MODIFY, meter_id=NO_SUCH_METER),
           (MM, E.OFPMMFC_UNKNOWN_METER), observe="meters"),
        _c("meter_id_zero", "meter mod", "7.3.4.4",
           "ADD of meter 0 (meter ids start at 1)",
           lambda c, x: meter_mod(x, meter_id=0), (MM, E.OFPMMFC_INVALID_METER),
           observe="meters"),
        _c("meter_id_above_max", "meter mod", "7.3.4.4",
           "ADD of meter 0xffff0001 (above OFPM_MAX, not a virtual meter)",
           lambda c, x: meter_mod(x, meter_id=0xFFFF0001), (MM, E.OFPMMFC_INVALID_METER),
           observe="meters"),
        _c("meter_bad_command", "meter mod", "7.3.4.4",
           "command 5 (undefined)",
           lambda c, x: meter_mod(x, command=5), (MM, E.OFPMMFC_BAD_COMMAND),
           observe="meters"),
        _c("meter_bad_flags", "meter mod", "7.1.3, 7.3.4.4",
           "flags bit 1<<4 (undefined)",
           lambda c, x: meter_mod(x, flags=ofp.OFPMF_KBPS | 0x10), (MM, E.OFPMMFC_BAD_FLAGS),
           observe="meters"),
        _c("meter_no_bands", "meter mod", "5.7, 7.3.4.4",
           "ADD of a meter with no bands",
           lambda c, x: meter_mod(x, bands=b""), (MM, E.OFPMMFC_BAD_BAND),
           acceptable=((MM, ANY_CODE),), observe="meters", strength="should",
           choice="a meter is defined by its bands (5.7); without one it never acts, which "
                  "no controller means: BAD_BAND names the defect; any METER_MOD_FAILED code "
                  "accepted"),
        _c("meter_band_rate_zero", "meter mod", "5.7.1, 7.3.4.4",
           "drop band with rate 0",
           lambda c, x: meter_mod(x, bands=band_drop(rate=0)), (MM, E.OFPMMFC_BAD_RATE),
           observe="meters"),
        _c("meter_band_unknown_type", "meter mod", "7.3.4.4",
           "band type 7 (undefined)",
           lambda c, x: meter_mod(x, bands=struct.pack("!HHII4x", 7, 16, 1000, 0)),
           (MM, E.OFPMMFC_BAD_BAND), observe="meters"),
        _c("meter_dscp_bad_prec_level", "meter mod", "5.7.1, 7.3.4.4",
           "DSCP-remark band with prec_level 64 (beyond the 6-bit DSCP space)",
           lambda c, x: meter_mod(x, bands=band_dscp(prec_level=64)),
           (MM, E.OFPMMFC_BAD_BAND_VALUE), acceptable=((MM, E.OFPMMFC_BAD_BAND),),
           observe="meters",
           strength="should",
           choice="the band type is fine, its value is not: BAD_BAND_VALUE; a switch that "
                  "does not support DSCP remark at all answers BAD_BAND, accepted"),
        _c("meter_band_bad_length", "meter mod", "7.3.4.4",
           "band with length 8 (a band is 16)",
           lambda c, x: meter_mod(x, bands=struct.pack("!HHI", ofp.OFPMBT_DROP, 8, 1000)),
           (MM, E.OFPMMFC_BAD_BAND), acceptable=((BR, E.OFPBRC_BAD_LEN),), observe="meters",
           choice="BAD_BAND names the structure at fault; BAD_REQUEST/BAD_LEN accepted"),

        # ---- table mod (7.3.3) ---------------------------------------------------------------
        _c("table_mod_missing_table", "table mod", "7.3.3",
           "TABLE_MOD of table 254 (no such table)",
           lambda c, x: table_mod(x, table=254), (E.OFPET_TABLE_MOD_FAILED,
                                                  E.OFPTMFC_BAD_TABLE)),
        _c("table_mod_undefined_config", "table mod", "7.1.3, 7.3.3",
           "TABLE_MOD config 0x10 (only OFPTC_DEPRECATED_MASK=3 is defined)",
           lambda c, x: table_mod(x, config=0x10),
           (E.OFPET_TABLE_MOD_FAILED, E.OFPTMFC_BAD_CONFIG)),

        # ---- port mod (7.3.4.3) --------------------------------------------------------------
        _c("port_mod_missing_port", "port mod", "7.3.4.3",
           f"PORT_MOD of port {NO_SUCH_PORT}, which does not exist",
           lambda c, x: port_mod(x, NO_SUCH_PORT, b"\x02\0\0\0\0\x63", 1, 1),
           (E.OFPET_PORT_MOD_FAILED, E.OFPPMFC_BAD_PORT), observe="ports"),
        _c("port_mod_reserved_port", "port mod", "7.3.4.3, 4.5",
           "PORT_MOD of OFPP_CONTROLLER (a reserved port is not configurable)",
           lambda c, x: port_mod(x, w.OFPP_CONTROLLER, b"\x02\0\0\0\0\x63", 1, 1),
           (E.OFPET_PORT_MOD_FAILED, E.OFPPMFC_BAD_PORT), observe="ports"),
        _c("port_mod_bad_hw_addr", "port mod", "7.3.4.3",
           "PORT_MOD of port 1 with a hw_addr that is not port 1's",
           lambda c, x: port_mod(x, c.ports[0], b"\x0e\xee\xee\xee\xee\x01",
                                 ofp.OFPPC_NO_PACKET_IN, ofp.OFPPC_NO_PACKET_IN),
           (E.OFPET_PORT_MOD_FAILED, E.OFPPMFC_BAD_HW_ADDR), observe="ports"),
        _c("port_mod_undefined_config", "port mod", "7.1.3, 7.3.4.3",
           "PORT_MOD config/mask bit 1<<4 (undefined in 1.3)",
           lambda c, x: port_mod(x, c.ports[0], c.macs[c.ports[0]], 0x10, 0x10),
           (E.OFPET_PORT_MOD_FAILED, E.OFPPMFC_BAD_CONFIG), observe="ports"),
        _c("port_mod_undefined_advertise", "port mod", "7.1.3, 7.3.4.3",
           "PORT_MOD advertise bit 1<<20 (undefined)",
           lambda c, x: port_mod(x, c.ports[0], c.macs[c.ports[0]], advertise=1 << 20),
           (E.OFPET_PORT_MOD_FAILED, E.OFPPMFC_BAD_ADVERTISE), observe="ports"),

        # ---- multipart (7.3.5) ---------------------------------------------------------------
        _c("multipart_unknown_type", "multipart", "7.3.5, 7.5.4",
           "multipart type 20 (undefined)",
           lambda c, x: w.multipart(20, xid=x), (BR, E.OFPBRC_BAD_MULTIPART), quick=True),
        _c("multipart_experimenter_unknown", "multipart", "7.3.5.17, 7.5.5",
           "EXPERIMENTER multipart with an unknown experimenter id",
           lambda c, x: w.multipart(0xFFFF, struct.pack("!II", 0x00FFEE01, 1), x),
           (BR, E.OFPBRC_BAD_EXPERIMENTER)),
        _c("multipart_desc_with_body", "multipart", "7.3.5.1",
           "DESC request with an 8-byte body (its body is empty)",
           lambda c, x: w.multipart(ofp.OFPMP_DESC, bytes(8), x), (BR, E.OFPBRC_BAD_LEN)),
        _c("multipart_flow_truncated", "multipart", "7.3.5.2",
           "FLOW stats request whose body stops before the match",
           lambda c, x: w.multipart(ofp.OFPMP_FLOW, struct.pack("!B3xII", 0xFF, w.OFPP_ANY,
                                                                w.OFPG_ANY), x),
           (BR, E.OFPBRC_BAD_LEN)),
        _c("multipart_flow_missing_table", "multipart", "7.3.5.2",
           "FLOW stats request for table 254 (no such table)",
           lambda c, x: flow_stats_request(x, table=254), (BR, E.OFPBRC_BAD_TABLE_ID),
           strength="should",
           choice="7.3.5.2 only defines OFPTT_ALL or a table id; for a table that does not "
                  "exist BAD_TABLE_ID is the request error the spec has"),
        _c("multipart_port_stats_missing_port", "multipart", "7.3.5.6",
           f"PORT_STATS for port {NO_SUCH_PORT}, which does not exist",
           lambda c, x: w.multipart(ofp.OFPMP_PORT_STATS, struct.pack("!I4x", NO_SUCH_PORT), x),
           (BR, E.OFPBRC_BAD_PORT), strength="should",
           choice="no code is named for a missing port; BAD_PORT is the request error that "
                  "fits; an empty reply is what many switches send"),
        _c("multipart_queue_stats_missing_port", "multipart", "7.3.5.8",
           f"QUEUE stats for port {NO_SUCH_PORT}, which does not exist",
           lambda c, x: w.multipart(ofp.OFPMP_QUEUE, struct.pack("!II", NO_SUCH_PORT,
                                                                 ofp.OFPQ_ALL), x),
           (E.OFPET_QUEUE_OP_FAILED, E.OFPQOFC_BAD_PORT), acceptable=((BR, E.OFPBRC_BAD_PORT),),
           strength="should",
           choice="QUEUE_OP_FAILED/BAD_PORT is the queue error for a missing port (as for "
                  "QUEUE_GET_CONFIG, 7.3.6); BAD_REQUEST/BAD_PORT accepted"),
        _c("queue_get_config_missing_port", "multipart", "7.3.6",
           f"QUEUE_GET_CONFIG for port {NO_SUCH_PORT}, which does not exist",
           lambda c, x: w.msg(OFPT_QUEUE_GET_CONFIG_REQUEST,
                              struct.pack("!I4x", NO_SUCH_PORT), x),
           (E.OFPET_QUEUE_OP_FAILED, E.OFPQOFC_BAD_PORT)),

        # ---- set-config (7.3.2) --------------------------------------------------------------
        _c("set_config_undefined_flags", "set config", "7.1.3, 7.3.2",
           "SET_CONFIG flags 0x10 (only OFPC_FRAG_MASK=3 is defined)",
           lambda c, x: set_config(x, flags=0x10),
           (E.OFPET_SWITCH_CONFIG_FAILED, E.OFPSCFC_BAD_FLAGS), observe="config"),

        # ---- roles (6.3.6, 7.3.9) ------------------------------------------------------------
        _c("role_bad_role", "role", "7.3.9",
           "ROLE_REQUEST role 7 (undefined)",
           lambda c, x: role_request(x, 7, 0), (E.OFPET_ROLE_REQUEST_FAILED,
                                                E.OFPRRFC_BAD_ROLE), quick=True),
        _c("role_stale_generation", "role", "6.3.6, 7.3.9",
           "MASTER with generation_id 9 after MASTER with 10",
           lambda c, x: role_request(x, ofp.OFPCR_ROLE_MASTER, 9),
           (E.OFPET_ROLE_REQUEST_FAILED, E.OFPRRFC_STALE),
           setup=(lambda c, x: role_request(x, ofp.OFPCR_ROLE_MASTER, 10),),
           teardown=_EQUAL),
        _c("slave_flow_mod", "role", "6.3.6",
           "FLOW_MOD from a slave controller",
           lambda c, x: flow_add(x), (BR, E.OFPBRC_IS_SLAVE), setup=_slave(20),
           teardown=_EQUAL, observe="flows"),
        _c("slave_packet_out", "role", "6.3.6",
           "PACKET_OUT from a slave controller",
           lambda c, x: packet_out_raw(x, w.action_output(2), FRAME_IPV4_UDP),
           (BR, E.OFPBRC_IS_SLAVE), setup=_slave(21), teardown=_EQUAL),
        _c("slave_group_mod", "role", "6.3.6",
           "GROUP_MOD from a slave controller",
           lambda c, x: group_mod(x, group_id=5), (BR, E.OFPBRC_IS_SLAVE), setup=_slave(22),
           teardown=_EQUAL, observe="groups"),
        _c("slave_port_mod", "role", "6.3.6",
           "PORT_MOD from a slave controller",
           lambda c, x: port_mod(x, c.ports[0], c.macs[c.ports[0]], ofp.OFPPC_NO_PACKET_IN,
                                 ofp.OFPPC_NO_PACKET_IN),
           (BR, E.OFPBRC_IS_SLAVE), setup=_slave(23), teardown=_EQUAL, observe="ports"),
        _c("slave_table_mod", "role", "6.3.6",
           "TABLE_MOD from a slave controller",
           lambda c, x: table_mod(x, 0, 0), (BR, E.OFPBRC_IS_SLAVE), setup=_slave(24),
           teardown=_EQUAL),
        _c("slave_meter_mod", "role", "6.3.6",
           "METER_MOD from a slave controller",
           lambda c, x: meter_mod(x, meter_id=6), (BR, E.OFPBRC_IS_SLAVE), setup=_slave(25),
           teardown=_EQUAL, observe="meters", strength="should",
           choice="1.3's list of state-changing messages a slave is refused predates meters; "
                  "a METER_MOD changes switch state like a GROUP_MOD, so IS_SLAVE"),
    ]
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    return cases


def quick_cases() -> list[Case]:
    return [c for c in catalogue() if c.quick]


def select(cases: list[Case], patterns: str) -> list[Case]:
    """The cases whose name or category matches one of the comma-separated glob
    ``patterns`` (env OFBENCH_NEGATIVE_CASES, to iterate on a few); all if empty. Raises
    ValueError naming the patterns if they select nothing."""
    import fnmatch
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    if not pats:
        return cases
    out = [c for c in cases if any(fnmatch.fnmatchcase(c.name, p)
                                   or fnmatch.fnmatchcase(c.category, p) for p in pats)]
    if not out:
        raise ValueError(f"OFBENCH_NEGATIVE_CASES={patterns!r} matches no case name or "
                         f"category (categories: {', '.join(categories(cases))})")
    return out


def categories(cases: list[Case]) -> list[str]:
    """Categories in first-seen order."""
    out: list[str] = []
    for c in cases:
        if c.category not in out:
            out.append(c.category)
    return out


def write_corpus(folder, ctx: Context | None = None) -> list:
    """Every case's message (and setup messages) as ``<case>.bin`` / ``<case>.setup<i>.bin``
    in ``folder``: seeds for a fuzzer of the agent (issue 15, part 2), which lives in dut/ and
    so cannot import this module. Returns the paths written."""
    from pathlib import Path
    ctx = ctx or Context()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, c in enumerate(catalogue()):
        for j, mk in enumerate(c.setup):
            p = out / f"{c.name}.setup{j}.bin"
            p.write_bytes(mk(ctx, 0x53000000 + i))
            written.append(p)
        p = out / f"{c.name}.bin"
        p.write_bytes(c.message(ctx, 0x4E000000 + i))
        written.append(p)
    return written


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="Write the negative-conformance messages as "
                                 "fuzzer seeds, one file per message.")
    ap.add_argument("--write-corpus", metavar="DIR", required=True)
    args = ap.parse_args()
    print(f"{len(write_corpus(args.write_corpus))} files in {args.write_corpus}")
