"""The soak's CI profile: 5,000 frames per direction through ``macdma_soc`` on Verilator
(once: the soak is about volume, the simulators are compared by the other suites), every
check of sim/benches/soak_tb.py applied, and the coverage goal docs/reliability.md states.
"""

from __future__ import annotations

import pytest

from macdma.sim.soak import run_soak, soak_config

CI_FRAMES = 5_000  # per direction: ten segments, so every IRQ strategy comes up twice
CI_SEED = 1
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


@pytest.mark.slow
def test_soak_ci_profile_loses_nothing_and_reaches_its_coverage():
    report = run_soak(soak_config(CI_FRAMES, CI_SEED), sim="verilator")
    totals = report["totals"]
    assert report["finished"], report["problems"]
    assert totals["problem_count"] == 0, report["problems"]
    assert totals["tx_frames"] == totals["rx_frames"] == CI_FRAMES
    assert totals["rx_delivered"] + totals["rx_dropped_counted"] == CI_FRAMES
    assert totals["rx_delivered"] > CI_FRAMES // 2  # the run moved traffic, not only drops
    coverage = report["coverage"]
    assert coverage["percent"] >= COVERAGE_GOAL_PERCENT, coverage["empty"]
    for point in FULL_POINTS:
        assert not [b for b in coverage["empty"] if b.startswith(point + "[")], point
