"""Where things are: the repo root, its top folders, the meson builds, the tools and the run
state. The one module that says so (issue 43): every other module imports these names instead
of recomputing ``Path(__file__).parents[...]`` or reading the environment its own way.

It imports nothing of ofbench, so it sits at the bottom of the layers (beside configschema and
openflow) and every layer may use it: dut (the switch launcher, the classifier binding),
drivers (the labs, the generators), suites, reports and harness.

Environment (read at each call, so a test or a helper's worktree can point elsewhere):

    OFBENCH_BUILD_DIR      the meson build folder every C part is looked up in (default
                           <repo>/build): a sanitizer build, a helper's worktree using main's
                           build; recorded in provenance
    OFBENCH_SAN_BUILD_DIR  the ASan/UBSan build (default <repo>/build-san, scripts/build_san.sh)
    OFBENCH_STATE_ROOT     where runs keep their state (default /run/ofbench)
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITES = REPO / "suites"
REPORTS = REPO / "reports"
TOOLS = REPO / "tools"   # what setup builds or fetches outside git (tools/bin, trex, guest, ...)


def build_dir(repo: Path | None = None) -> Path:
    """The meson build folder: env OFBENCH_BUILD_DIR, default <repo>/build (``repo``: another
    checkout's root, for its provenance)."""
    return Path(os.environ.get("OFBENCH_BUILD_DIR") or Path(repo or REPO) / "build")


def san_build_dir() -> Path:
    """The ASan/UBSan build folder: env OFBENCH_SAN_BUILD_DIR, default <repo>/build-san."""
    return Path(os.environ.get("OFBENCH_SAN_BUILD_DIR") or REPO / "build-san")


SYSTEM_STATE = Path("/run/ofbench")  # the system's state root: fixed, never from the environment


def state_root() -> Path:
    """Where this process keeps its runs' state (<root>/<run-id>/): env OFBENCH_STATE_ROOT,
    default SYSTEM_STATE (which every cleanup also consults, whatever root it was given)."""
    return Path(os.environ.get("OFBENCH_STATE_ROOT") or SYSTEM_STATE)
