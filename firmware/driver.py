"""The macdma network driver model, written the way a Linux Ethernet driver is.

A kernel engineer should recognise every step, and find it where a driver keeps it:

- the netdev (:class:`MacDmaDriver`, this module): ``ndo_open``/``ndo_stop``, the hard
  IRQ handler (``isr``: read and ack IRQ_STATUS, then per strategy clean, or mask the done
  causes and ``napi_schedule``; DMA errors reset the channel), ``napi_poll`` (returns the
  work done; only ``work < budget`` completes NAPI and unmasks), the run contexts (the
  interrupt context, the polling loop, the housekeeping timer), the reset task after a
  device reset, ``ndo_tx_timeout`` and the statistics;
- the TX queue (:class:`~.tx_queue.TxQueue`, tx_queue.py): its ring and channel registers,
  ``ndo_start_xmit`` (``xmit``), the completion reap with a budget (``clean``), queue
  stop/wake with hysteresis, the TX channel's recovery;
- the RX queue (:class:`~.rx_queue.RxQueue`, rx_queue.py): its ring and channel
  registers, the RX half of a NAPI poll (``poll``), ``refill``, the RX channel's recovery;
- the descriptor ring both queues are built on (ring.py: ``next_to_use`` /
  ``next_to_clean``, one slot always empty, word 3 with ``own`` posted last), the locks
  (locks.py), the ``mii_bus`` ops (mdio.py), the PTP clock (ptp.py), interrupt
  moderation (moderation.py, with net_dim in dim.py), the configuration (config.py), the
  counters (stats.py) and the hooks a test bench may use (hooks.py).

The driver talks to the hardware only through :class:`~macdma.firmware.platform.Platform`
(MMIO, DMA memory, IRQ line, time, CPU cost). Register offsets and fields come only from
``regs.py``, descriptor layouts only from ``descriptor.py``. It is plain ``async`` code:
it imports neither cocotb nor asyncio, and its concurrent contexts are started by
:meth:`MacDmaDriver.run` through the ``spawn`` callable the platform's scheduler gives it.

Everything a user of the driver needs is importable from this module (the names of the
modules above are re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from . import regs
from .cache import COHERENT, CacheHierarchy
from .config import (
    ALL_CAUSES,
    COALESCE_TIMERS,
    DEFAULT_BUDGET,
    DEFAULT_MAX_FRAGS,
    DONE_CAUSES,
    ERROR_CAUSES,
    FC_CTRL_VALUE,
    FC_QUANTA_VALUE,
    FC_WATER_VALUE,
    GRO_MAX_SEGMENTS,
    IRQ_STRATEGIES,
    MAX_IRQ_MIN_INTERVAL_US,
    MAX_PREFETCH,
    MAX_TIMER_US,
    MIN_RING,
    RX_BUFFER_MODES,
    RX_SYNC_MODES,
    TX_CHECKSUM_MODES,
    TX_CLEAN_LOCKS,
    TX_TIMER_KINDS,
    UDP_CSUM_OFFSET,
    UDP_CSUM_START,
    DriverConfig,
    IrqStrategy,
    IrqStrategyName,
)
from .costs import CpuCosts
from .dim import NetDim
from .hooks import DriverHooks, QueueHooks
from .io import DeviceIo
from .locks import LOCK_SPIN_NS, WAKE_POLL_NS, SpinLock, cpu_context, mutex_lock
from .mdio import MDC_MAX_HZ, MDIO_POLL_LIMIT, MDIO_POLL_NS, MdioTimeoutError, MiiBus, mdc_clk_div
from .moderation import IrqModeration
from .platform import Platform
from .ptp import Phc, PtpUnsupportedError
from .ring import RESET_POLL_LIMIT, DescriptorRing
from .rx_queue import OnReceive, RxFrameMeta, RxQueue
from .stats import FOLDED_COUNTERS, DmaErrorRecord, DriverStats
from .timers import housekeep_periodically, poll_periodically
from .tx_queue import TxQueue
from .tx_timer import TxCoalesceTimer

__all__ = [
    "COALESCE_TIMERS",
    "DEFAULT_BUDGET",
    "DEFAULT_MAX_FRAGS",
    "GRO_MAX_SEGMENTS",
    "FC_CTRL_VALUE",
    "FC_QUANTA_VALUE",
    "FC_WATER_VALUE",
    "FOLDED_COUNTERS",
    "IRQ_STRATEGIES",
    "LOCK_SPIN_NS",
    "MAX_IRQ_MIN_INTERVAL_US",
    "MAX_PREFETCH",
    "MAX_TIMER_US",
    "MDC_MAX_HZ",
    "MDIO_POLL_LIMIT",
    "MDIO_POLL_NS",
    "MIN_RING",
    "RESET_POLL_LIMIT",
    "RX_BUFFER_MODES",
    "RX_SYNC_MODES",
    "TX_CHECKSUM_MODES",
    "TX_CLEAN_LOCKS",
    "TX_TIMER_KINDS",
    "UDP_CSUM_OFFSET",
    "UDP_CSUM_START",
    "WAKE_POLL_NS",
    "DescriptorRing",
    "DmaErrorRecord",
    "DriverConfig",
    "DriverHooks",
    "DriverStats",
    "FlowControlUnsupportedError",
    "IrqStrategy",
    "IrqStrategyName",
    "MacDmaDriver",
    "MdioTimeoutError",
    "OnReceive",
    "PtpUnsupportedError",
    "QueueHooks",
    "RxFrameMeta",
    "RxQueue",
    "Spawn",
    "SpinLock",
    "TxQueue",
    "mdc_clk_div",
]

#: The platform scheduler's ``spawn(coro)``: start a concurrent context.
Spawn = Callable[[Coroutine[Any, Any, Any]], Any]


class FlowControlUnsupportedError(RuntimeError):
    """DriverConfig.flow_control asked for on hardware built without it (-EOPNOTSUPP)."""


class MacDmaDriver:
    """The netdev: one TX queue, one RX queue, one interrupt line.

    ``on_receive(frame, ok, meta)`` is the stack (``napi_gro_receive``); it may be a plain
    function or a coroutine function. All work is charged to ``costs`` through
    ``platform.charge(cycles, "<CpuCosts field>")``, DMA cache maintenance per line and
    level of ``caches`` (``cache_clean``, ``cache_invalidate``); all MMIO goes through the
    platform and is counted in :attr:`stats`. ``hooks`` (:class:`~.hooks.DriverHooks`) is
    where a test bench steps in on the queues; None: no hooks.

    Members: ``config``, ``strategy``, ``stats``, ``errors`` (:class:`DmaErrorRecord` per
    channel halt handled), ``hw_totals`` and ``device_resets`` (:meth:`reset_device`),
    ``tx`` and ``rx`` (the :class:`~.tx_queue.TxQueue` and :class:`~.rx_queue.RxQueue`,
    None until the first :meth:`open`), ``napi_scheduled``, ``is_open``, ``tx_timer`` (the
    :class:`~.tx_timer.TxCoalesceTimer` xmit arms: ``tx_timer``), ``dim`` (the
    :class:`~.dim.NetDim` of the ``dim`` strategy, else None), ``phc``, ``mii_bus``; the
    callbacks ``on_receive``, ``on_tx_timestamp``, ``on_tx_dropped`` and ``on_gro_flush``.
    """

    def __init__(
        self,
        platform: Platform,
        config: DriverConfig,
        on_receive: OnReceive | None = None,
        costs: CpuCosts = CpuCosts(),  # noqa: B008 - frozen, so a shared default is safe
        hooks: DriverHooks | None = None,
        caches: CacheHierarchy = COHERENT,
    ) -> None:
        if not isinstance(config, DriverConfig):
            raise ValueError(f"config {config!r} must be a DriverConfig")
        if not isinstance(costs, CpuCosts):
            raise ValueError(f"costs {costs!r} must be a CpuCosts")
        if not isinstance(caches, CacheHierarchy):
            raise ValueError(f"caches {caches!r} must be a CacheHierarchy")
        if hooks is not None and not isinstance(hooks, DriverHooks):
            raise ValueError(f"hooks {hooks!r} must be a DriverHooks")
        self.platform = platform
        self.config = config
        self.strategy = config.strategy
        self.costs = costs
        self.hooks = DriverHooks() if hooks is None else hooks
        self.on_receive = on_receive
        # skb_tstamp_tx: called with the 64-bit TX time of each frame that asked for one
        # (xmit(..., hw_timestamp=True)), in completion order.
        self.on_tx_timestamp: Callable[[int], None] | None = None
        # Called with the ring slot of the first descriptor of each frame a TX channel
        # recovery drops (and counts in ``stats.tx_dropped``), in ring order.
        self.on_tx_dropped: Callable[[int], None] | None = None
        # With DriverConfig.gro: called after each merged batch went up (napi_gro_flush).
        self.on_gro_flush: Callable[[], Any] | None = None
        self.stats = DriverStats()
        self.io = DeviceIo(platform, costs, self.stats, caches)
        self.phc = Phc(self.io)
        self.mii_bus = MiiBus(self)
        # Hardware counters folded in before each device reset (reset_device): a counter's
        # total since the driver was created is hw_totals[name] + its register's value.
        self.hw_totals: dict[str, int] = dict.fromkeys(FOLDED_COUNTERS, 0)
        self.device_resets = 0
        self.errors: list[DmaErrorRecord] = []
        self.tx: TxQueue | None = None
        self.rx: RxQueue | None = None
        self.napi_scheduled = False
        self.is_open = False
        self.tx_timer = TxCoalesceTimer(self)
        self.moderation = IrqModeration(self.io, self.strategy, config.dim_table)
        self.dim: NetDim | None = self.moderation.dim

    @property
    def queue_stopped(self) -> bool:
        """netif_queue_stopped: the TX queue refuses frames until the clean wakes it."""
        return self.tx is not None and self.tx.stopped

    @property
    def locks(self) -> dict[str, SpinLock]:
        """Every named lock of the driver (after open): tx_queue, tx_clean, rx_napi, mdio."""
        found = {self.mii_bus.lock.name: self.mii_bus.lock}
        if self.tx is not None:
            found[self.tx.xmit_lock.name] = self.tx.xmit_lock
            found[self.tx.clean_lock.name] = self.tx.clean_lock
        if self.rx is not None:
            found[self.rx.clean_lock.name] = self.rx.clean_lock
        return found

    # -- ndo_open / ndo_stop -----------------------------------------------------------------

    async def open(self, *, atomic: bool = False) -> None:
        """ndo_open: reset, allocate and program the rings, post RX buffers, enable IRQs,
        start both channels. ``atomic``: called with the TX locks held in softirq context
        (the reset task, :meth:`reset_device`), so the wait for the channel resets
        busy-polls (:meth:`~.ring.DescriptorRing.wait_reset_done`)."""
        cfg, writel = self.config, self.io.writel
        # The queues' memory is allocated once, at the first open (no register access).
        if self.tx is None:
            self.tx = TxQueue(self, cfg.tx_ring, self.hooks.tx)
        if self.rx is None:
            self.rx = RxQueue(self, cfg.rx_ring, cfg.rx_buf, self.hooks.rx)
        tx, rx = self.tx, self.rx
        # Quiesce: both channels stopped and reset (HEAD = 0), no interrupt, stale causes acked.
        await tx.reset_channel()
        await rx.reset_channel()
        await tx.wait_reset_done(atomic=atomic)
        await rx.wait_reset_done(atomic=atomic)
        await tx.sync_frames()
        await writel(regs.IRQ_ENABLE, 0)
        await writel(regs.IRQ_STATUS, ALL_CAUSES)
        tx.clear()
        await tx.program(cfg)
        await rx.program(cfg)
        await self.moderation.program(cfg)
        if cfg.flow_control:
            await self._configure_flow_control()  # quasi-static: before the MAC runs
        if cfg.ptp:
            await self.phc.enable()
        mac_ctrl = regs.MAC_CTRL_TX_ENABLE_MASK | regs.MAC_CTRL_RX_ENABLE_MASK
        if cfg.mii:
            mac_ctrl |= regs.MAC_CTRL_MII_SELECT_MASK
        await writel(regs.MAC_CTRL, mac_ctrl)
        await rx.post_all()
        tx.stopped = False
        self.napi_scheduled = False
        await writel(regs.IRQ_ENABLE, self.strategy.irq_enable)
        await tx.start_channel()
        await rx.start_channel()
        self.is_open = True

    async def _configure_flow_control(self) -> None:
        """802.3x PAUSE both ways (DriverConfig.flow_control), after checking the build
        has it (ID_FEATURES.flow_control)."""
        features = await self.io.readl(regs.ID_FEATURES)
        if not features & regs.ID_FEATURES_FLOW_CONTROL_MASK:
            raise FlowControlUnsupportedError(
                "flow control asked for, but this macdma build has none "
                f"(ID_FEATURES = 0x{features:08x}, flow_control bit clear): build the SoC "
                "with SocParams(flow_control=True) or open with flow_control off"
            )
        await self.io.writel(regs.MAC_FC_QUANTA, FC_QUANTA_VALUE)
        await self.io.writel(regs.MAC_FC_WATER, FC_WATER_VALUE)
        await self.io.writel(regs.MAC_FC_CTRL, FC_CTRL_VALUE)

    async def close(self) -> None:
        """ndo_stop: mask interrupts, stop the MAC and both channels, read the hardware's
        drop counters into ``stats.rx_dropped_hw``."""
        self.is_open = False
        await self.io.writel(regs.IRQ_ENABLE, 0)
        await self.io.writel(regs.MAC_CTRL, 0)
        await self._opened_tx().stop_channel()
        await self._opened_rx().stop_channel()
        await self.read_hw_stats()

    async def read_phc(self) -> int:
        """gettime64 (:meth:`~.ptp.Phc.read`): the PTP clock in 64-bit ns."""
        return await self.phc.read()

    # -- statistics and the reset task -------------------------------------------------------

    async def read_hw_stats(self) -> None:
        """ndo_get_stats64's hardware part: rx_dropped_hw = RX_DROPS + RX_FIFO_OVERFLOWS."""
        drops = await self.io.readl(regs.RX_DROPS)
        overflows = await self.io.readl(regs.RX_FIFO_OVERFLOWS)
        folded = self.hw_totals["RX_DROPS"] + self.hw_totals["RX_FIFO_OVERFLOWS"]
        self.stats.rx_dropped_hw = folded + drops + overflows

    async def fold_hw_stats(self) -> dict[str, int]:
        """Read the counters a device reset zeroes and add them to :attr:`hw_totals`;
        returns what was read."""
        read = {name: await self.io.readl(getattr(regs, name)) for name in FOLDED_COUNTERS}
        for name, value in read.items():
            self.hw_totals[name] += value
        return read

    async def reset_device(self, assert_reset: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """The reset task after a full device reset (a hung device, a PCI function
        reset): stop the TX queue and interrupts, fold the hardware counters into
        :attr:`hw_totals` (the reset zeroes them), let ``assert_reset()`` reset the
        device, then, with the device's state gone but host memory intact, reap what the
        DMA had completed (TX frames written back are sent; RX frames written back are
        delivered), drop and count the rest (TX frames still queued in ``tx_dropped``, an
        RX frame without its EOP in ``rx_dropped``), and open the device again with the
        same configuration. Frames inside the device at the reset and frames that arrive
        while it is down are lost with no counter: what they are is the caller's to
        account for (docs/reliability.md)."""
        tx, rx = self._opened_tx(), self._opened_rx()
        tx.stop_queue()
        await mutex_lock(self.platform, tx.xmit_lock)
        await mutex_lock(self.platform, tx.clean_lock)
        await mutex_lock(self.platform, rx.clean_lock)
        try:
            await self.io.writel(regs.IRQ_ENABLE, 0)
            await self.fold_hw_stats()
            await assert_reset()
            self.is_open = False
            self.device_resets += 1
            await tx.clean_locked(None)
            tx.drop_queued()
            await rx.poll_locked(None, refill=False)
            if rx.partial is not None:
                self.stats.rx_dropped += 1
            # With the TX locks held: a sleeping wait for the channel resets would give
            # the core to an xmit spinning on them, for good.
            await self.open(atomic=True)
            tx.wake_queue()
        finally:
            rx.clean_lock.release()
            tx.clean_lock.release()
            tx.xmit_lock.release()

    async def tx_timeout(self) -> None:
        """ndo_tx_timeout: the stack's watchdog found the TX queue hung; reset the TX
        channel as a TX error does (:meth:`~.tx_queue.TxQueue.recover`). The caller runs
        in softirq context, as the reset task does."""
        await self._opened_tx().recover()

    # -- PHY management: the mii_bus read/write ops -------------------------------------------

    async def mdio_read(self, phy: int, reg: int) -> int:
        """mii_bus->read (:meth:`~.mdio.MiiBus.read`): a clause 22 read of register
        ``reg`` of PHY ``phy``. Raises :class:`MdioTimeoutError` if the MDIO master stays
        busy."""
        return await self.mii_bus.read(phy, reg)

    async def mdio_write(self, phy: int, reg: int, value: int) -> None:
        """mii_bus->write (:meth:`~.mdio.MiiBus.write`): a clause 22 write of ``value``
        to register ``reg`` of PHY ``phy``. Raises :class:`MdioTimeoutError`."""
        await self.mii_bus.write(phy, reg, value)

    # -- the queues' work, as the stack and the contexts call it ------------------------------

    async def xmit(
        self, fragments: list[bytes], *, hw_timestamp: bool = False, dirty_bytes: int | None = None
    ) -> bool:
        """ndo_start_xmit, :meth:`~.tx_queue.TxQueue.xmit`: True queued, False TX_BUSY."""
        tx = self._opened_tx()
        return await tx.xmit(fragments, hw_timestamp=hw_timestamp, dirty_bytes=dirty_bytes)

    async def xmit_tso(
        self, header: bytes, payload: list[bytes], mss: int, *, seq_offset: int | None = None
    ) -> bool:
        """Software TSO of one super-segment (:meth:`~.tx_queue.TxQueue.xmit_tso`)."""
        return await self._opened_tx().xmit_tso(header, payload, mss, seq_offset=seq_offset)

    async def wait_for_wake(self, poll_ns: float = WAKE_POLL_NS) -> None:
        """Return once the TX queue is awake (:meth:`~.tx_queue.TxQueue.wait_for_wake`):
        a *sleeping* wait, like a qdisc's (pktgen spins instead:
        sim/run/scenario_tb.py)."""
        if self.tx is not None:
            await self.tx.wait_for_wake(poll_ns)

    async def tx_clean(self, budget: int | None = None) -> int:
        """Reap up to ``budget`` transmitted frames (:meth:`~.tx_queue.TxQueue.clean`)."""
        return await self._opened_tx().clean(budget)

    async def rx_poll(self, budget: int | None) -> int:
        """Reap up to ``budget`` received frames (:meth:`~.rx_queue.RxQueue.poll`)."""
        return await self._opened_rx().poll(budget)

    def rx_frame_ready(self) -> bool:
        """A written-back RX descriptor waits at next_to_clean (a peek, no charge)."""
        return self._opened_rx().frame_ready()

    # -- interrupts and NAPI -----------------------------------------------------------------

    async def isr(self) -> None:
        """The hard IRQ handler: read IRQ_STATUS, ack it (W1C), recover from DMA errors,
        then clean (per-desc / eop / coalesce) or mask the done causes and schedule NAPI."""
        self.stats.irqs += 1
        status = await self.io.readl(regs.IRQ_STATUS)
        status &= ALL_CAUSES
        if not status:
            self.stats.irqs_none += 1
            return  # IRQ_NONE: shared line or already handled
        # Ack before cleaning: a completion after this point raises the cause again. With
        # rx_per_irq, RX done is acked only once the ring is drained (_rx_per_irq).
        ack = status
        if self.config.rx_per_irq is not None:
            ack &= ~regs.IRQ_STATUS_RX_DONE_MASK
        if ack:
            await self.io.writel(regs.IRQ_STATUS, ack)
        if status & ERROR_CAUSES:
            await self._handle_errors(status)
        if not status & DONE_CAUSES or not self.strategy.kind.takes_done_irqs:
            return
        if status & regs.IRQ_STATUS_RX_DONE_MASK:
            self.stats.rx_irqs += 1
        if self.strategy.uses_napi:
            if not self.napi_scheduled:
                # napi_schedule_prep + __napi_schedule: mask, the poll will unmask.
                await self.io.writel(regs.IRQ_ENABLE, ERROR_CAUSES)
                self.napi_scheduled = True
            return
        if status & regs.IRQ_STATUS_TX_DONE_MASK:
            await self.tx_clean(self.config.tx_clean_budget)
        if status & regs.IRQ_STATUS_RX_DONE_MASK:
            if self.config.rx_per_irq is None:
                await self.rx_poll(None)
            else:
                await self._rx_per_irq(self.config.rx_per_irq)

    async def _rx_per_irq(self, limit: int) -> None:
        """Hand at most ``limit`` frames to the stack, then return. With frames left in the
        ring, RX done stays set and the line is dropped and raised again (RX done masked
        and unmasked), so the next interrupt comes as the hardware allows it
        (IRQ_MIN_INTERVAL); with the ring drained, RX done is acked."""
        await self.rx_poll(limit)
        if self.rx_frame_ready():
            enable = self.strategy.irq_enable
            await self.io.writel(regs.IRQ_ENABLE, enable & ~regs.IRQ_STATUS_RX_DONE_MASK)
            await self.io.writel(regs.IRQ_ENABLE, enable)
            return
        await self.io.writel(regs.IRQ_STATUS, regs.IRQ_STATUS_RX_DONE_MASK)
        # A frame written back while the ack was on the bus may have had its cause
        # cleared with it: take it now rather than strand it until the next frame.
        while self.rx_frame_ready():
            await self.rx_poll(limit)

    async def napi_poll(self, budget: int | None = None) -> int:
        """One NAPI poll: tx_clean up to the TX weight (``tx_napi_weight``, default the
        budget) + rx_poll with ``budget`` (default the strategy's).

        Returns the work done (RX frames; ``budget`` when TX cleaning used its whole
        weight, as igb does). Only when work < budget: napi_complete_done and unmask the
        done causes (a cause that arrived meanwhile fires at once). Otherwise NAPI stays
        scheduled. Last, the TX coalescing timer (:meth:`~.tx_timer.TxCoalesceTimer.after_clean`).
        """
        budget = self.strategy.budget if budget is None else budget
        tx_weight = self.config.tx_napi_weight or budget
        self.stats.polls += 1
        await self.io.charge("napi_poll_overhead")
        tx_done = await self.tx_clean(tx_weight)
        work = await self.rx_poll(budget)
        if tx_done >= tx_weight:
            work = budget
        work = min(work, budget)
        if work < budget and self.napi_scheduled:
            self.napi_scheduled = False
            await self.moderation.napi_complete(self.platform.now_ns(), self.stats)
            await self.io.writel(regs.IRQ_ENABLE, self.strategy.irq_enable)
        await self.tx_timer.after_clean(self._opened_tx().pending(), self.napi_scheduled)
        return work

    async def _handle_errors(self, status: int) -> None:
        """The error causes: a rejected register write is reported; a halted channel is
        recorded and its queue recovers."""
        if status & regs.IRQ_STATUS_CFG_ERROR_MASK:
            bits = await self.io.readl(regs.ID_CFG_ERROR)
            await self.io.writel(regs.ID_CFG_ERROR, bits)
            self.stats.cfg_errors += 1
            self.errors.append(
                DmaErrorRecord(self.platform.now_ns(), "cfg", regs.DmaErrorCode.NONE, bits)
            )
        for cause, opened in (
            (regs.IRQ_STATUS_TX_ERROR_MASK, self._opened_tx),
            (regs.IRQ_STATUS_RX_ERROR_MASK, self._opened_rx),
        ):
            if status & cause:
                queue = opened()
                self.errors.append(await queue.read_error())
                self.stats.dma_errors += 1
                await queue.recover()

    # -- the driver's contexts ---------------------------------------------------------------

    async def run(self, spawn: Spawn) -> None:
        """Run the driver's contexts forever; ``spawn(coro)`` starts a concurrent task on
        the platform's scheduler. The interrupt context runs here; the polling loop and the
        housekeeping tick are spawned when the configuration asks for them."""
        if self.strategy.kind is IrqStrategyName.POLLING:
            spawn(poll_periodically(self, self.strategy, self.tx_clean, self.rx_poll))
        if self.config.housekeeping_hz is not None:
            spawn(housekeep_periodically(self, self.tx_clean))
        if self.config.tx_timer != "none":
            spawn(self.tx_timer.run(self.napi_poll))
        await self._interrupt_context()

    async def _interrupt_context(self) -> None:
        """The device IRQ: wait for the line (sleeping), run the hard IRQ handler, then,
        as irq_exit() does, the pending NET_RX softirq: NAPI polls until the work drops
        below the budget (napi_poll then unmasks and the next IRQ brings us back). The
        softirq runs to completion against process context; a hard IRQ arriving meanwhile
        is taken when it ends (in NAPI mode the done causes are masked anyway)."""
        while True:
            await self.platform.wait_irq()
            async with cpu_context(self.platform, "hardirq", self.config.irq_core):
                await self.io.charge("irq_entry_exit")
                await self.isr()
            if self.napi_scheduled:
                async with cpu_context(self.platform, "softirq", self.config.irq_core):
                    while self.napi_scheduled:
                        await self.napi_poll()

    # -- helpers -----------------------------------------------------------------------------

    def _opened_tx(self) -> TxQueue:
        if self.tx is None:
            raise RuntimeError("The driver is not open: call open() first")
        return self.tx

    def _opened_rx(self) -> RxQueue:
        if self.rx is None:
            raise RuntimeError("The driver is not open: call open() first")
        return self.rx
