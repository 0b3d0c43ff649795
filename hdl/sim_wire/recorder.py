"""Frame recorder: every frame on a GMII/MII transmit pin group into memory, stamped.

Simulation only (see the package docstring). On every enabled clock out of reset it
samples ``txd``, ``tx_en`` and ``tx_er`` and does what cocotbext-eth's ``GmiiSink`` does
with the same samples:

- a frame starts at the first sample with ``tx_en`` high (``start_cycle``); that sample
  itself is not kept (the sink leaves it out: a 7-byte preamble reads as six 0x55);
- every later sample with ``tx_en`` high is kept, ``txd`` whole (8 bits; in MII mode the
  bench pairs the nibbles as the sink does), its ``tx_er`` bit beside it;
- ``sfd_cycle`` is the first kept sample after one that read 0xD5 or 0x0D
  (``sfd_seen`` when there was one);
- the frame ends at the first sample with ``tx_en`` low (``end_cycle``): ``frames``
  counts it, ``samples`` says how many were kept, ``errors`` whether any had ``tx_er``.

Kept sample ``i`` is byte lane ``i % 4`` of word ``i // 4`` of the array ``data_words`` and bit
``i % 32`` of word ``i // 32`` of ``error_words``; each frame starts again at sample 0, so the
bench reads a frame in the time step its ``frames`` count changes (the next frame's
first kept sample comes two enabled clocks later at the earliest). Samples beyond
``capacity_samples`` are counted but not kept: ``overflowed`` is set for that frame.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .player import COUNT_BITS, CYCLE_BITS, word_array

__all__ = ["FrameRecorder"]

_SFD, _SFD_NIBBLE = 0xD5, 0x0D


class FrameRecorder(wiring.Component):
    """Records frames of up to ``capacity_samples`` kept samples (a multiple of 32).

    Ports: ``enable`` (the PHY clock enable), the pins (``txd``, ``tx_en``, ``tx_er``),
    and the last frame's record (``frames``, ``samples``, ``errors``, ``overflowed``,
    ``start_cycle``, ``sfd_cycle``, ``sfd_seen``, ``end_cycle``), and ``cycle``. Runs in
    ``sync``; in reset it samples nothing.
    """

    def __init__(self, capacity_samples: int = 32768):
        if capacity_samples <= 0 or capacity_samples % 32:
            raise ValueError(
                f"capacity_samples must be a positive multiple of 32, not {capacity_samples!r}"
            )
        self.capacity_samples = capacity_samples
        count_bits = (capacity_samples * 4).bit_length()
        super().__init__({
            "enable": In(1),
            "txd": In(8),
            "tx_en": In(1),
            "tx_er": In(1),
            "frames": Out(COUNT_BITS),
            "samples": Out(count_bits),
            "errors": Out(1),
            "overflowed": Out(1),
            "start_cycle": Out(CYCLE_BITS),
            "sfd_cycle": Out(CYCLE_BITS),
            "sfd_seen": Out(1),
            "end_cycle": Out(CYCLE_BITS),
            "cycle": Out(CYCLE_BITS),
        })  # fmt: skip

    def elaborate(self, platform):
        m = Module()
        count_bits = len(self.samples)
        # Free running, reset or not: the bench's time base (sim/benches/frame_wire.py).
        cycle = Signal(CYCLE_BITS, reset_less=True)
        m.d.sync += cycle.eq(cycle + 1)
        m.d.comb += self.cycle.eq(cycle)

        in_frame = Signal()
        in_preamble = Signal()
        sfd_seen = Signal()
        sfd_cycle = Signal(CYCLE_BITS)
        start_cycle = Signal(CYCLE_BITS)
        kept = Signal(count_bits)
        any_error = Signal()
        error_bits = Signal(32)  # the error word being filled

        keep = Signal()
        room = kept < self.capacity_samples
        m.d.comb += keep.eq(self.enable & in_frame & self.tx_en)
        lane = kept[:2]
        bit = kept[:5]
        filled = Mux(bit == 0, 0, error_bits) | (self.tx_er.as_unsigned() << bit)
        unused = Signal(32)
        m.submodules.data_words = word_array(
            self.capacity_samples // 4,
            read_enable=0,
            read_addr=0,
            read_data=unused,
            write_enable=Mux(keep & room, Const(1, 4) << lane, 0),
            write_addr=kept >> 2,
            write_data=self.txd.replicate(4),
        )
        unused_errors = Signal(32)
        m.submodules.error_words = word_array(
            self.capacity_samples // 32,
            read_enable=0,
            read_addr=0,
            read_data=unused_errors,
            write_enable=Mux(keep & room, 0b1111, 0),
            write_addr=kept >> 5,
            write_data=filled,
        )

        is_sfd = (self.txd == _SFD) | (self.txd == _SFD_NIBBLE)
        with m.If(self.enable):
            with m.If(~in_frame):
                with m.If(self.tx_en):  # the sink starts the frame, keeping no sample
                    m.d.sync += [
                        in_frame.eq(1),
                        in_preamble.eq(1),
                        sfd_seen.eq(0),
                        start_cycle.eq(self.cycle),
                        kept.eq(0),
                        any_error.eq(0),
                    ]
            with m.Elif(~self.tx_en):
                m.d.sync += [
                    in_frame.eq(0),
                    self.frames.eq(self.frames + 1),
                    self.samples.eq(kept),
                    self.errors.eq(any_error),
                    self.overflowed.eq(kept > self.capacity_samples),
                    self.start_cycle.eq(start_cycle),
                    self.sfd_cycle.eq(sfd_cycle),
                    self.sfd_seen.eq(sfd_seen),
                    self.end_cycle.eq(self.cycle),
                ]
            with m.Else():
                with m.If(~sfd_seen & ~in_preamble):
                    m.d.sync += [sfd_cycle.eq(self.cycle), sfd_seen.eq(1)]
                with m.If(is_sfd):
                    m.d.sync += in_preamble.eq(0)
                with m.If(kept != (1 << count_bits) - 1):  # saturates: overflowed stays set
                    m.d.sync += kept.eq(kept + 1)
                m.d.sync += [
                    any_error.eq(any_error | self.tx_er),
                    error_bits.eq(filled),
                ]
        return m
