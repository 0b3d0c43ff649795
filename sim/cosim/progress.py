"""Progress of a ``macdma run`` or ``macdma soak`` while its simulator runs.

The bench (in the simulator process) appends one JSON line per step to the file named by
env :data:`PROGRESS_ENV`: ``{"direction", "done", "total", "sim_us"}``, through a
:class:`FrameProgress` per direction (both commands' benches). In this process,
:class:`ProgressFollower` polls that file from a thread and hands each new record to a
:class:`RunProgress`, which draws a rich progress bar per direction on a terminal
(frames done, simulated µs, ETA) and prints a plain line every ~10% otherwise.
:class:`PointsProgress` is the same for a count of jobs (``macdma regress`` points,
``macdma bench`` workloads): a rich bar on a terminal, a plain line per finished job else.

A file, not a pipe, because the simulator's stdout is the log (sim/cosim/runner.py
``output_to_log``) and a half-written last line is simply read on the next poll.

Before a run's own progress, the simulator model may have to be built (minutes on
Verilator the first time): :func:`showing_build` says so, with the time it should take,
as a spinner and the elapsed time on a terminal, or a line every
:data:`BUILD_NOTE_SECONDS` otherwise; :meth:`RunProgress.building` is it on a run's
display, for sim/cosim/runner.py ``announcing_builds``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

PROGRESS_ENV = "MACDMA_PROGRESS"
"""Env variable naming the progress file the scenario bench appends to."""

POLL_SECONDS = 0.2
PLAIN_STEPS = 10  # plain output: a line per direction every tenth of its frames
#: Plain output: a "still building" line this often while a model builds.
BUILD_NOTE_SECONDS = 30.0


def about_text(seconds: float) -> str:
    """A duration as a user estimates it: ``about 20 seconds``, ``about 3 minutes``."""
    if seconds < 90:
        return f"about {max(10, round(seconds / 10) * 10)} seconds"
    return f"about {round(seconds / 60)} minutes"


def build_message(sim: str, top: str, estimate_seconds: float, rebuild: bool) -> str:
    """The line that opens a model build."""
    why = "the design changed since the last build" if rebuild else "first time"
    return f"building the simulation model ({why}, {about_text(estimate_seconds)}): {top} on {sim}"


@contextmanager
def showing_build(
    sim: str,
    top: str,
    estimate_seconds: float,
    rebuild: bool,
    *,
    stream: TextIO,
    live: bool,
    write: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Show a model build for the with-block: on a terminal (*live*) a spinner with the
    elapsed time on *stream*; else the opening line, a "still building" line every
    :data:`BUILD_NOTE_SECONDS` and a last line, through *write* (default: to *stream*)."""
    started = time.monotonic()
    message = build_message(sim, top, estimate_seconds, rebuild)

    def say(text: str) -> None:
        if write is not None:
            write(text)
            return
        stream.write(text + "\n")
        stream.flush()

    spinner = ticker = None
    done = threading.Event()
    if live:
        # rich is imported here and in the classes below for start-up time: only a live
        # display on a terminal needs it.
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        spinner = Progress(  # the elapsed time first: a long message is cut at the right
            SpinnerColumn(),
            TimeElapsedColumn(),
            TextColumn(message),
            console=Console(file=stream),
            transient=True,
        )
        spinner.add_task("build", total=None)
        spinner.start()
    else:
        say(message)

        def tick() -> None:
            while not done.wait(BUILD_NOTE_SECONDS):
                elapsed = duration_text(time.monotonic() - started)
                say(f"  still building: {elapsed} so far ({about_text(estimate_seconds)} in all)")

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
    outcome = "stopped"
    try:
        yield
        outcome = "built"
    finally:
        done.set()
        if spinner is not None:
            spinner.stop()
        if ticker is not None:
            ticker.join(timeout=1)
        say(f"model {outcome} in {duration_text(time.monotonic() - started)}")


class FrameProgress:
    """The bench's side: one direction's frames done, as a JSON line appended to the file
    named by env :data:`PROGRESS_ENV` about every 1% of ``total`` (the command renders
    them), else through ``log`` every ~10% (a regress point's log; nothing without a log).
    ``now_us`` reads the simulated time in µs (the bench's clock: this module runs in the
    command's process too, which has no simulator)."""

    def __init__(self, direction: str, total: int, now_us: Callable[[], float], log=None) -> None:
        self.direction, self.total, self.now_us, self.log = direction, total, now_us, log
        self.path = os.environ.get(PROGRESS_ENV)
        self.step = max(1, total // (100 if self.path else PLAIN_STEPS))
        self.done = 0

    def tick(self, done: int) -> None:
        """``done`` frames of ``total`` are through; reported at every step and at the end."""
        self.done = done
        if done % self.step and done != self.total:
            return
        sim_us = self.now_us()
        if self.path:
            record = {"direction": self.direction, "done": done, "total": self.total}
            with open(self.path, "a") as progress:
                progress.write(json.dumps({**record, "sim_us": sim_us}) + "\n")
        elif self.log is not None:
            self.log.info(
                "%s: %d/%d frames (%.0f%%) at %.1f us",
                self.direction, done, self.total, 100 * done / self.total, sim_us,
            )  # fmt: skip

    def advance(self, frames: int = 1) -> None:
        """``frames`` more frames are through."""
        self.tick(self.done + frames)


class ProgressFollower:
    """Calls *on_record* with every record appended to *path*, from a polling thread,
    between ``start()`` and ``stop()`` (which reads what is left first)."""

    def __init__(self, path: Path, on_record: Callable[[dict], None]):
        self.path, self.on_record = path, on_record
        self._offset = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=10)

    def _follow(self) -> None:
        while not self._stopping.wait(POLL_SECONDS):
            self._read_new()
        self._read_new()

    def _read_new(self) -> None:
        try:
            with open(self.path, "rb") as progress:
                progress.seek(self._offset)
                chunk = progress.read()
        except FileNotFoundError:
            return  # the bench has not written yet
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.splitlines():
            self.on_record(json.loads(line))


def stdout_copy() -> TextIO:
    """This process's stdout as it is now, duplicated so that redirecting file descriptor 1
    to a log later (sim/cosim/runner.py ``output_to_log``) does not take the progress display
    with it; sys.stdout itself when it is not a file (captured, e.g. by pytest: not
    redirected either). Close it when done (closing sys.stdout's copy only)."""
    return stream_copy(sys.stdout)


def stream_copy(stream: TextIO) -> TextIO:
    """*stream* (sys.stdout, sys.stderr) duplicated as :func:`stdout_copy` does."""
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return _Unclosed(stream)
    stream.flush()
    return open(os.dup(descriptor), "w", buffering=1, encoding=stream.encoding)  # noqa: SIM115


class _Unclosed:
    """*stream* whose ``close`` does nothing: sys.stdout lent out by :func:`stdout_copy`."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    def close(self) -> None:
        pass


def _eta_text(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


class RunProgress:
    """Draws a run's progress on *stream* (default: this process's stdout as it is now,
    duplicated so that redirecting file descriptor 1 to the log later does not take it).

    A rich live display on a terminal unless *plain*; else a line per direction every
    ~10% of its frames. Use as a context manager; :meth:`update` takes one record.
    """

    def __init__(self, stream: TextIO | None = None, *, plain: bool = False):
        self._owned = None
        if stream is None:
            stream = self._owned = stdout_copy()
        self.stream = stream
        self.live = not plain and stream.isatty()
        self._first: dict[str, tuple[float, int]] = {}  # wall time and frames at first record
        self._tasks: dict[str, int] = {}
        self._printed_step: dict[str, int] = {}
        self._lock = threading.Lock()
        self._bar = None

    def __enter__(self) -> RunProgress:
        return self

    def building(self, sim: str, top: str, estimate_seconds: float, rebuild: bool):
        """Show a model build on this display (sim/cosim/runner.py ``announcing_builds``)."""
        return showing_build(sim, top, estimate_seconds, rebuild, stream=self.stream,
                             live=self.live)  # fmt: skip

    def _start_bar(self) -> None:
        """The frames bar, started at the first record: after any build, whose spinner
        is a live display of its own (rich shows one at a time)."""
        if self.live and self._bar is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("frames  {task.fields[sim_us]:,.1f} µs simulated  ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._bar.start()

    def __exit__(self, *exc_info) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self._owned is not None:
            self._owned.close()

    def eta_seconds(self, direction: str, done: int, total: int) -> float | None:
        """Wall seconds left for *done* of *total* frames of *direction*, at its rate since
        its first record (the build and start-up before it would skew the rate)."""
        now = time.monotonic()
        first_time, first_done = self._first.setdefault(direction, (now, done))
        if done <= first_done or now <= first_time:
            return None
        return (now - first_time) / (done - first_done) * (total - done)

    def update(self, record: dict) -> None:
        """Show one progress record (``direction``, ``done``, ``total``, ``sim_us``)."""
        direction, done, total = record["direction"], record["done"], record["total"]
        with self._lock:
            self._start_bar()
            if self._bar is not None:
                if direction not in self._tasks:
                    self._tasks[direction] = self._bar.add_task(direction, total=total, sim_us=0.0)
                self._bar.update(self._tasks[direction], completed=done, sim_us=record["sim_us"])
                return
            eta = _eta_text(self.eta_seconds(direction, done, total))
            step = done * PLAIN_STEPS // total
            if step <= self._printed_step.get(direction, 0):
                return
            self._printed_step[direction] = step
            self.stream.write(
                f"{direction}: {done}/{total} frames, {record['sim_us']:,.1f} µs simulated, "
                f"ETA {eta}\n"
            )
            self.stream.flush()


def duration_text(seconds: float) -> str:
    """*seconds* of wall time as ``42s`` or ``3m07s`` (the points lines' format)."""
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class PointsProgress:
    """Progress through *total* independent jobs (``macdma regress`` points, ``macdma
    bench`` workloads) on *stream* (default stderr).

    On a terminal (unless *plain*) a rich bar: jobs done, failures, elapsed, ETA and the
    last job finished. Otherwise one line per finished job, so that logs stay readable:
    ``[n/N] elapsed 12s ETA 36s ok: <job>`` (``FAILED`` for a failed one). Use as a
    context manager or call :meth:`close`; :meth:`note` prints a line above the bar.
    """

    def __init__(self, total: int, stream: TextIO | None = None, *, plain: bool = False):
        if total < 0:
            raise ValueError(f"a progress total must be 0 or more jobs, not {total}")
        self.total, self.done, self.failed = total, 0, 0
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self.live = not plain and hasattr(self.stream, "isatty") and self.stream.isatty()
        self._bar = None
        if self.live:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[failed]}elapsed"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TextColumn("{task.description}"),
                console=Console(file=self.stream),
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = self._bar.add_task("", total=total, failed="")
            self._bar.start()

    def __enter__(self) -> PointsProgress:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def line(self, now: float | None = None) -> str:
        """The plain line's counts and times: ``[n/N] elapsed 12s ETA 36s``."""
        elapsed = (now if now is not None else time.monotonic()) - self.started
        left = self.total - self.done
        eta = "?" if not self.done else duration_text(elapsed / self.done * left)
        return f"[{self.done}/{self.total}] elapsed {duration_text(elapsed)} ETA {eta}"

    def advance(self, what: str, ok: bool) -> None:
        """Count one finished job, *what*, which succeeded when *ok*."""
        self.done += 1
        self.failed += not ok
        verdict = "ok" if ok else "FAILED"
        if self._bar is not None:
            failed = f"{self.failed} failed  " if self.failed else ""
            self._bar.update(
                self._task, completed=self.done, description=f"{verdict}: {what}", failed=failed
            )
            return
        self.stream.write(f"{self.line()} {verdict}: {what}\n")
        self.stream.flush()

    def note(self, text: str, **_print_options) -> None:
        """Print *text* as its own line (above the bar on a terminal); takes and ignores
        print's options (``flush``) so that it can stand in for ``print`` as a logger."""
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Stop the live display (idempotent); the bar stays on screen as it last was."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
