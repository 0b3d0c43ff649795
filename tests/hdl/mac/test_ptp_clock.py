"""``PtpClock`` alone in Amaranth's simulator, cycle by cycle: the fixed-point increment is
exact over a long run (at nominal and at +/-100,000 ppb), ``set`` and ``step`` act in the
cycle they are given without losing that cycle's increment, 0 selects the nominal rate,
and bad parameters are refused. tests/hdl/test_soc_ptp.py checks the same through the
registers on both HDL simulators."""

import pytest
from amaranth.sim import Simulator
from unbuilt import rejected

from macdma.hdl.mac.ptp import INCREMENT_FRACTION_BITS, PtpClock, nominal_increment

NOMINAL = nominal_increment(100e6)  # 10 ns per cycle
FRACTION = 1 << INCREMENT_FRACTION_BITS


def run(dut: PtpClock, bench_body):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench_body)
    sim.run()


def test_nominal_increment_is_the_period_in_8_24_fixed_point():
    assert NOMINAL == 10 * FRACTION
    assert nominal_increment(125e6) == 8 * FRACTION
    assert nominal_increment(125e6 / 3) == round(24 * FRACTION)
    assert nominal_increment(31.25e6) == 32 * FRACTION


@pytest.mark.parametrize("bad", [0, -5, 3e6, "100e6"])
def test_nominal_increment_rejects_a_bad_frequency(bad):
    with pytest.raises(ValueError, match="sys_clk_hz"):
        nominal_increment(bad)


@pytest.mark.parametrize("bad", [0, 1 << 32, 2.5])
def test_clock_rejects_a_bad_nominal(bad):
    with rejected(ValueError, "nominal"):
        PtpClock(bad)


@pytest.mark.parametrize("ppb", [0, 100_000, -100_000, 7])
def test_rate_is_exact_over_a_long_run(ppb):
    """After N cycles the clock (ns and fraction) has moved by exactly N increments, so
    the ns count is within one LSB of N * increment / 2**24 at every cycle."""
    dut = PtpClock(NOMINAL)
    increment = round(NOMINAL * (1 + ppb / 1e9)) if ppb else 0  # 0: the nominal
    effective = increment or NOMINAL
    cycles = 50_000
    samples = []

    async def bench(ctx):
        ctx.set(dut.increment, increment)
        await ctx.tick()
        start = ctx.get(dut.time_ns)
        start_fraction = ctx.get(dut._fraction)  # noqa: SLF001 - the checked state
        for n in range(1, cycles + 1):
            await ctx.tick()
            if n % 5_000 == 0:
                samples.append((n, ctx.get(dut.time_ns), ctx.get(dut._fraction)))
        for n, ns, fraction in samples:
            moved = (ns - start) * FRACTION + fraction - start_fraction
            assert moved == n * effective, f"{ppb} ppb after {n} cycles"
            assert abs((ns - start) - n * effective / FRACTION) < 1

    run(dut, bench)
    n, ns, _ = samples[-1]
    # The programmed rate shows over the run: 100,000 ppb is 50 ns in 500 µs.
    assert round((ns - samples[0][1]) - (n - samples[0][0]) * 10) == round(
        (n - samples[0][0]) * 10 * ppb / 1e9
    )


def test_set_and_step_take_effect_in_their_cycle():
    dut = PtpClock(NOMINAL)

    async def bench(ctx):
        ctx.set(dut.set_ns, 0x0123_4567_89AB_CDEF)
        ctx.set(dut.set, 1)
        await ctx.tick()
        ctx.set(dut.set, 0)
        assert ctx.get(dut.time_ns) == 0x0123_4567_89AB_CDEF
        await ctx.tick()
        assert ctx.get(dut.time_ns) == 0x0123_4567_89AB_CDEF + 10
        for step in (1_000_000, -1_000_000_000, -(1 << 31), (1 << 31) - 1):
            before = ctx.get(dut.time_ns)
            ctx.set(dut.step_ns, step)
            ctx.set(dut.step, 1)
            await ctx.tick()
            ctx.set(dut.step, 0)
            assert ctx.get(dut.time_ns) == before + 10 + step, step  # no tick lost
        # Set wins over a step in the same cycle; the fraction restarts from 0.
        ctx.set(dut.increment, NOMINAL + FRACTION // 2)  # 10.5 ns
        await ctx.tick()
        ctx.set(dut.set_ns, 1000)
        ctx.set(dut.set, 1)
        ctx.set(dut.step, 1)
        await ctx.tick()
        ctx.set(dut.set, 0)
        ctx.set(dut.step, 0)
        assert ctx.get(dut.time_ns) == 1000 and ctx.get(dut._fraction) == 0
        await ctx.tick()
        await ctx.tick()
        assert ctx.get(dut.time_ns) == 1021

    run(dut, bench)
