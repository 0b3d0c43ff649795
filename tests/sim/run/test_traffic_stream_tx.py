"""The SoC-sending TCP stream (traffic ``stream_tx``, docs/traffic.md) without a
simulator: its knobs' checks, the driver settings it implies, the segments it sends and
the metrics of its record."""

from __future__ import annotations

import re

import pytest

from macdma.firmware.tx_queue import tso_header
from macdma.sim.cli import main
from macdma.sim.run.frames import SEQ_OFFSET, frame_seq
from macdma.sim.run.scenario import (
    ACK_FRAME_BYTES,
    TCP_HEADER_BYTES,
    Scenario,
    compute_metrics,
)
from macdma.sim.run.traffic import tcp_segment


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"traffic": "stream", "tx_segmentation": "tso"},
            "tx_segmentation tso has no effect unless traffic is stream_tx",
        ),
        ({"traffic": "stream_tx", "tx_segmentation": "gso"}, "tx_segmentation must be one of"),
        ({"traffic": "stream_tx", "window": 1}, "window must be >= 2; got 1"),
        ({"traffic": "stream_tx", "frags": 1}, "traffic stream_tx sends single-buffer frames"),
        ({"traffic": "stream_tx", "direction": "tx"}, "traffic stream_tx moves frames both"),
        (
            {"traffic": "stream_tx", "tx_segmentation": "tso", "tx_ring": 64},
            "tx_ring 64 cannot hold a 44-segment super-segment (90 descriptors)",
        ),
        (
            {"traffic": "stream_tx", "tx_segmentation": "tso", "tx_checksum": "hw"},
            "tx_checksum must be none",
        ),
    ],
)
def test_bad_stream_tx_settings_are_refused_with_the_value(values, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Scenario(**values)


def test_tso_stops_the_queue_for_a_worst_case_super_segment():
    """fec's tx_stop_threshold: with tso the queue stops while a largest super-segment no
    longer fits; linear keeps the one-descriptor frame of before."""
    tso = Scenario(traffic="stream_tx", tx_segmentation="tso")
    assert tso.mss == 1460 and tso.tso_max_segments == 44  # 44 x 1460 + 54 <= 64 KiB
    # two descriptors a segment, one more per 32 KiB page boundary crossed (64,240 bytes)
    assert tso.tso_max_descriptors == 2 * 44 + 2
    config = tso.driver_config()
    assert config.max_frags == 90 and config.wake_threshold == 180
    assert Scenario(traffic="stream_tx").driver_config().max_frags == 1


def test_the_drivers_tso_headers_are_the_segments_the_far_end_expects():
    """Segment n of the stream carries TCP sequence number n x MSS; the driver's
    tso_build_hdr turns the first segment's headers into each later one's."""
    size = 1514
    mss = size - TCP_HEADER_BYTES
    first = tcp_segment(0, size)
    for n in (1, 2, 44):
        segment = tcp_segment(n * mss, size)
        assert frame_seq(segment) == n * mss
        built = tso_header(first[:TCP_HEADER_BYTES], SEQ_OFFSET, n * mss)
        assert built == segment[:TCP_HEADER_BYTES]
    assert tcp_segment(mss, size)[TCP_HEADER_BYTES:] != first[TCP_HEADER_BYTES:]


def test_stream_tx_metrics_count_segments_sent_and_acks_at_their_size():
    scenario = Scenario(traffic="stream_tx", frames=40, frame_size=1000, cpu="ideal")
    slot_ns = (8 + 1000 + 4 + 12) * 8
    starts = [i * slot_ns for i in range(40)]
    acks = [starts[i] + 9_000.0 for i in range(1, 40, 2)]

    def stamps(times, size):
        return [{"start_ps": t * 1e3, "end_ps": (t + size * 8) * 1e3, "length": size}
                for t in times]  # fmt: skip

    record = {
        "scenario": scenario.__dict__,
        "tx": {"offered": 40, "wire": stamps(starts, 1000), "xmit_ns": starts},
        "rx": {
            "wire": stamps(acks, ACK_FRAME_BYTES),
            "received": [(i, t + 1_000.0) for i, t in enumerate(acks)],
            "frame_bytes": ACK_FRAME_BYTES,
        },
        "traffic": {
            "model": "stream_tx",
            "window_segments": 8,
            "max_in_flight": 8,
            "xmits": 40,
            "segments_per_xmit": 1.0,
            "acks": 20,
        },  # fmt: skip
    }
    metrics = compute_metrics(record)
    traffic = metrics["traffic"]
    assert traffic["goodput_mbps"]["tx"] == pytest.approx(1000 * 8 / slot_ns * 1e3)
    assert traffic["window_segments"] == traffic["max_in_flight"] == 8
    assert traffic["acks"] == 20
    rx = metrics["rx"]
    assert rx["frame_bytes"] == ACK_FRAME_BYTES
    # one ACK per two segment slots: 60-byte frames at half the segments' frame rate
    assert rx["mbps"] == pytest.approx(ACK_FRAME_BYTES * 8 / (2 * slot_ns) * 1e3, rel=0.01)


def test_the_segmentation_option_reaches_the_scenario(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--traffic", "stream", "--tx-segmentation", "tso"])
    assert "--tx-segmentation tso has no effect unless --traffic is stream_tx" in (
        capsys.readouterr().err
    )
    scenario = Scenario(traffic="stream_tx", tx_segmentation="tso", window=8)
    assert scenario.tso and scenario.sends_rx and not scenario.sends_tx
    assert "traffic stream_tx, window 8" in scenario.describe()
    assert "segmentation tso" in scenario.describe()
