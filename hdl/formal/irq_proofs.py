"""The interrupt rate limit's spacing: no two rises of ``irq`` closer than IRQ_MIN_INTERVAL.

:class:`~macdma.hdl.dma.irq.IrqController` alone, every cause and enable bit free in every
cycle (the CSR bank's side is proven by ``irq_w1c``), the channels' events and the other
register values of its ``regs`` port free, and the rate limit's configuration
(``regs.min_interval.us``, ``regs.sys_clk_mhz``) any constants: the
interval any length the register holds (16 bits of µs), the prescaler small (at most
:data:`MAX_PROOF_SYS_CLK_MHZ` cycles per µs) so the solver's multiplications stay small.
"""

from collections.abc import Callable

from amaranth import *
from amaranth.hdl import Assert, Assume, Cover
from amaranth.lib.wiring import In

from ..dma.irq import IrqController, IrqEventSignature
from ..regmap import REGISTER_MAP
from .harness import Harness
from .internal import elaborated, internal_signal

__all__ = ["IrqSpacingHarness", "MAX_PROOF_SYS_CLK_MHZ"]

#: Largest IRQ_SYS_CLK_MHZ of the proof (0 acts as 1, as in the hardware).
MAX_PROOF_SYS_CLK_MHZ = 4


class IrqSpacingHarness(Harness):
    """The IRQ controller with any causes, enables and events, a constant rate limit.

    Asserted: when ``irq`` rises in cycle R' and it last rose in cycle R, and the limit is
    on (``min_interval_us`` non-zero), then ``R' - R >= min_interval_us * sys_clk_mhz``
    (``sys_clk_mhz`` 0 counted as 1). Covers: a rise exactly one interval after the
    previous one (the limit is exact, not only safe), and a rise held off by it.
    """

    def __init__(self, make_dut: Callable = IrqController):
        super().__init__()
        self._make_dut = make_dut

    def build(self, m):
        dut = self._make_dut(REGISTER_MAP)
        m.submodules.controller = fragment = elaborated(dut)
        regs = dut.regs
        us = self.any_const(len(regs.min_interval.us), "min_interval_us")
        mhz = self.any_const(len(regs.sys_clk_mhz), "sys_clk_mhz")
        m.d.comb += [
            Assume(mhz <= MAX_PROOF_SYS_CLK_MHZ),
            regs.min_interval.us.eq(us),
            regs.sys_clk_mhz.eq(mhz),
        ]
        # Every other register value the controller reads (causes, enables, modes,
        # coalescing) is free in every cycle.
        constants = {("min_interval", "us"), ("sys_clk_mhz",)}
        for path, member, value in regs.signature.flatten(regs):
            if member.flow == In and path not in constants:
                name = "__".join(str(part) for part in path)
                m.d.comb += value.eq(self.any_seq(len(value), name))
        for direction in ("tx", "rx"):
            for name in IrqEventSignature().members:
                event = getattr(getattr(dut, direction), name)
                m.d.comb += event.eq(self.any_seq(1, f"{direction}_{name}"))

        cycles_per_us = Mux(mhz == 0, 1, mhz)
        interval = Signal(len(us) + len(mhz), name="interval_cycles")
        m.d.comb += interval.eq(us * cycles_per_us)
        # Cycles since irq last rose (1 in the cycle after a rise), saturating above every
        # interval the constants allow; ``rose_before``: there was a rise.
        since = Signal(len(interval) + 1, name="cycles_since_rise")
        rose_before = Signal(name="rose_before")
        past_irq = self.past(dut.irq, "irq")
        rise = self.started & dut.irq & ~past_irq
        saturated = since == 2 ** len(since) - 1
        with m.If(rise):
            m.d.sync += [since.eq(1), rose_before.eq(1)]
        with m.Elif(~saturated):
            m.d.sync += since.eq(since + 1)

        limit_on = us != 0
        with m.If(rise & rose_before & limit_on):
            m.d.comb += Assert(since >= interval)

        # Linking invariants (k-induction): the rate limit's timer counts down exactly what
        # is left of the interval since the last rise, in µs and cycles of the µs.
        timer = "rate_limit"
        running = internal_signal(fragment, "running", within=timer)
        us_left = internal_signal(fragment, "us_left", within=timer)
        cycles_left = internal_signal(fragment, "cycles_left", within=timer)
        last_us = internal_signal(fragment, "last_us", within=timer)
        last_cycle = internal_signal(fragment, "last_cycle", within=timer)
        # The interval starts in the cycle of a rise: count that cycle as 0.
        seen = rose_before | rise
        since_now = Mux(rise, 0, since)
        with m.If(~seen):
            m.d.comb += [Assert(~running), Assert(~dut.irq)]
        with m.If(running):
            m.d.comb += [
                Assert(limit_on & seen),
                Assert((us_left >= 1) & (us_left <= us)),
                Assert(cycles_left < cycles_per_us),
                Assert(last_us == (us_left == 1)),
                Assert(last_cycle == (cycles_left == 0)),
                Assert(since_now + (us_left - 1) * cycles_per_us + cycles_left + 1 == interval),
            ]
        with m.Elif(seen & limit_on):
            m.d.comb += Assert(since_now >= interval)

        holdoff_before = self.past(dut.holdoff, "holdoff")
        m.d.comb += [
            Cover(rise & rose_before & (since == interval) & (us >= 2) & (mhz >= 2)),
            Cover(
                holdoff_before
                & (dut.cause_bits("status") & dut.cause_bits("enable")).any()
                & ~dut.irq
            ),
        ]
