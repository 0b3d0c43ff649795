"""``macdma regress``: run a sweep of scenarios, write JSON/CSV/Markdown/PNG, check physics.

A sweep is a TOML file (docs/regression.md): ``[defaults]`` Scenario fields, then
``[[experiment]]`` tables, each with ``fixed`` fields and a ``sweep`` of field -> values
whose cross product gives the experiment's points. Every point is one
:func:`macdma.sim.scenario.run_scenario` call; points run in a process pool (one per core)
or on a Dask cluster (sim/cluster.py) and share the cached simulator build. Each finished
point is written at once to ``points/<key>.json``; the key hashes the scenario, its CPU
file and the simulated sources (HDL, firmware, benches), so a re-run skips unchanged
points, a code change reruns them, and Ctrl-C keeps what finished. Every run is recorded
in the results database (sim/results_db.py). The report asserts the orderings physics
demands (:data:`CHECKS`) and the command exits 1 when one breaks or a point failed.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import itertools
import json
import math
import os
import sys
import time
import tomllib
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from .progress import PointsProgress, duration_text
from .scenario import Scenario, checked_cpu

__all__ = [
    "CHECKS",
    "Experiment",
    "Sweep",
    "Point",
    "add_regress_parser",
    "check_results",
    "expand",
    "load_sweep",
    "plan",
    "run_regress",
    "source_hash",
    "summarise",
    "write_csv",
    "write_report",
]

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the folder holding hdl/ sim/ firmware/
SWEEP_DIR = Path(__file__).resolve().parent / "sweeps"
DEFAULT_SWEEP = SWEEP_DIR / "default.toml"
QUICK_SWEEP = SWEEP_DIR / "quick.toml"
DEFAULT_OUT = Path("build") / "regress"
# Inputs of a point's result besides the scenario: what is simulated. The reporting side
# (this file, the CLI) and the synthesis flow do not change a measurement.
SOURCE_DIRS = ("hdl", "firmware", "sim")
SOURCE_EXCLUDED = (
    "sim/regress.py",
    "sim/report_html.py",
    "sim/cli.py",
    "sim/synth.py",
    "sim/platform_serial.py",
)
SOURCE_EXCLUDED_DIRS = ("hdl/boards", "sim/sweeps")
# Scenario fields that do not change what a run measures.
UNHASHED_FIELDS = ("json", "waves")
SCENARIO_FIELDS = tuple(f.name for f in dataclasses.fields(Scenario))


# -- metrics of one point ------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """A column of the CSV and a plottable quantity: ``label`` and ``unit`` for axes."""

    name: str
    label: str
    unit: str


METRICS = {
    m.name: m
    for m in (
        Metric("throughput_mbps", "throughput", "Mb/s"),
        Metric("line_rate_pct", "line rate", "%"),
        Metric("tx_mbps", "TX throughput", "Mb/s"),
        Metric("tx_line_rate_pct", "TX line rate", "%"),
        Metric("rx_mbps", "RX throughput", "Mb/s"),
        Metric("rx_line_rate_pct", "RX line rate", "%"),
        Metric("frames_dropped", "frames dropped", "frames"),
        Metric("irqs_per_packet", "IRQs per packet", "IRQs/packet"),
        Metric("irqs_per_second", "IRQ rate", "IRQs/s"),
        Metric("cycles_per_packet", "CPU cycles per packet", "cycles"),
        Metric("cpu_bound_mbps", "throughput the CPU could sustain", "Mb/s"),
        Metric("cpu_utilisation_pct", "CPU utilisation", "%"),
        Metric("queue_stops", "TX queue stops", "stops"),
        Metric("throughput_ci_mbps", "throughput ±95% (batch means)", "Mb/s"),
        Metric("bus_utilisation_pct", "busier AXI data channel occupancy (beats/cycle)", "%"),
        Metric("window_frames", "frames in the measurement window", "frames"),
        Metric("window_ok", "window long enough (frames, batches)", ""),
        Metric("axi_bursts_per_frame", "AXI bursts per frame", "bursts"),
        Metric("latency_p99_us", "p99 latency", "µs"),
        Metric("sim_ms", "simulated time", "ms"),
        Metric("wall_seconds", "wall time", "s"),
    )
}


def summarise(metrics: dict) -> dict:
    """The flat numbers of one run's metrics (:func:`compute_metrics` output) that the
    CSV, plots, checks and readings use. Every rate and per-packet figure is the one
    compute_metrics measured over the run's measurement window (docs/driver-model.md);
    throughput is TX's when the run sends TX, else RX's (delivered goodput)."""
    scenario = metrics["scenario"]
    tx, rx = metrics.get("tx"), metrics.get("rx")
    main = tx if tx is not None else rx
    latency = main["latency"]["p99_ns"] if main else None
    cpu = metrics["cpu"]
    cpu_hz = cpu["mhz"] * 1e6
    cycles = cpu["cycles_per_packet"]
    bus = metrics["bus"]
    return {
        "throughput_mbps": main["mbps"] if main else 0.0,
        "throughput_ci_mbps": main["mbps_ci"] if main else None,
        "line_rate_pct": main["percent_of_line_rate"] if main else 0.0,
        "tx_mbps": tx["mbps"] if tx else None,
        "tx_line_rate_pct": tx["percent_of_line_rate"] if tx else None,
        "rx_mbps": rx["mbps"] if rx else None,
        "rx_line_rate_pct": rx["percent_of_line_rate"] if rx else None,
        "frames_dropped": sum(d["frames_dropped"] for d in (tx, rx) if d is not None),
        "irqs_per_packet": metrics["irqs_per_packet"],
        "irqs_per_second": metrics["irqs_per_second"],
        "cycles_per_packet": cycles,
        "cpu_bound_mbps": cpu_hz / cycles * scenario["frame_size"] * 8 / 1e6 if cycles else None,
        "cpu_utilisation_pct": 100.0 * cpu["utilisation"],
        "queue_stops": metrics["driver"].get("queue_stops", 0),
        "bus_utilisation_pct": max(bus["read_pct"], bus["write_pct"]),
        "axi_bursts_per_frame": main["axi_bursts_per_frame"] if main else None,
        "latency_p99_us": latency / 1e3 if latency is not None else None,
        "window_frames": metrics["window"].get("frames"),
        "window_ok": metrics["window"].get("ok"),
        "sim_ms": (metrics.get("sim_ns") or 0) / 1e6,
        "wall_seconds": metrics.get("wall_seconds"),
    }


# -- the sweep file --------------------------------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """One ``[[experiment]]`` of a sweep.

    Members: ``name`` (identifier, used for plot file names), ``title``, ``description``,
    ``fixed`` (Scenario fields for every point), ``sweep`` (field -> list of values; the
    cross product gives the points, in file order), ``x`` (the swept field on the plots'
    x axis), ``series`` (swept fields that make one line each; default the other swept
    fields), ``metrics`` (:data:`METRICS` names, one plot panel each), ``reading`` (the
    built-in paragraph writer, see :data:`READINGS`; default ``generic``).
    """

    name: str
    title: str
    fixed: dict
    sweep: dict
    x: str
    metrics: tuple[str, ...]
    series: tuple[str, ...] = ()
    description: str = ""
    reading: str = "generic"


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep file: ``name``, ``description``, ``defaults`` and ``experiments``."""

    name: str
    description: str
    defaults: dict
    experiments: tuple[Experiment, ...]
    path: Path | None = None


def _fail(where: str, message: str) -> ValueError:
    return ValueError(f"{where}: {message}")


def _check_fields(where: str, values: dict) -> None:
    unknown = sorted(set(values) - set(SCENARIO_FIELDS))
    if unknown:
        raise _fail(
            where,
            f"unknown scenario field(s) {', '.join(unknown)}; known: {', '.join(SCENARIO_FIELDS)}",
        )


def parse_sweep(data: dict, name: str = "sweep", path: Path | None = None) -> Sweep:
    """Validate a sweep's TOML ``data`` (ValueError naming the bad entry)."""
    known_top = {"name", "description", "defaults", "experiment"}
    extra = sorted(set(data) - known_top)
    if extra:
        raise _fail(name, f"unknown key(s) {', '.join(extra)}; known: {', '.join(known_top)}")
    defaults = dict(data.get("defaults", {}))
    _check_fields(f"{name} [defaults]", defaults)
    raw = data.get("experiment", [])
    if not isinstance(raw, list) or not raw:
        raise _fail(name, "needs at least one [[experiment]] table")
    experiments, seen = [], set()
    known = {f.name for f in dataclasses.fields(Experiment)}
    for index, table in enumerate(raw):
        where = f"{name} experiment {index + 1}"
        extra = sorted(set(table) - known)
        if extra:
            raise _fail(where, f"unknown key(s) {', '.join(extra)}; known: {', '.join(known)}")
        exp_name = table.get("name")
        if not isinstance(exp_name, str) or not exp_name.replace("_", "").isalnum():
            raise _fail(where, f"name must be letters, digits and _; got {exp_name!r}")
        where = f"{name} experiment {exp_name!r}"
        if exp_name in seen:
            raise _fail(where, "name used twice")
        seen.add(exp_name)
        fixed, sweep = dict(table.get("fixed", {})), dict(table.get("sweep", {}))
        _check_fields(f"{where} fixed", fixed)
        _check_fields(f"{where} sweep", sweep)
        for key, values in sweep.items():
            if not isinstance(values, list) or not values:
                raise _fail(where, f"sweep.{key} must be a non-empty list, got {values!r}")
        if "cpu" in sweep:
            # The values as the scenarios will hold them (a CPU file's path made absolute),
            # so the plots and tables find each point's cpu among the swept values.
            try:
                sweep["cpu"] = [checked_cpu(value) for value in sweep["cpu"]]
            except ValueError as error:
                raise _fail(where, str(error)) from None
        x = table.get("x") or (next(iter(sweep)) if sweep else None)
        if x is not None and x not in sweep:
            raise _fail(where, f"x = {x!r} is not a swept field ({', '.join(sweep) or 'none'})")
        series = tuple(table.get("series", [k for k in sweep if k != x]))
        for key in series:
            if key not in sweep or key == x:
                raise _fail(where, f"series field {key!r} must be swept and not the x axis")
        metrics = tuple(table.get("metrics", ["throughput_mbps"]))
        for metric in metrics:
            if metric not in METRICS:
                raise _fail(where, f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
        reading = table.get("reading", "generic")
        if reading not in READINGS:
            raise _fail(where, f"unknown reading {reading!r}; known: {', '.join(READINGS)}")
        experiments.append(
            Experiment(
                name=exp_name,
                title=table.get("title", exp_name),
                description=table.get("description", ""),
                fixed=fixed,
                sweep=sweep,
                x=x or "",
                series=series,
                metrics=metrics,
                reading=reading,
            )
        )
    return Sweep(
        name=str(data.get("name", name)),
        description=str(data.get("description", "")),
        defaults=defaults,
        experiments=tuple(experiments),
        path=path,
    )


def load_sweep(path: Path) -> Sweep:
    """Read and validate the sweep file at ``path``; its name defaults to the file's stem."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"sweep file {path} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"sweep file {path}: {error}") from None
    return parse_sweep(data, name=path.stem, path=path)


# -- points ----------------------------------------------------------------------------------


@dataclass
class Point:
    """One scenario of a sweep; ``experiments`` lists every experiment it belongs to
    (a scenario that two experiments share runs once). ``key`` names its JSON file."""

    key: str
    scenario: Scenario
    experiments: list[str] = field(default_factory=list)


def source_hash(root: Path = PACKAGE_ROOT) -> str:
    """A hash of every simulated source (HDL, firmware, sim benches and runner)."""
    digest = hashlib.sha256()
    for folder in SOURCE_DIRS:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in SOURCE_EXCLUDED or relative.startswith(SOURCE_EXCLUDED_DIRS):
                continue
            digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cpu_digest(scenario: Scenario) -> str:
    """SHA-256 of the scenario's CPU file: editing a CPU file changes what a point measures,
    and the file is data, not part of :func:`source_hash`."""
    from .cpus import load_cpu

    return load_cpu(scenario.cpu).digest


def point_key(scenario: Scenario, sources: str) -> str:
    """The hash of a point's inputs: the scenario's measured fields, the contents of its CPU
    file and the sources."""
    inputs = {k: v for k, v in dataclasses.asdict(scenario).items() if k not in UNHASHED_FIELDS}
    text = json.dumps(
        {"scenario": inputs, "cpu": cpu_digest(scenario), "sources": sources}, sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def expand(sweep: Sweep, sources: str, sim: str | None = None) -> list[Point]:
    """Every point of ``sweep`` in file order (``sim`` overrides the simulator);
    ValueError naming the experiment when a combination is not a valid Scenario."""
    points: dict[str, Point] = {}
    for experiment in sweep.experiments:
        keys = list(experiment.sweep)
        for combination in itertools.product(*(experiment.sweep[k] for k in keys)):
            values = {
                **sweep.defaults,
                **experiment.fixed,
                **dict(zip(keys, combination, strict=True)),
            }
            if sim is not None:
                values["sim"] = sim
            try:
                scenario = Scenario(**values)
            except (TypeError, ValueError) as error:
                raise _fail(f"experiment {experiment.name!r}", str(error)) from None
            key = point_key(scenario, sources)
            point = points.setdefault(key, Point(key, scenario))
            if experiment.name not in point.experiments:
                point.experiments.append(experiment.name)
    return list(points.values())


def point_path(out: Path, key: str) -> Path:
    return out / "points" / f"{key}.json"


def plan(points: list[Point], out: Path, force: bool = False) -> tuple[list[Point], dict]:
    """Split ``points`` into (to run, {key: stored result}): a point is skipped when its
    JSON exists and passed (failed points always rerun); ``force`` reruns every point."""
    done = {}
    todo = []
    for point in points:
        path = point_path(out, point.key)
        stored = None
        if not force and path.exists():
            try:
                stored = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                stored = None
        if stored is not None and stored.get("status") == "ok":
            stored["experiments"] = point.experiments
            done[point.key] = stored
        else:
            todo.append(point)
    return todo, done


def _strip_wire(metrics: dict) -> dict:
    """The metrics without the per-frame wire stamps (large, and in the bench's log)."""
    return {
        key: ({k: v for k, v in value.items() if k != "wire"} if key in ("tx", "rx") else value)
        for key, value in metrics.items()
    }


def run_point(scenario_json: str, log_path: str) -> dict:
    """Worker: run one scenario with its output in ``log_path``; never raises for a failed
    simulation (returns ``{"status": "failed", "error": ...}``)."""
    from .runner import CocotbTestFailure
    from .scenario import run_scenario
    from .simulators import SimulatorNotFound

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
            metrics = run_scenario(scenario)
            result = {"status": "ok", "metrics": _strip_wire(metrics)}
        except (CocotbTestFailure, SimulatorNotFound, OSError, ValueError) as error:
            result = {"status": "failed", "error": str(error).strip()[-2000:]}
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    result["point_seconds"] = time.monotonic() - started
    return result


def _worker_init() -> None:
    """Set up a worker process (the local pool's, a local Dask cluster's) for Ctrl-C."""
    # Ctrl-C is the parent's to handle: it stops handing out points and keeps the
    # finished ones. The worker survives the signal with a handler that does nothing, not
    # SIG_IGN, which its simulator would inherit: the simulator starts with the default
    # action, so it sees the signal and ends its point (whose result is then dropped).
    import signal

    signal.signal(signal.SIGINT, lambda signum, frame: None)


def store(out: Path, point: Point, result: dict, sources: str) -> dict:
    """Write ``point``'s JSON (with its summary when it ran) and return the stored dict."""
    stored = {
        "key": point.key,
        "experiments": point.experiments,
        "scenario": dataclasses.asdict(point.scenario),
        "sources": sources,
        "cpu_digest": cpu_digest(point.scenario),
        "measured_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        **result,
    }
    if result.get("status") == "ok":
        stored["summary"] = summarise(result["metrics"])
    path = point_path(out, point.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(stored, indent=2))
    tmp.replace(path)  # atomic: an interrupted write never leaves half a JSON
    return stored


# -- checks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """One assertion's outcome: ``status`` is PASS, FAIL or N/A (no point it applies to)."""

    name: str
    statement: str
    status: str
    detail: str


def _ok(results: Iterable[dict]) -> list[dict]:
    return [r for r in results if r.get("status") == "ok"]


def _label(scenario: dict, fields: Iterable[str]) -> str:
    return ", ".join(f"{k}={scenario[k]}" for k in fields)


def _group(results: list[dict], vary: tuple[str, ...]) -> dict:
    """Results grouped by every scenario field except ``vary`` (and the unhashed ones)."""
    groups: dict = {}
    for r in results:
        key = tuple(
            (k, r["scenario"][k])
            for k in SCENARIO_FIELDS
            if k not in vary and k not in UNHASHED_FIELDS
        )
        groups.setdefault(key, []).append(r)
    return groups


def check_all_points_intact(results: list[dict]) -> CheckResult:
    """Every point ran to the end: the bench fails a point with a damaged, reordered or
    silently lost frame; TX (pktgen retries) must put every frame on the wire."""
    failed = [r for r in results if r.get("status") != "ok"]
    short = [
        r
        for r in _ok(results)
        if "tx" in r["metrics"] and r["metrics"]["tx"]["frames_dropped"] != 0
    ]
    bad = failed + short
    detail = (
        f"{len(results)} points, all delivered every frame intact"
        if not bad
        else "; ".join(f"{r['key']} ({r.get('error', 'TX frames missing')[:120]})" for r in bad)
    )
    return CheckResult(
        "frames_intact",
        "every point delivers every frame intact (a damaged, reordered or uncounted frame "
        "fails the point)",
        "PASS" if not bad and results else ("N/A" if not results else "FAIL"),
        detail,
    )


IDEAL_LINE_RATE_PCT = 99.0  # frame stamps are exact; 1% covers the first/last-frame edges


def check_ideal_line_rate(results: list[dict]) -> CheckResult:
    """With the ideal CPU and zero-latency memory every direction reaches line rate with
    no drop."""
    points = [
        r
        for r in _ok(results)
        if r["scenario"]["cpu"] == "ideal" and r["scenario"]["mem_latency_cycles"] == 0
    ]
    bad = []
    for r in points:
        s = r["summary"]
        for direction in ("tx", "rx"):
            pct = s.get(f"{direction}_line_rate_pct")
            if pct is not None and pct < IDEAL_LINE_RATE_PCT:
                bad.append(f"{r['key']} {direction} {pct:.2f}%")
        if s["frames_dropped"]:
            bad.append(f"{r['key']} dropped {s['frames_dropped']}")
    worst = min(
        (
            r["summary"][f"{d}_line_rate_pct"]
            for r in points
            for d in ("tx", "rx")
            if r["summary"].get(f"{d}_line_rate_pct") is not None
        ),
        default=None,
    )
    return CheckResult(
        "ideal_line_rate",
        f"ideal CPU, zero-latency memory: every point reaches >= {IDEAL_LINE_RATE_PCT:g}% of "
        "line rate with no drops",
        "N/A" if not points else ("FAIL" if bad else "PASS"),
        "; ".join(bad)
        if bad
        else (f"{len(points)} points, lowest {worst:.2f}% of line rate" if points else ""),
    )


def check_coalescing_beats_per_desc(results: list[dict]) -> CheckResult:
    """On microblaze-66 at 5 extra fragments, coalesce and napi beat per-desc TX."""
    candidates = [
        r
        for r in _ok(results)
        if r["scenario"]["cpu"] == "microblaze-66"
        and r["scenario"]["frags"] == 5
        and r["scenario"]["direction"] == "tx"
    ]
    vary = ("irq", "coalesce_frames", "coalesce_us", "poll_us", "budget")
    compared, bad = [], []
    for group in _group(candidates, vary).values():
        by_irq = {r["scenario"]["irq"]: r["summary"]["throughput_mbps"] for r in group}
        if "per-desc" not in by_irq:
            continue
        for better in ("coalesce", "napi"):
            if better in by_irq:
                text = f"{better} {by_irq[better]:.1f} vs per-desc {by_irq['per-desc']:.1f} Mb/s"
                compared.append(text)
                if not by_irq[better] > by_irq["per-desc"]:
                    bad.append(text)
    return CheckResult(
        "coalescing_beats_per_desc",
        "microblaze-66, TX, 5 extra fragments: coalesce and napi give more throughput than "
        "per-desc",
        "N/A" if not compared else ("FAIL" if bad else "PASS"),
        "; ".join(bad or compared),
    )


BURST_TOLERANCE = 0.01  # 1%: a frame's start stamp granularity over a short run


def check_bursts_monotonic(results: list[dict]) -> CheckResult:
    """At fixed memory latency and prefetch (and everything else), a larger burst never
    lowers throughput (by more than :data:`BURST_TOLERANCE`)."""
    compared, bad = 0, []
    for group in _group(_ok(results), ("burst_beats",)).values():
        if len(group) < 2:
            continue
        group = sorted(group, key=lambda r: r["scenario"]["burst_beats"])
        for small, large in itertools.pairwise(group):
            compared += 1
            a, b = small["summary"]["throughput_mbps"], large["summary"]["throughput_mbps"]
            if b < a * (1 - BURST_TOLERANCE):
                s = small["scenario"]
                bad.append(
                    f"burst {s['burst_beats']} -> {large['scenario']['burst_beats']}: "
                    f"{a:.1f} -> {b:.1f} Mb/s "
                    f"(mem_latency_cycles {s['mem_latency_cycles']}, prefetch {s['prefetch']}, "
                    f"cpu {s['cpu']})"
                )
    return CheckResult(
        "bursts_monotonic",
        "at fixed memory latency and prefetch, a larger DMA burst never lowers throughput "
        f"(tolerance {100 * BURST_TOLERANCE:g}%)",
        "N/A" if not compared else ("FAIL" if bad else "PASS"),
        "; ".join(bad) if bad else f"{compared} burst steps compared",
    )


CHECKS: tuple[Callable[[list[dict]], CheckResult], ...] = (
    check_all_points_intact,
    check_ideal_line_rate,
    check_coalescing_beats_per_desc,
    check_bursts_monotonic,
)


def check_results(results: list[dict]) -> list[CheckResult]:
    """Every assertion of :data:`CHECKS` on ``results`` (stored point dicts)."""
    checks = [check(results) for check in CHECKS]
    return [
        dataclasses.replace(c, detail="no point of this sweep applies")
        if c.status == "N/A" and not c.detail
        else c
        for c in checks
    ]


# -- CSV --------------------------------------------------------------------------------------


def write_csv(path: Path, results: list[dict]) -> None:
    """One row per point: key, experiments, status, scenario fields, summary metrics."""
    scenario_fields = [f for f in SCENARIO_FIELDS if f not in UNHASHED_FIELDS]
    header = ["key", "experiments", "status", *scenario_fields, *METRICS]
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for r in results:
            summary = r.get("summary", {})
            writer.writerow(
                [r["key"], " ".join(r.get("experiments", [])), r.get("status", "")]
                + [r["scenario"].get(f) for f in scenario_fields]
                + [_csv_number(summary.get(m)) for m in METRICS]
            )


def _csv_number(value):
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else value


# -- readings: one paragraph per experiment from its numbers --------------------------------


def _value(results: list[dict], metric: str, **match) -> float | None:
    for r in results:
        if all(r["scenario"].get(k) == v for k, v in match.items()):
            return r["summary"].get(metric)
    return None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def reading_generic(experiment: Experiment, results: list[dict]) -> str:
    metric = experiment.metrics[0]
    meta = METRICS[metric]
    ranked = sorted(
        (r for r in results if r["summary"].get(metric) is not None),
        key=lambda r: r["summary"][metric],
    )
    if not ranked:
        return "No point of this experiment finished."
    swept = list(experiment.sweep)
    low, high = ranked[0], ranked[-1]
    return (
        f"Across {len(results)} points the {meta.label} ranges from "
        f"{_fmt(low['summary'][metric])} {meta.unit} ({_label(low['scenario'], swept)}) to "
        f"{_fmt(high['summary'][metric])} {meta.unit} ({_label(high['scenario'], swept)})."
    )


#: A CPU this busy (work, not spinning) in the window is the bottleneck.
CPU_BOUND_PCT = 95.0
#: "At line rate" in a reading: what the ideal-CPU check demands.
LINE_RATE_PCT = IDEAL_LINE_RATE_PCT


def _separated(a: dict, b: dict) -> bool:
    """Whether throughput ``a`` exceeds ``b`` by more than their ±95% together (batch
    means; an unknown ± counts as 0)."""
    margin = (a.get("throughput_ci_mbps") or 0.0) + (b.get("throughput_ci_mbps") or 0.0)
    return a["throughput_mbps"] - b["throughput_mbps"] > margin


def _with_ci(summary: dict) -> str:
    ci = summary.get("throughput_ci_mbps")
    return f"{_fmt(summary['throughput_mbps'])}" + ("" if ci is None else f" ± {_fmt(ci)}")


def reading_ideal(experiment: Experiment, results: list[dict]) -> str:
    pcts = [
        r["summary"][f"{d}_line_rate_pct"]
        for r in results
        for d in ("tx", "rx")
        if r["summary"].get(f"{d}_line_rate_pct") is not None
    ]
    drops = sum(r["summary"]["frames_dropped"] for r in results)
    if not pcts:
        return reading_generic(experiment, results)
    text = (
        f"With a CPU that costs nothing and memory that answers at once, every direction of "
        f"every point runs at {min(pcts):.2f}..{max(pcts):.2f}% of line rate with {drops} "
        "frames dropped"
    )
    if min(pcts) >= LINE_RATE_PCT and drops == 0:
        return text + (
            ": the RTL alone holds line rate, so any shortfall elsewhere in this report comes "
            "from the CPU model, the driver's strategy or the memory, not the MAC/DMA."
        )
    return text + (
        f": below {LINE_RATE_PCT:g}% or with drops, so the RTL itself (or the bench) limits "
        "some point, and shortfalls elsewhere cannot be put on the CPU model alone."
    )


def reading_fragments_irq(experiment: Experiment, results: list[dict]) -> str:
    frags = sorted({r["scenario"]["frags"] for r in results})
    if not frags:
        return reading_generic(experiment, results)
    lo, hi = frags[0], frags[-1]
    parts = []
    base = _value(results, "throughput_mbps", irq="eop", frags=lo)
    top = _value(results, "throughput_mbps", irq="eop", frags=hi)
    top_cpu = _value(results, "cpu_utilisation_pct", irq="eop", frags=hi)
    if base and top and hi > lo:
        sentence = (
            f"With one IRQ per packet (eop) the MicroBlaze's TX throughput goes from "
            f"{_fmt(base)} Mb/s at {lo} extra fragments to {_fmt(top)} Mb/s at {hi} "
            f"({100 * (top / base - 1):+.0f}%; the field report: 232 -> 116 Mb/s)"
        )
        if top < base and top_cpu is not None and top_cpu >= CPU_BOUND_PCT:
            sentence += (
                f": the CPU is {_fmt(top_cpu)}% busy, the bottleneck, and every fragment "
                "costs it a map, a descriptor and a clean."
            )
        elif top < base:
            sentence += f", with the CPU {_fmt(top_cpu)}% busy: something else limits too."
        else:
            sentence += ": fragments do not lower throughput here."
        parts.append(sentence)
    at_hi = {r["scenario"]["irq"]: r["summary"] for r in results if r["scenario"]["frags"] == hi}
    if len(at_hi) >= 2:
        ranked = sorted(at_hi, key=lambda k: -at_hi[k]["throughput_mbps"])
        best, runner_up, worst = ranked[0], ranked[1], ranked[-1]
        b, w = at_hi[best], at_hi[worst]
        listing = ", ".join(
            f"{k} {_with_ci(at_hi[k])} Mb/s ({_fmt(at_hi[k]['irqs_per_packet'], 2)} IRQs, "
            f"{_fmt(at_hi[k]['cycles_per_packet'], 0)} cycles per packet)"
            for k in ranked
        )
        sentence = f"At {hi} fragments: {listing}. "
        if _separated(b, at_hi[runner_up]):
            sentence += f"{best} is fastest beyond the measurement's ±."
        else:
            sentence += (
                f"{best} and {runner_up} are within their ± of each other: no single "
                "fastest strategy."
            )
        parts.append(sentence)
        lo_cycles = _value(results, "cycles_per_packet", irq="eop", frags=lo)
        hi_cycles = _value(results, "cycles_per_packet", irq="eop", frags=hi)
        if lo_cycles and hi_cycles and b["cycles_per_packet"] and w["cycles_per_packet"]:
            per_fragment = (hi_cycles - lo_cycles) / (hi - lo)
            saved = w["cycles_per_packet"] - b["cycles_per_packet"]
            sentence = (
                f"Each extra fragment costs ({_fmt(hi_cycles, 0)} - {_fmt(lo_cycles, 0)}) / "
                f"{hi - lo} = {_fmt(per_fragment, 0)} cycles per packet; {best} instead of "
                f"{worst} saves {_fmt(saved, 0)}"
            )
            if per_fragment > 0 and saved > 0:
                sentence += f", {saved / per_fragment:.1f} fragments' worth"
                if base and b["throughput_mbps"] < base:
                    sentence += (
                        f", so both levers matter and neither alone brings back the "
                        f"unfragmented {_fmt(base)} Mb/s."
                    )
                else:
                    sentence += (
                        f": moderating interrupts alone brings back the unfragmented "
                        f"{_fmt(base)} Mb/s."
                    )
            else:
                sentence += ": moderating interrupts does not save cycles here."
            parts.append(sentence)
    return " ".join(parts) or reading_generic(experiment, results)


def _tick_cap_mbps(results: list[dict], budget: int) -> tuple[float, float] | None:
    """(ticks per second, budget x ticks x frame bits in Mb/s) for the tx_budget points'
    housekeeping tick, from the preset's driver settings."""
    from .cpu import PRESET_DRIVER_SETTINGS

    scenario = results[0]["scenario"]
    hz = PRESET_DRIVER_SETTINGS.get(scenario["cpu"], {}).get("housekeeping_hz")
    if not hz:
        return None
    return hz, budget * hz * scenario["frame_size"] * 8 / 1e6


def reading_tx_budget(experiment: Experiment, results: list[dict]) -> str:
    rings = sorted({r["scenario"]["tx_ring"] for r in results})
    budgets = sorted({r["scenario"]["tx_clean_budget"] or 0 for r in results})
    if not rings or len(budgets) < 2:
        return reading_generic(experiment, results)

    def row(budget):
        def at(metric, ring):
            return _value(results, metric, tx_ring=ring, tx_clean_budget=budget)

        return ", ".join(
            f"{ring}: {_fmt(at('throughput_mbps', ring))} Mb/s / "
            f"{_fmt(at('queue_stops', ring), 0)} stops"
            for ring in rings
        )

    limited = [b for b in budgets if b]
    text = (
        "TX completions are reaped only by the housekeeping tick, so each tick frees at most "
        "min(budget, frames in the ring) frames and the queue stops in between. "
    )
    for budget in limited:
        text += (
            f"With a budget of {budget} per tick (ring: throughput / queue stops) {row(budget)}. "
        )
    if 0 in budgets:
        text += f"Unlimited: {row(0)}. "
    if not limited:
        return text
    big = rings[-1]
    capped = next(
        (r["summary"] for r in results
         if r["scenario"]["tx_ring"] == big and r["scenario"]["tx_clean_budget"] == limited[0]),
        None,
    )  # fmt: skip
    free = next(
        (r["summary"] for r in results
         if r["scenario"]["tx_ring"] == big and r["scenario"]["tx_clean_budget"] == 0),
        None,
    )  # fmt: skip
    cap = _tick_cap_mbps(results, limited[0])
    if cap is not None:
        hz, cap_mbps = cap
        frame_bits = results[0]["scenario"]["frame_size"] * 8
        text += (
            f"The budget caps TX at {limited[0]} frames x {hz:g} ticks/s x {frame_bits:,} bits "
            f"= {_fmt(cap_mbps)} Mb/s. "
        )
    if capped and free:
        if _separated(free, capped):
            text += (
                f"At {big} descriptors the budget binds: {_with_ci(capped)} Mb/s against "
                f"{_with_ci(free)} Mb/s unlimited, so growing the ring helps only until the "
                "budget binds (the report's 'could not keep up at line rate')."
            )
        else:
            text += (
                f"At {big} descriptors the budget does not bind: {_with_ci(capped)} Mb/s "
                f"against {_with_ci(free)} Mb/s unlimited, the same within the ±."
            )
    return text


def reading_burst_prefetch(experiment: Experiment, results: list[dict]) -> str:
    bursts = sorted({r["scenario"]["burst_beats"] for r in results})
    prefetches = sorted({r["scenario"]["prefetch"] for r in results})
    if len(bursts) < 2:
        return reading_generic(experiment, results)
    latency = results[0]["scenario"]["mem_latency_cycles"]
    lines, gains = [], []
    for prefetch in prefetches:
        lo = _value(results, "throughput_mbps", burst_beats=bursts[0], prefetch=prefetch)
        hi = _value(results, "throughput_mbps", burst_beats=bursts[-1], prefetch=prefetch)
        lines.append(f"prefetch {prefetch}: {_fmt(lo)} -> {_fmt(hi)} Mb/s")
        if lo and hi:
            gains.append(hi / lo)
    lo_bus = _value(results, "bus_utilisation_pct", burst_beats=bursts[0], prefetch=prefetches[-1])
    hi_bus = _value(results, "bus_utilisation_pct", burst_beats=bursts[-1], prefetch=prefetches[-1])
    spread = {
        b: [_value(results, "throughput_mbps", burst_beats=b, prefetch=p) for p in prefetches]
        for b in bursts
    }
    effects = [max(v) - min(v) for v in spread.values() if all(x is not None for x in v)]
    pre_effect = max(effects, default=0.0)
    fastest = max((x for v in spread.values() for x in v if x is not None), default=0.0)
    text = (
        f"Every burst waits {latency} SoC cycles before its first beat. From burst "
        f"{bursts[0]} to {bursts[-1]} beats the TX throughput goes {'; '.join(lines)}, and the "
        f"busier AXI data channel carries a beat in {_fmt(lo_bus)}% -> {_fmt(hi_bus)}% of "
        "the cycles (beats recorded by host memory). "
    )
    if gains and min(gains) > 1.1:
        text += "Short bursts spend most of the bus time waiting: burst length sets the rate. "
    elif gains:
        text += "Burst length changes the rate by less than 10%: latency is not the limit. "
    if len(prefetches) > 1:
        text += f"Descriptor prefetch moves throughput by at most {_fmt(pre_effect)} Mb/s"
        if fastest and pre_effect < 0.05 * fastest:
            text += (
                " at any burst length, under 5% of the rate: descriptor fetches are a small "
                "share of the bursts, and the data bursts set the rate."
            )
        else:
            text += ": descriptor fetches matter as much as the data bursts here."
    return text


def reading_rx_buffers(experiment: Experiment, results: list[dict]) -> str:
    rows = sorted(results, key=lambda r: -r["scenario"]["rx_buf_bytes"])
    if len(rows) < 2 or any(not r["summary"]["cycles_per_packet"] for r in rows):
        return reading_generic(experiment, results)
    described = "; ".join(
        f"{r['scenario']['rx_buf_bytes']}-byte buffers: {_with_ci(r['summary'])} Mb/s delivered "
        f"({_fmt(r['summary']['line_rate_pct'])}% of line rate), "
        f"{_fmt(r['summary']['cycles_per_packet'], 0)} cycles per packet, CPU "
        f"{_fmt(r['summary']['cpu_utilisation_pct'])}% busy, "
        f"{r['summary']['frames_dropped']} dropped"
        for r in rows
    )
    big = rows[0]["summary"]
    best_row = min(rows, key=lambda r: r["summary"]["cycles_per_packet"])
    best = best_row["summary"]
    ratio = big["cycles_per_packet"] / best["cycles_per_packet"]
    text = (
        f"On the non-coherent ARMv7 every received packet invalidates its whole buffer: "
        f"{described}. The {rows[0]['scenario']['rx_buf_bytes']}-byte buffers cost "
        f"{_fmt(big['cycles_per_packet'], 0)} / {_fmt(best['cycles_per_packet'], 0)} = "
        f"{ratio:.2f}x the cycles of the cheapest ({best_row['scenario']['rx_buf_bytes']} bytes): "
        f"the CPU alone could sustain {_fmt(big['cpu_bound_mbps'], 0)} against "
        f"{_fmt(best['cpu_bound_mbps'], 0)} Mb/s of "
        f"{rows[0]['scenario']['frame_size']}-byte frames"
    )
    text += (
        " — the report's 'more than doubled'."
        if ratio > 2
        else f" — not the report's 'more than doubled' ({ratio:.2f}x)."
    )
    if _separated(best, big):
        text += " The delivered goodput shows it too."
    else:
        text += (
            " The delivered goodput does not differ beyond its ±: the link, not the CPU, caps it."
        )
    small = rows[-1]["summary"]
    whole = [r for r in rows if r["scenario"]["rx_buf_bytes"] >= r["scenario"]["frame_size"] + 4]
    mtu = min(whole, key=lambda r: r["scenario"]["rx_buf_bytes"])["summary"] if whole else None
    if len(rows) > 2 and mtu is not None and small is not mtu:
        if small["cycles_per_packet"] > mtu["cycles_per_packet"]:
            text += (
                f" Small chained buffers ({rows[-1]['scenario']['rx_buf_bytes']} bytes) invalidate "
                "only what the frame uses but pay a descriptor per buffer, and cost more "
                "than MTU-sized ones."
            )
        else:
            text += (
                f" Small chained buffers ({rows[-1]['scenario']['rx_buf_bytes']} bytes) cost no "
                "more than MTU-sized ones."
            )
    return text


def reading_irq_rate(experiment: Experiment, results: list[dict]) -> str:
    links = sorted({r["scenario"]["link_mbps"] for r in results})
    parts = []
    for link in links:
        at = {
            r["scenario"]["irq"]: r["summary"]
            for r in results
            if r["scenario"]["link_mbps"] == link
        }
        described = ", ".join(
            f"{irq} {_with_ci(s)} Mb/s ({_fmt(s['line_rate_pct'])}%, CPU "
            f"{_fmt(s['cpu_utilisation_pct'])}%) at {_fmt(s['irqs_per_second'], 0)} IRQs/s"
            for irq, s in at.items()
        )
        parts.append(f"at {link} Mb/s: {described}")
    text = "TX on the MicroBlaze, " + "; ".join(parts) + ". "
    slow = {
        r["scenario"]["irq"]: r["summary"]
        for r in results
        if r["scenario"]["link_mbps"] == links[0]
    }
    fast = {
        r["scenario"]["irq"]: r["summary"]
        for r in results
        if r["scenario"]["link_mbps"] == links[-1]
    }
    if len(links) > 1:
        if all(s["line_rate_pct"] >= LINE_RATE_PCT for s in slow.values()):
            text += (
                f"At {links[0]} Mb/s every strategy is at line rate: the link is the limit and "
                "interrupts only cost CPU time. "
            )
        else:
            text += f"At {links[0]} Mb/s not every strategy reaches line rate. "
    if "eop" in fast and len(fast) > 1:
        eop = fast["eop"]
        bits = results[0]["scenario"]["frame_size"] * 8
        fps = eop["throughput_mbps"] * 1e6 / bits
        text += (
            f"At {links[-1]} Mb/s one IRQ per packet takes {_fmt(eop['irqs_per_second'], 0)} "
            f"IRQs/s for {_fmt(fps, 0)} frames/s x {bits:,} bits = "
            f"{_fmt(fps * bits / 1e6)} Mb/s. "
        )
        best = max(fast, key=lambda k: fast[k]["throughput_mbps"])
        if best != "eop" and _separated(fast[best], eop):
            text += (
                f"{best} reaches {_with_ci(fast[best])} Mb/s with "
                f"{_fmt(fast[best]['irqs_per_packet'], 2)} IRQs per packet "
                f"({100 * (fast[best]['throughput_mbps'] / eop['throughput_mbps'] - 1):.0f}% "
                "more)"
            )
            if eop["cpu_utilisation_pct"] >= CPU_BOUND_PCT:
                text += (
                    f": with the CPU {_fmt(eop['cpu_utilisation_pct'])}% busy under eop, the "
                    "CPU is the cap, and an interrupt per packet spends a share of it (the USB "
                    "NIC report's one-packet-per-interrupt ceiling)."
                )
            else:
                text += f", though eop leaves the CPU {_fmt(eop['cpu_utilisation_pct'])}% busy."
        else:
            text += "No strategy beats one IRQ per packet beyond the ±: interrupts are not the cap."
    return text


READINGS: dict[str, Callable[[Experiment, list[dict]], str]] = {
    "generic": reading_generic,
    "ideal": reading_ideal,
    "fragments_irq": reading_fragments_irq,
    "tx_budget": reading_tx_budget,
    "burst_prefetch": reading_burst_prefetch,
    "rx_buffers": reading_rx_buffers,
    "irq_rate": reading_irq_rate,
}


# -- plots ------------------------------------------------------------------------------------


def _axis_label(name: str) -> str:
    return {
        "frags": "extra TX fragments per frame",
        "tx_ring": "TX ring size (descriptors)",
        "burst_beats": "DMA burst length (beats of 4 bytes)",
        "prefetch": "descriptor prefetch",
        "rx_buf_bytes": "RX buffer size (bytes)",
        "link_mbps": "link speed (Mb/s)",
        "frame_size": "frame size (bytes, no FCS)",
        "mem_latency_cycles": "memory latency (cycles per burst)",
        "tx_clean_budget": "TX clean budget (packets, 0 = unlimited)",
        "coalesce_frames": "coalescing (frames per IRQ)",
        "irq": "IRQ strategy",
    }.get(name, name)


def _value_text(name: str, value) -> str:
    if name == "tx_clean_budget" and not value:
        return "unlimited" if value == 0 else "preset"
    return str(value)


def plot_experiment(experiment: Experiment, results: list[dict], path: Path) -> None:
    """One PNG: a panel per metric, x = ``experiment.x``, a line per series combination."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = len(experiment.metrics)
    figure, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.0), squeeze=False)
    x_values = experiment.sweep[experiment.x]
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in x_values)
    series: dict = {}
    for r in results:
        key = tuple(r["scenario"][k] for k in experiment.series)
        series.setdefault(key, []).append(r)
    bar_width = 0.8 / max(len(series), 1)
    for axis, metric in zip(axes[0], experiment.metrics, strict=True):
        meta = METRICS[metric]
        for index, (key, rows) in enumerate(series.items()):
            rows = sorted(rows, key=lambda r: x_values.index(r["scenario"][experiment.x]))
            xs = [r["scenario"][experiment.x] for r in rows]
            ys = [r["summary"].get(metric) for r in rows]
            ys = [math.nan if y is None else y for y in ys]
            label = ", ".join(
                f"{k}={_value_text(k, v)}" for k, v in zip(experiment.series, key, strict=True)
            )
            if numeric:  # markers and dashes differ so overlapping lines stay visible
                style = {"marker": "os^vDx*P"[index % 8], "linestyle": ("-", "--", ":")[index % 3]}
                axis.plot(xs, ys, label=label or None, **style)
            else:  # categories (IRQ strategies...): grouped bars
                offset = (index - (len(series) - 1) / 2) * bar_width
                positions = [x_values.index(x) + offset for x in xs]
                axis.bar(positions, ys, width=bar_width, label=label or None)
        if not numeric:
            axis.set_xticks(range(len(x_values)), [str(v) for v in x_values])
        elif len(x_values) <= 8:
            axis.set_xticks(x_values)
        axis.set_xlabel(_axis_label(experiment.x))
        axis.set_ylabel(f"{meta.label} ({meta.unit})")
        axis.set_title(meta.label)
        axis.grid(True, alpha=0.3)
        axis.set_ylim(bottom=0)
        if len(series) > 1:
            axis.legend(fontsize="small")
    figure.suptitle(experiment.title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)


# -- report -----------------------------------------------------------------------------------


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.1f}"
    return "-" if value is None else str(value)


def _metric_cell(summary: dict, metric: str) -> str:
    """A table cell: throughput with its ±, and a mark on a window the rule flagged."""
    text = _cell(summary.get(metric))
    if metric == "throughput_mbps" and summary.get("throughput_ci_mbps") is not None:
        text += f" ± {_cell(summary['throughput_ci_mbps'])}"
    if metric == "throughput_mbps" and summary.get("window_ok") is False:
        text += " (short window)"
    return text


def write_report(
    path: Path,
    sweep: Sweep,
    results: list[dict],
    checks: list[CheckResult],
    plots: dict[str, str],
    notes: list[str] = (),
) -> None:
    """The Markdown report: assertions, then one section per experiment (plot, reading,
    table of its points); and the same as one self-contained page next to it (.html)."""
    failed_points = [r for r in results if r.get("status") != "ok"]
    lines = [
        f"# macdma regression: {sweep.name}",
        "",
        sweep.description,
        "",
        f"{len(results)} points, {len(failed_points)} failed. Sources hash "
        f"`{results[0]['sources'] if results else '-'}`; simulator "
        f"{', '.join(sorted({r['scenario']['sim'] for r in results})) or '-'}.",
        *[f"\n{note}" for note in notes],
        "",
        "## Assertions",
        "",
        "| | assertion | detail |",
        "| --- | --- | --- |",
    ]
    for check in checks:
        detail = check.detail.replace("|", "/")
        lines.append(f"| **{check.status}** | {check.statement} | {detail} |")
    for experiment in sweep.experiments:
        rows = [r for r in results if experiment.name in r.get("experiments", [])]
        ok = _ok(rows)
        lines += ["", f"## {experiment.title}", ""]
        if experiment.description:
            lines += [experiment.description, ""]
        if experiment.name in plots:
            lines += [f"![{experiment.title}]({plots[experiment.name]})", ""]
        lines += [READINGS[experiment.reading](experiment, ok) if ok else "No point finished."]
        swept = list(experiment.sweep)
        lines += [
            "",
            "| "
            + " | ".join(
                swept + [METRICS[m].label + f" ({METRICS[m].unit})" for m in experiment.metrics]
            )
            + " | point |",
            "| " + " | ".join("---" for _ in swept + list(experiment.metrics)) + " | --- |",
        ]
        for r in rows:
            summary = r.get("summary", {})
            values = [_cell(r["scenario"][k]) for k in swept]
            values += [
                _metric_cell(summary, m) if r.get("status") == "ok" else "FAILED"
                for m in experiment.metrics
            ]
            lines.append("| " + " | ".join(values) + f" | `{r['key']}` |")
        fixed = ", ".join(
            f"{k}={v}"
            for k, v in {**sweep.defaults, **experiment.fixed}.items()
            if k not in experiment.sweep
        )
        lines += ["", f"Fixed: {fixed}."]
    path.write_text("\n".join(lines) + "\n")
    from .report_html import write_html_report

    write_html_report(path.with_suffix(".html"), sweep, results, checks, plots, notes)


# -- the command --------------------------------------------------------------------------------


def add_regress_parser(commands) -> None:
    from .cluster import parse_scheduler
    from .results_db import add_db_argument
    from .simulators import SIMULATORS

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
        "--out", type=Path, help=f"output folder (default: {DEFAULT_OUT}/<sweep name>)"
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
    from .cluster import ClusterError, DaskPool, LocalPool
    from .results_db import ResultsDb, ResultsDbError, load_run, run_set_of

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
        points = expand(sweep, sources, sim=args.sim)
        # Read the baseline before this run overwrites anything (it may be --out itself).
        baseline = load_run(args.baseline, args.db) if args.baseline else None
    except ValueError as error:  # ResultsDbError is a ValueError
        parser.error(str(error))
    out = args.out or DEFAULT_OUT / sweep.name
    out.mkdir(parents=True, exist_ok=True)
    todo, done = plan(points, out, force=args.force)
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
        interrupted = _run_points(todo, done, out, sources, pool)
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
    return code


def _report_baseline(report: Path, baseline, current) -> None:
    """Append "Changed since the baseline" to the report and print its one-line summary."""
    from .results_db import compare, comparison_markdown

    comparison = compare(baseline, current)
    with open(report, "a") as handle:
        handle.write("\n## Changed since the baseline\n\n")
        handle.write("\n".join(comparison_markdown(comparison)) + "\n")
    from .report_html import add_comparison

    add_comparison(report.with_suffix(".html"), comparison)
    print(
        f"baseline {baseline.label}: {comparison.compared} points compared, "
        f"{len(comparison.changes)} changes beyond {100 * comparison.tolerance:g}% "
        f"(report.md, 'Changed since the baseline')"
    )


def _run_points(todo: list[Point], done: dict, out: Path, sources: str, pool) -> bool:
    """Run ``todo`` on ``pool`` (sim/cluster.py), storing each result as it arrives (and
    the log a remote worker sent back); True when interrupted."""
    bar = PointsProgress(len(todo))
    futures = {}
    for p in todo:
        expected = {"sources": sources, "cpu_digest": cpu_digest(p.scenario)}
        log_path = out / "logs" / f"{p.key}.log"
        futures[pool.submit(p.scenario.to_json(), p.key, log_path, expected)] = p
    pending = set(futures)
    try:
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                point = futures[future]
                try:
                    result = future.result()
                except Exception as error:  # a worker died or the task was lost
                    result = {"status": "failed", "error": f"worker: {error!r}"}
                log = result.pop("log", None)
                if log is not None:
                    log_path = out / "logs" / f"{point.key}.log"
                    log_path.parent.mkdir(parents=True, exist_ok=True)
                    log_path.write_text(log)
                done[point.key] = store(out, point, result, sources)
                bar.advance(point.scenario.describe(), result["status"] == "ok")
    except KeyboardInterrupt:
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


def _finish(
    sweep: Sweep, results: list[dict], out: Path, total: int, wall: float, interrupted: bool
) -> int:
    checks = check_results(results)
    plots = {}
    for experiment in sweep.experiments:
        rows = _ok(r for r in results if experiment.name in r.get("experiments", []))
        if rows and experiment.x:
            relative = f"plots/{experiment.name}.png"
            plot_experiment(experiment, rows, out / relative)
            plots[experiment.name] = relative
    notes = []
    if len(results) < total:
        notes.append(f"**Incomplete:** {total - len(results)} of {total} points not run yet.")
    write_csv(out / "results.csv", results)
    write_report(out / "report.md", sweep, results, checks, plots, notes)
    failed = [r for r in results if r.get("status") != "ok"]
    print(f"\n{len(results)}/{total} points in {out} ({duration_text(wall)} wall this run)")
    for check in checks:
        print(f"  {check.status:4} {check.name}: {check.detail[:160]}")
    for r in failed:
        print(f"  failed point {r['key']}: see {out / 'logs' / (r['key'] + '.log')}")
    print(
        f"report: {out / 'report.md'} (and .html)  csv: {out / 'results.csv'}  "
        f"plots: {out / 'plots'}"
    )
    if interrupted:
        return 130
    if failed or any(c.status == "FAIL" for c in checks):
        return 1
    return 0
