"""Interrupt moderation as the driver programs it: the IRQ_MODE of both channels, their
coalescing (IRQ_TX_COALESCE, IRQ_RX_COALESCE), the coalescing timer's clock and the
interrupt rate limit, written at open (``ethtool -C`` in Linux); and, with the ``dim``
strategy, net_dim's RX profile at each completed NAPI poll (dim.py)."""

from __future__ import annotations

from . import regs
from .config import DriverConfig, IrqStrategy, IrqStrategyName
from .dim import DIM_TABLES, DimSample, NetDim
from .io import DeviceIo
from .stats import DriverStats

__all__ = ["IrqModeration"]


class IrqModeration:
    """The moderation registers of one device for an :class:`~.config.IrqStrategy`.

    Members: ``strategy``, ``dim`` (the :class:`~.dim.NetDim` of the ``dim`` strategy,
    else None), ``dim_events`` (the DriverStats counter a DIM sample's events are).
    """

    def __init__(self, io: DeviceIo, strategy: IrqStrategy, dim_table: str = "net_dim") -> None:
        self.io = io
        self.strategy = strategy
        profiles, start, self.dim_events = DIM_TABLES[dim_table]
        self.dim: NetDim | None = (
            NetDim(profiles, profile_index=start) if strategy.kind is IrqStrategyName.DIM else None
        )

    async def program(self, config: DriverConfig) -> None:
        """IRQ_MODE, IRQ_TX_COALESCE, IRQ_RX_COALESCE (DIM's current profile under
        ``dim``), IRQ_SYS_CLK_MHZ and IRQ_MIN_INTERVAL, in that order."""
        strategy, writel = self.strategy, self.io.writel
        tx_mode, rx_mode = int(strategy.tx_irq_mode), int(strategy.irq_mode)
        await writel(
            regs.IRQ_MODE,
            (tx_mode << regs.IRQ_MODE_TX_MODE_SHIFT) | (rx_mode << regs.IRQ_MODE_RX_MODE_SHIFT),
        )
        tx_frames, tx_us = strategy.tx_coalesce
        await writel(
            regs.IRQ_TX_COALESCE,
            (tx_frames << regs.IRQ_TX_COALESCE_FRAMES_SHIFT)
            | (tx_us << regs.IRQ_TX_COALESCE_TIMER_US_SHIFT)
            | (int(strategy.timer_restart) << regs.IRQ_TX_COALESCE_TIMER_RESTART_SHIFT),
        )
        rx_profile = (strategy.coalesce_frames, strategy.coalesce_us)
        if self.dim is not None:
            rx_profile = self.dim.profile
        await writel(regs.IRQ_RX_COALESCE, self._rx_coalesce_value(*rx_profile))
        await writel(regs.IRQ_SYS_CLK_MHZ, config.sys_clk_mhz)
        await writel(regs.IRQ_MIN_INTERVAL, config.irq_min_interval_us)

    async def napi_complete(self, now_ns: float, stats: DriverStats) -> None:
        """net_dim at napi_complete_done (``dim`` only): sample interrupts (all of the
        device's, or its RX interrupts only, as the DIM table's driver counts them), RX
        packets and bytes; when the decision moves to another profile, program
        IRQ_RX_COALESCE with it (counted in ``stats.dim_changes``)."""
        if self.dim is None:
            return
        events = getattr(stats, self.dim_events)
        if self.dim.sample(DimSample(now_ns, events, stats.rx_packets, stats.rx_bytes)):
            stats.dim_changes += 1
            value = self._rx_coalesce_value(*self.dim.profile)
            await self.io.writel(regs.IRQ_RX_COALESCE, value)

    def _rx_coalesce_value(self, frames: int, us: int) -> int:
        return (
            (frames << regs.IRQ_RX_COALESCE_FRAMES_SHIFT)
            | (us << regs.IRQ_RX_COALESCE_TIMER_US_SHIFT)
            | (int(self.strategy.timer_restart) << regs.IRQ_RX_COALESCE_TIMER_RESTART_SHIFT)
        )
