"""RxDmaChannel in Amaranth's simulator against AxiMemory, with a byte-exact memory guard.

A Python driver posts descriptors straight into the model memory and keeps an *expected* copy
of the whole memory: every frame is applied to it by a reference model of the hand-off
protocol (scatter, spill, write-back words, drops, truncation). After a run the two memories
must be identical, so a stray write anywhere (outside a posted buffer, into word 0 of a
descriptor, into a dropped frame's would-be buffer) fails the test.
"""

import random
from collections import deque

import pytest
from amaranth.sim import Simulator
from axi_model import AxiMemory
from unbuilt import elaborate, rejected

from macdma.hdl.bus.axi4 import RESP_SLVERR
from macdma.hdl.dma.channel import ERROR_CODES
from macdma.hdl.dma.rx_channel import RxDmaChannel
from macdma.hdl.mac.frame import RxError

RING_BASE = 0x100
MEM_SIZE = 1 << 16


def desc_words(addr, length, ioc=0, own=1, w1=0, w2=0):
    word3 = length | ioc << 24 | own << 31
    return b"".join(x.to_bytes(4, "little") for x in (addr, w1, w2, word3))


class Harness:
    """Driver + reference model around one RxDmaChannel simulation."""

    def __init__(self, *, ring_size, data_width=32, seed=0, ready_prob=1.0, latency=0,
                 in_valid_prob=1.0, prefetch=4, burst_beats=16, poll_us=0):  # fmt: skip
        self.rng = random.Random(seed)
        self.w = data_width // 8
        self.dut = RxDmaChannel(data_width=data_width)
        self.rd = AxiMemory(self.dut.axi_read, data_width=data_width, size=MEM_SIZE,
                            latency=latency, ready_prob=ready_prob, valid_prob=ready_prob,
                            seed=seed)  # fmt: skip
        self.wr = AxiMemory(self.dut.axi_write, data_width=data_width, size=MEM_SIZE,
                            latency=latency, ready_prob=ready_prob, valid_prob=ready_prob,
                            seed=seed + 7)  # fmt: skip
        self.rd.mem[:] = self.rng.randbytes(MEM_SIZE)
        self.wr.mem = self.rd.mem  # one memory behind both halves
        self.mem = self.rd.mem
        self.exp = bytearray(self.mem)
        self.ring_size = ring_size
        self.in_valid_prob = in_valid_prob
        self.config = dict(prefetch=prefetch, burst_beats=burst_beats, poll_us=poll_us)
        self.avail = deque()  # posted descriptors in ring order: (idx, addr, length, ioc)
        self.used = 0  # descriptors written back (the expected HEAD advance)
        self.frames = 0
        self.drops = 0
        self.truncated = 0  # frames the ring ran out under (also in drops)
        self.bytes = 0
        self.events = {"desc_done": 0, "desc_ioc": 0, "frame_done": 0, "error": 0}

    # ---- driver --------------------------------------------------------------------------
    def post(self, idx, addr, length, ioc=0):
        garbage1, garbage2 = self.rng.getrandbits(32), self.rng.getrandbits(32)
        words = desc_words(addr, length, ioc, 1, garbage1, garbage2)
        at = RING_BASE + 16 * idx
        self.mem[at : at + 16] = words
        self.exp[at : at + 16] = words
        self.avail.append((idx, addr, length, ioc))

    def unpost(self, idx):
        """A slot the driver owns (own = 0), e.g. the one after the last posted."""
        at = RING_BASE + 16 * idx
        self.mem[at + 15] &= 0x7F
        self.exp[at + 15] &= 0x7F

    # ---- reference model ---------------------------------------------------------------
    def _writeback(self, idx, length, ioc, done, sop, eop, status=None):
        word2 = 0
        if eop:
            frame_len, cause, trunc, err = status
            word2 = frame_len | cause << 16 | trunc << 19 | err << 31
        word3 = length | ioc << 24 | sop << 28 | eop << 29
        at = RING_BASE + 16 * idx + 4
        self.exp[at : at + 12] = b"".join(x.to_bytes(4, "little") for x in (done, word2, word3))
        self.used += 1
        self.events["desc_done"] += 1
        self.events["desc_ioc"] += ioc
        self.events["frame_done"] += eop

    def model_frame(self, payload, error=0, overflow=0, cause=0):
        if not payload:
            return  # a lone marker beat: discarded, no descriptor used
        if not self.avail:  # lost for want of a descriptor: counted unless the FIFO cut it
            self.drops += not overflow
            return
        pos, sop = 0, 1
        while True:
            idx, addr, length, ioc = self.avail.popleft()
            part = payload[pos : pos + length]
            self.exp[addr : addr + len(part)] = part
            pos += len(part)
            self.bytes += len(part)
            if pos == len(payload):
                err = int(bool(error or overflow or cause))
                self._writeback(idx, length, ioc, len(part), sop, 1, (pos, cause, overflow, err))
                break
            if not self.avail:  # out of descriptors mid-frame: truncated EOP, a lost frame
                self._writeback(idx, length, ioc, len(part), sop, 1, (pos, cause, 1, 1))
                self.drops += not overflow
                self.truncated += 1
                break
            self._writeback(idx, length, ioc, len(part), sop, 0)
            sop = 0
        self.frames += 1

    # ---- simulation helpers --------------------------------------------------------------
    async def setup(self, ctx, run=1):
        d = self.dut
        ctx.set(d.regs.ring_base, RING_BASE)
        ctx.set(d.regs.ring_size, self.ring_size)
        ctx.set(d.regs.prefetch, self.config["prefetch"])
        ctx.set(d.regs.burst_beats, self.config["burst_beats"])
        ctx.set(d.regs.poll_us, self.config["poll_us"])
        ctx.set(d.sys_clk_mhz, 4)
        ctx.set(d.regs.ctrl.run, run)
        await ctx.tick()

    async def doorbell(self, ctx, tail):
        ctx.set(self.dut.regs.tail, tail)
        ctx.set(self.dut.regs.tail_written, 1)
        await ctx.tick()
        ctx.set(self.dut.regs.tail_written, 0)

    async def reset(self, ctx, limit=5000):
        """CTRL.reset as a driver does it: the strobe, then STATUS.resetting polled until
        0; from then on the channel has nothing on the write bus (no late data burst can
        land in a buffer the driver re-posts). Returns the cycles it read 1."""
        d = self.dut
        ctx.set(d.regs.ctrl.reset, 1)
        await ctx.tick()
        ctx.set(d.regs.ctrl.reset, 0)
        assert ctx.get(d.regs.status.resetting), "STATUS.resetting not set by CTRL.reset"
        busy_cycles = 0
        while ctx.get(d.regs.status.resetting):
            busy_cycles += 1
            if busy_cycles == limit:
                raise AssertionError(f"STATUS.resetting still 1 {limit} cycles after CTRL.reset")
            await ctx.tick()
        for _ in range(20):
            assert not ctx.get(d.axi_write.awvalid) and not ctx.get(d.axi_write.wvalid)
            await ctx.tick()
        return busy_cycles

    def beats(self, payload, error, overflow, marker_after=False, cause=0):
        w = self.w
        chunks = [payload[i : i + w] for i in range(0, len(payload), w)]
        out = [
            {"data": int.from_bytes(c, "little"), "count": len(c), "last": 0, "error": 0,
             "overflow": 0} for c in chunks
        ]  # fmt: skip
        if marker_after or not out:
            out.append({"data": 0, "count": 0, "last": 0, "error": 0, "overflow": 0})
        # The frame's cause rides in its last beat's payload (meta).
        out[-1].update(last=1, error=error, overflow=overflow, meta={"cause": RxError(cause)})
        return out

    async def send(self, ctx, payload, *, error=0, overflow=0, cause=0, marker_after=False,
                   model=True, limit=20000):  # fmt: skip
        """Drive one frame into ``i`` (blocking on ready) and update the model."""
        d = self.dut
        beats = self.beats(payload, error, overflow, marker_after, cause)
        waited = 0
        for beat in beats:
            while self.in_valid_prob < 1.0 and self.rng.random() > self.in_valid_prob:
                ctx.set(d.i.valid, 0)
                await ctx.tick()
            ctx.set(d.i.payload, beat)
            ctx.set(d.i.valid, 1)
            while True:
                _, _, ready = await ctx.tick().sample(d.i.ready)
                waited += 1
                assert waited < limit, "i not consumed"
                if ready:
                    break
        ctx.set(d.i.valid, 0)
        if model:
            self.model_frame(payload, error, overflow, cause)

    async def settle(self, ctx, limit=20000):
        """Wait until the counters match the model and the write queue is idle."""
        d = self.dut
        for _ in range(limit):
            await ctx.tick()
            counts = (ctx.get(d.regs.frames), ctx.get(d.regs.drops), ctx.get(d.regs.head))
            if counts == (self.frames, self.drops, self.used % self.ring_size):
                break
        else:
            raise AssertionError(
                f"timeout: frames {ctx.get(d.regs.frames)}/{self.frames}, drops "
                f"{ctx.get(d.regs.drops)}/{self.drops}, head {ctx.get(d.regs.head)}/{self.used}"
            )
        for _ in range(30):
            await ctx.tick()

    def check(self, ctx):
        d = self.dut
        if self.mem != self.exp:
            diffs = [i for i in range(MEM_SIZE) if self.mem[i] != self.exp[i]]
            raise AssertionError(
                f"memory differs at {len(diffs)} bytes, first {diffs[0]:#x}: "
                f"got {self.mem[diffs[0]]:#x} want {self.exp[diffs[0]]:#x}"
            )
        assert ctx.get(d.regs.frames) == self.frames
        assert ctx.get(d.regs.drops) == self.drops
        assert ctx.get(d.regs.bytes) == self.bytes
        assert ctx.get(d.regs.head) == self.used % self.ring_size
        assert ctx.get(d.regs.status.error_code) == 0 and not ctx.get(d.regs.status.halted)

    async def event_monitor(self, ctx):
        d = self.dut
        names = list(self.events)
        seen = self.seen = dict.fromkeys(names, 0)
        async for _, _, *values in ctx.tick().sample(*(getattr(d.events, n) for n in names)):
            for name, value in zip(names, values, strict=True):
                seen[name] += value

    def run(self, scenario, timeout_cycles=200000):
        sim = Simulator(self.dut)
        sim.add_clock(1e-8)
        sim.add_process(self.rd.run)
        sim.add_process(self.wr.run)
        sim.add_process(self.event_monitor)

        async def bench(ctx):
            await scenario(ctx)

        sim.add_testbench(bench)
        sim.run()


def frame_bytes(rng, n):
    return rng.randbytes(n)


def buffers(first_addr, sizes, stride_pad=8):
    """Unaligned, disjoint buffer addresses with gaps between them (for the guard)."""
    out, addr = [], first_addr
    for k, size in enumerate(sizes):
        out.append((addr + k % 4, size))
        addr += size + stride_pad + 4
    return out


LENGTHS = [60, 61, 63, 64, 65, 127, 128, 129, 255, 256, 257, 300, 1000, 1514]


@pytest.mark.parametrize(
    "size, prefetch, burst, ready_prob, data_width",
    [
        (64, 1, 16, 1.0, 32),
        (128, 4, 4, 0.7, 32),
        (256, 8, 256, 1.0, 32),
        (2048, 3, 16, 0.8, 32),
        (64, 2, 8, 0.8, 64),
        (2048, 8, 32, 1.0, 64),
    ],
)
def test_buffer_sizes(size, prefetch, burst, ready_prob, data_width):
    needed = sum(-(-n // size) for n in LENGTHS)
    ring = needed + 2
    h = Harness(ring_size=ring, prefetch=prefetch, burst_beats=burst, ready_prob=ready_prob,
                data_width=data_width,
                latency=2 if ready_prob < 1 else 0, in_valid_prob=0.8 if ready_prob < 1 else 1.0,
                seed=size)  # fmt: skip
    for idx, (addr, length) in enumerate(buffers(0x1000, [size] * needed)):
        h.post(idx, addr, length, ioc=idx % 2)
    h.unpost(needed)

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, needed)
        for k, n in enumerate(LENGTHS):
            # A few bad frames in the mix: MAC cause, FIFO overflow.
            error, overflow, cause = 0, 0, 0
            if k == 3:
                error, cause = 1, RxError.FCS.value
            if k == 9:
                error, overflow = 1, 1
            await h.send(ctx, frame_bytes(h.rng, n), error=error, overflow=overflow, cause=cause)
        await h.settle(ctx)
        h.check(ctx)
        assert h.seen["desc_done"] == h.events["desc_done"] == needed
        assert h.seen["frame_done"] == len(LENGTHS)
        assert h.seen["desc_ioc"] == h.events["desc_ioc"]
        assert h.seen["error"] == 0
        assert ctx.get(h.dut.regs.desc_fetched) >= needed
        assert ctx.get(h.dut.regs.bursts) >= len(LENGTHS)

    h.run(scenario)


def test_ring_wrap_with_repost():
    """Ring of 4, frames spilling over the wrap; the driver re-posts reaped slots."""
    ring = 4
    h = Harness(ring_size=ring, prefetch=8)
    next_addr = [0x2000]

    def new_buffer():
        addr = next_addr[0]
        next_addr[0] += 64 + 12
        return addr + (addr // 76) % 3

    for idx in range(3):
        h.post(idx, new_buffer(), 64)
    h.unpost(3)

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 3)
        tail = 3
        for n in [100, 60, 128, 70, 64, 65, 120, 60, 90]:
            await h.send(ctx, frame_bytes(h.rng, n))
            await h.settle(ctx)
            # Reap and re-post every written-back slot with a fresh buffer.
            while len(h.avail) < 3:
                h.post(tail, new_buffer(), 64)
                tail = (tail + 1) % ring
            h.unpost(tail)
            await h.doorbell(ctx, tail)
        await h.settle(ctx)
        h.check(ctx)
        assert h.used > 2 * ring

    h.run(scenario)


def test_ring_exhaustion_drops_and_recovery():
    h = Harness(ring_size=8, prefetch=2)
    for idx, (addr, length) in enumerate(buffers(0x3000, [128] * 4)):
        h.post(idx, addr, length)
    h.unpost(4)

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 4)
        for n in [60, 100, 128, 70, 90, 1514, 64]:
            await h.send(ctx, frame_bytes(h.rng, n))
        await h.settle(ctx)
        h.check(ctx)
        assert h.drops == 3 and ctx.get(h.dut.regs.drops) == 3
        # The driver posts more and rings the doorbell: later frames are delivered.
        for k, (addr, length) in enumerate(buffers(0x3400, [128] * 3)):
            h.post(4 + k, addr, length)
        h.unpost(7)
        await h.doorbell(ctx, 7)
        for n in [61, 200]:
            await h.send(ctx, frame_bytes(h.rng, n))
        await h.settle(ctx)
        h.check(ctx)
        assert ctx.get(h.dut.regs.drops) == 3 and h.frames == 6

    h.run(scenario)


def test_out_of_buffers_mid_frame_truncates():
    h = Harness(ring_size=8, prefetch=4)
    h.post(0, 0x3001, 64)
    h.post(1, 0x3101, 100)
    h.unpost(2)

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 2)
        await h.send(ctx, frame_bytes(h.rng, 300))  # 164 bytes fit, the rest is discarded
        await h.settle(ctx)
        h.check(ctx)
        word2 = int.from_bytes(h.mem[RING_BASE + 16 + 8 : RING_BASE + 16 + 12], "little")
        assert word2 == 164 | 1 << 19 | 1 << 31
        # The next frame starts clean in a new buffer.
        h.post(2, 0x3201, 256)
        h.unpost(3)
        await h.doorbell(ctx, 3)
        await h.send(ctx, frame_bytes(h.rng, 200))
        await h.settle(ctx)
        h.check(ctx)

    h.run(scenario)


def test_each_lost_frame_counts_once():
    """RX_DROPS counts frames lost for want of a descriptor (dropped whole or truncated
    mid-frame), except those the RX FIFO had already cut short (``overflow`` on the last
    beat): those are in RX_FIFO_OVERFLOWS, and counting them here too would make the
    counters add up to more frames than were sent."""
    h = Harness(ring_size=8, prefetch=4)
    h.post(0, 0x3001, 64)
    h.unpost(1)

    async def scenario(ctx):
        d = h.dut
        await h.setup(ctx)
        await h.doorbell(ctx, 1)
        await h.send(ctx, frame_bytes(h.rng, 100), error=1, overflow=1)  # FIFO-cut, truncated
        await h.settle(ctx)
        assert ctx.get(d.regs.drops) == 0
        await h.send(ctx, frame_bytes(h.rng, 90), error=1, overflow=1)  # FIFO-cut, no buffer
        await h.settle(ctx)
        assert ctx.get(d.regs.drops) == 0
        await h.send(ctx, frame_bytes(h.rng, 80))  # no buffer: dropped whole
        await h.settle(ctx)
        assert ctx.get(d.regs.drops) == 1
        h.post(1, 0x3101, 64)
        h.unpost(2)
        await h.doorbell(ctx, 2)
        await h.send(ctx, frame_bytes(h.rng, 150))  # truncated by the ring
        await h.settle(ctx)
        h.check(ctx)
        assert ctx.get(d.regs.drops) == 2 and h.truncated == 2

    h.run(scenario)


def test_bad_frames_overflow_and_markers():
    h = Harness(ring_size=16, prefetch=4)
    for idx, (addr, length) in enumerate(buffers(0x4000, [64] * 12)):
        h.post(idx, addr, length)
    h.unpost(12)

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 12)
        for cause in (RxError.PHY, RxError.ALIGNMENT, RxError.OVERSIZE, RxError.RUNT):
            await h.send(ctx, frame_bytes(h.rng, 70), error=1, cause=cause.value)
        # error=1 from the FIFO alone (cause unknown): error bit set, rx_error NONE.
        await h.send(ctx, frame_bytes(h.rng, 61), error=1)
        # Overflow: truncated frame.
        await h.send(ctx, frame_bytes(h.rng, 100), error=1, overflow=1)
        # Buffer filled exactly, then a count=0 overflow marker ends the frame: EOP there.
        await h.send(ctx, frame_bytes(h.rng, 64), error=1, overflow=1, marker_after=True)
        # A lone marker (a frame lost whole in the FIFO): no descriptor used.
        await h.send(ctx, b"", error=1, overflow=1)
        await h.send(ctx, frame_bytes(h.rng, 64))
        await h.settle(ctx)
        h.check(ctx)

    h.run(scenario)


@pytest.mark.parametrize("where", ["fetch", "data", "writeback"])
def test_bus_error_halts_and_reset_recovers(where):
    h = Harness(ring_size=8, prefetch=2)
    bufs = buffers(0x5000, [256] * 4)
    for idx, (addr, length) in enumerate(bufs):
        h.post(idx, addr, length)
    h.unpost(4)
    if where == "fetch":
        h.rd.errors = [(RING_BASE, RING_BASE + 16, RESP_SLVERR)]
        code = "DESC_FETCH_BUS_ERROR"
    elif where == "data":
        h.wr.errors = [(bufs[0][0] + 100, bufs[0][0] + 104, RESP_SLVERR)]
        code = "DATA_WRITE_BUS_ERROR"
    else:
        h.wr.errors = [(RING_BASE, RING_BASE + 16, RESP_SLVERR)]
        code = "WRITEBACK_BUS_ERROR"
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 4)
        payload = frame_bytes(h.rng, 200)
        # Drive the frame; the channel may halt before taking all of it.
        beats = h.beats(payload, 0, 0)
        taken = 0
        for _ in range(3000):
            if taken < len(beats):
                ctx.set(d.i.payload, beats[taken])
                ctx.set(d.i.valid, 1)
            else:
                ctx.set(d.i.valid, 0)
            _, _, ready = await ctx.tick().sample(d.i.ready)
            if ready and taken < len(beats):
                taken += 1
            if ctx.get(d.regs.status.halted):
                break
        assert ctx.get(d.regs.status.halted), "no halt"
        assert ctx.get(d.regs.status.error_code) == ERROR_CODES[code]
        assert not ctx.get(d.regs.status.running)
        for _ in range(20):
            await ctx.tick()
        reads, writes = len(h.rd.monitor.bursts), len(h.wr.monitor.bursts)
        # Halted: no memory access, `i` not consumed.
        ctx.set(d.i.payload, beats[min(taken, len(beats) - 1)])
        ctx.set(d.i.valid, 1)
        await h.doorbell(ctx, 4)
        for _ in range(300):
            _, _, ready = await ctx.tick().sample(d.i.ready)
            assert not ready, "halted channel consumed input"
        assert (len(h.rd.monitor.bursts), len(h.wr.monitor.bursts)) == (reads, writes)
        assert h.seen["error"] == 1
        assert ctx.get(d.regs.frames) == 0
        # Finish the abandoned frame's input (the SoC would; here so `i` starts clean).
        ctx.set(d.i.valid, 0)
        # Reset, re-post the ring, deliver a frame.
        h.rd.errors, h.wr.errors = [], []
        ctx.set(d.regs.ctrl.run, 0)  # the driver stops the channel, resets it and re-posts the ring
        await h.reset(ctx)
        assert (
            ctx.get(d.regs.status.error_code) == 0
            and ctx.get(d.regs.head) == 0
            and not ctx.get(d.regs.status.halted)
        )
        if taken not in (0, len(beats)):
            # The channel skips the rest of the frame it had started taking.
            for beat in beats[taken:]:
                ctx.set(d.i.payload, beat)
                ctx.set(d.i.valid, 1)
                while True:
                    _, _, ready = await ctx.tick().sample(d.i.ready)
                    if ready:
                        break
            ctx.set(d.i.valid, 0)
        before = bytes(h.mem)
        h.exp[:] = before
        h.avail.clear()
        h.used = 0
        h.frames, h.drops, h.bytes = (
            ctx.get(d.regs.frames),
            ctx.get(d.regs.drops),
            ctx.get(d.regs.bytes),
        )
        for idx, (addr, length) in enumerate(buffers(0x6000, [128] * 3)):
            h.post(idx, addr, length)
        h.unpost(3)
        ctx.set(d.regs.ctrl.run, 1)
        await h.doorbell(ctx, 3)
        await h.send(ctx, frame_bytes(h.rng, 150))
        await h.settle(ctx)
        h.check(ctx)

    h.run(scenario)


def test_buffer_too_small_halts():
    h = Harness(ring_size=8)
    h.post(0, 0x3000, 128)
    h.post(1, 0x3100, 63)
    h.unpost(2)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 2)
        await h.send(ctx, frame_bytes(h.rng, 100))
        await h.settle(ctx)
        ctx.set(d.i.payload, h.beats(b"x" * 8, 0, 0)[0])
        ctx.set(d.i.valid, 1)
        for _ in range(50):
            await ctx.tick()
        assert ctx.get(d.regs.status.error_code) == ERROR_CODES["RX_BUFFER_TOO_SMALL"]
        assert ctx.get(d.regs.head) == 1  # the small one is not written back
        assert h.seen["error"] == 1
        ctx.set(d.i.valid, 0)
        h.check_mem = h.mem == h.exp
        assert h.check_mem

    h.run(scenario)


def test_no_access_until_run_and_bad_tail():
    h = Harness(ring_size=4)
    h.post(0, 0x3000, 128)
    h.unpost(1)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx, run=0)
        await h.doorbell(ctx, 1)
        ctx.set(d.i.payload, h.beats(b"y" * 8, 0, 0)[0])
        ctx.set(d.i.valid, 1)
        for _ in range(100):
            _, _, ready = await ctx.tick().sample(d.i.ready)
            assert not ready
        assert not h.rd.monitor.bursts and not h.wr.monitor.bursts
        ctx.set(d.i.valid, 0)
        await h.doorbell(ctx, 4)  # tail >= ring_size: ignored and flagged
        await ctx.tick()
        assert ctx.get(d.regs.status.bad_tail)
        ctx.set(d.regs.ctrl.run, 1)
        await h.send(ctx, frame_bytes(h.rng, 80))
        await h.settle(ctx)
        h.check(ctx)
        await h.reset(ctx)
        assert not ctx.get(d.regs.status.bad_tail)

    h.run(scenario)


def test_poll_finds_descriptors_without_doorbell():
    h = Harness(ring_size=8, poll_us=2)
    h.unpost(0)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 0)
        for _ in range(40):
            await ctx.tick()
        fetched = ctx.get(d.regs.desc_fetched)
        # Post without a doorbell; the poll (2 us at 4 MHz = 8 cycles) finds them.
        h.post(0, 0x3000, 128)
        h.post(1, 0x3100, 128)
        h.unpost(2)
        for _ in range(60):
            await ctx.tick()
        assert ctx.get(d.regs.desc_fetched) > fetched
        await h.send(ctx, frame_bytes(h.rng, 200))
        await h.settle(ctx)
        h.check(ctx)

    h.run(scenario)


@pytest.mark.parametrize("data_width", [32, 64])
def test_odd_buffer_sizes_realign(data_width):
    """Buffer sizes that are not a multiple of the beat: frames spill mid-beat."""
    sizes = [65, 97, 100, 127, 333, 64, 71, 1001, 66, 67, 200, 513] * 3
    lengths = [60, 1514, 129, 64, 65, 300, 777, 61, 1000, 250, 90, 63, 1200]
    h = Harness(ring_size=len(sizes) + 1, data_width=data_width, prefetch=5, burst_beats=8,
                ready_prob=0.8, latency=1, in_valid_prob=0.9, seed=data_width)  # fmt: skip
    for idx, (addr, length) in enumerate(buffers(0x1000, sizes)):
        h.post(idx, addr, length, ioc=int(idx % 3 == 0))
    h.unpost(len(sizes))

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, len(sizes))
        for n in lengths:
            await h.send(ctx, frame_bytes(h.rng, n))
        await h.settle(ctx)
        h.check(ctx)
        # None dropped whole: the ring runs out only under the last frame, truncating it.
        assert h.drops == h.truncated == 1 and h.seen["desc_done"] == h.used

    h.run(scenario)


def test_descriptor_without_own_is_never_used():
    """Tail covers 0..3 but 2 lacks own: the DMA stops at 2 and never uses 3 early."""
    h = Harness(ring_size=8, prefetch=4)
    bufs = buffers(0x3000, [128] * 4)
    h.post(0, *bufs[0])
    h.post(1, *bufs[1])
    h.unpost(2)
    at3 = RING_BASE + 16 * 3
    words3 = desc_words(*bufs[3])
    h.mem[at3 : at3 + 16] = words3  # owned, but behind a non-owned one
    h.exp[at3 : at3 + 16] = words3
    h.unpost(4)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 4)
        for n in [70, 80, 90]:
            await h.send(ctx, frame_bytes(h.rng, n))
        await h.settle(ctx)
        h.check(ctx)
        assert ctx.get(d.regs.drops) == 1 and ctx.get(d.regs.head) == 2
        h.post(2, *bufs[2])
        h.avail.append((3, *bufs[3], 0))
        await h.doorbell(ctx, 4)
        for n in [100, 200]:
            await h.send(ctx, frame_bytes(h.rng, n))
        await h.settle(ctx)
        h.check(ctx)
        assert ctx.get(d.regs.head) == 4

    h.run(scenario)


def test_reset_waits_for_the_data_burst_in_flight():
    """CTRL.reset on a running channel while a frame-data burst crawls over a slow bus:
    STATUS.resetting stays 1 until that burst has landed, and once it reads 0 nothing of
    the frame reaches memory any more, so a driver that waits for it can re-post the
    buffers safely (the soak's fault campaign found data landing in re-posted buffers)."""
    h = Harness(ring_size=8, prefetch=2, ready_prob=0.15, latency=6, seed=11)
    for idx, (addr, length) in enumerate(buffers(0x3000, [1024] * 4)):
        h.post(idx, addr, length)
    h.unpost(4)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 4)
        beats = h.beats(frame_bytes(h.rng, 900), 0, 0)
        for beat in beats:  # feed the frame until the first data burst is on the bus
            ctx.set(d.i.payload, beat)
            ctx.set(d.i.valid, 1)
            await ctx.tick()
            if ctx.get(d.axi_write.wvalid):
                break
        ctx.set(d.i.valid, 0)
        assert ctx.get(d.axi_write.wvalid), "no data burst started"
        ctx.set(d.regs.ctrl.run, 0)
        assert await h.reset(ctx) > 1, "the reset did not wait for the burst on the bus"
        landed = bytes(h.mem)
        for _ in range(300):
            assert not ctx.get(d.axi_write.awvalid) and not ctx.get(d.axi_write.wvalid)
            await ctx.tick()
        assert bytes(h.mem) == landed, "frame data reached memory after STATUS.resetting = 0"

    h.run(scenario)


def test_reset_mid_fetch_waits_for_the_read_and_forgets_it():
    """CTRL.reset while a descriptor read crawls over a slow bus: STATUS.resetting stays 1
    until the read's last beat is in; the reset forgets the descriptors read and the
    doorbell's tail (HEAD 0, nothing read again without a doorbell), and after a doorbell
    the same buffers take frames from index 0."""
    h = Harness(ring_size=8, prefetch=4, ready_prob=0.2, latency=6, seed=17)
    for idx, (addr, length) in enumerate(buffers(0x3000, [256] * 4)):
        h.post(idx, addr, length)
    h.unpost(4)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 4)
        for _ in range(2000):
            if ctx.get(d.axi_read.rvalid) and ctx.get(d.axi_read.rready):
                break
            await ctx.tick()
        else:
            raise AssertionError("no descriptor read")
        ctx.set(d.regs.ctrl.run, 0)
        assert await h.reset(ctx) > 4, "the reset did not wait for the read on the bus"
        assert ctx.get(d.regs.head) == 0
        ctx.set(d.regs.ctrl.run, 1)
        for _ in range(300):
            assert not ctx.get(d.axi_read.arvalid), "a read without a doorbell"
            await ctx.tick()
        await h.doorbell(ctx, 4)
        for _ in range(3):
            await h.send(ctx, frame_bytes(h.rng, 200))
        await h.settle(ctx)
        h.check(ctx)
        assert ctx.get(d.regs.frames) == 3 and ctx.get(d.regs.head) == 3

    h.run(scenario)


def test_reset_mid_frame_skips_its_rest():
    h = Harness(ring_size=8, prefetch=2)
    for idx, (addr, length) in enumerate(buffers(0x3000, [256] * 4)):
        h.post(idx, addr, length)
    h.unpost(4)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 4)
        beats = h.beats(frame_bytes(h.rng, 200), 0, 0)

        async def drive(some):
            for beat in some:
                ctx.set(d.i.payload, beat)
                ctx.set(d.i.valid, 1)
                for _ in range(1000):
                    _, _, ready = await ctx.tick().sample(d.i.ready)
                    if ready:
                        break
                else:
                    raise AssertionError("i not consumed")
            ctx.set(d.i.valid, 0)

        await drive(beats[:20])
        ctx.set(d.regs.ctrl.run, 0)
        await h.reset(ctx)
        assert ctx.get(d.regs.head) == 0 and ctx.get(d.regs.frames) == 0
        await drive(beats[20:])  # the rest of the cut frame is skipped, even with run = 0
        h.exp[:] = h.mem
        h.avail.clear()
        for idx, (addr, length) in enumerate(buffers(0x4000, [128] * 3)):
            h.post(idx, addr, length)
        h.unpost(3)
        ctx.set(d.regs.ctrl.run, 1)
        await h.doorbell(ctx, 3)
        await h.send(ctx, frame_bytes(h.rng, 150))
        await h.settle(ctx)
        h.check(ctx)

    h.run(scenario)


def test_connects_to_rx_fifo():
    """The channel's ``i`` takes RxFrameFifo's ``o`` as is."""
    from amaranth import Module
    from amaranth.lib import wiring

    from macdma.hdl.dma.rx_fifo import RxFrameFifo

    for data_width in (32, 64):
        m = Module()
        m.submodules.fifo = rx_fifo = RxFrameFifo(data_width=data_width)
        m.submodules.dma = dma = RxDmaChannel(data_width=data_width)
        wiring.connect(m, rx_fifo.o, dma.i)
        elaborate(m)


def test_bad_parameters():
    with rejected(ValueError, "data_width must be 32 or 64, not 16"):
        RxDmaChannel(data_width=16)
    with rejected(ValueError, "max_prefetch must be an integer in 1..16, not 0"):
        RxDmaChannel(max_prefetch=0)


@pytest.mark.parametrize("seed", [1, 2])
def test_random_traffic_with_concurrent_reaping(seed):
    """Back-to-back random frames while the driver reaps and re-posts slots as HEAD moves;
    enough buffers are always posted, so nothing may be dropped or truncated."""
    ring = 12
    rng = random.Random(seed)
    h = Harness(ring_size=ring, prefetch=rng.choice([1, 3, 8]), burst_beats=rng.choice([4, 16]),
                ready_prob=0.85, latency=2, in_valid_prob=0.9, seed=seed)  # fmt: skip
    sizes = [rng.choice([64, 96, 101, 128, 250]) for _ in range(ring)]
    pool = buffers(0x2000, sizes)  # slot k always gets buffer k (re-used after reaping)
    for idx in range(ring - 1):
        h.post(idx, *pool[idx], ioc=rng.randrange(2))
    h.unpost(ring - 1)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        tail, reaped = ring - 1, 0
        await h.doorbell(ctx, tail)
        for _ in range(30):
            n = rng.randrange(60, 700)
            while True:
                # Reap written-back slots and hand them straight back.
                done = (ctx.get(d.regs.head) - reaped) % ring
                for _ in range(done):
                    h.post(tail, *pool[tail], ioc=rng.randrange(2))
                    tail = (tail + 1) % ring
                    reaped = (reaped + 1) % ring
                if done:
                    h.unpost(tail)
                    await h.doorbell(ctx, tail)
                # Send only when the posted buffers hold the whole frame.
                if sum(length for _, _, length, _ in h.avail) >= n:
                    break
                await ctx.tick()
            flags = rng.choice([(0, 0, 0), (0, 0, 0), (1, 0, RxError.FCS.value), (1, 1, 0)])
            await h.send(ctx, frame_bytes(h.rng, n), error=flags[0], overflow=flags[1],
                         cause=flags[2])  # fmt: skip
        await h.settle(ctx)
        h.check(ctx)
        assert h.drops == 0 and ctx.get(d.regs.drops) == 0
        assert h.seen["desc_done"] == h.events["desc_done"]
        assert h.seen["desc_ioc"] == h.events["desc_ioc"]
        assert h.seen["frame_done"] == 30

    h.run(scenario)


@pytest.mark.parametrize(
    ("cut", "partly_taken", "discards"),
    [
        (False, False, 2),  # two whole frames taken, none written back: both discarded
        (True, False, 1),  # the second was cut short by the RX FIFO: RX_FIFO_OVERFLOWS's
        (False, True, 2),  # the second partly taken at the reset, its rest skipped
        (True, True, 1),  # ... and its last beat says the RX FIFO cut it: not counted again
    ],
)
def test_reset_does_not_count_a_frame_already_counted_as_cut(cut, partly_taken, discards):
    """Two frames taken from ``i`` on a bus so slow that nothing is written back, then
    CTRL.reset: RX_RESET_DISCARDS counts the frames it discards, but not one the RX FIFO
    had already cut short (``overflow`` on its last beat: counted in RX_FIFO_OVERFLOWS),
    whether the channel had taken it whole or the reset came while it was taking it (its
    rest skipped afterwards, its last beat deciding). Each lost frame counted once (the
    soak's fault campaign counted such frames twice at an RX halt; issue 36)."""
    h = Harness(ring_size=8, prefetch=2, ready_prob=0.03, latency=8, seed=23)
    for idx, (addr, length) in enumerate(buffers(0x3000, [512] * 4)):
        h.post(idx, addr, length)
    h.unpost(4)
    d = h.dut

    async def scenario(ctx):
        await h.setup(ctx)
        await h.doorbell(ctx, 4)
        await h.send(ctx, frame_bytes(h.rng, 120), model=False)
        second = h.beats(frame_bytes(h.rng, 120), int(cut), int(cut))
        taken = second[:10] if partly_taken else second
        for beat in taken:
            ctx.set(d.i.payload, beat)
            ctx.set(d.i.valid, 1)
            for _ in range(5000):
                _, _, ready = await ctx.tick().sample(d.i.ready)
                if ready:
                    break
            else:
                raise AssertionError("i not consumed")
        ctx.set(d.i.valid, 0)
        assert ctx.get(d.regs.frames) == 0, "a frame was written back: case missed"
        before = ctx.get(d.regs.reset_discards)
        await h.reset(ctx, limit=50000)
        for beat in second[len(taken) :]:  # the rest of a partly taken frame: skipped
            ctx.set(d.i.payload, beat)
            ctx.set(d.i.valid, 1)
            await ctx.tick()
        ctx.set(d.i.valid, 0)
        await ctx.tick()
        assert ctx.get(d.regs.frames) == 0 and ctx.get(d.regs.drops) == 0
        counted = ctx.get(d.regs.reset_discards) - before
        assert counted == discards, (
            f"RX_RESET_DISCARDS moved by {counted}; {discards} of the two frames are its "
            f"(the second {'cut short by the RX FIFO' if cut else 'intact'})"
        )

    h.run(scenario)
