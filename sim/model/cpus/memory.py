"""A CPU file's ``[memory]`` table: the memory system the CPU and the DMA share.

With it, the simulated host memory (``--memory hdl``) serves reads and writes through one
port with DRAM-like timing, and the CPU's own memory traffic (its stores before a
doorbell, and every ``Platform.memory_traffic``) flows as real bursts through a second
master port of that memory, contending with the DMA's bursts (docs/cpus.md, "The memory
system"). Without it the host memory keeps the bench's timing (AxiRam's, clock for clock)
and the CPU's traffic keeps its flat cost.

The table, every key required (docs/cpus.md gives an example with sources)::

    [memory]
    bus_bytes = 4              # bytes per transfer of the memory's data bus
    bus_mhz = 533.0            # the memory bus clock
    transfers_per_clock = 2    # 1 (SDR) or 2 (DDR)
    page_bytes = 2048          # a DRAM page (row), a power of two
    banks = 8                  # banks, each with one page open: 1, 2, 4 or 8
    page_hit_ns = 15.0         # first access of a burst whose page is open (CL)
    page_miss_ns = 45.0        # ... whose page is not (tRP + tRCD + CL)
    turnaround_ns = 7.5        # added when a burst's direction differs from the last one's
    cpu_burst_bytes = 32       # the CPU's unit of memory traffic: its cache line

:func:`memory_spec` checks every value against its range (one :class:`Knob` each) and
raises the loader's :class:`CpuFileError` naming the key, the value and the range. The
conversion to the RAM's bench ports (SoC clocks, costs in 1/16 clock) is
:meth:`MemorySpec.timing`, at the scenario's SoC clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...run.knobs import Knob

__all__ = ["MEMORY_KEYS", "MemorySpec", "MemoryTiming", "memory_spec"]

#: Each key's range, declared once.
MEMORY_KEYS = {
    "bus_bytes": Knob(int, "the memory bus width", unit="bytes", low=1, high=64),
    "bus_mhz": Knob(float, "the memory bus clock", unit="MHz", low=1, high=5000),
    "transfers_per_clock": Knob(int, "transfers per bus clock", choices=(1, 2)),
    "page_bytes": Knob(int, "a DRAM page", unit="bytes", low=256, high=65536),
    "banks": Knob(int, "banks", choices=(1, 2, 4, 8)),
    "page_hit_ns": Knob(float, "an open page's first access", unit="ns", low=0, high=1000),
    "page_miss_ns": Knob(float, "a closed page's first access", unit="ns", low=0, high=1000),
    "turnaround_ns": Knob(float, "a read/write turnaround", unit="ns", low=0, high=1000),
    # At most 256 beats of 4 bytes: an AXI4 burst (the CPU port's beats may be wider).
    "cpu_burst_bytes": Knob(int, "the CPU's burst", unit="bytes", low=4, high=1024),
}
#: The SoC bus's beat: the DMA's AXI4 data width (32 bits).
DMA_BEAT_BYTES = 4
#: The RAM's limits on the converted values (hdl/bus/axi4_ram.py: 10-bit latencies and
#: beat costs; CpuTrafficMaster: a beat stands for 4..128 bytes).
MAX_LATENCY_CYCLES = (1 << 10) - 1
MAX_BEAT_COST_X16 = (1 << 10) - 1
MAX_CPU_BEAT_BYTES = 128


@dataclass(frozen=True)
class MemoryTiming:
    """A :class:`MemorySpec` in SoC clocks: the values the RAM's and the CPU port's bench
    ports take (hdl/bus/axi4_ram.py ``_SharedPort``, hdl/bus/cpu_traffic.py)."""

    page_hit_cycles: int
    page_miss_cycles: int
    turnaround_cycles: int
    page_bytes_log2: int
    bank_bits: int
    beat_cost_x16: int
    cpu_beat_cost_x16: int
    cpu_beat_bytes_log2: int
    cpu_burst_bytes_log2: int


@dataclass(frozen=True)
class MemorySpec:
    """The memory system of a CPU file (see the module docstring for each member)."""

    bus_bytes: int
    bus_mhz: float
    transfers_per_clock: int
    page_bytes: int
    banks: int
    page_hit_ns: float
    page_miss_ns: float
    turnaround_ns: float
    cpu_burst_bytes: int

    @property
    def bytes_per_ns(self) -> float:
        """The memory's peak data rate."""
        return self.bus_bytes * self.bus_mhz * self.transfers_per_clock / 1000.0

    def timing(self, sys_clk_ns: float) -> MemoryTiming:
        """The bench-port values at a SoC clock of ``sys_clk_ns``; ValueError when one does
        not fit its port (a latency of over 1023 clocks, a memory so slow that a beat
        takes over 64 clocks)."""
        per_cycle = self.bytes_per_ns * sys_clk_ns  # bytes the memory moves per SoC clock

        def cycles(name: str, ns: float) -> int:
            value = math.ceil(ns / sys_clk_ns - 1e-9)
            if value > MAX_LATENCY_CYCLES:
                raise ValueError(
                    f"[memory] {name} = {ns} ns is {value} SoC clocks of {sys_clk_ns} ns; "
                    f"the host memory takes at most {MAX_LATENCY_CYCLES}"
                )
            return value

        def cost(beat_bytes: int, what: str) -> int:
            value = max(1, round(16 * beat_bytes / per_cycle))
            if value > MAX_BEAT_COST_X16:
                raise ValueError(
                    f"[memory] moves {per_cycle:.3g} bytes per SoC clock of {sys_clk_ns} ns: "
                    f"a {beat_bytes}-byte {what} beat would take over 64 clocks"
                )
            return value

        # A CPU beat stands for as many bytes as the memory moves in one SoC clock (a
        # power of two, at least the bus's 4 and at most a burst), so the CPU's bursts
        # take the memory's time, not the 32-bit SoC bus's.
        cpu_beat = DMA_BEAT_BYTES
        while cpu_beat * 2 <= min(per_cycle, self.cpu_burst_bytes, MAX_CPU_BEAT_BYTES):
            cpu_beat *= 2
        return MemoryTiming(
            page_hit_cycles=cycles("page_hit_ns", self.page_hit_ns),
            page_miss_cycles=cycles("page_miss_ns", self.page_miss_ns),
            turnaround_cycles=cycles("turnaround_ns", self.turnaround_ns),
            page_bytes_log2=self.page_bytes.bit_length() - 1,
            bank_bits=self.banks.bit_length() - 1,
            beat_cost_x16=cost(DMA_BEAT_BYTES, "DMA"),
            cpu_beat_cost_x16=cost(cpu_beat, "CPU"),
            cpu_beat_bytes_log2=cpu_beat.bit_length() - 1,
            cpu_burst_bytes_log2=self.cpu_burst_bytes.bit_length() - 1,
        )


def memory_spec(table: Any, fail) -> MemorySpec:
    """The ``[memory]`` table as a :class:`MemorySpec`; ``fail(key, value, problem)``
    makes the loader's :class:`CpuFileError`."""
    if not isinstance(table, dict):
        raise fail("memory", table, "must be a table ([memory])")
    for key, value in table.items():
        if key not in MEMORY_KEYS:
            raise fail(
                f"memory.{key}", value, f"unknown key (the memory's are: {', '.join(MEMORY_KEYS)})"
            )
    values = {}
    for key, declared in MEMORY_KEYS.items():
        if key not in table:
            raise fail(f"memory.{key}", None, f"missing ({declared.help}, {declared.limit_text()})")
        value = table[key]
        try:
            values[key] = declared.check(f"memory.{key}", value)
        except ValueError:
            kind = "a whole number" if declared.kind is int else "a number"
            raise fail(f"memory.{key}", value, f"must be {kind}, {declared.limit_text()}") from None
    for key in ("page_bytes", "cpu_burst_bytes"):
        if values[key] & (values[key] - 1):
            raise fail(f"memory.{key}", values[key], "must be a power of two")
    if values["page_miss_ns"] < values["page_hit_ns"]:
        raise fail(
            "memory.page_miss_ns",
            values["page_miss_ns"],
            f"must be at least page_hit_ns ({values['page_hit_ns']}): a closed page costs "
            "an activate on top of the open page's access",
        )
    return MemorySpec(**{key: (float(v) if MEMORY_KEYS[key].kind is float else v)
                         for key, v in values.items()})  # fmt: skip
