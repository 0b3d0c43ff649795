"""The SoC-sending TCP stream (traffic ``stream_tx``) on the SoC RTL, short runs: the
segments on the wire (the bench fails a run on a damaged, reordered or lost one), the ACKs
back through the RX path, the window respected, and linear segments against the driver's
software TSO."""

from __future__ import annotations

from pathlib import Path

import pytest

from macdma.sim.run.scenario import Scenario, run_scenario

# A whole-SoC scenario: minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus

FRAME_BYTES = 1000
SLOT_NS = (8 + FRAME_BYTES + 4 + 12) * 8
LINE_MBPS = FRAME_BYTES * 8 / SLOT_NS * 1e3
ACK_SLOT_NS = (8 + 60 + 4 + 12) * 8  # the far end's 60-byte ACK on the wire
#: One core whose per-skb stack work dominates, on a non-coherent DMA (tests/cpus/).
SENDER_CPU = str(Path(__file__).parents[2] / "cpus" / "tcp-sender.toml")


def _run(sim: str, **knobs) -> dict:
    values = {"traffic": "stream_tx", "frame_size": FRAME_BYTES, "frames": 40, "cpu": "ideal"}
    return run_scenario(Scenario(sim=sim, **{**values, **knobs}))


def test_the_sender_keeps_its_window_and_the_far_end_acks_every_second_segment(sim):
    runs = {w: _run(sim, window=w) for w in (2, 32)}
    for window, metrics in runs.items():
        traffic = metrics["traffic"]
        assert metrics["tx"]["frames_sent"] == 40
        assert traffic["acks"] == 20 == metrics["rx"]["frames_received"], "every second one"
        assert metrics["rx"]["frame_bytes"] == 60
        # the window in force, and never more in flight than it
        assert traffic["window_segments"] == window
        assert traffic["max_in_flight"] <= window
        assert traffic["segments_per_xmit"] == 1.0, "linear: one frame per xmit"
        assert metrics["driver"]["tso_segments"] == 0
    assert runs[2]["traffic"]["max_in_flight"] == 2, "the small window is what limits"
    small, large = (runs[w]["traffic"]["goodput_mbps"]["tx"] for w in (2, 32))
    assert large == pytest.approx(LINE_MBPS, rel=0.02)
    # Two segments per round trip: the link idles at least while the ACK that opens the
    # window crosses the wire back (plus the SoC's receive, which an ideal CPU makes short)
    round_trip_share = 2 * SLOT_NS / (2 * SLOT_NS + ACK_SLOT_NS)
    assert small < round_trip_share * large, "two segments per round trip cannot fill the link"


def test_software_tso_sends_super_segments_cut_by_the_driver(sim):
    """The same stream on a CPU whose trip down the stack per skb dominates: linear pays
    it per segment, TSO once per super-segment (the driver cutting it), so TSO sends
    faster; both keep the window and deliver every segment in order."""
    runs = {
        mode: _run(sim, cpu=SENDER_CPU, tx_segmentation=mode, window=16, frames=80)
        for mode in ("linear", "tso")
    }
    for metrics in runs.values():
        assert metrics["tx"]["frames_sent"] == 80
        assert metrics["traffic"]["acks"] == 40
        assert metrics["traffic"]["max_in_flight"] <= 16
    linear, tso = runs["linear"], runs["tso"]
    assert linear["traffic"]["xmits"] == 80 and linear["driver"]["tso_segments"] == 0
    assert tso["driver"]["tso_segments"] == 80
    assert tso["traffic"]["max_in_flight"] == 16, "super-segments fill the window"
    assert tso["traffic"]["xmits"] < 50 and tso["traffic"]["segments_per_xmit"] > 1.6
    assert tso["driver"]["tx_descriptors"] >= 2 * 80, "a header and a payload piece each"
    by_cost = {mode: runs[mode]["cpu"]["cycles_by_cost_run"] for mode in runs}
    assert (
        by_cost["tso"]["socket_send_per_packet"] < 0.6 * by_cost["linear"]["socket_send_per_packet"]
    )
    goodput = {mode: runs[mode]["traffic"]["goodput_mbps"]["tx"] for mode in runs}
    assert goodput["linear"] < 0.8 * LINE_MBPS
    assert goodput["tso"] > 1.2 * goodput["linear"]
