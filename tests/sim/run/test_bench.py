"""``macdma bench`` (sim/run/bench.py): it runs every workload at a tiny size on a real
simulator and writes a complete record; the ratio and goal arithmetic on made-up rows.
Nothing here asserts a speed: a benchmark measures, it does not pass or fail on time."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from macdma.sim.cli import build_parser, main
from macdma.sim.run.bench import (
    LIMIT_WORKLOAD,
    LOOPBACK,
    WORKLOAD_NAMES,
    BenchRow,
    format_limit,
    format_table,
    goals,
    with_fractions_of_limit,
    with_ratios,
)


def row(sim: str, workload: str, sim_ns: float, wall_seconds: float) -> BenchRow:
    return BenchRow(sim, workload, "", 10, sim_ns, wall_seconds, 20.0, True)


def test_ratios_are_taken_against_the_loopback_of_the_same_simulator():
    rows = with_ratios(
        [
            row("verilator", LOOPBACK, 400_000, 1.0),
            row("verilator", "soc-both-ideal", 200_000, 2.0),
            row("icarus", LOOPBACK, 100_000, 1.0),
            row("icarus", "soc-both-ideal", 60_000, 1.0),
        ]
    )
    ratios = {(r.sim, r.workload): r.ratio_to_loopback for r in rows}
    assert ratios == {
        ("verilator", LOOPBACK): 1.0,
        ("verilator", "soc-both-ideal"): 0.25,
        ("icarus", LOOPBACK): 1.0,
        ("icarus", "soc-both-ideal"): 0.6,
    }
    table = format_table(rows)
    assert "0.25" in table and "0.60" in table and "20.0*" in table


def test_a_row_without_its_loopback_has_no_ratio():
    (only,) = with_ratios([row("icarus", "soc-rx-napi", 1000, 1.0)])
    assert only.ratio_to_loopback is None
    assert goals([only]) == []


def test_goals_compare_the_named_rows():
    found = goals(
        [
            row("verilator", LOOPBACK, 400_000, 1.0),
            row("verilator", "soc-both-ideal", 100_000, 1.0),
            row("verilator", "soc-tx-ideal", 100_000, 1.0),
            row("verilator", "soc-tx-microblaze", 90_000, 1.0),
        ]
    )
    verdicts = {(g["workload"], g["reference"]): (round(g["ratio"], 2), g["met"]) for g in found}
    assert verdicts == {
        ("soc-both-ideal", LOOPBACK): (0.25, False),
        ("soc-tx-microblaze", "soc-tx-ideal"): (0.9, True),
    }
    assert all(g["ratio_per_cpu_second"] is None for g in found)  # no CPU time recorded


def test_goals_also_compare_per_cpu_second():
    rows = [
        dataclasses.replace(row("icarus", LOOPBACK, 100_000, 1.0), cpu_seconds=0.5),
        dataclasses.replace(row("icarus", "soc-both-ideal", 100_000, 2.0), cpu_seconds=2.0),
    ]
    (goal,) = goals(rows)
    assert goal["ratio"] == pytest.approx(0.5)
    assert goal["ratio_per_cpu_second"] == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--frames", "3"], "--frames: must be 4..1,000,000 frames, got 3"),
        (["--frames", "many"], "expected a whole number, got 'many'"),
        (["--sim", "modelsim"], "invalid choice: 'modelsim'"),
        (["--only", "everything"], "invalid choice: 'everything'"),
    ],
)
def test_bad_options_are_named(argv, message, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["bench", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_bench_runs_every_workload_and_writes_its_record(sim, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert main(["bench", "--sim", sim, "--frames", "4", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert [r["workload"] for r in record["rows"]] == list(WORKLOAD_NAMES)
    for measured in record["rows"]:
        assert measured["sim"] == sim
        assert measured["frames"] == 4
        assert measured["sim_ns"] > 0 and measured["wall_seconds"] > 0
        assert measured["sim_ns_per_wall_second"] == pytest.approx(
            measured["sim_ns"] / measured["wall_seconds"]
        )
        assert measured["ratio_to_loopback"] > 0
        assert measured["build_seconds"] > 0
    assert len(record["git_commit"]) == 40
    assert record["host_cores"] >= 1
    assert record["cocotb"].startswith("2.")
    assert record["simulators"][sim]
    assert {g["workload"] for g in record["goals"]} == {"soc-both-ideal", "soc-tx-microblaze"}
    history = (tmp_path / "history.jsonl").read_text().splitlines()
    assert json.loads(history[-1])["rows"] == record["rows"]
    printed = capsys.readouterr().out
    assert record["table"] in printed and f"record written to {out}" in printed
    # One plain progress line per workload; the simulators' output went to the logs.
    for number, name in enumerate(WORKLOAD_NAMES, start=1):
        total = len(WORKLOAD_NAMES)
        assert re.search(rf"^\[{number}/{total}\] elapsed .* ok: {name} on {sim}: ", printed, re.M)
        assert "cocotb" in (tmp_path / "logs" / f"{sim}-{name}.log").read_text().lower()


def test_fractions_of_the_limit_are_per_cpu_second_against_the_same_simulator():
    limit = {
        "workload": LIMIT_WORKLOAD,
        "top": "macdma_soc_hostmem",
        "sim": "verilator",
        "frames": 10,
        "sim_ns": 2_000_000,
        "cpu_seconds": 1.0,
        "sim_ns_per_cpu_second": 2_000_000.0,
    }
    rows = [
        dataclasses.replace(row("verilator", LOOPBACK, 400_000, 1.0), cpu_seconds=1.0),
        dataclasses.replace(row("verilator", "soc-both-ideal", 500_000, 9.0), cpu_seconds=1.0),
        dataclasses.replace(row("icarus", "soc-both-ideal", 50_000, 1.0), cpu_seconds=1.0),
    ]
    fractions = {
        (r.sim, r.workload): r.fraction_of_limit for r in with_fractions_of_limit(rows, [limit])
    }
    # Per CPU second (500,000 of 2,000,000), not per wall second; no fraction for the
    # loopback (not the SoC) or for a simulator without a limit.
    assert fractions == {
        ("verilator", LOOPBACK): None,
        ("verilator", "soc-both-ideal"): 0.25,
        ("icarus", "soc-both-ideal"): None,
    }
    icarus_limit = {**limit, "sim": "icarus", "sim_ns_per_cpu_second": 100_000.0}
    both = with_fractions_of_limit(rows, [limit, icarus_limit])
    assert [r.fraction_of_limit for r in both] == [None, 0.25, 0.5]
    text = format_limit([limit, icarus_limit], both)
    assert "C++ Verilator harness" in text and "plain-Verilog Icarus bench" in text
    assert "2,000,000 ns/cpu s" in text
    assert re.search(r"^verilator +soc-both-ideal .* 500,000 +0\.250$", text, re.M)
    assert re.search(r"^icarus +soc-both-ideal .* 50,000 +0\.500$", text, re.M)


@pytest.mark.long_on_icarus
def test_bench_limit_prints_each_soc_workloads_fraction_of_the_harness(sim, tmp_path, capsys):
    out = tmp_path / "bench.json"
    argv = ["bench", "--sim", sim, "--only", LIMIT_WORKLOAD, "--limit", "--frames", "4"]
    assert main([*argv, "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    (limit,) = record["limits"]
    assert limit["sim"] == sim and limit["top"] == "macdma_soc_hostmem"
    assert limit["frames"] == 4
    assert limit["record"]["tx_frames"] == limit["record"]["rx_frames"] == 4
    (soc,) = [r for r in record["rows"] if r["workload"] == LIMIT_WORKLOAD]
    assert soc["fraction_of_limit"] == pytest.approx(
        soc["sim_ns_per_cpu_second"] / limit["sim_ns_per_cpu_second"]
    )
    assert 0 < soc["fraction_of_limit"]
    printed = capsys.readouterr().out
    assert record["limit_table"] in printed
    assert re.search(rf"^{sim} +{LIMIT_WORKLOAD} .* \d\.\d{{3}}$", printed, re.M)
