"""TX system tests of ``macdma_soc``: fragments in host memory -> TX DMA -> TX FIFO -> MAC ->
GMII, with the descriptor write-backs, the AXI bursts, the counters and the error paths.

Host memory is the bench's ``HostMemory`` (cocotbext-axi ``AxiRam`` recording every burst);
the wire is cocotbext-eth's ``GmiiSink``. Reference results come from the test's own
payloads and from a plain greedy burst model written here (docs: ``hdl/dma/bursts.py``),
never from the RTL.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import DESCRIPTOR_BYTES, Descriptor
from macdma.sim.benches.guard import PAGE_BYTES, MemoryGuard, check_bursts, plan_bursts
from macdma.sim.benches.soc import Ring, SocBench

TX_RING = 0x1000
RX_RING = 0x3000
TX_DATA = 0x10000
TX_DATA_END = 0xB0000
RX_DATA = 0xC0000
MAX_FRAME = 1514
MIN_PAYLOAD = 60
FCS_BYTES = 4

TX_COUNTERS = ("TX_DESC_FETCHED", "TX_BURSTS", "TX_BYTES", "TX_FRAMES")
STATS_COUNTERS = ("STATS_TX_FRAMES_GOOD", "STATS_TX_BYTES_GOOD", "STATS_TX_UNDERRUNS")


# -- bench helpers --------------------------------------------------------------------------


class TimedBursts(list):
    """Stands in for ``HostMemory.bursts``: also records when each burst's address was
    accepted (ns), so a test can tell bursts issued before and after an event."""

    def __init__(self):
        super().__init__()
        self.times: list[float] = []

    def append(self, item):
        self.times.append(get_sim_time("ns"))
        super().append(item)


async def started(dut, **kwargs) -> SocBench:
    bench = SocBench(dut, **kwargs)
    bench.memory.bursts = TimedBursts()
    await bench.start()
    return bench


def beat_bytes(bench: SocBench) -> int:
    return len(bench.dut.m_axi_wdata) // 8


def payload(length: int, seed: int) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def on_wire(data: bytes) -> bytes:
    return data + bytes(max(0, MIN_PAYLOAD - len(data)))


@dataclass
class TxFrame:
    """One frame as a list of fragments (address, bytes)."""

    fragments: list[tuple[int, bytes]]

    @property
    def data(self) -> bytes:
        return b"".join(chunk for _, chunk in self.fragments)


class FragmentAllocator:
    """Places fragments in the TX data area: any byte alignment (mostly odd), some made to
    straddle a 4 KiB page boundary."""

    def __init__(self, rng: random.Random, start: int = TX_DATA, end: int = TX_DATA_END):
        self.rng = rng
        self.start = start
        self.end = end
        self.cursor = start

    def place(self, length: int, cross_page: bool = False) -> int:
        if self.cursor + length + 2 * PAGE_BYTES > self.end:
            self.cursor = self.start
        if cross_page and length >= 2:
            boundary = (self.cursor // PAGE_BYTES + 1) * PAGE_BYTES
            address = boundary - self.rng.randint(1, length - 1)
            if address < self.cursor:
                address += PAGE_BYTES
        else:
            address = (self.cursor + self.rng.randrange(1, 16)) | 1
        self.cursor = address + length
        return address


def split(total: int, parts: int, rng: random.Random) -> list[int]:
    """``total`` bytes as ``parts`` random sizes, each >= 1."""
    cuts = sorted(rng.sample(range(1, total), parts - 1)) if parts > 1 else []
    edges = [0, *cuts, total]
    return [b - a for a, b in zip(edges, edges[1:], strict=False)]


def make_frame(
    allocator: FragmentAllocator, sizes: list[int], seed: int, cross_every: int = 3
) -> TxFrame:
    data = payload(sum(sizes), seed)
    fragments, offset = [], 0
    for number, size in enumerate(sizes):
        cross = (seed + number) % cross_every == 0
        fragments.append((allocator.place(size, cross), data[offset : offset + size]))
        offset += size
    return TxFrame(fragments)


def post_frame(bench: SocBench, ring: Ring, frame: TxFrame, *, ioc: bool = False) -> list[int]:
    """Write the fragments to memory and post one descriptor per fragment (no doorbell)."""
    indices = []
    last = len(frame.fragments) - 1
    for number, (address, chunk) in enumerate(frame.fragments):
        bench.memory.write(address, chunk)
        indices.append(
            ring.post(
                Descriptor.tx(address, len(chunk), sop=number == 0, eop=number == last, ioc=ioc)
            )
        )
    return indices


def expected_writeback(posted: Descriptor) -> Descriptor:
    """What a TX write-back leaves in memory (docs/descriptors.md, Write-back)."""
    return Descriptor(
        addr=posted.addr,
        done_length=posted.length,
        length=posted.length,
        ioc=posted.ioc,
        sop=posted.sop,
        eop=posted.eop,
        own=False,
    )


async def receive_frames(bench: SocBench, count: int, timeout_us: float = 400) -> list[GmiiFrame]:
    return [await with_timeout(bench.tx_sink.recv(), timeout_us, "us") for _ in range(count)]


def assert_intact(received: GmiiFrame, frame: TxFrame, what: str):
    assert received.check_fcs(), f"{what}: bad FCS on the wire"
    assert not received.error, f"{what}: tx_er asserted on the wire"
    got = received.get_payload()
    want = on_wire(frame.data)
    assert got == want, (
        f"{what}: wire payload differs ({len(got)} bytes vs {len(want)} expected, "
        f"first difference at byte "
        f"{next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)})"
    )


def tx_bursts_between(bench: SocBench, first: int, last: int | None = None):
    """Bursts of index first..last of the monitor that belong to the TX channel (the RX
    ring and RX buffers are the only other memory the tests post)."""
    bursts = bench.memory.bursts[first:last]
    return [
        b for b in bursts if not (RX_RING <= b.addr < RX_RING + PAGE_BYTES or b.addr >= RX_DATA)
    ]


def is_ring_address(ring: Ring, address: int) -> bool:
    return ring.base <= address < ring.base + DESCRIPTOR_BYTES * ring.size


async def send_and_check(
    bench: SocBench, ring: Ring, frames: list[TxFrame], what: str, *, timeout_us: float = 400
) -> dict:
    """Post ``frames`` (all must fit in the ring), guard memory, ring the doorbell once, and
    check the wire, every write-back and the counters. Returns facts for further checks."""
    counters_before = await bench.read_regs(*TX_COUNTERS, *STATS_COUNTERS)
    posted: list[tuple[int, Descriptor]] = []
    for frame in frames:
        for index in post_frame(bench, ring, frame):
            posted.append((index, ring.read(index)))
    first_burst = len(bench.memory.bursts)
    guard = MemoryGuard(bench)
    await ring.doorbell()

    received = await receive_frames(bench, len(frames), timeout_us)
    for number, (got, frame) in enumerate(zip(received, frames, strict=True)):
        assert_intact(got, frame, f"{what}, frame {number} ({len(frame.fragments)} fragments)")
    for index, descriptor in posted:
        assert ring.head == index, f"{what}: reaping out of order"
        done = await ring.reap()
        assert done == expected_writeback(descriptor), (
            f"{what}: descriptor {index} written back as {done}, expected "
            f"{expected_writeback(descriptor)}"
        )
    await ClockCycles(bench.dut.clk, 20)
    assert bench.tx_sink.empty(), f"{what}: extra frame on the wire"
    for index, _ in posted:
        guard.allow_writeback(ring, index)
    guard.check(what)

    counters = await bench.read_regs(*TX_COUNTERS, *STATS_COUNTERS)
    delta = {name: (counters[name] - counters_before[name]) & 0xFFFFFFFF for name in counters}
    bursts = tx_bursts_between(bench, first_burst)
    total_bytes = sum(len(f.data) for f in frames)
    expected = {
        "TX_DESC_FETCHED": len(posted),
        # TX_BURSTS: frame-data bursts only (fragment reads), docs/registers.md.
        "TX_BURSTS": len(data_read_bursts(ring, bursts)),
        "TX_BYTES": total_bytes,
        "TX_FRAMES": len(frames),
        "STATS_TX_FRAMES_GOOD": len(frames),
        "STATS_TX_BYTES_GOOD": sum(max(len(f.data), MIN_PAYLOAD) + FCS_BYTES for f in frames),
        "STATS_TX_UNDERRUNS": 0,
    }
    assert delta == expected, f"{what}: counter deltas {delta}, expected {expected}"
    return {"received": received, "bursts": bursts, "first_burst": first_burst}


def data_read_bursts(ring: Ring, bursts) -> list[tuple[int, int]]:
    return [(b.addr, b.beats) for b in bursts if not b.write and not is_ring_address(ring, b.addr)]


def expected_data_bursts(frames: list[TxFrame], cap: int, lanes: int) -> list[tuple[int, int]]:
    return [
        burst
        for frame in frames
        for address, chunk in frame.fragments
        for burst in plan_bursts(address, len(chunk), cap, lanes)
    ]


# -- 1. fragment layouts ----------------------------------------------------------------------


@cocotb.test()
async def test_tx_fragment_layouts(dut):
    """Frames of 1..16 fragments, fragments of 1..1514 bytes at any byte address, some
    across 4 KiB pages, through a 37-entry ring that wraps: every frame intact and in order,
    every descriptor written back (own cleared, done_length, sop/eop kept), counters agree."""
    bench = await started(dut)
    ring = await bench.open_ring("TX", TX_RING, 37, burst_beats=16, prefetch=4)
    rng = random.Random(1)
    allocator = FragmentAllocator(rng)
    shapes = [
        [1],  # smallest frame: padded to 60 on the wire
        [MAX_FRAME],  # largest frame in one fragment
        [1] * 16,  # 16 one-byte fragments
        split(MAX_FRAME, 16, rng),  # largest frame, most fragments
        [MAX_FRAME - 15, *([1] * 15)],
        [*([1] * 15), MAX_FRAME - 15],
        [59, 1],  # 60 bytes exactly
        [3, 5, 7],
    ]
    counts = list(range(2, 16)) + [rng.randint(1, 16) for _ in range(12)]
    for count in counts:
        total = rng.randint(count, MAX_FRAME)
        shapes.append(split(total, count, rng))
    batch: list[TxFrame] = []
    fragments: list[tuple[int, bytes]] = []
    seed = 0
    for sizes in shapes:
        seed += 1
        frame = make_frame(allocator, sizes, seed)
        fragments += frame.fragments
        if sum(len(f.fragments) for f in batch) + len(sizes) > ring.size - 1:
            await send_and_check(bench, ring, batch, f"layouts batch ending before {seed}")
            batch = []
        batch.append(frame)
    await send_and_check(bench, ring, batch, "layouts last batch")
    check_bursts(bench.memory.bursts, cap_beats=16, beat_bytes=beat_bytes(bench))
    # The layouts really covered what they claim.
    crossing = [a for a, c in fragments if a // PAGE_BYTES != (a + len(c) - 1) // PAGE_BYTES]
    odd = [a for a, _ in fragments if a % 2]
    assert len(crossing) >= 10 and len(odd) >= len(fragments) // 2, (len(crossing), len(odd))


# -- 2. burst caps ----------------------------------------------------------------------------


@cocotb.test()
async def test_tx_burst_caps(dut):
    """TX_BURST_BEATS = 1..256: frames intact, and every fragment read is split exactly as the
    greedy rule says (cap, 4 KiB pages), so no burst exceeds the cap or crosses a page."""
    bench = await started(dut)
    lanes = beat_bytes(bench)
    ring = await bench.open_ring("TX", TX_RING, 16, burst_beats=1, prefetch=4)
    for cap in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        await bench.write_reg(regs.TX_BURST_BEATS, cap)
        rng = random.Random(cap)
        allocator = FragmentAllocator(rng)
        page = TX_DATA + 4 * PAGE_BYTES
        frames = [
            # Long enough for a full 256-beat burst, odd address, inside one page.
            TxFrame([(page + 1, payload(MAX_FRAME, cap))]),
            # Odd fragments, one straddling a page boundary.
            TxFrame(
                [
                    (page + 3 * PAGE_BYTES - 301, payload(700, cap + 1)),
                    (allocator.place(13), payload(13, cap + 2)),
                    (allocator.place(801), payload(801, cap + 3)),
                ]
            ),
        ]
        facts = await send_and_check(bench, ring, frames, f"burst cap {cap}")
        got = data_read_bursts(ring, facts["bursts"])
        want = expected_data_bursts(frames, cap, lanes)
        assert got == want, f"burst cap {cap}: data bursts {got} != greedy plan {want}"
        assert max(beats for _, beats in got) == cap, f"burst cap {cap} never reached"
        check_bursts(bench.memory.bursts, cap_beats=cap, beat_bytes=beat_bytes(bench))
        bench.memory.bursts.clear()
        bench.memory.bursts.times.clear()


# -- 3. latency and back-pressure -------------------------------------------------------------


def random_pauses(seed: int, probability: float):
    rng = random.Random(seed)
    while True:
        yield rng.random() < probability


def set_memory_pauses(bench: SocBench, seed: int, probability: float | None):
    channels = (
        bench.memory.read_if.ar_channel,
        bench.memory.read_if.r_channel,
        bench.memory.write_if.aw_channel,
        bench.memory.write_if.w_channel,
        bench.memory.write_if.b_channel,
    )
    for number, channel in enumerate(channels):
        if probability is None:
            channel.clear_pause_generator()
        else:
            channel.set_pause_generator(random_pauses(seed * 10 + number, probability))


@cocotb.test()
async def test_tx_memory_latency_and_backpressure(dut):
    """Memory answering each burst after 0, 8 or 30 cycles, with random stalls on all five
    AXI channels: frames still intact, write-backs and counters right, bursts legal."""
    bench = await started(dut)
    lanes = beat_bytes(bench)
    ring = await bench.open_ring("TX", TX_RING, 24, burst_beats=8, prefetch=4)
    rng = random.Random(3)
    allocator = FragmentAllocator(rng)
    for step, (latency, pause) in enumerate(((0, 0.3), (8, 0.5), (30, 0.2))):
        bench.memory.latency_cycles = latency
        set_memory_pauses(bench, step, pause)
        frames = [
            make_frame(allocator, split(total, count, rng), 100 * step + n)
            for n, (total, count) in enumerate(((MAX_FRAME, 6), (333, 3), (64, 1), (900, 5)))
        ]
        facts = await send_and_check(
            bench, ring, frames, f"latency {latency}, pause {pause}", timeout_us=800
        )
        got = data_read_bursts(ring, facts["bursts"])
        assert got == expected_data_bursts(frames, 8, lanes), f"latency {latency}: burst split"
    set_memory_pauses(bench, 0, None)
    check_bursts(bench.memory.bursts, cap_beats=8, beat_bytes=beat_bytes(bench))


# -- 4. descriptor prefetch -------------------------------------------------------------------


@cocotb.test()
async def test_tx_prefetch(dut):
    """PREFETCH 1, 4, 8 (and 16, clamped to FEATURES.max_prefetch) send the same frames; the
    descriptor reads shrink to ceil(descriptors / prefetch), each a burst of that many."""
    bench = await started(dut)
    features = await bench.read_reg(regs.ID_FEATURES)
    max_prefetch = (features & regs.ID_FEATURES_MAX_PREFETCH_MASK) >> (
        regs.ID_FEATURES_MAX_PREFETCH_SHIFT
    )
    lanes = beat_bytes(bench)
    rng = random.Random(4)
    allocator = FragmentAllocator(rng)
    frames = [make_frame(allocator, split(rng.randint(2, 400), 2, rng), n) for n in range(8)]
    descriptors = sum(len(f.fragments) for f in frames)
    reads_seen = {}
    for prefetch in (1, 4, 8, 16):
        # Fresh ring: channel reset, then the ring registers again (HEAD returns to 0).
        await bench.write_reg(regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
        ring = await bench.open_ring("TX", TX_RING, 40, burst_beats=64, prefetch=prefetch)
        facts = await send_and_check(bench, ring, frames, f"prefetch {prefetch}")
        reads = [
            (b.addr, b.beats)
            for b in facts["bursts"]
            if not b.write and is_ring_address(ring, b.addr)
        ]
        effective = min(prefetch, max_prefetch)
        want = []
        for first in range(0, descriptors, effective):
            count = min(effective, descriptors - first)
            want.append((ring.address(first), count * DESCRIPTOR_BYTES // lanes))
        assert reads == want, f"prefetch {prefetch}: descriptor reads {reads}, expected {want}"
        reads_seen[prefetch] = len(reads)
    assert reads_seen[1] > reads_seen[4] > reads_seen[8] == math.ceil(descriptors / 8)


# -- 5. errors --------------------------------------------------------------------------------


async def irq_rise_time(dut, found: list):
    await RisingEdge(dut.irq)
    found.append(get_sim_time("ns"))


async def wait_tx_halted(bench: SocBench, timeout_us: float = 100) -> int:
    waited = 0.0
    while True:
        status = await bench.read_reg(regs.TX_STATUS)
        if status & regs.TX_STATUS_HALTED_MASK:
            return status
        await Timer(500, "ns")
        waited += 0.5
        assert waited < timeout_us, "TX channel never halted"


async def running_after_reset(bench, timeout_us: float = 5.0) -> int:
    """TX_STATUS once the channel runs again: after TX_CTRL.reset it waits for the TX
    FIFO's reset (about 2 µs, docs/soc.md) before it resumes."""
    for _ in range(int(timeout_us * 10)):
        status = await bench.read_reg(regs.TX_STATUS)
        if status & regs.TX_STATUS_RUNNING_MASK:
            return status
        await Timer(100, "ns")
    return status


async def run_error_case(dut, kind: str, prefetch: int = 1):
    """Frame A (good), frame B (3 fragments, broken by ``kind`` at its second fragment, or
    for a write-back error at its first) and frame C (good) are posted at once. A goes out;
    the channel halts at B with the right code, raises tx_error and irq, touches no memory
    afterwards, sends nothing good for B and nothing of C; RX still works; after
    TX_CTRL.reset and a re-post, B, C, D go out."""
    bench = await started(dut)
    await bench.write_reg(regs.IRQ_ENABLE, regs.IRQ_ENABLE_TX_ERROR_MASK)
    rx_ring = await bench.open_ring("RX", RX_RING, 8)
    for n in range(4):
        rx_ring.post(Descriptor.rx(RX_DATA + 2048 * n, 2048))
    await rx_ring.doorbell()
    ring = await bench.open_ring("TX", TX_RING, 16, burst_beats=256, prefetch=prefetch)

    base = TX_DATA + 0x101
    frame_a = TxFrame([(base, payload(100, 1))])
    frame_b = TxFrame(
        [
            (base + 0x201, payload(40, 2)),
            (base + 0x301, payload(50, 3)),
            (base + 0x401, payload(60, 4)),
        ]
    )
    frame_c = TxFrame([(base + 0x501, payload(80, 5))])
    a_index = post_frame(bench, ring, frame_a)[0]
    b_indices = post_frame(bench, ring, frame_b)
    post_frame(bench, ring, frame_c)

    failing = {"desc_fetch": b_indices[1], "data_read": b_indices[1], "zero_length": b_indices[1]}
    failing["writeback"] = b_indices[0]
    fail_index = failing[kind]
    code = {
        "desc_fetch": regs.DmaErrorCode.DESC_FETCH_BUS_ERROR,
        "data_read": regs.DmaErrorCode.DATA_READ_BUS_ERROR,
        "writeback": regs.DmaErrorCode.WRITEBACK_BUS_ERROR,
        "zero_length": regs.DmaErrorCode.ZERO_LENGTH_DESC,
    }[kind]
    fail_desc = ring.address(fail_index)
    if kind == "desc_fetch":
        bench.memory.error_windows.append((fail_desc, fail_desc + DESCRIPTOR_BYTES, "r"))
    elif kind == "data_read":
        address, chunk = frame_b.fragments[1]
        bench.memory.error_windows.append((address, address + len(chunk), "r"))
    elif kind == "writeback":
        bench.memory.error_windows.append((fail_desc, fail_desc + DESCRIPTOR_BYTES, "w"))
    else:
        address, _ = frame_b.fragments[1]
        ring.write(fail_index, Descriptor(addr=address, length=0, sop=False, eop=False, own=True))

    irq_times: list[float] = []
    cocotb.start_soon(irq_rise_time(dut, irq_times))
    guard = MemoryGuard(bench)
    await ring.doorbell()

    # Frame A goes out; the channel halts at the failing descriptor.
    got = await receive_frames(bench, 1)
    assert_intact(got[0], frame_a, f"{kind}: frame A")
    status = await wait_tx_halted(bench)
    assert status & regs.TX_STATUS_RUNNING_MASK == 0, f"{kind}: halted but still running"
    got_code = (status & regs.TX_STATUS_ERROR_CODE_MASK) >> regs.TX_STATUS_ERROR_CODE_SHIFT
    assert got_code == code, f"{kind}: error_code {got_code}, expected {code!r}"
    assert await bench.read_reg(regs.TX_HEAD) == fail_index, f"{kind}: HEAD not at the failure"
    irq_status = await bench.read_reg(regs.IRQ_STATUS)
    assert irq_status == regs.IRQ_STATUS_TX_ERROR_MASK, f"{kind}: IRQ_STATUS 0x{irq_status:x}"
    assert int(dut.irq.value) == 1 and len(irq_times) == 1, f"{kind}: irq line not raised"
    halt_ns = irq_times[0]

    # RX keeps working while TX is halted.
    rx_data = payload(150, 9)
    await bench.rx_source.send(GmiiFrame.from_payload(rx_data))
    rx_done = await rx_ring.reap()
    assert rx_done.eop and rx_done.frame_length == 150 and not rx_done.error, f"{kind}: RX"
    assert bench.memory.read(RX_DATA, 150) == rx_data, f"{kind}: RX data"
    rx_status = await bench.read_reg(regs.RX_STATUS)
    assert rx_status & regs.RX_STATUS_HALTED_MASK == 0, f"{kind}: RX halted too"

    # Nothing good for B, nothing of C on the wire; no TX memory access after the halt.
    await Timer(30, "us")
    while not bench.tx_sink.empty():
        extra = bench.tx_sink.recv_nowait()
        assert extra.error or not extra.check_fcs(), (
            f"{kind}: a good frame went out after the error: {extra.get_payload()[:16].hex()}"
        )
    late = [
        (t, b)
        for t, b in zip(bench.memory.bursts.times, bench.memory.bursts, strict=True)
        if t > halt_ns and not (RX_RING <= b.addr < RX_RING + PAGE_BYTES or b.addr >= RX_DATA)
    ]
    assert not late, f"{kind}: TX bursts after the halt at {halt_ns} ns: {late}"
    # The burst that failed ends TX memory traffic: after it only write-backs of earlier
    # descriptors still in flight, and for a failed write-back, reads the channel had issued
    # before its B response. A zero-length descriptor has no failing burst: nothing of it or
    # after it (fragments of B and C, later descriptors) may be read at all.
    tx_bursts = tx_bursts_between(bench, 0)
    lanes = beat_bytes(bench)

    def overlaps(burst, start, length):
        return burst.addr < start + length and start < burst.addr + lanes * burst.beats

    if kind == "zero_length":
        later = [*frame_b.fragments[1:], *frame_c.fragments]
        for burst in tx_bursts:
            if burst.write:
                index = (burst.addr - ring.base) // DESCRIPTOR_BYTES
                assert index < fail_index, f"{kind}: write-back of descriptor {index}"
            else:
                if is_ring_address(ring, burst.addr):
                    bad = burst.addr > fail_desc
                else:
                    bad = any(overlaps(burst, address, len(chunk)) for address, chunk in later)
                assert not bad, f"{kind}: read {burst} of the bad descriptor's data or beyond"
    else:
        if kind == "writeback":
            culprit = [n for n, b in enumerate(tx_bursts) if b.write and b.addr >= fail_desc]
        elif kind == "data_read":
            address, chunk = frame_b.fragments[1]
            culprit = [
                n
                for n, b in enumerate(tx_bursts)
                if not b.write and overlaps(b, address, len(chunk))
            ]
        else:
            culprit = [
                n
                for n, b in enumerate(tx_bursts)
                if not b.write and overlaps(b, fail_desc, DESCRIPTOR_BYTES)
            ]
        assert len(culprit) == 1, f"{kind}: expected one failing burst, found {culprit}"
        for burst in tx_bursts[culprit[0] + 1 :]:
            index = (burst.addr - ring.base) // DESCRIPTOR_BYTES
            if burst.write:
                assert index < fail_index, f"{kind}: write-back of descriptor {index} after it"
            else:
                assert kind == "writeback", f"{kind}: read {burst} after the failing burst"
    written_back = list(range(a_index, fail_index))
    for index in written_back:
        guard.allow_writeback(ring, index)
    guard.allow(RX_DATA, RX_DATA + 2048)
    guard.allow_writeback(rx_ring, 0)
    guard.check(kind)
    assert ring.read(fail_index).own, f"{kind}: the failing descriptor lost own"
    stats = await bench.read_regs("TX_FRAMES", "STATS_TX_FRAMES_GOOD", "STATS_TX_UNDERRUNS")
    assert stats == {"TX_FRAMES": 1, "STATS_TX_FRAMES_GOOD": 1, "STATS_TX_UNDERRUNS": 0}, (
        f"{kind}: counters while halted {stats}"
    )

    # Recover: clear the cause, reset the channel, re-post the ring from index 0.
    bench.memory.error_windows.clear()
    await bench.write_reg(regs.IRQ_STATUS, regs.IRQ_STATUS_TX_ERROR_MASK)
    await ClockCycles(dut.clk, 2)
    assert int(dut.irq.value) == 0, f"{kind}: irq stays high after clearing tx_error"
    await bench.write_reg(regs.TX_CTRL, regs.TX_CTRL_RUN_MASK | regs.TX_CTRL_RESET_MASK)
    status = await running_after_reset(bench)
    assert status == regs.TX_STATUS_RUNNING_MASK, f"{kind}: TX_STATUS 0x{status:x} after reset"
    assert await bench.read_reg(regs.TX_HEAD) == 0
    ring = Ring(bench, "TX", TX_RING, ring.size)
    for index in range(ring.size):
        ring.write(index, Descriptor())
    frame_d = TxFrame([(base + 0x601, payload(1000, 6)), (base + 0xA01, payload(7, 7))])
    await send_and_check(bench, ring, [frame_b, frame_c, frame_d], f"{kind}: after reset")
    assert await bench.read_reg(regs.IRQ_STATUS) == 0 and int(dut.irq.value) == 0


ERROR_CASES = (
    ("desc_fetch", 1),  # SLVERR on a descriptor fetch: DESC_FETCH_BUS_ERROR
    ("data_read", 1),  # SLVERR on a fragment's data: DATA_READ_BUS_ERROR
    ("writeback", 1),  # SLVERR on a write-back: WRITEBACK_BUS_ERROR
    ("zero_length", 1),  # own and length 0: ZERO_LENGTH_DESC
    # The same while the failing descriptor and those after it sit prefetched.
    ("data_read", 4),
    ("writeback", 4),
    ("zero_length", 4),
)


@cocotb.test()
@cocotb.parametrize(
    case=[
        cocotb.Param((kind, prefetch), f"{kind}_prefetch{prefetch}")
        for kind, prefetch in ERROR_CASES
    ]
)
async def test_tx_error(dut, case: tuple[str, int]):
    """Each TX error halts only TX with the right code and IRQ, and a reset recovers."""
    await run_error_case(dut, *case)


# -- 6. store-and-forward ----------------------------------------------------------------------


@cocotb.test()
async def test_tx_store_and_forward_slow_memory(dut):
    """A 1514-byte frame of 16 fragments read with burst cap 2 and 30 cycles of latency per
    burst (far slower than the wire) goes out whole: no tx_er, no underrun, and its first
    symbol leaves only after its last data burst was issued."""
    bench = await started(dut)
    ring = await bench.open_ring("TX", TX_RING, 20, burst_beats=2, prefetch=4)
    bench.memory.latency_cycles = 30
    rng = random.Random(6)
    frame = make_frame(FragmentAllocator(rng), split(MAX_FRAME, 16, rng), 6)
    facts = await send_and_check(bench, ring, [frame], "store-and-forward", timeout_us=1000)
    last_data_ns = max(
        t
        for t, b in zip(bench.memory.bursts.times, bench.memory.bursts, strict=True)
        if not b.write and not is_ring_address(ring, b.addr)
    )
    start_ns = facts["received"][0].sim_time_start / 1000
    assert start_ns > last_data_ns, (
        f"frame started on the wire at {start_ns} ns before its last data burst at {last_data_ns}"
    )
    values = await bench.read_regs("STATS_TX_UNDERRUNS", "TX_DROPS", "STATS_TX_FRAMES_BAD")
    assert values == {"STATS_TX_UNDERRUNS": 0, "TX_DROPS": 0, "STATS_TX_FRAMES_BAD": 0}, values
    check_bursts(bench.memory.bursts, cap_beats=2, beat_bytes=beat_bytes(bench))


# -- channel reset in the middle of a frame -----------------------------------------------------


@cocotb.test()
async def test_tx_reset_mid_frame(dut):
    """TX_CTRL.reset while a long frame is half read (slow memory): the half frame never
    leaves with a good FCS (the TX FIFO is reset with the channel, or the frame ends with
    tx_er), and the next frames, posted from index 0, go out intact."""
    bench = await started(dut)
    ring = await bench.open_ring("TX", TX_RING, 20, burst_beats=2, prefetch=4)
    bench.memory.latency_cycles = 30
    rng = random.Random(7)
    allocator = FragmentAllocator(rng)
    frame = make_frame(allocator, split(MAX_FRAME, 8, rng), 70)
    indices = post_frame(bench, ring, frame)
    guard = MemoryGuard(bench)
    await ring.doorbell()
    # Wait until about half of the frame has been read.
    data_reads = 0
    while data_reads < 90:
        await ClockCycles(dut.clk, 50)
        data_reads = len(data_read_bursts(ring, bench.memory.bursts))
    await bench.write_reg(regs.TX_CTRL, regs.TX_CTRL_RUN_MASK | regs.TX_CTRL_RESET_MASK)
    bench.memory.latency_cycles = 0
    await Timer(20, "us")
    status = await running_after_reset(bench)
    assert status == regs.TX_STATUS_RUNNING_MASK, f"TX_STATUS 0x{status:x} after reset"
    for index in indices:
        guard.allow_writeback(ring, index)
    guard.check("mid-frame reset")
    while not bench.tx_sink.empty():
        extra = bench.tx_sink.recv_nowait()
        assert extra.error or not extra.check_fcs(), "the reset frame went out with a good FCS"
    ring = Ring(bench, "TX", TX_RING, ring.size)
    for index in range(ring.size):
        ring.write(index, Descriptor())
    frames = [make_frame(allocator, split(n, 3, rng), 71 + n) for n in (200, 1000)]
    await send_and_check(
        bench,
        ring,
        frames,
        "after a mid-frame reset (a longer frame with a good FCS here means the half frame "
        "stayed in the TX FIFO: hdl/soc.py does not reset TxFrameFifo with TX_CTRL.reset, "
        "which the TxDmaChannel and TxFrameFifo docstrings expect)",
    )
