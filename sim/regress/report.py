"""``report.md`` (and, through :mod:`.report_html`, ``report.html``): the field reports'
table when the sweep has any, the assertions with PASS/FAIL, the failed points and why,
then one section per experiment (plot, reading, table of its points, and a note under the
table for every marker a cell of it carries; :mod:`.report_content`)."""

from __future__ import annotations

from pathlib import Path

from .expectations import CheckResult
from .field_reports import (
    FIELD_REPORT_HEADERS,
    FieldReportRow,
    cpu_pct_note,
    field_reports_table,
)
from .model_vs_rtl import ModelVsRtl, model_vs_rtl_lines
from .report_content import (
    experiment_notes,
    experiment_reading,
    experiment_rows,
    failed_points_text,
)
from .report_html import write_html_report


def _md_text(text: str) -> str:
    """``text`` as one line of Markdown that shows as written: the characters that would
    turn a message into markup (code spans, emphasis, HTML tags) escaped."""
    flat = " ".join(str(text).split())
    for char in "\\`*<>":
        flat = flat.replace(char, "\\" + char)
    return flat


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    def line(values):
        return "| " + " | ".join(" ".join(str(v).split()).replace("|", "/") for v in values) + " |"

    return [line(headers), line(["---"] * len(headers)), *(line(row) for row in rows)]


def write_report(
    path: Path,
    sweep,
    results: list[dict],
    checks: list[CheckResult],
    plots: dict[str, str],
    notes: list[str] = (),
    field_reports: list[FieldReportRow] = (),
    model_vs_rtl: list[ModelVsRtl] = (),
    model_vs_rtl_plot: str | None = None,
) -> None:
    """The Markdown report: field reports (when the sweep has conditions), the model
    against the real core (when the sweep runs conditions on both), assertions, then one
    section per experiment (plot, reading, table of its points); and the same as one
    self-contained page next to it (.html)."""
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
    lines += model_vs_rtl_lines(list(model_vs_rtl), model_vs_rtl_plot)
    lines += ["", "## Assertions", ""]
    lines += _md_table(
        ["", "assertion", "detail"],
        [[f"**{c.status}**", c.statement, c.detail] for c in checks],
    )
    failures = failed_points_text(results)
    if failures:
        lines += ["", "## Failed points", "", failures[0], ""]
        lines += [f"- {_md_text(line)}" for line in failures[1:]]
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
        for note in experiment_notes(experiment, results):
            lines += ["", note]
        fixed = ", ".join(
            f"{k}={v}"
            for k, v in {**sweep.defaults, **experiment.fixed}.items()
            if k not in experiment.sweep
        )
        lines += ["", f"Fixed: {fixed}."]
    path.write_text("\n".join(lines) + "\n")
    write_html_report(
        path.with_suffix(".html"), sweep, results, checks, plots, notes, field_reports,
        list(model_vs_rtl), model_vs_rtl_plot,
    )  # fmt: skip
