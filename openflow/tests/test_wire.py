"""openflow.wire's own behaviour: framing, the malformed-on-purpose builders, the decoders."""
import struct

import pytest

from openflow import wire as w


def test_message_length_frames_a_stream():
    a, b = w.msg(w.HELLO, xid=1), w.msg(w.ECHO_REQUEST, b"ping", 2)
    stream = a + b
    assert w.message_length(stream) == 8
    assert w.message_length(stream, 8) == 12
    assert w.message_length(stream[:15], 8) is None   # not all there yet
    assert w.message_length(b"\x04\x00") is None
    with pytest.raises(ValueError, match="length 4 < 8"):
        w.message_length(w.with_length(a, 4))


def test_raw_builders_set_any_field():
    m = w.retype(w.with_length(w.msg(w.HELLO, b"xx", 3), 99), version=1, type_=w.ERROR)
    assert struct.unpack("!BBHI", m[:8]) == (1, w.ERROR, 99, 3)
    assert w.oxm_raw(w.IPV4_DST, b"\1\2", length=4)[:4] == b"\x80\x00\x18\x04"
    assert w.match_raw(b"", type_=0, length=40) == b"\0\0\0\x28" + bytes(4)
    assert w.instruction(w.OFPIT_GOTO_TABLE, b"\1", length=2) == b"\0\1\0\2\1"
    assert w.packet_out(b"", b"", actions_len=16)[16:18] == b"\0\x10"


def test_match_oxms_splits_what_match_joined():
    tlvs = [w.oxm(w.ETH_TYPE, b"\x08\x00"), w.oxm(w.IPV4_SRC, bytes(4), b"\xff" * 4),
            w.oxm(w.UDP_DST, b"\0\x35")]
    assert w.match_oxms(w.match(*tlvs)) == tlvs


def test_decoders():
    entry = struct.pack("!I4xQQ", 3, 10, 20) + bytes(112 - 24)
    assert w.parse_port_stats(entry * 2)[3] == {"rx_packets": 10, "tx_packets": 20}
    reply = w.msg(w.MULTIPART_REPLY, struct.pack("!HH4x", w.OFPMP_FLOW, w.OFPMPF_REPLY_MORE)
                  + struct.pack("!H", 24) + bytes(22) + struct.pack("!H", 16) + bytes(14))
    assert w.multipart_flags(reply) == w.OFPMPF_REPLY_MORE
    assert w.count_entries(reply) == 2
    assert w.error_type_code(struct.pack("!HH", 4, 9)) == (4, 9)
    assert w.xid_of(w.msg(w.HELLO, xid=0xDEAD)) == 0xDEAD
