"""Plots: one PNG per experiment (matplotlib, Agg), a panel per metric, the swept ``x``
field on the x axis, a line (numbers) or a group of bars (categories) per series, error
bars from the same ± the tables show, labels wrapped to fit and room above the highest
point."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

from .metrics import METRICS

AXIS_LABELS = {
    "frags": "extra TX fragments per frame",
    "tx_ring": "TX ring size (descriptors)",
    "burst_beats": "DMA burst length (beats)",
    "prefetch": "descriptor prefetch",
    "rx_buf_bytes": "RX buffer size (bytes)",
    "link_mbps": "link speed (Mb/s)",
    "frame_size": "frame size (bytes, no FCS)",
    "mem_latency_cycles": "memory latency (cycles per burst)",
    "tx_clean_budget": "TX clean budget (packets, 0 = unlimited)",
    "coalesce_frames": "coalescing (frames per IRQ)",
    "irq": "IRQ strategy",
}


def axis_label(name: str, results: list[dict] = ()) -> str:
    """The x axis label of swept field ``name``; a burst length says how many bytes a
    beat carried in ``results`` (measured: the bus moved that many bytes per data beat)."""
    label = AXIS_LABELS.get(name, name)
    if name == "burst_beats":
        widths = {r["summary"].get("bus_bytes_per_beat") for r in results}
        if len(widths) == 1 and None not in widths:
            label = f"DMA burst length (beats of {widths.pop():g} bytes)"
    return label


def _value_text(name: str, value) -> str:
    if name == "tx_clean_budget" and not value:
        return "unlimited" if value == 0 else "preset"
    return str(value)


#: Characters per line of an axis label or panel title before it wraps (fits a panel).
LABEL_WIDTH = 38
#: Room above the highest point or error bar, as a share of it, so no marker sits on
#: the frame.
HEADROOM = 0.12


def _wrapped(text: str, width: int = LABEL_WIDTH) -> str:
    return textwrap.fill(text, width)


def _number(value) -> float:
    return math.nan if value is None else float(value)


def build_figure(experiment, results: list[dict]):
    """The experiment's figure: a panel per metric, x = ``experiment.x``, a line (numbers)
    or a group of bars (categories) per series combination; a metric with a ±95% (the
    tables' ±, :attr:`Metric.ci`) gets it as error bars. The caller closes it."""
    # matplotlib is imported here, in both functions, for start-up time (about a second):
    # only a sweep that draws its plots needs it.
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
        tops = [0.0]
        for index, (key, rows) in enumerate(series.items()):
            rows = sorted(rows, key=lambda r: x_values.index(r["scenario"][experiment.x]))
            xs = [r["scenario"][experiment.x] for r in rows]
            ys = [_number(r["summary"].get(metric)) for r in rows]
            errors = [_number(r["summary"].get(meta.ci)) if meta.ci else math.nan for r in rows]
            errors = [0.0 if math.isnan(e) else e for e in errors]
            tops += [y + e for y, e in zip(ys, errors, strict=True) if not math.isnan(y)]
            label = ", ".join(
                f"{k}={_value_text(k, v)}" for k, v in zip(experiment.series, key, strict=True)
            )
            bars = {"yerr": errors, "capsize": 4} if meta.ci else {}
            if numeric:  # markers and dashes differ so overlapping lines stay visible
                style = {"marker": "os^vDx*P"[index % 8], "linestyle": ("-", "--", ":")[index % 3]}
                axis.errorbar(xs, ys, label=label or None, **style, **bars)
            else:  # categories (IRQ strategies...): grouped bars
                offset = (index - (len(series) - 1) / 2) * bar_width
                positions = [x_values.index(x) + offset for x in xs]
                axis.bar(positions, ys, width=bar_width, label=label or None, **bars)
        if not numeric:
            axis.set_xticks(range(len(x_values)), [str(v) for v in x_values])
        elif len(x_values) <= 8:
            axis.set_xticks(x_values)
        axis.set_xlabel(_wrapped(axis_label(experiment.x, results), 2 * LABEL_WIDTH))
        axis.set_ylabel(_wrapped(f"{meta.label} ({meta.unit})"))
        axis.set_title(_wrapped(meta.label))
        axis.grid(True, alpha=0.3)
        top = max(tops)
        axis.set_ylim(bottom=0, top=top * (1 + HEADROOM) if top > 0 else 1.0)
        if len(series) > 1:
            axis.legend(fontsize="small")
    figure.suptitle(experiment.title)
    figure.tight_layout()
    return figure


def plot_experiment(experiment, results: list[dict], path: Path) -> None:
    """One PNG of :func:`build_figure` at ``path``."""
    import matplotlib.pyplot as plt  # for start-up time, as in build_figure

    figure = build_figure(experiment, results)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path, dpi=100)
    finally:
        plt.close(figure)
