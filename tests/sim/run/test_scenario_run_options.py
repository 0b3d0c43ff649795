"""``macdma run`` without a simulator: option parsing, Scenario validation and the CPU
presets (sim/cli.py, sim/run/knobs.py, sim/run/scenario.py, sim/model/cpu.py)."""

from __future__ import annotations

import dataclasses

import pytest

from macdma.firmware.costs import CpuCosts
from macdma.sim.cli import build_parser, main, scenario_from_args
from macdma.sim.model.cpu import CPU_PRESETS, cpu_preset
from macdma.sim.model.cpus import load_cpu
from macdma.sim.run.scenario import Scenario

# -- options ------------------------------------------------------------------------------


def parse(*argv: str):
    return build_parser().parse_args(["run", *argv])


def test_defaults_make_a_valid_scenario():
    scenario = scenario_from_args(parse())
    assert scenario == Scenario()


def test_every_option_reaches_the_scenario():
    args = parse(
        "--sim", "icarus", "--direction", "tx", "--frame-size", "1500", "--frames", "7",
        "--frags", "3", "--irq", "coalesce", "--coalesce-frames", "8", "--coalesce-us", "50",
        "--poll-us", "20", "--budget", "16", "--burst-beats", "32", "--prefetch", "8",
        "--tx-ring", "128", "--rx-ring", "64", "--rx-buf-bytes", "1536", "--cpu", "microblaze-66",
        "--sys-mhz", "125", "--link-mbps", "100", "--irq-min-interval-us", "125", "--waves",
        "--json", "out.json",
    )  # fmt: skip
    scenario = scenario_from_args(args)
    assert scenario == Scenario(
        sim="icarus", direction="tx", frame_size=1500, frames=7, frags=3, irq="coalesce",
        coalesce_frames=8, coalesce_us=50, poll_us=20, budget=16, burst_beats=32, prefetch=8,
        tx_ring=128, rx_ring=64, rx_buf_bytes=1536, cpu="microblaze-66", sys_mhz=125.0,
        link_mbps=100,
        irq_min_interval_us=125, waves=True, json="out.json",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--frames", "1"], "--frames: must be 2..1000000 (a rate needs two frames); got 1"),
        (["--frame-size", "59"], "--frame-size: must be 60..9216"),
        (["--frame-size", "abc"], "expected a whole number, got 'abc'"),
        (["--frags", "17"], "--frags: must be 0..16"),
        (["--irq", "sometimes"], "--irq: must be one of per-desc, eop, coalesce, polling, napi"),
        (["--cpu", "pentium"], "cpu: unknown CPU 'pentium': not a shipped CPU"),
        (["--link-mbps", "2500"], "--link-mbps: must be one of 10, 100, 1000; got 2500"),
        (["--burst-beats", "0"], "--burst-beats: must be 1..256 beats"),
        (["--prefetch", "17"], "--prefetch: must be 1..16 descriptors; got 17"),
        (["--prefetch", "0"], "--prefetch: must be 1..16 descriptors; got 0"),
        (["--rx-buf-bytes", "63"], "--rx-buf-bytes: must be 64..65535 bytes"),
        (["--coalesce-frames", "256"], "--coalesce-frames: must be 1..255"),
        (["--sys-mhz", "0"], "--sys-mhz: must be 1..500 MHz"),
        (["--irq-min-interval-us", "10001"], "--irq-min-interval-us: must be 0..10000 µs"),
        (["--sim", "modelsim"], "--sim: must be one of icarus, verilator; got 'modelsim'"),
        (["--sys-mhz", "fast"], "--sys-mhz: expected a number, got 'fast'"),
        (["--tx-clean-budget", "-1"], "--tx-clean-budget: must be 0..4096 packets; got -1"),
        (["--tx-ring", "4", "--frags", "4"], "tx_ring 4 cannot hold one frame of 5 fragments"),
        (["--frame-size", "60", "--frags", "16", "--tx-ring", "8"], "tx_ring 8 cannot hold"),
    ],
)
def test_bad_options_exit_non_zero_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", *argv])
    assert exit_info.value.code != 0
    assert message in capsys.readouterr().err


def test_demo_options_still_parse():
    args = build_parser().parse_args(["demo", "--sim", "icarus", "--frames", "4"])
    assert (args.command, args.sim, args.frames) == ("demo", "icarus", 4)


# -- Scenario -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sim": "xsim"}, "sim must be one of icarus, verilator; got 'xsim'"),
        ({"direction": "up"}, "direction must be one of tx, rx, both"),
        ({"frame_size": 9217}, "frame_size must be 60..9216"),
        ({"frames": 1}, "frames must be 2..1000000"),
        ({"frags": -1}, "frags must be 0..16"),
        ({"irq": "msi"}, "irq must be one of"),
        ({"coalesce_us": 70000}, "coalesce_us must be 0..65535"),
        ({"poll_us": 0}, "poll_us must be 1..65535"),
        ({"budget": 0}, "budget must be 1..4096"),
        ({"tx_ring": 4097}, "tx_ring must be 2..4096"),
        ({"rx_ring": 1}, "rx_ring must be 2..4096"),
        ({"cpu": "z80"}, "cpu: unknown CPU 'z80': not a shipped CPU (armv7-noncoherent, ideal"),
        ({"link_mbps": 25}, "link_mbps must be one of 10, 100, 1000"),
        ({"frames": "10"}, "frames must be a whole number"),
        ({"mem_latency_cycles": 2.5}, "mem_latency_cycles must be a whole number"),
        ({"sys_mhz": "fast"}, "sys_mhz must be a number"),
        ({"irq_min_interval_us": 10001}, "irq_min_interval_us must be 0..10000 µs"),
    ],
)
def test_scenario_rejects_bad_values(change, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Scenario(**change)


def test_fragments_share_the_frame_equally():
    assert Scenario(frame_size=1500, frags=0).fragment_sizes == [1500]
    assert Scenario(frame_size=1500, frags=3).fragment_sizes == [375] * 4
    sizes = Scenario(frame_size=1514, frags=5).fragment_sizes
    assert sum(sizes) == 1514 and max(sizes) - min(sizes) <= 1 and len(sizes) == 6


def test_scenario_json_round_trip_and_unknown_fields():
    scenario = Scenario(direction="rx", cpu="mips-router", irq="napi", budget=8)
    assert Scenario.from_json(scenario.to_json()) == scenario
    with pytest.raises(ValueError, match="unknown scenario field"):
        Scenario.from_json('{"frames": 4, "colour": "red"}')


# -- CPU presets --------------------------------------------------------------------------


def test_presets_are_cost_tables_with_their_clock():
    assert {"ideal", "microblaze-66", "mips-router", "armv7-noncoherent"} <= set(CPU_PRESETS)
    for name, spec in CPU_PRESETS.items():
        assert isinstance(spec.costs, CpuCosts) and cpu_preset(name) == (spec.clock_mhz, spec.costs)
    assert all(value == 0 for value in dataclasses.astuple(cpu_preset("ideal")[1]))
    with pytest.raises(ValueError, match="unknown CPU 'vax'"):
        cpu_preset("vax")


def test_microblaze_preset_matches_the_field_report_arithmetic():
    mhz, costs = cpu_preset("microblaze-66")
    assert mhz == 66
    # one TX-done interrupt: entry/exit + status read + ack ~ 810 cycles
    assert costs.irq_entry_exit + costs.mmio_read + costs.mmio_write == pytest.approx(810)
    # each extra fragment: map + descriptor + clean ~ 683 cycles
    per_fragment = costs.tx_per_fragment_map + costs.tx_per_descriptor
    assert per_fragment + costs.tx_clean_per_descriptor == pytest.approx(683)
    # a 1500-byte frame of one fragment costs ~3413 cycles (232 Mb/s at 66 MHz); its map
    # cleans the 47 lines it spans (a 64-byte aligned buffer)
    clean_1500 = load_cpu("microblaze-66").caches.maintenance_cycles("clean", 0, 1500)
    assert clean_1500 == 47 * 8
    frame = (
        costs.tx_per_packet + per_fragment + costs.tx_clean_per_descriptor
        + clean_1500 + costs.mmio_write  # the doorbell
        + 810
    )  # fmt: skip
    # The rest of the 3413 is memory traffic, whose time the memory system gives: the
    # clean's write-back of the 47 lines and the uncached descriptor accesses.
    assert 0 < 3413 - frame < 400


def test_the_core_and_lock_options_reach_the_scenario():
    scenario = scenario_from_args(
        parse("--irq", "eop", "--rx-per-irq", "1", "--tx-clean-lock", "queue", "--linearize")
    )
    assert (scenario.rx_per_irq, scenario.tx_clean_lock, scenario.linearize) == (1, "queue", True)
    assert scenario_from_args(parse("--irq", "dim")).irq == "dim"
    with pytest.raises(
        ValueError, match="--rx-per-irq 1 has no effect unless --irq is per-desc, eop or coalesce"
    ):
        scenario_from_args(parse("--irq", "napi", "--rx-per-irq", "1"))
    with pytest.raises(ValueError, match=r"app_core must be 0\.\.0"):
        scenario_from_args(parse("--app-core", "1"))
