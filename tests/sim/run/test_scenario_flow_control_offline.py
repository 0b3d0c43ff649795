"""802.3x flow control without a simulator: the ``flow_control`` knob and the metrics a
run's PAUSE frames give (sim/run/scenario.py, sim/regress/metrics.py). What the driver
model programs at open: tests/firmware/test_driver_flow_control.py."""

from __future__ import annotations

import dataclasses

import pytest
from synthetic_records import synthetic_record

from macdma.sim.cli import main
from macdma.sim.regress.metrics import METRICS, summarise
from macdma.sim.run.scenario import Scenario, compute_metrics, format_summary, paused_intervals_ns

# -- the knob -------------------------------------------------------------------------------


def test_the_knob_is_off_by_default_and_feeds_the_driver():
    assert Scenario().flow_control == "off"
    assert Scenario().driver_config().flow_control is False
    assert Scenario(flow_control="on").driver_config().flow_control is True
    assert "flow control on" in Scenario(flow_control="on").describe()


@pytest.mark.parametrize("bad", ["yes", "ON", True, 1, None])
def test_a_bad_setting_is_named(bad):
    with pytest.raises(ValueError, match=rf"flow_control must be one of off, on; got {bad!r}"):
        Scenario(flow_control=bad)


def test_the_command_line_rejects_a_bad_setting(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--flow-control", "maybe"])
    assert "argument --flow-control: must be one of off, on; got 'maybe'" in (
        capsys.readouterr().err
    )


# -- the metrics ----------------------------------------------------------------------------

QUANTUM_PS = 512_000  # 512 bit times at 1 Gb/s


def test_paused_intervals_end_at_the_quanta_or_the_next_pause():
    pauses = [
        (1_000_000, 100),  # XOFF: 51.2 us, cut short by the XON at 11 us
        (11_000_000, 0),  # XON: no pause of its own
        (20_000_000, 10),  # XOFF of 5.12 us, refreshed before it ends
        (24_000_000, 10),  # the refresh: 5.12 us from its own end
    ]
    assert paused_intervals_ns(pauses, QUANTUM_PS) == [
        (1_000.0, 11_000.0),
        (20_000.0, 24_000.0),
        (24_000.0, 29_120.0),
    ]
    assert paused_intervals_ns([], QUANTUM_PS) == []


def _record_with_pauses(pauses: list) -> dict:
    record = synthetic_record()
    record["scenario"] = dataclasses.asdict(
        Scenario(direction="both", frame_size=60, frames=40, cpu="microblaze-66", flow_control="on")
    )
    xoff = sum(1 for _, quanta in pauses if quanta)
    record["counters"].update(STATS_TX_XOFF=xoff, STATS_TX_XON=len(pauses) - xoff)
    record["peer"] = {"pauses": pauses, "quantum_ps": QUANTUM_PS, "stalled_ps": 3_000_000}
    return record


def test_pause_frames_and_the_paused_share_of_the_window():
    window = compute_metrics(synthetic_record())["window"]
    start, end = window["start_ns"], window["end_ns"]
    # an XOFF from 1 us before the window to its first quarter, ended by an XON
    quarter = start + (end - start) / 4
    pauses = [(round((start - 1000) * 1000), 0xFFFF), (round(quarter * 1000), 0)]
    m = compute_metrics(_record_with_pauses(pauses))
    flow = m["flow_control"]
    assert flow["enabled"]
    assert (flow["xoff_sent"], flow["xon_sent"], flow["pause_frames_sent"]) == (1, 1, 2)
    assert flow["pause_frames_seen"] == 2
    assert flow["partner_paused_pct"] == pytest.approx(25.0)
    assert flow["partner_paused_us"] == pytest.approx((quarter - start + 1000) / 1e3)
    assert flow["partner_stalled_us"] == pytest.approx(3.0)
    summary = summarise(m)
    assert (summary["pause_frames"], summary["partner_paused_pct"]) == (2, pytest.approx(25.0))
    assert {"pause_frames", "partner_paused_pct"} <= set(METRICS)
    assert "flow control: 1 XOFF + 1 XON sent; far end paused" in format_summary(m)


def test_a_run_without_flow_control_reports_none_sent_and_no_pause():
    m = compute_metrics(synthetic_record())
    flow = m["flow_control"]
    assert not flow["enabled"]
    assert (flow["pause_frames_sent"], flow["partner_paused_pct"]) == (0, 0.0)
    assert summarise(m)["pause_frames"] == 0
    assert "flow control" not in format_summary(m)
