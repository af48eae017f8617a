"""The run index page: content, extras API, and a look at it in headless Chromium."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reports.html import (add_plot, add_table, fmt_number, load_extras, main_metric,
                          render_run_index, table_html)
from reports.results import load_results
from reports.tests.sample import make_sample_run, write_session

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars"]


class Tables(HTMLParser):
    """Collects every <table> as rows of cell texts, and <img> sources."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self.imgs: list[str] = []
        self._row = self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"class": a.get("class", ""), "rows": []})
        elif tag == "tr" and self.tables:
            self._row = []
            self.tables[-1]["rows"].append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = {"text": "", "class": a.get("class", "")}
            self._row.append(self._cell)
        elif tag == "img":
            self.imgs.append(a.get("src", ""))

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data


def parse(text: str) -> Tables:
    p = Tables()
    p.feed(text)
    return p


@pytest.fixture
def sample_run(tmp_path):
    run_dir = tmp_path / "run-20240501T020000Z-abcd"
    make_sample_run(run_dir)
    write_session(run_dir)
    (run_dir / "pytest.html").write_text("<html>pytest</html>")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 2.5))
    ax.bar(["1", "2", "4", "8"], [3, 9, 14, 6])
    ax.set_title("latency histogram")
    add_plot(run_dir, "throughput", fig, "latency histogram, ovs, 1 flow")
    add_table(run_dir, "throughput", [{"frame_size_b": 64, "ovs_mpps": 3.1, "ofbench_mpps": 8.4},
                                      {"frame_size_b": 128, "ovs_mpps": 2.9}], "side by side")
    return run_dir


def test_index_has_summary_sections_tables_plots_and_targets(sample_run):
    index = render_run_index(sample_run)
    text = index.read_text()
    assert index == sample_run / "index.html"
    assert "<script" not in text and "http://" not in text and "https://" not in text
    for s in ("7 passed", "1 failed", "2 skipped", "pytest.html", "results.jsonl",
              "test_ndr[ovs-100000]", "run-20240501T020000Z-abcd"):
        assert s in text
    for suite in ("smoke", "throughput", "softgen"):
        assert f'id="suite-{suite}"' in text
    doc = parse(text)
    records_tables = [t for t in doc.tables if t["class"] == "records"]
    assert len(records_tables) == 3
    tp = records_tables[1]["rows"]
    head = [c["text"] for c in tp[0]]
    assert head[:3] == ["name", "dut_switch_kind", "ndr_mpps"] and head[-1] == "targets"
    assert len(tp) == 1 + 6
    missed = [r for r in tp[1:] if "miss" in r[-1]["class"]]
    assert len(missed) == 1 and "ndr_mpps 1.033, target >= 2.000" in missed[0][-1]["text"]
    assert "miss" in missed[0][2]["class"]  # the metric cell itself is marked too
    # throughput draws the charts it declares (suites/throughput/report.yaml: NDR per
    # workload, each switch side by side) instead of the first-metric chart; smoke's single
    # record gets none; plus the registered extra
    assert any(s.startswith("plots/throughput-chart0-ndr-") for s in doc.imgs)
    assert "plots/throughput-ndr-mpps.png" not in doc.imgs
    assert not any("smoke" in s for s in doc.imgs)
    assert any(s.startswith("extras/throughput/") for s in doc.imgs)
    for src in doc.imgs:
        assert (sample_run / src).is_file()
    assert any(t["rows"] and [c["text"] for c in t["rows"][0]] == ["frame_size_b", "ovs_mpps",
                                                                    "ofbench_mpps"]
               for t in doc.tables)


def test_index_of_an_empty_run(tmp_path):
    text = render_run_index(tmp_path).read_text()
    assert "This run wrote no records" in text


def test_main_metric_prefers_common_throughput(tmp_path):
    make_sample_run(tmp_path)
    recs = [r for r in load_results(tmp_path) if r["suite"] == "throughput"]
    assert main_metric(recs) == "ndr_mpps"
    assert main_metric([{"metrics": {"ok": True}}]) is None


def test_extras_api(tmp_path):
    png = tmp_path / "x.png"
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure()
    fig.savefig(png)
    plt.close(fig)
    p1 = add_plot(tmp_path, "wan", png, "from a file")
    p2 = add_table(tmp_path, "wan", [{"a": 1}], "a table")
    (tmp_path / "extras" / "wan" / "zz-handmade.html").write_text("<p>hand made</p>")
    items = load_extras(tmp_path, "wan")
    assert [(i["kind"], i["title"]) for i in items] == [("png", "from a file"),
                                                        ("table", "a table"),
                                                        ("html", "zz-handmade")]
    assert items[0]["file"] == p1 and items[1]["file"] == p2.with_suffix(".json")
    assert p2.suffix == ".html" and "<table>" in p2.read_text()  # for pytest-html extras
    with pytest.raises(FileNotFoundError, match="nope.png"):
        add_plot(tmp_path, "wan", tmp_path / "nope.png", "missing")
    with pytest.raises(TypeError, match="Figure or a PNG"):
        add_plot(tmp_path, "wan", 42, "bad")
    with pytest.raises(ValueError, match="suite name"):
        add_table(tmp_path, "../evil", [], "bad")
    # a suite with extras but no records still gets a section
    assert 'id="suite-wan"' in render_run_index(tmp_path).read_text()


def test_table_html_and_number_format():
    t = table_html([{"a": 1, "b": True}, {"a": 2.5, "c": None}], "t<1>")
    assert "t&lt;1&gt;" in t and t.count("<tr>") == 3 and "✓" in t
    assert fmt_number(1234567.8) == "1\u2009234\u2009568"
    assert fmt_number(3.14159) == "3.142" and fmt_number(0.00012) == "0.00012"
    assert fmt_number(42) == "42" and fmt_number(0.0) == "0"


def _chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chr'}",
                           *args], capture_output=True, text=True, timeout=90)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup installs it)")
def test_index_renders_in_headless_chromium(sample_run, tmp_path):
    index = render_run_index(sample_run)
    shot = tmp_path / "shot.png"
    r = _chromium([f"--screenshot={shot}", "--window-size=1280,2000", index.as_uri()], tmp_path)
    assert shot.is_file(), r.stderr[-2000:]
    import matplotlib.image as mpimg
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] == 2000 and pixels.shape[1] == 1280
    assert pixels[..., :3].std() > 0.05  # not a blank page
    # the dark header band is at the top: the CSS was applied
    assert pixels[20, 640, :3].mean() < 0.3
    dom = _chromium(["--dump-dom", index.as_uri()], tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    doc = parse(dom.stdout)
    assert len([t for t in doc.tables if t["class"] == "records"]) == 3
    names = [row[0]["text"] for t in doc.tables if t["class"] == "records" for row in t["rows"][1:]]
    assert "ndr_64b_100000flows" in names and "ping_and_udp_burst" in names
    assert re.search(r"1 target misses", dom.stdout)


def test_few_records_with_many_metrics_get_a_column_each(tmp_path):
    from reports.results import ResultWriter
    from reports.tests.sample import BASE_PROVENANCE
    w = ResultWriter(tmp_path, BASE_PROVENANCE)
    metrics = {f"m{i}_us": float(i) for i in range(10)}
    w.write("smoke", "a", metrics, provenance={"dut_switch_kind": "ovs"})
    w.write("smoke", "b", metrics, provenance={"dut_switch_kind": "ovs-dpdk"},
            target_misses=[{"metric": "m3_us", "target": "<= 1", "value": 3.0,
                            "message": "m3_us = 3, target <= 1: off by +2"}])
    doc = parse(render_run_index(tmp_path).read_text())
    t = next(t for t in doc.tables if "transposed" in t["class"])
    assert [c["text"] for c in t["rows"][0]] == ["metric", "a [ovs]", "b [ovs-dpdk]"]
    m3 = next(r for r in t["rows"] if r[0]["text"] == "m3_us")
    assert "miss" in m3[2]["class"] and "miss" not in m3[1]["class"]
    assert t["rows"][-1][0]["text"] == "targets" and "off by +2" in t["rows"][-1][2]["text"]


def test_a_big_suite_stays_readable(tmp_path):
    from reports.html import MAX_BARS, OPEN_TABLE_ROWS
    from reports.results import ResultWriter
    from reports.tests.sample import BASE_PROVENANCE
    w = ResultWriter(tmp_path, BASE_PROVENANCE)
    n = OPEN_TABLE_ROWS + 50
    for i in range(n):
        w.write("conformance", f"case_{i:04d}", {"ok": i % 7 != 0, "duration_ms": 10.0 + i})
    text = render_run_index(tmp_path).read_text()
    assert f"<details><summary>{n} records</summary>" in text  # long tables start collapsed
    assert f"{n - len(range(0, n, 7))} of {n} ok" in text
    assert text.count("<tr id=") >= n
    assert (tmp_path / "plots" / "conformance-duration-ms.png").is_file()
    assert MAX_BARS < n


def test_a_torn_results_line_is_reported_not_fatal(tmp_path):
    make_sample_run(tmp_path)
    with open(tmp_path / "results.jsonl", "a") as f:
        f.write('{"suite": "torn"\n')
    text = render_run_index(tmp_path).read_text()
    assert "unreadable lines in results.jsonl" in text and 'id="suite-throughput"' in text


def test_process_logs_are_linked(tmp_path):
    make_sample_run(tmp_path)
    d = tmp_path / "tests" / "suites_smoke_test_smoke.py_test_ping_ovs_"
    d.mkdir(parents=True)
    (d / "sw-ovs-vswitchd.log").write_text("log")
    text = render_run_index(tmp_path).read_text()
    assert 'href="tests/suites_smoke_test_smoke.py_test_ping_ovs_/sw-ovs-vswitchd.log"' in text
    assert "process logs (1 files)" in text


PROBE = """<script>
window.addEventListener('load', () => {
  const rows = sel => [...document.querySelectorAll(sel)].map(tr => tr.getBoundingClientRect().height);
  const out = {
    page_width: document.documentElement.scrollWidth,
    scrolling_tables: [...document.querySelectorAll('.scroll')]
        .filter(d => d.scrollWidth > d.clientWidth + 1)
        .map(d => (d.querySelector('table') || {}).className + ' ' + d.scrollWidth),
    record_row_max: Math.max(0, ...rows('table.records > tbody > tr')),
    verdict_row_max: Math.max(0, ...rows('table.verdicts > tbody > tr')),
    verdicts_top: document.getElementById('verdicts').getBoundingClientRect().top,
  };
  const pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup installs it)")
def test_a_real_run_reads_well_at_1400px(tmp_path):
    """Issue 17 part 5: at a laptop's 1400 px the verdicts are on the first screen, no table
    needs a sideways scroll, and no row is stretched by long params or notes. The screenshot
    is kept in $OFBENCH_SCREENSHOT_DIR when set (look at it)."""
    import os
    from reports.results import ResultWriter
    from reports.tests.sample import BASE_PROVENANCE
    run = tmp_path / "run-20261123T231957Z-c1a5"
    shutil.copytree(Path(__file__).parent / "fixtures" / run.name, run)
    # repetitions and a long params text on top of the real records
    w = ResultWriter(run, {**BASE_PROVENANCE, "dut_switch_kind": "ovs"})
    for v in (0.27, 0.29, 0.34, 0.28, 0.31):
        w.write("controller", "random_20pat_8thr_naive_proc_strict",
                {"high_ratio": v, "low_ratio": 0.9, "high_ms": 560.0 + 100 * v},
                {"trace": "random", "patterns": 20, "matcher": "naive", "app": "priority",
                 "trace_sha256": "ab" * 32, "note": "a long free text " * 6})
    index = render_run_index(run)
    probe = run / "probe.html"
    probe.write_text(index.read_text().replace("</body>", PROBE + "</body>"))
    dom = _chromium(["--window-size=1400,1000", "--dump-dom", probe.as_uri()], tmp_path)
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout)
    assert m, dom.stderr[-2000:]
    got = json.loads(m.group(1).replace("&quot;", '"'))
    assert got["page_width"] <= 1400, got
    assert got["scrolling_tables"] == [], got
    assert got["record_row_max"] <= 60, got   # one line of text, or two with a spread note
    assert got["verdict_row_max"] <= 110, got  # a goal's text wraps to a few lines at most
    assert got["verdicts_top"] < 400, got      # the first thing below the summary
    shot = tmp_path / "index-1400.png"
    r = _chromium([f"--screenshot={shot}", "--window-size=1400,1000", index.as_uri()],
                  tmp_path)
    assert shot.is_file(), r.stderr[-2000:]
    keep = os.environ.get("OFBENCH_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / shot.name)
    # the inconclusive controller goal is on the page with its spread
    text = index.read_text()
    assert "≈ inconclusive" in text and "0.27–0.34 ×5" in text


IMAGES_PROBE = """<script>
window.addEventListener('load', () => {
  const figs = [...document.querySelectorAll('figure img')].map(i => ({
      src: i.getAttribute('src'), natural: i.naturalWidth,
      right: Math.round(i.getBoundingClientRect().right)}));
  const out = {page_width: document.documentElement.scrollWidth, figs: figs,
               record_row_max: Math.max(0, ...[...document.querySelectorAll(
                   'table.records > tbody > tr')].map(tr => tr.getBoundingClientRect().height))};
  const pre = document.createElement('pre'); pre.id = 'probe';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup installs it)")
def test_a_real_run_with_distributions_reads_well_at_1400px(tmp_path):
    """Issue 17 part 2: a real --dut=local run (smoke, wan, throughput latency; records with
    distributions) draws the suites' declared CDFs and 5 ms histograms; at 1400 px every chart
    loads, fits the page, and no table row is stretched. Screenshot kept as in the test above."""
    import os
    run = tmp_path / "run-20261124T014214Z-3906"
    shutil.copytree(Path(__file__).parent / "fixtures" / run.name, run)
    index = render_run_index(run)
    plots = {p.name for p in (run / "plots").glob("*.png")}
    for stem in ("smoke-chart0-ping-round-trip", "wan-chart1-app3-delay-per-method",
                 "wan-chart2-app5-delay-per-method", "wan-chart3-every-app",
                 "throughput-chart2-latency-through-each-switch-at-50",
                 "throughput-chart4-the-generator-s-own-latency-floor"):
        assert any(p.startswith(stem) for p in plots), (stem, sorted(plots))
    probe = run / "probe.html"
    probe.write_text(index.read_text().replace("</body>", IMAGES_PROBE + "</body>"))
    dom = _chromium(["--window-size=1400,1000", "--dump-dom", probe.as_uri()], tmp_path)
    m = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout)
    assert m, dom.stderr[-2000:]
    got = json.loads(m.group(1).replace("&quot;", '"'))
    assert got["page_width"] <= 1400, got
    assert len(got["figs"]) >= 10 and all(f["natural"] > 0 for f in got["figs"]), got["figs"]
    assert all(f["right"] <= 1400 for f in got["figs"]), got["figs"]
    assert got["record_row_max"] <= 60, got
    shot = tmp_path / "index-distributions-1400.png"
    r = _chromium([f"--screenshot={shot}", "--window-size=1400,4000", index.as_uri()], tmp_path)
    assert shot.is_file(), r.stderr[-2000:]
    keep = os.environ.get("OFBENCH_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / shot.name)


# ---- issue 38: the index reads nothing outside the run folder and links nothing unsafe -----

def test_extras_are_read_only_for_safe_suite_names_and_inside_the_run(tmp_path):
    from reports.results import ResultWriter
    from reports.tests.sample import BASE_PROVENANCE
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.html").write_text("<script>OUTSIDE-MARKER</script>")
    run = tmp_path / "reports" / "run-20240501T020000Z-abcd"
    w = ResultWriter(run, BASE_PROVENANCE)
    w.write("smoke", "ok", {"x": 1.0})
    # a record whose suite is a path: its section is shown, nothing is read from that path
    rec = json.loads((run / "results.jsonl").read_text())
    rec["suite"] = "../../../outside"
    with open(run / "results.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    assert load_extras(run, "../../../outside") == []
    # a symlink out of extras/<suite>/, a manifest entry naming a path, a suite folder that is
    # a symlink out of the run
    add_table(run, "smoke", [{"a": 1}], "a table")
    (run / "extras" / "smoke" / "link.html").symlink_to(outside / "evil.html")
    with open(run / "extras" / "smoke" / "manifest.jsonl", "a") as f:
        f.write(json.dumps({"kind": "html", "file": "../../../../outside/evil.html",
                            "title": "t"}) + "\n")
    (run / "extras" / "wan").symlink_to(outside, target_is_directory=True)
    assert [i["title"] for i in load_extras(run, "smoke")] == ["a table"]
    assert load_extras(run, "wan") == []
    text = render_run_index(run).read_text()
    assert "OUTSIDE-MARKER" not in text
    assert "a table" in text and "../../../outside" in text   # shown as text, escaped


@pytest.mark.parametrize("value,linked", [
    ("javascript:alert(1)", False), ("JaVaScRiPt:alert(1)", False), ("http://x/p.html", False),
    ("/etc/passwd", False), ("../other-run/pytest.html", False), ("a/../../x.html", False),
    ('p.html" onclick="x', False), ("html/pytest-report.html", True)])
def test_the_pytest_html_link_is_a_relative_path_inside_the_run(tmp_path, value, linked):
    run = tmp_path / "run-20240501T020000Z-abcd"
    run.mkdir()
    (run / "session.json").write_text(json.dumps({"passed": 1, "pytest_html": value}))
    text = render_run_index(run).read_text()
    hrefs = re.findall(r'href="([^"]*)"', text)
    assert ("html/pytest-report.html" in hrefs) == linked
    assert not any(h.lower().startswith(("javascript", "http", "/", "..")) for h in hrefs), hrefs
    assert "onclick" not in text


def test_search_trials_show_the_dut_counters_and_rig_figures_beside_each_trial(tmp_path):
    """A search record's trial log: one folded table, a row per trial in order, the load in
    Mpps, the failed trial marked, a column per DUT counter (cycles per packet first) and per
    rig figure; records without a log add nothing."""
    from reports.html import search_trials_html
    rec = {"name": "ndr_64b_1flows", "provenance": {"dut_switch_kind": "ovs-dpdk"},
           "search": {"trial_log": [
               {"target": "mlr", "rate_pps": 2_000_000.0, "duration_s": 1.0, "loss_ratio": 0.0,
                "reason": "ok", "cause": "ok", "rig": {"switch_max_gap_ns": 5000.0},
                "dut": {"pmd_rx_packets": 2e6, "cycles_per_packet": 310.5, "cache_hit_ratio": 0.99}},
               {"target": "mlr", "rate_pps": 4_000_000.0, "duration_s": 1.0, "loss_ratio": 0.2,
                "reason": "loss", "cause": "DUT loss", "rig": {},
                "dut": {"pmd_rx_packets": 3.2e6, "cycles_per_packet": 600.0, "pmd_upcalls": 0.0}}]}}
    html = search_trials_html([rec, {"name": "plain", "metrics": {"x_mpps": 1.0}}])
    t = parse(html)
    assert len(t.tables) == 1
    texts = [[c["text"] for c in row] for row in t.tables[0]["rows"]]
    head, rows = texts[0], texts[1:]
    assert head[:7] == ["#", "target", "rate_pps", "duration_s", "loss_ratio", "reason", "cause"]
    assert head[7:10] == ["dut: cycles_per_packet", "dut: cache_hit_ratio", "dut: pmd_upcalls"]
    assert head[-1] == "rig: switch_max_gap_ns"
    assert [r[2] for r in rows] == ["2.000 Mpps", "4.000 Mpps"] and rows[1][6] == "DUT loss"
    assert rows[0][7] == "310.5" and rows[1][8] == "—"
    assert "ndr_64b_1flows [ovs-dpdk]: 2 search trials" in html and 'class="miss"' in html
    assert search_trials_html([{"name": "plain", "search": {"goals": []}}]) == ""
