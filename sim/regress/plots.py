"""Plots: one PNG per experiment (matplotlib, Agg), a panel per metric, the swept ``x``
field on the x axis, a line (numbers) or a group of bars (categories) per series."""

from __future__ import annotations

import math
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


def plot_experiment(experiment, results: list[dict], path: Path) -> None:
    """One PNG: a panel per metric, x = ``experiment.x``, a line per series combination."""
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
        for index, (key, rows) in enumerate(series.items()):
            rows = sorted(rows, key=lambda r: x_values.index(r["scenario"][experiment.x]))
            xs = [r["scenario"][experiment.x] for r in rows]
            ys = [r["summary"].get(metric) for r in rows]
            ys = [math.nan if y is None else y for y in ys]
            label = ", ".join(
                f"{k}={_value_text(k, v)}" for k, v in zip(experiment.series, key, strict=True)
            )
            if numeric:  # markers and dashes differ so overlapping lines stay visible
                style = {"marker": "os^vDx*P"[index % 8], "linestyle": ("-", "--", ":")[index % 3]}
                axis.plot(xs, ys, label=label or None, **style)
            else:  # categories (IRQ strategies...): grouped bars
                offset = (index - (len(series) - 1) / 2) * bar_width
                positions = [x_values.index(x) + offset for x in xs]
                axis.bar(positions, ys, width=bar_width, label=label or None)
        if not numeric:
            axis.set_xticks(range(len(x_values)), [str(v) for v in x_values])
        elif len(x_values) <= 8:
            axis.set_xticks(x_values)
        axis.set_xlabel(axis_label(experiment.x, results))
        axis.set_ylabel(f"{meta.label} ({meta.unit})")
        axis.set_title(meta.label)
        axis.grid(True, alpha=0.3)
        axis.set_ylim(bottom=0)
        if len(series) > 1:
            axis.legend(fontsize="small")
    figure.suptitle(experiment.title)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
