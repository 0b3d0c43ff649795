"""The TX coalescing timer of the driver model (firmware/tx_timer.py): armed as its kind says,
its expiry cleans TX, also on a clock of whole picoseconds, and the arming stmmac does after
a TX clean that leaves frames in the ring."""

from __future__ import annotations

import asyncio

import pytest
from driver_fakes import (
    TimedPlatform,
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
        ("hrtimer_idle", 5, "hrtimer_arm", 1),  # every xmit: NAPI is not scheduled
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


#: Zero-length sleeps one task may take in a row at one instant before the platform calls
#: it a livelock: on a simulator such a loop never lets time pass.
ZERO_SLEEPS_LIMIT = 10


class ZeroTimeLivelockError(RuntimeError):
    """A task slept zero time again and again without the clock moving."""


class PicosecondPlatform(TimedPlatform):
    """A TimedPlatform whose clock is a simulator's: whole picoseconds, read in ns as an
    integer over 1000, and a sleep rounded to whole picoseconds as the CPU model's is (a
    sleep shorter than half a picosecond returns at once). A simulator cannot move its
    clock while a task loops on such sleeps; this platform, whose clock the test moves,
    raises :class:`ZeroTimeLivelockError` in the task instead (after ZERO_SLEEPS_LIMIT)."""

    def __init__(self) -> None:
        super().__init__()
        self.zero_sleeps: dict[object, tuple[float, int]] = {}

    def now_ns(self) -> float:
        return round(self.time_ns * 1000) / 1000

    async def sleep_ns(self, ns: float) -> None:
        ps = round(ns * 1000)
        task = asyncio.current_task()
        if ps > 0:
            self.zero_sleeps.pop(task, None)
            await super().sleep_ns(ps / 1000)
            return
        at, count = self.zero_sleeps.get(task, (self.now_ns(), 0))
        count = count + 1 if at == self.now_ns() else 1
        if count > ZERO_SLEEPS_LIMIT:
            raise ZeroTimeLivelockError(f"{count} zero-length sleeps at {at} ns")
        self.zero_sleeps[task] = (self.now_ns(), count)
        await asyncio.sleep(0)


async def _running(driver) -> list[asyncio.Task]:
    """Run the driver's contexts; the list holds the tasks, those it spawns included."""
    tasks: list[asyncio.Task] = []
    tasks.append(
        asyncio.ensure_future(driver.run(lambda c: tasks.append(asyncio.ensure_future(c))))
    )
    return tasks


def _stop(tasks) -> None:
    for task in tasks:
        task.cancel()


def test_the_timer_expires_when_its_deadline_is_a_fraction_of_a_picosecond_off_the_clock():
    """stmmac-txtimer fixed stalled at its first 5 ms expiry: armed at 5,337,323.53 ns,
    the deadline (a float sum) is 10,337,323.530000001, which the picosecond clock reads
    as 10,337,323.53; the timer slept the remaining 1e-9 ns as zero and looked again,
    forever, with no simulated time passing. One frame, no interrupt: only the expiry
    cleans it."""

    async def body():
        p = PicosecondPlatform()
        driver, p, device = await make_timed(
            CpuCosts(), strategy=IrqStrategy("napi"), tx_timer="hrtimer_idle",
            tx_timer_us=5000, tx_ring=64, rx_ring=4, platform=p,
        )  # fmt: skip
        tasks = await _running(driver)
        await p.advance(5_337_323.53 - p.time_ns)
        assert await driver.xmit([b"t" * 100])
        deadline = driver.tx_timer.deadline_ns
        assert round(deadline * 1000) / 1000 < deadline  # the clock reads just below it
        device.complete_tx(irq=False)
        await p.advance(6_000_000)
        failed = [repr(t.exception()) for t in tasks if t.done() and not t.cancelled()]
        assert not failed  # the timer's task did not die in a zero-time loop
        assert driver.stats.tx_timer_expiries == 1
        assert driver.stats.tx_packets == 1
        _stop(tasks)

    run(body())


def test_a_clean_that_leaves_frames_arms_the_timer():
    """Frames queued while NAPI runs do not arm an hrtimer_idle timer; the poll completes
    before they are sent, and they complete without an interrupt (fewer than the
    interrupt's frame count). stmmac's TX poll arms the timer because frames are left, so
    its expiry cleans them; without that arming they wait for an xmit that never comes."""

    async def body():
        costs = CpuCosts(rx_per_packet=5000, hrtimer_arm=11, irq_entry_exit=100)
        driver, p, device = await make_timed(
            costs, strategy=IrqStrategy("napi"), tx_timer="hrtimer_idle", tx_timer_us=20,
            tx_ring=64, rx_ring=4,
        )  # fmt: skip
        tasks = await _running(driver)
        device.receive(bytes(60))  # an RX interrupt: NAPI runs for ~5 µs
        await p.advance(500)
        assert driver.napi_scheduled
        for _ in range(3):
            sent = asyncio.ensure_future(driver.xmit([b"t" * 100]))
            await p.advance(100)
            assert sent.done() and sent.result()
        assert driver.stats.tx_timer_arms == 0  # NAPI was scheduled at each xmit
        await p.advance(10_000)
        assert not driver.napi_scheduled
        assert driver.stats.tx_timer_arms == 1  # the poll left 3 frames: armed
        device.complete_tx(irq=False)
        await p.advance(100_000)
        assert driver.stats.tx_timer_expiries == 1
        assert driver.stats.tx_packets == 3
        _stop(tasks)

    run(body())


def test_xmit_while_napi_is_scheduled_cancels_a_pending_hrtimer_idle_timer():
    """stmmac_tx_timer_arm with NAPI scheduled: hrtimer_try_to_cancel (priced as an
    arming), the poll arming it again if it leaves frames."""

    async def body():
        costs = CpuCosts(rx_per_packet=5000, hrtimer_arm=11)
        driver, p, device = await make_timed(
            costs, strategy=IrqStrategy("napi"), tx_timer="hrtimer_idle", tx_timer_us=1000,
            tx_ring=64, rx_ring=4,
        )  # fmt: skip
        tasks = await _running(driver)
        sent = asyncio.ensure_future(driver.xmit([b"t" * 100]))
        await p.advance(100)
        assert sent.result() and driver.tx_timer.pending
        device.receive(bytes(60))
        await p.advance(500)
        assert driver.napi_scheduled
        sent = asyncio.ensure_future(driver.xmit([b"t" * 100]))
        await p.advance(100)
        assert sent.result()
        assert driver.stats.tx_timer_cancels == 1 and not driver.tx_timer.pending
        assert p.cycles["hrtimer_arm"] == 2 * 11
        _stop(tasks)

    run(body())
