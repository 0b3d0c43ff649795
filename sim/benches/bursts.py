"""What both host memory models (the cocotbext-axi one in :mod:`.soc`, the HDL one in
:mod:`.hdl_memory`) tell about the AXI bursts they took: the record of one burst, for the
burst checks of the benches, and the counts of a span of time, for the metrics."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: An address class: the bursts whose AxADDR lies in [start, end) (e.g. a descriptor ring).
AddressClass = tuple[int, int]


@dataclass
class BurstRecord:
    """One AXI burst seen by host memory."""

    write: bool
    addr: int
    beats: int
    size: int


def _pairs(values) -> tuple[tuple[int, int], ...]:
    return tuple((int(read), int(write)) for read, write in values)


@dataclass(frozen=True)
class TrafficCounts:
    """The AXI traffic host memory took over a span of time. Every pair is (read, write),
    indexed as :attr:`BurstRecord.write`: ``bursts``, ``beats`` and ``bytes`` in all, and,
    per address class of the meter that counted them (``class_bursts[i]``,
    ``class_beats[i]``), the bursts and beats whose address was in class ``i``."""

    bursts: tuple[int, int] = (0, 0)
    beats: tuple[int, int] = (0, 0)
    bytes: tuple[int, int] = (0, 0)
    class_bursts: tuple[tuple[int, int], ...] = ()
    class_beats: tuple[tuple[int, int], ...] = ()

    def _combine(self, other: TrafficCounts, sign: int) -> TrafficCounts:
        def pair(a, b):
            return (a[0] + sign * b[0], a[1] + sign * b[1])

        def pairs(a, b):
            return tuple(pair(x, y) for x, y in zip(a, b, strict=True))

        return TrafficCounts(
            pair(self.bursts, other.bursts),
            pair(self.beats, other.beats),
            pair(self.bytes, other.bytes),
            pairs(self.class_bursts, other.class_bursts),
            pairs(self.class_beats, other.class_beats),
        )

    def __add__(self, other: TrafficCounts) -> TrafficCounts:
        return self._combine(other, 1)

    def __sub__(self, other: TrafficCounts) -> TrafficCounts:
        return self._combine(other, -1)


def in_class(addr: int, address_class: AddressClass) -> bool:
    """Whether a burst at ``addr`` belongs to ``address_class`` (its start address decides,
    as in the HDL RAM's counters)."""
    start, end = address_class
    return start <= addr < end


def count_bursts(bursts: Iterable[BurstRecord], classes: tuple[AddressClass, ...]) -> TrafficCounts:
    """The counts of ``bursts`` with ``classes`` as the address classes."""
    totals = [[0, 0], [0, 0], [0, 0]]  # bursts, beats, bytes; each [read, write]
    per_class = [[[0, 0], [0, 0]] for _ in classes]  # [class][bursts/beats][read/write]
    for burst in bursts:
        direction = int(burst.write)
        totals[0][direction] += 1
        totals[1][direction] += burst.beats
        totals[2][direction] += burst.beats << burst.size
        for index, address_class in enumerate(classes):
            if in_class(burst.addr, address_class):
                per_class[index][0][direction] += 1
                per_class[index][1][direction] += burst.beats
    return TrafficCounts(
        *_pairs(totals),
        tuple(tuple(c[0]) for c in per_class),
        tuple(tuple(c[1]) for c in per_class),
    )


class RecordMeter:
    """The traffic in a list of :class:`BurstRecord` (a memory that records every burst)
    from the moment the meter is made: what ``count_from_here`` of such a memory returns.

    The list must only grow while the meter counts (clearing it under the meter raises).
    """

    def __init__(self, bursts: list[BurstRecord], classes: tuple[AddressClass, ...]):
        self.classes = tuple(classes)
        self._bursts = bursts
        self._seen = len(bursts)
        self._counts = count_bursts((), self.classes)

    def _update(self) -> TrafficCounts:
        if len(self._bursts) < self._seen:
            raise RuntimeError("the burst record was cleared while a meter counted it")
        self._counts += count_bursts(self._bursts[self._seen :], self.classes)
        self._seen = len(self._bursts)
        return self._counts

    def sample(self, deliver: Callable[[TrafficCounts], None]) -> None:
        """Give ``deliver`` the counts of every burst recorded so far, at once."""
        deliver(self._update())

    async def total(self) -> TrafficCounts:
        """The counts of every burst recorded so far."""
        return self._update()
