"""AXI4 burst writer: the DMA's path for every memory write (RX buffers, descriptor write-back)."""

from amaranth import *
from amaranth.lib import data, fifo, stream
from amaranth.lib.wiring import In, Out

from ..bus.axi4 import RESP_OKAY, Axi4WriteSignature
from .axi_mover import MAX_LENGTH_BYTES, AxiMover, BurstIssuer
from .packed import packed_layout

__all__ = ["AxiBurstWriter"]


class AxiBurstWriter(AxiMover):
    """Write a packed byte stream of ``length`` bytes to any byte address over AXI4.

    Parameters, ``cmd`` (one write command) and ``burst_beats``: see :class:`AxiMover`.

    Members
    -------
    i : In(stream of {data, count, last})
        The bytes to write, packed from lane 0: ``ceil(length / W)`` beats, all full except
        possibly the last, which carries ``last``. The writer counts bytes from ``cmd.length``;
        ``count`` and ``last`` are not needed by it and the producer must deliver exactly
        ``length`` bytes per command.
    done : Out(stream of {error})
        One entry per command, once every B response of its bursts has come back and all of
        its input has been consumed. ``error`` is 1 if any BRESP was not OKAY (or the command
        had length 0; then no input is consumed and the bus is not touched).
    axi : Out(Axi4WriteSignature)
        AW, W and B channels of the AXI4 master. INCR bursts of full-width beats starting on a
        beat-aligned address, never crossing a 4 KiB boundary, WSTRB set for exactly the bytes
        of the transfer; AWID is always 0; ``bready`` is always 1.

    Ordering: the address leads by at least one cycle. A burst's W beats may start once its
    AW is on the bus (AWVALID high) but never before, and they follow the AW order: a queue
    of issued burst lengths drives WLAST. W does not wait for AWREADY, because AXI4 allows a
    slave to hold AWREADY until it sees WVALID. AW requests run ahead of the data up to
    ``max_outstanding`` bursts (counted from AW issue to B), so W streams one beat per cycle
    across burst boundaries while B responses lag. W is a combinational pass-through of
    ``i`` (plus the realignment shifter): ``i.ready`` follows ``wready``.

    On a BRESP error no further AW is issued for the command; W beats still owed to bursts
    already issued are sent from the input as usual, the rest of the command's input is
    consumed and dropped so the producer never hangs, and ``done.error`` is 1.
    """

    def __init__(self, data_width: int = 32, addr_width: int = 32, max_outstanding: int = 4):
        super().__init__(data_width, addr_width, max_outstanding)

    def data_members(self) -> dict:
        return {
            "i": In(stream.Signature(packed_layout(self._data_width))),
            "done": Out(stream.Signature(data.StructLayout({"error": 1}))),
            "axi": Out(Axi4WriteSignature(self._addr_width, self._data_width, 1)),
        }

    def elaborate(self, platform):
        m = Module()

        beat_bytes = self.beat_bytes
        max_beats = self.max_beats
        axi = self.axi

        # Set by the first bad BRESP of a command; stops the AW issuer.
        failed = Signal()

        # ---- AW issuer ------------------------------------------------------------------------
        issuer = BurstIssuer(self, "aw")
        lane_bits = issuer.lane_bits
        start_lane = issuer.start_lane
        issuing = Signal()  # only inside a command's "Transfer" state
        error_now = axi.bvalid & (axi.bresp != RESP_OKAY)
        load_aw = issuer.issue(
            m, issuer.may_issue(failed=failed, error_now=error_now, gate=issuing)
        )
        m.d.comb += axi.bready.eq(1)
        b_seen = axi.bvalid  # bready is constantly 1
        issuer.count(m, load_aw, finished=b_seen)
        with m.If(b_seen & (axi.bresp != RESP_OKAY)):
            m.d.sync += failed.eq(1)

        # Lengths (AxLEN) of bursts whose AW has been issued (loaded, not necessarily accepted)
        # but whose W beats have not all gone. W follows the AW order and WLAST is placed from
        # these lengths. W must not wait for AWREADY: AXI4 lets a slave hold AWREADY low until
        # it sees WVALID, so waiting for the AW handshake could deadlock.
        m.submodules.w_bursts = w_bursts = fifo.SyncFIFO(width=8, depth=self._max_outstanding)
        m.d.comb += [
            w_bursts.w_en.eq(load_aw),
            w_bursts.w_data.eq(issuer.burst - 1),
        ]

        # ---- W data path ----------------------------------------------------------------------
        w_active = Signal()  # inside a burst whose first beat has gone (its entry was popped)
        w_beats_after = Signal(8)  # beats of the active burst after the current one
        beats_after = Mux(w_active, w_beats_after, w_bursts.r_data)
        w_burst_ready = w_active | w_bursts.r_rdy

        in_beats_left = Signal(range(max_beats + 1))  # input beats of the command not consumed
        w_bytes_left = Signal(range(MAX_LENGTH_BYTES + 1))  # transfer bytes not yet strobed
        w_first = Signal()  # next W beat is the command's first (starts at start_lane)
        # Upper `start_lane` bytes of the previous input beat, already moved down to lane 0.
        carry = Signal(self._data_width)

        have_input = in_beats_left != 0
        current = Mux(have_input, self.i.p.data, 0)
        shifted = Cat(current, Const(0, self._data_width)) << (start_lane * 8)
        lane_from = Mux(w_first, start_lane, 0)
        room = (beat_bytes - lane_from).as_unsigned()  # 1..W, never negative
        # Bytes this W beat writes; a narrow signal keeps the strobe shifter W lanes wide.
        strobe_bytes = Signal(range(beat_bytes + 1))
        m.d.comb += strobe_bytes.eq(Mux(w_bytes_left < room, w_bytes_left, room))
        strobes = (((Const(1, beat_bytes + 1) << strobe_bytes) - 1) << lane_from)[:beat_bytes]

        m.d.comb += [
            axi.wdata.eq(shifted[: self._data_width] | carry),
            axi.wstrb.eq(strobes),
            axi.wlast.eq(beats_after == 0),
        ]

        w_beat_done = axi.wvalid & axi.wready
        m.d.comb += w_bursts.r_en.eq(w_beat_done & ~w_active)
        with m.If(w_beat_done):
            m.d.sync += [
                w_active.eq(beats_after != 0),
                w_beats_after.eq(beats_after - 1),
                w_first.eq(0),
                w_bytes_left.eq(w_bytes_left - strobe_bytes),
                carry.eq(shifted[self._data_width :]),
            ]
            with m.If(have_input):
                m.d.sync += in_beats_left.eq(in_beats_left - 1)

        with m.FSM(name="writer"):
            with m.State("Idle"):
                with issuer.taking_command(m) as length:
                    m.d.sync += [
                        in_beats_left.eq((length + (beat_bytes - 1)) >> lane_bits),
                        w_bytes_left.eq(length),
                        w_first.eq(1),
                        carry.eq(0),
                        failed.eq(length == 0),
                    ]
                    with m.If(length == 0):
                        m.d.sync += [issuer.beats_left.eq(0), in_beats_left.eq(0)]
                        m.next = "Report"
                    with m.Else():
                        m.next = "Transfer"

            with m.State("Transfer"):
                m.d.comb += issuing.eq(1)
                # A W beat needs an accepted burst and, unless it is the trailing beat that
                # only flushes `carry`, an input beat.
                m.d.comb += [
                    axi.wvalid.eq(w_burst_ready & (self.i.valid | ~have_input)),
                    self.i.ready.eq(w_burst_ready & have_input & axi.wready),
                ]
                bursts_idle = ~axi.awvalid & ~w_active & ~w_bursts.r_rdy
                with m.If(failed & bursts_idle):
                    # No W beat is owed any more: drop the rest of the command's input.
                    m.d.comb += self.i.ready.eq(have_input)
                    with m.If(self.i.valid & have_input):
                        m.d.sync += in_beats_left.eq(in_beats_left - 1)
                all_requested = (issuer.beats_left == 0) | failed
                with m.If(all_requested & bursts_idle & (issuer.in_flight == 0) & ~have_input):
                    m.next = "Report"

            with m.State("Report"):
                m.d.comb += [self.done.valid.eq(1), self.done.p.error.eq(failed)]
                with m.If(self.done.ready):
                    m.next = "Idle"

        return m
