"""The Lab protocol and its error (see drivers/lab/__init__.py for what each offers), and what
every lab kind and driver share without reaching into one lab's module (issue 43): the
profile's core lists (``parse_cores``) and whether this box's hugepages can be used
(``hugepages_usable``, ``HUGE_DIR``); both lived in remote.py and local.py before."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Protocol

# The hugetlbfs mount DPDK processes of this box use (make setup mounts it).
HUGE_DIR = Path(os.environ.get("OFBENCH_HUGE_DIR", "/dev/hugepages-ofbench"))
_FREE_2M = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages")


def parse_cores(spec: str) -> list[int]:
    """A profile's core list: '2-5,8' -> [2, 3, 4, 5, 8] (pure)."""
    out: list[int] = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out += range(int(lo), int(hi) + 1)
        else:
            out.append(int(part))
    return out


def free_hugepage_mb() -> int:
    """This box's free 2 MB hugepages, in MB (0 when unreadable)."""
    try:
        return 2 * int(_FREE_2M.read_text())
    except (OSError, ValueError):
        return 0


def hugepages_usable() -> bool:
    """This box has free hugepages and the hugetlbfs mount at HUGE_DIR."""
    return free_hugepage_mb() > 0 and os.path.ismount(HUGE_DIR)


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
