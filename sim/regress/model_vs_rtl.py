"""The model held against the real core: every point of a sweep run on ``vexriscv-rtl``
(the C driver on the simulated VexRiscv, docs/soft-core.md) beside the same scenario on a
modelled CPU (a CPU file), the model's error per point and the mean absolute percentage
error (MAPE) of throughput.

A sweep asks for it by sweeping ``cpu`` over ``vexriscv-rtl`` and a CPU file: points whose
scenarios differ only in ``cpu`` are one condition. :func:`pair_points` finds the pairs,
:func:`write_model_vs_rtl_json` writes ``model_vs_rtl.json``, :func:`model_vs_rtl_lines`
the report's section and :func:`plot_model_vs_rtl` the plot of model against RTL
throughput. Pure Python besides matplotlib in the plot; no simulator.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..run.scenario import RTL_CPU
from .keys import UNHASHED_FIELDS

__all__ = [
    "COMPARED_METRICS",
    "MAPE_METRIC",
    "ModelVsRtl",
    "mape",
    "model_vs_rtl_lines",
    "pair_points",
    "percent_error",
    "plot_model_vs_rtl",
    "write_model_vs_rtl_json",
]

#: The metrics shown side by side (summary names, docs/regression.md), with their units.
COMPARED_METRICS = {
    "throughput_mbps": "Mb/s",
    "irqs_per_second": "IRQs/s",
    "cycles_per_packet": "cycles",
}
#: The metric the MAPE is taken over.
MAPE_METRIC = "throughput_mbps"
#: Scenario fields that never tell two conditions apart in the table's labels.
_LABEL_SKIPPED = ("cpu", *UNHASHED_FIELDS)


@dataclass(frozen=True)
class ModelVsRtl:
    """One condition run on both: ``condition`` (the scenario fields, less ``cpu``),
    ``model_cpu`` (the modelled CPU's name or path), ``rtl`` and ``model`` (metric ->
    value, :data:`COMPARED_METRICS`) and the two points' keys."""

    condition: dict
    model_cpu: str
    rtl: dict
    model: dict
    rtl_key: str
    model_key: str

    def error_pct(self, metric: str) -> float | None:
        """The model's error on ``metric`` in % of the real core's (None when the real
        core's value is 0: no percentage of nothing)."""
        return percent_error(self.model[metric], self.rtl[metric])


def percent_error(model: float, rtl: float) -> float | None:
    """``100 * (model - rtl) / rtl``; None when ``rtl`` is 0."""
    if rtl == 0:
        return None
    return 100.0 * (model - rtl) / rtl


def _condition(scenario: dict) -> tuple:
    return tuple(sorted((k, json.dumps(v)) for k, v in scenario.items() if k not in _LABEL_SKIPPED))


def pair_points(results: list[dict]) -> list[ModelVsRtl]:
    """Every (RTL point, model point) pair of ``results`` (the points' stored dicts) whose
    scenarios differ only in ``cpu``, in the RTL points' order; only points with status
    ``ok`` pair (a failed one is in the report's failed points)."""
    good = [r for r in results if r.get("status") == "ok"]
    models: dict[tuple, list[dict]] = {}
    for r in good:
        if r["scenario"]["cpu"] != RTL_CPU:
            models.setdefault(_condition(r["scenario"]), []).append(r)
    pairs = []
    for rtl in good:
        if rtl["scenario"]["cpu"] != RTL_CPU:
            continue
        for model in models.get(_condition(rtl["scenario"]), []):
            pairs.append(
                ModelVsRtl(
                    condition={k: v for k, v in rtl["scenario"].items() if k not in _LABEL_SKIPPED},
                    model_cpu=model["scenario"]["cpu"],
                    rtl={m: float(rtl["summary"][m]) for m in COMPARED_METRICS},
                    model={m: float(model["summary"][m]) for m in COMPARED_METRICS},
                    rtl_key=rtl["key"],
                    model_key=model["key"],
                )
            )
    return pairs


def mape(pairs: list[ModelVsRtl], metric: str = MAPE_METRIC) -> float | None:
    """The mean of ``|error|`` in % over ``pairs`` (those whose RTL value is not 0); None
    when none has one."""
    errors = [abs(e) for e in (p.error_pct(metric) for p in pairs) if e is not None]
    return sum(errors) / len(errors) if errors else None


def _varying(pairs: list[ModelVsRtl]) -> list[str]:
    """The condition fields that differ between pairs (what the labels must say), in
    Scenario order; ``direction`` always."""
    fields = [f for f in pairs[0].condition if f != "direction"]
    varying = [f for f in fields if len({json.dumps(p.condition[f]) for p in pairs}) > 1]
    return ["direction", *varying]


def _label(pair: ModelVsRtl, fields: list[str]) -> str:
    return ", ".join(
        str(pair.condition[f]) if f == "direction" else f"{f} {pair.condition[f]}" for f in fields
    )


def _model_name(cpu: str) -> str:
    return Path(cpu).stem if cpu.endswith(".toml") else cpu


def write_model_vs_rtl_json(path: Path, pairs: list[ModelVsRtl]) -> None:
    """``model_vs_rtl.json``: ``mape_pct`` (of throughput), ``worst`` (the pair with the
    largest throughput error) and ``points``: per pair its condition, the model CPU, both
    points' keys, each metric's RTL and model values and the model's error in %."""
    rows = []
    for pair in pairs:
        row = {
            "condition": pair.condition,
            "model_cpu": pair.model_cpu,
            "rtl_key": pair.rtl_key,
            "model_key": pair.model_key,
        }
        for metric in COMPARED_METRICS:
            row[metric] = {
                "rtl": pair.rtl[metric],
                "model": pair.model[metric],
                "error_pct": pair.error_pct(metric),
            }
        rows.append(row)
    scored = [p for p in pairs if p.error_pct(MAPE_METRIC) is not None]
    worst = max(scored, key=lambda p: abs(p.error_pct(MAPE_METRIC)), default=None)
    document = {
        "metric": MAPE_METRIC,
        "mape_pct": mape(pairs),
        "max_abs_error_pct": abs(worst.error_pct(MAPE_METRIC)) if worst else None,
        "worst": None if worst is None else {"condition": worst.condition,
                                              "rtl_key": worst.rtl_key},
        "points": rows,
    }  # fmt: skip
    path.write_text(json.dumps(document, indent=1) + "\n")


def _number(value: float) -> str:
    return f"{value:,.1f}" if abs(value) < 100 else f"{value:,.0f}"


def _error(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def model_vs_rtl_table(pairs: list[ModelVsRtl]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: per pair its condition, then per metric the real core's value,
    the model's and the error."""
    fields = _varying(pairs)
    headers = ["condition", "model"]
    for metric, unit in COMPARED_METRICS.items():
        name = metric.removesuffix("_mbps").removesuffix("_per_second").replace("_", " ")
        headers += [f"RTL {name} ({unit})", f"model ({unit})", "error"]
    rows = []
    for pair in pairs:
        row = [_label(pair, fields), _model_name(pair.model_cpu)]
        for metric in COMPARED_METRICS:
            row += [
                _number(pair.rtl[metric]),
                _number(pair.model[metric]),
                _error(pair.error_pct(metric)),
            ]
        rows.append(row)
    return headers, rows


def model_vs_rtl_summary(pairs: list[ModelVsRtl]) -> str:
    """One paragraph: how many conditions, the MAPE of throughput, the worst point, and
    how many are beyond 15%."""
    value = mape(pairs)
    if value is None:
        return f"{len(pairs)} conditions, none with a nonzero RTL throughput: no MAPE."
    scored = [p for p in pairs if p.error_pct(MAPE_METRIC) is not None]
    worst = max(scored, key=lambda p: abs(p.error_pct(MAPE_METRIC)))
    beyond = sum(1 for p in scored if abs(p.error_pct(MAPE_METRIC)) > 15)
    return (
        f"{len(pairs)} conditions on both the real core and the model: MAPE of throughput "
        f"{value:.1f}% (mean of |model - RTL| / RTL over {len(scored)} points); worst "
        f"{_error(worst.error_pct(MAPE_METRIC))} at {_label(worst, _varying(pairs))}; "
        f"{beyond} point{'s' * (beyond != 1)} beyond 15%."
    )


def model_vs_rtl_lines(pairs: list[ModelVsRtl], plot: str | None = None) -> list[str]:
    """The report's Markdown section (empty when there are no pairs)."""
    if not pairs:
        return []
    headers, rows = model_vs_rtl_table(pairs)

    def line(values):
        return "| " + " | ".join(str(v).replace("|", "/") for v in values) + " |"

    lines = ["", "## Model vs RTL", "", model_vs_rtl_summary(pairs), ""]
    if plot:
        lines += [f"![Model vs RTL throughput]({plot})", ""]
    lines += [line(headers), line(["---"] * len(headers)), *(line(row) for row in rows)]
    return lines


def plot_model_vs_rtl(pairs: list[ModelVsRtl], path: Path) -> None:
    """Model throughput against the real core's, one marker per condition (TX and RX
    apart), with the y = x line and the ±15% band."""
    import matplotlib  # here: the module's other users need no matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(6.4, 6.0))
    top = max(max(p.rtl[MAPE_METRIC], p.model[MAPE_METRIC]) for p in pairs) * 1.1 or 1.0
    axes.plot([0, top], [0, top], color="black", linewidth=1, label="model = RTL")
    axes.fill_between(
        [0, top], [0, 0.85 * top], [0, 1.15 * top], color="grey", alpha=0.2, label="±15%"
    )
    for direction, marker in (("tx", "o"), ("rx", "s"), ("both", "^")):
        chosen = [p for p in pairs if p.condition.get("direction") == direction]
        if chosen:
            axes.scatter(
                [p.rtl[MAPE_METRIC] for p in chosen],
                [p.model[MAPE_METRIC] for p in chosen],
                marker=marker,
                label=direction.upper(),
            )
    value = mape(pairs)
    title = "Model vs RTL throughput" + ("" if value is None else f" (MAPE {value:.1f}%)")
    axes.set_title(title)
    axes.set_xlabel("real core (vexriscv-rtl) throughput (Mb/s)")
    axes.set_ylabel("model throughput (Mb/s)")
    axes.set_xlim(0, top)
    axes.set_ylim(0, top)
    axes.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def pairs_from_json(document: dict) -> list[ModelVsRtl]:
    """The pairs a ``model_vs_rtl.json`` holds (for a reader of the file, and its test)."""
    return [
        ModelVsRtl(
            condition=row["condition"],
            model_cpu=row["model_cpu"],
            rtl={m: row[m]["rtl"] for m in COMPARED_METRICS},
            model={m: row[m]["model"] for m in COMPARED_METRICS},
            rtl_key=row["rtl_key"],
            model_key=row["model_key"],
        )
        for row in document["points"]
    ]
