"""Bench side of the host memory inside ``macdma_soc_hostmem`` (hdl/hostmem_top.py).

:class:`HdlHostMemory` offers what the bench's cocotbext-axi ``HostMemory`` offers its
callers (the driver model's platform, the scenario's sampler and checks): ``read`` and
``write`` of bytes, ``latency_cycles``, ``error_windows`` and ``count_from_here`` (the AXI
traffic from now on). The bytes live in the RAM's word array in the simulator;
``read``/``write`` reach it through the array's handle (a backdoor: no bus cycles,
effective at once). The traffic comes from the RAM's counters (bursts and beats per
direction, in all and per address class), read only at the ends of a measurement window,
so Python does not wake for a burst; a bench that needs every burst's address (a test)
asks for the per-burst record (``record_bursts=True``). The RAM's bench timing is
AxiRam's with the bench's per-burst latency, clock for clock (``_BenchTiming`` in
hdl/bus/axi4_ram.py), so a scenario gives the same numbers on either memory.
"""

from __future__ import annotations

from collections.abc import Callable

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge, ValueChange, current_gpi_trigger
from cocotb.utils import get_sim_time

from macdma.hdl.bus.axi4_ram import (
    ADDRESS_CLASSES,
    BURST_COUNT_BITS,
    COUNTERS,
    ERROR_WINDOWS,
    SHARED_TIMING_PORTS,
)

from .bursts import AddressClass, BurstRecord, TrafficCounts, in_class

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


_COUNT_MODULO = 1 << BURST_COUNT_BITS
_CHANNELS = (("ar", False), ("aw", True))


def _value(handle) -> int:
    """A bench port's value through its simulator object (a cocotb ``.value`` makes a
    LogicArray, ten times the cost); X or Z refused."""
    bits = handle.get_signal_val_binstr()
    try:
        return int(bits, 2)
    except ValueError:
        raise ValueError(f"host memory bench port {handle.get_name_string()}: {bits}") from None


class _Reading:
    """The RAM's counters as one settled time step shows them, and what that step's own
    clock edge added to them (``edge_now``: the step holds a rising edge of the RAM's
    clock; ``took``, ``last``: the bursts that edge took, per direction, and their
    (address, beats))."""

    def __init__(self, time_ps: int, counts: dict, took: dict, last: dict, edge_now: bool):
        self.time_ps = time_ps
        self.counts, self.took, self.last, self.edge_now = counts, took, last, edge_now

    def counts_with(self, classes: tuple[AddressClass, ...], *, this_edge: bool) -> TrafficCounts:
        """The counters as :class:`TrafficCounts` (``classes``: the RAM's, to take this
        step's take out of them); without this step's edge's takes unless ``this_edge``."""
        totals = {name: [0, 0] for name in COUNTERS}
        for write in (False, True):
            for name in COUNTERS:
                totals[name][write] = self.counts[write][name]
            if this_edge or not (self.edge_now and self.took[write]):
                continue
            addr, beats = self.last[write]
            totals["bursts"][write] -= 1
            totals["beats"][write] -= beats
            for index, address_class in enumerate(classes):
                if in_class(addr, address_class):
                    totals[f"class{index}_bursts"][write] -= 1
                    totals[f"class{index}_beats"][write] -= beats
        pair = {name: tuple(value % _COUNT_MODULO for value in totals[name]) for name in totals}
        return TrafficCounts(
            pair["bursts"],
            pair["beats"],
            tuple(beats * WORD_BYTES for beats in pair["beats"]),
            tuple(pair[f"class{i}_bursts"] for i in range(ADDRESS_CLASSES)),
            tuple(pair[f"class{i}_beats"] for i in range(ADDRESS_CLASSES)),
        )


def _wrapped(counts: TrafficCounts) -> TrafficCounts:
    """``counts`` with every number taken modulo the counters' wrap (a difference of two
    readings across a wrap comes out negative)."""

    def pair(values):
        return tuple(value % _COUNT_MODULO for value in values)

    return TrafficCounts(
        pair(counts.bursts),
        pair(counts.beats),
        tuple(beats * WORD_BYTES for beats in pair(counts.beats)),
        tuple(pair(p) for p in counts.class_bursts),
        tuple(pair(p) for p in counts.class_beats),
    )


class HdlTrafficMeter:
    """The AXI traffic of the DMA into an :class:`HdlHostMemory` from the time step the
    meter was made (:meth:`HdlHostMemory.count_from_here`), from the RAM's counters.

    The counts mean what a per-burst record would hold: a sample (:meth:`sample`) has
    the bursts taken at the clock edges before its time step, as a record appending
    each burst once its time step settles would; :meth:`total` has them all, this step's
    included. The counters are read once the time step has settled (cocotb's
    ``ReadOnly``); a sample is therefore delivered then, to a callback."""

    def __init__(self, memory: HdlHostMemory, classes: tuple[AddressClass, ...]):
        self.memory = memory
        self.classes = classes
        self.started_ps = round(get_sim_time("ps"))
        self._base: TrafficCounts | None = None
        memory._when_settled(self._set_base)

    def _set_base(self, reading: _Reading, settled: bool) -> None:
        if settled:
            raise RuntimeError("a host memory meter cannot start in a settled time step")
        self.memory._check_classes(self.classes)
        # The bursts this step's edge took belong to the window (a record appends them
        # once the step settles), under this meter's classes, whichever classes the RAM
        # took them under: the base is the counters without them, as these classes see
        # them; the later readings' class counts hold them as the RAM classed them.
        self._base = reading.counts_with(self.classes, this_edge=False)

    def _since(self, reading: _Reading, this_edge: bool) -> TrafficCounts:
        if self._base is None:
            raise RuntimeError("host memory meter read before its start settled")
        self.memory._check_classes(self.classes)
        if reading.time_ps == self.started_ps and not this_edge:
            return self._base - self._base  # nothing taken before the start's own step
        return _wrapped(reading.counts_with(self.classes, this_edge=this_edge) - self._base)

    def sample(self, deliver: Callable[[TrafficCounts], None]) -> None:
        """Give ``deliver`` the counts of the bursts taken from the meter's start up to
        the clock edges before this time step, once the step has settled (at once in a
        settled step, whose edge's bursts are then in)."""
        self.memory._when_settled(lambda reading, settled: deliver(self._since(reading, settled)))

    async def total(self) -> TrafficCounts:
        """The counts of every burst taken from the meter's start up to now, this time
        step's included (waits for the step to settle)."""
        reading = await self.memory._settled_reading()
        return self._since(reading, True)


class HdlHostMemory:
    """Host memory of ``size`` bytes in ``dut``'s ``host_ram`` (a ``macdma_soc_hostmem``).

    Members: ``latency_cycles`` and ``error_windows`` (``(start, end, "r"/"w"/"rw")``, at
    most two), both set on the RAM's ports when assigned; ``bursts`` (with
    ``record_bursts`` only: a list of :class:`~macdma.sim.benches.bursts.BurstRecord`,
    appended as the RAM takes each burst once :meth:`start` ran, when AxiRam's coroutine
    would take it; it costs two Python wake-ups a burst, so the scenarios count instead:
    :meth:`count_from_here`).
    """

    def __init__(self, dut, size: int, *, record_bursts: bool = False):
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
        self.record_bursts = record_bursts
        self._bursts: list[BurstRecord] = []
        # Bursts recorded per direction (write?) since start(), and the RAM's count then.
        self._recorded = {False: 0, True: 0}
        self._counted_from: dict[bool, int] = {}
        # The counters' simulator objects, per direction (write?) and name.
        self._counters = {
            write: {name: getattr(dut, f"mem_{channel}_{name}")._handle for name in COUNTERS}
            for channel, write in _CHANNELS
        }
        self._took = {
            write: getattr(dut, f"mem_{channel}_took")._handle for channel, write in _CHANNELS
        }
        self._last = {
            write: (
                getattr(dut, f"mem_{channel}_burst_addr")._handle,
                getattr(dut, f"mem_{channel}_burst_len")._handle,
            )
            for channel, write in _CHANNELS
        }
        self._cycles = dut.mem_cycles._handle
        # The RAM's clock, measured at start(): (time of a rising edge in ps, the cycle
        # counter after it, the period in ps).
        self._clock: tuple[int, int, int] | None = None
        self._settling: list[Callable[[_Reading, bool], None]] = []
        self._classes: tuple[AddressClass, ...] = ((0, 0),) * ADDRESS_CLASSES
        self._set_classes(self._classes)
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

    @property
    def bursts(self) -> list[BurstRecord]:
        """Every burst taken since :meth:`start` (``record_bursts`` only)."""
        if not self.record_bursts:
            raise AttributeError(
                "this HdlHostMemory keeps no per-burst record: make it with "
                "record_bursts=True, or count the traffic with count_from_here()"
            )
        return self._bursts

    def start(self) -> None:
        """Measure the RAM's clock (for the counters' readings) and, with
        ``record_bursts``, start recording bursts."""
        cocotb.start_soon(self._measure_clock())
        if not self.record_bursts:
            return
        for channel, write in _CHANNELS:
            self._counted_from[write] = self._count(channel)
            cocotb.start_soon(self._record(channel, write))

    # -- the traffic, from the RAM's counters ---------------------------------------------

    def count_from_here(self, classes: tuple[AddressClass, ...] = ()) -> HdlTrafficMeter:
        """A meter of the traffic from this time step on, counting apart the bursts whose
        address lies in each of ``classes`` (at most two ``(start, end)``; they become the
        RAM's address classes, so a meter made later with other classes leaves this one's
        class counts wrong, which its readings then refuse)."""
        classes = tuple((int(start), int(end)) for start, end in classes)
        if len(classes) > ADDRESS_CLASSES:
            raise ValueError(
                f"the HDL host memory counts {ADDRESS_CLASSES} address classes, not {len(classes)}"
            )
        classes += ((0, 0),) * (ADDRESS_CLASSES - len(classes))
        self._set_classes(classes)
        return HdlTrafficMeter(self, classes)

    def _set_classes(self, classes: tuple[AddressClass, ...]) -> None:
        for index, (start, end) in enumerate(classes):
            if not 0 <= start <= end <= self.size:
                raise ValueError(
                    f"bad address class {(start, end)!r} (memory of {self.size} bytes)"
                )
            getattr(self.dut, f"mem_class{index}_start").value = start
            getattr(self.dut, f"mem_class{index}_end").value = end
        self._classes = classes

    def _check_classes(self, classes: tuple[AddressClass, ...]) -> None:
        if classes != self._classes:
            raise RuntimeError(
                f"the RAM counts address classes {self._classes}, this meter's are {classes}: "
                "a meter made later changed them"
            )

    async def _measure_clock(self) -> None:
        clock = self.dut.clk
        await RisingEdge(clock)  # not measured: it may be the clock's X -> 1 on Icarus
        marks = []
        for _ in range(2):
            await RisingEdge(clock)
            await ReadOnly()
            marks.append((round(get_sim_time("ps")), _value(self._cycles)))
        (t_a, c_a), (t_b, c_b) = marks
        if (c_b - c_a) % _COUNT_MODULO != 1 or t_b <= t_a:
            raise RuntimeError(
                f"host memory: the RAM's cycle counter went {c_a} -> {c_b} over one clock period"
            )
        self._clock = (t_b, c_b, t_b - t_a)

    def _reading(self) -> _Reading:
        """The counters now (in a settled time step)."""
        if self._clock is None:
            raise RuntimeError(
                "host memory counters read before the RAM's clock was measured "
                "(start() and three clock edges first)"
            )
        time_ps = round(get_sim_time("ps"))
        edge_ps, edge_cycles, period_ps = self._clock
        periods, offset = divmod(time_ps - edge_ps, period_ps)
        cycles = _value(self._cycles)
        if (cycles - edge_cycles - periods) % _COUNT_MODULO:
            raise RuntimeError(
                f"host memory: at {time_ps} ps the RAM's clock has ticked {cycles - edge_cycles} "
                f"times since {edge_ps} ps, not {periods}: it lost the period of "
                f"{period_ps} ps measured at start()"
            )
        counts = {
            write: {name: _value(handle) for name, handle in self._counters[write].items()}
            for write in (False, True)
        }
        took = {write: bool(_value(self._took[write])) for write in (False, True)}
        last = {
            write: (_value(addr), _value(length) + 1)
            for write, (addr, length) in self._last.items()
        }
        return _Reading(time_ps, counts, took, last, offset == 0)

    def _when_settled(self, callback: Callable[[_Reading, bool], None]) -> None:
        """Call ``callback(reading, settled)`` with the counters once this time step has
        settled: at once in a settled step (``settled`` True), else at its ``ReadOnly``
        (``settled`` False: the callback was asked for before the step settled)."""
        if isinstance(current_gpi_trigger(), ReadOnly):
            callback(self._reading(), True)
            return
        if not self._settling:
            cocotb.start_soon(self._settle())
        self._settling.append(callback)

    async def _settle(self) -> None:
        await ReadOnly()
        self._flush()

    def _flush(self) -> None:
        if not self._settling:
            return
        reading = self._reading()
        waiting, self._settling = self._settling, []
        for callback in waiting:
            callback(reading, False)

    async def _settled_reading(self) -> _Reading:
        if not isinstance(current_gpi_trigger(), ReadOnly):
            await ReadOnly()
        self._flush()  # readings asked for earlier in this step come first
        return self._reading()

    # -- the per-burst record (record_bursts) ---------------------------------------------

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
            self._bursts.append(
                BurstRecord(write, int(addr.value), int(length.value) + 1, _WORD_SIZE)
            )

    async def check_record(self) -> None:
        """Raise if the burst record missed a burst the RAM's counters counted since
        :meth:`start` (``record_bursts`` only; call it at the end of a run; it waits for
        the time step to settle, so the record has every burst taken up to now)."""
        if not self.record_bursts:
            raise RuntimeError("check_record() of an HdlHostMemory without record_bursts")
        await ReadOnly()
        for channel, write in _CHANNELS:
            counted = (self._count(channel) - self._counted_from[write]) % _COUNT_MODULO
            if counted != self._recorded[write]:
                raise AssertionError(
                    f"host memory burst record: the RAM took {counted} "
                    f"{'write' if write else 'read'} bursts, the record has "
                    f"{self._recorded[write]}"
                )

    # -- the bench's inputs and the backdoor ----------------------------------------------

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
