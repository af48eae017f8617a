"""Seed corpus of the agent's fuzzer (dut/switch/fuzz, README "Fuzzing"): every message the
conformance suite sends, as byte streams one controller connection would carry.

    python -m suites.conformance.fuzz_corpus [DIR]     # default dut/switch/fuzz/corpus

One seed file per case, deterministic (same bytes on every run; the files are committed):

  * ``neg-<case>.bin``      a negative case (negative_cases.py): its setup messages, the case's
                            message, its teardown, as the negative runner sends them;
  * ``of13-<file>-<i>.bin`` case i of one os-ken switch-test-tool file (os_ken/tests/switch/of13,
                            the whole set, not only the required files): what the tool sends the
                            target for it -- delete every flow, meter and group, a barrier, the
                            case's prerequisite FLOW_MOD / METER_MOD / GROUP_MOD messages, a
                            barrier, the flow, meter-config, group-desc, table and port stats
                            requests -- plus, beyond what the tool sends the target (it sends its
                            packets through the tester switch), each ingress packet as a
                            PACKET_OUT from port 1 to OFPP_TABLE, so a seed reaches the pipeline
                            with the case's flows and packets;
  * ``session.bin``         the handshake (HELLO, FEATURES, SET_CONFIG, PORT_DESC, ECHO).

Port names of the tool files map to its defaults (target ports 1, 2, 3). Packets the tool
randomises (``randint``) take their numbers from a fixed seed. The folder is emptied of
``*.bin`` first, so removed cases do not linger.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import openflow as w
from suites.conformance import negative_cases as nc
from suites.conformance.runner import of13_dir
from paths import REPO

DEFAULT_DIR = REPO / "dut" / "switch" / "fuzz" / "corpus"
# the tool's --test-switch-* defaults (os_ken/flags.py)
TOOL_PORTS = {"target_recv_port": 1, "target_send_port_1": 2, "target_send_port_2": 3,
              "tester_send_port": 1, "tester_recv_port_1": 2, "tester_recv_port_2": 3}
OFPP_TABLE = 0xFFFFFFF9


def negative_seeds(ctx: nc.Context | None = None) -> dict[str, bytes]:
    ctx = ctx or nc.Context()
    out = {}
    for i, c in enumerate(nc.catalogue()):
        xid = 0x4E000000 + i
        parts = [mk(ctx, 0x53000000 + j) for j, mk in enumerate(c.setup)]
        parts.append(c.message(ctx, xid))
        parts += [mk(ctx, 0x54000000 + j) for j, mk in enumerate(c.teardown)]
        out[f"neg-{c.name}.bin"] = b"".join(parts)
    return out


def _ports(val):
    """The tool's port-name substitution (tester.py TestFile._normalize_test_json)."""
    if isinstance(val, dict):
        for k, v in val.items():
            if k == "OFPActionOutput" and v.get("port") in TOOL_PORTS:
                v["port"] = TOOL_PORTS[v["port"]]
            elif k == "OXMTlv" and v.get("field") == "in_port" and v.get("value") in TOOL_PORTS:
                v["value"] = TOOL_PORTS[v["value"]]
            _ports(v)
    elif isinstance(val, list):
        for v in val:
            _ports(v)


def _tool():
    """os-ken's tester module (its namespace holds the packet classes its files name), the
    ofproto parser and a datapath stand-in, as the tool itself parses its files."""
    from os_ken.ofproto import ofproto_parser, ofproto_protocol, ofproto_v1_3
    from os_ken.tests.switch import tester
    dp = ofproto_protocol.ProtocolDesc(ofproto_v1_3.OFP_VERSION)
    return tester, ofproto_parser, dp


def _ser(msg, xid: int) -> bytes:
    msg.xid = xid
    msg.serialize()
    return bytes(msg.buf)


def _tool_preamble(parser, ofp, dp, xid: int) -> list[bytes]:
    """What the tool sends the target before a case's prerequisites (tester.py OpenFlowSw)."""
    return [
        _ser(parser.OFPFlowMod(dp, cookie=0, cookie_mask=0, table_id=ofp.OFPTT_ALL,
                               command=ofp.OFPFC_DELETE, out_port=ofp.OFPP_ANY,
                               out_group=ofp.OFPG_ANY), xid),
        _ser(parser.OFPMeterMod(dp, command=ofp.OFPMC_DELETE, flags=0,
                                meter_id=ofp.OFPM_ALL), xid + 1),
        _ser(parser.OFPGroupMod(dp, command=ofp.OFPGC_DELETE, type_=0,
                                group_id=ofp.OFPG_ALL), xid + 2),
        _ser(parser.OFPBarrierRequest(dp), xid + 3),
    ]


def _tool_checks(parser, ofp, dp, xid: int) -> list[bytes]:
    """The tool's state checks after the prerequisites."""
    return [
        _ser(parser.OFPBarrierRequest(dp), xid),
        _ser(parser.OFPFlowStatsRequest(dp, 0, ofp.OFPTT_ALL, ofp.OFPP_ANY, ofp.OFPG_ANY,
                                        0, 0, parser.OFPMatch()), xid + 1),
        _ser(parser.OFPMeterConfigStatsRequest(dp), xid + 2),
        _ser(parser.OFPGroupDescStatsRequest(dp), xid + 3),
        _ser(parser.OFPTableStatsRequest(dp, 0), xid + 4),
        _ser(parser.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY), xid + 5),
    ]


def _packet(tester, text: list[str], rng: random.Random) -> bytes:
    env = dict(vars(tester))
    env["randint"] = rng.randint
    pkt = eval("/".join(text), env)  # noqa: S307 -- the tool's own file format, as it does
    pkt.serialize()
    return bytes(pkt.data)


def _ingress_packets(tester, test: dict, rng: random.Random) -> list[bytes]:
    ing = test.get("ingress")
    if isinstance(ing, list):
        return [_packet(tester, ing, rng)]
    if isinstance(ing, dict):
        return [_packet(tester, ing["packets"]["data"], rng)]
    return []


def tool_seeds(files: list[Path] | None = None) -> dict[str, bytes]:
    tester, ofproto_parser, dp = _tool()
    parser, ofp = dp.ofproto_parser, dp.ofproto
    root = of13_dir()
    files = files if files is not None else sorted(root.rglob("*.json"))
    rng = random.Random(15)
    out = {}
    for f in files:
        stem = "-".join(f.relative_to(root).with_suffix("").parts)
        cases = [c for c in json.loads(f.read_text()) if isinstance(c, dict)]
        for i, case in enumerate(cases):
            _ports(case)
            xid = 0x70000000 + i * 0x100
            parts = _tool_preamble(parser, ofp, dp, xid)
            for j, d in enumerate(case["prerequisite"]):
                parts.append(_ser(ofproto_parser.ofp_msg_from_jsondict(dp, d), xid + 0x10 + j))
            parts += _tool_checks(parser, ofp, dp, xid + 0x40)
            for j, test in enumerate(case.get("tests", [])):
                for frame in _ingress_packets(tester, test, rng):
                    po = parser.OFPPacketOut(dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=1,
                                             actions=[parser.OFPActionOutput(OFPP_TABLE)],
                                             data=frame)
                    parts.append(_ser(po, xid + 0x80 + j))
            out[f"of13-{stem}-{i}.bin"] = b"".join(parts)
    return out


def session_seed() -> bytes:
    return b"".join([
        w.hello(xid=1),
        w.msg(w.FEATURES_REQUEST, xid=2),
        w.set_config(3, 0, 128),
        w.multipart(w.OFPMP_PORT_DESC, xid=4),
        w.msg(w.ECHO_REQUEST, b"seed", xid=5),
    ])


def write(folder: Path = DEFAULT_DIR) -> int:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.bin"):
        old.unlink()
    seeds = {"session.bin": session_seed(), **negative_seeds(), **tool_seeds()}
    for name, data in seeds.items():
        (folder / name).write_bytes(data)
    return len(seeds)


if __name__ == "__main__":
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DIR
    print(f"{write(dest)} seeds in {dest}")
