"""AXI4 burst reader: the DMA's path for every memory read (descriptor fetch, TX fragments)."""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import bits_for, exact_log2

from ..bus.axi4 import BURST_INCR, RESP_OKAY, Axi4ReadSignature
from .bursts import next_burst_beats

__all__ = ["AxiBurstReader", "check_mover_params"]

# AxCACHE "Normal Non-cacheable Bufferable": the usual choice of a DMA master without coherency.
AXCACHE_NORMAL_BUFFERABLE = 0b0011
# AxPROT: unprivileged, secure, data access.
AXPROT_DATA = 0b000
# Longest command in bytes: the `length` field is 16 bits wide.
MAX_LENGTH_BYTES = 2**16 - 1


def check_mover_params(data_width, addr_width, max_outstanding):
    """Validate the elaboration parameters shared by the reader and the writer."""
    if not isinstance(data_width, int) or data_width not in (32, 64):
        raise ValueError(f"data_width must be 32 or 64, not {data_width!r}")
    if not isinstance(addr_width, int) or not 12 <= addr_width <= 64:
        raise ValueError(f"addr_width must be an integer in 12..64, not {addr_width!r}")
    if not isinstance(max_outstanding, int) or not 1 <= max_outstanding <= 16:
        raise ValueError(f"max_outstanding must be an integer in 1..16, not {max_outstanding!r}")


class AxiMover(wiring.Component):
    """What the burst reader and writer share: parameter checks, the command stream
    ``cmd`` {addr, length} and the runtime cap ``burst_beats``. A subclass adds its data
    stream and its AXI half in :meth:`data_members`, called once the parameters passed."""

    def __init__(self, data_width: int, addr_width: int, max_outstanding: int):
        check_mover_params(data_width, addr_width, max_outstanding)
        self._data_width = data_width
        self._addr_width = addr_width
        self._max_outstanding = max_outstanding
        command = data.StructLayout({"addr": addr_width, "length": 16})
        super().__init__(
            {"cmd": In(stream.Signature(command)), "burst_beats": In(9), **self.data_members()}
        )

    def data_members(self) -> dict:
        raise NotImplementedError

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def max_outstanding(self) -> int:
        return self._max_outstanding


def mask_unused_lanes(value: Value, count: Value, beat_bytes: int) -> Value:
    """``value`` with every byte lane at or above ``count`` forced to zero."""
    return Cat(Mux(count > lane, value.word_select(lane, 8), 0) for lane in range(beat_bytes))


class AxiBurstReader(AxiMover):
    """Read ``length`` bytes from any byte address over AXI4 and stream them out packed.

    Parameters
    ----------
    data_width : 32 or 64
        AXI data width; one beat carries ``W = data_width // 8`` bytes.
    addr_width : 12..64
        AXI address width.
    max_outstanding : 1..16
        Bursts whose AR has been issued and whose last R beat has not yet arrived.

    Members
    -------
    cmd : In(stream of {addr, length})
        One read command: byte address (any alignment) and ``length`` in bytes, 1..65535.
        A command is accepted only when the previous one has fully finished.
    burst_beats : In(9)
        Runtime burst cap in beats, 1..256 (0 is read as 1, above 256 as 256). Sampled per
        burst, so a change applies from the next burst on.
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
        width = self._data_width
        beat = {"data": width, "count": bits_for(width // 8), "last": 1, "error": 1}
        return {
            "o": Out(stream.Signature(data.StructLayout(beat))),
            "axi": Out(Axi4ReadSignature(self._addr_width, width, 1)),
        }

    def elaborate(self, platform):
        m = Module()

        beat_bytes = self._data_width // 8
        lane_bits = exact_log2(beat_bytes)
        max_beats = (MAX_LENGTH_BYTES + 2 * (beat_bytes - 1)) // beat_bytes
        axi = self.axi

        # Lane of the first byte inside its beat; the output is shifted down by this much.
        start_lane = Signal(range(beat_bytes))
        # Bytes of the command still to be presented on `o`.
        out_bytes_left = Signal(range(MAX_LENGTH_BYTES + 1))
        # Set by the first bad RRESP of a command; stops the AR issuer.
        failed = Signal()

        # ---- AR issuer: runs ahead of the data, bounded by max_outstanding --------------------
        ar_next_addr = Signal(self._addr_width)  # beat-aligned start of the next burst
        ar_beats_left = Signal(range(max_beats + 1))  # beats not yet requested
        # Bursts requested (AR loaded) whose last R beat has not arrived yet.
        in_flight = Signal(range(self._max_outstanding + 1))

        burst = next_burst_beats(ar_next_addr, ar_beats_left, self.burst_beats, beat_bytes)
        # A bad response stops the issuer in the very cycle it is accepted, not one later.
        error_now = axi.rvalid & axi.rready & (axi.rresp != RESP_OKAY)
        can_issue = (
            (ar_beats_left != 0) & ~failed & ~error_now & (in_flight < self._max_outstanding)
        )
        # AR is a registered output: load a new request only when the slot is free or is
        # being accepted in this very cycle, so back-to-back ARs are possible.
        load_ar = can_issue & (~axi.arvalid | axi.arready)

        m.d.comb += [
            axi.arid.eq(0),
            axi.arsize.eq(lane_bits),
            axi.arburst.eq(BURST_INCR),
            axi.arlock.eq(0),
            axi.arcache.eq(AXCACHE_NORMAL_BUFFERABLE),
            axi.arprot.eq(AXPROT_DATA),
        ]
        with m.If(load_ar):
            m.d.sync += [
                axi.arvalid.eq(1),
                axi.araddr.eq(ar_next_addr),
                axi.arlen.eq(burst - 1),
                ar_next_addr.eq(ar_next_addr + (burst << lane_bits)),
                ar_beats_left.eq(ar_beats_left - burst),
            ]
        with m.Elif(axi.arready):
            m.d.sync += axi.arvalid.eq(0)

        burst_done = axi.rvalid & axi.rready & axi.rlast
        with m.If(load_ar & ~burst_done):
            m.d.sync += in_flight.eq(in_flight + 1)
        with m.Elif(~load_ar & burst_done):
            m.d.sync += in_flight.eq(in_flight - 1)

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
                m.d.comb += self.cmd.ready.eq(1)
                with m.If(self.cmd.valid):
                    addr = self.cmd.p.addr
                    length = self.cmd.p.length
                    m.d.sync += [
                        start_lane.eq(addr[:lane_bits]),
                        out_bytes_left.eq(length),
                        ar_next_addr.eq(Cat(Const(0, lane_bits), addr[lane_bits:])),
                        ar_beats_left.eq(
                            (addr[:lane_bits] + length + (beat_bytes - 1)) >> lane_bits
                        ),
                        have_held.eq(0),
                        failed.eq(0),
                    ]
                    with m.If(length == 0):
                        # Nothing to read: answer with the error beat, never touch the bus.
                        m.d.sync += ar_beats_left.eq(0)
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
                with m.If(in_flight == 0):
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
