"""Bench side of the host memory's CPU traffic port and shared timing (``mem_cpu_*`` and
the memory-system ``mem_*`` ports of ``macdma_soc_hostmem``, hdl/hostmem_top.py).

:class:`CpuMemoryPort` moves the modelled CPU's own memory traffic as real bursts through
:class:`~macdma.hdl.bus.cpu_traffic.CpuTrafficMaster`: :meth:`CpuMemoryPort.move` gives
the RTL one command (address, bytes, read or write) and returns when the RTL completed
it; Python wakes once per command (on ``mem_cpu_done_seq``), never per beat. Commands
from several callers run one at a time, in the order they were given. The CPU's bytes do
not travel through it: the caller reads or writes them through the memory's backdoor.

:func:`configure_memory_system` turns the RAM's shared timing on with a CPU file's
``[memory]`` (:class:`~macdma.sim.model.cpus.memory.MemorySpec`) at the bench's SoC clock.
"""

from __future__ import annotations

from cocotb.triggers import Lock, ValueChange

from macdma.hdl.bus.cpu_traffic import CMD_BYTES_BITS, SEQ_BITS

__all__ = ["CpuMemoryPort", "configure_memory_system"]

_MAX_COMMAND_BYTES = (1 << CMD_BYTES_BITS) - 1


def configure_memory_system(dut, timing) -> None:
    """Turn on the RAM's shared timing with ``timing`` (a
    :class:`~macdma.sim.model.cpus.memory.MemoryTiming`), and set the CPU port's beat and
    burst sizes to match."""
    for name in (
        "page_hit_cycles",
        "page_miss_cycles",
        "turnaround_cycles",
        "page_bytes_log2",
        "bank_bits",
        "beat_cost_x16",
        "cpu_beat_cost_x16",
    ):
        getattr(dut, f"mem_{name}").value = getattr(timing, name)
    dut.mem_cpu_beat_bytes_log2.value = timing.cpu_beat_bytes_log2
    dut.mem_cpu_burst_bytes_log2.value = timing.cpu_burst_bytes_log2
    dut.mem_shared.value = 1


class CpuMemoryPort:
    """The CPU traffic port of ``dut`` (a ``macdma_soc_hostmem``, or its ``_wire`` top).

    Members: ``commands`` and ``bytes`` (totals moved), ``read_bytes``/``write_bytes``.
    Until :func:`configure_memory_system` runs, a beat stands for 4 bytes and bursts split
    at 64-byte lines.
    """

    def __init__(self, dut) -> None:
        self.dut = dut
        self._lock = Lock()
        self._seq = 0
        self.commands = 0
        self.read_bytes = 0
        self.write_bytes = 0
        dut.mem_cpu_cmd_seq.value = 0
        dut.mem_cpu_beat_bytes_log2.value = 2
        dut.mem_cpu_burst_bytes_log2.value = 6

    @property
    def bytes(self) -> int:
        return self.read_bytes + self.write_bytes

    async def move(self, address: int, length: int, *, write: bool) -> None:
        """Move ``length`` bytes at ``address`` through the port (a read, or a write when
        ``write``); return when the RTL has completed every burst of it."""
        if not 0 <= length <= _MAX_COMMAND_BYTES or address < 0:
            raise ValueError(
                f"a CPU memory command moves 0..{_MAX_COMMAND_BYTES} bytes from an address "
                f">= 0, not {length} at {address:#x}"
            )
        if length == 0:
            return
        async with self._lock:
            dut = self.dut
            self._seq = (self._seq + 1) % (1 << SEQ_BITS)
            dut.mem_cpu_cmd_addr.value = address
            dut.mem_cpu_cmd_bytes.value = length
            dut.mem_cpu_cmd_write.value = int(write)
            dut.mem_cpu_cmd_seq.value = self._seq
            done = dut.mem_cpu_done_seq
            while True:
                await ValueChange(done)
                value = done.value
                if value.is_resolvable and int(value) == self._seq:
                    break
            self.commands += 1
            if write:
                self.write_bytes += length
            else:
                self.read_bytes += length
