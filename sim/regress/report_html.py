"""``report.html``: the regression report as one self-contained page.

The same content as ``report.md`` (:func:`.report.write_report`): the field reports' table
(when the sweep has any), the assertions with PASS/FAIL and the failed points first, then
per experiment its plot (at its natural size), reading, table and the notes on its
markers, then "Changed since the baseline" when the run has one, and the
run's parameters and versions last. Plots are
embedded as ``data:`` URIs and the only script is the few inline lines that sort a table
by a clicked column, so the file opens anywhere with no network. Every text is escaped.
"""

from __future__ import annotations

import base64
import importlib.metadata
from html import escape
from pathlib import Path

from .field_reports import FIELD_REPORT_HEADERS, cpu_pct_note, field_reports_table
from .model_vs_rtl import model_vs_rtl_summary, model_vs_rtl_table
from .report_content import (
    experiment_notes,
    experiment_reading,
    experiment_rows,
    failed_points_text,
)
from .results_db import comparison_markdown, git_state, relative_text, value_text

# Where "Changed since the baseline" goes; add_comparison replaces it once the run has
# been compared (the comparison is made after the report is written).
BASELINE_MARKER = "<!-- changed-since-baseline -->"

STYLE = """
* { box-sizing: border-box; }
body { font-family: sans-serif; margin: 0 auto; padding: 1em 1.5em; max-width: 72em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; }
th[data-sort] { cursor: pointer; background: #eee; }
td.PASS { background: #c8efc8; font-weight: bold; }
td.FAIL { background: #f6c0c0; font-weight: bold; }
div.figure { overflow-x: auto; margin: 0.5em 0; }
div.figure img { max-width: none; box-sizing: content-box; border: 1px solid #ddd; }
p.note { font-size: 90%; color: #444; }
code { font-size: 90%; }
"""

# Click a header: sort that table's body rows by the column, numbers as numbers
# ("1,234.5 ± 3" sorts as 1234.5), clicking again reverses.
SORT_SCRIPT = r"""
document.querySelectorAll("table.sortable th").forEach(function (th, column) {
  th.dataset.sort = "";
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0];
    var up = th.dataset.sort !== "up";
    th.closest("tr").querySelectorAll("th").forEach(function (h) { h.dataset.sort = ""; });
    th.dataset.sort = up ? "up" : "down";
    function key(row) {
      var text = row.cells[th.cellIndex].textContent;
      var number = text.match(/^\s*(-?[\d,]*\.?\d+)(\s|$)/);
      return number ? parseFloat(number[1].replace(/,/g, "")) : text;
    }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      var order = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0)
                                          : (typeof x === "number" ? -1 : 1);
      return up ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""


def _table(headers: list[str], rows: list[list[str]], name: str, classes=None) -> str:
    """A sortable table; ``classes`` gives a CSS class per cell of a row (or None)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, value in enumerate(row):
            css = classes[i][j] if classes and classes[i][j] else None
            attr = f' class="{escape(css)}"' if css else ""
            cells.append(f"<td{attr}>{escape(value)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table class="sortable" data-table="{escape(name)}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _figure(png: Path, alt: str) -> str:
    """The plot at its natural size (its width and height from the PNG header), embedded
    as a data: URI; a figure wider than the page scrolls rather than shrinks."""
    data = png.read_bytes()
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    return (
        f'<div class="figure"><img src="{uri}" width="{width}" height="{height}" '
        f'alt="{escape(alt)}"></div>'
    )


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _parameters(sweep, results: list[dict]) -> list[list[str]]:
    commit, dirty = git_state()
    sims = sorted({r["scenario"]["sim"] for r in results})
    return [
        ["sweep", sweep.name],
        ["sweep file", str(sweep.path) if sweep.path else "-"],
        ["git commit", (commit or "not a git checkout") + (" (uncommitted)" if dirty else "")],
        ["sources hash", results[0]["sources"] if results else "-"],
        ["simulator", ", ".join(sims) or "-"],
        ["cocotb", _version("cocotb")],
        ["amaranth", _version("amaranth")],
        ["points", str(len(results))],
    ]


def write_html_report(
    path: Path,
    sweep,
    results: list[dict],
    checks,
    plots: dict[str, str],
    notes=(),
    field_reports=(),
    model_vs_rtl=(),
    model_vs_rtl_plot: str | None = None,
) -> None:
    """Write ``path`` (report.html) from what write_report writes report.md from; the
    ``plots`` paths are relative to ``path``'s folder and are embedded."""
    folder = path.parent
    failed = [r for r in results if r.get("status") != "ok"]
    parts = [
        f"<h1>macdma regression: {escape(sweep.name)}</h1>",
        f"<p>{escape(sweep.description)}</p>",
        f"<p>{len(results)} points, {len(failed)} failed.</p>",
        *[f"<p>{escape(note.replace('**', ''))}</p>" for note in notes],
    ]
    if field_reports:
        note = cpu_pct_note(field_reports).replace("`", "")
        parts += [
            "<h2>Field reports</h2>",
            "<p>What the model gives for each field report's conditions, beside the report's "
            f"calibration figure (a prediction's figure is not known here). {escape(note)}</p>",
            _table(FIELD_REPORT_HEADERS, field_reports_table(field_reports), "field_reports"),
        ]
    if model_vs_rtl:
        headers, rows = model_vs_rtl_table(list(model_vs_rtl))
        parts += ["<h2>Model vs RTL</h2>", f"<p>{escape(model_vs_rtl_summary(model_vs_rtl))}</p>"]
        if model_vs_rtl_plot and (folder / model_vs_rtl_plot).exists():
            parts.append(_figure(folder / model_vs_rtl_plot, "Model vs RTL throughput"))
        parts.append(_table(headers, rows, "model_vs_rtl"))
    parts += [
        "<h2>Assertions</h2>",
        _table(
            ["", "assertion", "detail"],
            [[c.status, c.statement, c.detail] for c in checks],
            "assertions",
            [[c.status, None, None] for c in checks],
        ),
    ]
    failures = failed_points_text(results)
    if failures:
        parts += ["<h2>Failed points</h2>", f"<p>{escape(failures[0])}</p>", "<ul>"]
        parts += [f"<li>{escape(line)}</li>" for line in failures[1:]]
        parts.append("</ul>")
    for experiment in sweep.experiments:
        parts.append(f"<h2>{escape(experiment.title)}</h2>")
        if experiment.description:
            parts.append(f"<p>{escape(experiment.description)}</p>")
        if experiment.name in plots:
            parts.append(_figure(folder / plots[experiment.name], experiment.title))
        reading = experiment_reading(experiment, results)
        parts.append(f"<p>{escape(reading.replace('**', ''))}</p>")
        headers, table_rows = experiment_rows(experiment, results)
        parts.append(_table(headers, table_rows, experiment.name))
        for note in experiment_notes(experiment, results):
            parts.append(f'<p class="note">{escape(note.replace("`", ""))}</p>')
    parts.append(BASELINE_MARKER)
    parts.append("<h2>Run parameters and versions</h2>")
    parts.append(_table(["parameter", "value"], _parameters(sweep, results), "parameters"))
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>macdma regression: {escape(sweep.name)}</title><style>{STYLE}</style></head>"
        "<body>\n" + "\n".join(parts) + f"\n<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )
    path.write_text(page)


def add_comparison(path: Path, comparison) -> None:
    """Put "Changed since the baseline" (a results_db Comparison) into report.html."""
    page = path.read_text()
    if BASELINE_MARKER not in page:
        raise ValueError(f"{path}: no place for the baseline section (already added?)")
    summary = comparison_markdown(comparison)[0]  # the sentence; the table is built here
    section = [f"<h2>Changed since the baseline</h2><p>{escape(summary)}</p>"]
    if comparison.changes:
        rows = [
            [c.label, c.metric, value_text(c.before), value_text(c.after), relative_text(c)]
            for c in comparison.changes
        ]
        section.append(_table(["point", "metric", "before", "after", "change"], rows, "baseline"))
    else:
        section.append("<p>No point moved beyond the tolerance.</p>")
    path.write_text(page.replace(BASELINE_MARKER, "\n".join(section)))
