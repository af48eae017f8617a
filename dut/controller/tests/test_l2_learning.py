from dut.controller.l2_learning import FLOOD, MacTable, decide


def test_unknown_destination_floods_and_source_is_learned():
    t = MacTable()
    assert decide(t, 1, 1, "02:00:00:00:00:01", "02:00:00:00:00:02", now=0.0) == FLOOD
    assert decide(t, 1, 2, "02:00:00:00:00:02", "02:00:00:00:00:01", now=0.1) == 1


def test_entries_age_out():
    t = MacTable(aging_s=10)
    t.learn(1, "02:00:00:00:00:01", 3, now=0.0)
    assert t.lookup(1, "02:00:00:00:00:01", now=5.0) == 3
    assert t.lookup(1, "02:00:00:00:00:01", now=10.5) == FLOOD


def test_multicast_source_is_never_learned_and_multicast_dst_floods():
    t = MacTable()
    assert not t.learn(1, "01:00:5e:00:00:01", 4, now=0.0)
    assert t.lookup(1, "ff:ff:ff:ff:ff:ff", now=0.0) == FLOOD


def test_hairpin_is_dropped_and_datapaths_are_separate():
    t = MacTable()
    t.learn(1, "02:00:00:00:00:02", 1, now=0.0)
    assert decide(t, 1, 1, "02:00:00:00:00:01", "02:00:00:00:00:02", now=0.0) is None
    assert t.lookup(2, "02:00:00:00:00:02", now=0.0) == FLOOD
