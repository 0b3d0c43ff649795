"""The Internet checksum (RFC 1071) of received frames: CHECKSUM_COMPLETE for the driver.

Ref: RFC 1071 (computing the Internet checksum); Linux ``CHECKSUM_COMPLETE`` (the device
reports the ones'-complement sum of the packet from the network header on, and the stack
verifies any IPv4/IPv6, UDP or TCP checksum inside it without touching the bytes again).

The sum runs over 16-bit big-endian words from byte :data:`RX_CHECKSUM_START_BYTES` of the
frame (the end of an untagged Ethernet header) to its last byte before the FCS; an odd
last byte is the high byte of a word whose low byte is 0. The result is folded to 16
bits, not complemented.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..mac.frame import ByteBeat

#: Destination, source and EtherType: the sum starts at the network header.
RX_CHECKSUM_START_BYTES = 14
#: The unfolded sum of the largest frame (65535 bytes of 0xFF) fits 32 bits.
SUM_BITS = 32
#: ``partial``: the 32-bit sum folded once, 17 bits (:func:`fold_partial` finishes it).
PARTIAL_BITS = 17


def fold_partial(partial):
    """The 16-bit ones'-complement sum from a once-folded 17-bit one (one more carry is
    all it can produce: 0xFFFF + 0xFFFF folds to 0xFFFE + 1)."""
    return (partial[:16] + partial[16])[:16]


class FrameChecksum(wiring.Component):
    """Sums each frame of a byte stream it watches (it never holds the stream up).

    Members
    -------
    i : In(stream ByteBeat, always ready)
        The frames, as the MAC delivers them (FCS stripped).
    partial : Out(PARTIAL_BITS)
        The frame's sum folded once, valid in the cycle after its last beat (registered
        sum, one adder: it goes straight into the RX FIFO's write port).
    """

    i: In(stream.Signature(ByteBeat, always_ready=True))
    partial: Out(PARTIAL_BITS)

    def __init__(self, start_bytes: int = RX_CHECKSUM_START_BYTES):
        if not isinstance(start_bytes, int) or not 0 <= start_bytes <= 255:
            raise ValueError(f"start_bytes must be 0..255, not {start_bytes!r}")
        self.start_bytes = start_bytes
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        acc = Signal(SUM_BITS)  # this frame's words so far, unfolded
        total = Signal(SUM_BITS)  # the last finished frame's sum
        skipped = Signal(range(self.start_bytes + 1))  # header bytes seen, saturating
        # skipped == start_bytes, kept in a register beside it so the comparison is not
        # on the path into the 32-bit adder (the rx clock's critical path in a board build).
        summed = Signal(init=self.start_bytes == 0)
        high = Signal(init=1)  # the next summed byte is the high byte of its word

        addend = Mux(summed, Mux(high, self.i.p.data << 8, self.i.p.data), 0)
        with m.If(self.i.valid):
            with m.If(self.i.p.last):
                m.d.sync += [
                    total.eq(acc + addend),
                    acc.eq(0),
                    skipped.eq(0),
                    summed.eq(self.start_bytes == 0),
                    high.eq(1),
                ]
            with m.Else():
                m.d.sync += acc.eq(acc + addend)
                with m.If(summed):
                    m.d.sync += high.eq(~high)
                with m.Else():
                    m.d.sync += [
                        skipped.eq(skipped + 1),
                        summed.eq(skipped == self.start_bytes - 1),
                    ]
        m.d.comb += self.partial.eq(total[:16] + total[16:])
        return m
