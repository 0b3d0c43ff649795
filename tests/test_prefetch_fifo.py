"""AsyncPrefetchFifo in Amaranth's simulator: order, back-pressure, level, full speed."""

import itertools
import random

import pytest
from amaranth import *
from amaranth.sim import Simulator
from unbuilt import rejected

from macdma.hdl.dma.prefetch_fifo import QUEUE_DEPTH, AsyncPrefetchFifo


def simulate(words, *, depth=8, w_period=10e-9, r_period=8e-9, w_prob=1.0, r_prob=1.0, seed=0):
    """Write ``words`` and read them back; returns (words read, read-side cycle of each,
    highest w_level seen, lowest w_level seen)."""
    dut = AsyncPrefetchFifo(16, depth, w_domain="sync", r_domain="rd")
    m = Module()
    m.submodules.dut = dut
    m.domains.sync = ClockDomain("sync")
    m.domains.rd = ClockDomain("rd")
    sim = Simulator(m)
    sim.add_clock(w_period, domain="sync")
    sim.add_clock(r_period, domain="rd", phase=r_period / 3)
    rng = random.Random(seed)
    got, cycles, levels = [], [], []

    async def writer(ctx):
        for word in words:
            while rng.random() > w_prob:
                ctx.set(dut.w_en, 0)
                await ctx.tick()
            ctx.set(dut.w_en, 1)
            ctx.set(dut.w_data, word)
            while True:
                levels.append(ctx.get(dut.w_level))
                ready = ctx.get(dut.w_rdy)
                await ctx.tick()
                if ready:
                    break
        ctx.set(dut.w_en, 0)

    async def reader(ctx):
        cycle = 0
        while len(got) < len(words):
            assert cycle < 20 * len(words) + 200, "timeout"
            ready = rng.random() < r_prob
            ctx.set(dut.r.ready, ready)
            if ready and ctx.get(dut.r.valid):
                got.append(ctx.get(dut.r.payload))
                cycles.append(cycle)
            await ctx.tick("rd")
            cycle += 1

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run()
    return got, cycles, max(levels), min(levels)


@pytest.mark.parametrize(
    ("w_period", "r_period", "w_prob", "r_prob"),
    [(10e-9, 8e-9, 1.0, 1.0), (10e-9, 8e-9, 0.5, 0.3), (8e-9, 24e-9, 0.9, 0.7)],
)
def test_every_word_in_order_under_back_pressure(w_period, r_period, w_prob, r_prob):
    words = [random.Random(1).randrange(1 << 16) for _ in range(300)]
    got, _, top, bottom = simulate(
        words, w_period=w_period, r_period=r_period, w_prob=w_prob, r_prob=r_prob, seed=2
    )
    assert got == words
    assert 0 <= bottom and top <= 8


def test_fills_ram_and_queue_then_streams_a_word_per_cycle():
    """The writer, twice as fast as the reader, fills the RAM (w_level reaches 8, no more);
    once words wait, the reader gets one on every cycle."""
    words = list(range(64))
    got, cycles, top, _ = simulate(words, w_period=4e-9, r_period=8e-9)
    assert got == words
    # The writer runs at twice the reader's rate: the FIFO fills to its RAM depth.
    assert top == 8
    steady = cycles[QUEUE_DEPTH + 4 :]
    assert [b - a for a, b in itertools.pairwise(steady)] == [1] * (len(steady) - 1)


@pytest.mark.parametrize("depth", [0, 3, 6, 12])
def test_depth_must_be_a_power_of_two_of_at_least_4(depth):
    with rejected(ValueError, "depth must be a power of two"):
        AsyncPrefetchFifo(8, depth, w_domain="sync", r_domain="rd")
