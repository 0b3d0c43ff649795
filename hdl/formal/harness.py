"""What every proof harness shares: free inputs, a first-cycle flag and past values.

Amaranth 0.5 has ``Assert``, ``Assume`` and ``Cover`` but no ``AnySeq``/``AnyConst``/``Past``;
a harness gets the same from top-level inputs (the solver may drive an input to any value in
any step) and from registers. The design starts in its reset state (every register at its
``init``) and the reset input is held low: the proofs cover operation after reset.
"""

from amaranth import *
from amaranth.hdl import Assume

__all__ = ["Harness", "drive_free"]


class Harness(Elaboratable):
    """Base class of a proof harness.

    A subclass builds its design in :meth:`build` (called from :meth:`elaborate`) using
    :meth:`any_seq`, :meth:`any_const` and :meth:`past`; :attr:`ports` lists the free inputs
    to pass to ``rtlil.convert`` once the harness has been elaborated.
    """

    def __init__(self):
        self._free = []
        self._consts = []
        #: 0 in the first cycle after reset, 1 from then on.
        self.started = Signal(name="started")
        self._module = None
        self._sync = ClockDomain("sync")

    @property
    def ports(self) -> list:
        """The free inputs (plus the clock and reset); valid after elaboration."""
        return [self._sync.clk, self._sync.rst, *self._free]

    def any_seq(self, shape, name: str) -> Signal:
        """A fresh value in every cycle, chosen by the solver (a top-level input)."""
        signal = Signal(shape, name=name)
        self._free.append(signal)
        return signal

    def any_const(self, shape, name: str) -> Signal:
        """A value chosen by the solver once and then held for the whole trace."""
        signal = self.any_seq(shape, name)
        self._consts.append(signal)
        return signal

    def past(self, value, name: str) -> Signal:
        """``value`` one cycle ago (its shape's zero in the first cycle)."""
        value = Value.cast(value)
        delayed = Signal(len(value), name=f"past_{name}")
        self._module.d.sync += delayed.eq(value)
        return delayed

    def build(self, m: Module) -> None:
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        self._module = m
        m.domains.sync = self._sync
        m.d.sync += self.started.eq(1)
        m.d.comb += Assume(~self._sync.rst)
        self.build(m)
        for const in self._consts:
            previous = self.past(const, const.name)  # outside the If: updated every cycle
            with m.If(self.started):
                m.d.comb += Assume(const == previous)
        return m


def drive_free(h: Harness, m: Module, bus, names) -> None:
    """Drive the members ``names`` of ``bus`` (those its partner drives) from free inputs
    of the harness ``h``."""
    for name in names:
        signal = getattr(bus, name)
        m.d.comb += signal.eq(h.any_seq(len(signal), f"slave_{name}"))
