"""The results database and ``macdma compare`` on synthetic points (no simulator): planted
changes are found and identical runs give none, runs are looked up by commit, bad inputs
name themselves, concurrent writers leave a whole database; point keys follow CPU files."""

from __future__ import annotations

import json
import shutil
import sqlite3
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from synthetic import synthetic_metrics

from macdma.sim import regress
from macdma.sim.cli import main
from macdma.sim.model.cpus import CPU_DIR
from macdma.sim.regress import point_key, store, write_csv
from macdma.sim.regress.results_db import (
    ResultsDb,
    ResultsDbError,
    compare,
    load_folder,
    load_run,
    run_set_of,
)
from macdma.sim.run.scenario import Scenario

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40


def scenario(irq: str, **fields) -> Scenario:
    return Scenario(direction="tx", frames=8, cpu="microblaze-66", irq=irq, **fields)


def metrics(s: Scenario, mbps: float, dropped: int = 0) -> dict:
    """What run_point returns for a TX run at ``mbps``."""
    return synthetic_metrics(s, mbps, dropped=dropped)


RUN = {"per-desc": 116.0, "coalesce": 137.0, "napi": 136.0}


def write_run(folder: Path, rates: dict = RUN, dropped: dict = None) -> list[dict]:
    """A regress output folder with one point per IRQ strategy at the given rates."""
    results = []
    for irq, mbps in rates.items():
        s = scenario(irq)
        point = regress.Point(point_key(s, "src"), s, ["e"])
        result = {"status": "ok", "metrics": metrics(s, mbps, (dropped or {}).get(irq, 0))}
        results.append(store(folder, point, result, "src"))
    write_csv(folder / "results.csv", results)
    return results


def test_identical_runs_have_no_change_and_a_planted_one_is_found(tmp_path):
    write_run(tmp_path / "a")
    write_run(tmp_path / "b")
    same = compare(load_folder(tmp_path / "a"), load_folder(tmp_path / "b"), tolerance=0)
    assert same.compared == 3 and same.changes == []

    # Plant a 5% throughput change in one point's stored summary.
    planted = tmp_path / "c"
    shutil.copytree(tmp_path / "a", planted)
    key = point_key(scenario("coalesce"), "src")
    path = planted / "points" / f"{key}.json"
    stored = json.loads(path.read_text())
    stored["summary"]["throughput_mbps"] *= 1.05
    path.write_text(json.dumps(stored))
    found = compare(load_folder(tmp_path / "a"), load_folder(planted))
    assert [(c.metric, "irq=coalesce" in c.label) for c in found.changes] == [
        ("throughput_mbps", True)
    ]
    assert found.changes[0].relative == pytest.approx(0.05 / 1.05)
    # Within a 10% tolerance it is not reported.
    assert compare(load_folder(tmp_path / "a"), load_folder(planted), tolerance=0.1).changes == []


def test_drops_from_zero_status_and_missing_points_are_reported(tmp_path):
    before = run_set_of("before", write_run(tmp_path / "a"))
    after_results = write_run(tmp_path / "b", dropped={"coalesce": 1})
    after_results[0] = {**after_results[0], "status": "failed", "summary": {}}
    del after_results[2]  # napi not run after
    comparison = compare(before, run_set_of("after", after_results))
    moved = [c for c in comparison.changes if c.after != "missing"]
    changes = {(c.label.split("irq=")[1].split()[0], c.metric) for c in moved}
    assert ("per-desc", "status") in changes
    assert ("coalesce", "frames_dropped") in changes
    assert comparison.compared == 2 and len(comparison.only_before) == 1
    missing = [c for c in comparison.changes if c.after == "missing"]
    assert [(c.metric, c.before, c.label) for c in missing] == [
        ("status", "ok", comparison.only_before[0])
    ]
    assert not any(c.metric == "wall_seconds" for c in comparison.changes)


def record(db_path: Path, results: list[dict], commit: str, dirty: bool = False) -> int:
    with ResultsDb(db_path) as db:
        return db.record_run(
            sweep="t",
            out=db_path.parent,
            sources="src",
            ran_on="test",
            results=results,
            ran_keys={r["key"] for r in results},
            started_utc="2026-01-01T00:00:00+00:00",
            complete=True,
            git=(commit, dirty),
        )


def test_runs_are_found_by_commit_and_every_metric_is_stored(tmp_path):
    db_path = tmp_path / "results.sqlite"
    record(db_path, write_run(tmp_path / "a"), COMMIT_A)
    record(db_path, write_run(tmp_path / "b", {**RUN, "eop": 120.0, "coalesce": 150.0}), COMMIT_B)
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        rows = db.execute(
            "SELECT r.git_commit, p.sim, m.value FROM metrics m JOIN points p ON p.id = "
            "m.point_id JOIN runs r ON r.id = p.run_id WHERE m.name = 'throughput_mbps' "
            'AND p.scenario LIKE \'%"irq": "coalesce"%\''
        ).fetchall()
        assert sorted(rows) == [(COMMIT_A, "verilator", 137.0), (COMMIT_B, "verilator", 150.0)]
        names = {n for (n,) in db.execute("SELECT DISTINCT name FROM metrics")}
        assert names == set(regress.METRICS)
    comparison = compare(load_run("aaaaaaa", db_path), load_run(COMMIT_B[:10], db_path))
    moved = {c.metric for c in comparison.changes if "irq=coalesce" in c.label}
    assert "throughput_mbps" in moved and "irqs_per_packet" not in moved
    assert not [c for c in comparison.changes if "irq=coalesce" not in c.label]
    assert comparison.only_after == ["direction=tx frames=8 irq=eop cpu=microblaze-66"]
    with pytest.raises(ResultsDbError, match=r"'cccc'.*commit cccc.*bbbbbbbbbbbb, aaaa"):
        load_run("cccc", db_path)


def test_a_clean_tree_wins_over_uncommitted_changes_at_one_commit(tmp_path):
    db_path = tmp_path / "results.sqlite"
    record(db_path, write_run(tmp_path / "a"), COMMIT_A)
    record(db_path, write_run(tmp_path / "b", {**RUN, "napi": 90.0}), COMMIT_A, dirty=True)
    run = load_run(COMMIT_A, db_path)
    assert "uncommitted" not in run.label
    assert {p.summary["throughput_mbps"] for p in run.points.values()} == set(RUN.values())


def test_bad_runs_and_databases_are_named(tmp_path, capsys):
    write_run(tmp_path / "a")
    with pytest.raises(ResultsDbError, match="no such folder"):
        load_run(str(tmp_path / "missing"), tmp_path / "results.sqlite")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsDbError, match="not a macdma regress output folder"):
        load_run(str(tmp_path / "empty"), tmp_path / "results.sqlite")
    with pytest.raises(ResultsDbError, match="no results database at"):
        load_run("abcdef12", tmp_path / "results.sqlite")
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not a database, just some bytes " * 100)
    with pytest.raises(ResultsDbError, match="corrupt.sqlite: not a usable SQLite database"):
        ResultsDb(corrupt)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE recipes (name TEXT)")
    with pytest.raises(ResultsDbError, match="other tables, not macdma's"):
        ResultsDb(foreign)
    # The command: exit 2 and one line naming the problem.
    code = main(["compare", "abcdef12", str(tmp_path / "a"), "--db", str(corrupt)])
    assert code == 2
    assert "corrupt.sqlite: not a usable SQLite database" in capsys.readouterr().err


def test_compare_command_writes_and_exits_by_what_moved(tmp_path, capsys):
    write_run(tmp_path / "a")
    write_run(tmp_path / "b", {**RUN, "coalesce": 150.0})
    out = tmp_path / "cmp"
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert main(["compare", a, a, "--out", str(out)]) == 0
    assert "No point moved" in (out / "compare.md").read_text()
    assert main(["compare", b, "--baseline", a, "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "| throughput_mbps | 137.0 | 150.0 | +8.7% |" in printed
    assert "throughput_mbps" in (out / "compare.csv").read_text()
    for bad in (
        ["compare", a],
        ["compare", a, b, "--baseline", a],
        ["compare", a, b, "--tolerance", "x"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(bad)
        assert exit_info.value.code == 2


def _write_runs(db_path: str, writer: int, runs: int) -> int:
    """One concurrent writer: ``runs`` runs of three points each."""
    folder = Path(db_path).parent / f"w{writer}"
    results = write_run(folder)
    for _ in range(runs):
        record(Path(db_path), results, f"{writer:x}" * 40)
    return runs


def test_concurrent_writers_leave_every_run_and_an_intact_database(tmp_path):
    db_path = tmp_path / "results.sqlite"
    writers, runs = 4, 15
    with ProcessPoolExecutor(max_workers=writers) as pool:
        done = list(
            pool.map(_write_runs, [str(db_path)] * writers, range(writers), [runs] * writers)
        )
    assert done == [runs] * writers
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == writers * runs
        assert db.execute("SELECT COUNT(*) FROM points").fetchone()[0] == writers * runs * 3
        per_run = db.execute(
            "SELECT COUNT(*) FROM points GROUP BY run_id HAVING COUNT(*) != 3"
        ).fetchall()
        assert per_run == []  # every run whole: one transaction each


def test_point_key_follows_the_cpu_file_contents(tmp_path):
    cpu = tmp_path / "my-cpu.toml"
    cpu.write_text((CPU_DIR / "microblaze-66.toml").read_text())
    s = Scenario(direction="tx", frames=8, cpu=str(cpu))
    before = point_key(s, "src")
    cpu.write_text(cpu.read_text().replace("clock_mhz = 66", "clock_mhz = 67"))
    assert "clock_mhz = 67" in cpu.read_text()
    assert point_key(s, "src") != before
