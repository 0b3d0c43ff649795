"""Where the commands write (issue 42 §3, §10, §12): one build root for everything, by
default the repository's whatever folder a command runs from; every output tried for real
before any work (a path permissions allow but that takes no file, an unusable database, a
build folder that cannot be written); a result whose write fails after all rescued and
named; a stored point that cannot be read run again instead of stopping every later
sweep; and two sweeps into one folder refused with the other's process named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from macdma.sim import cli
from macdma.sim.cosim import outputs
from macdma.sim.cosim.verilog import ROOT, build_dir
from macdma.sim.regress import Point, default_out, plan
from macdma.sim.regress.command import output_lock
from macdma.sim.regress.results_db import default_compare_out, default_db
from macdma.sim.run import scenario
from macdma.sim.run.scenario import Scenario

#: A path every permission check lets through (the test runs as any user, root
#: included) but where no file can be created: /proc takes none.
NO_FILE_HERE = "/proc/macdma-test.json"


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if a command reaches the simulation or runs a sweep's points."""

    def simulate(*args, **kwargs):
        raise AssertionError("the work started")

    monkeypatch.setattr(scenario, "run_scenario", simulate)
    monkeypatch.setattr(cli, "run_cocotb", simulate)
    monkeypatch.setattr("macdma.sim.soak.command.run_soak", simulate)
    monkeypatch.setattr("macdma.sim.regress.command.run_points", simulate)
    monkeypatch.setattr("macdma.sim.regress.command.build_models", simulate)


def test_every_default_output_is_under_the_build_root_whatever_the_working_folder(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("MACDMA_BUILD_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # a user running macdma from another folder
    root = ROOT / "build"
    assert build_dir() == root
    regress = cli.build_parser().parse_args(["regress"])
    compare = cli.build_parser().parse_args(["compare", "a", "b"])
    assert regress.db == compare.db == default_db() == root / "regress" / "results.sqlite"
    assert compare.out == default_compare_out() == root / "regress" / "compare"
    assert default_out("quick") == root / "regress" / "quick"
    assert cli.run_log_path().parent == root / "logs"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--json", NO_FILE_HERE],
        ["demo", "--json", NO_FILE_HERE],
        ["soak", "--json", NO_FILE_HERE],
        ["regress", "--quick", "--out", "/proc/macdma-test/out"],
        ["regress", "--quick", "--db", "/proc/macdma-test/results.sqlite"],
        ["compare", "a", "b", "--out", "/proc/macdma-test/compare"],
    ],
)
def test_an_output_permissions_allow_but_that_takes_no_file_stops_before_any_work(
    argv, capsys, no_simulation
):
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{argv[-2]} {argv[-1]}: cannot write the results there" in err, err
    assert "Traceback" not in err


def test_a_build_folder_that_cannot_be_written_stops_run_with_a_message(
    monkeypatch, capsys, no_simulation
):
    monkeypatch.setenv("MACDMA_BUILD_DIR", "/proc/macdma-test/build")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["run", "--frames", "2"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "macdma run: error: cannot write under the build folder /proc/macdma-test/build" in err
    assert "MACDMA_BUILD_DIR" in err and "Traceback" not in err


def test_a_database_that_is_not_sqlite_stops_regress_before_the_sweep(
    tmp_path, capsys, no_simulation
):
    db = tmp_path / "results.sqlite"
    db.write_bytes(b"not a database, just bytes" * 100)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["regress", "--quick", "--db", str(db), "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2
    assert "not a usable SQLite database" in capsys.readouterr().err


def test_a_result_whose_write_fails_after_the_check_is_rescued_and_named(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("MACDMA_BUILD_DIR", str(tmp_path / "build"))
    gone = tmp_path / "gone"  # checked, then removed while the simulation ran
    written = outputs.write_or_rescue(gone / "metrics.json", '{"rx": 1}', "the metrics")
    assert written.parent == tmp_path / "build" / outputs.RESCUE_FOLDER
    assert json.loads(written.read_text()) == {"rx": 1}
    err = capsys.readouterr().err
    assert f"cannot write the metrics to {gone / 'metrics.json'}" in err
    assert f"written to {written} instead" in err


def test_a_stored_point_that_cannot_be_summarised_runs_again(tmp_path):
    point = Point("k1", Scenario(frames=8))
    stored = tmp_path / "points" / "k1.json"  # as a run cut short or a hand edit leaves it
    stored.parent.mkdir()
    stored.write_text(json.dumps({"key": "k1", "status": "ok", "metrics": {}}))
    seen = []
    todo, done = plan([point], tmp_path, on_unusable=lambda path, why: seen.append((path, why)))
    assert todo == [point] and done == {}
    assert seen and seen[0][0] == tmp_path / "points" / "k1.json" and "KeyError" in seen[0][1]


def test_a_second_regress_into_the_same_folder_is_refused_naming_the_first(
    tmp_path, capsys, no_simulation
):
    out = tmp_path / "out"
    db = tmp_path / "results.sqlite"
    with output_lock(out):
        with pytest.raises(SystemExit) as stopped:
            cli.main(["regress", "--quick", "--out", str(out), "--db", str(db)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"another macdma regress (pid {__import__('os').getpid()}" in err
    assert f"is writing to {out}: wait for it to finish, or give another --out" in err


def test_a_check_leaves_no_folder_behind(tmp_path):
    assert outputs.unwritable_reason(tmp_path / "a" / "b", folder=True) is None
    assert not (tmp_path / "a").exists()
    assert outputs.unwritable_reason(tmp_path / "x.json", folder=False) is None
    assert not (tmp_path / "x.json").exists()
    existing = tmp_path / "keep.json"
    existing.write_text("kept")
    assert outputs.unwritable_reason(existing, folder=False) is None
    assert existing.read_text() == "kept"
    assert Path(tmp_path).exists()
