"""The TX queue: its descriptor ring with a DMA buffer per slot, its channel's registers,
``ndo_start_xmit`` (:meth:`TxQueue.xmit`), the completion reap (:meth:`TxQueue.clean`),
queue stop/wake with hysteresis, and the TX channel's recovery.

A frame's journey starts here: map the fragments, fill descriptors (word 3, which holds
``own``, last, after a write barrier), ring the TX doorbell (TAIL), stop the queue when a
worst-case frame no longer fits; once the DMA has written the EOP descriptor back, the
clean reaps the frame and wakes the queue when ``wake_threshold`` descriptors are free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import regs
from .cache import CacheOp
from .config import UDP_CSUM_OFFSET, UDP_CSUM_START
from .descriptor import MAX_BUFFER_BYTES, Descriptor
from .hooks import QueueHooks
from .locks import WAKE_POLL_NS, SharedLine, SpinLock, mutex_lock, spin_lock
from .netdev import NetDevice
from .ring import TX_REGS, DescriptorRing

__all__ = ["TSO_HEADER_BYTES", "TX_BOUNCE_ALIGN", "TxBuffer", "TxQueue", "tso_header"]

#: Cache lines of one frame's state that xmit writes and TX clean writes again: the ring
#: slot's bookkeeping (stmmac's tx_skbuff / tx_skbuff_dma entries) and the sk_buff's line
#: its free writes (the refcount and destructor, kfree_skb -> skb_release_head_state).
TX_FRAME_LINES = 2
#: One segment's headers in the TSO header buffer (fec's TSO_HEADER_SIZE).
TSO_HEADER_BYTES = 128
#: The alignment a TX DMA without byte-aligned reads needs (fec's FEC_ALIGNMENT + 1):
#: with ``tx_bounce`` a TSO payload piece starting off it is copied to a bounce buffer.
TX_BOUNCE_ALIGN = 4


def _tso_segments(payload: list[bytes], mss: int) -> list[list[tuple[int, bytes]]]:
    """The pieces of ``payload`` each ``mss``-byte segment covers, in order, each as
    (its offset in its fragment, its bytes): a segment that crosses a fragment boundary
    has a piece of each fragment."""
    segments: list[list[tuple[int, bytes]]] = []
    pieces: list[tuple[int, bytes]] = []
    room = mss
    for frag in payload:
        offset = 0
        while offset < len(frag):
            take = min(room, len(frag) - offset)
            pieces.append((offset, frag[offset : offset + take]))
            offset += take
            room -= take
            if room == 0:
                segments.append(pieces)
                pieces, room = [], mss
    if pieces:
        segments.append(pieces)
    return segments


def tso_header(header: bytes, seq_offset: int | None, sent_bytes: int) -> bytes:
    """One segment's headers from the super-segment's (``tso_build_hdr``): the 32-bit
    big-endian TCP sequence number at ``seq_offset`` advanced by the payload bytes the
    earlier segments carried (mod 2**32, as TCP's); ``header`` unchanged when
    ``seq_offset`` is None."""
    if seq_offset is None:
        return header
    if not 0 <= seq_offset <= len(header) - 4:
        raise ValueError(
            f"a TSO header of {len(header)} bytes has no 32-bit sequence number at {seq_offset}"
        )
    seq = int.from_bytes(header[seq_offset : seq_offset + 4], "big")
    seq = (seq + sent_bytes) % (1 << 32)
    return header[:seq_offset] + seq.to_bytes(4, "big") + header[seq_offset + 4 :]


@dataclass
class TxBuffer:
    """Per-slot TX bookkeeping (like ``struct e1000_tx_buffer``)."""

    dma: int = 0  # bus address of this slot's bounce buffer
    capacity: int = 0
    length: int = 0
    # Set on a frame's first slot: where it ends (next_to_watch) and its totals.
    eop_index: int | None = None
    descriptors: int = 0
    frame_bytes: int = 0
    hw_timestamp: bool = False  # the frame asked for its TX time (SKBTX_HW_TSTAMP)
    # The frame's state xmit and TX clean both write (on two cores, it moves each time).
    line: SharedLine = field(default_factory=lambda: SharedLine("tx_frame", TX_FRAME_LINES))


class TxQueue(DescriptorRing):
    """The netdev's TX queue: the TX ring, a DMA buffer per slot and the queue state.

    The model's "dma_map" copies a fragment into its slot's buffer (memory here has no
    free, so each slot keeps a buffer and grows it to the largest fragment seen), unless
    the queue's hooks place it (:meth:`~.hooks.QueueHooks.map_fragment`).

    Members beyond the ring's: ``netdev`` (the :class:`~.driver.MacDmaDriver`, whose
    ``config``, ``strategy``, ``stats`` and TX callbacks the queue uses), ``buffers``
    (a :class:`TxBuffer` per slot), ``xmit_lock`` (``tx_queue``: one producer at a time),
    ``stopped`` (netif_queue_stopped).
    """

    def __init__(self, netdev: NetDevice, size: int, hooks: QueueHooks) -> None:
        super().__init__(netdev.io, TX_REGS, size, "tx_clean", hooks)
        self.netdev = netdev
        self.stats = netdev.stats
        self.buffers = [TxBuffer() for _ in range(size)]
        self.xmit_lock = SpinLock("tx_queue")  # __netif_tx_lock: one producer at a time
        # next_to_use and next_to_clean, side by side as stmmac's cur_tx and dirty_tx are:
        # xmit writes one and reads the other, TX clean the reverse.
        self.index_line = SharedLine("tx_ring")
        self.stopped = False
        self.tso_headers: int | None = None  # the TSO header buffer, at the first TSO xmit
        # TX_FRAMES and tx_packets when the driver last matched them (open, recovery):
        # TX_FRAMES counts every frame the driver must count sent, those whose write-back
        # never landed included (_reap_sent_unwritten).
        self._frames_synced = 0
        self._packets_synced = 0

    def clear(self) -> None:
        """Zero the ring and forget every frame (after a channel reset)."""
        super().clear()
        for buf in self.buffers:
            buf.eop_index = None

    def map_fragment(self, index: int, data: bytes) -> int:
        """dma_map: the bus address of ``data`` for slot ``index``."""
        address = self.hooks.map_fragment(self, index, data)
        if address is not None:
            return address
        buf = self.buffers[index]
        if len(data) > buf.capacity:
            capacity = max(256, 1 << (len(data) - 1).bit_length())
            buf.dma = self.platform.dma_alloc(capacity, align=64)
            buf.capacity = capacity
        buf.length = len(data)
        # In the CPU's cache: the clean pass after the map (or the snoop) moves it
        self.platform.mem_write_cached(buf.dma, data)
        return buf.dma

    @property
    def lock_level(self) -> str:
        """The context level the TX queue lock is taken at: ``hardirq`` (irqsave) when the
        hard IRQ handler cleans TX under it, else ``softirq`` (bh)."""
        isr_cleans = self.netdev.strategy.kind.isr_cleans
        if isr_cleans and self.netdev.config.tx_clean_lock == "queue":
            return "hardirq"
        return "softirq"

    # -- ndo_start_xmit ---------------------------------------------------------------------

    async def xmit(
        self,
        fragments: list[bytes],
        *,
        hw_timestamp: bool = False,
        dirty_bytes: int | None = None,
    ) -> bool:
        """ndo_start_xmit for a frame of ``fragments`` (one descriptor each);
        ``hw_timestamp`` asks for its TX time (DriverConfig.ptp: ``on_tx_timestamp``);
        ``dirty_bytes``: how much of the frame, from its start, the CPU wrote and holds
        dirty in its cache, which the map's clean writes back (None: all of it, a frame
        the stack built; a forwarded frame: the headers the router rewrote).

        Returns True (NETDEV_TX_OK) when queued, False (NETDEV_TX_BUSY) without queuing
        anything while the queue is stopped. Stops the queue once fewer than
        ``max_frags`` descriptors are free, so the next worst-case frame always fits.
        """
        config = self.netdev.config
        count = len(fragments)
        if not 1 <= count <= self.size - 1:
            raise ValueError(f"A frame of {count} fragments does not fit a {self.size}-entry ring")
        for frag in fragments:
            if not 1 <= len(frag) <= MAX_BUFFER_BYTES:
                raise ValueError(f"Fragment length {len(frag)} must be 1..{MAX_BUFFER_BYTES}")
        if hw_timestamp and not config.ptp:
            raise ValueError("xmit(hw_timestamp=True) needs a driver opened with ptp=True")
        if self.stopped:
            return False  # NETDEV_TX_BUSY: the stack requeues and waits for the wake
        if dirty_bytes is not None and dirty_bytes < 0:
            raise ValueError(f"dirty_bytes = {dirty_bytes} cannot be negative")
        if config.linearize and count > 1:
            # No scatter-gather (validate_xmit_skb -> skb_linearize, before the driver's
            # lock): the fragments are copied into one buffer, posted as one descriptor.
            fragments = [b"".join(fragments)]
            await self.io.charge("per_byte_memcpy", len(fragments[0]))
            count = 1
            self.stats.tx_linearized += 1
            dirty_bytes = None  # the copy wrote every byte
        async with spin_lock(self.platform, self.xmit_lock, self.lock_level, self.io):
            await self.index_line.touch(self.io, write=True)  # next_to_clean in, next_to_use out
            if self.unused() < count:
                # Only reachable with more fragments than max_frags: a driver bug in Linux.
                self.stop_queue()
                return False
            await self.io.charge("tx_per_packet")
            if config.tx_checksum == "sw":
                segment = sum(len(f) for f in fragments) - UDP_CSUM_START
                await self.io.charge("per_byte_csum", max(0, segment))
            request = {}
            if config.tx_checksum == "hw":
                request = {
                    "csum_start": UDP_CSUM_START,
                    "csum_offset": UDP_CSUM_OFFSET,
                    "csum_insert": True,
                }
            if hw_timestamp:
                request = {**request, "ts_request": True}
            first = self.next_to_use
            index = first
            ioc = self.netdev.strategy.ioc
            unwritten = 0  # bytes of the frame before this fragment
            for n, frag in enumerate(fragments):
                dirty = None if dirty_bytes is None else max(0, dirty_bytes - unwritten)
                unwritten += len(frag)
                if config.tx_bounce:
                    # The fragment starts at NET_IP_ALIGN: copied into an aligned bounce
                    # buffer, which is what gets mapped (its source lines are cache-hot).
                    await self.io.charge("per_byte_memcpy", len(frag))
                    self.stats.tx_bounced += 1
                    dirty = None  # the copy wrote every byte of the bounce buffer
                await self.io.charge("tx_per_fragment_map")
                address = self.map_fragment(index, frag)
                # dma_map_single(DMA_TO_DEVICE): one clean pass over the fragment's lines
                # (its unmap does no maintenance for this direction); the lines the CPU
                # has dirty are written back.
                await self.io.cache_pass(CacheOp.CLEAN, address, len(frag), dirty)
                await self.io.charge("tx_per_descriptor")
                desc = Descriptor.tx(
                    address, len(frag), sop=n == 0, eop=n == count - 1, ioc=ioc,
                    **(request if n == 0 else {}),
                )  # fmt: skip
                self.post(index, desc)
                last = index
                index = self.next(index)
            head = self.buffers[first]
            await head.line.touch(self.io, write=True)
            head.eop_index = last
            head.descriptors = count
            head.frame_bytes = sum(len(f) for f in fragments)
            head.hw_timestamp = hw_timestamp
            self.next_to_use = index
            self.stats.tx_descriptors += count
            # wmb() before the doorbell: every descriptor is in memory before TAIL moves.
            await self.ring_doorbell()
            await self.netdev.tx_timer.on_xmit(self.netdev.napi_scheduled)
            if self.unused() < config.max_frags:
                self.stop_queue()
            return True

    async def xmit_tso(
        self, header: bytes, payload: list[bytes], mss: int, *, seq_offset: int | None = None
    ) -> bool:
        """Software TSO in the driver (fec_enet_txq_submit_tso): one super-segment of
        ``header`` and the ``payload`` page fragments, cut into segments of ``mss``
        payload bytes, each a frame of its own on the wire.

        Per segment the headers are built from ``header`` (``tso_build_hdr``: with
        ``seq_offset``, the TCP sequence number there advanced by the payload bytes
        before the segment, :func:`tso_header`) and copied into the ring's DMA-able header
        buffer (``per_byte_memcpy``; that buffer is dma_alloc_coherent, so on a
        non-coherent DMA the copy's stores are uncached memory traffic), posted as the
        segment's first descriptor; then one descriptor per piece of a fragment the
        segment covers, each piece mapped on its own as fec_enet_txq_put_data_tso does
        (``tx_per_fragment_map`` and a clean pass over the piece's lines; with
        ``tx_bounce`` a piece off :data:`TX_BOUNCE_ALIGN` is first copied into an
        aligned bounce buffer). ``tx_per_packet`` once for the super-segment, one
        doorbell. Returns False (NETDEV_TX_BUSY, nothing queued, the queue stopped) when
        the descriptors do not fit.
        """
        if not 1 <= mss <= MAX_BUFFER_BYTES or not payload or not header:
            raise ValueError(f"TSO needs a header, payload and an MSS of 1..{MAX_BUFFER_BYTES}")
        if len(header) > TSO_HEADER_BYTES:
            raise ValueError(f"A TSO header is at most {TSO_HEADER_BYTES} bytes")
        tso_header(header, seq_offset, 0)  # a sequence number outside the header: refused
        segments = _tso_segments(payload, mss)
        needed = sum(1 + len(pieces) for pieces in segments)
        if needed > self.size - 1:
            raise ValueError(
                f"A super-segment of {needed} descriptors does not fit a {self.size}-entry ring"
            )
        if self.stopped or self.unused() < needed:
            self.stop_queue()
            return False
        if self.tso_headers is None:
            self.tso_headers = self.platform.dma_alloc(self.size * TSO_HEADER_BYTES, align=64)
        config = self.netdev.config
        ioc = self.netdev.strategy.ioc
        async with spin_lock(self.platform, self.xmit_lock, self.lock_level, self.io):
            await self.index_line.touch(self.io, write=True)
            await self.io.charge("tx_per_packet")
            index = self.next_to_use
            sent_bytes = 0
            for pieces in segments:
                first = index
                segment_header = tso_header(header, seq_offset, sent_bytes)
                await self.io.charge("per_byte_memcpy", len(segment_header))
                slot = self.tso_headers + first * TSO_HEADER_BYTES
                self.platform.mem_write(slot, segment_header)
                parts = [(slot, len(segment_header))]
                slots = self._following(first + 1, len(pieces))
                for i, (offset, piece) in zip(slots, pieces, strict=True):
                    parts.append((await self._map_tso_piece(i, offset, piece), len(piece)))
                    sent_bytes += len(piece)
                for n, (address, length) in enumerate(parts):
                    await self.io.charge("tx_per_descriptor")
                    last = n == len(parts) - 1
                    self.post(index, Descriptor.tx(address, length, sop=n == 0, eop=last, ioc=ioc))
                    eop, index = index, self.next(index)
                head = self.buffers[first]
                await head.line.touch(self.io, write=True)
                head.eop_index, head.descriptors = eop, len(parts)
                head.frame_bytes, head.hw_timestamp = sum(n for _, n in parts), False
                self.stats.tx_descriptors += len(parts)
            self.stats.tso_segments += len(segments)
            self.next_to_use = index
            await self.ring_doorbell()
            await self.netdev.tx_timer.on_xmit(self.netdev.napi_scheduled)
            if self.unused() < config.max_frags:
                self.stop_queue()
            return True

    async def _map_tso_piece(self, index: int, offset: int, piece: bytes) -> int:
        """fec_enet_txq_put_data_tso for one piece at ``offset`` in its page fragment
        (which starts line-aligned: a page, or a page_frag chunk): bounce it when the DMA
        cannot read from there (``tx_bounce``), dma_map_single it, one clean pass over
        its lines. Returns its bus address."""
        if self.netdev.config.tx_bounce and offset % TX_BOUNCE_ALIGN:
            await self.io.charge("per_byte_memcpy", len(piece))
            self.stats.tx_bounced += 1
            offset = 0  # the bounce buffer is aligned
        await self.io.charge("tx_per_fragment_map")
        address = self.map_fragment(index, piece)
        await self.io.cache_pass(CacheOp.CLEAN, offset, len(piece))
        return address

    def _following(self, start: int, count: int) -> list[int]:
        """``count`` ring slots from ``start`` (wrapping)."""
        return [(start + n) % self.size for n in range(count)]

    def pending(self) -> bool:
        """Frames posted and not reaped remain (stmmac's dirty_tx != cur_tx)."""
        return self.next_to_clean != self.next_to_use

    def stop_queue(self) -> None:
        """netif_stop_queue (counted once per stop)."""
        if not self.stopped:
            self.stopped = True
            self.stats.queue_stops += 1

    def wake_queue(self) -> None:
        """netif_wake_queue (counted once per wake)."""
        if self.stopped:
            self.stopped = False
            self.stats.queue_wakes += 1

    async def wait_for_wake(self, poll_ns: float = WAKE_POLL_NS) -> None:
        """Return once the queue is awake (at once if it is): a *sleeping* wait, like a
        qdisc waiting for netif_wake_queue. Without a scheduler's event primitive this
        re-checks every ``poll_ns`` without using the CPU."""
        while self.stopped:
            await self.platform.sleep_ns(poll_ns)

    # -- TX completion ----------------------------------------------------------------------

    async def clean(self, budget: int | None = None) -> int:
        """Reap up to ``budget`` transmitted frames (None: all); wake the queue once
        ``wake_threshold`` descriptors are free. Returns frames cleaned; 0 at once if another
        context is cleaning TX."""
        if not self.clean_lock.try_acquire():
            self.clean_lock.contentions += 1
            return 0
        try:
            if self.netdev.config.tx_clean_lock == "queue":
                # The whole reap under the TX queue lock (__netif_tx_lock): xmit on
                # another core spins until it is done.
                async with spin_lock(self.platform, self.xmit_lock, self.lock_level, self.io):
                    return await self.clean_locked(budget)
            return await self.clean_locked(budget)
        finally:
            self.clean_lock.release()

    async def clean_locked(self, budget: int | None) -> int:
        """:meth:`clean` with ``clean_lock`` held by the caller."""
        netdev = self.netdev
        netdev.phc.begin_pass()
        await self.index_line.touch(self.io, write=False)  # next_to_use
        cleaned = 0
        while self.next_to_clean != self.next_to_use and (budget is None or cleaned < budget):
            first = self.next_to_clean
            head = self.buffers[first]
            assert head.eop_index is not None, "TX ring bookkeeping lost a frame"
            # Like e1000's next_to_watch: the frame is done once its EOP is written back
            # (descriptors complete in ring order).
            eop = await self.read_uncached(head.eop_index, 1)  # word 3: own
            if eop.own:
                break
            if head.hw_timestamp and eop.timestamped and netdev.on_tx_timestamp is not None:
                netdev.on_tx_timestamp(await netdev.phc.extend(eop.timestamp_low_ns))
            head.hw_timestamp = False
            await self.io.charge("tx_clean_per_descriptor", head.descriptors)
            await head.line.touch(self.io, write=True)  # the slot cleared, the skb freed
            self.stats.tx_packets += 1
            self.stats.tx_bytes += head.frame_bytes
            self.next_to_clean = self.next(head.eop_index)
            head.eop_index = None
            cleaned += 1
        if cleaned:
            await self.index_line.touch(self.io, write=True)  # next_to_clean
        # Hysteresis: wake only with room for several worst-case frames, so a stopped queue
        # does not flap once per cleaned frame.
        if self.stopped and self.unused() >= netdev.config.wake_threshold:
            self.wake_queue()
        return cleaned

    # -- recovery ---------------------------------------------------------------------------

    async def recover(self) -> None:
        """The TX channel's reset task (after a TX error, or ``ndo_tx_timeout``): reap what
        completed, drop the rest, reset the channel (HEAD = 0) and re-open the ring from
        slot 0. Takes the TX queue and clean locks with a sleeping wait; the caller's
        context is softirq (the channel reset's wait busy-polls)."""
        await mutex_lock(self.platform, self.xmit_lock)
        await mutex_lock(self.platform, self.clean_lock)
        try:
            await self.reset_channel()
            await self.wait_reset_done()
            await self.clean_locked(None)
            await self._reap_sent_unwritten()
            self.drop_queued()
            self.clear()
            await self.io.writel(self.window.tail, 0)
            await self.start_channel()
            self.wake_queue()
        finally:
            self.clean_lock.release()
            self.xmit_lock.release()

    async def sync_frames(self) -> int:
        """Read TX_FRAMES and note it with ``tx_packets`` (all the frames it counted are
        reaped at this point); returns how many more it counted than were reaped since the
        last sync."""
        frames = await self.io.readl(regs.TX_FRAMES)
        counted = (frames - self._frames_synced) % (1 << 32)
        reaped = self.stats.tx_packets - self._packets_synced
        self._frames_synced, self._packets_synced = frames, self.stats.tx_packets
        return counted - reaped

    async def _reap_sent_unwritten(self) -> None:
        """After a TX channel reset, once the frames written back are reaped: the frames
        the MAC started whose EOP write-back never landed (it failed, or the reset dropped
        it) are on the wire, or cut there and counted in TX_DROPS. TX_FRAMES counts them
        (docs/descriptors.md, "Channel reset"); they are the oldest still queued (frames
        start and complete in ring order), so reap that many as sent, not dropped."""
        sent = await self.sync_frames()
        # Never more than are queued: a device whose TX_FRAMES does not follow the contract
        # leaves the rest to drop_queued.
        while sent > 0 and self.next_to_clean != self.next_to_use:
            sent -= 1
            head = self.buffers[self.next_to_clean]
            assert head.eop_index is not None
            head.hw_timestamp = False  # its time was in the write-back that never landed
            await self.io.charge("tx_clean_per_descriptor", head.descriptors)
            self.stats.tx_packets += 1
            self.stats.tx_bytes += head.frame_bytes
            self.next_to_clean = self.next(head.eop_index)
            head.eop_index = None
        self._packets_synced = self.stats.tx_packets

    def drop_queued(self) -> None:
        """Drop and count (``tx_dropped``) every frame posted and not reaped; the netdev's
        ``on_tx_dropped`` hears each one's first slot."""
        while self.next_to_clean != self.next_to_use:
            head = self.buffers[self.next_to_clean]
            assert head.eop_index is not None
            self.stats.tx_dropped += 1
            if self.netdev.on_tx_dropped is not None:
                self.netdev.on_tx_dropped(self.next_to_clean)
            self.next_to_clean = self.next(head.eop_index)
            head.eop_index = None
