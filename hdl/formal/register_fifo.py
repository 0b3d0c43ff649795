"""A register FIFO for proof builds: Amaranth's ``SyncFIFO`` with its entries in registers.

k-induction on a component that keeps an order in a ``SyncFIFO`` (the ring walker's store of
descriptors, the AXI writer's burst lengths) needs invariants about the FIFO's entries, and a
``SyncFIFO`` keeps them in a memory the invariants cannot name. :class:`RegisterFifo` has the
same ports and the same behaviour, cycle for cycle (first-word fall-through ``r_data`` from
the entry at the read pointer, writes ignored when full, reads when empty, ``level`` counted
the same way, entries not reset, as a memory's are not), with its entries as the registers
``entry0``, ``entry1``, ...; :func:`register_fifos` swaps it in while a proof harness
elaborates its component. Only the proof's netlist changes: the component's source and its
synthesised and simulated designs are untouched. ``tests/hdl/formal/test_proofs.py`` checks the
equivalence in simulation, side by side with ``SyncFIFO`` on random traffic.
"""

from contextlib import contextmanager
from unittest import mock

from amaranth import *
from amaranth.lib import fifo

__all__ = ["RegisterFifo", "register_fifos"]

_SYNC_FIFO = fifo.SyncFIFO


class RegisterFifo(fifo.FIFOInterface, Elaboratable):
    """``SyncFIFO(width=, depth=)`` with registers for entries (see the module docstring).

    ``entries`` lists the entry registers; ``entry(age)`` is the entry ``age`` places behind
    the oldest (valid while ``age < level``); ``consistent`` holds in every reachable state
    (the pointers in range, ``level`` entries between them): a linking invariant."""

    def __init__(self, *, width, depth):
        super().__init__(width=width, depth=depth)
        self.level = Signal(range(depth + 1))
        self.produce = Signal(range(max(depth, 1)), name="produce")
        self.consume = Signal(range(max(depth, 1)), name="consume")
        # Not reset, as a memory's words are not (a channel reset leaves them).
        self.entries = [Signal(width, name=f"entry{i}", reset_less=True) for i in range(depth)]

    def _wrap(self, value):
        return Mux(value >= self.depth, value - self.depth, value)

    def entry(self, age: int) -> Value:
        """The entry ``age`` places behind the oldest."""
        return Array(self.entries)[self._wrap(self.consume + age)]

    @property
    def consistent(self) -> Value:
        """The pointers are in range and ``level`` entries lie between them."""
        end = self._wrap(self.consume + self.level)
        return (
            (self.produce < self.depth)
            & (self.consume < self.depth)
            & (self.level <= self.depth)
            & (self.produce == end)
        )

    def elaborate(self, platform):
        m = Module()
        depth = self.depth
        if depth == 0:
            m.d.comb += [self.w_rdy.eq(0), self.r_rdy.eq(0)]
            return m
        m.d.comb += [
            self.w_rdy.eq(self.level != depth),
            self.r_rdy.eq(self.level != 0),
            self.w_level.eq(self.level),
            self.r_level.eq(self.level),
            self.r_data.eq(Array(self.entries)[self.consume]),
        ]
        do_read = self.r_rdy & self.r_en
        do_write = self.w_rdy & self.w_en

        def incr(pointer):
            return Mux(pointer == depth - 1, 0, pointer + 1)

        with m.If(do_write):
            m.d.sync += [
                Array(self.entries)[self.produce].eq(self.w_data),
                self.produce.eq(incr(self.produce)),
            ]
        with m.If(do_read):
            m.d.sync += self.consume.eq(incr(self.consume))
        with m.If(do_write & ~do_read):
            m.d.sync += self.level.eq(self.level + 1)
        with m.If(do_read & ~do_write):
            m.d.sync += self.level.eq(self.level - 1)
        return m


@contextmanager
def register_fifos():
    """While the block runs, every ``SyncFIFO`` built (also inside ``SyncFIFOBuffered``) is a
    :class:`RegisterFifo`: wrap the elaboration of a proof's component in it."""
    with mock.patch.object(fifo, "SyncFIFO", RegisterFifo):
        yield


class FifoView:
    """A :class:`RegisterFifo` inside an elaborated component, found by the path of its
    submodule (``fragment`` and ``path`` as for :func:`~.internal.subfragment`): its
    ``level``, pointers and entries, for linking invariants."""

    def __init__(self, fragment, path: str):
        from .internal import internal_signal, subfragment

        found = subfragment(fragment, path)
        self.level = internal_signal(found, "level")
        self.produce = internal_signal(found, "produce")
        self.consume = internal_signal(found, "consume")
        self.entries = []
        while True:
            try:
                self.entries.append(internal_signal(found, f"entry{len(self.entries)}"))
            except LookupError:
                break
        if not self.entries:
            raise LookupError(f"No register FIFO at {path!r}: build it inside register_fifos()")
        self.depth = len(self.entries)

    _wrap = RegisterFifo._wrap
    entry = RegisterFifo.entry
    consistent = RegisterFifo.consistent
