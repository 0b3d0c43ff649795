"""The driver's TX coalescing timer, as stmmac's ``tx_coal_timer``: the hardware raises a
TX completion interrupt only every so many frames, so the driver arms a per-queue timer
whose expiry schedules the TX clean (NAPI) for the frames that would otherwise wait.

stmmac arms it (``stmmac_tx_timer_arm``) at two places: in xmit, after the doorbell, and
after a TX clean that left frames in the ring (``stmmac_tx_clean``: "we still have pending
packets, let's call for a new scheduling"; since the 2023 fix series in the TX NAPI poll,
after ``napi_complete_done`` has unmasked the interrupt). Without the second, frames
queued while NAPI ran and completed after it, fewer than the interrupt's frame count,
would wait for a next xmit that may never come. What arming costs is the point of the
kinds (``DriverConfig.tx_timer``):

- ``timer_list``: ``mod_timer`` at every arming (``timer_list_arm``); the callback runs
  in the timer softirq of the periodic tick, so its expiry costs no interrupt of its own.
- ``hrtimer``: ``hrtimer_start`` at every arming (``hrtimer_arm``: the timer's rbtree and
  the clock event's reprogramming); its expiry is a clock-event interrupt.
- ``hrtimer_idle`` (the 2023 fix): the same hrtimer, started only while the TX NAPI is
  not scheduled (``hrtimer_start`` re-arms a pending one), and cancelled
  (``hrtimer_try_to_cancel``: its removal from the rbtree, priced as an arming) while
  it is, the poll arming it again if it leaves frames.

Re-arming pushes the expiry out, so under steady load the timer rarely fires.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from . import regs
from .config import ERROR_CAUSES
from .locks import cpu_context
from .netdev import NetDevice

__all__ = ["TxCoalesceTimer"]

#: The CpuCosts entry one arming costs, per kind.
ARM_COST = {"timer_list": "timer_list_arm", "hrtimer": "hrtimer_arm", "hrtimer_idle": "hrtimer_arm"}


class TxCoalesceTimer:
    """One queue's TX coalescing timer. ``deadline_ns`` is its expiry while pending."""

    def __init__(self, netdev: NetDevice) -> None:
        self.netdev = netdev
        self.deadline_ns: float | None = None

    @property
    def pending(self) -> bool:
        """The timer is armed and has not fired (hrtimer_active / timer_pending)."""
        return self.deadline_ns is not None

    async def on_xmit(self, napi_scheduled: bool) -> None:
        """What xmit does with the timer after ringing the doorbell: arm it (:meth:`arm`)."""
        await self.arm(napi_scheduled)

    async def after_clean(self, pending: bool, napi_scheduled: bool) -> None:
        """What the TX clean's NAPI poll does once it has cleaned and, if done, completed:
        with frames still in the ring (``pending``: dirty_tx != cur_tx), arm the timer
        (:meth:`arm`), so the frames left are cleaned even if no xmit and no interrupt
        comes."""
        if pending:
            await self.arm(napi_scheduled)

    async def arm(self, napi_scheduled: bool) -> None:
        """stmmac_tx_timer_arm: start the timer ``tx_timer_us`` from now (pushing a
        pending expiry out); with ``hrtimer_idle`` only when ``napi_scheduled`` is False,
        and otherwise cancel a pending one (the poll that is scheduled arms it again)."""
        config = self.netdev.config
        if config.tx_timer == "none":
            return
        if config.tx_timer == "hrtimer_idle" and napi_scheduled:
            if self.pending:
                await self.netdev.io.charge(ARM_COST[config.tx_timer])
                self.netdev.stats.tx_timer_cancels += 1
                self.deadline_ns = None
            return
        await self.netdev.io.charge(ARM_COST[config.tx_timer])
        self.netdev.stats.tx_timer_arms += 1
        self.deadline_ns = self.netdev.platform.now_ns() + config.tx_timer_us * 1000.0

    async def run(self, napi_poll: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Wait for expiries forever; at each one (while the device is open) run the
        callback's work on ``irq_core``: an hrtimer's clock-event interrupt
        (``irq_entry_exit``) first, then ``timer_tick_overhead`` and the TX clean's
        scheduling (:meth:`_schedule_clean`, with the driver's ``napi_poll``) in softirq
        context. An unarmed timer is looked at once per period, which can only be sooner
        than an expiry armed meanwhile.

        The timer expires when the sleep to the deadline it saw ends with that deadline
        unchanged (not re-armed or cancelled meanwhile), never by comparing the clock with
        the deadline: a deadline is a float sum (now + delay) a clock of whole picoseconds
        may read just below, and the remaining fraction of a picosecond, slept as zero,
        would then be slept again forever without time passing (the stall of
        stmmac-txtimer fixed at its first 5 ms expiry)."""
        netdev = self.netdev
        platform = netdev.platform
        period_ns = netdev.config.tx_timer_us * 1000.0
        while True:
            deadline = self.deadline_ns
            if deadline is None:
                await platform.sleep_ns(period_ns)
                continue
            await platform.sleep_ns(max(0.0, deadline - platform.now_ns()))
            if self.deadline_ns != deadline:
                continue  # pushed out or cancelled while it slept
            self.deadline_ns = None
            if not netdev.is_open:
                continue
            netdev.stats.tx_timer_expiries += 1
            core = netdev.config.irq_core
            if netdev.config.tx_timer != "timer_list":
                async with cpu_context(platform, "hardirq", core):
                    await netdev.io.charge("irq_entry_exit")
            async with cpu_context(platform, "softirq", core):
                await netdev.io.charge("timer_tick_overhead")
                await self._schedule_clean(napi_poll)

    async def _schedule_clean(self, napi_poll: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """stmmac_tx_timer's callback: napi_schedule unless the poll is already scheduled
        (masking the done causes as the ISR does), then the NET_RX softirq's polls until
        NAPI completes."""
        netdev = self.netdev
        if netdev.napi_scheduled:
            return
        await netdev.io.writel(regs.IRQ_ENABLE, ERROR_CAUSES)
        netdev.napi_scheduled = True
        while netdev.napi_scheduled:
            await napi_poll()
