"""AXI4 burst reader: the DMA's path for every memory read (descriptor fetch, TX fragments)."""

from amaranth import *
from amaranth.lib import stream
from amaranth.lib.wiring import Out

from ..bus.axi4 import RESP_OKAY, Axi4ReadSignature
from .axi_mover import MAX_LENGTH_BYTES, AxiMover, BurstIssuer
from .packed import packed_layout

__all__ = ["AxiBurstReader"]


def mask_unused_lanes(value: Value, count: Value, beat_bytes: int) -> Value:
    """``value`` with every byte lane at or above ``count`` forced to zero."""
    return Cat(Mux(count > lane, value.word_select(lane, 8), 0) for lane in range(beat_bytes))


class AxiBurstReader(AxiMover):
    """Read ``length`` bytes from any byte address over AXI4 and stream them out packed.

    Parameters, ``cmd`` (one read command) and ``burst_beats``: see :class:`AxiMover`.

    Members
    -------
    o : Out(stream of {data, count, last, error})
        The command's bytes packed from byte lane 0 upward (realigned from the start
        address). Every beat is full (``count == W``) except possibly the last, which has
        ``last=1``; lanes at or above ``count`` are zero.
        On an AXI error (any RRESP other than OKAY) no further AR is issued for the command,
        the R beats of bursts already issued are drained and dropped, and the command's output
        then ends with one extra beat ``data=0, count=0, last=1, error=1``. Beats emitted
        before the error are correct data of the start of the transfer. A zero-length command
        is answered the same way (a lone error beat) without touching the bus.
    axi : Out(Axi4ReadSignature)
        AR and R channels of the AXI4 master. Only INCR bursts of full-width beats starting
        on a beat-aligned address, never crossing a 4 KiB boundary; ARID is always 0, so the
        R beats return in order.

    The R channel is a combinational pass-through to ``o`` (``rready`` follows ``o.ready``
    whenever a beat would produce output), so back-pressure stops the bus instead of
    losing data. ARs for later bursts are issued ahead of the data, up to
    ``max_outstanding``, which lets the output sustain one beat per cycle.
    """

    def __init__(self, data_width: int = 32, addr_width: int = 32, max_outstanding: int = 4):
        super().__init__(data_width, addr_width, max_outstanding)

    def data_members(self) -> dict:
        return {
            "o": Out(stream.Signature(packed_layout(self._data_width, "error"))),
            "axi": Out(Axi4ReadSignature(self._addr_width, self._data_width, 1)),
        }

    def elaborate(self, platform):
        m = Module()

        beat_bytes = self.beat_bytes
        axi = self.axi

        # Bytes of the command still to be presented on `o`.
        out_bytes_left = Signal(range(MAX_LENGTH_BYTES + 1))
        # Set by the first bad RRESP of a command; stops the AR issuer.
        failed = Signal()

        # ---- AR issuer: runs ahead of the data, bounded by max_outstanding --------------------
        issuer = BurstIssuer(self, "ar")
        start_lane = issuer.start_lane  # the output is shifted down by this many lanes
        error_now = axi.rvalid & axi.rready & (axi.rresp != RESP_OKAY)
        load_ar = issuer.issue(m, issuer.may_issue(failed=failed, error_now=error_now))
        issuer.count(m, load_ar, finished=axi.rvalid & axi.rready & axi.rlast)

        # ---- Realignment -----------------------------------------------------------------------
        # Output beat k takes lanes start_lane.. of R beat k and lanes ..start_lane-1 of R beat
        # k+1, so one R beat is held back in `held` until its successor (or the end) arrives.
        held = Signal(self._data_width)
        have_held = Signal()
        low = Mux(have_held, held, axi.rdata)
        high = Mux(have_held, axi.rdata, 0)
        joined = (Cat(low, high) >> (start_lane * 8))[: self._data_width]
        flushed = held >> (start_lane * 8)

        # Useful bytes in the newest R beat (all lanes from start_lane up).
        tail_bytes = beat_bytes - start_lane
        r_ok = axi.rresp == RESP_OKAY

        with m.FSM(name="reader"):
            with m.State("Idle"):
                with issuer.taking_command(m) as length:
                    m.d.sync += [out_bytes_left.eq(length), have_held.eq(0), failed.eq(0)]
                    with m.If(length == 0):
                        # Nothing to read: answer with the error beat, never touch the bus.
                        m.d.sync += issuer.beats_left.eq(0)
                        m.next = "Report Error"
                    with m.Else():
                        m.next = "Stream Data"

            with m.State("Stream Data"):
                with m.If(axi.rvalid & ~r_ok):
                    # Swallow the bad beat; everything still in flight is drained and dropped.
                    m.d.comb += axi.rready.eq(1)
                    m.d.sync += failed.eq(1)
                    m.next = "Drain"
                with m.Elif(axi.rvalid & ~have_held & (out_bytes_left > tail_bytes)):
                    # First R beat does not complete an output beat: hold it, emit nothing.
                    m.d.comb += axi.rready.eq(1)
                    m.d.sync += [held.eq(axi.rdata), have_held.eq(1)]
                with m.Elif(axi.rvalid):
                    final = out_bytes_left <= beat_bytes
                    count = Mux(final, out_bytes_left, beat_bytes)
                    m.d.comb += [
                        self.o.valid.eq(1),
                        self.o.p.data.eq(mask_unused_lanes(joined, count, beat_bytes)),
                        self.o.p.count.eq(count),
                        self.o.p.last.eq(final),
                        axi.rready.eq(self.o.ready),
                    ]
                    with m.If(self.o.ready):
                        m.d.sync += [
                            out_bytes_left.eq(out_bytes_left - count),
                            held.eq(axi.rdata),
                            have_held.eq(1),
                        ]
                        with m.If(final):
                            m.next = "Idle"
                        with m.Elif(out_bytes_left - beat_bytes <= tail_bytes):
                            # The rest already sits in this R beat; no R beat is left to wait for.
                            m.next = "Flush"

            with m.State("Flush"):
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.p.data.eq(mask_unused_lanes(flushed, out_bytes_left, beat_bytes)),
                    self.o.p.count.eq(out_bytes_left),
                    self.o.p.last.eq(1),
                ]
                with m.If(self.o.ready):
                    m.next = "Idle"

            with m.State("Drain"):
                # Every issued burst must still deliver its beats; accept and drop them so the
                # bus is quiet when the error is reported.
                m.d.comb += axi.rready.eq(1)
                with m.If(issuer.in_flight == 0):
                    m.next = "Report Error"

            with m.State("Report Error"):
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.p.data.eq(0),
                    self.o.p.count.eq(0),
                    self.o.p.last.eq(1),
                    self.o.p.error.eq(1),
                ]
                with m.If(self.o.ready):
                    m.next = "Idle"

        return m
