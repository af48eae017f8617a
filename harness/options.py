"""The ``ofbench`` option group. Every knob that changes what is measured is an option here or
a key of the lab profile, and is recorded in each record's provenance."""
from __future__ import annotations

import pytest

from paths import REPORTS
from redact import SecretError, check_url_has_no_credentials, influx_token

# The InfluxDB token as resolved at configure time (file, environment, or "-"); never an
# option value, so it is in no argv, no record and no report.
INFLUX_TOKEN = pytest.StashKey[str]()


def pytest_addoption(parser):
    g = parser.getgroup("ofbench", "ofbench lab options")
    g.addoption("--dut", default="local", metavar="PROFILE",
                help="lab profile: a name in dut/profiles/ or a path to a YAML file, or "
                     "pool:<key>=<value>,... for any free place of a pool on the lab "
                     "coordinator (default: local)")
    g.addoption("--reports-dir", default=str(REPORTS), metavar="DIR",
                help="where run folders are written (default: reports/)")
    g.addoption("--influx-url", default=None, metavar="URL",
                help="also export every record to InfluxDB at URL; 'local' starts the "
                     "repo's influxd on 127.0.0.1 (default: no export)")
    g.addoption("--influx-token-file", default=None, metavar="PATH",
                help="a file whose first line is the InfluxDB token (1.8: 'user:pass'); "
                     "default: the environment's OFBENCH_INFLUX_TOKEN, else none")
    g.addoption("--influx-token", default="-", metavar="-",
                help="refused with a value: a token in argv is visible to every user of the "
                     "box; use OFBENCH_INFLUX_TOKEN or --influx-token-file")
    g.addoption("--influx-org", default="-", help="InfluxDB org (1.8: '-'; default '-')")
    g.addoption("--influx-bucket", default="ofbench/autogen",
                help="InfluxDB bucket (1.8: '<db>/<rp>'; default ofbench/autogen)")
    g.addoption("--lab-wait", default=600.0, type=float, metavar="SECONDS",
                help="how long to wait in the lab coordinator's queue for the place (or a "
                     "pool's place) before giving up (default: 600)")
    g.addoption("--lab-priority", default=0.0, type=float, metavar="N",
                help="priority in the coordinator's queue: higher is served first, then the "
                     "oldest (e.g. nightly 10, per-change CI 0, engineers 5; default: 0)")
    g.addoption("--lab-coordinator", default=None, metavar="HOST:PORT",
                help="labgrid coordinator HOST:PORT: leases the profile's place there "
                     "(overrides lab.coordinator) or, with --dut=pool:<tags>, a pool's place "
                     "(default: lab.coordinator, env LG_COORDINATOR for a pool); 'local' = "
                     "a coordinator on 127.0.0.1 for this run alone (make test)")
    g.addoption("--nightly", action="store_true", default=False,
                help="run the long matrices (tests marked nightly) and the trend check; exit "
                     "!= 0 on a regression (default: off)")


def pytest_configure(config):
    """Secrets only from the environment or a file: a token or URL credentials in argv stop
    the run at once with the reason (redact/)."""
    try:
        check_url_has_no_credentials(config.getoption("--influx-url"))
        config.stash[INFLUX_TOKEN] = influx_token(config.getoption("--influx-token-file"),
                                                  config.getoption("--influx-token"))
    except SecretError as e:
        raise pytest.UsageError(str(e)) from None
