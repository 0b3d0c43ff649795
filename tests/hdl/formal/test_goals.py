"""A split induction step (hdl/formal/goals.py) proves what the whole step proves, and no
more: each group's run holds the others only in the cycle before the one it checks."""

import sys
from functools import partial

import pytest
from amaranth import C, Module, Signal
from amaranth.hdl import Assert, Fragment

from macdma.hdl.formal.goals import GoalSplit
from macdma.hdl.formal.harness import Harness
from macdma.hdl.formal.proofs import Proof
from macdma.sim.flows import formal


class _Pair(Harness):
    """Two registers loaded each cycle with a free input, ``y`` with it plus ``skew``; two
    groups of assertions, each the other's mirror: "x" asserts ``x == y``, "y" asserts
    ``y == x``. With ``skew`` 0 both hold in every state; with ``skew`` 1 neither does
    after the first cycle, though each follows from the other in the same cycle (what a
    split that assumed the other groups in the cycle it checks would take as proof)."""

    def __init__(self, goal=None, *, skew: int = 0, lemmas=()):
        super().__init__()
        self.goal = goal
        self.skew = skew
        self.lemmas = lemmas

    def build(self, m):
        self.split = split = GoalSplit(self.goal, lemmas=self.lemmas)
        x, y = Signal(4, name="x"), Signal(4, name="y")
        i = self.any_seq(4, "i")
        m.d.sync += [x.eq(i), y.eq(i + self.skew)]
        with split.patched([sys.modules[__name__]]):
            with split.group("x"):
                m.d.comb += Assert(x == y)
            with split.group("y"):
                m.d.comb += Assert(y == x)
        split.hypotheses(m)


def _pair_proof(skew, lemmas=()):
    return Proof(
        name=f"pair_skew{skew}",
        harness=partial(_Pair, skew=skew, lemmas=lemmas),
        mode="prove",
        depth=1,
        cover_depth=1,
        component="-",
        split=True,
    )


def test_each_goal_of_a_true_invariant_closes(tmp_path):
    results = formal.run_proof(_pair_proof(0), tmp_path, tasks=("prove",))
    assert [(r.goal, r.status) for r in results] == [("x", "PASS"), ("y", "PASS")]


def test_no_goal_leans_on_another_in_the_cycle_it_checks(tmp_path):
    """Each of x == y and y == x follows from the other in the same cycle; neither is
    true. Every goal's step must fail (UNKNOWN at k = 1: the base case holds in the reset
    state), with its induction counterexample."""
    results = formal.run_proof(_pair_proof(1), tmp_path, tasks=("prove",))
    assert [r.goal for r in results] == ["x", "y"]
    for result in results:
        assert result.status != "PASS", f"goal {result.goal} passed a false invariant"
        assert any(trace.name.startswith("trace_induct") for trace in result.traces)


def test_a_lemma_is_proven_by_its_own_run_alone(tmp_path):
    """With "x" a lemma, the run of "y" assumes x == y in the cycle it checks and passes;
    the lemma's own run has hypotheses only, and fails: the proof as a whole does not."""
    results = formal.run_proof(_pair_proof(1, lemmas=("x",)), tmp_path, tasks=("prove",))
    assert {r.goal: r.status == "PASS" for r in results} == {"x": False, "y": True}


def test_goal_keeps_its_group_and_holds_the_others():
    split_counts = {}
    for goal in (None, "x", "y"):
        harness = _Pair(goal)
        Fragment.get(harness, None)
        split_counts[goal] = (harness.split.asserted, harness.split.held)
    assert split_counts == {None: (2, 0), "x": (1, 1), "y": (1, 1)}


def test_unknown_goal_is_refused_by_name():
    split = GoalSplit("z")
    m = Module()
    m._MustUse__silence = True  # never elaborated: the error comes first, on purpose
    with split.patched([sys.modules[__name__]]):
        for name in ("x", "y"):
            with split.group(name):
                m.d.comb += Assert(C(1, 1))
    with pytest.raises(ValueError, match="No assertion group 'z'; the groups are \\['x', 'y'\\]"):
        split.hypotheses(m)


def test_goal_and_keep_are_exclusive():
    with pytest.raises(ValueError, match="give goal or keep, not both"):
        GoalSplit("x", keep=("y",))


def test_make_formal_runs_a_task_per_goal_then_the_covers(tmp_path):
    """make formal's scheduler (sim/flows/formal.py run_tasks) gives a split proof one
    property task per group, each with its own netlist, then the covers of the whole."""
    reported = []
    results = formal.run_tasks([_pair_proof(0)], tmp_path, 2, reported.append)
    assert [(r.task, r.goal, r.status) for r in results] == [
        ("prove", "x", "PASS"),
        ("prove", "y", "PASS"),
        ("cover", None, "PASS"),
    ]
    assert [r.label for r in results] == ["prove [x]", "prove [y]", "cover"]
    assert len({r.workdir for r in results}) == 3
    assert len(reported) == 3
