"""Frame player: one frame from memory onto a GMII/MII receive pin group.

Simulation only (see the package docstring). The bench writes a frame's bytes as they go
on the wire (preamble, SFD, data and FCS: a bad FCS, a missing SFD or a cut-short frame
is only other bytes) into the word array ``data_words`` (byte ``i`` in lane ``i % 4`` of word
``i // 4``), the ``rx_er`` bit of each byte into ``error_words`` (bit ``i % 32`` of word
``i // 32``, read only when ``frame_errors`` is set), sets ``frame_bytes`` and
``frame_gap`` and then bumps ``queued``. The player plays it on the next enabled clock
once the gap after the previous frame has passed, exactly as cocotbext-eth's
``GmiiSource`` schedules its queue:

- one symbol per enabled clock: a byte in GMII mode, the low then the high nibble of a
  byte in MII mode (``mii``), ``rx_er`` on both nibbles of a flagged byte;
- after a frame's last symbol ``max(frame_gap, 1)`` enabled clocks idle (the source's
  ``ifg``, counted in symbols), then the next queued frame; an empty queue idles;
- the pins change only on enabled clocks and read 0 between frames.

It counts the frames it finished in ``done`` and keeps the last one's stamps, in cycles
of its clock (``cycle``, free running): ``start_cycle`` (first symbol), ``sfd_cycle``
(the first symbol after the one that read 0xD5 or 0x0D, ``sfd_seen`` when there was one)
and ``end_cycle`` (last symbol): where ``GmiiSource`` stamps ``sim_time_start``,
``sim_time_sfd`` and ``sim_time_end``. ``idle`` is high from the enabled clock where the
source would find its queue empty with no gap left to wait (its ``idle_event``) until
the next frame starts.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..bus.axi4_ram import ARRAY_MODULE

__all__ = ["CYCLE_BITS", "FramePlayer", "word_array"]

#: Width of the free-running cycle counters both ends of the wire stamp with.
CYCLE_BITS = 48
#: Width of the frame counters (``queued``, ``done``; the recorder's ``frames``).
COUNT_BITS = 16
_SFD, _SFD_NIBBLE = 0xD5, 0x0D  # cocotbext-eth leaves the preamble on either symbol


def word_array(
    depth: int, *, read_enable, read_addr, read_data, write_enable=0, write_addr=0, write_data=0
) -> Instance:
    """The project's bench-reachable word array (``macdma_ram_array``, hdl/bus/axi4_ram.py)
    with one registered read port and one byte-enable write port, clocked by ``sync``."""
    addr_bits = (depth - 1).bit_length()
    read_addr, write_addr = Value.cast(read_addr), Value.cast(write_addr)
    return Instance(
        ARRAY_MODULE,
        p_DEPTH=depth,
        p_ADDR_BITS=addr_bits,
        i_clk=ClockSignal(),
        i_read_en=read_enable,
        i_read_addr=read_addr[:addr_bits],
        o_read_data=read_data,
        i_write_en=Value.cast(write_enable)[:4],
        i_write_addr=write_addr[:addr_bits],
        i_write_data=Value.cast(write_data)[:32],
        i_write2_en=C(0, 4),
        i_write2_addr=C(0, addr_bits),
        i_write2_data=C(0, 32),
    )


class FramePlayer(wiring.Component):
    """Plays frames of up to ``capacity_bytes`` (a multiple of 128) from its memory.

    Ports: ``enable`` (the PHY clock enable), ``mii``, the frame (``frame_bytes``,
    ``frame_gap``, ``frame_errors``, ``queued``), the pins (``rxd``, ``rx_dv``,
    ``rx_er``) and the record (``done``, ``start_cycle``, ``sfd_cycle``, ``sfd_seen``,
    ``end_cycle``, ``idle``, ``cycle``). Runs in ``sync``; its reset idles the pins and
    forgets the frame in play.
    """

    def __init__(self, capacity_bytes: int = 16384):
        if capacity_bytes <= 0 or capacity_bytes % 128:
            raise ValueError(
                f"capacity_bytes must be a positive multiple of 128, not {capacity_bytes!r}"
            )
        self.capacity_bytes = capacity_bytes
        length_bits = capacity_bytes.bit_length()
        super().__init__({
            "enable": In(1),
            "mii": In(1),
            "frame_bytes": In(length_bits),
            "frame_gap": In(16),
            "frame_errors": In(1),
            "queued": In(COUNT_BITS),
            "rxd": Out(8),
            "rx_dv": Out(1),
            "rx_er": Out(1),
            "done": Out(COUNT_BITS),
            "start_cycle": Out(CYCLE_BITS),
            "sfd_cycle": Out(CYCLE_BITS),
            "sfd_seen": Out(1),
            "end_cycle": Out(CYCLE_BITS),
            "idle": Out(1, init=1),
            "cycle": Out(CYCLE_BITS),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        data_words = self.capacity_bytes // 4
        error_words = self.capacity_bytes // 32
        symbol_bits = (2 * self.capacity_bytes).bit_length()

        # Free running, reset or not: the bench's time base (sim/benches/frame_wire.py).
        cycle = Signal(CYCLE_BITS, reset_less=True)
        m.d.sync += cycle.eq(cycle + 1)
        m.d.comb += self.cycle.eq(cycle)
        taken = Signal(COUNT_BITS)
        busy = Signal()
        symbol = Signal(symbol_bits)  # next symbol of the frame in play
        gap_left = Signal(16)
        in_preamble = Signal()

        pending = self.queued != taken
        start = ~busy & (gap_left == 0) & pending
        index = Mux(start, 0, symbol)  # the symbol this enabled clock puts out
        byte_index = Mux(self.mii, index >> 1, index)
        symbols = Mux(self.mii, self.frame_bytes << 1, self.frame_bytes)

        # The arrays are read on the enabled clock that puts the symbol out, so a frame
        # the bench wrote just before that clock is what goes out.
        word = Signal(32)
        error_word = Signal(32)
        m.submodules.data_words = word_array(
            data_words, read_enable=self.enable, read_addr=byte_index >> 2, read_data=word
        )
        m.submodules.error_words = word_array(
            error_words, read_enable=self.enable, read_addr=byte_index >> 5, read_data=error_word
        )
        # What the pins show, held from the enabled clock that chose it.
        showing = Signal()
        lane = Signal(2)
        high_nibble = Signal()
        error_bit = Signal(5)
        nibble_mode = Signal()
        flagged = Signal()
        byte = word.word_select(lane, 8)
        m.d.comb += [
            self.rx_dv.eq(showing),
            self.rxd.eq(
                Mux(showing, Mux(nibble_mode, Mux(high_nibble, byte[4:], byte[:4]), byte), 0)
            ),
            self.rx_er.eq(showing & flagged & error_word.bit_select(error_bit, 1)),
        ]

        # The symbol on the pins now is the one the previous enabled clock put out: the
        # preamble ends after the first that reads an SFD, and the SFD stamp goes to the
        # symbol after it.
        after_sfd = showing & ((self.rxd == _SFD) | (self.rxd == _SFD_NIBBLE))
        preamble_left = in_preamble & ~after_sfd

        with m.If(self.enable):
            active = busy | start
            m.d.sync += [
                showing.eq(active),
                lane.eq(byte_index[:2]),
                high_nibble.eq(self.mii & index[0]),
                error_bit.eq(byte_index[:5]),
                nibble_mode.eq(self.mii),
                flagged.eq(self.frame_errors),
            ]
            with m.If(~busy & ~start & (gap_left != 0)):
                m.d.sync += gap_left.eq(gap_left - 1)
            with m.If(start):
                m.d.sync += [
                    taken.eq(taken + 1),
                    self.start_cycle.eq(self.cycle),
                    self.sfd_seen.eq(0),
                    self.idle.eq(0),
                ]
            with m.If(~active & (gap_left == 0)):
                m.d.sync += self.idle.eq(1)
            with m.If(busy):
                m.d.sync += in_preamble.eq(preamble_left)
                with m.If(~self.sfd_seen & ~preamble_left):
                    m.d.sync += [self.sfd_cycle.eq(self.cycle), self.sfd_seen.eq(1)]
            with m.If(start):
                m.d.sync += in_preamble.eq(1)
            with m.If(active):
                with m.If(index + 1 == symbols):
                    m.d.sync += [
                        busy.eq(0),
                        gap_left.eq(Mux(self.frame_gap == 0, 1, self.frame_gap)),
                        self.end_cycle.eq(self.cycle),
                        self.done.eq(self.done + 1),
                        symbol.eq(0),
                    ]
                with m.Else():
                    m.d.sync += [busy.eq(1), symbol.eq(index + 1)]
        return m
