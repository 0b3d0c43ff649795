"""The traffic models' knobs and metrics without a simulator (docs/traffic.md): which
combinations a Scenario refuses, and the arithmetic compute_metrics does on a record."""

from __future__ import annotations

import pytest

from macdma.sim.cli import main
from macdma.sim.run.scenario import ACK_FRAME_BYTES, Scenario, compute_metrics


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"traffic": "tcp"},
            "traffic must be one of pktgen, udp, stream, stream_tx, forward, rr; got 'tcp'",
        ),
        ({"traffic": "stream", "direction": "rx"}, "traffic stream moves frames both ways"),
        ({"traffic": "forward", "frags": 1}, "traffic forward sends single-buffer frames"),
        (
            {"traffic": "udp", "window": 8},
            "window 8 has no effect unless traffic is stream, stream_tx or forward",
        ),
        ({"rate_mbps": 200, "link_mbps": 100}, "rate_mbps 200 is above the link's 100 Mb/s"),
        ({"rate_mbps": -1.0}, "rate_mbps must be 0..1000 Mb/s"),
        ({"window": 0, "traffic": "stream"}, "window must be 1..4096 frames; got 0"),
    ],
)
def test_bad_traffic_settings_are_refused_with_the_value(values, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Scenario(**values)


def test_traffic_options_reach_the_scenario(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--traffic", "stream", "--window", "0"])
    assert "--window: must be 1..4096 frames; got 0" in capsys.readouterr().err
    scenario = Scenario(traffic="stream", window=8, rate_mbps=500)
    assert scenario.sends_rx and not scenario.sends_tx, "stream: data in, ACKs out"
    assert "traffic stream at 500 Mb/s offered, window 8" in scenario.describe()


def _stamps(starts_ns: list[float], bytes_on_wire: int) -> list[dict]:
    return [
        {"start_ps": t * 1e3, "end_ps": (t + bytes_on_wire * 8) * 1e3, "length": bytes_on_wire}
        for t in starts_ns
    ]


def test_rr_round_trips_are_read_inside_the_window():
    scenario = Scenario(traffic="rr", frames=40, frame_size=1000, cpu="ideal")
    period_ns = 20_000.0
    requests = [i * period_ns for i in range(40)]
    responses = [t + 10_000.0 for t in requests]
    # every 10th round trip is slow: p50 is the fast one, p99 the slow one
    trips = [(t + 12_000.0, 12_000.0 if i % 10 else 19_000.0) for i, t in enumerate(requests)]
    record = {
        "scenario": scenario.__dict__,
        "tx": {"offered": 40, "wire": _stamps(responses, 1000), "xmit_ns": responses},
        "rx": {
            "wire": _stamps(requests, 1000),
            "received": [(i, t + 9_000.0) for i, t in enumerate(requests)],
            "errored": 0,
        },
        "traffic": {"model": "rr", "drops": {}, "round_trips": trips},
    }
    traffic = compute_metrics(record)["traffic"]
    assert traffic["round_trip"]["p50_ns"] == 12_000.0
    assert traffic["round_trip"]["p99_ns"] == 19_000.0
    # one transaction per 20 us period, within the window's edges
    assert traffic["transactions_per_second"] == pytest.approx(50_000, rel=0.05)


def test_stream_ack_rate_is_counted_in_ack_bytes_and_goodput_in_segments():
    scenario = Scenario(traffic="stream", frames=40, frame_size=1500, cpu="ideal")
    segment_ns = 12_304.0  # 1538 wire bytes at 1 Gb/s
    data = [i * segment_ns for i in range(40)]
    acks = [data[i] + segment_ns for i in range(1, 40, 2)]
    record = {
        "scenario": scenario.__dict__,
        "tx": {
            "offered": 20,
            "wire": _stamps(acks, 64),
            "xmit_ns": acks,
            "frame_bytes": ACK_FRAME_BYTES,
        },  # fmt: skip
        "rx": {
            "wire": _stamps(data, 1500),
            "received": [(i, t + 13_000) for i, t in enumerate(data)],
            "errored": 0,
        },  # fmt: skip
        "traffic": {"model": "stream", "drops": {"socket_backlog": 0}},
    }
    metrics = compute_metrics(record)
    goodput = metrics["traffic"]["goodput_mbps"]["rx"]
    assert goodput == pytest.approx(1500 * 8 / segment_ns * 1e3, rel=0.01)
    assert metrics["tx"]["mbps"] == pytest.approx(60 * 8 / (2 * segment_ns) * 1e3, rel=0.01)
    assert metrics["tx"]["frame_bytes"] == ACK_FRAME_BYTES


def test_a_window_is_stream_s_default_and_forward_s_choice():
    assert Scenario(traffic="stream").window_frames == 64
    assert Scenario(traffic="stream", window=8).window_frames == 8
    assert Scenario(traffic="forward").window_frames is None  # open loop
    forward = Scenario(traffic="forward", window=4)
    assert forward.window_frames == 4 and "traffic forward, window 4" in forward.describe()
    assert Scenario(traffic="pktgen").window_frames is None
