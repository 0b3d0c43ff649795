"""DescriptorWalker (hdl/dma/ring.py) in Amaranth's simulator.

The bench puts a ring in a Python memory, serves the walker's reads with a small model of
the reader (the bytes of the ring as little-endian beats, random gaps, an error beat on
request), takes descriptors from ``o`` with random ready, and checks every cycle against
:class:`WalkerModel`, the walker's docstring stated cycle by cycle in plain Python. The
size of every read is :func:`test_ring.expected_fetch` with the store's free room as one
more limit. Each test then asserts the exact reads, descriptors and strobes of its case.
"""

import itertools
import random
import re
from collections import deque
from dataclasses import dataclass

import pytest
from amaranth import *
from amaranth.lib import data
from amaranth.sim import Simulator
from ring_arithmetic import expected_fetch
from unbuilt import rejected

from macdma.hdl.dma.descriptor import Descriptor
from macdma.hdl.dma.ring import DescriptorWalker

RING_BASE = 0x1000
MAX_RING = 16
#: The fields most tests keep (the RX channel's, and the TX channel's framing bits).
FIELDS = ("addr", "length", "ioc", "sop", "eop")
LAYOUT = data.Layout.cast(Descriptor)
OWN_BIT = LAYOUT["own"].offset


def field_mask(names):
    """The bits of the named Descriptor fields in a 128-bit descriptor value."""
    mask = 0
    for name in names:
        mask |= ((1 << LAYOUT[name].width) - 1) << LAYOUT[name].offset
    return mask


def field_of(value, name):
    """Field ``name`` of a 128-bit descriptor value."""
    return value >> LAYOUT[name].offset & ((1 << LAYOUT[name].width) - 1)


def wrap_increment(index, ring_size):
    """The ring index after ``index``."""
    return 0 if index + 1 >= ring_size else index + 1


@dataclass
class Read:
    """A read command the reader accepted, with the arguments the model sized it from."""

    cycle: int
    addr: int
    length: int
    sized_from: dict


class WalkerModel:
    """What the walker's docstring promises, cycle by cycle.

    A read starts only after the walker has been idle for a cycle, with the size computed
    in that cycle (fetch_count, limited by ``limit`` and by the store's free room after
    that cycle's take) and its reason in that cycle (descriptors up to the tail and no
    stall); a pending kick or recheck is a reason of its own, kept until a read starts or,
    enabled, nothing may be read. The owned descriptors of a read up to the first one
    without ``own`` enter the store (kept fields only) and move the position on; that
    first one stalls the walker: no read for posted descriptors until a wake or kick (or a
    read a recheck forces). ``nothing_found`` answers a recheck when the read serving it ends
    having stored no descriptor, or at once when nothing may be read.
    """

    def __init__(self, *, max_prefetch, data_width, fields):
        self.max_prefetch = max_prefetch
        self.data_width = data_width
        self.desc_beats = 128 // data_width
        self.kept = field_mask(fields)
        self.reset()

    def reset(self):
        self.position = 0
        self.store = deque()  # (ring index, kept bits), in ring order
        self.busy = False
        self.stalled = self.kick = self.recheck = self.serving = self.ignore_rest = False
        self.found = False  # the read in flight stored a descriptor
        self.parts = []  # the beats of the descriptor being read
        self.settled = False  # idle in the previous cycle
        self.n_fetch = 0  # the read size computed in the previous cycle
        self.sized_from = {}
        self.auto = False  # posted descriptors waited in the previous cycle

    def cycle(self, inputs, *, wake, kick, recheck, read_ready, beat, o_ready, reset=False):
        """This cycle's outputs; advances the state to the next cycle. ``beat`` is the
        reader's (data, last, error) on offer this cycle, or None."""
        ring_size = inputs["ring_size"]
        out = {
            "idle": not self.busy,
            "beats_ready": self.busy,
            "o_valid": bool(self.store),
            "stored": False,
            "fetched": False,
            "error": False,
            "nothing_found": False,
        }
        if self.store:
            out["o_index"], out["o_desc"] = self.store[0]
        take = bool(self.store) and o_ready
        may_read = bool(inputs["enable"]) and ring_size != 0 and self.position < ring_size
        force = self.kick or self.recheck
        out["read_valid"] = read_valid = (
            not self.busy
            and self.settled
            and may_read
            and (force or self.auto)
            and self.n_fetch != 0
        )
        if read_valid:
            out["read_addr"] = (inputs["ring_base"] & ~0xF) + 16 * self.position
            out["read_length"] = 16 * self.n_fetch

        # The next cycle's read size and reason, from this cycle's registers and inputs.
        next_n, next_auto, sized_from = 0, False, {}
        if ring_size != 0 and self.position < ring_size:
            free = self.max_prefetch - (len(self.store) - take)
            sized_from = dict(
                position=self.position,
                tail=inputs["tail"],
                ring_size=ring_size,
                prefetch=inputs["prefetch"],
                max_prefetch=self.max_prefetch,
                limit=inputs["limit"],
                free=free,
            )
            next_n = expected_fetch(
                self.position,
                inputs["tail"],
                ring_size,
                inputs["prefetch"],
                self.max_prefetch,
                min(inputs["limit"], free),
            )
            next_auto = (
                (not self.stalled or wake)
                and inputs["tail"] < ring_size
                and inputs["tail"] != self.position
            )
        next_settled = not self.busy

        entered = None
        if not self.busy:
            if read_valid and read_ready:
                self.busy = True
                self.serving = self.recheck
                self.kick = self.recheck = self.stalled = self.ignore_rest = False
                self.found = False
                self.parts = []
            elif not read_valid and self.settled and force:
                out["nothing_found"] = self.recheck
                self.recheck = False
                if may_read:
                    self.kick = False
        elif beat is not None:
            beat_data, last, error = beat
            read_over = True
            if error:
                out["error"] = True
            else:
                self.parts.append(beat_data)
                if len(self.parts) == self.desc_beats:
                    value = sum(p << (self.data_width * i) for i, p in enumerate(self.parts))
                    self.parts = []
                    out["fetched"] = True
                    if not self.ignore_rest and value >> OWN_BIT & 1:
                        assert len(self.store) < self.max_prefetch, "a descriptor for a full store"
                        out["stored"] = self.found = True
                        entered = (self.position, value & self.kept)
                        self.position = wrap_increment(self.position, ring_size)
                    elif not self.ignore_rest:
                        self.ignore_rest = self.stalled = True
                read_over = bool(last)
            if read_over:
                self.busy = False
                if self.serving and not self.recheck and not self.found:
                    out["nothing_found"] = True

        if wake:
            self.stalled = False
        if kick:
            self.kick, self.stalled = True, False
        if recheck:
            self.recheck = True
        if take:
            self.store.popleft()
        if entered is not None:
            self.store.append(entered)
        self.n_fetch, self.auto, self.settled = next_n, next_auto, next_settled
        self.sized_from = sized_from if next_n else {}
        if reset:
            self.reset()
        return out


class Bench:
    """The walker, a reader model over ``mem``, a consumer on ``o`` and the model check.

    ``inputs`` holds the walker's level inputs (set every cycle); :meth:`kick`,
    :meth:`recheck` and :meth:`reset` raise a strobe for the next cycle. ``fail_after``
    maps a read's number (0 = the first) to the good beats the reader sends before ending
    it with an error beat. ``reads``, ``taken`` and ``pulses`` record what happened.
    """

    def __init__(
        self,
        *,
        max_prefetch=8,
        data_width=32,
        fields=FIELDS,
        ring_size=8,
        seed=0,
        o_ready=1.0,
        read_ready=1.0,
        beat_valid=1.0,
        with_reset=False,
    ):
        self.walker = walker = DescriptorWalker(
            max_prefetch=max_prefetch, data_width=data_width, addr_width=32, fields=fields
        )
        self.top = walker
        self.reset_signal = None
        if with_reset:
            self.reset_signal = Signal()
            self.top = Module()
            self.top.submodules.walker = ResetInserter(self.reset_signal)(walker)
        self.model = WalkerModel(max_prefetch=max_prefetch, data_width=data_width, fields=fields)
        self.data_width = data_width
        self.rng = random.Random(seed)
        self.o_ready, self.read_ready, self.beat_valid = o_ready, read_ready, beat_valid
        self.inputs = dict(
            ring_base=RING_BASE, ring_size=ring_size, prefetch=8, tail=0, enable=1, limit=16
        )
        # The ring (the driver owns every descriptor), and a margin that no read may reach.
        self.mem = bytearray(self.rng.randbytes(RING_BASE + 16 * MAX_RING + 256))
        for index in range(MAX_RING):
            self.mem[RING_BASE + 16 * index + 15] &= 0x7F
        self.fail_after = {}
        self.beats_out = deque()
        self.reads, self.taken = [], []
        self.pulses = {"stored": [], "fetched": [], "error": [], "nothing_found": []}
        self.seen = {}
        self.cycle = 0
        self._strobes = set()
        beat_layout = data.Layout.cast(walker.beats.p.shape())
        self._beat_offsets = {name: field.offset for name, field in beat_layout}
        walked = data.Layout.cast(walker.o.p.shape())
        self._index_bits = walked["index"].width

    # ---- the ring in memory ------------------------------------------------------------------
    def post(self, index, *, own=1, **fields):
        """Write descriptor ``index``: random bits, then ``fields`` and ``own``."""
        value = self.rng.getrandbits(128)
        for name, field_value in fields.items():
            value &= ~field_mask([name])
            value |= field_value << LAYOUT[name].offset
        value = value & ~(1 << OWN_BIT) | own << OWN_BIT
        self.mem[RING_BASE + 16 * index : RING_BASE + 16 * index + 16] = value.to_bytes(
            16, "little"
        )
        return value

    def set_own(self, index, own=1):
        byte = RING_BASE + 16 * index + 15
        self.mem[byte] = self.mem[byte] & 0x7F | own << 7

    # ---- strobes -----------------------------------------------------------------------------
    def wake(self):
        self._strobes.add("wake")

    def kick(self):
        self._strobes.add("kick")

    def recheck(self):
        self._strobes.add("recheck")

    def reset(self):
        self._strobes.add("reset")

    # ---- one cycle ---------------------------------------------------------------------------
    async def step(self):
        ctx, w = self.ctx, self.walker
        inputs = dict(self.inputs)
        for name, value in inputs.items():
            ctx.set(getattr(w, name), value)
        strobes, self._strobes = self._strobes, set()
        ctx.set(w.wake, "wake" in strobes)
        ctx.set(w.kick, "kick" in strobes)
        ctx.set(w.recheck, "recheck" in strobes)
        if self.reset_signal is not None:
            ctx.set(self.reset_signal, "reset" in strobes)
        elif "reset" in strobes:
            raise AssertionError("this bench has no reset")

        read_ready = not self.beats_out and self.rng.random() < self.read_ready
        ctx.set(w.read.ready, read_ready)
        beat = None
        if self.beats_out and self.rng.random() < self.beat_valid:
            beat = self.beats_out[0]
        ctx.set(w.beats.valid, beat is not None)
        if beat is not None:
            ctx.set(w.beats.p.as_value(), self._pack_beat(*beat))
        o_ready = self.rng.random() < self.o_ready
        ctx.set(w.o.ready, o_ready)

        seen = self.seen = self._observe()
        sized_from = self.model.sized_from
        want = self.model.cycle(
            inputs,
            wake="wake" in strobes,
            kick="kick" in strobes,
            recheck="recheck" in strobes,
            reset="reset" in strobes,
            read_ready=read_ready,
            beat=None if beat is None else (beat[0], beat[2], beat[3]),
            o_ready=o_ready,
        )
        mismatch = {k: (seen.get(k), v) for k, v in want.items() if seen.get(k) != v}
        if mismatch:
            detail = ", ".join(f"{k}: seen {s!r}, expected {e!r}" for k, (s, e) in mismatch.items())
            raise AssertionError(f"cycle {self.cycle}: {detail}")

        if seen["read_valid"] and read_ready:
            self._accept(seen["read_addr"], seen["read_length"], sized_from)
        if beat is not None and seen["beats_ready"]:
            self.beats_out.popleft()
        if seen["o_valid"] and o_ready:
            self.taken.append((self.cycle, seen["o_index"], seen["o_desc"]))
        for name, cycles in self.pulses.items():
            if seen[name]:
                cycles.append(self.cycle)
        await ctx.tick()
        self.cycle += 1

    def _observe(self):
        ctx, w = self.ctx, self.walker
        seen = {
            "idle": ctx.get(w.idle),
            "beats_ready": ctx.get(w.beats.ready),
            "o_valid": ctx.get(w.o.valid),
            "stored": ctx.get(w.stored),
            "fetched": ctx.get(w.fetched),
            "error": ctx.get(w.error),
            "nothing_found": ctx.get(w.nothing_found),
            "read_valid": ctx.get(w.read.valid),
        }
        seen = {name: bool(value) for name, value in seen.items()}
        if seen["read_valid"]:
            seen["read_addr"] = ctx.get(w.read.p.addr)
            seen["read_length"] = ctx.get(w.read.p.length)
        if seen["o_valid"]:
            walked = ctx.get(w.o.p.as_value())
            seen["o_index"] = walked & ((1 << self._index_bits) - 1)
            seen["o_desc"] = walked >> self._index_bits
        return seen

    def get(self, signal):
        """A signal's value now (between cycles)."""
        return self.ctx.get(signal)

    def _pack_beat(self, beat_data, count, last, error):
        at = self._beat_offsets
        return beat_data | count << at["count"] | last << at["last"] | error << at["error"]

    def _accept(self, addr, length, sized_from):
        """The reader takes a command: its beats, from ``mem`` as it is now."""
        ring_end = RING_BASE + 16 * self.inputs["ring_size"]
        assert addr % 16 == 0 and length % 16 == 0 and length > 0, (addr, length)
        assert RING_BASE <= addr and addr + length <= ring_end, (
            f"read {addr:#x}+{length} off the ring"
        )
        number = len(self.reads)
        self.reads.append(Read(self.cycle, addr, length, sized_from))
        width = self.data_width // 8
        beats = [
            (int.from_bytes(self.mem[at : at + width], "little"), width, 0, 0)
            for at in range(addr, addr + length, width)
        ]
        if number in self.fail_after:
            beats = beats[: self.fail_after[number]] + [(0, 0, 1, 1)]
        else:
            beats[-1] = beats[-1][:2] + (1, 0)
        self.beats_out.extend(beats)

    # ---- running -----------------------------------------------------------------------------
    async def run(self, cycles):
        for _ in range(cycles):
            await self.step()

    async def until(self, predicate, *, limit=2000, what="the condition"):
        for _ in range(limit):
            if predicate():
                return
            await self.step()
        raise AssertionError(f"{what} not reached in {limit} cycles (cycle {self.cycle})")

    async def quiet(self, cycles=12, *, limit=3000):
        """Step until the walker has been idle, with no read offered and no beat pending,
        for ``cycles`` cycles."""
        calm = 0
        for _ in range(limit):
            await self.step()
            busy = not self.seen["idle"] or self.seen["read_valid"] or self.beats_out
            calm = 0 if busy else calm + 1
            if calm >= cycles:
                return
        raise AssertionError(f"the walker never went quiet (cycle {self.cycle})")

    async def drain(self):
        """Take everything in the store and wait until the walker is quiet."""
        saved, self.o_ready = self.o_ready, 1.0
        await self.quiet()
        assert not self.model.store and not self.seen["o_valid"]
        self.o_ready = saved

    def simulate(self, scenario):
        sim = Simulator(self.top)
        sim.add_clock(1e-8)

        async def testbench(ctx):
            self.ctx = ctx
            await scenario(self)

        sim.add_testbench(testbench)
        sim.run()

    # ---- what happened -----------------------------------------------------------------------
    def read_list(self, start=0):
        """The reads from read number ``start`` on, as (first index, descriptors)."""
        return [((r.addr - RING_BASE) // 16, r.length // 16) for r in self.reads[start:]]

    def taken_indices(self, start=0):
        return [index for _, index, _ in self.taken[start:]]


def run_bench(scenario, **options):
    bench = Bench(**options)
    bench.simulate(scenario)
    return bench


# ---- every read size ----------------------------------------------------------------------------
RING_SIZES = (*range(1, 9), 16)
LIMITS = (0, 1, 2, 3, 5, 16, 100, 100)


def binding_terms(args, count):
    """The terms of a read's size that alone held it at ``count``: each would allow more
    if it were the only one lifted."""
    terms = {
        "prefetch": min(max(args["prefetch"], 1), args["max_prefetch"]),
        "ring end": args["ring_size"] - args["position"],
        "limit": args["limit"],
        "room": args["free"],
    }
    if args["tail"] < args["ring_size"] and args["tail"] != args["position"]:
        terms["tail"] = (args["tail"] - args["position"]) % args["ring_size"]
    return {
        name
        for name, value in terms.items()
        if value == count and all(v > count for n, v in terms.items() if n != name)
    }


@pytest.mark.parametrize("data_width", [32, 64])
@pytest.mark.parametrize("max_prefetch", [1, 4, 8])
def test_every_read_size_from_every_position(max_prefetch, data_width):
    """For rings of 1..8 and 16 descriptors, every PREFETCH from 0 to max_prefetch + 1 and
    random tails (inside the ring, at the position, outside it), limits and consumer
    back-pressure, walking at least a lap each: every read starts at ring_base + 16 *
    position and is 16 * expected_fetch(...) bytes with the limit and the store's free room
    (after the cycle's take) folded in. Every position starts a read, every size from 1 to
    min(max_prefetch, ring) occurs, and each of PREFETCH, the ring's end, the tail, the
    limit and the free room is at some point the only term holding a read back."""
    rng = random.Random(1000 * max_prefetch + data_width)
    starts, sizes, orders, binding = {}, {}, {}, set()

    async def scenario(b):
        for ring_size in RING_SIZES:
            assert b.model.position == 0
            b.inputs.update(ring_size=ring_size, tail=0)
            for index in range(ring_size):
                b.post(index)
            first, first_taken = len(b.reads), len(b.taken)
            for prefetch in range(max_prefetch + 2):
                b.inputs["prefetch"] = prefetch
                # A lap from 0 with nothing but PREFETCH and the ring's end to hold reads
                # back (kicks at a tail at the position or outside the ring) ...
                b.inputs.update(tail=b.model.position, limit=100)
                await b.drain()
                b.o_ready = 1.0
                from_zero = False
                for lap_read in range(4 * ring_size):
                    from_zero |= b.model.position == 0
                    tail = (b.model.position, ring_size + 1)[lap_read % 2]
                    b.inputs["tail"] = tail
                    b.kick()
                    await b.quiet(2)
                    if from_zero and b.model.position == 0:
                        break
                else:
                    raise AssertionError(f"no lap from 0 in a ring of {ring_size}")
                # ... then one at random.
                walked = 0
                for attempt in itertools.count():
                    if walked >= ring_size and b.model.position == 0:
                        break
                    assert attempt < 50 * ring_size, f"the walk in a ring of {ring_size} stopped"
                    tail = rng.choice((rng.randrange(ring_size), b.model.position, ring_size + 1))
                    b.inputs.update(tail=tail, limit=rng.choice(LIMITS))
                    b.o_ready = rng.choice((0.0, 0.3, 1.0))
                    if tail == b.model.position or tail >= ring_size or rng.random() < 0.2:
                        b.kick()
                    stored = len(b.pulses["stored"])
                    await b.quiet(rng.choice((2, 4, 8)))
                    walked += len(b.pulses["stored"]) - stored
            b.inputs["tail"] = 0  # the position: no more reads
            await b.drain()
            for read in b.reads[first:]:
                binding.update(binding_terms(read.sized_from, read.length // 16))
            starts[ring_size] = {index for index, _ in b.read_list(first)}
            sizes[ring_size] = {count for _, count in b.read_list(first)}
            orders[ring_size] = b.taken_indices(first_taken)

    bench = run_bench(
        scenario,
        max_prefetch=max_prefetch,
        data_width=data_width,
        seed=max_prefetch + data_width,
        o_ready=0.4,
        read_ready=0.7,
        beat_valid=0.8,
    )
    for ring_size in RING_SIZES:
        assert starts[ring_size] == set(range(ring_size)), ring_size
        assert sizes[ring_size] == set(range(1, min(max_prefetch, ring_size) + 1)), ring_size
        # Nothing lost or repeated: the descriptors came out in ring order, lap after lap.
        order = orders[ring_size]
        assert order == [i % ring_size for i in range(len(order))], ring_size
        assert len(order) >= 2 * (max_prefetch + 2) * ring_size
    if max_prefetch > 1:
        assert binding == {"prefetch", "ring end", "tail", "limit", "room"}
    assert len(bench.taken) == len(bench.pulses["stored"])


# ---- the wrap -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data_width", "fields"),
    [(32, FIELDS), (64, FIELDS), (64, ("done_length", "timestamped", "own"))],
)
def test_wrap_reads_stop_at_the_ring_end_and_indices_run_on(data_width, fields):
    """A ring of 6 with the tail behind the position: the read stops at the ring's end,
    the next starts at index 0, and ``o`` gives the indices in ring order across the wrap
    with the descriptors as memory held them (kept fields; the others read 0). Then
    several random laps with back-pressure on every side keep the order."""
    kept = field_mask(fields)

    async def scenario(b):
        b.inputs.update(ring_size=6, prefetch=8)
        first = [b.post(index) for index in range(4)]
        b.inputs["tail"] = 4
        await b.quiet()
        assert b.read_list() == [(0, 4)]
        # The driver posts 4, 5, 0, 1 (0 and 1 written anew): the tail goes behind.
        second = [b.post(index) for index in (4, 5, 0, 1)]
        b.inputs["tail"] = 2
        await b.quiet()
        assert b.read_list() == [(0, 4), (4, 2), (0, 2)]
        assert b.taken_indices() == [0, 1, 2, 3, 4, 5, 0, 1]
        for (_, index, desc), value in zip(b.taken, first + second, strict=True):
            assert desc == value & kept, index
        for _, _, desc in b.taken:
            assert desc & ~kept == 0
            assert field_of(desc, "own") == ("own" in fields)

        b.o_ready, b.read_ready, b.beat_valid = 0.5, 0.6, 0.7
        laps = random.Random(data_width)
        for _ in range(20):
            b.inputs.update(tail=(b.model.position + laps.randrange(1, 6)) % 6)
            await b.quiet(laps.choice((1, 3)))
        await b.drain()

    bench = run_bench(scenario, data_width=data_width, fields=fields, seed=7)
    indices = bench.taken_indices()
    assert len(indices) > 30
    assert indices == [i % 6 for i in range(len(indices))]
    assert all(r.addr + r.length <= RING_BASE + 16 * 6 for r in bench.reads)


# ---- a descriptor without own -------------------------------------------------------------------
def test_a_descriptor_without_own_stalls_until_a_kick():
    """Descriptors 0, 1 owned, 2 not, 3..5 owned, tail 6: one read of 6; 0 and 1 come out,
    3..5 are read but not stored; ``fetched`` pulses 6 times, ``stored`` twice. The walker
    then reads nothing, even when the tail moves on, until a kick: that one-cycle strobe
    starts a read at 2, the same position."""

    async def scenario(b):
        for index in range(7):
            b.post(index, own=int(index != 2))
        b.inputs["tail"] = 6
        await b.quiet()
        assert b.read_list() == [(0, 6)]
        assert len(b.pulses["fetched"]) == 6
        assert len(b.pulses["stored"]) == 2
        assert b.taken_indices() == [0, 1]
        fetched_cycles = b.pulses["fetched"]
        assert fetched_cycles == sorted(set(fetched_cycles))
        await b.run(40)
        b.inputs["tail"] = 7  # a later doorbell's tail, without the doorbell's kick
        await b.run(40)
        assert len(b.reads) == 1
        assert b.seen["idle"]
        b.set_own(2)
        b.kick()
        await b.quiet()
        assert b.read_list() == [(0, 6), (2, 5)]
        assert b.taken_indices() == [0, 1, 2, 3, 4, 5, 6]
        assert len(b.pulses["fetched"]) == 11
        assert len(b.pulses["stored"]) == 7

    run_bench(scenario)


def test_a_wake_ends_the_stall_without_reading_at_the_tail():
    """TX's doorbell: a wake ends a stall, and reads go on up to the tail from the stalled
    position; unlike a kick, a wake with the position at the tail reads nothing."""

    async def scenario(b):
        for index in range(6):
            b.post(index, own=int(index != 2))
        b.inputs["tail"] = 4
        await b.quiet()
        assert b.read_list() == [(0, 4)]
        assert b.taken_indices() == [0, 1]
        b.set_own(2)
        b.inputs["tail"] = 6
        b.wake()
        await b.quiet()
        assert b.read_list() == [(0, 4), (2, 4)]
        assert b.taken_indices() == [0, 1, 2, 3, 4, 5]
        b.wake()  # the position is at the tail now
        await b.run(40)
        assert len(b.reads) == 2

    run_bench(scenario)


def test_kick_during_a_read_outlives_the_stall_it_meets():
    """A kick while a read is on its way is kept: when that read meets a descriptor
    without own, the walker reads again at once at the same position."""

    async def scenario(b):
        b.beat_valid = 0.5
        for index in range(4):
            b.post(index, own=int(index != 1))
        b.inputs["tail"] = 4
        await b.until(lambda: len(b.reads) == 1, what="the first read")
        b.kick()
        await b.until(lambda: len(b.reads) == 2, what="the read after the kick")
        assert b.read_list() == [(0, 4), (1, 3)]
        await b.quiet()
        assert b.read_list() == [(0, 4), (1, 3)]
        assert b.taken_indices() == [0]

    run_bench(scenario)


def test_kick_ends_the_stall_even_when_nothing_may_be_read():
    """Stalled on descriptor 2 with the tail ahead, a kick while ``limit`` is 0 reads
    nothing (and is dropped) but ends the stall: once the limit is lifted the walker
    reads at 2 without another kick."""

    async def scenario(b):
        for index in range(6):
            b.post(index, own=int(index != 2))
        b.inputs.update(tail=6, prefetch=3)
        await b.quiet()
        assert b.read_list() == [(0, 3)]
        b.set_own(2)
        b.inputs["limit"] = 0
        await b.run(3)
        b.kick()
        await b.run(20)
        assert len(b.reads) == 1
        b.inputs["limit"] = 16
        await b.quiet()
        assert b.read_list() == [(0, 3), (2, 3), (5, 1)]
        assert b.taken_indices() == list(range(6))

    run_bench(scenario)


def test_a_recheck_read_that_finds_descriptors_ends_the_stall():
    """Stalled on descriptor 1 (PREFETCH 2, tail 6): a recheck reads at 1 again; that read
    finding 1 and 2 owned, the walker goes on by itself up to the tail."""

    async def scenario(b):
        for index in range(6):
            b.post(index, own=int(index != 1))
        b.inputs.update(tail=6, prefetch=2)
        await b.quiet()
        assert b.read_list() == [(0, 2)]
        b.set_own(1)
        b.recheck()
        await b.quiet()
        assert b.read_list() == [(0, 2), (1, 2), (3, 2), (5, 1)]
        assert b.taken_indices() == list(range(6))
        assert b.pulses["nothing_found"] == []

    run_bench(scenario)


# ---- kick at the tail ---------------------------------------------------------------------------
def test_kick_at_the_tail_polls_up_to_the_ring_end():
    """With the position at the tail a kick reads from the position to the ring's end (own
    is the only authority): descriptors the driver handed over without a doorbell come out."""

    async def scenario(b):
        b.inputs.update(prefetch=8)
        for index in range(5):
            b.post(index)
        b.inputs["tail"] = 5
        await b.quiet()
        assert b.read_list() == [(0, 5)]
        await b.run(20)
        assert len(b.reads) == 1  # position 5 == tail 5: nothing to read by itself
        for index in range(5, 8):
            b.post(index)
        for index in range(5):
            b.set_own(index, 0)  # done: the driver's own again
        b.kick()
        await b.quiet()
        # The poll to the ring's end, then the tail is 5 ahead of 0 again: a read that
        # meets descriptor 0 without own and stalls.
        assert b.read_list() == [(0, 5), (5, 3), (0, 5)]
        assert b.taken_indices() == [0, 1, 2, 3, 4, 5, 6, 7]
        assert b.model.position == 0

    run_bench(scenario)


def test_kick_at_the_tail_is_bounded_by_prefetch():
    """Position 2 == tail 2 in a ring of 8, PREFETCH 3: a kick reads 2..4. The position is
    then past the tail, which so stands for 5 posted descriptors: the walker reads 5..7,
    then 0..1 up to the tail, and stalls on 0 (done, the driver's own again)."""

    async def scenario(b):
        for index in range(8):
            b.post(index)
        b.inputs.update(prefetch=3, tail=2)
        await b.quiet()
        assert b.read_list() == [(0, 2)]
        b.set_own(0, 0)
        b.set_own(1, 0)
        b.kick()
        await b.quiet()
        assert b.read_list() == [(0, 2), (2, 3), (5, 3), (0, 2)]
        assert b.taken_indices() == list(range(8))
        assert len(b.pulses["fetched"]) == 10

    run_bench(scenario)


# ---- recheck ------------------------------------------------------------------------------------
def test_recheck_reads_and_answers_nothing_found_on_its_last_beat():
    """Position == tail, nothing owned, PREFETCH 4: a recheck makes a read of 4 (to be
    served it reads like a poll); ``nothing_found`` pulses once, in the cycle of that read's
    last beat; nothing comes out and no read follows."""

    async def scenario(b):
        b.inputs.update(prefetch=4)
        b.recheck()
        await b.quiet()
        assert b.read_list() == [(0, 4)]
        assert b.pulses["nothing_found"] == [b.pulses["fetched"][-1]]
        assert len(b.pulses["fetched"]) == 4
        await b.run(30)
        assert len(b.reads) == 1 and b.taken == []
        assert len(b.pulses["nothing_found"]) == 1

    run_bench(scenario)


def test_recheck_answered_at_once_when_nothing_may_be_read():
    """Limit 0 (descriptors posted, tail ahead): no read; a recheck strobed in cycle c is
    answered in cycle c + 1. Then with a store of 2 held full by the consumer: again no
    read and the answer in the next cycle."""

    async def scenario(b):
        for index in range(4):
            b.post(index)
        b.inputs.update(tail=4, limit=0)
        await b.run(10)
        assert b.reads == []
        b.recheck()
        strobe = b.cycle
        await b.run(10)
        assert b.pulses["nothing_found"] == [strobe + 1]
        assert b.reads == []

        b.o_ready = 0.0
        b.inputs["limit"] = 16
        await b.quiet()
        assert b.read_list() == [(0, 2)]  # the store's room
        b.recheck()
        strobe = b.cycle
        await b.run(10)
        assert b.pulses["nothing_found"][-1] == strobe + 1
        assert len(b.pulses["nothing_found"]) == 2
        assert len(b.reads) == 1
        await b.drain()
        # Room for one as soon as the first is taken: reads of 1, up to the tail.
        assert b.read_list() == [(0, 2), (2, 1), (3, 1)]
        assert b.taken_indices() == [0, 1, 2, 3]

    run_bench(scenario, max_prefetch=2)


def test_recheck_not_answered_when_the_read_stores_on_its_last_beat():
    """A ring of 4, position == tail, descriptors 0..3 all owned: the recheck's read stores
    4, the last on its last beat; ``nothing_found`` stays 0."""

    async def scenario(b):
        for index in range(4):
            b.post(index)
        b.inputs.update(prefetch=4, ring_size=4)
        b.o_ready = 0.0
        b.recheck()
        await b.quiet()
        assert b.read_list() == [(0, 4)]
        assert b.pulses["nothing_found"] == []
        assert len(b.pulses["stored"]) == 4

    run_bench(scenario)


def test_a_newer_recheck_waits_for_the_next_read():
    """A recheck strobed while the read serving an earlier one is on its way: that read
    (finding nothing) does not answer; the next read, at the same position, does, once."""

    async def scenario(b):
        b.beat_valid = 0.4
        b.inputs.update(prefetch=2)
        b.recheck()
        await b.until(lambda: len(b.reads) == 1, what="the first read")
        await b.run(2)
        assert not b.pulses["fetched"]
        b.recheck()
        await b.quiet()
        assert b.read_list() == [(0, 2), (0, 2)]
        assert b.pulses["nothing_found"] == [b.pulses["fetched"][-1]]
        assert len(b.pulses["fetched"]) == 4

    run_bench(scenario)


def test_recheck_during_a_read_waits_for_the_next_read():
    """A recheck strobed while a read (not serving one) is on its way is answered by the
    read after it: that read stores nothing, so ``nothing_found`` pulses on its last beat,
    not on the first read's."""

    async def scenario(b):
        b.beat_valid = 0.5
        b.inputs.update(prefetch=2)
        for index in range(2):
            b.post(index)
        b.inputs["tail"] = 2
        await b.until(lambda: len(b.reads) == 1, what="the first read")
        b.recheck()
        await b.quiet()
        assert b.read_list() == [(0, 2), (2, 2)]
        assert b.taken_indices() == [0, 1]
        assert b.pulses["nothing_found"] == [b.pulses["fetched"][-1]]
        assert b.pulses["nothing_found"][0] > b.reads[1].cycle

    run_bench(scenario)


@pytest.mark.parametrize("o_ready", [0.0, 1.0])
def test_recheck_not_answered_when_an_owned_descriptor_precedes_the_stall(o_ready):
    """Position == tail, descriptor 0 owned, 1..3 not: the recheck's read of 4 found (and
    stored) descriptor 0, so ``nothing_found`` must stay 0, whether or not descriptor 0
    has already been taken from ``o`` when the read ends."""

    async def scenario(b):
        b.post(0)
        b.inputs.update(prefetch=4)
        b.o_ready = o_ready
        b.recheck()
        await b.quiet()
        assert b.read_list() == [(0, 4)]
        assert len(b.pulses["stored"]) == 1
        assert b.pulses["nothing_found"] == []

    run_bench(scenario)


# ---- bus error ----------------------------------------------------------------------------------
@pytest.mark.parametrize("data_width", [32, 64])
@pytest.mark.parametrize("whole, extra", [(0, 0), (2, 1), (3, 0), (5, 1)])
def test_bus_error_keeps_what_was_stored(data_width, whole, extra):
    """A read of 6 ends with an error beat after ``whole`` descriptors and ``extra`` beats
    of the next: ``error`` pulses once, in the error beat's cycle; the ``whole`` first
    descriptors come out; the position moves past them only; the walker is idle and,
    the channel enabling it again, reads on from there with nothing lost or repeated."""
    desc_beats = 128 // data_width

    async def scenario(b):
        b.fail_after[0] = whole * desc_beats + extra
        for index in range(8):
            b.post(index)
        b.inputs.update(tail=6, prefetch=6)
        await b.until(lambda: b.pulses["error"], what="the error")
        b.inputs["enable"] = 0  # the channel stops on the error
        await b.quiet()
        assert len(b.pulses["error"]) == 1
        assert len(b.pulses["fetched"]) == whole
        assert b.taken_indices() == list(range(whole))
        assert b.seen["idle"] and b.model.position == whole
        assert b.read_list() == [(0, 6)]
        b.inputs["enable"] = 1
        await b.quiet()
        assert b.read_list() == [(0, 6), (whole, 6 - whole)]
        assert b.taken_indices() == list(range(6))
        assert len(b.pulses["error"]) == 1

    run_bench(scenario, data_width=data_width, beat_valid=0.7, o_ready=0.6)


def test_bus_error_on_a_recheck_read():
    """A recheck's read that fails: ``error`` and ``nothing_found`` both pulse, once, in
    the error beat's cycle."""

    async def scenario(b):
        b.fail_after[0] = 2
        b.recheck()
        await b.quiet()
        assert b.read_list() == [(0, 8)]
        assert b.pulses["error"] == b.pulses["nothing_found"]
        assert len(b.pulses["error"]) == 1

    run_bench(scenario)


# ---- enable and ring_size -----------------------------------------------------------------------
def test_no_read_while_disabled():
    """``enable`` = 0 with descriptors posted up to the tail: no read; the read at
    position 0 starts in the very cycle ``enable`` rises (its size kept up to date)."""

    async def scenario(b):
        for index in range(3):
            b.post(index)
        b.inputs.update(enable=0, tail=3)
        await b.run(50)
        assert b.reads == [] and b.seen["idle"]
        b.inputs["enable"] = 1
        enabled = b.cycle
        await b.quiet()
        assert b.read_list() == [(0, 3)]
        assert b.reads[0].cycle == enabled
        assert b.taken_indices() == [0, 1, 2]

    run_bench(scenario)


def test_a_kick_while_disabled_waits_for_enable():
    """A poll (kick at the tail) while ``enable`` = 0 is kept: no read until enabled, then
    the poll's read, up to the ring's end or PREFETCH."""

    async def scenario(b):
        for index in range(3):
            b.post(index)  # handed over without a doorbell: the tail stays at 0
        b.inputs.update(enable=0, tail=0, prefetch=8)
        b.kick()
        await b.run(50)
        assert b.reads == []
        b.inputs["enable"] = 1
        await b.quiet()
        assert b.read_list() == [(0, 8)]
        assert b.taken_indices() == [0, 1, 2]

    run_bench(scenario)


def test_no_read_with_ring_size_zero():
    """RING_SIZE 0: no read, neither for a kick nor for a recheck (answered at once). With
    a size and a kick the poll reads the whole ring."""

    async def scenario(b):
        b.inputs.update(ring_size=0, tail=0)
        await b.run(5)
        b.kick()
        await b.run(20)
        b.recheck()
        strobe = b.cycle
        await b.run(20)
        assert b.reads == []
        assert b.pulses["nothing_found"] == [strobe + 1]
        b.post(0)
        b.inputs["ring_size"] = 4
        await b.run(3)
        b.kick()
        await b.quiet()
        assert b.read_list() == [(0, 4)]
        assert b.taken_indices() == [0]

    run_bench(scenario)


# ---- reset --------------------------------------------------------------------------------------
def test_reset_while_idle_empties_the_store_and_rewinds():
    """A ResetInserter-wrapped walker, idle with 3 descriptors in its store (index 1 on
    ``o``) and stalled on descriptor 4: after a one-cycle reset ``o`` is empty, the stall is
    gone and the next read starts at position 0; ``o`` then starts at index 0."""

    async def scenario(b):
        for index in range(4):
            b.post(index)
        b.inputs.update(tail=6)
        b.o_ready = 0.0
        await b.quiet()
        assert b.read_list() == [(0, 6)]  # 0..3 stored, 4 without own: stalled
        b.o_ready = 1.0
        await b.step()
        b.o_ready = 0.0
        await b.run(10)
        assert b.taken_indices() == [0]
        assert b.get(b.walker.o.valid) and b.get(b.walker.o.p.index) == 1
        b.inputs["tail"] = 3
        b.reset()
        await b.step()
        assert not b.get(b.walker.o.valid)
        b.o_ready = 1.0
        await b.quiet()
        assert b.read_list() == [(0, 6), (0, 3)]
        assert b.taken_indices() == [0, 0, 1, 2]

    run_bench(scenario, with_reset=True)


# ---- write-backs --------------------------------------------------------------------------------
def run_writebacks(*, data_width, data_first, seed, count=40, ready=0.6, valid=0.7):
    """Hands the walker ``count`` random write-backs (payload held until taken, random
    gaps) with random ready on ``write`` and ``write_data``; returns the requests and the
    cycle-stamped handshakes: ``("cmd", cycle, addr, length)``, ``("beat", cycle, data,
    count, last)``, ``("taken", cycle, i)``."""
    rng = random.Random(seed)
    walker = DescriptorWalker(
        max_prefetch=4, data_width=data_width, addr_width=32, fields=FIELDS, data_first=data_first
    )
    requests = [
        (rng.randrange(MAX_RING), rng.getrandbits(128), rng.random() < 0.5) for _ in range(count)
    ]
    events = []

    async def bench(ctx):
        ctx.set(walker.ring_base, RING_BASE)
        ctx.set(walker.ring_size, MAX_RING)
        pending = deque(enumerate(requests))
        cycle = 0
        while pending and cycle < 40 * count:
            number, (index, value, stamped) = pending[0]
            offer = ctx.get(walker.writeback.valid) or rng.random() < valid
            ctx.set(walker.writeback.valid, offer)
            ctx.set(walker.writeback.p.index, index)
            ctx.set(walker.writeback.p.desc.as_value(), value)
            ctx.set(walker.writeback.p.stamped, stamped)
            ctx.set(walker.write.ready, rng.random() < ready)
            ctx.set(walker.write_data.ready, rng.random() < ready)
            if not offer:
                for port in (walker.write, walker.write_data):
                    assert not ctx.get(port.valid), "a write-back output without a request"
            if ctx.get(walker.write.valid) and ctx.get(walker.write.ready):
                events.append(
                    ("cmd", cycle, ctx.get(walker.write.p.addr), ctx.get(walker.write.p.length))
                )
            beat = walker.write_data
            if ctx.get(beat.valid) and ctx.get(beat.ready):
                events.append(
                    (
                        "beat",
                        cycle,
                        ctx.get(beat.p.data),
                        ctx.get(beat.p.count),
                        ctx.get(beat.p.last),
                    )
                )
            if offer and ctx.get(walker.writeback.ready):
                events.append(("taken", cycle, number))
                pending.popleft()
            await ctx.tick()
            cycle += 1
        assert not pending, "write-backs not taken"

    sim = Simulator(walker)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return requests, events


@pytest.mark.parametrize("data_first", [False, True], ids=["command_first", "data_first"])
@pytest.mark.parametrize("data_width", [32, 64])
def test_writebacks_write_the_descriptor_at_its_ring_entry(data_width, data_first):
    """Each write-back handed to the walker becomes one write at its ring entry: 12 bytes
    at +4 (words 1..3, ``own`` in the last word), or all 16 at +0 when stamped; its beats
    carry the descriptor's bytes from that offset, the last beat's count ends the write.
    The command goes before its first beat (or, with ``data_first``, after its last); the
    request is taken in the cycle of the last of the two, and not before."""
    beat_bytes = data_width // 8
    requests, events = run_writebacks(data_width=data_width, data_first=data_first, seed=data_width)
    taken = [e for e in events if e[0] == "taken"]
    assert [e[2] for e in taken] == list(range(len(requests)))
    start = 0
    for (index, value, stamped), (_, taken_cycle, _) in zip(requests, taken, strict=True):
        mine = [e for e in events if e[0] != "taken" and start <= e[1] <= taken_cycle]
        start = taken_cycle + 1
        commands = [e for e in mine if e[0] == "cmd"]
        beats = [e for e in mine if e[0] == "beat"]
        offset = 0 if stamped else 4
        length = 16 - offset
        assert [(c[2], c[3]) for c in commands] == [(RING_BASE + 16 * index + offset, length)]
        n_beats = -(-length // beat_bytes)
        assert len(beats) == n_beats
        image = value.to_bytes(16, "little")
        written = b"".join(b[2].to_bytes(beat_bytes, "little") for b in beats)
        assert written[:length] == image[offset:]
        assert [b[3] for b in beats] == [beat_bytes] * (n_beats - 1) + [
            length - (n_beats - 1) * beat_bytes
        ]
        assert [b[4] for b in beats] == [0] * (n_beats - 1) + [1]
        if data_first:
            assert all(b[1] < commands[0][1] for b in beats)
            assert commands[0][1] == taken_cycle
        else:
            assert all(b[1] > commands[0][1] for b in beats)
            assert beats[-1][1] == taken_cycle


@pytest.mark.parametrize("data_first", [False, True], ids=["command_first", "data_first"])
def test_writeback_with_ready_outputs_takes_one_cycle_per_transfer(data_first):
    """With the writer always ready, a write-back of n beats takes n + 1 cycles back to
    back: command then beats (a writer's order), or beats then command (a queue's)."""
    requests, events = run_writebacks(
        data_width=32, data_first=data_first, seed=5, count=6, ready=1.0, valid=1.0
    )
    kinds = [e[0] for e in events if e[0] != "taken"]
    cycles = [e[1] for e in events if e[0] != "taken"]
    assert cycles == list(range(len(cycles)))  # no idle cycle
    per_request = []
    for _, _, stamped in requests:
        beats = 4 if stamped else 3
        per_request += ["beat"] * beats + ["cmd"] if data_first else ["cmd"] + ["beat"] * beats
    assert kinds == per_request


# ---- parameters ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(max_prefetch=0), "max_prefetch must be an integer in 1..16, not 0"),
        (dict(max_prefetch=17), "max_prefetch must be an integer in 1..16, not 17"),
        (dict(max_prefetch=4.0), "max_prefetch must be an integer in 1..16, not 4.0"),
        (dict(data_width=16), "data_width must be 32 or 64, not 16"),
        (dict(data_width=128), "data_width must be 32 or 64, not 128"),
        (dict(fields=("addr", "buffer")), "Descriptor has no field 'buffer'"),
    ],
)
def test_bad_parameters_are_rejected(options, message):
    """max_prefetch outside 1..16 (or not an integer), a data width other than 32 or 64
    and a field the Descriptor does not have raise ValueError."""
    kwargs = dict(max_prefetch=4, data_width=32, addr_width=32, fields=FIELDS) | options
    with rejected(ValueError, re.escape(message)):
        DescriptorWalker(**kwargs)
