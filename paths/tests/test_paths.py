"""paths: the repo root is this checkout's, the environment overrides are read at each call."""
from pathlib import Path

import paths


def test_repo_is_this_checkout():
    assert (paths.REPO / "pyproject.toml").is_file() and paths.SUITES == paths.REPO / "suites"
    assert Path(__file__).resolve().is_relative_to(paths.REPO)


def test_environment_overrides_each_call(monkeypatch, tmp_path):
    for var in ("OFBENCH_BUILD_DIR", "OFBENCH_SAN_BUILD_DIR", "OFBENCH_STATE_ROOT"):
        monkeypatch.delenv(var, raising=False)
    assert paths.build_dir() == paths.REPO / "build"
    assert paths.build_dir(tmp_path) == tmp_path / "build"
    assert paths.san_build_dir() == paths.REPO / "build-san"
    assert paths.state_root() == Path("/run/ofbench")
    monkeypatch.setenv("OFBENCH_BUILD_DIR", str(tmp_path / "b"))
    monkeypatch.setenv("OFBENCH_SAN_BUILD_DIR", str(tmp_path / "s"))
    monkeypatch.setenv("OFBENCH_STATE_ROOT", str(tmp_path / "r"))
    assert paths.build_dir() == paths.build_dir(Path("/elsewhere")) == tmp_path / "b"
    assert (paths.san_build_dir(), paths.state_root()) == (tmp_path / "s", tmp_path / "r")
    monkeypatch.setenv("OFBENCH_BUILD_DIR", "")   # empty = unset, as a shell's VAR= says
    assert paths.build_dir() == paths.REPO / "build"
