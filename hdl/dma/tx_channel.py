"""TX DMA channel: walks the TX descriptor ring and streams each frame's fragments out packed.

Sequence (all in the ``sync`` domain)::

    Idle -> Fetch (one read of up to PREFETCH descriptors)
         -> for each fetched descriptor, in ring order:
              Next (checks own / length, issues the fragment read)
              Data (reader output -> ``o``)
              Hand Off (queues the write-back of words 1..3, one 12-byte write)
         -> Idle (fetches the next batch at once if work is left)

The write-back engine runs beside the main FSM: descriptor k is written back (and on its
B response HEAD advances and the events fire) while the fragment of k + 1 is being read.
"""

from amaranth import *
from amaranth.lib import stream
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import exact_log2

from ..mac.ptp import TS_ID_BITS
from ..regmap import RING_INDEX_BITS
from .channel import ERROR_CODES, DmaChannel, bus_members, register_members
from .descriptor import DESCRIPTOR_BYTES, Descriptor, pack_descriptor
from .irq import IrqEventSignature
from .packed import packed_layout
from .ring import fetch_count, wrap_increment
from .tx_checksum import TxChecksumRequest

__all__ = ["TxDmaChannel"]


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
        write-back already on the bus landed). A driver re-posts descriptors only once it
        reads 0: before, that late write-back could overwrite a descriptor posted again at
        its slot.
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
    ``regs.drops``
        TX_DROPS: frames the MAC cut short whose EOP write-back landed OKAY (the driver
        reaps them as sent), counted when the cut is reported or, for a write-back already
        on the bus at a reset, when it lands after it. A cut frame whose write-back never
        lands (it failed, or a reset dropped it before it reached the bus) keeps ``own``,
        so the driver drops and counts it, and it is not counted here: each lost frame is
        counted once. Started and landed frames are matched in ring order, counted from
        the end of the last reset's wind-down (FIFO flushed, ``resetting`` over). Wraps;
        kept across ``reset``.

    PTP timestamps
    --------------
    o_ts_request : Out(TS_ID_BITS)
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
      HEAD != the latched tail (and not stalled) or a poll-timer expiry.
    * A doorbell with ``tail`` >= ``ring_size`` is ignored and sets ``bad_tail``.
    * One descriptor read fetches ``min(prefetch, ring_size - head, tail - head)``
      descriptors (a poll with HEAD == tail ignores the tail limit). The first one without
      ``own`` stalls the channel at it until the next doorbell or poll expiry.
    * ``run`` = 0 stops at the next descriptor boundary (the current descriptor is finished
      and written back).
    * Errors halt the channel (``halted``, ``error_code``, ``events.error``); the failing
      descriptor is not written back and HEAD stays at it. Only ``reset`` recovers. The halt
      becomes visible only after the previous descriptor's write-back has landed, so HEAD
      already points at the failing descriptor. A failed write-back halts at once; a fragment
      read already started for the next descriptor is drained and dropped (the reader still
      completes that one command on the bus), and an open frame on ``o`` is closed with an
      error beat.
    * ``reset``: HEAD = 0, the latched tail = 0, halt/error/``bad_tail``/stall cleared. A
      fragment read in progress is drained and dropped (``o`` gets nothing more; the TX FIFO
      is expected to be reset together with the channel); a write-back whose command was
      already accepted is completed but has no other effect. The counters are not cleared.
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
            "o": Out(stream.Signature(packed_layout(data_width, "error"))),
            # The checksum request of the frame on ``o``, from its SOP descriptor.
            "o_csum": Out(TxChecksumRequest),
            "o_ts_request": Out(TS_ID_BITS),
            "ts_valid": In(1),
            "ts_id": In(TS_ID_BITS),
            "ts_ns": In(32),
            "ts_discarded": Out(1),
            **bus_members(addr_width, data_width),
        }

    def elaborate(self, platform):
        m = Module()
        W = self._data_width // 8
        dw = self._data_width
        maxp = self._max_prefetch
        beats_per_desc = DESCRIPTOR_BYTES // W

        regs, status = self.regs, self.regs.status
        reset = regs.ctrl.reset  # CTRL.reset: a one-cycle strobe
        halted = status.halted
        run = Signal()  # CTRL.run, held off while the TX FIFO resets
        m.d.comb += [
            run.eq(regs.ctrl.run & ~self.hold),
            # Always 0 on TX (the register map's TX_FIFO_OVERFLOWS).
            regs.fifo_overflows.eq(0),
        ]

        reader, writer = self.add_movers(m)
        m.d.comb += status.running.eq(run & ~halted)

        # ---- counters -----------------------------------------------------------------------
        # BURSTS counts frame-data bursts only (fragment reads), like RX counts buffer
        # writes: descriptor fetches and write-backs show in DESC_FETCHED and FRAMES. The
        # reader runs one command at a time, so an AR belongs to the last command taken.
        reading_fragment = Signal()
        ar_hs = self.axi_read.arvalid & self.axi_read.arready
        m.d.sync += regs.bursts.eq(regs.bursts + (ar_hs & reading_fragment))
        data_beat = Signal()  # a fragment beat (not the error beat) handed to `o`
        m.d.sync += regs.bytes.eq(regs.bytes + Mux(data_beat, self.o.p.count, 0))

        # ---- events: registered strobes, 0 unless set below ---------------------------------
        ev_done = Signal()
        ev_ioc = Signal()
        ev_eop = Signal()
        ev_error = Signal()
        cur_eop = Signal()  # the fragment being read is the frame's last
        m.d.sync += [
            self.events.desc_done.eq(ev_done),
            self.events.desc_ioc.eq(ev_done & ev_ioc),
            self.events.frame_done.eq(ev_done & ev_eop),
            self.events.error.eq(ev_error),
        ]

        # ---- doorbell -----------------------------------------------------------------------
        doorbell = self.add_doorbell(m, reset=reset)
        tail = doorbell.latched
        stalled = Signal()  # stopped at a descriptor without own
        with m.If(doorbell.rung):
            m.d.sync += stalled.eq(0)

        # ---- poll timer ---------------------------------------------------------------------
        # Runs while the channel may work; an expiry is kept until the next descriptor fetch
        # starts (which serves as the poll).
        poll_kick = Signal()
        poll_timer_runs = Signal()  # the channel may work: the poll timer runs
        with m.If(self.add_poll_timer(m, poll_timer_runs)):
            m.d.sync += poll_kick.eq(1)

        # ---- descriptor buffer --------------------------------------------------------------
        # The batch in small memories (LUT RAM on an FPGA), one per beat of a descriptor:
        # beat k of descriptor i is row i of memory k, and descriptor ``index`` is read
        # whole, combinationally. ``buf_index`` counts the beats received (its low bits are
        # the beat, the rest the descriptor).
        beat_bits = exact_log2(beats_per_desc)
        buf_index = Signal(range(maxp * beats_per_desc + 1))
        fetched = Signal(range(maxp + 1))  # descriptors in the batch
        index = Signal(range(maxp + 1))  # descriptor of the batch being processed
        buf_write = Signal()  # a fetched beat is stored at ``buf_index``
        beat_data = []
        for beat in range(beats_per_desc):
            rows = Memory(shape=unsigned(dw), depth=maxp, init=[])
            m.submodules[f"desc_beat{beat}"] = rows
            write = rows.write_port()
            read = rows.read_port(domain="comb")
            m.d.comb += [
                write.addr.eq(buf_index[beat_bits:]),
                write.data.eq(reader.o.p.data),
                write.en.eq(buf_write & (buf_index[:beat_bits] == beat)),
                read.addr.eq(index),
            ]
            beat_data.append(read.data)
        desc = Descriptor(Cat(*beat_data))

        # ---- fetch size ---------------------------------------------------------------------
        # `head` is the committed index (descriptors before it are written back); `cursor` is
        # the next descriptor to process. They differ while a write-back is in flight.
        head = regs.head
        cursor = Signal(RING_INDEX_BITS)
        fetch_n = Signal(range(maxp + 1))
        m.d.comb += fetch_n.eq(
            fetch_count(
                position=cursor,
                tail=tail,
                ring_size=regs.ring_size,
                prefetch=regs.prefetch,
                max_prefetch=maxp,
            )
        )
        fetch_addr = self.entry_address(cursor)
        next_cursor = wrap_increment(cursor, regs.ring_size)
        next_head = wrap_increment(head, regs.ring_size)

        in_frame = Signal()  # some beats of a frame went to `o`, its last beat not yet
        # PTP requests: the number given to the frame being read (0 = none).
        frame_ts_id = Signal(TS_ID_BITS)
        last_ts_id = Signal(TS_ID_BITS)
        next_ts_id = Mux(last_ts_id == (1 << TS_ID_BITS) - 1, 1, last_ts_id + 1)
        m.d.comb += self.o_ts_request.eq(frame_ts_id)

        # ---- write-back engine --------------------------------------------------------------
        # Writes descriptor k back while the main FSM already reads the fragment of k + 1.
        wb_busy = Signal()
        wb_addr = Signal(self._addr_width)
        wb_length = Signal(16)
        wb_ioc = Signal()
        wb_sop = Signal()
        wb_eop = Signal()
        short_beats = (12 + W - 1) // W
        long_beats = DESCRIPTOR_BYTES // W
        wb_index = Signal(range(long_beats + 1))
        wb_cmd_sent = Signal()
        wb_abort = Signal()  # a reset arrived during the write-back: finish it, no effects
        # PTP: the EOP write-back of a frame that asked waits for its time (wb_ts_id).
        wb_ts_id = Signal(TS_ID_BITS)
        wb_stamped = Signal()
        wb_ts_ns = Signal(32)
        ts_held_id = Signal(TS_ID_BITS)  # the last time that came back, and its number
        ts_held_ns = Signal(32)
        wb_waiting = (wb_ts_id != 0) & ~wb_stamped
        with m.If(wb_busy & wb_waiting & (ts_held_id == wb_ts_id)):
            m.d.sync += [wb_stamped.eq(1), wb_ts_ns.eq(ts_held_ns), ts_held_id.eq(0)]
        with m.If(self.ts_valid):
            m.d.sync += [ts_held_id.eq(self.ts_id), ts_held_ns.eq(self.ts_ns)]
        # The descriptor as the driver reads it back: words 1..3, or all four with the
        # frame's time in word 0.
        written = pack_descriptor(
            addr=wb_ts_ns,
            done_length=wb_length,
            timestamped=wb_stamped,
            length=wb_length,
            ioc=wb_ioc,
            sop=wb_sop,
            eop=wb_eop,
        )
        long_bytes = written.as_value()
        short_bytes = long_bytes[32:]  # ``timestamped`` is 0 when this is written
        wb_data = Mux(
            wb_stamped,
            Array(long_bytes[i * dw : (i + 1) * dw] for i in range(long_beats))[wb_index],
            Array(short_bytes[i * dw : (i + 1) * dw] for i in range(short_beats))[wb_index],
        )
        wb_beats = Mux(wb_stamped, long_beats, short_beats)
        wb_last_count = Mux(wb_stamped, W, 12 - (short_beats - 1) * W)
        wb_ok = Signal()

        with m.If(wb_busy):
            m.d.comb += [
                writer.cmd.valid.eq(~wb_cmd_sent & ~reset & ~wb_abort & ~wb_waiting),
                writer.cmd.p.addr.eq(Mux(wb_stamped, wb_addr - 4, wb_addr)),
                writer.cmd.p.length.eq(Mux(wb_stamped, DESCRIPTOR_BYTES, 12)),
                writer.i.valid.eq(wb_cmd_sent & (wb_index < wb_beats)),
                writer.i.p.data.eq(wb_data),
                writer.i.p.count.eq(Mux(wb_index == wb_beats - 1, wb_last_count, W)),
                writer.i.p.last.eq(wb_index == wb_beats - 1),
                writer.done.ready.eq(1),
            ]
            m.d.comb += self.ts_discarded.eq(reset & ~wb_cmd_sent & wb_waiting)
            with m.If(writer.cmd.valid & writer.cmd.ready):
                m.d.sync += wb_cmd_sent.eq(1)
            with m.If(writer.i.valid & writer.i.ready):
                m.d.sync += wb_index.eq(wb_index + 1)
            with m.If(reset & ~wb_cmd_sent):
                m.d.sync += wb_busy.eq(0)  # never reached the bus: just drop it
            with m.Elif(reset):
                m.d.sync += wb_abort.eq(1)
            with m.If(writer.done.valid):
                m.d.sync += wb_busy.eq(0)
                with m.If(~wb_abort & ~reset):
                    with m.If(writer.done.p.error):
                        m.d.sync += [
                            halted.eq(1),
                            status.error_code.eq(ERROR_CODES["WRITEBACK_BUS_ERROR"]),
                        ]
                        m.d.comb += ev_error.eq(1)
                    with m.Else():
                        m.d.comb += [wb_ok.eq(1), ev_done.eq(1)]
                        m.d.sync += head.eq(next_head)
                        with m.If(wb_eop):
                            m.d.sync += regs.frames.eq(regs.frames + 1)
        m.d.comb += [ev_ioc.eq(wb_ioc), ev_eop.eq(wb_eop)]

        # ---- frames a reset discards from the TX FIFO -------------------------------------
        # pending: EOP write-backs landed minus frames the MAC started, since the last flush.
        # Negative when the MAC started frames ahead of their write-back: a write-back
        # finishing after the reset then belongs to a frame already on the wire.
        landed = wb_ok & wb_eop
        late = wb_busy & writer.done.valid & ~writer.done.p.error & wb_eop & (wb_abort | reset)
        flushing_q = Signal()
        m.d.sync += flushing_q.eq(self.fifo_flushing)
        window = reset | self.fifo_flushing | flushing_q
        sample = flushing_q & ~self.fifo_flushing
        pending = Signal(signed(12))
        late_started = Signal()
        pending_next = Signal(signed(12))
        m.d.comb += pending_next.eq(pending + landed + (late & window) - self.frame_started)
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
        with m.If(late & ~window):
            m.d.sync += [
                regs.reset_discards.eq(regs.reset_discards + ~late_started),
                late_started.eq(0),
            ]

        # ---- TX_DROPS: frames the MAC cut whose write-back landed ---------------------------
        # unlanded: frames the MAC started minus EOP write-backs landed (on time or late),
        # since the last reset wound down. Both happen in ring order, so the last frame
        # started (the one a cut ends) has landed iff unlanded <= 0; if not, its write-back
        # is the unlanded-th landing from now, if it ever lands (cut_wait counts them down).
        landing = landed | late
        unlanded = Signal(signed(12))
        unlanded_next = Signal(signed(12))
        m.d.comb += unlanded_next.eq(unlanded + self.frame_started - landing)
        cut_wait = Signal(12)  # landings due until the cut frame's own (0: no cut waits)
        winding = Signal()  # a reset's flush, late write-back or cut may still come
        skip_cut = Signal()  # a reset left a started frame unlanded: its cut is the driver's
        wound_down = winding & ~reset & ~self.fifo_flushing & ~flushing_q & ~status.resetting
        cut_counts = Signal()
        wait_over = Signal()
        m.d.comb += [
            cut_counts.eq(self.frame_cut & ~skip_cut & (unlanded_next <= 0)),
            wait_over.eq(landing & (cut_wait == 1)),
        ]
        m.d.sync += [
            regs.drops.eq(regs.drops + cut_counts + wait_over),
            unlanded.eq(unlanded_next),
        ]
        with m.If(landing & (cut_wait != 0)):
            m.d.sync += cut_wait.eq(cut_wait - 1)
        with m.If(self.frame_cut & ~skip_cut & (unlanded_next > 0)):
            m.d.sync += cut_wait.eq(unlanded_next[:12])
        with m.If(self.frame_cut | self.frame_started):
            m.d.sync += skip_cut.eq(0)
        with m.If(reset):
            m.d.sync += winding.eq(1)
        with m.Elif(wound_down):
            # No write-back of the old frames can land any more: a cut frame still waiting
            # for one is the driver's (its descriptor kept own), and so is a cut that
            # arrives later for a started frame left unlanded (slow PHY clocks).
            m.d.sync += [
                winding.eq(0),
                unlanded.eq(0),
                cut_wait.eq(0),
                skip_cut.eq((unlanded_next > 0) & (cut_wait == 0)),
            ]

        # ---- main FSM -----------------------------------------------------------------------
        pending_code = Signal(4)

        def halt(code):
            """Halt once the write-back of the previous descriptor has landed."""
            m.d.sync += pending_code.eq(ERROR_CODES[code])
            m.next = "Halting"

        def stop():
            """Leave after a halt: close a frame left open on `o`."""
            with m.If(in_frame):
                m.next = "Abort"
            with m.Else():
                m.next = "Idle"

        ready_to_work = run & ~halted & (regs.ring_size != 0) & (cursor < regs.ring_size) & ~reset
        m.d.comb += poll_timer_runs.eq(ready_to_work)

        with m.FSM(name="tx_channel") as fsm:
            with m.State("Idle"):
                work = ((cursor != tail) & ~stalled) | poll_kick
                with m.If(ready_to_work & work & (fetch_n != 0)):
                    m.d.comb += [
                        reader.cmd.valid.eq(1),
                        reader.cmd.p.addr.eq(fetch_addr),
                        reader.cmd.p.length.eq(fetch_n * DESCRIPTOR_BYTES),
                    ]
                    with m.If(reader.cmd.ready):
                        m.d.sync += [
                            reading_fragment.eq(0),
                            fetched.eq(fetch_n),
                            buf_index.eq(0),
                            index.eq(0),
                            poll_kick.eq(0),
                            stalled.eq(0),
                        ]
                        m.next = "Fetch"
                with m.Elif(halted & in_frame & ~reset):
                    m.next = "Abort"

            with m.State("Fetch"):
                m.d.comb += reader.o.ready.eq(1)
                with m.If(reader.o.valid):
                    with m.If(~reader.o.p.error):
                        m.d.comb += buf_write.eq(1)
                        m.d.sync += buf_index.eq(buf_index + 1)
                    with m.If(reader.o.p.last):
                        with m.If(reset):
                            m.next = "Idle"
                        with m.Elif(halted):
                            stop()
                        with m.Elif(reader.o.p.error):
                            halt("DESC_FETCH_BUS_ERROR")
                        with m.Else():
                            m.d.sync += regs.desc_fetched.eq(regs.desc_fetched + fetched)
                            m.next = "Next"
                    with m.Elif(reset):
                        m.next = "Drain"
                with m.Elif(reset):
                    m.next = "Drain"

            with m.State("Next"):
                with m.If(reset):
                    m.next = "Idle"
                with m.Elif(halted):
                    stop()
                with m.Elif((index == fetched) | ~run):
                    m.next = "Idle"
                with m.Elif(~desc.own):
                    m.d.sync += stalled.eq(1)
                    m.next = "Idle"
                with m.Elif(desc.length == 0):
                    halt("ZERO_LENGTH_DESC")
                with m.Else():
                    m.d.comb += [
                        reader.cmd.valid.eq(1),
                        reader.cmd.p.addr.eq(desc.addr),
                        reader.cmd.p.length.eq(desc.length),
                    ]
                    with m.If(reader.cmd.ready):
                        m.d.sync += [cur_eop.eq(desc.eop), reading_fragment.eq(1)]
                        with m.If(desc.sop):
                            m.d.sync += frame_ts_id.eq(Mux(desc.ts_request, next_ts_id, 0))
                            with m.If(desc.ts_request):
                                m.d.sync += last_ts_id.eq(next_ts_id)
                            m.d.sync += self.o_csum.eq(
                                Cat(
                                    desc.csum_start,
                                    desc.csum_offset,
                                    desc.csum_insert,
                                    desc.ip_csum_insert,
                                )
                            )
                        m.next = "Data"

            with m.State("Data"):
                with m.If(reset | halted):
                    # Reset, or the previous write-back failed: drop the rest of the read.
                    m.d.comb += reader.o.ready.eq(1)
                    with m.If(reader.o.valid & reader.o.p.last):
                        with m.If(reset):
                            m.next = "Idle"
                        with m.Else():
                            stop()
                    with m.Else():
                        m.next = "Drain"
                with m.Else():
                    r = reader.o.p
                    m.d.comb += [
                        self.o.valid.eq(reader.o.valid),
                        self.o.p.data.eq(r.data),
                        self.o.p.count.eq(r.count),
                        self.o.p.last.eq(r.last & (cur_eop | r.error)),
                        self.o.p.error.eq(r.error),
                        reader.o.ready.eq(self.o.ready),
                        data_beat.eq(reader.o.valid & self.o.ready & ~r.error),
                    ]
                    with m.If(reader.o.valid & self.o.ready):
                        m.d.sync += in_frame.eq(~self.o.p.last)
                        with m.If(r.last):
                            with m.If(r.error):
                                # The reader's error beat has just closed the frame on `o`.
                                halt("DATA_READ_BUS_ERROR")
                            with m.Else():
                                m.next = "Hand Off"

            with m.State("Hand Off"):
                # The fragment is read: queue its write-back and go on with the next one.
                with m.If(reset):
                    m.next = "Idle"
                with m.Elif(halted):
                    stop()
                with m.Elif(~wb_busy):
                    m.d.sync += [
                        wb_busy.eq(1),
                        wb_cmd_sent.eq(0),
                        wb_abort.eq(0),
                        wb_index.eq(0),
                        wb_addr.eq(fetch_addr + 4),
                        wb_length.eq(desc.length),
                        wb_ioc.eq(desc.ioc),
                        wb_sop.eq(desc.sop),
                        wb_eop.eq(desc.eop),
                        wb_ts_id.eq(Mux(desc.eop, frame_ts_id, 0)),
                        wb_stamped.eq(0),
                        cursor.eq(next_cursor),
                        index.eq(index + 1),
                    ]
                    m.next = "Next"

            with m.State("Drain"):
                m.d.comb += reader.o.ready.eq(1)
                with m.If(reader.o.valid & reader.o.p.last):
                    with m.If(halted & ~reset):
                        stop()
                    with m.Else():
                        m.next = "Idle"

            with m.State("Halting"):
                # Wait for the previous descriptor's write-back, so that HEAD points at the
                # failing descriptor when the halt becomes visible.
                with m.If(reset):
                    m.next = "Idle"
                with m.Elif(~wb_busy):
                    with m.If(~halted):  # a failed write-back reports itself
                        m.d.sync += [halted.eq(1), status.error_code.eq(pending_code)]
                        m.d.comb += ev_error.eq(1)
                    stop()

            with m.State("Abort"):
                # Close the frame left open on `o` by a halt.
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.p.count.eq(0),
                    self.o.p.last.eq(1),
                    self.o.p.error.eq(1),
                ]
                with m.If(self.o.ready | reset):
                    m.d.sync += in_frame.eq(0)
                    m.next = "Idle"

        # Channel reset: registers only; the FSM and the write-back engine wind down above.
        with m.If(reset):
            m.d.sync += status.resetting.eq(1)
        with m.Elif(fsm.ongoing("Idle") & ~wb_busy):
            m.d.sync += status.resetting.eq(0)
        with m.If(reset):
            m.d.sync += [
                head.eq(0),
                cursor.eq(0),
                stalled.eq(0),
                poll_kick.eq(0),
                halted.eq(0),
                status.error_code.eq(0),
                in_frame.eq(0),
            ]
            m.d.comb += ev_error.eq(0)

        return m
