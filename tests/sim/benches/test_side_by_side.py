"""The before/after runner (sim/benches/side_by_side.py) without running a side: its
options and files refused by name, the default "before" found in the history, and the
README table's medians and gains from recorded measurements."""

import json
import subprocess
from pathlib import Path

import pytest

from macdma.sim.benches import side_by_side as sbs

REPO = Path(__file__).resolve().parents[3]


def refused(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        sbs.main(argv)
    return str(stopped.value.code) + capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rounds", "0"], "--rounds, --frames and --jobs must be at least 1"),
        (["--jobs", "0"], "--rounds, --frames and --jobs must be at least 1"),
        (["--worktrees", str(REPO / "build")], "--worktrees must be outside the repository"),
        (["--before", "no-such-revision"], "--before no-such-revision: no such commit"),
        (["--sweep", "huge"], "invalid choice: 'huge'"),
    ],
)
def test_a_bad_option_is_refused_by_name(argv, message, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sbs, "this_tree", lambda repo: sbs.Side("after", "0" * 40, repo))
    monkeypatch.setattr(sbs, "prepare_before", lambda *a: pytest.fail("ran a side"))
    assert message in refused(argv, capsys)


def test_a_missing_or_foreign_record_is_refused_by_name(tmp_path, capsys):
    assert "cannot read" in refused(["--table-from", str(tmp_path / "none.json")], capsys)
    (tmp_path / "bad.json").write_text("{not json")
    assert "cannot read" in refused(["--table-from", str(tmp_path / "bad.json")], capsys)
    (tmp_path / "other.json").write_text(json.dumps({"points": []}))
    assert "is not a side_by_side.json" in refused(
        ["--table-from", str(tmp_path / "other.json")], capsys
    )


def test_the_default_before_is_the_parent_of_the_commit_that_added_the_player():
    added = subprocess.run(
        ["git", "-C", str(REPO), "log", "--diff-filter=A", "--format=%H", "--",
         sbs.FRAME_WIRE_MARKER],
        capture_output=True, text=True, check=True,
    ).stdout.split()[-1]  # fmt: skip
    before = sbs.before_frame_wire(REPO)
    parents = subprocess.run(
        ["git", "-C", str(REPO), "rev-list", "--parents", "-n", "1", added],
        capture_output=True, text=True, check=True,
    ).stdout.split()[1:]  # fmt: skip
    assert before == parents[0]
    tree = subprocess.run(
        ["git", "-C", str(REPO), "ls-tree", "--name-only", before, sbs.FRAME_WIRE_MARKER],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert tree == "", "the before side already has the frame player"


def bench(side, round_, ns_per_cpu):
    rows = [{"workload": "full-duplex", "sim_ns": ns_per_cpu * 2.0, "cpu_seconds": 2.0}]
    return sbs.Measured(side, round_, "bench", 10.0, 2.0, 1.0, 2.0, rows=rows)


def test_the_table_gives_medians_of_the_later_rounds_and_their_gains(tmp_path, capsys):
    measured = [bench("before", 1, 1.0), bench("after", 1, 1.0)]  # round 1 builds: left out
    measured += [bench("before", r, v) for r, v in ((2, 100.0), (3, 120.0), (4, 110.0))]
    measured += [bench("after", r, v) for r, v in ((2, 330.0), (3, 300.0), (4, 360.0))]
    measured.append(sbs.Measured("before", 2, "sweep quick", 60.0, 30.0, 1.0, 3.0))
    measured.append(sbs.Measured("after", 2, "sweep quick", 40.0, 20.0, 1.0, 3.0))
    sides = {
        "before": sbs.Side("before", "a" * 40, tmp_path),
        "after": sbs.Side("after", "b" * 40, tmp_path, dirty=True),
    }
    text = sbs.table(measured, sides, first_round=2)
    assert "| what (Verilator) | before (aaaaaaa) | after (bbbbbbb + changes) | gain |" in text
    assert "| `full-duplex`, sim ns per CPU s | 110 | 330 | 3.00x |" in text
    assert "| sweep quick, wall s | 60.0 | 40.0 | 1.50x |" in text
    assert "Rounds 2..4 (medians)" in text
    record = tmp_path / "side_by_side.json"
    record.write_text(
        json.dumps(
            {
                "sides": {n: {**vars(s), "tree": str(s.tree)} for n, s in sides.items()},
                "measured": [vars(m) for m in measured],
            }
        )
    )
    assert sbs.main(["--table-from", str(record)]) == 0
    assert "| `full-duplex`, sim ns per CPU s | 110 | 330 | 3.00x |" in capsys.readouterr().out
