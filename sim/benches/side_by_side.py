"""Before and after, side by side in one session: the same workloads on a commit before
the frame wire and on this tree, alternately, with wall and CPU seconds and the load.

    python -m macdma.sim.benches.side_by_side [--before REV] [--rounds N] [--frames N]
                                              [--sweep quick|default|none] [--jobs N]

The before side runs in a temporary ``git worktree`` of ``--before`` outside the repository
(its own ``.venv`` made by its ``make venv``, kept between runs); the after side is this
checkout with its ``.venv``. Each round runs, on each side (the order swapped every round,
so neither side always gets the quieter minutes): ``macdma bench --sim verilator`` (every
SoC workload and the loopback) and, unless ``--sweep none``, ``macdma regress`` on the
sweep (``--quick``: its 8 points; ``default``: the main job). Wall and CPU seconds are the
command's own (CPU: every process it waited for, simulators and pool workers included);
the load average is read before and after each command. The first round builds each
side's models (cached in each tree's ``build/``): read the later rounds for speed.

The default ``--before`` is the parent of the commit that added the frame player
(``hdl/sim_wire/player.py``), found in ``git log``. Writes ``side_by_side.json`` and
``side_by_side.md`` (a table for the README: each side's commit, the load) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: The file whose first commit marks the frame wire (its parent is the default "before").
FRAME_WIRE_MARKER = "hdl/sim_wire/player.py"
SWEEPS = ("quick", "default", "none")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def before_frame_wire(repo: Path) -> str:
    """The parent of the first commit that added :data:`FRAME_WIRE_MARKER`."""
    added = _git(repo, "log", "--diff-filter=A", "--format=%H", "--", FRAME_WIRE_MARKER)
    if not added:
        raise SystemExit(f"side_by_side: no commit adds {FRAME_WIRE_MARKER}; pass --before")
    return _git(repo, "rev-parse", added.splitlines()[-1] + "^")


@dataclass
class Side:
    """One tree: its name in the tables, its commit and where its ``macdma`` lives."""

    name: str
    commit: str
    tree: Path
    dirty: bool = False

    @property
    def macdma(self) -> Path:
        return self.tree / ".venv" / "bin" / "macdma"


def prepare_before(repo: Path, commit: str, where: Path) -> Side:
    """A detached worktree of ``commit`` under ``where`` (outside the repository), with its
    own ``.venv`` (made once)."""
    tree = where / f"macdma-before-{commit[:10]}"
    if not tree.exists():
        _git(repo, "worktree", "add", "--detach", str(tree), commit)
    side = Side("before", commit, tree)
    if not side.macdma.exists():
        subprocess.run(["make", "venv"], cwd=tree, check=True)
    return side


def this_tree(repo: Path) -> Side:
    dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no"))
    side = Side("after", _git(repo, "rev-parse", "HEAD"), repo, dirty)
    if not side.macdma.exists():
        raise SystemExit(f"side_by_side: {side.macdma} is missing: run make venv first")
    return side


@dataclass
class Measured:
    """One command on one side in one round."""

    side: str
    round: int
    what: str
    wall_seconds: float
    cpu_seconds: float
    load_before: float
    load_after: float
    rows: list = field(default_factory=list)  # the bench's rows (its own JSON), if any
    points: list = field(default_factory=list)  # a sweep's points: (sim ns, wall s) each


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(side: Side, round_: int, what: str, args: list[str], log: Path) -> Measured:
    """Run ``macdma *args`` in the side's tree; its wall and CPU seconds and the load."""
    load_before = os.getloadavg()[0]
    cpu, started = _children_cpu(), time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(
            [str(side.macdma), *args], cwd=side.tree, stdout=out, stderr=subprocess.STDOUT
        )
    wall, cpu = time.monotonic() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"side_by_side: {side.name} {what} failed ({log})")
    return Measured(side.name, round_, what, wall, cpu, load_before, os.getloadavg()[0])


def run_round(sides: list[Side], round_: int, args, out: Path) -> list[Measured]:
    results = []
    for side in sides:
        bench_json = out / f"bench-{side.name}-{round_}.json"
        bench_args = ["bench", "--sim", "verilator", "--frames", str(args.frames)]
        bench_args += ["--out", str(bench_json)]
        log = out / f"bench-{side.name}-{round_}.log"
        measured = measure(side, round_, "bench", bench_args, log)
        measured.rows = json.loads(bench_json.read_text())["rows"]
        results.append(measured)
        print(_line(measured), flush=True)
        if args.sweep != "none":
            sweep_args = ["regress", "--force", "--jobs", str(args.jobs)]
            sweep_args += ["--out", str(out / f"sweep-{side.name}-{round_}")]
            sweep_args += ["--db", str(out / f"results-{side.name}.sqlite")]
            if args.sweep == "quick":
                sweep_args.append("--quick")
            log = out / f"sweep-{side.name}-{round_}.log"
            measured = measure(side, round_, f"{args.sweep} sweep", sweep_args, log)
            measured.points = sweep_points(out / f"sweep-{side.name}-{round_}")
            results.append(measured)
            print(_line(measured), flush=True)
    return results


def sweep_points(folder: Path) -> list[tuple[float, float]]:
    """Each point's simulated ns and its simulation's own wall seconds (``points/*.json``):
    the same sweep file can hold other workloads on two commits (a model that changed
    simulates more or less time per point), so the sweep's speed is read per simulated ns
    too."""
    found = []
    for path in sorted((folder / "points").glob("*.json")):
        metrics = json.loads(path.read_text()).get("metrics", {})
        if metrics.get("sim_ns") and metrics.get("wall_seconds"):
            found.append((float(metrics["sim_ns"]), float(metrics["wall_seconds"])))
    return found


def _line(m: Measured) -> str:
    return (
        f"round {m.round} {m.side:<6} {m.what:<14} wall {m.wall_seconds:8.1f} s  "
        f"cpu {m.cpu_seconds:8.1f} s  load {m.load_before:.1f} -> {m.load_after:.1f}"
    )


def _ns_per_cpu(measured: list[Measured], side: str, workload: str) -> list[float]:
    return [
        row["sim_ns"] / row["cpu_seconds"]
        for m in measured
        if m.side == side and m.what == "bench"
        for row in m.rows
        if row["workload"] == workload and row.get("cpu_seconds")
    ]


def table(measured: list[Measured], sides: dict[str, Side], first_round: int) -> str:
    """The README's table: medians over the rounds from ``first_round`` on."""
    kept = [m for m in measured if m.round >= first_round] or measured
    loads = [value for m in kept for value in (m.load_before, m.load_after)]
    before, after = sides["before"], sides["after"]
    after_label = after.commit[:7] + (" + changes" if after.dirty else "")
    lines = [
        f"| what (Verilator) | before ({before.commit[:7]}) | after ({after_label}) | gain |",
        "| --- | ---: | ---: | ---: |",
    ]
    workloads = sorted({row["workload"] for m in kept if m.what == "bench" for row in m.rows})
    for workload in workloads:
        old = _ns_per_cpu(kept, "before", workload)
        new = _ns_per_cpu(kept, "after", workload)
        if old and new:
            o, n = statistics.median(old), statistics.median(new)
            lines.append(f"| `{workload}`, sim ns per CPU s | {o:,.0f} | {n:,.0f} | {n / o:.2f}x |")
    for what in sorted({m.what for m in kept if m.what != "bench"}):
        for unit, key in (("wall", "wall_seconds"), ("CPU", "cpu_seconds")):
            old = [getattr(m, key) for m in kept if m.what == what and m.side == "before"]
            new = [getattr(m, key) for m in kept if m.what == what and m.side == "after"]
            if old and new:
                o, n = statistics.median(old), statistics.median(new)
                lines.append(f"| {what}, {unit} s | {o:,.1f} | {n:,.1f} | {o / n:.2f}x |")
    for what in sorted({m.what for m in kept if m.points}):
        rates = {}
        for side in ("before", "after"):
            points = [p for m in kept if m.what == what and m.side == side for p in m.points]
            if points:
                rates[side] = (
                    sum(ns for ns, _ in points),
                    sum(wall for _, wall in points),
                    len(points),
                )
        if len(rates) == 2:
            (o_ns, o_wall, o_n), (n_ns, n_wall, n_n) = rates["before"], rates["after"]
            lines.append(
                f"| {what}: its points' simulated ns (sum, {o_n} / {n_n} points) | "
                f"{o_ns:,.0f} | {n_ns:,.0f} | |"
            )
            lines.append(
                f"| {what}: simulated ns per second of its points' own wall | "
                f"{o_ns / o_wall:,.0f} | {n_ns / n_wall:,.0f} | "
                f"{(n_ns / n_wall) / (o_ns / o_wall):.2f}x |"
            )
    rounds = sorted({m.round for m in kept})
    lines.append("")
    lines.append(
        f"Rounds {rounds[0]}..{rounds[-1]} (medians), sides alternating; load average "
        f"{min(loads):.1f} to {max(loads):.1f} on {os.cpu_count()} cores."
    )
    return "\n".join(lines)


def table_from(path: Path) -> str:
    """The table of a recorded run (its ``side_by_side.json``), sweep points re-read from
    the folders beside it when the record has none."""
    record = json.loads(path.read_text())
    sides = {
        name: Side(**{**fields, "tree": Path(fields["tree"])})
        for name, fields in record["sides"].items()
    }
    measured = [Measured(**fields) for fields in record["measured"]]
    for m in measured:
        if m.what != "bench" and not m.points:
            m.points = sweep_points(path.parent / f"sweep-{m.side}-{m.round}")
    rounds = {m.round for m in measured}
    return table(measured, sides, first_round=2 if len(rounds) > 1 else 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="side_by_side", description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="the before commit (default: before the frame wire)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per side (2)")
    parser.add_argument("--frames", type=int, default=100, help="frames per bench workload (100)")
    parser.add_argument("--sweep", choices=SWEEPS, default="quick", help="default: quick")
    parser.add_argument("--jobs", type=int, default=2, help="the sweep's parallel points (2)")
    parser.add_argument("--worktrees", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--out", type=Path, default=Path("build/side_by_side"))
    parser.add_argument(
        "--table-from", type=Path, help="print the table of a side_by_side.json and stop"
    )
    args = parser.parse_args(argv)
    if args.table_from:
        print(table_from(args.table_from))
        return 0
    if args.rounds < 1 or args.frames < 1 or args.jobs < 1:
        parser.error("--rounds, --frames and --jobs must be at least 1")
    repo = Path(_git(Path.cwd(), "rev-parse", "--show-toplevel"))
    if args.worktrees.resolve().is_relative_to(repo):
        parser.error("--worktrees must be outside the repository")
    after = this_tree(repo)
    commit = _git(repo, "rev-parse", args.before) if args.before else before_frame_wire(repo)
    before = prepare_before(repo, commit, args.worktrees)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    measured: list[Measured] = []
    for round_ in range(1, args.rounds + 1):
        order = [before, after] if round_ % 2 else [after, before]
        measured += run_round(order, round_, args, out)
        sides = {"before": before, "after": after}
        report = table(measured, sides, first_round=2 if args.rounds > 1 else 1)
        (out / "side_by_side.md").write_text(report + "\n")
        record = {
            "sides": {name: asdict(side) for name, side in sides.items()},
            "measured": [asdict(m) for m in measured],
            "table": report,
        }
        (out / "side_by_side.json").write_text(json.dumps(record, indent=2, default=str))
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
