"""The run's lease on its lab place (drivers/lab/lease.py): taken at configure, before any host
is touched; re-checked before each measurement (the ``results`` fixture and every record);
released at unconfigure (every exit path; atexit too).

``--dut=<profile>`` whose ``lab.coordinator`` is set leases the profile's place;
``--dut=pool:<tag filter>`` leases any free place of the pool on ``--lab-coordinator`` (or
``LG_COORDINATOR``) and runs on the profile the place's ``profile`` tag names.
"""
from __future__ import annotations

import atexit
import os
from pathlib import Path

import pytest

POOL_PREFIX = "pool:"


def is_pool(dut: str) -> bool:
    return dut.startswith(POOL_PREFIX)


def _options(config) -> dict:
    return {"prio": float(config.getoption("--lab-priority")),
            "wait_s": float(config.getoption("--lab-wait"))}


def lease_pool(config, state, dut: str, progress=None):
    """Reserve any free place of the pool; returns the place's profile (UsageError else)."""
    from dut.profiles.schema import ProfileError, load_profile
    from drivers.lab.lease import LeaseError, acquire, parse_filter
    addr = config.getoption("--lab-coordinator") or os.environ.get("LG_COORDINATOR")
    if not addr:
        raise pytest.UsageError(f"--dut={dut}: a pool lives on a coordinator: give "
                                f"--lab-coordinator HOST:PORT (or set LG_COORDINATOR)")
    if addr == "local":
        raise pytest.UsageError(f"--dut={dut}: a pool's places are on a shared coordinator, "
                                f"not one this run starts (--lab-coordinator local)")
    try:
        flt = parse_filter(dut[len(POOL_PREFIX):])
        lease = acquire(addr, state.run_dir.name, pool=flt, where=f"--dut={dut}",
                        log=state.run_dir / "lease-agent.log", progress=progress,
                        **_options(config))
    except LeaseError as e:
        raise pytest.UsageError(f"lab lease: {e}") from None
    _hold(config, state, lease)
    name = lease.tags.get("profile")
    try:
        if not name:
            raise LeaseError(f"place {lease.place!r} has no 'profile' tag: register it with "
                             f"python -m drivers.lab.lease register <profile>")
        try:
            profile = load_profile(name)
        except ProfileError as e:
            raise LeaseError(f"place {lease.place!r}: its tag profile={name}: {e}") from None
    except LeaseError as e:
        release(state)
        raise pytest.UsageError(f"lab lease: {e}") from None
    return profile


def lease_profile(config, state, progress=None) -> None:
    """The profile's own place, if its lab names a coordinator (else: today's behaviour)."""
    prof = state.profile
    lab = prof.data["lab"]
    addr = config.getoption("--lab-coordinator") or lab.get("coordinator")
    if not addr:
        return
    from drivers.lab.lease import LeaseError, acquire
    from dut.profiles.schema import PROFILE_DIR
    place = lab.get("place") or prof.name
    file = prof.path.name if prof.path.parent == PROFILE_DIR else str(prof.path)
    try:
        if addr == "local":
            addr = _local_coordinator(state, prof, progress)
        lease = acquire(addr, state.run_dir.name, place=place,
                        where=f"{file}: lab.coordinator ({addr}), lab.place {place!r}",
                        log=state.run_dir / "lease-agent.log", progress=progress,
                        **_options(config))
    except LeaseError as e:
        release(state)
        raise pytest.UsageError(f"lab lease: {e}") from None
    _hold(config, state, lease)


def _local_coordinator(state, prof, progress) -> str:
    """--lab-coordinator=local: labgrid-coordinator on 127.0.0.1 for this run alone (under the
    Supervisor, in the run's state folder, so a SIGKILLed run's is killed by the next
    cleanup), with the profile's place registered: the whole lease path, for `make test`."""
    from drivers.lab.lease import LocalCoordinator, register, write_owner
    from drivers.lab.cleanup import STATE_ROOT
    state_dir = Path(STATE_ROOT) / state.run_dir.name
    write_owner(state_dir, state.run_dir.name)
    state.coordinator = LocalCoordinator(state_dir, state.run_dir / "logs")
    out = register(prof, state.coordinator.address)
    if progress:
        progress(f"started labgrid-coordinator on {state.coordinator.address} for this run; "
                 f"place {out['place']} registered")
    return state.coordinator.address


def _hold(config, state, lease) -> None:
    state.lease = lease
    atexit.register(lease.release)


def check(state) -> None:
    """Before a measurement: stop the run (exit 4) naming the holder if the place was lost,
    or the testbed lock on the lab's switch host (drivers/lab/testbed_lock.py) is not ours."""
    from drivers.lab.base import LabError
    lease = getattr(state, "lease", None)
    lock = getattr(state.lab, "testbed_lock", None)
    try:
        if lease is not None:
            lease.check()
        if lock is not None:
            lock.check()
    except LabError as e:
        pytest.exit(f"lab lease lost: {e}", returncode=4)


def testbed(state, progress=None) -> dict:
    """The lab's fingerprint (drivers/lab/fingerprint.py) at open; on a leased place, a change
    of testbed id since the place's last run is said and kept in the fingerprint."""
    from drivers.lab.fingerprint import fingerprint_lab
    fp = fingerprint_lab(state.lab, state.profile)
    lease = getattr(state, "lease", None)
    if lease is not None:
        was = lease.note_testbed(fp["testbed_id"])
        if was:
            fp["changed_from"] = was
            msg = (f"testbed of place {lease.place} changed: id {was} -> {fp['testbed_id']} "
                   f"(hardware, firmware, kernel, DPDK or TRex): its figures start a new "
                   f"series, compare them with care")
            if progress:
                progress(msg)
    return fp


def release(state) -> None:
    lease = getattr(state, "lease", None)
    if lease is not None:
        lease.release()
    coordinator = getattr(state, "coordinator", None)
    if coordinator is not None:
        coordinator.stop()
        state.coordinator = None


def provenance(state) -> dict:
    from drivers.lab.fingerprint import provenance as testbed_provenance
    out = testbed_provenance(getattr(state, "fingerprint", None))
    lease = getattr(state, "lease", None)
    if lease is not None:
        out.update({"place": lease.place, "lease_holder": lease.holder})
        if lease.pool:
            out["pool"] = lease.pool
    return out
