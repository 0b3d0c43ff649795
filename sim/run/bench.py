"""``macdma bench``: how fast the co-simulation runs, measured and recorded (never judged).

Each workload runs on each simulator asked for; its speed is simulated ns per wall second
of the simulation alone (the cocotb module times itself, so Python start-up and the model
build are not in it). The reference is ``macdma_gmii_loopback`` (sim/benches/loopback.py):
the same GMII clocks and cocotbext-eth models with a wire between them, so a workload's
``ratio`` says how much of the wire models' own speed the whole SoC keeps.

With ``--limit`` the same run also builds and runs, per simulator, a harness of the SoC's
RTL on the full-duplex workload (sim/benches/limit/): C++ on Verilator, a plain-Verilog
testbench on Icarus; no cocotb, no Python, every frame still checked. Its simulated ns per
CPU second is the limit the cocotb workloads are read against: each SoC row's
``fraction_of_limit``.

The table is printed and written, with the git commit, the simulator and cocotb versions
and the host's cores and load, to ``build/bench/bench.json``; every run is also appended
to ``build/bench/history.jsonl``. A benchmark never fails on time: it fails only when a
workload itself fails (a frame damaged or lost), as ``macdma run`` would.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..benches.limit.harness import LimitBuildError, LimitHarnessFailure
from ..cosim.failures import failure_message
from ..cosim.progress import PointsProgress, showing_build, stdout_copy
from ..cosim.runner import (
    CocotbTestFailure,
    announcing_builds,
    build_model,
    output_to_log,
    run_cocotb,
)
from ..cosim.simulators import SIMULATORS, SimulatorNotFound, prepare
from ..cosim.verilog import ROOT, build_dir
from .scenario import (
    MEMORY_MODELS,
    WIRES,
    Scenario,
    frame_count_type,
    memory_bytes_for,
    run_scenario,
    scenario_top,
    wire_of,
)

LOOPBACK_MODULE = "macdma.sim.benches.loopback_tb"
DEFAULT_FRAMES = 200
LOOPBACK = "loopback"


@dataclass(frozen=True)
class Workload:
    """One bench row: ``name``, what it is, and the scenario it runs (None: the loopback).

    ``frames`` scales with ``--frames``; ``frames_scale`` keeps slow workloads short
    (a fraction of the frames, at least 4).
    """

    name: str
    description: str
    scenario: Scenario | None = None
    frames_scale: float = 1.0

    def frames(self, requested: int) -> int:
        return max(4, round(requested * self.frames_scale))


WORKLOADS: tuple[Workload, ...] = (
    Workload(LOOPBACK, "bare GMII loopback, 1514 B frames"),
    Workload(
        "soc-both-ideal",
        "SoC full duplex, 1514 B, polling, ideal CPU",
        Scenario(direction="both", frame_size=1514, irq="polling", cpu="ideal"),
    ),
    Workload(
        "soc-tx-ideal",
        "SoC TX 1500 B, NAPI, ideal CPU (reference of the next row)",
        Scenario(direction="tx", frame_size=1500, irq="napi", cpu="ideal"),
    ),
    Workload(
        "soc-tx-microblaze",
        "SoC TX 1500 B, NAPI, microblaze-66",
        Scenario(direction="tx", frame_size=1500, irq="napi", cpu="microblaze-66"),
        frames_scale=0.5,
    ),
    Workload(
        "soc-rx-napi",
        "SoC RX at line rate, 1514 B, NAPI, ideal CPU",
        Scenario(direction="rx", frame_size=1514, irq="napi", cpu="ideal"),
    ),
)
WORKLOAD_NAMES = tuple(workload.name for workload in WORKLOADS)

#: The workload the limit harnesses mirror (``--limit``).
LIMIT_WORKLOAD = "soc-both-ideal"

# The goals, reported beside the table (a benchmark does not fail on them).
GOALS = (
    ("soc-both-ideal", LOOPBACK, 0.5),
    ("soc-tx-microblaze", "soc-tx-ideal", 0.8),
)


@dataclass(frozen=True)
class BenchRow:
    """One workload measured on one simulator."""

    sim: str
    workload: str
    description: str
    frames: int
    sim_ns: float
    wall_seconds: float
    build_seconds: float  # what the model's build took (recorded when it was made)
    build_cached: bool
    cpu_seconds: float = 0.0  # CPU time of the simulator process, start-up included
    ratio_to_loopback: float | None = None
    wire: str = ""  # the SoC workloads' GMII wire (Scenario.wire); "" for the loopback
    # sim ns per CPU second over the C++ limit harness's, same run (``--limit``), or None
    fraction_of_limit: float | None = None

    @property
    def sim_ns_per_wall_second(self) -> float:
        return self.sim_ns / self.wall_seconds if self.wall_seconds > 0 else 0.0

    @property
    def sim_ns_per_cpu_second(self) -> float:
        """Less sensitive to other jobs on the host than the wall-clock figure."""
        return self.sim_ns / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {
            **dataclasses.asdict(self),
            "sim_ns_per_wall_second": self.sim_ns_per_wall_second,
            "sim_ns_per_cpu_second": self.sim_ns_per_cpu_second,
        }


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run_loopback(sim: str, frames: int, log_path: Path | None) -> tuple[float, float]:
    # The loopback top is imported here and in _build for start-up time: it loads Amaranth
    # (about a second), and `macdma` loads this module for its options on every command.
    from ..benches.loopback import LOOPBACK_TOP, GmiiLoopback

    with tempfile.TemporaryDirectory() as scratch:
        record_path = Path(scratch) / "loopback.json"
        run_cocotb(
            top=LOOPBACK_TOP,
            test_module=LOOPBACK_MODULE,
            sim=sim,
            factory=GmiiLoopback,
            extra_env={
                "MACDMA_BENCH_FRAMES": frames,
                "MACDMA_BENCH_FRAME_BYTES": 1514,
                "MACDMA_BENCH_RECORD": record_path,
            },
            log_path=log_path,
        )
        record = json.loads(record_path.read_text())
    return float(record["sim_ns"]), float(record["wall_seconds"])


def _build(sim: str, scenario: Scenario | None):
    if scenario is None:
        from ..benches.loopback import LOOPBACK_TOP, GmiiLoopback

        return build_model(sim, LOOPBACK_TOP, factory=GmiiLoopback)
    top, params = scenario_top(scenario)
    return build_model(sim, top, params=params)


def measure(
    sim: str,
    workload: Workload,
    frames: int,
    log=print,
    log_path: Path | None = None,
    memory: str | None = None,
    wire: str | None = None,
) -> BenchRow:
    """Build (cached) and run *workload* on *sim* with *frames* frames; return its row.
    With *log_path*, the simulator's output goes to that file instead of stdout; *memory*
    and *wire* override the scenario's host memory model and GMII wire (``Scenario``)."""
    count = workload.frames(frames)
    scenario = None
    if workload.scenario is not None:
        scenario = dataclasses.replace(workload.scenario, sim=sim, frames=count)
        if memory is not None:
            scenario = dataclasses.replace(scenario, memory=memory)
        if wire is not None:
            scenario = dataclasses.replace(scenario, wire=wire)
    if log_path is None:
        build = _build(sim, scenario)
    else:  # the compiler's output beside the run's log, not over the progress display
        with output_to_log(log_path.with_name(f"{log_path.stem}-build.log")):
            build = _build(sim, scenario)
    where = "" if log_path is None else f" (log: {log_path})"
    log(f"bench: {workload.name} on {sim}, {count} frames{where}", flush=True)
    cpu_before = _children_cpu_seconds()
    if scenario is None:
        sim_ns, wall_seconds = _run_loopback(sim, count, log_path)
    else:
        metrics = run_scenario(scenario, log_path=log_path)
        sim_ns, wall_seconds = float(metrics["sim_ns"]), float(metrics["wall_seconds"])
    row = BenchRow(
        sim=sim,
        workload=workload.name,
        description=workload.description,
        frames=count,
        sim_ns=sim_ns,
        wall_seconds=wall_seconds,
        build_seconds=build.recorded_seconds,
        build_cached=build.cached,
        cpu_seconds=_children_cpu_seconds() - cpu_before,
        wire="" if scenario is None else wire_of(scenario),
    )
    return row


def with_ratios(rows: list[BenchRow]) -> list[BenchRow]:
    """Each row's speed over the loopback's on the same simulator (None without one)."""
    loopback = {row.sim: row.sim_ns_per_wall_second for row in rows if row.workload == LOOPBACK}
    return [
        dataclasses.replace(
            row,
            ratio_to_loopback=row.sim_ns_per_wall_second / loopback[row.sim]
            if loopback.get(row.sim)
            else None,
        )
        for row in rows
    ]


def limit_scenario(frames: int, sim: str = "verilator") -> Scenario:
    """The scenario of :data:`LIMIT_WORKLOAD` at *frames* (as ``--frames`` scales it), on
    the top the limit harness drives: the host memory in HDL, the SoC's own GMII pins."""
    workload = next(workload for workload in WORKLOADS if workload.name == LIMIT_WORKLOAD)
    assert workload.scenario is not None
    return dataclasses.replace(
        workload.scenario,
        sim=sim,
        frames=workload.frames(frames),
        memory="hdl",
        wire="cocotbext",
    )


def limit_workload(scenario: Scenario):
    """The :class:`~macdma.sim.benches.limit.harness.LimitWorkload` of *scenario*: its
    frames, sizes, rings, burst cap, prefetch and polling period, at 1000 Mb/s GMII."""
    # Imported here for start-up time (as the loopback's): the GMII bench module loads
    # cocotb, and `macdma` loads this module for its options on every command.
    from macdma.firmware import regs

    from ..benches.gmii import GMII_1000
    from ..benches.limit.harness import LimitWorkload

    return LimitWorkload(
        frames=scenario.frames,
        frame_bytes=scenario.frame_size,
        tx_ring=scenario.tx_ring,
        rx_ring=scenario.rx_ring,
        rx_buf_bytes=scenario.rx_buf_bytes,
        burst_beats=scenario.burst_beats,
        prefetch=scenario.prefetch,
        poll_us=scenario.poll_us,
        ifg=regs.MAC_IFG_RESET_VALUE,  # the MAC's reset gap, which the scenarios keep
        sys_clk_ps=round(1_000_000 / scenario.sys_mhz),
        phy_clk_ps=GMII_1000.clock_period_ns * 1000,
        memory_bytes=memory_bytes_for(scenario),
    )


def measure_limit(sim: str, frames: int, log=print) -> dict:
    """Build (cached) and run *sim*'s limit harness on :data:`LIMIT_WORKLOAD`'s scenario
    at *frames*; return its record (``sim_ns_per_cpu_second`` is the limit)."""
    from ..benches.limit.harness import build_harness, run_harness

    scenario = limit_scenario(frames, sim)
    top, params = scenario_top(scenario)
    workload = limit_workload(scenario)
    build = build_harness(top, params, sim, log=log)
    log(f"bench: {sim} limit harness of {top}, {workload.frames} frames each way", flush=True)
    result = run_harness(build, workload)
    return {
        "workload": LIMIT_WORKLOAD,
        "top": top,
        "sim": sim,
        **result.as_dict(),
        "build_seconds": build.recorded_seconds,
        "build_cached": build.cached,
    }


def with_fractions_of_limit(rows: list[BenchRow], limits: list[dict]) -> list[BenchRow]:
    """Each SoC row with its speed per CPU second over the limit of its simulator (the
    loopback, and rows of a simulator without a limit, keep None)."""
    ceiling = {limit["sim"]: limit["sim_ns_per_cpu_second"] for limit in limits}
    return [
        dataclasses.replace(row, fraction_of_limit=row.sim_ns_per_cpu_second / ceiling[row.sim])
        if ceiling.get(row.sim) and row.workload != LOOPBACK
        else row
        for row in rows
    ]


_HARNESS_KIND = {"verilator": "C++ Verilator harness", "icarus": "plain-Verilog Icarus bench"}


def format_limit(limits: list[dict], rows: list[BenchRow]) -> str:
    """Each limit's line and each SoC workload's fraction of its simulator's limit."""
    lines = [
        f"limit: {_HARNESS_KIND[limit['sim']]} of {limit['top']} ({limit['workload']}'s "
        f"workload, {limit['frames']} frames each way, every frame checked): "
        f"{limit['sim_ns']:,.0f} sim ns in {limit['cpu_seconds']:.2f} cpu s = "
        f"{limit['sim_ns_per_cpu_second']:,.0f} ns/cpu s"
        for limit in limits
    ]
    lines.append(
        f"{'simulator':<9} {'workload':<18} {'wire':<9} {'ns/cpu s':>10} {'of the limit':>13}"
    )
    for row in rows:
        if row.fraction_of_limit is not None:
            lines.append(
                f"{row.sim:<9} {row.workload:<18} {row.wire or '-':<9} "
                f"{row.sim_ns_per_cpu_second:>10,.0f} {row.fraction_of_limit:>13.3f}"
            )
    return "\n".join(lines)


def goals(rows: list[BenchRow]) -> list[dict]:
    """The issue's speed goals, evaluated on *rows* (only those both rows of exist)."""
    # With both wires measured, the goals are read on the default one.
    rows = [row for row in rows if not row.wire or row.wire == wire_of(Scenario(sim=row.sim))]
    speed = {(row.sim, row.workload): row.sim_ns_per_wall_second for row in rows}
    per_cpu = {(row.sim, row.workload): row.sim_ns_per_cpu_second for row in rows}
    found = []
    for sim in sorted({row.sim for row in rows}):
        for workload, reference, target in GOALS:
            if (sim, workload) in speed and speed.get((sim, reference)):
                ratio = speed[(sim, workload)] / speed[(sim, reference)]
                cpu_reference = per_cpu.get((sim, reference))
                found.append(
                    {
                        "sim": sim,
                        "workload": workload,
                        "reference": reference,
                        "ratio": ratio,
                        # The same per CPU second: steadier on a host shared with others.
                        "ratio_per_cpu_second": per_cpu[(sim, workload)] / cpu_reference
                        if cpu_reference
                        else None,
                        "target": target,
                        "met": ratio >= target,
                    }
                )
    return found


def format_table(rows: list[BenchRow]) -> str:
    """The printed table (also the one the README and docs/performance.md carry)."""
    lines = [
        f"{'simulator':<9} {'workload':<18} {'wire':<9} {'frames':>6} {'sim ns':>11} {'wall s':>7} "
        f"{'sim ns/s':>10} {'ratio':>6} {'cpu s':>6} {'ns/cpu s':>10} {'build s':>8}"
    ]
    for row in rows:
        ratio = "-" if row.ratio_to_loopback is None else f"{row.ratio_to_loopback:.2f}"
        build = f"{row.build_seconds:.1f}" + ("*" if row.build_cached else "")
        lines.append(
            f"{row.sim:<9} {row.workload:<18} {row.wire or '-':<9} {row.frames:>6} "
            f"{row.sim_ns:>11,.0f} {row.wall_seconds:>7.1f} "
            f"{row.sim_ns_per_wall_second:>10,.0f} {ratio:>6} {row.cpu_seconds:>6.1f} "
            f"{row.sim_ns_per_cpu_second:>10,.0f} {build:>8}"
        )
    lines.append(
        "sim ns/s: per wall second of the simulation alone; ratio: that over the loopback's on "
        "the same simulator; cpu s: the simulator process's CPU time, start-up included; "
        "build s: * = cached"
    )
    return "\n".join(lines)


# Where Python time goes, by the file a function lives in (first match wins). The benches
# beside a wing's command (run/, soak/) count as benches.
PROFILE_COMPONENTS: tuple[tuple[str, str], ...] = (
    ("cocotb clocks", "/cocotb/clock.py"),
    ("cocotbext-axi (host memory, AXI-Lite master)", "/cocotbext/axi/"),
    ("cocotbext-eth (GMII source and sink)", "/cocotbext/eth/"),
    ("cocotb scheduler, triggers, handles", "/cocotb/"),
    ("driver model (firmware/)", "/firmware/"),
    ("CPU model and platform", "/sim/model/cpu.py"),
    ("CPU model and platform", "/sim/model/platform_cocotb.py"),
    ("our benches (sim/benches/)", "/sim/benches/"),
    ("our benches (sim/benches/)", "/sim/run/scenario_tb.py"),
    ("our benches (sim/benches/)", "/sim/run/traffic.py"),
    ("our benches (sim/benches/)", "/sim/soak/soak_tb.py"),
    ("our benches (sim/benches/)", "/sim/soak/faults.py"),
    ("our benches (sim/benches/)", "/sim/soak/coverage.py"),
)
PROFILE_ENV = "COCOTB_ENABLE_PROFILING"
PROFILE_FILE = "cocotb.pstat"  # cocotb writes it into the run folder


def component_of(filename: str) -> str:
    """The :data:`PROFILE_COMPONENTS` name of a profiled function's file."""
    for name, fragment in PROFILE_COMPONENTS:
        if fragment in filename:
            return name
    return "other Python (standard library, ...)"


_COROUTINE_SEND = "<method 'send' of 'coroutine' objects>"


def profile_breakdown(stats: pstats.Stats) -> dict[str, float]:
    """Python seconds per component, largest first, from a cocotb cProfile.

    cocotb resumes every task through ``coroutine.send``; the time spent inside each
    resumption, callees included, is the cost of that task's code, and goes to the
    component its coroutine lives in (a model's own calls into cocotb handles and
    triggers included). What is left of the Python time is cocotb's event loop itself.
    """
    entries = stats.stats  # type: ignore[attr-defined]
    sends = [key for key in entries if key[2] == _COROUTINE_SEND]
    seconds: dict[str, float] = {}
    for (filename, _line, _name), (*_counts, callers) in entries.items():
        inside = sum(callers[send][3] for send in sends if send in callers)
        if inside:
            component = component_of(filename)
            seconds[component] = seconds.get(component, 0.0) + inside
    python_seconds = stats.total_tt  # type: ignore[attr-defined]
    seconds["cocotb event loop and trigger bookkeeping"] = max(
        0.0, python_seconds - sum(seconds.values())
    )
    return dict(sorted(seconds.items(), key=lambda item: -item[1]))


def format_profile(stats: pstats.Stats, wall_seconds: float, top: int = 25) -> str:
    """The profile's largest cumulative entries and the per-component split of its time."""
    lines = [f"{'cumulative s':>12} {'own s':>8} {'calls':>10}  function"]
    entries = stats.stats.items()  # type: ignore[attr-defined]
    ranked = sorted(entries, key=lambda item: -item[1][3])
    for (filename, line, name), (_calls, primitive, own, cumulative, _callers) in ranked[:top]:
        where = "/".join(Path(filename).parts[-2:]) if filename != "~" else ""
        lines.append(f"{cumulative:>12.2f} {own:>8.2f} {primitive:>10,}  {name} {where}:{line}")
    breakdown = profile_breakdown(stats)
    lines.append("")
    lines.append(f"{'wall s':>8} {'share':>6}  component (of {wall_seconds:.1f} s wall)")
    for component, spent in breakdown.items():
        if spent < 0.005:
            continue  # components that never ran a task
        lines.append(f"{spent:>8.2f} {100 * spent / wall_seconds:>5.1f}%  {component}")
    rest = max(0.0, wall_seconds - stats.total_tt)  # type: ignore[attr-defined]
    lines.append(f"{rest:>8.2f} {100 * rest / wall_seconds:>5.1f}%  simulator and GPI (not Python)")
    return "\n".join(lines)


def newest_profile(sim: str) -> Path:
    """The most recent cocotb profile written under the *sim* builds."""
    found = sorted(
        (build_dir() / "sim" / sim).glob(f"*/runs/*/{PROFILE_FILE}"),
        key=lambda path: path.stat().st_mtime,
    )
    if not found:
        raise FileNotFoundError(f"no {PROFILE_FILE} under {build_dir() / 'sim' / sim}")
    return found[-1]


def profile(
    sim: str, workload: Workload, frames: int, log=print, memory: str | None = None
) -> tuple[BenchRow, str]:
    """Run *workload* under cocotb's cProfile; return its row and the formatted profile.

    The profiler slows Python down, so the row's speed is not comparable to a plain run.
    """
    previous = os.environ.get(PROFILE_ENV)
    os.environ[PROFILE_ENV] = "1"
    started = time.time()
    try:
        row = measure(sim, workload, frames, log, memory=memory)
    finally:
        if previous is None:
            os.environ.pop(PROFILE_ENV)
        else:
            os.environ[PROFILE_ENV] = previous
    path = newest_profile(sim)
    if path.stat().st_mtime < started:
        raise FileNotFoundError(f"the run wrote no new {PROFILE_FILE} (newest: {path})")
    return row, format_profile(pstats.Stats(str(path)), row.wall_seconds)


def _command_output(*argv: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    except OSError:
        return ""
    return (done.stdout or done.stderr).strip()


def simulator_version(sim: str) -> str:
    """The simulator's own version line."""
    prepare(sim)
    if sim == "verilator":
        return _command_output("verilator", "--version")
    return _command_output("iverilog", "-V").splitlines()[0] if sim == "icarus" else ""


def environment(sims: list[str]) -> dict:
    """What a later run needs to compare against this one."""
    commit = _command_output("git", "rev-parse", "HEAD")
    dirty = bool(_command_output("git", "status", "--porcelain", "--untracked-files=no"))
    return {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git_commit": commit,
        "git_dirty": dirty,
        "host": platform.node(),
        "host_cores": os.cpu_count(),
        "python": platform.python_version(),
        "cocotb": importlib.metadata.version("cocotb"),
        "cocotbext_eth": importlib.metadata.version("cocotbext-eth"),
        "cocotbext_axi": importlib.metadata.version("cocotbext-axi"),
        "simulators": {sim: simulator_version(sim) for sim in sims},
        "env": {
            name: os.environ[name] for name in sorted(os.environ) if name.startswith("COCOTB_")
        },
    }


def _load() -> list[float]:
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def run_bench(
    sims: list[str],
    names: list[str],
    frames: int,
    out: Path,
    stream: TextIO | None = None,
    memory: str | None = None,
    wires: tuple[str | None, ...] = (None,),
    limit: bool = False,
) -> dict:
    """Measure *names* on *sims*; write and return the bench record. Each run's simulator
    output goes to ``logs/<sim>-<workload>.log`` next to *out*; progress to *stream*
    (default stdout): a rich bar on a terminal, a line per workload else. *memory*
    overrides the scenarios' host memory model; each SoC workload runs once per wire of
    *wires* (None: the scenario's), one after the other. With *limit*, each simulator's
    limit harness runs too, after the workloads, and every SoC row gets its fraction of
    its simulator's limit."""
    chosen = [workload for workload in WORKLOADS if workload.name in names]
    env = environment(sims)
    load_before = _load()
    rows = []
    limits: list[dict] = []
    display = stream if stream is not None else stdout_copy()

    def show_build(sim: str, top: str, estimate: float, rebuild: bool):
        # as lines above the bar: rich shows one live display at a time
        return showing_build(sim, top, estimate, rebuild, stream=display, live=False,
                             write=progress.note)  # fmt: skip

    try:
        runs = [
            (sim, workload, wire)
            for sim in sims
            for workload in chosen
            for wire in (wires if workload.scenario is not None else (None,))
        ]
        steps = len(runs) + (len(sims) if limit else 0)
        with PointsProgress(steps, display) as progress, announcing_builds(show_build):
            for sim, workload, wire in runs:
                name = workload.name + (f"-{wire}" if wire else "")
                log_path = out.parent / "logs" / f"{sim}-{name}.log"
                row = measure(sim, workload, frames, progress.note, log_path, memory, wire)
                rows.append(row)
                speed = f"{row.sim_ns_per_wall_second:,.0f} sim ns/s"
                progress.advance(f"{name} on {sim}: {speed}", ok=True)
            for sim in sims if limit else ():
                limits.append(measure_limit(sim, frames, progress.note))
                speed = f"{limits[-1]['sim_ns_per_cpu_second']:,.0f} sim ns/cpu s"
                progress.advance(f"limit harness on {sim}: {speed}", ok=True)
    finally:
        if stream is None:
            display.close()
    rows = with_ratios(rows)
    if limits:
        rows = with_fractions_of_limit(rows, limits)
    record = {
        **env,
        "frames": frames,
        "memory": memory or Scenario().memory,
        "wires": [wire or Scenario().wire for wire in wires],  # "auto": see AUTO_WIRE
        "load_average": {"before": load_before, "after": _load()},
        "rows": [row.as_dict() for row in rows],
        "goals": goals(rows),
        "limits": limits,
        "table": format_table(rows),
    }
    if limits:
        record["limit_table"] = format_limit(limits, rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2))
    with open(out.with_name("history.jsonl"), "a") as history:
        kept = {key: value for key, value in record.items() if key not in ("table", "limit_table")}
        history.write(json.dumps(kept))
        history.write("\n")
    return record


def add_bench_parser(commands) -> None:
    """The ``bench`` subcommand's options."""
    bench = commands.add_parser(
        "bench",
        help="measure simulation speed (sim ns per wall second) against a bare GMII loopback",
        description="Measure how fast the co-simulation runs (simulated ns per wall second) "
        "on a bare GMII loopback and on SoC scenarios, and record it in "
        "build/bench/bench.json: measured and recorded, never judged (docs/performance.md).",
    )
    bench.add_argument("--sim", choices=(*SIMULATORS, "both"), default="both", help="default: both")
    bench.add_argument(
        "--frames",
        type=frame_count_type(4),
        default=DEFAULT_FRAMES,
        help=f"frames per workload ({DEFAULT_FRAMES}; microblaze-66 runs half)",
    )
    bench.add_argument(
        "--only",
        action="append",
        choices=WORKLOAD_NAMES,
        help="run only this workload (repeatable; the loopback is always run for the ratio)",
    )
    bench.add_argument(
        "--profile",
        action="store_true",
        help="run the chosen workloads (default: soc-both-ideal) under cocotb's cProfile "
        "and print where the Python time goes; records nothing",
    )
    bench.add_argument(
        "--memory",
        choices=MEMORY_MODELS,
        default=None,
        help=f"the SoC workloads' host memory model (default: {Scenario().memory}, as macdma run)",
    )
    bench.add_argument(
        "--wire",
        choices=(*WIRES, "both"),
        default=None,
        help=f"the SoC workloads' GMII wire (default: {Scenario().wire}, as macdma run: "
        "frames on Verilator, cocotbext on Icarus); "
        "both: each SoC workload on each wire, one after the other",
    )
    bench.add_argument(
        "--limit",
        action="store_true",
        help=f"also build and run a harness of the SoC's RTL on {LIMIT_WORKLOAD}'s workload "
        "without cocotb (C++ on Verilator, plain Verilog on Icarus; every frame checked) and "
        "print each SoC workload's speed per CPU second as a fraction of it",
    )
    bench.add_argument(
        "--out",
        type=Path,
        default=None,
        help="the JSON record (default: build/bench/bench.json)",
    )


def _run_profiles(sims: list[str], names: list[str], frames: int, memory: str | None) -> int:
    chosen = [workload for workload in WORKLOADS if workload.name in names]
    try:
        for sim in sims:
            for workload in chosen:
                row, text = profile(sim, workload, frames, memory=memory)
                print(
                    f"\nprofile of {workload.name} on {sim} ({row.frames} frames, "
                    f"{row.sim_ns:,.0f} sim ns in {row.wall_seconds:.1f} s under the profiler)"
                )
                print(text)
    except (CocotbTestFailure, SimulatorNotFound, FileNotFoundError) as error:
        print(f"\nmacdma bench --profile failed: {error}", file=sys.stderr)
        return 1
    return 0


def run_bench_command(args: argparse.Namespace) -> int:
    """``macdma bench``: exit 0 unless a workload itself failed."""
    sims = list(SIMULATORS) if args.sim == "both" else [args.sim]
    sims.sort(key=lambda sim: sim != "verilator")  # the fast one first
    names = [LOOPBACK, *(args.only or [])] if args.only else list(WORKLOAD_NAMES)
    out = args.out or build_dir() / "bench" / "bench.json"
    if args.profile:
        return _run_profiles(sims, args.only or ["soc-both-ideal"], args.frames, args.memory)
    print(f"macdma bench: {', '.join(names)} on {', '.join(sims)}", flush=True)
    try:
        wires = tuple(WIRES) if args.wire == "both" else (args.wire,)
        record = run_bench(
            sims, names, args.frames, out, memory=args.memory, wires=wires, limit=args.limit
        )
    except (CocotbTestFailure, SimulatorNotFound) as error:
        print("\n" + failure_message("bench", error), file=sys.stderr)
        return 1
    except (LimitBuildError, LimitHarnessFailure) as error:
        print(f"\nmacdma bench --limit failed: {error}", file=sys.stderr)
        return 1
    print()
    print(record["table"])
    if record.get("limit_table"):
        print()
        print(record["limit_table"])
    for goal in record["goals"]:
        verdict = "met" if goal["met"] else "NOT met"
        per_cpu = goal["ratio_per_cpu_second"]
        print(
            f"goal {goal['sim']}: {goal['workload']} at {goal['ratio']:.2f}x "
            f"{goal['reference']} (target {goal['target']}x): {verdict}"
            + ("" if per_cpu is None else f"; {per_cpu:.2f}x per CPU second")
        )
    print(f"load average before/after: {record['load_average']}")
    print(f"record written to {out}")
    return 0
