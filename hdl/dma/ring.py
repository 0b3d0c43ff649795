"""The descriptor ring as a DMA channel walks it: the doorbell, the wrap and how many
descriptors one read may fetch, defined once for both DMA channels.

A ring is ``ring_size`` 16-byte descriptors from RING_BASE. The driver posts work by
writing TAIL (the doorbell): the index one past the last descriptor it handed over. The
channel reads descriptors from its position towards the tail, in reads of at most PREFETCH
descriptors that never wrap (a read past the ring's last descriptor would leave the ring).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..regmap import RING_INDEX_BITS, RING_SIZE_BITS

__all__ = [
    "RingDoorbell",
    "clamp_prefetch",
    "fetch_count",
    "ring_distance",
    "smallest",
    "wrap_increment",
]


def wrap_increment(index: Value, ring_size: Value) -> Value:
    """The ring index after ``index``: 0 after the last one."""
    return Mux(index + 1 >= ring_size, 0, index + 1)


def ring_distance(start: Value, end: Value, ring_size: Value) -> Value:
    """Descriptors from ``start`` up to (not including) ``end``, going forward round the
    ring: 0 when they are equal."""
    return Mux(end >= start, end - start, end + ring_size - start)


def smallest(*values: Value) -> Value:
    """The smallest of ``values`` (unsigned)."""
    result = values[0]
    for value in values[1:]:
        result = Mux(value < result, value, result)
    return result


def clamp_prefetch(prefetch: Value, max_prefetch: int) -> Value:
    """PREFETCH as the channel honours it: 0 counts as 1, more than ``max_prefetch`` (the
    descriptors the channel can hold) as ``max_prefetch``."""
    return Mux(prefetch == 0, 1, Mux(prefetch > max_prefetch, max_prefetch, prefetch))


def fetch_count(
    *,
    position: Value,
    tail: Value,
    ring_size: Value,
    prefetch: Value,
    max_prefetch: int,
    limits: tuple = (),
) -> Value:
    """Descriptors one read may fetch from ``position`` (inside the ring): PREFETCH
    (:func:`clamp_prefetch`), no further than the ring's end, no further than ``tail``
    unless ``tail`` is ``position`` itself (then the read goes on to the ring's end: a
    poll re-reads descriptors the driver may have handed over without a doorbell), and no
    more than any of ``limits`` (the channel's own: room to hold them, ...). A tail outside
    the ring (RING_SIZE made smaller after the doorbell) is past the ring's end, so it
    limits nothing."""
    to_end = ring_size - position
    to_tail = ring_distance(position, tail, ring_size)
    tail_limit = Mux(to_tail != 0, to_tail, to_end)
    return smallest(clamp_prefetch(prefetch, max_prefetch), to_end, tail_limit, *limits)


class RingDoorbell(wiring.Component):
    """TAIL's write strobe, checked against the ring: a tail inside the ring is latched
    (``latched``) and rings (``rung``, in the cycle of the write); a tail at or beyond
    ``ring_size`` is ignored (the previous tail stays) and sets the sticky ``bad_tail``.
    The channel resets it with its own reset (a ``ResetInserter``): the latched tail and
    ``bad_tail`` return to 0.

    Members:
        ring_size:    ``In``: RING_SIZE.
        tail:         ``In``: TAIL.
        tail_written: ``In(1)``: the doorbell, TAIL's write strobe.
        latched:      ``Out``: the last good tail (a register).
        rung:         ``Out(1)``: a good doorbell, this cycle.
        bad_tail:     ``Out(1)``: sticky, a doorbell had a tail outside the ring.
    """

    def __init__(self):
        super().__init__(
            {
                "ring_size": In(RING_SIZE_BITS),
                "tail": In(RING_INDEX_BITS),
                "tail_written": In(1),
                "latched": Out(RING_INDEX_BITS),
                "rung": Out(1),
                "bad_tail": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        inside = self.tail < self.ring_size
        m.d.comb += self.rung.eq(self.tail_written & inside)
        with m.If(self.rung):
            m.d.sync += self.latched.eq(self.tail)
        with m.If(self.tail_written & ~inside):
            m.d.sync += self.bad_tail.eq(1)
        return m
