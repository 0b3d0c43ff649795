"""TX DMA channel: walks the TX descriptor ring and streams each frame's fragments out packed.

Sequence (all in the ``sync`` domain): the ring walker (:class:`~.ring.DescriptorWalker`)
reads a batch of up to PREFETCH descriptors and hands out the owned ones; for each, in ring
order, the main FSM goes::

    Next (waits for the descriptor, checks its length, issues the fragment read)
    Data (reader output -> ``o``)
    Hand Off (queues the write-back of words 1..3, one 12-byte write; takes the descriptor)

and once the batch is used up, the walker reads the next one (the two share the reader).

Write-backs run beside the main FSM: the walker writes descriptor k back (and on its B
response HEAD advances and the events fire) while the fragment of k + 1 is being read.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..mac.ptp import TS_ID_BITS
from ..regmap import RING_INDEX_BITS
from .channel import ERROR_CODES, DmaChannel, bus_members, register_members
from .descriptor import pack_descriptor
from .irq import IrqEventSignature
from .ring import DescriptorWalker, wrap_increment
from .tx_checksum import TxChecksumRequest
from .tx_fifo import tx_word_layout

__all__ = ["TxDmaChannel"]

#: The descriptor fields the TX channel uses (the walker stores only these).
WALKED_FIELDS = (
    "addr",
    "length",
    "csum_start",
    "csum_offset",
    "ioc",
    "csum_insert",
    "ip_csum_insert",
    "ts_request",
    "sop",
    "eop",
)


class TxDmaChannel(DmaChannel):
    """The TX DMA engine of one channel (``sync`` domain).

    Parameters
    ----------
    data_width : 32 or 64
    addr_width : 12..64
    max_prefetch : 1..16
        Descriptors held on chip; ``regs.prefetch`` is clamped to 1..max_prefetch.

    Members (register side)
    -----------------------
    regs : In(block_signature(TX block))
        The CSR bank's ``bank.tx`` (the register map's TX block), connected with
        ``wiring.connect(m, bank.tx, tx_dma.regs)``. Read: ``ctrl.run``, ``ctrl.reset``
        (one-cycle strobe), ``ring_base``, ``ring_size`` (0 = not configured), ``tail`` and
        ``tail_written`` (the doorbell strobe), ``poll_us`` (0 = off), ``burst_beats``,
        ``prefetch``. Driven: ``status`` (``running``, ``halted``, ``bad_tail``,
        ``resetting``, ``error_code``), ``head``, the counters ``desc_fetched``, ``bursts``,
        ``bytes``, ``frames``, ``drops`` and ``reset_discards`` (below), and
        ``fifo_overflows`` (always 0 on TX). ``status.resetting`` is 1 from the cycle after a
        ``ctrl.reset`` strobe until the channel has wound down (a fragment read drained, a
        write-back already on the bus landed, the TX FIFO's flush over and the frames it
        left counted in ``frames`` and ``reset_discards``). A driver re-posts descriptors
        and reads ``frames`` only once it reads 0: before, that late write-back could
        overwrite a descriptor posted again at its slot.
    sys_clk_mhz : In(IRQ_SYS_CLK_MHZ's width)
        IRQ_SYS_CLK_MHZ (the IRQ block's), the poll timer's µs prescaler (0 acts as 1).
    hold : In(1)
        The TX FIFO is being reset: do not start work. ``ctrl.run`` acts as 0 while it is 1
        (and ``status.running`` reads 0); the SoC holds it for the TX FIFO's reset after a
        ``ctrl.reset``.

    Reset discards
    --------------
    frame_started : In(1)
        Strobe: the MAC took the first byte of a frame from the TX FIFO (synchronized into
        ``sync``: it may lag the MAC by a few cycles).
    fifo_flushing : In(1)
        1 while a channel reset holds the TX FIFO empty (longer than ``frame_started``
        lags); its falling edge is when the count is taken.
    ``regs.reset_discards``
        Frames a reset discarded from the TX FIFO: frames whose EOP write-back landed OKAY
        (the driver counts them sent), including one that lands only after the reset, and
        whose first byte the MAC had not taken when the FIFO was flushed. A frame the MAC
        had started ends with tx_er (counted by the MAC as an underrun) and is not counted
        here. Frames land and start in ring order, so the frames landed and not started
        are ``landed - started`` since the last flush. Wraps; kept across ``reset``.
    frame_cut : In(1)
        Strobe: the MAC cut a frame short (an underrun: a reset flushed the TX FIFO under
        it, or cut-through data came too late). The cut frame is the last one it started.
    ``regs.frames``
        TX_FRAMES: the frames the driver counts sent. Each EOP write-back that lands OKAY
        (on time, or late: on the bus at a reset and landing after it), and, once a reset
        has wound down (``status.resetting`` back to 0), every frame the MAC started whose
        EOP write-back can no longer land (it failed, or the reset dropped it before it
        reached the bus), unless the channel closed it with an error beat. Those keep
        ``own``: a driver reaps as sent, after the reset, as many of its oldest unreaped
        frames as TX_FRAMES moved by beyond the frames it reaped (frames start and land in
        ring order). So a frame that left the wire intact is never also dropped by the
        driver. Wraps; kept across ``reset``.
    ``regs.drops``
        TX_DROPS: frames the MAC cut short that TX_FRAMES counts (the driver counts them
        sent), counted when the cut is reported: every cut but that of a frame the channel
        closed with an error beat, which is the driver's to drop and count (its descriptor
        keeps ``own``). Each lost frame is counted once. Wraps; kept across ``reset``.

    PTP timestamps
    --------------
    ``o.p.meta.ts_request``
        With the frame on ``o``: 0, or the number (1..7, cycling) the channel gave the
        frame's request (SOP descriptor ``ts_request``).
    ts_valid : In(1); ts_id : In(TS_ID_BITS); ts_ns : In(32)
        A strobe with the SFD time of the frame numbered ``ts_id``.
    ts_discarded : Out(1)
        Strobe: a reset dropped an EOP write-back that was waiting for its timestamp.

    The EOP write-back of a frame that asked waits until its time arrives, then writes
    all 16 bytes (word 0 = the time's low 32 bits, ``timestamped`` = 1). Meanwhile the
    channel goes on reading the next fragment but stops at its write-back: one frame's
    timestamp is awaited at a time, and the wait is about the frame's time in the TX
    FIFO plus its preamble. A frame that never reaches the wire (MAC disabled) holds the
    channel until ``reset``, which drops the waiting write-back as it drops any write-back
    not yet on the bus (``ts_discarded``).

    Other members
    -------------
    events : Out(IrqEventSignature), registered one-cycle strobes.
    o : Out(stream of {data, count, last, error}) to ``TxFrameFifo.i``. Each fragment's
        bytes are packed from lane 0; the last beat of a fragment may be partial (the FIFO
        honours ``count`` on every beat). ``last`` marks the end of the EOP fragment. A frame
        cut by an error (data read error, or a halt while a frame is open) ends with the
        beat ``count=0, last=1, error=1``.
    axi_read, axi_write : the AXI4 read and write halves (the reader's and writer's ``axi``).

    Behaviour
    ---------
    Below, ``run`` is ``regs.ctrl.run`` while ``hold`` is 0, ``reset`` is
    ``regs.ctrl.reset``, and the other register names are ``regs``' members.

    * Work is done only with ``run`` = 1, ``ring_size`` != 0, not halted, and either
      descriptors posted up to the latched tail (and not stalled) or a poll-timer expiry
      since the last descriptor read.
    * A doorbell with ``tail`` >= ``ring_size`` is ignored and sets ``bad_tail``.
    * One descriptor read, once the descriptors of the last one are used up, fetches
      :func:`~.ring.fetch_count` descriptors: ``min(prefetch, ring_size - position,
      tail - position)`` (a poll with the position at the tail ignores the tail limit). The
      first one without ``own`` stalls the channel at it (the owned ones before it are
      sent) until the next doorbell or poll expiry.
    * ``run`` = 0 stops at the next descriptor boundary (the current descriptor is finished
      and written back; descriptors already read wait for ``run``).
    * Errors halt the channel (``halted``, ``error_code``, ``events.error``); the failing
      descriptor is not written back and HEAD stays at it. Only ``reset`` recovers. The halt
      becomes visible only after the previous descriptor's write-back has landed, so HEAD
      already points at the failing descriptor. A failed write-back halts at once; a fragment
      read already started for the next descriptor is drained and dropped (the reader still
      completes that one command on the bus), and an open frame on ``o`` is closed with an
      error beat.
    * ``reset`` (:meth:`~.channel.DmaChannel.add_reset`, the same model as RX): no new read,
      fragment or write-back starts; a fragment read in progress is drained and dropped
      (``o`` gets nothing more; the TX FIFO is reset together with the channel), a
      write-back not yet on the bus is dropped, one on the bus lands with no other effect.
      Then, in one cycle, the channel's state is reset: HEAD = 0, the latched tail = 0,
      halt/error/``bad_tail``/stall cleared, descriptors read and not used forgotten, and
      ``status.resetting`` returns to 0. The counters are not cleared.
    """

    def __init__(self, data_width: int = 32, addr_width: int = 32, max_prefetch: int = 8):
        super().__init__(data_width, addr_width, max_prefetch)

    def channel_members(self) -> dict:
        data_width, addr_width = self._data_width, self._addr_width
        return {
            **register_members("TX"),
            "hold": In(1),
            "frame_started": In(1),
            "fifo_flushing": In(1),
            "frame_cut": In(1),
            "events": Out(IrqEventSignature()),
            # Every beat carries its frame's meta (checksum and timestamp requests).
            "o": Out(stream.Signature(tx_word_layout(data_width))),
            "ts_valid": In(1),
            "ts_id": In(TS_ID_BITS),
            "ts_ns": In(32),
            "ts_discarded": Out(1),
            **bus_members(addr_width, data_width),
        }

    def elaborate(self, platform):
        m = Module()
        core = Module()  # the channel's state; reset as a whole by CTRL.reset
        dw = self._data_width

        regs, status = self.regs, self.regs.status
        reset = regs.ctrl.reset  # CTRL.reset: a one-cycle strobe
        run = Signal()  # CTRL.run, held off while the TX FIFO resets
        m.d.comb += [
            run.eq(regs.ctrl.run & ~self.hold),
            # Always 0 on TX (the register map's TX_FIFO_OVERFLOWS).
            regs.fifo_overflows.eq(0),
        ]

        # ---- CTRL.reset: the core is reset once its movers are quiet --------------------------
        quiet = Signal()
        winding = Signal()  # a reset's flush, or what it counts after the flush, is not over
        hold, _clear = self.add_reset(m, core, quiet, winding=winding)
        halt = self.add_halt(core)
        halted = halt.halted

        reader, writer = self.add_movers(core)
        core.d.comb += status.running.eq(run & ~halted)

        # ---- counters (kept across CTRL.reset) -------------------------------------------------
        # BURSTS counts frame-data bursts only (fragment reads), like RX counts buffer
        # writes: descriptor fetches and write-backs show in DESC_FETCHED and FRAMES. The
        # reader runs one command at a time, so an AR belongs to the last command taken.
        reading_fragment = Signal()
        ar_hs = self.axi_read.arvalid & self.axi_read.arready
        m.d.sync += regs.bursts.eq(regs.bursts + (ar_hs & reading_fragment))
        data_beat = Signal()  # a fragment beat (not the error beat) handed to `o`
        m.d.sync += regs.bytes.eq(regs.bytes + Mux(data_beat, self.o.p.count, 0))
        desc_read = Signal()  # the walker read a descriptor
        m.d.sync += regs.desc_fetched.eq(regs.desc_fetched + desc_read)

        # ---- events: registered strobes, 0 unless set below ---------------------------------
        ev_done = Signal()
        ev_ioc = Signal()
        ev_eop = Signal()
        m.d.sync += [
            self.events.desc_done.eq(ev_done),
            self.events.desc_ioc.eq(ev_done & ev_ioc),
            self.events.frame_done.eq(ev_done & ev_eop),
            self.events.error.eq(halt.halting),
        ]

        # ---- the ring walker: owned descriptors in ring order, read one batch at a time -----
        doorbell = self.add_doorbell(core)
        ready_to_work = run & ~halted & (regs.ring_size != 0) & ~hold
        poll = self.add_poll_timer(core, ready_to_work)
        walker = DescriptorWalker(
            max_prefetch=self._max_prefetch,
            data_width=dw,
            addr_width=self._addr_width,
            fields=WALKED_FIELDS,
        )
        core.submodules.walker = walker
        waiting = Signal()  # the main FSM waits for a descriptor
        core.d.comb += [
            walker.ring_base.eq(regs.ring_base),
            walker.ring_size.eq(regs.ring_size),
            walker.prefetch.eq(regs.prefetch),
            # The doorbell's tail at once: the walker's read size is a register, so the
            # read starts in the cycle after the doorbell.
            walker.tail.eq(doorbell.now),
            # The next batch is read once the last one is used up, between fragment reads
            # (the two share the reader).
            walker.enable.eq(ready_to_work & waiting & ~walker.o.valid),
            walker.limit.eq(self._max_prefetch),
            # A doorbell ends a stall; a poll also reads at the tail (the driver may have
            # handed descriptors over without a doorbell).
            walker.wake.eq(doorbell.rung),
            walker.kick.eq(poll),
            desc_read.eq(walker.fetched),
        ]
        desc = walker.o.p.desc
        # The fragment read, from the main FSM; the reader takes it when idle.
        fragment = stream.Signature(reader.cmd.p.shape()).create(path=("fragment",))
        core.d.comb += [
            reader.cmd.valid.eq(walker.read.valid | fragment.valid),
            reader.cmd.p.eq(Mux(walker.read.valid, walker.read.p, fragment.p)),
            walker.read.ready.eq(reader.cmd.ready),
            fragment.ready.eq(reader.cmd.ready),
            walker.beats.valid.eq(reader.o.valid & ~reading_fragment),
            walker.beats.p.eq(reader.o.p),
        ]
        with core.If(walker.read.valid & walker.read.ready):
            core.d.sync += reading_fragment.eq(0)
        with core.If(fragment.valid & fragment.ready):
            core.d.sync += reading_fragment.eq(1)
        fragment_ready = Signal()  # reader.o.ready while a fragment is read
        core.d.comb += reader.o.ready.eq(Mux(reading_fragment, fragment_ready, walker.beats.ready))

        in_frame = Signal()  # some beats of a frame went to `o`, its last beat not yet
        cur_eop = Signal()  # the fragment being read is the frame's last
        # PTP requests: the number given to the frame being read (0 = none).
        frame_ts_id = Signal(TS_ID_BITS)
        last_ts_id = Signal(TS_ID_BITS)
        next_ts_id = Mux(last_ts_id == (1 << TS_ID_BITS) - 1, 1, last_ts_id + 1)
        # The checksum request of the frame being read, from its SOP descriptor.
        frame_csum = Signal(TxChecksumRequest)
        # Every beat on ``o`` carries its frame's meta. Set with the beat's other fields (not
        # in a statement of its own), so the Verilog drives ``o``'s payload from one
        # ``always @*`` block that runs at time 0 on Icarus too (sim/cosim/verilog.py).
        beat_meta = [self.o.p.meta.csum.eq(frame_csum), self.o.p.meta.ts_request.eq(frame_ts_id)]

        # ---- write-backs ---------------------------------------------------------------------
        # The walker writes descriptor k back while the main FSM already reads the fragment
        # of k + 1. A write-back still waiting for the bus at a reset is dropped; one on the
        # bus lands with no other effect.
        wb_busy = Signal()  # a write-back is queued or on the bus
        wb_index = Signal(RING_INDEX_BITS)
        wb_length = Signal(16)
        wb_ioc = Signal()
        wb_sop = Signal()
        wb_eop = Signal()
        wb_cmd_sent = Signal()  # its command went to the writer
        wb_handed = Signal()  # the walker has given all of it to the writer
        # PTP: the EOP write-back of a frame that asked waits for its time (wb_ts_id).
        wb_ts_id = Signal(TS_ID_BITS)
        wb_stamped = Signal()
        wb_ts_ns = Signal(32)
        ts_held_id = Signal(TS_ID_BITS)  # the last time that came back, and its number
        ts_held_ns = Signal(32)
        wb_waiting = (wb_ts_id != 0) & ~wb_stamped
        with core.If(wb_busy & wb_waiting & (ts_held_id == wb_ts_id)):
            core.d.sync += [wb_stamped.eq(1), wb_ts_ns.eq(ts_held_ns), ts_held_id.eq(0)]
        with core.If(self.ts_valid):
            core.d.sync += [ts_held_id.eq(self.ts_id), ts_held_ns.eq(self.ts_ns)]
        wb_ok = Signal()  # a write-back landed OKAY, not in a reset
        wb_late = Signal()  # an EOP write-back landed OKAY in a reset
        m.d.comb += self.ts_discarded.eq(
            reset & ~status.resetting & wb_busy & ~wb_cmd_sent & wb_waiting
        )

        core.d.comb += [
            walker.writeback.valid.eq(wb_busy & ~wb_handed & ~wb_waiting),
            walker.writeback.p.index.eq(wb_index),
            # The descriptor as the driver reads it back; with its time in word 0 if stamped.
            walker.writeback.p.desc.eq(
                pack_descriptor(
                    addr=wb_ts_ns,
                    done_length=wb_length,
                    timestamped=wb_stamped,
                    length=wb_length,
                    ioc=wb_ioc,
                    sop=wb_sop,
                    eop=wb_eop,
                )
            ),
            walker.writeback.p.stamped.eq(wb_stamped),
            # A reset holds a command not yet on the bus (the reset then drops it).
            writer.cmd.valid.eq(walker.write.valid & ~hold),
            writer.cmd.p.eq(walker.write.p),
            walker.write.ready.eq(writer.cmd.ready & ~hold),
        ]
        wiring.connect(core, walker.write_data, writer.i)
        with core.If(writer.cmd.valid & writer.cmd.ready):
            core.d.sync += wb_cmd_sent.eq(1)
        with core.If(walker.writeback.valid & walker.writeback.ready):
            core.d.sync += wb_handed.eq(1)
        with core.If(wb_busy):
            core.d.comb += writer.done.ready.eq(1)
            with core.If(writer.done.valid):
                core.d.sync += wb_busy.eq(0)
                with core.If(hold):
                    core.d.comb += wb_late.eq(~writer.done.p.error & wb_eop)
                with core.Elif(writer.done.p.error):
                    core.d.comb += [
                        halt.request.eq(1),
                        halt.code.eq(ERROR_CODES["WRITEBACK_BUS_ERROR"]),
                    ]
                with core.Else():
                    core.d.comb += [wb_ok.eq(1), ev_done.eq(1)]
                    core.d.sync += regs.head.eq(wrap_increment(regs.head, regs.ring_size))
        core.d.comb += [ev_ioc.eq(wb_ioc), ev_eop.eq(wb_eop)]

        # ---- frames a reset discards from the TX FIFO -------------------------------------
        # pending: EOP write-backs landed minus frames the MAC started, since the last flush.
        # Negative when the MAC started frames ahead of their write-back: a write-back
        # finishing after the reset then belongs to a frame already on the wire.
        landed = wb_ok & wb_eop
        flushing_q = Signal()
        m.d.sync += flushing_q.eq(self.fifo_flushing)
        window = reset | self.fifo_flushing | flushing_q
        sample = flushing_q & ~self.fifo_flushing
        pending = Signal(signed(12))
        late_started = Signal()
        pending_next = Signal(signed(12))
        m.d.comb += pending_next.eq(pending + landed + (wb_late & window) - self.frame_started)
        with m.If(sample):
            m.d.sync += [
                regs.reset_discards.eq(
                    regs.reset_discards + Mux(pending_next > 0, pending_next[:11], 0)
                ),
                late_started.eq(pending_next < 0),
                pending.eq(0),
            ]
        with m.Else():
            m.d.sync += pending.eq(pending_next)
        with m.If(wb_late & ~window):
            m.d.sync += [
                regs.reset_discards.eq(regs.reset_discards + ~late_started),
                late_started.eq(0),
            ]

        # ---- TX_FRAMES and TX_DROPS: each frame the MAC started has one owner -------------
        # The driver counts a frame sent when its EOP write-back lands (on time, or late: on
        # the bus at a reset, landing after it) and, after a reset, for each frame TX_FRAMES
        # moved by beyond those it reaped: frames the MAC started whose write-back can no
        # longer land (it failed, or the reset dropped it), counted here once the reset has
        # wound down. So every frame the channel closed whole and the MAC started is the
        # hardware's: sent, or cut on the wire (TX_DROPS). A frame the channel closed with an
        # error beat (a data-read error, a halt mid-frame) is never counted: its descriptor
        # keeps own and the driver drops and counts it, whatever the wire saw of it.
        # unlanded: frames started minus landings; queued: frames closed on `o` minus frames
        # started; both since the last reset wound down. Frames close, start and land in ring
        # order, and nothing closes after an error beat until the reset, so the error frame
        # has started (and is the last one started) once queued is back to 0.
        landing = landed | wb_late
        closed = self.o.valid & self.o.ready & self.o.p.last
        closed_error = closed & self.o.p.error
        unlanded = Signal(signed(12))
        unlanded_next = Signal(signed(12))
        queued = Signal(signed(12))
        queued_next = Signal(signed(12))
        error_closed = Signal()  # the channel closed a frame with an error beat
        error_started = Signal()  # ... and the MAC has started it
        skip_cut = Signal()  # the last frame started is the error frame: its cut is the driver's
        wound_down = winding & ~hold & ~self.fifo_flushing & ~flushing_q
        m.d.comb += [
            unlanded_next.eq(unlanded + self.frame_started - landing),
            queued_next.eq(queued + closed - self.frame_started),
            error_started.eq((error_closed | closed_error) & (queued_next <= 0)),
        ]
        sent_unlanded = Mux(
            wound_down & (unlanded_next > error_started), (unlanded_next - error_started)[:12], 0
        )
        cut_counts = self.frame_cut & ~skip_cut & ~(closed_error & error_started)
        m.d.sync += [
            regs.frames.eq(regs.frames + landing + sent_unlanded),
            regs.drops.eq(regs.drops + cut_counts),
            unlanded.eq(unlanded_next),
            queued.eq(queued_next),
        ]
        with m.If(closed_error):
            m.d.sync += error_closed.eq(1)
        with m.If(self.frame_cut):
            m.d.sync += skip_cut.eq(0)
        with m.Elif(self.frame_started | closed_error):
            m.d.sync += skip_cut.eq(error_started)
        with m.If(reset):
            m.d.sync += winding.eq(1)
        with m.Elif(wound_down):
            # No write-back of the old frames can land any more, and the flush has taken
            # the frames that never started. A cut reported later (slow PHY clocks) is of
            # the last frame started: skip_cut still says whose it is.
            m.d.sync += [
                winding.eq(0),
                unlanded.eq(0),
                queued.eq(0),
                error_closed.eq(0),
            ]

        # ---- main FSM: one descriptor at a time, from the walker ----------------------------
        pending_code = Signal(len(halt.code))

        def halt_after_writeback(code):
            """Halt once the write-back of the previous descriptor has landed."""
            core.d.sync += pending_code.eq(ERROR_CODES[code])
            core.next = "Halting"

        def stop():
            """After a halt: close a frame left open on `o`."""
            with core.If(in_frame):
                core.next = "Abort"
            with core.Else():
                core.next = "Next"

        with core.FSM(name="tx_channel") as fsm:
            with core.State("Next"):
                core.d.comb += waiting.eq(1)
                with core.If(walker.error & ~hold & ~halted):
                    # Halt once the previous write-back has landed (descriptors of the
                    # failed read already stored are not used).
                    halt_after_writeback("DESC_FETCH_BUS_ERROR")
                with core.Elif(halted):
                    with core.If(in_frame & ~hold):
                        core.next = "Abort"
                with core.Elif(hold | ~run | ~walker.o.valid):
                    pass
                with core.Elif(desc.length == 0):
                    halt_after_writeback("ZERO_LENGTH_DESC")
                with core.Else():
                    core.d.comb += [
                        fragment.valid.eq(1),
                        fragment.p.addr.eq(desc.addr),
                        fragment.p.length.eq(desc.length),
                    ]
                    with core.If(fragment.ready):
                        core.d.sync += cur_eop.eq(desc.eop)
                        with core.If(desc.sop):
                            core.d.sync += [
                                frame_ts_id.eq(Mux(desc.ts_request, next_ts_id, 0)),
                                frame_csum.eq(
                                    Cat(
                                        desc.csum_start,
                                        desc.csum_offset,
                                        desc.csum_insert,
                                        desc.ip_csum_insert,
                                    )
                                ),
                            ]
                            with core.If(desc.ts_request):
                                core.d.sync += last_ts_id.eq(next_ts_id)
                        core.next = "Data"

            with core.State("Data"):
                r = reader.o.p
                with core.If(hold | halted):
                    # A reset, or the previous write-back failed: drop the rest of the read.
                    core.d.comb += fragment_ready.eq(1)
                    with core.If(reader.o.valid & r.last):
                        with core.If(hold):
                            core.next = "Next"
                        with core.Else():
                            stop()
                with core.Else():
                    core.d.comb += [
                        self.o.valid.eq(reader.o.valid),
                        self.o.p.data.eq(r.data),
                        self.o.p.count.eq(r.count),
                        self.o.p.last.eq(r.last & (cur_eop | r.error)),
                        self.o.p.error.eq(r.error),
                        *beat_meta,
                        fragment_ready.eq(self.o.ready),
                        data_beat.eq(reader.o.valid & self.o.ready & ~r.error),
                    ]
                    with core.If(reader.o.valid & self.o.ready):
                        core.d.sync += in_frame.eq(~self.o.p.last)
                        with core.If(r.last):
                            with core.If(r.error):
                                # The reader's error beat has just closed the frame on `o`.
                                halt_after_writeback("DATA_READ_BUS_ERROR")
                            with core.Else():
                                core.next = "Hand Off"

            with core.State("Hand Off"):
                # The fragment is read: queue its write-back and go on with the next one.
                with core.If(hold):
                    core.next = "Next"
                with core.Elif(halted):
                    stop()
                with core.Elif(~wb_busy):
                    core.d.comb += walker.o.ready.eq(1)
                    core.d.sync += [
                        wb_busy.eq(1),
                        wb_cmd_sent.eq(0),
                        wb_handed.eq(0),
                        wb_index.eq(walker.o.p.index),
                        wb_length.eq(desc.length),
                        wb_ioc.eq(desc.ioc),
                        wb_sop.eq(desc.sop),
                        wb_eop.eq(desc.eop),
                        wb_ts_id.eq(Mux(desc.eop, frame_ts_id, 0)),
                        wb_stamped.eq(0),
                    ]
                    core.next = "Next"

            with core.State("Halting"):
                # Wait for the previous descriptor's write-back, so that HEAD points at the
                # failing descriptor when the halt becomes visible.
                with core.If(hold):
                    core.next = "Next"
                with core.Elif(~wb_busy):
                    # A failed write-back has halted the channel already (its code stays).
                    core.d.comb += [halt.request.eq(1), halt.code.eq(pending_code)]
                    stop()

            with core.State("Abort"):
                # Close the frame left open on `o` by a halt.
                core.d.comb += [
                    self.o.valid.eq(1),
                    self.o.p.count.eq(0),
                    self.o.p.last.eq(1),
                    self.o.p.error.eq(1),
                    *beat_meta,
                ]
                with core.If(self.o.ready | hold):
                    core.d.sync += in_frame.eq(0)
                    core.next = "Next"

        # Quiet: no read or write of the channel on the bus (a write-back not yet on it is
        # dropped by the reset).
        m.d.comb += quiet.eq(
            walker.idle
            & ~fsm.ongoing("Data")
            & reader.cmd.ready
            & writer.cmd.ready
            & ~(wb_busy & wb_cmd_sent)
        )
        return m
