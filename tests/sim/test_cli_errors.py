"""`macdma` on the host side: outputs that cannot be written stop the command before any
simulation; a failed simulation prints one message with the path to its details (a run's:
its log), never a traceback; Ctrl-C during `macdma run` leaves no simulator behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from ctrl_c import python_with_default_sigint
from runner_smoke import BENCH, TOP, SmokeCounter

from macdma.sim import cli
from macdma.sim.cosim import runner
from macdma.sim.cosim.runner import CocotbTestFailure, SimulatorBuildError, run_cocotb
from macdma.sim.cosim.verilog import ROOT
from macdma.sim.run import bench, scenario


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if a command reaches the simulation."""

    def simulate(*args, **kwargs):
        raise AssertionError("the simulation started")

    monkeypatch.setattr(scenario, "run_scenario", simulate)
    monkeypatch.setattr(cli, "run_cocotb", simulate)
    monkeypatch.setattr(runner, "run_cocotb", simulate)  # soak imports it when it starts
    monkeypatch.setattr(bench, "run_cocotb", simulate)
    monkeypatch.setattr(bench, "build_model", simulate)


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["run", "--json", "/nonexistent/dir/x.json"], "folder /nonexistent/dir does not exist"),
        (["demo", "--json", "{tmp}"], "{tmp} is a folder"),
        (["run", "--json", "{tmp}/file/x.json"], "{tmp}/file is not a folder"),
        (["regress", "--quick", "--out", "{tmp}/file/out"], "{tmp}/file is not a folder"),
        (["regress", "--quick", "--out", "{tmp}/file"], "{tmp}/file is not a folder"),
    ],
)
def test_unwritable_output_stops_before_the_simulation(
    tmp_path, capsys, no_simulation, argv, reason
):
    (tmp_path / "file").write_text("")
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    option, path = argv[-2:]
    expected = f"{option} {path}: cannot write the results there: {reason.format(tmp=tmp_path)}"
    assert expected in capsys.readouterr().err


def test_writable_outputs_pass_the_check(tmp_path):
    assert cli.unwritable_reason(tmp_path / "x.json", folder=False) is None
    assert cli.unwritable_reason(tmp_path / "new" / "deeper", folder=True) is None
    assert cli.unwritable_reason(tmp_path, folder=True) is None


@pytest.mark.parametrize(
    "error",
    [
        CocotbTestFailure(
            "scenario_tb on verilator (macdma_soc): 1 of 1 cocotb test(s) failed\n"
            "--- run (failed): frame 3 damaged\nTraceback (most recent call last):\n  ...",
            summary="scenario_tb on verilator (macdma_soc): 1 of 1 cocotb test(s) failed\n"
            "--- run (failed): frame 3 damaged",
            details_path=Path("/build/runs/results.xml"),
        ),
        SimulatorBuildError("verilator could not build macdma_soc from x.v (exit 2)"),
    ],
)
def test_a_failed_simulation_is_one_message_without_traceback(monkeypatch, capsys, error):
    def simulate(_scenario, **_output_options):
        raise error

    monkeypatch.setattr(scenario, "run_scenario", simulate)
    assert cli.main(["run", "--frames", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("macdma run failed: ") and "Traceback" not in err
    if isinstance(error, CocotbTestFailure):
        assert "--- run (failed): frame 3 damaged" in err
        assert "details: /build/runs/results.xml" in err


def test_a_failing_cocotb_test_has_a_short_summary_and_a_details_path(sim):
    with pytest.raises(CocotbTestFailure) as failure:
        run_cocotb(
            top=TOP,
            factory=SmokeCounter,
            test_module=BENCH,
            sim=sim,
            testcase="test_deliberate_failure",
            extra_env={"SMOKE_CYCLES": "3"},
        )
    error = failure.value
    assert "Traceback" in str(error) or "assert" in str(error)  # the full story stays
    assert error.summary.splitlines() == [
        f"{BENCH} on {sim} ({TOP}): 1 of 1 cocotb test(s) failed",
        "--- test_deliberate_failure (failed): deliberate failure: count=0",
    ]
    assert error.details_path is not None and error.details_path.name == "results.xml"
    assert error.details_path.is_file()


def test_a_crashed_simulator_gives_a_summary_and_its_log(sim, capsys, monkeypatch):
    def crash(_scenario, *, log_path, **_options):
        return run_cocotb(
            top=TOP, factory=SmokeCounter, test_module="crash_tb", sim=sim, log_path=log_path
        )

    monkeypatch.setattr(scenario, "run_scenario", crash)
    assert cli.main(["run", "--frames", "2", "--sim", sim]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith(f"macdma run failed: crash_tb on {sim} ({TOP}): the simulator ended")
    assert err[1].startswith("log: ") and len(err) == 2
    log = Path(err[1].split()[1])
    assert log.suffix == ".log" and "crash_tb" in log.read_text()  # the simulator's output


def _processes_in_group(group: int) -> list[str]:
    """``"pid (name) state"`` of every process in process group *group* (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # fields after the ")" closing the command name: state ppid pgrp ...
        if entry.name.isdigit() and int(stat.rsplit(")", 1)[1].split()[2]) == group:
            found.append(stat.split(")")[0] + ") " + stat.rsplit(")", 1)[1].split()[0])
    return found


#: The Verilator model's process name (/proc's comm: the top's name, cut to the kernel's 15
#: characters), which ``macdma run``'s default simulator and host memory run.
SIMULATOR_PROCESS = f"({scenario.SCENARIO_TOPS[scenario.Scenario().memory][:15]})"


def test_ctrl_c_during_run_leaves_no_simulator_behind():
    # Long enough never to finish: the test interrupts it once the simulator runs.
    command = python_with_default_sigint("-m", "macdma.sim.cli", "run", "--frames", "100000")
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The simulator itself, not its build: on a fresh clone the group first holds
        # Verilator's make and compiler, and this test is about a running simulation.
        deadline = time.monotonic() + 600
        while not any(SIMULATOR_PROCESS in entry for entry in _processes_in_group(process.pid)):
            assert process.poll() is None, f"macdma run ended early: {process.stderr.read()}"
            assert time.monotonic() < deadline, "the simulator never started"
            time.sleep(0.5)
        time.sleep(2)  # inside the simulation, not its start-up
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends
        # A liveness bound, not a speed check: alone this exits within seconds, but in the
        # full suite on a fresh clone (both cores busy) it once took more than 60 s.
        _, err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()  # reap it and close its pipe (no warning in a later test)
    assert process.returncode == 130, err
    # The last line is macdma's own (cocotb inside the simulator may print its
    # KeyboardInterrupt first: that is the simulator's output).
    assert err.rstrip().endswith("macdma run: interrupted"), err
    # The killed simulator may still be listed as a zombie (state Z: dead, not yet reaped
    # by init once its parent is gone); nothing may be left running.
    alive = [entry for entry in _processes_in_group(process.pid) if not entry.endswith(" Z")]
    assert alive == [], f"processes of the run outlived it: {alive}"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--frames", "x"],
        ["run", "--frags", "5", "--direction", "rx"],
        ["regress", "--quick", "--jobs", "0"],
        ["compare", "a"],
        ["soak", "--frames", "0"],
        ["bench", "--frames", "x"],
        ["demo", "--frames", "1"],
        ["run", "--no-such-option"],
    ],
)
def test_an_error_is_one_line_and_a_help_hint_not_the_usage(argv, capsys, no_simulation):
    # issue 42 §4: every `run` error printed the 17-line usage, the message last
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"macdma {argv[0]}: error: "), lines
    assert lines[1] == f"(`macdma {argv[0]} --help` lists the options)"


@pytest.mark.parametrize(
    ("argv", "bound"),
    [
        (["soak", "--frames", "99999999999999999999999"], "1..1,000,000 frames"),
        (["soak", "--frames", "1000001"], "1..1,000,000 frames"),
        (["bench", "--frames", "99999999999999999999999"], "4..1,000,000 frames"),
        (["bench", "--frames", "3"], "4..1,000,000 frames"),
    ],
)
def test_soak_and_bench_take_runs_frame_bound(argv, bound, capsys, no_simulation):
    # issue 42 §9: a frame count beyond what a run accepts is refused before anything runs,
    # with the same bound as `run --frames` (scenario.MAX_FRAMES)
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    assert stopped.value.code == 2
    assert f"--frames: must be {bound}, got {argv[-1]}" in capsys.readouterr().err
