"""TxFrameFifo in Amaranth's simulator: a packed-word writer on the sys clock, a MAC-like
byte reader on the tx clock, each with its own frequency and phase."""

import random
from dataclasses import dataclass, field

import pytest
from amaranth import *
from amaranth.back import verilog
from amaranth.sim import Simulator
from unbuilt import rejected

from macdma.hdl.dma.prefetch_fifo import QUEUE_DEPTH
from macdma.hdl.dma.tx_fifo import TxFrameFifo
from macdma.hdl.gray import gray_decode, gray_encode

TX_PERIOD = 8e-9  # 125 MHz: one byte per clock is 1 Gb/s
SYS_100MHZ = 10e-9
SYS_62M5HZ = 16e-9


def pack(payload: bytes, width_bytes: int, *, error=False, error_beat=False):
    """``payload`` as the DMA's packed beats: full words, then a last word of 1..W bytes.
    ``error_beat`` appends the AxiBurstReader's lone ``count=0, error=1`` beat instead."""
    beats = []
    for offset in range(0, len(payload), width_bytes):
        chunk = payload[offset : offset + width_bytes]
        beats.append(
            {"data": int.from_bytes(chunk, "little"), "count": len(chunk), "last": 0, "error": 0}
        )
    if error_beat:
        beats.append({"data": 0, "count": 0, "last": 1, "error": 1})
    else:
        beats[-1]["last"] = 1
        beats[-1]["error"] = int(error)
    return beats


@dataclass
class TxFrame:
    payload: bytes
    error: bool = False
    error_beat: bool = False

    def expected(self):
        """Bytes and error flag the MAC must see."""
        if self.error_beat:
            return self.payload + b"\0", True
        return self.payload, self.error


@dataclass
class TxRun:
    received: list = field(default_factory=list)  # (bytes, error) per frame
    first_valid_tx_cycle: list = field(default_factory=list)
    written_tx_cycle: list = field(default_factory=list)  # tx cycle when the last beat went in
    early_start: list = field(default_factory=list)  # frame index: first byte before its end
    bubbles: list = field(default_factory=list)  # frame index of every idle cycle mid-frame
    last_byte_tx_cycle: list = field(default_factory=list)  # when each frame's last byte went
    tx_cycles: int = 0
    depth_words: int = 0


def run_tx(
    frames,
    *,
    data_width=32,
    depth_bytes=4096,
    sys_period=SYS_100MHZ,
    valid_prob=1.0,
    ready_prob=1.0,
    hold_ready_until_written=False,
    seed=0,
    max_tx_cycles=None,
):
    """Write ``frames`` on the sys side, read bytes on the tx side, return what was seen."""
    dut = TxFrameFifo(data_width=data_width, depth_bytes=depth_bytes)
    width_bytes = data_width // 8
    m = Module()
    m.submodules.dut = dut
    m.domains.sync = ClockDomain("sync")
    m.domains.tx = ClockDomain("tx")
    sim = Simulator(m)
    sim.add_clock(sys_period, domain="sync")
    sim.add_clock(TX_PERIOD, domain="tx", phase=TX_PERIOD / 3)  # edges never coincide
    run = TxRun(depth_words=dut.depth_words)
    rng = random.Random(seed)
    total = sum(len(f.expected()[0]) for f in frames)
    limit = max_tx_cycles or int(total / ready_prob * 3 + 300 * len(frames) + 2000)

    async def writer(ctx):
        for frame in frames:
            for beat in pack(
                frame.payload, width_bytes, error=frame.error, error_beat=frame.error_beat
            ):
                while rng.random() > valid_prob:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick()
                ctx.set(dut.i.valid, 1)
                for name, value in beat.items():
                    ctx.set(getattr(dut.i.p, name), value)
                while True:
                    ready = ctx.get(dut.i.ready)
                    await ctx.tick()
                    if ready:
                        break
            run.written_tx_cycle.append(run.tx_cycles)
        ctx.set(dut.i.valid, 0)

    async def reader(ctx):
        current = bytearray()
        presented = False  # a byte of the current frame has been offered
        while len(run.received) < len(frames):
            assert run.tx_cycles < limit, f"timeout: {len(run.received)} of {len(frames)} frames"
            hold = hold_ready_until_written and len(run.written_tx_cycle) < len(frames)
            ready = not hold and rng.random() < ready_prob
            ctx.set(dut.o.ready, ready)
            valid = ctx.get(dut.o.valid)
            index = len(run.received)
            if valid and not presented:
                presented = True
                run.first_valid_tx_cycle.append(run.tx_cycles)
                if len(run.written_tx_cycle) <= index:
                    run.early_start.append(index)
            elif presented and not valid:
                run.bubbles.append(index)
            if valid and ready:
                current.append(ctx.get(dut.o.p.data))
                if ctx.get(dut.o.p.last):
                    run.received.append((bytes(current), bool(ctx.get(dut.o.p.error))))
                    run.last_byte_tx_cycle.append(run.tx_cycles)
                    current = bytearray()
                    presented = False
                else:
                    assert not ctx.get(dut.o.p.error), "error flagged before the last byte"
            await ctx.tick("tx")
            run.tx_cycles += 1

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run()
    assert run.received == [f.expected() for f in frames]
    return run


def random_frames(lengths, seed):
    rng = random.Random(seed)
    return [TxFrame(rng.randbytes(n)) for n in lengths]


ALL_LENGTHS = [*range(1, 71), 1514]


@pytest.mark.parametrize("data_width", [32, 64])
def test_every_length_random_gaps(data_width):
    """Byte-exact frames of 1..70 and 1514 bytes with random write gaps and random ready;
    each frame reaches the MAC only after its last beat was written, with no bubble."""
    frames = random_frames(ALL_LENGTHS, seed=data_width)
    run = run_tx(frames, data_width=data_width, valid_prob=0.6, ready_prob=0.7, seed=1)
    assert run.early_start == []
    assert run.bubbles == []


@pytest.mark.parametrize("data_width", [32, 64])
def test_slow_bus_no_bubbles_within_frames(data_width):
    """A 62.5 MHz sys side writing with gaps delivers fewer bytes per second than the wire
    takes; store-and-forward still gives the MAC every frame without a bubble."""
    frames = random_frames([60, 1514, 1, 333, 1514, 64], seed=3)
    run = run_tx(frames, data_width=data_width, sys_period=SYS_62M5HZ, valid_prob=0.25, seed=2)
    assert run.early_start == []
    assert run.bubbles == []
    # The bus really is slower than the wire: the MAC waits between frames.
    starts = run.first_valid_tx_cycle
    gaps = [starts[n + 1] - starts[n] for n in range(len(starts) - 1)]
    assert any(gap > len(frames[n].payload) + 10 for n, gap in enumerate(gaps))


@pytest.mark.parametrize("sys_period", [SYS_100MHZ, SYS_62M5HZ])
@pytest.mark.parametrize("data_width", [32, 64])
def test_back_to_back_frames_without_bubbles(data_width, sys_period):
    """Frames already complete in the FIFO leave one after the other: o.valid never drops
    within a frame, and between frames for 2 cycles at most (a frame's first word is read
    once the previous frame's last byte has gone; the MAC spends at least 5 cycles on FCS
    and IFG there)."""
    frames = random_frames([1, 2, 60, 7, 1514, 3, 64, 1, 1, 100], seed=5)
    run = run_tx(
        frames, data_width=data_width, sys_period=sys_period, hold_ready_until_written=True
    )
    assert run.bubbles == []
    # The MAC takes one byte every cycle from when it is let go: frame n's last byte goes
    # len(frame n) cycles after frame n-1's, plus the idle cycles between them.
    ends = run.last_byte_tx_cycle
    gaps = [ends[n] - ends[n - 1] - len(frames[n].payload) for n in range(1, len(frames))]
    assert gaps == [2] * (len(frames) - 1)


def test_one_byte_words_within_a_frame_without_bubbles():
    """A frame made of 1-byte beats (a fragment per byte) still gives the MAC a byte on
    every cycle: the FIFO's read-ahead queue refills as fast as the MAC empties it."""
    payload = bytes(range(40))
    dut = TxFrameFifo()
    m = Module()
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(SYS_100MHZ, domain="sync")
    sim.add_clock(TX_PERIOD, domain="tx", phase=TX_PERIOD / 3)
    seen = []

    async def writer(ctx):
        for index, byte in enumerate(payload):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.p.data, byte)
            ctx.set(dut.i.p.count, 1)
            ctx.set(dut.i.p.last, index == len(payload) - 1)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def reader(ctx):
        await ctx.tick("tx").until(dut.o.valid)
        ctx.set(dut.o.ready, 1)
        while True:
            valid, data, last = ctx.get(dut.o.valid), ctx.get(dut.o.p.data), ctx.get(dut.o.p.last)
            seen.append(data if valid else None)
            await ctx.tick("tx")
            if valid and last:
                break

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run()
    assert seen == list(payload)


def test_gray_code_across_the_wrap():
    """Each step of a counter, including the wrap to 0, changes one bit of its Gray code, and
    the code decodes back to the count."""
    width = 4
    count = Signal(width)
    code = Signal(width)
    decoded = Signal(width)
    m = Module()
    m.d.comb += [code.eq(gray_encode(count + 1, width)), decoded.eq(gray_decode(code))]
    sim = Simulator(m)
    seen = []

    async def bench(ctx):
        for value in range(2**width):
            ctx.set(count, value)
            seen.append((ctx.get(code), ctx.get(decoded)))

    sim.add_testbench(bench)
    sim.run()
    codes = [code for code, _ in seen]
    assert [decoded for _, decoded in seen] == [(n + 1) % 2**width for n in range(2**width)]
    assert len(set(codes)) == 2**width
    for n in range(2**width):
        assert bin(codes[n] ^ codes[n - 1]).count("1") == 1, (n, codes[n - 1], codes[n])


def test_frame_counters_wrap():
    """More frames than the frame counters count (11 bits at 2 KiB): the frame released as
    the counters wrap to 0 is still seen, so the last one goes out too."""
    frames = random_frames([1] * 2048, seed=13)
    run_tx(frames, depth_bytes=2048)


def test_latency_from_last_write_to_first_byte():
    """About 6 tx cycles from the sys edge that takes the last beat to o.valid."""
    for sys_period in (SYS_100MHZ, SYS_62M5HZ):
        frames = random_frames([64], seed=7)
        run = run_tx(frames, sys_period=sys_period)
        latency = run.first_valid_tx_cycle[0] - run.written_tx_cycle[0]
        assert 3 <= latency <= 8, latency


@pytest.mark.parametrize("data_width", [32, 64])
def test_error_propagation(data_width):
    """An error on the last beat, or the reader's lone count=0 error beat, ends the frame
    with error on its last byte; good frames around it are unaffected."""
    rng = random.Random(11)
    frames = [
        TxFrame(rng.randbytes(20)),
        TxFrame(rng.randbytes(61), error=True),
        TxFrame(rng.randbytes(5)),
        TxFrame(rng.randbytes(16), error_beat=True),
        TxFrame(rng.randbytes(1), error=True),
        TxFrame(rng.randbytes(1), error_beat=True),
        TxFrame(rng.randbytes(70)),
    ]
    run_tx(frames, data_width=data_width, valid_prob=0.5, ready_prob=0.8, seed=4)


def test_error_on_a_middle_beat_aborts_the_frame():
    dut_width = 4
    payload = bytes(range(12))
    beats = pack(payload, dut_width)
    beats[1]["error"] = 1
    dut = TxFrameFifo()
    m = Module()
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(SYS_100MHZ, domain="sync")
    sim.add_clock(TX_PERIOD, domain="tx", phase=TX_PERIOD / 3)
    seen = []

    async def writer(ctx):
        for beat in beats:
            ctx.set(dut.i.valid, 1)
            for name, value in beat.items():
                ctx.set(getattr(dut.i.p, name), value)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def reader(ctx):
        ctx.set(dut.o.ready, 1)
        while not seen or not seen[-1][1]:
            if ctx.get(dut.o.valid):
                seen.append((ctx.get(dut.o.p.data), ctx.get(dut.o.p.last), ctx.get(dut.o.p.error)))
            await ctx.tick("tx")

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run()
    assert bytes(d for d, _, _ in seen) == payload
    assert [(last, err) for _, last, err in seen[-1:]] == [(1, 1)]


def test_oversize_frame_boundary():
    """depth 2048 at 32 bits holds 512 words of RAM + 4 read ahead = 2064 bytes: a frame of
    2064 bytes is still store-and-forward, 2065 bytes is released cut-through when its
    words fill the FIFO, and the frame after it is store-and-forward again."""
    assert QUEUE_DEPTH == 4
    frames = random_frames([2064, 100, 2065, 100, 3000, 64], seed=9)
    run = run_tx(frames, depth_bytes=2048, sys_period=SYS_100MHZ)
    assert run.depth_words == 516
    assert run.early_start == [2, 4]
    assert run.bubbles == []  # the bus is faster than the wire here


def test_oversize_frame_on_a_slow_bus_underruns():
    """Documented limit: a cut-through (oversize) frame fed slower than the wire leaves
    the MAC without data mid-frame (the MAC would underrun); it still arrives intact here."""
    frames = random_frames([4000, 64], seed=10)
    run = run_tx(
        frames,
        depth_bytes=2048,
        sys_period=SYS_62M5HZ,
        valid_prob=0.1,
        seed=3,
        max_tx_cycles=80_000,
    )
    assert run.early_start == [0]
    assert 0 in run.bubbles and 1 not in run.bubbles


def make_bench(dut):
    m = Module()
    m.submodules.dut = dut
    m.domains.sync = sync = ClockDomain("sync")
    m.domains.tx = tx = ClockDomain("tx")
    sim = Simulator(m)
    sim.add_clock(SYS_100MHZ, domain="sync")
    sim.add_clock(TX_PERIOD, domain="tx", phase=TX_PERIOD / 3)
    return sim, sync, tx


async def write_frame(ctx, dut, payload, width_bytes=4):
    for beat in pack(payload, width_bytes):
        ctx.set(dut.i.valid, 1)
        for name, value in beat.items():
            ctx.set(getattr(dut.i.p, name), value)
        await ctx.tick().until(dut.i.ready)
    ctx.set(dut.i.valid, 0)


class ByteSink:
    """MAC-like reader: collects frames; ``reset()`` forgets a partial frame like a MAC reset."""

    def __init__(self, dut):
        self.dut = dut
        self.frames = []
        self.current = bytearray()
        self.stop = False

    def reset(self):
        self.current = bytearray()

    async def run(self, ctx):
        ctx.set(self.dut.o.ready, 1)
        while not self.stop:
            if ctx.get(self.dut.o.valid):
                self.current.append(ctx.get(self.dut.o.p.data))
                if ctx.get(self.dut.o.p.last):
                    self.frames.append((bytes(self.current), bool(ctx.get(self.dut.o.p.error))))
                    self.current = bytearray()
            await ctx.tick("tx")


def test_status_empty_and_frames_queued():
    dut = TxFrameFifo()
    sim, _, _ = make_bench(dut)
    payloads = [bytes(range(100)), bytes(50), bytes(range(200))]
    log = {}

    async def bench(ctx):
        assert ctx.get(dut.empty) and ctx.get(dut.frames_queued) == 0
        ctx.set(dut.o.ready, 0)
        for payload in payloads:
            await write_frame(ctx, dut, payload)
        await write_frame(ctx, dut, bytes(8))
        await ctx.tick().repeat(10)
        log["queued"] = ctx.get(dut.frames_queued)
        log["empty"] = ctx.get(dut.empty)
        log["level"] = ctx.get(dut.level_words)
        ctx.set(dut.o.ready, 1)
        await ctx.tick().repeat(400)  # 358 bytes at 125 MHz, plus the status crossing
        log["drained_empty"] = ctx.get(dut.empty)
        log["drained_queued"] = ctx.get(dut.frames_queued)
        # A frame being written is not empty even before it is complete.
        ctx.set(dut.i.valid, 1)
        ctx.set(dut.i.p.count, 4)
        ctx.set(dut.i.p.last, 0)
        await ctx.tick()
        ctx.set(dut.i.valid, 0)
        await ctx.tick()
        log["open_empty"] = ctx.get(dut.empty)
        log["open_queued"] = ctx.get(dut.frames_queued)

    sim.add_testbench(bench)
    sim.run()
    assert log["queued"] == 4 and not log["empty"]
    # All words written, less those already on the tx side (read-ahead queue and word).
    assert log["level"] == (100 + 3) // 4 + (50 + 3) // 4 + 200 // 4 + 2 - QUEUE_DEPTH - 1
    assert log["drained_empty"] and log["drained_queued"] == 0
    assert not log["open_empty"] and log["open_queued"] == 1


def test_sys_reset_mid_frame_aborts_the_mac_frame_and_empties():
    """A sys reset while the MAC is inside a frame: the MAC gets one 0x00 byte with
    last and error so it ends that frame; queued frames are gone; later frames are intact."""
    dut = TxFrameFifo()
    sim, sync, _ = make_bench(dut)
    sink = ByteSink(dut)
    big, after = bytes(range(256)) * 2, bytes(range(77))
    log = {}

    async def bench(ctx):
        await write_frame(ctx, dut, big)
        await write_frame(ctx, dut, bytes(40))  # queued, lost by the reset
        while len(sink.current) < 30:
            await ctx.tick()
        ctx.set(sync.rst, 1)
        for _ in range(6):  # tick().repeat() would raise DomainReset
            await ctx.tick()
        ctx.set(sync.rst, 0)
        await ctx.tick().repeat(20)
        log["empty"] = ctx.get(dut.empty)
        log["queued"] = ctx.get(dut.frames_queued)
        await write_frame(ctx, dut, after)
        await ctx.tick().repeat(150)
        sink.stop = True

    sim.add_testbench(bench)
    sim.add_testbench(sink.run)
    sim.run()
    assert log["empty"] and log["queued"] == 0
    assert len(sink.frames) == 2
    cut, error = sink.frames[0]
    assert error and cut[-1] == 0 and cut[:-1] == big[: len(cut) - 1] and len(cut) < len(big)
    assert sink.frames[1] == (after, False)


def test_tx_reset_drops_the_rest_of_the_current_frame_only():
    """A MAC (tx) reset mid-frame: the rest of that frame never reaches the MAC, the next
    queued frame follows intact and the sys side ends up empty."""
    dut = TxFrameFifo()
    sim, _, tx = make_bench(dut)
    sink = ByteSink(dut)
    first, second = bytes(range(250)), bytes(range(100, 190))
    log = {}

    async def bench(ctx):
        await write_frame(ctx, dut, first)
        await write_frame(ctx, dut, second)
        await ctx.tick().repeat(400)
        log["empty"] = ctx.get(dut.empty)
        sink.stop = True

    async def mac_reset(ctx):
        while len(sink.current) < 50:
            await ctx.tick("tx")
        ctx.set(tx.rst, 1)
        sink.reset()
        for _ in range(3):
            await ctx.tick("tx")
        ctx.set(tx.rst, 0)

    sim.add_testbench(bench)
    sim.add_testbench(sink.run)
    sim.add_testbench(mac_reset)
    sim.run()
    assert sink.frames == [(second, False)]
    assert log["empty"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"data_width": 16},
        {"data_width": 128},
        {"depth_bytes": 1024},
        {"depth_bytes": 3000},
        {"depth_bytes": 131072},
        {"data_width": "32"},
        {"checksum": 1},
    ],
)
def test_bad_parameters(kwargs):
    with rejected(ValueError, str(next(iter(kwargs.values())))):
        TxFrameFifo(**kwargs)


@pytest.mark.parametrize("data_width", [32, 64])
def test_verilog_export(data_width):
    dut = TxFrameFifo(data_width=data_width)
    text = verilog.convert(dut, name="tx_frame_fifo")
    for port in ("i__valid", "i__ready", "o__valid", "o__ready", "tx_clk", "empty"):
        assert port in text
