"""Expectations declared in sweep files and field-report conditions, on synthetic results
(no simulator): each kind passes, fails and does not apply when it should; calibration
conditions get their "within 10%" expectation and predictions none; field_reports.json
and the report's table; and every bad declaration is named (file, experiment, key)."""

from __future__ import annotations

import json

import pytest
from synthetic import synthetic_metrics

from macdma.sim import regress
from macdma.sim.regress import (
    FIELD_REPORTS_SWEEP,
    check_results,
    expand,
    field_report_rows,
    load_sweep,
    parse_sweep,
    store,
    write_field_reports_json,
    write_report,
)
from macdma.sim.regress.field_reports import CALIBRATION_TOLERANCE_PCT, field_reports_table


def sweep_with(*, expect=(), conditions=(), report=None, **experiment) -> dict:
    """A one-experiment sweep over frags x irq on the MicroBlaze."""
    table = {
        "name": "frags",
        "fixed": {"cpu": "microblaze-66", "frames": 8, "tx_ring": 16},
        "sweep": {"frags": [0, 5], "irq": ["per-desc", "eop", "napi"]},
        **experiment,
    }
    if expect:
        table["expect"] = list(expect)
    if report is not None:
        table["report"] = report
    if conditions:
        table["condition"] = list(conditions)
    return {"name": "t", "defaults": {"direction": "tx"}, "experiment": [table]}


def results_for(tmp_path, sweep, mbps_of, **kwargs) -> list[dict]:
    """Every point of ``sweep`` stored with a synthetic result at ``mbps_of(scenario)``."""
    return [
        store(
            tmp_path,
            point,
            {
                "status": "ok",
                "metrics": synthetic_metrics(point.scenario, mbps_of(point.scenario), **kwargs),
            },
            "src",
        )
        for point in expand(sweep, "src")
    ]


def rate(scenario) -> float:
    """A plausible MicroBlaze: fragments cost, napi beats per-desc, eop in between."""
    return 230.0 - 23.0 * scenario.frags + {"per-desc": 0.0, "eop": 1.0, "napi": 10.0}[scenario.irq]


def statuses(sweep, results) -> dict[str, str]:
    return {c.name: c.status for c in check_results(sweep, results)}


# -- each kind of expectation -----------------------------------------------------------------


def test_within_passes_inside_its_tolerance_and_fails_outside(tmp_path):
    def within(value, tolerance):
        return {
            "kind": "within",
            "name": "w",
            "metric": "throughput_mbps",
            "at": {"frags": 5, "irq": "napi"},
            "value": value,
            "tolerance_pct": tolerance,
        }

    for value, tolerance, expected in ((125.0, 1, "PASS"), (130.0, 4, "PASS"), (130.0, 3, "FAIL")):
        sweep = parse_sweep(sweep_with(expect=[within(value, tolerance)]))
        check = {c.name: c for c in check_results(sweep, results_for(tmp_path, sweep, rate))}["w"]
        assert check.status == expected, check
    assert "125.0 Mb/s (-3.8%)" in check.detail and "outside 3%" in check.detail


def test_order_compares_points_that_differ_only_in_its_field(tmp_path):
    order = {
        "kind": "order",
        "name": "o",
        "field": "irq",
        "greater": ["napi", "eop"],
        "than": "per-desc",
    }
    sweep = parse_sweep(sweep_with(expect=[order]))
    assert statuses(sweep, results_for(tmp_path, sweep, rate))["o"] == "PASS"

    def napi_slow_at_5(s):
        return rate(s) - (20.0 if s.irq == "napi" and s.frags == 5 else 0.0)

    check = check_results(sweep, results_for(tmp_path, sweep, napi_slow_at_5))[-1]
    assert check.status == "FAIL" and check.detail == "napi 105.0 vs per-desc 115.0"
    # Restricted to frags 0 by its at, the broken pair at frags 5 is not compared.
    sweep = parse_sweep(sweep_with(expect=[{**order, "at": {"frags": 0}}]))
    assert statuses(sweep, results_for(tmp_path, sweep, napi_slow_at_5))["o"] == "PASS"


def test_monotonic_follows_its_field_per_combination_of_the_others(tmp_path):
    expect = {
        "kind": "monotonic",
        "name": "m",
        "along": "frags",
        "direction": "decreasing",
        "tolerance_pct": 1,
    }
    sweep = parse_sweep(sweep_with(expect=[expect]))
    assert statuses(sweep, results_for(tmp_path, sweep, rate))["m"] == "PASS"
    rising = parse_sweep(sweep_with(expect=[{**expect, "direction": "increasing"}]))
    check = check_results(rising, results_for(tmp_path, rising, rate))[-1]
    assert check.status == "FAIL" and "frags 0 -> 5: 230.0 -> 115.0 (irq=per-desc)" in check.detail

    def flat(s):
        return 200.0 + 0.3 * s.frags  # rising by 0.75% from frags 0 to 5: within the 1%

    assert statuses(sweep, results_for(tmp_path, sweep, flat))["m"] == "PASS"


def test_line_rate_needs_every_direction_at_its_share_and_no_drop(tmp_path):
    data = sweep_with(
        expect=[{"kind": "line_rate", "name": "lr"}], fixed={"cpu": "ideal", "frames": 8}
    )
    data["experiment"][0]["sweep"] = {"frame_size": [60, 1514]}
    sweep = parse_sweep(data)

    def at(share):
        return lambda s: share * s.link_mbps * s.frame_size / s.wire_bytes_per_frame

    assert statuses(sweep, results_for(tmp_path, sweep, at(0.995)))["lr"] == "PASS"
    assert statuses(sweep, results_for(tmp_path, sweep, at(0.98)))["lr"] == "FAIL"
    assert statuses(sweep, results_for(tmp_path, sweep, at(1.0), dropped=1))["lr"] == "FAIL"


def test_an_expectation_without_a_finished_point_does_not_apply(tmp_path):
    sweep = parse_sweep(sweep_with(expect=[{"kind": "line_rate", "name": "lr"}]))
    failed = [
        {**r, "status": "failed", "error": "boom"} for r in results_for(tmp_path, sweep, rate)
    ]
    assert statuses(sweep, failed) == {"frames_intact": "FAIL", "lr": "N/A"}


# -- field reports ----------------------------------------------------------------------------


def frags_report(**figures) -> dict:
    """microblaze-frags with frags0/frags5 at eop, a figure where given, else a prediction."""
    conditions = [
        {
            "name": name,
            "at": {"frags": frags, "irq": "eop"},
            **({"figure": figures[name]} if name in figures else {}),
        }
        for name, frags in (("frags0", 0), ("frags5", 5))
    ]
    return sweep_with(report="microblaze-frags", conditions=conditions)


def test_a_calibration_condition_expects_its_figure_within_10_percent_a_prediction_nothing(
    tmp_path,
):
    assert CALIBRATION_TOLERANCE_PCT == 10.0
    sweep = parse_sweep(frags_report(frags0={"mbps": 232, "irqs_per_second": 19_000}))
    (experiment,) = sweep.experiments
    assert [x.name for x in experiment.expectations] == [
        "microblaze-frags.frags0.mbps",
        "microblaze-frags.frags0.irqs_per_second",
    ]
    assert [c.calibration for c in experiment.conditions] == [True, False]
    results = results_for(tmp_path, sweep, rate, irqs=1.0)  # 231 Mb/s, 19,250 IRQs/s at frags0
    assert statuses(sweep, results) == {
        "frames_intact": "PASS",
        "microblaze-frags.frags0.mbps": "PASS",
        "microblaze-frags.frags0.irqs_per_second": "PASS",
    }
    off = parse_sweep(frags_report(frags0={"mbps": 260}))  # 231 is 11% below 260
    assert statuses(off, results)["microblaze-frags.frags0.mbps"] == "FAIL"


def test_field_reports_json_has_one_object_per_condition_with_the_models_figures(tmp_path):
    sweep = parse_sweep(frags_report(frags0={"mbps": 232}))
    results = results_for(tmp_path, sweep, rate, irqs=0.5)
    rows = field_report_rows(sweep, results)
    path = tmp_path / "field_reports.json"
    write_field_reports_json(path, rows)
    written = json.loads(path.read_text())
    frame_bits = 1514 * 8  # the Scenario's default frame size
    assert written == [
        {
            "report": "microblaze-frags",
            "condition": "frags0",
            "mbps": 231.0,
            "irqs_per_second": pytest.approx(0.5 * 231.0e6 / frame_bits),
            "cpu_pct": 50.0,
        },
        {
            "report": "microblaze-frags",
            "condition": "frags5",
            "mbps": 116.0,
            "irqs_per_second": pytest.approx(0.5 * 116.0e6 / frame_bits),
            "cpu_pct": 50.0,
        },
    ]
    table = field_reports_table(rows)
    assert table[0][:3] == ["microblaze-frags", "frags0", "231.0"]
    assert table[0][-1] == "232 Mb/s (model -0.4%)" and table[1][-1] == "prediction"


def test_a_condition_whose_point_failed_is_still_listed_with_nulls(tmp_path):
    sweep = parse_sweep(frags_report())
    results = results_for(tmp_path, sweep, rate)
    results = [
        {**r, "status": "failed", "error": "boom"} if r["scenario"]["frags"] == 5 else r
        for r in results
    ]
    rows = field_report_rows(sweep, results)
    assert [row.as_json()["mbps"] for row in rows] == [231.0, None]
    assert field_reports_table(rows)[1][2] == "FAILED"
    assert field_reports_table(field_report_rows(sweep, []))[0][2] == "not run"


def test_cpu_pct_is_the_all_cores_figure_when_the_run_reports_one(tmp_path):
    sweep = parse_sweep(frags_report())
    point = expand(sweep, "src")[1]  # frags 0, eop
    metrics = synthetic_metrics(point.scenario, 200.0)
    one_core = store(tmp_path, point, {"status": "ok", "metrics": metrics}, "src")
    (row,) = [r for r in field_report_rows(sweep, [one_core]) if r.result]
    assert row.as_json()["cpu_pct"] == 50.0 and row.cpu_pct_source() == "single core"
    metrics = {**metrics, "cpu": {**metrics["cpu"], "cpu_pct": 37.5}}
    all_cores = store(tmp_path, point, {"status": "ok", "metrics": metrics}, "src")
    (row,) = [r for r in field_report_rows(sweep, [all_cores]) if r.result]
    assert row.as_json()["cpu_pct"] == 37.5 and row.cpu_pct_source() == "all cores"
    assert all_cores["summary"]["cpu_pct"] == 37.5


def test_a_line_rate_figure_is_checked_as_a_share_of_line_rate(tmp_path):
    data = sweep_with(
        report="r",
        conditions=[{"name": "link100", "figure": {"mbps": "line rate"}}],
        fixed={"cpu": "microblaze-66", "frames": 8, "link_mbps": 100, "irq": "eop"},
    )
    del data["experiment"][0]["sweep"]
    sweep = parse_sweep(data)
    full = results_for(tmp_path, sweep, lambda s: 100 * 1500 / 1524)
    assert statuses(sweep, full)["r.link100.mbps"] == "PASS"
    assert (
        "98.4 Mb/s; model at 100.0%" in field_reports_table(field_report_rows(sweep, full))[0][-1]
    )
    slow = results_for(tmp_path, sweep, lambda s: 80.0)
    assert statuses(sweep, slow)["r.link100.mbps"] == "FAIL"


def test_the_report_opens_with_the_field_reports_table(tmp_path):
    sweep = parse_sweep(frags_report(frags0={"mbps": 232}))
    results = results_for(tmp_path, sweep, rate)
    write_report(
        tmp_path / "report.md",
        sweep,
        results,
        check_results(sweep, results),
        {},
        field_reports=field_report_rows(sweep, results),
    )
    report = (tmp_path / "report.md").read_text()
    assert report.index("## Field reports") < report.index("## Assertions")
    assert "| microblaze-frags | frags0 | 231.0 |" in report and "| prediction |" in report
    assert "single core's work utilisation" in report
    assert (
        "| **PASS** | microblaze-frags frags0 (calibration): throughput_mbps within 10% of 232 Mb/s"
        in report
    )
    html = (tmp_path / "report.html").read_text()
    assert 'data-table="field_reports"' in html and "prediction" in html


def test_the_shipped_field_report_sweep_and_default_sweep_hold_microblaze_frags():
    figures = {
        "frags0": 232,
        "frags1": 192,
        "frags2": 159,
        "frags3": 141,
        "frags4": 130,
        "frags5": 116,
    }
    for path in (FIELD_REPORTS_SWEEP, regress.DEFAULT_SWEEP):
        sweep = load_sweep(path)
        assert "microblaze-frags" in sweep.reports
        conditions = {
            c.name: c
            for e in sweep.experiments
            for c in e.conditions
            if c.report == "microblaze-frags"  # the others: tests/sim/regress/test_field_reports.py
        }
        assert {k: c.figure["mbps"] for k, c in conditions.items() if k != "link100"} == figures
        assert conditions["link100"].figure == {"mbps": "line rate"}
        points = {p.key: p for p in expand(sweep, "src")}
        for condition in conditions.values():
            chosen = [
                p
                for p in points.values()
                if condition.experiment in p.experiments
                and all(getattr(p.scenario, k) == v for k, v in condition.at.items())
            ]
            (point,) = chosen
            assert point.scenario.cpu == "microblaze-66" and point.scenario.irq == "eop"
            assert point.scenario.link_mbps == (100 if condition.name == "link100" else 1000)


# -- bad declarations are named ---------------------------------------------------------------

EXPECT_ERRORS = [
    ({"kind": "close"}, r"expect 1 kind: 'close' is not one of within, order"),
    ({"kind": "within", "metric": "throughput_mbps", "value": 1}, r"needs 'tolerance_pct'"),
    (
        {"kind": "within", "metric": "speed", "value": 1, "tolerance_pct": 1},
        r"expect 1 \('frags.within'\) metric: unknown metric 'speed'",
    ),
    (
        {"kind": "within", "metric": "throughput_mbps", "value": "fast", "tolerance_pct": 1},
        r"value: must be a number, got 'fast'",
    ),
    (
        {"kind": "within", "metric": "throughput_mbps", "value": 1, "tolerance_pct": -1},
        r"tolerance_pct: must be a number >= 0, got -1",
    ),
    (
        {"kind": "order", "field": "burst_beats", "greater": "napi", "than": "eop"},
        r"field: 'burst_beats' is not a swept field",
    ),
    (
        {"kind": "order", "field": "irq", "greater": "polling", "than": "eop"},
        r"greater: 'polling' is not a swept value of irq",
    ),
    (
        {"kind": "order", "field": "irq", "greater": "napi", "than": "eop", "at": {"irq": "eop"}},
        r"must not fix the ordered field 'irq'",
    ),
    (
        {"kind": "monotonic", "along": "irq", "direction": "increasing"},
        r"must be swept over numbers",
    ),
    (
        {"kind": "monotonic", "along": "frags", "direction": "up"},
        r"direction: must be 'increasing'",
    ),
    ({"kind": "line_rate", "min_pct": 120}, r"min_pct: must be 0..100"),
    ({"kind": "line_rate", "value": 3}, r"unknown key\(s\) value for kind 'line_rate'"),
    ({"kind": "line_rate", "at": {"frags": 3}}, r"at.frags: 3 is not a swept value of frags"),
    ({"kind": "line_rate", "at": {"frames": 9}}, r"at.frames: 9 matches no point"),
    ({"kind": "line_rate", "at": {"colour": 9}}, r"at: unknown scenario field\(s\) colour"),
]


@pytest.mark.parametrize(("expect", "message"), EXPECT_ERRORS)
def test_a_bad_expectation_names_the_file_experiment_and_key(tmp_path, expect, message):
    path = tmp_path / "mine.toml"
    path.write_text(toml_of(sweep_with(expect=[expect])))
    with pytest.raises(ValueError, match=message) as error:
        load_sweep(path)
    assert str(error.value).startswith(f"{path} experiment 'frags' expect 1")


CONDITION_ERRORS = [
    (
        {"report": "r", "conditions": [{"name": "c", "at": {"frags": 0}}]},
        r"condition 'c' at: selects 3 points, not one: give a value for irq",
    ),
    (
        {
            "report": "r",
            "conditions": [{"name": "c", "at": {"frags": 0, "irq": "eop"}, "figure": {"gbps": 1}}],
        },
        r"figure: unknown key 'gbps'",
    ),
    (
        {
            "report": "r",
            "conditions": [{"name": "c", "at": {"frags": 0, "irq": "eop"}, "figure": {"mbps": -3}}],
        },
        r"figure.mbps: must be a number > 0 or 'line rate', got -3",
    ),
    (
        {
            "report": "r",
            "conditions": [
                {"name": "c", "at": {"frags": 0, "irq": "eop"}},
                {"name": "c", "at": {"frags": 5, "irq": "eop"}},
            ],
        },
        r"condition 'c': name used twice",
    ),
    ({"report": "r", "conditions": [{"name": "bad name", "at": {}}]}, r"condition 1 name"),
    ({"report": "r"}, r"report needs at least one \[\[experiment.condition\]\]"),
    ({"report": "r s", "conditions": [{"name": "c"}]}, r"report: must be letters"),
    ({"conditions": [{"name": "c"}]}, r"condition needs report ="),
    (
        {"report": "r", "mbps_metric": "cpu_pct", "conditions": [{"name": "c"}]},
        r"mbps_metric: must be one of throughput_mbps",
    ),
]


@pytest.mark.parametrize(("declaration", "message"), CONDITION_ERRORS)
def test_a_bad_condition_names_the_file_experiment_and_key(tmp_path, declaration, message):
    data = sweep_with(
        report=declaration.get("report"), conditions=declaration.get("conditions", ())
    )
    if "mbps_metric" in declaration:
        data["experiment"][0]["mbps_metric"] = declaration["mbps_metric"]
    path = tmp_path / "mine.toml"
    path.write_text(toml_of(data))
    with pytest.raises(ValueError, match=message) as error:
        load_sweep(path)
    assert f"{path} experiment 'frags'" in str(error.value)


def test_names_must_be_unique_across_the_sweep():
    data = sweep_with(expect=[{"kind": "line_rate", "name": "x"}])
    data["experiment"].append({**data["experiment"][0], "name": "again"})
    with pytest.raises(
        ValueError,
        match=r"experiment 'again' expect: name 'x' is already used by experiment 'frags'",
    ):
        parse_sweep(data)
    data = sweep_with(expect=[{"kind": "line_rate"}, {"kind": "line_rate"}])
    with pytest.raises(ValueError, match=r"'frags.line_rate' used twice: give each a name"):
        parse_sweep(data)
    data = frags_report()
    data["experiment"].append({**data["experiment"][0], "name": "again"})
    with pytest.raises(ValueError, match=r"condition 'frags0': report 'microblaze-frags' already"):
        parse_sweep(data)


def toml_of(data: dict) -> str:
    """``data`` as TOML (the few shapes these tests use: strings, numbers, lists, inline
    tables, arrays of tables one level down)."""

    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        return repr(v)

    lines = [f"{k} = {value(v)}" for k, v in data.items() if k != "experiment"]
    for table in data["experiment"]:
        lines.append("[[experiment]]")
        nested = {
            k: v
            for k, v in table.items()
            if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)
        }
        lines += [f"{k} = {value(v)}" for k, v in table.items() if k not in nested]
        for key, entries in nested.items():
            for entry in entries:
                lines.append(f"[[experiment.{key}]]")
                lines += [f"{k} = {value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def test_macdma_regress_stops_on_a_bad_declaration_naming_it(tmp_path, capsys):
    from macdma.sim.cli import main

    path = tmp_path / "mine.toml"
    bad = {"kind": "order", "field": "irq", "greater": "polling", "than": "eop"}
    path.write_text(toml_of(sweep_with(expect=[bad])))
    with pytest.raises(SystemExit) as exit_info:
        main(["regress", str(path), "--out", str(tmp_path / "out")])
    assert exit_info.value.code == 2
    message = capsys.readouterr().err
    assert f"{path} experiment 'frags' expect 1 ('frags.order') greater: 'polling'" in message
    assert not (tmp_path / "out").exists()  # stopped before running anything


def test_field_reports_are_listed_report_by_report():
    data = frags_report()
    data["experiment"][0]["condition"][1]["name"] = "frags5"
    other = {**data["experiment"][0], "name": "other", "report": "other-report"}
    other["condition"] = [{"name": "only", "at": {"frags": 0, "irq": "napi"}}]
    late = {**data["experiment"][0], "name": "late"}
    late["condition"] = [{"name": "late", "at": {"frags": 5, "irq": "napi"}}]
    data["experiment"] += [other, late]
    rows = field_report_rows(parse_sweep(data), [])
    listed = [(r.condition.report, r.condition.name) for r in rows]
    assert listed == [
        ("microblaze-frags", "frags0"),
        ("microblaze-frags", "frags5"),
        ("microblaze-frags", "late"),
        ("other-report", "only"),
    ]


# -- nothing to compare is not a pass (issue 36 §6) --------------------------------------------


def test_a_required_expectation_with_nothing_to_compare_fails_the_run(tmp_path):
    from macdma.sim.regress.command import _finish

    sweep = parse_sweep(
        sweep_with(expect=[{"kind": "within", "name": "w", "metric": "throughput_mbps",
                            "value": 5.0, "tolerance_pct": 10, "at": {"frags": 5}}])
    )  # fmt: skip
    results = [r for r in results_for(tmp_path, sweep, rate) if r["scenario"]["frags"] == 0]
    (check,) = [c for c in check_results(sweep, results) if c.name == "w"]
    assert (check.status, check.failed) == ("N/A", True)
    assert "required: it fails the run" in check.detail
    assert _finish(sweep, results, tmp_path / "out", len(results), 1.0, False) == 1


def test_an_optional_expectation_with_nothing_to_compare_is_reported_and_passes(tmp_path):
    from macdma.sim.regress.command import _finish

    sweep = parse_sweep(
        sweep_with(expect=[{"kind": "within", "name": "w", "metric": "throughput_mbps",
                            "value": 5.0, "tolerance_pct": 10, "at": {"frags": 5},
                            "optional": True}])
    )  # fmt: skip
    results = [r for r in results_for(tmp_path, sweep, rate) if r["scenario"]["frags"] == 0]
    (check,) = [c for c in check_results(sweep, results) if c.name == "w"]
    assert (check.status, check.failed) == ("N/A", False)
    assert _finish(sweep, results, tmp_path / "out", len(results), 1.0, False) == 0
    assert "N/A" in (tmp_path / "out" / "report.md").read_text()


def test_optional_must_be_true_or_false():
    with pytest.raises(
        ValueError, match=r"expect 1 \('lr'\) optional: must be true or false, got 'yes'"
    ):
        parse_sweep(sweep_with(expect=[{"kind": "line_rate", "name": "lr", "optional": "yes"}]))
