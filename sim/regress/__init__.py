"""``macdma regress``: run a sweep of scenarios, write JSON/CSV/Markdown/HTML/PNG, check
what the numbers must show.

A sweep is a TOML file (docs/regression.md). Every point is one
:func:`macdma.sim.run.scenario.run_scenario` call; points run in a process pool (one per core)
or on a Dask cluster (sim/regress/cluster.py) and share the cached simulator build. Each finished
point is written at once to ``points/<key>.json``; the key hashes the scenario, its CPU
file and the simulated sources, so a re-run skips unchanged points, a code change reruns
them, and Ctrl-C keeps what finished. Every run is recorded in the results database
(sim/regress/results_db.py). The modules, by job:

- :mod:`.sweep_file`: reading and validating a sweep file (:func:`load_sweep`).
- :mod:`.selection`: ``at`` tables, which points a declaration means.
- :mod:`.keys`: point keys and the sources hash.
- :mod:`.points`: a sweep's points, which to run, their stored JSON.
- :mod:`.pool`: running points on a pool, with the progress bar.
- :mod:`.metrics`: the metrics of a point (:data:`METRICS`, :func:`summarise`).
- :mod:`.expectations`: declared expectations and the built-in check, PASS/FAIL.
- :mod:`.field_reports`: field-report conditions, ``field_reports.json`` and its table.
- :mod:`.model_vs_rtl`: the model against the real core, ``model_vs_rtl.json``, MAPE.
- :mod:`.results_csv`: ``results.csv``.
- :mod:`.readings`: one paragraph of prose per experiment from its numbers.
- :mod:`.plots`: one PNG per experiment.
- :mod:`.report_content`: what the report says (tables, readings, notes), in no format.
- :mod:`.report`, :mod:`.report_html`: ``report.md`` and ``report.html``.
- :mod:`.results_db`: the results database and ``macdma compare``.
- :mod:`.cluster`: where points run (the local pool or a Dask cluster).
- :mod:`.command`: the argparse command.
"""

from __future__ import annotations

from .command import add_regress_parser, default_out, run_regress
from .expectations import CheckResult, Expectation, check_all_points_intact, check_results
from .field_reports import Condition, field_report_rows, write_field_reports_json
from .keys import PACKAGE_ROOT, SCENARIO_FIELDS, UNHASHED_FIELDS, point_key, source_hash
from .metrics import METRICS, Metric, summarise
from .plots import plot_experiment
from .points import Point, expand, plan, point_path, store
from .pool import run_point
from .readings import READINGS
from .report import write_report
from .results_csv import write_csv
from .selection import ok
from .sweep_file import (
    DEFAULT_SWEEP,
    FIELD_REPORTS_SWEEP,
    QUICK_SWEEP,
    Experiment,
    Sweep,
    load_sweep,
    parse_sweep,
)

__all__ = [
    "DEFAULT_SWEEP",
    "FIELD_REPORTS_SWEEP",
    "METRICS",
    "PACKAGE_ROOT",
    "QUICK_SWEEP",
    "READINGS",
    "SCENARIO_FIELDS",
    "UNHASHED_FIELDS",
    "CheckResult",
    "Condition",
    "Expectation",
    "Experiment",
    "Metric",
    "Point",
    "Sweep",
    "add_regress_parser",
    "check_all_points_intact",
    "check_results",
    "default_out",
    "expand",
    "field_report_rows",
    "load_sweep",
    "ok",
    "parse_sweep",
    "plan",
    "plot_experiment",
    "point_key",
    "point_path",
    "run_point",
    "run_regress",
    "source_hash",
    "store",
    "summarise",
    "write_csv",
    "write_field_reports_json",
    "write_report",
]
