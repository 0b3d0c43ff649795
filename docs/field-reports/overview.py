"""Draw docs/field-reports/overview.png from a field-report run: every condition's goodput
(field_reports.json) beside its calibration figure (the sweep file's), predictions apart.

    .venv/bin/python docs/field-reports/overview.py build/regress/field-reports/field_reports.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from macdma.sim.regress import FIELD_REPORTS_SWEEP, load_sweep  # noqa: E402
from macdma.sim.regress.field_reports import conditions_of  # noqa: E402

OUT = Path(__file__).with_name("overview.png")


def main(results: str) -> None:
    figures = {
        (c.report, c.name): c.figure.get("mbps")
        for c in conditions_of(load_sweep(FIELD_REPORTS_SWEEP))
    }
    # microblaze-frags has its own plot; a line-rate figure is not a number to draw
    rows = [r for r in json.loads(Path(results).read_text()) if r["report"] != "microblaze-frags"]
    xs = range(len(rows))
    keys = [(r["report"], r["condition"]) for r in rows]
    calibration = [isinstance(figures.get(key), int | float) for key in keys]
    fig, ax = plt.subplots(figsize=(11, 4.4))
    ax.bar([x - 0.2 for x in xs], [r["mbps"] or 0 for r in rows], width=0.4,
           color=["tab:blue" if c else "tab:orange" for c in calibration],
           label="model (blue: calibration condition, orange: prediction)")  # fmt: skip
    reported = [figures[key] if c else 0 for key, c in zip(keys, calibration, strict=True)]
    ax.bar([x + 0.2 for x in xs], reported, width=0.4, color="tab:gray",
           label="the report's calibration figure")  # fmt: skip
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['report']}\n{r['condition']}" for r in rows], fontsize=7,
                       rotation=35, ha="right")  # fmt: skip
    ax.set_ylabel("goodput (Mb/s of payload)")
    ax.set_ylim(0, 1150)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title("Field reports: the model's goodput per condition")
    fig.tight_layout()
    fig.savefig(OUT, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1])
