"""The model held against the real core (sim/regress/model_vs_rtl.py): points that differ
only in ``cpu`` pair up, each metric's error and the MAPE of throughput are computed from
the two points' numbers, and the CI profile of the sweep (model-vs-rtl-cpu-ci.toml) runs
on both the real core and the model and writes the report's section and
model_vs_rtl.json; a planted wrong RTL number shows up as its error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from synthetic import synthetic_metrics

from macdma.firmware.driver import IrqStrategyName
from macdma.sim.regress import load_sweep, summarise
from macdma.sim.regress.keys import firmware_digest, point_key
from macdma.sim.regress.model_vs_rtl import (
    COMPARED_METRICS,
    mape,
    model_vs_rtl_lines,
    pair_points,
    pairs_from_json,
    percent_error,
    write_model_vs_rtl_json,
)
from macdma.sim.regress.sweep_file import SWEEP_DIR
from macdma.sim.run.scenario import RTL_CPU, Scenario

SWEEP = SWEEP_DIR / "model-vs-rtl-cpu.toml"
CI_SWEEP = SWEEP_DIR / "model-vs-rtl-cpu-ci.toml"


def _point(key: str, mbps: float, *, cpu: str, status: str = "ok", **knobs) -> dict:
    """A stored point (what points/<key>.json holds) of a TX run at ``mbps``."""
    scenario = Scenario(cpu=cpu, direction="tx", frames=40, **knobs)
    metrics = synthetic_metrics(scenario, mbps)
    stored = {"key": key, "status": status, "scenario": metrics["scenario"]}
    if status == "ok":
        stored["summary"] = summarise(metrics)
    return stored


def test_points_differing_only_in_cpu_pair_and_errors_are_relative_to_the_core():
    results = [
        _point("r60", 100.0, cpu=RTL_CPU, frame_size=60),
        _point("m60", 110.0, cpu="vexriscv", frame_size=60),
        _point("r512", 400.0, cpu=RTL_CPU, frame_size=512),
        _point("m512", 360.0, cpu="vexriscv", frame_size=512),
        _point("m1514", 900.0, cpu="vexriscv", frame_size=1514),  # no RTL twin: no pair
        _point("r1000", 0.0, cpu=RTL_CPU, frame_size=1000, status="failed"),
    ]
    pairs = pair_points(results)
    assert [(p.rtl_key, p.model_key) for p in pairs] == [("r60", "m60"), ("r512", "m512")]
    assert pairs[0].error_pct("throughput_mbps") == pytest.approx(10.0)
    assert pairs[1].error_pct("throughput_mbps") == pytest.approx(-10.0)
    assert mape(pairs) == pytest.approx(10.0)
    assert percent_error(5.0, 0.0) is None  # no percentage of nothing


def test_a_planted_wrong_rtl_number_is_reported_as_its_error(tmp_path):
    honest = [_point("r", 200.0, cpu=RTL_CPU), _point("m", 200.0, cpu="vexriscv")]
    planted = [_point("r", 100.0, cpu=RTL_CPU), _point("m", 200.0, cpu="vexriscv")]
    assert mape(pair_points(honest)) == pytest.approx(0.0)
    assert mape(pair_points(planted)) == pytest.approx(100.0)
    path = tmp_path / "model_vs_rtl.json"
    write_model_vs_rtl_json(path, pair_points(planted))
    document = json.loads(path.read_text())
    assert document["mape_pct"] == pytest.approx(100.0)
    assert document["points"][0]["throughput_mbps"] == {
        "rtl": 100.0,
        "model": 200.0,
        "error_pct": pytest.approx(100.0),
    }
    assert document["worst"]["rtl_key"] == "r"
    section = "\n".join(model_vs_rtl_lines(pair_points(planted)))
    assert "MAPE of throughput 100.0%" in section and "+100.0%" in section


def test_an_rtl_points_key_follows_the_c_firmware(tmp_path):
    """vexriscv-rtl has no CPU file: its points' keys hash the C firmware's sources, so a
    change to the C driver reruns them (source_hash holds only Python files)."""
    (tmp_path / "firmware" / "c").mkdir(parents=True)
    (tmp_path / "firmware" / "include").mkdir()
    driver = tmp_path / "firmware" / "c" / "macdma.c"
    driver.write_text("int x;\n")
    (tmp_path / "firmware" / "include" / "macdma_regs.h").write_text("#define A 1\n")
    before = firmware_digest(tmp_path)
    driver.write_text("int y;\n")
    assert firmware_digest(tmp_path) != before
    rtl = Scenario(cpu=RTL_CPU, direction="tx", frames=40)
    assert point_key(rtl, "sources") != point_key(
        Scenario(cpu="vexriscv", direction="tx", frames=40), "sources"
    )


def test_the_sweep_runs_every_condition_on_both_and_covers_the_issue():
    """At least 30 conditions, each on vexriscv-rtl and on the CPU file; TX and RX; 0..5
    extra fragments; every IRQ strategy the C driver has; bursts 2..64; ring sizes; frame
    sizes 60..1514."""
    sweep = load_sweep(SWEEP)
    seen: dict[str, set] = {}
    conditions = set()
    for experiment in sweep.experiments:
        assert experiment.sweep["cpu"][0] == RTL_CPU and len(experiment.sweep["cpu"]) == 2
        rows = [dict(experiment.fixed)]
        for field, values in experiment.sweep.items():
            if field != "cpu":
                rows = [{**row, field: value} for row in rows for value in values]
        for row in rows:
            conditions.add(json.dumps(row, sort_keys=True))
            for field, value in row.items():
                seen.setdefault(field, set()).add(value)
    assert len(conditions) >= 30
    assert seen["direction"] == {"tx", "rx"}
    assert set(range(6)) <= seen["frags"] | {0}
    # Every strategy the C driver implements (all but the driver model's own DIM).
    assert {name.value for name in IrqStrategyName if name is not IrqStrategyName.DIM} <= seen[
        "irq"
    ]
    assert min(seen["burst_beats"]) == 2 and max(seen["burst_beats"]) == 64
    assert len(seen["tx_ring"]) >= 2 and len(seen["rx_ring"]) >= 1
    assert min(seen["frame_size"]) == 60 and max(seen["frame_size"]) == 1514


def test_the_ci_profile_reports_the_model_against_the_core(tmp_path):
    """Two short conditions on Verilator, each on the real core and the model: every point
    finishes, model_vs_rtl.json pairs them with each metric's values and error, its MAPE
    is the mean of the |errors| it lists, and report.md has the section. Then one RTL
    point's stored throughput is planted wrong: the re-run (no simulation: the points are
    stored) reports exactly that error."""
    out = tmp_path / "ci"
    command = [sys.executable, "-m", "macdma.sim.cli", "regress", str(CI_SWEEP)]
    command += ["--out", str(out), "--db", str(tmp_path / "results.sqlite"), "--jobs", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads((out / "model_vs_rtl.json").read_text())
    assert [p["condition"]["direction"] for p in document["points"]] == ["tx", "rx"]
    for point in document["points"]:
        assert point["model_cpu"] == "vexriscv"
        assert point["throughput_mbps"]["rtl"] > 0 and point["throughput_mbps"]["model"] > 0
        for metric in COMPARED_METRICS:
            values = point[metric]
            assert values["rtl"] >= 0 and values["model"] >= 0, (metric, point)
            if values["rtl"] == 0:  # no interrupt in the window (NAPI stays scheduled)
                assert values["error_pct"] is None, (metric, point)
                continue
            expected = 100 * (values["model"] - values["rtl"]) / values["rtl"]
            assert values["error_pct"] == pytest.approx(expected)
    errors = [abs(p["throughput_mbps"]["error_pct"]) for p in document["points"]]
    assert document["mape_pct"] == pytest.approx(sum(errors) / len(errors))
    assert mape(pairs_from_json(document)) == pytest.approx(document["mape_pct"])
    report = (out / "report.md").read_text()
    assert "## Model vs RTL" in report and "plots/model_vs_rtl.png" in report
    assert (out / "plots" / "model_vs_rtl.png").stat().st_size > 0

    # Plant a wrong RTL number: the TX point's measured throughput, halved.
    tx = document["points"][0]
    path = out / "points" / f"{tx['rtl_key']}.json"
    stored = json.loads(path.read_text())
    true_mbps = stored["metrics"]["tx"]["mbps"]
    stored["metrics"]["tx"]["mbps"] = true_mbps / 2
    path.write_text(json.dumps(stored))
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    planted = json.loads((out / "model_vs_rtl.json").read_text())
    model_mbps = tx["throughput_mbps"]["model"]
    assert planted["points"][0]["throughput_mbps"]["rtl"] == pytest.approx(true_mbps / 2)
    assert planted["points"][0]["throughput_mbps"]["error_pct"] == pytest.approx(
        100 * (model_mbps - true_mbps / 2) / (true_mbps / 2)
    )
    assert planted["mape_pct"] != pytest.approx(document["mape_pct"])
