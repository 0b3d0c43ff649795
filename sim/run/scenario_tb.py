"""cocotb module behind ``macdma run``: one :class:`~macdma.sim.run.scenario.Scenario` on
``macdma_soc`` with the driver model on a modelled CPU.

Reads the scenario (JSON) from env ``MACDMA_SCENARIO``; starts the SoC bench at the link
speed and system clock, the CPU model, the platform and the driver; then the traffic
model the scenario names (sim/run/traffic.py: the far end's generators and sinks and
the application, each frame checked where it arrives). Writes the raw record (stamps,
times, counters) to env ``MACDMA_SCENARIO_RECORD``; the metrics are
computed from it by :func:`macdma.sim.run.scenario.compute_metrics`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from functools import partial
from pathlib import Path

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotb.utils import get_sim_time

from macdma.firmware import regs
from macdma.firmware.descriptor import DESCRIPTOR_BYTES
from macdma.firmware.driver import DriverConfig, MacDmaDriver
from macdma.hdl.mac.frame import DEFAULT_MAX_FRAME_LENGTH, FCS_LENGTH
from macdma.sim.benches.gmii import GMII_1000, MII_10, MII_100
from macdma.sim.benches.soc import SocBench
from macdma.sim.model.cpu import CpuModel
from macdma.sim.model.cpus import load_cpu
from macdma.sim.model.platform_cocotb import CocotbPlatform
from macdma.sim.run.scenario import (
    RECORD_ENV,
    Scenario,
    memory_bytes_for,
    scenario_from_env,
    wire_of,
)
from macdma.sim.run.traffic import make_traffic

LINK_MODES = {10: MII_10, 100: MII_100, 1000: GMII_1000}


class Sampler:
    """Cumulative counters every ``period_ns`` (and at :meth:`take`), so the metrics can
    cut any window out of the run afterwards: time, CPU busy and spin time (all cores and
    per core), device and timer IRQs, polls, the AXI beats and bytes host memory saw per
    direction, and each driver lock's contentions and spin time."""

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

    def __init__(self, cpu, driver, bus_meter, period_ns: float):
        # bus_meter: the host memory's meter (count_from_here), whose counts may come once
        # the time step has settled; take() leaves their places in the row to it.
        self.cpu, self.driver, self.bus_meter = cpu, driver, bus_meter
        self.period_ns = period_ns
        self.lock_names = sorted(driver.locks)
        self.fields = [
            *self.FIELDS,
            "lock_spin_ns",
            *(f"core{core}_{what}_ns" for core in range(cpu.cores) for what in ("busy", "spin")),
            *(
                f"lock_{name}_{what}"
                for name in self.lock_names
                for what in ("contentions", "spin_ns")
            ),
        ]
        self.rows: list[list[float]] = []
        self._bus_column = self.FIELDS.index("read_beats")

    def _fill_bus(self, row: list, counts) -> None:
        row[self._bus_column : self._bus_column + 4] = [*counts.beats, *counts.bytes]

    def take(self) -> None:
        totals = self.cpu.totals()
        stats = self.driver.stats
        locks = self.driver.locks
        self.rows.append(
            [
                get_sim_time("ns"),
                totals["busy_ns"],
                totals["spin_ns"],
                stats.irqs,
                stats.timer_irqs,
                stats.polls,
                0,  # read_beats, write_beats, read_bytes, write_bytes: _fill_bus
                0,
                0,
                0,
                totals["lock_spin_ns"],
                *(
                    value
                    for busy, spin in zip(
                        totals["core_busy_ns"], totals["core_spin_ns"], strict=True
                    )
                    for value in (busy, spin)
                ),
                *(
                    value
                    for name in self.lock_names
                    for value in (locks[name].contentions, locks[name].spin_ns)
                ),
            ]
        )
        self.bus_meter.sample(partial(self._fill_bus, self.rows[-1]))

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


def _stats(driver) -> dict:
    return dataclasses.asdict(driver.stats)


def _port_bytes(platform: CocotbPlatform) -> dict:
    """What the CPU moved through the memory system's CPU port so far (bytes each way and
    commands; zeros without a [memory] table, whose traffic takes a flat time)."""
    port = platform.memory_port
    if port is None:
        return {"read_bytes": 0, "write_bytes": 0, "commands": 0}
    return {
        "read_bytes": port.read_bytes,
        "write_bytes": port.write_bytes,
        "commands": port.commands,
    }


def _ring_classes(driver) -> tuple[tuple[int, int], tuple[int, int]]:
    """The TX and RX descriptor rings, (start, end), the address classes the bursts are
    told apart by."""
    return tuple(
        (ring.base, ring.base + DESCRIPTOR_BYTES * ring.size) for ring in (driver.tx, driver.rx)
    )


def _burst_counts(counts) -> dict:
    """TX and RX bursts of the run from its traffic counts (classes: the TX ring, the RX
    ring): TX reads everything but the RX ring and writes back into the TX ring; RX the
    rest."""
    (reads, writes), ((_, tx_ring_writes), (rx_ring_reads, _)) = counts.bursts, counts.class_bursts
    tx = reads - rx_ring_reads + tx_ring_writes
    rx = writes - tx_ring_writes + rx_ring_reads
    return {"tx": tx, "rx": rx, "total": reads + writes}


@cocotb.test()
async def test_scenario(dut):
    """Run the scenario; fail on any damaged, reordered or silently lost frame."""
    wall_started = time.monotonic()
    scenario = scenario_from_env()
    log = dut._log
    log.info("scenario: %s", scenario.describe())
    mode = LINK_MODES[scenario.link_mbps]
    sys_clk_ps = 2 * round(1e6 / scenario.sys_mhz / 2)  # even: two equal half periods
    bench = SocBench(
        dut,
        mode,
        sys_clk_ns=sys_clk_ps / 1000,
        memory_bytes=memory_bytes_for(scenario),
        memory=scenario.memory,
        wire=wire_of(scenario),
    )
    await bench.start()
    bench.memory.latency_cycles = scenario.mem_latency_cycles

    cpu_spec = load_cpu(scenario.cpu)
    costs = cpu_spec.costs
    cpu = CpuModel(
        cpu_spec.clock_mhz,
        costs,
        cores=cpu_spec.cores,
        threads_per_pipeline=cpu_spec.threads_per_pipeline,
        thread_share=cpu_spec.thread_share,
    )
    platform = CocotbPlatform(bench, cpu, memory_system=cpu_spec.memory)
    traffic = make_traffic(scenario, bench, platform, costs, log)
    config = scenario.driver_config(cpu_spec.driver, mii=mode.mii)
    driver = MacDmaDriver(
        platform, config, on_receive=traffic.on_receive, costs=costs, caches=cpu_spec.caches
    )
    traffic.attach(driver)
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
    port_before = _port_bytes(platform)
    cpu.reset_accounting()
    ring_classes = _ring_classes(driver)
    bus_meter = bench.memory.count_from_here(ring_classes)
    started_ns = get_sim_time("ns")
    slot_ns = scenario.wire_bytes_per_frame * scenario.byte_time_ns
    sampler = Sampler(cpu, driver, bus_meter, max(1000.0, slot_ns))
    sampler_task = cocotb.start_soon(sampler.run())

    record: dict = {"scenario": dataclasses.asdict(scenario)}
    waits = traffic.start()

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
        for name in (
            "RX_DROPS",
            "RX_FIFO_OVERFLOWS",
            "TX_DROPS",
            "STATS_TX_UNDERRUNS",
            "STATS_TX_XOFF",  # 802.3x PAUSE frames the SoC sent
            "STATS_TX_XON",
        )
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
    if (rings["TX"], rings["RX"]) != ring_classes:
        raise AssertionError(
            f"the rings moved during the run: {ring_classes} at the start, "
            f"{(rings['TX'], rings['RX'])} at the end (the bursts are classed by the first)"
        )
    # Every burst up to now (the HDL memory reads its counters once the time step has
    # settled; this ends the run's simulated time).
    bus = await bus_meter.total()
    record.update(
        driver=driver_stats,
        cpu=cpu_report,
        counters=counters,
        bursts=_burst_counts(bus),
        mmio=mmio,
        cpu_memory={key: value - port_before[key] for key, value in _port_bytes(platform).items()},
        samples={"fields": sampler.fields, "rows": sampler.rows},
        locks={name: lock.report() for name, lock in driver.locks.items()},
        periodic_ns=periodic_ns(scenario, config),
        started_ns=started_ns,
        traffic_ns=ended_ns - started_ns,
        sim_ns=get_sim_time("ns"),
        wall_seconds=time.monotonic() - wall_started,
    )
    record.update(traffic.record())
    if driver.dim is not None:
        record["dim"] = {
            "decisions": driver.dim.decisions,
            "changes": driver.dim.changes,
            "profile_index": driver.dim.profile_index,
            "profile": list(driver.dim.profile),
            "profiles": [list(p) for p in driver.dim.profiles],
            "history": driver.dim.history,
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
    problems = list(traffic.errors)
    if traffic.rx_sent:
        lost = traffic.rx_sent - len(traffic.received) - len(traffic.errored)
        lost -= counters["RX_DROPS"] + counters["RX_FIFO_OVERFLOWS"] + sum(traffic.drops.values())
        if lost > 0:
            problems.append(f"{lost} RX frames neither delivered nor counted as dropped")
    for line in problems[:20]:
        log.error(line)
    assert not problems, f"{len(problems)} frame problem(s); first: {problems[0]}"
    log.info(
        "done: tx %d on the wire, rx %d delivered, %d dropped; %.1f us of traffic",
        len(traffic.tx_wire),
        len(traffic.received),
        counters["RX_DROPS"] + counters["RX_FIFO_OVERFLOWS"],
        (ended_ns - started_ns) / 1e3,
    )
