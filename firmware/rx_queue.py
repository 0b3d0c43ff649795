"""The RX queue: its descriptor ring with one buffer per slot, its channel's registers,
the RX half of a NAPI poll (:meth:`RxQueue.poll`: reap write-backs, chain multi-buffer
frames from SOP to EOP, hand each to the stack), the refill that rings RX TAIL once per
poll, and the RX channel's recovery."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .cache import CacheOp
from .config import GRO_MAX_SEGMENTS
from .descriptor import WRITEBACK_BYTES, Descriptor, RxErrorCause
from .hooks import QueueHooks
from .locks import mutex_lock
from .netdev import NetDevice
from .ring import RX_REGS, DescriptorRing

__all__ = ["OnReceive", "RxFrameMeta", "RxQueue"]

#: The cost of getting a buffer for a slot, per ``DriverConfig.rx_buffers``.
_BUFFER_ALLOC = {
    "alloc_map": "rx_skb_alloc",
    "build_skb": "rx_frag_alloc",
    "page_pool": "rx_page_recycle",
}

#: 32-bit words of a write-back the driver reads (own's word first).
WRITEBACK_WORDS = WRITEBACK_BYTES // 4


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


#: The stack: ``on_receive(frame, ok, meta)`` (napi_gro_receive), plain or a coroutine.
OnReceive = Callable[[bytes, bool, RxFrameMeta], Any]


class RxQueue(DescriptorRing):
    """The netdev's RX queue: descriptors plus one ``buffer_bytes`` buffer per slot.

    A slot's buffer is re-posted only after its data was copied to the stack, so slots can
    keep their buffers for the ring's lifetime (page reuse, in Linux terms). The frame being
    reassembled across polls lives in ``partial`` (the chained skb of igb's rx_ring->skb).

    Members beyond the ring's: ``netdev`` (the :class:`~.driver.MacDmaDriver`, whose
    ``strategy``, ``stats`` and ``on_receive`` the queue uses), ``buffer_bytes``,
    ``buffers`` (each slot's bus address), ``partial``, ``partial_buffers``, ``mapped``
    and ``received`` (per slot: DMA-mapped, bytes received since the last sync).
    """

    def __init__(self, netdev: NetDevice, size: int, buffer_bytes: int, hooks: QueueHooks) -> None:
        super().__init__(netdev.io, RX_REGS, size, "rx_napi", hooks)
        self.netdev = netdev
        self.stats = netdev.stats
        self.buffer_bytes = buffer_bytes
        self.buffers = [self.platform.dma_alloc(buffer_bytes, align=64) for _ in range(size)]
        self.partial: bytearray | None = None
        self.partial_buffers = 0
        # Per slot: its buffer is DMA-mapped; the bytes received since it was last synced.
        self.gro_held = 0  # good frames GRO merged since its last flush
        self.mapped = [False] * size
        self.received = [0] * size

    def frame_ready(self) -> bool:
        """A written-back descriptor waits at next_to_clean (a peek, no charge)."""
        return self.next_to_clean != self.next_to_use and not self.read(self.next_to_clean).own

    # -- the NAPI receive half --------------------------------------------------------------

    async def poll(self, budget: int | None) -> int:
        """Reap up to ``budget`` received frames (None: all that are complete).

        Chains the buffers of a frame from SOP to EOP, delivers it to ``on_receive`` with
        ``ok`` False when the EOP write-back has ``error``, ``rx_error`` or ``rx_truncated``,
        refills every reaped buffer and rings RX_TAIL once. Returns frames delivered (good
        and bad: the NAPI work done); 0 at once if another context is polling RX.
        """
        if not self.clean_lock.try_acquire():
            self.clean_lock.contentions += 1
            return 0
        try:
            return await self.poll_locked(budget, refill=True)
        finally:
            self.clean_lock.release()

    async def poll_locked(self, budget: int | None, *, refill: bool) -> int:
        """:meth:`poll` with ``clean_lock`` held by the caller; ``refill`` False leaves
        the reaped slots empty (a recovery re-posts the whole ring)."""
        self.netdev.phc.begin_pass()
        received = 0
        reaped = 0
        while self.next_to_clean != self.next_to_use and (budget is None or received < budget):
            index = self.next_to_clean
            desc = await self.read_uncached(index, 1)  # word 3: own
            if desc.own:
                break  # not written back yet (own is in word 3, written last)
            await self.io.uncached(read_words=WRITEBACK_WORDS - 1)  # the rest of it
            await self.io.charge("rx_per_descriptor")
            await self._hand_to_cpu(index, desc.done_length)
            if self.netdev.config.rx_buffers != "alloc_map":
                await self.io.charge("rx_build_skb")  # the skb around the filled buffer
            data = self.platform.mem_read(self.buffers[index], desc.done_length)
            self.next_to_clean = self.next(index)
            reaped += 1
            if desc.sop or self.partial is None:
                if self.partial is not None:
                    # A SOP while a frame is open: its tail was lost; drop what we have.
                    self.stats.rx_dropped += 1
                self.partial = bytearray()
                self.partial_buffers = 0
            self.partial += data
            self.partial_buffers += 1
            if not desc.eop:
                continue
            frame = bytes(self.partial)
            buffers = self.partial_buffers
            self.partial = None
            self.partial_buffers = 0
            ok = not (desc.error or desc.rx_error or desc.rx_truncated)
            ok = ok and desc.frame_length == len(frame)
            await self._deliver(frame, ok, desc, buffers)
            received += 1
        if self.gro_held:
            await self._gro_flush()  # the batch goes up at the end of the poll
        if refill and reaped:
            await self.refill()
        return received

    async def _deliver(self, frame: bytes, ok: bool, desc: Descriptor, buffers: int) -> None:
        """Copy the frame to the stack (napi_gro_receive) with its metadata."""
        gro = self.netdev.config.gro and ok
        await self.io.charge("gro_per_segment" if gro else "rx_per_packet")
        if self.netdev.config.rx_fixup:
            # The IP header aligned by a copy 2 bytes along: the frame's lines were
            # invalidated for the DMA, so it is read from memory.
            await self.io.charge("per_byte_memcpy", len(frame))
            await self.io.memory("rx_fixup", read_bytes=len(frame))
            self.stats.rx_fixups += 1
        if self.io.costs.per_byte_copy:
            # The stack copies the frame: its bytes are read from memory, where the DMA
            # put them (never from the cache: invalidated for the DMA, or snooped out).
            await self.io.charge("per_byte_copy", len(frame))
            await self.io.memory("per_byte_copy", read_bytes=len(frame))
        if ok:
            self.stats.rx_packets += 1
            self.stats.rx_bytes += len(frame)
        else:
            self.stats.rx_errors += 1
        on_receive = self.netdev.on_receive
        if on_receive is None:
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
                await self.netdev.phc.extend(desc.timestamp_low_ns) if desc.timestamped else None
            ),
        )
        result = on_receive(frame, ok, meta)
        if inspect.isawaitable(result):
            await result
        if gro:
            self.gro_held += 1
            if self.gro_held >= GRO_MAX_SEGMENTS:
                await self._gro_flush()

    async def _gro_flush(self) -> None:
        """GRO hands its merged batch up: the protocol work once (``rx_per_packet``),
        then the stack's ``on_gro_flush`` (one socket wake-up, one ACK)."""
        self.gro_held = 0
        self.stats.gro_flushes += 1
        await self.io.charge("rx_per_packet")
        flush = self.netdev.on_gro_flush
        if flush is not None:
            result = flush()
            if inspect.isawaitable(result):
                await result

    async def refill(self) -> None:
        """Post every free slot again (own last) and ring RX_TAIL once."""
        ioc = self.netdev.strategy.ioc
        while self.unused():
            index = self.next_to_use
            await self._hand_to_device(index)
            self.post(index, Descriptor.rx(self.buffers[index], self.buffer_bytes, ioc=ioc))
            self.next_to_use = self.next(index)
        # wmb() before the doorbell.
        await self.ring_doorbell()

    async def _hand_to_cpu(self, index: int, received: int) -> None:
        """The filled buffer of slot ``index`` becomes the CPU's (DMA_FROM_DEVICE): with
        ``rx_sync`` unmap, dma_unmap_single invalidates the whole buffer (the driver does
        not know what the DMA wrote until it has); with sync, dma_sync_single_for_cpu
        invalidates the ``received`` bytes and the slot stays mapped. A core that never
        fetches speculatively (``post_dma_invalidate`` false) skips the invalidate."""
        address = self.buffers[index]
        whole = self.netdev.config.rx_sync == "unmap"
        if whole:
            self.mapped[index] = False
            await self.io.charge("rx_map_call")  # dma_unmap_single
        else:
            self.received[index] = received
        if self.io.caches.post_dma_invalidate:
            await self.io.cache_pass(
                CacheOp.INVALIDATE, address, self.buffer_bytes if whole else received
            )

    async def _hand_to_device(self, index: int) -> None:
        """Slot ``index``'s buffer becomes the device's before it is posted: a new buffer
        is allocated (``rx_buffers``: an skb, a page fragment or a recycled page), an
        unmapped one is mapped whole (dma_map_single, an invalidate pass over all of it); a
        mapped one (``rx_sync`` sync) is synced for the device over the bytes it last
        received."""
        address = self.buffers[index]
        buffers = self.netdev.config.rx_buffers
        await self.io.charge(_BUFFER_ALLOC[buffers])
        if not self.mapped[index]:
            self.mapped[index] = True
            await self.io.charge("rx_map_call")  # dma_map_single
            await self.io.cache_pass(CacheOp.INVALIDATE, address, self.buffer_bytes)
        elif self.received[index]:
            await self.io.cache_pass(CacheOp.INVALIDATE, address, self.received[index])
        self.received[index] = 0

    async def post_all(self) -> None:
        """Post rx_ring - 1 empty buffers from slot 0 and ring the RX doorbell."""
        self.clear()
        self.partial = None
        self.partial_buffers = 0
        await self.refill()

    # -- recovery ---------------------------------------------------------------------------

    async def recover(self) -> None:
        """The RX channel's reset task (after an RX error, or when a bench resets the
        channel): deliver the frames completed before the halt, discard a frame cut short
        by it (no EOP will come; ``rx_dropped``), reset the channel and re-post the whole
        ring. Takes the ring's lock with a sleeping wait; the caller's context is softirq
        (the channel reset's wait busy-polls)."""
        await mutex_lock(self.platform, self.clean_lock)
        try:
            await self.reset_channel()
            await self.wait_reset_done()
            await self.poll_locked(None, refill=False)
            if self.partial is not None:
                self.stats.rx_dropped += 1
            await self.post_all()
            await self.start_channel()
        finally:
            self.clean_lock.release()
