"""The Lab protocol and its error (see drivers/lab/__init__.py for what each offers)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol


def is_remote(lab) -> bool:
    """True for a lab whose hosts are reached over SSH (lab.kind: remote), False for this box."""
    return getattr(lab, "kind", "local") != "local"


class LabError(RuntimeError):
    """A lab step failed or a lab cannot be used; the message names the command or the
    profile file and key."""


# Names that become process names, log and socket file names and DPDK file prefixes on a host
# (and reach its shell, quoted): a safe alphabet, no leading '-', no '/'.
SAFE_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}")


def check_name(name: str, what: str = "name") -> str:
    """``name`` if it is from the safe alphabet, else ValueError saying what it is for."""
    if not isinstance(name, str) or not SAFE_NAME_RE.fullmatch(name):
        raise ValueError(f"bad {what} {name!r}: use 1-64 of A-Z a-z 0-9 _ . + - (not starting "
                         f"with '-' or '.')")
    return name


class Host(Protocol):
    role: str
    address: str
    workdir: Path
    state_dir: Path

    def run(self, argv: list[str], *, check: bool = True, timeout: float = 30.0,
            input: str | None = None): ...

    def start(self, name: str, argv: list[str], **kw): ...

    def stop(self, proc, timeout_s: float = 5.0): ...

    def put(self, local: Path, remote: Path) -> None: ...

    def get(self, remote: Path, local: Path) -> None: ...

    def eal_args(self, name: str, **kw) -> list[str]: ...

    def listen_here(self):
        """A port on the host's 127.0.0.1 whose TCP connections this side accepts
        (``.port``, ``.accept(timeout_s)``, ``.close()``)."""


class Lab(Protocol):
    kind: str
    profile: object
    run_id: str
    run_dir: Path
    warnings: list[str]

    def host(self, role: str) -> Host: ...

    def test_logs(self, folder: Path): ...

    def close(self) -> None: ...
