"""Bench side of the host memory inside ``macdma_soc_hostmem`` (hdl/hostmem_top.py).

:class:`HdlHostMemory` offers what the bench's cocotbext-axi ``HostMemory`` offers its
callers (the driver model's platform, the scenario's sampler and checks): ``read`` and
``write`` of bytes, ``latency_cycles``, ``error_windows`` and the ``bursts`` record. The
bytes live in the RAM's word array in the simulator; ``read``/``write`` reach it through
the array's handle (a backdoor: no bus cycles, effective at once), and the burst record
comes from the RAM's counters of the bursts it took (with the last one's address and
length), so Python wakes once per burst rather than on every beat, reads those ports only
once the time step has settled, and checks at the end that it saw every burst the
counters counted. The RAM's bench timing is AxiRam's with the bench's
per-burst latency, clock for clock (``_BenchTiming`` in hdl/bus/axi4_ram.py), so a scenario
gives the same numbers on either memory.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ReadOnly, ValueChange

from macdma.hdl.bus.axi4_ram import BURST_COUNT_BITS, ERROR_WINDOWS, SHARED_TIMING_PORTS

from .bursts import BurstRecord

__all__ = ["HdlHostMemory"]

WORD_BYTES = 4
_WORD_SIZE = 2  # AxSIZE of a full 32-bit beat
# cocotb's GPI write action "no delay": what ``handle.set(Immediate(value))`` passes on.
_GPI_NO_DELAY = 3


def _ram_of(dut):
    """The bench-port RAM in ``dut``: ``host_ram`` at its top (macdma_soc_cpu), or in its
    ``host_memory`` (macdma_soc_hostmem's SharedHostMemory); macdma_soc_hostmem_wire
    (hdl/sim_wire/tops.py) holds macdma_soc_hostmem as ``soc``."""
    for top in (dut, getattr(dut, "soc", None)):
        if top is None:
            continue
        if hasattr(top, "host_ram"):
            return top.host_ram
        if hasattr(top, "host_memory"):
            return top.host_memory.host_ram
    raise ValueError(f"{dut._name} holds no host memory (host_ram or host_memory.host_ram)")


class HdlHostMemory:
    """Host memory of ``size`` bytes in ``dut``'s ``host_ram`` (a ``macdma_soc_hostmem``).

    Members: ``bursts`` (a list of :class:`~macdma.sim.benches.bursts.BurstRecord`, appended
    as the RAM takes each burst once :meth:`start` ran, when AxiRam's coroutine would take
    it), ``latency_cycles`` and
    ``error_windows`` (``(start, end, "r"/"w"/"rw")``, at most two), both set on the RAM's
    ports when assigned.
    """

    def __init__(self, dut, size: int):
        ram = _ram_of(dut)
        depth = len(ram.array.words)
        if depth * WORD_BYTES != size:
            raise ValueError(
                f"the simulated top holds {depth * WORD_BYTES} bytes of host memory, "
                f"the bench asked for {size}: build macdma_soc_hostmem with memory_bytes={size}"
            )
        self.dut = dut
        self.size = size
        # The words are reached through the simulator object under the array's handle
        # (cocotb's ``_handle``), not through a cocotb handle per word: a frame touches
        # hundreds of words, most of them once, and on cocotb 2.1 a word's first cocotb
        # handle costs about 30 us and each ``.value`` read another 20 us (a LogicArray),
        # a fifth of the wall time of a full-duplex run. The raw object reads the word's
        # bits as a string (X or Z still refused) and writes it as an integer.
        # Measured in docs/performance.md ("The backdoor's words").
        self._words = ram.array.words._handle
        self._handles: dict[int, object] = {}
        self.bursts: list[BurstRecord] = []
        # Bursts recorded per direction (write?) since start(), and the RAM's count then.
        self._recorded = {False: 0, True: 0}
        self._counted_from: dict[bool, int] = {}
        self._latency_cycles = 0
        self._error_windows: tuple[tuple[int, int, str], ...] = ()
        self.latency_cycles = 0
        self.error_windows = ()
        # The memory system's ports (a top with the CPU port) stay at rest, the bench's
        # timing on, until a CPU file's [memory] turns them on (sim/benches/cpu_port.py).
        if hasattr(dut, "mem_shared"):
            for name in SHARED_TIMING_PORTS:
                getattr(dut, f"mem_{name}").value = 0
            for name, value in (("cmd_seq", 0), ("cmd_addr", 0), ("cmd_bytes", 0),
                                ("cmd_write", 0), ("beat_bytes_log2", 2),
                                ("burst_bytes_log2", 6)):  # fmt: skip
                getattr(dut, f"mem_cpu_{name}").value = value

    def start(self) -> None:
        """Start recording bursts."""
        for channel, write in (("ar", False), ("aw", True)):
            self._counted_from[write] = self._count(channel)
            cocotb.start_soon(self._record(channel, write))

    def _count(self, channel: str) -> int:
        value = getattr(self.dut, f"mem_{channel}_bursts").value
        # Icarus starts the counter at X and settles it to 0 at time 0.
        return int(value) if value.is_resolvable else 0

    async def _record(self, channel: str, write: bool) -> None:
        counter = getattr(self.dut, f"mem_{channel}_bursts")
        addr = getattr(self.dut, f"mem_{channel}_burst_addr")
        length = getattr(self.dut, f"mem_{channel}_burst_len")
        recorded = self._counted_from[write]
        while True:
            await ValueChange(counter)
            # The address and length registers change in the same clock edge as the
            # counter, but a simulator may call back on the counter before it applied
            # them (Icarus does): read all three once the time step has settled.
            await ReadOnly()
            value = counter.value
            if not value.is_resolvable:
                continue
            count = int(value)
            if count == recorded:
                continue  # Icarus' X -> 0 at time 0: not a burst
            # One burst per change: the RAM takes at most one per clock and direction. A
            # skipped count is not recorded here; check_record() reports it.
            recorded = count
            self._recorded[write] += 1
            self.bursts.append(
                BurstRecord(write, int(addr.value), int(length.value) + 1, _WORD_SIZE)
            )

    async def check_record(self) -> None:
        """Raise if the burst record missed a burst the RAM's counters counted since
        :meth:`start` (call it at the end of a run; it waits for the time step to settle,
        so the record has every burst taken up to now)."""
        await ReadOnly()
        for channel, write in (("ar", False), ("aw", True)):
            counted = (self._count(channel) - self._counted_from[write]) % (1 << BURST_COUNT_BITS)
            if counted != self._recorded[write]:
                raise AssertionError(
                    f"host memory burst record: the RAM took {counted} "
                    f"{'write' if write else 'read'} bursts, the record has "
                    f"{self._recorded[write]}"
                )

    @property
    def latency_cycles(self) -> int:
        return self._latency_cycles

    @latency_cycles.setter
    def latency_cycles(self, cycles: int) -> None:
        limit = (1 << len(self.dut.mem_latency_cycles)) - 1
        if not 0 <= cycles <= limit:
            raise ValueError(f"latency_cycles must be in 0..{limit}, not {cycles!r}")
        self._latency_cycles = cycles
        self.dut.mem_latency_cycles.value = cycles

    @property
    def error_windows(self) -> tuple[tuple[int, int, str], ...]:
        return self._error_windows

    @error_windows.setter
    def error_windows(self, windows) -> None:
        windows = tuple(tuple(window) for window in windows)
        if len(windows) > ERROR_WINDOWS:
            raise ValueError(
                f"the HDL host memory has {ERROR_WINDOWS} error windows, not {len(windows)}"
            )
        for start, end, kinds in windows:
            if not (0 <= start < end <= self.size) or not kinds or set(kinds) - {"r", "w"}:
                raise ValueError(f"bad error window {(start, end, kinds)!r}")
        self._error_windows = windows
        for index in range(ERROR_WINDOWS):
            start, end, kinds = windows[index] if index < len(windows) else (0, 0, "")
            getattr(self.dut, f"mem_err{index}_start").value = start
            getattr(self.dut, f"mem_err{index}_end").value = end
            getattr(self.dut, f"mem_err{index}_read").value = int("r" in kinds)
            getattr(self.dut, f"mem_err{index}_write").value = int("w" in kinds)

    def _word(self, index: int):
        """The simulator object of word ``index`` (``get_signal_val_binstr``,
        ``set_signal_val_int``)."""
        handle = self._handles.get(index)
        if handle is None:
            handle = self._handles[index] = self._words.get_handle_by_index(index)
        return handle

    def _read_word(self, index: int) -> int:
        bits = self._word(index).get_signal_val_binstr()
        try:
            return int(bits, 2)
        except ValueError:
            raise ValueError(
                f"host memory word at 0x{index * WORD_BYTES:x} holds X or Z bits: {bits}"
            ) from None

    def _check(self, address: int, length: int) -> None:
        if address < 0 or length < 0 or address + length > self.size:
            raise ValueError(
                f"host memory access of {length} bytes at 0x{address:x} is outside "
                f"0..0x{self.size:x}"
            )

    def read(self, address: int, length: int) -> bytes:
        """``length`` bytes from ``address``, as the memory holds them now."""
        self._check(address, length)
        if length == 0:
            return b""
        first, last = address // WORD_BYTES, (address + length - 1) // WORD_BYTES
        data = b"".join(
            self._read_word(index).to_bytes(WORD_BYTES, "little")
            for index in range(first, last + 1)
        )
        offset = address - first * WORD_BYTES
        return data[offset : offset + length]

    def write(self, address: int, data: bytes) -> None:
        """Store ``data`` at ``address`` at once (the words a partial edge touches keep
        their other bytes)."""
        data = bytes(data)
        self._check(address, len(data))
        if not data:
            return
        first = address // WORD_BYTES
        last = (address + len(data) - 1) // WORD_BYTES
        offset = address - first * WORD_BYTES
        image = bytearray(self.read(first * WORD_BYTES, (last - first + 1) * WORD_BYTES))
        image[offset : offset + len(data)] = data
        for index in range(first, last + 1):
            at = (index - first) * WORD_BYTES
            word = int.from_bytes(image[at : at + WORD_BYTES], "little")
            self._word(index).set_signal_val_int(_GPI_NO_DELAY, word)
