"""The fault campaign's CI profile: every site of every fault class once, in segments of
100 frames per direction (3,200 frames each way: 32 sites) on Verilator, and per site: the
fault injected, its outcome detected, traffic recovered, no frame lost silently and none
counted twice (docs/reliability.md, "Fault injection"). The profile's check is shown to
catch a planted double count and a planted lost frame (SoakConfig.plant, one segment
each). Wall and CPU time: docs/reliability.md, "CI profiles"."""

from __future__ import annotations

import pytest

from macdma.sim.cosim.runner import CocotbTestFailure
from macdma.sim.soak.command import balance_problems, run_soak
from macdma.sim.soak.plan import FAULT_CLASSES, FAULT_SITES, SoakConfig, plan_segments

CI_FAULT_SEGMENT_FRAMES = 100  # shorter than `macdma soak --faults`'s 200: a CI budget
CI_FAULT_SITES = sum(len(sites) for sites in FAULT_SITES.values())
CI_FAULT_FRAMES = CI_FAULT_SITES * CI_FAULT_SEGMENT_FRAMES  # one segment per site
CI_FAULT_SEED = 9
CI_FAULT_PROFILE = SoakConfig(
    CI_FAULT_FRAMES, CI_FAULT_SEED, CI_FAULT_SEGMENT_FRAMES, FAULT_CLASSES
)


def run_profile(config: SoakConfig) -> dict:
    """The run's report, also when a check of the bench failed (its problems are in it)."""
    try:
        return run_soak(config, sim="verilator")
    except CocotbTestFailure as failure:
        report = getattr(failure, "report", None)
        assert report is not None, failure.summary
        return report


def fault_profile_problems(config: SoakConfig, report: dict) -> list[str]:
    """The profile's check, as sentences: the run finished; every planned site has its
    row, injected, detected and recovered; no balance off (balance_problems: lost
    silently, counted twice); no problem reported by the bench."""
    problems = [] if report["finished"] else ["the run did not finish"]
    rows = {(row["class"], row["site"]): row for row in report["fault_table"]}
    planned = {(s.fault_class, s.fault_site) for s in plan_segments(config)}
    problems += [
        f"{c}/{site}: no row in the fault table" for c, site in sorted(planned - set(rows))
    ]
    for (fault_class, site), row in sorted(rows.items()):
        where = f"{fault_class}/{site}: {row['outcome']}"
        if row["injected"] < 1:
            problems.append(f"{where}: not injected")
        if row["detected"] != 1:
            problems.append(f"{where}: outcome not detected")
        if row["recovered"] != 1:
            problems.append(f"{where}: did not recover")
    problems += balance_problems(report)
    problems += [f"bench: {p}" for p in report["problems"]]
    return problems


def test_fault_campaign_ci_profile_loses_nothing_and_recovers():
    planned = {(s.fault_class, s.fault_site) for s in plan_segments(CI_FAULT_PROFILE)}
    assert planned == {(c, site) for c, sites in FAULT_SITES.items() for site in sites}
    report = run_profile(CI_FAULT_PROFILE)
    assert fault_profile_problems(CI_FAULT_PROFILE, report) == []
    assert report["totals"]["problem_count"] == 0


@pytest.mark.parametrize(
    ("plant", "message"),
    [
        ("double-count", "wire/rx_er: counted twice: 1"),
        ("lost-frame", "wire/rx_er: lost silently: 1"),
    ],
)
def test_the_fault_profile_check_catches_a_planted(plant, message):
    """The profile's first class's first site, one segment, with a bug planted in the
    bench's stack: the check fails, naming the row and the balance."""
    config = SoakConfig(
        CI_FAULT_SEGMENT_FRAMES, CI_FAULT_SEED, CI_FAULT_SEGMENT_FRAMES, ("wire",), plant=plant
    )
    problems = fault_profile_problems(config, run_profile(config))
    assert message in problems, problems
