"""``macdma regress``: the command's options (:func:`add_regress_parser`) and its run
(:func:`run_regress`): read the sweep, plan and run its points, then write the CSV,
``field_reports.json``, the plots and the report, record the run in the results database
and exit 1 when a point failed or an assertion broke."""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from ..cosim.outputs import unwritable_reason
from ..cosim.progress import duration_text
from ..cosim.runner import SimulatorBuildError
from ..cosim.simulators import SIMULATORS
from ..cosim.verilog import build_dir
from ..run.scenario import WIRES
from .cluster import ClusterError, DaskPool, LocalPool, parse_scheduler
from .expectations import check_results
from .failures import failure_lines
from .field_reports import field_report_rows, write_field_reports_json
from .keys import source_hash
from .model_vs_rtl import pair_points, plot_model_vs_rtl, write_model_vs_rtl_json
from .plots import plot_experiment
from .points import expand, plan
from .pool import build_models, run_points
from .report import write_report
from .report_html import add_comparison
from .results_csv import write_csv
from .results_db import (
    ResultsDb,
    ResultsDbError,
    add_db_argument,
    compare,
    comparison_markdown,
    load_run,
    run_set_of,
)
from .selection import ok
from .sweep_file import DEFAULT_SWEEP, QUICK_SWEEP, Sweep, load_sweep


def add_regress_parser(commands) -> None:
    regress = commands.add_parser(
        "regress",
        help="run a sweep of scenarios: JSON, CSV, Markdown report, plots and assertions",
        description="Run a sweep (docs/regression.md) over all cores or on a Dask cluster; "
        "exit 1 when a point fails or an assertion breaks.",
    )
    regress.add_argument(
        "sweep",
        nargs="?",
        type=Path,
        help=f"sweep TOML file (default: {DEFAULT_SWEEP.name}, or {QUICK_SWEEP.name} with --quick)",
    )
    regress.add_argument("--quick", action="store_true", help="the small CI sweep (quick.toml)")
    regress.add_argument("--sim", choices=SIMULATORS, help="override the sweep's simulator")
    regress.add_argument(
        "--wire", choices=("auto", *WIRES), help="override the sweep's GMII wire (Scenario.wire)"
    )
    regress.add_argument(
        "--out", type=Path, help=f"output folder (default: {build_dir() / 'regress'}/<sweep name>)"
    )
    regress.add_argument("--force", action="store_true", help="rerun points already done")
    regress.add_argument(
        "--jobs",
        type=int,
        help=f"parallel simulations in the local pool (default: all cores, {os.cpu_count()})",
    )
    regress.add_argument(
        "--scheduler",
        metavar="ADDRESS|local:N",
        type=parse_scheduler,
        help="run the points on the Dask cluster whose scheduler is at ADDRESS "
        "(tcp://host:8786), or on a local Dask cluster of N workers (needs the 'cluster' extra)",
    )
    add_db_argument(regress)
    regress.add_argument(
        "--baseline",
        metavar="RUN",
        help="an output folder or a commit in the database: report.md lists the points "
        "whose metrics moved since it",
    )
    regress.set_defaults(regress_parser=regress)


def run_regress(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.sweep is not None and args.quick:
        parser.error("give a sweep file or --quick, not both")
    if args.jobs is not None and args.scheduler is not None:
        parser.error("--jobs sizes the local pool; with --scheduler the cluster's workers run")
    jobs = (os.cpu_count() or 1) if args.jobs is None else args.jobs
    if jobs < 1:
        parser.error(f"--jobs must be >= 1, got {jobs}")
    sweep_path = args.sweep or (QUICK_SWEEP if args.quick else DEFAULT_SWEEP)
    try:
        sweep = load_sweep(sweep_path)
        sources = source_hash()
        points = expand(sweep, sources, sim=args.sim, wire=args.wire)
        # Read the baseline before this run overwrites anything (it may be --out itself).
        baseline = load_run(args.baseline, args.db) if args.baseline else None
    except ValueError as error:  # ResultsDbError is a ValueError
        parser.error(str(error))
    out = args.out or default_out(sweep.name)
    problem = unwritable_reason(out, folder=True)
    if problem is not None:
        parser.error(f"cannot write the results to {out}: {problem}")
    try:
        with ResultsDb(args.db) as db:
            db.check_writable()
    except ResultsDbError as error:
        parser.error(str(error))
    try:
        with output_lock(out):
            return _run_sweep(args, sweep, sweep_path, points, sources, jobs, out, baseline)
    except OutputBusy as busy:
        parser.error(str(busy))


def default_out(sweep_name: str) -> Path:
    """``regress/<sweep name>`` under the build root (the repository's build/, or
    MACDMA_BUILD_DIR), whatever folder the command runs from."""
    return build_dir() / "regress" / sweep_name


class OutputBusy(RuntimeError):
    """Another ``macdma regress`` writes to the same output folder."""


LOCK_NAME = ".regress.lock"


@contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """Hold ``out``'s lock for the with-block: two runs into one folder would overwrite
    each other's points and report. :class:`OutputBusy` names the other run's process."""
    out.mkdir(parents=True, exist_ok=True)
    lock_path = out / LOCK_NAME
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise OutputBusy(
                f"another macdma regress ({holder}) is writing to {out}: wait for it to "
                "finish, or give another --out"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(
            f"pid {os.getpid()}, started {datetime.now(UTC).isoformat(timespec='seconds')}"
        )
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_sweep(args, sweep, sweep_path, points, sources, jobs, out, baseline) -> int:
    """The run of :func:`run_regress` once its outputs are checked and locked."""

    def unusable(path: Path, reason: str) -> None:
        print(f"note: {path} cannot be used ({reason}): its point runs again", file=sys.stderr)

    todo, done = plan(points, out, force=args.force, on_unusable=unusable)
    started_utc = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.monotonic()
    interrupted = False
    ran_on = "nothing (every point unchanged)"
    if todo:
        try:
            pool = DaskPool(args.scheduler) if args.scheduler else LocalPool(jobs)
        except ClusterError as error:
            print(f"macdma regress: {error}", file=sys.stderr)
            return 2
        ran_on = pool.where
    print(
        f"macdma regress: sweep {sweep.name!r} ({sweep_path}): {len(points)} points, "
        f"{len(done)} unchanged and skipped, {len(todo)} to run on {ran_on}; output {out}",
        flush=True,
    )
    if todo:
        if not args.scheduler:  # a cluster's workers build their own models
            try:
                build_models([p.scenario for p in todo], out / "logs")
            except SimulatorBuildError as error:
                pool.close()
                print(f"macdma regress failed: {error}\nlog: {error.details_path}",
                      file=sys.stderr)  # fmt: skip
                return 1
        interrupted = run_points(todo, done, out, sources, pool)
    wall = time.monotonic() - started
    results = [done[p.key] for p in points if p.key in done]
    code = _finish(sweep, results, out, len(points), wall, interrupted)
    if baseline is not None:
        _report_baseline(out / "report.md", baseline, run_set_of(str(out), results))
    try:
        with ResultsDb(args.db) as db:
            db.record_run(
                sweep=sweep.name,
                out=out,
                sources=sources,
                ran_on=ran_on,
                results=results,
                ran_keys={p.key for p in todo},
                started_utc=started_utc,
                complete=len(results) == len(points) and not interrupted,
            )
        print(f"results database: {args.db}")
    except ResultsDbError as error:
        print(f"macdma regress: not recorded: {error}", file=sys.stderr)
        code = code or 1
    if interrupted:
        print("macdma regress: interrupted", file=sys.stderr)
    return code


def _report_baseline(report: Path, baseline, current) -> None:
    """Append "Changed since the baseline" to the report and print its one-line summary."""
    comparison = compare(baseline, current)
    with open(report, "a") as handle:
        handle.write("\n## Changed since the baseline\n\n")
        handle.write("\n".join(comparison_markdown(comparison)) + "\n")
    add_comparison(report.with_suffix(".html"), comparison)
    print(
        f"baseline {baseline.label}: {comparison.compared} points compared, "
        f"{len(comparison.changes)} changes beyond {100 * comparison.tolerance:g}% "
        f"(report.md, 'Changed since the baseline')"
    )


#: The plot of model against RTL throughput, in the output folder (with model_vs_rtl.json).
MODEL_VS_RTL_PLOT = "plots/model_vs_rtl.png"


def _finish(
    sweep: Sweep, results: list[dict], out: Path, total: int, wall: float, interrupted: bool
) -> int:
    checks = check_results(sweep, results)
    plots = {}
    for experiment in sweep.experiments:
        rows = ok(r for r in results if experiment.name in r.get("experiments", []))
        if rows and experiment.x:
            relative = f"plots/{experiment.name}.png"
            plot_experiment(experiment, rows, out / relative)
            plots[experiment.name] = relative
    notes = []
    if len(results) < total:
        notes.append(f"**Incomplete:** {total - len(results)} of {total} points not run yet.")
    field_reports = field_report_rows(sweep, results)
    model_vs_rtl = pair_points(results)
    if model_vs_rtl:
        write_model_vs_rtl_json(out / "model_vs_rtl.json", model_vs_rtl)
        plot_model_vs_rtl(model_vs_rtl, out / MODEL_VS_RTL_PLOT)
    write_csv(out / "results.csv", results)
    write_field_reports_json(out / "field_reports.json", field_reports)
    write_report(
        out / "report.md", sweep, results, checks, plots, notes, field_reports, model_vs_rtl,
        MODEL_VS_RTL_PLOT,
    )  # fmt: skip
    failed = [r for r in results if r.get("status") != "ok"]
    print(f"\n{len(results)}/{total} points in {out} ({duration_text(wall)} wall this run)")
    for check in checks:
        print(f"  {check.status:4} {check.name}: {check.detail[:160]}")
    if failed:
        print(f"  {len(failed)} of {len(results)} points failed (logs: {out / 'logs'}/KEY.log):")
        for line in failure_lines(results):
            print(f"    {line}")
    print(
        f"report: {out / 'report.md'} (and .html)  csv: {out / 'results.csv'}  "
        f"field reports: {out / 'field_reports.json'} ({len(field_reports)} "
        f"condition{'s' * (len(field_reports) != 1)})  "
        f"plots: {out / 'plots'}"
    )
    if model_vs_rtl:
        print(f"model vs RTL: {out / 'model_vs_rtl.json'} ({len(model_vs_rtl)} conditions)")
    if interrupted:
        return 130
    if failed or any(c.failed for c in checks):
        return 1
    return 0
