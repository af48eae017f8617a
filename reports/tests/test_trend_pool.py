"""One trend across a pool (issue 39 part 4): spread per commit, flagged testbeds, the page."""
import json

import pytest

from reports.trend import (PoolPoint, SeriesKey, commit_spreads, merge_pool_points,
                           pool_history_query, pool_key, pool_status, pool_tables,
                           record_pool_points, spread, write_trend_page)

KEY = SeriesKey("throughput", "ndr_64b_1flows", "", "ofbench", "trex", "pci", "ndr_mpps",
                "", "rack2")


def _pts(offsets: dict[str, float], commits: int = 8, base: float = 10.0, noise=0.01):
    """Each testbed measures every commit; commit c moves the whole pool (a DUT change), the
    testbed adds its own offset and a small alternating wobble."""
    out = []
    for c in range(commits):
        level = base * (1.0 + 0.05 * (c >= 4))            # commit 4 made everything 5 % faster
        for i, (bed, off) in enumerate(sorted(offsets.items())):
            wobble = noise * (1 if (c + i) % 2 else -1)
            out.append(PoolPoint(f"sha{c:02d}", bed, level * (1 + off + wobble), f"place-{bed}",
                                 f"2026-11-{c + 1:02d}T01:{i:02d}:00.000000Z"))
    return out


def test_spread_is_range_over_median():
    assert spread([9.0, 10.0, 11.0]) == pytest.approx(0.2)
    assert spread([10.0]) is None and spread([]) is None and spread([0.0, 0.0]) is None


def test_commit_spreads_per_sha_in_measurement_order_repeats_by_median():
    pts = [PoolPoint("b", "t1", 10.0, time="2026-11-02T00:00:00Z"),
           PoolPoint("a", "t1", 9.0, time="2026-11-01T00:00:00Z"),
           PoolPoint("a", "t2", 11.0, time="2026-11-01T00:05:00Z"),
           PoolPoint("a", "t2", 13.0, time="2026-11-01T00:06:00Z"),   # a repeat: median 12
           PoolPoint("", "t3", 99.0, time="2026-11-01T00:00:00Z")]    # no commit: ignored
    cs = commit_spreads(pts)
    assert [c.git_sha for c in cs] == ["a", "b"]
    assert cs[0].values == {"t1": 9.0, "t2": 12.0}
    assert cs[0].spread == pytest.approx(3.0 / 10.5)
    assert cs[1].spread is None      # one testbed only


def test_uniform_pool_flags_nobody_even_when_the_commit_moves_everything():
    beds, sigma, band = pool_status(_pts({"t1": 0.0, "t2": 0.004, "t3": -0.003}))
    assert not any(b.flagged for b in beds)
    assert sigma is not None and band >= 0.02
    assert {b.place for b in beds} == {"place-t1", "place-t2", "place-t3"}


def test_a_testbed_outside_the_pool_is_flagged_with_its_offset():
    beds, _, band = pool_status(_pts({"t1": 0.0, "t2": 0.005, "t3": -0.004, "t4": -0.12}))
    by = {b.testbed_id: b for b in beds}
    assert by["t4"].flagged and by["t4"].deviation == pytest.approx(-0.12, abs=0.02)
    assert "from the pool median" in by["t4"].reason
    assert not any(by[t].flagged for t in ("t1", "t2", "t3"))
    # last value is the newest commit's, median over the window
    assert by["t1"].last_value == pytest.approx(10.5 * (1 + 0.01 * (1 if 7 % 2 else -1)))
    assert by["t4"].median == pytest.approx(10.0 * 1.025 * 0.88, rel=0.03)


def test_two_testbeds_show_a_spread_but_single_out_neither():
    beds, _, _ = pool_status(_pts({"t1": 0.0, "t2": 0.3}))
    assert not any(b.flagged for b in beds)
    assert all("none singled out" in b.reason for b in beds)


def test_too_few_shared_commits_are_not_judged():
    pts = _pts({"t1": 0.0, "t2": 0.0, "t3": 0.0}, commits=6)
    pts += [PoolPoint("sha05", "t9", 50.0, "new-place", "2026-11-06T02:00:00.000000Z")]
    beds, _, _ = pool_status(pts)
    t9 = next(b for b in beds if b.testbed_id == "t9")
    assert not t9.flagged and t9.n_commits == 1 and "shared commit" in t9.reason


def test_window_is_the_last_n_shared_commits():
    # t3 was off long ago and fixed since: only the last 4 commits count
    pts = [p if not (p.testbed_id == "t3" and p.git_sha < "sha06") else
           PoolPoint(p.git_sha, p.testbed_id, p.value * 0.8, p.place, p.time)
           for p in _pts({"t1": 0.0, "t2": 0.0, "t3": 0.0}, commits=10)]
    assert any(b.flagged for b in pool_status(pts, last_n=10)[0])
    assert not any(b.flagged for b in pool_status(pts, last_n=4)[0])


def _record(bed, place, sha, value, pool="rack2", profile="lab1"):
    return {"suite": "throughput", "name": "ndr_64b_1flows",
            "metrics": {"ndr_mpps": value, "tx_pkts": 1000},
            "provenance": {"profile": profile, "dut_switch_kind": "ofbench", "generator": "trex",
                           "port_kind": "pci", "testbed_id": bed, "pool": pool, "place": place,
                           "git_sha": sha, "end_time": "2026-11-28T01:00:00.123456789Z"}}


def test_records_become_pool_points_keyed_without_testbed_and_profile():
    pts = record_pool_points([_record("tb1", "lab1", "abc", 10.0),
                              _record("tb2", "lab2", "abc", 10.5, profile="lab2"),
                              {**_record("tb3", "x", "abc", 1.0), "provenance": {
                                  **_record("tb3", "x", "abc", 1.0)["provenance"], "pool": ""}}])
    assert list(pts) == [KEY]          # tx_pkts has no direction; the no-pool record is out
    assert {(p.testbed_id, p.place, p.value) for p in pts[KEY]} == {("tb1", "lab1", 10.0),
                                                                      ("tb2", "lab2", 10.5)}
    full = SeriesKey("throughput", "ndr_64b_1flows", "lab1", "ofbench", "trex", "pci",
                     "ndr_mpps", "tb1", "rack2")
    assert pool_key(full) == KEY


def test_merge_counts_a_record_read_back_from_influxdb_once():
    own = record_pool_points([_record("tb1", "lab1", "abc", 10.0)])
    back = {KEY: [PoolPoint("abc", "tb1", 10.0, "lab1", "2026-11-28T01:00:00.123456Z"),
                  PoolPoint("abc", "tb2", 11.0, "lab2", "2026-11-28T01:00:00.123456Z")]}
    merged = merge_pool_points(back, own)
    assert len(merged[KEY]) == 2


def test_pool_history_query_filters_the_pool_not_the_profile():
    q = pool_history_query("b", "throughput", 'r"2', "2025-01-01T00:00:00Z",
                           "2026-01-01T00:00:00Z", 10)
    assert 'r.pool == "r\\"2"' in q and "r.profile" not in q and '"testbed_id"' in q


def test_trend_page_shows_a_pools_testbeds_side_by_side(tmp_path):
    tables = pool_tables({KEY: _pts({"t1": 0.0, "t2": 0.0, "t3": 0.0, "t4": 0.15})})
    assert len(tables) == 1 and [b.flagged for b in tables[0].testbeds].count(True) == 1
    page = write_trend_page(tmp_path, [], pools=tables).read_text()
    assert "pool rack2" in page and "place-t4" in page and "outside the pool" in page
    assert page.count('<table class="pool">') == 1 and "spread %" in page
    data = json.loads((tmp_path / "trend.json").read_text())
    t4 = next(b for b in data["pools"][0]["testbeds"] if b["testbed_id"] == "t4")
    assert t4["flagged"] is True and t4["place"] == "place-t4"


def test_run_index_names_the_place_and_a_flagged_testbed(tmp_path):
    from reports.html import render_run_index
    from reports.results import RESULTS_FILE
    recs = [_record("t4", "lab4", "sha07", 8.9)]
    (tmp_path / RESULTS_FILE).write_text("".join(json.dumps(r) + "\n" for r in recs))
    write_trend_page(tmp_path, [], pools=pool_tables(
        {KEY: _pts({"t1": 0.0, "t2": 0.0, "t3": 0.0, "t4": -0.15})}))
    index = render_run_index(tmp_path).read_text()
    assert "place <b>lab4</b> of pool <b>rack2</b>" in index
    assert "testbed outside its pool: t4 (place-t4, pool rack2)" in index
