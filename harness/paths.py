"""Where things are: the repo root, its suites and the meson build folder.

``OFBENCH_BUILD_DIR`` points the build elsewhere (a sanitizer build, a helper's worktree); it
is an alias of the build folder every C part is looked up in, recorded in provenance.
"""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUITES = REPO / "suites"
REPORTS = REPO / "reports"
TOOLS = REPO / "tools"


def build_dir() -> Path:
    """The meson build folder: env OFBENCH_BUILD_DIR, default <repo>/build."""
    return Path(os.environ.get("OFBENCH_BUILD_DIR") or REPO / "build")
