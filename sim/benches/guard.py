"""Checks a DMA test bench runs on host memory and on the AXI traffic, written once.

- :class:`MemoryGuard`: after setup, host memory may change only where the host itself
  wrote (descriptors, TX buffers, buffer pre-fill) or where the DMA is allowed to write
  (a posted RX buffer, a descriptor's write-back words). Anything else the DMA wrote is
  reported with its address ranges.
- :func:`check_bursts`: every AXI burst within the beat cap, full-width, inside one 4 KiB
  page (AXI4 forbids a burst crossing a 4 KiB boundary).
- :func:`plan_bursts`: the greedy burst rule written out independently of the RTL
  (docs/soc.md), the reference a test compares the recorded bursts with.

The memory is any object with ``snapshot()`` (all of host memory as bytes) and
``memory.write(address, data)`` / ``memory.read(address, length)``, as
:class:`macdma.sim.benches.soc.SocBench` has.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from macdma.firmware.descriptor import DESCRIPTOR_BYTES, WRITEBACK_OFFSET, Descriptor

PAGE_BYTES = 4096  # AXI4: no burst crosses a 4 KiB boundary
_CHUNK_BYTES = 256  # compared whole first: a byte loop over all memory is too slow per check
_SHOWN_RANGES = 8


class _Bench(Protocol):
    memory: object

    def snapshot(self) -> bytes: ...


def changed_ranges(before: bytes, after: bytes) -> list[tuple[int, int]]:
    """The ``[start, end)`` address ranges where *after* differs from *before*."""
    if len(before) != len(after):
        raise ValueError(f"snapshots differ in size: {len(before)} and {len(after)} bytes")
    ranges: list[tuple[int, int]] = []
    for base in range(0, len(after), _CHUNK_BYTES):
        if after[base : base + _CHUNK_BYTES] == before[base : base + _CHUNK_BYTES]:
            continue
        for address in range(base, min(base + _CHUNK_BYTES, len(after))):
            if after[address] != before[address]:
                if ranges and ranges[-1][1] == address:
                    ranges[-1] = (ranges[-1][0], address + 1)
                else:
                    ranges.append((address, address + 1))
    return ranges


def format_ranges(ranges: Iterable[tuple[int, int]]) -> str:
    """``[0x100, 0x104), ...``: the first few ranges, for a failure message."""
    ranges = list(ranges)
    shown = ", ".join(f"[0x{lo:x}, 0x{hi:x})" for lo, hi in ranges[:_SHOWN_RANGES])
    more = len(ranges) - _SHOWN_RANGES
    return shown + (f" and {more} more" if more > 0 else "")


class MemoryGuard:
    """Host memory may change only where the host wrote or the DMA was allowed to write.

    Created after setup, it takes a snapshot (the baseline). The host's own writes go
    through :meth:`host_write` or :meth:`post` (or are taken in with :meth:`sync`), so the
    baseline follows them; :meth:`allow` (and :meth:`post`) name where the DMA may write.
    :meth:`check` asserts that nothing else changed and starts afresh from the memory as
    it is then; :meth:`check_untouched` asserts that nothing changed at all.
    """

    def __init__(self, bench: _Bench):
        self.bench = bench
        self.baseline = bytearray(bench.snapshot())
        self.allowed: list[tuple[int, int]] = []

    def host_write(self, address: int, data: bytes) -> None:
        """The host writes *data* at *address* (and the baseline follows)."""
        self.bench.memory.write(address, data)
        self.sync(address, len(data))

    def sync(self, address: int, length: int) -> None:
        """The host changed these bytes itself: take them into the baseline."""
        self.baseline[address : address + length] = self.bench.memory.read(address, length)

    def allow(self, start: int, end: int) -> None:
        """The DMA may write ``[start, end)`` until the next :meth:`check`."""
        if end < start:
            raise ValueError(f"allowed range [0x{start:x}, 0x{end:x}) ends before it starts")
        if end > start:
            self.allowed.append((start, end))

    def allow_writeback(self, ring, index: int) -> None:
        """The DMA may write the write-back words of descriptor *index* of *ring*."""
        address = ring.address(index)
        self.allow(address + WRITEBACK_OFFSET, address + DESCRIPTOR_BYTES)

    def post(self, ring, descriptor: Descriptor) -> int:
        """Post *descriptor* on *ring* (a :class:`macdma.sim.benches.soc.Ring`); the DMA may
        then write its write-back words and, on an RX ring, its whole buffer. Returns the
        ring index."""
        index = ring.post(descriptor)
        self.sync(ring.address(index), DESCRIPTOR_BYTES)
        self.allow_writeback(ring, index)
        if ring.channel == "RX":
            self.allow(descriptor.addr, descriptor.addr + descriptor.length)
        return index

    def changed(self) -> list[tuple[int, int]]:
        """Ranges that differ from the baseline."""
        return changed_ranges(self.baseline, self.bench.snapshot())

    def host_wrote(self, address: int, data: bytes) -> None:
        """The host wrote (or has a store on its way that writes) *data* at *address*: the
        baseline takes it without reading memory, for stores that land later."""
        self.baseline[address : address + len(data)] = data

    def outside_allowed(self) -> list[tuple[int, int]]:
        """Changed ranges, cut to the bytes no :meth:`allow` covers."""
        after = bytearray(self.bench.snapshot())
        for start, end in self.allowed:  # allowed bytes compare equal
            after[start:end] = self.baseline[start:end]
        return changed_ranges(self.baseline, after)

    def restart(self) -> None:
        """Take memory as it is now as the baseline and forget the allowed ranges."""
        self.baseline = bytearray(self.bench.snapshot())
        self.allowed = []

    def check(self, what: str = "memory guard") -> None:
        """Assert nothing changed outside the allowed ranges, then start afresh."""
        bad = self.outside_allowed()
        assert not bad, (
            f"{what}: the DMA wrote host memory outside posted buffers and descriptor "
            f"write-back words at {format_ranges(bad)}"
        )
        self.restart()

    def check_untouched(self, what: str = "memory guard") -> None:
        """Assert nothing at all changed since the last check."""
        changed = self.changed()
        assert not changed, f"{what}: host memory written at {format_ranges(changed)}"


def check_bursts(bursts: Iterable, *, cap_beats: int, beat_bytes: int) -> None:
    """Assert every burst (records with ``addr``, ``beats``, ``size``) has 1..*cap_beats*
    beats of the full bus width *beat_bytes* and stays inside one 4 KiB page."""
    if beat_bytes < 1 or beat_bytes & (beat_bytes - 1):
        raise ValueError(f"beat_bytes must be a power of two, got {beat_bytes}")
    full_size = beat_bytes.bit_length() - 1  # AxSIZE of a full-width beat
    for burst in bursts:
        assert 1 <= burst.beats <= cap_beats, f"burst of {burst.beats} beats > {cap_beats}: {burst}"
        first_byte = burst.addr - burst.addr % beat_bytes
        last_byte = first_byte + burst.beats * beat_bytes - 1
        assert first_byte // PAGE_BYTES == last_byte // PAGE_BYTES, f"burst crosses 4 KiB: {burst}"
        assert burst.size == full_size, f"narrow burst (size {burst.size}): {burst}"


def plan_bursts(addr: int, length: int, cap_beats: int, beat_bytes: int) -> list[tuple[int, int]]:
    """The ``(address, beats)`` bursts the greedy rule gives for *length* bytes at *addr*:
    from the beat-aligned start, each burst as long as the cap, the beats left and the 4 KiB
    page allow."""
    address = addr - addr % beat_bytes
    beats_left = (addr % beat_bytes + length + beat_bytes - 1) // beat_bytes
    bursts = []
    while beats_left:
        beats = min(cap_beats, beats_left, (PAGE_BYTES - address % PAGE_BYTES) // beat_bytes)
        bursts.append((address, beats))
        address += beats * beat_bytes
        beats_left -= beats
    return bursts
