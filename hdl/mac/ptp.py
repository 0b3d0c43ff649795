"""IEEE 1588 (PTP, two-step) support: the hardware clock and the SFD time capture.

:class:`PtpClock` is the PHC: 64-bit time in ns plus a 24-bit fraction, advanced by
PTP_INCREMENT every system clock, set and stepped from registers (docs/mac.md, "PTP").

Capture: the MAC's SFD strobes (``rx`` and ``tx`` domains) cross into ``sync``, where the
clock's value is latched. The crossing carries a small sequence number with each SFD and
carries the latched time back with it, so that a time is only ever attached to the frame
whose SFD it was latched for:

* :class:`RxTimestamper` (RX): the ``rx`` side numbers every SFD, tags each frame entering
  the RX FIFO with the number of the SFD before its first byte, and writes a time into
  the frame's last beat (its ``meta``) only when the time that came back carries that
  number and the frame is good. The time then travels through the RX FIFO in the last
  beat's payload, so frames the FIFO cuts or loses take their times with them.
* :class:`TxTimestamper` (TX): the SFD strobes of frames that asked for a time cross to
  ``sync`` and latch it there; the TX channel holds the frame's EOP write-back for it.

Latency: the time latched is the clock a few cycles after the SFD left or reached the
pins (the synchronisers' stages); docs/mac.md gives it per link speed, as measured.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from ..gray import gray_decode, gray_encode
from .frame import TS_ID_BITS, RxByteBeat

__all__ = [
    "INCREMENT_FRACTION_BITS",
    "TS_ID_BITS",
    "PtpClock",
    "RxTimestamper",
    "StrobeCounterCrossing",
    "TxTimestamper",
    "nominal_increment",
]

#: PTP_INCREMENT is ns per system clock as unsigned 8.24 fixed point.
INCREMENT_FRACTION_BITS = 24
INCREMENT_BITS = 32
#: SFD numbers carried through the crossings: more than the frames that can be between
#: the SFD and the RX FIFO's input at once (the MAC's control-frame FIFO holds 4).
SEQUENCE_BITS = 4


def nominal_increment(sys_clk_hz: float) -> int:
    """PTP_INCREMENT for a system clock of ``sys_clk_hz``: its period in ns as 8.24 fixed
    point, rounded to nearest."""
    if not isinstance(sys_clk_hz, (int, float)) or sys_clk_hz <= 0:
        raise ValueError(f"sys_clk_hz must be a positive frequency in Hz, not {sys_clk_hz!r}")
    increment = round(1e9 / sys_clk_hz * (1 << INCREMENT_FRACTION_BITS))
    if not 1 <= increment < 1 << INCREMENT_BITS:
        raise ValueError(
            f"sys_clk_hz {sys_clk_hz!r} gives a period that does not fit 8.24 fixed point "
            "(the system clock must be above 3.91 MHz)"
        )
    return increment


class PtpClock(wiring.Component):
    """The PTP hardware clock, ``sync`` domain.

    Every cycle ``{time_ns, fraction} += increment`` (8.24 fixed point ns; 0 selects
    ``nominal``). ``set`` loads ``set_ns`` with fraction 0; ``step`` adds ``step_ns``
    (signed) in the same cycle as the increment, so no cycle is lost or counted twice.

    Parameters
    ----------
    nominal : int
        The increment used while ``increment`` is 0 (:func:`nominal_increment`).

    Members
    -------
    time_ns : Out(64)
        Registered.
    increment : In(32); set : In(1); set_ns : In(64); step : In(1); step_ns : In(signed(32))
    """

    def __init__(self, nominal: int):
        if not isinstance(nominal, int) or not 1 <= nominal < 1 << INCREMENT_BITS:
            raise ValueError(f"nominal must be a 32-bit increment >= 1, not {nominal!r}")
        self._nominal = nominal
        self._fraction = Signal(INCREMENT_FRACTION_BITS)  # below the ns, kept for tests
        super().__init__(
            {
                "time_ns": Out(64),
                "increment": In(INCREMENT_BITS),
                "set": In(1),
                "set_ns": In(64),
                "step": In(1),
                "step_ns": In(signed(32)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        fraction = self._fraction
        now = Cat(fraction, self.time_ns)
        increment = Mux(self.increment == 0, self._nominal, self.increment)
        step = Mux(self.step, self.step_ns, 0)
        with m.If(self.set):
            m.d.sync += now.eq(Cat(Const(0, INCREMENT_FRACTION_BITS), self.set_ns))
        with m.Else():
            m.d.sync += now.eq(now + increment + (step.as_signed() << INCREMENT_FRACTION_BITS))
        return m


class StrobeCounterCrossing(wiring.Component):
    """Strobes in domain ``w`` counted into domain ``r``, one per ``r`` cycle.

    The ``w`` side counts strobes in binary and Gray code; the strobe only enables those
    flip-flops, whose next values come from registers, so no logic hangs off it (an
    AsyncFIFO's write pointer hung its full check, increment and Gray encode off
    ``w_en``: in the board builds that chain behind the MAC's SFD strobe was the tx and
    rx clocks' critical path). The ``r`` side follows the synchronised Gray count one step
    per cycle. No full check: strobes come once per frame, even runts at least a preamble,
    an SFD and a gap apart (20 byte times, 160 ns at 1 Gb/s), and ``r`` (``sync``, at
    least 41.7 MHz, 24 ns, at 1 Gb/s) takes one per cycle, 2 to 3 cycles after it
    crossed, so it never falls a whole count behind and the Gray count changes at most one
    step between two of its samples.

    Members
    -------
    strobe : In(1), ``w`` domain
    count : Out(width), ``w`` domain
        Strobes so far (modulo ``2**width``), the strobe of this cycle not included.
    pending : Out(1), ``r`` domain
        A strobe has crossed and is taken in this cycle.
    taken : Out(width), ``r`` domain
        Strobes taken before this cycle's: ``taken + 1`` is the number the pending
        strobe had on the ``w`` side (``count`` after it).

    As in an AsyncFIFO, a reset of ``w`` empties the crossing: the reset-less ``r`` count
    takes the synchronised ``w`` count while the reset lasts.
    """

    def __init__(self, width: int, *, w_domain: str, r_domain: str):
        self._width = width
        self._w_domain = w_domain
        self._r_domain = r_domain
        super().__init__(
            {"strobe": In(1), "count": Out(width), "pending": Out(1), "taken": Out(width)}
        )

    def elaborate(self, platform):
        m = Module()
        width, w, r = self._width, self._w_domain, self._r_domain
        w_gry = Signal(width)
        w_next = Signal(width)
        m.d.comb += w_next.eq(self.count + 1)
        with m.If(self.strobe):
            m.d[w] += [self.count.eq(w_next), w_gry.eq(gray_encode(w_next, width))]

        w_gry_sync = Signal(width)
        m.submodules.count_cdc = FFSynchronizer(w_gry, w_gry_sync, o_domain=r)
        r_gry = Signal(width, reset_less=True)
        r_next = Signal(width)
        taken = Signal(width, reset_less=True)
        m.d.comb += [self.taken.eq(taken), r_next.eq(taken + 1)]
        w_reset = Signal()
        m.submodules.reset_cdc = AsyncFFSynchronizer(
            ResetSignal(w, allow_reset_less=True), w_reset, o_domain=r
        )
        m.d.comb += self.pending.eq((r_gry != w_gry_sync) & ~w_reset)
        with m.If(w_reset):
            m.d[r] += [r_gry.eq(w_gry_sync), taken.eq(gray_decode(w_gry_sync))]
        with m.Elif(self.pending):
            m.d[r] += [taken.eq(r_next), r_gry.eq(gray_encode(r_next, width))]
        return m


class RxTimestamper(wiring.Component):
    """SFD times for received frames: a stage on the MAC's receive stream that writes each
    frame's time into its last beat's ``meta`` on the way to the RX FIFO.

    Members
    -------
    i : In(stream RxByteBeat, always ready), ``rx`` domain
        The MAC's receive stream.
    o : Out(stream RxByteBeat, always ready), ``rx`` domain
        ``i`` in the same cycle, with ``meta.ts_ns`` (the low 32 bits of the frame's SFD
        time) and ``meta.ts_valid`` on a last beat: whether the time is the frame's and
        wanted (0 for bad frames, when the pairing is unsure, and while ``enable`` is 0).
    enable : In(1), ``rx`` domain
        Timestamp frames (PTP_CTRL.rx_timestamp, synchronised to ``rx``).
    sfd : In(1), ``rx`` domain
        The MAC's SFD strobe (every frame start, delivered or not).
    time_ns : In(64), ``sync`` domain
        From :class:`PtpClock`.

    Why the pairing is right: a good frame is at least 64 bytes long, and its first byte
    reaches the FIFO fewer byte times after its SFD than that (the MAC holds 5 bytes,
    control-frame recognition about 20), so the last SFD before its first byte is its
    own. A bad frame (a runt) may reach the FIFO after the next frame's SFD: it gets no
    time. The time that comes back from ``sync`` carries the SFD's number, and a frame
    whose number it does not match gets none either.
    """

    i: In(stream.Signature(RxByteBeat, always_ready=True))
    o: Out(stream.Signature(RxByteBeat, always_ready=True))
    enable: In(1)
    sfd: In(1)
    time_ns: In(64)

    def elaborate(self, platform):
        m = Module()
        # rx -> sync: the SFDs, numbered; a number's arrival latches the clock.
        m.submodules.sfd_cdc = to_sync = StrobeCounterCrossing(
            SEQUENCE_BITS, w_domain="rx", r_domain="sync"
        )
        sequence = to_sync.count  # number of the last SFD
        # sync -> rx: the number with the time latched for it.
        m.submodules.time_cdc = to_rx = AsyncFIFO(
            width=SEQUENCE_BITS + 32, depth=4, w_domain="sync", r_domain="rx"
        )
        m.d.comb += [
            to_sync.strobe.eq(self.sfd),
            to_rx.w_en.eq(to_sync.pending),
            to_rx.w_data.eq(Cat((to_sync.taken + 1)[:SEQUENCE_BITS], self.time_ns[:32])),
            to_rx.r_en.eq(1),
        ]

        returned_sequence = Signal(SEQUENCE_BITS)
        returned_ns = Signal(32)
        returned = Signal()
        with m.If(to_rx.r_rdy):
            m.d.rx += [
                returned_sequence.eq(to_rx.r_data[:SEQUENCE_BITS]),
                returned_ns.eq(to_rx.r_data[SEQUENCE_BITS:]),
                returned.eq(1),
            ]

        beat = self.i
        in_frame = Signal()
        tag = Signal(SEQUENCE_BITS)
        with m.If(beat.valid):
            m.d.rx += in_frame.eq(~beat.p.last)
            with m.If(~in_frame):
                m.d.rx += tag.eq(sequence)
        frame_tag = Mux(in_frame, tag, sequence)
        ours = returned & (returned_sequence == frame_tag) & ~beat.p.error
        m.d.comb += [
            self.o.valid.eq(beat.valid),
            self.o.p.eq(beat.p),
            self.o.p.meta.ts_ns.eq(returned_ns),
            self.o.p.meta.ts_valid.eq(ours & self.enable),
        ]
        return m


class TxTimestamper(wiring.Component):
    """SFD times for transmitted frames that asked for one.

    Members
    -------
    sfd : In(1), sfd_id : In(TS_ID_BITS), ``tx`` domain
        The MAC's strobe for the SFD of a frame that asked for a time, with the
        request's number.
    time_ns : In(64), ``sync`` domain
    ts_valid : Out(1), ts_id : Out(TS_ID_BITS), ts_ns : Out(32), ``sync`` domain
        A one-cycle pulse with the request's number and the low 32 bits of the clock
        when the strobe arrived.
    """

    sfd: In(1)
    sfd_id: In(TS_ID_BITS)
    time_ns: In(64)
    ts_valid: Out(1)
    ts_id: Out(TS_ID_BITS)
    ts_ns: Out(32)

    def elaborate(self, platform):
        m = Module()
        # The strobes cross as a count; the request numbers wait in a 4-entry ring written
        # in ``tx`` at the strobe and read in ``sync`` once the strobe has crossed (stable
        # by then). The ``sync`` side sees each strobe exactly once.
        m.submodules.sfd_cdc = crossing = StrobeCounterCrossing(3, w_domain="tx", r_domain="sync")
        ids = Array(Signal(TS_ID_BITS, name=f"id{i}") for i in range(4))
        m.d.comb += crossing.strobe.eq(self.sfd)
        with m.If(self.sfd):
            m.d.tx += ids[crossing.count[:2]].eq(self.sfd_id)
        m.d.comb += [
            self.ts_valid.eq(crossing.pending),
            self.ts_id.eq(ids[crossing.taken[:2]]),
            self.ts_ns.eq(self.time_ns[:32]),
        ]
        return m
