"""Synthetic raw records of a run (samples and frames at line rate, with chosen drops), for the
arithmetic of scenario metrics without a simulator."""

from __future__ import annotations

import dataclasses

from macdma.sim.run.scenario import Scenario

BYTE_PS = 8000  # 1 Gb/s
SLOT_PS = (8 + 60 + 4 + 12) * BYTE_PS  # 84 byte times per 60-byte frame at line rate
SAMPLE_FIELDS = ["t_ns", "busy_ns", "spin_ns", "irqs", "timer_irqs", "polls", "read_beats",
                 "write_beats", "read_bytes", "write_bytes"]  # fmt: skip


def linear_samples(end_ns: float, *, busy=0.25, spin=0.05, irqs_per_us=0.5, beats_per_ns=0.3):
    """Counters growing at constant rates, sampled every 100 ns from 0 to ``end_ns``."""
    rows = []
    t = 0.0
    while t <= end_ns + 100:
        rows.append([t, busy * t, spin * t, irqs_per_us * t / 1e3, 0, 0,
                     beats_per_ns * t, 0.1 * t, 8 * beats_per_ns * t, 0.8 * t])  # fmt: skip
        t += 100.0
    return {"fields": SAMPLE_FIELDS, "rows": rows}


def synthetic_record(frames: int = 40, received: list[int] | None = None, every: int = 1):
    """Both directions at line rate; RX delivers ``received`` (default all), frame ``seq``
    at its wire end + 1 us, or every ``every`` slots when given."""
    scenario = Scenario(direction="both", frame_size=60, frames=frames, cpu="microblaze-66")
    tx_wire = [
        {"start_ps": 1_000_000 + n * SLOT_PS, "end_ps": 1_000_000 + n * SLOT_PS + 72 * BYTE_PS,
         "length": 64}
        for n in range(frames)
    ]  # fmt: skip
    rx_wire = [
        {"start_ps": 500_000 + n * SLOT_PS, "end_ps": 500_000 + n * SLOT_PS + 71 * BYTE_PS,
         "length": 64}
        for n in range(frames)
    ]  # fmt: skip
    delivered = list(range(0, frames, every)) if received is None else received
    end_ns = (1_000_000 + frames * every * SLOT_PS) / 1e3 + 2000
    return {
        "scenario": dataclasses.asdict(scenario),
        "tx": {
            "offered": frames,
            "wire": tx_wire,
            "xmit_ns": [w["start_ps"] / 1e3 - 400 for w in tx_wire],
        },
        "rx": {
            "wire": rx_wire,
            "received": [
                [seq, (500_000 + n * every * SLOT_PS + 71 * BYTE_PS) / 1e3 + 1000]
                for n, seq in enumerate(delivered)
            ],
        },
        "driver": {"tx_packets": frames, "rx_packets": len(delivered), "irqs": 4,
                   "polls": 2, "queue_stops": 1, "mmio_reads": 10, "mmio_writes": 20},
        "cpu": {"mhz": 66.0, "elapsed_ns": end_ns, "busy_ns": {}, "cycles": {}},
        "counters": {"RX_DROPS": frames - len(delivered), "RX_FIFO_OVERFLOWS": 0},
        "bursts": {"tx": 3 * frames, "rx": 2 * len(delivered)},
        "samples": linear_samples(end_ns),
        "periodic_ns": [],
        "sim_ns": 20_000.0,
        "wall_seconds": 2.0,
    }  # fmt: skip
