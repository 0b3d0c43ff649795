"""The runner's smoke design: a counter top (runner_smoke_counter) and the name of its bench,
tests/cocotb/runner_smoke_tb.py, which the runner's and the command's tests run."""

from __future__ import annotations

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

TOP = "runner_smoke_counter"
BENCH = "runner_smoke_tb"


class SmokeCounter(wiring.Component):
    """A counter with enable; ``phase`` one-hot decodes its two top bits.

    Members: ``en`` (in) counts when high; ``count`` (out) the value; ``phase`` (out, 4 bits)
    one-hot of ``count[-2:]``, decoded combinationally from the register.
    """

    def __init__(self, width: int = 8) -> None:
        if not isinstance(width, int) or width < 2:
            raise ValueError(f"width must be an integer >= 2, not {width!r}")
        self.width = width
        super().__init__({"en": In(1), "count": Out(width), "phase": Out(4)})

    def elaborate(self, platform) -> Module:
        m = Module()
        with m.If(self.en):
            m.d.sync += self.count.eq(self.count + 1)
        with m.Switch(self.count[-2:]):
            for value in range(4):
                with m.Case(value):
                    m.d.comb += self.phase.eq(1 << value)
        return m
