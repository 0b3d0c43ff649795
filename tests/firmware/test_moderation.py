"""Interrupt moderation as the driver model programs it at open (firmware/moderation.py):
IRQ_MODE per strategy, TX coalescing apart from RX, and the coalescing timer's restart."""

from __future__ import annotations

import pytest
from driver_fakes import (
    make,
    run,
)

from macdma.firmware import regs
from macdma.firmware.driver import (
    IrqStrategy,
)


@pytest.mark.parametrize(
    "spec, mode",
    [
        ("per-desc", regs.IrqMode.PER_DESC),
        ("eop", regs.IrqMode.EOP),
        ("coalesce", regs.IrqMode.COALESCE),
        ("polling", regs.IrqMode.NONE),
        ("napi", regs.IrqMode.EOP),
        ("napi:frames=4", regs.IrqMode.COALESCE),
        ("napi:us=20", regs.IrqMode.COALESCE),
    ],
)
def test_irq_mode_per_strategy(spec, mode):
    async def body():
        _, p, _, _ = await make(strategy=IrqStrategy.parse(spec), tx_ring=32, rx_ring=4)
        assert p.regs[regs.IRQ_MODE] == int(mode) | int(mode) << regs.IRQ_MODE_RX_MODE_SHIFT

    run(body())


@pytest.mark.parametrize(
    ("spec", "rx_mode", "rx_coalesce"),
    [
        ("napi", regs.IrqMode.EOP, 1),
        ("eop", regs.IrqMode.EOP, 1),
        ("per-desc", regs.IrqMode.PER_DESC, 1),
        ("coalesce:frames=8,us=20", regs.IrqMode.COALESCE, 8 | 20 << 16),
        ("dim", regs.IrqMode.COALESCE, None),  # RX: DIM's starting profile
    ],
)
def test_tx_coalescing_programs_the_tx_channel_apart_from_rx(spec, rx_mode, rx_coalesce):
    async def body():
        strategy = IrqStrategy.parse(spec, tx_coalesce_frames=24, tx_coalesce_us=50)
        driver, p, _, _ = await make(strategy=strategy, tx_ring=32, rx_ring=4)
        tx_mode = int(regs.IrqMode.COALESCE)
        assert p.regs[regs.IRQ_MODE] == tx_mode | int(rx_mode) << regs.IRQ_MODE_RX_MODE_SHIFT
        assert p.regs[regs.IRQ_TX_COALESCE] == 24 | 50 << 16
        expected = rx_coalesce
        if expected is None:
            frames, us = driver.dim.profile
            expected = frames | us << 16
        assert p.regs[regs.IRQ_RX_COALESCE] == expected

    run(body())


def test_tx_coalescing_unset_member_takes_the_shared_setting():
    async def body():
        strategy = IrqStrategy.parse("napi:frames=4,tx_us=30")
        _, p, _, _ = await make(strategy=strategy, tx_ring=32, rx_ring=4)
        coalesce = int(regs.IrqMode.COALESCE)
        assert p.regs[regs.IRQ_MODE] == coalesce | coalesce << regs.IRQ_MODE_RX_MODE_SHIFT
        assert p.regs[regs.IRQ_TX_COALESCE] == 4 | 30 << 16
        assert p.regs[regs.IRQ_RX_COALESCE] == 4

    run(body())


@pytest.mark.parametrize("timer, restart", [("first", 0), ("last", 1)])
def test_coalesce_timer_sets_timer_restart_in_both_directions(timer, restart):
    async def body():
        strategy = IrqStrategy("dim", tx_coalesce_frames=24, tx_coalesce_us=50,
                               coalesce_timer=timer)  # fmt: skip
        driver, p, _, _ = await make(strategy=strategy, tx_ring=32, rx_ring=4)
        tx_bit = restart << regs.IRQ_TX_COALESCE_TIMER_RESTART_SHIFT
        rx_bit = restart << regs.IRQ_RX_COALESCE_TIMER_RESTART_SHIFT
        assert p.regs[regs.IRQ_TX_COALESCE] == 24 | tx_bit | 50 << 16
        frames, us = driver.dim.profile
        assert p.regs[regs.IRQ_RX_COALESCE] == frames | rx_bit | us << 16

    run(body())
