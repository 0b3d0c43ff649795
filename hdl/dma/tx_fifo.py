"""TX frame FIFO: packed DMA words in the ``sync`` (system) domain, MAC bytes in ``tx``.

The DMA reads a frame's fragments from memory as packed words and may stall on the bus at
any time; the MAC must get one byte per ``tx`` clock from the first byte of a frame to its
last or it underruns. This FIFO decouples the two by storing each frame whole before the
MAC sees its first byte (store-and-forward).
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..gray import gray_decode, gray_encode
from ..mac.frame import TS_ID_BITS, ByteBeat, TxByteBeat
from .packed import packed_layout
from .prefetch_fifo import QUEUE_DEPTH, AsyncPrefetchFifo
from .tx_checksum import IP_CSUM_POS, TxChecksumRequest, TxChecksumResult, TxFrameChecksum

__all__ = [
    "TxFrameFifo",
    "TxFrameMeta",
    "check_fifo_params",
    "tx_word_layout",
]

#: Smallest and largest accepted ``depth_bytes`` (powers of two).
MIN_DEPTH_BYTES = 2048
MAX_DEPTH_BYTES = 65536
#: Frames asking for a checksum that may wait in the FIFO at once (their results queue up
#: in a small FIFO of their own beside the words; a further such frame waits to be taken).
CHECKSUM_FRAMES = 16


class TxFrameMeta(data.Struct):
    """What the TX channel knows of a frame as a whole (from its SOP descriptor), carried
    in the payload of every beat of the frame, so ``connect()`` carries it with the words;
    the TX FIFO reads it with the frame's first beat."""

    csum: TxChecksumRequest  # the descriptor's csum_* fields (CHECKSUM_PARTIAL)
    ts_request: TS_ID_BITS  # 0, or the number of the frame's PTP timestamp request


def tx_word_layout(data_width: int) -> data.StructLayout:
    """The beat of the TX channel's output and the TX FIFO's input: a packed word
    (:func:`~.packed.packed_layout` with ``error``) with the frame's :class:`TxFrameMeta`
    in ``meta``."""
    packed = packed_layout(data_width, "error")
    return data.StructLayout({**dict(packed.members), "meta": TxFrameMeta})


def check_fifo_params(data_width, depth_bytes):
    """Validate the elaboration parameters shared by the TX and RX frame FIFOs."""
    if not isinstance(data_width, int) or data_width not in (32, 64):
        raise ValueError(f"data_width must be 32 or 64, not {data_width!r}")
    if (
        not isinstance(depth_bytes, int)
        or not MIN_DEPTH_BYTES <= depth_bytes <= MAX_DEPTH_BYTES
        or depth_bytes & (depth_bytes - 1)
    ):
        raise ValueError(
            f"depth_bytes must be a power of two in {MIN_DEPTH_BYTES}..{MAX_DEPTH_BYTES}, "
            f"not {depth_bytes!r}"
        )


class TxFrameFifo(wiring.Component):
    """Store-and-forward frame FIFO from the DMA (``sync`` domain) to the MAC (``tx`` domain).

    Parameters
    ----------
    data_width : 32 or 64
        Width of the DMA side; one word carries ``W = data_width // 8`` bytes.
    depth_bytes : power of two, 2048..65536
        Storage for frame data. The FIFO holds ``depth_bytes // W`` words of block RAM plus
        the :data:`~.prefetch_fifo.QUEUE_DEPTH` words its read side reads ahead.
    checksum : bool
        Build TX checksum insertion (CHECKSUM_PARTIAL, :mod:`.tx_checksum`): ``meta.csum``
        is honoured. Without it ``meta.csum`` is ignored and frames pass unchanged.
    timestamps : bool
        Carry ``i``'s ``meta.ts_request`` to ``o``'s ``ts_request`` (PTP,
        :mod:`macdma.hdl.mac.ptp`); without it ``o``'s ``ts_request`` is 0.

    Members
    -------
    i : In(stream tx_word_layout(data_width)), ``sync`` domain
        Frames packed from byte lane 0: normally every beat full (``count == W``) except the
        last, which has ``last=1``. ``count`` is honoured on every beat (values above W count
        as W; a non-last beat with ``count == 0`` is skipped, at the cost of one idle byte
        time on ``o``). ``error`` on any beat aborts the frame: the MAC gets it with ``error``
        on its last byte and sends it with ``tx_er``. A last beat with ``count == 0`` (the
        ``AxiBurstReader``'s lone error beat) becomes one extra byte 0x00 that is always
        flagged ``error``, so a frame is never shortened silently. ``meta`` (the frame's
        :class:`TxFrameMeta`) is read with the frame's first beat: ``csum``, its checksum
        request, and ``ts_request``, 0 or the number of its PTP timestamp request.
    o : Out(stream TxByteBeat), ``tx`` domain
        Frames to the MAC, one byte per beat. ``valid`` never depends on ``ready``.
        ``ts_request`` is the one the frame whose bytes are on ``o`` came with (held from
        before its first byte until the next frame's first word is read).
    csum_skipped : Out(1), ``sync`` domain
        One-cycle pulse per frame whose checksum request was not honoured: the frame went
        cut-through (its sum is not known before it starts on the wire) or the request
        did not fit the frame (:class:`~.tx_checksum.TxFrameChecksum`). Such a frame is
        sent with the bytes the driver gave, never with a checksum computed over part of it.
    empty : Out(1), ``sync`` domain
        No frame data anywhere in the block: every frame written has had its last byte taken
        by the MAC (or was dropped by a reset) and no frame is being written.
    frames_queued : Out, ``sync`` domain
        Frames whose first beat was written and whose last byte the MAC has not yet taken.
        Lags the ``tx`` side by a few cycles (it never under-counts).
    level_words : Out, ``sync`` domain
        Words in the FIFO's RAM (``AsyncPrefetchFifo.w_level``: lags reads, never
        under-counts); the words read ahead on the ``tx`` side are no longer counted.

    Store-and-forward: a frame is released to the ``tx`` side only when its last beat has
    been written, so once the MAC has its first byte the rest is already in the FIFO and a
    slow or stalling bus cannot underrun the MAC. Within a frame ``o.valid`` never drops; a
    released frame follows the previous one 2 idle cycles after its last byte (the MAC
    spends at least 5 on FCS and IFG there). From the ``sync`` edge that accepts the last
    beat to ``o.valid`` takes about 6 ``tx`` cycles. ``o`` comes from registers and
    ``o.ready`` only steers them (timing at 125 MHz).

    Oversize frames: a frame that does not fit (more than :attr:`depth_words` words) is
    released early, when its words fill the whole FIFO, and then passes through cut-through
    for that frame only; the next frame is store-and-forward again. Nothing deadlocks, but
    if the DMA then delivers the rest of that frame slower than the wire takes it, ``o.valid``
    drops mid-frame and the MAC underruns (sends ``tx_er`` and discards the rest of the frame).

    Resets: the ``sync`` reset (DMA channel reset) empties the FIFO and, through a reset
    synchronizer, clears the ``tx`` side. If the MAC was in the middle of a frame it then gets
    one byte 0x00 with ``last=1, error=1`` so it ends that frame cleanly. The ``tx`` reset
    (MAC reset) drops the rest of the frame in progress on ``o`` and keeps later frames; it
    is registered before it acts (on a board it is a chip-wide net), so a frame whose first
    word is taken in the reset's first cycle counts as in progress (none of it has reached
    the MAC, which does not take bytes while the reset is seen).
    Hold either reset for at least 4 cycles of the slower clock.
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
        check_fifo_params(data_width, depth_bytes)
        if not isinstance(checksum, bool):
            raise ValueError(f"checksum must be True or False, not {checksum!r}")
        self._checksum = checksum
        self._timestamps = bool(timestamps)
        self._data_width = data_width
        self._depth_bytes = depth_bytes
        beat_bytes = data_width // 8
        # Words of storage: the RAM plus the read-ahead queue.
        self._depth_words = depth_bytes // beat_bytes + QUEUE_DEPTH
        # Frame counters must not wrap while frames are queued: at most one frame per word,
        # plus the frame in the width converter.
        self._frame_counter_bits = ceil_log2(self._depth_words + 2) + 1
        super().__init__(
            {
                "i": In(stream.Signature(tx_word_layout(data_width))),
                "o": Out(stream.Signature(TxByteBeat)),
                "csum_skipped": Out(1),
                "empty": Out(1, init=1),
                "frames_queued": Out(self._frame_counter_bits),
                "level_words": Out(range(self._depth_words + 1)),
            }
        )

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def depth_bytes(self) -> int:
        return self._depth_bytes

    @property
    def depth_words(self) -> int:
        """Words the FIFO can hold (a frame of more words is released cut-through)."""
        return self._depth_words

    def elaborate(self, platform):
        m = Module()

        beat_bytes = self._data_width // 8
        counter_bits = self._frame_counter_bits
        # A word as stored: the input beat already decoded for the tx side (done at the
        # slower sys clock): bytes to send (1..W), whether that is one, whether the word
        # carries anything (``keep``: a non-last empty beat does not), and the error flag
        # (the reader's lone ``count=0`` error beat becomes one flagged byte).
        stored = data.StructLayout(
            {
                "data": self._data_width,
                "bytes": range(beat_bytes + 1),
                "one": 1,
                "keep": 1,
                "last": 1,
                "error": 1,
                # First word of a frame whose checksum result waits in ``results``.
                "csum": 1 if self._checksum else 0,
                # First word of a frame that asked for a PTP timestamp.
                "ts": TS_ID_BITS if self._timestamps else 0,
            }
        )

        # The tx-side logic runs in a local domain on the tx clock whose only reset is the
        # synchronized sync reset, so that both sides of the FIFO are always cleared together.
        # The MAC's own tx reset is handled as an ordinary input (it drops one frame).
        flush = Signal()
        m.submodules.flush_sync = AsyncFFSynchronizer(ResetSignal("sync"), flush, o_domain="tx")
        m.domains.txf = txf = ClockDomain("txf", local=True)
        m.d.comb += [txf.clk.eq(ClockSignal("tx")), txf.rst.eq(flush)]
        tx_reset = ResetSignal("tx", allow_reset_less=True)

        # The read side's ``ready`` only reaches the FIFO's small read-ahead queue, never
        # its block RAM: the MAC's ``ready`` settles late in the 125 MHz ``tx`` cycle.
        m.submodules.words = words = AsyncPrefetchFifo(
            stored.size, self._depth_bytes // beat_bytes, w_domain="sync", r_domain="txf"
        )

        # ---- sync side: write words, release frames --------------------------------------
        accepted = self.i.valid & self.i.ready
        frame_words = Signal(range(self._depth_words + 1))  # non-last beats of the open frame
        frame_open = Signal()
        cut_through = Signal()  # the open frame was released before its last beat
        released = Signal(counter_bits)
        released_gray = Signal(counter_bits)

        csum_wait = Signal()  # a frame asking for a checksum waits for room in ``results``
        beat = self.i.p
        empty_end = beat.last & (beat.count == 0)
        count = Mux(empty_end, 1, Mux(beat.count > beat_bytes, beat_bytes, beat.count))
        w_word = stored(words.w_data)
        m.d.comb += [
            w_word.data.eq(beat.data),
            w_word.bytes.eq(count),
            w_word.one.eq(count == 1),
            w_word.keep.eq(beat.last | (beat.count != 0)),
            w_word.last.eq(beat.last),
            w_word.error.eq(beat.error | empty_end),
            w_word.ts.eq(Mux(frame_open, 0, beat.meta.ts_request)),
            words.w_en.eq(self.i.valid & ~csum_wait),
            self.i.ready.eq(words.w_rdy & ~csum_wait),
            self.level_words.eq(words.w_level),
        ]

        release = Signal()
        with m.If(accepted):
            with m.If(self.i.p.last):
                m.d.sync += [frame_words.eq(0), frame_open.eq(0), cut_through.eq(0)]
                m.d.comb += release.eq(~cut_through)
            with m.Else():
                m.d.sync += frame_open.eq(1)
                with m.If(~cut_through):
                    m.d.sync += frame_words.eq(frame_words + 1)
                # The frame alone fills the FIFO: it can never be complete in it, so let the
                # tx side start on it now rather than deadlock.
                with m.If((frame_words + 1 == self._depth_words) & ~cut_through):
                    m.d.sync += cut_through.eq(1)
                    m.d.comb += release.eq(1)
        with m.If(release):
            m.d.sync += [
                released.eq(released + 1),
                released_gray.eq(gray_encode(released + 1, counter_bits)),
            ]
        if self._checksum:
            results = self._checksum_write_side(
                m,
                accepted=accepted,
                frame_open=frame_open,
                cut_through=cut_through,
                release=release,
                csum_wait=csum_wait,
            )
            request = self.i.p.meta.csum
            m.d.comb += w_word.csum.eq(~frame_open & (request.l4 | request.ip))

        # ---- tx side: take released frames, split words into bytes -----------------------
        # One more stage than the FIFO's own pointer synchronizer: a frame's token can never
        # be seen before the words it covers.
        released_tx = Signal(counter_bits)
        m.submodules.released_sync = FFSynchronizer(
            released_gray, released_tx, o_domain="txf", stages=3, reset_less=False
        )
        # Timing at 125 MHz: taking a word (``pop``) loads the byte side's word registers
        # and, at a frame start, the frame's counters and checksum state; at speed grade 6
        # the routing of such a net takes most of the cycle, so ``pop`` is two LUTs from
        # flip-flops and drives as few loads as it can:
        # * the word about to be taken comes from a register of the FIFO's read-ahead queue
        #   (``AsyncPrefetchFifo``), and taking it only enables that register;
        # * the tx reset, a chip-wide net from the PLL's lock on a board, is registered
        #   here first (``tx_reset_r``); only ``o.valid`` and ``taken`` also see it directly;
        # * whether a frame may start (``may_start``) is a register, worked out a cycle
        #   ahead from the next state of the byte side;
        # * the frame counters and the checksum state follow a cycle after a frame starts,
        #   from the registered pulse ``started_now``.
        fifo_word = stored(words.r.payload)
        tx_reset_r = Signal(reset_less=True)
        m.d.txf += tx_reset_r.eq(tx_reset)

        started = Signal(counter_bits)
        started_gray = Signal(counter_bits)  # compared in Gray code: no decoder on the path
        started_gray_after = Signal(counter_bits, init=1)  # Gray code of started + 1
        finished = Signal(counter_bits)
        finished_gray = Signal(counter_bits)

        in_frame = Signal()  # first word of a frame popped, its last word not yet
        discard = Signal()  # a tx reset hit mid-frame: drop the rest of that frame
        word_valid = Signal()
        word_data = Signal(self._data_width)
        word_last = Signal()  # the held word is the frame's last
        bytes_left = Signal(range(beat_bytes + 1))
        one_left = Signal()  # bytes_left == 1
        frame_error = Signal()

        # Bytes reach the MAC through a 2-entry skid buffer (``out`` drives ``o``; ``spare``
        # catches a byte the MAC did not take), so the MAC's ``ready``, which settles late
        # in the 125 MHz cycle, only steers these registers, and the word logic behind
        # them sees a registered ready (``~spare_valid``). The tx side holds at most one
        # frame: a frame's first word is read once the previous frame's last byte has gone
        # to the MAC (2 idle cycles between frames, well within the MAC's FCS and IFG).
        out_valid = Signal()
        out = Signal(ByteBeat)
        spare_valid = Signal()
        spare = Signal(ByteBeat)
        pushed = Signal(ByteBeat)

        abort_pending = Signal()  # tx domain: a sync reset cut a frame the MAC had started
        mac_in_frame = Signal()

        pop = Signal()
        start = Signal()  # ``pop`` takes a frame's first word
        started_now = Signal()  # a frame started in the previous cycle
        may_start = Signal()  # a frame may start in this cycle (registered, see below)
        patch = Signal()  # the byte at the head of ``word`` is replaced by ``patch_byte``
        patch_byte = Signal(8)
        push = Signal()  # a byte of ``word`` goes into the skid buffer
        taken = Signal()  # the MAC takes ``out`` (not the abort byte)
        out_live = Signal()  # ``out`` may go to the MAC (see below)
        m.d.comb += push.eq(word_valid & ~spare_valid & ~tx_reset_r)
        word_done = push & one_left
        tx_side_empty = ~word_valid & ~out_valid & ~spare_valid
        m.d.comb += [
            pop.eq(
                words.r.valid
                & ~tx_reset_r
                & Mux(in_frame, discard | ~word_valid | word_done, may_start)
            ),
            words.r.ready.eq(pop),
            start.eq(pop & ~in_frame),
        ]

        # A frame's counters move a cycle after it starts; until then ``started_now`` says
        # that the frame started is no longer waiting.
        m.d.txf += started_now.eq(start)
        frame_ts_request = Signal(TS_ID_BITS)  # held for the whole frame
        with m.If(start):
            m.d.txf += frame_ts_request.eq(fifo_word.ts)
        with m.If(started_now):
            m.d.txf += [
                started.eq(started + 1),
                started_gray.eq(started_gray_after),
                started_gray_after.eq(gray_encode(started + 2, counter_bits)),
            ]
        frame_available = Mux(
            started_now, released_tx != started_gray_after, released_tx != started_gray
        )
        # The byte side is empty in the next cycle: the skid buffer empties (nothing in
        # ``spare``, ``out`` free or taken), ``word`` holds nothing and gets nothing now.
        # The next state of ``tx_side_empty`` (see the registers' updates below). It only
        # acts through ``may_start`` in the next cycle, when no frame starts after a tx
        # reset (``pop`` waits for ``tx_reset_r``) nor during a flush (``may_start`` is a
        # register of the flushed domain), so it takes ``out`` as the MAC's ``ready`` says
        # without the resets ``taken`` sees: the chip-wide tx reset net stays off this path
        # (the Colorlight's worst tx path, 7.9 ns, before).
        out_leaving = self.o.ready & out_live
        idle_next = tx_reset_r | (
            ~spare_valid
            & ~word_valid
            & (~out_valid | out_leaving)
            & ~(pop & ~discard & fifo_word.keep)
        )

        def frame_finished():
            return [
                finished.eq(finished + 1),
                finished_gray.eq(gray_encode(finished + 1, counter_bits)),
            ]

        if self._checksum:
            csum_ready = self._checksum_read_side(
                m,
                results,
                fifo_word=fifo_word,
                start=start,
                started_now=started_now,
                push=push,
                patch=patch,
                patch_byte=patch_byte,
            )
            # The next frame's result (if it asks for one) is in its register. Conservative:
            # 0 while no word is at the FIFO's head (its flag is not known yet).
            csum_ready = words.r.valid & (~fifo_word.csum | csum_ready)
        else:
            csum_ready = 1
        # Never 1 in the cycle after a pop: the word at the head is then a new one, and a
        # frame never starts right after a pop anyway (its word keeps the byte side busy).
        m.d.txf += may_start.eq(~pop & frame_available & idle_next & csum_ready)

        with m.If(push):
            m.d.txf += [
                word_data.eq(word_data >> 8),
                bytes_left.eq(bytes_left - 1),
                one_left.eq(bytes_left == 2),
            ]
            with m.If(word_done):
                m.d.txf += word_valid.eq(0)

        with m.If(pop):
            m.d.txf += in_frame.eq(~fifo_word.last)
            with m.If(discard):
                with m.If(fifo_word.last):
                    m.d.txf += [discard.eq(0), *frame_finished()]
            with m.Else():
                m.d.txf += [
                    word_valid.eq(fifo_word.keep),
                    word_data.eq(fifo_word.data),
                    word_last.eq(fifo_word.last),
                    bytes_left.eq(fifo_word.bytes),
                    one_left.eq(fifo_word.one),
                    frame_error.eq((frame_error & in_frame) | fifo_word.error),
                ]

        # ---- skid buffer to the MAC ------------------------------------------------------
        is_last = word_last & one_left
        m.d.comb += [
            pushed.data.eq(
                Mux(patch, patch_byte, word_data[:8]) if self._checksum else word_data[:8]
            ),
            pushed.last.eq(is_last),
            pushed.error.eq(is_last & frame_error),
        ]
        # ``out_live`` is ``out_valid & ~abort_pending & ~tx_reset_r`` worked out a cycle
        # ahead from the next states of those three, so the MAC's ``ready`` (two flip-flops
        # and its transmit gate away) meets one LUT, not three, on its way to ``taken``
        # (the Colorlight's tx clock path with the RX checksum on).
        out_valid_next = ~tx_reset_r & Mux(spare_valid | (out_valid & ~taken), out_valid, push)
        abort_pending_next = abort_pending & ~self.o.ready  # outside a flush (resets out_live)
        m.d.txf += out_live.eq(out_valid_next & ~abort_pending_next & ~tx_reset)
        m.d.comb += taken.eq(self.o.ready & out_live & ~tx_reset & ~flush)
        with m.If(taken & out.last):
            m.d.txf += frame_finished()
        with m.If(spare_valid):
            with m.If(taken):
                m.d.txf += [out.eq(spare), spare_valid.eq(0)]
        with m.Elif(~out_valid | taken):
            m.d.txf += [out.eq(pushed), out_valid.eq(push)]
        with m.Elif(push):
            m.d.txf += [spare.eq(pushed), spare_valid.eq(1)]

        with m.If(tx_reset_r):
            # The MAC restarts between frames: whatever of the current frame it has not
            # taken must not reach it, or it would go out as a new (corrupt) frame.
            m.d.txf += [word_valid.eq(0), out_valid.eq(0), spare_valid.eq(0)]
            with m.If(in_frame):
                m.d.txf += discard.eq(1)
            with m.Elif(~tx_side_empty):
                # The frame's last word was read but its last byte not sent: it is done.
                m.d.txf += frame_finished()

        with m.If(abort_pending):
            m.d.comb += [
                self.o.valid.eq(~flush),
                self.o.p.data.eq(0),
                self.o.p.last.eq(1),
                self.o.p.error.eq(1),
            ]
        with m.Else():
            m.d.comb += [
                # Nothing moves during a flush: the MAC must not take a byte (maybe the last)
                # in the very cycle that decides whether it needs the abort byte.
                self.o.valid.eq(out_live & ~tx_reset & ~flush),
                self.o.p.data.eq(out.data),
                self.o.p.last.eq(out.last),
                self.o.p.error.eq(out.error),
            ]
        m.d.comb += self.o.p.ts_request.eq(frame_ts_request)

        # Where the MAC is within a frame, kept in the tx domain so that a flush can see it.
        with m.If(self.o.valid & self.o.ready):
            m.d.tx += mac_in_frame.eq(~self.o.p.last)
            with m.If(abort_pending):
                m.d.tx += abort_pending.eq(0)
        with m.If(flush & mac_in_frame):
            m.d.tx += [abort_pending.eq(1), mac_in_frame.eq(0)]

        # ---- status back to the sync side ------------------------------------------------
        finished_sync = Signal(counter_bits)
        finished_sys = Signal(counter_bits)
        m.submodules.finished_sync = FFSynchronizer(
            finished_gray, finished_sync, o_domain="sync", reset_less=False
        )
        m.d.sync += finished_sys.eq(gray_decode(finished_sync))
        m.d.comb += [
            self.frames_queued.eq(released - finished_sys + (frame_open & ~cut_through)),
            self.empty.eq(~frame_open & (released == finished_sys)),
        ]

        return m

    def _checksum_write_side(self, m, *, accepted, frame_open, cut_through, release, csum_wait):
        """Sum each frame as its words are stored; queue one result per frame that asked
        for a checksum (a cut-through frame's says "insert nothing" and is counted)."""
        m.submodules.csum = csum = TxFrameChecksum(self._data_width)
        m.submodules.results = results = AsyncPrefetchFifo(
            TxChecksumResult.size, CHECKSUM_FRAMES, w_domain="sync", r_domain="txf"
        )
        request = self.i.p.meta.csum
        asks = request.l4 | request.ip
        frame_asks = Signal()  # the open frame asked for a checksum
        with m.If(accepted & ~frame_open):
            m.d.sync += frame_asks.eq(asks)
        # A frame released before its last word (cut-through) starts on the wire before
        # its sum is known: its result goes now, with nothing to insert.
        early = release & ~self.i.p.last & frame_asks
        blank = Signal(TxChecksumResult)
        m.d.comb += [
            csum.i.valid.eq(accepted),
            csum.i.p.data.eq(self.i.p.data),
            csum.i.p.count.eq(self.i.p.count),
            csum.i.p.last.eq(self.i.p.last),
            csum.request.eq(request),
            csum.cancel.eq(cut_through | (release & ~self.i.p.last)),
            # Room for this frame's result and the previous frame's, still being summed.
            csum_wait.eq(~frame_open & asks & (results.w_level > CHECKSUM_FRAMES - 3)),
            results.w_en.eq(csum.result.valid | early),
            results.w_data.eq(Mux(early, blank, csum.result.p)),
            self.csum_skipped.eq(csum.failed | early),
        ]
        return results

    def _checksum_read_side(
        self, m, results, *, fifo_word, start, started_now, push, patch, patch_byte
    ):
        """Take a frame's result as it starts and replace the bytes it names as they pass;
        returns "the next result is waiting". Everything the byte path sees is registered
        one byte ahead (125 MHz); the frame start only sets ``asked``, the rest is loaded
        a cycle later (``started_now``), before the frame's first byte can be
        one to patch (both checksums lie after the Ethernet header)."""
        # The result FIFO's first word is a register; the frame start only notes that it
        # is taken (``asked``), and the FIFO moves on a cycle later.
        waiting = TxChecksumResult(results.r.payload)
        asked = Signal()  # the frame started in the previous cycle takes ``waiting``
        m.d.txf += asked.eq(start & fifo_word.csum)
        m.d.comb += results.r.ready.eq(asked)

        l4_csum = Signal(16)
        ip_csum = Signal(16)
        l4_left = Signal.like(waiting.l4_pos)  # bytes before the L4 checksum's high byte
        ip_left = Signal(range(IP_CSUM_POS + 1))
        l4_on = Signal()
        ip_on = Signal()
        with m.If(started_now):
            # The frame's first byte may be pushed in this cycle already.
            m.d.txf += [
                l4_csum.eq(waiting.l4_csum),
                ip_csum.eq(waiting.ip_csum),
                l4_on.eq(asked & waiting.l4),
                ip_on.eq(asked & waiting.ip),
                l4_left.eq(waiting.l4_pos - push),
                ip_left.eq(IP_CSUM_POS - push),
                patch.eq(0),
            ]
        with m.Elif(push):
            l4_high = l4_on & (l4_left == 1)
            l4_low = l4_on & (l4_left == 0)
            ip_high = ip_on & (ip_left == 1)
            ip_low = ip_on & (ip_left == 0)
            m.d.txf += [
                l4_left.eq(l4_left - 1),
                ip_left.eq(ip_left - 1),
                patch.eq(l4_high | l4_low | ip_high | ip_low),
                patch_byte.eq(
                    Mux(
                        l4_high,
                        l4_csum[8:],
                        Mux(l4_low, l4_csum[:8], Mux(ip_high, ip_csum[8:], ip_csum[:8])),
                    )
                ),
            ]
            with m.If(l4_low):
                m.d.txf += l4_on.eq(0)
            with m.If(ip_low):
                m.d.txf += ip_on.eq(0)
        return results.r.valid & ~asked
