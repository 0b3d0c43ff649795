"""Starting a command as from a terminal, pressing Ctrl-C and checking what is left.

A process started from a non-interactive shell's background job (a CI runner's, say)
inherits SIGINT ignored, and Python keeps it ignored: Ctrl-C then does nothing, as it
should for such a job (``macdma run`` simulated on for minutes in one such run of the
suite). These tests are about a user's Ctrl-C, so their command starts with SIGINT at its
default action whatever the test process has.
"""

import os
import signal
import sys
import time
from pathlib import Path

_WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def python_with_default_sigint(*args: str) -> list[str]:
    """``python *args`` with SIGINT at its default action."""
    return [sys.executable, "-c", _WITH_DEFAULT_SIGINT, *args]


def _stat(pid: int) -> tuple[str, str, int] | None:
    """(command name, state, parent pid) of *pid*, None when it is gone."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return None
    name, rest = stat.split(" (", 1)[1].rsplit(")", 1)
    fields = rest.split()
    return name, fields[0], int(fields[1])


def process_tree(pid: int) -> dict[int, str]:
    """pid -> command name of every live process below *pid* (children, grandchildren...)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = (stat[2], stat[0])
    found, queue = {}, [pid]
    while queue:
        current = queue.pop()
        for child, (parent, name) in parents.items():
            if parent == current and child not in found:
                found[child] = name
                queue.append(child)
    return found


def still_running(pids) -> list[str]:
    """``pid (name) state`` of those of *pids* that still run (a zombie is not running:
    dead, only waiting for init to collect it once its parent has gone)."""
    alive = []
    for pid in pids:
        stat = _stat(pid)
        if stat is not None and stat[1] not in ("Z", "X"):
            alive.append(f"{pid} ({stat[0]}) {stat[1]}")
    return alive


def press_ctrl_c(process, times: int, gap_seconds: float = 0.02) -> None:
    """Ctrl-C *times* times to *process* alone (not its group: nothing else is told), a
    press every *gap_seconds*, as long as it runs."""
    for _ in range(times):
        if process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGINT)
        time.sleep(gap_seconds)
