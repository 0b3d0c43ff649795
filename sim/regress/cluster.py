"""Where a sweep's points run: the local process pool, or a Dask distributed cluster.

``macdma regress`` hands every point to a *point pool* and stores each result as it comes
back (sim/regress/pool.py ``run_points``); the pool only decides where the simulation runs:

- :class:`LocalPool`: a process pool on this machine, one simulation per worker (the
  default; needs nothing beyond the project).
- :class:`DaskPool`: the tasks of a Dask distributed cluster (``--scheduler ADDRESS``), or
  of a :class:`distributed.LocalCluster` started for the run (``--scheduler local:N``).
  Dask is an existing, well-kept distributed engine (scheduling, worker loss and retries,
  a dashboard): nothing here reimplements remote execution. ``dask`` and ``distributed``
  are the optional extra ``cluster`` and are imported only when a scheduler is given.

A point on a Dask worker runs exactly what a local worker runs (:func:`run_point`: the
scenario's simulator as a subprocess, the model built once per design under the worker's
``build/`` or ``MACDMA_BUILD_DIR``), but the worker may be another machine: it writes the
simulator log to its own scratch file and returns the text, and the collecting process
writes ``logs/<key>.log`` and ``points/<key>.json`` (so ``--force``, skip-unchanged and
Ctrl-C behave as with the local pool). Before it simulates, the worker checks that its
simulated sources and the point's CPU file are the ones the point's key was made from, so
a worker on another commit fails the point with a message instead of storing a wrong result.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import tempfile
import threading
from pathlib import Path

from ..cosim.interrupts import stop_descendants
from ..run.scenario import Scenario
from .keys import cpu_digest, source_hash
from .pool import run_point, worker_init

__all__ = [
    "LOCAL_PREFIX",
    "ClusterError",
    "DaskPool",
    "LocalPool",
    "parse_scheduler",
    "run_point_on_worker",
]

LOCAL_PREFIX = "local:"  # ``--scheduler local:N``: a LocalCluster of N workers
INSTALL_HINT = "pip install -e '.[cluster]' (the dask and distributed packages)"
CONNECT_TIMEOUT_S = 20  # a scheduler that does not answer within this is reported


class ClusterError(RuntimeError):
    """A cluster that cannot be used (dask missing, scheduler unreachable); the message
    names the address and what to do."""


def parse_scheduler(text: str) -> str:
    """``--scheduler`` value check (argparse type): ``local:N`` with N >= 1, or a scheduler
    address (``tcp://host:8786``, ``host:8786``); ValueError naming the bad value."""
    text = text.strip()
    if text.startswith(LOCAL_PREFIX):
        count = text[len(LOCAL_PREFIX) :]
        if not count.isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(
                f"local:N needs a whole number of workers N >= 1, got {text!r}"
            )
        return f"{LOCAL_PREFIX}{int(count)}"
    address = text.split("://", 1)[-1]
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(
            f"expected local:N or a Dask scheduler address such as tcp://host:8786, got {text!r}"
        )
    return text


class LocalPool:
    """The local process pool: ``jobs`` worker processes on this machine."""

    def __init__(self, jobs: int):
        self.where = f"{jobs} local workers"
        self._executor = cf.ProcessPoolExecutor(max_workers=jobs, initializer=worker_init)

    def submit(self, scenario_json: str, key: str, log_path: Path, expected: dict) -> cf.Future:
        """Run one point; the future's result is :func:`run_point`'s dict."""
        return self._executor.submit(run_point, scenario_json, str(log_path))

    def cancel(self) -> None:
        """Drop the points not started and end the running ones: the workers and their
        simulators are stopped (a worker left running would finish its point, then take
        the next queued one, and the interpreter's exit would wait for all of them)."""
        stop_descendants()
        self._executor.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self._executor.shutdown()


class DaskPool:
    """Points as tasks of a Dask cluster: ``local:N`` starts a LocalCluster of N single-
    threaded worker processes for this run; anything else is a running scheduler's address.

    Results come back as futures of :mod:`concurrent.futures` (Dask's ClientExecutor), so
    the collecting loop is the one the local pool uses."""

    def __init__(self, scheduler: str):
        try:
            # Imported here: Dask is an optional extra (cluster), and without
            # --scheduler nothing needs it.
            from distributed import Client, LocalCluster
        except ImportError:
            raise ClusterError(f"--scheduler {scheduler} needs Dask: {INSTALL_HINT}") from None
        self._cluster = None
        if scheduler.startswith(LOCAL_PREFIX):
            workers = int(scheduler[len(LOCAL_PREFIX) :])
            # One thread per worker process: a point redirects its process's stdout and
            # stderr to its log, and each simulation takes a core of its own.
            self._cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            self.where = f"a local Dask cluster of {workers} workers"
            target = self._cluster
        else:
            self.where = f"the Dask cluster at {scheduler}"
            target = scheduler
        try:
            self._client = Client(target, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as error:
            self._close_cluster()
            raise ClusterError(
                f"cannot reach a Dask scheduler at {scheduler} ({error}); start one with "
                f"`dask scheduler` and give its address (tcp://host:8786)"
            ) from None
        if self._cluster is not None:
            # As in the local pool, Ctrl-C is the collecting process's: it cancels the
            # points and closes the cluster (workers would otherwise print tracebacks).
            self._client.run(worker_init)
        self._executor = self._client.get_executor(pure=False)  # every point runs anew
        if not self._client.scheduler_info().get("workers"):
            print(
                f"note: no worker is connected to {scheduler} yet; points wait until one "
                f"is (`dask worker {scheduler} --nthreads 1`)",
                flush=True,
            )

    def submit(self, scenario_json: str, key: str, log_path: Path, expected: dict) -> cf.Future:
        """Run one point on a worker; the result carries the log text under ``log``."""
        return self._executor.submit(run_point_on_worker, scenario_json, key, expected)

    def cancel(self) -> None:
        """Cancel every point not finished yet and leave the cluster."""
        self._executor.shutdown(wait=False)
        self.close()

    def close(self) -> None:
        self._client.close()
        self._close_cluster()

    def _close_cluster(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None


# A worker process with several threads would run two points at once and each point
# redirects the process's file descriptors 1 and 2: points in one process take turns.
_POINT_LOCK = threading.Lock()


def worker_mismatch(expected: dict, scenario_json: str) -> str | None:
    """Why this process must not run the point (its sources or the CPU file differ from
    those the point's key was made from), or None when they match."""
    sources = source_hash()
    if sources != expected["sources"]:
        return (
            f"worker {os.uname().nodename}: its simulated sources hash {sources}, the sweep's "
            f"is {expected['sources']}: install the same commit (and local changes) there"
        )
    scenario = Scenario.from_json(scenario_json)
    cpu, digest = scenario.cpu, cpu_digest(scenario)
    if digest != expected["cpu_digest"]:
        return (
            f"worker {os.uname().nodename}: CPU file {cpu} differs from the collecting "
            f"machine's (sha256 {digest[:12]} vs {expected['cpu_digest'][:12]})"
        )
    return None


def run_point_on_worker(scenario_json: str, key: str, expected: dict) -> dict:
    """Dask task: check the worker's sources, run one point with its log in a scratch file
    and return :func:`run_point`'s dict plus ``log`` (the log's text) for the collector."""
    try:
        problem = worker_mismatch(expected, scenario_json)
    except ValueError as error:  # the CPU file is missing or bad on this worker
        problem = f"worker {os.uname().nodename}: {error}"
    if problem is not None:
        return {"status": "failed", "error": problem, "log": problem + "\n"}
    with _POINT_LOCK, tempfile.TemporaryDirectory(prefix=f"macdma-{key}-") as scratch:
        log_path = Path(scratch) / "point.log"
        result = run_point(scenario_json, str(log_path))
        result["log"] = log_path.read_text(errors="replace") if log_path.exists() else ""
    return result
