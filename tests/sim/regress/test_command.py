"""``macdma regress``: the shipped sweeps' declared checks on synthetic results, CSV and
report writing, the progress of a sweep; and one real ``--quick`` sweep on Verilator. Sweep
files, keys, points on disk and readings have their own test modules beside this one
(test_sweep_file.py, test_keys.py, test_points.py, test_readings.py); the expectation kinds
and field reports on their own: tests/sim/regress/test_expectations.py."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import subprocess

import pytest
from synthetic import stored_point, sweep_data, synthetic_metrics

from macdma.sim import regress
from macdma.sim.cosim.progress import PointsProgress
from macdma.sim.regress import (
    DEFAULT_SWEEP,
    QUICK_SWEEP,
    CheckResult,
    Experiment,
    check_results,
    expand,
    load_sweep,
    parse_sweep,
    store,
    summarise,
    write_csv,
    write_report,
)
from macdma.sim.run.scenario import Scenario

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# -- the checks on synthetic results -----------------------------------------------------------


def by_name(checks: list[CheckResult]) -> dict[str, str]:
    return {c.name: c.status for c in checks}


def microblaze(irq: str) -> Scenario:
    return Scenario(direction="tx", frames=8, frags=5, cpu="microblaze-66", irq=irq, tx_ring=32)


DEFAULT_CHECKS = {
    "frames_intact",
    "ideal_line_rate",
    "coalescing_beats_per_desc",
    "bursts_monotonic",
}


def default_point(tmp_path, experiment: str, mbps: float | None, dropped=0, **at) -> dict:
    """The default sweep's one point of ``experiment`` at ``at``, stored with a synthetic
    result at ``mbps`` (``mbps`` None: at 99.5% of its line rate)."""
    points = expand(load_sweep(DEFAULT_SWEEP), "src")
    (point,) = [
        p
        for p in points
        if experiment in p.experiments and all(getattr(p.scenario, k) == v for k, v in at.items())
    ]
    s = point.scenario
    if mbps is None:
        mbps = 0.995 * s.link_mbps * s.frame_size / s.wire_bytes_per_frame
    metrics = synthetic_metrics(s, mbps, dropped=dropped)
    return store(tmp_path, point, {"status": "ok", "metrics": metrics}, "src")


def shipped_checks(results: list[dict]) -> dict[str, str]:
    """The default sweep's built-in and declared checks (not the field reports'
    calibration ones) on ``results``."""
    statuses = by_name(check_results(load_sweep(DEFAULT_SWEEP), results))
    return {k: v for k, v in statuses.items() if k in DEFAULT_CHECKS}


def ideal_points(tmp_path, mbps=None) -> list[dict]:
    return [
        default_point(tmp_path, "ideal", mbps, frame_size=size, irq=irq)
        for size in (60, 1514)
        for irq in ("napi", "coalesce")
    ]


def frags5(tmp_path, **by_irq) -> list[dict]:
    return [
        default_point(tmp_path, "fragments_irq", mbps, frags=5, irq=irq)
        for irq, mbps in by_irq.items()
    ]


def bursts(tmp_path, prefetch: int, **by_burst) -> list[dict]:
    return [
        default_point(
            tmp_path, "burst_prefetch", mbps, burst_beats=int(burst[1:]), prefetch=prefetch
        )
        for burst, mbps in by_burst.items()
    ]


def test_checks_pass_on_physical_results(tmp_path):
    results = frags5(tmp_path, **{"per-desc": 116.0, "coalesce": 137.0, "napi": 136.0})
    results += ideal_points(tmp_path)
    results += bursts(tmp_path, 1, b2=300.0, b4=500.0, b16=990.0)
    statuses = shipped_checks(results)
    assert statuses == dict.fromkeys(DEFAULT_CHECKS, "PASS"), statuses


def test_each_check_fails_when_its_ordering_breaks(tmp_path):
    results = frags5(tmp_path, **{"per-desc": 130.0, "napi": 120.0})  # napi slower: broken
    results += [default_point(tmp_path, "ideal", 800.0, frame_size=1514, irq="napi")]
    results += bursts(tmp_path, 1, b4=500.0, b8=400.0)
    results.append(
        {
            "key": "f",
            "experiments": ["ideal"],
            "status": "failed",
            "error": "TX frame 3 damaged",
            "scenario": dataclasses.asdict(Scenario()),
        }
    )
    assert shipped_checks(results) == dict.fromkeys(DEFAULT_CHECKS, "FAIL")


def test_bursts_within_tolerance_and_different_prefetch_are_not_compared(tmp_path):
    results = bursts(tmp_path, 1, b8=500.0, b16=497.0) + bursts(tmp_path, 4, b16=100.0)
    assert shipped_checks(results)["bursts_monotonic"] == "PASS"


def test_checks_without_points_are_not_applicable():
    for path in (DEFAULT_SWEEP, QUICK_SWEEP):
        statuses = by_name(check_results(load_sweep(path), []))
        assert set(statuses.values()) == {"N/A"}, statuses


def test_the_quick_sweep_declares_every_check_of_the_default_sweep():
    declared = {x.name for e in load_sweep(QUICK_SWEEP).experiments for x in e.expectations}
    assert DEFAULT_CHECKS - {"frames_intact"} <= declared


def test_tx_frames_missing_from_the_wire_fail_the_intact_check(tmp_path):
    results = [default_point(tmp_path, "fragments_irq", 100.0, frags=5, irq="eop", dropped=1)]
    assert shipped_checks(results)["frames_intact"] == "FAIL"


def test_every_default_tx_point_must_hold_100_frames_in_its_window(tmp_path):
    assert load_sweep(DEFAULT_SWEEP).min_tx_window_frames == 100
    full = default_point(tmp_path, "fragments_irq", 200.0, frags=0, irq="eop")
    assert full["metrics"]["tx"]["frames_in_window"] >= 100
    checks = by_name(check_results(load_sweep(DEFAULT_SWEEP), [full]))
    assert checks["tx_window"] == "PASS"
    short = default_point(tmp_path, "fragments_irq", 200.0, frags=1, irq="eop")
    short["metrics"]["tx"]["frames_in_window"] = 99.5
    (check,) = [
        c for c in check_results(load_sweep(DEFAULT_SWEEP), [full, short]) if c.name == "tx_window"
    ]
    assert check.status == "FAIL" and short["key"] in check.detail and "99.5" in check.detail
    # A stream's TX frames are ACKs: its figure is RX goodput, so its TX window is not checked.
    stream = default_point(tmp_path, "report_ure_one_per_irq", 90.0)
    stream["metrics"]["tx"]["frames_in_window"] = 10.0
    checks = by_name(check_results(load_sweep(DEFAULT_SWEEP), [full, stream]))
    assert checks["tx_window"] == "PASS"


@pytest.mark.parametrize("value", [-1, 1.5, "100", True])
def test_a_bad_min_tx_window_is_refused(value):
    data = sweep_data()
    data["min_tx_window_frames"] = value
    with pytest.raises(ValueError, match="min_tx_window_frames"):
        parse_sweep(data)


def test_a_sweep_without_min_tx_window_has_no_window_check(tmp_path):
    assert parse_sweep(sweep_data()).min_tx_window_frames == 0
    assert "tx_window" not in by_name(check_results(load_sweep(QUICK_SWEEP), []))


def test_summary_takes_every_figure_from_the_measured_window():
    scenario = Scenario(direction="tx", frames=8, frame_size=1500, cpu="microblaze-66")
    metrics = synthetic_metrics(scenario, 200.0, irqs=0.5)
    summary = summarise(metrics)
    assert summary["throughput_mbps"] == 200.0
    assert summary["throughput_ci_mbps"] == pytest.approx(2.0)
    assert summary["cycles_per_packet"] == 1e3  # compute_metrics' figure, not recomputed
    assert summary["irqs_per_second"] == pytest.approx(0.5 * 200e6 / 12000)
    assert summary["cpu_bound_mbps"] == pytest.approx(66e6 / 1e3 * 1500 * 8 / 1e6)
    assert summary["bus_utilisation_pct"] == 40.0  # the busier channel


# -- CSV and report -------------------------------------------------------------------------


def test_csv_and_report_are_written(tmp_path):
    results = [
        stored_point(tmp_path, microblaze("per-desc"), 116.0, experiments=["frags"]),
        stored_point(tmp_path, microblaze("napi"), 136.0, experiments=["frags"]),
        {
            "key": "dead",
            "experiments": ["frags"],
            "status": "failed",
            "error": "boom",
            "scenario": dataclasses.asdict(microblaze("eop")),
            "sources": "src",
        },
    ]
    write_csv(tmp_path / "results.csv", results)
    rows = list(csv.DictReader((tmp_path / "results.csv").read_text().splitlines()))
    assert [r["irq"] for r in rows] == ["per-desc", "napi", "eop"]
    assert float(rows[1]["throughput_mbps"]) == pytest.approx(136.0)
    assert rows[2]["status"] == "failed" and rows[2]["throughput_mbps"] == ""

    experiment = Experiment(
        name="frags",
        title="Fragments",
        fixed={},
        sweep={"irq": ["per-desc", "napi", "eop"]},
        x="irq",
        metrics=("throughput_mbps", "irqs_per_packet"),
    )
    sweep = regress.Sweep("t", "a test", {}, (experiment,))
    regress.plot_experiment(experiment, regress.ok(results), tmp_path / "plots" / "frags.png")
    assert (tmp_path / "plots" / "frags.png").read_bytes()[:8] == PNG_MAGIC
    checks = check_results(sweep, results)
    write_report(tmp_path / "report.md", sweep, results, checks, {"frags": "plots/frags.png"})
    report = (tmp_path / "report.md").read_text()
    assert "## Assertions" in report and "**FAIL**" in report  # the failed point
    assert "## Fragments" in report and "![Fragments](plots/frags.png)" in report
    assert "| napi | 136" in report and "FAILED" in report


def test_progress_plain_prints_a_line_per_finished_point_with_elapsed_and_eta():
    stream = io.StringIO()
    progress = PointsProgress(4, stream=stream)
    progress.started -= 10
    progress.advance("point one", ok=True)
    progress.advance("point two", ok=False)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert lines[0] == "[1/4] elapsed 10s ETA 30s ok: point one"
    assert lines[1] == "[2/4] elapsed 10s ETA 10s FAILED: point two"
    assert len(lines) == 2


class FakeTerminal(io.StringIO):
    """A stream that says it is a terminal, as rich sees one."""

    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_draws_a_rich_bar_not_plain_lines():
    terminal = FakeTerminal()
    with PointsProgress(2, stream=terminal) as progress:
        assert progress.live
        progress.note("building")
        progress.advance("point one", ok=True)
        progress.advance("point two", ok=False)
    drawn = terminal.getvalue()
    assert "\x1b[" in drawn  # rich's cursor control: a live display
    assert "building" in drawn and "2/2" in drawn and "1 failed" in drawn
    assert "FAILED: point two" in drawn
    assert "[1/2] elapsed" not in drawn  # no plain lines on a terminal


def test_progress_rejects_a_negative_total():
    with pytest.raises(ValueError, match="not -1"):
        PointsProgress(-1)


# -- the real thing -------------------------------------------------------------------------


def test_quick_sweep_writes_report_csv_json_and_plots(quick_regress):
    # The --quick profile runs on Verilator (its default): what CI runs. The Icarus path is
    # the same code with another runner (test_sim_override_changes_every_point_and_its_key).
    out, command, done = quick_regress.out, quick_regress.command, quick_regress.done
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    points = list((out / "points").glob("*.json"))
    expected = expand(load_sweep(QUICK_SWEEP), "src")
    assert len(points) == len(expected)
    assert all(json.loads(p.read_text())["status"] == "ok" for p in points)
    rows = list(csv.DictReader((out / "results.csv").read_text().splitlines()))
    assert len(rows) == len(expected) and all(float(r["throughput_mbps"]) > 0 for r in rows)
    report = (out / "report.md").read_text()
    sweep = load_sweep(QUICK_SWEEP)
    expectations = sum(len(e.expectations) for e in sweep.experiments)
    assert report.count("**PASS**") == 1 + expectations == 5 and "**FAIL**" not in report
    # The field-report condition: in field_reports.json and in the table the report opens with.
    (entry,) = json.loads((out / "field_reports.json").read_text())
    assert (entry["report"], entry["condition"]) == ("microblaze-frags", "frags5")
    assert set(entry) == {"report", "condition", "mbps", "irqs_per_second", "cpu_pct"}
    eop = next(r for r in rows if r["irq"] == "eop")
    assert entry["mbps"] == pytest.approx(float(eop["throughput_mbps"]), rel=1e-5)
    assert 0 < entry["cpu_pct"] <= 100 and entry["irqs_per_second"] > 0
    assert report.index("## Field reports") < report.index("## Assertions")
    assert "| microblaze-frags | frags5 |" in report
    plots = sorted((out / "plots").glob("*.png"))
    assert len(plots) == len(load_sweep(QUICK_SWEEP).experiments)
    assert all(p.read_bytes()[:8] == PNG_MAGIC for p in plots)
    # A second run finds every point unchanged and runs nothing.
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and f"{len(expected)} unchanged and skipped" in again.stdout


# -- readings: every conclusion printed only when the numbers support it ----------------------


def test_a_sweep_over_cpu_files_plots_each_point_at_its_cpu(tmp_path, monkeypatch):
    """A CPU file given by a relative path is swept as the absolute path the scenarios
    hold, so the plot and the tables find every point's cpu among the swept values."""
    from macdma.sim.model.cpus import CPU_DIR

    (tmp_path / "mine.toml").write_text((CPU_DIR / "microblaze-66.toml").read_text())
    monkeypatch.chdir(tmp_path)
    sweep = parse_sweep(
        {
            "experiment": [
                {
                    "name": "cpus",
                    "fixed": {"direction": "tx", "frames": 8, "tx_ring": 16},
                    "sweep": {"cpu": ["microblaze-66", "mine.toml"]},
                }
            ]
        }
    )
    (experiment,) = sweep.experiments
    assert experiment.sweep["cpu"] == ["microblaze-66", str(tmp_path / "mine.toml")]
    points = expand(sweep, "src")
    assert [p.scenario.cpu for p in points] == experiment.sweep["cpu"]
    results = [
        store(
            tmp_path,
            point,
            {"status": "ok", "metrics": synthetic_metrics(point.scenario, 200.0)},
            "src",
        )
        for point in points
    ]
    regress.plot_experiment(experiment, regress.ok(results), tmp_path / "cpus.png")
    assert (tmp_path / "cpus.png").read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="cpus.*nothere.toml"):
        parse_sweep({"experiment": [{"name": "cpus", "sweep": {"cpu": ["nothere.toml"]}}]})


def test_the_burst_axis_says_the_measured_bytes_per_beat():
    from macdma.sim.regress.plots import axis_label

    def beat(width):
        return {"summary": {"bus_bytes_per_beat": width}}

    assert (
        axis_label("burst_beats", [beat(4.0), beat(4.0)]) == "DMA burst length (beats of 4 bytes)"
    )
    assert axis_label("burst_beats", [beat(8.0)]) == "DMA burst length (beats of 8 bytes)"
    assert axis_label("burst_beats", [beat(4.0), beat(8.0)]) == "DMA burst length (beats)"
    assert axis_label("burst_beats", [beat(None)]) == "DMA burst length (beats)"
