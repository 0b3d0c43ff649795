"""``macdma regress``: sweep files, point keys, skip/force, the shipped sweeps' declared
expectations, CSV and report writing on synthetic results; and one real ``--quick`` sweep
on Verilator. The expectation kinds and field reports on their own:
tests/sim/regress/test_regress_expectations.py."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import subprocess

import pytest
from synthetic import synthetic_metrics

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
    plan,
    point_key,
    readings,
    store,
    summarise,
    write_csv,
    write_report,
)
from macdma.sim.run.scenario import Scenario

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def sweep_data(**experiment):
    table = {
        "name": "frags",
        "x": "frags",
        "fixed": {"cpu": "microblaze-66", "frames": 4},
        "sweep": {"frags": [0, 1, 2], "irq": ["eop", "napi"]},
        "metrics": ["throughput_mbps"],
    }
    table.update(experiment)
    return {"name": "t", "defaults": {"direction": "tx"}, "experiment": [table]}


# -- sweep files and expansion -------------------------------------------------------------


def test_shipped_sweeps_parse_and_expand():
    for path, least in ((DEFAULT_SWEEP, 50), (QUICK_SWEEP, 5)):
        sweep = load_sweep(path)
        points = expand(sweep, "src")
        assert len(points) >= least
        assert len({p.key for p in points}) == len(points)


def test_default_sweep_has_a_section_per_field_report():
    sweep = load_sweep(DEFAULT_SWEEP)
    readings = {e.reading for e in sweep.experiments}
    assert {"fragments_irq", "tx_budget", "burst_prefetch", "rx_buffers", "irq_rate"} <= readings
    assert "ideal" in readings


def test_expansion_is_the_cross_product_with_defaults_and_fixed_fields():
    sweep = parse_sweep(sweep_data())
    points = expand(sweep, "src")
    assert [(p.scenario.frags, p.scenario.irq) for p in points] == [
        (0, "eop"),
        (0, "napi"),
        (1, "eop"),
        (1, "napi"),
        (2, "eop"),
        (2, "napi"),
    ]
    assert all(p.scenario.direction == "tx" and p.scenario.frames == 4 for p in points)
    assert all(p.experiments == ["frags"] for p in points)
    assert sweep.experiments[0].series == ("irq",)  # the other swept fields by default


def test_sim_override_changes_every_point_and_its_key():
    sweep = parse_sweep(sweep_data())
    verilator = expand(sweep, "src")
    icarus = expand(sweep, "src", sim="icarus")
    assert all(p.scenario.sim == "icarus" for p in icarus)
    assert not {p.key for p in verilator} & {p.key for p in icarus}


def test_a_point_shared_by_two_experiments_runs_once():
    data = sweep_data()
    data["experiment"].append({**data["experiment"][0], "name": "again"})
    points = expand(parse_sweep(data), "src")
    assert len(points) == 6
    assert all(p.experiments == ["frags", "again"] for p in points)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sweep": {"fragz": [1]}}, "unknown scenario field"),
        ({"sweep": {"frags": []}}, "non-empty list"),
        ({"x": "burst_beats"}, "not a swept field"),
        ({"metrics": ["speed"]}, "unknown metric"),
        ({"reading": "poem"}, "unknown reading"),
        ({"name": "bad name"}, "name must be"),
        ({"colour": "red"}, "unknown key"),
    ],
)
def test_bad_sweep_entries_are_named(change, message):
    with pytest.raises(ValueError, match=message):
        parse_sweep(sweep_data(**change))


def test_an_invalid_scenario_names_its_experiment():
    with pytest.raises(ValueError, match="experiment 'frags'.*frags must be"):
        expand(parse_sweep(sweep_data(sweep={"frags": [99]})), "src")


def test_toml_syntax_errors_name_the_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("name = \n")
    with pytest.raises(ValueError, match="broken.toml"):
        load_sweep(path)
    with pytest.raises(ValueError, match="does not exist"):
        load_sweep(tmp_path / "missing.toml")


def test_memory_latency_and_tx_clean_budget_knobs_are_validated_and_reach_run():
    from macdma.sim.cli import build_parser, scenario_from_args

    with pytest.raises(ValueError, match="mem_latency_cycles must be 0..1000"):
        Scenario(mem_latency_cycles=1001)
    with pytest.raises(ValueError, match="tx_clean_budget must be 0..4096"):
        Scenario(tx_clean_budget=-1)
    args = build_parser().parse_args(
        ["run", "--mem-latency-cycles", "20", "--tx-clean-budget", "0"]
    )
    scenario = scenario_from_args(args)
    assert (scenario.mem_latency_cycles, scenario.tx_clean_budget) == (20, 0)
    assert scenario_from_args(build_parser().parse_args(["run"])).tx_clean_budget is None


# -- keys, skip and force ------------------------------------------------------------------


def test_key_depends_on_scenario_and_sources_not_on_output_options():
    scenario = Scenario(direction="tx", frames=4)
    assert point_key(scenario, "a") == point_key(dataclasses.replace(scenario, waves=True), "a")
    assert point_key(scenario, "a") != point_key(scenario, "b")
    assert point_key(scenario, "a") != point_key(dataclasses.replace(scenario, frames=5), "a")


def test_source_hash_follows_simulated_sources_only(tmp_path):
    simulated = ("hdl/mac/tx.py", "firmware/driver.py", "sim/cosim/progress.py", "sim/run/bench.py")
    reporting = ("sim/regress/report.py", "sim/regress/command.py", "hdl/boards/b.py")
    for relative in simulated + reporting:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    before = regress.source_hash(tmp_path)
    for relative in reporting:  # the regression's own code, synthesis only
        (tmp_path / relative).write_text("x = 2\n")
    assert regress.source_hash(tmp_path) == before
    for relative in simulated:  # each one a point's input
        (tmp_path / relative).write_text("x = 2\n")
        assert regress.source_hash(tmp_path) != before
        before = regress.source_hash(tmp_path)


def stored_point(tmp_path, scenario: Scenario, mbps: float, experiments=("e",), **kwargs):
    point = regress.Point(point_key(scenario, "src"), scenario, list(experiments))
    result = {"status": "ok", "metrics": synthetic_metrics(scenario, mbps, **kwargs)}
    return store(tmp_path, point, result, "src")


def test_plan_skips_finished_points_reruns_failed_ones_and_force_reruns_all(tmp_path):
    points = expand(parse_sweep(sweep_data()), "src")
    first, second = points[0], points[1]
    store(tmp_path, first, {"status": "ok", "metrics": synthetic_metrics(first.scenario, 9)}, "src")
    store(tmp_path, second, {"status": "failed", "error": "frame 3 damaged"}, "src")
    todo, done = plan(points, tmp_path)
    assert set(done) == {first.key}
    assert [p.key for p in todo] == [p.key for p in points[1:]]
    todo, done = plan(points, tmp_path, force=True)
    assert not done and len(todo) == len(points)


def test_a_skipped_point_gets_every_current_metric_from_its_stored_metrics(tmp_path):
    (point, *_) = expand(parse_sweep(sweep_data()), "src")
    metrics = synthetic_metrics(point.scenario, 9)
    store(tmp_path, point, {"status": "ok", "metrics": metrics}, "src")
    path = regress.point_path(tmp_path, point.key)
    old = json.loads(path.read_text())
    del old["summary"]["cpu_pct"]  # written before the metric existed
    path.write_text(json.dumps(old))
    _, done = plan([point], tmp_path)
    assert done[point.key]["summary"] == summarise(metrics)


def test_a_half_written_json_is_rerun(tmp_path):
    points = expand(parse_sweep(sweep_data()), "src")
    path = regress.point_path(tmp_path, points[0].key)
    path.parent.mkdir(parents=True)
    path.write_text('{"status": "o')
    todo, _ = plan(points, tmp_path)
    assert points[0] in todo


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


def reading_point(summary: dict, **scenario) -> dict:
    """A stored result with just what the readings read."""
    base = dataclasses.asdict(Scenario(direction="tx", frame_size=1500, cpu="microblaze-66"))
    full = {
        "throughput_ci_mbps": 1.0,
        "line_rate_pct": 10.0,
        "irqs_per_packet": 1.0,
        "irqs_per_second": 1e4,
        "cycles_per_packet": 5000.0,
        "cpu_utilisation_pct": 99.0,
        "cpu_bound_mbps": 150.0,
        "frames_dropped": 0,
        "queue_stops": 0,
        "bus_utilisation_pct": 50.0,
        **summary,
    }
    return {"scenario": {**base, **scenario}, "summary": full}


def experiment_named(name: str) -> Experiment:
    return next(e for e in load_sweep(DEFAULT_SWEEP).experiments if e.name == name)


def test_reading_ideal_concludes_only_at_line_rate():
    exp = experiment_named("ideal")
    good = [reading_point({"tx_line_rate_pct": 100.0, "rx_line_rate_pct": 99.8}, cpu="ideal")]
    bad = [reading_point({"tx_line_rate_pct": 100.0, "rx_line_rate_pct": 97.0}, cpu="ideal")]
    assert "the RTL alone holds line rate" in readings.reading_ideal(exp, good)
    text = readings.reading_ideal(exp, bad)
    assert "RTL alone holds" not in text and "below 99%" in text


def fragments_results(*, eop0: float, napi5: float, coalesce5: float, eop5_cpu: float):
    return [
        reading_point({"throughput_mbps": eop0, "cycles_per_packet": 3400.0}, irq="eop", frags=0),
        reading_point(
            {
                "throughput_mbps": 116.0,
                "cycles_per_packet": 6900.0,
                "cpu_utilisation_pct": eop5_cpu,
            },
            irq="eop",
            frags=5,
        ),  # fmt: skip
        reading_point(
            {"throughput_mbps": 110.0, "cycles_per_packet": 7300.0}, irq="per-desc", frags=5
        ),
        reading_point({"throughput_mbps": napi5, "cycles_per_packet": 6500.0}, irq="napi", frags=5),
        reading_point(
            {"throughput_mbps": coalesce5, "cycles_per_packet": 6600.0}, irq="coalesce", frags=5
        ),
    ]


def test_reading_fragments_irq_both_ways():
    exp = experiment_named("fragments_irq")
    text = readings.reading_fragments_irq(
        exp, fragments_results(eop0=230.0, napi5=125.0, coalesce5=124.5, eop5_cpu=99.0)
    )
    assert "the CPU is 99.0% busy, the bottleneck" in text
    assert "napi and coalesce are within their ± of each other" in text
    assert "is fastest" not in text
    assert "(6,900 - 3,400) / 5 = 700 cycles per packet" in text
    assert "napi instead of per-desc saves 800, 1.1 fragments' worth" in text
    assert "both levers matter and neither alone" in text

    text = readings.reading_fragments_irq(
        exp, fragments_results(eop0=120.0, napi5=140.0, coalesce5=124.5, eop5_cpu=80.0)
    )
    assert "napi is fastest beyond the measurement's ±" in text
    assert "the bottleneck" not in text and "something else limits too" in text
    assert "moderating interrupts alone brings back the unfragmented 120.0 Mb/s" in text
    assert "both levers" not in text


def budget_results(capped: float, free: float):
    return [
        reading_point({"throughput_mbps": mbps, "throughput_ci_mbps": 2.0},
                      cpu="mips-router", frags=3, tx_ring=ring, tx_clean_budget=budget)
        for ring in (64, 192)
        for budget, mbps in ((32, capped), (0, free))
    ]  # fmt: skip


def test_reading_tx_budget_both_ways():
    exp = experiment_named("tx_budget")
    text = readings.reading_tx_budget(exp, budget_results(capped=380.0, free=530.0))
    assert "32 frames x 1000 ticks/s x 12,000 bits = 384.0 Mb/s" in text
    assert "the budget binds" in text and "does not bind" not in text
    text = readings.reading_tx_budget(exp, budget_results(capped=380.0, free=382.0))
    assert "the budget does not bind" in text and "helps only until" not in text


def rx_results(big_cycles: float, ratio_goodput: float):
    return [
        reading_point({"throughput_mbps": 982.0 / ratio_goodput, "cycles_per_packet": big_cycles,
                       "cpu_bound_mbps": 1e9 / big_cycles * 12112 / 1e6},
                      direction="rx", frame_size=1514, rx_buf_bytes=9216, cpu="armv7-noncoherent"),
        reading_point({"throughput_mbps": 982.0, "cycles_per_packet": 6000.0,
                       "cpu_bound_mbps": 1e9 / 6000 * 12112 / 1e6},
                      direction="rx", frame_size=1514, rx_buf_bytes=1536, cpu="armv7-noncoherent"),
        reading_point({"throughput_mbps": 982.0, "cycles_per_packet": 7600.0,
                       "cpu_bound_mbps": 1e9 / 7600 * 12112 / 1e6},
                      direction="rx", frame_size=1514, rx_buf_bytes=256, cpu="armv7-noncoherent"),
    ]  # fmt: skip


def test_reading_rx_buffers_both_ways():
    exp = experiment_named("rx_buffers")
    text = readings.reading_rx_buffers(exp, rx_results(big_cycles=13_200.0, ratio_goodput=1.3))
    assert "13,200 / 6,000 = 2.20x" in text and "— the report's 'more than doubled'." in text
    assert "The delivered goodput shows it too." in text
    assert "cost more than MTU-sized ones" in text
    text = readings.reading_rx_buffers(exp, rx_results(big_cycles=9_000.0, ratio_goodput=1.0))
    assert "not the report's 'more than doubled' (1.50x)" in text
    assert "does not differ beyond its ±" in text


def irq_results(napi_mbps: float, eop_cpu: float):
    out = []
    for link, eop, napi in ((100, 98.4, 98.4), (1000, 228.6, napi_mbps)):
        pct = 100.0 if link == 100 else 23.0
        out.append(reading_point({"throughput_mbps": eop, "line_rate_pct": pct,
                                  "cpu_utilisation_pct": eop_cpu, "irqs_per_second": 19_051.0},
                                 irq="eop", link_mbps=link))  # fmt: skip
        out.append(reading_point({"throughput_mbps": napi, "line_rate_pct": pct,
                                  "irqs_per_packet": 0.2}, irq="napi", link_mbps=link))  # fmt: skip
    return out


def test_reading_irq_rate_both_ways_and_its_arithmetic():
    exp = experiment_named("irq_rate")
    text = readings.reading_irq_rate(exp, irq_results(napi_mbps=300.0, eop_cpu=99.5))
    assert "At 100 Mb/s every strategy is at line rate" in text
    fps = 228.6e6 / 12000
    assert f"{fps:,.0f} frames/s x 12,000 bits = 228.6 Mb/s" in text
    assert "the CPU is the cap" in text
    text = readings.reading_irq_rate(exp, irq_results(napi_mbps=229.0, eop_cpu=99.5))
    assert "No strategy beats one IRQ per packet" in text and "the CPU is the cap" not in text
    text = readings.reading_irq_rate(exp, irq_results(napi_mbps=300.0, eop_cpu=60.0))
    assert "the CPU is the cap" not in text and "eop leaves the CPU 60.0% busy" in text


def burst_results(lo: float, hi: float, prefetch_effect: float):
    return [
        reading_point({"throughput_mbps": mbps + (prefetch_effect if prefetch == 8 else 0.0)},
                      cpu="ideal", burst_beats=burst, prefetch=prefetch, mem_latency_cycles=20)
        for burst, mbps in ((2, lo), (16, hi))
        for prefetch in (1, 8)
    ]  # fmt: skip


def test_reading_burst_prefetch_both_ways():
    exp = experiment_named("burst_prefetch")
    text = readings.reading_burst_prefetch(exp, burst_results(300.0, 980.0, 10.0))
    assert "Short bursts spend most of the bus time waiting" in text
    assert "under 5% of the rate" in text
    text = readings.reading_burst_prefetch(exp, burst_results(950.0, 980.0, 100.0))
    assert "Burst length changes the rate by less than 10%" in text
    assert "descriptor fetches matter as much" in text


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


def test_reading_fragments_irq_quotes_the_field_reports_figures_from_the_sweep_file():
    exp = experiment_named("fragments_irq")
    results = fragments_results(eop0=230.0, napi5=125.0, coalesce5=124.5, eop5_cpu=99.0)
    assert "the field report: 232 -> 116 Mb/s" in readings.reading_fragments_irq(exp, results)
    bare = dataclasses.replace(exp, conditions=())
    assert "field report" not in readings.reading_fragments_irq(bare, results)


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
