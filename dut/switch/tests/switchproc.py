"""The switch as a process of a test: started with its output in a log file, stopped on every
exit path (SIGTERM, then SIGKILL after 10 s), its DPDK runtime folder removed. A helper of the
switch's tests (not a test module)."""
from __future__ import annotations

import contextlib
import shutil
import subprocess
from pathlib import Path


@contextlib.contextmanager
def switch_process(argv: list[str], log_path: Path, file_prefix: str | None = None):
    """Run ``argv`` (launcher.switch_argv) with stdout and stderr into ``log_path``; yields the
    Popen. ``file_prefix``: the EAL --file-prefix whose /var/run/dpdk folder goes at the end."""
    log = open(log_path, "wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        if file_prefix:
            shutil.rmtree(f"/var/run/dpdk/{file_prefix}", ignore_errors=True)
