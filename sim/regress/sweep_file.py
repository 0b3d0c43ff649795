"""The sweep file (TOML, docs/regression.md): ``[defaults]`` Scenario fields, then
``[[experiment]]`` tables, each with ``fixed`` fields and a ``sweep`` of field -> values
whose cross product gives its points, its plot and reading, its expectations
(``[[experiment.expect]]``) and, for an experiment that stands for a field report, its
``report`` id and conditions (``[[experiment.condition]]``). Every entry is validated
when the file is read; a bad one is a ValueError naming the file, the experiment and the
key."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..run.scenario import checked_cpu
from .expectations import Expectation, parse_expectation
from .field_reports import Condition, parse_conditions
from .metrics import METRICS
from .readings import READINGS
from .selection import check_fields, declaration_error

SWEEP_DIR = Path(__file__).resolve().parent / "sweeps"
DEFAULT_SWEEP = SWEEP_DIR / "default.toml"
QUICK_SWEEP = SWEEP_DIR / "quick.toml"
FIELD_REPORTS_SWEEP = SWEEP_DIR / "field-reports.toml"

TOP_KEYS = ("name", "description", "min_tx_window_frames", "defaults", "experiment")
EXPERIMENT_KEYS = (
    "name",
    "title",
    "description",
    "reading",
    "x",
    "series",
    "metrics",
    "fixed",
    "sweep",
    "expect",
    "report",
    "mbps_metric",
    "mbps_up_metric",
    "payload_bytes",
    "condition",
)


@dataclass(frozen=True)
class Experiment:
    """One ``[[experiment]]`` of a sweep.

    Members: ``name`` (identifier, used for plot file names), ``title``, ``description``,
    ``fixed`` (Scenario fields for every point), ``sweep`` (field -> list of values; the
    cross product gives the points, in file order), ``x`` (the swept field on the plots'
    x axis), ``series`` (swept fields that make one line each; default the other swept
    fields), ``metrics`` (:data:`METRICS` names, one plot panel each), ``reading`` (the
    built-in paragraph writer, see :data:`READINGS`; default ``generic``),
    ``expectations`` (declared, then the calibration ones of its conditions), ``report``
    (the field report it stands for, or None) and ``conditions`` (that report's).
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
    expectations: tuple[Expectation, ...] = ()
    report: str | None = None
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep file: ``name``, ``description``, ``defaults`` and ``experiments``;
    ``min_tx_window_frames`` (0: no check) is the fewest TX frames a point's measurement
    window may hold (the ``tx_window`` check)."""

    name: str
    description: str
    defaults: dict
    experiments: tuple[Experiment, ...]
    path: Path | None = None
    min_tx_window_frames: int = 0

    @property
    def reports(self) -> tuple[str, ...]:
        """The field reports its experiments stand for, in file order."""
        return tuple(dict.fromkeys(e.report for e in self.experiments if e.report))


def _table(where: str, key: str, value) -> dict:
    """``value`` (the ``key`` entry) as a TOML table, or a ValueError naming it."""
    if not isinstance(value, dict):
        raise declaration_error(where, f"{key} must be a table, got {value!r}")
    return dict(value)


def _names(where: str, key: str, value) -> tuple[str, ...]:
    """``value`` (the ``key`` entry) as a list of names, or a ValueError naming it."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise declaration_error(where, f"{key} must be a list of names, got {value!r}")
    return tuple(value)


def _text(where: str, key: str, value) -> str:
    if not isinstance(value, str):
        raise declaration_error(where, f"{key} must be a string, got {value!r}")
    return value


def _experiment(source: str, index: int, table: dict, defaults: dict) -> Experiment:
    """The ``index``-th ``[[experiment]]`` table of the sweep file ``source``."""
    where = f"{source} experiment {index + 1}"
    table = _table(where, "an [[experiment]]", table)
    extra = sorted(set(table) - set(EXPERIMENT_KEYS))
    if extra:
        raise declaration_error(
            where, f"unknown key(s) {', '.join(extra)}; known: {', '.join(EXPERIMENT_KEYS)}"
        )
    exp_name = table.get("name")
    if not isinstance(exp_name, str) or not exp_name.replace("_", "").isalnum():
        raise declaration_error(where, f"name must be letters, digits and _; got {exp_name!r}")
    where = f"{source} experiment {exp_name!r}"
    fixed = _table(where, "fixed", table.get("fixed", {}))
    sweep = _table(where, "sweep", table.get("sweep", {}))
    check_fields(f"{where} fixed", fixed)
    check_fields(f"{where} sweep", sweep)
    for key, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise declaration_error(where, f"sweep.{key} must be a non-empty list, got {values!r}")
    base = {**defaults, **fixed}
    try:
        # The values as the scenarios will hold them (a CPU file's path made absolute),
        # so the plots, tables and declarations find each point's cpu among them.
        if "cpu" in sweep:
            sweep["cpu"] = [checked_cpu(value) for value in sweep["cpu"]]
        if "cpu" in base:
            base["cpu"] = checked_cpu(base["cpu"])
    except ValueError as error:
        raise declaration_error(where, str(error)) from None
    x = _text(where, "x", table["x"]) if "x" in table else None
    x = x or (next(iter(sweep)) if sweep else None)
    if x is not None and x not in sweep:
        raise declaration_error(
            where, f"x = {x!r} is not a swept field ({', '.join(sweep) or 'none'})"
        )
    series = _names(where, "series", table.get("series", [k for k in sweep if k != x]))
    for key in series:
        if key not in sweep or key == x:
            raise declaration_error(where, f"series field {key!r} must be swept and not the x axis")
    metrics = _names(where, "metrics", table.get("metrics", ["throughput_mbps"]))
    for metric in metrics:
        if metric not in METRICS:
            raise declaration_error(
                where, f"unknown metric {metric!r}; known: {', '.join(METRICS)}"
            )
    reading = _text(where, "reading", table.get("reading", "generic"))
    if reading not in READINGS:
        raise declaration_error(where, f"unknown reading {reading!r}; known: {', '.join(READINGS)}")
    raw = table.get("expect", [])
    if not isinstance(raw, list):
        raise declaration_error(f"{where} expect", "must be [[experiment.expect]] tables")
    expectations = [
        parse_expectation(where, entry, exp_name, sweep, base, index)
        for index, entry in enumerate(raw)
    ]
    report, conditions, calibrations = parse_conditions(where, table, exp_name, sweep, base)
    return Experiment(
        name=exp_name,
        title=_text(where, "title", table.get("title", exp_name)),
        description=_text(where, "description", table.get("description", "")),
        fixed=fixed,
        sweep=sweep,
        x=x or "",
        series=series,
        metrics=metrics,
        reading=reading,
        expectations=(*expectations, *calibrations),
        report=report,
        conditions=conditions,
    )


def parse_sweep(data: dict, name: str = "sweep", path: Path | None = None) -> Sweep:
    """Validate a sweep's TOML ``data`` (ValueError naming the file or ``name``, the
    experiment and the bad entry)."""
    where = str(path) if path is not None else name
    extra = sorted(set(data) - set(TOP_KEYS))
    if extra:
        raise declaration_error(
            where, f"unknown key(s) {', '.join(extra)}; known: {', '.join(TOP_KEYS)}"
        )
    defaults = _table(where, "defaults", data.get("defaults", {}))
    check_fields(f"{where} [defaults]", defaults)
    min_tx_window = data.get("min_tx_window_frames", 0)
    if isinstance(min_tx_window, bool) or not isinstance(min_tx_window, int) or min_tx_window < 0:
        raise declaration_error(
            f"{where} min_tx_window_frames",
            f"must be a whole number of frames >= 0, got {min_tx_window!r}",
        )
    raw = data.get("experiment", [])
    if not isinstance(raw, list) or not raw:
        raise declaration_error(where, "needs at least one [[experiment]] table")
    experiments: list[Experiment] = []
    for index, table in enumerate(raw):
        experiment = _experiment(where, index, table, defaults)
        here = f"{where} experiment {experiment.name!r}"
        if any(e.name == experiment.name for e in experiments):
            raise declaration_error(here, "name used twice")
        taken = {x.name: e.name for e in experiments for x in e.expectations}
        for expectation in experiment.expectations:
            if expectation.name in taken:
                raise declaration_error(
                    f"{here} expect",
                    f"name {expectation.name!r} is already used by experiment "
                    f"{taken[expectation.name]!r}",
                )
        mine = [x.name for x in experiment.expectations]
        doubled = sorted({n for n in mine if mine.count(n) > 1})
        if doubled:
            raise declaration_error(
                f"{here} expect",
                f"name(s) {', '.join(map(repr, doubled))} used twice: give each a name",
            )
        conditions = {(c.report, c.name): e.name for e in experiments for c in e.conditions}
        for condition in experiment.conditions:
            other = conditions.get((condition.report, condition.name))
            if other is not None:
                raise declaration_error(
                    f"{here} condition {condition.name!r}",
                    f"report {condition.report!r} already has this condition in experiment "
                    f"{other!r}",
                )
        experiments.append(experiment)
    return Sweep(
        name=str(data.get("name", name)),
        description=str(data.get("description", "")),
        defaults=defaults,
        experiments=tuple(experiments),
        path=path,
        min_tx_window_frames=min_tx_window,
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
