"""The document's completion-time metric and the completion log."""
import threading
import time

from dut.controller.timing import (CompletionLog, PacketRecord, arrival_ms, completion_ms,
                                   intake_ms, parse_lines, ratio)


def _recs(spec):
    return [PacketRecord(i, k, t_in, t_out, 0) for i, (k, t_in, t_out) in enumerate(spec)]


def test_completion_is_nth_packet_out_from_first_packet_in():
    recs = _recs([("high", 1_000_000, 3_000_000), ("low", 2_000_000, 9_000_000),
                  ("high", 1_500_000, 2_000_000), ("low", 5_000_000, 4_000_000)])
    c = completion_ms(recs, per_class=2)
    assert c.t0_ns == 1_000_000
    assert c.ms == {"high": 2.0, "low": 8.0}  # 2nd Packet-Out in sending order, not arrival
    assert c.counts == {"high": 2, "low": 2}


def test_intake_is_first_to_last_packet_in():
    recs = _recs([("high", 4_000_000, 9_000_000), ("low", 1_000_000, 2_000_000),
                  ("low", 2_500_000, 3_000_000)])
    assert intake_ms(recs) == 3.0  # by t_in, whatever the order of the records
    assert intake_ms([]) is None


def test_missing_packets_give_none_and_counts():
    c = completion_ms(_recs([("high", 0, 10), ("low", 0, 20)]), per_class=2)
    assert c.ms == {"high": None, "low": None}
    assert c.counts == {"high": 1, "low": 1}
    assert completion_ms([], per_class=1).t0_ns is None


def test_arrival_cross_check():
    got = arrival_ms({"high": [5_000_000, 3_000_000], "low": [7_000_000]}, 1_000_000, 2)
    assert got == {"high": 4.0, "low": None}


def test_ratio():
    assert ratio(3.0, 6.0) == 0.5
    assert ratio(None, 6.0) is None
    assert ratio(1.0, 0.0) is None


def test_log_round_trip_from_many_threads(tmp_path):
    path = tmp_path / "c.csv"
    log = CompletionLog(str(path))

    def writer(base):
        for i in range(200):
            log.write(PacketRecord(base + i, "high" if i % 2 else "low", i, i + 1, 3))

    ts = [threading.Thread(target=writer, args=(k * 1000,)) for k in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    log.close()
    recs = parse_lines(path.read_text().splitlines())
    assert len(recs) == 800
    assert sorted(r.ip_id for r in recs)[:3] == [0, 1, 2]
    assert {r.matches for r in recs} == {3}


def test_log_without_path_is_a_no_op():
    log = CompletionLog(None)
    log.write(PacketRecord(1, "low", 0, 1, 0))
    log.close()


def test_log_lines_reach_the_file_while_it_is_open(tmp_path):
    # The suite tails the file during a run: lines must appear without close().
    path = tmp_path / "c.csv"
    log = CompletionLog(str(path), flush_s=0.005)
    try:
        log.write(PacketRecord(7, "high", 1, 2, 0))
        deadline = time.monotonic() + 5
        while len(path.read_text().splitlines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert [r.ip_id for r in parse_lines(path.read_text().splitlines())] == [7]
    finally:
        log.close()
    assert not log._flusher.is_alive()
