"""Each knob declared once (sim/run/knobs.py): the Scenario's checks, the ``macdma run``
options, the sweep-file validation and the DriverConfig all come from the declaration,
and the ranges the hardware sets are the register map's."""

from __future__ import annotations

import dataclasses

import pytest

from macdma.firmware.driver import MAX_PREFETCH, DriverConfig
from macdma.hdl.regmap import REGISTER_MAP
from macdma.sim.cli import build_parser, main, scenario_from_args
from macdma.sim.run.knobs import (
    knob,
    knobs_of,
    option_name,
    register_range,
    scenario_from_values,
)
from macdma.sim.run.scenario import Scenario
from macdma.sim.soak.plan import FAULT_CLASSES, SoakConfig, plan_segments

KNOBS = knobs_of(Scenario)


def _valid_span(key: str, name: str) -> tuple[int, int]:
    """The span of a field's valid values, without RING_SIZE's 0 ("not configured")."""
    values = [v for r in REGISTER_MAP.field(key, name).valid for v in r]
    if name == "ring_size":
        values.remove(0)
    return min(values), max(values)


@pytest.mark.parametrize(
    ("knob", "key", "name"),
    [
        ("burst_beats", "TX_BURST_BEATS", "burst_beats"),
        ("prefetch", "TX_PREFETCH", "prefetch"),
        ("tx_ring", "TX_RING_SIZE", "ring_size"),
        ("rx_ring", "RX_RING_SIZE", "ring_size"),
        ("coalesce_frames", "IRQ_TX_COALESCE", "frames"),
        ("tx_coalesce_frames", "IRQ_TX_COALESCE", "frames"),
        ("irq_min_interval_us", "IRQ_MIN_INTERVAL", "us"),
    ],
)
def test_hardware_ranges_are_the_register_maps(knob, key, name):
    declared, _ = KNOBS[knob]
    assert (declared.low, declared.high) == _valid_span(key, name)
    # both ends are accepted by the Scenario and the driver, one past them by neither
    for value in (declared.low, declared.high):
        Scenario(**{knob: value}).driver_config()
    for value in (declared.low - 1, declared.high + 1):
        with pytest.raises(ValueError, match=f"{knob} must be .*; got {value}"):
            Scenario(**{knob: value})


def test_prefetch_takes_what_the_register_accepts_not_what_the_hardware_honours():
    # PREFETCH accepts 1..16 (the DMA clamps to FEATURES.max_prefetch, a 4-bit field)
    assert register_range("TX_PREFETCH") == register_range("RX_PREFETCH") == (1, MAX_PREFETCH)
    assert Scenario(prefetch=16).driver_config().prefetch == 16
    with pytest.raises(ValueError, match="prefetch"):
        DriverConfig(prefetch=MAX_PREFETCH + 1)


def test_every_command_line_knob_is_an_option_with_the_scenarios_default():
    args = build_parser().parse_args(["run"])
    for name, (declared, default) in KNOBS.items():
        if declared.cli:
            assert getattr(args, name) == default, name
    assert scenario_from_args(args) == Scenario()


def _out_of_range(declared) -> object | None:
    if declared.choices is not None:
        return "nonsense" if declared.kind is str else 7
    if declared.high is not None:
        return declared.high + 1
    if declared.low is not None:
        return declared.low - 1
    return None


@pytest.mark.parametrize("name", [n for n, (k, _) in KNOBS.items() if k.cli and k.kind is not bool])
def test_the_command_line_and_the_scenario_say_the_same_about_a_bad_value(name, capsys):
    declared, _ = KNOBS[name]
    bad = _out_of_range(declared)
    if bad is None:  # free text (cpu, json): checked elsewhere
        assert declared.kind is str
        return
    with pytest.raises(ValueError) as scenario_error:
        Scenario(**{name: bad})
    with pytest.raises(SystemExit):
        main(["run", option_name(name), str(bad)])
    rule = str(scenario_error.value)[len(name) :]  # " must be ...; got ..."
    assert f"argument {option_name(name)}:{rule}" in capsys.readouterr().err


def test_driver_config_is_derived_from_the_declarations():
    scenario = Scenario(
        tx_ring=64, rx_ring=32, rx_buf_bytes=512, burst_beats=8, prefetch=3, frags=2,
        irq="coalesce", coalesce_frames=4, coalesce_us=20, poll_us=7, budget=16,
        sys_mhz=125.4, irq_min_interval_us=125, tx_clean_budget=5,
    )  # fmt: skip
    config = scenario.driver_config({"housekeeping_hz": 1000, "tx_clean_budget": 32}, mii=True)
    assert (config.tx_ring, config.rx_ring, config.rx_buf) == (64, 32, 512)
    assert (config.burst_beats, config.prefetch, config.max_frags) == (8, 3, 3)
    assert (config.sys_clk_mhz, config.irq_min_interval_us, config.mii) == (125, 125, True)
    assert config.tx_clean_budget == 5, "the scenario's budget wins over the CPU file's"
    assert config.housekeeping_hz == 1000, "a CPU file's setting the scenario has no say in"
    strategy = config.strategy
    assert (strategy.name, strategy.coalesce_frames, strategy.coalesce_us) == ("coalesce", 4, 20)
    assert (strategy.poll_us, strategy.budget) == (7, 16)


def test_tx_coalescing_knobs_feed_the_strategy_and_unset_leaves_tx_as_rx():
    # the timer field has no valid list: its range is the field's width
    assert KNOBS["tx_coalesce_us"][0].high == register_range("IRQ_TX_COALESCE", "timer_us")[1]
    strategy = (
        Scenario(irq="dim", tx_coalesce_frames=24, tx_coalesce_us=50).driver_config().strategy
    )
    assert (strategy.tx_coalesce_frames, strategy.tx_coalesce_us) == (24, 50)
    assert strategy.tx_moderated and strategy.tx_coalesce == (24, 50)
    unset = Scenario(coalesce_frames=4, coalesce_us=20).driver_config().strategy
    assert not unset.tx_moderated and unset.tx_coalesce == (4, 20)
    assert unset.tx_irq_mode == unset.irq_mode
    for name, value in (("tx_coalesce_frames", 8), ("tx_coalesce_us", 0)):
        with pytest.raises(ValueError, match=f"{name} {value} has no effect unless irq .*polling"):
            Scenario(irq="polling", **{name: value})


def test_tx_clean_budget_unset_keeps_the_cpu_files_and_zero_means_unlimited():
    cpu_driver = {"tx_clean_budget": 32}
    assert Scenario().driver_config(cpu_driver).tx_clean_budget == 32
    assert Scenario(tx_clean_budget=0).driver_config(cpu_driver).tx_clean_budget is None


def test_a_sweep_with_an_unknown_field_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match=r"exp 'a': unknown scenario field\(s\) burst \(the"):
        scenario_from_values(Scenario, {"burst": 4, "frames": 8}, where="exp 'a'")
    assert scenario_from_values(Scenario, {"frames": 8}).frames == 8


# -- numbers no run can use: NaN, infinities, huge and tiny values (issue 42 §8, §9) -----------

NUMERIC = [n for n, (k, _) in KNOBS.items() if k.kind in (int, float) and k.choices is None]


def _unusable(declared) -> list:
    """Values of a knob's kind that must be refused: non-finite floats, and one past each
    end of the range as the user could type it (1e23 frames)."""
    beyond = [declared.high * 10**17, declared.low - 1]
    if declared.kind is float:
        return [float("nan"), float("inf"), float("-inf"), 1e30, *map(float, beyond)]
    return [int(v) for v in beyond]


@pytest.mark.parametrize("name", NUMERIC)
def test_nan_infinity_and_huge_values_are_refused_naming_the_knob_and_its_range(name):
    declared, _ = KNOBS[name]
    for value in _unusable(declared):
        with pytest.raises(ValueError) as refused:
            Scenario(**{name: value})
        assert str(refused.value).startswith(f"{name} must be {declared.limit_text()}"), value


def test_every_number_knob_declares_both_ends_of_its_range():
    from macdma.sim.run.knobs import Knob

    for name in NUMERIC:
        declared, _ = KNOBS[name]
        assert declared.low is not None and declared.high is not None, name
    with pytest.raises(ValueError, match="needs a finite high bound"):
        Knob(int, "frames", low=2)
    with pytest.raises(ValueError, match="needs a finite low bound"):
        Knob(float, "rate", low=float("-inf"), high=5)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sys-mhz", "nan"], "argument --sys-mhz: must be 1..500 MHz; got nan"),
        (["--rate-mbps", "inf"], "argument --rate-mbps: must be 0..1000 Mb/s; got inf"),
        (
            ["--frames", "99999999999999999999999"],
            "argument --frames: must be 2..1000000 (a rate needs two frames); "
            "got 99999999999999999999999",
        ),
    ],
)
def test_the_command_line_refuses_unusable_numbers_before_simulating(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["run", *argv])
    assert stopped.value.code == 2
    assert f"macdma run: error: {message}" in capsys.readouterr().err


def test_a_sweep_file_refuses_nan_naming_the_experiment_and_the_knob():
    from macdma.sim.regress import expand, parse_sweep

    sweep = parse_sweep(
        {"experiment": [{"name": "clocks", "fixed": {"frames": 8}, "sweep": {"sys_mhz": [
            100.0, float("nan")]}}]}
    )  # fmt: skip
    with pytest.raises(
        ValueError, match=r"experiment 'clocks': sys_mhz must be 1\.\.500 MHz; got nan"
    ):
        expand(sweep, sources="test")


# -- knobs that do nothing with another's value are refused, naming both (issue 42 §13) --------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--frags", "5", "--direction", "rx"],
            "--frags 5 has no effect unless --direction is tx or both (--direction is rx)",
        ),
        (
            ["--coalesce-frames", "8", "--irq", "eop"],
            "--coalesce-frames 8 has no effect unless --irq is coalesce, napi or dim "
            "(--irq is eop)",
        ),
        (
            ["--coalesce-us", "50", "--irq", "polling"],
            "--coalesce-us 50 has no effect unless --irq is coalesce, napi or dim "
            "(--irq is polling)",
        ),
    ],
)
def test_an_option_that_does_nothing_is_refused_naming_both_options(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["run", *argv])
    assert stopped.value.code == 2
    assert f"macdma run: error: {message}" in capsys.readouterr().err


def test_the_same_options_where_they_act_are_taken():
    args = build_parser().parse_args(["run", "--frags", "5", "--direction", "tx",
                                      "--coalesce-frames", "8", "--irq", "coalesce"])  # fmt: skip
    scenario = scenario_from_args(args)
    assert (scenario.frags, scenario.coalesce_frames) == (5, 8)


def _one_experiment(fixed: dict, sweep: dict):
    from macdma.sim.regress import parse_sweep

    experiment = {"name": "e", "fixed": {"frames": 8, **fixed}, "sweep": sweep}
    return parse_sweep({"experiment": [experiment]})


def test_a_fixed_knob_acts_at_the_points_of_a_sweep_where_it_can():
    from macdma.sim.regress import expand

    sweep = _one_experiment({"coalesce_frames": 8}, {"irq": ["eop", "coalesce", "napi"]})
    frames = {p.scenario.irq: p.scenario.coalesce_frames for p in expand(sweep, "test")}
    assert frames == {"eop": 1, "coalesce": 8, "napi": 8}


@pytest.mark.parametrize(
    ("fixed", "swept", "message"),
    [
        (
            {"coalesce_frames": 8, "irq": "eop"},
            {"frame_size": [60, 1514]},
            r"experiment 'e' fixed: coalesce_frames = 8 has no effect at any point: it needs "
            r"irq to be one of coalesce, napi, dim",
        ),
        (
            {"direction": "rx"},
            {"frags": [0, 2]},
            r"experiment 'e': frags 2 has no effect unless direction is tx or both",
        ),
    ],
)
def test_a_sweep_knob_that_does_nothing_anywhere_is_refused(fixed, swept, message):
    from macdma.sim.regress import expand

    with pytest.raises(ValueError, match=message):
        expand(_one_experiment(fixed, swept), "test")


# -- one knob table for ``macdma run`` and ``macdma soak`` (issue 37) --------------------------


def _declare(monkeypatch, name: str, kind: type, declaration) -> None:
    """Scenario as if one more ``name: kind = knob(...)`` line were in its class body: the
    class extended by the field, and Scenario given the extension's field table and the
    methods dataclass generates from it (monkeypatch puts the class back)."""
    extended = dataclasses.make_dataclass(
        "Scenario", [(name, kind, declaration)], bases=(Scenario,), frozen=True
    )
    for member in ("__dataclass_fields__", "__init__", "__repr__", "__eq__", "__hash__"):
        monkeypatch.setattr(Scenario, member, getattr(extended, member))


def test_a_knob_added_once_reaches_the_driver_of_run_and_of_the_soak(monkeypatch, capsys):
    # A knob for an existing DriverConfig setting no knob feeds yet: the DMA's descriptor
    # re-check interval, its range the register's, a default the driver does not have.
    assert DriverConfig().dma_poll_us == 0 and "dma_poll_us" not in KNOBS
    low, high = register_range("TX_POLL_US")
    _declare(monkeypatch, "dma_poll_us", int, knob(
        7, int, "the DMA's descriptor re-check interval", unit="µs", low=low, high=high,
        driver="dma_poll_us",
    ))  # fmt: skip

    # macdma run: the default, the command line (its option, its bounds) and a sweep file.
    assert Scenario().driver_config().dma_poll_us == 7
    args = build_parser().parse_args(["run", "--dma-poll-us", "9"])
    assert scenario_from_args(args).driver_config().dma_poll_us == 9
    assert scenario_from_values(Scenario, {"dma_poll_us": 3}).driver_config().dma_poll_us == 3
    with pytest.raises(SystemExit):
        main(["run", "--dma-poll-us", str(high + 1)])
    assert f"argument --dma-poll-us: must be {low}..{high} µs" in capsys.readouterr().err
    # macdma soak: every segment of a run (with every fault class: the segments that shrink
    # the RX ring too) gets the knob's default, through the same path.
    for faults in ((), FAULT_CLASSES):
        for segment in plan_segments(SoakConfig(frames=4_000, seed=5, faults=faults)):
            assert segment.driver_config().dma_poll_us == 7, segment.describe()


def test_the_soaks_driver_settings_are_checked_by_the_knob_declarations():
    segment = plan_segments(SoakConfig(frames=500, seed=1))[0]
    config = segment.driver_config({"housekeeping_hz": 500})
    assert (config.tx_ring, config.rx_buf, config.burst_beats) == (
        segment.tx_ring, segment.rx_buf, segment.burst_beats,
    )  # fmt: skip
    assert config.strategy.name == segment.irq and config.sys_clk_mhz == 125
    assert config.housekeeping_hz == 500, "the CPU file's settings reach the soak as run"
    declared, _ = KNOBS["rx_buf_bytes"]
    bad = dataclasses.replace(segment, rx_buf=int(declared.high) + 1)
    with pytest.raises(ValueError, match=f"rx_buf_bytes must be {declared.limit_text()}"):
        bad.driver_config()
