"""RX system tests of ``macdma_soc``: frames from the GMII wire into host-memory buffers.

The host side is played the way a driver plays it (post buffers, ring the doorbell, reap
descriptors in ring order, re-post), with a memory guard: after setup, the only bytes of
host memory that may change are the bytes a written-back descriptor says were written
(``[addr, addr + done_length)``) and that descriptor's write-back words (bytes 4..15).
Buffers are pre-filled with a pattern, so a byte written past ``done_length`` (an FCS, say)
or into a buffer the DMA never wrote back is caught.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass

import cocotb
from cocotb.triggers import ClockCycles, Timer, with_timeout
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import DESCRIPTOR_BYTES, Descriptor, RxErrorCause
from macdma.firmware.regs import DmaErrorCode
from macdma.sim.benches.guard import MemoryGuard, check_bursts
from macdma.sim.benches.soc import SocBench

TX_RING = 0x1000
RX_RING = 0x2000
TX_DATA = 0x10000
RX_DATA = 0x40000
RX_RING_END = RX_RING + 0x1000  # rings here have at most 256 descriptors
SLOT_BYTES = 2048 + 16  # one buffer slot per ring index; buffers start at odd offsets
FILL = 0xA5  # pre-fill of posted buffers
LANES = 4  # 32-bit AXI data (the SoC's default build)


def payload(length: int, seed: int = 0) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def buffer_address(index: int) -> int:
    """Buffer of ring slot ``index``: any alignment is legal, so use all four."""
    return RX_DATA + index * SLOT_BYTES + (index * 3) % 4


async def started(dut, **kwargs) -> SocBench:
    bench = SocBench(dut, **kwargs)
    await bench.start()
    return bench


# ---- a minimal RX driver ----------------------------------------------------------------


@dataclass
class RxFrame:
    """One frame reaped from the ring: its descriptors (ring index, write-back) and bytes."""

    descriptors: list[tuple[int, Descriptor]]
    data: bytes

    @property
    def eop(self) -> Descriptor:
        return self.descriptors[-1][1]


class RxDriver:
    """Posts buffers, rings the doorbell, reaps frames descriptor by descriptor."""

    def __init__(self, bench: SocBench, guard: MemoryGuard, ring):
        self.bench = bench
        self.guard = guard
        self.ring = ring
        self.posted_size: dict[int, int] = {}

    def post(self, size: int, *, ioc: bool = False) -> int:
        index = self.ring.tail
        address = buffer_address(index)
        self.guard.host_write(address, bytes([FILL]) * size)
        self.ring.post(Descriptor.rx(address, size, ioc=ioc))
        self.guard.sync(self.ring.address(index), DESCRIPTOR_BYTES)
        self.posted_size[index] = size
        return index

    def post_many(self, count: int, size: int):
        for _ in range(count):
            self.post(size)

    async def doorbell(self):
        await self.ring.doorbell()

    def reset_ring(self):
        """After CTRL.reset: HEAD is 0 again; every descriptor back to the host (own=0)."""
        for index in range(self.ring.size):
            self.ring.write(index, Descriptor())
            self.guard.sync(self.ring.address(index), DESCRIPTOR_BYTES)
        self.ring.head = self.ring.tail = 0
        self.posted_size.clear()

    async def reap_frame(self, timeout_us: float = 100.0) -> RxFrame:
        descriptors = []
        while True:
            index = self.ring.head
            done = await self.ring.reap(timeout_us)
            size = self.posted_size.pop(index)
            descriptors.append((index, done))
            where = f"descriptor {index} (buffer {len(descriptors)} of a frame)"
            assert done.addr == buffer_address(index), f"{where}: word 0 was changed"
            assert done.length == size and not done.own, f"{where}: word 3 = {done}"
            assert done.sop == (len(descriptors) == 1), f"{where}: sop={done.sop}"
            assert done.done_length <= size, f"{where}: done_length {done.done_length} > {size}"
            self.guard.allow(done.addr, done.addr + done.done_length)
            self.guard.allow_writeback(self.ring, index)
            if done.eop:
                assert done.done_length >= 1, f"{where}: empty EOP buffer: {done}"
                break
            assert done.done_length == size, f"{where}: a non-EOP buffer must be full: {done}"
            assert done.frame_length == 0 and not done.error and done.rx_error == 0, (
                f"{where}: status on a non-EOP descriptor: {done}"
            )
        data = b"".join(self.bench.memory.read(d.addr, d.done_length) for _, d in descriptors)
        return RxFrame(descriptors, data)


def first_difference(a: bytes, b: bytes) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def expect_frame(
    frame: RxFrame,
    data: bytes,
    *,
    cause: RxErrorCause = RxErrorCause.NONE,
    truncated: bool = False,
    what: str = "frame",
):
    eop = frame.eop
    assert eop.frame_length == len(frame.data), (
        f"{what}: frame_length {eop.frame_length} != sum of done_length {len(frame.data)}"
    )
    assert frame.data == data, (
        f"{what}: {len(frame.data)} bytes in host memory differ from the {len(data)} sent"
        f" (first difference at byte {first_difference(frame.data, data)})"
    )
    bad = cause != RxErrorCause.NONE or truncated
    assert (eop.error, eop.rx_error, eop.rx_truncated) == (bad, cause, truncated), (
        f"{what}: EOP status error={eop.error} rx_error={eop.rx_error} "
        f"rx_truncated={eop.rx_truncated}, expected {bad}, {cause!r}, {truncated}"
    )


def buffers_for(length: int, size: int) -> int:
    return max(1, -(-length // size))


async def open_rx(bench, size: int = 64, **kwargs) -> tuple[RxDriver, MemoryGuard]:
    ring = await bench.open_ring("RX", RX_RING, size, **kwargs)
    guard = MemoryGuard(bench)
    return RxDriver(bench, guard, ring), guard


async def send(bench, data: bytes):
    await bench.rx_source.send(GmiiFrame.from_payload(data))


async def wire_idle(bench, extra_ns: int = 2000):
    """The wire model sent everything queued, and the pipeline had time to settle."""
    await bench.rx_source.wait()
    await Timer(extra_ns, "ns")


def ring_reads(bench) -> int:
    """Descriptors read from the RX ring, counted on the bus."""
    return sum(
        b.beats * LANES // DESCRIPTOR_BYTES
        for b in bench.memory.bursts
        if not b.write and RX_RING <= b.addr < RX_RING_END
    )


def data_write_bursts(bench) -> int:
    return sum(1 for b in bench.memory.bursts if b.write and b.addr >= RX_DATA)


async def check_counters(bench, frames: list[RxFrame], *, drops: int, good_wire: list[int]):
    """RX_* counters against the reaped frames and the bus; STATS_RX_*_GOOD against the
    good frames sent (``good_wire``: their payload lengths, without FCS)."""
    values = await bench.read_regs(
        "RX_DESC_FETCHED",
        "RX_BURSTS",
        "RX_BYTES",
        "RX_FRAMES",
        "RX_DROPS",
        "RX_FIFO_OVERFLOWS",
        "STATS_RX_FRAMES_GOOD",
        "STATS_RX_BYTES_GOOD",
    )
    expected = {
        "RX_DESC_FETCHED": ring_reads(bench),
        "RX_BURSTS": data_write_bursts(bench),
        "RX_BYTES": sum(len(f.data) for f in frames),
        "RX_FRAMES": len(frames),
        "RX_DROPS": drops,
        "RX_FIFO_OVERFLOWS": 0,
        "STATS_RX_FRAMES_GOOD": len(good_wire),
        "STATS_RX_BYTES_GOOD": sum(max(60, n) + 4 for n in good_wire),
    }
    assert values == expected, f"counters {values} != expected {expected}"


# ---- 1. multi-buffer frames -----------------------------------------------------------------


@cocotb.test()
async def test_rx_multi_buffer_frames(dut):
    """Buffers of 64, 128, 256 and 2048 bytes, frames of 60..1514 bytes sent back to back:
    each frame's bytes fill consecutive buffers in order (SOP first, EOP last, full
    buffers in between, frame_length on EOP only, no FCS stored); counters agree."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 64, burst_beats=16, prefetch=4)
    frames: list[RxFrame] = []
    good: list[int] = []
    seed = 0
    for size in (64, 128, 256, 2048):
        lengths = sorted(
            {60, 61, size - 1, size, size + 1, 2 * size + 3, 1514} & set(range(60, 1515))
        )
        while lengths:
            batch = []
            while lengths and sum(buffers_for(n, size) for n in [*batch, lengths[0]]) <= 56:
                batch.append(lengths.pop(0))
            # One spare buffer per batch: the DMA must leave it alone (memory guard); the
            # next batch starts in it, so frames also straddle buffers of two sizes.
            driver.post_many(sum(buffers_for(n, size) for n in batch) + 1, size)
            await driver.doorbell()
            sent = []
            for n in batch:
                seed += 1
                sent.append(payload(n, seed))
                await send(bench, sent[-1])
            for data in sent:
                frame = await driver.reap_frame()
                expect_frame(frame, data, what=f"{len(data)}-byte frame, {size}-byte buffers")
                frames.append(frame)
                good.append(len(data))
            guard.check(f"{size}-byte buffers")
    await wire_idle(bench)
    check_bursts(bench.memory.bursts, cap_beats=16, beat_bytes=LANES)
    await check_counters(bench, frames, drops=0, good_wire=good)
    guard.check("end")


# ---- 2. ring wrap -----------------------------------------------------------------------------


@cocotb.test()
async def test_rx_ring_wrap_reap_and_repost(dut):
    """A 7-entry ring of 256-byte buffers, 24 frames of 60..759 bytes: the host reaps each
    frame and re-posts the buffers it used, as a driver does; frames straddle the ring
    end and the ring wraps several times with every frame intact and in order."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 7, prefetch=3)
    size = 256
    driver.post_many(6, size)
    await driver.doorbell()
    frames, good, used = [], [], 0
    for k in range(24):
        data = payload(60 + (k * 97) % 700, 100 + k)
        await send(bench, data)
        frame = await driver.reap_frame()
        expect_frame(frame, data, what=f"frame {k}")
        assert frame.descriptors[0][0] == used % 7, f"frame {k} did not start at the ring head"
        used += len(frame.descriptors)
        frames.append(frame)
        good.append(len(data))
        driver.post_many(len(frame.descriptors), size)
        await driver.doorbell()
        guard.check(f"frame {k}")
    assert used >= 3 * 7, f"only {used} descriptors used: the ring wrapped fewer than 3 times"
    await wire_idle(bench, 500)
    assert await bench.read_reg(regs.RX_HEAD) == used % 7
    await check_counters(bench, frames, drops=0, good_wire=good)
    guard.check("end")


# ---- 3. ring exhaustion at line rate --------------------------------------------------------


@cocotb.test()
async def test_rx_ring_exhaustion_at_line_rate(dut):
    """Only N = 4 buffers posted, M = 12 frames back to back at 1 Gb/s (IFG 12): the first
    4 are delivered, exactly 8 are dropped and counted in RX_DROPS, nothing is written for
    them, and RX_FIFO_OVERFLOWS stays 0 (the DMA drops at wire speed). Accounting checked:
    sent = EOP descriptors + RX_DROPS + RX_FIFO_OVERFLOWS. Then a frame that runs out of
    buffers mid-frame ends truncated (error, rx_truncated) and is counted in RX_DROPS, the
    ring's loss (docs/descriptors.md: each lost frame counts once), and after the host
    posts more buffers later frames arrive intact."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 32, prefetch=4)
    n_posted, m_sent = 4, 12
    driver.post_many(n_posted, 2048)
    await driver.doorbell()
    sent = [payload(60 if k % 2 else 300, 200 + k) for k in range(m_sent)]
    for data in sent:
        await send(bench, data)
    await wire_idle(bench)
    frames = []
    for k in range(n_posted):
        frames.append(await driver.reap_frame())
        expect_frame(frames[-1], sent[k], what=f"frame {k}")
    guard.check("exhaustion")
    assert driver.ring.read(n_posted).own is False
    counts = await bench.read_regs("RX_DROPS", "RX_FIFO_OVERFLOWS", "RX_FRAMES", "RX_HEAD")
    assert counts == {
        "RX_DROPS": m_sent - n_posted,
        "RX_FIFO_OVERFLOWS": 0,
        "RX_FRAMES": n_posted,
        "RX_HEAD": n_posted,
    }, f"after {m_sent} frames into {n_posted} buffers: {counts}"
    assert len(frames) + counts["RX_DROPS"] + counts["RX_FIFO_OVERFLOWS"] == m_sent

    # Out of buffers in the middle of a frame: 3 buffers of 1024 for two 1500-byte frames.
    driver.post_many(3, 1024)
    await driver.doorbell()
    whole, cut = payload(1500, 300), payload(1500, 301)
    await send(bench, whole)
    await send(bench, cut)
    await wire_idle(bench)
    frames.append(await driver.reap_frame())
    expect_frame(frames[-1], whole, what="1500 bytes in 2 buffers")
    frames.append(await driver.reap_frame())
    expect_frame(frames[-1], cut[:1024], truncated=True, what="1500 bytes, 1 buffer left")
    guard.check("mid-frame exhaustion")
    counts = await bench.read_regs("RX_DROPS", "RX_FIFO_OVERFLOWS")
    ring_cut = 1  # the truncated 1500-byte frame
    assert counts == {"RX_DROPS": m_sent - n_posted + ring_cut, "RX_FIFO_OVERFLOWS": 0}, counts

    # Buffers again: later frames are delivered intact.
    driver.post_many(6, 2048)
    await driver.doorbell()
    later = [payload(n, 400 + n) for n in (60, 1514, 333)]
    for data in later:
        await send(bench, data)
    for data in later:
        frames.append(await driver.reap_frame())
        expect_frame(frames[-1], data, what=f"{len(data)}-byte frame after re-posting")
    await wire_idle(bench)
    good = [len(d) for d in sent] + [1500, 1500] + [len(d) for d in later]
    await check_counters(bench, frames, drops=m_sent - n_posted + ring_cut, good_wire=good)
    guard.check("end")


@cocotb.test()
async def test_rx_fifo_overflow_accounting(dut):
    """RX channel not yet running while 6 frames of 1514 bytes arrive back to back (more
    than the 4 KiB RX FIFO holds): once it runs, the frames the FIFO held come out intact,
    a frame it cut short comes out with rx_truncated, and every frame sent is accounted
    for exactly once: sent = intact + (cut or lost whole), with RX_FIFO_OVERFLOWS = cut +
    lost whole and RX_DROPS = 0. Later frames are intact."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 16)
    await bench.write_reg(regs.RX_CTRL, 0)  # open_ring set run; hold the channel
    driver.post_many(12, 2048)
    await driver.doorbell()
    sent = [payload(1514, 500 + k) for k in range(6)]
    for data in sent:
        await send(bench, data)
    await wire_idle(bench)
    assert not [b for b in bench.memory.bursts if b.write], "written while not running"
    await bench.write_reg(regs.RX_CTRL, regs.RX_CTRL_RUN_MASK)
    await Timer(20, "us")
    counts = await bench.read_regs("RX_FIFO_OVERFLOWS", "RX_DROPS", "RX_FRAMES")
    frames, intact, cut = [], 0, 0
    position = 0
    for _ in range(counts["RX_FRAMES"]):
        frame = await driver.reap_frame()
        frames.append(frame)
        # Frames come out in order; find which one this is (lost ones are skipped).
        while position < len(sent) and not sent[position].startswith(frame.data[:64]):
            position += 1
        assert position < len(sent), "delivered bytes match no frame sent (or out of order)"
        if frame.eop.rx_truncated:
            expect_frame(frame, sent[position][: len(frame.data)], truncated=True)
            cut += 1
        else:
            expect_frame(frame, sent[position], what=f"held frame {position}")
            intact += 1
        position += 1
    lost = len(sent) - intact - cut
    dut._log.info("RX FIFO overflow: %d intact, %d cut, %d lost whole", intact, cut, lost)
    assert cut + lost >= 1, "9 KB into a 4 KiB FIFO with the channel stopped must overflow"
    assert intact >= 2, f"a 4 KiB FIFO must hold two 1514-byte frames, held {intact}"
    assert counts["RX_DROPS"] == 0
    assert counts["RX_FIFO_OVERFLOWS"] == cut + lost, (
        f"RX_FIFO_OVERFLOWS {counts['RX_FIFO_OVERFLOWS']} != {cut} cut + {lost} lost whole"
    )
    assert intact + cut + lost == len(sent)
    guard.check("overflow")
    later = payload(700, 600)
    await send(bench, later)
    frames.append(await driver.reap_frame())
    expect_frame(frames[-1], later, what="frame after the overflow")
    guard.check("end")


# ---- 4. bad frames from the wire --------------------------------------------------------------


def corrupt_fcs(data: bytes) -> GmiiFrame:
    frame = GmiiFrame.from_payload(data)
    frame.data[-1] ^= 0x80
    return frame


def with_rx_er(data: bytes) -> GmiiFrame:
    frame = GmiiFrame.from_payload(data)
    frame.error = [0] * len(frame.data)
    frame.error[8 + len(data) // 2] = 1
    return frame


def runt(data: bytes) -> GmiiFrame:
    """40 bytes with a correct FCS: 44 < 64."""
    fcs = zlib.crc32(data[:40]).to_bytes(4, "little")
    return GmiiFrame.from_raw_payload(data[:40] + fcs)


BAD_CASES = {
    # kind: (wire frame, payload length, cause, MAC counter, bytes delivered)
    "bad_fcs": (corrupt_fcs, 300, RxErrorCause.FCS, "STATS_RX_FCS_ERRORS"),
    "rx_er": (with_rx_er, 300, RxErrorCause.PHY, "STATS_RX_PHY_ERRORS"),
    "runt": (runt, 100, RxErrorCause.RUNT, "STATS_RX_RUNTS"),
    "oversize": (GmiiFrame.from_payload, 1600, RxErrorCause.OVERSIZE, "STATS_RX_OVERSIZE"),
}


@cocotb.test()
async def test_rx_bad_frames_flagged_counted(dut):
    """Bad FCS, rx_er, runt and oversize frames are delivered into (several 256-byte)
    buffers with error = 1 and the right rx_error on the EOP descriptor, counted once in
    their MAC STATS_* register; the good frame after each is intact. A carrier without
    SFD counts in STATS_RX_PREAMBLE_ERRORS and uses no buffer."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 32)
    size = 256
    frames, good = [], []
    for number, (kind, (make, length, cause, counter)) in enumerate(BAD_CASES.items()):
        data = payload(length, 700 + number)
        after = payload(100 + number, 800 + number)
        driver.post_many(buffers_for(length, size) + 1, size)
        await driver.doorbell()
        await bench.rx_source.send(make(data))
        await send(bench, after)
        bad = await driver.reap_frame()
        if kind == "runt":
            expected = data[:40]
        elif kind == "oversize":
            # docs/mac.md: "bytes up to the limit, then a flagged last beat": the 1514
            # bytes MAC_MAX_LEN (1518 with FCS) allows, then one flagged byte whose value
            # the MAC does not define (hdl/mac/rx.py sends the frame's last data byte).
            assert len(bad.data) == 1518 - 4 + 1, f"oversize: {len(bad.data)} bytes"
            expected = data[: 1518 - 4] + bad.data[-1:]
        else:
            expected = data
        expect_frame(bad, expected, cause=cause, what=kind)
        frames.append(bad)
        frames.append(await driver.reap_frame())
        expect_frame(frames[-1], after, what=f"good frame after {kind}")
        good.append(len(after))
        guard.check(kind)
        await wire_idle(bench, 500)
        stats = await bench.read_regs(counter, "STATS_RX_FRAMES_BAD")
        assert stats == {counter: 1, "STATS_RX_FRAMES_BAD": number + 1}, f"{kind}: {stats}"

    head = driver.ring.head
    driver.post_many(2, size)
    await driver.doorbell()
    after = payload(90, 900)
    await bench.rx_source.send(GmiiFrame(b"\x55\x55\x55\x13" + payload(100, 901)))
    await send(bench, after)
    frames.append(await driver.reap_frame())
    expect_frame(frames[-1], after, what="good frame after a carrier without SFD")
    assert frames[-1].descriptors[0][0] == head, "the frame without SFD used a buffer"
    good.append(len(after))
    await wire_idle(bench)
    stats = await bench.read_regs("STATS_RX_PREAMBLE_ERRORS", "STATS_RX_FRAMES_BAD")
    assert stats == {"STATS_RX_PREAMBLE_ERRORS": 1, "STATS_RX_FRAMES_BAD": 4}, stats
    assert driver.ring.read(driver.ring.head).own, "the spare buffer must stay posted"
    await check_counters(bench, frames, drops=0, good_wire=good)
    guard.check("end")


# ---- 5. AXI errors: halt RX only, recover by reset --------------------------------------------


async def wait_status(bench, register: int, done, timeout_us: float = 100.0) -> int:
    waited = 0.0
    while True:
        value = await bench.read_reg(register)
        if done(value):
            return value
        await Timer(500, "ns")
        waited += 0.5
        assert waited < timeout_us, f"register 0x{register:x} stuck at 0x{value:x}"


def rx_bursts(bench, since: int = 0) -> list:
    return [
        b
        for b in bench.memory.bursts[since:]
        if RX_RING <= b.addr < RX_RING_END or b.addr >= RX_DATA
    ]


@cocotb.test()
@cocotb.parametrize(where=["desc_fetch", "data_write", "writeback"])
async def test_rx_bus_error_halts_rx_only_and_recovers(dut, where):
    """SLVERR on a descriptor fetch, a buffer data write or a write-back: RX_STATUS shows
    halted and the error code, IRQ_STATUS.rx_error and the irq line rise, no further RX
    bus access happens and no memory changes, TX still sends. CTRL.reset and a re-posted
    ring recover: frames the RX FIFO held during the halt and later frames are delivered
    intact; the frame being written at the error is lost (never completed)."""
    bench = await started(dut)
    await bench.write_reg(regs.IRQ_ENABLE, regs.IRQ_ENABLE_RX_ERROR_MASK)
    tx_ring = await bench.open_ring("TX", TX_RING, 4)
    driver, guard = await open_rx(bench, 8, prefetch=1)
    ring = driver.ring
    size = 256
    driver.post_many(2, size)
    await driver.doorbell()
    first = payload(100, 1)
    await send(bench, first)
    expect_frame(await driver.reap_frame(), first, what="frame before the error")
    guard.check("before the error")

    windows = {
        "desc_fetch": (ring.address(2), ring.address(2) + DESCRIPTOR_BYTES, "r"),
        "data_write": (buffer_address(1), buffer_address(1) + size, "w"),
        "writeback": (ring.address(1) + 4, ring.address(1) + DESCRIPTOR_BYTES, "w"),
    }
    codes = {
        "desc_fetch": DmaErrorCode.DESC_FETCH_BUS_ERROR,
        "data_write": DmaErrorCode.DATA_WRITE_BUS_ERROR,
        "writeback": DmaErrorCode.WRITEBACK_BUS_ERROR,
    }
    bench.memory.error_windows.append(windows[where])
    driver.post_many(2, size)
    await driver.doorbell()
    victim = payload(100, 2)
    await send(bench, victim)
    status = await wait_status(bench, regs.RX_STATUS, lambda v: v & regs.RX_STATUS_HALTED_MASK)
    code = (status & regs.RX_STATUS_ERROR_CODE_MASK) >> regs.RX_STATUS_ERROR_CODE_SHIFT
    assert code == codes[where], f"error_code {code}, expected {codes[where]!r}"
    assert not status & regs.RX_STATUS_RUNNING_MASK
    irq_status = await bench.read_reg(regs.IRQ_STATUS)
    assert irq_status & regs.IRQ_STATUS_RX_ERROR_MASK, f"IRQ_STATUS 0x{irq_status:x}"
    assert not irq_status & regs.IRQ_STATUS_TX_ERROR_MASK
    assert int(dut.irq.value) == 1, "irq line low with rx_error enabled"
    await wire_idle(bench)
    assert await bench.read_reg(regs.RX_HEAD) == 1
    assert ring.read(1).own, "the descriptor in use at the error must keep own"
    if where == "writeback":
        guard.allow(buffer_address(1), buffer_address(1) + len(victim))
        assert bench.memory.read(buffer_address(1), len(victim)) == victim
    guard.check("up to the error")
    bursts_at_halt = len(bench.memory.bursts)

    # Halted: later frames are not written anywhere; TX still works.
    held = payload(120, 3)
    await send(bench, held)
    tx_data = payload(80, 4)
    bench.memory.write(TX_DATA, tx_data)
    tx_ring.post(Descriptor.tx(TX_DATA, len(tx_data), sop=True, eop=True))
    guard.sync(tx_ring.address(0), DESCRIPTOR_BYTES)
    guard.sync(TX_DATA, len(tx_data))
    await tx_ring.doorbell()
    out = await with_timeout(bench.tx_sink.recv(), 100, "us")
    assert out.check_fcs() and out.get_payload() == tx_data, "TX frame wrong while RX halted"
    tx_done = await tx_ring.reap()
    guard.allow_writeback(tx_ring, 0)
    assert tx_done.done_length == len(tx_data)
    await wire_idle(bench)
    assert await bench.read_reg(regs.TX_STATUS) & regs.TX_STATUS_HALTED_MASK == 0
    assert not rx_bursts(bench, bursts_at_halt), "RX bus access after the error"
    guard.check("after the error")
    status = await bench.read_reg(regs.RX_STATUS)
    assert status & regs.RX_STATUS_HALTED_MASK, "the halt must last until CTRL.reset"

    # Recovery as the rx_channel docstring says: stop, reset, re-post, run.
    bench.memory.error_windows.clear()
    await bench.write_reg(regs.RX_CTRL, 0)
    await bench.write_reg(regs.RX_CTRL, regs.RX_CTRL_RESET_MASK)
    await wait_status(bench, regs.RX_STATUS, lambda v: v == 0)
    assert await bench.read_reg(regs.RX_HEAD) == 0
    await bench.write_reg(regs.IRQ_STATUS, regs.IRQ_STATUS_RX_ERROR_MASK)
    await ClockCycles(dut.clk, 4)
    irq_status = await bench.read_reg(regs.IRQ_STATUS)
    assert not irq_status & regs.IRQ_STATUS_RX_ERROR_MASK, f"IRQ_STATUS 0x{irq_status:x}"
    assert int(dut.irq.value) == 0, "irq still high after clearing rx_error"
    driver.reset_ring()
    driver.post_many(6, size)
    await bench.write_reg(regs.RX_CTRL, regs.RX_CTRL_RUN_MASK)
    await driver.doorbell()
    later = payload(200, 5)
    await send(bench, later)
    # The victim was consumed only when the fetch failed before it reached the channel.
    expected = ([victim] if where == "desc_fetch" else []) + [held, later]
    for number, data in enumerate(expected):
        frame = await driver.reap_frame()
        expect_frame(frame, data, what=f"frame {number} after recovery")
        assert frame.descriptors[0][0] == number
    await wire_idle(bench)
    assert not ring.read(len(expected)).done_length, "an extra frame was delivered"
    counts = await bench.read_regs("RX_DROPS", "RX_FIFO_OVERFLOWS", "RX_STATUS")
    assert counts == {"RX_DROPS": 0, "RX_FIFO_OVERFLOWS": 0, "RX_STATUS": 1}, counts
    guard.check("after recovery")


# ---- 6. buffers posted late -------------------------------------------------------------------


@cocotb.test()
async def test_rx_buffers_posted_late(dut):
    """Frames arriving while the ring is empty are dropped whole and counted; no byte of
    host memory is written. Buffers posted afterwards receive the next frames."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 16)
    early = [payload(n, 1000 + n) for n in (60, 500, 1514)]
    for data in early:
        await send(bench, data)
    await wire_idle(bench)
    assert not [b for b in bench.memory.bursts if b.write], "memory written with no buffer"
    guard.check_untouched("frames with no buffer")
    counts = await bench.read_regs("RX_DROPS", "RX_FRAMES", "RX_HEAD", "RX_FIFO_OVERFLOWS")
    assert counts == {"RX_DROPS": 3, "RX_FRAMES": 0, "RX_HEAD": 0, "RX_FIFO_OVERFLOWS": 0}
    driver.post_many(4, 2048)
    await driver.doorbell()
    later = [payload(n, 1100 + n) for n in (1514, 64)]
    frames = []
    for data in later:
        await send(bench, data)
    for number, data in enumerate(later):
        frames.append(await driver.reap_frame())
        expect_frame(frames[-1], data, what=f"frame {number} after posting")
        assert frames[-1].descriptors[0][0] == number
    await wire_idle(bench)
    good = [len(d) for d in early + later]
    await check_counters(bench, frames, drops=3, good_wire=good)
    guard.check("end")


@cocotb.test()
@cocotb.parametrize(prefetch=[1, 4])
async def test_rx_frame_finds_buffer_posted_without_doorbell(dut, prefetch):
    """docs/descriptors.md: own is the only authority, and a frame is dropped only if the
    descriptor at HEAD is not owned when it must start. Buffers posted without a doorbell
    (and one re-posted without a doorbell mid-frame) are found by the channel's re-read
    of the ring, so no frame is dropped or truncated."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 8, prefetch=prefetch)
    driver.post_many(2, 256)  # no doorbell
    first = payload(100, 1500)
    await send(bench, first)
    await wire_idle(bench)
    drops = await bench.read_reg(regs.RX_DROPS)
    assert drops == 0, (
        f"prefetch {prefetch}: RX_DROPS = {drops}: the frame was dropped although the "
        "descriptor at HEAD was owned (and the channel's own re-read of the ring fetched it)"
    )
    frame = await driver.reap_frame()
    expect_frame(frame, first, what="frame whose buffer was posted without a doorbell")
    # A 400-byte frame: buffer 1 holds 256 bytes, buffer 2 is posted without a doorbell.
    driver.post(256)
    second = payload(400, 1501)
    await send(bench, second)
    frames = [frame, await driver.reap_frame()]
    expect_frame(frames[-1], second, what="frame spilling into a buffer without doorbell")
    await wire_idle(bench)
    drops = await bench.read_reg(regs.RX_DROPS)
    assert drops == 0, (
        f"RX_DROPS = {drops}: a frame was dropped although the descriptor at HEAD was owned"
    )
    await check_counters(bench, frames, drops=0, good_wire=[100, 400])
    guard.check("end")


# ---- 7. counters ------------------------------------------------------------------------------


@cocotb.test()
async def test_rx_counters_match_traffic(dut):
    """Short bursts (4 beats), prefetch 8, frames over 128-byte buffers, a bad frame and
    drops: RX_DESC_FETCHED equals the descriptors read on the bus, RX_BURSTS the data
    bursts, RX_BYTES the done_length sum, RX_FRAMES the EOPs, RX_DROPS the frames with no
    buffer, and STATS_RX_FRAMES_GOOD/BYTES_GOOD the good frames sent."""
    bench = await started(dut)
    driver, guard = await open_rx(bench, 32, burst_beats=4, prefetch=8)
    sent = [payload(n, 1200 + n) for n in (60, 129, 300, 511, 1000)]
    driver.post_many(sum(buffers_for(len(d), 128) for d in sent) + 2 + 4, 128)
    await driver.doorbell()
    for data in sent:
        await send(bench, data)
    await bench.rx_source.send(corrupt_fcs(payload(200, 1300)))
    frames = []
    for data in sent:
        frames.append(await driver.reap_frame())
        expect_frame(frames[-1], data)
    frames.append(await driver.reap_frame())
    expect_frame(frames[-1], payload(200, 1300), cause=RxErrorCause.FCS)
    # Use up the remaining 4 buffers exactly (2 frames), then 3 more are dropped.
    extra = [payload(n, 1400 + n) for n in (200, 250, 70, 80, 90)]
    for data in extra:
        await send(bench, data)
    for data in extra[:2]:
        frames.append(await driver.reap_frame())
        expect_frame(frames[-1], data)
    await wire_idle(bench)
    check_bursts(bench.memory.bursts, cap_beats=4, beat_bytes=LANES)
    good = [len(d) for d in sent + extra]
    await check_counters(bench, frames, drops=3, good_wire=good)
    assert await bench.read_reg(regs.STATS_RX_BYTES_BAD) == 204
    guard.check("end")
