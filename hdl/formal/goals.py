"""One k-induction step split into goals: each assertion in one group, proven one group at a
time with every other assertion held as a hypothesis on the cycle before.

k-induction at k = 1 proves that the conjunction of all the assertions, holding in one
cycle, holds in the next. The solver gets that step as one query, whose goal is the
disjunction of every assertion's failure; on the RX channel (about 150 assertions) it had
not answered after 6 minutes of solver CPU (12 of wall time), while the same step with one
group's failure as the goal answers in seconds. :class:`GoalSplit` builds the step of one group:

- the goal's assertions stay ``Assert``;
- every other assertion ``A`` becomes a *hypothesis*: a register ``before`` that takes the
  value of ``A`` (1 where its ``If`` does not enable it) each cycle, with
  ``Assume(before)``. So ``A`` is assumed in the cycle before the one checked, and not in
  the one checked.

Sound: in the induction step (cycles t and t + 1, the goal assumed at t and checked at
t + 1) the hypotheses say that every other assertion held at t, which is what the whole
step assumes too; nothing is assumed of t + 1. So one run per group proves "all at t
implies this group at t + 1", and together the runs prove "all at t implies all at t + 1",
the whole step. Their base cases (one cycle from reset: ``before`` starts at 1, its reset
value, so a hypothesis assumes nothing there) check each group in the reset state. Both
together are the whole proof by k-induction at k = 1; no run assumes what another proves
at the same cycle, so no circle.

Lemmas: groups whose runs have hypotheses only, and which every other run assumes in the
cycle it checks as well. Their runs prove "all at t implies the lemmas at t + 1", the
others "all at t and the lemmas at t + 1 imply this group at t + 1": together again the
whole step, and still no circle (no lemma's run assumes another group in that cycle).
"""

import sys
from contextlib import ExitStack, contextmanager
from unittest import mock

from amaranth import Signal, Value
from amaranth.hdl import Assert, Assume

__all__ = ["GoalSplit"]


class GoalSplit:
    """Files every ``Assert`` made in the patched modules (:meth:`patched`) under a group:
    the innermost label of :meth:`group` blocks open when it is made, or else the name of
    the module that makes it (``ownership_properties``, ``mover_invariants``, ...). With
    ``goal`` ``None`` every assertion stays one (the whole step), or, with ``keep``, those
    of the groups in ``keep`` and no other (a bounded check of some of a proof's
    assertions); with a ``goal`` only the goal's, the others become hypotheses (the
    module docstring). :meth:`section` names the group of what follows (until the next
    section) without a block. :meth:`hypotheses` adds the hypotheses to the top module
    once everything is built; :attr:`groups` lists the groups seen."""

    def __init__(
        self,
        goal: str | None,
        *,
        keep: tuple[str, ...] | None = None,
        one_by_one: tuple[str, ...] = (),
        lemmas: tuple[str, ...] = (),
    ):
        if goal is not None and keep is not None:
            raise ValueError("a goal keeps its own group: give goal or keep, not both")
        self.goal = goal
        self.keep = keep
        #: Groups whose assertions are each a group of their own, ``"<group> <n>"`` in the
        #: order made (for a group whose step is slow as one query, fast one by one); not
        #: with ``keep``, which names whole groups.
        self.one_by_one = one_by_one
        self._made: dict[str, int] = {}
        #: Groups proven first, with hypotheses only; the run of any other group assumes
        #: them in the cycle it checks too (their runs never assume it there: no circle).
        self.lemmas = lemmas
        self.groups: list[str] = []
        self._labels: list[str] = []
        self._section: str | None = None
        self._held: list[Signal] = []
        #: Assertions kept as assertions, and those made hypotheses, so far.
        self.asserted = 0
        self.held = 0

    @contextmanager
    def group(self, name: str):
        """Assertions made inside the block belong to group ``name``."""
        self._labels.append(name)
        try:
            yield
        finally:
            self._labels.pop()

    def section(self, name: str | None) -> None:
        """Assertions made from here on (outside :meth:`group` blocks) belong to group
        ``name``; ``None``: to their module's."""
        self._section = name

    def _assert(self, test, *args, src_loc_at: int = 0, **kwargs):
        caller = sys._getframe(1).f_globals["__name__"].rsplit(".", 1)[-1]
        name = self._labels[-1] if self._labels else (self._section or caller)
        if name in self.one_by_one and self.keep is None:
            self._made[name] = self._made.get(name, -1) + 1
            name = f"{name} {self._made[name]}"
        if name not in self.groups:
            self.groups.append(name)
        if self.keep is not None and name not in self.keep:
            return []
        if self.goal is None or name == self.goal:
            self.asserted += 1
            return Assert(test, *args, src_loc_at=src_loc_at + 1, **kwargs)
        self.held += 1
        if name in self.lemmas and self.goal not in self.lemmas:
            return [self._hold(test), Assume(test, src_loc_at=src_loc_at + 1)]
        return self._hold(test)

    def _hold(self, test):
        """``test`` as a hypothesis: its value, held for the next cycle's assumption."""
        held = Signal(init=1, name=f"hypothesis_{len(self._held)}")
        self._held.append(held)
        return held.eq(Value.cast(test).bool())

    @contextmanager
    def patched(self, modules):
        """While the block runs, ``Assert`` in each of ``modules`` is this split's."""
        with ExitStack() as stack:
            for module in modules:
                stack.enter_context(mock.patch.object(module, "Assert", self._assert))
            yield

    def hypotheses(self, m) -> None:
        """Assume, in ``m``, each hypothesis of the cycle before (see the module
        docstring); raises ``ValueError`` if the goal named no group seen."""
        for name in (self.goal,) if self.keep is None else self.keep:
            if name is not None and name not in self.groups:
                raise ValueError(f"No assertion group {name!r}; the groups are {self.groups}")
        for held in self._held:
            before = Signal(init=1, name=f"{held.name}_before")
            m.d.sync += before.eq(held)
            m.d.comb += Assume(before)
