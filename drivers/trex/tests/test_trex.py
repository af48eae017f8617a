"""TRex driver: translation to STL objects (in the client process), the counter mapping, and
a trial against FakeTrexServerDouble (a test double, not a TRex).  Every behaviour the double
covers also runs against a real TRex v3.08 server in test_trex_real.py; the double stays only
for what a real server on a memif loopback cannot be made to do: lose a chosen share of the
packets (here 1 %), so lost/rx mapping is checked with loss, and run where TRex is not built."""
import os

import pytest

from drivers.trafficgen.counters import CounterError
from drivers.trafficgen.model import FieldVar, PortInfo, Stream, StreamError, validate_streams
from drivers.trex.client_proc import FakeTrexServerDouble
from drivers.trex.driver import Trex, latency_from_trex, map_trex_stats
from drivers.trex.translate import stream_spec

PORTS = {"p0": PortInfo("p0", 10_000), "p1": PortInfo("p1", 10_000)}


@pytest.fixture(scope="module")
def trex_double():
    t = Trex("double:0.01", {"p0": (0, 10_000), "p1": (1, 10_000)})
    yield t
    t.close()
    assert t.proc.poll() is not None


def test_spec_splits_imix_into_weighted_substreams():
    [r] = validate_streams([Stream("m", "p0", frame_size="imix", rate_pps=1200, count=1200, latency=True)], PORTS)
    spec = stream_spec(r, 0)
    subs = spec["substreams"]
    assert [round(s["pps"]) for s in subs] == [700, 400, 100]
    assert [s["total_pkts"] for s in subs] == [700, 400, 100]
    assert [s["latency"] for s in subs] == [True, False, False]
    assert len({s["pg_id"] for s in subs}) == 3


def test_too_many_distinct_packets_for_trex():
    [r] = validate_streams([Stream("m", "p0", frame_size=64, rate_pps=1)], PORTS)
    r.templates = [bytes([i]) * 60 for i in range(17)]
    with pytest.raises(StreamError, match="at most 16 distinct"):
        stream_spec(r, 0)


def test_translation_to_stl_objects(trex_double):
    [r] = validate_streams([Stream("s", "p1", frame_size=64, rate_pps=1000, duration_s=2, flows=100,
                                   vary=[FieldVar("dst_ip", 10, 1)], latency=True)], PORTS)
    [[j]] = trex_double.rpc("translate", streams=[stream_spec(r, 1)])["streams"]
    assert j["mode"] == {"rate": {"type": "pps", "value": 1000.0}, "type": "single_burst", "total_pkts": 2000}
    assert j["flow_stats"]["rule_type"] == "latency" and j["flow_stats"]["stream_id"] == 1000
    ins = j["vm"]["instructions"]
    fv = {i["name"]: i for i in ins if i["type"] == "flow_var"}
    wr = {i["name"]: i for i in ins if i["type"] == "write_flow_var"}
    assert fv["v0"]["size"] == 4 and wr["v0"]["pkt_offset"] == 30          # dst_ip, 10 values
    assert fv["v0"]["max_value"] - fv["v0"]["min_value"] == 9
    assert fv["v1"]["min_value"] == 1024 and fv["v1"]["max_value"] == 1123 and wr["v1"]["pkt_offset"] == 34
    assert [i["pkt_offset"] for i in ins if i["type"] == "fix_checksum_ipv4"] == [14]
    # a stream without an end is continuous, without latency it is plain flow stats
    [r2] = validate_streams([Stream("c", "p0", frame_size=128, rate_pps=5)], PORTS)
    [[j2]] = trex_double.rpc("translate", streams=[stream_spec(r2, 0)])["streams"]
    assert j2["mode"]["type"] == "continuous" and j2["flow_stats"]["rule_type"] == "stats"
    assert j2["vm"]["instructions"] == []


def test_trial_against_the_double(trex_double):
    assert trex_double.connect_reply["double"] is True
    c = trex_double.run([Stream("a", "p0", frame_size=64, rate_pps=1e6, count=100_000, latency=True),
                         Stream("b", "p1", frame_size="imix", rate_pps=12_000, count=1200)], drain_s=0)
    a, b = c.streams["a"], c.streams["b"]
    assert (a.tx, a.rx, a.lost, a.unsent) == (100_000, 99_000, 1_000, 0)
    assert b.tx == 1200 and b.rx == 700 * 99 // 100 + 400 * 99 // 100 + 100 * 99 // 100
    assert a.latency.min_us == 5 and a.latency.max_us == 30 and a.latency.p50_us == 20
    assert c.ports["p0"].tx == 100_000 and c.ports["p1"].rx == 99_000


def test_bad_stream_is_refused_before_traffic(trex_double):
    with pytest.raises(StreamError, match="port 'p7'"):
        trex_double.load([Stream("x", "p7", frame_size=64, rate_pps=1)])


def test_counter_mapping_with_trex_layout():
    [r] = validate_streams([Stream("s", "p0", frame_size=64, rate_pps=10, count=10, latency=True)], PORTS)
    spec = stream_spec(r, 0)
    stats = {"0": {"opackets": 10, "ipackets": 0, "obytes": 640, "ibytes": 0},
             "1": {"opackets": 0, "ipackets": 9, "obytes": 0, "ibytes": 576},
             "flow_stats": {"1000": {"tx_pkts": {"0": 10, "total": 10}, "rx_pkts": {"1": 9, "total": 9}}},
             "latency": {"1000": {"latency": {"total_min": 3, "average": 7.5, "total_max": 250, "jitter": 1,
                                              "histogram": {"0": 2, "10": 6, "200": 1}},
                                  "err_cntrs": {"dup": 0, "out_of_order": 1}}}}
    c = map_trex_stats([spec], stats, {0: "p0", 1: "p1"})
    s = c.streams["s"]
    assert (s.tx, s.rx, s.lost, s.out_of_order) == (10, 9, 1, 1)
    assert s.latency.p50_us == 20 and s.latency.p99_us == 250 and s.latency.samples == 9
    assert c.ports["p1"].rx == 9
    stats["flow_stats"]["1000"]["rx_pkts"]["total"] = 11
    with pytest.raises(CounterError, match="rx > tx"):
        map_trex_stats([spec], stats, {0: "p0", 1: "p1"})


def test_latency_histogram_buckets():
    lat = latency_from_trex({"total_min": 1, "average": 2, "total_max": 1000,
                             "histogram": {"10": 50, "20": 40, "300": 10}})
    assert (lat.p50_us, lat.p90_us, lat.p99_us) == (20, 30, 400)


def test_the_double_is_a_double():
    d = FakeTrexServerDouble()
    assert d.get_stats() == {"flow_stats": {}, "latency": {}}


@pytest.mark.features("trex")
def test_real_trex_server_connects(profile):
    """A profile's running TRex server (generator.server an address) answers; "local" servers
    are started by the lab and tested in test_trex_real.py."""
    server = profile.generator.get("server") if isinstance(profile.generator, dict) else None
    if server == "local":
        pytest.skip("generator.server local: the lab starts TRex itself (test_trex_real.py)")
    t = Trex(server or os.environ.get("OFBENCH_TREX_SERVER", "127.0.0.1"), {"p0": (0, 10_000), "p1": (1, 10_000)},
             sync_port=profile.generator.get("sync_port", 4501), async_port=profile.generator.get("async_port", 4500))
    assert "TRex v" in t.version
    t.close()


def test_trex_short_latency_bucket_is_derived_from_rx():
    """TRex v3.08 keeps bucket "0" (< 10 us) across resets; the driver derives it from rx."""
    stale = {"total_min": 3, "average": 20, "total_max": 150, "histogram": {"0": 1026, "10": 300, "100": 100}}
    lat = latency_from_trex(stale, rx=700)
    assert lat.samples == 700 and lat.histogram[0] == (0.0, 10.0, 300)
    assert latency_from_trex({"histogram": {"20": 5}}, rx=5).max_us == 30  # total_max 0: top bucket edge


def test_tx_ring_drops_are_unsent_not_lost():
    """Flow stats count 6000 built, the port sent 5881: 119 refused by the TX ring (low_end)."""
    specs = []
    for sid, (name, n) in enumerate((("x", 1000), ("y", 2000), ("z", 3000))):
        [r] = validate_streams([Stream(name, "p0", frame_size=64, rate_pps=10, count=n)], PORTS)
        r.id = sid
        specs.append(stream_spec(r, 0))
    fs = {str(sp["substreams"][0]["pg_id"]): {"tx_pkts": {"total": n}, "rx_pkts": {"total": rx}}
          for sp, n, rx in zip(specs, (1000, 2000, 3000), (961, 1960, 2960))}
    stats = {"0": {"opackets": 5881}, "1": {"ipackets": 5881}, "flow_stats": fs}
    c = map_trex_stats(specs, stats, {0: "p0", 1: "p1"})
    assert c.unsent == c.refused == 119 and c.lost == 0 and c.tx == 5881
    assert all(s.tx + s.unsent == s.offered for s in c.streams.values())
