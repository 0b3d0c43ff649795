"""sim/cosim/interrupts.py on plain processes (no simulator): the process tree below this one is
found through /proc, and stopping it ends children and grandchildren alike, even one that
ignores SIGTERM, and leaves no zombie of this process's own."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from macdma.sim.cosim.interrupts import descendants, stop_descendants

# A child that starts a grandchild ignoring SIGTERM, then waits.
_TREE = (
    "import signal, subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', "
    "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)'])\n"
    "time.sleep(600)\n"
)


def _state(pid: int) -> str | None:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_stopping_the_tree_ends_children_and_grandchildren():
    child = subprocess.Popen([sys.executable, "-c", _TREE])
    deadline = time.monotonic() + 30
    while len(tree := descendants()) < 2:
        assert time.monotonic() < deadline, "the grandchild never started"
        time.sleep(0.05)
    assert child.pid in tree and tree.index(child.pid) < len(tree) - 1  # parents first
    started = time.monotonic()
    stop_descendants(grace_seconds=0.5)
    assert time.monotonic() - started < 10
    for pid in tree:
        # gone, or (a grandchild, now init's) a zombie waiting to be collected
        assert _state(pid) in (None, "Z", "X"), (pid, _state(pid))
    assert _state(child.pid) is None, "this process's own child is reaped"
    assert child.pid not in descendants()
    child.wait(timeout=5)  # Popen learns it is gone (reaped already: ECHILD)
