"""The ring arithmetic both DMA channels walk their rings with (hdl/dma/ring.py), against
a plain-Python statement of the rules, in Amaranth's simulator."""

import itertools

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from ring_arithmetic import expected_fetch

from macdma.hdl.dma.ring import RingDoorbell, fetch_count, ring_distance, wrap_increment
from macdma.hdl.regmap import RING_INDEX_BITS, RING_SIZE_BITS

RINGS = range(1, 9)


class _Arithmetic(wiring.Component):
    def __init__(self, max_prefetch):
        self._max_prefetch = max_prefetch
        super().__init__(
            {
                "position": In(RING_INDEX_BITS),
                "tail": In(RING_INDEX_BITS),
                "ring_size": In(RING_SIZE_BITS),
                "prefetch": In(5),
                "limit": In(RING_SIZE_BITS),
                "count": Out(RING_SIZE_BITS),
                "distance": Out(RING_SIZE_BITS),
                "after": Out(RING_INDEX_BITS),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [
            self.count.eq(
                fetch_count(
                    position=self.position,
                    tail=self.tail,
                    ring_size=self.ring_size,
                    prefetch=self.prefetch,
                    max_prefetch=self._max_prefetch,
                    limits=(self.limit,),
                )
            ),
            self.distance.eq(ring_distance(self.position, self.tail, self.ring_size)),
            self.after.eq(wrap_increment(self.position, self.ring_size)),
        ]
        return m


def _run(dut, testbench, clocked=False):
    sim = Simulator(dut)
    if clocked:
        sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()


def test_every_fetch_size_wrap_and_distance():
    for max_prefetch in (1, 3, 16):
        dut = _Arithmetic(max_prefetch)
        checked = []

        async def testbench(ctx, dut=dut, max_prefetch=max_prefetch, checked=checked):
            for ring_size in RINGS:
                ctx.set(dut.ring_size, ring_size)
                for position, tail in itertools.product(range(ring_size), range(ring_size + 2)):
                    ctx.set(dut.position, position)
                    ctx.set(dut.tail, tail)
                    if tail < ring_size:
                        assert ctx.get(dut.distance) == (tail - position) % ring_size
                    assert ctx.get(dut.after) == (position + 1) % ring_size
                    for prefetch, limit in itertools.product(range(18), (0, 1, 2, 9)):
                        ctx.set(dut.prefetch, prefetch)
                        ctx.set(dut.limit, limit)
                        want = expected_fetch(
                            position, tail, ring_size, prefetch, max_prefetch, limit
                        )
                        got = ctx.get(dut.count)
                        assert got == want, (ring_size, position, tail, prefetch, limit, got)
                        checked.append(got)

        _run(dut, testbench)
        # Every size a read can have came out, down to none (the limit 0).
        assert set(checked) == set(range(min(max_prefetch, max(RINGS)) + 1))


def test_a_read_never_wraps_and_a_poll_reads_to_the_ring_end():
    dut = _Arithmetic(16)

    async def testbench(ctx):
        ctx.set(dut.ring_size, 8)
        ctx.set(dut.prefetch, 16)
        ctx.set(dut.limit, 100)
        ctx.set(dut.position, 6)
        ctx.set(dut.tail, 3)  # five posted, across the wrap: only the two before the end
        assert ctx.get(dut.count) == 2
        ctx.set(dut.tail, 6)  # nothing posted (a poll): on to the ring's end
        assert ctx.get(dut.count) == 2
        ctx.set(dut.position, 0)
        ctx.set(dut.tail, 0)
        assert ctx.get(dut.count) == 8
        ctx.set(dut.tail, 9)  # a tail outside the ring limits nothing
        assert ctx.get(dut.count) == 8

    _run(dut, testbench)


def test_doorbell_latches_a_good_tail_flags_a_bad_one_and_resets():
    doorbell = RingDoorbell()
    reset = Signal()
    m = Module()
    m.submodules.doorbell = ResetInserter(reset)(doorbell)

    async def testbench(ctx):
        ctx.set(doorbell.ring_size, 8)

        async def write(tail, *, with_reset=False):
            ctx.set(doorbell.tail, tail)
            ctx.set(doorbell.tail_written, 1)
            ctx.set(reset, with_reset)
            rung = ctx.get(doorbell.rung)
            await ctx.tick()
            ctx.set(doorbell.tail_written, 0)
            ctx.set(reset, 0)
            return rung

        assert (ctx.get(doorbell.latched), ctx.get(doorbell.bad_tail)) == (0, 0)
        assert await write(5) == 1
        assert (ctx.get(doorbell.latched), ctx.get(doorbell.bad_tail), ctx.get(doorbell.rung)) == (
            5,
            0,
            0,
        )
        assert await write(8) == 0  # == ring_size: ignored, sticky bad_tail
        assert (ctx.get(doorbell.latched), ctx.get(doorbell.bad_tail)) == (5, 1)
        assert await write(7) == 1  # a good one later: latched, bad_tail stays
        assert (ctx.get(doorbell.latched), ctx.get(doorbell.bad_tail)) == (7, 1)
        assert await write(2, with_reset=True) == 1  # the channel's reset wins
        assert (ctx.get(doorbell.latched), ctx.get(doorbell.bad_tail)) == (0, 0)

    _run(m, testbench, clocked=True)
