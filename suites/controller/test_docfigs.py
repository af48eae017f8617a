"""Pure parts of the controller suite: the document comparison and the host helpers."""
import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from suites.controller import docfigs
from suites.controller.hosts import pace_schedule, parse_trace_frame

pytestmark = pytest.mark.quick


def test_doc_ratios_match_the_documents_printed_ratios():
    h, l = docfigs.doc_ratio("random", 20, "8thr")
    assert round(h, 2) == 0.58 and round(l, 2) == 1.01
    h, l = docfigs.doc_ratio("random", 50, "8thr")
    assert round(h, 2) == 0.57 and round(l, 2) == 1.02  # printed 0.56 (rounded down there)
    h, l = docfigs.doc_ratio("high_low", 20, "8thr")
    assert round(h, 2) == 1.17
    assert docfigs.doc_ratio("low_high", 20, "2thr") == (None, None)


def test_direction_and_agreement():
    assert docfigs.direction(0.5) == "down"
    assert docfigs.direction(1.02) == "same"
    assert docfigs.direction(2.0) == "up"
    ours = {("random", 20, "8thr", "naive"): {"high_ms": 100.0, "low_ms": 190.0,
                                               "high_ratio": 0.5, "low_ratio": 0.97},
            ("low_high", 20, "8thr", "naive"): {"high_ms": 100.0, "low_ms": 190.0,
                                                 "high_ratio": 0.5, "low_ratio": 1.0}}
    rows = {r["trace"]: r for r in docfigs.comparison_rows(ours, "naive")}
    assert rows["random"]["direction_agrees"] is True
    assert rows["low_high"]["direction_agrees"] is False  # document: low 2.03x (up)


def test_figure_and_table2_render_with_partial_data():
    ours = {("random", 20, "fifo", "naive"): {"high_ms": 10.0, "low_ms": 10.0},
            ("random", 20, "8thr", "naive"): {"high_ms": 5.0, "low_ms": 10.1,
                                               "high_ratio": 0.5, "low_ratio": 1.01}}
    fig = docfigs.figure("random", 20, ours, "naive")
    assert len(fig.axes) == 2
    rows = docfigs.table2_rows(ours, "naive")
    assert len(rows) == 6
    assert rows[2]["ours_prop_ms"] == 10.1 and rows[0]["ours_prop_ms"] is None


def test_parse_trace_frame_filters_the_trace():
    dst = bytes([10, 66, 0, 2])
    f = bytes(Ether() / IP(dst="10.66.0.2", tos=0xA0, id=42) / TCP(dport=5001) / b"x")
    assert parse_trace_frame(f, dst, 5001) == (42, 5)
    assert parse_trace_frame(f, dst, 80) is None
    g = bytes(Ether() / IP(dst="10.66.0.3") / TCP(dport=5001) / b"x")
    assert parse_trace_frame(g, dst, 5001) is None
    assert parse_trace_frame(b"\x00" * 20, dst, 5001) is None


def test_pace_schedule():
    assert pace_schedule(3, 1000.0, 5.0) == [5.0, 5.001, 5.002]
