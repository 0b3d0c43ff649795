"""tests/cocotb_cases.py on the runner's smoke bench, whose ``test_deliberate_failure`` fails
on purpose: one subtest per cocotb test, the failing one carrying its cocotb message."""

from contextlib import contextmanager

import pytest
from cocotb_cases import run_cocotb_cases
from runner_smoke import BENCH, TOP, SmokeCounter


class RecordingSubtests:
    """Stands in for pytest's ``subtests``: records each subtest's outcome by name."""

    def __init__(self):
        self.outcomes: dict[str, str] = {}

    @contextmanager
    def test(self, msg: str):
        try:
            yield
        except AssertionError as error:
            self.outcomes[msg] = str(error)
        else:
            self.outcomes[msg] = "passed"


def smoke(cocotb_run, sim, subtests, **kwargs):
    kwargs.setdefault("extra_env", {"SMOKE_CYCLES": 5})
    return run_cocotb_cases(
        cocotb_run, subtests, top=TOP, factory=SmokeCounter, test_module=BENCH, sim=sim, **kwargs
    )


def test_each_cocotb_test_is_a_subtest_and_a_failure_names_it(cocotb_run, sim):
    subtests = RecordingSubtests()
    result = smoke(cocotb_run, sim, subtests)
    assert list(subtests.outcomes) == ["test_counts_when_enabled", "test_deliberate_failure"]
    assert subtests.outcomes["test_counts_when_enabled"] == "passed"
    assert subtests.outcomes["test_deliberate_failure"].startswith(
        "test_deliberate_failure (failed): deliberate failure: count=0"
    )
    assert result is not None and result.failed == 1


def test_a_run_without_tests_fails_the_calling_test(cocotb_run, sim):
    with pytest.raises(pytest.fail.Exception, match="no cocotb test ran"):
        smoke(cocotb_run, sim, RecordingSubtests(), testcase="test_that_does_not_exist")
