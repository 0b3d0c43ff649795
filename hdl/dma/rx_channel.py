"""RX DMA channel: frames from the RX FIFO into the host's RX descriptor ring.

See :class:`RxDmaChannel` for the ports and the exact behaviour; ``docs/descriptors.md`` for
the descriptor hand-off protocol it implements.
"""

from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..mac.frame import RxError
from ..regmap import REGISTER_MAP, RING_INDEX_BITS, RING_SIZE_BITS
from .channel import ERROR_CODES, DmaChannel, bus_members, register_members
from .descriptor import DESCRIPTOR_BYTES, MIN_RX_BUFFER_BYTES, pack_descriptor
from .irq import IrqEventSignature
from .ring import DescriptorWalker, smallest, wrap_increment
from .rx_fifo import rx_word_layout

__all__ = ["RxDmaChannel"]


#: Largest data write command (bytes) the channel hands to the AXI writer; a frame is staged
#: in pieces of at most this size, so the staging FIFO holds two of them.
CHUNK_BEATS = 64
#: Write commands queued for the AXI writer (data chunks and write-backs).
CMD_QUEUE_DEPTH = 8
#: Width of RX_FIFO_OVERFLOWS, the RX FIFO's count the channel reports.
FIFO_OVERFLOWS_BITS = REGISTER_MAP.field("RX_FIFO_OVERFLOWS", "fifo_overflows").width


class RxDmaChannel(DmaChannel):
    """One RX DMA channel: descriptor prefetch, frame scatter, write-back, drops, errors.

    Parameters
    ----------
    data_width : 32 or 64
        Width of ``i`` and of both AXI interfaces (``W = data_width // 8`` bytes a beat).
    addr_width : 12..64
        AXI address width (RING_BASE and buffer addresses are 32-bit in the descriptor).
    max_prefetch : 1..16
        Most descriptors held prefetched (and the clamp of ``prefetch``).

    Members (all in the ``sync`` domain)
    -------
    regs : In(block_signature(RX block))
        The CSR bank's ``bank.rx`` (the register map's RX block), connected with
        ``wiring.connect(m, bank.rx, rx_dma.regs)``; the channel reads and drives these:
    regs.ctrl.run, regs.ctrl.reset
        CTRL.run; CTRL.reset (one-cycle strobe).
    regs.ring_base, regs.ring_size
        RING_BASE (16-byte aligned), RING_SIZE (0 = not configured; 1 never fetches because
        at most RING_SIZE - 1 descriptors are ever in the DMA's hands).
    regs.tail, regs.tail_written
        TAIL and its write strobe (the doorbell). A doorbell with ``tail >= ring_size`` is
        ignored (the previous tail stays) and sets the sticky ``bad_tail``.
    regs.poll_us
        POLL_US (0 = off): every ``poll_us`` µs the channel re-reads the descriptor(s) at its
        fetch position even without a doorbell.
    regs.burst_beats
        BURST_BEATS, passed to both AXI movers.
    regs.prefetch
        PREFETCH: descriptors per fetch burst, clamped to 1..max_prefetch.
    regs.head (driven)
        HEAD: next descriptor whose write-back is awaited; advances after each write-back's
        OKAY B response.
    regs.status.running, .halted, .error_code (driven)
        STATUS. ``running`` = run & ring configured & not halted.
    regs.status.resetting (driven)
        STATUS.resetting: 1 from the cycle after a ``reset`` strobe until the channel state
        has been reset, i.e. while the movers finish the AXI transaction in flight. A driver
        re-posts buffers only once it reads 0: before, a data burst still in flight could
        land in a re-posted buffer.
    regs.status.bad_tail (driven)
        Sticky: a doorbell had ``tail >= ring_size``; cleared by CTRL.reset.
    regs.desc_fetched, .bursts, .bytes, .frames, .drops (driven)
        Counters (wrap; kept across CTRL.reset, cleared by the system reset only):
        descriptors read from the ring (owned or not); AXI write bursts (AW handshakes) of
        frame data; frame bytes written (after OKAY); frames completed (EOP write-back
        OKAY); frames lost for want of an owned descriptor, dropped whole or truncated
        mid-frame, unless the RX FIFO had already cut them short (its ``overflow`` on the
        last beat: counted there), so every lost frame is counted once.
    regs.reset_discards (driven)
        Frames a CTRL.reset discarded: their first beat was taken from ``i`` (a lone
        ``count = 0`` marker is not a frame) and, when the channel state was reset, none of
        their descriptors had been written back and they had not been dropped (``drops``).
        A frame with a descriptor written back is the driver's to drop (an SOP without its
        EOP); a frame already counted as lost, cut short by the RX FIFO (``overflow`` on
        its last beat: ``fifo_overflows``) or truncated by the ring (``drops``), is not
        counted again (a frame partly taken at the reset is decided at its last beat, when
        it is skipped). Wraps; kept across CTRL.reset.
    regs.fifo_overflows (driven)
        ``fifo_overflows``, passed on.
    sys_clk_mhz : In(IRQ_SYS_CLK_MHZ's width)
        IRQ_SYS_CLK_MHZ (the IRQ block's): the poll timer's µs prescaler (0 acts as 1).
    fifo_overflows : In(RX_FIFO_OVERFLOWS's width)
        The RX FIFO's count of frames it cut short or lost
        (:class:`~macdma.hdl.dma.rx_fifo.RxFrameFifo` ``overflows``), which the channel
        reports as RX_FIFO_OVERFLOWS (``regs.fifo_overflows``).
    wait_for_buffers : In(1)
        1: a frame that finds no owned descriptor at its start waits in the RX FIFO for
        one (a doorbell or poll brings it) instead of being dropped; the FIFO then fills
        and 802.3x flow control (MAC_FC_CTRL.tx_pause) asks the peer to pause.
    i : In(stream rx_word_layout(data_width))
        Frames from :class:`~macdma.hdl.dma.rx_fifo.RxFrameFifo` ``o``
        ({data, count, last, error, overflow, meta}). The last beat's ``meta`` is the
        frame's: ``csum``, its CHECKSUM_COMPLETE sum, written into the EOP descriptor's
        ``rx_csum`` (0 without RX checksum); ``ts_ns``/``ts_valid``, its PTP timestamp
        (low 32 bits, ns; ``ts_valid`` 0 without PTP): a good frame with one gets
        ``timestamped`` and the timestamp in word 0 of its EOP descriptor, a write-back of
        16 bytes at offset 0 instead of 12 at offset 4 (``own`` is still in the last word
        written); ``cause``, the MAC's cause of a bad frame (NONE when only ``error`` /
        ``overflow`` are known: ``error`` alone still marks the EOP descriptor bad, with
        ``rx_error`` = NONE).
    events : Out(IrqEventSignature())
        desc_done / desc_ioc / frame_done with each write-back's OKAY; error when halting.
    axi_read, axi_write : Out(Axi4ReadSignature), Out(Axi4WriteSignature)
        Descriptor fetches (one :class:`AxiBurstReader`); frame data and write-backs (one
        :class:`AxiBurstWriter`).

    Behaviour
    ---------
    Register names below (``run``, ``reset``, ``ring_size``, ...) are ``regs``' members.

    * Nothing touches memory until ``run`` = 1 and ``ring_size`` > 0. ``run`` = 0 stops new
      fetches and new frames; a frame in progress finishes with descriptors already held
      (if it needs more, it ends truncated as below). Change the ring registers only with
      ``run`` = 0, followed by CTRL.reset.
      While not running (or halted) ``i`` is not consumed: the RX FIFO fills and counts
      its overflows.
    * Fetch (the ring walker, :class:`~.ring.DescriptorWalker`, as on TX): up to
      ``prefetch`` contiguous descriptors per burst from the fetch position,
      never past the ring end, never past ``tail`` (unless a re-check is forced by a doorbell,
      poll expiry or a frame needing a buffer, which reads from the fetch position anyway
      since ``own`` is the only authority), never more than the free prefetch slots and
      never so many that more than ``ring_size - 1`` descriptors are in the DMA's hands.
      The first descriptor without ``own`` ends the burst's use (later ones of the same burst
      are ignored) and stops automatic fetching until a doorbell or poll.
    * Frames: a frame starts in the buffer of the next prefetched descriptor. When the set
      is empty, the channel re-reads the ring once; still nothing owned: the whole frame is
      consumed and dropped (``drops`` + 1), nothing is written; with ``wait_for_buffers``
      it waits instead until a descriptor is fetched. A zero-length frame (a lone
      ``count = 0`` marker beat: a frame the FIFO lost whole, already in its overflow count)
      is discarded without using a descriptor.
    * Spill: a full buffer is written back (not EOP) only once the next descriptor is in
      hand; if the frame ends exactly at the buffer end (or the next beat is a ``count = 0``
      last beat) that buffer is the EOP one.
    * Out of descriptors mid-frame (after one re-read of the ring): the channel stops writing,
      writes the current (full) buffer back as EOP with ``error`` = 1 and ``rx_truncated``
      = 1 (``frame_length`` = bytes written), then consumes and discards the rest of the
      frame (docs/descriptors.md): waiting for a descriptor instead would jam the FIFO for
      every later frame.
    * Buffers shorter than 64 bytes halt with RX_BUFFER_TOO_SMALL when their descriptor comes
      up for use; queued writes still drain (HEAD ends at that descriptor).
    * AXI errors: descriptor fetch -> DESC_FETCH_BUS_ERROR, frame data write ->
      DATA_WRITE_BUS_ERROR, write-back -> WRITEBACK_BUS_ERROR. The channel halts at once: no
      further AXI command is issued, ``i`` is no longer consumed (the RX FIFO overflows and
      counts), ``events.error`` pulses, and it stays halted until CTRL.reset.
    * CTRL.reset: stops issuing commands, lets the movers finish the command in progress
      (AXI transactions are never cut), then resets the channel state: HEAD 0, latched tail
      0, error and ``bad_tail`` cleared, prefetched descriptors and queued writes forgotten.
      Stop the channel (``run`` = 0) and re-post the ring before running it again: descriptors
      left with ``own`` = 1 would be fetched again. A frame partly consumed from ``i``
      is discarded up to its last beat.
    """

    def __init__(self, data_width: int = 32, addr_width: int = 32, max_prefetch: int = 8):
        super().__init__(data_width, addr_width, max_prefetch)

    def channel_members(self) -> dict:
        data_width, addr_width = self._data_width, self._addr_width
        return {
            **register_members("RX"),
            "fifo_overflows": In(FIFO_OVERFLOWS_BITS),
            "wait_for_buffers": In(1),
            "i": In(stream.Signature(rx_word_layout(data_width))),
            "events": Out(IrqEventSignature()),
            **bus_members(addr_width, data_width),
        }

    def elaborate(self, platform):
        m = Module()
        core = Module()
        W = self._data_width // 8
        DW = self._data_width
        chunk_bytes = CHUNK_BEATS * W
        wb_beats_max = DESCRIPTOR_BYTES // W  # the longest write-back (timestamped)
        regs, status = self.regs, self.regs.status
        m.d.comb += regs.fifo_overflows.eq(self.fifo_overflows)

        # ---- CTRL.reset: the core is reset once its movers are quiet ------------------------
        quiet = Signal()
        hold, chan_rst = self.add_reset(m, core, quiet)

        # A frame partly consumed when the channel resets is skipped up to its last beat.
        i_mid = Signal()
        skip = Signal()
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += i_mid.eq(~self.i.p.last)
        in_valid = Signal()
        in_ready = Signal()
        m.d.comb += [
            in_valid.eq(self.i.valid & ~skip),
            self.i.ready.eq(skip | in_ready),
        ]
        with m.If(chan_rst):
            m.d.sync += skip.eq(i_mid)
        with m.Elif(skip & self.i.valid & self.i.p.last):
            m.d.sync += skip.eq(0)

        # Doorbell: the last good tail (latched in the core, so a channel reset clears it, as
        # on TX: nothing is fetched after a reset until a doorbell, poll or frame needs it).
        ring_doorbell = self.add_doorbell(core)

        # Counters, fed by strobes from the core.
        inc_fetched = Signal()
        inc_burst = Signal()
        inc_frame = Signal()
        inc_drop = Signal()  # a lost frame RX_DROPS counts (not already an overflow)
        dropped_whole = Signal()  # a frame consumed without a descriptor
        add_bytes = Signal(16)
        frame_taken = Signal()  # the first beat of a frame entered the core
        first_wb_done = Signal()  # the first (SOP) write-back of a frame landed OKAY
        m.d.sync += [
            regs.desc_fetched.eq(regs.desc_fetched + inc_fetched),
            regs.bursts.eq(regs.bursts + inc_burst),
            regs.frames.eq(regs.frames + inc_frame),
            regs.drops.eq(regs.drops + inc_drop),
            regs.bytes.eq(regs.bytes + add_bytes),
        ]

        # Frames taken and not yet visible to the driver (no write-back landed) nor dropped
        # whole: what a channel reset discards. At most the frames whose writes fit the
        # command queue, plus the one being taken.
        unseen = Signal(range(2 * CMD_QUEUE_DEPTH + 2))
        m.d.comb += frame_taken.eq(
            in_valid & in_ready & ~i_mid & ~(self.i.p.last & (self.i.p.count == 0))
        )
        # Of those, the ones already counted as lost (cut short by the RX FIFO: its
        # overflow flag; truncated by the ring: RX_DROPS) are not counted again: each
        # lost frame once (docs/descriptors.md). unseen_counted (below) says how many; the
        # frame partly taken at the reset is decided at its last beat, when it is skipped.
        unseen_counted = Signal(range(2 * CMD_QUEUE_DEPTH + 2))
        open_counted = Signal()  # the frame being taken is unseen and counted, or deferred
        deferred = Signal()  # the frame being skipped after a reset is unseen: decide at its end
        with m.If(chan_rst):
            m.d.sync += [
                regs.reset_discards.eq(
                    regs.reset_discards + unseen - unseen_counted - open_counted
                ),
                unseen.eq(0),
            ]
        with m.Else():
            m.d.sync += unseen.eq(unseen + frame_taken - first_wb_done - dropped_whole)
        with m.If(deferred & skip & self.i.valid & self.i.p.last):
            m.d.sync += [
                regs.reset_discards.eq(regs.reset_discards + ~self.i.p.overflow),
                deferred.eq(0),
            ]

        # ---- core --------------------------------------------------------------------------
        reader, writer = self.add_movers(core)

        halt = self.add_halt(core)
        halted, halt_now, halt_code = halt.halted, halt.request, halt.code
        bus_error = Signal()  # halted on an AXI error: no command is issued any more
        configured = regs.ring_size != 0
        can_start = regs.ctrl.run & configured & ~halted & ~hold
        active = ~halted & ~hold
        core.d.comb += [
            status.running.eq(regs.ctrl.run & configured & ~halted),
            self.events.error.eq(halt.halting),
        ]
        with core.If(halt.halting & (halt_code != ERROR_CODES["RX_BUFFER_TOO_SMALL"])):
            core.d.sync += bus_error.eq(1)

        # Ring indices.
        ring_size = regs.ring_size

        inflight = Signal(RING_SIZE_BITS)  # fetched (owned) and not yet written back
        head_done = Signal()  # a write-back completed OKAY
        fetched_one = Signal()  # an owned descriptor entered the walker's store
        core.d.sync += inflight.eq(inflight + fetched_one - head_done)
        with core.If(head_done):
            core.d.sync += regs.head.eq(wrap_increment(regs.head, ring_size))

        # ---- the ring walker: owned descriptors in ring order --------------------------------
        walker = DescriptorWalker(
            max_prefetch=self._max_prefetch,
            data_width=DW,
            addr_width=self._addr_width,
            fields=("addr", "length", "ioc"),
            # Its write-backs go through the command queue behind the buffer's data, so
            # their data must be staged before the command can reach the writer.
            data_first=True,
        )
        core.submodules.walker = walker
        wiring.connect(core, walker.read, reader.cmd)
        wiring.connect(core, reader.o, walker.beats)
        next_desc = walker.o.p.desc
        recheck_req = walker.recheck  # strobe: the data path needs a descriptor (set empty)
        nothing_found = walker.nothing_found
        # The poll timer runs while the channel may work.
        poll_fire = self.add_poll_timer(core, regs.ctrl.run & configured & ~halted)
        core.d.comb += [
            walker.ring_base.eq(regs.ring_base),
            walker.ring_size.eq(ring_size),
            walker.prefetch.eq(regs.prefetch),
            walker.tail.eq(ring_doorbell.latched),
            walker.enable.eq(can_start),
            # Never more than RING_SIZE - 1 descriptors in the DMA's hands (fetched, not yet
            # written back).
            walker.limit.eq(Mux(inflight + 1 >= ring_size, 0, ring_size - 1 - inflight)),
            walker.kick.eq(ring_doorbell.rung | poll_fire),
            inc_fetched.eq(walker.fetched),
            fetched_one.eq(walker.stored),
        ]
        with core.If(walker.error):
            core.d.comb += [halt_now.eq(1), halt_code.eq(ERROR_CODES["DESC_FETCH_BUS_ERROR"])]

        # ---- write command queue -> AXI writer --------------------------------------------
        KIND_DATA, KIND_WB = 0, 1
        cmd_layout = data.StructLayout(
            {"addr": self._addr_width, "length": 16, "kind": 1, "eop": 1, "ioc": 1, "sop": 1}
        )
        core.submodules.cmdq = cmdq = fifo.SyncFIFO(width=cmd_layout.size, depth=CMD_QUEUE_DEPTH)
        cmdq_in = cmd_layout(cmdq.w_data)
        cmdq_out = cmd_layout(cmdq.r_data)
        # Buffered: its read port is registered, so the data sits in a block RAM.
        core.submodules.stage = stage = fifo.SyncFIFOBuffered(
            width=DW, depth=2 * CHUNK_BEATS + 2 * wb_beats_max
        )
        core.d.comb += [
            writer.i.valid.eq(stage.r_rdy),
            writer.i.p.data.eq(stage.r_data),
            stage.r_en.eq(writer.i.ready),
        ]
        cur = Signal(cmd_layout)
        writer_idle = Signal()
        core.d.comb += writer_idle.eq(writer.cmd.ready)
        core.d.comb += [
            writer.cmd.valid.eq(cmdq.r_rdy & ~bus_error & ~hold),
            writer.cmd.p.addr.eq(cmdq_out.addr),
            writer.cmd.p.length.eq(cmdq_out.length),
            cmdq.r_en.eq(writer.cmd.ready & ~bus_error & ~hold),
        ]
        with core.If(writer.cmd.valid & writer.cmd.ready):
            core.d.sync += cur.eq(cmdq_out)
        core.d.comb += [
            writer.done.ready.eq(1),
            inc_burst.eq(self.axi_write.awvalid & self.axi_write.awready & (cur.kind == KIND_DATA)),
        ]
        with core.If(writer.done.valid):
            with core.If(writer.done.p.error):
                core.d.comb += [
                    halt_now.eq(1),
                    halt_code.eq(
                        Mux(
                            cur.kind == KIND_WB,
                            ERROR_CODES["WRITEBACK_BUS_ERROR"],
                            ERROR_CODES["DATA_WRITE_BUS_ERROR"],
                        )
                    ),
                ]
            with core.Elif(cur.kind == KIND_WB):
                core.d.comb += [
                    head_done.eq(1),
                    self.events.desc_done.eq(1),
                    self.events.desc_ioc.eq(cur.ioc),
                    self.events.frame_done.eq(cur.eop),
                    inc_frame.eq(cur.eop),
                    first_wb_done.eq(cur.sop),
                ]
            with core.Else():
                core.d.comb += add_bytes.eq(cur.length)

        m.d.comb += quiet.eq(writer_idle & walker.idle & reader.cmd.ready)

        # ---- data path ----------------------------------------------------------------------
        buf_addr = Signal(32)
        buf_len = Signal(16)
        buf_ioc = Signal()
        buf_idx = Signal(RING_INDEX_BITS)
        buf_left = Signal(16)
        chunk_addr = Signal(32)
        chunk_n = Signal(range(chunk_bytes + 1))
        sop = Signal()
        frame_len = Signal(16)
        frame_ended = Signal()
        frame_error = Signal()
        frame_overflow = Signal()
        frame_cause = Signal(RxError)
        frame_csum = Signal(16)
        frame_ts = Signal(32)
        frame_ts_valid = Signal()
        forced_trunc = Signal()
        closed = Signal()  # the frame's EOP write-back queued, or its discarded rest taken
        closed_counted = Signal()  # ... and it is counted lost: cut short, or truncated
        wb_eop = Signal()

        acc = Signal(16 * W)
        acc_bytes = Signal(range(2 * W))

        # The write-back: the descriptor as the driver reads it back (words 1..3, or all four
        # with the frame's time in word 0).
        eop_status = wb_eop
        status_err = frame_error | frame_overflow | forced_trunc | (frame_cause != RxError.NONE)
        # The sum and a timestamp only mean something for a frame that arrived whole and good
        # (the FIFO gives no timestamp otherwise; the ring may still truncate it).
        status_ok = eop_status & ~status_err
        stamped = status_ok & frame_ts_valid

        def eop_only(value):  # word 2 is written on the frame's last buffer only
            return Mux(eop_status, value, 0)

        core.d.comb += [
            walker.writeback.p.index.eq(buf_idx),
            walker.writeback.p.desc.eq(
                pack_descriptor(
                    addr=frame_ts,
                    done_length=buf_len - buf_left,
                    rx_csum=Mux(status_ok, frame_csum, 0),
                    frame_length=eop_only(frame_len),
                    rx_error=eop_only(frame_cause.as_value()),
                    rx_truncated=eop_only(frame_overflow | forced_trunc),
                    timestamped=eop_only(stamped),
                    error=eop_only(status_err),
                    length=buf_len,
                    ioc=buf_ioc,
                    sop=sop,
                    eop=wb_eop,
                )
            ),
            walker.writeback.p.stamped.eq(stamped),
        ]

        def load_buffer():
            """Take the next prefetched descriptor as the current buffer."""
            core.d.comb += walker.o.ready.eq(1)
            core.d.sync += [
                buf_addr.eq(next_desc.addr),
                buf_len.eq(next_desc.length),
                buf_left.eq(next_desc.length),
                buf_ioc.eq(next_desc.ioc),
                buf_idx.eq(walker.o.p.index),
                chunk_addr.eq(next_desc.addr),
                chunk_n.eq(0),
            ]
            with core.If(next_desc.length < MIN_RX_BUFFER_BYTES):
                core.d.comb += [halt_now.eq(1), halt_code.eq(ERROR_CODES["RX_BUFFER_TOO_SMALL"])]

        def absorb_last_flags():
            core.d.sync += [
                frame_ended.eq(1),
                frame_error.eq(self.i.p.error),
                frame_overflow.eq(self.i.p.overflow),
                frame_cause.eq(self.i.p.meta.cause),
                frame_csum.eq(self.i.p.meta.csum),
                frame_ts.eq(self.i.p.meta.ts_ns),
                frame_ts_valid.eq(self.i.p.meta.ts_valid),
            ]

        in_p = self.i.p
        with core.FSM(name="data"):
            # A frame's end, for the reset's count (closed, or closed_counted: counted lost).
            with core.State("Idle"):
                core.d.sync += [
                    acc_bytes.eq(0),
                    acc.eq(0),
                    frame_ended.eq(0),
                    frame_error.eq(0),
                    frame_overflow.eq(0),
                    frame_cause.eq(RxError.NONE),
                    frame_csum.eq(0),
                    frame_ts_valid.eq(0),
                    forced_trunc.eq(0),
                    frame_len.eq(0),
                    sop.eq(1),
                ]
                with core.If(can_start & in_valid):
                    with core.If(in_p.last & (in_p.count == 0)):
                        core.d.comb += in_ready.eq(1)  # a lost frame's marker: no buffer used
                    with core.Elif(walker.o.valid):
                        load_buffer()
                        core.next = "Fill"
                    with core.Else():
                        core.d.comb += recheck_req.eq(1)
                        core.next = "Wait Start"
            with core.State("Wait Start"):
                with core.If(walker.o.valid):
                    core.next = "Idle"
                with core.Elif(nothing_found & self.wait_for_buffers):
                    core.next = "Wait Buffer"
                with core.Elif(nothing_found):
                    core.next = "Drop"
            with core.State("Wait Buffer"):
                # Flow control holds the frame in the FIFO until the driver posts a buffer.
                with core.If(walker.o.valid):
                    core.next = "Idle"
                with core.Elif(~self.wait_for_buffers):
                    core.next = "Drop"
            with core.State("Drop"):
                with core.If(active):
                    core.d.comb += in_ready.eq(1)
                    with core.If(in_valid & in_p.last):
                        core.d.comb += [dropped_whole.eq(1), inc_drop.eq(~in_p.overflow)]
                        core.next = "Idle"
            with core.State("Discard"):
                # The rest of a frame the ring truncated: counted at its last beat.
                with core.If(active):
                    core.d.comb += in_ready.eq(1)
                    with core.If(in_valid & in_p.last):
                        core.d.comb += [inc_drop.eq(~in_p.overflow), closed_counted.eq(1)]
                        core.next = "Idle"
            with core.State("Fill"):
                chunk_room = chunk_bytes - chunk_n
                want = Signal(range(W + 1))
                core.d.comb += want.eq(smallest(Const(W, 16), buf_left, chunk_room))
                close = (chunk_n != 0) & (
                    (chunk_n == chunk_bytes) | (buf_left == 0) | (frame_ended & (acc_bytes == 0))
                )
                with core.If(~active):
                    pass
                with core.Elif(close):
                    core.d.comb += [
                        cmdq.w_en.eq(1),
                        cmdq_in.addr.eq(chunk_addr),
                        cmdq_in.length.eq(chunk_n),
                        cmdq_in.kind.eq(KIND_DATA),
                    ]
                    with core.If(cmdq.w_rdy):
                        core.d.sync += [chunk_addr.eq(chunk_addr + chunk_n), chunk_n.eq(0)]
                with core.Elif(frame_ended & (acc_bytes == 0)):
                    core.d.sync += wb_eop.eq(1)
                    core.next = "Write Back"
                with core.Elif(buf_left == 0):
                    core.next = "Next"
                with core.Else():
                    can_emit = (
                        stage.w_rdy
                        & (want != 0)
                        & ((acc_bytes >= want) | (frame_ended & (acc_bytes != 0)))
                    )
                    k = Signal(range(W + 1))
                    core.d.comb += k.eq(Mux(can_emit, Mux(acc_bytes < want, acc_bytes, want), 0))
                    rem = Signal(range(2 * W))
                    core.d.comb += rem.eq(acc_bytes - k)
                    # `ready` does not depend on `valid`: room for a whole beat after emitting.
                    take = ~frame_ended & (rem < W)
                    absorb = take & in_valid
                    in_data = Cat(
                        Mux(in_p.count > lane, in_p.data.word_select(lane, 8), 0)
                        for lane in range(W)
                    )
                    shifted_in = (Cat(in_data, Const(0, 8 * W)) << (rem * 8))[: 16 * W]
                    kept = acc >> (k * 8)
                    core.d.comb += [
                        stage.w_en.eq(can_emit),
                        stage.w_data.eq(acc[:DW]),
                        in_ready.eq(take),
                    ]
                    core.d.sync += [
                        acc.eq(kept | Mux(absorb, shifted_in, 0)),
                        acc_bytes.eq(rem + Mux(absorb, in_p.count, 0)),
                        buf_left.eq(buf_left - k),
                        chunk_n.eq(chunk_n + k),
                        frame_len.eq(frame_len + k),
                    ]
                    with core.If(absorb & in_p.last):
                        absorb_last_flags()
            with core.State("Next"):
                # The buffer is full and its data queued: is the frame over?
                with core.If(~active):
                    pass
                with core.Elif(acc_bytes != 0):
                    core.next = "Spill"
                with core.Elif(frame_ended):
                    core.d.sync += wb_eop.eq(1)
                    core.next = "Write Back"
                with core.Elif(in_valid):
                    with core.If(in_p.last & (in_p.count == 0)):
                        core.d.comb += in_ready.eq(1)
                        absorb_last_flags()
                        core.d.sync += wb_eop.eq(1)
                        core.next = "Write Back"
                    with core.Else():
                        core.next = "Spill"
            with core.State("Spill"):
                with core.If(~active):
                    pass
                with core.Elif(walker.o.valid):
                    core.d.sync += wb_eop.eq(0)
                    core.next = "Write Back"
                with core.Else():
                    core.d.comb += recheck_req.eq(1)
                    core.next = "Wait Spill"
            with core.State("Wait Spill"):
                with core.If(walker.o.valid):
                    core.next = "Spill"
                with core.Elif(nothing_found):
                    # Out of descriptors mid-frame: this buffer ends the frame, truncated.
                    core.d.sync += [wb_eop.eq(1), forced_trunc.eq(1)]
                    core.next = "Write Back"
            with core.State("Write Back"):
                # The walker stages the write-back's beats, then queues its command.
                with core.If(active):
                    core.d.comb += [
                        walker.writeback.valid.eq(1),
                        stage.w_en.eq(walker.write_data.valid),
                        stage.w_data.eq(walker.write_data.p.data),
                        walker.write_data.ready.eq(stage.w_rdy),
                        cmdq.w_en.eq(walker.write.valid),
                        cmdq_in.addr.eq(walker.write.p.addr),
                        cmdq_in.length.eq(walker.write.p.length),
                        cmdq_in.kind.eq(KIND_WB),
                        cmdq_in.eop.eq(wb_eop),
                        cmdq_in.ioc.eq(buf_ioc),
                        cmdq_in.sop.eq(sop),
                        walker.write.ready.eq(cmdq.w_rdy),
                    ]
                    with core.If(walker.writeback.ready):
                        core.d.sync += sop.eq(0)
                        with core.If(~wb_eop):
                            core.next = "Load"
                        with core.Elif(forced_trunc & ~frame_ended):
                            core.next = "Discard"
                        with core.Elif(forced_trunc):
                            core.d.comb += [
                                inc_drop.eq(~frame_overflow),  # truncated, all taken
                                closed_counted.eq(1),
                            ]
                            core.next = "Idle"
                        with core.Else():
                            core.d.comb += [closed.eq(1), closed_counted.eq(frame_overflow)]
                            core.next = "Idle"
            with core.State("Load"):
                with core.If(active):
                    load_buffer()
                    core.next = "Fill"

        self._count_unseen_frames(
            m,
            chan_rst=chan_rst,
            i_mid=i_mid,
            skip_next=chan_rst & i_mid,
            frame_taken=frame_taken,
            dropped_whole=dropped_whole,
            sop_landed=first_wb_done,
            closed=closed | closed_counted,
            counted=closed_counted,
            frame_overflow=frame_overflow,
            unseen_counted=unseen_counted,
            open_counted=open_counted,
            deferred=deferred,
        )
        return m

    @staticmethod
    def _count_unseen_frames(
        m,
        *,
        chan_rst,
        i_mid,
        skip_next,
        frame_taken,
        dropped_whole,
        sop_landed,
        closed,
        counted,
        frame_overflow,
        unseen_counted,
        open_counted,
        deferred,
    ):
        """Which of the frames taken and not yet seen by the driver (no SOP write-back
        landed) are already counted as lost, so that a reset does not count them again in
        RX_RESET_DISCARDS. Frames are taken, end and have their SOP land in ring order: a
        1-bit queue holds, per frame ended and not landed, whether it was counted
        (``unseen_counted`` is how many are); a landing pops the oldest, or, with none
        queued, is the open frame's own (it lands before it ends: a multi-buffer frame).
        At the reset, the open frame, if unseen, is counted lost if it was cut short, or,
        partly taken (``i_mid``), is decided at its last beat (``deferred``): either way
        it is left out of the reset's count (``open_counted``)."""
        depth = 2 * CMD_QUEUE_DEPTH + 2
        flags = ResetInserter(chan_rst)(fifo.SyncFIFO(width=1, depth=depth))
        m.submodules.unseen_flags = flags
        open_frame = Signal()  # a frame taken that has not ended (nor been dropped whole)
        open_landed = Signal()  # ... whose SOP write-back has landed already
        landed_open = sop_landed & ~flags.r_rdy  # a landing with none queued: the open frame's
        push = closed & ~(open_landed | landed_open)
        popped_counted = sop_landed & flags.r_rdy & flags.r_data
        m.d.comb += [
            flags.w_en.eq(push),
            flags.w_data.eq(counted),
            flags.r_en.eq(sop_landed),
        ]
        with m.If(chan_rst):
            m.d.sync += [
                open_frame.eq(0),
                open_landed.eq(0),
                unseen_counted.eq(0),
                deferred.eq(skip_next & open_frame & ~open_landed),
            ]
        with m.Else():
            m.d.sync += unseen_counted.eq(unseen_counted + (push & counted) - popped_counted)
            with m.If(frame_taken):
                m.d.sync += [open_frame.eq(1), open_landed.eq(0)]
            with m.Elif(closed | dropped_whole):
                m.d.sync += [open_frame.eq(0), open_landed.eq(0)]
            with m.Elif(landed_open):
                m.d.sync += open_landed.eq(1)
        # At the reset the open frame, unseen, is not in unseen_counted: leave it out of
        # the count if it was cut short (its last beat taken), or if its end is deferred.
        m.d.comb += open_counted.eq(open_frame & ~open_landed & (i_mid | frame_overflow))
