"""The metric arithmetic of one run on synthetic records, without a simulator: the one
measurement window, rates, batch-means precision, per-core and lock figures
(sim/run/scenario.py compute_metrics, choose_window, format_summary)."""

from __future__ import annotations

import pytest
from synthetic_records import BYTE_PS, SAMPLE_FIELDS, SLOT_PS, synthetic_record

from macdma.sim.run.scenario import (
    _rate_in,
    choose_window,
    compute_metrics,
    format_summary,
)
from macdma.sim.run.scenario import (
    _whole_period_batches as regress_batches,
)

# -- metrics from a synthetic record ------------------------------------------------------


def test_metrics_of_a_line_rate_record():
    m = compute_metrics(synthetic_record())
    tx, rx, window = m["tx"], m["rx"], m["window"]
    line_fps = 1e12 / SLOT_PS
    # warm-up: the first quarter of each direction; the window starts at the later one
    assert window["warmup_frames"] == 10
    # (RX's 10th delivery comes after TX's 10th start; TX's last start before RX's last)
    assert window["start_ns"] == pytest.approx((500_000 + 10 * SLOT_PS + 71 * BYTE_PS) / 1e3 + 1000)
    assert window["end_ns"] == pytest.approx((1_000_000 + 39 * SLOT_PS) / 1e3)
    assert len(window["batches"]) == 10 and window["ok"]
    assert tx["frames_per_second"] == pytest.approx(line_fps)
    assert tx["mbps"] == pytest.approx(line_fps * 60 * 8 / 1e6)  # pktgen: frame bytes only
    assert tx["mbps_ci"] == pytest.approx(0.0, abs=1e-6)  # a perfectly steady stream
    assert tx["percent_of_line_rate"] == pytest.approx(100.0)
    assert tx["gap_bytes_min"] == tx["gap_bytes_max"] == 12
    assert (tx["frames_sent"], tx["frames_dropped"], tx["queue_stops"]) == (40, 0, 1)
    assert tx["axi_bursts_per_frame"] == 3
    assert tx["latency"]["max_ns"] == pytest.approx(72 * 8 + 400)
    assert rx["percent_of_line_rate"] == pytest.approx(100.0)
    assert rx["latency"]["p50_ns"] == pytest.approx(1000)
    assert rx["frames_dropped"] == 0
    # every per-packet and per-second figure from the same window, from the samples
    packets = tx["frames_in_window"] + rx["frames_in_window"]
    assert packets == pytest.approx(2 * window["duration_ns"] * 1e3 / SLOT_PS)
    assert m["cpu"]["utilisation"] == pytest.approx(0.20)  # busy 25% minus spinning 5%
    assert m["cpu"]["spin_utilisation"] == pytest.approx(0.05)
    assert m["cpu"]["cycles_per_packet"] == pytest.approx(
        0.20 * window["duration_ns"] * 66 / 1e3 / packets
    )
    assert m["irqs_per_second"] == pytest.approx(0.5e6)
    assert m["irqs_per_packet"] == pytest.approx(0.5e6 * window["duration_ns"] / 1e9 / packets)
    # bus: beats per SoC cycle (100 MHz = 0.1 cycles per ns), bytes from the bursts
    assert m["bus"]["read_pct"] == pytest.approx(100 * 0.3 / 0.1)
    assert m["bus"]["bytes_per_beat"] == pytest.approx((8 * 0.3 + 0.8) / 0.4)
    summary = format_summary(m)
    assert "cpu microblaze-66 @ 66 MHz: 20.0% busy (+5.0% spinning)" in summary
    assert "10 batches" in summary


def test_rx_goodput_is_the_delivery_rate_and_drops_are_counted():
    # 40 offered at line rate, every other one delivered, one per two slots
    m = compute_metrics(synthetic_record(received=list(range(0, 40, 2)), every=2))
    rx = m["rx"]
    assert (rx["frames_received"], rx["frames_dropped"], rx["frames_dropped_hw"]) == (20, 20, 20)
    assert rx["percent_of_line_rate"] == pytest.approx(50.0)
    assert rx["mbps"] == pytest.approx(m["tx"]["mbps"] * 0.5)
    assert rx["axi_bursts_per_frame"] == 2


def test_the_window_skips_the_warm_up_and_measures_the_steady_rate():
    # 8 frames at once (a ring filling), then one every 10 us: the steady rate is 100k/s
    times = [float(n) for n in range(8)] + [8 + 10_000.0 * n for n in range(1, 33)]
    window = choose_window([times], 40, [])
    assert window["start_ns"] == times[10]
    rate, ci = _rate_in(times, window)
    assert rate == pytest.approx(1e5)
    assert ci == pytest.approx(0.0, abs=1e-6)
    # the same frames over the whole run would claim more
    assert (len(times) - 1) / (times[-1] - times[0]) * 1e9 > 1.2e5


def test_the_window_is_whole_periods_of_the_slowest_timer_that_fires():
    times = [1000.0 * n for n in range(101)]  # 100 us of events
    window = choose_window([times], 100, [7_000.0, 11_000.0, 60_000.0])
    # 60 us fires once in the 75 us after warm-up: ignored; 11 us sets the window
    assert window["period_ns"] == 11_000.0
    assert window["start_ns"] == 25_000.0
    periods = window["periods"]
    assert window["duration_ns"] == pytest.approx(periods * 11_000.0)
    assert periods == 6 and len(window["batches"]) == 6  # 75 // 11 = 6 whole periods
    assert all(b - a == pytest.approx(11_000.0) for a, b in window["batches"])


def test_batch_means_give_a_precision_that_grows_with_the_noise():
    steady = [1000.0 * n for n in range(201)]
    bursty = []
    for n in range(100):  # pairs of frames, alternately close and far apart
        bursty += [2000.0 * n, 2000.0 * n + (100.0 if n % 3 else 1500.0)]
    w1 = choose_window([steady], 200, [])
    w2 = choose_window([bursty], 200, [])
    _, ci_steady = _rate_in(steady, w1)
    rate, ci_bursty = _rate_in(bursty, w2)
    assert ci_steady == pytest.approx(0.0, abs=1e-6)
    assert ci_bursty > 0.001 * rate


def test_whole_periods_make_at_least_two_batches_when_they_can():
    assert regress_batches(131) == (10, 13)
    assert regress_batches(13) == (6, 2)
    assert regress_batches(2) == (2, 1)
    assert regress_batches(1) == (1, 1)


def test_a_short_run_is_flagged():
    window = choose_window([[1000.0 * n for n in range(12)]], 12, [])
    assert not window["ok"] and "frames in the window" in window["reason"]


def test_per_core_utilisation_cpu_pct_and_locks_come_from_the_same_window():
    """Two cores: core 0 busy 60% of the time, core 1 20% (10% of it pktgen's idle
    spinning); a lock spun on 5% of the time with one contention per µs."""
    record = synthetic_record()
    record["cpu"]["cores"] = 2
    samples = record["samples"]
    samples["fields"] = [
        *SAMPLE_FIELDS,
        *("core0_busy_ns", "core0_spin_ns", "core1_busy_ns", "core1_spin_ns"),
        *("lock_tx_queue_contentions", "lock_tx_queue_spin_ns"),
    ]
    for row in samples["rows"]:
        t = row[0]
        row[1], row[2] = 0.8 * t, 0.1 * t  # busy and idle spin over both cores
        row.extend([0.6 * t, 0.0, 0.2 * t, 0.1 * t, t / 1e3, 0.05 * t])
    record["locks"] = {"tx_queue": {"contentions": 7, "spin_ns": 123.0, "wait_ns": 0.0}}
    metrics = compute_metrics(record)
    cpu = metrics["cpu"]
    assert cpu["cores"] == 2
    assert cpu["cpu_pct"] == pytest.approx(100 * (0.8 - 0.1) / 2)
    assert [c["utilisation"] for c in cpu["per_core"]] == pytest.approx([0.6, 0.1])
    assert cpu["per_core"][1]["spin_utilisation"] == pytest.approx(0.1)
    lock = metrics["locks"]["tx_queue"]
    duration = metrics["window"]["duration_ns"]
    assert lock["contentions"] == pytest.approx(duration / 1e3)
    assert lock["spin_cycles"] == pytest.approx(0.05 * duration * 66.0 / 1e3)
    assert (lock["contentions_run"], lock["spin_cycles_run"]) == (7, pytest.approx(123 * 0.066))
