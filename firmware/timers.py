"""The driver's periodic timers (the polling loop's and the housekeeping tick's), on
absolute deadlines as ``hrtimer_forward`` keeps them, and the work each runs."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from .locks import cpu_context
from .netdev import NetDevice

__all__ = ["housekeep_periodically", "poll_periodically", "run_timer"]

#: ``clean_tx(budget)`` / ``poll_rx(budget)``: the driver's TX clean and RX poll, each
#: returning the work it did.
Work = Callable[[int | None], Coroutine[Any, Any, int]]


async def run_timer(
    netdev: NetDevice, period_ns: float, work: Callable[[], Coroutine[Any, Any, Any]]
) -> None:
    """Run ``work`` every ``period_ns`` forever: the timer expires at ``k * period_ns``
    after start whatever its work took; expiries that passed while the CPU was busy are
    skipped and counted (``stats.timer_overruns``). Each expiry while the device is open
    is a timer interrupt on the netdev's ``irq_core`` (``irq_entry_exit`` in hard IRQ
    context, counted in ``stats.timer_irqs``) whose callback runs ``work`` in softirq
    context after ``timer_tick_overhead``."""
    platform, stats = netdev.platform, netdev.stats
    deadline = platform.now_ns() + period_ns
    while True:
        await platform.sleep_ns(max(0.0, deadline - platform.now_ns()))
        if netdev.is_open:
            stats.timer_irqs += 1
            async with cpu_context(platform, "hardirq", netdev.config.irq_core):
                await netdev.io.charge("irq_entry_exit")
            async with cpu_context(platform, "softirq", netdev.config.irq_core):
                await netdev.io.charge("timer_tick_overhead")
                await work()
        deadline += period_ns
        now = platform.now_ns()
        if deadline <= now:
            missed = int((now - deadline) // period_ns) + 1
            stats.timer_overruns += missed
            deadline += missed * period_ns


async def poll_periodically(netdev: NetDevice, strategy, clean_tx: Work, poll_rx: Work) -> None:
    """IRQ-less completion (the polling strategy): every ``strategy.poll_us``, clean TX
    and RX with ``strategy.budget``; re-poll at once while a pass used its whole budget."""
    budget = strategy.budget

    async def poll() -> None:
        while netdev.is_open:
            netdev.stats.polls += 1
            tx_done = await clean_tx(budget)
            rx_done = await poll_rx(budget)
            if tx_done < budget and rx_done < budget:
                break

    await run_timer(netdev, strategy.poll_us * 1000.0, poll)


async def housekeep_periodically(netdev: NetDevice, clean_tx: Work) -> None:
    """The periodic TX housekeeping of the MIPS router: ``clean_tx(tx_clean_budget)``
    from a timer at ``housekeeping_hz``."""
    hz = netdev.config.housekeeping_hz
    assert hz is not None

    async def housekeeping() -> None:
        await clean_tx(netdev.config.tx_clean_budget)

    await run_timer(netdev, 1e9 / hz, housekeeping)
