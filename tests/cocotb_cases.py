"""Run a cocotb module and report each of its cocotb tests as a pytest subtest, so a failure
names the cocotb test that broke (``SUBFAILED[test_tx_error] tests/hdl/test_soc_tx.py::...``).

The module still runs once per simulator, in one pytest item, so the suite's scheduling
and its number of simulations are what they were with one item per module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from macdma.sim.cosim.runner import CocotbTestFailure, RunResult


def run_cocotb_cases(run: Callable[..., RunResult], subtests, **kwargs: Any) -> RunResult | None:
    """``run(**kwargs)`` (the ``cocotb_run`` fixture), then one subtest per cocotb test case
    (``name`` or ``name/param=value``) that fails with that case's message and traceback.

    A run that wrote no results, ran no test or crashed after its tests fails the calling
    test with the runner's message. Returns the run's result (None without results).
    """
    __tracebackhide__ = True
    try:
        result, failure = run(**kwargs), None
    except CocotbTestFailure as error:
        result, failure = error.result, error
    if result is None or not result.cases:
        pytest.fail(str(failure), pytrace=False)
    for case in result.cases:
        with subtests.test(msg=case.name):
            assert case.status == "passed", (
                f"{case.name} ({case.status}): {case.message}\n{case.details}"
            )
    if failure is not None and all(case.status == "passed" for case in result.cases):
        pytest.fail(str(failure), pytrace=False)  # every test passed, the simulator did not
    return result
