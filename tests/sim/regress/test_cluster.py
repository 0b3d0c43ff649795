"""``macdma regress --scheduler``: the ``--quick`` sweep on a local Dask cluster of two
workers gives the local pool's point keys and simulation results (one real run of each on
Verilator), ``--baseline`` adds the "changed since" section, and ``macdma compare`` finds a
change planted in one point and none between the two; scheduler and worker errors."""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from macdma.sim.regress import QUICK_SWEEP, cluster, expand, load_sweep, source_hash
from macdma.sim.run.scenario import Scenario

# Host time, not a simulation result: the only summary entries allowed to differ.
WALL_METRICS = ("wall_seconds",)


def regress(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "macdma.sim.cli", "regress", "--quick", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def points(folder) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (folder / "points").glob("*.json")}


def test_dask_gives_the_local_pools_results_and_compare_finds_only_a_planted_change(tmp_path):
    # One test, so that pytest-xdist never runs the two sweeps twice on two workers.
    db = tmp_path / "results.sqlite"
    local, dask = tmp_path / "local", tmp_path / "dask"
    regress("--out", str(local), "--db", str(db))
    printed = regress(
        "--out", str(dask), "--db", str(db), "--scheduler", "local:2", "--baseline", str(local)
    ).stdout

    # Same keys and the same simulation results (host time aside) as the local pool.
    on_pool, on_dask = points(local), points(dask)
    expected = expand(load_sweep(QUICK_SWEEP), source_hash())
    assert set(on_pool) == set(on_dask) == {p.key for p in expected}
    assert "on a local Dask cluster of 2 workers" in printed
    for key, point in on_dask.items():
        assert point["status"] == "ok", point.get("error")
        same = {k: v for k, v in point["summary"].items() if k not in WALL_METRICS}
        assert same == {k: v for k, v in on_pool[key]["summary"].items() if k not in WALL_METRICS}
        # The worker sent its simulator log back; the collecting process wrote it.
        assert (dask / "logs" / f"{key}.log").stat().st_size > 0
    report = (dask / "report.md").read_text()
    assert report.count("**PASS**") == 1 + sum(
        len(e.expectations) for e in load_sweep(QUICK_SWEEP).experiments
    )
    section = report.split("## Changed since the baseline", 1)[1]
    assert f"{len(expected)} points in both, 0 changes" in section
    assert "No point moved beyond the tolerance." in section
    with sqlite3.connect(db) as connection:
        ran_on = [r for (r,) in connection.execute("SELECT ran_on FROM runs ORDER BY id")]
        assert ran_on[1] == "a local Dask cluster of 2 workers" and len(ran_on) == 2
        count = connection.execute("SELECT COUNT(*) FROM points").fetchone()[0]
        assert count == 2 * len(expected)

    # compare: nothing between the pool's and Dask's runs, even at zero tolerance ...
    out = str(tmp_path / "cmp")
    same_run = compare_command(str(local), str(dask), "--tolerance", "0", "--out", out)
    assert same_run.returncode == 0, same_run.stdout + same_run.stderr
    assert f"{len(expected)} points in both, 0 changes" in same_run.stdout
    # ... and exactly the change planted in one point.
    planted = tmp_path / "planted"
    shutil.copytree(dask, planted)
    path = sorted((planted / "points").glob("*.json"))[0]
    stored = json.loads(path.read_text())
    stored["summary"]["cycles_per_packet"] = (stored["summary"]["cycles_per_packet"] or 0) + 1e4
    path.write_text(json.dumps(stored))
    found = compare_command(str(planted), "--baseline", str(local), "--out", out)
    assert found.returncode == 1, found.stdout + found.stderr
    assert "1 changes beyond 1%" in found.stdout and "| cycles_per_packet |" in found.stdout
    assert "cycles_per_packet" in (tmp_path / "cmp" / "compare.csv").read_text()


def compare_command(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "macdma.sim.cli", "compare", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_without_scheduler_dask_is_not_imported():
    code = (
        "import sys; from macdma.sim.cli import build_parser; "
        "build_parser().parse_args(['regress', '--quick']); "
        "from macdma.sim import regress; from macdma.sim.regress import cluster, results_db; "
        "assert 'distributed' not in sys.modules and 'dask' not in sys.modules, 'imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_missing_dask_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    with pytest.raises(cluster.ClusterError, match=r"local:1 needs Dask: pip install -e"):
        cluster.DaskPool("local:1")


def test_jobs_and_scheduler_together_are_refused():
    from macdma.sim.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["regress", "--quick", "--jobs", "2", "--scheduler", "local:2"])
    assert exit_info.value.code == 2


@pytest.mark.parametrize(
    ("text", "accepted"),
    [("local:2", "local:2"), ("tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"), ("h:1", "h:1")],
)
def test_scheduler_option_accepts_local_n_and_addresses(text, accepted):
    assert cluster.parse_scheduler(text) == accepted


@pytest.mark.parametrize("text", ["local:0", "local:x", "localhost", "tcp://host"])
def test_bad_scheduler_values_are_named(text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text)):
        cluster.parse_scheduler(text)


def test_an_unreachable_scheduler_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2)
    with pytest.raises(cluster.ClusterError, match="cannot reach a Dask scheduler at tcp://"):
        cluster.DaskPool("tcp://127.0.0.1:9")


def test_a_worker_on_other_sources_fails_the_point_without_simulating():
    scenario = Scenario(direction="tx", frames=4)
    expected = {"sources": "0123456789abcdef", "cpu_digest": "x"}
    result = cluster.run_point_on_worker(scenario.to_json(), "k", expected)
    assert result["status"] == "failed"
    assert "sources hash" in result["error"] and "0123456789abcdef" in result["error"]
    expected = {"sources": source_hash(), "cpu_digest": "0" * 64}
    result = cluster.run_point_on_worker(scenario.to_json(), "k", expected)
    assert result["status"] == "failed" and "CPU file ideal differs" in result["error"]
