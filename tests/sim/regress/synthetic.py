"""Synthetic ``run_point`` results for tests of the sweep machinery (no simulator): the
fields :func:`macdma.sim.regress.summarise` reads, consistent with one another; a small
sweep's data and a point stored as a finished run would store it."""

from __future__ import annotations

import dataclasses

from macdma.sim import regress
from macdma.sim.regress import (
    point_key,
    store,
)
from macdma.sim.run.scenario import Scenario


def synthetic_metrics(scenario: Scenario, mbps: float, *, irqs=1.0, dropped=0) -> dict:
    """What run_point returns for a TX run at ``mbps`` (no simulator)."""
    fps = mbps * 1e6 / (scenario.frame_size * 8)
    slot = scenario.wire_bytes_per_frame * 8 / (scenario.link_mbps * 1e6)
    tx = {
        "frames_offered": scenario.frames,
        "frames_sent": scenario.frames - dropped,
        "frames_dropped": dropped,
        "frames_in_window": scenario.frames * 0.75,
        "frames_per_second": fps,
        "mbps": mbps,
        "mbps_ci": 0.01 * mbps,
        "percent_of_line_rate": 100 * fps * slot,
        "latency": {"p50_ns": 1000.0, "p99_ns": 2000.0, "max_ns": 2000.0},
        "axi_bursts_per_frame": 26.0,
    }
    return {
        "scenario": dataclasses.asdict(scenario),
        "sim_ns": 1e6,
        "wall_seconds": 1.0,
        "cpu": {"preset": scenario.cpu, "mhz": 66.0, "utilisation": 0.5, "cycles_per_packet": 1e3},
        "irqs_per_packet": irqs,
        "irqs_per_second": irqs * fps,
        "bus": {"read_pct": 40.0, "write_pct": 5.0},
        "window": {"frames": scenario.frames * 0.75, "ok": True},
        "driver": {"queue_stops": 0},
        "tx": tx,
    }


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


def stored_point(tmp_path, scenario: Scenario, mbps: float, experiments=("e",), **kwargs):
    point = regress.Point(point_key(scenario, "src"), scenario, list(experiments))
    result = {"status": "ok", "metrics": synthetic_metrics(scenario, mbps, **kwargs)}
    return store(tmp_path, point, result, "src")
