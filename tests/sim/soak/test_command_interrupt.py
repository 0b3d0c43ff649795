"""Ctrl-C to ``macdma soak``'s own process (not its process group) stops the run at once:
the simulator is killed and reaped, the summary of what ran is printed, the exit is 130."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from ctrl_c import python_with_default_sigint

from macdma.sim.soak.command import soak_config, soak_top

ROOT = Path(__file__).resolve().parents[3]
#: The Verilator model's process name (/proc's comm, cut to 15 characters: the top the
#: soak runs on Verilator).
SIMULATOR_PROCESS = soak_top(soak_config(5000, 3).on("verilator"))[:15]


def _children(pid: int) -> dict[int, str]:
    """pid -> command name of every child of *pid* (from /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat.split(" (", 1)[1].rsplit(")", 1)
        if entry.name.isdigit() and int(rest.split()[1]) == pid:
            found[int(entry.name)] = name
    return found


def test_ctrl_c_to_the_soak_process_alone_stops_the_run(tmp_path):
    report = tmp_path / "soak.json"
    command = ["-m", "macdma.sim.cli", "soak", "--frames", "5000", "--seed", "3"]
    process = subprocess.Popen(
        python_with_default_sigint(*command, "--json", str(report)),
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    simulator = None
    try:
        # The simulator itself, not its build (on a fresh clone make and the compiler
        # come first): this test is about a running simulation.
        deadline = time.monotonic() + 600
        while simulator is None:
            running = [
                pid for pid, name in _children(process.pid).items() if name == SIMULATOR_PROCESS
            ]
            simulator = running[0] if running else None
            assert process.poll() is None, f"macdma soak ended early: {process.stderr.read()}"
            assert time.monotonic() < deadline, "the simulator never started"
            time.sleep(0.5)
        time.sleep(2)  # inside the simulation, not its start-up
        os.kill(process.pid, signal.SIGINT)  # the parent only, not its process group
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, err
    assert err.rstrip().endswith("macdma soak: interrupted"), err
    assert "NOT finished" in out, out  # the summary of what ran
    assert report.is_file(), out
    # Reaped by macdma soak before it exited: not running, not even a zombie.
    assert not Path(f"/proc/{simulator}").exists(), f"simulator {simulator} outlived the run"
