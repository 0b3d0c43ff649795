"""``macdma soak``: many full-duplex frames through ``macdma_soc`` with everything random,
checked byte for byte (sim/soak/soak_tb.py), and optionally faults injected by class.

    macdma soak [--frames N] [--seed S] [--sim verilator|icarus] [--json FILE]
                [--faults CLASS[,CLASS...]] [-v]

The seed is printed first, so a failure can be replayed exactly (``--seed S`` with the
same ``--frames``). A progress bar per direction (frames, ETA) runs meanwhile; at the end
a table per segment class, the totals, the coverage (empty bins named) and, with
``--faults``, the fault table. ``--json FILE`` writes all of it. docs/reliability.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..cosim.outputs import write_or_rescue
from ..cosim.progress import PROGRESS_ENV, ProgressFollower, RunProgress
from ..cosim.runner import CocotbTestFailure, announcing_builds, run_cocotb
from ..cosim.simulators import SIMULATORS
from ..cosim.verilog import build_dir
from ..run.scenario import WIRES, frame_count_type
from .plan import (
    FAULT_CLASSES,
    FAULT_SEGMENT_FRAMES,
    RECORD_ENV,
    SOAK_ENV,
    SoakConfig,
    plan_segments,
)

SOAK_TOP = "macdma_soc"
SOAK_MODULE = "macdma.sim.soak.soak_tb"
DEFAULT_FRAMES = 50_000


def _seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed is 0 or more, got {value}")
    return value


def parse_faults(text: str) -> tuple[str, ...]:
    """``CLASS[,CLASS...]`` (or ``all``) as a tuple of fault classes; a clear error for an
    unknown one."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == ["all"]:
        return FAULT_CLASSES
    unknown = [name for name in names if name not in FAULT_CLASSES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown fault class {', '.join(unknown) or repr(text)}: choose from "
            f"{', '.join(FAULT_CLASSES)} or all"
        )
    return tuple(dict.fromkeys(names))


def add_soak_parser(commands) -> None:
    """Register ``macdma soak`` on the CLI's subcommands."""
    soak = commands.add_parser(
        "soak",
        help="full-duplex soak with random sizes, layouts and bus stalls; faults",
        description="Send many full-duplex frames through the SoC with random sizes, "
        "fragment layouts and bus stalls, every one checked byte for byte, optionally with "
        "faults injected by class. The seed is printed first: '--seed S' with the same "
        "'--frames' replays a run exactly (docs/reliability.md).",
    )
    add = soak.add_argument
    add(
        "--frames",
        type=frame_count_type(),
        default=DEFAULT_FRAMES,
        help="frames per direction (50000)",
    )
    add("--seed", type=_seed, default=None, help="replay this seed (default: a random one)")
    add("--sim", choices=SIMULATORS, default="verilator", help="default: verilator")
    add("--json", type=Path, help="write the segments, totals, coverage and faults here")
    add(
        "--wire",
        choices=("auto", *WIRES),
        default="auto",
        help="GMII wire: frames = the frame player and recorder in the simulated top; "
        "cocotbext = cocotbext-eth's per-byte models; auto (default) = frames on Verilator, "
        "cocotbext on Icarus",
    )
    add(
        "--faults",
        type=parse_faults,
        default=(),
        help=f"inject these fault classes ({', '.join(FAULT_CLASSES)}, or all)",
    )
    add("-v", "--verbose", action="store_true", help="stream the simulator's output too")
    soak.set_defaults(soak_parser=soak)


def read_records(path: Path) -> list[dict]:
    """The bench's JSON lines (a half-written last line is left out)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return records


def source_commit() -> str:
    """The commit the run's RTL and bench come from: ``git rev-parse --short HEAD`` of
    this checkout, with "-dirty" when tracked files differ from it; "unknown" outside a
    git checkout (figures in the docs name it)."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )

    try:
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode != 0:
            return "unknown"
        dirty = git("diff", "--quiet", "HEAD", "--").returncode != 0
    except OSError:  # no git on this machine
        return "unknown"
    return head.stdout.strip() + ("-dirty" if dirty else "")


def summarise(config: SoakConfig, records: list[dict], wall_seconds: float) -> dict:
    """Totals over the segments the bench recorded, the coverage and the fault table."""
    segments = [r for r in records if r["kind"] == "segment"]
    summary = next((r for r in records if r["kind"] == "summary"), None)
    by_index = {seg["segment"]["index"]: seg for seg in segments}
    faults = [
        {**r, "detected": wire_fault_detected(by_index[r["segment"]])}
        if r["class"] == "wire" and r["segment"] in by_index
        else r
        for r in records
        if r["kind"] == "fault"
    ]
    totals = Counter(
        {key: 0 for key in ("tx_frames", "rx_frames", "tx_bytes", "rx_bytes", "tx_on_wire")}
    )
    totals.update({"rx_delivered": 0, "rx_dropped_counted": 0, "tx_dropped_counted": 0})
    for name in ("tx", "rx"):
        totals.update({f"{name}_lost": 0, f"{name}_counted_twice": 0})
    for seg in segments:
        for key in ("tx_frames", "rx_frames", "rx_delivered", "rx_dropped_counted"):
            totals[key] += seg[key]
        totals["tx_on_wire"] += seg.get("tx_on_wire", seg["tx_frames"])
        # Each lost TX frame once: the driver's drops, TX_DROPS (cut on the wire after its
        # write-back landed), TX_RESET_DISCARDS, and frames a SoC reset lost (the bench's).
        # Records from before TX_DROPS was kept counted the frames cut on the wire instead.
        totals["tx_dropped_counted"] += seg.get("tx_dropped_counted", 0)
        totals["tx_dropped_counted"] += seg.get("tx_drops", seg.get("tx_bad_on_wire", 0))
        totals["tx_dropped_counted"] += seg.get("tx_reset_discards", 0)
        totals["tx_dropped_counted"] += seg.get("tx_reset_lost", 0)
        totals["rx_dropped_counted"] += seg.get("rx_reset_lost", 0)
        totals["rx_bad_flagged"] += seg.get("rx_bad_flagged", 0)
        for key in ("tx_bytes", "rx_bytes", "problem_count", "sim_ns"):
            totals[key] += seg[key]
        for name, (lost, twice) in segment_balances(seg).items():
            # Segment by segment: a loss in one never cancels a double count in another.
            totals[f"{name}_lost"] += lost
            totals[f"{name}_counted_twice"] += twice
    coverage = summary["coverage"] if summary else {}
    return {
        "commit": source_commit(),
        "seed": config.seed,
        "frames_per_direction": config.frames,
        "faults_requested": list(config.faults),
        "finished": summary is not None,
        "segments_run": len(segments),
        "segments_planned": len(plan_segments(config)),
        "totals": dict(totals),
        "wall_seconds": wall_seconds,
        "coverage": coverage_summary(coverage),
        "fault_table": fault_table(faults),
        "problems": [p for seg in segments for p in seg["problems"]][:20],
        "segments": segments,
        "faults": faults,
    }


def segment_balances(segment: dict) -> dict[str, tuple[int, int]]:
    """A segment's frames lost silently and counted twice, per direction, from the bench's
    own balance (positive: lost; negative: counted twice) and its RX frames delivered more
    than once."""
    tx, rx = segment["tx_balance"], segment["rx_balance"]
    duplicates = segment.get("rx_duplicates", 0)
    return {"tx": (max(tx, 0), max(-tx, 0)), "rx": (max(rx, 0), max(-rx, 0) + duplicates)}


def balance_problems(report: dict) -> list[str]:
    """Every balance that is not 0, as "<where>: lost silently: N" and "<where>: counted
    twice: N", per direction and per fault-table row. A run with any of them has failed,
    whatever else it passed."""
    places = [(name.upper(), report["totals"], name) for name in ("tx", "rx")]
    problems = []
    for where, totals, name in places:
        for what, key in (("lost silently", "lost"), ("counted twice", "counted_twice")):
            if totals.get(f"{name}_{key}"):
                problems.append(f"{where}: {what}: {totals[f'{name}_{key}']}")
    for row in report["fault_table"]:
        where = f"{row['class']}/{row['site']}"
        if row["frames_lost"]:
            problems.append(f"{where}: lost silently: {row['frames_lost']}")
        if row.get("frames_counted_twice"):
            problems.append(f"{where}: counted twice: {row['frames_counted_twice']}")
    return problems


def lost_cell(row: dict) -> str:
    """A fault-table row's "lost silently" cell: the frames lost, and a double count as
    "counted twice: N" (never folded into the loss, never clamped to 0)."""
    parts = []
    if row["frames_lost"] or not row.get("frames_counted_twice"):
        parts.append(str(row["frames_lost"]))
    if row.get("frames_counted_twice"):
        parts.append(f"counted twice: {row['frames_counted_twice']}")
    return "; ".join(parts)


def wire_fault_detected(segment: dict) -> bool:
    """Whether the MAC saw a segment's wire fault: every bad frame counted in
    STATS_RX_FRAMES_BAD or (without an SFD) STATS_RX_PREAMBLE_ERRORS; for short gaps,
    every frame delivered or counted as dropped."""
    stats = segment["stats"]
    if segment["segment"]["fault_site"] == "short-gap":
        accounted = segment["rx_delivered"] + segment["rx_dropped_counted"]
        return accounted + segment.get("rx_bad_flagged", 0) >= segment["rx_frames"]
    bad = stats["STATS_RX_FRAMES_BAD"] + stats.get("STATS_RX_PREAMBLE_ERRORS", 0)
    return segment["rx_bad_sent"] > 0 and bad == segment["rx_bad_sent"]


def coverage_summary(coverage: dict[str, dict[str, int]]) -> dict:
    """Percent of bins hit, per cover point and overall, and the empty bins by name."""
    points = {}
    hit = total = 0
    empty = []
    for name, bins in sorted(coverage.items()):
        covered = sum(1 for hits in bins.values() if hits > 0)
        points[name] = {"bins": len(bins), "covered": covered, "hits": bins}
        hit += covered
        total += len(bins)
        empty += [f"{name}[{label}]" for label, hits in bins.items() if hits == 0]
    return {
        "percent": 100.0 * hit / total if total else 0.0,
        "bins": total,
        "covered": hit,
        "empty": empty,
        "points": points,
    }


def fault_table(faults: list[dict]) -> list[dict]:
    """One row per fault class and site: injected, detected, recovered, frames lost."""
    rows: dict[tuple[str, str], Counter] = {}
    outcomes: dict[tuple[str, str], str] = {}
    for fault in faults:
        key = (fault["class"], fault["site"])
        row = rows.setdefault(key, Counter())
        row["injected"] += fault["injected"]
        row["detected"] += bool(fault["detected"])
        row["recovered"] += bool(fault["recovered"])
        row["frames_lost"] += fault["frames_lost"]
        row["frames_counted_twice"] += fault.get("frames_counted_twice", 0)
        row["frames_dropped_counted"] += fault["frames_dropped_counted"]
        outcomes[key] = fault["outcome"]
    return [
        {"class": c, "site": s, **rows[(c, s)], "outcome": outcomes[(c, s)]}
        for c, s in sorted(rows)
    ]


def format_report(report: dict) -> str:
    """The summary printed at the end of ``macdma soak``."""
    t = report["totals"]
    lines = [
        f"seed {report['seed']} on commit {report.get('commit', 'unknown')}: "
        f"{report['segments_run']} of {report['segments_planned']} segments, "
        f"{'finished' if report['finished'] else 'NOT finished'}",
        "",
        f"{'direction':<10}{'frames':>9}{'bytes':>13}{'delivered':>11}{'dropped+counted':>17}"
        f"{'lost':>6}",
        _direction_row("tx", t, "tx_on_wire", "tx_dropped_counted"),
        _direction_row("rx", t, "rx_delivered", "rx_dropped_counted"),
        "",
        f"simulated {t.get('sim_ns', 0) / 1e6:,.1f} ms in {report['wall_seconds']:,.0f} s wall; "
        f"problems: {t.get('problem_count', 0)}",
    ]
    by_irq = Counter(seg["segment"]["irq"] for seg in report["segments"])
    lines.append(
        "segments by IRQ strategy: " + ", ".join(f"{k} {v}" for k, v in sorted(by_irq.items()))
    )
    cov = report["coverage"]
    lines.append(
        f"coverage: {cov['percent']:.1f}% ({cov['covered']} of {cov['bins']} bins)"
        + (f"; empty: {', '.join(cov['empty'])}" if cov["empty"] else "; no empty bin")
    )
    if report["fault_table"]:
        lines += ["", format_fault_table(report["fault_table"])]
    for problem in balance_problems(report) + report["problems"][:10]:
        lines.append(f"problem: {problem}")
    return "\n".join(lines)


def _direction_row(name: str, totals: dict, delivered_key: str, counted_key: str) -> str:
    frames, size = totals[f"{name}_frames"], totals[f"{name}_bytes"]
    delivered, counted = totals[delivered_key], totals[counted_key]
    lost = f"{totals.get(f'{name}_lost', 0):>6}"
    if totals.get(f"{name}_counted_twice"):
        lost += f"  counted twice: {totals[f'{name}_counted_twice']}"
    return f"{name:<10}{frames:>9,}{size:>13,}{delivered:>11,}{counted:>17,}{lost}"


def format_fault_table(rows: list[dict]) -> str:
    """The fault table as Markdown (also what the README shows)."""
    out = [
        "| class | site | injected | detected | recovered | dropped, counted | lost silently "
        "| outcome |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        out.append(
            f"| {r['class']} | {r['site']} | {r['injected']} | {r['detected']} | "
            f"{r['recovered']} | {r['frames_dropped_counted']} | {lost_cell(r)} | "
            f"{r['outcome']} |"
        )
    return "\n".join(out)


def soak_config(
    frames: int, seed: int, faults: tuple[str, ...] = (), wire: str = "auto"
) -> SoakConfig:
    """The run's config: with faults, shorter segments (one fault each)."""
    if faults:
        return SoakConfig(frames, seed, FAULT_SEGMENT_FRAMES, faults, wire=wire)
    return SoakConfig(frames, seed, wire=wire)


def soak_top(config: SoakConfig) -> str:
    """The simulated top of *config* (its wire resolved): ``macdma_soc``, with the frame
    wire ``macdma_soc_wire``."""
    return SOAK_TOP + ("_wire" if config.wire == "frames" else "")


def soak_paths() -> tuple[Path, Path]:
    """A new run's log and record files: build/logs/soak-<time>-<pid>.log and
    build/soak/soak-<time>-<pid>.jsonl (kept, so an interrupted run keeps its segments)."""
    name = f"soak-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    return build_dir() / "logs" / f"{name}.log", build_dir() / "soak" / f"{name}.jsonl"


def run_soak(
    config: SoakConfig,
    *,
    sim: str = "verilator",
    log_path: Path | None = None,
    record_path: Path | None = None,
    echo_log: bool = False,
    on_progress=None,
) -> dict:
    """Run the soak on *sim*; return the report (:func:`summarise`). The bench appends a
    JSON line per segment to *record_path* (default: a scratch file). Raises
    :class:`macdma.sim.cosim.runner.CocotbTestFailure` when a check failed; its ``report``
    attribute then holds what the bench recorded up to the failure."""
    config = config.on(sim)
    with tempfile.TemporaryDirectory() as scratch:
        if record_path is None:
            record_path = Path(scratch) / "soak.jsonl"
        record_path.parent.mkdir(parents=True, exist_ok=True)
        record_path.unlink(missing_ok=True)
        env = {SOAK_ENV: config.to_json(), RECORD_ENV: str(record_path), "PYTHONUNBUFFERED": "1"}
        follower = None
        if on_progress is not None:
            env[PROGRESS_ENV] = str(Path(scratch) / "progress.jsonl")
            follower = ProgressFollower(Path(env[PROGRESS_ENV]), on_progress)
            follower.start()
        started = time.monotonic()
        try:
            result = run_cocotb(
                top=soak_top(config),
                test_module=SOAK_MODULE,
                sim=sim,
                extra_env=env,
                log_path=log_path,
                echo_log=echo_log,
            )
            wall = time.monotonic() - started - result.build_seconds
        except CocotbTestFailure as error:
            error.report = summarise(config, read_records(record_path), time.monotonic() - started)
            raise
        finally:
            if follower is not None:
                follower.stop()
        return summarise(config, read_records(record_path), wall)


#: How long an interrupted soak waits for its killed simulator to be gone.
REAP_TIMEOUT_S = 10.0


def reap_children(timeout_s: float = REAP_TIMEOUT_S) -> None:
    """Wait for this process's exited (or just killed) children, for at most *timeout_s*."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # no child left
        if pid == 0:
            time.sleep(0.05)  # a child is still dying


def run_soak_command(args: argparse.Namespace) -> int:
    """``macdma soak``: print the seed, run with a progress bar, print the summary."""
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    config = soak_config(args.frames, seed, args.faults, args.wire).on(args.sim)
    log_path, record_path = soak_paths()
    faults = f", faults {','.join(config.faults)}" if config.faults else ""
    print(
        f"macdma soak: {config.frames:,} frames per direction on {args.sim} "
        f"({config.wire} wire), "
        f"seed {seed}{faults} (replay: --frames {config.frames} --seed {seed})",
        flush=True,
    )
    print(f"log: {log_path}", flush=True)
    failed = interrupted = None
    started = time.monotonic()
    try:
        with RunProgress(plain=args.verbose) as progress, announcing_builds(progress.building):
            report = run_soak(
                config,
                sim=args.sim,
                log_path=log_path,
                record_path=record_path,
                echo_log=args.verbose,
                on_progress=progress.update,
            )
    except CocotbTestFailure as error:
        failed, report = error, getattr(error, "report", None)
    except KeyboardInterrupt:
        # The first Ctrl-C ended the simulator (sim/cosim/interrupts.py); reap it here, so that
        # it never outlives the run, not even as a zombie. Then keep the segments it
        # finished (a second Ctrl-C meanwhile stops at once).
        reap_children()
        interrupted = True
        report = summarise(config, read_records(record_path), time.monotonic() - started)
    if report is not None:
        print()
        print(format_report(report))
        if args.json:
            written = write_or_rescue(args.json, json.dumps(report, indent=2), "the report")
            print(f"report written to {written}")
    print(f"segments: {record_path}")
    if interrupted:
        print("macdma soak: interrupted", file=sys.stderr)
        return 130
    if failed is not None:
        print(f"macdma soak failed: {failed.summary}\nlog: {log_path}", file=sys.stderr)
        return 1
    unbalanced = balance_problems(report) if report is not None else []
    if unbalanced:  # the bench reports these as problems too: never a pass without it
        print(f"macdma soak failed: {unbalanced[0]}\nlog: {log_path}", file=sys.stderr)
        return 1
    return 0
