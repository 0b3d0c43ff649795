"""What the driver counts: :class:`DriverStats` (``struct rtnl_link_stats64`` plus the
model's own), the channel halts it handled (:class:`DmaErrorRecord`) and the hardware
counters it folds before a device reset (:data:`FOLDED_COUNTERS`)."""

from __future__ import annotations

from dataclasses import dataclass

from . import regs

__all__ = ["FOLDED_COUNTERS", "DmaErrorRecord", "DriverStats"]

#: The hardware counters a device reset zeroes, folded into ``MacDmaDriver.hw_totals``
#: before it (as Linux drivers fold hardware statistics before a reset).
FOLDED_COUNTERS = (
    "STATS_TX_FRAMES_GOOD",
    "STATS_TX_BYTES_GOOD",
    "STATS_TX_FRAMES_BAD",
    "STATS_TX_UNDERRUNS",
    "STATS_RX_FRAMES_GOOD",
    "STATS_RX_BYTES_GOOD",
    "STATS_RX_FRAMES_BAD",
    "STATS_RX_PREAMBLE_ERRORS",
    "STATS_RX_DROPPED_DISABLED",
    "TX_FRAMES",
    "TX_DROPS",
    "RX_FRAMES",
    "RX_DROPS",
    "RX_FIFO_OVERFLOWS",
    "TX_RESET_DISCARDS",
    "RX_RESET_DISCARDS",
)


@dataclass
class DriverStats:
    """Counters, like ``struct rtnl_link_stats64`` plus the model's own.

    tx_packets/tx_bytes count frames reaped by tx_clean; tx_descriptors those posted.
    rx_packets/rx_bytes count good frames; rx_errors bad frames delivered with ok=False;
    rx_dropped_hw is RX_DROPS + RX_FIFO_OVERFLOWS, read by ``MacDmaDriver.close``.
    queue_stops/queue_wakes, irqs (ISR invocations of the device IRQ), timer_irqs (expiries
    of the poll/housekeeping timers, each a timer interrupt), timer_overruns (expiries
    skipped because the CPU was still busy), polls (NAPI or polling-loop passes),
    mmio_reads/mmio_writes. Beyond the contract: tx_dropped (frames discarded by a TX
    channel reset), rx_dropped (partial frames discarded by an RX reset), dma_errors
    (channel halts handled), cfg_errors (rejected register writes reported),
    tx_linearized (fragmented frames copied into one buffer: ``linearize``), dim_changes
    (coalescing profiles DIM programmed), cache_lines_maintained (line operations of DMA
    cache maintenance, per pass: a line cleaned at map and invalidated at unmap counts
    twice), tx_timer_arms, tx_timer_cancels and tx_timer_expiries (the TX coalescing
    timer: ``tx_timer``),
    tx_bounced (fragments copied into an aligned bounce buffer: ``tx_bounce``), rx_fixups
    (received frames copied 2 bytes along: ``rx_fixup``), rx_irqs (device interrupts with
    RX done among their causes, what axienet's DIM counts), gro_flushes (merged batches
    GRO handed to the stack: ``gro``), tso_segments (frames software TSO cut from
    super-segments: ``xmit_tso``), line_transfers (cache lines the driver's contexts took
    from another core's cache: :class:`~.locks.SharedLine`), irqs_none (ISR invocations
    that found no cause and returned IRQ_NONE: a shared line, or a line sampled before an
    ack had lowered it).
    """

    tx_packets: int = 0
    tx_bytes: int = 0
    tx_descriptors: int = 0
    rx_packets: int = 0
    rx_bytes: int = 0
    rx_errors: int = 0
    rx_dropped_hw: int = 0
    queue_stops: int = 0
    queue_wakes: int = 0
    irqs: int = 0
    timer_irqs: int = 0
    timer_overruns: int = 0
    polls: int = 0
    mmio_reads: int = 0
    mmio_writes: int = 0
    tx_dropped: int = 0
    rx_dropped: int = 0
    dma_errors: int = 0
    cfg_errors: int = 0
    tx_linearized: int = 0
    dim_changes: int = 0
    cache_lines_maintained: int = 0
    tx_timer_arms: int = 0
    tx_timer_cancels: int = 0
    tx_timer_expiries: int = 0
    tx_bounced: int = 0
    rx_fixups: int = 0
    rx_irqs: int = 0
    gro_flushes: int = 0
    tso_segments: int = 0
    line_transfers: int = 0
    irqs_none: int = 0


@dataclass(frozen=True)
class DmaErrorRecord:
    """One channel halt the ISR handled: when, which channel, why (STATUS.error_code)."""

    time_ns: float
    channel: str
    code: regs.DmaErrorCode
    status: int
