"""What the regression report says, whatever its format: each experiment's table of
points (cells with their marks), its reading, the notes under its table, and the failed
points' section. :mod:`.report` writes it as Markdown, :mod:`.report_html` as a page."""

from __future__ import annotations

from ..run.scenario import MIN_WINDOW_FRAMES, WARMUP_FRACTION
from .failures import failure_lines
from .metrics import METRICS
from .readings import READINGS
from .selection import ok

#: The mark on a rate measured over a window the window rule flagged as too short.
SHORT_WINDOW = "(short window)"
#: The mark on an RX rate above 100% of line rate.
ABOVE_LINE_RATE = "†"


def cell(value) -> str:
    """A number as a table shows it (thousands separated, 1 or 2 decimals)."""
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.1f}"
    return "-" if value is None else str(value)


def rx_above_line_rate(result: dict) -> float | None:
    """The RX percent of line rate of a finished point when it reads above 100% at the
    reports' 2 decimals, else None."""
    rx = result.get("metrics", {}).get("rx") if result.get("status") == "ok" else None
    pct = rx.get("percent_of_line_rate") if rx else None
    return pct if pct is not None and round(pct, 2) > 100 else None


def _is_rx_line_rate(result: dict, metric: str) -> bool:
    """Whether ``metric`` of ``result`` is its RX line rate (line_rate_pct is RX's when
    the point sends no TX)."""
    metrics = result.get("metrics", {})
    return metric == "rx_line_rate_pct" or (metric == "line_rate_pct" and "tx" not in metrics)


def metric_cell(result: dict, metric: str) -> str:
    """A table cell of a finished point: the value, its ± when the metric has one, and a
    mark (explained under the table) on a short window or an RX rate above line rate."""
    summary = result.get("summary", {})
    text = cell(summary.get(metric))
    ci = METRICS[metric].ci
    if ci is not None and summary.get(ci) is not None:
        text += f" ± {cell(summary[ci])}"
    if _is_rx_line_rate(result, metric) and rx_above_line_rate(result) is not None:
        text += ABOVE_LINE_RATE
    if ci is not None and summary.get("window_ok") is False:
        text += f" {SHORT_WINDOW}"
    return text


def experiment_results(experiment, results: list[dict]) -> list[dict]:
    """The points of ``experiment``, in the run's order."""
    return [r for r in results if experiment.name in r.get("experiments", [])]


def experiment_rows(experiment, results: list[dict]) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of an experiment's table: swept fields, metrics, point key."""
    swept = list(experiment.sweep)
    headers = swept + [f"{METRICS[m].label} ({METRICS[m].unit})" for m in experiment.metrics]
    rows = []
    for r in experiment_results(experiment, results):
        values = [cell(r["scenario"][k]) for k in swept]
        values += [
            metric_cell(r, m) if r.get("status") == "ok" else "FAILED" for m in experiment.metrics
        ]
        rows.append(values + [f"{r['key']}"])
    return headers + ["point"], rows


def _point_label(experiment, result: dict) -> str:
    return ", ".join(f"{k}={result['scenario'][k]}" for k in experiment.sweep) or result["key"]


def short_window_note(experiment, results: list[dict]) -> str | None:
    """What "(short window)" means, with each marked point's reason; None when no cell of
    the experiment's table carries the mark."""
    if not any(METRICS[m].ci for m in experiment.metrics):
        return None
    reasons: dict[str, list[str]] = {}
    for r in ok(experiment_results(experiment, results)):
        if r["summary"].get("window_ok") is False:
            reason = r["metrics"]["window"].get("reason") or "too short"
            reasons.setdefault(reason, []).append(_point_label(experiment, r))
    if not reasons:
        return None
    which = "; ".join(f"{', '.join(points)}: {reason}" for reason, points in reasons.items())
    return (
        f"{SHORT_WINDOW}: every rate is measured over one window, the frames after the "
        f"first {WARMUP_FRACTION:.0%} (warm-up), cut into batches for the ± "
        "(docs/driver-model.md, 'The measurement window'). A marked point's window held fewer "
        f"than {MIN_WINDOW_FRAMES} frames per direction or fewer than 2 batches, so its rate "
        "and ± rest on few frames: an indication, not a figure to compare closely (a sweep "
        f"with more `frames` per point measures a longer window). Here: {which}."
    )


def above_line_rate_note(experiment, results: list[dict]) -> str | None:
    """Why an RX rate reads above 100% of line rate, with each marked point's numbers;
    None when no cell of the experiment's table carries the mark."""
    shown = [
        r
        for r in ok(experiment_results(experiment, results))
        if rx_above_line_rate(r) is not None
        and any(_is_rx_line_rate(r, m) for m in experiment.metrics)
    ]
    if not shown:
        return None
    figures = []
    for r in shown:
        pct = rx_above_line_rate(r)
        window_ns = r["metrics"]["window"]["duration_ns"]
        latency = r["metrics"]["rx"]["latency"]
        figures.append(
            f"{_point_label(experiment, r)}: {pct:.2f}% of a {window_ns / 1e3:,.1f} µs window "
            f"is {(pct - 100) / 100 * window_ns:,.0f} ns worth of frames more than its length, "
            f"and deliveries trail the wire by {latency['p50_ns']:,.0f} ns (median) to "
            f"{latency['max_ns']:,.0f} ns"
        )
    return (
        f"{ABOVE_LINE_RATE} RX above 100% of line rate: an RX rate counts frames when the "
        "driver hands them to the stack (on_receive), not when they crossed the wire (TX "
        "rates count wire stamps and cannot beat line rate). The delay from a frame's last "
        "bit to its delivery varies from frame to frame (an interrupt or a poll delivers "
        "several at once), so when the frames at the window's end are delivered sooner "
        "after the wire than those at its start, the window holds a little more than its "
        "length's worth of deliveries; the excess is at most that delay's spread. "
        f"{'; '.join(figures)}. The frames arrived at line rate; the excess is where the "
        "window's edges fall."
    )


def experiment_notes(experiment, results: list[dict]) -> list[str]:
    """The notes under an experiment's table: one per marker its cells carry."""
    notes = (short_window_note(experiment, results), above_line_rate_note(experiment, results))
    return [note for note in notes if note]


def failed_points_text(results: list[dict]) -> list[str]:
    """The failed points' section: a sentence, then one line per distinct reason; empty
    when every point finished."""
    failed = [r for r in results if r.get("status") != "ok"]
    if not failed:
        return []
    return [
        f"{len(failed)} of {len(results)} points failed. Why (one line each; the whole text "
        "is in points/KEY.json, the simulator's output in logs/KEY.log):",
        *failure_lines(results),
    ]


def experiment_reading(experiment, results: list[dict]) -> str:
    rows = ok(r for r in results if experiment.name in r.get("experiments", []))
    return READINGS[experiment.reading](experiment, rows) if rows else "No point finished."
