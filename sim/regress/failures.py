"""Why points failed, as the terminal and the reports show it: each reason condensed to
one line (a table cell holds it), and a reason several points share stated once ("all 8
points: ..."), so a missing simulator does not fill the page with one message."""

from __future__ import annotations

from collections.abc import Iterable

#: The longest reason shown; the point's JSON and log keep the whole text.
MAX_REASON_CHARS = 300
NO_REASON = "no reason recorded (see the point's log)"


def condense(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` on one line: each line's whitespace collapsed, the lines joined by " / ",
    cut at ``limit`` characters (with "…")."""
    lines = (" ".join(line.split()) for line in str(text).splitlines())
    flat = " / ".join(line for line in lines if line)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def failure_reason(result: dict) -> str:
    """A failed point's reason on one line: its ``reason`` (the one-line message of the
    failure) when stored, else its ``error`` text, condensed."""
    return condense(result.get("reason") or result.get("error") or NO_REASON) or NO_REASON


def failures_by_reason(results: Iterable[dict]) -> list[tuple[str, list[dict]]]:
    """The failed points grouped by reason, in order of first appearance."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        if r.get("status") != "ok":
            groups.setdefault(failure_reason(r), []).append(r)
    return list(groups.items())


def failure_lines(results: list[dict]) -> list[str]:
    """One line per distinct reason: "all N points: R" when every point failed for the one
    reason, "point KEY: R" for a point alone with its reason, else "N points (KEY, ...): R"."""
    groups = failures_by_reason(results)
    if len(groups) == 1 and len(groups[0][1]) == len(results) > 1:
        return [f"all {len(results)} points: {groups[0][0]}"]
    lines = []
    for reason, points in groups:
        if len(points) == 1:
            lines.append(f"point {points[0]['key']}: {reason}")
        else:
            keys = ", ".join(p["key"] for p in points)
            lines.append(f"{len(points)} points ({keys}): {reason}")
    return lines
