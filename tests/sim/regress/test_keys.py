"""A point's key (sim/regress/keys.py): it follows the scenario and the simulated sources,
never the output options."""

from __future__ import annotations

import dataclasses

from macdma.sim import regress
from macdma.sim.regress import (
    point_key,
)
from macdma.sim.run.scenario import Scenario


def test_key_depends_on_scenario_and_sources_not_on_output_options():
    scenario = Scenario(direction="tx", frames=4)
    assert point_key(scenario, "a") == point_key(dataclasses.replace(scenario, waves=True), "a")
    assert point_key(scenario, "a") != point_key(scenario, "b")
    assert point_key(scenario, "a") != point_key(dataclasses.replace(scenario, frames=5), "a")


def test_source_hash_follows_simulated_sources_only(tmp_path):
    simulated = ("hdl/mac/tx.py", "firmware/driver.py", "sim/cosim/progress.py", "sim/run/bench.py")
    reporting = ("sim/regress/report.py", "sim/regress/command.py", "hdl/boards/b.py")
    for relative in simulated + reporting:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    before = regress.source_hash(tmp_path)
    for relative in reporting:  # the regression's own code, synthesis only
        (tmp_path / relative).write_text("x = 2\n")
    assert regress.source_hash(tmp_path) == before
    for relative in simulated:  # each one a point's input
        (tmp_path / relative).write_text("x = 2\n")
        assert regress.source_hash(tmp_path) != before
        before = regress.source_hash(tmp_path)
