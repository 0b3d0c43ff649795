"""Jumbo frames through ``macdma run``'s machinery: the driver model on the SoC RTL with an
ideal CPU holds full-duplex line rate at 9,216-byte frames, RX chained in 1,536-byte
buffers (issue 15 §3)."""

from __future__ import annotations

import pytest

from macdma.hdl.mac.frame import MAX_JUMBO_FRAME_BYTES
from macdma.sim.run.scenario import Scenario, run_scenario

# A whole-SoC scenario: minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus

JUMBO_FRAMES = 30  # the measurement window wants >= 20 per direction


def test_ideal_cpu_holds_line_rate_with_jumbo_frames(sim):
    metrics = run_scenario(
        Scenario(
            sim=sim,
            direction="both",
            frame_size=MAX_JUMBO_FRAME_BYTES,
            frames=JUMBO_FRAMES,
            rx_buf_bytes=1536,
            irq="polling",
            poll_us=2,
            cpu="ideal",
        )
    )
    tx, rx = metrics["tx"], metrics["rx"]
    assert metrics["window"]["ok"], metrics["window"]["reason"]
    assert tx["frames_sent"] == rx["frames_received"] == JUMBO_FRAMES
    assert tx["gap_bytes_min"] == tx["gap_bytes_max"] == 12, "every TX gap is the IFG"
    assert tx["percent_of_line_rate"] == pytest.approx(100.0, abs=0.01)
    # RX goodput comes from delivery times, not wire stamps: a 9,216-byte frame is
    # delivered when the poll finds its sixth (EOP) buffer written back, so the edges of
    # the window move by a poll and a few write-backs; measured 100.6% on Verilator.
    assert rx["percent_of_line_rate"] == pytest.approx(100.0, abs=1.0)
    assert rx["frames_dropped"] == rx["frames_dropped_hw"] == rx["frames_errored"] == 0
