"""The one way ofbench starts os-ken apps: ``python -m dut.controller.launcher``.

Why a launcher of our own: os-ken 4.x has no ``osken-manager`` command, and the hub (native
threads vs eventlet green threads) is chosen from ``OSKEN_HUB_TYPE`` *when os_ken is first
imported*. Keeping that choice in one place means every app, the suites and the conformance
tester agree on it.

Hub choice (deliberate):
  * ``native`` (os-ken 4.x default) for our apps: real OS threads, so worker pools around a
    GIL-releasing matcher run in parallel (dut/controller's prioritised app needs that).
  * ``eventlet`` for os-ken's switch test tool, which hangs on the native hub.

Usage::

    python -m dut.controller.launcher --app dut.controller.l2_learning \
        --ofp-listen-host 127.0.0.1 --ofp-port 6653 [--config app.yaml] [--hub native] \
        [--ready-file PATH] [-- <extra os-ken options, e.g. --test-switch-target ...>]

The app's YAML config path is handed over in ``OFBENCH_APP_CONFIG``; apps read it with
:func:`app_config_path`. ``--ready-file`` is written once the OpenFlow listener is bound, so the
supervisor can wait for readiness without polling the port.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sys
import threading
import time

HUBS = ("native", "eventlet")
CONFIG_ENV = "OFBENCH_APP_CONFIG"


def app_config_path() -> str | None:
    """Path of the YAML config given to the launcher with --config (None if none)."""
    return os.environ.get(CONFIG_ENV) or None


def app_config_yaml() -> dict:
    """The launcher's --config YAML as a dict ({} when no config was given)."""
    import yaml
    path = app_config_path()
    if not path:
        return {}
    with open(path) as f:
        return yaml.safe_load(f)


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(prog="python -m dut.controller.launcher",
                                description="Start os-ken apps for ofbench.")
    p.add_argument("--app", action="append", required=True,
                   help="app module (dotted name or .py path); repeatable")
    p.add_argument("--ofp-listen-host", default="127.0.0.1",
                   help="OpenFlow listen address (default 127.0.0.1)")
    p.add_argument("--ofp-port", type=int, default=6653, help="OpenFlow TCP port (default 6653)")
    p.add_argument("--config", default=None, help="YAML config for the app(s)")
    p.add_argument("--hub", choices=HUBS, default="native",
                   help="os-ken hub: native threads or eventlet (default native)")
    p.add_argument("--ready-file", default=None,
                   help="written when the OpenFlow listener accepts connections")
    p.add_argument("--log-level", default="INFO")
    args = p.parse_args(argv)
    if args.config and not os.path.isfile(args.config):
        p.error(f"--config: no such file: {args.config}")
    for app in args.app:
        if app.endswith(".py"):
            if not os.path.isfile(app):
                p.error(f"--app: no such file: {app}")
        elif importlib.util.find_spec(app) is None:
            p.error(f"--app: no such module: {app}")
    return args, extra


def _announce_ready(host: str, port: int, path: str, timeout_s: float = 30.0) -> None:
    """Write ``path`` once something accepts TCP connections on host:port."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                pass
        except OSError:
            time.sleep(0.05)
            continue
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, path)
        return


def main(argv: list[str] | None = None) -> int:
    args, extra = parse_args(sys.argv[1:] if argv is None else argv)
    # Must happen before the first `import os_ken`: the hub is chosen at import time.
    os.environ["OSKEN_HUB_TYPE"] = args.hub
    if args.config:
        os.environ[CONFIG_ENV] = os.path.abspath(args.config)

    import logging

    logging.basicConfig(level=getattr(logging, args.log_level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stdout)

    from os_ken import cfg
    from os_ken.base.app_manager import AppManager
    from os_ken.lib import hub

    if args.hub == "eventlet":
        hub.patch(thread=True)

    cfg.CONF(args=["--ofp-listen-host", args.ofp_listen_host,
                   "--ofp-tcp-listen-port", str(args.ofp_port), *extra],
             project="os_ken", version="ofbench")
    apps = list(args.app) + ["os_ken.controller.ofp_handler"]
    if args.ready_file:
        # A plain thread is fine on both hubs: on eventlet it is green and yields in sleep().
        threading.Thread(target=_announce_ready,
                         args=(args.ofp_listen_host, args.ofp_port, args.ready_file),
                         daemon=True).start()
    sys.stdout.flush()
    try:
        AppManager.run_apps(apps)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
