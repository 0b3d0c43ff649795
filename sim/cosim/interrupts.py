"""Ctrl-C for every command: the first press stops the work at once, a later one stops the
command at once, and nothing the command started outlives it.

Inside :func:`ctrl_c_handling`:

- the first Ctrl-C ends every process this one started (simulators, a regress pool's
  workers and their simulators, a model build's make and compiler: SIGTERM, SIGKILL after
  :data:`GRACE_SECONDS`), then raises KeyboardInterrupt as Python would, so the command
  keeps what finished (a soak's segments, a sweep's points) and writes its summary;
- a second or third Ctrl-C, while it does that, kills whatever is left and exits 130 at
  once, with a message instead of a traceback;
- SIGTERM (``kill PID``, a batch system's stop) ends the same tree, then this process,
  by SIGTERM as it asked (exit status 143 in a shell): no summary, but no simulator left
  running without its parent. It holds in a background job too, where Ctrl-C does not.

Killing the process tree first, rather than waiting for each process to see the signal,
is what makes the first press prompt: a terminal's Ctrl-C reaches only the foreground
process group, a pool worker ignores it (the pool is this process's to stop) and would
otherwise pick up the next point, and a signal sent to this process alone reaches none of
them. The tree is read from /proc (Linux); elsewhere only the Python-level stop happens.
This process is made a child subreaper (Linux ``prctl``) meanwhile: a simulator whose pool
worker ended first becomes this process's child instead of init's, so it stays in the tree
and is stopped too.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["GRACE_SECONDS", "ctrl_c_handling", "descendants", "stop_descendants"]

#: How long processes get to end on SIGTERM before SIGKILL.
GRACE_SECONDS = 3.0
_PROC = Path("/proc")


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (empty without /proc)."""
    found = {}
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        found[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def descendants(pid: int | None = None) -> list[int]:
    """Every live process below *pid* (default: this one), parents before children."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, queue = [], list(children.get(root, []))
    while queue:
        current = queue.pop(0)
        found.append(current)
        queue.extend(children.get(current, []))
    return found


#: Python's own helper processes: they end when this process does, and one killed under a
#: library still using it is restarted and prints tracebacks (Dask's shared memory).
_HELPERS = (b"multiprocessing.resource_tracker", b"multiprocessing.forkserver")


def _is_helper(pid: int) -> bool:
    try:
        command = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return False
    return any(helper in command for helper in _HELPERS)


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def _reap_children() -> None:
    """Collect every child of this process that has ended (no zombie left behind)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _alive(pids: list[int]) -> list[int]:
    _reap_children()
    alive = []
    for pid in pids:
        try:
            state = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive


def stop_descendants(grace_seconds: float = GRACE_SECONDS, *, at_once: bool = False) -> None:
    """End every process below this one: SIGTERM, then SIGKILL whatever still runs after
    *grace_seconds* (at once with *at_once*); reap this process's own children. Python's
    helpers (:data:`_HELPERS`) are left to end with this process, unless *at_once*."""
    tree = descendants() if at_once else [p for p in descendants() if not _is_helper(p)]
    if not tree:
        _reap_children()
        return
    _signal_all(tree, signal.SIGKILL if at_once else signal.SIGTERM)
    deadline = time.monotonic() + (0 if at_once else grace_seconds)
    while _alive(tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    # Anything the first round missed (started meanwhile) goes too.
    late = [p for p in descendants() if at_once or not _is_helper(p)]
    _signal_all(_alive(tree) + late, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while _alive(tree) and time.monotonic() < deadline:
        time.sleep(0.02)
    _reap_children()


_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def _set_subreaper(on: bool) -> None:
    """Adopt orphaned descendants, or stop adopting them (Linux); nothing elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
    except (OSError, AttributeError):
        pass


@contextmanager
def ctrl_c_handling(command: str) -> Iterator[None]:
    """Ctrl-C as the module docstring says, for ``macdma <command>``, in the with-block.

    A process started with SIGINT ignored (a background job of a non-interactive shell)
    keeps it ignored: Ctrl-C is not its user's to press. SIGTERM is handled unless
    something above this process chose otherwise (ignored, or a handler of its own)."""
    if threading.current_thread() is not threading.main_thread():  # signals go there
        yield
        return
    _set_subreaper(True)
    interrupted = False
    try:
        with _sigterm_ends_the_tree(command):
            if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                yield
            else:
                with _ctrl_c_presses(command):
                    yield
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if not interrupted:
            _set_subreaper(False)  # a caller that goes on (a test) is left as it was


@contextmanager
def _sigterm_ends_the_tree(command: str) -> Iterator[None]:
    """SIGTERM, in the with-block: stop every descendant, then die by SIGTERM."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    # stderr as it is now: a run's own output may be sent to its log meanwhile.
    terminal = os.dup(2)

    def on_sigterm(signum, frame):
        stop_descendants()
        os.write(terminal, f"\nmacdma {command}: terminated\n".encode())
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        os.close(terminal)


@contextmanager
def _ctrl_c_presses(command: str) -> Iterator[None]:
    """Ctrl-C's presses as the module docstring says, in the with-block."""
    presses = 0
    # stderr as it is now: a run's own output may be sent to its log meanwhile.
    terminal = os.dup(2)

    def on_ctrl_c(signum, frame):
        nonlocal presses
        presses += 1
        if presses == 1:
            stop_descendants()
            raise KeyboardInterrupt
        # Again while the first one is being handled: no finishing up, no traceback.
        stop_descendants(at_once=True)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        message = (
            f"\nmacdma {command}: Ctrl-C again: stopped at once\nmacdma {command}: interrupted\n"
        )
        os.write(terminal, message.encode())
        os._exit(130)

    previous = signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        if not presses:
            signal.signal(signal.SIGINT, previous)
            os.close(terminal)
        else:
            # Interrupted, cleaned up and reported: the process only exits now. A late
            # press is ignored; the interpreter's exit would make it a death by SIGINT
            # (it restores the default action before it ends).
            signal.signal(signal.SIGINT, signal.SIG_IGN)
