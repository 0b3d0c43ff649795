"""AsyncPrefetchFifo in Amaranth's simulator: order, back-pressure, level, full speed."""

import itertools
import random

import pytest
from amaranth import *
from amaranth.sim import Simulator
from unbuilt import rejected

from macdma.hdl.dma.prefetch_fifo import QUEUE_DEPTH, AsyncPrefetchFifo, _ReadAheadQueue


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


@pytest.mark.parametrize(("w_prob", "r_prob"), [(1.0, 1.0), (0.5, 0.5), (0.9, 0.3), (0.3, 0.9)])
def test_read_ahead_queue_order_level_and_write_through(w_prob, r_prob):
    """The queue behind the RAM (first word in a register): words come out in order, its
    level counts the words held (the register included), and a word written while the
    register is free or being freed and nothing waits behind it is readable the next
    cycle, as from a FIFO without the register."""
    dut = _ReadAheadQueue(16, QUEUE_DEPTH)
    sim = Simulator(dut)
    sim.add_clock(8e-9)
    rng = random.Random(int(w_prob * 10 + r_prob * 100))
    words = [rng.randrange(1 << 16) for _ in range(400)]
    got, late = [], []

    async def bench(ctx):
        sent = 0
        held = 0  # words written and not yet read, as the bench counts them
        fresh = None  # (word, whether it must be readable now) written in the last cycle
        for _ in range(4000):
            if len(got) == len(words):
                break
            assert ctx.get(dut.level) == held
            if (
                fresh is not None
                and fresh[1]
                and not (ctx.get(dut.r_valid) and ctx.get(dut.r_data) == fresh[0])
            ):
                late.append(fresh[0])
            valid = ctx.get(dut.r_valid)
            read = valid and rng.random() < r_prob
            write = sent < len(words) and held < QUEUE_DEPTH and rng.random() < w_prob
            ctx.set(dut.r_en, read)
            ctx.set(dut.w_en, write)
            ctx.set(dut.w_data, words[sent] if write else 0)
            if read:
                got.append(ctx.get(dut.r_data))
            # Straight into the register: it is empty or being read, nothing behind it.
            fresh = (words[sent], held - read == 0) if write else None
            sent += write
            held += write - read
            await ctx.tick()

    sim.add_testbench(bench)
    sim.run()
    assert got == words
    assert late == []
