"""TxDmaChannel in Amaranth's simulator: a descriptor ring in AxiMemory, a driver model
posting frames and ringing the doorbell, and byte-exact checks of the stream to the FIFO,
the write-backs, the rest of memory, the events, the counters and the error paths."""

import random
from collections import deque

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator
from axi_model import AxiMemory, StreamSink
from unbuilt import rejected

from macdma.hdl.bus.axi4 import RESP_SLVERR
from macdma.hdl.dma.channel import ERROR_CODES
from macdma.hdl.dma.tx_channel import TxDmaChannel

RING_BASE = 0x0100
DATA_LO = 0x1400
MEM_SIZE = 1 << 16
OWN = 1 << 31


def word3(length, *, sop, eop, ioc=0, own=1):
    return length | ioc << 24 | sop << 28 | eop << 29 | own << 31


class Bench:
    """DUT, a shared memory behind the read and write halves, a sink on ``o`` and an event
    recorder; ``expected`` mirrors what memory must hold (driver writes + checked write-backs).
    """

    def __init__(
        self,
        *,
        data_width=32,
        ring_size=16,
        seed=0,
        latency=2,
        ready_prob=0.8,
        valid_prob=0.8,
        out_ready_prob=0.8,
        cap=4,
        max_prefetch=8,
    ):
        self.dut = dut = TxDmaChannel(data_width=data_width, max_prefetch=max_prefetch)
        self.rng = random.Random(seed)
        self.rd = AxiMemory(
            dut.axi_read,
            data_width=data_width,
            size=MEM_SIZE,
            latency=latency,
            ready_prob=ready_prob,
            valid_prob=valid_prob,
            seed=seed + 10,
        )
        self.wr = AxiMemory(
            dut.axi_write,
            data_width=data_width,
            size=MEM_SIZE,
            latency=latency,
            ready_prob=ready_prob,
            valid_prob=valid_prob,
            seed=seed + 20,
        )
        self.wr.mem = self.mem = self.rd.mem
        self.mem[:] = self.rng.randbytes(MEM_SIZE)
        # The driver initialises its ring with every descriptor owned by itself.
        for slot in range(ring_size):
            base = RING_BASE + 16 * slot + 12
            self.mem[base + 3] &= 0x7F
        self.expected = bytearray(self.mem)
        self.rd.monitor.cap = self.wr.monitor.cap = cap
        self.cap = cap
        self.ring_size = ring_size
        self.sink = StreamSink(
            dut.o,
            {n: getattr(dut.o.p, n) for n in ("data", "count", "last", "error")},
            ready_prob=out_ready_prob,
            seed=seed + 30,
        )
        self.events = {"desc_done": 0, "desc_ioc": 0, "frame_done": 0, "error": 0}
        self.alloc = DATA_LO
        self.posted = {}  # slot -> (length, word3) awaiting write-back
        self.ioc_posted = 0
        self.cycles = 0

    # ---- memory / driver model -----------------------------------------------------------
    def fragment(self, length, *, cross_page=False):
        """Allocate a fragment at an odd-ish address (optionally straddling a 4 KiB page)."""
        if cross_page:
            page_end = (self.alloc // 4096 + 1) * 4096
            addr = page_end - self.rng.randint(1, min(length, 64)) if length > 1 else page_end - 1
            if length == 1:
                addr = page_end - 1
        else:
            addr = self.alloc + self.rng.randint(0, 7)
        if addr + length + 16 > MEM_SIZE:
            self.alloc = DATA_LO
            return self.fragment(length, cross_page=cross_page)
        self.alloc = addr + length + self.rng.randint(1, 9)
        return addr

    def write_desc(self, slot, addr, w3, length=None):
        base = RING_BASE + 16 * slot
        raw = b"".join(
            v.to_bytes(4, "little")
            for v in (addr, self.rng.getrandbits(32), self.rng.getrandbits(32), w3)
        )
        self.mem[base : base + 16] = raw
        self.expected[base : base + 16] = raw

    def post(self, slot, addr, length, *, sop, eop, ioc=0, own=1):
        w3 = word3(length, sop=sop, eop=eop, ioc=ioc, own=own)
        self.write_desc(slot, addr, w3)
        self.posted[slot] = (length, w3)
        self.ioc_posted += ioc
        return w3

    def set_own(self, slot):
        length, w3 = self.posted[slot]
        w3 |= OWN
        self.posted[slot] = (length, w3)
        base = RING_BASE + 16 * slot + 12
        self.mem[base : base + 4] = w3.to_bytes(4, "little")
        self.expected[base : base + 4] = w3.to_bytes(4, "little")

    def reap(self, slot):
        """The descriptor at ``slot`` was completed: check and accept its write-back."""
        length, w3 = self.posted.pop(slot)
        base = RING_BASE + 16 * slot
        want = length.to_bytes(4, "little") + bytes(4) + (w3 & ~OWN).to_bytes(4, "little")
        assert bytes(self.mem[base + 4 : base + 16]) == want, f"write-back of slot {slot}"
        self.expected[base + 4 : base + 16] = want

    def check_memory(self):
        if self.mem != self.expected:
            diff = [i for i in range(MEM_SIZE) if self.mem[i] != self.expected[i]]
            raise AssertionError(f"memory changed at {[hex(a) for a in diff[:16]]}")

    def frames_out(self):
        frames, current, err = [], bytearray(), False
        w = self.dut.data_width // 8
        for _, beat in self.sink.beats:
            current += beat["data"].to_bytes(w, "little")[: beat["count"]]
            err |= bool(beat["error"])
            if beat["last"]:
                frames.append((bytes(current), err))
                current, err = bytearray(), False
        return frames, bytes(current)

    def bursts(self):
        return len(self.rd.monitor.bursts) + len(self.wr.monitor.bursts)

    def fragment_read_bursts(self):
        """Read bursts outside the descriptor ring: what TX_BURSTS counts."""
        hi = RING_BASE + 16 * self.ring_size
        return sum(1 for b in self.rd.monitor.bursts if not RING_BASE <= b.addr < hi)

    def desc_read_bursts(self):
        hi = RING_BASE + 16 * self.ring_size
        return sum(1 for b in self.rd.monitor.bursts if RING_BASE <= b.addr < hi)

    # ---- simulation helpers -----------------------------------------------------------------
    async def tick(self, ctx, n=1):
        for _ in range(n):
            await ctx.tick()
            self.cycles += 1

    async def setup(self, ctx, *, prefetch=4, poll_us=0, run=1, clk_mhz=5):
        d = self.dut
        ctx.set(d.regs.ring_base, RING_BASE)
        ctx.set(d.regs.ring_size, self.ring_size)
        ctx.set(d.regs.burst_beats, self.cap)
        ctx.set(d.regs.prefetch, prefetch)
        ctx.set(d.regs.poll_us, poll_us)
        ctx.set(d.sys_clk_mhz, clk_mhz)
        ctx.set(d.regs.ctrl.run, run)
        await self.tick(ctx)

    async def doorbell(self, ctx, tail):
        ctx.set(self.dut.regs.tail, tail)
        ctx.set(self.dut.regs.tail_written, 1)
        await self.tick(ctx)
        ctx.set(self.dut.regs.tail_written, 0)

    async def channel_reset(self, ctx):
        """CTRL.reset as a driver does it: the strobe, then STATUS.resetting polled until
        0 (a fragment read drained, a write-back already on the bus landed); returns the
        cycles it stayed 1."""
        ctx.set(self.dut.regs.ctrl.reset, 1)
        await self.tick(ctx)
        ctx.set(self.dut.regs.ctrl.reset, 0)
        assert ctx.get(self.dut.regs.status.resetting), "STATUS.resetting not set by CTRL.reset"
        busy = 0
        while ctx.get(self.dut.regs.status.resetting):
            busy += 1
            assert busy < 5000, "STATUS.resetting never cleared"
            await self.tick(ctx)
        return busy

    async def wait_for(self, ctx, cond, limit=20000, what="condition"):
        for _ in range(limit):
            if cond():
                return
            await self.tick(ctx)
        raise AssertionError(f"timeout waiting for {what} (head={ctx.get(self.dut.regs.head)})")

    async def record_events(self, ctx):
        e = self.dut.events
        names = list(self.events)
        while True:
            _, _, *values = await ctx.tick().sample(*(getattr(e, n) for n in names))
            for name, value in zip(names, values, strict=True):
                self.events[name] += value

    def run(self, testbench):
        sim = Simulator(self.dut)
        sim.add_clock(1e-8)
        sim.add_process(self.rd.run)
        sim.add_process(self.wr.run)
        sim.add_process(self.sink.run)
        sim.add_process(self.record_events)
        sim.add_testbench(testbench)
        sim.run()


def make_frames(bench, specs):
    """``specs``: list of lists of fragment lengths. Returns [(frame bytes, [(addr, len)])]."""
    frames = []
    for lengths in specs:
        frags = []
        for n in lengths:
            addr = bench.fragment(n, cross_page=bench.rng.random() < 0.2)
            frags.append((addr, n))
        data = b"".join(bytes(bench.mem[a : a + n]) for a, n in frags)
        frames.append((data, frags))
    return frames


async def stream_frames(bench, ctx, frames, *, ioc_prob=0.3):
    """Driver loop: post whole frames when the ring has room, ring the doorbell, reap."""
    dut, size = bench.dut, bench.ring_size
    pending = deque(frames)
    inflight = deque()
    tail = 0
    spins = 0
    while pending or inflight:
        head = ctx.get(dut.regs.head)
        while inflight and inflight[0] != head:
            bench.reap(inflight.popleft())
        if pending and size - 1 - len(inflight) >= len(pending[0][1]):
            _, frags = pending.popleft()
            for k, (addr, n) in enumerate(frags):
                ioc = int(bench.rng.random() < ioc_prob)
                bench.post(tail, addr, n, sop=k == 0, eop=k == len(frags) - 1, ioc=ioc)
                inflight.append(tail)
                tail = (tail + 1) % size
            await bench.doorbell(ctx, tail)
            spins = 0
        else:
            await bench.tick(ctx)
            spins += 1
            assert spins < 20000, f"channel hung at head={head}, tail={tail}"
        assert not ctx.get(dut.regs.status.halted), (
            f"halted with code {ctx.get(dut.regs.status.error_code)}"
        )


SPECS_MIXED = [
    [60],
    [1],
    [1514],
    [3, 1, 2],
    [17] * 16,
    [100, 1414],
    [7, 300, 5, 64],
    [1, 1, 1, 1, 1],
    [33, 900],
    [250] * 6,
    [9],
]


@pytest.mark.parametrize("data_width", [32, 64])
def test_frames_ring_wrap_and_memory_guard(data_width):
    """Frames of 1..16 fragments, odd addresses, 4 KiB crossings, random back-pressure, a
    ring of 23 that wraps several times; output bytes, write-backs, untouched memory,
    events and counters all exact; the bus monitor enforces the burst cap."""
    bench = Bench(data_width=data_width, ring_size=23, seed=data_width)
    frames = make_frames(bench, SPECS_MIXED * 2)
    n_desc = sum(len(f[1]) for f in frames)
    final_head = []

    async def testbench(ctx):
        dut = bench.dut
        # Configured and doorbell rung, but run=0: nothing happens.
        await bench.setup(ctx, run=0, prefetch=4)
        bench.post(0, *frames[0][1][0], sop=1, eop=1)
        await bench.doorbell(ctx, 1)
        await bench.tick(ctx, 50)
        assert bench.bursts() == 0 and not bench.sink.beats
        bench.posted.clear()
        # Take that doorbell back with a reset, then really start.
        await bench.channel_reset(ctx)
        ctx.set(dut.regs.ctrl.run, 1)
        await bench.tick(ctx, 30)
        assert bench.bursts() == 0
        bench.expected[:] = bench.mem  # the unused post above
        await stream_frames(bench, ctx, frames)
        await bench.tick(ctx, 40)
        final_head.append(ctx.get(dut.regs.head))
        assert ctx.get(dut.regs.status.running) and not ctx.get(dut.regs.status.halted)
        assert ctx.get(dut.regs.frames) == len(frames)
        assert ctx.get(dut.regs.bytes) == sum(len(f[0]) for f in frames)
        assert ctx.get(dut.regs.desc_fetched) >= n_desc
        assert ctx.get(dut.regs.bursts) == bench.fragment_read_bursts()

    bench.run(testbench)
    got, rest = bench.frames_out()
    assert rest == b""
    assert got == [(f[0], False) for f in frames]
    assert final_head == [n_desc % 23]
    assert bench.events["desc_ioc"] == bench.ioc_posted > 0
    assert bench.events["desc_done"] == n_desc
    assert bench.events["frame_done"] == len(frames)
    assert bench.events["error"] == 0
    bench.check_memory()


def run_batch(prefetch, seed=5):
    """All descriptors posted at once, one doorbell; returns (bench, frames)."""
    bench = Bench(ring_size=32, seed=seed, cap=16, ready_prob=1.0, valid_prob=1.0)
    frames = make_frames(bench, [[5, 70], [1], [40] * 4, [200], [3, 3, 3], [1514], [9, 8, 7]])
    slots = []

    async def testbench(ctx):
        await bench.setup(ctx, prefetch=prefetch)
        slot = 0
        for _, frags in frames:
            for k, (addr, n) in enumerate(frags):
                bench.post(slot, addr, n, sop=k == 0, eop=k == len(frags) - 1, ioc=1)
                slots.append(slot)
                slot += 1
        await bench.doorbell(ctx, slot)
        await bench.wait_for(ctx, lambda: ctx.get(bench.dut.regs.head) == slot, what="ring drained")
        await bench.tick(ctx, 20)
        for s in slots:
            bench.reap(s)

    bench.run(testbench)
    bench.check_memory()
    return bench, frames


def test_prefetch_1_and_4_same_result_fewer_descriptor_bursts():
    b1, frames = run_batch(1)
    b4, _ = run_batch(4)
    want = [(f[0], False) for f in frames]
    assert b1.frames_out() == (want, b"") and b4.frames_out() == (want, b"")
    assert b1.mem == b4.mem
    n_desc = sum(len(f[1]) for f in frames)
    assert b1.desc_read_bursts() == n_desc
    assert b4.desc_read_bursts() == (n_desc + 3) // 4
    assert b1.events["desc_ioc"] == b4.events["desc_ioc"] == n_desc
    # Performance guard: the channel adds only a few cycles per descriptor.
    assert b4.cycles < sum(len(f[0]) for f in frames) // 4 + 40 * n_desc


def test_not_owned_stops_until_doorbell_and_bad_tail():
    bench = Bench(ring_size=8, seed=3)
    frames = make_frames(bench, [[10, 20], [30, 5], [44], [1, 2]])

    async def testbench(ctx):
        dut = bench.dut
        await bench.setup(ctx, prefetch=8)
        # Slots 0..5; slot 2 (SOP of the second frame) is posted without own.
        flat = [(i, f) for _, f in frames[:3] for i in range(len(f))]
        for slot, (i, frags) in enumerate(flat):
            addr, n = frags[i]
            bench.post(slot, addr, n, sop=i == 0, eop=i == len(frags) - 1, own=slot != 2)
        await bench.doorbell(ctx, 5)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == 2, what="head 2")
        await bench.tick(ctx, 20)
        reads = bench.bursts()
        await bench.tick(ctx, 300)
        assert ctx.get(dut.regs.head) == 2 and bench.bursts() == reads, "no activity while stalled"
        assert len(bench.frames_out()[0]) == 1
        bench.reap(0)
        bench.reap(1)
        # A bad doorbell is ignored and flagged.
        await bench.doorbell(ctx, 8)
        await bench.tick(ctx, 50)
        assert (
            ctx.get(dut.regs.status.bad_tail)
            and ctx.get(dut.regs.head) == 2
            and bench.bursts() == reads
        )
        # Hand it over and ring the (same) tail again: the channel re-fetches and goes on.
        bench.set_own(2)
        await bench.doorbell(ctx, 5)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == 5, what="head 5")
        await bench.tick(ctx, 20)
        for s in (2, 3, 4):
            bench.reap(s)
        # The last frame wraps the ring: slots 5, 6 then doorbell with tail 7; then 7, 0.
        a, n = frames[3][1][0]
        bench.post(5, a, n, sop=1, eop=0)
        a, n = frames[3][1][1]
        bench.post(6, a, n, sop=0, eop=1)
        await bench.doorbell(ctx, 7)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == 7, what="head 7")
        await bench.tick(ctx, 20)
        bench.reap(5)
        bench.reap(6)

    bench.run(testbench)
    got, rest = bench.frames_out()
    assert rest == b""
    assert got == [(f[0], False) for f in frames]
    bench.check_memory()


def test_poll_rechecks_own_without_doorbell():
    bench = Bench(ring_size=8, seed=4, cap=16)  # one read burst per descriptor fetch
    frames = make_frames(bench, [[11, 12], [13], [14]])

    async def testbench(ctx):
        dut = bench.dut
        # Poll off: a stall stays a stall.
        await bench.setup(ctx, prefetch=2, poll_us=0, clk_mhz=5)
        (a0, n0), (a1, n1) = frames[0][1]
        bench.post(0, a0, n0, sop=1, eop=0, own=0)
        bench.post(1, a1, n1, sop=0, eop=1, own=0)
        await bench.doorbell(ctx, 2)
        await bench.tick(ctx, 100)
        reads = bench.bursts()
        assert reads == 1 and ctx.get(dut.regs.head) == 0
        bench.set_own(0)
        bench.set_own(1)
        await bench.tick(ctx, 200)
        assert bench.bursts() == reads and ctx.get(dut.regs.head) == 0
        # Poll every 3 µs at 5 MHz: picked up without a doorbell.
        ctx.set(dut.regs.poll_us, 3)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == 2, limit=200, what="poll")
        await bench.tick(ctx, 20)
        bench.reap(0)
        bench.reap(1)
        # HEAD == TAIL and no doorbell at all: the poll still finds newly posted work.
        a, n = frames[1][1][0]
        bench.post(2, a, n, sop=1, eop=1)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == 3, limit=200, what="poll 2")
        await bench.tick(ctx, 20)
        bench.reap(2)
        # While nothing is owned the poll re-reads the descriptor at HEAD periodically.
        a, n = frames[2][1][0]
        bench.post(3, a, n, sop=1, eop=1, own=0)
        before = len(bench.rd.monitor.bursts)
        await bench.tick(ctx, 100)  # 100 cycles = 20 µs: about 6 polls
        polls = len(bench.rd.monitor.bursts) - before
        assert 4 <= polls <= 8, polls
        assert ctx.get(dut.regs.head) == 3 and not bench.sink.beats[-1][1]["error"]
        bench.set_own(3)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == 4, limit=200, what="poll 3")
        await bench.tick(ctx, 20)
        bench.reap(3)

    bench.run(testbench)
    assert bench.frames_out() == ([(f[0], False) for f in frames], b"")
    bench.check_memory()


async def recover_and_send(bench, ctx, frames):
    """Channel reset, then frames from slot 0 go out normally."""
    dut = bench.dut
    await bench.channel_reset(ctx)
    await bench.tick(ctx)
    assert (
        not ctx.get(dut.regs.status.halted)
        and ctx.get(dut.regs.status.error_code) == 0
        and ctx.get(dut.regs.head) == 0
    )
    assert ctx.get(dut.regs.status.running)
    bench.posted.clear()
    bench.expected[:] = bench.mem  # the state at the halt was checked by the caller
    slot = 0
    for _, frags in frames:
        for k, (addr, n) in enumerate(frags):
            bench.post(slot, addr, n, sop=k == 0, eop=k == len(frags) - 1)
            slot += 1
    await bench.doorbell(ctx, slot)
    await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == slot, what="recovery")
    await bench.tick(ctx, 20)
    for s in range(slot):
        bench.reap(s)


def test_zero_length_halts_and_reset_recovers():
    bench = Bench(ring_size=8, seed=6)
    frames = make_frames(bench, [[25], [10, 99], [8, 9]])
    after = {}

    async def testbench(ctx):
        dut = bench.dut
        await bench.setup(ctx, prefetch=4)
        (a, n) = frames[0][1][0]
        bench.post(0, a, n, sop=1, eop=1)
        bench.post(1, frames[1][1][0][0], 10, sop=1, eop=0)
        bench.post(2, frames[1][1][1][0], 0, sop=0, eop=1)  # zero length
        await bench.doorbell(ctx, 3)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.status.halted), what="halt")
        await bench.tick(ctx, 10)
        assert ctx.get(dut.regs.status.error_code) == ERROR_CODES["ZERO_LENGTH_DESC"]
        assert ctx.get(dut.regs.head) == 2 and not ctx.get(dut.regs.status.running)
        bench.reap(0)
        bench.reap(1)
        bench.check_memory()
        bursts = bench.bursts()
        await bench.tick(ctx, 200)
        assert bench.bursts() == bursts, "halted channel touched memory"
        after["events"] = dict(bench.events)
        after["frames"] = bench.frames_out()
        await recover_and_send(bench, ctx, frames[2:])

    bench.run(testbench)
    frames_seen, rest = after["frames"]
    # The open frame (first fragment already sent) is closed with an error beat.
    assert frames_seen == [(frames[0][0], False), (frames[1][0][:10], True)] and rest == b""
    assert after["events"]["error"] == 1 and after["events"]["desc_done"] == 2
    got, rest = bench.frames_out()
    assert got[2:] == [(frames[2][0], False)] and rest == b""
    bench.check_memory()


@pytest.mark.parametrize("where", ["desc_fetch", "data_read", "write_back"])
def test_bus_errors_halt_and_reset_recovers(where):
    """Frame A (2 fragments) goes out; frame B (3 fragments) hits SLVERR at its second
    fragment (descriptor 3): in the fetch of descriptor 3, in its data or in its write-back."""
    bench = Bench(ring_size=8, seed=7)
    frames = make_frames(bench, [[30, 41], [50, 333, 7], [77], [12, 13]])
    code = {
        "desc_fetch": "DESC_FETCH_BUS_ERROR",
        "data_read": "DATA_READ_BUS_ERROR",
        "write_back": "WRITEBACK_BUS_ERROR",
    }[where]
    seen = {}

    async def testbench(ctx):
        dut = bench.dut
        await bench.setup(ctx, prefetch=1)
        slot = 0
        for _, frags in frames[:2]:
            for k, (addr, n) in enumerate(frags):
                bench.post(slot, addr, n, sop=k == 0, eop=k == len(frags) - 1, ioc=1)
                slot += 1
        d3 = RING_BASE + 16 * 3
        if where == "desc_fetch":
            bench.rd.errors = [(d3 + 8, d3 + 12, RESP_SLVERR)]
        elif where == "data_read":
            addr, n = frames[1][1][1]
            bench.rd.errors = [(addr + 200, addr + 201, RESP_SLVERR)]
        else:
            bench.wr.errors = [(d3 + 4, d3 + 16, RESP_SLVERR)]
        await bench.doorbell(ctx, slot)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.status.halted), what="halt")
        await bench.tick(ctx, 10)
        assert ctx.get(dut.regs.status.error_code) == ERROR_CODES[code]
        assert ctx.get(dut.regs.head) == 3 and not ctx.get(dut.regs.status.running)
        for s in range(3):
            bench.reap(s)
        bench.check_memory()  # descriptor 3 keeps own; nothing else written
        bursts = bench.bursts()
        await bench.tick(ctx, 200)
        assert bench.bursts() == bursts, "halted channel touched memory"
        seen["events"] = dict(bench.events)
        seen["frames"] = bench.frames_out()
        seen["error_beats"] = [b for _, b in bench.sink.beats if b["error"]]
        bench.rd.errors = bench.wr.errors = []
        await recover_and_send(bench, ctx, frames[2:])

    bench.run(testbench)
    (fa, ok_a), (fb, err_b) = seen["frames"][0]
    assert (fa, ok_a) == (frames[0][0], False)
    assert err_b and seen["frames"][1] == b""
    # Exactly one beat ends the broken frame: count=0, last=1, error=1.
    assert seen["error_beats"] == [{"data": 0, "count": 0, "last": 1, "error": 1}]
    frag0 = frames[1][1][0][1]
    sent = {"desc_fetch": frag0, "data_read": None, "write_back": frag0 + 333}[where]
    if sent is None:
        assert frag0 <= len(fb) < frag0 + 333
        assert fb == frames[1][0][: len(fb)]
    else:
        assert fb == frames[1][0][:sent]
    assert seen["events"]["error"] == 1
    assert seen["events"]["desc_done"] == 3 and seen["events"]["frame_done"] == 1
    got, rest = bench.frames_out()
    assert got[2:] == [(f[0], False) for f in frames[2:]] and rest == b""
    bench.check_memory()


@pytest.mark.parametrize("data_width", [32, 64])
def test_verilog_export(data_width):
    assert "module" in verilog.convert(TxDmaChannel(data_width=data_width, max_prefetch=4))


def test_bad_parameters():
    with rejected(ValueError, "data_width must be 32 or 64, not 16"):
        TxDmaChannel(data_width=16)
    with rejected(ValueError, "max_prefetch must be an integer in 1..16, not 0"):
        TxDmaChannel(max_prefetch=0)


def test_reset_waits_for_the_writeback_on_the_bus():
    """CTRL.reset while a descriptor write-back crawls over a slow bus: STATUS.resetting
    stays 1 until it has landed, and after it reads 0 the channel writes nothing more, so
    a driver re-posting that slot cannot have its new descriptor overwritten by the old
    write-back."""
    bench = Bench(ring_size=8, seed=12, latency=8, ready_prob=0.15, valid_prob=1.0)
    frames = make_frames(bench, [[40]])

    async def testbench(ctx):
        dut = bench.dut
        await bench.setup(ctx, prefetch=1)
        bench.post(0, *frames[0][1][0], sop=1, eop=1)
        await bench.doorbell(ctx, 1)
        await bench.wait_for(ctx, lambda: ctx.get(dut.axi_write.wvalid), what="write-back")
        ctx.set(dut.regs.ctrl.run, 0)
        busy = await bench.channel_reset(ctx)
        assert busy > 1, "the reset did not wait for the write-back on the bus"
        landed = bytes(bench.mem)
        for _ in range(300):
            assert not ctx.get(dut.axi_write.awvalid) and not ctx.get(dut.axi_write.wvalid)
            await bench.tick(ctx)
        assert bytes(bench.mem) == landed, "the write-back landed after STATUS.resetting = 0"

    bench.run(testbench)


def test_reset_mid_fetch_waits_for_the_read_and_forgets_the_batch():
    """CTRL.reset while a descriptor read crawls over a slow bus: STATUS.resetting stays 1
    until the read's last beat is in, and the reset forgets what it read: nothing of it
    is sent or written back, HEAD and the latched tail are 0, and nothing is read again
    without a doorbell. Posted again, the frames go out once each."""
    bench = Bench(ring_size=8, seed=21, latency=6, ready_prob=1.0, valid_prob=0.2)
    frames = make_frames(bench, [[60], [33], [128], [7]])

    async def testbench(ctx):
        dut = bench.dut
        await bench.setup(ctx, prefetch=4)
        for slot, (_, frags) in enumerate(frames):
            bench.post(slot, *frags[0], sop=1, eop=1)
        await bench.doorbell(ctx, len(frames))
        await bench.wait_for(
            ctx,
            lambda: ctx.get(dut.axi_read.rvalid) and ctx.get(dut.axi_read.rready),
            what="the descriptor read's first beat",
        )
        assert bench.desc_read_bursts() >= 1 and bench.fragment_read_bursts() == 0
        ctx.set(dut.regs.ctrl.run, 0)
        busy = await bench.channel_reset(ctx)
        assert busy > 4, "the reset did not wait for the descriptor read on the bus"
        assert ctx.get(dut.regs.head) == 0
        ctx.set(dut.regs.ctrl.run, 1)
        for _ in range(300):
            assert not ctx.get(dut.axi_read.arvalid), "a read without a doorbell"
            assert not ctx.get(dut.axi_write.awvalid), "a write-back of a forgotten batch"
            await bench.tick(ctx)
        assert bench.sink.beats == [], "a descriptor of the forgotten batch was sent"
        bench.check_memory()
        await bench.doorbell(ctx, len(frames))
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.head) == len(frames), what="HEAD")
        for slot in range(len(frames)):
            bench.reap(slot)
        sent, rest = bench.frames_out()
        assert sent == [(data, False) for data, _ in frames] and rest == b""
        bench.check_memory()

    bench.run(testbench)


FLUSH_CYCLES = 24  # the SoC holds the TX FIFO's reset this long (hold, fifo_flushing)


@pytest.mark.parametrize(
    ("case", "frames_counted", "drops"),
    [
        # B's EOP write-back fails after the MAC took B whole: B left the wire intact.
        ("sent", 2, 0),
        # ... and the reset cuts B on the wire: the driver counts it sent, TX_DROPS cut.
        ("cut", 2, 1),
        # B waits in the TX FIFO and the reset flushes it: the driver's to drop.
        ("unstarted", 1, 0),
        # B's data read fails: the channel closes it with an error beat; the MAC sends
        # (or the reset cuts) it bad. Its descriptor keeps own: the driver's, never the
        # hardware's, even when it is cut.
        ("error-frame-cut", 1, 0),
    ],
)
def test_frames_the_mac_started_without_a_writeback_have_one_owner(case, frames_counted, drops):
    """Frame A lands; frame B's EOP write-back fails (its data read, for the error frame)
    and halts the channel; the driver resets it (the SoC's TX FIFO flush modelled by
    ``hold`` and ``fifo_flushing``). Once STATUS.resetting reads 0, TX_FRAMES has counted
    every frame the driver must count sent: A (written back) and B if the MAC started it
    whole, whose descriptor still has own. The driver's rule (TxQueue.recover):
    as many of its oldest unreaped frames as TX_FRAMES moved by beyond those reaped are
    sent, the rest dropped. So a frame that left the wire is never also dropped, and a
    cut frame counts once: TX_DROPS if the driver counts it sent, else the driver's."""
    bench = Bench(ring_size=8, seed=31, latency=3)
    frames = make_frames(bench, [[90], [70, 44]])

    async def testbench(ctx):
        dut = bench.dut
        await bench.setup(ctx, prefetch=1)
        slot = 0
        for _, frags in frames:
            for k, (addr, n) in enumerate(frags):
                bench.post(slot, addr, n, sop=k == 0, eop=k == len(frags) - 1)
                slot += 1
        eop_b = RING_BASE + 16 * 2
        if case == "error-frame-cut":
            addr, _ = frames[1][1][1]
            bench.rd.errors = [(addr + 20, addr + 21, RESP_SLVERR)]
        else:
            bench.wr.errors = [(eop_b + 4, eop_b + 16, RESP_SLVERR)]
        frames_before = ctx.get(dut.regs.frames)
        drops_before = ctx.get(dut.regs.drops)
        await bench.doorbell(ctx, slot)

        async def mac(event):
            ctx.set(event, 1)
            await bench.tick(ctx)
            ctx.set(event, 0)

        # The MAC takes each frame once its last beat is in the FIFO (store-and-forward).
        await bench.wait_for(ctx, lambda: len(bench.frames_out()[0]) >= 1, what="frame A")
        await mac(dut.frame_started)
        await bench.wait_for(ctx, lambda: ctx.get(dut.regs.status.halted), what="the halt")
        await bench.wait_for(ctx, lambda: len(bench.frames_out()[0]) == 2, what="frame B")
        if case != "unstarted":
            await mac(dut.frame_started)
        ctx.set(dut.regs.ctrl.reset, 1)
        await bench.tick(ctx)
        ctx.set(dut.regs.ctrl.reset, 0)
        ctx.set(dut.hold, 1)
        ctx.set(dut.fifo_flushing, 1)
        busy_in_flush = []
        for cycle in range(FLUSH_CYCLES):
            if cycle == 5 and case in ("cut", "error-frame-cut"):
                await mac(dut.frame_cut)  # the flush ends B with tx_er
            else:
                await bench.tick(ctx)
            busy_in_flush.append(ctx.get(dut.regs.status.resetting))
        ctx.set(dut.hold, 0)
        ctx.set(dut.fifo_flushing, 0)
        for _ in range(50):
            if not ctx.get(dut.regs.status.resetting):
                break
            await bench.tick(ctx)
        assert not ctx.get(dut.regs.status.resetting), "STATUS.resetting never cleared"
        counted = (ctx.get(dut.regs.frames) - frames_before) % (1 << 32)
        cut_counted = ctx.get(dut.regs.drops) - drops_before
        # What the driver reaps by own (A), then reaps as sent, then drops.
        reaped = 0 if bench.mem[RING_BASE + 15] & 0x80 else 1
        sent_unwritten = counted - reaped
        dropped = 1 - sent_unwritten
        assert reaped == 1 and bench.mem[eop_b + 15] & 0x80, "A not written back, or B's own lost"
        assert (counted, cut_counted) == (frames_counted, drops), (
            f"{case}: TX_FRAMES moved by {counted}, TX_DROPS by {cut_counted}"
        )
        # Frame B once: on the wire intact (the driver counts it sent), or lost and counted
        # by one owner (TX_DROPS for a cut frame the driver counts sent, else the driver).
        intact = case == "sent"
        assert 0 <= dropped <= 1 and intact + dropped + cut_counted == 1, (
            f"{case}: B intact {intact}, dropped by the driver {dropped}, TX_DROPS {cut_counted}"
        )
        # The driver reads TX_FRAMES once STATUS.resetting is 0: it must be final by then.
        assert all(busy_in_flush), "STATUS.resetting read 0 before the TX FIFO's flush was over"
        for _ in range(100):  # nothing moves the counters after the reset is over
            await bench.tick(ctx)
        assert ctx.get(dut.regs.frames) - frames_before == counted

    bench.run(testbench)
