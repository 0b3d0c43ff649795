"""The driver model's periodic timers (firmware/timers.py): polling without done interrupts,
the housekeeping tick's TX clean, and deadlines kept absolute with overruns counted."""

from __future__ import annotations

import asyncio

import pytest
from driver_fakes import (
    DONE,
    ERRORS,
    make,
    make_timed,
    run,
    settle,
)

from macdma.firmware import regs
from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import (
    IrqStrategy,
)


def test_polling_never_enables_done_irqs_and_polls_on_a_timer():
    async def body():
        driver, p, device, received = await make(
            strategy=IrqStrategy.parse("polling:us=5,budget=8"), rx_ring=8, rx_buf=64
        )
        assert all(v & DONE == 0 for v in p.writes_to(regs.IRQ_ENABLE))
        assert p.regs[regs.IRQ_ENABLE] == ERRORS
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        device.receive(bytes(70), irq=False)
        await driver.xmit([b"q" * 60])
        device.complete_tx(irq=False)
        await p.advance(4000)
        assert received == [] and driver.stats.polls == 0
        await p.advance(1000)
        assert len(received) == 1 and driver.stats.tx_packets == 1
        assert driver.stats.polls == 1 and driver.stats.irqs == 0
        assert all(v & DONE == 0 for v in p.writes_to(regs.IRQ_ENABLE))
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


def test_housekeeping_tick_cleans_tx_with_its_budget():
    async def body():
        driver, p, device, _ = await make(
            strategy=IrqStrategy("polling", poll_us=1_000_000),
            housekeeping_hz=1000,
            tx_clean_budget=2,
            tx_ring=16,
            max_frags=1,
            rx_ring=4,
        )
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        for _ in range(5):
            assert await driver.xmit([b"h" * 60])
        device.complete_tx(irq=False)
        await p.advance(999_000)
        assert driver.stats.tx_packets == 0
        await p.advance(1_000)
        assert driver.stats.tx_packets == 2
        await p.advance(2_000_000)
        assert driver.stats.tx_packets == 5
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())


@pytest.mark.parametrize(
    ("work_cycles", "expiries", "polls", "overruns"), [(2000, 9, 9, 0), (7000, 5, 4, 4)]
)
def test_polling_timer_runs_on_absolute_deadlines_and_counts_overruns(
    work_cycles, expiries, polls, overruns
):
    """A 5 us poll timer started at 1 us, whose expiry costs an IRQ entry + its work, over
    48 us: with 2 us of work it expires at 6, 11, ... 46 us (9 times; sleeping 5 us after
    the work would give 7); with 7 us it cannot keep up: it runs at 6, 16, ... 46 us, the
    expiries in between are skipped and counted, and the last poll is still running."""

    async def body():
        costs = CpuCosts(irq_entry_exit=1000, timer_tick_overhead=work_cycles - 1000)
        driver, p, _ = await make_timed(
            costs, strategy=IrqStrategy.parse("polling:us=5,budget=8"), rx_ring=8, rx_buf=64
        )
        tasks: list[asyncio.Task] = []
        runner = asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
        await settle()
        await p.advance(48_000)
        assert driver.stats.timer_irqs == expiries and driver.stats.polls == polls
        assert driver.stats.timer_overruns == overruns
        # a timer tick is an interrupt: its entry is charged every time
        assert p.charge_calls["irq_entry_exit"] == expiries
        assert driver.stats.irqs == 0, "no device interrupt"
        runner.cancel()
        for t in tasks:
            t.cancel()

    run(body())
