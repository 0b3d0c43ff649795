"""RxFrameFifo in Amaranth's simulator: a MAC-like byte source on the rx clock (no
back-pressure), a packed-word DMA sink on the sys clock, each with its own frequency."""

import random
from dataclasses import dataclass, field

import pytest
from amaranth import *
from amaranth.back import verilog
from amaranth.sim import Simulator
from unbuilt import rejected

from macdma.hdl.dma.rx_fifo import RxFrameFifo
from macdma.hdl.mac.frame import RxError

RX_PERIOD = 8e-9  # 125 MHz
SYS_PERIOD = 10e-9


@dataclass
class OutFrame:
    data: bytes
    error: bool
    overflow: bool


@dataclass
class RxBench:
    """Both sides of the FIFO; ``frames_out`` collects the DMA side, beat format checked."""

    data_width: int = 32
    depth_bytes: int = 4096
    frames_out: list = field(default_factory=list)
    partial: list = field(default_factory=list)  # beats of the frame the sink is inside
    sink_ready_prob: float = 1.0
    sink_enabled: bool = True
    stop: bool = False
    causes_out: list = field(default_factory=list)  # o's meta.cause at every last beat

    def __post_init__(self):
        self.dut = RxFrameFifo(data_width=self.data_width, depth_bytes=self.depth_bytes)
        self.width_bytes = self.data_width // 8
        m = Module()
        m.submodules.dut = self.dut
        m.domains.sync = self.sync = ClockDomain("sync")
        m.domains.rx = self.rx = ClockDomain("rx")
        self.sim = Simulator(m)
        self.sim.add_clock(SYS_PERIOD, domain="sync")
        self.sim.add_clock(RX_PERIOD, domain="rx", phase=RX_PERIOD / 3)

    async def send(
        self, ctx, payload: bytes, *, error=False, gap_prob=0.0, rng=None, cause=RxError.NONE
    ):
        """One frame from the MAC, one byte per rx clock, with random idle cycles."""
        dut = self.dut
        for index, byte in enumerate(payload):
            while rng is not None and rng.random() < gap_prob:
                ctx.set(dut.i.valid, 0)
                await ctx.tick("rx")
            last = index == len(payload) - 1
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.p.data, byte)
            ctx.set(dut.i.p.last, last)
            ctx.set(dut.i.p.error, error and last)
            ctx.set(dut.i.p.meta.cause, cause if last else RxError.NONE)
            await ctx.tick("rx")
        ctx.set(dut.i.valid, 0)

    def forget_partial(self):
        self.partial = []

    async def sink(self, ctx):
        dut = self.dut
        rng = random.Random(99)
        while not self.stop:
            ready = self.sink_enabled and rng.random() < self.sink_ready_prob
            ctx.set(dut.o.ready, ready)
            if ready and ctx.get(dut.o.valid):
                beat = {
                    n: ctx.get(getattr(dut.o.p, n))
                    for n in ("data", "count", "last", "error", "overflow")
                }
                self.partial.append(beat)
                if beat["last"]:
                    self.causes_out.append(RxError(ctx.get(dut.o.p.meta.cause)))
                    self.frames_out.append(self.check_frame(self.partial))
                    self.partial = []
            await ctx.tick()

    def check_frame(self, beats):
        """The packed-word contract: full beats, flags on the last only, unused lanes zero."""
        w = self.width_bytes
        data = bytearray()
        for beat in beats[:-1]:
            assert beat["count"] == w and not beat["error"] and not beat["overflow"], beat
            data += beat["data"].to_bytes(w, "little")
        last = beats[-1]
        assert last["count"] <= w
        assert last["data"] >> (8 * last["count"]) == 0, "lanes above count must be zero"
        assert last["count"] > 0 or last["error"], "an empty end beat must be an error"
        if last["overflow"]:
            assert last["error"]
        data += last["data"].to_bytes(w, "little")[: last["count"]]
        return OutFrame(bytes(data), bool(last["error"]), bool(last["overflow"]))

    def run(self, *benches):
        def after_power_up(bench):
            # The reset synchronizers start asserted: a frame begun in the first rx cycles
            # would be dropped as one cut by a reset.
            async def wrapped(ctx):
                for _ in range(4):
                    await ctx.tick("rx")
                await bench(ctx)

            return wrapped

        for bench in benches:
            self.sim.add_testbench(after_power_up(bench))
        self.sim.add_testbench(self.sink, background=True)
        self.sim.run()


ALL_LENGTHS = [*range(1, 71), 1514]


def test_cause_travels_with_the_last_beat():
    """The MAC's reason for a bad frame comes out with that frame's last beat."""
    bench = RxBench()
    causes = [RxError.NONE, RxError.FCS, RxError.RUNT, RxError.NONE, RxError.PHY]

    async def source(ctx):
        for n, cause in enumerate(causes):
            await bench.send(ctx, bytes(range(10 + n)), error=cause != RxError.NONE, cause=cause)
            await ctx.tick("rx").repeat(12)
        await ctx.tick().repeat(40)
        bench.stop = True

    bench.run(source)
    assert bench.causes_out == causes
    assert [f.error for f in bench.frames_out] == [c != RxError.NONE for c in causes]


@pytest.mark.parametrize("data_width", [32, 64])
def test_every_length_random_gaps(data_width):
    """Byte-exact frames of 1..70 and 1514 bytes, random MAC idle cycles, random DMA ready,
    some frames marked bad by the MAC: all arrive packed, in order, with their flags."""
    rng = random.Random(data_width)
    frames = [(rng.randbytes(n), rng.random() < 0.2) for n in ALL_LENGTHS]
    bench = RxBench(data_width=data_width, sink_ready_prob=0.6)

    async def source(ctx):
        for payload, error in frames:
            await bench.send(ctx, payload, error=error, gap_prob=0.3, rng=rng)
            for _ in range(rng.choice([0, 0, 1, 5])):
                await ctx.tick("rx")
        while len(bench.frames_out) < len(frames):
            await ctx.tick("rx")
        assert ctx.get(bench.dut.overflows) == 0

    bench.run(source)
    assert bench.frames_out == [OutFrame(p, e, False) for p, e in frames]


def overflow_model(frames, capacity_words, width_bytes):
    """Reference for the documented overflow policy when the DMA takes nothing: returns the
    frames the DMA will see (before and including the lost-frames marker) and the count."""
    written, lost_pending, overflows, out = 0, False, 0, []
    for payload, error in frames:
        words = [payload[i : i + width_bytes] for i in range(0, len(payload), width_bytes)]
        stored = b""
        for index, word in enumerate(words):
            end = index == len(words) - 1
            free = capacity_words - written
            if lost_pending:
                overflows += 1
                break
            if end and free >= 1:
                written += 1
                out.append(OutFrame(stored + word, error, False))
                break
            if not end and free >= 2:
                written += 1
                stored += word
                continue
            overflows += 1
            if free >= 1:
                written += 1
                out.append(OutFrame(stored + word, True, True))
            else:
                lost_pending = True
            break
    if lost_pending:
        out.append(OutFrame(b"", True, True))
    return out, overflows


@pytest.mark.parametrize("data_width", [32, 64])
def test_overflow_exact(data_width):
    """The DMA stalls: frames that fit arrive intact, the first that does not is cut short
    (error + overflow), later ones are lost behind one marker, the count is exact, and
    frames after the DMA catches up are intact again."""
    rng = random.Random(5)
    bench = RxBench(data_width=data_width, depth_bytes=2048, sink_enabled=False)
    capacity = bench.dut.memory_words
    burst = [(rng.randbytes(rng.choice([60, 333, 1514, 1, 7])), False) for _ in range(12)]
    after = [(rng.randbytes(n), False) for n in (64, 1514, 1, 200)]
    expected, count = overflow_model(burst, capacity, bench.width_bytes)
    assert count >= 3 and any(f.overflow and f.data for f in expected)  # the test bites
    log = {}

    async def source(ctx):
        for payload, error in burst:
            await bench.send(ctx, payload, error=error)
            await ctx.tick("rx").repeat(12)  # an IFG, as a MAC would leave
        await ctx.tick("rx").repeat(20)
        log["during"] = ctx.get(bench.dut.overflows)
        bench.sink_enabled = True
        while len(bench.frames_out) < len(expected):
            await ctx.tick("rx")
        for payload, error in after:
            await bench.send(ctx, payload, error=error)
        while len(bench.frames_out) < len(expected) + len(after):
            await ctx.tick("rx")
        await ctx.tick("rx").repeat(10)
        log["final"] = ctx.get(bench.dut.overflows)

    bench.run(source)
    assert log["during"] == count and log["final"] == count
    assert bench.frames_out == expected + [OutFrame(p, e, False) for p, e in after]


def test_overflow_random_stalls_never_merge_or_hide_frames():
    """A DMA that keeps stalling: every frame the MAC sent is either delivered intact, or
    cut short (a strict prefix, error + overflow), or lost and stood for by a marker before
    the next delivered frame; the counter equals cut-short plus lost frames."""
    rng = random.Random(17)
    frames = [
        (rng.randbytes(rng.choice([1, 5, 60, 200, 600, 1514])), rng.random() < 0.1)
        for _ in range(60)
    ]
    bench = RxBench(data_width=32, depth_bytes=2048, sink_ready_prob=0.3)
    log = {}

    async def source(ctx):
        for index, (payload, error) in enumerate(frames):
            # The DMA alternates between stalled (no buffers) and slow.
            bench.sink_enabled = (index // 8) % 2 == 1
            await bench.send(ctx, payload, error=error)
            await ctx.tick("rx").repeat(rng.choice([1, 12, 40]))
        bench.sink_enabled, bench.sink_ready_prob = True, 1.0
        for _ in range(3000):
            await ctx.tick("rx")
        log["overflows"] = ctx.get(bench.dut.overflows)

    bench.run(source)
    sent, received = list(frames), list(bench.frames_out)
    truncated = lost = pos = 0
    waiting_marker = False
    for frame in received:
        if frame.overflow and not frame.data:
            assert not waiting_marker
            waiting_marker = True
            continue
        # Frames skipped here must be covered by a marker just before this frame.
        start = pos
        while True:
            assert pos < len(sent), "delivered frame matches nothing sent"
            payload, error = sent[pos]
            if frame.overflow:
                hit = len(frame.data) < len(payload) and payload.startswith(frame.data)
            else:
                hit = frame == OutFrame(payload, error, False)
            if hit:
                break
            pos += 1
        skipped = pos - start
        assert (skipped > 0) == waiting_marker, "frames lost without a marker (or marker for none)"
        lost += skipped
        waiting_marker = False
        truncated += frame.overflow
        pos += 1
    if waiting_marker:
        lost += len(sent) - pos
        assert lost > 0
    else:
        assert pos == len(sent)
    assert truncated > 0 and lost > 0  # the stalls really did overflow
    assert log["overflows"] == truncated + lost


def test_sys_reset_mid_frame():
    """A sys (DMA channel) reset while the MAC is inside a frame: the FIFO and the counter
    are cleared, the rest of that frame is dropped, the next frame arrives intact."""
    bench = RxBench(depth_bytes=2048, sink_enabled=False)
    rng = random.Random(3)
    filler = [rng.randbytes(1514) for _ in range(2)]  # overflows before the reset
    cut, good = rng.randbytes(300), rng.randbytes(99)
    log = {}

    async def source(ctx):
        for payload in filler:
            await bench.send(ctx, payload)
        log["before"] = ctx.get(bench.dut.overflows)
        await bench.send(ctx, cut)
        await ctx.tick("rx").repeat(12)
        await bench.send(ctx, good)
        await ctx.tick("rx").repeat(100)
        bench.sink_enabled = True
        while len(bench.frames_out) < 1:
            await ctx.tick("rx")
        await ctx.tick("rx").repeat(50)
        log["after"] = ctx.get(bench.dut.overflows)

    async def reset(ctx):
        await ctx.tick().repeat(int((2 * 1514 + 150) * RX_PERIOD / SYS_PERIOD))
        ctx.set(bench.sync.rst, 1)
        bench.forget_partial()
        for _ in range(6):  # tick().repeat() would raise DomainReset
            await ctx.tick()
        ctx.set(bench.sync.rst, 0)

    bench.run(source, reset)
    assert log["before"] == 1
    assert log["after"] == 0
    assert bench.frames_out == [OutFrame(good, False, False)]


def test_rx_reset_ends_a_partly_delivered_frame():
    """An rx (MAC) reset while the DMA has part of a frame: that frame ends with a
    count=0 error beat (not an overflow), then the next frame is intact."""
    bench = RxBench(sink_ready_prob=1.0)
    rng = random.Random(4)
    first, second = rng.randbytes(400), rng.randbytes(80)

    async def source(ctx):
        await bench.send(ctx, first[:200])  # the MAC is reset before the rest
        ctx.set(bench.dut.i.valid, 0)
        ctx.set(bench.rx.rst, 1)
        for _ in range(4):
            await ctx.tick("rx")
        ctx.set(bench.rx.rst, 0)
        await ctx.tick("rx").repeat(20)
        await bench.send(ctx, second)
        while len(bench.frames_out) < 2:
            await ctx.tick("rx")

    bench.run(source)
    aborted, after = bench.frames_out
    assert aborted.error and not aborted.overflow
    assert len(aborted.data) % 4 == 0 and 0 < len(aborted.data) < 200
    assert first.startswith(aborted.data)
    assert after == OutFrame(second, False, False)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"data_width": 8},
        {"data_width": 48},
        {"depth_bytes": 1000},
        {"depth_bytes": 1024},
        {"depth_bytes": 1 << 20},
    ],
)
def test_bad_parameters(kwargs):
    with rejected(ValueError, str(next(iter(kwargs.values())))):
        RxFrameFifo(**kwargs)


@pytest.mark.parametrize("data_width", [32, 64])
def test_verilog_export(data_width):
    dut = RxFrameFifo(data_width=data_width)
    # The always-ready input has a constant ready, which is no port.
    ports = [
        Value.cast(value)
        for _, _, value in dut.signature.flatten(dut)
        if not isinstance(Value.cast(value), Const)
    ]
    text = verilog.convert(dut, name="rx_frame_fifo", ports=ports)
    for port in ("i__valid", "i__payload", "o__valid", "o__ready", "rx_clk", "overflows"):
        assert port in text
