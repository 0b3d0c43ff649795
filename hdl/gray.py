"""Gray code for counters that cross clock domains: the dual-clock FIFOs of dma/ and the
PTP clock crossing of mac/ both encode their pointers here."""

from amaranth import *

__all__ = ["gray_decode", "gray_encode"]


def gray_encode(value: Value, width: int) -> Value:
    """Gray code of ``value`` modulo ``2**width``: consecutive values differ in one bit, so
    it may cross clocks. ``width`` is the counter's: ``counter + 1`` is one bit wider than
    ``counter``, and encoding that carry bit would break the code where the counter wraps."""
    value = Value.cast(value)[:width]
    return value ^ value[1:]


def gray_decode(value: Value) -> Value:
    """Binary value of the Gray code ``value``: bit ``i`` is the XOR of bits ``i`` and up,
    each a reduction of its own (a tree of LUTs, not a chain through the bits above)."""
    value = Value.cast(value)
    return Cat(value[index:].xor() for index in range(len(value)))
