"""traces/pcap.py: the one pcap writer and reader of traces and benches."""
import struct

import pytest

from traces.pcap import pcap_bytes, read_pcap, write_pcap


def test_written_bytes_are_classic_little_endian_pcap(tmp_path):
    frames = [b"\x01" * 60, b"\x02" * 64]
    data = pcap_bytes(frames)
    assert struct.unpack("<IHHiIII", data[:24]) == (0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    assert struct.unpack("<IIII", data[24:40]) == (0, 0, 60, 60)
    assert struct.unpack("<IIII", data[100:116]) == (0, 1, 64, 64)   # frame i at i us
    write_pcap(tmp_path / "a.pcap", frames)
    assert (tmp_path / "a.pcap").read_bytes() == data
    assert read_pcap(tmp_path / "a.pcap") == frames


def test_reads_big_endian_and_nanosecond_files(tmp_path):
    frames = [b"\x03" * 60]
    for endian, magic in ((">", 0xA1B2C3D4), ("<", 0xA1B23C4D)):
        data = struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
        data += struct.pack(endian + "IIII", 1, 2, 60, 60) + frames[0]
        (tmp_path / "b.pcap").write_bytes(data)
        assert read_pcap(tmp_path / "b.pcap") == frames


def test_empty_file_has_no_frames_and_garbage_is_refused_by_name(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    assert read_pcap(tmp_path / "empty") == []
    (tmp_path / "bad").write_bytes(b"x" * 30)
    with pytest.raises(ValueError, match="bad: not a pcap file"):
        read_pcap(tmp_path / "bad")
