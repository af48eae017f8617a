"""The ``ofbench`` option group. Every knob that changes what is measured is an option here or
a key of the lab profile, and is recorded in each record's provenance."""
from __future__ import annotations

from paths import REPORTS


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
    g.addoption("--influx-token", default="-", help="InfluxDB token (1.8: 'user:pass' or '-'; "
                "default '-')")
    g.addoption("--influx-org", default="-", help="InfluxDB org (1.8: '-'; default '-')")
    g.addoption("--influx-bucket", default="ofbench/autogen",
                help="InfluxDB bucket (1.8: '<db>/<rp>'; default ofbench/autogen)")
    g.addoption("--nightly", action="store_true", default=False,
                help="run the long matrices (tests marked nightly) and the trend check; exit "
                     "!= 0 on a regression (default: off)")
