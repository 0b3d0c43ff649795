"""pytest plumbing shared by every test: simulator selection, waves, the cocotb runner.

- ``sim``: tests that take this argument run once per simulator in SIMULATORS, restricted
  by ``--sim NAME`` (repeatable) or env ``SIM=icarus`` / ``SIM=icarus,verilator``.
- ``--waves`` (or env WAVES=1): every cocotb run traces an FST waveform.
- ``cocotb_run``: :func:`macdma.sim.runner.run_cocotb` with the waves option applied.

A missing simulator is a failure with an install hint, never a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from macdma.sim.runner import RunResult, run_cocotb
from macdma.sim.simulators import SIMULATORS


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("macdma")
    group.addoption(
        "--sim",
        action="append",
        default=None,
        choices=SIMULATORS,
        help="run simulator tests on this simulator only (repeatable; default: env SIM or all)",
    )
    group.addoption(
        "--waves",
        action="store_true",
        default=False,
        help="trace waveforms (FST) in every cocotb run; also env WAVES=1",
    )


def selected_simulators(config: pytest.Config) -> list[str]:
    """Return the simulators chosen by --sim, else env SIM (comma-separated), else all."""
    chosen = config.getoption("--sim")
    if not chosen:
        from_env = os.environ.get("SIM", "")
        chosen = [name.strip() for name in from_env.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in SIMULATORS]
    if unknown:
        raise pytest.UsageError(
            f"Unknown simulator(s) {', '.join(unknown)} (from --sim or env SIM); "
            f"choose from: {', '.join(SIMULATORS)}"
        )
    return chosen or list(SIMULATORS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "sim" in metafunc.fixturenames:
        metafunc.parametrize("sim", selected_simulators(metafunc.config))


@pytest.fixture
def waves(request: pytest.FixtureRequest) -> bool:
    """True when --waves was given (env WAVES=1 is honoured by run_cocotb itself)."""
    return bool(request.config.getoption("--waves"))


@pytest.fixture
def cocotb_run(waves: bool) -> Callable[..., RunResult]:
    """Return ``run(**kwargs)``: run_cocotb with waves switched on by --waves."""

    def run(**kwargs: Any) -> RunResult:
        __tracebackhide__ = True
        kwargs["waves"] = kwargs.get("waves", False) or waves
        return run_cocotb(**kwargs)

    return run
