"""Field reports in a sweep: an experiment may stand for a field report
(``report = "<id>"``) and name some of its points as the report's conditions
(``[[experiment.condition]]``: ``name``, ``at``, an optional calibration ``figure``).

A condition with a figure is a calibration: it gets a "within
:data:`CALIBRATION_TOLERANCE_PCT`" expectation per figure metric. One without is a
prediction: no expectation (its figure is not known here). ``macdma regress`` writes
``field_reports.json`` (:func:`write_field_reports_json`), one object per (report,
condition), and the report opens with their table (:func:`field_reports_table`).

A report measured both ways (a router's download and upload) names a second Mb/s metric,
``mbps_up_metric``: its conditions then have ``mbps_up`` beside ``mbps`` (the upload
figure, and the model's number for it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .expectations import Within
from .metrics import CPU_PCT_ONE_CORE, cpu_pct
from .selection import check_at, declaration_error, matches, points_selected

#: A calibration condition must land within this share of its figure (issue: "calibration
#: conditions within 10% of their figures").
CALIBRATION_TOLERANCE_PCT = 10.0
#: The figures a condition may give, as field_reports.json names them (``mbps_up`` only
#: for an experiment with an ``mbps_up_metric``).
FIGURE_KEYS = ("mbps", "mbps_up", "irqs_per_second", "cpu_pct")
#: The figure keys that are rates in Mb/s, counted as the report's tool counts them.
MBPS_KEYS = ("mbps", "mbps_up")
#: An ``mbps`` figure that is "the link's full line rate" rather than a number.
LINE_RATE_FIGURE = "line rate"
#: The Mb/s metrics ``mbps_metric`` may name, with their share-of-line-rate metric.
MBPS_METRICS = {
    "throughput_mbps": "line_rate_pct",
    "tx_mbps": "tx_line_rate_pct",
    "rx_mbps": "rx_line_rate_pct",
}
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


@dataclass(frozen=True)
class Condition:
    """One condition of a field report: the point ``at`` selects in ``experiment``;
    ``figure`` maps :data:`FIGURE_KEYS` to the report's numbers (empty: a prediction);
    ``mbps_metric`` is the metric reported as ``mbps``; ``payload_bytes`` (None: the whole
    frame) the bytes of each ``frame_size``-byte frame the report's tool counts, e.g. 1448
    of a 1514-byte TCP segment for iperf, so ``mbps`` is ``mbps_metric`` x payload_bytes /
    frame_size; ``mbps_up_metric`` (None: no upload figure) the metric reported as
    ``mbps_up``, counted the same way."""

    report: str
    name: str
    experiment: str
    at: dict
    figure: dict
    mbps_metric: str = "throughput_mbps"
    payload_bytes: int | None = None
    frame_size: int | None = None
    mbps_up_metric: str | None = None

    @property
    def payload_share(self) -> float:
        """What share of the frame bytes ``mbps`` counts (1.0 without ``payload_bytes``)."""
        if self.payload_bytes is None:
            return 1.0
        return self.payload_bytes / self.frame_size

    @property
    def calibration(self) -> bool:
        return bool(self.figure)

    @property
    def keys(self) -> tuple[str, ...]:
        """The figure keys this condition reports (``mbps_up`` only with an upload metric)."""
        return tuple(k for k in FIGURE_KEYS if k != "mbps_up" or self.mbps_up_metric)

    def metric(self, key: str) -> str:
        """The summary metric behind figure ``key``."""
        if key == "mbps":
            return self.mbps_metric
        if key == "mbps_up":
            if self.mbps_up_metric is None:
                raise ValueError(f"{self.report} {self.name}: no mbps_up_metric")
            return self.mbps_up_metric
        return key


def _figure_text(key: str, value) -> str:
    if value == LINE_RATE_FIGURE:
        return LINE_RATE_FIGURE
    unit = {
        "mbps": "Mb/s", "mbps_up": "Mb/s up", "irqs_per_second": "IRQs/s", "cpu_pct": "% CPU",
    }[key]  # fmt: skip
    return f"{value:,g} {unit}"


def parse_conditions(
    where: str, table: dict, experiment: str, sweep: dict, base: dict
) -> tuple[str | None, tuple[Condition, ...], tuple[Within, ...]]:
    """(report id, conditions, calibration expectations) of one ``[[experiment]]`` table;
    ValueError naming ``where`` and the bad key."""
    report = table.get("report")
    raw = table.get("condition", [])
    mbps_metric = table.get("mbps_metric", "throughput_mbps")
    mbps_up_metric = table.get("mbps_up_metric")
    payload_bytes = table.get("payload_bytes")
    if report is None:
        misplaced = ["condition"] if raw else []
        misplaced += [
            key for key in ("mbps_metric", "mbps_up_metric", "payload_bytes") if key in table
        ]
        if misplaced:
            raise declaration_error(where, f'{misplaced[0]} needs report = "<field report id>"')
        return None, (), ()
    if not isinstance(report, str) or not ID_PATTERN.match(report):
        raise declaration_error(
            f"{where} report", f"must be letters, digits, '-', '_' or '.', got {report!r}"
        )
    if mbps_metric not in MBPS_METRICS:
        raise declaration_error(
            f"{where} mbps_metric",
            f"must be one of {', '.join(MBPS_METRICS)}, got {mbps_metric!r}",
        )
    if mbps_up_metric is not None and mbps_up_metric not in MBPS_METRICS:
        raise declaration_error(
            f"{where} mbps_up_metric",
            f"must be one of {', '.join(MBPS_METRICS)}, got {mbps_up_metric!r}",
        )
    frame_size = base.get("frame_size")
    if payload_bytes is not None:
        if "frame_size" in sweep or frame_size is None:
            raise declaration_error(
                f"{where} payload_bytes", "needs frame_size fixed in the experiment (not swept)"
            )
        whole = isinstance(payload_bytes, int) and not isinstance(payload_bytes, bool)
        if not whole or not 1 <= payload_bytes <= frame_size:
            raise declaration_error(
                f"{where} payload_bytes",
                f"must be a whole number of bytes 1..frame_size ({frame_size}), "
                f"got {payload_bytes!r}",
            )
    if not isinstance(raw, list) or not raw:
        raise declaration_error(where, "report needs at least one [[experiment.condition]]")
    conditions, expectations, names = [], [], set()
    for index, entry in enumerate(raw):
        here = f"{where} condition {index + 1}"
        if not isinstance(entry, dict):
            raise declaration_error(here, f"must be a table, got {entry!r}")
        extra = sorted(set(entry) - {"name", "at", "figure"})
        if extra:
            raise declaration_error(
                here, f"unknown key(s) {', '.join(extra)}; known: at, figure, name"
            )
        name = entry.get("name")
        if not isinstance(name, str) or not ID_PATTERN.match(name):
            raise declaration_error(
                f"{here} name", f"must be letters, digits, '-', '_' or '.', got {name!r}"
            )
        here = f"{where} condition {name!r}"
        if name in names:
            raise declaration_error(here, "name used twice")
        names.add(name)
        at = check_at(here, entry.get("at", {}), sweep, base)
        count = points_selected(at, sweep)
        if count != 1:
            free = [k for k in sweep if k not in at]
            raise declaration_error(
                f"{here} at",
                f"selects {count} points, not one: give a value for {', '.join(free)}",
            )
        figure = entry.get("figure", {})
        if not isinstance(figure, dict):
            raise declaration_error(f"{here} figure", f"must be a table, got {figure!r}")
        for key, value in figure.items():
            if key not in FIGURE_KEYS:
                raise declaration_error(
                    f"{here} figure", f"unknown key {key!r}; known: {', '.join(FIGURE_KEYS)}"
                )
            if key == "mbps_up" and mbps_up_metric is None:
                raise declaration_error(
                    f"{here} figure.mbps_up",
                    "needs the experiment's mbps_up_metric (the metric the upload is read from)",
                )
            line_rate = key == "mbps" and value == LINE_RATE_FIGURE
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not line_rate and not (number and value > 0):
                allowed = f" or {LINE_RATE_FIGURE!r}" if key == "mbps" else ""
                raise declaration_error(
                    f"{here} figure.{key}", f"must be a number > 0{allowed}, got {value!r}"
                )
        condition = Condition(
            report, name, experiment, at, dict(figure), mbps_metric, payload_bytes, frame_size,
            mbps_up_metric,
        )  # fmt: skip
        conditions.append(condition)
        for key, value in figure.items():
            context = f"{report} {name} (calibration)"
            common = {
                "name": f"{report}.{name}.{key}",
                "experiment": experiment,
                "at": at,
                "context": context,
                "tolerance_pct": CALIBRATION_TOLERANCE_PCT,
            }
            if value == LINE_RATE_FIGURE:
                # 100% of line rate, measured as the share of it (the Mb/s of a full link
                # depends on the frame size and the link).
                expectation = Within(
                    **common, metric=MBPS_METRICS[mbps_metric], value=100.0, shown="line rate"
                )
            elif key in MBPS_KEYS and payload_bytes is not None:
                # The report counts payload; the metric counts frame bytes: compare the
                # figure converted to frame bytes.
                frames = float(value) / condition.payload_share
                shown = (
                    f"{frames:,.1f} Mb/s of {frame_size}-byte frames "
                    f"(the report's {value:,g} Mb/s of {payload_bytes}-byte payload)"
                )
                expectation = Within(
                    **common, metric=condition.metric(key), value=frames, shown=shown
                )
            else:
                expectation = Within(**common, metric=condition.metric(key), value=float(value))
            expectations.append(expectation)
    return report, tuple(conditions), tuple(expectations)


@dataclass(frozen=True)
class FieldReportRow:
    """What the model gives for one condition (None where its point did not finish)."""

    condition: Condition
    result: dict | None

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.get("status") == "ok"

    def value(self, key: str) -> float | None:
        if not self.ok:
            return None
        if key == "cpu_pct":
            return cpu_pct(self.result["metrics"])[0]
        value = self.result["summary"].get(self.condition.metric(key))
        if key in MBPS_KEYS and value is not None:
            value *= self.condition.payload_share
        return value

    def cpu_pct_source(self) -> str | None:
        return cpu_pct(self.result["metrics"])[1] if self.ok else None

    def as_json(self) -> dict:
        return {
            "report": self.condition.report,
            "condition": self.condition.name,
            **{key: self.value(key) for key in self.condition.keys},
        }


def conditions_of(sweep) -> list[Condition]:
    """Every condition of every report of ``sweep``: report by report (in the order they
    first appear), each report's conditions in file order."""
    conditions = [c for experiment in sweep.experiments for c in experiment.conditions]
    order = list(dict.fromkeys(c.report for c in conditions))
    return sorted(conditions, key=lambda c: order.index(c.report))


def field_report_rows(sweep, results: list[dict]) -> list[FieldReportRow]:
    """One row per condition of ``sweep``, with its point's stored result when there is one."""
    rows = []
    for condition in conditions_of(sweep):
        found = [
            r
            for r in results
            if condition.experiment in r.get("experiments", [])
            and matches(r["scenario"], condition.at)
        ]
        rows.append(FieldReportRow(condition, found[0] if found else None))
    return rows


def write_field_reports_json(path: Path, rows: list[FieldReportRow]) -> None:
    """``field_reports.json``: a list of {report, condition, mbps, irqs_per_second,
    cpu_pct} (and ``mbps_up`` for a report with an upload figure), null where a point did
    not finish."""
    path.write_text(json.dumps([row.as_json() for row in rows], indent=2) + "\n")


def _model_cell(row: FieldReportRow, key: str) -> str:
    value = row.value(key)
    if value is None:
        return "FAILED" if row.result is not None else "not run"
    text = f"{value:,.1f}" if key != "irqs_per_second" else f"{value:,.0f}"
    if key == "mbps" and "mbps_up" in row.condition.keys:
        text += f" down, {row.value('mbps_up'):,.1f} up"
    return text


def _calibration_cell(row: FieldReportRow) -> str:
    if not row.condition.calibration:
        return "prediction"
    parts = []
    for key, figure in row.condition.figure.items():
        text = _figure_text(key, figure)
        if figure == LINE_RATE_FIGURE:
            share = (
                row.result["summary"].get(MBPS_METRICS[row.condition.mbps_metric])
                if row.ok
                else None
            )
            model = row.value("mbps")
            if share and model is not None:
                text += f" ({model / share * 100:,.1f} Mb/s; model at {share:.1f}%)"
        else:
            model = row.value(key)
            if model is not None:
                text += f" (model {100 * (model / figure - 1):+.1f}%)"
        parts.append(text)
    return "; ".join(parts)


FIELD_REPORT_HEADERS = ["report", "condition", "Mb/s", "IRQs/s", "CPU %", "calibration figure"]
#: The figure keys the table has a column for (``mbps_up`` shares the Mb/s column).
TABLE_KEYS = ("mbps", "irqs_per_second", "cpu_pct")


def field_reports_table(rows: list[FieldReportRow]) -> list[list[str]]:
    """The report's "Field reports" table: per condition the model's Mb/s, IRQs/s and
    CPU %, beside the report's calibration figure (or "prediction")."""
    return [
        [
            row.condition.report,
            row.condition.name,
            *(_model_cell(row, key) for key in TABLE_KEYS),
            _calibration_cell(row),
        ]
        for row in rows
    ]


def cpu_pct_note(rows: list[FieldReportRow]) -> str:
    """Which CPU figure the table's CPU % is, per source found among the rows."""
    sources = {row.cpu_pct_source() for row in rows} - {None}
    if not sources:
        return ""
    if sources == {CPU_PCT_ONE_CORE}:
        return (
            "CPU %: the runs report no all-cores figure (every CPU modelled has one core), "
            "so this is the single core's work utilisation (`cpu_utilisation_pct`)."
        )
    if CPU_PCT_ONE_CORE in sources:
        return (
            "CPU %: busy over all cores (the run's `cpu_pct`) where the run reports it, "
            "else the single core's work utilisation."
        )
    return "CPU %: busy over all cores (the run's `cpu_pct`), 100 = every core busy."
