"""``macdma run`` without a simulator: option parsing, Scenario validation and the metric
arithmetic on a synthetic record (sim/scenario.py, sim/cli.py, sim/cpu.py)."""

from __future__ import annotations

import dataclasses

import pytest

from macdma.firmware.costs import CpuCosts
from macdma.sim.cli import build_parser, main, scenario_from_args
from macdma.sim.cpu import CPU_PRESETS, cpu_preset
from macdma.sim.scenario import Scenario, compute_metrics, format_summary

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
        "--poll-us", "20", "--budget", "16", "--burst", "32", "--prefetch", "8",
        "--tx-ring", "128", "--rx-ring", "64", "--rx-buf", "1536", "--cpu", "microblaze-66",
        "--sys-mhz", "125", "--link", "100", "--irq-min-interval-us", "125", "--waves",
        "--json", "out.json",
    )  # fmt: skip
    scenario = scenario_from_args(args)
    assert scenario == Scenario(
        sim="icarus", direction="tx", frame_size=1500, frames=7, frags=3, irq="coalesce",
        coalesce_frames=8, coalesce_us=50, poll_us=20, budget=16, burst=32, prefetch=8,
        tx_ring=128, rx_ring=64, rx_buf=1536, cpu="microblaze-66", sys_mhz=125.0, link=100,
        irq_min_interval_us=125, waves=True, json="out.json",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--frames", "1"], "--frames: must be >= 2, got 1"),
        (["--frame-size", "59"], "--frame-size: must be 60..1514"),
        (["--frame-size", "abc"], "expected a whole number, got 'abc'"),
        (["--frags", "17"], "--frags: must be 0..16"),
        (["--irq", "sometimes"], "invalid choice: 'sometimes'"),
        (["--cpu", "pentium"], "cpu: unknown CPU 'pentium': not a shipped CPU"),
        (["--link", "2500"], "invalid choice: 2500"),
        (["--burst", "0"], "--burst: must be 1..256 beats"),
        (["--prefetch", "16"], "--prefetch: must be 1..15"),
        (["--rx-buf", "63"], "--rx-buf: must be 64..65535 bytes"),
        (["--coalesce-frames", "256"], "--coalesce-frames: must be 1..255"),
        (["--sys-mhz", "0"], "--sys-mhz: must be 1..500 MHz"),
        (["--irq-min-interval-us", "10001"], "--irq-min-interval-us: must be 0..10000 µs"),
        (["--sim", "modelsim"], "invalid choice: 'modelsim'"),
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
        ({"frame_size": 1515}, "frame_size must be 60..1514"),
        ({"frames": 1}, "frames must be >= 2"),
        ({"frags": -1}, "frags must be 0..16"),
        ({"irq": "msi"}, "irq must be one of"),
        ({"coalesce_us": 70000}, "coalesce_us must be 0..65535"),
        ({"poll_us": 0}, "poll_us must be 1..65535"),
        ({"budget": 0}, "budget must be >= 1"),
        ({"tx_ring": 4097}, "tx_ring must be 2..4096"),
        ({"rx_ring": 1}, "rx_ring must be 2..4096"),
        ({"cpu": "z80"}, "cpu: unknown CPU 'z80': not a shipped CPU (armv7-noncoherent, ideal"),
        ({"link": 25}, "link must be one of 10, 100, 1000"),
        ({"frames": "10"}, "frames must be a whole number"),
        ({"mem_latency": 2.5}, "mem_latency must be a whole number"),
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
    assert set(CPU_PRESETS) == {"ideal", "microblaze-66", "mips-router", "armv7-noncoherent"}
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
    # a 1500-byte frame of one fragment costs ~3413 cycles (232 Mb/s at 66 MHz)
    frame = (
        costs.tx_per_packet + per_fragment + costs.tx_clean_per_descriptor
        + 1500 * costs.per_byte_cache + costs.mmio_write  # the doorbell
        + 810
    )  # fmt: skip
    assert frame == pytest.approx(3413, rel=0.02)


# -- metrics from a synthetic record ------------------------------------------------------

BYTE_PS = 8000  # 1 Gb/s


def synthetic_record(frames: int = 5, received: list[int] | None = None) -> dict:
    scenario = Scenario(direction="both", frame_size=60, frames=frames, cpu="microblaze-66")
    slot = (8 + 60 + 4 + 12) * BYTE_PS  # 84 byte times per frame at line rate
    tx_wire = [
        {"start_ps": 1_000_000 + n * slot, "end_ps": 1_000_000 + n * slot + 72 * BYTE_PS,
         "length": 64}
        for n in range(frames)
    ]  # fmt: skip
    rx_wire = [
        {"start_ps": 500_000 + n * slot, "end_ps": 500_000 + n * slot + 71 * BYTE_PS,
         "length": 64}
        for n in range(frames)
    ]  # fmt: skip
    delivered = list(range(frames)) if received is None else received
    return {
        "scenario": dataclasses.asdict(scenario),
        "tx": {
            "offered": frames,
            "wire": tx_wire,
            "xmit_ns": [w["start_ps"] / 1e3 - 400 - 100 * n for n, w in enumerate(tx_wire)],
        },
        "rx": {
            "wire": rx_wire,
            "received": [[seq, rx_wire[seq]["end_ps"] / 1e3 + 1000 + seq] for seq in delivered],
        },
        "driver": {"tx_packets": frames, "rx_packets": len(delivered), "irqs": 4,
                   "polls": 2, "queue_stops": 1, "mmio_reads": 10, "mmio_writes": 20},
        "cpu": {"mhz": 66.0, "elapsed_ns": 10_000.0,
                "busy_ns": {"tx_per_packet": 2_000.0, "mmio_bus": 500.0}, "cycles": {}},
        "counters": {"RX_DROPS": frames - len(delivered), "RX_FIFO_OVERFLOWS": 0},
        "bursts": {"tx": 3 * frames, "rx": 2 * len(delivered)},
        "sim_ns": 20_000.0,
        "wall_seconds": 2.0,
    }  # fmt: skip


def test_metrics_of_a_line_rate_record():
    m = compute_metrics(synthetic_record())
    tx, rx = m["tx"], m["rx"]
    line_fps = 1e12 / (84 * BYTE_PS)
    assert tx["frames_per_second"] == pytest.approx(line_fps)
    assert tx["mbps"] == pytest.approx(line_fps * 60 * 8 / 1e6)  # pktgen: frame bytes only
    assert tx["percent_of_line_rate"] == pytest.approx(100.0)
    assert tx["gap_bytes_min"] == tx["gap_bytes_max"] == 12
    assert (tx["frames_sent"], tx["frames_dropped"], tx["queue_stops"]) == (5, 0, 1)
    assert tx["axi_bursts_per_frame"] == 3
    # latency: xmit at start - 400 - 100 n; wire end = start + 72 byte times
    assert tx["latency"]["max_ns"] == pytest.approx(72 * 8 + 400 + 400)
    assert tx["latency"]["p50_ns"] == pytest.approx(72 * 8 + 400 + 200)
    assert rx["percent_of_line_rate"] == pytest.approx(100.0)
    assert rx["mbps"] == pytest.approx(tx["mbps"])
    assert rx["latency"]["p50_ns"] == pytest.approx(1002)
    assert rx["frames_dropped"] == 0
    assert m["irqs_per_packet"] == pytest.approx(0.4)
    assert m["mmio_reads_per_packet"] == pytest.approx(1.0)
    assert m["mmio_writes_per_packet"] == pytest.approx(2.0)
    assert m["cpu"]["utilisation"] == pytest.approx(0.25)
    assert m["cpu"]["cycles_per_packet"] == pytest.approx(2500 * 66 / 1e3 / 10)
    assert m["sim_ns_per_wall_second"] == pytest.approx(10_000)
    assert "cpu microblaze-66 @ 66 MHz: 25.0% busy" in format_summary(m)


def test_metrics_count_rx_drops_and_scale_goodput():
    m = compute_metrics(synthetic_record(frames=10, received=[0, 1, 2, 5, 6, 9]))
    rx = m["rx"]
    assert (rx["frames_received"], rx["frames_dropped"], rx["frames_dropped_hw"]) == (6, 4, 4)
    assert rx["percent_of_line_rate"] == pytest.approx(60.0)
    assert rx["offered_percent_of_line_rate"] == pytest.approx(100.0)
    assert rx["mbps"] == pytest.approx(m["tx"]["mbps"] * 0.6)
    assert rx["axi_bursts_per_frame"] == 2
