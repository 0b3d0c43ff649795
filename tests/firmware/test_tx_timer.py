"""The TX coalescing timer of the driver model (firmware/tx_timer.py): armed as its kind says,
its expiry cleans TX."""

from __future__ import annotations

import asyncio

import pytest
from driver_fakes import (
    make_timed,
    run,
    settle,
)

from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import (
    IrqStrategy,
)


@pytest.mark.parametrize(
    ("kind", "arms", "arm_cost", "expiry_irqs"),
    [
        ("timer_list", 5, "timer_list_arm", 0),  # every xmit; runs off the tick's softirq
        ("hrtimer", 5, "hrtimer_arm", 1),  # every xmit; its expiry is an interrupt
        ("hrtimer_idle", 1, "hrtimer_arm", 1),  # once: pending afterwards
    ],
)
def test_the_tx_timer_is_armed_as_its_kind_says_and_its_expiry_cleans_tx(
    kind, arms, arm_cost, expiry_irqs
):
    """Five frames 1 µs apart, written back without an interrupt: only the timer brings
    the clean, 20 µs after the last arming; each kind arms it as its code does."""

    async def body():
        costs = CpuCosts(timer_list_arm=7, hrtimer_arm=11, irq_entry_exit=100)
        driver, p, device = await make_timed(
            costs, strategy=IrqStrategy("napi"), tx_timer=kind, tx_timer_us=20, tx_ring=64,
            rx_ring=4,
        )  # fmt: skip
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        for _ in range(5):
            sent = asyncio.ensure_future(driver.xmit([b"t" * 100]))
            await p.advance(1000)
            assert sent.done() and sent.result()
        device.complete_tx(irq=False)
        await p.advance(10_000)
        assert driver.stats.tx_packets == 0  # nothing cleans yet
        await p.advance(30_000)
        assert driver.stats.tx_timer_arms == arms
        assert p.cycles[arm_cost] == arms * getattr(costs, arm_cost)
        assert driver.stats.tx_timer_expiries == 1
        assert driver.stats.tx_packets == 5  # the expiry's NAPI poll cleaned them
        assert p.charge_calls["irq_entry_exit"] == expiry_irqs
        assert driver.stats.irqs == 0 and not driver.napi_scheduled
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())
