"""pytest plumbing shared by every test: simulator selection, waves, the cocotb runner.

- ``sim``: tests that take this argument run once per simulator in SIMULATORS, restricted
  by ``--sim NAME`` (repeatable) or env ``SIM=icarus`` / ``SIM=icarus,verilator``. A test
  marked ``long_on_icarus`` (a whole-SoC scenario that takes minutes on Icarus) has its
  Icarus run marked ``slow``: ``make test-all`` runs it, CI's ``make test`` does not.
- ``--waves`` (or env WAVES=1): every cocotb run traces an FST waveform.
- ``cocotb_run``: :func:`macdma.sim.cosim.runner.run_cocotb` with the waves option applied.
- ``quick_regress``: one real ``macdma regress --quick`` run per session, shared.

A missing simulator is a failure with an install hint, never a silent skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from macdma.sim.cosim.runner import RunResult, run_cocotb
from macdma.sim.cosim.simulators import SIMULATORS


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
        long_on_icarus = metafunc.definition.get_closest_marker("long_on_icarus") is not None
        metafunc.parametrize(
            "sim",
            [
                pytest.param(name, marks=pytest.mark.slow)
                if long_on_icarus and name == "icarus"
                else name
                for name in selected_simulators(metafunc.config)
            ],
        )


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


@dataclass(frozen=True)
class QuickRegress:
    """One real ``macdma regress --quick`` run: its output folder, command and result."""

    out: Path
    command: list[str]
    done: subprocess.CompletedProcess


@pytest.fixture(scope="session")
def quick_regress(tmp_path_factory: pytest.TempPathFactory) -> QuickRegress:
    """The quick sweep run once per session on its default simulator (Verilator), shared by
    the tests that read its output (tests/sim/regress/test_command.py, test_report_html.py)."""
    base = tmp_path_factory.mktemp("quick_regress")
    out = base / "quick"
    command = [sys.executable, "-m", "macdma.sim.cli", "regress", "--quick", "--out", str(out)]
    command += ["--db", str(base / "results.sqlite")]  # not the user's results database
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return QuickRegress(out, command, done)
