"""``macdma run --cpu vexriscv-rtl``: a scenario on the real core (the C driver on
``macdma_soc_cpu``, sim/run/cpu_scenario_tb.py) gives the same metrics as the model's
runs, from the same wire stamps; knobs the C driver does not implement are refused by
name before any simulator starts."""

import pytest

from macdma.sim.run.cpu_scenario_tb import firmware_config
from macdma.sim.run.scenario import RTL_CPU, Scenario, run_scenario


def test_a_tx_scenario_on_the_core_holds_line_rate_with_its_cycles():
    metrics = run_scenario(
        Scenario(cpu=RTL_CPU, direction="tx", frames=40, frame_size=1514, frags=2, irq="eop")
    )
    tx = metrics["tx"]
    assert tx["frames_sent"] == 40 and tx["frames_dropped"] == 0
    assert tx["percent_of_line_rate"] == pytest.approx(100.0, abs=0.5)
    assert tx["gap_bytes_min"] == 12
    # 40 frames, one EOP interrupt each at most; cycles per packet from mcycle, not a table.
    assert 0 < metrics["irqs"] <= 40
    assert 100 < metrics["cpu"]["cycles_per_packet"] < 10_000
    assert metrics["cpu"]["preset"] == RTL_CPU and metrics["cpu"]["mhz"] == 100.0


def test_an_rx_scenario_on_the_core_delivers_every_frame_it_has_buffers_for():
    metrics = run_scenario(
        Scenario(cpu=RTL_CPU, direction="rx", frames=40, frame_size=1514, irq="napi")
    )
    rx = metrics["rx"]
    # 256 buffers hold the whole burst: the core falls behind the wire but drops nothing.
    assert rx["frames_received"] == 40 and rx["frames_dropped"] == 0
    assert 0 < rx["percent_of_line_rate"] < 100
    assert metrics["cpu"]["cpu_pct"] > 90, "a core behind the wire is busy all the time"
    assert 1_000 < metrics["cpu"]["cycles_per_packet"] < 20_000


@pytest.mark.parametrize(
    ("knobs", "named"),
    [
        ({"direction": "both"}, "direction both"),
        ({"direction": "tx", "irq": "dim"}, "irq 'dim'"),
        ({"direction": "tx", "linearize": True}, "linearize True"),
        ({"direction": "tx", "frames": 5000}, "frames 5000"),
    ],
)
def test_what_the_c_driver_cannot_do_is_refused_by_name(knobs, named):
    with pytest.raises(ValueError, match=named):
        firmware_config(Scenario(cpu=RTL_CPU, **knobs))
