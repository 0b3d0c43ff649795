"""The driver's configuration (firmware/config.py): each setting checked, a bad value named."""

from __future__ import annotations

import pytest

from macdma.firmware.driver import (
    DriverConfig,
    IrqStrategy,
)


def test_the_driver_config_takes_only_a_bool():
    with pytest.raises(ValueError, match=r"DriverConfig.flow_control = 'on' must be a bool"):
        DriverConfig(flow_control="on")


def test_a_bad_coalesce_timer_is_named():
    with pytest.raises(ValueError, match="coalesce_timer 'middle'"):
        IrqStrategy("napi", coalesce_timer="middle")


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"tx_ring": 1}, "1"),
        ({"tx_ring": 4097}, "4097"),
        ({"rx_ring": 0}, "0"),
        ({"rx_buf": 63}, "63"),
        ({"rx_buf": 65536}, "65536"),
        ({"burst_beats": 0}, "0"),
        ({"burst_beats": 257}, "257"),
        ({"prefetch": 17}, "17"),
        ({"sys_clk_mhz": 1001}, "1001"),
        ({"irq_min_interval_us": 10001}, "10001"),
        ({"irq_min_interval_us": -1}, "-1"),
        ({"max_frags": 0}, "0"),
        ({"tx_ring": 16, "max_frags": 16}, "16"),
        ({"max_frags": 17, "wake_threshold": 16}, "16"),
        ({"tx_clean_budget": 0}, "0"),
        ({"housekeeping_hz": -5}, "-5"),
        ({"dma_poll_us": 70000}, "70000"),
        ({"tx_ring": 2.5}, "2.5"),
        ({"strategy": "interrupts"}, "'interrupts'"),
    ],
)
def test_invalid_driver_config_names_the_value(kwargs, bad):
    with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
        DriverConfig(**kwargs)


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"name": "nope"}, "'nope'"),
        ({"name": "coalesce", "coalesce_frames": 0}, "0"),
        ({"name": "coalesce", "coalesce_frames": 256}, "256"),
        ({"name": "coalesce", "coalesce_us": 65536}, "65536"),
        ({"name": "polling", "poll_us": 0}, "0"),
        ({"name": "napi", "budget": 0}, "0"),
        ({"name": "napi", "tx_coalesce_frames": 0}, "tx_coalesce_frames = 0"),
        ({"name": "napi", "tx_coalesce_frames": 256}, "tx_coalesce_frames = 256"),
        ({"name": "dim", "tx_coalesce_us": 65536}, "tx_coalesce_us = 65536"),
        ({"name": "eop", "tx_coalesce_us": 2.5}, "tx_coalesce_us = 2.5"),
        ({"name": "polling", "tx_coalesce_frames": 8}, "polling takes no TX interrupts"),
    ],
)
def test_invalid_irq_strategy_names_the_value(kwargs, bad):
    with pytest.raises(ValueError, match=bad):
        IrqStrategy(**kwargs)


def test_irq_strategy_parse():
    assert IrqStrategy.parse("coalesce:frames=8,us=50") == IrqStrategy("coalesce", 8, 50)
    assert IrqStrategy.parse("polling:us=20,budget=16") == IrqStrategy(
        "polling", poll_us=20, budget=16
    )
    assert IrqStrategy.parse("napi", budget=32).budget == 32
    assert DriverConfig(strategy="eop").strategy == IrqStrategy("eop")
    assert IrqStrategy.parse("dim:tx_frames=24,tx_us=50") == IrqStrategy(
        "dim", tx_coalesce_frames=24, tx_coalesce_us=50
    )
    assert not IrqStrategy("napi").tx_moderated
    for text, bad in [("fast", "'fast'"), ("napi:weight=3", "weight"), ("eop:frames=x", "'x'")]:
        with pytest.raises(ValueError, match=bad):
            IrqStrategy.parse(text)
    with pytest.raises(ValueError, match="300"):
        IrqStrategy.parse("coalesce:frames=300")


def test_a_tx_timer_needs_napi():
    with pytest.raises(ValueError, match="needs a NAPI strategy"):
        DriverConfig(strategy=IrqStrategy("eop"), tx_timer="hrtimer")
    with pytest.raises(ValueError, match="tx_timer = 'jiffy'"):
        DriverConfig(tx_timer="jiffy")
