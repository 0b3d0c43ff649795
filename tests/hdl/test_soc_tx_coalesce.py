"""TX interrupt moderation apart from RX (``tx_coalesce_frames`` / ``tx_coalesce_us``) on
the SoC RTL: the driver programs IRQ_TX_COALESCE and IRQ_MODE tx_mode COALESCE, and the
hardware's TX done then interrupts per batch instead of per frame."""

from __future__ import annotations

import pytest

from macdma.sim.run.scenario import Scenario, run_scenario

# A whole-SoC scenario: minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus

FRAMES = 64


def _tx_run(sim: str, **moderation) -> dict:
    """pktgen TX of FRAMES 1514-byte frames, NAPI, an ideal CPU: every interrupt is TX's."""
    return run_scenario(
        Scenario(
            sim=sim,
            direction="tx",
            frame_size=1514,
            frames=FRAMES,
            irq="napi",
            cpu="ideal",
            **moderation,
        )  # fmt: skip
    )


def test_tx_interrupts_drop_with_tx_coalescing_and_no_frame_is_lost(sim):
    per_frame = _tx_run(sim)
    by_count = _tx_run(sim, tx_coalesce_frames=16)
    by_timer = _tx_run(sim, tx_coalesce_frames=255, tx_coalesce_us=60)
    for metrics in (per_frame, by_count, by_timer):
        assert metrics["tx"]["frames_sent"] == FRAMES
    # NAPI at line rate reaps more than one frame per poll now and then; but each
    # interrupt follows a TX done, and without moderation every frame raises one.
    assert per_frame["irqs"] >= FRAMES // 2
    # 16 frames per TX done (a timer-less tail would strand frames: the last 16 complete
    # the batch exactly)
    assert by_count["irqs"] <= FRAMES // 16 + 1
    # a frame every 12.3 µs at 1 Gb/s: the 60 µs timer, started by a batch's first frame,
    # covers about five
    frame_us = Scenario().wire_bytes_per_frame * Scenario().byte_time_ns / 1e3
    assert by_timer["irqs"] <= FRAMES * frame_us / 60 + 2
    assert by_timer["irqs"] > FRAMES // 16 + 1, "the timer, not the 255-frame count, fires"


def test_an_idle_timer_never_fires_while_completions_come_faster_than_it(sim):
    """coalesce_timer "last" (IRQ_TX_COALESCE.timer_restart): a TX completion every
    ~12.3 µs keeps restarting the 60 µs timer, so with a 255-frame count the stream raises
    no interrupt at all until it ends; then exactly one, 60 µs after the last completion
    (the 256-descriptor ring holds all FRAMES, so the queue never waits for a clean)."""
    idle = _tx_run(sim, tx_coalesce_frames=255, tx_coalesce_us=60, coalesce_timer="last")
    assert idle["tx"]["frames_sent"] == FRAMES
    assert idle["irqs"] == 1
