"""The points of a sweep and their stored results: :func:`expand` turns a sweep into
points (one per distinct scenario, keyed by :func:`~.keys.point_key`), :func:`plan`
splits them into those to run and those whose result is stored and still valid, and
:func:`store` writes a finished point's JSON (atomically) as soon as it arrives."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..run.knobs import knobs_of, scenario_from_values, unneeded
from ..run.scenario import Scenario
from .keys import cpu_digest, point_key
from .metrics import summarise
from .selection import declaration_error


@dataclass
class Point:
    """One scenario of a sweep; ``experiments`` lists every experiment it belongs to
    (a scenario that two experiments share runs once). ``key`` names its JSON file."""

    key: str
    scenario: Scenario
    experiments: list[str] = field(default_factory=list)


def _without_unneeded(values: dict, swept: list[str], where: str) -> tuple[dict, set[str]]:
    """``values`` less the knobs that do nothing at this point (``coalesce_frames`` where
    the swept ``irq`` is ``eop``: a ``fixed`` or ``[defaults]`` value applies where the
    knob acts, sim/run/knobs.py ``needs``), and the names left out. A swept knob that does
    nothing is a ValueError: sweeping it would make points that differ in nothing."""
    dropped = set()
    for conflict in unneeded(Scenario, values):
        if conflict.name in swept:
            raise declaration_error(where, str(conflict))
        dropped.add(conflict.name)
    return {k: v for k, v in values.items() if k not in dropped}, dropped


def expand(sweep, sources: str, sim: str | None = None, wire: str | None = None) -> list[Point]:
    """Every point of ``sweep`` in file order (``sim`` and ``wire`` override the simulator
    and the GMII wire); ValueError naming the experiment when a combination is not a valid
    Scenario, or when a ``fixed`` knob does nothing at any of its points."""
    points: dict[str, Point] = {}
    for experiment in sweep.experiments:
        where = f"experiment {experiment.name!r}"
        keys = list(experiment.sweep)
        unused = set(experiment.fixed)  # fixed knobs that acted at no point yet
        for combination in itertools.product(*(experiment.sweep[k] for k in keys)):
            values = {
                **sweep.defaults,
                **experiment.fixed,
                **dict(zip(keys, combination, strict=True)),
            }
            if sim is not None:
                values["sim"] = sim
            if wire is not None:
                values["wire"] = wire
            values, dropped = _without_unneeded(values, keys, where)
            unused &= dropped
            try:
                scenario = scenario_from_values(Scenario, values)
            except (TypeError, ValueError) as error:
                raise declaration_error(where, str(error)) from None
            key = point_key(scenario, sources)
            point = points.setdefault(key, Point(key, scenario))
            if experiment.name not in point.experiments:
                point.experiments.append(experiment.name)
        if unused:
            name = sorted(unused)[0]
            other, allowed = knobs_of(Scenario)[name][0].needs
            raise declaration_error(
                f"{where} fixed",
                f"{name} = {experiment.fixed[name]!r} has no effect at any point: it needs "
                f"{other} to be one of {', '.join(map(str, allowed))}",
            )
    return list(points.values())


def point_path(out: Path, key: str) -> Path:
    return out / "points" / f"{key}.json"


def plan(
    points: list[Point],
    out: Path,
    force: bool = False,
    on_unusable: Callable[[Path, str], None] | None = None,
) -> tuple[list[Point], dict]:
    """Split ``points`` into (to run, {key: stored result}): a point is skipped when its
    JSON exists and passed (failed points always rerun); ``force`` reruns every point.
    A skipped point's summary is summarised again from its stored metrics. A stored JSON
    that cannot be read or summarised (cut short, hand-edited) is run again, and named to
    ``on_unusable`` (its path and why) rather than stopping the sweep."""
    done = {}
    todo = []
    for point in points:
        path = point_path(out, point.key)
        stored = None
        if not force and path.exists():
            try:
                stored = json.loads(path.read_text())
                if stored.get("status") == "ok":
                    # The summary is derived from the stored metrics by this package's
                    # code, which is not part of the key: derive it again, so a new metric
                    # covers old points.
                    stored["summary"] = summarise(stored["metrics"])
            except (OSError, ValueError, LookupError, TypeError, AttributeError) as error:
                if on_unusable is not None:
                    on_unusable(path, f"{type(error).__name__}: {error}")
                stored = None
        if stored is not None and stored.get("status") == "ok":
            stored["experiments"] = point.experiments
            done[point.key] = stored
        else:
            todo.append(point)
    return todo, done


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
