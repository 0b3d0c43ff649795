"""Which points a declaration means: ``at`` tables (scenario field -> value) in a sweep
file, checked against the experiment's points when the file is read, and matched against
stored results when the report is written."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from ..run.scenario import Scenario, checked_cpu
from .keys import SCENARIO_FIELDS

SCENARIO_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Scenario)}


def declaration_error(where: str, message: str) -> ValueError:
    """The error of a bad sweep-file entry: ``where`` names the file, experiment and key."""
    return ValueError(f"{where}: {message}")


def check_fields(where: str, values: dict) -> None:
    """ValueError naming every key of ``values`` that is not a Scenario field."""
    unknown = sorted(set(values) - set(SCENARIO_FIELDS))
    if unknown:
        raise declaration_error(
            where,
            f"unknown scenario field(s) {', '.join(unknown)}; known: {', '.join(SCENARIO_FIELDS)}",
        )


def check_at(where: str, at: object, sweep: dict, base: dict) -> dict:
    """``at`` validated for an experiment whose points are ``base`` (defaults and fixed
    fields) with ``sweep`` (field -> values) crossed in: every key a Scenario field, every
    value one that some point has (a swept value, or the point's fixed value)."""
    if not isinstance(at, dict):
        raise declaration_error(where, f"at must be a table of field = value, got {at!r}")
    check_fields(f"{where} at", at)
    checked = {}
    for key, value in at.items():
        if key == "cpu":
            try:
                value = checked_cpu(value)
            except ValueError as error:
                raise declaration_error(f"{where} at", str(error)) from None
        if key in sweep:
            if value not in sweep[key]:
                raise declaration_error(
                    f"{where} at.{key}",
                    f"{value!r} is not a swept value of {key} ({', '.join(map(str, sweep[key]))})",
                )
        else:
            fixed = base.get(key, SCENARIO_DEFAULTS[key])
            if value != fixed:
                raise declaration_error(
                    f"{where} at.{key}",
                    f"{value!r} matches no point: {key} is not swept and every point has {fixed!r}",
                )
        checked[key] = value
    return checked


def points_selected(at: dict, sweep: dict) -> int:
    """How many of the experiment's points ``at`` selects."""
    return math.prod(len(values) for key, values in sweep.items() if key not in at)


def matches(scenario: dict, at: dict) -> bool:
    return all(scenario.get(k) == v for k, v in at.items())


def select(results: Iterable[dict], at: dict) -> list[dict]:
    """The results whose scenario has every value of ``at``."""
    return [r for r in results if matches(r["scenario"], at)]


def ok(results: Iterable[dict]) -> list[dict]:
    """The results of points that ran to the end."""
    return [r for r in results if r.get("status") == "ok"]


def grouped(results: Iterable[dict], fields: Iterable[str]) -> dict[tuple, list[dict]]:
    """Results grouped by their values of ``fields`` (in order of first appearance)."""
    fields = tuple(fields)
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault(tuple(r["scenario"].get(k) for k in fields), []).append(r)
    return groups


def at_text(at: dict) -> str:
    """``frags=5, irq=eop``; "every point" for an empty table."""
    return ", ".join(f"{k}={v}" for k, v in at.items()) or "every point"
