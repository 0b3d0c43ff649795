"""``report.md`` (and, through :mod:`.report_html`, ``report.html``): the field reports'
table when the sweep has any, the assertions with PASS/FAIL, then one section per
experiment (plot, reading, table of its points)."""

from __future__ import annotations

from pathlib import Path

from .expectations import CheckResult
from .field_reports import (
    FIELD_REPORT_HEADERS,
    FieldReportRow,
    cpu_pct_note,
    field_reports_table,
)
from .metrics import METRICS
from .readings import READINGS
from .selection import ok


def cell(value) -> str:
    """A number as a table shows it (thousands separated, 1 or 2 decimals)."""
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.1f}"
    return "-" if value is None else str(value)


def metric_cell(summary: dict, metric: str) -> str:
    """A table cell: throughput with its ±, and a mark on a window the rule flagged."""
    text = cell(summary.get(metric))
    if metric == "throughput_mbps" and summary.get("throughput_ci_mbps") is not None:
        text += f" ± {cell(summary['throughput_ci_mbps'])}"
    if metric == "throughput_mbps" and summary.get("window_ok") is False:
        text += " (short window)"
    return text


def experiment_rows(experiment, results: list[dict]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of an experiment's table: swept fields, metrics, point key."""
    swept = list(experiment.sweep)
    headers = swept + [f"{METRICS[m].label} ({METRICS[m].unit})" for m in experiment.metrics]
    rows = []
    for r in results:
        if experiment.name not in r.get("experiments", []):
            continue
        summary = r.get("summary", {})
        values = [cell(r["scenario"][k]) for k in swept]
        values += [
            metric_cell(summary, m) if r.get("status") == "ok" else "FAILED"
            for m in experiment.metrics
        ]
        rows.append(values + [f"{r['key']}"])
    return headers + ["point"], rows


def experiment_reading(experiment, results: list[dict]) -> str:
    rows = ok(r for r in results if experiment.name in r.get("experiments", []))
    return READINGS[experiment.reading](experiment, rows) if rows else "No point finished."


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    def line(values):
        return "| " + " | ".join(str(v).replace("|", "/") for v in values) + " |"

    return [line(headers), line(["---"] * len(headers)), *(line(row) for row in rows)]


def write_report(
    path: Path,
    sweep,
    results: list[dict],
    checks: list[CheckResult],
    plots: dict[str, str],
    notes: list[str] = (),
    field_reports: list[FieldReportRow] = (),
) -> None:
    """The Markdown report: field reports (when the sweep has conditions), assertions,
    then one section per experiment (plot, reading, table of its points); and the same as
    one self-contained page next to it (.html)."""
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
    ]
    if field_reports:
        lines += [
            "",
            "## Field reports",
            "",
            "What the model gives for each field report's conditions, beside the report's "
            "calibration figure (a prediction's figure is not known here). "
            + cpu_pct_note(field_reports),
            "",
            *_md_table(FIELD_REPORT_HEADERS, field_reports_table(field_reports)),
        ]
    lines += ["", "## Assertions", ""]
    lines += _md_table(
        ["", "assertion", "detail"],
        [[f"**{c.status}**", c.statement, c.detail] for c in checks],
    )
    for experiment in sweep.experiments:
        lines += ["", f"## {experiment.title}", ""]
        if experiment.description:
            lines += [experiment.description, ""]
        if experiment.name in plots:
            lines += [f"![{experiment.title}]({plots[experiment.name]})", ""]
        lines += [experiment_reading(experiment, results), ""]
        headers, rows = experiment_rows(experiment, results)
        rows = [row[:-1] + [f"`{row[-1]}`"] for row in rows]
        lines += _md_table(headers, rows)
        fixed = ", ".join(
            f"{k}={v}"
            for k, v in {**sweep.defaults, **experiment.fixed}.items()
            if k not in experiment.sweep
        )
        lines += ["", f"Fixed: {fixed}."]
    path.write_text("\n".join(lines) + "\n")
    from .report_html import write_html_report

    write_html_report(
        path.with_suffix(".html"), sweep, results, checks, plots, notes, field_reports
    )
