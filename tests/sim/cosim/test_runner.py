"""The simulation plumbing itself: Verilog cache, simulator builds, cocotb result reporting.

Runs a tiny counter (defined here, not in hdl/) through export_verilog and run_cocotb on
every selected simulator, with the bench in tests/cocotb/runner_smoke_tb.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from amaranth import *
from runner_smoke import BENCH, TOP, SmokeCounter

from macdma.sim.cosim import runner
from macdma.sim.cosim.runner import CocotbTestFailure, SimulatorBuildError
from macdma.sim.cosim.simulators import wave_format
from macdma.sim.cosim.verilog import export_verilog


def run_smoke(cocotb_run, sim: str, **kwargs):
    """Run the smoke bench on the 8-bit counter with SMOKE_CYCLES=300 unless overridden."""
    kwargs.setdefault("extra_env", {"SMOKE_CYCLES": "300"})
    return cocotb_run(top=TOP, factory=SmokeCounter, test_module=BENCH, sim=sim, **kwargs)


def test_passing_bench_passes(cocotb_run, sim: str) -> None:
    result = run_smoke(cocotb_run, sim, testcase="test_counts_when_enabled")
    assert (result.passed, result.failed, result.skipped) == (1, 0, 0)
    assert result.results_xml.is_file()
    assert result.sim_time_ns is not None and result.sim_time_ns >= 300 * 8
    assert result.wall_seconds >= result.build_seconds >= 0


def test_failing_bench_raises_with_reason(cocotb_run, sim: str) -> None:
    with pytest.raises(CocotbTestFailure) as failure:
        run_smoke(cocotb_run, sim)  # both tests: one passes, one fails
    message = str(failure.value)
    assert "1 of 2 cocotb test(s) failed" in message
    assert "test_deliberate_failure" in message
    assert "deliberate failure: count=0" in message
    assert failure.value.result is not None
    assert (failure.value.result.passed, failure.value.result.failed) == (1, 1)


def test_no_test_ran_is_a_failure(cocotb_run, sim: str) -> None:
    with pytest.raises(CocotbTestFailure, match="no cocotb test ran"):
        run_smoke(cocotb_run, sim, testcase="test_that_does_not_exist")


def test_waves_write_a_waveform(cocotb_run, sim: str, capsys) -> None:
    result = run_smoke(cocotb_run, sim, testcase="test_counts_when_enabled", waves=True)
    assert result.wave_path is not None
    assert result.wave_path.suffix == f".{wave_format(sim)}"
    assert result.wave_path.is_file() and result.wave_path.stat().st_size > 0
    assert f"waves: {result.wave_path}" in capsys.readouterr().out


def test_verilog_cache_is_reused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MACDMA_BUILD_DIR", str(tmp_path))
    first = export_verilog(TOP, factory=SmokeCounter, params={"width": 8})
    written_ns = first.stat().st_mtime_ns
    again = export_verilog(TOP, factory=SmokeCounter, params={"width": 8})
    assert again == first and again.stat().st_mtime_ns == written_ns
    assert first.is_relative_to(tmp_path / "cache" / "verilog")
    assert f"module {TOP}" in first.read_text()

    wider = export_verilog(TOP, factory=SmokeCounter, params={"width": 12})
    assert wider != first and "[11:0] count" in wider.read_text()

    copied = export_verilog(TOP, factory=SmokeCounter, params={"width": 8}, out_dir=tmp_path)
    assert copied == tmp_path / f"{TOP}.v" and copied.read_text() == first.read_text()


def test_unknown_top_names_the_known_ones(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MACDMA_BUILD_DIR", str(tmp_path))
    with pytest.raises(KeyError, match="Unknown top 'no_such_top'; registered tops"):
        export_verilog("no_such_top")


def test_build_error_is_reported(tmp_path: Path, monkeypatch, cocotb_run) -> None:
    monkeypatch.setenv("MACDMA_BUILD_DIR", str(tmp_path))
    monkeypatch.setattr(runner, "ICARUS_BUILD_ARGS", ("-gno-such-generation",))
    with pytest.raises(SimulatorBuildError, match="icarus could not build runner_smoke_counter"):
        run_smoke(cocotb_run, "icarus", testcase="test_counts_when_enabled")
