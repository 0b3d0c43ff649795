"""Sweep files (sim/regress/sweep_file.py): the shipped sweeps parse and expand, an experiment
is the cross product of its axes with defaults and fixed fields, a point two experiments
share runs once, and a bad entry, scenario or TOML syntax is named."""

from __future__ import annotations

import pytest
from synthetic import sweep_data

from macdma.sim.regress import (
    DEFAULT_SWEEP,
    QUICK_SWEEP,
    expand,
    load_sweep,
    parse_sweep,
)
from macdma.sim.run.scenario import Scenario


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
