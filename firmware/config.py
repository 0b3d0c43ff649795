"""What the driver is told at probe time: the IRQ strategies (each named once, in
:class:`IrqStrategyName`), :class:`IrqStrategy`, :class:`DriverConfig`, the constants
``open`` programs and the checks that refuse what the hardware would reject.

Ranges and defaults come from the generated register map (``regs.<FIELD>_VALID``,
``regs.<FIELD>_RESET_VALUE``); the driver's own limits (ring minimum, fragments, budget)
are stated here once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from . import regs
from .descriptor import MAX_BUFFER_BYTES, MIN_RX_BUFFER_BYTES
from .dim import DIM_TABLES

__all__ = [
    "ALL_CAUSES",
    "COALESCE_TIMERS",
    "DEFAULT_BUDGET",
    "DEFAULT_MAX_FRAGS",
    "DONE_CAUSES",
    "ERROR_CAUSES",
    "FC_CTRL_VALUE",
    "FC_QUANTA_VALUE",
    "FC_WATER_VALUE",
    "GRO_MAX_SEGMENTS",
    "IRQ_STRATEGIES",
    "MAX_IRQ_MIN_INTERVAL_US",
    "MAX_PREFETCH",
    "MAX_TIMER_US",
    "MIN_RING",
    "RX_BUFFER_MODES",
    "RX_SYNC_MODES",
    "TX_CHECKSUM_MODES",
    "TX_CLEAN_LOCKS",
    "TX_TIMER_KINDS",
    "UDP_CSUM_OFFSET",
    "UDP_CSUM_START",
    "DriverConfig",
    "IrqStrategy",
    "IrqStrategyName",
    "check_int",
    "check_map",
    "field_value",
]


class IrqStrategyName(StrEnum):
    """The IRQ strategies (:attr:`IrqStrategy.name`), each once: every other list of them
    (the Scenario's choices, the soak's cycle) derives from this enumeration."""

    PER_DESC = "per-desc"
    EOP = "eop"
    COALESCE = "coalesce"
    POLLING = "polling"
    NAPI = "napi"
    DIM = "dim"

    @property
    def isr_cleans(self) -> bool:
        """The hard IRQ handler cleans the rings itself (no NAPI poll, no polling loop)."""
        return self in (IrqStrategyName.PER_DESC, IrqStrategyName.EOP, IrqStrategyName.COALESCE)

    @property
    def uses_napi(self) -> bool:
        """The hard IRQ handler masks the done causes and schedules a NAPI poll."""
        return self in (IrqStrategyName.NAPI, IrqStrategyName.DIM)

    @property
    def coalesces(self) -> bool:
        """``coalesce_frames`` / ``coalesce_us`` program the hardware's moderation."""
        return self in (IrqStrategyName.COALESCE, IrqStrategyName.NAPI, IrqStrategyName.DIM)

    @property
    def takes_done_irqs(self) -> bool:
        """Completions interrupt (every strategy but polling, where only errors do)."""
        return self is not IrqStrategyName.POLLING


#: The strategies' names, in the enumeration's order.
IRQ_STRATEGIES = tuple(name.value for name in IrqStrategyName)
#: IrqStrategy.coalesce_timer: when the coalescing timer starts (IRQ_*_COALESCE
#: timer_restart 0 / 1): at the first uncounted completion, or again at every one.
COALESCE_TIMERS = ("first", "last")
#: How TX clean synchronises with xmit (DriverConfig.tx_clean_lock).
TX_CLEAN_LOCKS = ("queue", "frozen")
#: ``DriverConfig.rx_sync``: how the driver hands a filled RX buffer to the CPU and a
#: fresh one to the device: ``unmap`` (dma_unmap_single of the whole buffer, dma_map_single
#: of the whole next one: two invalidate passes over the buffer) or ``sync`` (the slot stays
#: mapped: dma_sync_single_for_cpu of the received length, then for_device of the same).
RX_SYNC_MODES = ("unmap", "sync")
#: ``DriverConfig.rx_buffers``: how the RX ring's buffers are allocated and handed up:
#: ``alloc_map`` (an skb allocated and DMA-mapped before reception, unmapped and passed up
#: after), ``build_skb`` (a page fragment mapped before reception, the skb built around it
#: after the DMA filled it), ``page_pool`` (pages recycled through a page pool: mapped once,
#: only the received bytes synced, the skb built around the page).
RX_BUFFER_MODES = ("alloc_map", "build_skb", "page_pool")
#: ``DriverConfig.tx_timer``: the driver's TX coalescing timer (firmware/tx_timer.py).
TX_TIMER_KINDS = ("none", "timer_list", "hrtimer", "hrtimer_idle")
#: GRO's largest merged skb: 64 KiB (GRO_MAX_SIZE) of 1448-byte TCP segments.
GRO_MAX_SEGMENTS = 45
#: ``DriverConfig.tx_checksum``: nobody, the hardware (CHECKSUM_PARTIAL) or the stack.
TX_CHECKSUM_MODES = ("none", "hw", "sw")
#: UDP over untagged IPv4 without options: the segment starts at byte 14 + 20, its
#: checksum 6 bytes in.
UDP_CSUM_START = 34
UDP_CSUM_OFFSET = 6

#: Worst-case descriptors per frame: MAX_SKB_FRAGS (16 with 4 KiB pages) + the linear part.
DEFAULT_MAX_FRAGS = 17
#: The smallest ring the driver runs: one descriptor in flight, one kept free.
MIN_RING = 2
#: NAPI_POLL_WEIGHT in Linux.
DEFAULT_BUDGET = 64

#: IRQ_STATUS causes: completions, and the errors that halt a channel or reject a write.
DONE_CAUSES = regs.IRQ_STATUS_TX_DONE_MASK | regs.IRQ_STATUS_RX_DONE_MASK
ERROR_CAUSES = (
    regs.IRQ_STATUS_TX_ERROR_MASK | regs.IRQ_STATUS_RX_ERROR_MASK | regs.IRQ_STATUS_CFG_ERROR_MASK
)
ALL_CAUSES = DONE_CAUSES | ERROR_CAUSES

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


def check_int(owner: str, name: str, value: Any, low: int, high: int | None) -> None:
    """Raise ValueError naming ``owner.name`` unless ``value`` is an int in low..high
    (``high`` None: no upper bound)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{owner}.{name} = {value!r} must be an integer")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"{owner}.{name} = {value!r} is out of range ({bound})")


def check_map(owner: str, name: str, value: Any, valid: tuple[range, ...]) -> None:
    """Check ``value`` against a field's valid values as the register map gives them
    (``regs.<FIELD>_VALID``), so the driver refuses what the hardware would reject."""
    check_int(owner, name, value, min(r[0] for r in valid), None)
    if not any(value in r for r in valid):
        ranges = ", ".join(
            f"{r[0]}..{r[-1]}" + (f" step {r.step}" if r.step > 1 else "") for r in valid
        )
        raise ValueError(f"{owner}.{name} = {value!r} is out of range ({ranges})")


def field_value(value: int, mask: int, shift: int) -> int:
    """The field at ``mask``/``shift`` of a register value."""
    return (value & mask) >> shift


@dataclass(frozen=True)
class IrqStrategy:
    """How completions reach the driver.

    ``name`` is one of :data:`IRQ_STRATEGIES` (:class:`IrqStrategyName`):

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

    name: str = IrqStrategyName.NAPI.value
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
        check_map(
            "IrqStrategy",
            "coalesce_frames",
            self.coalesce_frames,
            regs.IRQ_TX_COALESCE_FRAMES_VALID,
        )
        check_int("IrqStrategy", "coalesce_us", self.coalesce_us, 0, MAX_TIMER_US)
        polling = self.kind is IrqStrategyName.POLLING
        check_int("IrqStrategy", "poll_us", self.poll_us, 1 if polling else 0, None)
        check_int("IrqStrategy", "budget", self.budget, 1, None)
        if self.tx_coalesce_frames is not None:
            check_map(
                "IrqStrategy",
                "tx_coalesce_frames",
                self.tx_coalesce_frames,
                regs.IRQ_TX_COALESCE_FRAMES_VALID,
            )
        if self.tx_coalesce_us is not None:
            check_int("IrqStrategy", "tx_coalesce_us", self.tx_coalesce_us, 0, MAX_TIMER_US)
        if polling and self.tx_moderated:
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
            "us": "poll_us" if name == IrqStrategyName.POLLING else "coalesce_us",
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
    def kind(self) -> IrqStrategyName:
        """:attr:`name` as the enumeration member, with its properties."""
        return IrqStrategyName(self.name)

    @property
    def irq_mode(self) -> regs.IrqMode:
        """The IRQ_MODE rx_mode (and tx_mode unless :attr:`tx_moderated`)."""
        kind = self.kind
        if kind is IrqStrategyName.PER_DESC:
            return regs.IrqMode.PER_DESC
        if kind is IrqStrategyName.EOP:
            return regs.IrqMode.EOP
        if kind in (IrqStrategyName.COALESCE, IrqStrategyName.DIM):
            return regs.IrqMode.COALESCE
        if kind is IrqStrategyName.POLLING:
            return regs.IrqMode.NONE
        # napi: the hardware moderates only when asked to
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
        return self.kind.uses_napi

    @property
    def ioc(self) -> bool:
        """Whether descriptors carry IOC (only PER_DESC mode looks at it)."""
        return self.kind is IrqStrategyName.PER_DESC

    @property
    def irq_enable(self) -> int:
        """IRQ_ENABLE after open: error causes always; done causes unless polling."""
        return ALL_CAUSES if self.kind.takes_done_irqs else ERROR_CAUSES


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
            without scatter-gather: skb_linearize, charged ``per_byte_memcpy``) and
            post it as one descriptor; False = one descriptor per fragment.
        flow_control: 802.3x PAUSE both ways at open (MAC_FC_CTRL rx_pause and tx_pause,
            with FC_QUANTA_VALUE and FC_WATER_VALUE); open raises
            :class:`~.driver.FlowControlUnsupportedError` on a build without
            ID_FEATURES.flow_control. False leaves the MAC_FC_* registers alone (reset:
            off).
        tx_checksum: who computes a TX frame's UDP checksum. ``"none"``: nobody (pktgen
            without UDPCSUM, as the field reports ran); ``"hw"``: the SOP descriptor asks
            the hardware (CHECKSUM_PARTIAL, UDP over IPv4: csum_start 34, csum_offset 6);
            ``"sw"``: the stack sums the segment, charged ``per_byte_csum`` per byte.
        rx_sync: the RX buffers' DMA cache maintenance (:data:`RX_SYNC_MODES`): ``unmap``
            invalidates each whole posted buffer twice per reception (unmap, then the map
            of its replacement); ``sync`` invalidates only the received bytes, twice (for
            the CPU, then for the device). Costs nothing on a coherent DMA.
        rx_buffers: how RX buffers are allocated (:data:`RX_BUFFER_MODES`): per received
            buffer, alloc_map charges ``rx_skb_alloc`` and two ``rx_map_call`` (unmap the
            filled one, map the new one); build_skb ``rx_frag_alloc``, two ``rx_map_call``
            and ``rx_build_skb``; page_pool ``rx_page_recycle`` and ``rx_build_skb`` (the
            pages stay mapped, so it needs ``rx_sync`` sync).
        tx_napi_weight: packets one NAPI poll cleans from the TX ring; None = the
            strategy's budget (the RX weight). A poll that cleaned a full TX weight stays
            scheduled, as one that received a full RX budget does.
        tx_timer: the TX coalescing timer xmit arms (:data:`TX_TIMER_KINDS`; stmmac's
            tx_coal_timer): ``none``; ``timer_list`` (mod_timer on every xmit,
            ``timer_list_arm``); ``hrtimer`` (hrtimer_start on every xmit,
            ``hrtimer_arm``; its expiry an interrupt); ``hrtimer_idle`` (armed only while
            NAPI is not scheduled, cancelled while it is). The TX poll arms it too when it
            leaves frames in the ring. Its expiry schedules the NAPI poll that cleans TX.
            Needs a NAPI strategy.
        tx_timer_us: the timer's delay after the arming xmit, 1..65535 µs.
        tx_bounce: the TX DMA takes only 4-byte-aligned buffers while the stack's frames
            start at NET_IP_ALIGN (2): each fragment is copied into an aligned bounce
            buffer before it is mapped (``per_byte_memcpy``; the source is cache-hot).
        rx_fixup: RX frames land 4-byte aligned, so the IP header is not: the driver
            copies each received frame 2 bytes along before passing it up
            (``per_byte_memcpy``, and the frame read from memory: its lines were just
            invalidated for the DMA). False: the RX buffers start at a 2-byte offset.
        dim_table: the ``dim`` strategy's profile table (firmware/dim.py, DIM_TABLES):
            ``net_dim`` (net_dim's stock RX table from its first profile, every device
            interrupt an event) or ``axienet`` (frame counts 1, 4, 16, 64, 255 with a
            fixed 16 µs delay, from the second profile, RX interrupts the events).
        gro: GRO merges the good frames of one RX poll (at most
            :data:`GRO_MAX_SEGMENTS` a batch) before the stack's protocol work: each frame
            costs ``gro_per_segment``, each batch ``rx_per_packet`` once, and the stack
            hears ``on_gro_flush`` after each batch (one socket wake-up, one ACK).
        ptp: hardware timestamps (IEEE 1588): open checks ID_FEATURES.ptp (else
            :class:`~.ptp.PtpUnsupportedError`) and turns on RX timestamping
            (PTP_CTRL.rx_timestamp, HWTSTAMP_FILTER_ALL); each good frame's
            :class:`~.rx_queue.RxFrameMeta` then has ``hw_timestamp_ns``, and ``xmit(...,
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
    rx_sync: str = "unmap"
    rx_buffers: str = "alloc_map"
    tx_napi_weight: int | None = None
    tx_timer: str = "none"
    tx_timer_us: int = 1000
    tx_bounce: bool = False
    rx_fixup: bool = False
    dim_table: str = "net_dim"
    gro: bool = False

    def __post_init__(self) -> None:
        own = "DriverConfig"
        # RING_SIZE 0 (valid in the map) turns a ring off; the driver always has one.
        check_int(own, "tx_ring", self.tx_ring, MIN_RING, regs.TX_RING_SIZE_MAX)
        check_int(own, "rx_ring", self.rx_ring, MIN_RING, regs.RX_RING_SIZE_MAX)
        check_int(own, "rx_buf", self.rx_buf, MIN_RX_BUFFER_BYTES, MAX_BUFFER_BYTES)
        check_map(own, "burst_beats", self.burst_beats, regs.TX_BURST_BEATS_VALID)
        check_map(own, "prefetch", self.prefetch, regs.TX_PREFETCH_VALID)
        if isinstance(self.strategy, str):
            object.__setattr__(self, "strategy", IrqStrategy.parse(self.strategy))
        if not isinstance(self.strategy, IrqStrategy):
            raise ValueError(f"DriverConfig.strategy = {self.strategy!r} must be an IrqStrategy")
        if self.tx_clean_budget is not None:
            check_int(own, "tx_clean_budget", self.tx_clean_budget, 1, None)
        if self.housekeeping_hz is not None:
            hz = self.housekeeping_hz
            if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not hz > 0:
                raise ValueError(f"DriverConfig.housekeeping_hz = {hz!r} must be > 0 or None")
        check_map(own, "sys_clk_mhz", self.sys_clk_mhz, regs.IRQ_SYS_CLK_MHZ_VALID)
        check_map(
            own, "irq_min_interval_us", self.irq_min_interval_us, regs.IRQ_MIN_INTERVAL_US_VALID
        )
        if self.max_frags is None:
            object.__setattr__(self, "max_frags", min(DEFAULT_MAX_FRAGS, self.tx_ring - 1))
        check_int(own, "max_frags", self.max_frags, 1, self.tx_ring - 1)
        if self.wake_threshold is None:
            object.__setattr__(self, "wake_threshold", min(2 * self.max_frags, self.tx_ring - 1))
        check_int(own, "wake_threshold", self.wake_threshold, self.max_frags, self.tx_ring - 1)
        check_int(own, "dma_poll_us", self.dma_poll_us, 0, MAX_TIMER_US)
        if not isinstance(self.mii, bool):
            raise ValueError(f"DriverConfig.mii = {self.mii!r} must be a bool")
        check_int(own, "irq_core", self.irq_core, 0, None)
        if self.tx_clean_lock not in TX_CLEAN_LOCKS:
            raise ValueError(
                f"DriverConfig.tx_clean_lock = {self.tx_clean_lock!r} is not one of "
                f"{', '.join(TX_CLEAN_LOCKS)}"
            )
        if self.rx_per_irq is not None:
            check_int(own, "rx_per_irq", self.rx_per_irq, 1, None)
            if not self.strategy.kind.isr_cleans:
                cleaning = ", ".join(name for name in IrqStrategyName if name.isr_cleans)
                raise ValueError(
                    f"DriverConfig.rx_per_irq = {self.rx_per_irq!r} needs an IRQ strategy "
                    f"whose handler cleans ({cleaning}), not {self.strategy.name!r}"
                )
        if self.tx_checksum not in TX_CHECKSUM_MODES:
            raise ValueError(
                f"DriverConfig.tx_checksum = {self.tx_checksum!r} must be one of "
                f"{', '.join(TX_CHECKSUM_MODES)}"
            )
        if self.rx_sync not in RX_SYNC_MODES:
            raise ValueError(
                f"DriverConfig.rx_sync = {self.rx_sync!r} must be one of {', '.join(RX_SYNC_MODES)}"
            )
        if self.rx_buffers not in RX_BUFFER_MODES:
            raise ValueError(
                f"DriverConfig.rx_buffers = {self.rx_buffers!r} must be one of "
                f"{', '.join(RX_BUFFER_MODES)}"
            )
        if self.rx_buffers == "page_pool" and self.rx_sync != "sync":
            raise ValueError(
                "DriverConfig.rx_buffers = 'page_pool' keeps its pages mapped: it needs "
                f"rx_sync = 'sync', not {self.rx_sync!r}"
            )
        if self.tx_napi_weight is not None:
            check_int(own, "tx_napi_weight", self.tx_napi_weight, 1, None)
        if self.tx_timer not in TX_TIMER_KINDS:
            raise ValueError(
                f"DriverConfig.tx_timer = {self.tx_timer!r} must be one of "
                f"{', '.join(TX_TIMER_KINDS)}"
            )
        check_int(own, "tx_timer_us", self.tx_timer_us, 1, MAX_TIMER_US)
        if self.tx_timer != "none" and not self.strategy.uses_napi:
            raise ValueError(
                f"DriverConfig.tx_timer = {self.tx_timer!r} schedules a NAPI poll: it needs "
                f"a NAPI strategy (napi, dim), not {self.strategy.name!r}"
            )
        if not isinstance(self.linearize, bool):
            raise ValueError(f"DriverConfig.linearize = {self.linearize!r} must be a bool")
        if self.dim_table not in DIM_TABLES:
            raise ValueError(
                f"DriverConfig.dim_table = {self.dim_table!r} must be one of "
                f"{', '.join(DIM_TABLES)}"
            )
        for name in ("tx_bounce", "rx_fixup", "gro"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"DriverConfig.{name} = {getattr(self, name)!r} must be a bool")
        if not isinstance(self.flow_control, bool):
            raise ValueError(f"DriverConfig.flow_control = {self.flow_control!r} must be a bool")
        if not isinstance(self.ptp, bool):
            raise ValueError(f"DriverConfig.ptp = {self.ptp!r} must be a bool")
