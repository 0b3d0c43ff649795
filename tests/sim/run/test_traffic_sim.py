"""The traffic models on the SoC RTL, one short run each (docs/traffic.md). The bench
fails a run on a damaged, reordered or silently lost frame; these check each model's
own behaviour on top."""

from __future__ import annotations

import pytest

from macdma.sim.run.scenario import Scenario, run_scenario

# A whole-SoC scenario: minutes on Icarus, so its Icarus run is a long run (make test-all).
pytestmark = pytest.mark.long_on_icarus

FRAME_BYTES = 1000
#: One 1000-byte frame's slot at 1 Gb/s: preamble 8 + frame + FCS 4 + gap 12 bytes, in ns.
SLOT_NS = (8 + FRAME_BYTES + 4 + 12) * 8
#: Line rate in frame bytes (FCS excluded), as goodput counts it.
LINE_MBPS = FRAME_BYTES * 8 / SLOT_NS * 1e3


def _run(sim: str, **knobs) -> dict:
    values = {"frame_size": FRAME_BYTES, "frames": 40, "cpu": "ideal", **knobs}
    return run_scenario(Scenario(sim=sim, **values))


def test_udp_send_is_paced_at_the_offered_rate(sim):
    metrics = _run(sim, traffic="udp", direction="tx", rate_mbps=300)
    assert metrics["window"]["ok"], metrics["window"]["reason"]
    assert metrics["traffic"]["goodput_mbps"]["tx"] == pytest.approx(300, rel=0.01)
    assert metrics["tx"]["frames_sent"] == 40


def test_udp_receive_counts_what_the_socket_cannot_hold(sim):
    # 64 KiB RX buffers: a 212,992-byte socket holds 3 packets of that truesize; the
    # MicroBlaze's NAPI poll hands them over faster than its reader takes them
    metrics = _run(
        sim, traffic="udp", direction="rx", cpu="microblaze-66", rx_buf_bytes=65535, rx_ring=32
    )
    traffic, rx = metrics["traffic"], metrics["rx"]
    assert traffic["socket_packets"] == 3
    dropped = traffic["drops"].get("socket_backlog", 0)
    assert dropped > 0
    assert rx["frames_received"] + dropped + rx["frames_dropped_hw"] == rx["frames_offered"]
    # offered at line rate, read at what the reader's CPU share allows
    assert traffic["goodput_mbps"]["rx"] < 0.5 * LINE_MBPS


def test_forwarding_sends_out_what_came_in_and_a_slow_router_forwards_less(sim):
    ideal = _run(sim, traffic="forward")
    assert ideal["tx"]["frames_sent"] == ideal["rx"]["frames_received"] == 40
    assert ideal["tx"]["percent_of_line_rate"] == pytest.approx(100, abs=1)
    router = _run(sim, traffic="forward", cpu="mips-router")
    forwarded = router["tx"]["frames_sent"]
    assert forwarded == router["rx"]["frames_received"] - router["traffic"]["drops"].get("qdisc", 0)
    assert router["traffic"]["goodput_mbps"]["forwarded"] < 0.9 * ideal["tx"]["mbps"]


def test_forwarded_acks_are_routed_back_and_cost_the_router_their_work(sim):
    """TCP through a router: every second data frame out brings an ACK back in, which the
    router routes out again; the rates stay the data frames', and the ACKs' work slows a
    CPU-bound router."""
    knobs = {"traffic": "forward", "cpu": "mips-router", "window": 4, "frames": 40}
    both = _run(sim, forward_acks=True, **knobs)
    assert both["traffic"]["acks"] == {"sent": 20, "routed": 20, "back": 20}
    assert both["tx"]["frames_sent"] == both["rx"]["frames_received"] == 40
    routed = both["cpu"]["cycles_by_cost_run"]["forward_per_packet"]
    assert routed == 60 * 4000.0  # 40 data frames + 20 ACKs
    one_way = _run(sim, **knobs)
    assert "acks" not in one_way["traffic"]
    forwarded = (run["traffic"]["goodput_mbps"]["forwarded"] for run in (both, one_way))
    assert next(forwarded) < 0.9 * next(forwarded)


def test_request_response_is_one_frame_each_way_at_a_time(sim):
    metrics = _run(sim, traffic="rr")
    traffic = metrics["traffic"]
    trip = traffic["round_trip"]
    # a request and a response on the wire one after the other, plus the DMA and CPU
    assert trip["p50_ns"] > 2 * SLOT_NS
    assert trip["p99_ns"] >= trip["p50_ns"]
    # one transaction in flight: the rate is one over the round trip
    assert traffic["transactions_per_second"] == pytest.approx(1e9 / trip["p50_ns"], rel=0.05)
    assert metrics["tx"]["frames_sent"] == metrics["rx"]["frames_received"] == 40


def test_a_stream_with_a_small_window_waits_for_acks(sim):
    runs = {w: _run(sim, traffic="stream", window=w, frames=80) for w in (2, 32)}
    for metrics in runs.values():
        assert metrics["window"]["ok"], metrics["window"]["reason"]
        assert metrics["tx"]["frames_sent"] == 40, "one ACK per second segment"
        assert metrics["tx"]["frame_bytes"] == 60
    assert [runs[w]["traffic"]["window_segments"] for w in (2, 32)] == [2, 32]
    small, large = (runs[w]["traffic"]["goodput_mbps"]["rx"] for w in (2, 32))
    assert large == pytest.approx(LINE_MBPS, rel=0.02)
    assert small < 0.95 * large
