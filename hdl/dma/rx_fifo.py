"""RX frame FIFO: MAC bytes in the ``rx`` domain, packed DMA words in the ``sync`` domain.

The wire cannot wait, so the MAC's receive stream has no back-pressure: when the DMA falls
behind (no RX buffers, a slow bus) this FIFO is where frames are cut short, and it must say
so in the stream and in a counter rather than lose or merge frames silently.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.fifo import AsyncFIFOBuffered
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..gray import gray_decode, gray_encode
from ..mac.frame import RxByteBeat, RxError, RxFrameMeta
from .packed import pack_struct, packed_layout
from .rx_checksum import PARTIAL_BITS, FrameChecksum, fold_partial
from .tx_fifo import check_fifo_params

__all__ = ["RxFrameFifo", "rx_word_layout"]


def rx_word_layout(data_width: int) -> data.StructLayout:
    """The beat of the RX FIFO's output and the RX DMA channel's input: a packed word
    (:func:`~.packed.packed_layout` with ``error`` and ``overflow``) whose last beat carries
    the frame's :class:`~macdma.hdl.mac.frame.RxFrameMeta` in ``meta``."""
    packed = packed_layout(data_width, "error", "overflow")
    return data.StructLayout({**dict(packed.members), "meta": RxFrameMeta})


class RxFrameFifo(wiring.Component):
    """Frame FIFO from the MAC (``rx`` domain) to the DMA (``sync`` domain), with overflow.

    Parameters
    ----------
    data_width : 32 or 64
        Width of the DMA side; one word carries ``W = data_width // 8`` bytes.
    depth_bytes : power of two, 2048..65536
        Storage for frame data: ``depth_bytes // W`` words of memory (plus the
        ``AsyncFIFOBuffered`` output register, which is not counted as room).

    Members
    -------
    i : In(stream RxByteBeat, always ready), ``rx`` domain
        Frames from the MAC (or its PTP timestamper). ``error`` on the last byte marks a
        bad frame; that byte's ``meta`` is stored with the frame: ``cause``, and with
        ``timestamps=True`` ``ts_ns`` and ``ts_valid`` (``csum`` is ignored).
    o : Out(stream rx_word_layout(data_width)), ``sync`` domain
        Frames packed from byte lane 0: every beat full (``count == W``) except the last
        (``last=1``, ``count`` in 1..W, or 0 for an overflow marker); lanes at or above
        ``count`` are zero. On the last beat ``error`` is the MAC's verdict, or 1 with
        ``overflow=1`` for a frame cut short here, and ``meta`` is the frame's: the
        ``cause``, ``ts_ns`` and ``ts_valid`` stored with it (all 0 for a frame cut short
        or lost here, which has ``overflow`` instead; the time only with
        ``timestamps=True``), and with ``checksum=True`` ``csum``, the frame's Internet
        checksum from byte 14 on (:mod:`macdma.hdl.dma.rx_checksum`, CHECKSUM_COMPLETE),
        summed on the way in (0 without).
    overflows : Out(32), ``sync`` domain
        Frames cut short or lost by this FIFO since reset; wraps. Lags the ``rx`` side by
        about 4 ``sync`` cycles.
    fill_bytes : Out(range(depth_bytes + 2 * W + 1)), ``rx`` domain
        Bytes of whole words stored and not yet taken by the DMA, as the overflow logic
        counts them (two rx cycles old): what 802.3x flow
        control compares with its watermarks.

    Packing happens in the ``rx`` domain, so the crossing carries one word per W bytes.

    Overflow: room is counted conservatively in the ``rx`` domain (words written minus words
    the DMA has taken, as last seen through a synchronizer, two cycles old so the pointer
    arithmetic is pipelined, less the words written since) and one word is always kept free
    for the end of the frame being stored. Words are written into the memory one cycle
    after they are decided. When a word of a frame does not fit:

    - the frame already has words stored: the word goes into the kept slot as its last beat,
      ``count == W`` with ``error=1, overflow=1``; the rest of the frame is dropped;
    - it is the frame's first word and one slot is free: the same, so the DMA gets the
      frame's first W bytes and the overflow flags;
    - the FIFO is completely full (the kept slot went to the previous frame's end): the frame
      is lost whole, and as soon as there is room a marker beat ``count=0, last=1, error=1,
      overflow=1`` is stored in its place. Frames that finish their first word while that
      marker is still waiting are lost too and share the one marker.

    Every cut-short or lost frame adds one to ``overflows``, so the count is exact even when
    one marker stands for several lost frames. Frames stored before an overflow are intact,
    and the first frame to reach its first word after the marker (or after the truncated
    frame's end) with room to spare starts clean. Bytes of two frames never share a word.

    Resets: either domain's reset empties the FIFO and clears ``overflows``. After a ``sync``
    reset, a frame the MAC is in the middle of is dropped up to its last byte (the next one
    starts clean). After an ``rx`` reset alone, a frame the DMA has taken part of is ended
    with one beat ``count=0, last=1, error=1, overflow=0``. Hold either reset for at least 4
    cycles of the slower clock.
    The reset synchronizers start asserted, so after power-up the block stays in reset for
    the first 2 cycles of each clock.
    """

    def __init__(
        self,
        data_width: int = 32,
        depth_bytes: int = 4096,
        *,
        checksum: bool = False,
        timestamps: bool = False,
    ):
        for name, value in (("checksum", checksum), ("timestamps", timestamps)):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be True or False, not {value!r}")
        check_fifo_params(data_width, depth_bytes)
        self._data_width = data_width
        self._depth_bytes = depth_bytes
        self._memory_words = depth_bytes // (data_width // 8)
        self._checksum = checksum
        self._timestamps = timestamps
        super().__init__(
            {
                "i": In(stream.Signature(RxByteBeat, always_ready=True)),
                "o": Out(stream.Signature(rx_word_layout(data_width))),
                "overflows": Out(32),
                "fill_bytes": Out(range(depth_bytes + 2 * (data_width // 8) + 1)),
            }
        )

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def depth_bytes(self) -> int:
        return self._depth_bytes

    @property
    def memory_words(self) -> int:
        """Words of room the overflow logic counts with (the memory's depth)."""
        return self._memory_words

    def elaborate(self, platform):
        m = Module()

        beat_bytes = self._data_width // 8
        layout = packed_layout(self._data_width, "error", "overflow")
        capacity = self._memory_words
        # Words written minus words taken never exceeds capacity + 1 (the output register).
        level_bits = ceil_log2(capacity + 2) + 1

        # The write side runs in a local domain on the rx clock, reset by either domain's
        # reset: the AsyncFIFO is emptied only by its write-domain reset.
        sys_reset_rx = Signal()
        m.submodules.sys_reset_sync = AsyncFFSynchronizer(
            ResetSignal("sync"), sys_reset_rx, o_domain="rx"
        )
        rx_reset = ResetSignal("rx", allow_reset_less=True)
        m.domains.rxf = rxf = ClockDomain("rxf", local=True)
        m.d.comb += [rxf.clk.eq(ClockSignal("rx")), rxf.rst.eq(rx_reset | sys_reset_rx)]
        # The same reset seen from the sync side: drain the FIFO's output register, which a
        # write-domain reset alone would leave holding a stale word.
        flush = Signal()
        m.submodules.flush_sync = AsyncFFSynchronizer(rxf.rst, flush, o_domain="sync")

        # Each stored word is the packed beat plus the frame's cause (used on last beats).
        # With timestamps, the frame's time rides with the cause (last words only).
        cause_bits = RxError.as_shape().width + (33 if self._timestamps else 0)
        csum_bits = PARTIAL_BITS if self._checksum else 0
        m.submodules.words = words = AsyncFIFOBuffered(
            width=layout.size + cause_bits + csum_bits,
            depth=capacity + 1,
            w_domain="rxf",
            r_domain="sync",
            exact_depth=True,
        )

        # ---- rx domain: where the MAC is within a frame (survives a flush) -----------------
        mac_in_frame = Signal()
        skip = Signal()  # a sync reset hit mid-frame: ignore bytes up to that frame's end
        mac_in_frame_next = Mux(self.i.valid, ~self.i.p.last, mac_in_frame)
        m.d.rx += mac_in_frame.eq(mac_in_frame_next)
        with m.If(sys_reset_rx):
            m.d.rx += skip.eq(mac_in_frame_next)
        with m.Elif(self.i.valid & self.i.p.last):
            m.d.rx += skip.eq(0)

        # ---- rxf domain: pack bytes into words, decide what fits --------------------------
        written = Signal(level_bits)
        taken_sync = Signal(level_bits)
        taken_rx = Signal(level_bits)
        used = Signal(level_bits)
        write = Signal()  # store the word decided in this cycle
        # The word is written into the FIFO a cycle after the decision, so the decision and
        # the FIFO's pointer arithmetic are not one long path.
        w_next = Signal(layout.size + cause_bits)
        w_stored = Signal.like(w_next)
        w_en = Signal()
        m.d.rxf += [w_stored.eq(w_next), w_en.eq(write)]
        m.d.comb += words.w_en.eq(w_en)
        if self._checksum:
            # The frame's sum is ready in the cycle its last word is written.
            m.submodules.checksum = checksum = DomainRenamer("rxf")(FrameChecksum())
            m.d.comb += [
                checksum.i.valid.eq(self.i.valid),
                checksum.i.p.data.eq(self.i.p.data),
                checksum.i.p.last.eq(self.i.p.last),
                checksum.i.p.error.eq(self.i.p.error),
                words.w_data.eq(Cat(w_stored, checksum.partial)),
            ]
        else:
            m.d.comb += words.w_data.eq(w_stored)
        # ``used`` can exceed capacity by the output register's word; no room then.
        m.d.comb += used.eq(written - taken_rx)
        # The write decision uses room computed from counts two cycles old (one register
        # after the subtraction, one after the comparisons), less the words written since:
        # words the sync side took meanwhile only add room, so this never over-counts, and
        # the pointer arithmetic stays off the path to the decision.
        used_q = Signal(level_bits)
        wrote_before = Signal()  # w_en one cycle later: a word written two cycles ago
        m.d.rxf += [used_q.eq(used), wrote_before.eq(w_en)]
        m.d.comb += self.fill_bytes.eq(used_q * beat_bytes)
        # free_ge[k]: at least k + 1 words free (true after a reset: the FIFO is empty).
        free_ge = [Signal(name=f"free_ge{n}", init=1) for n in range(1, 5)]
        m.d.rxf += [flag.eq(used_q + n <= capacity) for n, flag in enumerate(free_ge, 1)]
        recent = w_en + wrote_before  # words written since the counts were taken
        room_1 = Array(free_ge[0:3])[recent]
        room_2 = Array(free_ge[1:4])[recent]

        lanes = Signal(self._data_width)  # bytes of the current word so far; higher lanes 0
        lane_count = Signal(range(beat_bytes))
        stored = Signal()  # the current frame has words in the FIFO
        discard = Signal()  # the current frame was cut short or lost: drop up to its end
        lost_pending = Signal()  # a frame was lost whole; its marker is not stored yet
        overflow_count = Signal(32)
        overflow_gray = Signal(32)

        byte = self.i.valid & ~skip
        word_complete = byte & ~discard & (self.i.p.last | (lane_count == beat_bytes - 1))
        merged = Cat(
            Mux(lane_count == lane, self.i.p.data, lanes.word_select(lane, 8))
            for lane in range(beat_bytes)
        )
        w_word = layout(w_next[: layout.size])
        w_cause = w_next[layout.size :]
        overflowed = Signal()

        with m.If(byte & ~discard & ~word_complete):
            m.d.rxf += [
                lanes.word_select(lane_count, 8).eq(self.i.p.data),
                lane_count.eq(lane_count + 1),
            ]
        with m.If(byte & discard & self.i.p.last):
            m.d.rxf += discard.eq(0)

        with m.If(word_complete):
            m.d.rxf += [lanes.eq(0), lane_count.eq(0)]
            m.d.comb += [w_word.data.eq(merged), w_word.count.eq(lane_count + 1)]
            with m.If(lost_pending):
                # Keep order: the lost frames' marker goes in before any later frame.
                m.d.comb += overflowed.eq(1)
                m.d.rxf += discard.eq(~self.i.p.last)
            with m.Elif(self.i.p.last & room_1):
                m.d.comb += [
                    write.eq(1),
                    w_word.last.eq(1),
                    w_word.error.eq(self.i.p.error),
                    w_cause.eq(self._cause_and_time()),
                ]
                m.d.rxf += stored.eq(0)
            with m.Elif(~self.i.p.last & room_2):
                m.d.comb += write.eq(1)
                m.d.rxf += stored.eq(1)
            with m.Elif(room_1):
                # Room for one more word only: it becomes the frame's (truncated) end.
                m.d.comb += [
                    write.eq(1),
                    overflowed.eq(1),
                    w_word.last.eq(1),
                    w_word.error.eq(1),
                    w_word.overflow.eq(1),
                ]
                m.d.rxf += [stored.eq(0), discard.eq(~self.i.p.last)]
            with m.Else():
                # No room at all (only possible for a first word): lose the frame, mark later.
                m.d.comb += overflowed.eq(1)
                m.d.rxf += [lost_pending.eq(1), discard.eq(~self.i.p.last)]
        with m.Elif(lost_pending & room_1):
            m.d.comb += [
                write.eq(1),
                w_word.last.eq(1),
                w_word.error.eq(1),
                w_word.overflow.eq(1),
            ]
            m.d.rxf += lost_pending.eq(0)

        with m.If(write):
            m.d.rxf += written.eq(written + 1)
        with m.If(overflowed):
            m.d.rxf += [
                overflow_count.eq(overflow_count + 1),
                overflow_gray.eq(gray_encode(overflow_count + 1, 32)),
            ]

        taken_gray = Signal(level_bits)  # sync domain, registered: safe to synchronize
        m.submodules.taken_sync = FFSynchronizer(
            taken_gray, taken_sync, o_domain="rxf", reset_less=False
        )
        # Decoded in two registered halves (a whole-width decode is a chain of XORs too
        # long for 8 ns): the low bits' binary value is their own decode XOR the lowest
        # bit of the high half's. One more cycle of lag only makes the room smaller.
        split = level_bits // 2
        taken_high = Signal(level_bits - split)
        taken_low_gray = Signal(split)
        m.d.rxf += [
            taken_high.eq(gray_decode(taken_sync[split:])),
            taken_low_gray.eq(taken_sync[:split]),
            taken_rx.eq(
                Cat(gray_decode(taken_low_gray) ^ taken_high[0].replicate(split), taken_high)
            ),
        ]

        # ---- sync side: hand words to the DMA -------------------------------------------
        taken = Signal(level_bits)
        o_in_frame = Signal()  # the DMA has non-last beats of a frame
        abort_pending = Signal()
        fifo_word = layout(words.r_data[: layout.size])
        stored_meta = words.r_data[layout.size : layout.size + cause_bits]
        with m.If(abort_pending & ~flush):
            m.d.comb += [
                self.o.valid.eq(1),
                self.o.p.last.eq(1),
                self.o.p.error.eq(1),
            ]
        with m.Else():
            meta = self._meta_out(stored_meta)
            if self._checksum:
                meta["csum"] = fold_partial(words.r_data[layout.size + cause_bits :])
            fields = {name: fifo_word[name] for name in layout.members}
            m.d.comb += [
                self.o.valid.eq(words.r_rdy & ~flush & ~abort_pending),
                self.o.p.eq(
                    pack_struct(self.o.p.shape(), **fields, meta=pack_struct(RxFrameMeta, **meta))
                ),
            ]
        pop = words.r_rdy & words.r_en & ~flush
        m.d.comb += words.r_en.eq(flush | (self.o.ready & ~abort_pending))
        with m.If(flush):
            m.d.sync += [taken.eq(0), taken_gray.eq(0), o_in_frame.eq(0)]
            with m.If(o_in_frame):
                m.d.sync += abort_pending.eq(1)
        with m.Else():
            with m.If(pop):
                m.d.sync += [taken.eq(taken + 1), taken_gray.eq(gray_encode(taken + 1, level_bits))]
            with m.If(self.o.valid & self.o.ready):
                m.d.sync += o_in_frame.eq(~self.o.p.last)
                with m.If(abort_pending):
                    m.d.sync += abort_pending.eq(0)

        overflow_sync = Signal(32)
        m.submodules.overflow_sync = FFSynchronizer(
            overflow_gray, overflow_sync, o_domain="sync", reset_less=False
        )
        with m.If(flush):
            m.d.sync += self.overflows.eq(0)
        with m.Else():
            m.d.sync += self.overflows.eq(gray_decode(overflow_sync))

        return m

    def _cause_and_time(self):
        """What of the last byte's ``meta`` is stored with the frame."""
        meta = self.i.p.meta
        if self._timestamps:
            return Cat(meta.cause, meta.ts_ns, meta.ts_valid)
        return meta.cause

    def _meta_out(self, stored):
        """``o``'s ``meta`` fields from what :meth:`_cause_and_time` stored."""
        cause = RxError.as_shape().width
        fields = {"cause": stored[:cause]}
        if self._timestamps:
            fields.update(ts_ns=stored[cause : cause + 32], ts_valid=stored[cause + 32])
        return fields
