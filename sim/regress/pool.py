"""Running points: :func:`run_point` is what a worker process (the local pool's or a Dask
worker's, sim/regress/cluster.py) does with one point, and :func:`run_points` hands a sweep's
points to a pool and stores each result as it arrives, with the progress bar."""

from __future__ import annotations

import os
import signal
import sys
import time
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path

from ..cosim.progress import PointsProgress, showing_build, stream_copy
from ..cosim.runner import (
    CocotbTestFailure,
    SimulatorBuildError,
    announcing_builds,
    build_model,
    output_to_log,
)
from ..cosim.simulators import SimulatorNotFound
from ..run import scenario as scenario_module
from ..run.scenario import Scenario, scenario_top
from .keys import cpu_digest
from .points import Point, store


def strip_wire(metrics: dict) -> dict:
    """The metrics without the per-frame wire stamps (large, and in the bench's log)."""
    return {
        key: ({k: v for k, v in value.items() if k != "wire"} if key in ("tx", "rx") else value)
        for key, value in metrics.items()
    }


def run_point(scenario_json: str, log_path: str) -> dict:
    """Worker: run one scenario with its output in ``log_path``; never raises for a failed
    simulation (returns ``{"status": "failed", "error": ...}``)."""
    scenario = Scenario.from_json(scenario_json)
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log_path, "w") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            # Looked up at the call: the tests put a stand-in for the simulation there.
            metrics = scenario_module.run_scenario(scenario)
            result = {"status": "ok", "metrics": strip_wire(metrics)}
        except (CocotbTestFailure, SimulatorNotFound, OSError, ValueError) as error:
            result = {"status": "failed", "error": str(error).strip()[-2000:]}
            if isinstance(error, CocotbTestFailure):  # its message without the tracebacks
                result["reason"] = error.summary
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    result["point_seconds"] = time.monotonic() - started
    return result


def worker_init() -> None:
    """Set up a worker process (the local pool's, a local Dask cluster's) for Ctrl-C."""
    # Ctrl-C is the parent's to handle: it stops handing out points and keeps the
    # finished ones. The worker survives the signal with a handler that does nothing, not
    # SIG_IGN, which its simulator would inherit: the simulator starts with the default
    # action, so it sees the signal and ends its point (whose result is then dropped).
    signal.signal(signal.SIGINT, lambda signum, frame: None)


def build_models(scenarios: list[Scenario], log_folder: Path) -> None:
    """Build (or find in the cache) every simulator model *scenarios* run on, here, before
    the pool starts: shown with its progress (sim/cosim/progress.py ``showing_build``) on
    stderr, the compiler's output in ``log_folder/build-<sim>-<top>.log``. Left to the
    workers, one would build while the others wait on its lock, all in silence.
    Raises :class:`~macdma.sim.cosim.runner.SimulatorBuildError` (its ``details_path`` the log)."""
    models = {}
    for scenario in scenarios:
        top, params = scenario_top(scenario)
        key = (scenario.sim, top, tuple(sorted(params.items())), scenario.waves)
        models.setdefault(key, (scenario.sim, top, params, scenario.waves))
    display = stream_copy(sys.stderr)
    live = display.isatty()

    def listener(sim: str, top: str, estimate: float, rebuild: bool):
        return showing_build(sim, top, estimate, rebuild, stream=display, live=live)

    try:
        for sim, top, params, waves in models.values():
            log_path = log_folder / f"build-{sim}-{top}.log"
            try:
                with announcing_builds(listener), output_to_log(log_path):
                    build_model(sim, top, params=params, waves=waves)
            except SimulatorBuildError as error:
                error.details_path = log_path
                raise
    finally:
        display.close()


def run_points(todo: list[Point], done: dict, out: Path, sources: str, pool) -> bool:
    """Run ``todo`` on ``pool`` (sim/regress/cluster.py), storing each result as it arrives (and
    the log a remote worker sent back); True when interrupted."""
    bar = PointsProgress(len(todo))
    futures = {}
    for p in todo:
        expected = {"sources": sources, "cpu_digest": cpu_digest(p.scenario)}
        log_path = out / "logs" / f"{p.key}.log"
        futures[pool.submit(p.scenario.to_json(), p.key, log_path, expected)] = p
    pending = set(futures)

    def keep(future, point: Point, result: dict) -> None:
        log = result.pop("log", None)
        if log is not None:
            log_path = out / "logs" / f"{point.key}.log"
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text(log)
        done[point.key] = store(out, point, result, sources)
        bar.advance(point.scenario.describe(), result["status"] == "ok")

    try:
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                try:
                    result = future.result()
                except Exception as error:  # a worker died or the task was lost
                    result = {"status": "failed", "error": f"worker: {error!r}"}
                keep(future, futures[future], result)
    except KeyboardInterrupt:
        # Ctrl-C ended the workers (sim/cosim/interrupts.py). A point that finished before it
        # and was not collected yet is kept; one the interrupt cut short is not a result.
        for future in [f for f in pending if f.done() and not f.cancelled()]:
            if future.exception() is None and future.result().get("status") == "ok":
                keep(future, futures[future], future.result())
        bar.close()
        print(
            f"\ninterrupted: {bar.done} points finished and kept; re-run to do the rest",
            file=sys.stderr,
        )
        pool.cancel()
        return True
    bar.close()
    pool.close()
    return False
