"""cocotb module behind ``macdma run``: one :class:`~macdma.sim.scenario.Scenario` on
``macdma_soc`` with the driver model on a modelled CPU.

Reads the scenario (JSON) from env ``MACDMA_SCENARIO``; starts the SoC bench at the link
speed and system clock, the CPU model, the platform and the driver; then a pktgen-like TX
generator (xmit as fast as it accepts, waiting for the queue to wake when it refuses)
and/or a line-rate RX generator (GmiiSource, all frames queued at once). Every frame
carries a sequence number and content derived from it: TX frames must reach the wire
intact and in order, RX frames must reach ``on_receive`` intact and in order (frames the
hardware dropped for want of a buffer may be missing, and must be counted). Writes the raw
record (stamps, times, counters) to env ``MACDMA_SCENARIO_RECORD``; the metrics are
computed from it by :func:`macdma.sim.scenario.compute_metrics`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import struct
import time
from pathlib import Path

import cocotb
from cocotb.triggers import Event, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import DESCRIPTOR_BYTES
from macdma.firmware.driver import DriverConfig, IrqStrategy, MacDmaDriver
from macdma.hdl.mac.frame import DEFAULT_MAX_FRAME_LENGTH, FCS_LENGTH
from macdma.sim.benches.gmii import GMII_1000, MII_10, MII_100
from macdma.sim.benches.soc import SocBench
from macdma.sim.cpu import CpuModel
from macdma.sim.cpus import load_cpu
from macdma.sim.platform_cocotb import CocotbPlatform
from macdma.sim.progress import PROGRESS_ENV
from macdma.sim.scenario import RECORD_ENV, Scenario, scenario_from_env

LINK_MODES = {10: MII_10, 100: MII_100, 1000: GMII_1000}
ETHERTYPE = 0x88B5  # IEEE local experimental
TX_SOURCE, RX_SOURCE = 0x01, 0x02  # last byte of the source MAC tells the directions apart


def make_frame(direction_tag: int, seq: int, size: int) -> bytes:
    """``size`` bytes: Ethernet header, the sequence number, then bytes derived from it."""
    header = bytes([0x02, 0, 0, 0, 0, 0x10, 0x02, 0, 0, 0, 0, direction_tag])
    header += struct.pack(">HI", ETHERTYPE, seq)
    body = random.Random(seq * 2 + direction_tag).randbytes(max(0, size - len(header)))
    return (header + body)[:size]


def frame_seq(data: bytes) -> int | None:
    if len(data) < 18:
        return None
    return struct.unpack(">I", data[14:18])[0]


def split(data: bytes, sizes: list[int]) -> list[bytes]:
    parts, offset = [], 0
    for size in sizes:
        parts.append(data[offset : offset + size])
        offset += size
    return parts


def memory_bytes_for(scenario: Scenario) -> int:
    """Host memory for rings, RX buffers and per-slot TX buffers, with slack."""
    need = 0x1000 + DESCRIPTOR_BYTES * (scenario.tx_ring + scenario.rx_ring)
    need += scenario.rx_ring * (scenario.rx_buf + 64)
    need += scenario.tx_ring * (max(scenario.frame_size, 2048) + 64) * 2
    need += 1 << 20
    return 1 << (need - 1).bit_length()


class Progress:
    """Reports a direction's frames done: as JSON lines appended to the file named by env
    ``MACDMA_PROGRESS`` (``macdma run`` renders them; about every 1% of the frames), else
    through the cocotb log every ~10% (a regress point's log)."""

    def __init__(self, log, direction: str, total: int):
        self.log, self.direction, self.total = log, direction, total
        self.path = os.environ.get(PROGRESS_ENV)
        self.step = max(1, total // (100 if self.path else 10))

    def tick(self, done: int):
        if done % self.step and done != self.total:
            return
        sim_us = get_sim_time("ns") / 1e3
        if self.path:
            record = {"direction": self.direction, "done": done, "total": self.total}
            with open(self.path, "a") as progress:
                progress.write(json.dumps({**record, "sim_us": sim_us}) + "\n")
            return
        self.log.info(
            "%s: %d/%d frames (%.0f%%) at %.1f us",
            self.direction,
            done,
            self.total,
            100 * done / self.total,
            sim_us,
        )


class Receiver:
    """``on_receive`` for the driver: checks each frame against its sequence number."""

    def __init__(self, scenario: Scenario, log):
        self.scenario = scenario
        self.received: list[tuple[int, float]] = []
        self.errored: list[int | None] = []  # frames the driver flagged bad (ok False)
        self.errors: list[str] = []
        self.last_seq = -1
        self.progress = Progress(log, "rx", scenario.frames)
        self.changed = Event()

    def on_receive(self, data: bytes, ok: bool = True, meta=None) -> None:
        now = get_sim_time("ns")
        seq = frame_seq(bytes(data))
        if not ok:
            # Flagged by the hardware (cut short, FCS, ...): reported, never taken as data.
            self.errored.append(seq)
            return
        if seq is None or seq >= self.scenario.frames:
            self.errors.append(f"RX frame of {len(data)} bytes with no valid sequence number")
            return
        expected = make_frame(RX_SOURCE, seq, self.scenario.frame_size)
        if bytes(data) != expected:
            self.errors.append(f"RX frame {seq} damaged ({len(data)} bytes)")
        if seq <= self.last_seq:
            self.errors.append(f"RX frame {seq} after {self.last_seq}: out of order")
        self.last_seq = max(self.last_seq, seq)
        self.received.append((seq, now))
        self.progress.tick(len(self.received))
        self.changed.set()


#: pktgen's re-try of a stopped queue: one check of the queue state per this many ns, the
#: CPU held meanwhile (pktgen busy-loops on a frozen queue; it does not sleep).
PKTGEN_SPIN_NS = 200.0


async def transmit(scenario: Scenario, driver, platform, xmit_ns: list[float]):
    """pktgen: hand frames to xmit as fast as it takes them. The loop is process context
    and spins (holding the CPU, ``pktgen_spin``) while the queue is stopped; each xmit
    runs with bottom halves disabled (``softirq`` level), as pktgen's
    ``local_bh_disable(); ndo_start_xmit()`` does, so only a hard IRQ preempts it."""
    async with platform.context("process"):
        for seq in range(scenario.frames):
            fragments = split(
                make_frame(TX_SOURCE, seq, scenario.frame_size), scenario.fragment_sizes
            )
            while True:
                if driver.queue_stopped:
                    await platform.spin_ns(PKTGEN_SPIN_NS, "pktgen_spin")
                    continue
                called = platform.now_ns()
                async with platform.context("softirq"):
                    sent = await driver.xmit(fragments)
                if sent:
                    xmit_ns.append(called)
                    break


class Sampler:
    """Cumulative counters every ``period_ns`` (and at :meth:`take`), so the metrics can
    cut any window out of the run afterwards: time, CPU busy and spin time, device and
    timer IRQs, polls, and the AXI beats and bytes host memory saw per direction."""

    FIELDS = (
        "t_ns",
        "busy_ns",
        "spin_ns",
        "irqs",
        "timer_irqs",
        "polls",
        "read_beats",
        "write_beats",
        "read_bytes",
        "write_bytes",
    )

    def __init__(self, cpu, driver, memory, period_ns: float):
        self.cpu, self.driver, self.memory = cpu, driver, memory
        self.period_ns = period_ns
        self.rows: list[list[float]] = []
        self._seen = 0
        self._beats = {True: 0, False: 0}
        self._bytes = {True: 0, False: 0}

    def take(self) -> None:
        bursts = self.memory.bursts
        for burst in bursts[self._seen :]:
            self._beats[burst.write] += burst.beats
            self._bytes[burst.write] += burst.beats << burst.size
        self._seen = len(bursts)
        totals = self.cpu.totals()
        stats = self.driver.stats
        self.rows.append(
            [
                get_sim_time("ns"),
                totals["busy_ns"],
                totals["spin_ns"],
                stats.irqs,
                stats.timer_irqs,
                stats.polls,
                self._beats[False],
                self._beats[True],
                self._bytes[False],
                self._bytes[True],
            ]
        )

    async def run(self) -> None:
        while True:
            self.take()
            await Timer(round(self.period_ns * 1000), "ps")


def periodic_ns(scenario: Scenario, config: DriverConfig) -> list[float]:
    """Periods of the run's periodic activities: the poll timer, the housekeeping tick,
    the coalescing timer."""
    periods = []
    if config.strategy.name == "polling":
        periods.append(config.strategy.poll_us * 1000.0)
    if config.housekeeping_hz is not None:
        periods.append(1e9 / config.housekeeping_hz)
    if config.strategy.irq_mode == regs.IrqMode.COALESCE and config.strategy.coalesce_us:
        periods.append(config.strategy.coalesce_us * 1000.0)
    return periods


async def collect_wire(scenario: Scenario, bench, log, wire: list[dict], errors: list[str]):
    """Take every TX frame off the wire, check it, keep its stamps."""
    progress = Progress(log, "tx", scenario.frames)
    for seq in range(scenario.frames):
        frame = await bench.tx_sink.recv()
        expected = make_frame(TX_SOURCE, seq, scenario.frame_size)
        payload = bytes(frame.get_payload())
        if frame.error is not None or not frame.check_fcs():
            errors.append(f"TX frame {seq}: bad FCS or error on the wire")
        if payload != expected + bytes(max(0, 60 - len(expected))):
            errors.append(f"TX frame {seq} damaged or out of order (seq {frame_seq(payload)})")
        wire.append(
            {
                "start_ps": frame.sim_time_start,
                "end_ps": frame.sim_time_end,
                "length": len(frame.get_payload(strip_fcs=False)),
            }
        )
        progress.tick(seq + 1)


def _stats(driver) -> dict:
    return dataclasses.asdict(driver.stats)


def _burst_counts(bursts, tx_ring: tuple[int, int], rx_ring: tuple[int, int]) -> dict:
    def inside(burst, ring):
        return ring[0] <= burst.addr < ring[1]

    tx = sum(
        1
        for b in bursts
        if (not b.write and not inside(b, rx_ring)) or (b.write and inside(b, tx_ring))
    )
    rx = sum(
        1
        for b in bursts
        if (b.write and not inside(b, tx_ring)) or (not b.write and inside(b, rx_ring))
    )
    return {"tx": tx, "rx": rx, "total": len(bursts)}


@cocotb.test()
async def test_scenario(dut):
    """Run the scenario; fail on any damaged, reordered or silently lost frame."""
    wall_started = time.monotonic()
    scenario = scenario_from_env()
    log = dut._log
    log.info("scenario: %s", scenario.describe())
    mode = LINK_MODES[scenario.link]
    sys_clk_ps = 2 * round(1e6 / scenario.sys_mhz / 2)  # even: two equal half periods
    bench = SocBench(
        dut, mode, sys_clk_ns=sys_clk_ps / 1000, memory_bytes=memory_bytes_for(scenario)
    )
    await bench.start()
    bench.memory.latency_cycles = scenario.mem_latency

    cpu_spec = load_cpu(scenario.cpu)
    costs = cpu_spec.costs
    cpu = CpuModel(cpu_spec.clock_mhz, costs)
    platform = CocotbPlatform(bench, cpu)
    receiver = Receiver(scenario, log)
    strategy = IrqStrategy(
        name=scenario.irq,
        coalesce_frames=scenario.coalesce_frames,
        coalesce_us=scenario.coalesce_us,
        poll_us=scenario.poll_us,
        budget=scenario.budget,
    )
    max_frags = scenario.frags + 1
    driver_settings = dict(cpu_spec.driver)
    if scenario.tx_clean_budget is not None:  # 0 = unlimited
        driver_settings["tx_clean_budget"] = scenario.tx_clean_budget or None
    config = DriverConfig(
        tx_ring=scenario.tx_ring,
        rx_ring=scenario.rx_ring,
        rx_buf=scenario.rx_buf,
        burst_beats=scenario.burst,
        prefetch=scenario.prefetch,
        strategy=strategy,
        sys_clk_mhz=round(scenario.sys_mhz),
        irq_min_interval_us=scenario.irq_min_interval_us,
        max_frags=max_frags,
        mii=mode.mii,
        **driver_settings,
    )
    driver = MacDmaDriver(platform, config, on_receive=receiver.on_receive, costs=costs)
    # The MTU, as `ip link set mtu` sets it before the link comes up: jumbo frames need a
    # MAC_MAX_LEN above the standard 1518 (the driver itself leaves the MAC's default).
    max_len = max(DEFAULT_MAX_FRAME_LENGTH, scenario.frame_size + FCS_LENGTH)
    await bench.write_reg(regs.MAC_MAX_LEN, max_len)
    await driver.open()
    cocotb.start_soon(driver.run(platform.spawn))

    trace_limit = int(os.environ.get("MACDMA_SCENARIO_TRACE", "0") or 0)
    if trace_limit:
        platform.trace = []
    stats_before = _stats(driver)
    cpu.reset_accounting()
    bench.memory.bursts.clear()
    started_ns = get_sim_time("ns")
    slot_ns = scenario.wire_bytes_per_frame * scenario.byte_time_ns
    sampler = Sampler(cpu, driver, bench.memory, max(1000.0, slot_ns))
    sampler_task = cocotb.start_soon(sampler.run())

    record: dict = {"scenario": dataclasses.asdict(scenario)}
    tx_wire: list[dict] = []
    tx_errors: list[str] = []
    xmit_ns: list[float] = []
    rx_wire: list[dict | None] = [None] * scenario.frames
    waits = []

    if scenario.sends_rx:

        def stamp(seq):
            def done(frame):
                rx_wire[seq] = {
                    "start_ps": frame.sim_time_start,
                    "end_ps": frame.sim_time_end,
                    "length": len(frame.data) - 8,
                }

            return done

        for seq in range(scenario.frames):
            data = make_frame(RX_SOURCE, seq, scenario.frame_size)
            bench.rx_source.send_nowait(GmiiFrame.from_payload(data, tx_complete=stamp(seq)))

    if scenario.sends_tx:
        waits.append(cocotb.start_soon(collect_wire(scenario, bench, log, tx_wire, tx_errors)))
        cocotb.start_soon(transmit(scenario, driver, platform, xmit_ns))

    async def rx_settled():
        await bench.rx_source.wait()
        while True:
            delivered = len(receiver.received) + len(receiver.errored)
            if delivered >= scenario.frames:
                return
            drops = await bench.read_reg(regs.RX_DROPS) + await bench.read_reg(
                regs.RX_FIFO_OVERFLOWS
            )
            if delivered + drops >= scenario.frames:
                return
            await Timer(5, "us")

    if scenario.sends_rx:
        waits.append(cocotb.start_soon(rx_settled()))

    # Generous: 20 line-rate slots per frame plus 300 us of CPU per frame, plus 2 ms.
    limit_ns = scenario.frames * (20 * slot_ns + 300_000) + 2_000_000
    for task in waits:
        await with_timeout(task, round(limit_ns), "ns")
    ended_ns = get_sim_time("ns")
    sampler.take()
    sampler_task.cancel()
    cpu_report = cpu.report()
    stats_after = _stats(driver)
    mmio = {"reads": platform.mmio_reads, "writes": platform.mmio_writes}

    counters = {
        name: await bench.read_reg(getattr(regs, name))
        for name in ("RX_DROPS", "RX_FIFO_OVERFLOWS", "TX_DROPS", "STATS_TX_UNDERRUNS")
    }
    rings = {}
    for channel in ("TX", "RX"):
        base = await bench.read_reg(getattr(regs, f"{channel}_RING_BASE"))
        size = await bench.read_reg(getattr(regs, f"{channel}_RING_SIZE"))
        rings[channel] = (base, base + DESCRIPTOR_BYTES * size)

    driver_stats = {
        key: (stats_after[key] - stats_before.get(key, 0))
        if isinstance(stats_after[key], int | float) and key != "rx_dropped_hw"
        else stats_after[key]
        for key in stats_after
    }
    record.update(
        driver=driver_stats,
        cpu=cpu_report,
        counters=counters,
        bursts=_burst_counts(bench.memory.bursts, rings["TX"], rings["RX"]),
        mmio=mmio,
        samples={"fields": list(Sampler.FIELDS), "rows": sampler.rows},
        periodic_ns=periodic_ns(scenario, config),
        started_ns=started_ns,
        traffic_ns=ended_ns - started_ns,
        sim_ns=get_sim_time("ns"),
        wall_seconds=time.monotonic() - wall_started,
    )
    if scenario.sends_tx:
        record["tx"] = {"offered": scenario.frames, "wire": tx_wire, "xmit_ns": xmit_ns}
    if scenario.sends_rx:
        record["rx"] = {
            "wire": [w for w in rx_wire if w is not None],
            "received": receiver.received,
            "errored": len(receiver.errored),
        }
    path = os.environ.get(RECORD_ENV)
    if path:
        Path(path).write_text(json.dumps(record))

    if platform.trace:
        names = {
            getattr(regs, n): n
            for n in dir(regs)
            if n.isupper()
            and isinstance(getattr(regs, n), int)
            and "_" in n
            and not n.endswith(("_MASK", "_SHIFT", "_WIDTH", "_VALUE", "_BASE"))
        }
        for when, kind, offset, value in platform.trace[:trace_limit]:
            log.info(
                "mmio %s %s = 0x%x at %.0f ns", kind, names.get(offset, hex(offset)), value, when
            )
    problems = tx_errors + receiver.errors
    if scenario.sends_rx:
        lost = scenario.frames - len(receiver.received) - len(receiver.errored)
        lost -= counters["RX_DROPS"] + counters["RX_FIFO_OVERFLOWS"]
        if lost > 0:
            problems.append(f"{lost} RX frames neither delivered nor counted as dropped")
    for line in problems[:20]:
        log.error(line)
    assert not problems, f"{len(problems)} frame problem(s); first: {problems[0]}"
    log.info(
        "done: tx %d on the wire, rx %d delivered, %d dropped; %.1f us of traffic",
        len(tx_wire),
        len(receiver.received),
        counters["RX_DROPS"] + counters["RX_FIFO_OVERFLOWS"],
        (ended_ns - started_ns) / 1e3,
    )
