"""Ctrl-C pressed once, twice and three times during ``macdma run``, ``regress`` and
``soak`` (issue 42 §7): each stops promptly with exit 130 and its own message, no
traceback, and leaves no process running (no simulator, no pool worker, none of their
children); the points and segments finished before it are kept.

The presses go to the command's process alone, not its process group: the strict case,
where nothing but macdma itself can stop what it started (a terminal's Ctrl-C would also
reach the simulators). Two or three presses come 20 ms apart, so the later ones land
while macdma is still handling the first.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ctrl_c import press_ctrl_c, process_tree, python_with_default_sigint, still_running

from macdma.sim.run.scenario import Scenario, scenario_top
from macdma.sim.soak.command import soak_config, soak_top

ROOT = Path(__file__).resolve().parents[3]
#: /proc's command names (cut to 15 characters) of the simulators each command runs.
RUN_SIMULATOR = scenario_top(Scenario())[0][:15]
SOAK_SIMULATOR = soak_top(soak_config(5000, 3).on("verilator"))[:15]
#: Liveness bound on the exit after the first press, not a speed check: alone the exit
#: takes about a second, but both cores may be busy with the rest of the suite.
EXIT_BOUND_S = 60
START_BOUND_S = 900  # a fresh clone builds the model first

# One short point that finishes, then two that would run for an hour: Ctrl-C lands in the
# second, with the third queued behind it.
SWEEP = """
name = "ctrl_c"
[[experiment]]
name = "lengths"
fixed = { direction = "tx", cpu = "ideal" }
sweep = { frames = [8, 100000, 100001] }
"""


def _start(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        python_with_default_sigint("-m", "macdma.sim.cli", *argv),
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_until(process: subprocess.Popen, ready, what: str) -> None:
    deadline = time.monotonic() + START_BOUND_S
    while not ready():
        if process.poll() is not None:
            raise AssertionError(f"ended before {what}: {process.communicate()}")
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.3)


def _simulating(process: subprocess.Popen, name: str):
    return lambda: name in process_tree(process.pid).values()


def _interrupt(process: subprocess.Popen, presses: int) -> tuple[str, str, float, list[int]]:
    """Press Ctrl-C; (stdout, stderr, seconds to exit, every process below it just before)."""
    time.sleep(2)  # inside the simulation, not its start-up
    tree = list(process_tree(process.pid))
    pressed = time.monotonic()
    press_ctrl_c(process, presses)
    out, err = process.communicate(timeout=EXIT_BOUND_S)
    return out, err, time.monotonic() - pressed, tree


def _check_stopped(command: str, process, err: str, tree: list[int]) -> None:
    assert process.returncode == 130, err
    assert "Traceback" not in err, err
    assert err.rstrip().endswith(f"macdma {command}: interrupted"), err
    # Killed and reaped by macdma before it exited: nothing of the tree runs.
    assert still_running(tree) == [], f"outlived macdma {command}: {still_running(tree)}"


@pytest.fixture
def stop_on_failure():
    started = []
    yield started.append
    for process in started:
        if process.poll() is None:
            import os
            import signal

            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


@pytest.mark.parametrize("presses", [1, 2, 3])
def test_ctrl_c_during_run(presses, stop_on_failure):
    process = _start(["run", "--frames", "100000"])
    stop_on_failure(process)
    _wait_until(process, _simulating(process, RUN_SIMULATOR), "simulated")
    _, err, seconds, tree = _interrupt(process, presses)
    _check_stopped("run", process, err, tree)
    print(f"run, {presses} press(es): exit {seconds:.1f} s after the first")


@pytest.mark.parametrize("presses", [1, 2, 3])
def test_ctrl_c_during_soak(presses, stop_on_failure, tmp_path):
    report = tmp_path / "soak.json"
    process = _start(["soak", "--frames", "5000", "--seed", "3", "--json", str(report)])
    stop_on_failure(process)
    _wait_until(process, _simulating(process, SOAK_SIMULATOR), "simulated")
    out, err, seconds, tree = _interrupt(process, presses)
    _check_stopped("soak", process, err, tree)
    if presses == 1:  # the first press keeps what ran (the segments done) and prints it
        assert "NOT finished" in out and report.is_file(), out
        assert json.loads(report.read_text())["finished"] is False
    print(f"soak, {presses} press(es): exit {seconds:.1f} s after the first")


@pytest.mark.parametrize("presses", [1, 2, 3])
def test_ctrl_c_during_regress(presses, stop_on_failure, tmp_path):
    sweep = tmp_path / "ctrl_c.toml"
    sweep.write_text(SWEEP)
    out_dir, db = tmp_path / "out", tmp_path / "results.sqlite"
    argv = ["regress", str(sweep), "--out", str(out_dir), "--db", str(db), "--jobs", "1"]
    process = _start(argv)
    stop_on_failure(process)
    points = out_dir / "points"

    def first_point_kept_and_the_next_simulating() -> bool:
        return any(points.glob("*.json")) and _simulating(process, RUN_SIMULATOR)()

    _wait_until(process, first_point_kept_and_the_next_simulating, "finished a point")
    _, err, seconds, tree = _interrupt(process, presses)
    _check_stopped("regress", process, err, tree)
    stored = [json.loads(path.read_text()) for path in points.glob("*.json")]
    # The finished point is kept; the interrupted one and the queued one are not stored
    # (no simulation started after the press, none thrown away as a failed point).
    assert [(p["status"], p["scenario"]["frames"]) for p in stored] == [("ok", 8)], stored
    print(f"regress, {presses} press(es): exit {seconds:.1f} s after the first")


def test_ctrl_c_during_the_model_build_stops_make_and_the_compiler(tmp_path, stop_on_failure):
    import os

    env = {**os.environ, "MACDMA_BUILD_DIR": str(tmp_path / "build")}
    process = subprocess.Popen(
        python_with_default_sigint("-m", "macdma.sim.cli", "run", "--frames", "8"),
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stop_on_failure(process)
    compiling = ("make", "cc1plus", "g++", "verilator_bin", "verilator")
    _wait_until(
        process,
        lambda: any(name in compiling for name in process_tree(process.pid).values()),
        "built",
    )
    tree = list(process_tree(process.pid))
    press_ctrl_c(process, 1)
    out, err = process.communicate(timeout=EXIT_BOUND_S)
    _check_stopped("run", process, err, tree)
    assert "building the simulation model (first time, about" in out, out


def test_sigterm_in_a_background_job_ends_the_simulator_too(stop_on_failure, tmp_path):
    """``kill PID`` of a soak started as a background job (SIGINT ignored, as a
    non-interactive shell starts it, so Ctrl-C handling is off): the simulator goes with
    it, instead of simulating on without a parent (seen on 95d98cc)."""
    ignoring_sigint = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    argv = ["soak", "--frames", "5000", "--seed", "3", "--json", str(tmp_path / "soak.json")]
    process = subprocess.Popen(
        [sys.executable, "-c", ignoring_sigint, "-m", "macdma.sim.cli", *argv],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stop_on_failure(process)
    _wait_until(process, _simulating(process, SOAK_SIMULATOR), "simulated")
    time.sleep(2)
    tree = list(process_tree(process.pid))
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=EXIT_BOUND_S)
    assert process.returncode == -signal.SIGTERM, err
    assert "Traceback" not in err, err
    assert err.rstrip().endswith("macdma soak: terminated"), err
    assert still_running(tree) == [], f"outlived macdma soak: {still_running(tree)}"
