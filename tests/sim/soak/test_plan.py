"""The soak's plan (sim/soak/plan.py) and its host side (sim/soak/command.py) without a simulator:
the plan is a function of the seed, layouts keep their promises (hypothesis), bad options
get a sentence naming the value, and the summary, coverage and fault table add up."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from macdma.firmware import regs
from macdma.sim.cli import main
from macdma.sim.soak.command import (
    balance_problems,
    coverage_summary,
    fault_table,
    format_fault_table,
    format_report,
    parse_faults,
    soak_config,
    soak_top,
    summarise,
    wire_fault_detected,
)
from macdma.sim.soak.plan import (
    BURST_CAPS,
    FAULT_CLASSES,
    FAULT_SITES,
    IRQ_STRATEGY_NAMES,
    MAX_FRAGMENTS,
    MIN_RX_RING,
    PAGE_BYTES,
    RX_LAP_SITES,
    TX_WINDOW_BYTES,
    SoakConfig,
    crosses_page,
    frame_sizes,
    plan_segments,
    tx_layouts,
)

ROOT = Path(__file__).resolve().parents[3]


def test_the_plan_is_a_function_of_the_seed():
    config = SoakConfig(frames=2_000, seed=11)
    assert plan_segments(config) == plan_segments(SoakConfig(frames=2_000, seed=11))
    assert plan_segments(config) != plan_segments(SoakConfig(frames=2_000, seed=12))
    assert frame_sizes(11, 0, "tx", 50) == frame_sizes(11, 0, "tx", 50)
    assert frame_sizes(11, 0, "tx", 50) != frame_sizes(11, 0, "rx", 50)


def test_segments_split_the_frames_and_cycle_through_every_strategy_and_burst_cap():
    segments = plan_segments(SoakConfig(frames=4_750, seed=3))
    assert [s.tx_frames for s in segments] == [500] * 9 + [250]
    assert sum(s.rx_frames for s in segments) == 4_750
    assert {s.irq for s in segments} == set(IRQ_STRATEGY_NAMES)
    assert {s.burst_beats for s in segments[: len(BURST_CAPS)]} == set(BURST_CAPS)
    for s in segments:
        # A coalescing count always comes with a timer: the last frames must interrupt.
        assert s.coalesce_frames == 1 or s.coalesce_us > 0
        assert 64 <= s.rx_buf <= 2048


def test_with_faults_every_class_and_site_comes_up_in_turn():
    # One 200-frame segment per site: 32 sites (the `driver` class's eight included).
    sites = sum(len(sites) for sites in FAULT_SITES.values())
    assert sites == 32
    config = soak_config(200 * sites, 1, FAULT_CLASSES)
    segments = plan_segments(config)
    pairs = {(s.fault_class, s.fault_site) for s in segments}
    assert pairs == {(c, site) for c, sites in FAULT_SITES.items() for site in sites}
    for s in segments:
        assert s.tx_frames // 5 <= s.fault_at_frame <= s.tx_frames * 3 // 5
        # A bad RX buffer is used one ring lap after its post: the smallest ring.
        if s.fault_site in RX_LAP_SITES:
            assert s.rx_ring == MIN_RX_RING


@given(
    seed=st.integers(0, 2**31),
    sizes=st.lists(st.integers(60, 1514), min_size=1, max_size=20),
)
def test_tx_layouts_cover_the_frame_and_fit_their_windows(seed, sizes):
    for size, layout in zip(sizes, tx_layouts(seed, 0, sizes), strict=True):
        assert sum(layout.lengths) == size
        assert 1 <= len(layout.lengths) <= MAX_FRAGMENTS
        assert all(length >= 1 for length in layout.lengths)
        for offset, length in zip(layout.offsets, layout.lengths, strict=True):
            assert 0 <= offset and offset + length <= TX_WINDOW_BYTES


def test_layouts_include_odd_addresses_and_page_crossings():
    sizes = frame_sizes(5, 0, "tx", 400)
    fragments = [
        (offset, length)
        for layout in tx_layouts(5, 0, sizes)
        for offset, length in zip(layout.offsets, layout.lengths, strict=True)
    ]
    assert {offset % 4 for offset, _ in fragments} == {0, 1, 2, 3}
    crossing = sum(crosses_page(offset, length) for offset, length in fragments)
    assert 0.2 < crossing / len(fragments) < 0.5
    assert crosses_page(PAGE_BYTES - 1, 2) and not crosses_page(0, PAGE_BYTES)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frames": 0}, "--frames must be a whole number >= 1, got 0"),
        ({"seed": -1}, "--seed must be a whole number >= 0, got -1"),
        ({"faults": ("axi-slverr", "meteor")}, "unknown fault class meteor"),
        ({"wire": "copper"}, "--wire must be auto or one of frames, cocotbext, not 'copper'"),
    ],
)
def test_bad_configs_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SoakConfig(**kwargs)


def test_the_wire_is_resolved_per_simulator_and_picks_the_top():
    config = soak_config(1000, 5)
    assert config.wire == "auto"
    on_verilator, on_icarus = config.on("verilator"), config.on("icarus")
    assert (on_verilator.wire, soak_top(on_verilator)) == ("frames", "macdma_soc_wire")
    assert (on_icarus.wire, soak_top(on_icarus)) == ("cocotbext", "macdma_soc")
    chosen = soak_config(1000, 5, ("wire",), wire="cocotbext").on("verilator")
    assert (chosen.wire, soak_top(chosen), chosen.faults) == ("cocotbext", "macdma_soc", ("wire",))
    # The plan does not depend on the wire: the same seed replays on either.
    assert plan_segments(on_verilator) == plan_segments(on_icarus)


def test_fault_lists_parse_and_reject_unknown_classes():
    assert parse_faults("all") == FAULT_CLASSES
    assert parse_faults("wire, reset,wire") == ("wire", "reset")
    with pytest.raises(Exception, match="unknown fault class bogus: choose from axi-slverr"):
        parse_faults("bogus")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["soak", "--frames", "0"], "must be 1..1,000,000 frames, got 0"),
        (["soak", "--seed", "x"], "expected a whole number, got 'x'"),
        (["soak", "--faults", "gremlins"], "unknown fault class gremlins"),
        (["soak", "--json", "/nonexistent/dir/x.json"], "folder /nonexistent/dir does not exist"),
    ],
)
def test_cli_errors_come_before_any_simulation(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def _segment_record(index: int, problems: int = 0, **extra) -> dict:
    return {
        "kind": "segment",
        "segment": {"irq": "napi", "index": index},
        "tx_frames": 500,
        "rx_frames": 500,
        "rx_delivered": 490,
        "rx_dropped_counted": 10,
        "tx_bytes": 1000,
        "rx_bytes": 2000,
        "problem_count": problems,
        "problems": ["bad"] * problems,
        "sim_ns": 5e6,
        "tx_balance": 0,
        "rx_balance": 0,
        **extra,
    }


def test_summary_adds_the_segments_and_names_empty_bins():
    records = [
        _segment_record(0),
        _segment_record(1),
        {"kind": "summary", "coverage": {"soak.x": {"a": 3, "b": 0}, "soak.y": {"c": 1}}},
    ]
    report = summarise(SoakConfig(frames=1000, seed=4), records, 12.0)
    assert report["finished"] and report["segments_run"] == 2
    assert report["totals"]["rx_delivered"] == 980
    assert report["coverage"]["empty"] == ["soak.x[b]"]
    assert report["coverage"]["percent"] == pytest.approx(200 / 3)
    json.dumps(report)  # --json writes it as it is


def test_a_run_stopped_half_way_says_so():
    report = summarise(SoakConfig(frames=1000, seed=4), [_segment_record(0)], 1.0)
    assert not report["finished"] and report["segments_planned"] == 2
    assert coverage_summary({})["percent"] == 0.0


def test_fault_table_counts_per_class_and_site():
    faults = [
        {
            "class": "wire",
            "site": "runt",
            "detected": True,
            "recovered": True,
            "frames_lost": 0,
            "frames_dropped_counted": 3,
            "outcome": "3 RX flagged bad",
            "injected": 3,
        }
    ] * 2
    rows = fault_table(faults)
    assert rows == [
        {
            "class": "wire",
            "site": "runt",
            "injected": 6,
            "detected": 2,
            "recovered": 2,
            "frames_lost": 0,
            "frames_counted_twice": 0,
            "frames_dropped_counted": 6,
            "outcome": "3 RX flagged bad",
        }
    ]
    assert "| wire | runt | 6 | 2 | 2 | 6 | 0 | 3 RX flagged bad |" in format_fault_table(rows)


def test_a_wire_fault_is_detected_only_when_the_mac_counted_every_bad_frame():
    segment = _segment_record(
        3,
        segment={"index": 3, "irq": "eop", "fault_site": "runt"},
        rx_bad_sent=3,
        stats={"STATS_RX_FRAMES_BAD": 3, "STATS_RX_PREAMBLE_ERRORS": 0},
    )
    assert wire_fault_detected(segment)
    segment["stats"]["STATS_RX_FRAMES_BAD"] = 2
    assert not wire_fault_detected(segment)
    fault = {"kind": "fault", "class": "wire", "site": "runt", "segment": 3, "injected": 3}
    fault.update(recovered=True, frames_lost=0, frames_dropped_counted=3, outcome="flagged")
    report = summarise(SoakConfig(frames=2000, seed=1), [segment, {**fault, "detected": True}], 1)
    assert report["fault_table"][0]["detected"] == 0  # read from the counters, not the bench


def test_a_double_count_is_never_hidden_in_the_table_or_the_totals():
    """A negative balance (more frames delivered or counted than sent) prints as "counted
    twice: N", in its fault-table row and its direction's totals, and is a problem; a loss
    in the other direction is not netted against it."""
    segment = _segment_record(5, tx_balance=-1, rx_balance=2)
    fault = {"kind": "fault", "class": "axi-slverr", "site": "tx-writeback", "segment": 5}
    fault.update(injected=1, detected=True, recovered=False, frames_dropped_counted=11)
    fault.update(frames_lost=2, frames_counted_twice=1, outcome="halt tx WRITEBACK_BUS_ERROR")
    report = summarise(SoakConfig(frames=600, seed=9, faults=("axi-slverr",)), [segment, fault], 1)
    [row] = report["fault_table"]
    assert row["frames_lost"] == 2 and row["frames_counted_twice"] == 1
    assert "| 11 | 2; counted twice: 1 | halt tx" in format_fault_table(report["fault_table"])
    totals = report["totals"]
    assert (totals["tx_lost"], totals["tx_counted_twice"]) == (0, 1)
    assert (totals["rx_lost"], totals["rx_counted_twice"]) == (2, 0)
    assert balance_problems(report) == [
        "TX: counted twice: 1",
        "RX: lost silently: 2",
        "axi-slverr/tx-writeback: lost silently: 2",
        "axi-slverr/tx-writeback: counted twice: 1",
    ]
    printed = format_report(report)
    assert "counted twice: 1" in printed.splitlines()[3]  # the TX totals row
    assert "problem: axi-slverr/tx-writeback: counted twice: 1" in printed


def test_a_balanced_run_has_no_balance_problem():
    report = summarise(SoakConfig(frames=1000, seed=4), [_segment_record(0)], 1.0)
    assert balance_problems(report) == []


def test_the_summary_names_the_commit_it_ran_on():
    """Figures in the docs name the commit they were measured on: the report (and so
    --json) and the printed summary's first line carry it."""
    report = summarise(SoakConfig(frames=1000, seed=4), [_segment_record(0)], 1.0)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert report["commit"].split("-")[0] == head
    assert f"seed 4 on commit {report['commit']}:" in format_report(report).splitlines()[0]


def test_a_planted_bug_must_be_one_the_bench_knows():
    with pytest.raises(ValueError, match="plant must be one of double-count, lost-frame"):
        SoakConfig(frames=10, plant="gremlin")


def test_a_frame_delivered_twice_is_counted_twice_even_when_the_balance_is_even():
    """The bench's balance counts each RX frame delivered once (so its wait for the
    segment's frames does not end one early); a second delivery is counted twice on its
    own."""
    report = summarise(SoakConfig(frames=1000, seed=4), [_segment_record(0, rx_duplicates=1)], 1.0)
    assert report["totals"]["rx_counted_twice"] == 1
    assert balance_problems(report) == ["RX: counted twice: 1"]


def test_the_burst_caps_are_the_registers_powers_of_two():
    # the range is the register map's (issue 37: not a second list of 1..256)
    assert BURST_CAPS == tuple(2**n for n in range(9))
    assert BURST_CAPS[0] == regs.TX_BURST_BEATS_MIN and BURST_CAPS[-1] == regs.TX_BURST_BEATS_MAX
