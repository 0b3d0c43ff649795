"""``results.csv``: one row per point (key, experiments, status, every scenario field,
every metric of :data:`~.metrics.METRICS`)."""

from __future__ import annotations

import csv
from pathlib import Path

from .keys import SCENARIO_FIELDS, UNHASHED_FIELDS
from .metrics import METRICS


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
