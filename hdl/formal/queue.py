"""A small in-order record queue for property checkers (bursts in flight, their addresses)."""

from amaranth import *

__all__ = ["RecordQueue"]


class RecordQueue:
    """Registers holding up to ``depth`` records of ``widths`` (name -> bits), oldest first.

    Built into the checker's module ``m``: ``push(m, cond, **values)`` appends in the cycle
    ``cond`` is high, ``pop(m, cond)`` drops the oldest; both may happen in one cycle.
    ``head(name)`` is the oldest record's field, ``level`` the number held. Pushing into a
    full queue is the checker's own bound: the checker asserts ``level`` stays below it.
    """

    def __init__(self, m: Module, name: str, depth: int, widths: dict):
        self._depth = depth
        self._fields = {
            field: Array(Signal(width, name=f"{name}_{field}{i}") for i in range(depth))
            for field, width in widths.items()
        }
        self.level = Signal(range(depth + 1), name=f"{name}_level")
        self._rd = Signal(range(depth), name=f"{name}_rd")
        self._wr = Signal(range(depth), name=f"{name}_wr")
        self._push = Signal(name=f"{name}_push")
        self._pop = Signal(name=f"{name}_pop")
        self._m = m

        def advance(pointer):
            return Mux(pointer == depth - 1, 0, pointer + 1)

        with m.If(self._push):
            m.d.sync += self._wr.eq(advance(self._wr))
        with m.If(self._pop):
            m.d.sync += self._rd.eq(advance(self._rd))
        m.d.sync += self.level.eq(self.level + self._push - self._pop)

    @property
    def depth(self) -> int:
        return self._depth

    def head(self, field: str) -> Value:
        return self._fields[field][self._rd]

    @property
    def consistent(self) -> Value:
        """High if the pointers are in range and ``level`` records lie between them (true in
        every reachable state; a linking invariant for k-induction)."""
        end = self._rd + self.level
        wrapped = Mux(end >= self._depth, end - self._depth, end)
        return (self._rd < self._depth) & (self.level <= self._depth) & (self._wr == wrapped)

    def entry(self, field: str, age: int) -> Value:
        """The ``field`` of the record ``age`` places behind the oldest (0: the oldest); a
        value only while ``age < level``. For linking invariants between two queues."""
        index = self._rd + age
        return self._fields[field][Mux(index >= self._depth, index - self._depth, index)]

    def push(self, cond, **values) -> None:
        self._m.d.comb += self._push.eq(cond)
        with self._m.If(cond):
            for field, value in values.items():
                self._m.d.sync += self._fields[field][self._wr].eq(value)

    def pop(self, cond) -> None:
        self._m.d.comb += self._pop.eq(cond)
