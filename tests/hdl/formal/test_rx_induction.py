"""The RX ownership induction's split (hdl/formal/rx_induction.py, run by make formal as
rx_ownership_induction, one task per group): its groups take every assertion of the whole
step, each exactly once."""

from amaranth.hdl import Fragment

from macdma.hdl.formal.proofs import RX_INDUCTION_BUILD
from macdma.hdl.formal.rx_induction import RxOwnershipInductionHarness


def _split(goal):
    harness = RxOwnershipInductionHarness(**RX_INDUCTION_BUILD, goal=goal)
    Fragment.get(harness, None)
    return harness.split


def test_goals_partition_the_whole_step():
    whole = _split(None)
    assert whole.held == 0 and whole.asserted > 100
    assert {"ownership_properties 0", "writer 0", "fetch", "command served"} <= set(whole.groups)
    asserted = 0
    for goal in whole.groups:
        split = _split(goal)
        assert split.asserted > 0, f"goal {goal!r} asserts nothing"
        assert split.asserted + split.held == whole.asserted, goal
        asserted += split.asserted
    assert asserted == whole.asserted
