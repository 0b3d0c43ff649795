"""Wishbone B4 (classic cycles, with registered-feedback burst tags): the bus of VexRiscv's
instruction and data ports.

:class:`WishboneSignature` is written from the MASTER's point of view, like the AXI
signatures of :mod:`macdma.hdl.bus`; a slave takes it as ``In(WishboneSignature())``.
Addresses are word addresses (``adr`` = byte address >> 2), as VexRiscv drives them.
A cycle ends with ``ack`` or ``err`` while ``cyc & stb``; ``cti`` tells a slave that more
beats of an incrementing burst follow (``CTI_INCREMENTING``) or that this beat is the last
(``CTI_END``), so a slave may read the next word ahead.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CTI_CLASSIC", "CTI_END", "CTI_INCREMENTING", "WishboneSignature"]

# Cycle type identifiers (Wishbone B4, 4.3.1).
CTI_CLASSIC = 0b000
CTI_INCREMENTING = 0b010
CTI_END = 0b111


class WishboneSignature(wiring.Signature):
    """A 32-bit Wishbone port with a 30-bit word address, master's point of view.

    Members
    -------
    adr : Out(30)
        Word address (byte address bits 31..2).
    dat_w, dat_r : Out(32), In(32)
        Write data (master to slave), read data (slave to master).
    sel : Out(4)
        Byte lanes of a write.
    cyc, stb, we : Out(1)
        Cycle in progress, this beat is valid, write.
    ack, err : In(1)
        The beat ends normally, or with a bus error.
    cti : Out(3), bte : Out(2)
        Burst tags (cycle type, burst type; only linear bursts, ``bte`` 0, are used).
    """

    def __init__(self):
        super().__init__(
            {
                "adr": Out(30),
                "dat_w": Out(32),
                "dat_r": In(32),
                "sel": Out(4),
                "cyc": Out(1),
                "stb": Out(1),
                "we": Out(1),
                "ack": In(1),
                "err": In(1),
                "cti": Out(3),
                "bte": Out(2),
            }
        )

    def __eq__(self, other):
        return type(other) is type(self)

    def __hash__(self):
        return hash(type(self))
