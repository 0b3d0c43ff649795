"""Results over time: every point of every ``macdma regress`` run in an SQLite database,
and ``macdma compare``, which lists the points whose metrics moved between two runs.

The database (``build/regress/results.sqlite`` by default, ``--db PATH``) has three tables:

- ``runs``: one row per ``macdma regress`` run: UTC start, git commit (and whether the tree
  had uncommitted changes), simulated-sources hash, sweep, output folder, where the points
  ran, and whether the run completed.
- ``points``: one row per point of a run (run again or reused unchanged from an earlier
  run's JSON): key, ``scenario_id`` (the scenario without the sources: the same experiment
  across commits), scenario JSON, simulator, sources hash, status, error, when it was
  measured, and the full metrics JSON.
- ``metrics``: one row per (point, metric) for every summary metric (docs/regression.md).

Writers: the process that collects a run's points is its only writer (Dask and pool
workers never open the database), and writes the whole run in one transaction, so a run
is either in the database or not. Several runs may finish at once (two sweeps, a test
suite): the database is in WAL mode, every connection waits for a busy lock
(:data:`BUSY_TIMEOUT_S`) and a write that still meets a locked database is retried.

``macdma compare RUN_A RUN_B``: a run is an output folder of ``macdma regress`` (the points
listed in its ``results.csv``) or a git commit (any name git resolves, or a hash prefix)
with runs in the database (the latest result of each scenario at that commit). Points are
matched by ``scenario_id``; a metric moved when ``|b - a| > tolerance * max(|a|, |b|)`` and
the two values print differently (the table's resolution: 2 decimals below 100, 1 above),
so floating-point noise never reads as a change. A metric's ± is not a threshold: it is
the spread of the batches inside one run, while the simulation is deterministic (the same
scenario on the same sources gives the same numbers), so any move beyond the printed
resolution is the design's. A point of RUN_A that RUN_B lacks is a change too (its status
``missing``): a run that lost points never passes as "nothing moved".
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import hashlib
import json
import math
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..cosim.verilog import build_dir
from ..run.scenario import Scenario
from .keys import PACKAGE_ROOT, UNHASHED_FIELDS

__all__ = [
    "DEFAULT_TOLERANCE",
    "Change",
    "Comparison",
    "ResultsDb",
    "ResultsDbError",
    "RunSet",
    "add_compare_parser",
    "compare",
    "comparison_markdown",
    "default_compare_out",
    "default_db",
    "git_state",
    "load_folder",
    "load_run",
    "run_compare",
    "run_set_of",
    "scenario_id",
]


def default_db() -> Path:
    """The results database when ``--db`` is not given: ``regress/results.sqlite`` under
    the build root (the repository's build/ or MACDMA_BUILD_DIR), whatever folder the
    command runs from."""
    return build_dir() / "regress" / "results.sqlite"


def default_compare_out() -> Path:
    """``macdma compare``'s folder when ``--out`` is not given: under the build root."""
    return build_dir() / "regress" / "compare"


# 1%: above the spread a change of frame count or stamp granularity gives a short run, far
# below what a design change that matters moves (a cycle per burst is several percent).
DEFAULT_TOLERANCE = 0.01
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 30.0  # how long a connection waits for another writer's lock
WRITE_ATTEMPTS = 5  # a write that still finds the database locked is retried this often
# Summary entries that are not simulation results (host time depends on the machine).
NOT_COMPARED = ("wall_seconds",)

_SCHEMA = """
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_utc TEXT NOT NULL,
    finished_utc TEXT NOT NULL,
    git_commit TEXT,
    git_dirty INTEGER,
    sources TEXT NOT NULL,
    sweep TEXT NOT NULL,
    out TEXT NOT NULL,
    ran_on TEXT NOT NULL,
    complete INTEGER NOT NULL
);
CREATE TABLE points (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    scenario_id TEXT NOT NULL,
    scenario TEXT NOT NULL,
    sim TEXT NOT NULL,
    sources TEXT,
    status TEXT NOT NULL,
    error TEXT,
    measured_utc TEXT,
    reused INTEGER NOT NULL,
    metrics TEXT
);
CREATE TABLE metrics (
    point_id INTEGER NOT NULL REFERENCES points(id),
    name TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (point_id, name)
);
CREATE INDEX runs_by_commit ON runs(git_commit);
CREATE INDEX points_by_run ON points(run_id);
"""


class ResultsDbError(ValueError):
    """A run, commit or database that cannot be used; the message names it."""


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def scenario_id(scenario: dict) -> str:
    """The identity of an experiment across commits: the scenario's measured fields
    (not the sources, not the output options)."""
    inputs = {k: v for k, v in scenario.items() if k not in UNHASHED_FIELDS}
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]


def scenario_label(scenario: dict) -> str:
    """The scenario's fields that differ from the defaults, e.g. ``frags=5 irq=napi``."""
    defaults = {f.name: f.default for f in dataclasses.fields(Scenario)}
    order = list(defaults) + sorted(set(scenario) - set(defaults))  # the Scenario's order
    parts = [
        f"{k}={scenario[k]}"
        for k in order
        if k in scenario
        and k not in UNHASHED_FIELDS
        and (k not in defaults or defaults[k] != scenario[k])
    ]
    return " ".join(parts) or "defaults"


def git_state(root: Path | None = None) -> tuple[str | None, bool | None]:
    """(HEAD commit, tree has uncommitted changes) of the checkout at ``root`` (the
    project's), or (None, None) outside a git checkout."""
    root = root or PACKAGE_ROOT
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=30
        )
        if commit.returncode != 0:
            return None, None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    return commit.stdout.strip(), bool(status.stdout.strip())


# -- the database --------------------------------------------------------------------------------


class ResultsDb:
    """The results database at ``path`` (created with its folder when missing)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise self._error(error) from None
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE below).
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as error:
            raise self._error(error) from None
        self._retrying(self._set_up)

    def _error(self, error: Exception) -> ResultsDbError:
        text = str(error)
        if isinstance(error, OSError) or "readonly" in text or "unable to open" in text:
            return ResultsDbError(
                f"results database {self.path}: cannot be written ({text}); give a writable "
                "file with --db"
            )
        return ResultsDbError(
            f"results database {self.path}: not a usable SQLite database ({error}); move it "
            f"away or give another with --db"
        )

    def _retrying(self, work):
        """Run ``work()``; retry while another process holds the database locked."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                return work()
            except sqlite3.OperationalError as error:
                locked = "locked" in str(error) or "busy" in str(error)
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if not locked or attempt == WRITE_ATTEMPTS - 1:
                    raise self._error(error) from None
                time.sleep(0.05 * 2**attempt)
            except sqlite3.DatabaseError as error:
                raise self._error(error) from None

    def _set_up(self) -> None:
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version != 0:
            raise ResultsDbError(
                f"results database {self.path}: schema version {version}, this macdma writes "
                f"version {SCHEMA_VERSION}; give another file with --db"
            )
        self._db.execute("BEGIN IMMEDIATE")
        # Another process may have created it while this one waited for the lock.
        if self._db.execute("PRAGMA user_version").fetchone()[0] == 0:
            tables = self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
            if tables.fetchall():
                self._db.execute("ROLLBACK")
                raise ResultsDbError(
                    f"results database {self.path}: an SQLite file with other tables, not "
                    f"macdma's; give another file with --db"
                )
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self._db.execute("COMMIT")

    def check_writable(self) -> None:
        """Take and release the write lock (ResultsDbError when the file, its folder or
        its journal cannot be written): ``macdma regress`` asks before it runs a point."""

        def take_and_release() -> None:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("ROLLBACK")

        self._retrying(take_and_release)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResultsDb:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def record_run(
        self,
        *,
        sweep: str,
        out: Path,
        sources: str,
        ran_on: str,
        results: list[dict],
        ran_keys: set[str],
        started_utc: str,
        complete: bool,
        git: tuple[str | None, bool | None] | None = None,
    ) -> int:
        """Insert one run and every point of it (``ran_keys``: the points simulated in this
        run; the others were reused from earlier JSON); returns the run's id."""
        commit, dirty = git if git is not None else git_state()

        def write() -> int:
            self._db.execute("BEGIN IMMEDIATE")
            run = self._db.execute(
                "INSERT INTO runs (started_utc, finished_utc, git_commit, git_dirty, sources, "
                "sweep, out, ran_on, complete) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    started_utc,
                    _utc_now(),
                    commit,
                    None if dirty is None else int(dirty),
                    sources,
                    sweep,
                    str(Path(out).resolve()),
                    ran_on,
                    int(complete),
                ),
            ).lastrowid
            for r in results:
                point = self._db.execute(
                    "INSERT INTO points (run_id, key, scenario_id, scenario, sim, sources, "
                    "status, error, measured_utc, reused, metrics) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run,
                        r["key"],
                        scenario_id(r["scenario"]),
                        json.dumps(r["scenario"], sort_keys=True),
                        r["scenario"]["sim"],
                        r.get("sources"),
                        r.get("status", "failed"),
                        r.get("error"),
                        r.get("measured_utc"),
                        int(r["key"] not in ran_keys),
                        json.dumps(r["metrics"]) if "metrics" in r else None,
                    ),
                ).lastrowid
                self._db.executemany(
                    "INSERT INTO metrics (point_id, name, value) VALUES (?, ?, ?)",
                    [(point, k, _number(v)) for k, v in r.get("summary", {}).items()],
                )
            self._db.execute("COMMIT")
            return run

        return self._retrying(write)

    def commits(self) -> list[tuple[str, int, str]]:
        """(commit, runs, latest run's start) per commit in the database, newest first."""
        return self._retrying(
            lambda: self._db.execute(
                "SELECT git_commit, COUNT(*), MAX(started_utc) FROM runs "
                "WHERE git_commit IS NOT NULL GROUP BY git_commit ORDER BY MAX(id) DESC"
            ).fetchall()
        )

    def run_set_at_commit(self, spec: str, commit: str) -> RunSet:
        """The latest result of each scenario measured at ``commit`` (a full hash or a
        prefix); runs from a clean tree win over runs with uncommitted changes."""

        def read():
            matches = self._db.execute(
                "SELECT DISTINCT git_commit FROM runs WHERE git_commit LIKE ? || '%'",
                (commit.lower(),),
            ).fetchall()
            if not matches:
                return None, []
            if len(matches) > 1:
                names = ", ".join(m[0][:12] for m in matches)
                raise ResultsDbError(f"{spec!r} matches several commits in {self.path}: {names}")
            full = matches[0][0]
            dirty = self._db.execute(
                "SELECT MIN(COALESCE(git_dirty, 0)) FROM runs WHERE git_commit = ?", (full,)
            ).fetchone()[0]
            rows = self._db.execute(
                "SELECT p.id, p.key, p.scenario_id, p.scenario, p.status FROM points p "
                "JOIN runs r ON r.id = p.run_id "
                "WHERE r.git_commit = ? AND COALESCE(r.git_dirty, 0) = ? "
                "ORDER BY r.id, p.id",
                (full, dirty),
            ).fetchall()
            points = {}
            for point_id, key, sid, scenario, status in rows:  # later rows replace earlier
                summary = dict(
                    self._db.execute(
                        "SELECT name, value FROM metrics WHERE point_id = ?", (point_id,)
                    ).fetchall()
                )
                points[sid] = PointResult(key, json.loads(scenario), status, summary)
            label = f"commit {full[:12]}" + (" (with uncommitted changes)" if dirty else "")
            return label, points

        label, points = self._retrying(read)
        if label is None:
            known = self.commits()
            listing = ", ".join(c[:12] for c, _, _ in known[:8]) or "none"
            raise ResultsDbError(
                f"{spec!r} is not a folder, and no run in {self.path} was made at commit "
                f"{commit[:12]} (commits there, newest first: {listing})"
            )
        return RunSet(label, points)


def _number(value) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# -- runs and comparisons -------------------------------------------------------------------------


@dataclass(frozen=True)
class PointResult:
    """One point of a run as compared: its key, scenario, status and summary metrics."""

    key: str
    scenario: dict
    status: str
    summary: dict


@dataclass(frozen=True)
class RunSet:
    """The points of a run (or of a commit), by :func:`scenario_id`; ``label`` names it."""

    label: str
    points: dict[str, PointResult]


def run_set_of(label: str, results: list[dict]) -> RunSet:
    """A RunSet from stored point dicts (``points/<key>.json`` contents)."""
    return RunSet(
        label,
        {
            scenario_id(r["scenario"]): PointResult(
                r["key"], r["scenario"], r.get("status", "failed"), r.get("summary", {})
            )
            for r in results
        },
    )


def load_folder(folder: Path) -> RunSet:
    """The last run written to a ``macdma regress`` output folder: the points its
    ``results.csv`` lists, read from ``points/<key>.json``."""
    folder = Path(folder)
    listing = folder / "results.csv"
    if not listing.is_file():
        raise ResultsDbError(
            f"{folder} is not a macdma regress output folder (no results.csv in it)"
        )
    results = []
    with open(listing, newline="") as handle:
        for row in csv.DictReader(handle):
            path = folder / "points" / f"{row.get('key')}.json"
            try:
                point = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as error:
                raise ResultsDbError(
                    f"{folder}: results.csv lists point {row.get('key')} but {path} cannot be "
                    f"read ({error})"
                ) from None
            if not isinstance(point, dict) or not {"key", "scenario"} <= point.keys():
                raise ResultsDbError(
                    f"{folder}: {path} is not a stored point (no key or scenario in it); "
                    "re-run the sweep to write it again"
                )
            results.append(point)
    return run_set_of(str(folder), results)


def _resolve_commit(spec: str) -> str:
    """``spec`` as a full commit hash when git knows it (HEAD~1, a branch, a prefix), else
    as given (a hash prefix recorded on another checkout)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"{spec}^{{commit}}"],
            cwd=PACKAGE_ROOT,
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return spec
    return done.stdout.strip() if done.returncode == 0 else spec


def load_run(spec: str, db_path: Path | str) -> RunSet:
    """A run named on the command line: an output folder, or a commit in the database."""
    path = Path(spec)
    if path.is_dir():
        return load_folder(path)
    commit = _resolve_commit(spec)
    if not all(c in "0123456789abcdef" for c in commit.lower()) or len(commit) < 4:
        raise ResultsDbError(
            f"{spec!r}: no such folder, and not a commit (git does not know it and it is not "
            f"a hash prefix of 4 or more hex digits)"
        )
    if not Path(db_path).is_file():
        raise ResultsDbError(
            f"{spec!r} is not a folder, and there is no results database at {db_path} to look "
            f"the commit up in (macdma regress writes one; --db names another)"
        )
    with ResultsDb(db_path) as db:
        return db.run_set_at_commit(spec, commit)


@dataclass(frozen=True)
class Change:
    """A metric (or the status) of one point that moved between two runs."""

    scenario_id: str
    label: str
    metric: str
    before: object
    after: object
    relative: float | None  # |after - before| / max(|before|, |after|); None if not numbers


@dataclass
class Comparison:
    """What :func:`compare` found between ``before`` and ``after``."""

    before: str
    after: str
    tolerance: float
    compared: int = 0
    changes: list[Change] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)


#: The status of a point the earlier run has and the later one lacks.
MISSING = "missing"


def _moved(before, after, tolerance: float) -> tuple[bool, float | None]:
    """(whether a metric moved from ``before`` to ``after``, the relative change): beyond
    ``tolerance`` and beyond the printed resolution (values shown alike did not move)."""
    a, b = _number(before), _number(after)
    if a is None or b is None:
        return (a is None) != (b is None) or before != after, None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) != math.isnan(b), None
    scale = max(abs(a), abs(b))
    relative = abs(b - a) / scale if scale else 0.0
    return relative > tolerance and value_text(before) != value_text(after), relative


def compare(before: RunSet, after: RunSet, tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    """The points present in both runs whose status changed or whose summary metrics moved
    by more than ``tolerance`` (relative) and the printed resolution, in ``after``'s order;
    then every point of ``before`` that ``after`` lacks, as a status change to
    :data:`MISSING`."""
    result = Comparison(before.label, after.label, tolerance)
    for sid, b in after.points.items():
        a = before.points.get(sid)
        if a is None:
            result.only_after.append(scenario_label(b.scenario))
            continue
        result.compared += 1
        label = scenario_label(b.scenario)
        if a.status != b.status:
            result.changes.append(Change(sid, label, "status", a.status, b.status, None))
            continue
        for metric in sorted(set(a.summary) | set(b.summary)):
            if metric in NOT_COMPARED:
                continue
            moved, relative = _moved(a.summary.get(metric), b.summary.get(metric), tolerance)
            if moved:
                change = Change(
                    sid, label, metric, a.summary.get(metric), b.summary.get(metric), relative
                )
                result.changes.append(change)
    for sid, a in before.points.items():
        if sid not in after.points:
            label = scenario_label(a.scenario)
            result.only_before.append(label)
            result.changes.append(Change(sid, label, "status", a.status, MISSING, None))
    return result


def value_text(value) -> str:
    """A metric's value as the comparison shows it (1 or 2 decimals, "-" for none)."""
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.1f}"
    return "-" if value is None else str(value)


def relative_text(change: Change) -> str:
    """A change's relative size as the comparison shows it ("+3.2%"; "-" for none)."""
    if change.relative is None:
        return "-"
    a, b = _number(change.before), _number(change.after)
    return f"{'+' if b >= a else '-'}{100 * change.relative:.1f}%"


def comparison_markdown(comparison: Comparison, heading: str = "##") -> list[str]:
    """The comparison as Markdown lines: a summary sentence, then a table of the changes."""
    lines = [
        f"Before: {comparison.before}; after: {comparison.after}. "
        f"{comparison.compared} points in both, {len(comparison.changes)} changes beyond "
        f"{100 * comparison.tolerance:g}% (relative)"
        + (f"; {len(comparison.only_after)} points only after" if comparison.only_after else "")
        + (
            f"; {len(comparison.only_before)} points of before missing after (status "
            f"{MISSING} below)"
            if comparison.only_before
            else ""
        )
        + ".",
        "",
    ]
    if comparison.changes:
        lines += [
            "| point | metric | before | after | change |",
            "| --- | --- | --- | --- | --- |",
        ]
        for c in comparison.changes:
            lines.append(
                f"| {c.label} | {c.metric} | {value_text(c.before)} | {value_text(c.after)} | "
                f"{relative_text(c)} |"
            )
    else:
        lines.append("No point moved beyond the tolerance.")
    return lines


def write_comparison(comparison: Comparison, out: Path) -> tuple[Path, Path]:
    """``out/compare.md`` (the Markdown) and ``out/compare.csv`` (one row per change)."""
    out.mkdir(parents=True, exist_ok=True)
    md, table = out / "compare.md", out / "compare.csv"
    md.write_text("\n".join(["# macdma compare", "", *comparison_markdown(comparison)]) + "\n")
    with open(table, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["scenario_id", "point", "metric", "before", "after", "relative"])
        for c in comparison.changes:
            writer.writerow([c.scenario_id, c.label, c.metric, c.before, c.after, c.relative])
    return md, table


# -- the command ----------------------------------------------------------------------------------


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a relative tolerance such as 0.01 (1%), got {text!r}"
        ) from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be 0 <= tolerance < 1 (0.01 = 1%), got {value:g}")
    return value


def add_db_argument(parser: argparse.ArgumentParser) -> None:
    """``--db PATH``, shared by ``regress`` and ``compare``."""
    parser.add_argument(
        "--db",
        type=Path,
        default=default_db(),
        help="results database (default: regress/results.sqlite in the build folder, "
        f"{default_db()})",
    )


def add_compare_parser(commands) -> None:
    compare_parser = commands.add_parser(
        "compare",
        help="list the points whose metrics moved between two runs (folders or commits)",
        description="Compare two runs of macdma regress: output folders, or git commits with "
        "runs in the results database. A metric moved when it changed by more than the "
        "tolerance and prints differently; a point of the first run that the second lacks "
        "is listed as missing. Exit 0 when nothing moved, 1 when something moved or a point "
        "is missing, 2 for a run that cannot be read.",
    )
    compare_parser.add_argument(
        "runs", nargs="+", metavar="RUN", help="RUN_A RUN_B, or one RUN with --baseline"
    )
    compare_parser.add_argument("--baseline", metavar="RUN", help="the run to compare against")
    compare_parser.add_argument(
        "--tolerance",
        type=_tolerance,
        default=DEFAULT_TOLERANCE,
        help=f"relative change a metric may move unreported (default {DEFAULT_TOLERANCE:g})",
    )
    add_db_argument(compare_parser)
    compare_parser.add_argument(
        "--out",
        type=Path,
        default=default_compare_out(),
        help=f"folder for compare.md and compare.csv (default: {default_compare_out()})",
    )
    compare_parser.set_defaults(compare_parser=compare_parser)


def run_compare(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.baseline is not None:
        if len(args.runs) != 1:
            parser.error("with --baseline give one RUN to compare against it")
        specs = [args.baseline, args.runs[0]]
    elif len(args.runs) == 2:
        specs = args.runs
    else:
        parser.error(f"give two runs (RUN_A RUN_B) or one RUN and --baseline, got {args.runs}")
    try:
        before, after = (load_run(spec, args.db) for spec in specs)
    except ResultsDbError as error:
        print(f"macdma compare: {error}", file=sys.stderr)
        return 2
    comparison = compare(before, after, args.tolerance)
    print("\n".join(comparison_markdown(comparison)))
    md, table = write_comparison(comparison, args.out)
    print(f"\nwritten: {md} and {table}")
    return 1 if comparison.changes else 0
