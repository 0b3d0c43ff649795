"""The macdma network driver model, written the way a Linux Ethernet driver is.

A kernel engineer should recognise every step:

- two descriptor rings (:class:`TxRing`, :class:`RxRing`) with ``next_to_use`` (producer)
  and ``next_to_clean`` (consumer) indices; one slot is always left empty so that
  ``next_to_use == next_to_clean`` means "empty" (the hardware's HEAD == TAIL);
- ``xmit`` is ``ndo_start_xmit``: map the fragments, fill descriptors (word 3, which holds
  ``own``, last, after a write barrier), ring the TX doorbell (TAIL), stop the queue when
  a worst-case frame no longer fits, return ``NETDEV_TX_BUSY`` (False) while stopped;
- ``tx_clean`` reaps written-back descriptors and wakes the queue with hysteresis
  (``wake_threshold`` free descriptors, not merely one frame's worth);
- ``rx_poll`` is the RX half of a NAPI poll: reap write-backs, chain multi-buffer frames
  from SOP to EOP, hand each to the stack, refill, ring RX TAIL once per poll;
- ``isr`` is the hard interrupt handler: read and ack IRQ_STATUS, then per strategy clean,
  or mask the done causes and ``napi_schedule``; DMA errors reset and re-open the channel;
- ``napi_poll`` returns the work done; only ``work < budget`` completes NAPI and unmasks;
- ``mdio_read``/``mdio_write`` are the ``mii_bus`` read/write ops: program the MDC divider
  once, wait for idle, write MDIO_CMD, poll MDIO_STATUS.busy (bounded), as macb does.

The driver talks to the hardware only through :class:`~macdma.firmware.platform.Platform`
(MMIO, DMA memory, IRQ line, time, CPU cost). Register offsets and fields come only from
``regs.py``, descriptor layouts only from ``descriptor.py``. It is plain ``async`` code:
it imports neither cocotb nor asyncio, and its concurrent contexts are started by
:meth:`MacDmaDriver.run` through the ``spawn`` callable the platform's scheduler gives it.
"""

from __future__ import annotations

import contextlib
import inspect
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, fields, replace
from typing import Any

from . import regs
from .costs import CpuCosts
from .descriptor import (
    DESCRIPTOR_BYTES,
    MAX_BUFFER_BYTES,
    MIN_RX_BUFFER_BYTES,
    Descriptor,
    RxErrorCause,
    extend_timestamp,
)
from .dim import DIM_RX_PROFILES, DimSample, NetDim
from .platform import Platform

__all__ = [
    "IRQ_STRATEGIES",
    "TX_CLEAN_LOCKS",
    "SpinLock",
    "MDC_MAX_HZ",
    "MDIO_POLL_LIMIT",
    "MDIO_POLL_NS",
    "DriverConfig",
    "DriverStats",
    "FlowControlUnsupportedError",
    "PtpUnsupportedError",
    "IrqStrategy",
    "MacDmaDriver",
    "MdioTimeoutError",
    "mdc_clk_div",
    "RxFrameMeta",
    "RxRing",
    "TxRing",
]

IRQ_STRATEGIES = ("per-desc", "eop", "coalesce", "polling", "napi", "dim")
#: IrqStrategy.coalesce_timer: when the coalescing timer starts (IRQ_*_COALESCE
#: timer_restart 0 / 1): at the first uncounted completion, or again at every one.
COALESCE_TIMERS = ("first", "last")
#: How TX clean synchronises with xmit (DriverConfig.tx_clean_lock).
TX_CLEAN_LOCKS = ("queue", "frozen")

#: Worst-case descriptors per frame: MAX_SKB_FRAGS (16 with 4 KiB pages) + the linear part.
DEFAULT_MAX_FRAGS = 17
#: The smallest ring the driver runs: one descriptor in flight, one kept free.
MIN_RING = 2
#: NAPI_POLL_WEIGHT in Linux.
DEFAULT_BUDGET = 64
#: How often a context that must wait for another one re-checks (no event primitive is
#: available without importing a scheduler): wait_for_wake and the ring locks.
WAKE_POLL_NS = 200.0
#: How often a context spinning on a spinlock re-reads it (a cache line bouncing between
#: cores: tens of ns; the spin's resolution).
LOCK_SPIN_NS = 20.0

_DONE_CAUSES = regs.IRQ_STATUS_TX_DONE_MASK | regs.IRQ_STATUS_RX_DONE_MASK
_ERROR_CAUSES = (
    regs.IRQ_STATUS_TX_ERROR_MASK | regs.IRQ_STATUS_RX_ERROR_MASK | regs.IRQ_STATUS_CFG_ERROR_MASK
)
_ALL_CAUSES = _DONE_CAUSES | _ERROR_CAUSES
_WORD3_OFFSET = 12  # byte offset of word 3 (length, ioc, sop, eop, own) in a descriptor

#: Fastest MDC the driver programs (IEEE 802.3 22.2.2.11).
MDC_MAX_HZ = 2_500_000
#: MDIO_STATUS reads before mdio_read/mdio_write give up (readl_poll_timeout's bound). A
#: frame is 64 MDC periods: 26 µs at 2.5 MHz, at most 2 * 255 * 64 system clocks.
MDIO_POLL_LIMIT = 1000
#: Pause between two MDIO_STATUS polls (the poll's sleep_us; the CPU is free meanwhile).
MDIO_POLL_NS = 1000.0
#: IRQ_MIN_INTERVAL's valid values are 0..this (the register map's).
MAX_IRQ_MIN_INTERVAL_US = regs.IRQ_MIN_INTERVAL_US_MAX
#: PREFETCH's valid values are 1..this (the register map's). A larger value than
#: FEATURES.max_prefetch is accepted and clamped by the DMA.
MAX_PREFETCH = regs.TX_PREFETCH_MAX
#: The largest value of a µs timer field (COALESCE.timer_us, POLL_US): all its bits.
MAX_TIMER_US = (1 << regs.IRQ_TX_COALESCE_TIMER_US_WIDTH) - 1


#: 802.3x flow control as open() programs it (DriverConfig.flow_control): the register
#: map's reset values, written anyway so a re-open does not inherit another setting.
#: XOFF quanta 65535 (33.6 ms at 1 Gb/s; e1000/igb send the same 0xFFFF), refreshed every
#: 32767 quanta while the RX FIFO stays full; XOFF at 1024 bytes in the RX FIFO, XON
#: below 512: with the 4 KiB RX FIFO of the default build that leaves room for the two
#: full frames that can still arrive after the XOFF (docs/registers.md, MAC_FC_WATER).
FC_QUANTA_VALUE = regs.MAC_FC_QUANTA_RESET_VALUE
FC_WATER_VALUE = regs.MAC_FC_WATER_RESET_VALUE
#: Both directions, as ``ethtool -A <dev> rx on tx on``: honour received PAUSE frames,
#: send them when the RX FIFO backs up (and hold a frame without a buffer in the FIFO).
FC_CTRL_VALUE = regs.MAC_FC_CTRL_RX_PAUSE_MASK | regs.MAC_FC_CTRL_TX_PAUSE_MASK


def _check_int(owner: str, name: str, value: Any, low: int, high: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{owner}.{name} = {value!r} must be an integer")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{owner}.{name} = {value!r} is out of range ({bound})")


def _check_map(owner: str, name: str, value: Any, valid: tuple[range, ...]) -> None:
    """Check ``value`` against a field's valid values as the register map gives them
    (``regs.<FIELD>_VALID``), so the driver refuses what the hardware would reject."""
    _check_int(owner, name, value, min(r[0] for r in valid), None)
    if not any(value in r for r in valid):
        ranges = ", ".join(
            f"{r[0]}..{r[-1]}" + (f" step {r.step}" if r.step > 1 else "") for r in valid
        )
        raise ValueError(f"{owner}.{name} = {value!r} is out of range ({ranges})")


def _field(value: int, mask: int, shift: int) -> int:
    return (value & mask) >> shift


#: Polls of STATUS after a channel reset before giving up (each WAKE_POLL_NS apart).
RESET_POLL_LIMIT = 10_000
#: The hardware counters a device reset zeroes, folded into :attr:`MacDmaDriver.hw_totals`
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
# STATUS.halted, at the same bit on both channels.
_STATUS_HALTED_MASK = regs.TX_STATUS_HALTED_MASK
assert regs.RX_STATUS_HALTED_MASK == _STATUS_HALTED_MASK
#: STATUS while a CTRL.reset is still winding down: halted (until the state is reset) or
#: resetting (the AXI transaction in flight not finished yet).
_STATUS_RESET_BUSY_MASK = _STATUS_HALTED_MASK | regs.TX_STATUS_RESETTING_MASK
assert regs.RX_STATUS_RESETTING_MASK == regs.TX_STATUS_RESETTING_MASK


# -- configuration -------------------------------------------------------------------------


#: ``DriverConfig.tx_checksum``: nobody, the hardware (CHECKSUM_PARTIAL) or the stack.
TX_CHECKSUM_MODES = ("none", "hw", "sw")
#: UDP over untagged IPv4 without options: the segment starts at byte 14 + 20, its
#: checksum 6 bytes in.
UDP_CSUM_START = 34
UDP_CSUM_OFFSET = 6


@dataclass(frozen=True)
class IrqStrategy:
    """How completions reach the driver.

    ``name`` is one of:

    - ``"per-desc"``: IRQ_MODE PER_DESC; IOC is set on every TX and RX descriptor, so every
      descriptor interrupts (the MicroBlaze report). The ISR cleans TX and RX.
    - ``"eop"``: IRQ_MODE EOP: one interrupt per frame. The ISR cleans.
    - ``"coalesce"``: IRQ_MODE COALESCE with ``coalesce_frames`` / ``coalesce_us``. The ISR
      cleans.
    - ``"polling"``: IRQ_MODE NONE and the done causes never enabled; a loop every
      ``poll_us`` runs ``tx_clean(budget)`` + ``rx_poll(budget)`` (re-polling at once while
      a poll used its whole budget). Only error causes interrupt.
    - ``"napi"``: the ISR masks the done causes, acks and schedules NAPI; the poll runs
      ``tx_clean`` + ``rx_poll`` with ``budget`` and unmasks only when the work done is
      below the budget, else polls again. IRQ_MODE COALESCE when ``coalesce_frames > 1`` or
      ``coalesce_us > 0``, else EOP.
    - ``"dim"``: ``napi`` with adaptive RX moderation (firmware/dim.py, after Linux's
      net_dim): IRQ_MODE COALESCE; every DIM_NEVENTS interrupts the completed NAPI poll
      samples interrupts, RX packets and bytes and may program another (frames, µs)
      profile into IRQ_RX_COALESCE. TX keeps ``coalesce_frames``/``coalesce_us``.

    TX interrupt moderation of its own (every strategy but ``polling``): with
    ``tx_coalesce_frames`` or ``tx_coalesce_us`` set, the TX channel gets IRQ_MODE tx_mode
    COALESCE and IRQ_TX_COALESCE from them (a member left unset takes ``coalesce_frames`` /
    ``coalesce_us``), whatever RX gets; like an AXI DMA's TX channel, whose threshold and
    delay the Linux axienet driver programs apart from RX's. Where the TX completions are
    cleaned does not change (the ISR, or the NAPI poll with both done causes masked). Both
    unset (the default): TX is programmed as RX.

    ``coalesce_timer`` (both directions' IRQ_*_COALESCE.timer_restart): ``"first"`` (the
    default) runs the timer from the first uncounted completion, so no completion waits
    longer than the timer; ``"last"`` restarts it at every completion, so it fires after
    that long without one, as the Xilinx AXI DMA's IRQDelay does (PG021; the Linux axienet
    driver programs it as "µs after the last completion").

    Members: ``coalesce_frames`` (1..255), ``coalesce_us`` (0..65535), ``poll_us`` (µs
    between polls, >= 1 for polling), ``budget`` (NAPI / poll budget in packets, >= 1),
    ``tx_coalesce_frames`` (1..255 or None), ``tx_coalesce_us`` (0..65535 or None),
    ``coalesce_timer`` (one of :data:`COALESCE_TIMERS`).
    """

    name: str = "napi"
    coalesce_frames: int = 1
    coalesce_us: int = 0
    poll_us: int = 10
    budget: int = DEFAULT_BUDGET
    tx_coalesce_frames: int | None = None
    tx_coalesce_us: int | None = None
    coalesce_timer: str = "first"

    def __post_init__(self) -> None:
        if self.name not in IRQ_STRATEGIES:
            raise ValueError(
                f"IRQ strategy {self.name!r} is not one of {', '.join(IRQ_STRATEGIES)}"
            )
        if self.coalesce_timer not in COALESCE_TIMERS:
            raise ValueError(
                f"IrqStrategy coalesce_timer {self.coalesce_timer!r} is not one of "
                f"{', '.join(COALESCE_TIMERS)}"
            )
        _check_map(
            "IrqStrategy",
            "coalesce_frames",
            self.coalesce_frames,
            regs.IRQ_TX_COALESCE_FRAMES_VALID,
        )
        _check_int("IrqStrategy", "coalesce_us", self.coalesce_us, 0, MAX_TIMER_US)
        _check_int("IrqStrategy", "poll_us", self.poll_us, 1 if self.name == "polling" else 0, None)
        _check_int("IrqStrategy", "budget", self.budget, 1, None)
        if self.tx_coalesce_frames is not None:
            _check_map(
                "IrqStrategy",
                "tx_coalesce_frames",
                self.tx_coalesce_frames,
                regs.IRQ_TX_COALESCE_FRAMES_VALID,
            )
        if self.tx_coalesce_us is not None:
            _check_int("IrqStrategy", "tx_coalesce_us", self.tx_coalesce_us, 0, MAX_TIMER_US)
        if self.name == "polling" and self.tx_moderated:
            raise ValueError(
                f"IRQ strategy polling takes no TX interrupts; tx_coalesce_frames "
                f"{self.tx_coalesce_frames} / tx_coalesce_us {self.tx_coalesce_us} need a "
                "strategy that uses them"
            )

    @classmethod
    def parse(cls, text: str | IrqStrategy, **overrides: int) -> IrqStrategy:
        """Build a strategy from ``"name"`` or ``"name:key=value,key=value"``.

        Keys are the field names; ``frames`` and ``us`` are short for ``coalesce_frames`` and
        ``coalesce_us`` (``us`` means ``poll_us`` for ``polling``). Keyword ``overrides`` win.
        Examples: ``"eop"``, ``"coalesce:frames=8,us=50"``, ``"polling:us=20,budget=16"``,
        ``"napi:budget=32"``. Raises ValueError naming a bad name, key or value.
        """
        if isinstance(text, IrqStrategy):
            return replace(text, **overrides) if overrides else text
        if not isinstance(text, str):
            raise ValueError(f"IRQ strategy {text!r} must be a string such as 'napi'")
        name, _, rest = text.strip().partition(":")
        name = name.strip()
        if name not in IRQ_STRATEGIES:
            raise ValueError(f"IRQ strategy {name!r} is not one of {', '.join(IRQ_STRATEGIES)}")
        aliases = {
            "frames": "coalesce_frames",
            "us": "poll_us" if name == "polling" else "coalesce_us",
            "tx_frames": "tx_coalesce_frames",
            "tx_us": "tx_coalesce_us",
        }
        known = {f.name for f in fields(cls)} - {"name", "coalesce_timer"}
        values: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in rest.split(","))):
            key, eq, raw = item.partition("=")
            key = aliases.get(key.strip(), key.strip())
            if not eq or key not in known:
                raise ValueError(
                    f"IRQ strategy option {item!r} in {text!r}: expected key=value with key in "
                    f"{', '.join(sorted(known | set(aliases)))}"
                )
            try:
                values[key] = int(raw.strip(), 0)
            except ValueError:
                raise ValueError(
                    f"IRQ strategy option {item!r} in {text!r}: {raw.strip()!r} is not an integer"
                ) from None
        values.update(overrides)
        return cls(name=name, **values)

    @property
    def irq_mode(self) -> regs.IrqMode:
        """The IRQ_MODE rx_mode (and tx_mode unless :attr:`tx_moderated`)."""
        if self.name == "per-desc":
            return regs.IrqMode.PER_DESC
        if self.name == "eop":
            return regs.IrqMode.EOP
        if self.name == "coalesce":
            return regs.IrqMode.COALESCE
        if self.name == "polling":
            return regs.IrqMode.NONE
        if self.name == "dim":
            return regs.IrqMode.COALESCE
        # napi
        if self.coalesce_frames > 1 or self.coalesce_us > 0:
            return regs.IrqMode.COALESCE
        return regs.IrqMode.EOP

    @property
    def tx_moderated(self) -> bool:
        """TX has an interrupt moderation of its own (``tx_coalesce_*`` set)."""
        return self.tx_coalesce_frames is not None or self.tx_coalesce_us is not None

    @property
    def tx_irq_mode(self) -> regs.IrqMode:
        """The IRQ_MODE tx_mode: COALESCE when :attr:`tx_moderated`, else :attr:`irq_mode`."""
        return regs.IrqMode.COALESCE if self.tx_moderated else self.irq_mode

    @property
    def tx_coalesce(self) -> tuple[int, int]:
        """(frames, µs) for IRQ_TX_COALESCE: ``tx_coalesce_*``, an unset one the shared
        ``coalesce_*``."""
        frames = (
            self.coalesce_frames if self.tx_coalesce_frames is None else self.tx_coalesce_frames
        )
        us = self.coalesce_us if self.tx_coalesce_us is None else self.tx_coalesce_us
        return frames, us

    @property
    def timer_restart(self) -> bool:
        """IRQ_*_COALESCE.timer_restart: every completion restarts the coalescing timer."""
        return self.coalesce_timer == "last"

    @property
    def uses_napi(self) -> bool:
        """The ISR schedules a NAPI poll (napi, dim) instead of cleaning itself."""
        return self.name in ("napi", "dim")

    @property
    def ioc(self) -> bool:
        """Whether descriptors carry IOC (only PER_DESC mode looks at it)."""
        return self.name == "per-desc"

    @property
    def irq_enable(self) -> int:
        """IRQ_ENABLE after open: error causes always; done causes unless polling."""
        return _ERROR_CAUSES if self.name == "polling" else _ALL_CAUSES


@dataclass(frozen=True)
class DriverConfig:
    """Everything the driver programs at open, validated (ValueError naming the value).

    Members:
        tx_ring, rx_ring: descriptors per ring, 2..4096 (at most ring - 1 are in flight).
        rx_buf: bytes per RX buffer, 64..65535; a longer frame spans several buffers.
        burst_beats: AXI burst cap for both channels, 1..256.
        prefetch: descriptors fetched per descriptor read, 1..16 (the DMA clamps it to
            FEATURES.max_prefetch).
        strategy: the :class:`IrqStrategy` (a string is parsed with ``IrqStrategy.parse``).
        tx_clean_budget: packets per TX clean from the ISR and the housekeeping tick;
            None = unlimited.
        housekeeping_hz: None = no tick; else a timer tick that runs
            ``tx_clean(tx_clean_budget)`` (the MIPS router report).
        sys_clk_mhz: system clock for IRQ_SYS_CLK_MHZ (the coalescing timer), 1..1000.
        irq_min_interval_us: IRQ_MIN_INTERVAL, the hardware's interrupt rate limit (like
            e1000's InterruptThrottleRate: 125 = at most 8,000 interrupts/s); 0 = off.
        max_frags: worst-case fragments per frame: the queue stops when fewer descriptors
            than this are free. 1..tx_ring - 1; None = 17 (16 fragments plus a header, as
            MAX_SKB_FRAGS + 1), or tx_ring - 1 on a smaller ring.
        wake_threshold: free descriptors needed to wake the stopped queue (hysteresis);
            max_frags..tx_ring - 1; None = min(2 * max_frags, tx_ring - 1).
        dma_poll_us: TX_POLL_US / RX_POLL_US, the DMA's descriptor re-check interval;
            0 = off (doorbell only). 0..65535.
        mii: MAC_CTRL.mii_select: 4-bit MII (10/100 Mb/s) instead of GMII.
        irq_core: the core the device IRQ, its NAPI poll, the polling loop and the
            housekeeping timer run on (the IRQ's affinity), 0..cores - 1 of the CPU.
        tx_clean_lock: how TX clean synchronises with xmit. ``"frozen"``: clean reaps
            without the TX queue lock and meets xmit only on the ring indices (xmit keeps
            queueing into free slots meanwhile); ``"queue"``: clean holds the TX queue
            lock for its whole run, so xmit on another core spins until it is done.
        rx_per_irq: None = the strategy's normal RX handling; N = the interrupt handler
            hands at most N received frames to the stack per interrupt and returns (a
            driver that takes one packet per completion event: N = 1). Needs a strategy
            whose ISR cleans (per-desc, eop, coalesce).
        linearize: copy a fragmented TX frame into one buffer before xmit (a device
            without scatter-gather: skb_linearize, charged ``per_byte_linearize``) and
            post it as one descriptor; False = one descriptor per fragment.
        flow_control: 802.3x PAUSE both ways at open (MAC_FC_CTRL rx_pause and tx_pause,
            with FC_QUANTA_VALUE and FC_WATER_VALUE); open raises
            :class:`FlowControlUnsupportedError` on a build without
            ID_FEATURES.flow_control. False leaves the MAC_FC_* registers alone (reset:
            off).
        tx_checksum: who computes a TX frame's UDP checksum. ``"none"``: nobody (pktgen
            without UDPCSUM, as the field reports ran); ``"hw"``: the SOP descriptor asks
            the hardware (CHECKSUM_PARTIAL, UDP over IPv4: csum_start 34, csum_offset 6);
            ``"sw"``: the stack sums the segment, charged ``per_byte_csum`` per byte.
        ptp: hardware timestamps (IEEE 1588): open checks ID_FEATURES.ptp (else
            :class:`PtpUnsupportedError`) and turns on RX timestamping
            (PTP_CTRL.rx_timestamp, HWTSTAMP_FILTER_ALL); each good frame's
            :class:`RxFrameMeta` then has ``hw_timestamp_ns``, and ``xmit(...,
            hw_timestamp=True)`` asks for a frame's TX time (SKBTX_HW_TSTAMP), given to
            ``on_tx_timestamp`` when the frame is cleaned. The driver reads the PHC at
            open and once per RX poll / TX clean that finds a timestamp, to extend the
            descriptors' 32 bits (:func:`~.descriptor.extend_timestamp`).
    """

    tx_ring: int = 256
    rx_ring: int = 256
    rx_buf: int = 1536
    burst_beats: int = regs.TX_BURST_BEATS_RESET_VALUE
    prefetch: int = 4
    strategy: IrqStrategy = field(default_factory=IrqStrategy)
    tx_clean_budget: int | None = None
    housekeeping_hz: float | None = None
    sys_clk_mhz: int = regs.IRQ_SYS_CLK_MHZ_RESET_VALUE
    irq_min_interval_us: int = 0
    max_frags: int | None = None
    wake_threshold: int | None = None
    dma_poll_us: int = 0
    mii: bool = False
    irq_core: int = 0
    tx_clean_lock: str = "frozen"
    rx_per_irq: int | None = None
    linearize: bool = False
    flow_control: bool = False
    tx_checksum: str = "none"
    ptp: bool = False

    def __post_init__(self) -> None:
        own = "DriverConfig"
        # RING_SIZE 0 (valid in the map) turns a ring off; the driver always has one.
        _check_int(own, "tx_ring", self.tx_ring, MIN_RING, regs.TX_RING_SIZE_MAX)
        _check_int(own, "rx_ring", self.rx_ring, MIN_RING, regs.RX_RING_SIZE_MAX)
        _check_int(own, "rx_buf", self.rx_buf, MIN_RX_BUFFER_BYTES, MAX_BUFFER_BYTES)
        _check_map(own, "burst_beats", self.burst_beats, regs.TX_BURST_BEATS_VALID)
        _check_map(own, "prefetch", self.prefetch, regs.TX_PREFETCH_VALID)
        if isinstance(self.strategy, str):
            object.__setattr__(self, "strategy", IrqStrategy.parse(self.strategy))
        if not isinstance(self.strategy, IrqStrategy):
            raise ValueError(f"DriverConfig.strategy = {self.strategy!r} must be an IrqStrategy")
        if self.tx_clean_budget is not None:
            _check_int(own, "tx_clean_budget", self.tx_clean_budget, 1, None)
        if self.housekeeping_hz is not None:
            hz = self.housekeeping_hz
            if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not hz > 0:
                raise ValueError(f"DriverConfig.housekeeping_hz = {hz!r} must be > 0 or None")
        _check_map(own, "sys_clk_mhz", self.sys_clk_mhz, regs.IRQ_SYS_CLK_MHZ_VALID)
        _check_map(
            own, "irq_min_interval_us", self.irq_min_interval_us, regs.IRQ_MIN_INTERVAL_US_VALID
        )
        if self.max_frags is None:
            object.__setattr__(self, "max_frags", min(DEFAULT_MAX_FRAGS, self.tx_ring - 1))
        _check_int(own, "max_frags", self.max_frags, 1, self.tx_ring - 1)
        if self.wake_threshold is None:
            object.__setattr__(self, "wake_threshold", min(2 * self.max_frags, self.tx_ring - 1))
        _check_int(own, "wake_threshold", self.wake_threshold, self.max_frags, self.tx_ring - 1)
        _check_int(own, "dma_poll_us", self.dma_poll_us, 0, MAX_TIMER_US)
        if not isinstance(self.mii, bool):
            raise ValueError(f"DriverConfig.mii = {self.mii!r} must be a bool")
        _check_int(own, "irq_core", self.irq_core, 0, None)
        if self.tx_clean_lock not in TX_CLEAN_LOCKS:
            raise ValueError(
                f"DriverConfig.tx_clean_lock = {self.tx_clean_lock!r} is not one of "
                f"{', '.join(TX_CLEAN_LOCKS)}"
            )
        if self.rx_per_irq is not None:
            _check_int(own, "rx_per_irq", self.rx_per_irq, 1, None)
            if self.strategy.name not in ("per-desc", "eop", "coalesce"):
                raise ValueError(
                    f"DriverConfig.rx_per_irq = {self.rx_per_irq!r} needs an IRQ strategy "
                    f"whose handler cleans (per-desc, eop, coalesce), not "
                    f"{self.strategy.name!r}"
                )
        if self.tx_checksum not in TX_CHECKSUM_MODES:
            raise ValueError(
                f"DriverConfig.tx_checksum = {self.tx_checksum!r} must be one of "
                f"{', '.join(TX_CHECKSUM_MODES)}"
            )
        if not isinstance(self.linearize, bool):
            raise ValueError(f"DriverConfig.linearize = {self.linearize!r} must be a bool")
        if not isinstance(self.flow_control, bool):
            raise ValueError(f"DriverConfig.flow_control = {self.flow_control!r} must be a bool")
        if not isinstance(self.ptp, bool):
            raise ValueError(f"DriverConfig.ptp = {self.ptp!r} must be a bool")


@dataclass
class DriverStats:
    """Counters, like ``struct rtnl_link_stats64`` plus the model's own.

    tx_packets/tx_bytes count frames reaped by tx_clean; tx_descriptors those posted.
    rx_packets/rx_bytes count good frames; rx_errors bad frames delivered with ok=False;
    rx_dropped_hw is RX_DROPS + RX_FIFO_OVERFLOWS, read by :meth:`MacDmaDriver.close`.
    queue_stops/queue_wakes, irqs (ISR invocations of the device IRQ), timer_irqs (expiries
    of the poll/housekeeping timers, each a timer interrupt), timer_overruns (expiries
    skipped because the CPU was still busy), polls (NAPI or polling-loop passes),
    mmio_reads/mmio_writes. Beyond the contract: tx_dropped (frames discarded by a TX
    channel reset), rx_dropped (partial frames discarded by an RX reset), dma_errors
    (channel halts handled), cfg_errors (rejected register writes reported),
    tx_linearized (fragmented frames copied into one buffer: ``linearize``), dim_changes
    (coalescing profiles DIM programmed).
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


@dataclass(frozen=True)
class RxFrameMeta:
    """What the driver tells the stack about a received frame (the third on_receive
    argument). ``frame_length`` is the write-back's; ``buffers`` how many it spanned."""

    frame_length: int
    buffers: int
    error: bool
    rx_error: RxErrorCause
    rx_truncated: bool
    time_ns: float
    # skb->csum with CHECKSUM_COMPLETE: the EOP write-back's rx_csum (the sum from byte 14;
    # 0 for a bad frame or hardware without ID_FEATURES.rx_checksum).
    csum: int = 0
    # skb_hwtstamps: the frame's SFD time in PTP ns (DriverConfig.ptp), None without one.
    hw_timestamp_ns: int | None = None


@dataclass(frozen=True)
class DmaErrorRecord:
    """One channel halt the ISR handled: when, which channel, why (STATUS.error_code)."""

    time_ns: float
    channel: str
    code: regs.DmaErrorCode
    status: int


@dataclass(frozen=True)
class _ChannelRegs:
    """One DMA channel's registers (from regs.py), so TX and RX share the setup code."""

    name: str
    ctrl: int
    status: int
    ring_base: int
    ring_size: int
    tail: int
    burst_beats: int
    prefetch: int
    poll_us: int
    error_code_mask: int
    error_code_shift: int


TX_REGS = _ChannelRegs(
    "tx",
    regs.TX_CTRL,
    regs.TX_STATUS,
    regs.TX_RING_BASE,
    regs.TX_RING_SIZE,
    regs.TX_TAIL,
    regs.TX_BURST_BEATS,
    regs.TX_PREFETCH,
    regs.TX_POLL_US,
    regs.TX_STATUS_ERROR_CODE_MASK,
    regs.TX_STATUS_ERROR_CODE_SHIFT,
)
RX_REGS = _ChannelRegs(
    "rx",
    regs.RX_CTRL,
    regs.RX_STATUS,
    regs.RX_RING_BASE,
    regs.RX_RING_SIZE,
    regs.RX_TAIL,
    regs.RX_BURST_BEATS,
    regs.RX_PREFETCH,
    regs.RX_POLL_US,
    regs.RX_STATUS_ERROR_CODE_MASK,
    regs.RX_STATUS_ERROR_CODE_SHIFT,
)


# -- rings ---------------------------------------------------------------------------------


class SpinLock:
    """A named lock of the driver, as a Linux driver has them, with its statistics.

    ``try_acquire`` never waits. How a context waits depends on the path
    (:class:`MacDmaDriver`): xmit and a TX clean configured to take the TX queue lock
    *spin* (the core busy, ``lock_spin``); the NAPI/ring state is a test-and-set (a
    second poller returns at once); the MDIO lock and error recovery *sleep* (a mutex).

    Spinners are served in arrival order, as Linux's ticket and queued spinlocks serve
    them: a context that releases the lock and at once wants it again queues behind the
    one already spinning (without this a tight xmit loop would starve the other core).

    Members: ``name``, ``held``, ``acquisitions``, ``contentions`` (times a context found
    it held), ``spin_ns`` (time spent spinning on it, all cores), ``wait_ns`` (time
    spent sleeping on it), ``spinners`` (the queue of waiting tickets).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.held = False
        self.acquisitions = 0
        self.contentions = 0
        self.spin_ns = 0.0
        self.wait_ns = 0.0
        self.spinners: deque[object] = deque()

    def try_acquire(self, ticket: object | None = None) -> bool:
        """Take the lock if it is free and nobody spins ahead of ``ticket`` (None: no
        ticket, so only when nobody spins at all)."""
        if self.held or (self.spinners and self.spinners[0] is not ticket):
            return False
        if ticket is not None:
            self.spinners.popleft()
        self.held = True
        self.acquisitions += 1
        return True

    def release(self) -> None:
        self.held = False

    def report(self) -> dict:
        return {
            "acquisitions": self.acquisitions,
            "contentions": self.contentions,
            "spin_ns": self.spin_ns,
            "wait_ns": self.wait_ns,
        }


class _Ring:
    """A descriptor ring in DMA memory: base, size and the two indices."""

    def __init__(self, platform: Platform, size: int, clean_lock: str) -> None:
        self.platform = platform
        self.size = size
        self.base = platform.dma_alloc(size * DESCRIPTOR_BYTES, align=DESCRIPTOR_BYTES)
        self.next_to_use = 0  # producer: next slot the driver fills
        self.next_to_clean = 0  # consumer: next slot the driver reaps
        self.clean_lock = SpinLock(clean_lock)
        self.double_posts = 0  # posts refused: the slot was handed over and not reaped

    def desc_addr(self, index: int) -> int:
        return self.base + index * DESCRIPTOR_BYTES

    def next(self, index: int) -> int:
        return index + 1 if index + 1 < self.size else 0

    def unused(self) -> int:
        """Free descriptors (like E1000_DESC_UNUSED): one slot always stays empty."""
        return (self.next_to_clean - self.next_to_use - 1) % self.size

    def in_flight(self) -> int:
        return (self.next_to_use - self.next_to_clean) % self.size

    def clear(self) -> None:
        """Zero every descriptor (own = 0) and restart both indices at 0 (HEAD after reset)."""
        self.platform.mem_write(self.base, bytes(self.size * DESCRIPTOR_BYTES))
        self.next_to_use = 0
        self.next_to_clean = 0

    def handed_over(self, index: int) -> bool:
        """Whether slot *index* belongs to the DMA (posted, TAIL past it, not reaped)."""
        return (index - self.next_to_clean) % self.size < self.in_flight()

    def post(self, index: int, desc: Descriptor) -> None:
        """Hand a descriptor to the DMA: words 0..2 first, then word 3 (own) last; unless
        its slot is already the DMA's: ``own`` handed over twice. The hardware cannot tell
        a second hand-over from a first (the same words, or new ones, written under
        ``own``), and once the DMA has written the slot back and moved on, ``own`` = 1
        there would stall the reap at that slot forever (and, on RX, hand the DMA a buffer
        the driver is about to read); so the driver refuses, counts it (``double_posts``,
        a WARN in a real driver) and leaves the slot alone: what was posted there is used
        once (docs/reliability.md, the ``driver`` fault class)."""
        if self.handed_over(index):
            self.double_posts += 1
            return
        image = desc.pack()
        address = self.desc_addr(index)
        self.platform.mem_write(address, image[:_WORD3_OFFSET])
        # wmb(): the address and length must be visible before own hands the descriptor
        # over; the DMA may fetch it (TX_POLL_US, prefetch) at any moment after this store.
        self.platform.mem_write(address + _WORD3_OFFSET, image[_WORD3_OFFSET:])

    def read(self, index: int) -> Descriptor:
        """Read a descriptor as written back; the caller tests ``own`` before trusting the
        rest (word 3 lands last in the DMA's write-back burst, so own = 0 means complete)."""
        return Descriptor.unpack(self.platform.mem_read(self.desc_addr(index), DESCRIPTOR_BYTES))


@dataclass
class _TxBuffer:
    """Per-slot TX bookkeeping (like ``struct e1000_tx_buffer``)."""

    dma: int = 0  # bus address of this slot's bounce buffer
    capacity: int = 0
    length: int = 0
    # Set on a frame's first slot: where it ends (next_to_watch) and its totals.
    eop_index: int | None = None
    descriptors: int = 0
    frame_bytes: int = 0
    hw_timestamp: bool = False  # the frame asked for its TX time (SKBTX_HW_TSTAMP)


class TxRing(_Ring):
    """The TX ring: descriptors plus, per slot, a DMA buffer for one fragment.

    The model's "dma_map" copies a fragment into its slot's buffer (memory here has no
    free, so each slot keeps a buffer and grows it to the largest fragment seen)."""

    def __init__(self, platform: Platform, size: int) -> None:
        super().__init__(platform, size, "tx_clean")
        self.buffers = [_TxBuffer() for _ in range(size)]
        self.xmit_lock = SpinLock("tx_queue")  # __netif_tx_lock: one producer at a time

    def clear(self) -> None:
        super().clear()
        for buf in self.buffers:
            buf.eop_index = None

    def map_fragment(self, index: int, data: bytes) -> int:
        buf = self.buffers[index]
        if len(data) > buf.capacity:
            capacity = max(256, 1 << (len(data) - 1).bit_length())
            buf.dma = self.platform.dma_alloc(capacity, align=64)
            buf.capacity = capacity
        buf.length = len(data)
        self.platform.mem_write(buf.dma, data)
        return buf.dma


class RxRing(_Ring):
    """The RX ring: descriptors plus one ``buffer_bytes`` buffer per slot.

    A slot's buffer is re-posted only after its data was copied to the stack, so slots can
    keep their buffers for the ring's lifetime (page reuse, in Linux terms). The frame being
    reassembled across polls lives in ``partial`` (the chained skb of igb's rx_ring->skb).
    """

    def __init__(self, platform: Platform, size: int, buffer_bytes: int) -> None:
        super().__init__(platform, size, "rx_napi")
        self.buffer_bytes = buffer_bytes
        self.buffers = [platform.dma_alloc(buffer_bytes, align=64) for _ in range(size)]
        self.partial: bytearray | None = None
        self.partial_buffers = 0


# -- the driver ----------------------------------------------------------------------------

OnReceive = Callable[[bytes, bool, RxFrameMeta], Any]
Spawn = Callable[[Coroutine[Any, Any, Any]], Any]


class FlowControlUnsupportedError(RuntimeError):
    """DriverConfig.flow_control asked for on hardware built without it (-EOPNOTSUPP)."""


class PtpUnsupportedError(RuntimeError):
    """DriverConfig.ptp asked for on hardware built without PTP (-EOPNOTSUPP)."""


class MdioTimeoutError(TimeoutError):
    """MDIO_STATUS.busy stayed set for :data:`MDIO_POLL_LIMIT` polls (-ETIMEDOUT)."""


def mdc_clk_div(sys_clk_mhz: int) -> int:
    """MDIO_CTRL.clk_div for the fastest MDC not above :data:`MDC_MAX_HZ`
    (MDC = sys_clk / (2 * clk_div)), within the register's 2..255."""
    return min(255, max(2, -(-sys_clk_mhz * 1_000_000 // (2 * MDC_MAX_HZ))))


class MacDmaDriver:
    """The netdev: one TX queue, one RX queue, one interrupt line.

    ``on_receive(frame, ok, meta)`` is the stack (``napi_gro_receive``); it may be a plain
    function or a coroutine function. All work is charged to ``costs`` through
    ``platform.charge(cycles, "<CpuCosts field>")``; all MMIO goes through the platform and
    is counted in :attr:`stats`.
    """

    def __init__(
        self,
        platform: Platform,
        config: DriverConfig,
        on_receive: OnReceive | None = None,
        costs: CpuCosts = CpuCosts(),  # noqa: B008 - frozen, so a shared default is safe
    ) -> None:
        if not isinstance(config, DriverConfig):
            raise ValueError(f"config {config!r} must be a DriverConfig")
        if not isinstance(costs, CpuCosts):
            raise ValueError(f"costs {costs!r} must be a CpuCosts")
        self.platform = platform
        self.config = config
        self.strategy = config.strategy
        self.costs = costs
        self.on_receive = on_receive
        # skb_tstamp_tx: called with the 64-bit TX time of each frame that asked for one
        # (xmit(..., hw_timestamp=True)), in completion order.
        self.on_tx_timestamp: Callable[[int], None] | None = None
        # Called with the ring slot of the first descriptor of each frame a TX channel
        # recovery drops (and counts in ``stats.tx_dropped``), in ring order.
        self.on_tx_dropped: Callable[[int], None] | None = None
        # TX_FRAMES and tx_packets when the driver last matched them (open, TX recovery):
        # TX_FRAMES counts every frame the driver must count sent, those whose write-back
        # never landed included (_reap_tx_sent_unwritten).
        self._tx_frames_synced = 0
        self._tx_packets_synced = 0
        self._phc_ns = 0  # the last PHC reading, to extend 32-bit descriptor times
        self._phc_fresh = False  # read in this poll / clean already
        self.stats = DriverStats()
        # Hardware counters folded in before each device reset (reset_device): a counter's
        # total since the driver was created is hw_totals[name] + its register's value.
        self.hw_totals: dict[str, int] = dict.fromkeys(FOLDED_COUNTERS, 0)
        self.device_resets = 0
        self.errors: list[DmaErrorRecord] = []
        self.tx: TxRing | None = None
        self.rx: RxRing | None = None
        self.queue_stopped = False
        self.napi_scheduled = False
        self.is_open = False
        self._mdio_lock = SpinLock("mdio")  # mii_bus->mdio_lock (a mutex): one frame at a time
        self.dim: NetDim | None = NetDim(DIM_RX_PROFILES) if self.strategy.name == "dim" else None
        self._mdio_ready = False  # MDIO_CTRL programmed (the mii_bus probe step)

    # -- platform access, counted and charged ----------------------------------------------

    async def _charge(self, what: str, count: float = 1) -> None:
        cycles = getattr(self.costs, what) * count
        if cycles:
            await self.platform.charge(cycles, what)

    async def _mmio_read(self, offset: int) -> int:
        self.stats.mmio_reads += 1
        await self._charge("mmio_read")
        return await self.platform.mmio_read(offset)

    async def _mmio_write(self, offset: int, value: int) -> None:
        self.stats.mmio_writes += 1
        await self._charge("mmio_write")
        await self.platform.mmio_write(offset, value)

    async def _lock(self, lock: SpinLock) -> None:
        """Wait until another context releases ``lock``. A *sleeping* wait (a mutex): the
        contexts that use it are slow paths (error recovery, MDIO), and a spin in a hard
        IRQ on a lock held by the context it preempted would never end."""
        if lock.try_acquire():
            return
        lock.contentions += 1
        started = self.platform.now_ns()
        while not lock.try_acquire():
            await self.platform.sleep_ns(WAKE_POLL_NS)
        lock.wait_ns += self.platform.now_ns() - started

    @contextlib.asynccontextmanager
    async def _spin_lock(self, lock: SpinLock, level: str):
        """``spin_lock_bh`` / ``spin_lock_irqsave``: raise the running context to
        ``level`` (so no context on this core that takes the lock can preempt the holder),
        then spin until ``lock`` is free -- only a context on another core can hold it --
        with the core busy (``lock_spin``)."""
        async with self._context(level):
            if not lock.try_acquire():
                lock.contentions += 1
                started = self.platform.now_ns()
                spin = getattr(self.platform, "spin_ns", None)
                ticket = object()
                lock.spinners.append(ticket)
                while not lock.try_acquire(ticket):
                    if spin is not None:
                        await spin(LOCK_SPIN_NS, "lock_spin")
                    else:  # a platform without a CPU model: time passes all the same
                        await self.platform.sleep_ns(LOCK_SPIN_NS)
                lock.spin_ns += self.platform.now_ns() - started
            try:
                yield
            finally:
                lock.release()

    @property
    def tx_queue_lock_level(self) -> str:
        """The context level the TX queue lock is taken at: ``hardirq`` (irqsave) when the
        hard IRQ handler cleans TX under it, else ``softirq`` (bh)."""
        isr_cleans = not self.strategy.uses_napi and self.strategy.name != "polling"
        if isr_cleans and self.config.tx_clean_lock == "queue":
            return "hardirq"
        return "softirq"

    @property
    def locks(self) -> dict[str, SpinLock]:
        """Every named lock of the driver (after open): tx_queue, tx_clean, rx_napi, mdio."""
        found = {self._mdio_lock.name: self._mdio_lock}
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
        busy-polls (:meth:`_wait_reset_done`)."""
        cfg = self.config
        # Quiesce: both channels stopped and reset (HEAD = 0), no interrupt, stale causes acked.
        await self._mmio_write(regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
        await self._mmio_write(regs.RX_CTRL, regs.RX_CTRL_RESET_MASK)
        await self._wait_reset_done(TX_REGS, atomic=atomic)
        await self._wait_reset_done(RX_REGS, atomic=atomic)
        await self._sync_tx_frames()
        await self._mmio_write(regs.IRQ_ENABLE, 0)
        await self._mmio_write(regs.IRQ_STATUS, _ALL_CAUSES)

        if self.tx is None:
            self.tx = TxRing(self.platform, cfg.tx_ring)
        if self.rx is None:
            self.rx = RxRing(self.platform, cfg.rx_ring, cfg.rx_buf)
        self.tx.clear()

        for ch, ring in ((TX_REGS, self.tx), (RX_REGS, self.rx)):
            await self._mmio_write(ch.ring_base, ring.base)
            await self._mmio_write(ch.ring_size, ring.size)
            await self._mmio_write(ch.tail, 0)
            await self._mmio_write(ch.burst_beats, cfg.burst_beats)
            await self._mmio_write(ch.prefetch, cfg.prefetch)
            await self._mmio_write(ch.poll_us, cfg.dma_poll_us)

        tx_mode, rx_mode = int(self.strategy.tx_irq_mode), int(self.strategy.irq_mode)
        await self._mmio_write(
            regs.IRQ_MODE,
            (tx_mode << regs.IRQ_MODE_TX_MODE_SHIFT) | (rx_mode << regs.IRQ_MODE_RX_MODE_SHIFT),
        )
        tx_frames, tx_us = self.strategy.tx_coalesce
        await self._mmio_write(
            regs.IRQ_TX_COALESCE,
            (tx_frames << regs.IRQ_TX_COALESCE_FRAMES_SHIFT)
            | (tx_us << regs.IRQ_TX_COALESCE_TIMER_US_SHIFT)
            | (int(self.strategy.timer_restart) << regs.IRQ_TX_COALESCE_TIMER_RESTART_SHIFT),
        )
        rx_profile = (self.strategy.coalesce_frames, self.strategy.coalesce_us)
        if self.dim is not None:
            rx_profile = self.dim.profile
        await self._mmio_write(regs.IRQ_RX_COALESCE, self._rx_coalesce_value(*rx_profile))
        await self._mmio_write(regs.IRQ_SYS_CLK_MHZ, cfg.sys_clk_mhz)
        await self._mmio_write(regs.IRQ_MIN_INTERVAL, cfg.irq_min_interval_us)
        if cfg.flow_control:
            await self._configure_flow_control()  # quasi-static: before the MAC runs
        if cfg.ptp:
            await self._configure_ptp()
        mac_ctrl = regs.MAC_CTRL_TX_ENABLE_MASK | regs.MAC_CTRL_RX_ENABLE_MASK
        if cfg.mii:
            mac_ctrl |= regs.MAC_CTRL_MII_SELECT_MASK
        await self._mmio_write(regs.MAC_CTRL, mac_ctrl)

        await self._rx_post_all()
        self.queue_stopped = False
        self.napi_scheduled = False
        await self._mmio_write(regs.IRQ_ENABLE, self.strategy.irq_enable)
        await self._mmio_write(regs.TX_CTRL, regs.TX_CTRL_RUN_MASK)
        await self._mmio_write(regs.RX_CTRL, regs.RX_CTRL_RUN_MASK)
        self.is_open = True

    async def _configure_flow_control(self) -> None:
        """802.3x PAUSE both ways (DriverConfig.flow_control), after checking the build
        has it (ID_FEATURES.flow_control)."""
        features = await self._mmio_read(regs.ID_FEATURES)
        if not features & regs.ID_FEATURES_FLOW_CONTROL_MASK:
            raise FlowControlUnsupportedError(
                "flow control asked for, but this macdma build has none "
                f"(ID_FEATURES = 0x{features:08x}, flow_control bit clear): build the SoC "
                "with SocParams(flow_control=True) or open with flow_control off"
            )
        await self._mmio_write(regs.MAC_FC_QUANTA, FC_QUANTA_VALUE)
        await self._mmio_write(regs.MAC_FC_WATER, FC_WATER_VALUE)
        await self._mmio_write(regs.MAC_FC_CTRL, FC_CTRL_VALUE)

    async def _configure_ptp(self) -> None:
        """Hardware timestamps (DriverConfig.ptp), after checking the build has them."""
        features = await self._mmio_read(regs.ID_FEATURES)
        if not features & regs.ID_FEATURES_PTP_MASK:
            raise PtpUnsupportedError(
                "PTP timestamps asked for, but this macdma build has none "
                f"(ID_FEATURES = 0x{features:08x}, ptp bit clear): build the SoC with "
                "SocParams(ptp=True) or open with ptp off"
            )
        await self._mmio_write(regs.PTP_CTRL, regs.PTP_CTRL_RX_TIMESTAMP_MASK)
        await self.read_phc()

    async def read_phc(self) -> int:
        """gettime64: PTP_TIME_LO (which latches the high word), then PTP_TIME_HI."""
        low = await self._mmio_read(regs.PTP_TIME_LO)
        high = await self._mmio_read(regs.PTP_TIME_HI)
        self._phc_ns = high << 32 | low
        return self._phc_ns

    def _rx_coalesce_value(self, frames: int, us: int) -> int:
        return (
            (frames << regs.IRQ_RX_COALESCE_FRAMES_SHIFT)
            | (us << regs.IRQ_RX_COALESCE_TIMER_US_SHIFT)
            | (int(self.strategy.timer_restart) << regs.IRQ_RX_COALESCE_TIMER_RESTART_SHIFT)
        )

    async def close(self) -> None:
        """ndo_stop: mask interrupts, stop the MAC and both channels, read the hardware's
        drop counters into ``stats.rx_dropped_hw``."""
        self.is_open = False
        await self._mmio_write(regs.IRQ_ENABLE, 0)
        await self._mmio_write(regs.MAC_CTRL, 0)
        await self._mmio_write(regs.TX_CTRL, 0)
        await self._mmio_write(regs.RX_CTRL, 0)
        await self.read_hw_stats()

    async def read_hw_stats(self) -> None:
        """ndo_get_stats64's hardware part: rx_dropped_hw = RX_DROPS + RX_FIFO_OVERFLOWS."""
        drops = await self._mmio_read(regs.RX_DROPS)
        overflows = await self._mmio_read(regs.RX_FIFO_OVERFLOWS)
        folded = self.hw_totals["RX_DROPS"] + self.hw_totals["RX_FIFO_OVERFLOWS"]
        self.stats.rx_dropped_hw = folded + drops + overflows

    async def fold_hw_stats(self) -> dict[str, int]:
        """Read the counters a device reset zeroes and add them to :attr:`hw_totals`;
        returns what was read."""
        read = {name: await self._mmio_read(getattr(regs, name)) for name in FOLDED_COUNTERS}
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
        self._stop_queue()
        await self._lock(tx.xmit_lock)
        await self._lock(tx.clean_lock)
        await self._lock(rx.clean_lock)
        try:
            await self._mmio_write(regs.IRQ_ENABLE, 0)
            await self.fold_hw_stats()
            await assert_reset()
            self.is_open = False
            self.device_resets += 1
            await self._tx_clean_locked(None)
            self._drop_tx_queued()
            await self._rx_poll_locked(None, refill=False)
            if rx.partial is not None:
                self.stats.rx_dropped += 1
            # With the TX locks held: a sleeping wait for the channel resets would give
            # the core to an xmit spinning on them, for good.
            await self.open(atomic=True)
            self._wake_queue()
        finally:
            rx.clean_lock.release()
            tx.clean_lock.release()
            tx.xmit_lock.release()

    # -- PHY management: the mii_bus read/write ops -------------------------------------------

    async def mdio_read(self, phy: int, reg: int) -> int:
        """mii_bus->read: a clause 22 read of register ``reg`` of PHY ``phy``; returns the
        16-bit value. Raises :class:`MdioTimeoutError` if the MDIO master stays busy."""
        status = await self._mdio_frame(phy, reg, write=False, value=0)
        return _field(status, regs.MDIO_STATUS_READ_DATA_MASK, regs.MDIO_STATUS_READ_DATA_SHIFT)

    async def mdio_write(self, phy: int, reg: int, value: int) -> None:
        """mii_bus->write: a clause 22 write of ``value`` (16 bits) to register ``reg`` of PHY
        ``phy``; returns when the frame is on the wire. Raises :class:`MdioTimeoutError`."""
        await self._mdio_frame(phy, reg, write=True, value=value)

    async def _mdio_frame(self, phy: int, reg: int, *, write: bool, value: int) -> int:
        _check_int("mdio", "phy", phy, 0, 31)
        _check_int("mdio", "reg", reg, 0, 31)
        _check_int("mdio", "value", value, 0, 0xFFFF)
        await self._lock(self._mdio_lock)
        try:
            if not self._mdio_ready:
                clk_div = mdc_clk_div(self.config.sys_clk_mhz)
                await self._mmio_write(regs.MDIO_CTRL, clk_div << regs.MDIO_CTRL_CLK_DIV_SHIFT)
                self._mdio_ready = True
            # Wait for idle first: a command written while busy would be ignored.
            what = f"{'write' if write else 'read'} of PHY {phy} register {reg}"
            await self._mdio_wait_idle(what)
            command = (
                (int(write) << regs.MDIO_CMD_WRITE_SHIFT)
                | (phy << regs.MDIO_CMD_PHY_SHIFT)
                | (reg << regs.MDIO_CMD_REG_SHIFT)
                | (value << regs.MDIO_CMD_DATA_SHIFT)
            )
            await self._mmio_write(regs.MDIO_CMD, command)
            return await self._mdio_wait_idle(what)
        finally:
            self._mdio_lock.release()

    async def _mdio_wait_idle(self, what: str) -> int:
        """Poll MDIO_STATUS until busy is 0 (the hardware sets it before a read that
        follows the MDIO_CMD write can see it); return that status word."""
        for _ in range(MDIO_POLL_LIMIT):
            status = await self._mmio_read(regs.MDIO_STATUS)
            if not status & regs.MDIO_STATUS_BUSY_MASK:
                return status
            await self.platform.sleep_ns(MDIO_POLL_NS)
        raise MdioTimeoutError(
            f"MDIO {what}: MDIO_STATUS.busy still set after {MDIO_POLL_LIMIT} polls"
        )

    # -- TX: ndo_start_xmit ------------------------------------------------------------------

    async def xmit(self, fragments: list[bytes], *, hw_timestamp: bool = False) -> bool:
        """ndo_start_xmit for a frame of ``fragments`` (one descriptor each);
        ``hw_timestamp`` asks for its TX time (DriverConfig.ptp: ``on_tx_timestamp``).

        Returns True (NETDEV_TX_OK) when queued, False (NETDEV_TX_BUSY) without queuing
        anything while the queue is stopped. Stops the queue once fewer than
        ``max_frags`` descriptors are free, so the next worst-case frame always fits.
        """
        tx = self._opened_tx()
        count = len(fragments)
        if not 1 <= count <= tx.size - 1:
            raise ValueError(f"A frame of {count} fragments does not fit a {tx.size}-entry ring")
        for frag in fragments:
            if not 1 <= len(frag) <= MAX_BUFFER_BYTES:
                raise ValueError(f"Fragment length {len(frag)} must be 1..{MAX_BUFFER_BYTES}")
        if hw_timestamp and not self.config.ptp:
            raise ValueError("xmit(hw_timestamp=True) needs a driver opened with ptp=True")
        if self.queue_stopped:
            return False  # NETDEV_TX_BUSY: the stack requeues and waits for the wake
        if self.config.linearize and count > 1:
            # No scatter-gather (validate_xmit_skb -> skb_linearize, before the driver's
            # lock): the fragments are copied into one buffer, posted as one descriptor.
            fragments = [b"".join(fragments)]
            await self._charge("per_byte_linearize", len(fragments[0]))
            count = 1
            self.stats.tx_linearized += 1
        async with self._spin_lock(tx.xmit_lock, self.tx_queue_lock_level):
            if tx.unused() < count:
                # Only reachable with more fragments than max_frags: a driver bug in Linux.
                self._stop_queue()
                return False
            await self._charge("tx_per_packet")
            if self.config.tx_checksum == "sw":
                segment = sum(len(f) for f in fragments) - UDP_CSUM_START
                await self._charge("per_byte_csum", max(0, segment))
            request = {}
            if self.config.tx_checksum == "hw":
                request = {
                    "csum_start": UDP_CSUM_START,
                    "csum_offset": UDP_CSUM_OFFSET,
                    "csum_insert": True,
                }
            if hw_timestamp:
                request = {**request, "ts_request": True}
            first = tx.next_to_use
            index = first
            ioc = self.strategy.ioc
            for n, frag in enumerate(fragments):
                await self._charge("tx_per_fragment_map")
                await self._charge("per_byte_cache", len(frag))  # dma_map: clean to memory
                address = tx.map_fragment(index, frag)
                await self._charge("tx_per_descriptor")
                desc = Descriptor.tx(
                    address, len(frag), sop=n == 0, eop=n == count - 1, ioc=ioc,
                    **(request if n == 0 else {}),
                )  # fmt: skip
                tx.post(index, desc)
                last = index
                index = tx.next(index)
            head = tx.buffers[first]
            head.eop_index = last
            head.descriptors = count
            head.frame_bytes = sum(len(f) for f in fragments)
            head.hw_timestamp = hw_timestamp
            tx.next_to_use = index
            self.stats.tx_descriptors += count
            # wmb() before the doorbell: every descriptor is in memory before TAIL moves.
            await self._mmio_write(regs.TX_TAIL, tx.next_to_use)
            if tx.unused() < self.config.max_frags:
                self._stop_queue()
            return True

    def _stop_queue(self) -> None:
        if not self.queue_stopped:
            self.queue_stopped = True  # netif_stop_queue
            self.stats.queue_stops += 1

    def _wake_queue(self) -> None:
        if self.queue_stopped:
            self.queue_stopped = False  # netif_wake_queue
            self.stats.queue_wakes += 1

    async def wait_for_wake(self, poll_ns: float = WAKE_POLL_NS) -> None:
        """Return once the queue is awake (at once if it is): a *sleeping* wait, like a
        qdisc waiting for netif_wake_queue (pktgen spins instead: sim/benches/
        scenario_tb.py). Without a scheduler's event primitive this re-checks every
        ``poll_ns`` without using the CPU."""
        while self.queue_stopped:
            await self.platform.sleep_ns(poll_ns)

    # -- TX completion -----------------------------------------------------------------------

    async def tx_clean(self, budget: int | None = None) -> int:
        """Reap up to ``budget`` transmitted frames (None: all); wake the queue once
        ``wake_threshold`` descriptors are free. Returns frames cleaned; 0 at once if another
        context is cleaning TX."""
        tx = self._opened_tx()
        if not tx.clean_lock.try_acquire():
            tx.clean_lock.contentions += 1
            return 0
        try:
            if self.config.tx_clean_lock == "queue":
                # The whole reap under the TX queue lock (__netif_tx_lock): xmit on
                # another core spins until it is done.
                async with self._spin_lock(tx.xmit_lock, self.tx_queue_lock_level):
                    return await self._tx_clean_locked(budget)
            return await self._tx_clean_locked(budget)
        finally:
            tx.clean_lock.release()

    async def _tx_clean_locked(self, budget: int | None) -> int:
        tx = self.tx
        assert tx is not None
        self._phc_fresh = False
        cleaned = 0
        while tx.next_to_clean != tx.next_to_use and (budget is None or cleaned < budget):
            first = tx.next_to_clean
            head = tx.buffers[first]
            assert head.eop_index is not None, "TX ring bookkeeping lost a frame"
            # Like e1000's next_to_watch: the frame is done once its EOP is written back
            # (descriptors complete in ring order).
            eop = tx.read(head.eop_index)
            if eop.own:
                break
            if head.hw_timestamp and eop.timestamped and self.on_tx_timestamp is not None:
                self.on_tx_timestamp(await self._extend(eop.timestamp_low_ns))
            head.hw_timestamp = False
            await self._charge("tx_clean_per_descriptor", head.descriptors)
            self.stats.tx_packets += 1
            self.stats.tx_bytes += head.frame_bytes
            tx.next_to_clean = tx.next(head.eop_index)
            head.eop_index = None
            cleaned += 1
        # Hysteresis: wake only with room for several worst-case frames, so a stopped queue
        # does not flap once per cleaned frame.
        if self.queue_stopped and tx.unused() >= self.config.wake_threshold:
            self._wake_queue()
        return cleaned

    # -- RX: the NAPI receive half -----------------------------------------------------------

    async def rx_poll(self, budget: int | None) -> int:
        """Reap up to ``budget`` received frames (None: all that are complete).

        Chains the buffers of a frame from SOP to EOP, delivers it to ``on_receive`` with
        ``ok`` False when the EOP write-back has ``error``, ``rx_error`` or ``rx_truncated``,
        refills every reaped buffer and rings RX_TAIL once. Returns frames delivered (good
        and bad: the NAPI work done); 0 at once if another context is polling RX.
        """
        rx = self._opened_rx()
        if not rx.clean_lock.try_acquire():
            rx.clean_lock.contentions += 1
            return 0
        try:
            return await self._rx_poll_locked(budget, refill=True)
        finally:
            rx.clean_lock.release()

    async def _rx_poll_locked(self, budget: int | None, *, refill: bool) -> int:
        rx = self.rx
        assert rx is not None
        self._phc_fresh = False
        received = 0
        reaped = 0
        while rx.next_to_clean != rx.next_to_use and (budget is None or received < budget):
            index = rx.next_to_clean
            desc = rx.read(index)
            if desc.own:
                break  # not written back yet (own is in word 3, written last)
            await self._charge("rx_per_descriptor")
            # dma_sync_single_for_cpu on the whole posted buffer: the CPU cannot know how
            # much the DMA wrote until it has invalidated, so it pays for all of it.
            await self._charge("per_byte_cache", rx.buffer_bytes)
            data = self.platform.mem_read(rx.buffers[index], desc.done_length)
            rx.next_to_clean = rx.next(index)
            reaped += 1
            if desc.sop or rx.partial is None:
                if rx.partial is not None:
                    # A SOP while a frame is open: its tail was lost; drop what we have.
                    self.stats.rx_dropped += 1
                rx.partial = bytearray()
                rx.partial_buffers = 0
            rx.partial += data
            rx.partial_buffers += 1
            if not desc.eop:
                continue
            frame = bytes(rx.partial)
            buffers = rx.partial_buffers
            rx.partial = None
            rx.partial_buffers = 0
            ok = not (desc.error or desc.rx_error or desc.rx_truncated)
            ok = ok and desc.frame_length == len(frame)
            await self._deliver(frame, ok, desc, buffers)
            received += 1
        if refill and reaped:
            await self._rx_refill()
        return received

    async def _extend(self, low_ns: int) -> int:
        """A descriptor's 32-bit time as 64-bit PTP ns. The PHC is read again once per
        poll or clean that meets a timestamp (the readings stay well within the 2.1 s
        the extension needs)."""
        if not self._phc_fresh:
            await self.read_phc()
            self._phc_fresh = True
        return extend_timestamp(low_ns, self._phc_ns)

    async def _deliver(self, frame: bytes, ok: bool, desc: Descriptor, buffers: int) -> None:
        await self._charge("rx_per_packet")
        await self._charge("per_byte_copy", len(frame))
        if ok:
            self.stats.rx_packets += 1
            self.stats.rx_bytes += len(frame)
        else:
            self.stats.rx_errors += 1
        if self.on_receive is None:
            return
        meta = RxFrameMeta(
            frame_length=desc.frame_length,
            buffers=buffers,
            error=desc.error,
            rx_error=RxErrorCause(desc.rx_error),
            rx_truncated=desc.rx_truncated,
            time_ns=self.platform.now_ns(),
            csum=desc.rx_csum,
            hw_timestamp_ns=(
                await self._extend(desc.timestamp_low_ns) if desc.timestamped else None
            ),
        )
        result = self.on_receive(frame, ok, meta)
        if inspect.isawaitable(result):
            await result

    async def _rx_refill(self) -> None:
        """Post every free slot again (own last) and ring RX_TAIL once."""
        rx = self.rx
        assert rx is not None
        ioc = self.strategy.ioc
        while rx.unused():
            index = rx.next_to_use
            rx.post(index, Descriptor.rx(rx.buffers[index], rx.buffer_bytes, ioc=ioc))
            rx.next_to_use = rx.next(index)
        # wmb() before the doorbell.
        await self._mmio_write(regs.RX_TAIL, rx.next_to_use)

    async def _rx_post_all(self) -> None:
        """Post rx_ring - 1 empty buffers from slot 0 and ring the RX doorbell."""
        rx = self.rx
        assert rx is not None
        rx.clear()
        rx.partial = None
        rx.partial_buffers = 0
        await self._rx_refill()

    # -- interrupts and NAPI -----------------------------------------------------------------

    async def isr(self) -> None:
        """The hard IRQ handler: read IRQ_STATUS, ack it (W1C), recover from DMA errors,
        then clean (per-desc / eop / coalesce) or mask the done causes and schedule NAPI."""
        self.stats.irqs += 1
        status = await self._mmio_read(regs.IRQ_STATUS)
        status &= _ALL_CAUSES
        if not status:
            return  # IRQ_NONE: shared line or already handled
        # Ack before cleaning: a completion after this point raises the cause again. With
        # rx_per_irq, RX done is acked only once the ring is drained (_rx_per_irq).
        ack = status
        if self.config.rx_per_irq is not None:
            ack &= ~regs.IRQ_STATUS_RX_DONE_MASK
        if ack:
            await self._mmio_write(regs.IRQ_STATUS, ack)
        if status & _ERROR_CAUSES:
            await self._handle_errors(status)
        if not status & _DONE_CAUSES or self.strategy.name == "polling":
            return
        if self.strategy.uses_napi:
            if not self.napi_scheduled:
                # napi_schedule_prep + __napi_schedule: mask, the poll will unmask.
                await self._mmio_write(regs.IRQ_ENABLE, _ERROR_CAUSES)
                self.napi_scheduled = True
            return
        if status & regs.IRQ_STATUS_TX_DONE_MASK:
            await self.tx_clean(self.config.tx_clean_budget)
        if status & regs.IRQ_STATUS_RX_DONE_MASK:
            if self.config.rx_per_irq is None:
                await self.rx_poll(None)
            else:
                await self._rx_per_irq(self.config.rx_per_irq)

    def rx_frame_ready(self) -> bool:
        """A written-back RX descriptor waits at next_to_clean (a peek, no charge)."""
        rx = self._opened_rx()
        return rx.next_to_clean != rx.next_to_use and not rx.read(rx.next_to_clean).own

    async def _rx_per_irq(self, limit: int) -> None:
        """Hand at most ``limit`` frames to the stack, then return. With frames left in the
        ring, RX done stays set and the line is dropped and raised again (RX done masked
        and unmasked), so the next interrupt comes as the hardware allows it
        (IRQ_MIN_INTERVAL); with the ring drained, RX done is acked."""
        await self.rx_poll(limit)
        if self.rx_frame_ready():
            enable = self.strategy.irq_enable
            await self._mmio_write(regs.IRQ_ENABLE, enable & ~regs.IRQ_STATUS_RX_DONE_MASK)
            await self._mmio_write(regs.IRQ_ENABLE, enable)
            return
        await self._mmio_write(regs.IRQ_STATUS, regs.IRQ_STATUS_RX_DONE_MASK)
        # A frame written back while the ack was on the bus may have had its cause
        # cleared with it: take it now rather than strand it until the next frame.
        while self.rx_frame_ready():
            await self.rx_poll(limit)

    async def napi_poll(self, budget: int | None = None) -> int:
        """One NAPI poll: tx_clean + rx_poll with ``budget`` (default the strategy's).

        Returns the work done (RX frames; ``budget`` when TX cleaning used all of it, as igb
        does). Only when work < budget: napi_complete_done and unmask the done causes (a
        cause that arrived meanwhile fires at once). Otherwise NAPI stays scheduled.
        """
        budget = self.strategy.budget if budget is None else budget
        self.stats.polls += 1
        await self._charge("napi_poll_overhead")
        tx_done = await self.tx_clean(budget)
        work = await self.rx_poll(budget)
        if tx_done >= budget:
            work = budget
        work = min(work, budget)
        if work < budget and self.napi_scheduled:
            self.napi_scheduled = False
            if self.dim is not None:
                await self._dim_sample()
            await self._mmio_write(regs.IRQ_ENABLE, self.strategy.irq_enable)
        return work

    async def _dim_sample(self) -> None:
        """net_dim at napi_complete_done: sample interrupts, RX packets and bytes; when
        the decision moves to another profile, program IRQ_RX_COALESCE with it."""
        assert self.dim is not None
        sample = DimSample(
            self.platform.now_ns(), self.stats.irqs, self.stats.rx_packets, self.stats.rx_bytes
        )
        if self.dim.sample(sample):
            self.stats.dim_changes += 1
            value = self._rx_coalesce_value(*self.dim.profile)
            await self._mmio_write(regs.IRQ_RX_COALESCE, value)

    async def _handle_errors(self, status: int) -> None:
        if status & regs.IRQ_STATUS_CFG_ERROR_MASK:
            bits = await self._mmio_read(regs.ID_CFG_ERROR)
            await self._mmio_write(regs.ID_CFG_ERROR, bits)
            self.stats.cfg_errors += 1
            self.errors.append(
                DmaErrorRecord(self.platform.now_ns(), "cfg", regs.DmaErrorCode.NONE, bits)
            )
        if status & regs.IRQ_STATUS_TX_ERROR_MASK:
            await self._record_channel_error(TX_REGS)
            await self._recover_tx()
        if status & regs.IRQ_STATUS_RX_ERROR_MASK:
            await self._record_channel_error(RX_REGS)
            await self._recover_rx()

    async def _record_channel_error(self, ch: _ChannelRegs) -> None:
        status = await self._mmio_read(ch.status)
        code = _field(status, ch.error_code_mask, ch.error_code_shift)
        self.stats.dma_errors += 1
        self.errors.append(
            DmaErrorRecord(self.platform.now_ns(), ch.name, regs.DmaErrorCode(code), status)
        )

    async def _recover_tx(self) -> None:
        """TX halted: reap what completed, drop the rest, reset the channel (HEAD = 0) and
        re-open the ring from slot 0 (the tx_timeout / reset_task path)."""
        tx = self._opened_tx()
        await self._lock(tx.xmit_lock)
        await self._lock(tx.clean_lock)
        try:
            await self._mmio_write(regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
            await self._wait_reset_done(TX_REGS)
            await self._tx_clean_locked(None)
            await self._reap_tx_sent_unwritten()
            self._drop_tx_queued()
            tx.clear()
            await self._mmio_write(regs.TX_TAIL, 0)
            await self._mmio_write(regs.TX_CTRL, regs.TX_CTRL_RUN_MASK)
            self._wake_queue()
        finally:
            tx.clean_lock.release()
            tx.xmit_lock.release()

    async def _sync_tx_frames(self) -> int:
        """Read TX_FRAMES and note it with ``tx_packets`` (all the frames it counted are
        reaped at this point); returns how many more it counted than were reaped since the
        last sync."""
        frames = await self._mmio_read(regs.TX_FRAMES)
        counted = (frames - self._tx_frames_synced) % (1 << 32)
        reaped = self.stats.tx_packets - self._tx_packets_synced
        self._tx_frames_synced, self._tx_packets_synced = frames, self.stats.tx_packets
        return counted - reaped

    async def _reap_tx_sent_unwritten(self) -> None:
        """After a TX channel reset, once the frames written back are reaped: the frames
        the MAC started whose EOP write-back never landed (it failed, or the reset dropped
        it) are on the wire, or cut there and counted in TX_DROPS. TX_FRAMES counts them
        (docs/descriptors.md, "Channel reset"); they are the oldest still queued (frames
        start and complete in ring order), so reap that many as sent, not dropped."""
        tx = self._opened_tx()
        sent = await self._sync_tx_frames()
        # Never more than are queued: a device whose TX_FRAMES does not follow the contract
        # leaves the rest to _drop_tx_queued.
        while sent > 0 and tx.next_to_clean != tx.next_to_use:
            sent -= 1
            head = tx.buffers[tx.next_to_clean]
            assert head.eop_index is not None
            head.hw_timestamp = False  # its time was in the write-back that never landed
            await self._charge("tx_clean_per_descriptor", head.descriptors)
            self.stats.tx_packets += 1
            self.stats.tx_bytes += head.frame_bytes
            tx.next_to_clean = tx.next(head.eop_index)
            head.eop_index = None
        self._tx_packets_synced = self.stats.tx_packets

    def _drop_tx_queued(self) -> None:
        """Drop and count (``tx_dropped``) every frame posted and not reaped."""
        tx = self._opened_tx()
        while tx.next_to_clean != tx.next_to_use:
            head = tx.buffers[tx.next_to_clean]
            assert head.eop_index is not None
            self.stats.tx_dropped += 1
            if self.on_tx_dropped is not None:
                self.on_tx_dropped(tx.next_to_clean)
            tx.next_to_clean = tx.next(head.eop_index)
            head.eop_index = None

    async def _recover_rx(self) -> None:
        """RX halted: deliver the frames completed before the halt, discard a frame cut
        short by it (no EOP will come), reset the channel and re-post the whole ring."""
        rx = self._opened_rx()
        await self._lock(rx.clean_lock)
        try:
            await self._mmio_write(regs.RX_CTRL, regs.RX_CTRL_RESET_MASK)
            await self._wait_reset_done(RX_REGS)
            await self._rx_poll_locked(None, refill=False)
            if rx.partial is not None:
                self.stats.rx_dropped += 1
            await self._rx_post_all()
            await self._mmio_write(regs.RX_CTRL, regs.RX_CTRL_RUN_MASK)
        finally:
            rx.clean_lock.release()

    async def _wait_reset_done(self, ch: _ChannelRegs, *, atomic: bool = True) -> None:
        """After CTRL.reset: wait until STATUS says the reset is over (``resetting`` and
        ``halted`` both 0). The reset takes effect only once the channel's AXI movers
        finished the burst in flight (docs/descriptors.md, "When the reset is over"): a
        halted channel stays halted until then, a running one shows ``resetting``;
        buffers re-posted before then could still receive that burst's data (found by the
        soak's fault campaign, docs/reliability.md).

        ``atomic``: the recovery paths hold the TX queue and clean locks in softirq
        context, so they busy-poll (``readl_poll_timeout_atomic``): a sleeping wait would
        give the core to an xmit spinning on the lock they hold, which never ends.
        ``ndo_open`` (process context, no lock) sleeps between polls."""
        spin = getattr(self.platform, "spin_ns", None) if atomic else None
        for _ in range(RESET_POLL_LIMIT):
            if not await self._mmio_read(ch.status) & _STATUS_RESET_BUSY_MASK:
                return
            if spin is not None:
                await spin(WAKE_POLL_NS, "reset_wait")
            else:
                await self.platform.sleep_ns(WAKE_POLL_NS)
        raise TimeoutError(
            f"{ch.name} channel still resetting {RESET_POLL_LIMIT} polls after CTRL.reset"
        )

    # -- the driver's contexts ---------------------------------------------------------------

    async def run(self, spawn: Spawn) -> None:
        """Run the driver's contexts forever; ``spawn(coro)`` starts a concurrent task on
        the platform's scheduler. The interrupt context runs here; the polling loop and the
        housekeeping tick are spawned when the configuration asks for them."""
        if self.strategy.name == "polling":
            spawn(self._polling_loop())
        if self.config.housekeeping_hz is not None:
            spawn(self._housekeeping_tick())
        await self._interrupt_context()

    def _context(self, level: str, core: int | None = None):
        """``async with`` a CPU context of ``level`` ("hardirq", "softirq", "process") on
        a platform with a scheduler (``platform.context``); a no-op on one without.
        ``core`` places a new context (None: the caller's, or core 0)."""
        enter = getattr(self.platform, "context", None)
        if enter is None:
            return contextlib.nullcontext()
        return enter(level) if core is None else enter(level, core=core)

    async def _interrupt_context(self) -> None:
        """The device IRQ: wait for the line (sleeping), run the hard IRQ handler, then,
        as irq_exit() does, the pending NET_RX softirq: NAPI polls until the work drops
        below the budget (napi_poll then unmasks and the next IRQ brings us back). The
        softirq runs to completion against process context; a hard IRQ arriving meanwhile
        is taken when it ends (in NAPI mode the done causes are masked anyway)."""
        while True:
            await self.platform.wait_irq()
            async with self._context("hardirq", self.config.irq_core):
                await self._charge("irq_entry_exit")
                await self.isr()
            if self.napi_scheduled:
                async with self._context("softirq", self.config.irq_core):
                    while self.napi_scheduled:
                        await self.napi_poll()

    async def _timer(self, period_ns: float, work: Callable[[], Coroutine[Any, Any, Any]]):
        """A periodic timer on absolute deadlines (hrtimer_forward): it expires at
        ``k * period_ns`` after start whatever its work took; expiries that passed while
        the CPU was busy are skipped and counted (``stats.timer_overruns``). Each expiry is
        a timer interrupt (``irq_entry_exit`` in hard IRQ context) whose callback runs
        ``work`` in softirq context after ``timer_tick_overhead``."""
        deadline = self.platform.now_ns() + period_ns
        while True:
            await self.platform.sleep_ns(max(0.0, deadline - self.platform.now_ns()))
            if self.is_open:
                self.stats.timer_irqs += 1
                async with self._context("hardirq", self.config.irq_core):
                    await self._charge("irq_entry_exit")
                async with self._context("softirq", self.config.irq_core):
                    await self._charge("timer_tick_overhead")
                    await work()
            deadline += period_ns
            now = self.platform.now_ns()
            if deadline <= now:
                missed = int((now - deadline) // period_ns) + 1
                self.stats.timer_overruns += missed
                deadline += missed * period_ns

    async def _polling_loop(self) -> None:
        """IRQ-less completion: every poll_us (an absolute-deadline timer), clean TX and
        RX; re-poll at once while a pass used its whole budget."""
        budget = self.strategy.budget

        async def poll() -> None:
            while self.is_open:
                self.stats.polls += 1
                tx_done = await self.tx_clean(budget)
                rx_done = await self.rx_poll(budget)
                if tx_done < budget and rx_done < budget:
                    break

        await self._timer(self.strategy.poll_us * 1000.0, poll)

    async def _housekeeping_tick(self) -> None:
        """The periodic TX housekeeping of the MIPS router: tx_clean(tx_clean_budget)
        from a timer at ``housekeeping_hz`` on absolute deadlines."""
        assert self.config.housekeeping_hz is not None

        async def housekeeping() -> None:
            await self.tx_clean(self.config.tx_clean_budget)

        await self._timer(1e9 / self.config.housekeeping_hz, housekeeping)

    # -- helpers -----------------------------------------------------------------------------

    def _opened_tx(self) -> TxRing:
        if self.tx is None:
            raise RuntimeError("The driver is not open: call open() first")
        return self.tx

    def _opened_rx(self) -> RxRing:
        if self.rx is None:
            raise RuntimeError("The driver is not open: call open() first")
        return self.rx
