"""``macdma regress --scheduler``: the ``--quick`` sweep on a local Dask cluster of two
workers gives the local pool's point keys and simulation results (one real run of each on
Verilator, shared by the tests here), ``--baseline`` adds the "changed since" section, and
``macdma compare`` finds a change planted in one point; scheduler and worker errors."""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from macdma.sim import cluster
from macdma.sim.regress import QUICK_SWEEP, expand, load_sweep, source_hash
from macdma.sim.scenario import Scenario

# Host time, not a simulation result: the only summary entries allowed to differ.
WALL_METRICS = ("wall_seconds",)


def regress(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "macdma.sim.cli", "regress", "--quick", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def points(folder) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (folder / "points").glob("*.json")}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The quick sweep on the local pool, then on ``local:2`` with the pool's run as its
    baseline; both recorded in one database."""
    base = tmp_path_factory.mktemp("dask")
    db = base / "results.sqlite"
    local, dask = base / "local", base / "dask"
    regress("--out", str(local), "--db", str(db))
    printed = regress(
        "--out", str(dask), "--db", str(db), "--scheduler", "local:2", "--baseline", str(local)
    )
    return {"local": local, "dask": dask, "db": db, "printed": printed.stdout}


def test_dask_gives_the_local_pools_keys_and_metrics(runs):
    local, dask = points(runs["local"]), points(runs["dask"])
    expected = expand(load_sweep(QUICK_SWEEP), source_hash())
    assert set(local) == set(dask) == {p.key for p in expected}
    assert "on a local Dask cluster of 2 workers" in runs["printed"]
    for key, point in dask.items():
        assert point["status"] == "ok", point.get("error")
        same = {k: v for k, v in point["summary"].items() if k not in WALL_METRICS}
        assert same == {k: v for k, v in local[key]["summary"].items() if k not in WALL_METRICS}
        # The worker sent its simulator log back; the collecting process wrote it.
        assert (runs["dask"] / "logs" / f"{key}.log").stat().st_size > 0
    report = (runs["dask"] / "report.md").read_text()
    assert report.count("**PASS**") == 4
    section = report.split("## Changed since the baseline", 1)[1]
    assert f"{len(expected)} points in both, 0 changes" in section
    assert "No point moved beyond the tolerance." in section
    with sqlite3.connect(runs["db"]) as db:
        ran_on = [r for (r,) in db.execute("SELECT ran_on FROM runs ORDER BY id")]
        assert ran_on == ["2 local workers", "a local Dask cluster of 2 workers"]
        assert db.execute("SELECT COUNT(*) FROM points").fetchone()[0] == 2 * len(expected)


def test_compare_finds_a_planted_change_and_none_between_pool_and_dask(runs, tmp_path):
    def compare(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "macdma.sim.cli", "compare", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    out = str(tmp_path / "cmp")
    same = compare(str(runs["local"]), str(runs["dask"]), "--tolerance", "0", "--out", out)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "0 changes" in same.stdout

    planted = tmp_path / "planted"
    shutil.copytree(runs["dask"], planted)
    path = sorted((planted / "points").glob("*.json"))[0]
    stored = json.loads(path.read_text())
    stored["summary"]["cycles_per_packet"] = (stored["summary"]["cycles_per_packet"] or 0) + 1e4
    path.write_text(json.dumps(stored))
    found = compare(str(planted), "--baseline", str(runs["local"]), "--out", out)
    assert found.returncode == 1, found.stdout + found.stderr
    assert "1 changes beyond 1%" in found.stdout and "| cycles_per_packet |" in found.stdout
    assert "cycles_per_packet" in (tmp_path / "cmp" / "compare.csv").read_text()


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
