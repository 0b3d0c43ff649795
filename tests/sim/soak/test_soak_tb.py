"""The soak's CI profile: 3,000 frames per direction through ``macdma_soc`` on Verilator
in ten segments of 300 (once: the soak is about volume, the simulators are compared by the
other suites), every check of sim/soak/soak_tb.py applied, and the coverage goal
docs/reliability.md states. The profile's check is shown to catch a planted double count
and a planted lost frame (SoakConfig.plant). Wall and CPU time: docs/reliability.md."""

from __future__ import annotations

import pytest

from macdma.sim.cosim.runner import CocotbTestFailure
from macdma.sim.soak.command import balance_problems, run_soak
from macdma.sim.soak.plan import BURST_CAPS, IRQ_STRATEGY_NAMES, SoakConfig

CI_SEGMENT_FRAMES = 300
# Ten segments: every burst cap once (nine), every IRQ strategy twice.
CI_SEGMENTS = 10
CI_SOAK_PROFILE = SoakConfig(CI_SEGMENTS * CI_SEGMENT_FRAMES, 1, CI_SEGMENT_FRAMES)
#: The CI profile's coverage goal: this share of all bins, and no empty bin at all in
#: the cover points a fixed plan must fill (docs/reliability.md).
COVERAGE_GOAL_PERCENT = 90.0
FULL_POINTS = (
    "soak.tx.fragments",
    "soak.tx.fragment_alignment",
    "soak.tx.page_crossing",
    "soak.dma.burst_cap",
    "soak.irq.strategy",
    "soak.axi.backpressure",
)


def run_profile(config: SoakConfig) -> dict:
    """The run's report, also when a check of the bench failed (its problems are in it)."""
    try:
        return run_soak(config, sim="verilator")
    except CocotbTestFailure as failure:
        report = getattr(failure, "report", None)
        assert report is not None, failure.summary
        return report


def soak_profile_problems(config: SoakConfig, report: dict) -> list[str]:
    """The profile's check, as sentences: finished, every frame accounted for (no balance
    off: balance_problems), traffic moved, no problem reported by the bench, and the
    coverage goal."""
    totals = report["totals"]
    problems = [] if report["finished"] else ["the run did not finish"]
    problems += balance_problems(report)
    problems += [f"bench: {p}" for p in report["problems"]]
    if totals["tx_frames"] != config.frames or totals["rx_frames"] != config.frames:
        problems.append(f"frames run: TX {totals['tx_frames']}, RX {totals['rx_frames']}")
    if totals["rx_delivered"] <= config.frames // 2:  # traffic moved, not only drops
        problems.append(f"only {totals['rx_delivered']} RX frames delivered")
    coverage = report["coverage"]
    if coverage["percent"] < COVERAGE_GOAL_PERCENT:
        problems.append(f"coverage {coverage['percent']:.1f}%: empty {coverage['empty']}")
    for point in FULL_POINTS:
        empty = [b for b in coverage["empty"] if b.startswith(point + "[")]
        if empty:
            problems.append(f"coverage: {point} has empty bins {empty}")
    return problems


def test_the_ci_profile_visits_every_burst_cap_and_irq_strategy():
    assert CI_SEGMENTS >= len(BURST_CAPS) and CI_SEGMENTS >= 2 * len(IRQ_STRATEGY_NAMES)


def test_soak_ci_profile_loses_nothing_and_reaches_its_coverage():
    report = run_profile(CI_SOAK_PROFILE)
    assert soak_profile_problems(CI_SOAK_PROFILE, report) == []
    assert report["totals"]["problem_count"] == 0


@pytest.mark.parametrize(
    ("plant", "message"),
    [("double-count", "RX: counted twice: 1"), ("lost-frame", "RX: lost silently: 1")],
)
def test_the_soak_profile_check_catches_a_planted(plant, message):
    """The profile's first segment, with a bug planted in the bench's stack: the check
    fails, naming the direction and the balance."""
    config = SoakConfig(CI_SEGMENT_FRAMES, 1, CI_SEGMENT_FRAMES, plant=plant)
    problems = soak_profile_problems(config, run_profile(config))
    assert message in problems, problems
