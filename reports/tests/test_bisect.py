"""reports bisect: the search over commits with a scripted measurer; bad ranges refused."""
import json
import subprocess

import pytest

from reports.__main__ import main
from reports.bisect import BisectError, BisectPaused, CommitMeasurer, first_bad, parse_metric


def planted(shas, slow_from, base=10.0, slowdown=0.2):
    """A metric (higher is better) that drops by `slowdown` from commit index slow_from on;
    each measurement 3 repetitions with a little noise."""
    calls = []

    def measure(sha):
        calls.append(sha)
        i = shas.index(sha)
        level = base * (1 - slowdown) if i >= slow_from else base
        return [level * f for f in (1.0, 1.004, 0.996)]
    return measure, calls


@pytest.mark.parametrize("slow_from", range(1, 9))
def test_finds_the_planted_slowdown_among_8_commits(slow_from):
    shas = [f"{i:02d}" + "c" * 38 for i in range(9)]   # good + 8 commits, the last bad
    measure, calls = planted(shas, slow_from)
    res = first_bad(shas, measure, +1)
    assert res.first_bad == shas[slow_from]
    assert len(calls) <= 2 + 3                           # good, bad, log2(8) probes
    assert "first bad commit" in res.summary("s/n/m")


def test_good_not_better_than_bad_is_refused():
    shas = [f"{i:02d}" + "c" * 38 for i in range(4)]
    measure, _ = planted(shas, slow_from=99)
    with pytest.raises(BisectError, match=r"^--good/--bad: good 00c+ is not better than bad"):
        first_bad(shas, measure, +1)
    with pytest.raises(BisectError, match="^--metric: the metric has no better direction"):
        first_bad(shas, measure, 0)


def test_bad_options_name_themselves(tmp_path, capsys):
    with pytest.raises(BisectError, match="^--metric: expected SUITE/NAME/METRIC"):
        parse_metric("switch/ofbench_mpps")
    assert main(["bisect", "--metric", "a/b", "--good", "HEAD", "--bad", "HEAD"]) == 2
    assert "--metric" in capsys.readouterr().err
    assert main(["bisect", "--metric", "a/b/c_mpps", "--good", "nosuchcommit", "--bad", "HEAD",
                 "--trials", "2"]) == 2
    assert "--good: 'nosuchcommit' is not a commit" in capsys.readouterr().err
    assert main(["bisect", "--metric", "a/b/c_mpps", "--good", "HEAD", "--bad", "HEAD~1",
                 "--trials", "2"]) == 2
    assert "does not descend" in capsys.readouterr().err


def test_a_commit_that_does_not_build_is_named_and_its_worktree_removed(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "meson.build").write_text("this is not meson\n")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "broken"], check=True)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    m = CommitMeasurer("s", "n", "m_mpps", 2, "local", [], tmp_path / "work", repo=repo,
                       progress=lambda _l: None)
    try:
        with pytest.raises(BisectError, match=rf"commit {sha[:12]} does not build"):
            m(sha)
    finally:
        m.cleanup()
    assert not (tmp_path / "work" / "bisect-tree").exists()


def test_names_the_planted_commit_of_the_fixture_repository(tmp_path):
    """issue 40 goal, its logic without builds: the fixture's 8 commits on this checkout's
    HEAD, a scripted measurer that reads each commit's datapath.c (a planted delay per burst
    costs 40 % of the rate, with the box's noise), bisect names the planted commit."""
    from reports.tests.bisect_fixture import DATAPATH, make
    fx = make(tmp_path / "fx", planted=5)
    shas = [fx.good] + fx.shas
    calls = []

    def measure(sha):
        calls.append(sha)
        src = subprocess.run(["git", "-C", str(fx.path), "show", f"{sha}:{DATAPATH}"],
                             capture_output=True, text=True, check=True).stdout
        level = 6.0 if "rte_delay_us_block(20)" in src else 10.0
        return [level * f for f in (1.0, 0.97, 1.03)]
    res = first_bad(shas, measure, +1)
    assert res.first_bad == fx.planted == fx.shas[4]
    assert len(calls) == 5
    # the range is the fixture's: commit_range walks it
    from reports.bisect import commit_range
    assert commit_range(fx.good, fx.bad, fx.path) == shas


def test_bisect_repo_option_is_checked(tmp_path, capsys):
    assert main(["bisect", "--metric", "a/b/c_mpps", "--good", "HEAD", "--bad", "HEAD",
                 "--trials", "2", "--repo", str(tmp_path)]) == 2
    assert "--repo:" in capsys.readouterr().err


def test_builds_take_the_shared_lock_and_trials_the_exclusive_one(tmp_path):
    """--lock: each build under the lock's shared side (niced), each trial under its exclusive
    side; --pytest-opt options (a lab's coordinator) reach every trial before the node ids."""
    m = CommitMeasurer("switch", "n", "m_mpps", 2, "lab-emu", ["suites/switch/x.py"], tmp_path,
                       targets=["dut/switch/ofswitch"], lock="/tmp/l.lock",
                       pytest_opts=["--lab-coordinator=local"], progress=lambda _l: None)
    setup, ninja = m.build_argvs(tmp_path / "build")
    assert setup[:3] == ["flock", "-s", "/tmp/l.lock"] and setup[3:5] == ["meson", "setup"]
    assert ninja[:3] == ["flock", "-s", "/tmp/l.lock"] and "nice" in ninja
    assert ninja[-1] == "dut/switch/ofswitch"
    argv = m.trial_argv("py", tmp_path / "runs")
    assert argv[:2] == ["flock", "/tmp/l.lock"] and "--dut=lab-emu" in argv
    assert argv.index("--lab-coordinator=local") < argv.index("suites/switch/x.py")
    bare = CommitMeasurer("s", "n", "m_mpps", 2, "local", [], tmp_path, progress=lambda _l: None)
    assert bare.build_argvs(tmp_path)[0][0] == "meson" and bare.trial_argv("py", tmp_path)[0] == "py"
    assert bare.trial_argv("py", tmp_path)[-1] == "suites/s"


def _level_repo(tmp_path, levels):
    """A repository of len(levels) commits whose level.txt holds the metric's level; a meson
    project with nothing to build (so a build is real but instant)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "meson.build").write_text("project('t')\n")
    (repo / ".gitignore").write_text("/build\n")
    shas = []
    for i, level in enumerate(levels):
        (repo / "level.txt").write_text(f"{level}\n")
        (repo / "commit.txt").write_text(f"{i}\n")
        subprocess.run(git + ["add", "."], check=True)
        subprocess.run(git + ["commit", "-qm", f"c{i}"], check=True)
        shas.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"],
                                   capture_output=True, text=True).stdout.strip())
    return repo, shas


class LevelMeasurer(CommitMeasurer):
    """A trial is a small program that writes the record a suite would, from the checked-out
    tree's level.txt: the worktree, the checkout per commit, the build and the state file are
    bisect's own."""
    TRIAL = ("import json, pathlib, sys; r = pathlib.Path(sys.argv[1]) / 'run-x'; "
             "r.mkdir(parents=True); v = float(open('level.txt').read()); "
             "r.joinpath('results.jsonl').write_text(json.dumps({'suite': 's', 'name': 'n', "
             "'metrics': {'m_mpps': v}}) + chr(10))")

    def trial_argv(self, python, runs):
        return [python, "-c", self.TRIAL, str(runs)]


def test_one_worktree_one_build_and_a_resumable_state(tmp_path):
    """The commits share one worktree and one build folder (meson setup once); each commit's
    values are kept in the state file as measured; --stop-after pauses before a new commit, and
    a second call with the same settings goes on without measuring a commit twice."""
    repo, shas = _level_repo(tmp_path, [10, 10, 10, 10, 10, 6, 6, 6, 6])
    work, state = tmp_path / "work", tmp_path / "work" / "bisect-state.json"
    lines = []

    def measurer(**kw):
        return LevelMeasurer("s", "n", "m_mpps", 2, "local", [], work, repo=repo,
                             progress=lines.append, state=state, **kw)
    m = measurer(stop_after_s=0.0)
    m.t0 -= 1.0          # "0 s" already spent: nothing new is started
    with pytest.raises(BisectPaused):
        first_bad(shas, m, +1)
    m.cleanup()
    assert not state.exists()
    m = measurer()
    assert m(shas[0]) == [10.0, 10.0] and m(shas[-1]) == [6.0, 6.0]
    # a remote lab syncs the tree's .venv to its hosts: the worktree links this checkout's
    from reports.bisect import REPO
    if (REPO / ".venv").is_dir():
        assert (work / "bisect-tree" / ".venv").resolve() == (REPO / ".venv").resolve()
    assert "Meson build system" in (work / f"bisect-{shas[0][:12]}.log").read_text()
    assert "Meson build system" not in (work / f"bisect-{shas[-1][:12]}.log").read_text()
    m.cleanup()
    assert not (work / "bisect-tree").exists()
    saved = json.loads(state.read_text())
    assert saved["values"] == {shas[0]: [10.0, 10.0], shas[-1]: [6.0, 6.0]}
    lines.clear()
    m = measurer()
    res = first_bad(shas, m, +1)
    m.cleanup()
    assert res.first_bad == shas[5]
    assert sum("measured before" in x for x in lines) == 2
    assert sum("building" in x for x in lines) == 3          # log2(8) probes, nothing twice
    assert len(json.loads(state.read_text())["seconds"]) == 5   # each commit's time, every call
    other = LevelMeasurer("s", "n", "m_mpps", 3, "local", [], work, repo=repo,
                          progress=lines.append, state=state)
    assert other.measured == {}                              # other settings: afresh


def test_stop_after_needs_work(capsys, tmp_path, monkeypatch):
    """The option is refused before any scratch folder is made (it left an empty
    /tmp/ofbench-bisect-* behind at every run of this test)."""
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["bisect", "--metric", "a/b/c_mpps", "--good", "HEAD~1", "--bad", "HEAD",
                 "--trials", "2", "--stop-after", "60"]) == 2
    assert "--stop-after: needs --work" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_bisect_that_fails_inside_leaves_no_scratch_folder(capsys, tmp_path, monkeypatch):
    """Its own temp folder (no --work) is removed however the bisect ends: here a range whose
    commits do not build."""
    import subprocess
    import tempfile
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    for i in range(3):
        (repo / "meson.build").write_text(f"this is not meson {i}\n")
        subprocess.run(git + ["add", "-A"], check=True)
        subprocess.run(git + ["commit", "-qm", f"c{i}"], check=True)
    assert main(["bisect", "--metric", "a/b/c_mpps", "--good", "HEAD~2", "--bad", "HEAD",
                 "--trials", "2", "--repo", str(repo)]) == 2
    assert "does not build" in capsys.readouterr().err
    assert list(scratch.iterdir()) == []
