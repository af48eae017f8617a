"""Services a suite run starts for itself on this box, under the supervisor: the local InfluxDB
server of ``--influx-url=local``.

The server gets a state folder of its own, ``<state root>/<run-id>.influxd/`` (owner.json,
then pids.jsonl), which drivers.lab.cleanup treats like a run's: when the run dies by SIGKILL,
the next run's cleanup or ``make clean-stale`` stops the server and removes the folder. The
folder is the service's, not the lab's, so closing the lab (which removes
``<state root>/<run-id>/``) never loses the record while the server still runs for the trend.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from drivers.lab import cleanup
from drivers.supervisor import Supervisor, proc_start_time
from reports.influxd import DEFAULT_DATA_DIR, LocalInfluxd, token_auth


def start_local_influxd(run_id: str, log_path: Path, token: str | None = "-", *,
                        data_dir: Path = DEFAULT_DATA_DIR, state_root: Path | None = None,
                        flux_enabled: bool = True) -> LocalInfluxd:
    """Start the local influxd supervised (auth on when `token` is 'user:pass'); returns it
    started, with ``state_dir`` set. Stop it with stop_local_influxd. Raises InfluxdError."""
    auth = token_auth(token)
    state_dir = Path(state_root or cleanup.STATE_ROOT) / f"{run_id}.influxd"
    state_dir.mkdir(parents=True, exist_ok=True)
    try:
        cleanup.write_owner(state_dir, {"pid": os.getpid(),
                                        "start_time": proc_start_time(os.getpid()),
                                        "run_id": run_id, "service": "influxd"})
        srv = LocalInfluxd(data_dir=data_dir, log_path=log_path, flux_enabled=flux_enabled,
                           supervisor=Supervisor(state_dir, Path(log_path).parent), auth=auth)
        srv.state_dir = state_dir
        srv.start()
    except BaseException:
        shutil.rmtree(state_dir, ignore_errors=True)
        raise
    return srv


def stop_local_influxd(srv: LocalInfluxd) -> None:
    """Stop it (idempotent) and remove its state folder."""
    srv.stop()
    state_dir = getattr(srv, "state_dir", None)
    if state_dir is not None:
        shutil.rmtree(state_dir, ignore_errors=True)
