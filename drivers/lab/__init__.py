"""The lab: the hosts a profile names and what runs on them.

One protocol, two implementations:

* :class:`drivers.lab.local.LocalLab` (``lab.kind: local``): every role is this box; kernel
  hosts are network namespaces the run creates; processes run under one Supervisor.
* :class:`drivers.lab.remote.RemoteLab` (``lab.kind: remote``): each role in ``lab.hosts`` is a
  host reached over SSH (paramiko, key-based); processes are started there detached, recorded
  in the host's run state folder, stopped in every exit path, and their logs copied into the
  test's result folder. ``lab.emulated: true`` makes the harness first build that lab on this
  box (:mod:`drivers.lab.emulated`: one namespace with its own sshd per host).

What every lab offers (the :class:`Lab` protocol) and every host (:class:`Host`)::

    lab.host(role)            -> Host    role: switch | controller | generator | ...
    lab.test_logs(folder)     context manager: processes started inside log into folder
    lab.close()               stop everything on every host, remove the run's state; idempotent

    host.run(argv)            run a command to completion (CompletedProcess; LabError if check)
    host.start(name, argv, ready=..., env=..., cwd=...)   a supervised process, ready or raise
    host.stop(proc)           its stop signal, then SIGKILL; its log copied home
    host.put(local, remote) / host.get(remote, local)     file transfer
    host.eal_args(name, ...)  DPDK EAL args with a run-unique file prefix, the host's memory
    host.state_dir            the run's state folder on that host (sockets, pid records)
    host.workdir              the ofbench tree on that host (builds there, for that host)
"""
from __future__ import annotations

from pathlib import Path

from drivers.lab.base import (Host, Lab, LabError, hugepages_usable, is_remote,  # noqa: F401
                              parse_cores)  # public names: drivers use these, not local/remote's


def open_lab(profile, run_id: str, run_dir: Path, progress=None):
    """The lab ``profile`` describes, ready to use (remote hosts reached, checked, cleaned of
    stale runs, the tree deployed and built on them); ``progress(message)`` hears each step."""
    if profile.lab_kind == "local":
        from drivers.lab.local import LocalLab
        return LocalLab(profile, run_id, run_dir)
    from drivers.lab.remote import RemoteLab
    return RemoteLab(profile, run_id, run_dir, progress=progress)
