"""Command line for a run folder (the harness calls the same functions at session end):

  python -m reports render [RUN_DIR]            rewrite RUN_DIR/index.html (default reports/latest)
  python -m reports export [RUN_DIR] --influx-url URL [--token-file F --org - --bucket B]
                                                send a run's records (idempotent: re-exporting a
                                                run overwrites the same points), spool on failure
  python -m reports replay --influx-url URL     send what reports/spool/ holds
  python -m reports trend [RUN_DIR] --influx-url URL [--detector auto|jumpavg|mad|mad2|csit|jlog --last-n 30 --k 3]
                          [--normalise none|ceiling|rig-index]
                                                write trend.html; exit 1 on a regression, 2 when
                                                the history could not be read
  python -m reports trend-eval RUN_DIR... | --history FILE [--steps 5,10,20] [--out FILE]
                                                every trend detector (mad, mad2, jumpavg,
                                                csit, jlog, auto) on real histories with injected
                                                steps, side by side per series kind (DUT
                                                rates, DUT latencies, rig): detection rate,
                                                nights to detect, false alarms
  python -m reports bisect --metric SUITE/NAME/METRIC --good SHA --bad SHA [--trials 3]
                                                build and measure the commits in between (one
                                                worktree, one incremental build) and name the
                                                first bad one; --work DIR --stop-after S: in
                                                steps, the same command resumes
  python -m reports influxd [DATA_DIR]          run the local influxd in the foreground
  python -m reports compare RUN_A RUN_B [--k 3] [--out PAGE.html] [--all]
                                                every metric that moved beyond its noise band
                                                from A to B, better or worse (the trend's
                                                rule); writes RUN_B/compare-<A>.html and .json;
                                                exit 1 when something got worse

--influx-url local starts the repo's influxd (tools/bin/influxd, data in tools/influxdb-data)
for the duration of the command. The token comes from OFBENCH_INFLUX_TOKEN or --token-file,
never from the command line (redact/); a URL with credentials is refused.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from paths import REPO

SPOOL_DIR = REPO / "reports" / "spool"


def _influx_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--influx-url", required=True, help="http://host:8086, or 'local'")
    p.add_argument("--token-file", default=None,
                   help="a file whose first line is the token (1.8: 'user:pass'); default: "
                        "the environment's OFBENCH_INFLUX_TOKEN, else none")
    p.add_argument("--token", default="-", help="refused with a value (argv is visible to "
                   "every user): use OFBENCH_INFLUX_TOKEN or --token-file")
    p.add_argument("--org", default="-", help="1.8: '-' (default)")
    p.add_argument("--bucket", default="ofbench/autogen", help="1.8: '<db>/<rp>'")


@contextlib.contextmanager
def _influx_settings(args, token: str):
    settings = {"url": args.influx_url, "token": token, "org": args.org,
                "bucket": args.bucket}
    if args.influx_url != "local":
        yield settings
        return
    from reports.influxd import LocalInfluxd
    with LocalInfluxd() as srv:
        yield {**settings, **srv.client_settings()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reports", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("render", "export", "trend"):
        p = sub.add_parser(name)
        p.add_argument("run_dir", nargs="?", default=str(REPO / "reports" / "latest"))
        if name != "render":
            _influx_args(p)
        if name == "trend":
            from reports.trend import (DETECTOR_DEFAULT, DETECTORS, LAST_N_DEFAULT,
                                       NORMALISE_DEFAULT, NORMALISERS)
            p.add_argument("--detector", choices=DETECTORS, default=DETECTOR_DEFAULT)
            p.add_argument("--normalise", choices=NORMALISERS, default=NORMALISE_DEFAULT,
                           help="divide a DUT rate by the same night's rig probes")
            p.add_argument("--last-n", type=int, default=LAST_N_DEFAULT)
            p.add_argument("--k", type=float, default=3.0, help="the mad detector's band")
    from reports.trend_eval import add_arguments
    add_arguments(sub.add_parser("trend-eval"))
    from reports.bisect import add_arguments as bisect_arguments
    bisect_arguments(sub.add_parser("bisect"))
    _influx_args(sub.add_parser("replay"))
    p = sub.add_parser("compare")
    p.add_argument("run_a", help="the reference run folder")
    p.add_argument("run_b", help="the run under review")
    p.add_argument("--k", type=float, default=3.0)
    p.add_argument("--out", default=None, help="page to write (default RUN_B/compare-<A>.html)")
    p.add_argument("--all", action="store_true", help="also list metrics within noise")
    p = sub.add_parser("influxd")
    p.add_argument("data_dir", nargs="?", default=None)
    args = ap.parse_args(argv)

    if args.cmd == "render":
        from reports.html import render_run_index
        print(render_run_index(Path(args.run_dir).resolve()))
        return 0
    if args.cmd == "trend-eval":
        from reports.trend_eval import HistoryError
        from reports.trend_eval import main as trend_eval
        try:
            return trend_eval(args)
        except (HistoryError, FileNotFoundError) as e:
            print(f"trend-eval: {e}", file=sys.stderr)
            return 2
    if args.cmd == "bisect":
        from reports.bisect import BisectError
        from reports.bisect import main as bisect
        try:
            return bisect(args)
        except BisectError as e:
            print(f"bisect: {e}", file=sys.stderr)
            return 2
    if args.cmd == "compare":
        from reports.compare import compare_runs, default_out, write_compare_page
        try:
            cmp = compare_runs(Path(args.run_a), Path(args.run_b), k=args.k)
        except FileNotFoundError as e:
            print(f"compare: {e}", file=sys.stderr)
            return 2
        out = write_compare_page(cmp, Path(args.out) if args.out
                                 else default_out(args.run_a, args.run_b), args.all)
        print(cmp.summary())
        print(f"page: {out}")
        return cmp.exit_code
    if args.cmd == "influxd":
        from reports.influxd import DEFAULT_DATA_DIR, LocalInfluxd
        srv = LocalInfluxd(data_dir=Path(args.data_dir) if args.data_dir else DEFAULT_DATA_DIR)
        with srv:
            print(f"influxd on {srv.url}, bucket {srv.bucket}, data {srv.data_dir}; Ctrl-C "
                  "stops it", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                srv.proc.wait()
        return 0
    from redact import SecretError, check_url_has_no_credentials, influx_token
    try:
        check_url_has_no_credentials(args.influx_url)
        token = influx_token(args.token_file, args.token, option="--token",
                             file_option="--token-file")
    except SecretError as e:
        print(f"{args.cmd}: {e}", file=sys.stderr)
        return 2
    with _influx_settings(args, token) as settings:
        if args.cmd in ("export", "replay"):
            from reports.influx import InfluxExporter
            from reports.results import load_results
            # the local server's port changes every start: its spool is keyed by name
            with InfluxExporter(spool_dir=SPOOL_DIR, **settings, destination="local"
                                if args.influx_url == "local" else None) as exp:
                records = load_results(Path(args.run_dir)) if args.cmd == "export" else []
                res = exp.export(records) if records else exp.replay_spool()
            print(f"sent {res.sent}, replayed {res.replayed}, spooled {res.spooled}, rejected "
                  f"{res.rejected}" + (f"; error: {res.error}" if res.error else ""))
            return 0 if not (res.spooled or res.rejected) else 3
        from reports.trend import run_trend
        report = run_trend(Path(args.run_dir).resolve(), last_n=args.last_n, k=args.k,
                           detector=args.detector, normalise=args.normalise, **settings)
        print(report.summary())
        return report.exit_code


if __name__ == "__main__":
    sys.exit(main())
