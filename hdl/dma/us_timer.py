"""The µs timer: a one-shot count of whole µs of the sys clock, exact to the cycle.

The IRQ coalescing timer and rate limit (:mod:`macdma.hdl.dma.irq`) and both DMA channels'
poll timers (POLL_US, :meth:`macdma.hdl.dma.channel.DmaChannel.add_poll_timer`) are each
one of these, its own instance, since each starts at its own cycle. The clock's rate comes
from the register IRQ_SYS_CLK_MHZ (``sys_clk_mhz``, cycles per µs).
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["MicrosecondTimer", "check_width"]


def check_width(name: str, width: object) -> int:
    """``width`` if it is an integer in 1..32; ValueError naming ``name`` otherwise."""
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= 32:
        raise ValueError(f"{name} must be an integer in 1..32, not {width!r}")
    return width


class MicrosecondTimer(wiring.Component):
    """A one-shot timer of a whole number of µs, exact to the cycle: the one µs timer of
    the IRQ coalescing timer and rate limit and both channels' poll timers.

    Started in cycle S, it runs from cycle S + 1 and ``expires`` is high in cycle
    S + us * sys_clk_mhz, its last cycle; after that cycle it stops by itself unless it is
    started again in it. ``us`` is loaded at the start (a running timer keeps it);
    ``sys_clk_mhz`` is sampled at the start and at each µs boundary.

    Parameters:
        us_width:          width of ``us``.
        sys_clk_mhz_width: width of ``sys_clk_mhz``.

    Members:
        start:       ``In(1)``: load ``us`` and run from the next cycle (restarts a running
                     timer); ``us`` = 0 stops it instead.
        stop:        ``In(1)``: stop; wins over ``start``.
        hold:        ``In(1)``: pause the count (a running timer stays running).
        us:          ``In(us_width)``: the duration in µs.
        sys_clk_mhz: ``In(sys_clk_mhz_width)``: clock cycles per µs; 0 acts as 1.
        running:     ``Out(1)``: registered; the timer is counting (or paused).
        expires:     ``Out(1)``: the timer's last cycle (combinational from its registers,
                     so a caller acts on it in the same cycle).
    """

    def __init__(self, *, us_width: int = 16, sys_clk_mhz_width: int = 10):
        self._us_width = check_width("us_width", us_width)
        self._sys_clk_mhz_width = check_width("sys_clk_mhz_width", sys_clk_mhz_width)
        super().__init__(
            {
                "start": In(1),
                "stop": In(1),
                "hold": In(1),
                "us": In(us_width),
                "sys_clk_mhz": In(sys_clk_mhz_width),
                "running": Out(1),
                "expires": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        us_left = Signal(self._us_width)
        # Cycles left in the current µs after this one: sys_clk_mhz - 1 down to 0.
        cycles_left = Signal(self._sys_clk_mhz_width)
        cycles_per_us_minus_1 = Mux(self.sys_clk_mhz == 0, 0, self.sys_clk_mhz - 1)
        one_cycle_per_us = self.sys_clk_mhz <= 1
        # us_left == 1 and cycles_left == 0, kept in registers beside the counts so that
        # ``expires`` is an AND of three flip-flops: its users act on it combinationally.
        last_us = Signal()
        last_cycle = Signal()
        # The last cycle of the last µs: the timer has run us * sys_clk_mhz cycles.
        m.d.comb += self.expires.eq(self.running & last_us & last_cycle)

        with m.If(self.stop):
            m.d.sync += self.running.eq(0)
        with m.Elif(self.start):
            m.d.sync += [
                self.running.eq(self.us != 0),
                us_left.eq(self.us),
                last_us.eq(self.us == 1),
                cycles_left.eq(cycles_per_us_minus_1),
                last_cycle.eq(one_cycle_per_us),
            ]
        with m.Elif(self.running & ~self.hold):
            with m.If(last_cycle):
                m.d.sync += [
                    us_left.eq(us_left - 1),
                    last_us.eq(us_left == 2),
                    cycles_left.eq(cycles_per_us_minus_1),
                    last_cycle.eq(one_cycle_per_us),
                ]
                with m.If(last_us):
                    m.d.sync += self.running.eq(0)
            with m.Else():
                m.d.sync += [
                    cycles_left.eq(cycles_left - 1),
                    last_cycle.eq(cycles_left == 1),
                ]
        return m
