"""What a sweep's numbers must show: expectations declared per experiment in the sweep
file (``[[experiment.expect]]``, docs/regression.md), the calibration expectations of
field-report conditions, and the one built-in check every sweep gets
(:func:`check_all_points_intact`), and the window check of a sweep that sets
``min_tx_window_frames`` (:func:`check_tx_windows`). The report lists each with PASS/FAIL/N/A and
``macdma regress`` exits 1 on a FAIL, and on an N/A (nothing to compare: the expectation
proved nothing) unless the sweep file marks the expectation ``optional = true``.

Kinds (``kind = ...``):

- ``within``: ``metric`` at every point ``at`` selects is within ``tolerance_pct`` of
  ``value``.
- ``order``: among points that differ only in the swept ``field``, each value of
  ``greater`` gives more ``metric`` than ``than``.
- ``monotonic``: along the swept numeric field ``along``, ``metric`` never moves against
  ``direction`` (``increasing``/``decreasing``) by more than ``tolerance_pct``, for each
  combination of the other swept fields.
- ``line_rate``: every point reaches ``min_pct`` of line rate in each direction it sends,
  with no frame dropped.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from .failures import failure_lines
from .metrics import METRICS
from .selection import at_text, check_at, declaration_error, grouped, ok, select

#: What "at line rate" means for an ideal point: frame stamps are exact; 1% covers the
#: first/last-frame edges of the window.
LINE_RATE_PCT = 99.0


#: The detail of a required expectation that had nothing to compare.
REQUIRED_NOTE = "; required: it fails the run (optional = true in the sweep file if expected)"


@dataclass(frozen=True)
class CheckResult:
    """One assertion's outcome: ``status`` is PASS, FAIL or N/A (no point it applies to);
    ``optional`` is True when an N/A is allowed (the sweep file's ``optional = true``)."""

    name: str
    statement: str
    status: str
    detail: str
    optional: bool = False

    @property
    def failed(self) -> bool:
        """A FAIL, or an N/A of a required check: either fails ``macdma regress``."""
        return self.status == "FAIL" or (self.status == "N/A" and not self.optional)


def _status(compared: bool, bad: list) -> str:
    return "N/A" if not compared else ("FAIL" if bad else "PASS")


def _number(value: float) -> str:
    return f"{value:,.2f}" if abs(value) < 100 else f"{value:,.1f}"


@dataclass(frozen=True)
class Expectation:
    """A declared expectation of one experiment: ``name`` (unique in the sweep), ``at``
    (the points it applies to: scenario field -> value; empty = all of them), ``context``
    (what the statement opens with; default the experiment and ``at``), ``optional``
    (an N/A, nothing to compare, does not fail the run)."""

    name: str
    experiment: str
    at: dict = field(default_factory=dict)
    context: str = ""
    optional: bool = False

    def statement(self) -> str:  # pragma: no cover - every kind defines it
        raise NotImplementedError

    def check(self, rows: list[dict]) -> CheckResult:  # pragma: no cover
        raise NotImplementedError

    def _where(self) -> str:
        return self.context or self.experiment + (f" at {at_text(self.at)}" if self.at else "")

    def _result(self, compared: bool, bad: list[str], good: str) -> CheckResult:
        detail = "; ".join(bad) if bad else (good if compared else "no finished point applies")
        if not compared and not self.optional:
            detail += REQUIRED_NOTE
        return CheckResult(self.name, self.statement(), _status(compared, bad), detail,
                           self.optional)  # fmt: skip


@dataclass(frozen=True)
class Within(Expectation):
    """``metric`` within ``tolerance_pct`` of ``value`` at each selected point; ``shown``
    is how the value is printed (e.g. "line rate" for 100% of it)."""

    metric: str = "throughput_mbps"
    value: float = 0.0
    tolerance_pct: float = 0.0
    shown: str = ""

    def statement(self) -> str:
        target = self.shown or f"{self.value:,g} {METRICS[self.metric].unit}"
        return f"{self._where()}: {self.metric} within {self.tolerance_pct:g}% of {target}"

    def check(self, rows: list[dict]) -> CheckResult:
        selected = select(ok(rows), self.at)
        bad, seen = [], []
        for r in selected:
            measured = r["summary"].get(self.metric)
            if measured is None:
                bad.append(f"{r['key']}: {self.metric} not measured")
                continue
            off = measured - self.value
            text = f"{_number(measured)} {METRICS[self.metric].unit}" + (
                f" ({100 * off / self.value:+.1f}%)" if self.value else ""
            )
            seen.append(text)
            if abs(off) > self.tolerance_pct / 100 * abs(self.value):
                bad.append(f"{r['key']}: {text}, outside {self.tolerance_pct:g}%")
        return self._result(bool(selected), bad, "measured " + ", ".join(seen))


@dataclass(frozen=True)
class Order(Expectation):
    """Each of ``greater`` (values of the swept ``field``) beats ``than`` in ``metric``
    among points whose other swept fields are equal."""

    metric: str = "throughput_mbps"
    field: str = ""
    greater: tuple = ()
    than: object = None
    others: tuple[str, ...] = ()  # the experiment's other swept fields

    def statement(self) -> str:
        greater = ", ".join(f"{self.field}={v}" for v in self.greater)
        return (
            f"{self._where()}: {greater} > {self.field}={self.than} in {self.metric} "
            "(same other swept fields)"
        )

    def check(self, rows: list[dict]) -> CheckResult:
        compared, bad = [], []
        for group in grouped(select(ok(rows), self.at), self.others).values():
            by_value = {r["scenario"][self.field]: r["summary"].get(self.metric) for r in group}
            low = by_value.get(self.than)
            if low is None:
                continue
            for value in self.greater:
                high = by_value.get(value)
                if high is None:
                    continue
                text = f"{value} {_number(high)} vs {self.than} {_number(low)}"
                compared.append(text)
                if not high > low:
                    bad.append(text)
        return self._result(bool(compared), bad, "; ".join(compared))


@dataclass(frozen=True)
class Monotonic(Expectation):
    """``metric`` never moves against ``direction`` along ``along`` by more than
    ``tolerance_pct`` (for each combination of the other swept fields)."""

    metric: str = "throughput_mbps"
    along: str = ""
    direction: str = "increasing"
    tolerance_pct: float = 0.0
    others: tuple[str, ...] = ()

    def statement(self) -> str:
        verb = "falls" if self.direction == "increasing" else "rises"
        return (
            f"{self._where()}: {self.metric} never {verb} as {self.along} grows "
            f"(tolerance {self.tolerance_pct:g}%)"
        )

    def check(self, rows: list[dict]) -> CheckResult:
        steps, bad = 0, []
        sign = 1 if self.direction == "increasing" else -1
        for key, group in grouped(select(ok(rows), self.at), self.others).items():
            group = sorted(group, key=lambda r: r["scenario"][self.along])
            for small, large in itertools.pairwise(group):
                a, b = small["summary"].get(self.metric), large["summary"].get(self.metric)
                if a is None or b is None:
                    continue
                steps += 1
                if sign * (b - a) < -self.tolerance_pct / 100 * abs(a):
                    context = ", ".join(f"{k}={v}" for k, v in zip(self.others, key, strict=True))
                    bad.append(
                        f"{self.along} {small['scenario'][self.along]} -> "
                        f"{large['scenario'][self.along]}: {_number(a)} -> {_number(b)}"
                        + (f" ({context})" if context else "")
                    )
        return self._result(bool(steps), bad, f"{steps} step{'s' * (steps != 1)} compared")


@dataclass(frozen=True)
class LineRate(Expectation):
    """Every selected point at >= ``min_pct`` of line rate in each direction it sends,
    with no drops."""

    min_pct: float = LINE_RATE_PCT

    def statement(self) -> str:
        return (
            f"{self._where()}: >= {self.min_pct:g}% of line rate in each direction, "
            "no frame dropped"
        )

    def check(self, rows: list[dict]) -> CheckResult:
        selected = select(ok(rows), self.at)
        bad, lowest = [], []
        for r in selected:
            s = r["summary"]
            for direction in ("tx", "rx"):
                pct = s.get(f"{direction}_line_rate_pct")
                if pct is None:
                    continue
                lowest.append(pct)
                if pct < self.min_pct:
                    bad.append(f"{r['key']} {direction} {pct:.2f}%")
            if s.get("frames_dropped"):
                bad.append(f"{r['key']} dropped {s['frames_dropped']}")
        good = f"{len(selected)} points, lowest {min(lowest, default=0.0):.2f}% of line rate"
        return self._result(bool(selected), bad, good)


KINDS = {"within": Within, "order": Order, "monotonic": Monotonic, "line_rate": LineRate}
# Keys each kind takes besides kind/name/at, with their defaults (None: required).
KIND_KEYS = {
    "within": {"metric": None, "value": None, "tolerance_pct": None},
    "order": {"metric": "throughput_mbps", "field": None, "greater": None, "than": None},
    "monotonic": {
        "metric": "throughput_mbps",
        "along": None,
        "direction": None,
        "tolerance_pct": 0.0,
    },
    "line_rate": {"min_pct": LINE_RATE_PCT},
}


def _non_negative(where: str, key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise declaration_error(f"{where} {key}", f"must be a number >= 0, got {value!r}")
    return float(value)


def parse_expectation(
    where: str, table: object, experiment: str, sweep: dict, base: dict, index: int
) -> Expectation:
    """One ``[[experiment.expect]]`` table of the experiment named ``experiment`` (its
    ``sweep`` and ``base`` values: see :func:`check_at`); ValueError naming ``where``
    (file and experiment) and the bad key."""
    where = f"{where} expect {index + 1}"
    if not isinstance(table, dict):
        raise declaration_error(where, f"must be a table, got {table!r}")
    kind = table.get("kind")
    if kind not in KINDS:
        raise declaration_error(f"{where} kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    name = table.get("name", f"{experiment}.{kind}")
    if not isinstance(name, str) or not name:
        raise declaration_error(f"{where} name", f"must be a non-empty string, got {name!r}")
    where = f"{where} ({name!r})"
    allowed = {"kind", "name", "at", "optional", *KIND_KEYS[kind]}
    extra = sorted(set(table) - allowed)
    if extra:
        raise declaration_error(
            where,
            f"unknown key(s) {', '.join(extra)} for kind {kind!r}; known: "
            f"{', '.join(sorted(allowed))}",
        )
    values = {}
    for key, default in KIND_KEYS[kind].items():
        if key not in table and default is None:
            raise declaration_error(where, f"kind {kind!r} needs {key!r}")
        values[key] = table.get(key, default)
    at = check_at(where, table.get("at", {}), sweep, base)
    optional = table.get("optional", False)
    if not isinstance(optional, bool):
        raise declaration_error(f"{where} optional", f"must be true or false, got {optional!r}")
    common = {"name": name, "experiment": experiment, "at": at, "optional": optional}
    if "metric" in values and values["metric"] not in METRICS:
        raise declaration_error(
            f"{where} metric",
            f"unknown metric {values['metric']!r}; known: {', '.join(METRICS)}",
        )
    others = tuple(k for k in sweep if k not in at)
    if kind == "within":
        value = values["value"]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise declaration_error(f"{where} value", f"must be a number, got {value!r}")
        return Within(
            **common,
            metric=values["metric"],
            value=float(value),
            tolerance_pct=_non_negative(where, "tolerance_pct", values["tolerance_pct"]),
        )
    if kind == "order":
        swept = values["field"]
        if swept not in sweep:
            raise declaration_error(
                f"{where} field", f"{swept!r} is not a swept field ({', '.join(sweep) or 'none'})"
            )
        if swept in at:
            raise declaration_error(f"{where} at", f"must not fix the ordered field {swept!r}")
        greater = values["greater"]
        greater = tuple(greater) if isinstance(greater, list) else (greater,)
        for key, chosen in (("greater", greater), ("than", (values["than"],))):
            for value in chosen:
                if value not in sweep[swept]:
                    raise declaration_error(
                        f"{where} {key}",
                        f"{value!r} is not a swept value of {swept} "
                        f"({', '.join(map(str, sweep[swept]))})",
                    )
        return Order(
            **common,
            metric=values["metric"],
            field=swept,
            greater=greater,
            than=values["than"],
            others=tuple(k for k in others if k != swept),
        )
    if kind == "monotonic":
        along = values["along"]
        if along not in sweep:
            raise declaration_error(
                f"{where} along", f"{along!r} is not a swept field ({', '.join(sweep) or 'none'})"
            )
        if along in at:
            raise declaration_error(f"{where} at", f"must not fix the field {along!r} it follows")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in sweep[along]):
            raise declaration_error(f"{where} along", f"{along!r} must be swept over numbers")
        if values["direction"] not in ("increasing", "decreasing"):
            raise declaration_error(
                f"{where} direction",
                f"must be 'increasing' or 'decreasing', got {values['direction']!r}",
            )
        return Monotonic(
            **common,
            metric=values["metric"],
            along=along,
            direction=values["direction"],
            tolerance_pct=_non_negative(where, "tolerance_pct", values["tolerance_pct"]),
            others=tuple(k for k in others if k != along),
        )
    min_pct = _non_negative(where, "min_pct", values["min_pct"])
    if min_pct > 100:
        raise declaration_error(f"{where} min_pct", f"must be 0..100, got {min_pct:g}")
    return LineRate(**common, min_pct=min_pct)


def check_all_points_intact(results: list[dict]) -> CheckResult:
    """Every point ran to the end: the bench fails a point with a damaged, reordered or
    silently lost frame; TX (pktgen retries) must put every frame on the wire."""
    failed = [r for r in results if r.get("status") != "ok"]
    short = [
        r for r in ok(results) if "tx" in r["metrics"] and r["metrics"]["tx"]["frames_dropped"] != 0
    ]
    bad = failed + short
    detail = (
        f"{len(results)} points, all delivered every frame intact"
        if not bad
        else "; ".join(failure_lines(results) + [f"{r['key']} (TX frames missing)" for r in short])
    )
    return CheckResult(
        "frames_intact",
        "every point delivers every frame intact (a damaged, reordered or uncounted frame "
        "fails the point)",
        "PASS" if not bad and results else ("N/A" if not results else "FAIL"),
        detail if results else "no point of this sweep applies",
    )


def check_tx_windows(results: list[dict], min_frames: int) -> CheckResult:
    """Every finished point that measures a TX rate took it over a window of at least
    ``min_frames`` frames. A stream's TX frames are its receiver's ACKs, not a measured
    rate (its figure is the RX goodput), so stream points are not counted."""
    measured = [
        r for r in ok(results) if "tx" in r["metrics"] and r["scenario"].get("traffic") != "stream"
    ]
    held = [(r, r["metrics"]["tx"].get("frames_in_window") or 0.0) for r in measured]
    bad = [f"{r['key']}: {frames:.1f} frames" for r, frames in held if frames < min_frames]
    fewest = min((frames for _, frames in held), default=0.0)
    return CheckResult(
        "tx_window",
        f"every TX rate is measured over a steady-state window of >= {min_frames} frames",
        _status(bool(measured), bad),
        "; ".join(bad)
        if bad
        else (
            f"{len(measured)} points, the fewest {fewest:.1f} frames"
            if measured
            else "no finished point measures a TX rate"
        ),
    )


def check_results(sweep, results: Iterable[dict]) -> list[CheckResult]:
    """The built-in checks, then every expectation of every experiment of ``sweep`` (its
    declared ones and its conditions' calibration ones) on ``results`` (stored points)."""
    results = list(results)
    checks = [check_all_points_intact(results)]
    if sweep.min_tx_window_frames:
        checks.append(check_tx_windows(results, sweep.min_tx_window_frames))
    for experiment in sweep.experiments:
        rows = [r for r in results if experiment.name in r.get("experiments", [])]
        checks += [expectation.check(rows) for expectation in experiment.expectations]
    return checks
