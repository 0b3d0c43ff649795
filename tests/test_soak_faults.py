"""The fault campaign's CI profile: every site of every fault class once, in segments of
100 frames per direction (3,200 frames each way: 32 sites, the full SoC reset and the
faulty driver's eight, on the TX and the RX ring, included) on Verilator, and per site:
the fault injected, its outcome detected, traffic recovered, no frame lost silently
(docs/reliability.md, "Fault injection"). 225..236 s wall on the 2-core machine at load
1.2..2.8 (172..175 s with 28 sites at load 2.5..3 before), about 10 minutes under a load
of 5."""

from __future__ import annotations

import pytest

from macdma.sim.runner import CocotbTestFailure
from macdma.sim.soak import run_soak
from macdma.sim.soak_plan import FAULT_CLASSES, FAULT_SITES, SoakConfig

CI_FAULT_SEGMENT_FRAMES = 100  # shorter than `macdma soak --faults`'s 200: a CI budget
CI_FAULT_SITES = sum(len(sites) for sites in FAULT_SITES.values())
CI_FAULT_FRAMES = CI_FAULT_SITES * CI_FAULT_SEGMENT_FRAMES  # one segment per site
CI_FAULT_SEED = 9


@pytest.mark.slow
def test_fault_campaign_ci_profile_loses_nothing_and_recovers():
    config = SoakConfig(CI_FAULT_FRAMES, CI_FAULT_SEED, CI_FAULT_SEGMENT_FRAMES, FAULT_CLASSES)
    try:
        report = run_soak(config, sim="verilator")
    except CocotbTestFailure as failure:  # a check failed: the rows below say which
        report = getattr(failure, "report", None)
        assert report is not None, failure.summary
    assert report["finished"], report["problems"]
    rows = {(row["class"], row["site"]): row for row in report["fault_table"]}
    expected = {(c, site) for c, sites in FAULT_SITES.items() for site in sites}
    assert set(rows) == expected, sorted(expected ^ set(rows))
    for (fault_class, site), row in sorted(rows.items()):
        where = f"{fault_class}/{site}: {row['outcome']}"
        assert row["injected"] >= 1, f"{where}: not injected"
        assert row["frames_lost"] == 0, f"{where}: {row['frames_lost']} frames lost silently"
        assert row["detected"] == 1, f"{where}: outcome not detected"
        assert row["recovered"] == 1, f"{where}: did not recover ({report['problems']})"
    assert report["totals"]["problem_count"] == 0, report["problems"]
