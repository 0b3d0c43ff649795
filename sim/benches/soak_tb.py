"""cocotb module behind ``macdma soak``: full duplex on ``macdma_soc`` for many frames, with
everything random that a driver and a bus can vary, and every byte accounted for.

The run is planned from its seed (sim/soak_plan.py) and goes segment by segment: the
driver model (ideal CPU) opens the device with the segment's settings (rings, RX buffer
size, burst cap, prefetch, IRQ strategy and coalescing, rate limit), the bench sets host
memory's latency and back-pressure on all five AXI channels, then a TX generator hands
the segment's frames to ``xmit`` in random fragment layouts (odd addresses, 4 KiB
crossings) while an RX generator sends frames of random sizes, with random idle gaps.
Once both directions have drained, the driver closes the device and the bench checks:

- every TX frame on the wire byte for byte and in order; every RX frame at
  ``on_receive`` byte for byte and in order, or dropped and counted (RX_DROPS,
  RX_FIFO_OVERFLOWS): sent = delivered + counted, nothing lost silently or duplicated;
- host memory: the DMA wrote nothing outside the segment's rings and RX buffers (a
  :class:`~macdma.sim.benches.guard.MemoryGuard` over all other memory, TX buffers
  included), and never past the length it reported in an RX buffer (poisoned on post);
- the STATS and channel counters against the bench's own counts.

One JSON line per segment goes to env ``MACDMA_SOAK_RECORD`` (so a run stopped half-way
still says what it survived), then a summary line with the coverage bins.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import struct
import time

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware.descriptor import Descriptor
from macdma.firmware.driver import DriverConfig, IrqStrategy, MacDmaDriver, RxRing, TxRing
from macdma.sim.benches.coverage import SoakCoverage
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.benches.guard import MemoryGuard
from macdma.sim.benches.soc import SocBench
from macdma.sim.cpu import CpuModel
from macdma.sim.cpus import load_cpu
from macdma.sim.platform_cocotb import CocotbPlatform
from macdma.sim.progress import PROGRESS_ENV
from macdma.sim.soak_plan import (
    AXI_CHANNELS,
    MAX_RX_BUF_BYTES,
    MAX_TX_RING,
    RECORD_ENV,
    SOAK_ENV,
    TX_WINDOW_BYTES,
    Segment,
    SoakConfig,
    TxLayout,
    frame_sizes,
    plan_segments,
    tx_layouts,
)

ETHERTYPE = 0x88B5  # IEEE local experimental
TX_TAG, RX_TAG = 0x01, 0x02  # last byte of the source MAC tells the directions apart
FCS_BYTES = 4
SYS_CLK_NS = 8.0  # 125 MHz: the SoC's system clock on the boards

# Host memory: the allocator's arena (rings, RX buffers) and the TX fragment windows,
# with guarded memory below, between and above them.
MEMORY_BYTES = 4 << 20
ARENA_BASE, ARENA_END = 0x1000, 0x80000
TX_WINDOWS_BASE = 0x100000
assert TX_WINDOWS_BASE + MAX_TX_RING * TX_WINDOW_BYTES < MEMORY_BYTES

#: Back-pressure: a channel is paused for runs of this many ns on average.
PAUSE_RUN_NS = 400.0
#: A segment must drain within this much simulated time per frame (plus a fixed margin).
SEGMENT_NS_PER_FRAME = 200_000
SEGMENT_MARGIN_NS = 5_000_000


def make_frame(tag: int, seq: int, size: int) -> bytes:
    """*size* bytes: Ethernet header, the sequence number, then bytes derived from both."""
    header = bytes([0x02, 0, 0, 0, 0, 0x10, 0x02, 0, 0, 0, 0, tag])
    header += struct.pack(">HI", ETHERTYPE, seq)
    body = random.Random(seq * 4 + tag).randbytes(size - len(header))
    return header + body


def frame_seq(data: bytes) -> int | None:
    return struct.unpack(">I", data[14:18])[0] if len(data) >= 18 else None


class SoakPlatform(CocotbPlatform):
    """The driver's platform with its allocator confined to the soak's arena, rewound at
    every segment (the previous segment's rings and buffers are free once it closed)."""

    def __init__(self, bench, cpu: CpuModel) -> None:
        super().__init__(bench, cpu, dma_base=ARENA_BASE)

    def dma_alloc(self, size: int, align: int = 16) -> int:
        address = super().dma_alloc(size, align)
        if address + size > ARENA_END:
            raise MemoryError(f"soak arena exhausted: {size} bytes at 0x{address:x}")
        return address


class SoakTxRing(TxRing):
    """TX ring whose fragments sit where the layout says: slot *i*'s window starts at
    ``TX_WINDOWS_BASE + i * TX_WINDOW_BYTES``, the fragment at its planned offset (odd,
    across the window's 4 KiB boundary, ...). The host's writes are told to the guard."""

    def __init__(self, platform, size: int, guard: MemoryGuard) -> None:
        super().__init__(platform, size)
        self.guard = guard
        self.offsets: list[int] = []  # of the frame being mapped, consumed in order

    def map_fragment(self, index: int, data: bytes) -> int:
        address = TX_WINDOWS_BASE + index * TX_WINDOW_BYTES + self.offsets.pop(0)
        self.platform.mem_write(address, data)
        self.guard.host_wrote(address, data)
        return address


class SoakRxRing(RxRing):
    """RX ring whose buffers are poisoned when posted, so that a write past the length the
    DMA reports (in ``done_length``) shows when the descriptor is reaped."""

    def __init__(self, platform, size: int, buffer_bytes: int, poison: bytes, problems: list):
        super().__init__(platform, size, buffer_bytes)
        self.memory = platform.memory
        self.poison = poison[:buffer_bytes]
        self.problems = problems

    def post(self, index: int, desc: Descriptor) -> None:
        # Written straight into memory (not through the CPU's store path): a bench check,
        # not driver work; the descriptor store that follows lands after it.
        self.memory.write(self.buffers[index], self.poison)
        super().post(index, desc)

    def read(self, index: int) -> Descriptor:
        desc = super().read(index)
        if not desc.own:
            start = self.buffers[index] + desc.done_length
            tail = self.memory.read(start, self.buffer_bytes - desc.done_length)
            if tail != self.poison[desc.done_length :]:
                self.problems.append(
                    f"RX buffer {index} at 0x{self.buffers[index]:x}: the DMA wrote past "
                    f"the {desc.done_length} bytes it reported"
                )
        return desc


class BackPressure:
    """Pauses one AXI channel of host memory for random runs, so that a *fraction* of
    the time it is stalled (ready or valid held low), toggled by a task per channel."""

    def __init__(self, channel, rng: random.Random):
        self.channel, self.rng = channel, rng
        self.task = None

    def start(self, fraction: float) -> None:
        self.stop()
        if fraction > 0:
            self.task = cocotb.start_soon(self._run(fraction))

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self.channel.pause = False

    async def _run(self, fraction: float) -> None:
        running_ns = PAUSE_RUN_NS * (1 - fraction) / fraction
        while True:
            await Timer(max(8, round(self.rng.expovariate(1 / running_ns))), "ns")
            self.channel.pause = True
            await Timer(max(8, round(self.rng.expovariate(1 / PAUSE_RUN_NS))), "ns")
            self.channel.pause = False


def axi_channels(memory) -> dict:
    """Host memory's five channel models by AXI name."""
    return {
        "aw": memory.write_if.aw_channel,
        "w": memory.write_if.w_channel,
        "b": memory.write_if.b_channel,
        "ar": memory.read_if.ar_channel,
        "r": memory.read_if.r_channel,
    }


class Progress:
    """Frames done per direction, as JSON lines to env ``MACDMA_PROGRESS`` (``macdma
    soak`` draws them), about every 0.5% of the run."""

    def __init__(self, total: int):
        self.path = os.environ.get(PROGRESS_ENV)
        self.total = total
        self.step = max(1, total // 200)
        self.done = {"tx": 0, "rx": 0}

    def count(self, direction: str, frames: int = 1) -> None:
        before = self.done[direction]
        self.done[direction] = after = before + frames
        if self.path and (after // self.step != before // self.step or after == self.total):
            record = {"direction": direction, "done": after, "total": self.total}
            with open(self.path, "a") as progress:
                progress.write(json.dumps({**record, "sim_us": get_sim_time("ns") / 1e3}) + "\n")


STATS_NAMES = (
    "STATS_TX_FRAMES_GOOD",
    "STATS_TX_BYTES_GOOD",
    "STATS_TX_FRAMES_BAD",
    "STATS_RX_FRAMES_GOOD",
    "STATS_RX_BYTES_GOOD",
    "STATS_RX_FRAMES_BAD",
    "TX_FRAMES",
    "TX_DROPS",
    "RX_FRAMES",
    "RX_DROPS",
    "RX_FIFO_OVERFLOWS",
)


class SegmentRun:
    """One segment: open the driver with its settings, move its frames both ways, drain,
    close, check. ``problems`` collects every check that failed (as sentences)."""

    def __init__(self, soak: Soak, segment: Segment):
        self.soak, self.segment = soak, segment
        self.bench = soak.bench
        self.problems: list[str] = []
        seed = soak.config.seed
        self.tx_sizes = frame_sizes(seed, segment.index, "tx", segment.tx_frames)
        self.rx_sizes = frame_sizes(seed, segment.index, "rx", segment.rx_frames)
        self.layouts = tx_layouts(seed, segment.index, self.tx_sizes)
        self.tx_first, self.rx_first = soak.tx_sent, soak.rx_sent
        self.delivered = 0
        self.rx_errored = 0
        self.last_rx_seq = self.rx_first - 1
        self.tasks: list = []

    # -- the driver --------------------------------------------------------------------

    def driver_config(self) -> DriverConfig:
        s = self.segment
        strategy = IrqStrategy(
            name=s.irq,
            coalesce_frames=s.coalesce_frames,
            coalesce_us=s.coalesce_us,
            poll_us=s.poll_us,
            budget=s.budget,
        )
        return DriverConfig(
            tx_ring=s.tx_ring,
            rx_ring=s.rx_ring,
            rx_buf=s.rx_buf,
            burst_beats=s.burst_beats,
            prefetch=s.prefetch,
            strategy=strategy,
            sys_clk_mhz=round(1000 / SYS_CLK_NS),
            irq_min_interval_us=s.irq_min_interval_us,
        )

    async def open(self) -> None:
        soak = self.soak
        self.cpu = CpuModel(soak.cpu_spec.clock_mhz, soak.cpu_spec.costs)
        self.platform = SoakPlatform(self.bench, self.cpu)
        config = self.driver_config()
        self.driver = MacDmaDriver(
            self.platform, config, on_receive=self.on_receive, costs=soak.cpu_spec.costs
        )
        self.driver.tx = SoakTxRing(self.platform, config.tx_ring, soak.guard)
        self.driver.rx = SoakRxRing(
            self.platform, config.rx_ring, config.rx_buf, soak.poison, self.problems
        )
        for start, size in self.platform.allocations:  # rings and RX buffers
            soak.guard.allow(start, start + size)
        soak.coverage.sample_segment(self.segment)
        await self.driver.open()
        self.tasks.append(cocotb.start_soon(self.driver.run(self._spawn)))

    def _spawn(self, coroutine):
        task = cocotb.start_soon(coroutine)
        self.tasks.append(task)
        return task

    # -- traffic -----------------------------------------------------------------------

    def on_receive(self, data: bytes, ok: bool, meta) -> None:
        data = bytes(data)
        seq = frame_seq(data)
        self.soak.coverage.sample_rx_frame(len(data), meta.buffers)
        if not ok:
            self.check_flagged(data, seq, meta)
            return
        index = None if seq is None else seq - self.rx_first
        if index is None or not 0 <= index < len(self.rx_sizes):
            self.problems.append(f"RX frame of {len(data)} bytes with a foreign sequence {seq}")
            return
        if seq <= self.last_rx_seq:
            self.problems.append(f"RX frame {seq} after {self.last_rx_seq}: duplicated or late")
        self.last_rx_seq = max(self.last_rx_seq, seq)
        if data != make_frame(RX_TAG, seq, self.rx_sizes[index]):
            self.problems.append(f"RX frame {seq} damaged ({len(data)} bytes)")
        self.delivered += 1
        self.soak.progress.count("rx")

    def check_flagged(self, data: bytes, seq: int | None, meta) -> None:
        """A frame delivered flagged bad. On a clean wire only a truncated one may come (the
        RX FIFO or the ring ran out mid-frame: counted in RX_FIFO_OVERFLOWS or RX_DROPS, as
        docs/descriptors.md says), and what it carries must be the frame's first bytes."""
        self.rx_errored += 1
        if meta.rx_error or not meta.rx_truncated:
            self.problems.append(f"RX frame (seq {seq}) flagged bad on a clean wire: {meta}")
            return
        index = None if seq is None else seq - self.rx_first
        if index is not None and 0 <= index < len(self.rx_sizes):
            expected = make_frame(RX_TAG, seq, self.rx_sizes[index])
            if data != expected[: len(data)]:
                self.problems.append(f"truncated RX frame {seq}: its first bytes are damaged")

    async def transmit(self) -> None:
        driver, platform = self.driver, self.platform
        for n, layout in enumerate(self.layouts):
            seq = self.tx_first + n
            frame = make_frame(TX_TAG, seq, self.tx_sizes[n])
            fragments = split(frame, layout)
            self.soak.coverage.sample_tx_frame(layout)
            while True:
                if driver.queue_stopped:
                    await driver.wait_for_wake()
                    continue
                driver.tx.offsets = list(layout.offsets)
                async with platform.context("softirq"):
                    sent = await driver.xmit(fragments)
                if sent:
                    break

    async def collect_wire(self) -> None:
        for n, size in enumerate(self.tx_sizes):
            seq = self.tx_first + n
            frame = await self.bench.tx_sink.recv()
            payload = bytes(frame.get_payload())
            if frame.error is not None or not frame.check_fcs():
                self.problems.append(f"TX frame {seq}: bad FCS or an error on the wire")
            if payload != make_frame(TX_TAG, seq, size):
                got = frame_seq(payload)
                self.problems.append(f"TX frame {seq} damaged or out of order (got seq {got})")
            self.soak.progress.count("tx")

    async def send_rx(self) -> None:
        source, rng = self.bench.rx_source, self.soak.rng
        for n, size in enumerate(self.rx_sizes):
            data = make_frame(RX_TAG, self.rx_first + n, size)
            await source.send(GmiiFrame.from_payload(data))
            if rng.random() < self.segment.rx_gap_fraction:
                await source.wait()
                await Timer(rng.randint(1, 8), "us")
        await source.wait()

    async def rx_accounted(self) -> None:
        """Wait until every RX frame sent is delivered or counted as dropped."""
        while True:
            dropped = await self.dropped_rx()
            if self.delivered + dropped >= self.segment.rx_frames:
                return
            await Timer(5, "us")

    async def dropped_rx(self) -> int:
        counts = await self.bench.read_regs("RX_DROPS", "RX_FIFO_OVERFLOWS")
        before = self.stats_before
        return sum(counts[name] - before[name] for name in counts)

    async def tx_cleaned(self) -> None:
        while self.driver.stats.tx_packets < self.segment.tx_frames:
            await Timer(5, "us")

    # -- the segment -------------------------------------------------------------------

    async def run(self) -> dict:
        soak, segment = self.soak, self.segment
        started_ns, started_wall = get_sim_time("ns"), time.monotonic()
        self.bench.memory.latency_cycles = segment.mem_latency_cycles
        for name in AXI_CHANNELS:
            soak.pausers[name].start(segment.pause_fraction.get(name, 0.0))
        await self.open()
        self.stats_before = await self.bench.read_regs(*STATS_NAMES)
        wire = cocotb.start_soon(self.collect_wire())
        cocotb.start_soon(self.transmit())
        rx = cocotb.start_soon(self.send_rx())
        limit_ns = (segment.tx_frames + segment.rx_frames) * SEGMENT_NS_PER_FRAME
        limit_ns += SEGMENT_MARGIN_NS
        try:
            for task in (wire, rx):
                await with_timeout(task, limit_ns, "ns")
            await with_timeout(cocotb.start_soon(self.rx_accounted()), limit_ns, "ns")
            await with_timeout(cocotb.start_soon(self.tx_cleaned()), limit_ns, "ns")
        except TimeoutError:
            self.problems.append(
                f"segment {segment.index} did not drain within {limit_ns / 1e6:.1f} ms: "
                f"{self.soak.progress.done} frames done, {self.delivered} delivered here"
            )
        await self.driver.close()
        await Timer(2, "us")  # an ISR already entered finishes its MMIO
        for task in self.tasks:
            task.cancel()
        for pauser in soak.pausers.values():
            pauser.stop()
        stats = await self.check_counters()
        soak.guard_check(self.problems, f"segment {segment.index}")
        soak.tx_sent += segment.tx_frames
        soak.rx_sent += segment.rx_frames
        driver = dataclasses.asdict(self.driver.stats)
        return {
            "segment": dataclasses.asdict(segment),
            "tx_frames": segment.tx_frames,
            "rx_frames": segment.rx_frames,
            "rx_delivered": self.delivered,
            "rx_dropped_counted": stats["RX_DROPS"] + stats["RX_FIFO_OVERFLOWS"],
            "rx_truncated_delivered": self.rx_errored,
            "tx_bytes": sum(self.tx_sizes),
            "rx_bytes": sum(self.rx_sizes),
            "stats": stats,
            "driver": {k: driver[k] for k in ("irqs", "timer_irqs", "polls", "queue_stops")},
            "sim_ns": get_sim_time("ns") - started_ns,
            "wall_seconds": time.monotonic() - started_wall,
            "problems": self.problems[:20],
            "problem_count": len(self.problems),
        }

    async def check_counters(self) -> dict:
        """The counters' segment deltas against the bench's own counts."""
        after = await self.bench.read_regs(*STATS_NAMES)
        delta = {name: (after[name] - self.stats_before[name]) % (1 << 32) for name in after}
        s = self.segment
        dropped = delta["RX_DROPS"] + delta["RX_FIFO_OVERFLOWS"]
        expected = {
            "STATS_TX_FRAMES_GOOD": s.tx_frames,
            "STATS_TX_BYTES_GOOD": sum(self.tx_sizes) + FCS_BYTES * s.tx_frames,
            "STATS_TX_FRAMES_BAD": 0,
            "STATS_RX_FRAMES_GOOD": s.rx_frames,
            "STATS_RX_BYTES_GOOD": sum(self.rx_sizes) + FCS_BYTES * s.rx_frames,
            "STATS_RX_FRAMES_BAD": 0,
            "TX_FRAMES": s.tx_frames,
            "TX_DROPS": 0,
            # Truncated frames are completed (and counted as overflows or drops) too.
            "RX_FRAMES": self.delivered + self.rx_errored,
        }
        for name, value in expected.items():
            if delta[name] != value:
                self.problems.append(
                    f"segment {s.index}: {name} moved by {delta[name]}, the bench counted {value}"
                )
        if self.delivered + dropped != s.rx_frames:
            self.problems.append(
                f"segment {s.index}: {s.rx_frames} RX frames sent, {self.delivered} delivered "
                f"and {dropped} counted as dropped: {s.rx_frames - self.delivered - dropped} "
                "unaccounted for"
            )
        if self.rx_errored > dropped:
            self.problems.append(
                f"segment {s.index}: {self.rx_errored} truncated RX frames delivered, only "
                f"{dropped} counted in RX_DROPS and RX_FIFO_OVERFLOWS"
            )
        stats = self.driver.stats
        if stats.tx_packets != s.tx_frames:
            self.problems.append(
                f"segment {s.index}: the driver reaped {stats.tx_packets} of {s.tx_frames} "
                "TX frames"
            )
        return delta


def split(frame: bytes, layout: TxLayout) -> list[bytes]:
    parts, offset = [], 0
    for length in layout.lengths:
        parts.append(frame[offset : offset + length])
        offset += length
    return parts


class Soak:
    """The whole run: the bench, the guard, the back-pressure tasks and the counts."""

    def __init__(self, dut, config: SoakConfig):
        self.config = config
        self.rng = random.Random(f"soak-bench-{config.seed}")
        self.bench = SocBench(dut, GMII_1000, sys_clk_ns=SYS_CLK_NS, memory_bytes=MEMORY_BYTES)
        self.cpu_spec = load_cpu("ideal")
        self.progress = Progress(config.frames)
        self.coverage = SoakCoverage()
        self.poison = random.Random(f"soak-poison-{config.seed}").randbytes(MAX_RX_BUF_BYTES)
        self.tx_sent = self.rx_sent = 0
        self.record_path = os.environ.get(RECORD_ENV)

    async def start(self) -> None:
        await self.bench.start()
        # Every byte of host memory starts as a pattern, so a stray write of any value shows.
        pattern = random.Random(f"soak-memory-{self.config.seed}").randbytes(MEMORY_BYTES)
        self.bench.memory.write(0, pattern)
        self.guard = MemoryGuard(self.bench)
        channels = axi_channels(self.bench.memory)
        self.pausers = {
            name: BackPressure(channels[name], random.Random(f"soak-pause-{name}"))
            for name in AXI_CHANNELS
        }

    def guard_check(self, problems: list[str], what: str) -> None:
        bad = self.guard.outside_allowed()
        if bad:
            from macdma.sim.benches.guard import format_ranges

            problems.append(
                f"{what}: the DMA wrote host memory outside the rings and posted RX buffers "
                f"at {format_ranges(bad)}"
            )
        self.guard.restart()

    def write_record(self, record: dict) -> None:
        if self.record_path:
            with open(self.record_path, "a") as out:
                out.write(json.dumps(record) + "\n")


@cocotb.test()
async def test_soak(dut):
    """Run the planned segments; fail on any frame damaged, reordered, duplicated or lost
    without being counted, any stray DMA write or any counter that disagrees."""
    text = os.environ.get(SOAK_ENV)
    if not text:
        raise RuntimeError(f"env {SOAK_ENV} is not set: run through macdma soak")
    config = SoakConfig.from_json(text)
    soak = Soak(dut, config)
    await soak.start()
    problems: list[str] = []
    for segment in plan_segments(config):
        dut._log.info(segment.describe())
        result = await SegmentRun(soak, segment).run()
        soak.write_record({"kind": "segment", **result})
        problems += result["problems"]
        if result["problem_count"]:
            break  # the first failing segment is the one to replay
    soak.write_record(
        {
            "kind": "summary",
            "tx_frames": soak.tx_sent,
            "rx_frames": soak.rx_sent,
            "coverage": soak.coverage.report(),
            "sim_ns": get_sim_time("ns"),
        }
    )
    for line in problems[:20]:
        dut._log.error(line)
    assert not problems, f"{len(problems)} problem(s); first: {problems[0]}"
