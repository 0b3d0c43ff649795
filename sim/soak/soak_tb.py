"""cocotb module behind ``macdma soak``: full duplex on ``macdma_soc`` for many frames, with
everything random that a driver and a bus can vary, and every byte accounted for.

The run is planned from its seed (sim/soak/plan.py) and goes segment by segment: the
driver model (ideal CPU) opens the device with the segment's settings (rings, RX buffer
size, burst cap, prefetch, IRQ strategy and coalescing, rate limit: values of ``macdma
run``'s knobs, made a DriverConfig as ``macdma run`` makes its own), the bench sets host
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

The frames are ``macdma run``'s (sim/run/frames.py), and so is the progress reporting
(sim/cosim/progress.py ``FrameProgress``). One JSON line per segment goes to env
``MACDMA_SOAK_RECORD`` (so a run stopped half-way still says what it survived), then a
summary line with the coverage bins.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import time

import cocotb
from cocotb.triggers import ClockCycles, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.firmware.driver import (
    FOLDED_COUNTERS,
    DriverHooks,
    MacDmaDriver,
    QueueHooks,
)
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.benches.guard import MemoryGuard, format_ranges
from macdma.sim.benches.soc import SocBench
from macdma.sim.cosim.progress import FrameProgress
from macdma.sim.model.cpu import CpuModel
from macdma.sim.model.cpus import load_cpu
from macdma.sim.model.platform_cocotb import CocotbPlatform
from macdma.sim.run.frames import (
    BAD_SOURCE,
    RX_SOURCE,
    TX_SOURCE,
    frame_family,
    frame_seq,
    make_frame,
    split,
)
from macdma.sim.run.traffic import sim_time_us
from macdma.sim.soak.coverage import SoakCoverage
from macdma.sim.soak.faults import ArmedError, BusErrors, bad_frame
from macdma.sim.soak.plan import (
    AXI_CHANNELS,
    FAULT_SITES,
    MAX_RX_BUF_BYTES,
    MAX_TX_RING,
    RECORD_ENV,
    SOAK_CPU,
    SOAK_ENV,
    SYS_CLK_MHZ,
    TX_WINDOW_BYTES,
    WIRE_FAULT_FRAMES,
    Segment,
    SoakConfig,
    frame_sizes,
    plan_segments,
    tx_layouts,
)

FCS_BYTES = 4
SYS_CLK_NS = 1000 / SYS_CLK_MHZ

# Host memory: the allocator's arena (rings, RX buffers) and the TX fragment windows,
# with guarded memory below, between and above them.
MEMORY_BYTES = 4 << 20
ARENA_BASE, ARENA_END = 0x1000, 0x80000
TX_WINDOWS_BASE = 0x100000
assert TX_WINDOWS_BASE + MAX_TX_RING * TX_WINDOW_BYTES < MEMORY_BYTES
#: `driver`/`*-buffer-outside-memory` moves a TX fragment's or an RX buffer's address up
#: by this much: past the end of host memory, where the interconnect decodes no slave
#: (DECERR).
OUTSIDE_MEMORY_OFFSET = 0x1000_0000
assert OUTSIDE_MEMORY_OFFSET >= MEMORY_BYTES
#: The doorbell of each direction, for the `driver` faults on it.
DOORBELLS = {"tx": regs.TX_TAIL, "rx": regs.RX_TAIL}

#: Back-pressure: a channel is paused for runs of this many ns on average.
PAUSE_RUN_NS = 400.0
#: A segment must drain within this much simulated time per frame (plus a fixed margin).
SEGMENT_NS_PER_FRAME = 200_000
SEGMENT_MARGIN_NS = 5_000_000
DETECT_NS = 200_000  # a channel halt must reach the driver's ISR within this
EXHAUSTION_US = 300  # how long TX_DONE stays masked
EXHAUSTION_MAX_US = 3000  # the longest the CPU is held waiting for the RX ring to run out
SHORT_GAP_FRAMES = 8
#: A count that has not moved for this long has settled: what is missing then is lost.
SETTLE_NS = 1_000_000


class SoakPlatform(CocotbPlatform):
    """The driver's platform with its allocator confined to the soak's arena, rewound at
    every segment (the previous segment's rings and buffers are free once it closed)."""

    def __init__(self, bench, cpu: CpuModel) -> None:
        super().__init__(bench, cpu, dma_base=ARENA_BASE)
        # A `driver` fault on a doorbell (TX_TAIL or RX_TAIL, as the site's "tx"/"rx"
        # says), armed by the bench, one-shot: the site, and once it fired, (time in ns,
        # the TAIL value written, the slot posted twice).
        self.tail_fault = ""
        self.tail_fired: tuple[float, int, int] | None = None
        # doorbell offset -> the driver's queue and the bench's hooks on it
        self.rings: dict[int, tuple] = {}

    async def mmio_write(self, offset: int, value: int) -> None:
        """The driver's MMIO writes, with the armed doorbell fault: `*-tail-beyond-ring`
        writes TAIL + RING_SIZE (>= RING_SIZE: the DMA ignores it); `*-own-twice` hands
        the descriptor the doorbell just handed over (still the DMA's) to the ring's post
        again, with the same words."""
        site = self.tail_fault if offset == DOORBELLS.get(self.tail_fault[:2]) else ""
        ring, hooks = self.rings.get(offset, (None, None))
        if site.endswith("tail-beyond-ring") and ring is not None:
            value += ring.size
            self.tail_fault = ""
        await super().mmio_write(offset, value)
        if site.endswith("tail-beyond-ring") and ring is not None:
            self.tail_fired = (get_sim_time("ns"), value, -1)  # once the write has landed
        if site.endswith("own-twice") and ring is not None:
            slot = (value - 1) % ring.size
            if value != 0 and ring.handed_over(slot) and slot in hooks.posted:
                self.tail_fault = ""
                self.tail_fired = (get_sim_time("ns"), value, slot)
                ring.post(slot, hooks.posted[slot])

    def dma_alloc(self, size: int, align: int = 16) -> int:
        address = super().dma_alloc(size, align)
        if address + size > ARENA_END:
            raise MemoryError(f"soak arena exhausted: {size} bytes at 0x{address:x}")
        return address


class FaultyPosts(QueueHooks):
    """Hooks on a queue of the driver model (firmware/hooks.py): the bench's one-shot
    `driver` fault on the next descriptor posted (`*-own-zero-length`: length 0;
    `*-buffer-outside-memory`: the address moved past the end of host memory), and every
    descriptor as posted, for the doorbell fault `*-own-twice` to post again."""

    def __init__(self) -> None:
        # The armed site, and once it fired, (time in ns, the slot).
        self.desc_fault = ""
        self.desc_fired: tuple[float, int] | None = None
        self.posted: dict[int, Descriptor] = {}  # ring slot -> the descriptor posted there

    def post(self, queue, index: int, desc: Descriptor) -> Descriptor:
        fault, self.desc_fault = self.desc_fault, ""
        if fault.endswith("own-zero-length"):
            desc = dataclasses.replace(desc, length=0)
        elif fault.endswith("buffer-outside-memory"):
            desc = dataclasses.replace(desc, addr=desc.addr + OUTSIDE_MEMORY_OFFSET)
        if fault:
            self.desc_fired = (get_sim_time("ns"), index)
        self.posted[index] = desc
        return desc


class SoakTxHooks(FaultyPosts):
    """TX queue hooks that put the fragments where the layout says: slot *i*'s window
    starts at ``TX_WINDOWS_BASE + i * TX_WINDOW_BYTES``, the fragment at its planned
    offset (odd, across the window's 4 KiB boundary, ...). The host's writes are told to
    the guard."""

    def __init__(self, guard: MemoryGuard) -> None:
        super().__init__()
        self.guard = guard
        self.offsets: list[int] = []  # of the frame being mapped, consumed in order
        self.seq = -1  # the sequence number of the frame being mapped
        self.slot_seq: dict[int, int] = {}  # ring slot -> sequence number of its frame
        self.last_seq = -1  # the last frame posted

    def map_fragment(self, queue, index: int, data: bytes) -> int:
        address = TX_WINDOWS_BASE + index * TX_WINDOW_BYTES + self.offsets.pop(0)
        self.slot_seq[index] = self.seq
        self.last_seq = max(self.last_seq, self.seq)
        queue.platform.mem_write(address, data)
        self.guard.host_wrote(address, data)
        return address


class SoakRxHooks(FaultyPosts):
    """RX queue hooks that poison each buffer when it is posted, so that a write past the
    length the DMA reports (in ``done_length``) shows when the descriptor is reaped."""

    def __init__(self, memory, buffer_bytes: int, poison: bytes, problems: list) -> None:
        super().__init__()
        self.memory = memory
        self.buffer_bytes = buffer_bytes
        self.poison = poison[:buffer_bytes]
        self.problems = problems

    def post(self, queue, index: int, desc: Descriptor) -> Descriptor:
        # Written straight into memory (not through the CPU's store path): a bench check,
        # not driver work; the descriptor store that follows lands after it. Not at a post
        # the ring refuses (`rx-own-twice`): that buffer may hold a frame not reaped yet.
        if not queue.handed_over(index):
            self.memory.write(queue.buffers[index], self.poison)
        return super().post(queue, index, desc)

    def read(self, queue, index: int, desc: Descriptor) -> None:
        if not desc.own:
            start = queue.buffers[index] + desc.done_length
            tail = self.memory.read(start, self.buffer_bytes - desc.done_length)
            if tail != self.poison[desc.done_length :]:
                self.problems.append(
                    f"RX buffer {index} at 0x{queue.buffers[index]:x}: the DMA wrote past "
                    f"the {desc.done_length} bytes it reported"
                )


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


#: Where RX frames lost in the SoC are counted (with the driver's discarded partial frames):
#: RX_DROPS, RX_FIFO_OVERFLOWS, RX_RESET_DISCARDS, and frames the MAC dropped while its
#: receiver was off (between a SoC reset and the driver's re-open).
RX_DROP_COUNTERS = (
    "RX_DROPS",
    "RX_FIFO_OVERFLOWS",
    "RX_RESET_DISCARDS",
    "STATS_RX_DROPPED_DISABLED",
)
#: The counters the bench checks per segment: those the driver folds across a device
#: reset (its hw_totals), so a segment's delta is the same with or without one.
STATS_NAMES = FOLDED_COUNTERS
#: How long the bench holds the SoC in reset (all three domains) at a `reset`/`soc` fault.
SOC_RESET_HOLD_NS = 10_000
#: Most frames the TX FIFO can hold (16 KiB of 60-byte frames): a bound on the frames
#: written back and still inside the SoC when it is reset.
TX_FIFO_FRAMES_MAX = 16384 // 60 + 1
#: Counters of frames a channel reset discarded (docs/descriptors.md): 16 bits wide.
RESET_DISCARDS_BITS = 16
DRIVER_FIELDS = ("irqs", "timer_irqs", "polls", "queue_stops", "tx_dropped", "rx_dropped")
#: The `driver` sites that halt their channel, and with which code (docs/reliability.md):
#: an RX buffer shorter than 64 bytes (length 0 here) is RX_BUFFER_TOO_SMALL.
DRIVER_HALT_CODES = {
    "tx-own-zero-length": regs.DmaErrorCode.ZERO_LENGTH_DESC,
    "tx-buffer-outside-memory": regs.DmaErrorCode.DATA_READ_BUS_ERROR,
    "rx-own-zero-length": regs.DmaErrorCode.RX_BUFFER_TOO_SMALL,
    "rx-buffer-outside-memory": regs.DmaErrorCode.DATA_WRITE_BUS_ERROR,
}
#: Per direction: the STATUS register and its bad_tail bit (`*-tail-beyond-ring`), and
#: the kind of access a buffer past the end of memory gets (`*-buffer-outside-memory`).
DRIVER_CHANNEL = {
    "tx": (regs.TX_STATUS, regs.TX_STATUS_BAD_TAIL_MASK, "r"),
    "rx": (regs.RX_STATUS, regs.RX_STATUS_BAD_TAIL_MASK, "w"),
}
#: Which DmaErrorCode each bus-error site must halt its channel with.
SITE_ERROR_CODES = {
    "tx-desc-fetch": regs.DmaErrorCode.DESC_FETCH_BUS_ERROR,
    "tx-data-read": regs.DmaErrorCode.DATA_READ_BUS_ERROR,
    "tx-writeback": regs.DmaErrorCode.WRITEBACK_BUS_ERROR,
    "rx-desc-fetch": regs.DmaErrorCode.DESC_FETCH_BUS_ERROR,
    "rx-data-write": regs.DmaErrorCode.DATA_WRITE_BUS_ERROR,
    "rx-writeback": regs.DmaErrorCode.WRITEBACK_BUS_ERROR,
}


class SegmentRun:
    """One segment: open the driver with its settings, move its frames both ways (and
    inject its fault, if it has one), drain, close, check. ``problems`` collects every
    check that failed (as sentences)."""

    def __init__(self, soak: Soak, segment: Segment):
        self.soak, self.segment = soak, segment
        self.bench = soak.bench
        self.problems: list[str] = []
        seed = soak.config.seed
        self.tx_sizes = frame_sizes(seed, segment.index, "tx", segment.tx_frames)
        self.rx_sizes = frame_sizes(seed, segment.index, "rx", segment.rx_frames)
        self.layouts = tx_layouts(seed, segment.index, self.tx_sizes)
        self.tx_first, self.rx_first = soak.tx_sent, soak.rx_sent
        self.rng = random.Random(f"soak-segment-{seed}-{segment.index}")
        # TX: frames handed to xmit, seen intact / bad on the wire.
        self.tx_queued = 0
        self.tx_good = 0
        self.tx_bad_wire = 0
        self.last_tx_seq = self.tx_first - 1
        # RX: good and bad frames sent (with and without SFD); delivered ok / flagged.
        self.rx_queued = 0
        self.bad_sent = 0
        self.no_sfd_sent = 0
        self.delivered = 0
        self.flagged_truncated = 0
        self.flagged_error = 0
        self.last_rx_seq = self.rx_first - 1
        self.rx_delivered_seqs: list[int] = []
        # Deliveries of a frame already delivered: each one is a frame counted twice, kept
        # apart so that the wait for the segment's frames does not end one frame early.
        self.rx_duplicates = 0
        # A `driver` RX fault: when it took effect (its halt reached the driver, or its
        # doorbell landed; sim steps, as the frames' wire times). RX traffic has resumed
        # once a frame on the wire after it is delivered.
        self.rx_fault_seen = 0
        self.tasks: list = []
        self.fault: dict | None = None
        self._dropped = 0
        self._mac_sent = 0
        self.rx_sent_frames: list[GmiiFrame] = []  # the good RX frames, with their wire times
        # A `reset`/`soc` fault: the driver's fold of the counters (their values read just
        # before the reset), the times the SoC went down and came back, and the frames lost
        # in the reset (counted by the bench: docs/reliability.md).
        self.reset_fold: dict[str, int] | None = None
        self.reset_marks: dict = {}
        self.tx_reset_lost = 0
        self.tx_reset_lost_seqs: list[int] = []
        self.rx_reset_lost = 0
        self.rx_missed_down = 0
        self.tx_discards = 0  # TX_RESET_DISCARDS moved by this much in the segment
        self.tx_drops = 0  # TX_DROPS (cut on the wire after their write-back landed)
        self._mac_good = 0
        self.tx_dropped_seqs: set[int] = set()  # frames the driver dropped and counted
        self.tx_good_seqs: set[int] = set()  # frames on the wire intact
        self.tx_cut_seqs: list[int] = []  # frames cut on the wire whose sequence shows

    # -- the driver --------------------------------------------------------------------

    async def open(self) -> None:
        soak = self.soak
        self.cpu = CpuModel(soak.cpu_spec.clock_mhz, soak.cpu_spec.costs)
        self.platform = SoakPlatform(self.bench, self.cpu)
        config = self.segment.driver_config(soak.cpu_spec.driver)
        self.tx_hooks = SoakTxHooks(soak.guard)
        self.rx_hooks = SoakRxHooks(self.platform.memory, config.rx_buf, soak.poison, self.problems)
        self.driver = MacDmaDriver(
            self.platform,
            config,
            on_receive=self.on_receive,
            costs=soak.cpu_spec.costs,
            hooks=DriverHooks(tx=self.tx_hooks, rx=self.rx_hooks),
            caches=soak.cpu_spec.caches,
        )
        soak.coverage.sample_segment(self.segment)
        self.driver.on_tx_dropped = self._tx_dropped
        await self.driver.open()  # allocates the rings and RX buffers
        driver = self.driver
        self.platform.rings = {
            regs.TX_TAIL: (driver.tx, self.tx_hooks),
            regs.RX_TAIL: (driver.rx, self.rx_hooks),
        }
        for start, size in self.platform.allocations:  # rings and RX buffers
            soak.guard.allow(start, start + size)
        self.tasks.append(cocotb.start_soon(self.driver.run(self._spawn)))

    def _tx_dropped(self, slot: int) -> None:
        self.tx_dropped_seqs.add(self.tx_hooks.slot_seq[slot])

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
        if frame_family(data) == BAD_SOURCE:
            self.problems.append(f"a bad frame ({len(data)} bytes) was delivered as good")
            return
        index = None if seq is None else seq - self.rx_first
        if index is None or not 0 <= index < len(self.rx_sizes):
            self.problems.append(f"RX frame of {len(data)} bytes with a foreign sequence {seq}")
            return
        plant, self.soak.plant = self.soak.plant, ""
        if plant == "lost-frame":
            return  # the planted bug: the stack loses the frame, nothing counts it
        if plant == "double-count":
            self.on_receive(data, ok, meta)  # the planted bug: the frame handed over twice
        if seq <= self.last_rx_seq:
            self.problems.append(f"RX frame {seq} after {self.last_rx_seq}: duplicated or late")
        if seq in self.rx_delivered_seqs:
            self.rx_duplicates += 1
        self.rx_delivered_seqs.append(seq)
        self.last_rx_seq = max(self.last_rx_seq, seq)
        if data != make_frame(RX_SOURCE, seq, self.rx_sizes[index]):
            self.problems.append(f"RX frame {seq} damaged ({len(data)} bytes)")
        self.delivered += 1
        self.soak.progress["rx"].advance()

    def check_flagged(self, data: bytes, seq: int | None, meta) -> None:
        """A frame delivered flagged bad: truncated (the RX FIFO or the ring ran out
        mid-frame: counted in RX_FIFO_OVERFLOWS or RX_DROPS, docs/descriptors.md), its
        first bytes intact; or, only where a wire fault sent one, a bad frame's cause."""
        if meta.rx_truncated:
            self.flagged_truncated += 1
            index = None if seq is None else seq - self.rx_first
            if frame_family(data) == RX_SOURCE and index is not None:
                if 0 <= index < len(self.rx_sizes):
                    expected = make_frame(RX_SOURCE, seq, self.rx_sizes[index])
                    if data != expected[: len(data)]:
                        self.problems.append(f"truncated RX frame {seq}: first bytes damaged")
            return
        self.flagged_error += 1
        if not self.bad_sent:
            self.problems.append(f"RX frame (seq {seq}) flagged bad on a clean wire: {meta}")

    async def transmit(self) -> None:
        driver, platform = self.driver, self.platform
        for n, layout in enumerate(self.layouts):
            seq = self.tx_first + n
            frame = make_frame(TX_SOURCE, seq, self.tx_sizes[n])
            fragments = split(frame, layout.lengths)
            self.soak.coverage.sample_tx_frame(layout)
            while True:
                if driver.queue_stopped:
                    await driver.wait_for_wake()
                    continue
                self.tx_hooks.offsets = list(layout.offsets)
                self.tx_hooks.seq = seq
                async with platform.context("softirq"):
                    sent = await driver.xmit(fragments)
                if sent:
                    break
            self.tx_queued = n + 1

    async def collect_wire(self) -> None:
        """Take every frame off the wire (until cancelled): intact and in order, or bad
        (tx_er or FCS: a frame a reset or an error cut short) and counted."""
        sink, count = self.bench.tx_sink, len(self.tx_sizes)
        while True:
            frame = await sink.recv()
            payload = bytes(frame.get_payload())
            if frame.error is not None or not frame.check_fcs():
                self.tx_bad_wire += 1
                seq = frame_seq(payload)
                if frame_family(payload) == TX_SOURCE and seq is not None:
                    self.tx_cut_seqs.append(seq)
                continue
            seq = frame_seq(payload)
            index = None if seq is None else seq - self.tx_first
            if index is None or not 0 <= index < count:
                self.problems.append(f"TX frame with a foreign sequence {seq} on the wire")
                continue
            if seq <= self.last_tx_seq:
                self.problems.append(f"TX frame {seq} after {self.last_tx_seq}: duplicated")
            self.last_tx_seq = max(self.last_tx_seq, seq)
            if payload != make_frame(TX_SOURCE, seq, self.tx_sizes[index]):
                self.problems.append(f"TX frame {seq} damaged on the wire")
            self.tx_good += 1
            self.tx_good_seqs.add(seq)
            self.soak.progress["tx"].advance()

    async def send_rx(self) -> None:
        source, rng = self.bench.rx_source, self.soak.rng
        s = self.segment
        for n, size in enumerate(self.rx_sizes):
            if s.fault_class == "wire" and n == s.fault_at_frame:
                await self.send_wire_fault(n)
            frame = GmiiFrame.from_payload(make_frame(RX_SOURCE, self.rx_first + n, size))
            # The source sends a copy; its wire times come back here once it has left.
            frame.tx_complete = _stamp_back(frame)
            self.rx_sent_frames.append(frame)
            await source.send(frame)
            self.rx_queued = n + 1
            if rng.random() < self.segment.rx_gap_fraction:
                await source.wait()
                await Timer(rng.randint(1, 8), "us")
        await source.wait()
        source.ifg = self.bench.ifg

    async def send_wire_fault(self, n: int) -> None:
        """The segment's wire fault, just before RX frame *n*: bad frames, or (short-gap)
        the next good frames with a short inter-frame gap."""
        site, source = self.segment.fault_site, self.bench.rx_source
        self.soak.coverage.sample_fault("wire", site)
        if site == "short-gap":
            await source.wait()
            source.ifg = self.rng.choice((4, 6, 8))
            self.fault = {"injected": SHORT_GAP_FRAMES, "gap_bytes": source.ifg}
            cocotb.start_soon(self._restore_gap(n + SHORT_GAP_FRAMES))
            return
        for k in range(WIRE_FAULT_FRAMES):
            size = self.rng.randint(1530, 2000) if site == "oversize" else self.rx_sizes[n]
            frame, has_sfd = bad_frame(site, make_frame(BAD_SOURCE, k, size), self.rng)
            await source.send(frame)
            if has_sfd:
                self.bad_sent += 1
            else:
                self.no_sfd_sent += 1
        self.fault = {"injected": WIRE_FAULT_FRAMES}

    async def _restore_gap(self, frame: int) -> None:
        while self.rx_queued < frame:
            await Timer(1, "us")
        await self.bench.rx_source.wait()
        self.bench.rx_source.ifg = self.bench.ifg

    async def rx_accounted(self) -> None:
        """Wait until every RX frame sent is delivered or counted as dropped, or nothing
        has moved for :data:`SETTLE_NS` (what is missing then is lost)."""
        await settle(lambda: self.rx_unaccounted(self._dropped), self._read_dropped)

    async def _read_dropped(self) -> None:
        self._dropped = await self.rx_dropped_counted()

    def rx_unaccounted(self, dropped: int) -> int:
        """RX frames sent (with an SFD) neither delivered (intact, or flagged with a MAC
        cause) nor counted as lost (RX_DROPS, RX_FIFO_OVERFLOWS, RX_RESET_DISCARDS, the
        driver's discarded partial frames). A frame delivered truncated is a lost frame:
        the counter of whoever cut it (RX_FIFO_OVERFLOWS for the RX FIFO, RX_DROPS for the
        ring) has it, once (docs/descriptors.md). Negative: counted twice."""
        sent = self.segment.rx_frames + self.bad_sent
        delivered = self.delivered - self.rx_duplicates + self.flagged_error
        return sent - delivered - dropped - self.driver.stats.rx_dropped - self.rx_reset_lost

    async def rx_dropped_counted(self) -> int:
        counts = await self.bench.read_regs(
            "RX_DROPS", "RX_FIFO_OVERFLOWS", "RX_RESET_DISCARDS", "STATS_RX_DROPPED_DISABLED"
        )
        return sum(self._delta(name, value) for name, value in counts.items())

    def _delta(self, name: str, value: int) -> int:
        """A counter's move since the segment began (it wraps at its width). After a SoC
        reset: its move up to the driver's fold, plus its value since the reset."""
        bits = RESET_DISCARDS_BITS if name.endswith("RESET_DISCARDS") else 32
        if self.reset_fold is not None:
            before = (self.reset_fold[name] - self.stats_before[name]) % (1 << bits)
            return before + value % (1 << bits)
        return (value - self.stats_before[name]) % (1 << bits)

    def tx_accounted(self) -> bool:
        stats = self.driver.stats
        return stats.tx_packets + stats.tx_dropped >= self.segment.tx_frames

    async def tx_drained(self) -> None:
        """Wait until every TX frame is on the wire (intact or cut, as the MAC counted it,
        and taken by the bench) or dropped by the driver, or nothing has moved for
        :data:`SETTLE_NS` (what is missing then is lost). A frame is reaped once the DMA
        has read it, well before it has left the MAC, so reaping alone is not the end."""

        def left() -> int:
            dropped = self.driver.stats.tx_dropped + self.tx_discards + self.tx_drops
            behind = self._mac_sent - self.tx_good - self.tx_bad_wire  # the bench receiving
            if self.reset_fold is not None:  # the MAC's counts up to the reset are partial
                dropped += len(self.tx_reset_lost_seqs)
                return max(self.segment.tx_frames - self.tx_good - dropped, 0)
            return max(self.segment.tx_frames - self._mac_good - dropped, 0) + max(behind, 0)

        await settle(left, self._read_mac_sent)

    async def _read_mac_sent(self) -> None:
        counts = await self.bench.read_regs(
            "STATS_TX_FRAMES_GOOD", "STATS_TX_FRAMES_BAD", "TX_RESET_DISCARDS", "TX_DROPS"
        )
        delta = {name: self._delta(name, value) for name, value in counts.items()}
        self._mac_good = delta["STATS_TX_FRAMES_GOOD"]
        self._mac_sent = self._mac_good + delta["STATS_TX_FRAMES_BAD"]
        self.tx_discards = delta["TX_RESET_DISCARDS"]
        self.tx_drops = delta["TX_DROPS"]

    # -- faults ------------------------------------------------------------------------

    async def inject(self) -> None:
        """The segment's fault (not the wire's, sent by :meth:`send_rx`): at its frame,
        arm it, then wait for the outcome the class defines (docs/reliability.md)."""
        s, soak = self.segment, self.soak
        tx_side = s.fault_site.startswith("tx")
        while (self.tx_queued if tx_side else self.rx_queued) < s.fault_at_frame:
            await Timer(1, "us")
        soak.coverage.sample_fault(s.fault_class, s.fault_site)
        if s.fault_class in ("axi-slverr", "axi-decerr"):
            await self.inject_bus_error()
        elif s.fault_class == "reset":
            await self.inject_reset()
        elif s.fault_class == "exhaustion":
            await self.inject_exhaustion()
        elif s.fault_class == "driver":
            await self.inject_driver_fault()

    async def _site_window(self, site: str) -> tuple[int, int, str]:
        """The address window of a bus-error site: a ring slot the DMA is about to use (a
        descriptor, its TX fragment window or RX buffer). TX: the slot after the next one
        the driver fills. RX descriptor fetch: the one slot not posted (fetched once the
        next refill posts it). RX data and write-back: two slots past the hardware's HEAD
        when that many are posted, else the last posted one (else the next to be posted),
        so the frames still to come reach it: the slot not posted lies a whole ring ahead
        of HEAD, further than a short segment's traffic goes."""
        tx, rx = self.driver.tx, self.driver.rx
        if site.startswith("tx"):
            slot = (tx.next_to_use + 1) % tx.size
            desc = tx.desc_addr(slot)
            if site == "tx-data-read":
                start = TX_WINDOWS_BASE + slot * TX_WINDOW_BYTES
                return start, start + TX_WINDOW_BYTES, "r"
            return desc, desc + 16, "r" if site == "tx-desc-fetch" else "w"
        if site == "rx-desc-fetch":
            desc = rx.desc_addr(rx.next_to_use)
            return desc, desc + 16, "r"
        head = await self.bench.read_reg(regs.RX_HEAD)
        posted = (rx.next_to_use - head) % rx.size
        slot = (head + min(2, max(posted - 1, 0))) % rx.size
        if site == "rx-data-write":
            return rx.buffers[slot], rx.buffers[slot] + rx.buffer_bytes, "w"
        desc = rx.desc_addr(slot)
        return desc, desc + 16, "w"

    async def inject_bus_error(self) -> None:
        s, driver = self.segment, self.driver
        start, end, kind = await self._site_window(s.fault_site)
        decode = s.fault_class == "axi-decerr"
        armed = self.soak.bus_errors.arm(ArmedError(start, end, kind, decode, s.fault_site))
        self.fault = {"injected": 0, "window": [start, end, kind]}
        errors_before = len(driver.errors)
        while armed.fired_ns is None and not self.tx_accounted_and_rx_sent():
            await Timer(1, "us")
        # Disarmed only once the hold is over: the whole burst that hit the window must
        # fail. Disarmed between its beats, the rest of a write-back would land (own
        # cleared under an error response) and the driver would reap a descriptor the DMA
        # reported as failed (the campaign's own finding, in the bench).
        while armed.fired_ns is not None and not armed.over(get_sim_time("ns")):
            await Timer(100, "ns")
        self.soak.bus_errors.disarm()
        if armed.fired_ns is None:
            self.fault["outcome"] = "not injected: the DMA never reached the window"
            return
        self.fault["injected"] = 1
        await self._await_halt(s.fault_site[:2], SITE_ERROR_CODES[s.fault_site], errors_before)

    def rx_all_on_wire(self) -> bool:
        return self.rx_queued >= self.segment.rx_frames and self.bench.rx_source.idle()

    def tx_accounted_and_rx_sent(self) -> bool:
        return self.tx_accounted() and self.rx_queued >= self.segment.rx_frames

    async def inject_reset(self) -> None:
        """A channel reset mid-frame, as a driver's tx_timeout / reset task does: the
        recovery path the ISR runs on a channel error."""
        site = self.segment.fault_site
        if site == "soc":
            await self.inject_soc_reset()
            return
        # The driver's public reset paths: ndo_tx_timeout, the RX queue's reset task.
        recover = self.driver.tx_timeout if site == "tx-channel" else self.driver.rx.recover
        async with self.platform.context("softirq"):
            await recover()

        self.fault = {"injected": 1, "detected": True}

    async def inject_soc_reset(self) -> None:
        """The whole SoC reset mid-traffic (its system, tx and rx resets held for
        SOC_RESET_HOLD_NS, as a device reset does), inside the driver's reset task: stop,
        fold the counters, reset, reap what completed, drop the rest, open again."""
        driver, dut, marks = self.driver, self.bench.dut, self.reset_marks
        totals_before = dict(driver.hw_totals)
        resets_before = driver.device_resets

        # The PHY is not part of the SoC: it goes on sending and receiving through the
        # reset. The frame wire has a reset of its own; cocotbext-eth's models follow the
        # SoC's reset nets, so their reset handling is switched off meanwhile.
        bench = self.bench
        phy = () if bench.phy.own_resets else (bench.rx_source, bench.tx_sink)

        async def assert_reset() -> None:
            # Into a frame the MAC is sending, if it sends one within 20 µs: the reset
            # then cuts it on the wire.
            for _ in range(2000):
                if dut.gmii_tx_en.value == 1:
                    await Timer(self.rng.randint(1, 50) * 10, "ns")
                    break
                await Timer(10, "ns")
            marks["tx_queued"] = self.tx_hooks.last_seq + 1 - self.tx_first  # frames posted
            marks["down"] = get_sim_time()
            for model in phy:
                model._handle_reset = lambda state: None
            try:
                for reset in (dut.rst, dut.tx_rst, dut.rx_rst):
                    reset.value = 1
                await Timer(SOC_RESET_HOLD_NS, "ns")
                for reset in (dut.rst, dut.tx_rst, dut.rx_rst):
                    reset.value = 0
                marks["released"] = get_sim_time()
                await ClockCycles(dut.clk, 8)
            finally:
                for model in phy:
                    del model._handle_reset

        async with self.platform.context("softirq"):
            await driver.reset_device(assert_reset)
        marks["up"] = get_sim_time()
        marks["last_rx_seq"], marks["last_tx_seq"] = self.last_rx_seq, self.last_tx_seq
        self.reset_fold = {
            name: driver.hw_totals[name] - totals_before[name] for name in STATS_NAMES
        }
        # Frames handed to xmit before the reset that the driver reaped as sent (not
        # dropped) but that are not on the wire intact: inside the SoC when it was reset.
        queued = range(self.tx_first, self.tx_first + marks["tx_queued"])
        self.tx_reset_lost_seqs = sorted(set(queued) - self.tx_good_seqs - self.tx_dropped_seqs)
        # Detected: the hardware's state went away (the counters restarted from zero).
        frames_now = await self.bench.read_reg(regs.TX_FRAMES)
        restarted = frames_now < self.reset_fold["TX_FRAMES"] or not self.reset_fold["TX_FRAMES"]
        self.fault = {"injected": 1, "detected": driver.device_resets > resets_before and restarted}

    def account_soc_reset(self, dropped: int) -> None:
        """The frames a SoC reset lost, counted by the bench (docs/reliability.md):
        TX frames the driver reaped as sent that were inside the SoC (the one the reset cut
        on the wire, those in the TX FIFO); RX frames neither delivered nor counted: inside
        the SoC at the reset, or missed while it was held in reset (their SFD on the wire
        then). Checked: within the reset's window, in order around it, and traffic resumed."""
        s, marks = self.segment, self.reset_marks
        lost = self.tx_reset_lost_seqs
        self.tx_reset_lost = len(lost) - self.tx_drops - self.tx_discards
        if lost and (lost != list(range(lost[0], lost[-1] + 1)) or len(lost) > TX_FIFO_FRAMES_MAX):
            self.problems.append(
                f"segment {s.index}: TX frames lost in the SoC reset are not one run of at "
                f"most {TX_FIFO_FRAMES_MAX} frames: {lost[:20]}"
            )
        # A frame the reset cut is lost inside the SoC, or the driver's (dropped: its
        # write-back had not landed); a frame cut otherwise has no place here.
        stray = [seq for seq in self.tx_cut_seqs if seq not in lost + sorted(self.tx_dropped_seqs)]
        if stray:
            self.problems.append(f"segment {s.index}: TX frames {stray} cut outside the reset")
        if self.tx_reset_lost < 0:
            self.problems.append(f"segment {s.index}: TX frames lost in the reset counted twice")
        self.rx_reset_lost = 0
        self.rx_reset_lost = max(self.rx_unaccounted(dropped), 0)
        # RX frames that can have been lost in the reset: after the last one delivered
        # before it, before the first one delivered after it.
        after = [seq for seq in self.rx_delivered_seqs if seq > marks["last_rx_seq"]]
        first_after = min(after) if after else self.rx_first + s.rx_frames
        window = first_after - marks["last_rx_seq"] - 1
        self.rx_missed_down = sum(
            1
            for frame in self.rx_sent_frames
            if frame.sim_time_sfd is not None
            and marks["down"] <= frame.sim_time_sfd < marks["released"]
        )
        if self.rx_reset_lost > window or self.rx_missed_down > self.rx_reset_lost:
            self.problems.append(
                f"segment {s.index}: {self.rx_reset_lost} RX frames lost in the SoC reset "
                f"({self.rx_missed_down} missed while down), outside its window of {window}"
            )
        left_tx = s.tx_frames - marks["tx_queued"]
        if not after or (left_tx > 0 and self.last_tx_seq <= marks["last_tx_seq"]):
            self.problems.append(f"segment {s.index}: traffic did not resume after the SoC reset")

    async def inject_exhaustion(self) -> None:
        """rx-no-buffers: the CPU is held (no interrupt, no poll) until the RX ring has run
        out and a frame was dropped (at most EXHAUSTION_MAX_US); tx-irq-masked: TX_DONE
        masked for EXHAUSTION_US, so completions wait unreaped and the TX ring fills.
        Then everything must resume."""
        site, driver = self.segment.fault_site, self.driver
        drops_before = await self.rx_dropped_counted()
        stops_before = driver.stats.queue_stops
        if site == "rx-no-buffers":
            async with self.platform.context("hardirq"):
                held_us = 0
                while held_us < EXHAUSTION_MAX_US:
                    await self.platform.spin_ns(5_000, "soak_stall")
                    held_us += 5
                    if await self.rx_dropped_counted() > drops_before:
                        break
            self.fault = {"injected": 1, "detected": await self.rx_dropped_counted() > drops_before}
            return
        enable = driver.strategy.irq_enable
        await self.bench.write_reg(regs.IRQ_ENABLE, enable & ~regs.IRQ_STATUS_TX_DONE_MASK)
        await Timer(EXHAUSTION_US, "us")
        full = driver.queue_stopped or driver.stats.queue_stops > stops_before
        await self.bench.write_reg(regs.IRQ_ENABLE, driver.strategy.irq_enable)
        self.fault = {"injected": 1, "detected": full}

    async def inject_driver_fault(self) -> None:
        """One faulty post by the driver (a bench-side hook in its ring or MMIO path,
        one-shot), on the ring of the site's direction, then the outcome the site defines
        (docs/reliability.md). `*-own-zero-length` and `*-buffer-outside-memory` corrupt
        the next descriptor posted (length 0; the address moved past the end of memory):
        the channel halts (DRIVER_HALT_CODES) when the DMA comes to use it, at once on TX,
        one ring lap later on RX; the driver recovers. `*-tail-beyond-ring` writes the next
        doorbell as TAIL + RING_SIZE: the DMA ignores it and sets STATUS.bad_tail (no
        halt, no IRQ); what it should have handed over goes with the next doorbell.
        `*-own-twice` posts the descriptor the doorbell just handed over a second time:
        the driver refuses and counts it (double_posts); it is used once. The last two
        lose and drop nothing."""
        site = self.segment.fault_site
        self.fault = {"injected": 0}
        if site in DRIVER_HALT_CODES:
            await self._inject_bad_descriptor(site)
        else:
            await self._inject_bad_doorbell(site)

    async def _inject_bad_descriptor(self, site: str) -> None:
        channel, driver = site[:2], self.driver
        hooks = self.tx_hooks if channel == "tx" else self.rx_hooks
        errors_before = len(driver.errors)
        outside_before = len(self.soak.bus_errors.outside)
        hooks.desc_fault = site
        while hooks.desc_fired is None and not self.tx_accounted_and_rx_sent():
            await Timer(1, "us")
        hooks.desc_fault = ""
        if hooks.desc_fired is None:
            self.fault["outcome"] = "not injected: no descriptor posted after arming"
            return
        self.fault["injected"] = 1
        _, slot = hooks.desc_fired
        frame = f" (frame {self.tx_hooks.slot_seq.get(slot, -1)})" if channel == "tx" else ""
        self.fault["outcome"] = f"bad {channel.upper()} descriptor at slot {slot}{frame}"
        if channel == "rx":
            # The DMA comes to the bad buffer one ring lap after its post: wait while
            # frames that can take it there are still to go on the wire (the source
            # queues ahead of it), then for the halt as on TX.
            while len(driver.errors) == errors_before and not self.rx_all_on_wire():
                await Timer(1, "us")
        await self._await_halt(channel, DRIVER_HALT_CODES[site], errors_before)
        if channel == "rx":
            self.rx_fault_seen = get_sim_time()
        if site.endswith("buffer-outside-memory"):
            kind = DRIVER_CHANNEL[channel][2]
            outside = [a for a in self.soak.bus_errors.outside[outside_before:] if a[1] == kind]
            access = "reads" if kind == "r" else "writes"
            self.fault["outcome"] += f"; {len(outside)} {access} past the end of memory (DECERR)"
            self.fault["detected"] = self.fault.get("detected", False) and bool(outside)

    async def _inject_bad_doorbell(self, site: str) -> None:
        channel, platform = site[:2], self.platform
        ring = self.driver.tx if channel == "tx" else self.driver.rx
        doubles_before = ring.double_posts
        platform.tail_fault = site
        while platform.tail_fired is None and not self.tx_accounted_and_rx_sent():
            await Timer(1, "us")
        platform.tail_fault = ""
        if platform.tail_fired is None:
            self.fault["outcome"] = "not injected: no doorbell after arming"
            return
        self.fault["injected"] = 1
        if channel == "rx":
            self.rx_fault_seen = get_sim_time()
        _, tail, slot = platform.tail_fired
        if site.endswith("tail-beyond-ring"):
            status_reg, bad_tail, _ = DRIVER_CHANNEL[channel]
            status = await self.bench.read_reg(status_reg)
            self.fault["detected"] = bool(status & bad_tail)
            seen = "ignored, STATUS.bad_tail set" if status & bad_tail else "STATUS.bad_tail 0"
            self.fault["outcome"] = f"{channel.upper()}_TAIL {tail} {seen}"
        else:
            doubles = ring.double_posts - doubles_before
            self.fault["detected"] = doubles == 1
            self.fault["outcome"] = f"slot {slot} posted twice: {doubles} refused by the driver"

    async def _await_halt(self, channel: str, expected, errors_before: int) -> None:
        """Wait (at most DETECT_NS) for the driver's ISR to record a halt of *channel*;
        detected if its code is *expected*."""
        s, driver = self.segment, self.driver
        waited_ns = 0
        while waited_ns < DETECT_NS:
            records = [e for e in driver.errors[errors_before:] if e.channel == channel]
            if records:
                code = records[0].code
                self.fault["detected"] = code == expected
                self.fault["code"] = code.name
                if code != expected:
                    self.problems.append(
                        f"{s.fault_class}/{s.fault_site}: the channel halted with "
                        f"{code.name}, not {expected.name}"
                    )
                return
            await Timer(1, "us")
            waited_ns += 1000
        self.problems.append(
            f"{s.fault_class}/{s.fault_site}: no {channel} halt reached the driver"
        )

    def check_driver_fault(self) -> None:
        """After a `driver` fault's segment, on the site's direction: traffic resumed (TX:
        the segment's last frame on the wire intact; RX: a frame that went on the wire
        after the fault took effect delivered intact); at a site that must not halt
        (`*-tail-beyond-ring`, `*-own-twice`), no halt and nothing dropped by the driver,
        and on TX every frame on the wire intact. RX frames dropped by the hardware are not
        held against the fault: a segment's own settings drop some (a 1-beat burst cap
        overflows the RX FIFO, 64-byte buffers in a 16-slot ring truncate long frames),
        and the bench's accounting already requires each to be counted."""
        s, driver = self.segment, self.driver
        where = f"segment {s.index}: {s.fault_class}/{s.fault_site}"
        if s.fault_site.startswith("tx"):
            last = self.tx_first + s.tx_frames - 1
            resumed = last in self.tx_good_seqs
            missing = f"frame {last}, the segment's last, not on the wire intact"
            dropped = driver.stats.tx_dropped + self.tx_drops + self.tx_discards
            dropped += s.tx_frames - self.tx_good  # on TX, every frame must go out intact
        else:
            # Frames queued are not yet on the wire (the source queues ahead): their SFD
            # times tell which came after the fault.
            after = {
                self.rx_first + n
                for n, frame in enumerate(self.rx_sent_frames)
                if frame.sim_time_sfd is not None and frame.sim_time_sfd >= self.rx_fault_seen
            }
            resumed = not after.isdisjoint(self.rx_delivered_seqs)
            missing = "no frame on the wire after the fault took effect delivered intact"
            dropped = driver.stats.rx_dropped
        if not resumed:
            self.problems.append(f"{where}: traffic did not resume ({missing})")
        if s.fault_site not in DRIVER_HALT_CODES and (driver.errors or dropped):
            self.problems.append(
                f"{where} must lose nothing: {len(driver.errors)} halts, {dropped} frames "
                "dropped or not intact"
            )

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
        injector = None
        if segment.fault_class and segment.fault_class != "wire":
            injector = cocotb.start_soon(self.inject())
        limit_ns = (segment.tx_frames + segment.rx_frames) * SEGMENT_NS_PER_FRAME
        limit_ns += SEGMENT_MARGIN_NS
        drained = True
        try:
            await with_timeout(rx, limit_ns, "ns")
            await with_timeout(cocotb.start_soon(self.rx_accounted()), limit_ns, "ns")
            await with_timeout(cocotb.start_soon(self.tx_drained()), limit_ns, "ns")
            if injector is not None:
                await with_timeout(injector, limit_ns, "ns")
        except TimeoutError:
            drained = False
            self.problems.append(
                f"segment {segment.index} did not drain within {limit_ns / 1e6:.1f} ms: "
                f"TX {self.tx_good} on the wire, RX {self.delivered} delivered"
            )
        wire.cancel()
        await self.driver.close()
        await Timer(2, "us")  # an ISR already entered finishes its MMIO
        for task in self.tasks:
            task.cancel()
        for pauser in soak.pausers.values():
            pauser.stop()
        stats = await self.check_counters()
        if segment.fault_class == "driver":
            self.check_driver_fault()
        soak.guard_check(self.problems, f"segment {segment.index}")
        soak.tx_sent += segment.tx_frames
        soak.rx_sent += segment.rx_frames
        driver = dataclasses.asdict(self.driver.stats)
        dropped = sum(stats[name] for name in RX_DROP_COUNTERS)
        record = {
            "segment": dataclasses.asdict(segment),
            "tx_frames": segment.tx_frames,
            "rx_frames": segment.rx_frames,
            "tx_on_wire": self.tx_good,
            "tx_bad_on_wire": self.tx_bad_wire,
            "tx_dropped_counted": self.driver.stats.tx_dropped,
            "tx_reset_discards": stats["TX_RESET_DISCARDS"],
            "tx_drops": stats["TX_DROPS"],
            "tx_reset_lost": self.tx_reset_lost,
            "rx_reset_lost": self.rx_reset_lost,
            "rx_missed_while_down": self.rx_missed_down,
            "rx_reset_discards": stats["RX_RESET_DISCARDS"],
            "rx_delivered": self.delivered,
            "rx_dropped_counted": dropped + self.driver.stats.rx_dropped,
            # Frames neither delivered nor counted; negative: counted twice. And RX frames
            # delivered more than once (counted twice too).
            "tx_balance": self.tx_lost(),
            "rx_balance": self.rx_lost,
            "rx_duplicates": self.rx_duplicates,
            "rx_truncated_delivered": self.flagged_truncated,
            "rx_bad_sent": self.bad_sent + self.no_sfd_sent,
            "rx_bad_flagged": self.flagged_error,
            "tx_bytes": sum(self.tx_sizes),
            "rx_bytes": sum(self.rx_sizes),
            "stats": stats,
            "driver": {k: driver[k] for k in DRIVER_FIELDS},
            "dma_errors": [(e.channel, e.code.name) for e in self.driver.errors],
            "sim_ns": get_sim_time("ns") - started_ns,
            "wall_seconds": time.monotonic() - started_wall,
            "problems": self.problems[:20],
            "problem_count": len(self.problems),
        }
        if segment.fault_class:
            record["fault"] = self.fault_record(record, drained)
        return record

    def fault_record(self, record: dict, drained: bool) -> dict:
        """The fault table's row for this segment's fault."""
        s, fault = self.segment, self.fault or {"injected": 0}
        # Each direction's balance on its own: a loss in one never hides a double count in
        # the other, and neither is clamped away.
        balances = (self.tx_lost(), self.rx_lost)
        lost = sum(b for b in balances if b > 0)
        counted_twice = -sum(b for b in balances if b < 0) + self.rx_duplicates
        recovered = drained and fault.get("injected", 0) > 0 and not self.problems
        outcome = []
        if record["dma_errors"]:
            outcome.append("halt " + ", ".join(f"{c} {code}" for c, code in record["dma_errors"]))
        if record["tx_dropped_counted"]:
            outcome.append(f"{record['tx_dropped_counted']} TX dropped (driver)")
        if record["tx_bad_on_wire"]:
            outcome.append(f"{record['tx_bad_on_wire']} TX cut on the wire (tx_er)")
        if record["tx_drops"]:
            outcome.append(f"{record['tx_drops']} TX in TX_DROPS")
        if record["tx_reset_discards"]:
            outcome.append(f"{record['tx_reset_discards']} TX in TX_RESET_DISCARDS")
        if record["rx_reset_discards"]:
            outcome.append(f"{record['rx_reset_discards']} RX in RX_RESET_DISCARDS")
        if record["rx_dropped_counted"]:
            outcome.append(f"{record['rx_dropped_counted']} RX dropped, counted")
        if self.reset_fold is not None:
            outcome.append(
                f"SoC reset: {self.tx_reset_lost} TX lost inside it "
                f"({len(self.tx_reset_lost_seqs)} by sequence), {self.rx_reset_lost} RX lost "
                f"({self.rx_missed_down} missed while down)"
            )
        if record["rx_bad_flagged"]:
            outcome.append(f"{record['rx_bad_flagged']} RX flagged bad")
        if self.no_sfd_sent:
            outcome.append(f"{self.no_sfd_sent} counted in rx_preamble_errors")
        if fault.get("outcome"):
            outcome.append(fault["outcome"])
        return {
            "kind": "fault",
            "class": s.fault_class,
            "site": s.fault_site,
            "segment": s.index,
            "injected": fault.get("injected", 0),
            # A wire fault's detection is read from the counters by sim/soak/command.py.
            "detected": bool(fault.get("detected", False)),
            "recovered": recovered,
            "frames_lost": lost,
            "frames_counted_twice": counted_twice,
            "frames_dropped_counted": record["tx_dropped_counted"]
            + record["tx_reset_discards"]
            + record["tx_drops"]
            + record["tx_reset_lost"]
            + record["rx_reset_lost"]
            + record["rx_dropped_counted"]
            + record["rx_bad_flagged"],
            "outcome": "; ".join(outcome) or "no effect seen",
        }

    def tx_lost(self) -> int:
        """TX frames neither on the wire intact nor counted as lost, once: by the driver
        (its descriptor still owned by the DMA after a channel reset), or by the hardware
        (written back, then cut on the wire: TX_DROPS; or flushed from the TX FIFO:
        TX_RESET_DISCARDS). docs/descriptors.md, "Channel reset". A frame cut on the wire
        (tx_er, in STATS_TX_FRAMES_BAD, checked against the wire) counts in TX_DROPS or
        the driver's tx_dropped, never both. Negative: counted twice."""
        counted = self.driver.stats.tx_dropped + self.tx_discards + self.tx_drops
        return self.segment.tx_frames - self.tx_good - counted - self.tx_reset_lost

    async def check_counters(self) -> dict:
        """The counters' segment deltas against the bench's own counts."""
        after = await self.bench.read_regs(*STATS_NAMES)
        delta = {name: self._delta(name, value) for name, value in after.items()}
        self.tx_discards = delta["TX_RESET_DISCARDS"]
        self.tx_drops = delta["TX_DROPS"]
        s = self.segment
        dropped = sum(delta[name] for name in RX_DROP_COUNTERS)
        if self.reset_fold is not None:
            self.account_soc_reset(dropped)
        self.rx_lost = self.rx_unaccounted(dropped)
        faulty = bool(s.fault_class)
        expected = {
            "STATS_TX_FRAMES_GOOD": self.tx_good,
            "STATS_TX_FRAMES_BAD": self.tx_bad_wire,
            "STATS_RX_FRAMES_GOOD": s.rx_frames,
            "STATS_RX_FRAMES_BAD": self.bad_sent,
            "STATS_RX_PREAMBLE_ERRORS": self.no_sfd_sent,
        }
        if not faulty:
            expected.update(
                {
                    "STATS_TX_FRAMES_GOOD": s.tx_frames,
                    "STATS_TX_BYTES_GOOD": sum(self.tx_sizes) + FCS_BYTES * s.tx_frames,
                    "STATS_RX_BYTES_GOOD": sum(self.rx_sizes) + FCS_BYTES * s.rx_frames,
                    "TX_FRAMES": s.tx_frames,
                    "TX_DROPS": 0,
                    "TX_RESET_DISCARDS": 0,
                    "RX_RESET_DISCARDS": 0,
                    # Truncated frames are completed (and counted as overflows or drops).
                    "RX_FRAMES": self.delivered + self.flagged_truncated,
                }
            )
        if self.reset_fold is not None:
            # Counts between the driver's fold and the reset are lost with the hardware's
            # state, and a frame the reset cuts counts nowhere: the MAC's statistics may
            # only fall short of what the bench saw.
            del expected["STATS_RX_PREAMBLE_ERRORS"]  # a frame cut by the reset's end
            for name, value in expected.items():
                if delta[name] > value:
                    self.problems.append(
                        f"segment {s.index}: {name} moved by {delta[name]}, more than the "
                        f"{value} the bench counted"
                    )
            expected = {}
        for name, value in expected.items():
            if delta[name] != value:
                self.problems.append(
                    f"segment {s.index}: {name} moved by {delta[name]}, the bench counted {value}"
                )
        if self.rx_lost > 0:
            self.problems.append(
                f"segment {s.index}: {self.rx_lost} RX frames neither delivered nor counted "
                f"({s.rx_frames} + {self.bad_sent} bad sent, {self.delivered} delivered, "
                f"{self.flagged_error} flagged, {self.flagged_truncated} truncated, {dropped} "
                "counted by the DMA, "
                f"{self.driver.stats.rx_dropped} by the driver)"
            )
        if self.rx_lost < 0:
            self.problems.append(
                f"segment {s.index}: {-self.rx_lost} RX frames more delivered or counted than "
                f"sent ({s.rx_frames} + {self.bad_sent} bad sent, {self.delivered} delivered, "
                f"{self.flagged_error} flagged, {dropped} counted by the DMA, "
                f"{self.driver.stats.rx_dropped} by the driver): counted twice"
            )
        tx_counts = (
            f"{self.tx_good} on the wire, {self.tx_bad_wire} cut on the wire, "
            f"{self.driver.stats.tx_dropped} dropped by the driver, {self.tx_drops} in "
            f"TX_DROPS, {self.tx_discards} in TX_RESET_DISCARDS"
        )
        if self.tx_lost() > 0:
            self.problems.append(
                f"segment {s.index}: {self.tx_lost()} TX frames neither on the wire nor "
                f"counted as dropped ({tx_counts})"
            )
        if self.tx_lost() < 0:
            self.problems.append(
                f"segment {s.index}: {-self.tx_lost()} TX frames more on the wire or counted "
                f"than sent ({tx_counts}): counted twice"
            )
        self.check_tx_seqs()
        return delta

    def check_tx_seqs(self) -> None:
        """Frame by frame where the sequence numbers show: a frame the driver dropped must
        not be on the wire intact, and the cut frames the driver dropped plus TX_DROPS are
        at most the frames cut on the wire (each cut frame is counted by one of them)."""
        s = self.segment
        both = sorted(self.tx_good_seqs & self.tx_dropped_seqs)
        if both:
            self.problems.append(
                f"segment {s.index}: TX frames {both[:10]} on the wire intact and dropped "
                "by the driver: counted twice"
            )
        cut_dropped = sorted(set(self.tx_cut_seqs) & self.tx_dropped_seqs)
        if self.tx_drops + len(cut_dropped) > self.tx_bad_wire:
            self.problems.append(
                f"segment {s.index}: TX frames cut on the wire counted twice: "
                f"{self.tx_bad_wire} cut ({sorted(self.tx_cut_seqs)[:10]} by sequence), "
                f"{self.tx_drops} in TX_DROPS, {cut_dropped[:10]} dropped by the driver"
            )


async def settle(left, refresh=None) -> None:
    """Wait until ``left()`` is 0 or less, or has not changed for :data:`SETTLE_NS`;
    ``refresh()`` (a coroutine function) updates what ``left`` reads, before each look."""
    unchanged_since, seen = get_sim_time("ns"), None
    while True:
        if refresh is not None:
            await refresh()
        now_left = left()
        if now_left <= 0:
            return
        if now_left != seen:
            seen, unchanged_since = now_left, get_sim_time("ns")
        elif get_sim_time("ns") - unchanged_since >= SETTLE_NS:
            return
        await Timer(5, "us")


def _stamp_back(original: GmiiFrame):
    """A ``tx_complete`` for *original*: the wire times of the copy a source sent are
    written back to it (either wire sends a copy and stamps that)."""

    def stamped(sent: GmiiFrame) -> None:
        original.sim_time_start = sent.sim_time_start
        original.sim_time_sfd = sent.sim_time_sfd
        original.sim_time_end = sent.sim_time_end

    return stamped


class Soak:
    """The whole run: the bench, the guard, the back-pressure tasks and the counts."""

    def __init__(self, dut, config: SoakConfig):
        self.config = config
        self.rng = random.Random(f"soak-bench-{config.seed}")
        self.bench = SocBench(
            dut, GMII_1000, sys_clk_ns=SYS_CLK_NS, memory_bytes=MEMORY_BYTES, wire=config.wire
        )
        self.cpu_spec = load_cpu(SOAK_CPU)
        self.progress = {
            direction: FrameProgress(direction, config.frames, sim_time_us, dut._log)
            for direction in ("tx", "rx")
        }
        self.coverage = SoakCoverage()
        self.poison = random.Random(f"soak-poison-{config.seed}").randbytes(MAX_RX_BUF_BYTES)
        self.tx_sent = self.rx_sent = 0
        self.record_path = os.environ.get(RECORD_ENV)
        # The planted bug (SoakConfig.plant, plan.PLANTS), one-shot: the first RX frame
        # delivered intact meets it.
        self.plant = config.plant

    async def start(self) -> None:
        await self.bench.start()
        # Every byte of host memory starts as a pattern, so a stray write of any value shows.
        pattern = random.Random(f"soak-memory-{self.config.seed}").randbytes(MEMORY_BYTES)
        self.bench.memory.write(0, pattern)
        self.guard = MemoryGuard(self.bench)
        channels = axi_channels(self.bench.memory)
        self.bus_errors = BusErrors(self.bench.memory)
        for fault_class in self.config.faults:
            self.coverage.fault_sites(fault_class, list(FAULT_SITES[fault_class]))
        self.pausers = {
            name: BackPressure(channels[name], random.Random(f"soak-pause-{name}"))
            for name in AXI_CHANNELS
        }

    def guard_check(self, problems: list[str], what: str) -> None:
        bad = self.guard.outside_allowed()
        if bad:
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
        if "fault" in result:
            soak.write_record(result["fault"])
        problems += result["problems"]
        if result["problem_count"] and not config.faults:
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
