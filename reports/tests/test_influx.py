"""InfluxDB export with spool-and-replay, against the real local influxd 1.8, and the trend
history query against the same server."""
from __future__ import annotations

import datetime as dt
import json
import re
import socket
import warnings

import pytest

from reports.influx import (InfluxExporter, InfluxSpoolWarning, check_url,
                            record_to_point_parts, rfc3339_to_ns)
from reports.influxd import LocalInfluxd, render_config
from reports.results import ResultWriter, load_results, utc_rfc3339
from reports.tests.sample import BASE_PROVENANCE, provenance_at
from reports.trend import run_trend

T0 = dt.datetime(2024, 5, 1, 2, 0, tzinfo=dt.timezone.utc)


# ---- pure parts ----------------------------------------------------------------------------

def test_rfc3339_to_ns_is_exact():
    assert rfc3339_to_ns("1970-01-01T00:00:01.000000001Z") == 1_000_000_001
    assert rfc3339_to_ns("2024-05-01T02:03:04.123456Z") == \
        rfc3339_to_ns("2024-05-01T02:03:04Z") + 123_456_000
    assert rfc3339_to_ns("2024-05-01T02:03:04Z") == int(
        dt.datetime(2024, 5, 1, 2, 3, 4, tzinfo=dt.timezone.utc).timestamp()) * 10 ** 9
    with pytest.raises(ValueError):
        rfc3339_to_ns("2024-05-01T02:03:04+02:00")
    with pytest.raises(ValueError, match="bad fraction"):   # '²'.isdigit() is True
        rfc3339_to_ns("2024-05-01T02:03:04.1\u00b2Z")


def test_record_to_point_parts(tmp_path):
    w = ResultWriter(tmp_path / "run-20240501T020000Z-abcd", BASE_PROVENANCE)
    rec = w.write("throughput", "ndr_64b_1flows", {"ndr_mpps": 3, "ok": True, "lat_us": None},
                  provenance=provenance_at(T0))
    m, tags, fields, t_ns = record_to_point_parts(rec)
    assert m == "throughput"
    assert tags == {"name": "ndr_64b_1flows", "profile": "local", "dut_switch_kind": "ovs",
                    "generator": "softgen", "port_kind": "memif",
                    "git_sha": BASE_PROVENANCE["git_sha"]}
    # ints become floats (a field never changes type), bools stay, nulls are skipped
    assert fields == {"ndr_mpps": 3.0, "ok": True, "run_id": "run-20240501T020000Z-abcd"}
    assert isinstance(fields["ndr_mpps"], float)
    assert t_ns == rfc3339_to_ns(utc_rfc3339(T0))


@pytest.mark.parametrize("url,ok", [("http://127.0.0.1:8086", True), ("https://h", True),
                                    ("127.0.0.1:8086", False), ("ftp://h", False),
                                    ("http://", False), ("http://[::1", False),
                                    ("http://h:99999", False)])
def test_check_url(url, ok):
    assert (check_url(url) is None) == ok


def test_config_binds_loopback_only_and_never_phones_home(tmp_path):
    text = render_config(tmp_path, 18086, 18088)
    assert text.splitlines()[1] == "reporting-disabled = true"
    assert 'bind-address = "127.0.0.1:18088"' in text
    assert 'bind-address = "127.0.0.1:18086"' in text
    assert "flux-enabled = true" in text
    assert "flux-enabled = false" in render_config(tmp_path, 1, 2, flux_enabled=False)
    assert str(tmp_path / "wal") in text


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when we return: nothing listens there


def _records(writer: ResultWriter, n: int, start: dt.datetime, suite: str = "smoke",
             value=lambda i: float(i)) -> list[dict]:
    return [writer.write(suite, f"rec{i}", {"rx_mpps": value(i), "ok": i % 2 == 0},
                         {"i": i}, provenance_at(start + dt.timedelta(seconds=i)))
            for i in range(n)]


@pytest.mark.parametrize("url", ["http://127.0.0.1:{port}", "http://[::1", "not a url"])
def test_down_or_bad_url_spools_with_a_warning_naming_the_spool(tmp_path, url):
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    recs = _records(w, 3, T0)
    exp = InfluxExporter(url.format(port=_closed_port()), spool_dir=tmp_path / "spool")
    with pytest.warns(InfluxSpoolWarning,
                      match=re.escape(str(tmp_path / "spool")) + r"/influx-spool-[0-9a-f]{16}\.jsonl"):
        res = exp.export(recs)
    assert res.spooled == 3 and res.sent == 0 and res.error
    spooled = [json.loads(x) for x in exp.spool_path.read_text().splitlines()]
    assert spooled == recs
    # a second export keeps order: old spool first, then the new records; the warning came
    # once for this outage, and within retry_after_s no connection is even tried
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfluxSpoolWarning)
        res = exp.export(recs[:1])
    assert res.spooled == 1 and "backing off" in res.error
    assert [json.loads(x) for x in exp.spool_path.read_text().splitlines()] == recs + recs[:1]


def test_backoff_ends_after_retry_after_s(tmp_path):
    now = [100.0]
    exp = InfluxExporter(f"http://127.0.0.1:{_closed_port()}", spool_dir=tmp_path,
                         retry_after_s=30, clock=lambda: now[0])
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    with pytest.warns(InfluxSpoolWarning):
        exp.export(_records(w, 1, T0))
    assert exp.backing_off()
    now[0] += 29
    assert "backing off" in exp.export(_records(w, 1, T0)).error
    now[0] += 2
    assert not exp.backing_off()
    res = exp.export(_records(w, 1, T0))
    assert "Connection refused" in res.error and exp.spooled_count() == 3


def test_corrupt_spool_line_is_moved_aside_not_lost(tmp_path):
    exp = InfluxExporter(f"http://127.0.0.1:{_closed_port()}", spool_dir=tmp_path)
    exp.spool_path.write_text('{"torn": \n')
    with pytest.warns(InfluxSpoolWarning, match="unreadable spool"):
        assert exp.replay_spool().replayed == 0
    assert "torn" in exp.corrupt_path.read_text()


# ---- against the real server -----------------------------------------------------------------

def _server(tmp_path_factory, flux: bool):
    srv = LocalInfluxd(data_dir=tmp_path_factory.mktemp("influxdb"), flux_enabled=flux)
    srv.start()
    return srv


@pytest.fixture(scope="module")
def influxd_server(tmp_path_factory):
    """One real server for the module's write tests. Without Flux: its start costs ~5 s of CPU
    and the spool test restarts the server; writes and InfluxQL do not need it."""
    srv = _server(tmp_path_factory, flux=False)
    try:
        yield srv
    finally:
        srv.kill()  # data is not needed after the tests; SIGKILL is quickest


@pytest.fixture(scope="module")
def influxd_flux_server(tmp_path_factory):
    """A server with Flux, as runs use it, for the trend's history queries."""
    srv = _server(tmp_path_factory, flux=True)
    try:
        yield srv
    finally:
        srv.kill()


def _use(srv: LocalInfluxd, request) -> LocalInfluxd:
    """The shared server, running, with a fresh database of this test's own as its default."""
    srv.start()  # no-op when running; restarts it if a test left it killed
    srv.db = "t_" + re.sub(r"\W", "_", request.node.name)
    srv.create_database()
    return srv


@pytest.fixture
def influxd(influxd_server, request):
    return _use(influxd_server, request)


@pytest.fixture
def influxd_flux(influxd_flux_server, request):
    return _use(influxd_flux_server, request)


def _count_and_values(srv: LocalInfluxd, measurement: str) -> dict[str, tuple]:
    body = srv.query(f'SELECT "rx_mpps", "ok", "run_id" FROM "{measurement}" GROUP BY "name"',
                     db=srv.db)
    out = {}
    for series in body["results"][0].get("series", []):
        for row in series["values"]:
            name = series["tags"]["name"]
            assert name not in out, f"duplicate point for {name}"
            out[name] = (row[0], *row[1:])
    return out


def test_spool_and_replay_against_real_influxd(tmp_path, influxd):
    w = ResultWriter(tmp_path / "run-20240501T020000Z-abcd", BASE_PROVENANCE)
    exp = InfluxExporter(**influxd.client_settings(), spool_dir=tmp_path / "spool")
    first = _records(w, 5, T0)
    res = exp.export(first)
    assert (res.sent, res.spooled) == (5, 0)

    influxd.kill()  # a crash: the next export cannot reach it
    second = _records(w, 4, T0 + dt.timedelta(minutes=1), suite="throughput")
    with pytest.warns(InfluxSpoolWarning, match=r"influx-spool-[0-9a-f]{16}\.jsonl"):
        res = exp.export(second)
    assert (res.sent, res.spooled) == (0, 4)
    assert exp.spooled_count() == 4

    influxd.start()  # same data dir, same port
    res = exp.replay_spool()
    assert res.replayed == 4 and res.error is None
    assert not exp.spool_path.exists()
    # replaying again sends nothing; re-exporting the same records does not duplicate them
    assert exp.replay_spool().replayed == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfluxSpoolWarning)
        assert exp.export(second[:2]).sent == 2

    smoke, tput = _count_and_values(influxd, "smoke"), _count_and_values(influxd, "throughput")
    assert len(smoke) == 5 and len(tput) == 4
    for rec in first + second:
        got = (smoke if rec["suite"] == "smoke" else tput)[rec["name"]]
        t, rx, ok, run_id = got
        assert rfc3339_to_ns(t) == rfc3339_to_ns(rec["provenance"]["end_time"])
        assert rx == rec["metrics"]["rx_mpps"] and ok == rec["metrics"]["ok"]
        assert run_id == "run-20240501T020000Z-abcd"
    exp.close()


def test_trend_against_real_influxd(tmp_path, influxd_flux):
    """Ten past nightly runs in InfluxDB, then a run with one regression and one progression."""
    settings = influxd_flux.client_settings()
    exp = InfluxExporter(**settings, spool_dir=tmp_path / "spool")
    past_start = T0 - dt.timedelta(days=10)
    for night in range(10):
        # every night is another commit: history must join across git_sha tags
        w = ResultWriter(tmp_path / f"run-202404{night + 20:02d}T020000Z-0000",
                         {**BASE_PROVENANCE, "git_sha": f"{night + 1:07x}"})
        when = past_start + dt.timedelta(days=night)
        jitter = 0.05 * (night % 3)
        recs = [w.write("throughput", "ndr_64b_1flows",
                        {"ndr_mpps": 3.0 + jitter, "latency_p99_us": 40.0 + jitter,
                         "trials": 9}, provenance=provenance_at(when)),
                w.write("throughput", "ndr_64b_1flows",  # other switch kind, other series
                        {"ndr_mpps": 9.0 + jitter}, provenance=provenance_at(
                            when + dt.timedelta(seconds=1), dut_switch_kind="ofbench")),
                w.write("throughput", "ndr_64b_1flows",  # other profile: never history
                        {"ndr_mpps": 100.0}, provenance=provenance_at(
                            when + dt.timedelta(seconds=2), profile="lab1"))]
        assert exp.export(recs).sent == 3

    run_dir = tmp_path / "run-20240501T020000Z-cafe"
    w = ResultWriter(run_dir, BASE_PROVENANCE)
    now = [w.write("throughput", "ndr_64b_1flows",
                   {"ndr_mpps": 2.0, "latency_p99_us": 30.0, "trials": 12},
                   provenance=provenance_at(T0)),
           w.write("throughput", "ndr_64b_1flows", {"ndr_mpps": 9.05},
                   provenance=provenance_at(T0 + dt.timedelta(seconds=1),
                                            dut_switch_kind="ofbench"))]
    exp.export(now)  # the run's own points must not become their own history

    report = run_trend(run_dir, **settings, last_n=8, detector="mad")
    assert report.error is None
    verdicts = {(r.key.dut_switch_kind, r.key.metric): r.judgement for r in report.rows}
    assert verdicts[("ovs", "ndr_mpps")].verdict == "regression"
    assert verdicts[("ovs", "ndr_mpps")].n_history == 8            # last N only
    assert verdicts[("ovs", "ndr_mpps")].median == pytest.approx(3.05)
    assert verdicts[("ovs", "latency_p99_us")].verdict == "progression"
    assert verdicts[("ovs", "trials")].verdict == "untracked"
    assert verdicts[("ofbench", "ndr_mpps")].verdict == "ok"
    assert report.any_regression and report.exit_code == 1
    assert "regression" in report.summary()
    page = (run_dir / "trend.html").read_text()
    assert page.count('src="plots/trend-') == 3  # one plot per judged metric with history
    assert len(load_results(run_dir)) == 2


def test_trend_with_influxdb_down_says_so(tmp_path):
    run_dir = tmp_path / "run-20240501T020000Z-cafe"
    w = ResultWriter(run_dir, BASE_PROVENANCE)
    w.write("throughput", "x", {"ndr_mpps": 1.0}, provenance=provenance_at(T0))
    report = run_trend(run_dir, url=f"http://127.0.0.1:{_closed_port()}")
    assert report.error and report.exit_code == 2 and not report.any_regression
    assert "history unavailable" in (run_dir / "trend.html").read_text()


def test_second_server_on_the_same_data_dir_is_refused(influxd):
    from reports.influxd import InfluxdError
    with pytest.raises(InfluxdError, match="already uses"):
        LocalInfluxd(data_dir=influxd.data_dir).start()
    assert influxd.is_ready()


def test_bad_data_is_rejected_alone_and_kept(tmp_path, influxd):
    """A metric that changes type (bool, then number) is refused by InfluxDB (HTTP 400): that
    record goes to the rejected file, the good records of the same batch still arrive."""
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    exp = InfluxExporter(**influxd.client_settings(), spool_dir=tmp_path / "spool")
    good = _records(w, 3, T0)  # "ok" is a bool field
    assert exp.export(good[:1]).sent == 1
    bad = w.write("smoke", "bad", {"ok": 1.5}, provenance=provenance_at(T0))
    with pytest.warns(InfluxSpoolWarning, match="refused 1 record"):
        res = exp.export([good[1], bad, good[2]])
    assert (res.sent, res.rejected, res.spooled) == (2, 1, 0)
    kept = [json.loads(x) for x in exp.rejected_path.read_text().splitlines()]
    assert kept[0]["record"] == bad and "HTTP 400" in kept[0]["reason"]
    assert len(_count_and_values(influxd, "smoke")) == 3
    assert not exp.spool_path.exists()


# ---- issue 38: a spool that cannot lose or misroute -----------------------------------------

def test_a_torn_last_line_does_not_swallow_the_next_record(tmp_path):
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    a, b, c = _records(w, 3, T0)
    exp = InfluxExporter(f"http://127.0.0.1:{_closed_port()}", spool_dir=tmp_path / "spool")
    with pytest.warns(InfluxSpoolWarning):
        exp.export([a])          # the server is down: exports now spool without the network
    with open(exp.spool_path, "a") as f:
        f.write(json.dumps(b)[:40])      # another writer died mid-write
    assert exp.export([c]).spooled == 1
    with pytest.warns(InfluxSpoolWarning, match="1 unreadable spool line"):
        assert exp._read_spool() == [a, c]
    assert json.loads(exp.corrupt_path.read_text())["line"] == json.dumps(b)[:40]
    # a line torn just before its newline is a whole record again
    with open(exp.spool_path, "a") as f:
        f.write(json.dumps(b))
    exp.export([a])
    assert exp._read_spool() == [a, c, b, a]


def test_corrupt_lines_are_moved_once_and_the_spool_rewritten(tmp_path):
    exp = InfluxExporter(f"http://127.0.0.1:{_closed_port()}", spool_dir=tmp_path)
    exp.spool_path.write_text('{"torn": \nnot json either\n')
    with pytest.warns(InfluxSpoolWarning, match="2 unreadable spool line"):
        exp.replay_spool()
    assert not exp.spool_path.exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfluxSpoolWarning)
        exp.replay_spool()
        exp.replay_spool()
    assert len(exp.corrupt_path.read_text().splitlines()) == 2


def test_one_spool_per_destination_and_no_credentials_in_it(tmp_path):
    """Records spooled for one server+bucket are never replayed into another; the URL's and
    the token's credentials are in no file of the spool dir and in no message."""
    spool = tmp_path / "spool"
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    port = _closed_port()
    nightly = InfluxExporter(f"http://nightly:pw-s3cret@127.0.0.1:{port}/", token="tok-s3cret",
                             bucket="ofbench/autogen", spool_dir=spool)
    with pytest.warns(InfluxSpoolWarning) as caught:
        nightly.export(_records(w, 2, T0))
    assert "s3cret" not in " ".join(str(m.message) for m in caught)
    same = InfluxExporter(f"http://other:pw2@127.0.0.1:{port}", bucket="ofbench/autogen",
                          spool_dir=spool)
    assert same.spool_path == nightly.spool_path      # credentials do not make a destination
    for other in (InfluxExporter(f"http://127.0.0.1:{port}", bucket="dev/autogen",
                                 spool_dir=spool),
                  InfluxExporter(f"http://127.0.0.1:{_closed_port()}", spool_dir=spool)):
        assert other.spool_path != nightly.spool_path and other.spooled_count() == 0
    assert nightly.spooled_count() == 2
    for f in spool.iterdir():
        assert "s3cret" not in f.name and "s3cret" not in f.read_text(errors="replace"), f
    dest = json.loads(nightly.spool_path.with_name(
        nightly.spool_path.name.replace(".jsonl", ".dest.json")).read_text())
    assert dest == {"url": f"http://127.0.0.1:{port}", "bucket": "ofbench/autogen"}


def test_ctrl_c_inside_a_send_keeps_the_record(tmp_path):
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    recs = _records(w, 3, T0)
    exp = InfluxExporter("http://127.0.0.1:1", spool_dir=tmp_path)

    def interrupted(batch):
        raise KeyboardInterrupt
    exp._send = interrupted
    with pytest.raises(KeyboardInterrupt):
        exp.export(recs)
    assert exp._read_spool() == recs


def test_a_legacy_spool_of_unknown_destination_is_left_alone(tmp_path, caplog):
    (tmp_path / "influx-spool.jsonl").write_text('{"suite": "x"}\n')
    exp = InfluxExporter(f"http://127.0.0.1:{_closed_port()}", spool_dir=tmp_path)
    assert "destination is unknown" in caplog.text
    assert exp.spooled_count() == 0
    assert (tmp_path / "influx-spool.jsonl").read_text() == '{"suite": "x"}\n'


# ---- issue 38: the local server with auth when a token is set -----------------------------

def test_with_a_token_the_local_server_requires_it_and_keeps_it_out_of_files(tmp_path):
    import urllib.error
    from pathlib import Path
    from reports.influxd import token_auth
    auth = token_auth("ofb:pw-s3cret")
    srv = LocalInfluxd(data_dir=tmp_path / "db", flux_enabled=False, auth=auth)
    with srv:
        assert "auth-enabled = true" in srv.config_path.read_text()
        for f in [srv.config_path, srv.log_path]:
            assert "s3cret" not in f.read_text(), f
        cmdline = Path(f"/proc/{srv.pid}/cmdline").read_bytes()
        assert b"s3cret" not in cmdline
        with pytest.raises(urllib.error.HTTPError) as e:
            srv.query("SHOW DATABASES", use_auth=False)
        assert e.value.code == 401
        w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
        no_token = {**srv.client_settings(), "token": "-"}
        with pytest.warns(InfluxSpoolWarning, match="HTTP 401"):
            assert InfluxExporter(**no_token, spool_dir=tmp_path / "s1").export(
                _records(w, 1, T0)).spooled == 1
        assert InfluxExporter(**srv.client_settings(), spool_dir=tmp_path / "s2").export(
            _records(w, 2, T0)).sent == 2
    for bad in ("justatoken", ":pw", 'us"er:pw'):
        with pytest.raises(Exception, match="user"):
            token_auth(bad)
    assert token_auth("-") is None


def test_a_server_whose_url_changes_keeps_one_spool_by_its_destination_name(tmp_path, influxd):
    """The local influxd takes a free port each run: records spooled while it was down are
    replayed by the next run's exporter, whose URL differs."""
    w = ResultWriter(tmp_path / "run", BASE_PROVENANCE)
    down = InfluxExporter(f"http://127.0.0.1:{_closed_port()}", bucket=influxd.bucket,
                          spool_dir=tmp_path, destination="local")
    with pytest.warns(InfluxSpoolWarning):
        down.export(_records(w, 3, T0))
    assert InfluxExporter(f"http://127.0.0.1:{_closed_port()}", bucket=influxd.bucket,
                          spool_dir=tmp_path).spooled_count() == 0   # by URL: another spool
    up = InfluxExporter(**influxd.client_settings(), spool_dir=tmp_path, destination="local")
    assert up.spool_path == down.spool_path
    assert up.replay_spool().replayed == 3
    assert len(_count_and_values(influxd, "smoke")) == 3


def test_pool_trend_against_real_influxd(tmp_path, influxd_flux):
    """Four places of one pool (each its own profile and testbed) measured the same six commits;
    this run is place lab4, 15 % below the others: its pool table flags it, once."""
    settings = influxd_flux.client_settings()
    exp = InfluxExporter(**settings, spool_dir=tmp_path / "spool")
    beds = {"tb1": 1.0, "tb2": 1.01, "tb3": 0.99, "tb4": 0.85}
    run_dir = tmp_path / "run-20240501T020000Z-beef"
    for c in range(6):
        for i, (bed, scale) in enumerate(beds.items()):
            place = f"lab{i + 1}"
            when = T0 - dt.timedelta(days=5 - c, seconds=-i)
            this_run = c == 5 and bed == "tb4"
            w = ResultWriter(run_dir if this_run else tmp_path / f"past-{c}-{bed}",
                             {**BASE_PROVENANCE, "git_sha": f"{c + 1:07x}", "profile": place,
                              "testbed_id": bed, "pool": "rack2", "place": place})
            rec = w.write("throughput", "ndr_64b_1flows",
                          {"ndr_mpps": 10.0 * scale * (1 + 0.003 * (c % 2)), "trials": 9},
                          provenance=provenance_at(when))
            assert exp.export([rec]).sent == 1
    report = run_trend(run_dir, **settings, last_n=8)
    assert report.error is None
    data = json.loads((run_dir / "trend.json").read_text())
    assert "pool_history_error" not in data["settings"]
    (pool,) = data["pools"]                      # ndr_mpps only: trials has no direction
    assert pool["pool"] == "rack2" and pool["metric"] == "ndr_mpps" and pool["profile"] == ""
    by = {b["testbed_id"]: b for b in pool["testbeds"]}
    assert set(by) == set(beds) and by["tb4"]["place"] == "lab4"
    assert by["tb4"]["flagged"] and not any(by[t]["flagged"] for t in ("tb1", "tb2", "tb3"))
    assert len(pool["commits"]) == 6 and all(len(c["values"]) == 4 for c in pool["commits"])
    assert "outside the pool" in (run_dir / "trend.html").read_text()
    assert report.flagged_testbeds == ["tb4 (lab4, pool rack2)"]
    assert "testbed outside its pool: tb4 (lab4, pool rack2)" in report.summary()
    assert report.exit_code == 0      # a note on the testbed, not a regression of the DUT


def test_the_nightly_trend_divides_a_rate_by_its_feeds_ceiling_from_real_influxd(tmp_path,
                                                                                 influxd_flux):
    """make nightly's trend (run_trend's defaults): the history of a DUT rate and of its feed's
    ceiling (one record, one point time) come back from InfluxDB and are paired by time; the
    host got 6 % faster tonight (rate and ceiling alike): ok once divided, a progression raw;
    the page names the divisor."""
    settings = influxd_flux.client_settings()
    exp = InfluxExporter(**settings, spool_dir=tmp_path / "spool")
    marks = {"series_kind": {"feed_replay_ceiling_mpps": "rig"}}
    for night in range(10):
        w = ResultWriter(tmp_path / f"run-202404{night + 20:02d}T020000Z-0000",
                         {**BASE_PROVENANCE, "git_sha": f"{night + 1:07x}"})
        wob = 1 + 0.004 * (night % 3)
        rec = w.write("switch", "pipeline_64b_100k_flows",
                      {"ofbench_mpps": 30.0 * wob, "feed_replay_ceiling_mpps": 125.0 * wob},
                      params=marks, provenance=provenance_at(T0 - dt.timedelta(days=10 - night)))
        assert exp.export([rec]).sent == 1
    run_dir = tmp_path / "run-20240501T020000Z-c0de"
    ResultWriter(run_dir, BASE_PROVENANCE).write(
        "switch", "pipeline_64b_100k_flows",
        {"ofbench_mpps": 30.0 * 1.06, "feed_replay_ceiling_mpps": 125.0 * 1.06},
        params=marks, provenance=provenance_at(T0))
    report = run_trend(run_dir, **settings, last_n=8)
    rows = {r.key.metric: r for r in report.rows}
    r = rows["ofbench_mpps"]
    assert r.normaliser == "feed_replay_ceiling_mpps" and r.note == "/ feed_replay_ceiling_mpps"
    assert r.judgement.verdict == "ok" and r.judgement.n_history == 8
    assert r.judgement.value == pytest.approx(0.24) and r.raw_value == pytest.approx(31.8)
    assert rows["feed_replay_ceiling_mpps"].normaliser == ""
    data = json.loads((run_dir / "trend.json").read_text())
    assert data["settings"]["normalise"] == "ceiling"
    assert "/ feed_replay_ceiling_mpps (measured 31.8)" in (run_dir / "trend.html").read_text()
    raw = run_trend(run_dir, **settings, last_n=8, normalise="none")
    assert {x.key.metric: x for x in raw.rows}["ofbench_mpps"].judgement.verdict == "progression"
