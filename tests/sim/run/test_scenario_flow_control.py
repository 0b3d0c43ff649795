"""802.3x flow control through ``macdma run``'s machinery on the SoC RTL, on each
simulator: the ARMv7 receiving 256-byte frames offered at line rate takes about half of
them, so without flow control frames are dropped, and with it the MAC pauses the far end
(sim/benches/pausing_peer.py) and nothing is lost. The bench itself fails a run that
damages, reorders or silently loses a frame."""

from __future__ import annotations

import pytest

from macdma.sim.run.scenario import Scenario, run_scenario

# A whole-SoC scenario: minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus

FRAMES = 128


def overload(sim: str, flow_control: str, direction: str = "rx") -> dict:
    return run_scenario(
        Scenario(
            sim=sim,
            cpu="armv7-noncoherent",
            direction=direction,
            frame_size=256,
            frames=FRAMES,
            rx_ring=32,
            irq="napi",
            flow_control=flow_control,
        )
    )


def test_rx_overload_pauses_the_far_end_instead_of_dropping(sim):
    off = overload(sim, "off")
    assert off["rx"]["frames_dropped_hw"] > 0, "the overload did not overload"
    assert off["flow_control"]["pause_frames_sent"] == 0

    on = overload(sim, "on")
    rx, flow = on["rx"], on["flow_control"]
    assert rx["frames_received"] == FRAMES
    assert rx["frames_dropped"] == rx["frames_dropped_hw"] == rx["frames_errored"] == 0
    assert flow["xoff_sent"] >= flow["xon_sent"] >= 1, flow
    # every PAUSE the MAC counted reached the far end, and held it
    assert flow["pause_frames_seen"] == flow["pause_frames_sent"]
    assert flow["partner_paused_pct"] > 0 and flow["partner_stalled_us"] > 0, flow
    assert rx["offered_percent_of_line_rate"] < 90, "the far end kept sending at line rate"


def test_pause_frames_share_the_tx_wire_with_the_scenarios_frames(sim):
    # both ways: the SoC's PAUSE frames go out between its own TX frames, which must all
    # reach the far end intact and in order (the bench checks each one)
    m = overload(sim, "on", direction="both")
    assert m["tx"]["frames_sent"] == FRAMES
    assert m["rx"]["frames_received"] == FRAMES and m["rx"]["frames_dropped"] == 0
    assert m["flow_control"]["pause_frames_sent"] >= 2
