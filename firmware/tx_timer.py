"""The driver's TX coalescing timer, as stmmac's ``tx_coal_timer``: the hardware raises a
TX completion interrupt only every so many frames, so xmit arms a per-queue timer whose
expiry schedules the TX clean (NAPI) for the frames that would otherwise wait.

What arming costs is the point of the kinds (``DriverConfig.tx_timer``):

- ``timer_list``: ``mod_timer`` on every xmit (``timer_list_arm``); the callback runs in
  the timer softirq of the periodic tick, so its expiry costs no interrupt of its own.
- ``hrtimer``: ``hrtimer_start`` on every xmit (``hrtimer_arm``: the timer's rbtree and
  the clock event's reprogramming); its expiry is a clock-event interrupt.
- ``hrtimer_idle``: the same hrtimer, armed by xmit only while the TX clean's NAPI is not
  already scheduled and the timer not already pending.

Re-arming pushes the expiry out, so under steady load the first two rarely fire; the
third fires once per quiet period.
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
        """What xmit does with the timer after queueing a frame (stmmac_tx_timer_arm):
        arm it (pushing a pending expiry out), or with ``hrtimer_idle`` only when
        ``napi_scheduled`` is False and the timer is not pending."""
        config = self.netdev.config
        if config.tx_timer == "none":
            return
        if config.tx_timer == "hrtimer_idle" and (napi_scheduled or self.pending):
            return
        await self.netdev.io.charge(ARM_COST[config.tx_timer])
        self.netdev.stats.tx_timer_arms += 1
        self.deadline_ns = self.netdev.platform.now_ns() + config.tx_timer_us * 1000.0

    async def run(self, napi_poll: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Wait for expiries forever; at each one (while the device is open) run the
        callback's work on ``irq_core``: an hrtimer's clock-event interrupt
        (``irq_entry_exit``) first, then ``timer_tick_overhead`` and the TX clean's
        scheduling (:meth:`_schedule_clean`, with the driver's ``napi_poll``) in softirq
        context. An unarmed timer is looked at once per
        period, which can only be sooner than an expiry armed meanwhile."""
        netdev = self.netdev
        platform = netdev.platform
        period_ns = netdev.config.tx_timer_us * 1000.0
        while True:
            now = platform.now_ns()
            if self.deadline_ns is None or now < self.deadline_ns:
                wait = period_ns if self.deadline_ns is None else self.deadline_ns - now
                await platform.sleep_ns(wait)
                continue
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
