"""The measurement window of a stream (sim/run/scenario.py ``compute_metrics``,
``choose_window``, ``window_directions``) on synthetic records, without a simulator: a
stream is measured over its data direction, as iperf measures the receiver's goodput,
and data that goes up in batches is counted from a batch's end."""

from __future__ import annotations

import dataclasses

import pytest

from macdma.sim.run.scenario import Scenario, choose_window, compute_metrics, window_directions

BYTE_PS = 8000  # 1 Gb/s
FRAME = 1514
ACK = 60
#: One 1514-byte frame's wire slot (preamble, FCS and gap included).
SLOT_NS = (8 + FRAME + 4 + 12) * BYTE_PS / 1e3
SAMPLE_FIELDS = ["t_ns", "busy_ns", "spin_ns", "irqs", "timer_irqs", "polls", "read_beats",
                 "write_beats", "read_bytes", "write_bytes"]  # fmt: skip


def _samples(end_ns: float) -> dict:
    """The CPU 90% busy and one interrupt per 100 µs, sampled every 10 µs."""
    rows, t = [], 0.0
    while t <= end_ns + 10_000:
        rows.append([t, 0.9 * t, 0.0, t / 100_000, 0, 0, 0, 0, 0, 0])
        t += 10_000.0
    return {"fields": SAMPLE_FIELDS, "rows": rows}


def gro_stream_record(batches: list[tuple[float, int]]) -> dict:
    """A stream into the SoC with GRO: each (time ns, segments) batch reaches the
    application at once (its segments 100 ns apart) and is acknowledged by one ACK 1 µs
    later; the segments arrived on the wire at line rate from t = 0."""
    frames = sum(n for _, n in batches)
    scenario = Scenario(traffic="stream", direction="both", frame_size=FRAME, frames=frames,
                        window=511, gro=True, cpu="imx6sx")  # fmt: skip
    received, acks, seq = [], [], 0
    for at, count in batches:
        for i in range(count):
            received.append([seq, at + 100.0 * i])
            seq += 1
        acks.append(at + 100.0 * count + 1000.0)
    slot_ps = SLOT_NS * 1e3
    end_ns = acks[-1] + 10_000
    return {
        "scenario": dataclasses.asdict(scenario),
        "tx": {
            "offered": len(acks),
            "frame_bytes": ACK,
            "wire": [
                {"start_ps": t * 1e3, "end_ps": t * 1e3 + 72 * BYTE_PS, "length": 64} for t in acks
            ],  # fmt: skip
            "xmit_ns": [t - 400 for t in acks],
        },
        "rx": {
            "frame_bytes": FRAME,
            "wire": [
                {
                    "start_ps": n * slot_ps,
                    "end_ps": n * slot_ps + 1526 * BYTE_PS,
                    "length": FRAME + 4,
                }
                for n in range(frames)
            ],  # fmt: skip
            "received": received,
        },
        "driver": {"tx_packets": len(acks), "rx_packets": frames, "irqs": 10, "polls": 10},
        "cpu": {"mhz": 1000.0, "cores": 1, "cycles": {}},
        "counters": {},
        "bursts": {},
        "samples": _samples(end_ns),
        "periodic_ns": [1_000_000.0],  # the 1 ms coalescing timer
        "sim_ns": end_ns,
        "wall_seconds": 1.0,
    }


def test_a_gro_stream_is_measured_over_its_data_not_between_its_last_acks():
    """fec-pagepool's shape: 2,000 segments the CPU takes 19 µs each, handed up in GRO
    batches of 32, one ACK per batch (63 ACKs). The window must hold most of the data
    after the warm-up and give the CPU's rate, which is below the line's. (Chosen over
    both directions, the window fell between the last two ACKs and held one batch going
    up at once: 353,199 Mb/s on the real run.)"""
    per_segment_ns = 19_000.0
    batches, done = [], 0
    while done < 2000:
        count = min(32, 2000 - done)
        done += count
        batches.append((done * per_segment_ns, count))
    metrics = compute_metrics(gro_stream_record(batches))
    rx, window = metrics["rx"], metrics["window"]
    assert len(metrics["tx"]["wire"]) == 63
    assert rx["percent_of_line_rate"] <= 100.0
    assert rx["frames_in_window"] >= 0.7 * 2000
    assert window["frames"] == rx["frames_in_window"]  # the ACKs do not choose it
    assert rx["frames_per_second"] == pytest.approx(1e9 / per_segment_ns, rel=0.01)
    assert metrics["cpu"]["cpu_pct"] == pytest.approx(90.0, rel=0.01)
    assert metrics["irqs_per_second"] == pytest.approx(10_000.0, rel=0.01)


def test_data_going_up_in_long_batches_is_counted_from_a_batch_end():
    """A single core starved by its softirq hands the application a window's worth of
    segments (511) every 10 ms: the rate is 511 per 10 ms, not the count from a window
    starting inside a batch (whose frames were received before it), and the 1 ms
    coalescing timer, shorter than the pauses, does not cut the window."""
    batches = [(10_000_000.0 * (k + 1), 511) for k in range(4)]
    metrics = compute_metrics(gro_stream_record(batches))
    rx, window = metrics["rx"], metrics["window"]
    assert window["period_ns"] is None
    assert window["start_ns"] == pytest.approx(20_000_000.0 + 510 * 100.0)  # the warm-up's batch
    assert window["end_ns"] == pytest.approx(40_000_000.0 + 510 * 100.0)
    assert len(window["batches"]) == 2  # one per batch of data between two pauses
    assert rx["frames_per_second"] == pytest.approx(511 / 10e-3, rel=0.01)
    assert rx["mbps_ci"] < 0.05 * rx["mbps"]


def test_events_closer_than_half_a_slot_are_one_batch():
    """Events 10 µs apart came off the wire one by one; five 1 ns apart went up together."""
    times = [10_000.0 * n for n in range(10)] + [200_000.0 + n for n in range(5)]
    times += [300_000.0 + 10_000.0 * n for n in range(10)]
    window = choose_window([times], 24, [], batch_gap_ns=SLOT_NS / 2)
    assert window["start_ns"] == times[6]  # the warm-up's end, in a steady run
    window = choose_window([times], 40, [], batch_gap_ns=SLOT_NS / 2)
    assert window["start_ns"] == 200_004.0  # inside the batch: moved to its last event
    assert choose_window([times], 40, [])["start_ns"] == 200_000.0  # no batches: as before


@pytest.mark.parametrize(
    ("traffic", "chosen"),
    [
        ("stream", ["rx"]),
        ("stream_tx", ["tx"]),
        ("forward", ["tx", "rx"]),
        ("pktgen", ["tx", "rx"]),
    ],
)
def test_the_window_is_chosen_over_the_data_directions(traffic, chosen):
    scenario = Scenario(traffic=traffic, direction="both", frame_size=FRAME, frames=100)
    events = {"tx": [0.0, 1.0], "rx": [0.0, 1.0]}
    assert window_directions(scenario, events) == chosen
