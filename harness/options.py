"""The ``ofbench`` option group. Every knob that changes what is measured is an option here or
a key of the lab profile, and is recorded in each record's provenance."""
from __future__ import annotations

import pytest

from paths import REPORTS
from harness.redact import SecretError, check_url_has_no_credentials, influx_token

# The InfluxDB token as resolved at configure time (file, environment, or "-"); never an
# option value, so it is in no argv, no record and no report.
INFLUX_TOKEN = pytest.StashKey[str]()


def pytest_addoption(parser):
    g = parser.getgroup("ofbench", "ofbench lab options")
    g.addoption("--dut", default="local", metavar="PROFILE",
                help="lab profile: a name in dut/profiles/ or a path to a YAML file "
                     "(default: local)")
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
    g.addoption("--nightly", action="store_true", default=False,
                help="run the long matrices (tests marked nightly) and the trend check; exit "
                     "!= 0 on a regression (default: off)")


def pytest_configure(config):
    """Secrets only from the environment or a file: a token or URL credentials in argv stop
    the run at once with the reason (harness/redact.py)."""
    try:
        check_url_has_no_credentials(config.getoption("--influx-url"))
        config.stash[INFLUX_TOKEN] = influx_token(config.getoption("--influx-token-file"),
                                                  config.getoption("--influx-token"))
    except SecretError as e:
        raise pytest.UsageError(str(e)) from None
