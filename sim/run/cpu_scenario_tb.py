"""cocotb module behind ``macdma run --cpu vexriscv-rtl``: one
:class:`~macdma.sim.run.scenario.Scenario` on ``macdma_soc_cpu``, the C driver (firmware/c/) on
the real core instead of the driver model on a modelled CPU.

The scenario's knobs become the firmware's ``fw_config`` (:func:`firmware_config`; a knob
the firmware does not implement yet is refused by name). TX: pktgen sends ``frames``
frames; the wire stamps come from cocotbext-eth's GmiiSink and the xmit times from the
firmware's TX log (mcycle). RX: the far end sends ``frames`` frames (``make_frame``, at
line rate or ``rate_mbps``) and the sink logs each delivery (mcycle). The CPU's busy time
is sampled through the run from the firmware's live idle counter: busy = elapsed - idle,
idle being the application's spinning on a stopped queue and waiting for frames, less the
traps taken meanwhile. The record goes to env ``MACDMA_SCENARIO_RECORD`` for
:func:`macdma.sim.run.scenario.compute_metrics`, as ``scenario_tb`` writes it.

Not in the record (reported as 0): AXI beats and bursts per direction (the core's own
accesses share the host memory's counters), MMIO accesses per packet.
"""

from __future__ import annotations

import dataclasses
import json
import os
import struct
import time
from pathlib import Path

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware.c import abi
from macdma.sim.benches.cpu_soc import CpuSocBench
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.run.frames import RX_SOURCE, make_frame
from macdma.sim.run.scenario import RECORD_ENV, Scenario, memory_bytes_for, scenario_from_env

__all__ = ["firmware_config"]

#: Knobs the C driver does not implement yet, with the value they must keep.
_UNSUPPORTED_DEFAULTS = {
    "tx_coalesce_frames": None,
    "tx_coalesce_us": None,
    "coalesce_timer": "first",
    "link_mbps": 1000,
    "tx_clean_lock": "frozen",
    "rx_per_irq": None,
    "linearize": False,
    "flow_control": "off",
    "tx_checksum": "none",
    "rx_sync": "unmap",
    "rx_buffers": "alloc_map",
    "tx_napi_weight": None,
    "tx_timer": "none",
    "tx_timer_us": 1000,
    "tx_bounce": False,
    "rx_fixup": False,
    "dim_table": "net_dim",
    "gro": False,
    "traffic": "pktgen",
    "irq_min_interval_us": 0,
    "rate_mbps": 0.0,
}
_SAMPLE_FIELDS = ("t_ns", "busy_ns", "spin_ns", "irqs", "timer_irqs", "polls",
                  "read_beats", "write_beats", "read_bytes", "write_bytes")  # fmt: skip


def firmware_config(scenario: Scenario) -> dict[str, int]:
    """``scenario`` as ``fw_config`` fields; ValueError naming what the firmware cannot do."""
    problems = [
        f"{name} {getattr(scenario, name)!r} (the C driver supports only {default!r})"
        for name, default in _UNSUPPORTED_DEFAULTS.items()
        if getattr(scenario, name) != default
        and not (name == "rate_mbps" and scenario.direction == "rx")
    ]
    if scenario.direction == "both":
        problems.append("direction both (the firmware runs tx or rx)")
    if scenario.irq not in abi.STRATEGIES:
        problems.append(f"irq {scenario.irq!r} (one of {', '.join(abi.STRATEGIES)})")
    limit = abi.RX_LOG_ENTRIES if scenario.direction == "rx" else abi.TX_LOG_ENTRIES
    if scenario.frames > limit:
        problems.append(f"frames {scenario.frames} (the firmware's log holds {limit})")
    if scenario.rx_buf_bytes % 32:
        problems.append(f"rx_buf_bytes {scenario.rx_buf_bytes} (a multiple of 32)")
    if problems:
        raise ValueError("--cpu vexriscv-rtl cannot run " + "; ".join(problems))
    return {
        "mode": abi.MODES["tx_pktgen" if scenario.direction == "tx" else "rx_sink"],
        "frames": scenario.frames,
        "frame_bytes": scenario.frame_size,
        "extra_frags": scenario.frags,
        "strategy": abi.STRATEGIES[scenario.irq],
        "coalesce_frames": scenario.coalesce_frames,
        "coalesce_us": scenario.coalesce_us,
        "poll_us": scenario.poll_us,
        "budget": scenario.budget,
        "tx_clean_budget": scenario.tx_clean_budget or 0,
        "burst_beats": scenario.burst_beats,
        "prefetch": scenario.prefetch,
        "tx_ring": scenario.tx_ring,
        "rx_ring": scenario.rx_ring,
        "rx_buf_bytes": scenario.rx_buf_bytes,
        "sys_clk_mhz": round(scenario.sys_mhz),
        "rx_record": 0,
    }


class _Clock:
    """mcycle (low word) to simulated ns: the core counts system clocks from its reset."""

    def __init__(self, released_ns: float, clk_ns: float):
        self.released_ns = released_ns
        self.clk_ns = clk_ns
        self.last = 0
        self.high = 0

    def ns(self, cycle_lo: int) -> float:
        # Stamps come in order; the low word wraps every 2**32 cycles.
        if cycle_lo < self.last:
            self.high += 1 << 32
        self.last = cycle_lo
        return self.released_ns + (self.high + cycle_lo) * self.clk_ns


def _seq_of(entry: dict) -> int:
    head = entry["word3"].to_bytes(4, "little") + entry["word4"].to_bytes(4, "little")
    return struct.unpack(">I", head[2:6])[0]


@cocotb.test()
async def run_scenario_on_the_core(dut):
    wall_started = time.monotonic()
    log = dut._log
    scenario = scenario_from_env()
    log.info("scenario: %s", scenario.describe())
    config = firmware_config(scenario)
    sys_clk_ps = 2 * round(1e6 / scenario.sys_mhz / 2)
    clk_ns = sys_clk_ps / 1000
    bench = CpuSocBench(dut, GMII_1000, sys_clk_ns=clk_ns, memory_bytes=memory_bytes_for(scenario))
    bench.memory.latency_cycles = scenario.mem_latency_cycles
    await bench.start(**config)
    released_ns = get_sim_time("ns")
    await bench.wait_ready()
    firmware = bench.firmware
    live = {name: firmware.address(name) for name in
            ("app_idle_cycles", "app_ext_irqs", "app_timer_irqs")}  # fmt: skip

    rows: list[list[float]] = []

    def sample() -> None:
        now = get_sim_time("ns")
        idle, irqs, timer_irqs = (bench.ram.read_words(address, 1)[0] for address in live.values())
        busy_ns = now - released_ns - idle * clk_ns
        rows.append([now, busy_ns, 0.0, irqs, timer_irqs, 0, 0, 0, 0, 0])

    slot_ns = scenario.wire_bytes_per_frame * scenario.byte_time_ns

    async def sampler() -> None:
        while True:
            sample()
            await Timer(max(1000.0, slot_ns), "ns")

    sampler_task = cocotb.start_soon(sampler())
    started_ns = get_sim_time("ns")
    limit_ns = scenario.frames * (20 * slot_ns + 300_000) + 2_000_000
    record: dict = {"scenario": dataclasses.asdict(scenario)}
    rx_wire: list[dict | None] = []
    if scenario.direction == "tx":
        frames = [
            await with_timeout(bench.tx_sink.recv(), round(limit_ns), "ns")
            for _ in range(scenario.frames)
        ]
    else:
        rx_wire = [None] * scenario.frames
        interval_ns = (
            scenario.frame_size * 8 * 1e3 / scenario.rate_mbps if scenario.rate_mbps else 0
        )
        for seq in range(scenario.frames):

            def done(frame, seq=seq):
                rx_wire[seq] = {
                    "start_ps": frame.sim_time_start,
                    "end_ps": frame.sim_time_end,
                    "length": len(frame.data) - 8,
                }

            data = make_frame(RX_SOURCE, seq, scenario.frame_size)
            bench.rx_source.send_nowait(GmiiFrame.from_payload(data, tx_complete=done))
            if interval_ns:
                await Timer(round(interval_ns), "ns")
        await with_timeout(bench.rx_source.wait(), round(limit_ns), "ns")
        # Frames still in the ring or the FIFO: the sink takes them, then stops.
        await Timer(max(200_000.0, 4 * slot_ns * scenario.rx_ring), "ns")
        bench.command("stop")
    results = await bench.wait_exit(timeout_us=limit_ns / 1e3)
    ended_ns = get_sim_time("ns")
    sample()
    sampler_task.cancel()

    clock = _Clock(released_ns, clk_ns)
    if scenario.direction == "tx":
        stamps = [
            clock.ns(c) for c in bench.ram.read_words(firmware.address("fw_tx_log"), len(frames))
        ]
        record["tx"] = {
            "offered": scenario.frames,
            "wire": [
                {
                    "start_ps": f.sim_time_start,
                    "end_ps": f.sim_time_end,
                    "length": len(f.get_payload(strip_fcs=False)),
                }  # fmt: skip
                for f in frames
            ],
            "xmit_ns": stamps,
        }
    else:
        entries = bench.rx_log(results["rx_logged"])
        received = [[_seq_of(e), clock.ns(e["cycle"])] for e in entries if e["status"] & 1]
        record["rx"] = {
            "wire": [w for w in rx_wire if w is not None],
            "received": received,
            "errored": sum(1 for e in entries if not e["status"] & 1),
            "truncated": 0,
        }
    cycles = results["cycles_lo"] | results["cycles_hi"] << 32
    record.update(
        driver={
            "irqs": results["irqs"],
            "timer_irqs": results["timer_irqs"],
            "polls": results["polls"],
            "tx_packets": results["tx_packets"],
            "tx_bytes": results["tx_bytes"],
            "tx_dropped": results["tx_dropped"],
            "queue_stops": results["queue_stops"],
            "rx_packets": results["rx_packets"],
            "rx_bytes": results["rx_bytes"],
            "rx_errors": results["rx_errors"],
            "rx_dropped": results["rx_dropped"],
            "rx_dropped_hw": results["rx_dropped_hw"],
            "dma_errors": results["dma_errors"],
        },
        cpu={
            "mhz": scenario.sys_mhz,
            "cores": 1,
            "cycles": {
                "run": cycles,
                "trap_handler": results["irq_cycles"],
                "xmit": results["xmit_cycles"],
                "instructions": results["instret_lo"],
            },
        },
        counters={
            "RX_DROPS": results["rx_dropped_hw"] - results["rx_fifo_overflows"],
            "RX_FIFO_OVERFLOWS": results["rx_fifo_overflows"],
        },
        bursts={},
        samples={"fields": list(_SAMPLE_FIELDS), "rows": rows},
        periodic_ns=[scenario.poll_us * 1000.0] if scenario.irq == "polling" else [],
        started_ns=started_ns,
        traffic_ns=ended_ns - started_ns,
        sim_ns=get_sim_time("ns"),
        wall_seconds=time.monotonic() - wall_started,
    )
    path = os.environ.get(RECORD_ENV)
    if path:
        Path(path).write_text(json.dumps(record))
    if scenario.direction == "rx":
        lost = scenario.frames - len(record["rx"]["received"]) - record["rx"]["errored"]
        assert lost <= results["rx_dropped_hw"] + results["rx_dropped"], (
            f"{lost} RX frames neither delivered nor counted as dropped: {results}"
        )
    log.info("done: %s", {k: results[k] for k in ("tx_packets", "rx_packets", "irqs")})
