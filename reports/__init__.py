"""ofbench reports: result records, the run index page, InfluxDB export, the nightly trend.

Run folder (git-ignored): reports/<run-id>/ with run id `run-YYYYmmddTHHMMSSZ-<4 hex>`;
reports/latest is a relative symlink to the newest one.

    reports/<run-id>/results.jsonl      one validated record per line (reports.results)
    reports/<run-id>/session.json       written by the harness: {"passed", "failed", "skipped",
                                        "error", "duration_s", "profile", "command",
                                        "failed_tests": [...]} (all optional)
    reports/<run-id>/pytest.html        pytest-html (linked from the index)
    reports/<run-id>/index.html         render_run_index (reports.html)
    reports/<run-id>/plots/             charts of index.html and trend.html
    reports/<run-id>/extras/<suite>/    plots/tables suites registered (add_plot/add_table)
    reports/<run-id>/trend.html|json    run_trend (reports.trend), nightly only
    reports/spool/influx-*.jsonl        records waiting for InfluxDB (git-ignored)

API for the harness (conftest.py), in call order:

    from reports.results import create_run_dir, prune_run_dirs, ResultWriter, collect_provenance
    run_dir = create_run_dir(Path("reports"))             # also points reports/latest at it
    prune_run_dirs(Path("reports"), keep=50)              # optional: old runs off the disk
    writer = ResultWriter(run_dir, {**collect_provenance(REPO), "profile": ...,
                                    "dut_switch_kind": ..., "generator": ...,
                                    "generator_version": ..., "port_kind": ...})
    rec = writer.write(suite, name, metrics, params, provenance,   # -> the record (dict)
                       target_misses=[...], targets=[...], test_id=nodeid)
        # raises reports.results.ResultRecordError (a ValueError naming every offending key,
        # e.g. "metrics.rx_mpps: 'fast' is not of type ...") and writes nothing
    from reports.html import add_plot, add_table, render_run_index
    add_plot(run_dir, suite, fig_or_png_path, title) -> Path of the PNG
    add_table(run_dir, suite, rows, title)           -> Path of an .html fragment (rows in .json)
    render_run_index(run_dir)                         -> Path of index.html (idempotent)

    from reports.influxd import LocalInfluxd      # --influx-url local
    srv = LocalInfluxd(log_path=run_dir / "logs" / "influxd.log").start()   # .stop() / .kill()
    from reports.influx import InfluxExporter
    exp = InfluxExporter(spool_dir=Path("reports/spool"), **srv.client_settings())
    exp.replay_spool()                                # at session start
    exp.export(records)                               # never raises for InfluxDB trouble;
                                                      # spools + warns; see ExportResult
    from reports.trend import run_trend
    report = run_trend(run_dir, url, token, org, bucket)   # after the run's export
    report.any_regression, report.error, report.exit_code (0 ok, 1 regression, 2 no history),
    report.summary()

The record format is the JSON Schema reports/schema/result-v1.json (draft 2020-12).
Command line for a finished run: `python -m reports {render,export,replay,trend,influxd}`.
"""
