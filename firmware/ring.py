"""A descriptor ring in DMA memory and the DMA channel register window that serves it:
the base both queues (:class:`~.tx_queue.TxQueue`, :class:`~.rx_queue.RxQueue`) are built on.

The ring has ``next_to_use`` (producer) and ``next_to_clean`` (consumer) indices; one slot
is always left empty so that ``next_to_use == next_to_clean`` means "empty" (the
hardware's HEAD == TAIL). Descriptors are posted words 0..2 first and word 3 (``own``)
last; the window is the channel's CTRL, STATUS, ring and doorbell registers
(:class:`ChannelRegs`, from regs.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import regs
from .config import DriverConfig, field_value
from .descriptor import DESCRIPTOR_BYTES, Descriptor
from .hooks import QueueHooks
from .io import DeviceIo
from .locks import WAKE_POLL_NS, SpinLock
from .stats import DmaErrorRecord

__all__ = ["RESET_POLL_LIMIT", "RX_REGS", "TX_REGS", "ChannelRegs", "DescriptorRing"]

_WORD3_OFFSET = 12  # byte offset of word 3 (length, ioc, sop, eop, own) in a descriptor
#: Polls of STATUS after a channel reset before giving up (each WAKE_POLL_NS apart).
RESET_POLL_LIMIT = 10_000
# STATUS.halted, at the same bit on both channels.
_STATUS_HALTED_MASK = regs.TX_STATUS_HALTED_MASK
assert regs.RX_STATUS_HALTED_MASK == _STATUS_HALTED_MASK
#: STATUS while a CTRL.reset is still winding down: halted (until the state is reset) or
#: resetting (the AXI transaction in flight not finished yet).
_STATUS_RESET_BUSY_MASK = _STATUS_HALTED_MASK | regs.TX_STATUS_RESETTING_MASK
assert regs.RX_STATUS_RESETTING_MASK == regs.TX_STATUS_RESETTING_MASK


@dataclass(frozen=True)
class ChannelRegs:
    """One DMA channel's registers and CTRL bits (from regs.py): its queue's window."""

    name: str
    ctrl: int
    ctrl_run: int
    ctrl_reset: int
    status: int
    ring_base: int
    ring_size: int
    tail: int
    burst_beats: int
    prefetch: int
    poll_us: int
    error_code_mask: int
    error_code_shift: int


TX_REGS = ChannelRegs(
    "tx",
    regs.TX_CTRL,
    regs.TX_CTRL_RUN_MASK,
    regs.TX_CTRL_RESET_MASK,
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
RX_REGS = ChannelRegs(
    "rx",
    regs.RX_CTRL,
    regs.RX_CTRL_RUN_MASK,
    regs.RX_CTRL_RESET_MASK,
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


class DescriptorRing:
    """A descriptor ring in DMA memory (base, size, the two indices) and its channel's
    register window (``window``, a :class:`ChannelRegs`).

    Members: ``io`` (the device's :class:`~.io.DeviceIo`), ``platform``, ``window``,
    ``hooks`` (:class:`~.hooks.QueueHooks`), ``size``, ``base``, ``next_to_use``,
    ``next_to_clean``, ``clean_lock`` (the one reaper's lock), ``double_posts`` (posts
    refused because the slot was still the DMA's).
    """

    def __init__(
        self, io: DeviceIo, window: ChannelRegs, size: int, clean_lock: str, hooks: QueueHooks
    ) -> None:
        self.io = io
        self.platform = io.platform
        self.window = window
        self.hooks = hooks
        self.size = size
        self.base = self.platform.dma_alloc(size * DESCRIPTOR_BYTES, align=DESCRIPTOR_BYTES)
        self.next_to_use = 0  # producer: next slot the driver fills
        self.next_to_clean = 0  # consumer: next slot the driver reaps
        self.clean_lock = SpinLock(clean_lock)
        self.double_posts = 0  # posts refused: the slot was handed over and not reaped

    # -- the ring in memory -------------------------------------------------------------

    def desc_addr(self, index: int) -> int:
        """The bus address of descriptor ``index``."""
        return self.base + index * DESCRIPTOR_BYTES

    def next(self, index: int) -> int:
        """The slot after ``index``, wrapping."""
        return index + 1 if index + 1 < self.size else 0

    def unused(self) -> int:
        """Free descriptors (like E1000_DESC_UNUSED): one slot always stays empty."""
        return (self.next_to_clean - self.next_to_use - 1) % self.size

    def in_flight(self) -> int:
        """Descriptors posted and not reaped."""
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
        once (docs/reliability.md, the ``driver`` fault class). ``hooks.post`` sees every
        descriptor first."""
        desc = self.hooks.post(self, index, desc)
        if self.handed_over(index):
            self.double_posts += 1
            return
        image = desc.pack()
        address = self.desc_addr(index)
        self.platform.mem_write(address, image[:_WORD3_OFFSET])
        # wmb(): the address and length must be visible before own hands the descriptor
        # over; the DMA may fetch it (TX_POLL_US, prefetch) at any moment after this store.
        self.platform.mem_write(address + _WORD3_OFFSET, image[_WORD3_OFFSET:])

    async def read_uncached(self, index: int, words: int) -> Descriptor:
        """:meth:`read`, paying for the ``words`` 32-bit loads the driver makes of it
        (uncached on a non-coherent DMA: :meth:`~.io.DeviceIo.uncached`)."""
        await self.io.uncached(read_words=words)
        return self.read(index)

    def read(self, index: int) -> Descriptor:
        """Read a descriptor as written back; the caller tests ``own`` before trusting the
        rest (word 3 lands last in the DMA's write-back burst, so own = 0 means complete).
        ``hooks.read`` sees it first."""
        desc = Descriptor.unpack(self.platform.mem_read(self.desc_addr(index), DESCRIPTOR_BYTES))
        self.hooks.read(self, index, desc)
        return desc

    # -- the channel's register window --------------------------------------------------

    async def program(self, config: DriverConfig) -> None:
        """Point the channel at this ring (TAIL 0) with the configured burst cap,
        prefetch and descriptor poll interval."""
        window, writel = self.window, self.io.writel
        await writel(window.ring_base, self.base)
        await writel(window.ring_size, self.size)
        await writel(window.tail, 0)
        await writel(window.burst_beats, config.burst_beats)
        await writel(window.prefetch, config.prefetch)
        await writel(window.poll_us, config.dma_poll_us)

    async def ring_doorbell(self) -> None:
        """Write TAIL = ``next_to_use`` (after the descriptors' stores: ``writel``'s wmb)."""
        await self.io.writel(self.window.tail, self.next_to_use)

    async def reset_channel(self) -> None:
        """CTRL.reset: stop the channel and zero its state (HEAD = 0)."""
        await self.io.writel(self.window.ctrl, self.window.ctrl_reset)

    async def start_channel(self) -> None:
        """CTRL.run."""
        await self.io.writel(self.window.ctrl, self.window.ctrl_run)

    async def stop_channel(self) -> None:
        """CTRL = 0: the channel stops after the descriptor in hand."""
        await self.io.writel(self.window.ctrl, 0)

    async def wait_reset_done(self, *, atomic: bool = True) -> None:
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
            if not await self.io.readl(self.window.status) & _STATUS_RESET_BUSY_MASK:
                return
            if spin is not None:
                await spin(WAKE_POLL_NS, "reset_wait")
            else:
                await self.platform.sleep_ns(WAKE_POLL_NS)
        raise TimeoutError(
            f"{self.window.name} channel still resetting {RESET_POLL_LIMIT} polls after CTRL.reset"
        )

    async def read_error(self) -> DmaErrorRecord:
        """The channel's halt as STATUS reports it (read after an error cause)."""
        status = await self.io.readl(self.window.status)
        code = field_value(status, self.window.error_code_mask, self.window.error_code_shift)
        return DmaErrorRecord(
            self.platform.now_ns(), self.window.name, regs.DmaErrorCode(code), status
        )
