"""Build an exported top on Icarus or Verilator and run a cocotb test module on it.

Builds are cached in ``build/sim/<sim>/<top>-<key>/`` keyed by the Verilog text, the build
flags and whether waves are traced, so one (slow) Verilator build serves every test module
and every pytest run until the design changes. Each run gets its own folder under the build
(``runs/<test_module>-<key>/``) holding the results XML, the waveform and the cocotb log.

A build that is not cached takes minutes on Verilator: a command shows it through
:func:`announcing_builds` (the listener gets the simulator, the top and an estimate of the
time, from the last build of that top or :data:`DEFAULT_BUILD_SECONDS`, and returns a
context manager that runs while the build does).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from .simulators import SIMULATORS, prepare, wave_format
from .verilog import ROOT, Factory, build_dir, export_verilog, file_lock, write_atomically

DEFAULT_TEST_DIR: Path = ROOT / "tests" / "cocotb"
"""Where cocotb test modules live; put on the simulator's PYTHONPATH."""

TIMESCALE = ("1ns", "1ps")

# Icarus: none beyond cocotb's own -g2012 (a later -g would win). The export wakes every
# `always @*` block at time 0 under -g2012 as under -g2005 (wake_processes_at_time_zero in
# verilog.py), so a user's bench needs no flag either; tests/sim/cosim/test_verilog_icarus_flags.py
# builds every top both ways.
ICARUS_BUILD_ARGS: tuple[str, ...] = ()

# Verilator: Amaranth output trips style/width lint warnings that are fatal by default.
VERILATOR_BUILD_ARGS: tuple[str, ...] = ("-Wno-fatal",)

# Make variables of the Verilator model's C++ build: verilated.mk compiles the model's
# per-cycle code with OPT_FAST, -Os unless told otherwise; -O2 simulates the SoC about
# 1.15x faster (docs/performance.md).
VERILATOR_MAKE_VARIABLES: tuple[str, ...] = ("OPT_FAST=-O2",)

# cocotb builds Verilator models with --public-flat-rw: every signal of the design stays
# readable and writable from Python, so Verilator may optimise none of them away. A top
# whose benches reach only its ports is built without it (the SoC then simulates about
# 1.4x faster, docs/performance.md); a top whose bench reads internal signals is listed
# here (MacBench reads the statistics counters through the hierarchy).
VERILATOR_INTERNAL_ACCESS_TOPS: frozenset[str] = frozenset({"macdma_eth_mac"})
VERILATOR_PORTS_ONLY_ARGS: tuple[str, ...] = ("--public-depth", "1")
_PUBLIC_FLAT_RW = "--public-flat-rw"  # what cocotb's Verilator runner always adds

_STAMP = "build.json"
_WAVES_DUMP_MODULE = "macdma_waves_dump"

#: What a first build of a top takes on this kind of machine when none was made yet
#: (2 cores: the SoC on Verilator 2 to 4 minutes, Icarus seconds).
DEFAULT_BUILD_SECONDS = {"verilator": 150.0, "icarus": 5.0}

#: ``listener(sim, top, estimate_seconds, rebuild)`` -> a context manager held while a
#: model builds; ``rebuild`` is True when an older model of the top exists.
BuildListener = Callable[[str, str, float, bool], AbstractContextManager]
_BUILD_LISTENER: ContextVar[BuildListener | None] = ContextVar("build_listener", default=None)


@contextmanager
def announcing_builds(listener: BuildListener) -> Iterator[None]:
    """Within the block, every model build that is not cached is shown by *listener*."""
    token = _BUILD_LISTENER.set(listener)
    try:
        yield
    finally:
        _BUILD_LISTENER.reset(token)


def estimate_build_seconds(sim: str, top: str) -> tuple[float, bool]:
    """(seconds the next build of *top* on *sim* should take, whether one was built before):
    the newest recorded build of that top, else :data:`DEFAULT_BUILD_SECONDS`."""
    stamps = sorted(
        (build_dir() / "sim" / sim).glob(f"{top}-*/{_STAMP}"), key=lambda p: p.stat().st_mtime
    )
    for stamp in reversed(stamps):
        try:
            return float(json.loads(stamp.read_text())["build_seconds"]), True
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return DEFAULT_BUILD_SECONDS.get(sim, 60.0), False


class CocotbTestFailure(AssertionError):
    """A cocotb run failed, crashed, or ran no tests; the message names every failure.

    ``result`` holds the :class:`RunResult` when a results file was written, else None.
    ``summary`` is the message without the failing tests' tracebacks (one line per failed
    test, for a command line); ``details_path`` is where the whole story is: the results
    file when there is one, else the run folder (None when the run never started).
    """

    def __init__(
        self,
        message: str,
        result: RunResult | None = None,
        *,
        summary: str | None = None,
        details_path: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.result = result
        self.summary = summary if summary is not None else message.splitlines()[0]
        self.details_path = details_path


class SimulatorBuildError(RuntimeError):
    """The simulator could not compile the exported Verilog; ``details_path`` is the log
    file holding the compiler's output when the run had one."""

    details_path: Path | None = None


@dataclass(frozen=True)
class TestCaseResult:
    """One ``<testcase>`` of the cocotb results XML."""

    name: str
    status: str  # "passed", "failed", "error" or "skipped"
    message: str = ""
    details: str = ""
    sim_time_ns: float | None = None


@dataclass(frozen=True)
class RunResult:
    """Outcome of :func:`run_cocotb`.

    Members: ``passed``/``failed``/``skipped`` counts, ``results_xml`` (the JUnit file),
    ``wave_path`` (None unless waves were requested), ``sim_time_ns`` (largest simulated
    time any test reached, None if unknown), ``wall_seconds`` (build + run),
    ``build_seconds`` (0 when the build was reused) and per-test ``cases``.
    """

    sim: str
    top: str
    test_module: str
    passed: int
    failed: int
    skipped: int
    results_xml: Path
    wave_path: Path | None
    sim_time_ns: float | None
    wall_seconds: float
    build_seconds: float
    cases: tuple[TestCaseResult, ...] = field(default=())


def _short_hash(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


# Amaranth tags every statement with its Python file and line; an edit elsewhere in that
# file shifts them without changing the logic, so they are left out of the build key.
_SRC_ATTRIBUTE = re.compile(rb'\(\* src = "[^"]*" \*\)')


def design_text(verilog: Path) -> bytes:
    """The Verilog of *verilog* as a build key sees it: without Amaranth's source-line
    attributes, so an edit that moves lines in hdl/ rebuilds nothing."""
    return _SRC_ATTRIBUTE.sub(b"", verilog.read_bytes())


def _build_args(sim: str, waves: bool, top: str) -> list[str]:
    if sim == "icarus":
        args = list(ICARUS_BUILD_ARGS)
        return args + ["-s", _WAVES_DUMP_MODULE] if waves else args
    # cocotb adds --trace (VCD) when waves are on; a later --trace-fst switches to FST.
    fst = waves and wave_format(sim) == "fst"
    access = list(VERILATOR_PORTS_ONLY_ARGS) if _ports_only(sim, top) else []
    return list(VERILATOR_BUILD_ARGS) + access + (["--trace-fst"] if fst else [])


def _ports_only(sim: str, top: str) -> bool:
    """True when *top* is built for *sim* without cocotb's --public-flat-rw."""
    return sim == "verilator" and top not in VERILATOR_INTERNAL_ACCESS_TOPS


def _runner(sim: str, top: str):
    """cocotb's runner for *sim*; for a ports-only Verilator build, one that leaves out
    the --public-flat-rw cocotb adds."""
    # cocotb_tools is imported here and below for start-up time (about half a second): the
    # `macdma` command loads this module before it knows whether it will simulate.
    from cocotb_tools.runner import Verilator, get_runner

    if not _ports_only(sim, top):
        return get_runner(sim)

    class ChosenAccessVerilator(Verilator):
        def _build_command(self):
            commands = super()._build_command()
            verilate = [arg for arg in commands[0] if arg != _PUBLIC_FLAT_RW]
            return [verilate, *commands[1:]]

    return ChosenAccessVerilator()


def _icarus_dump_module(top: str) -> str:
    # cocotb's own dump module declares a SystemVerilog `string`, which -g2005 rejects.
    # vvp runs in the run folder, so a relative file name lands there.
    return (
        f"module {_WAVES_DUMP_MODULE};\n"
        f'  initial begin\n    $dumpfile("{top}.fst");\n    $dumpvars(0, {top});\n  end\n'
        "endmodule\n"
    )


@dataclass(frozen=True)
class ModelBuild:
    """A simulator model on disk: its ``folder``, the seconds this call spent building it
    (0 when reused) and ``recorded_seconds``, what its build took when it was made."""

    sim: str
    top: str
    folder: Path
    seconds: float
    recorded_seconds: float

    @property
    def cached(self) -> bool:
        return self.seconds == 0.0


def build_model(
    sim: str,
    top: str,
    *,
    params: Mapping[str, Any] | None = None,
    waves: bool = False,
    factory: Factory | None = None,
) -> ModelBuild:
    """Export *top* and build (or reuse) its *sim* model, as :func:`run_cocotb` would."""
    if sim not in SIMULATORS:
        raise ValueError(f"Unknown simulator {sim!r}; choose one of: {', '.join(SIMULATORS)}")
    prepare(sim)
    verilog = export_verilog(top, factory=factory, params=params)
    folder, seconds = _build(sim, top, verilog, waves)
    stamp = json.loads((folder / _STAMP).read_text())
    return ModelBuild(sim, top, folder, seconds, float(stamp.get("build_seconds", seconds)))


def _build(sim: str, top: str, verilog: Path, waves: bool) -> tuple[Path, float]:
    """Build (or reuse) the simulator model of *verilog*; return its folder and build time."""

    build_args = _build_args(sim, waves, top)
    make_variables = VERILATOR_MAKE_VARIABLES if sim == "verilator" else ()
    design = design_text(verilog)
    key = _short_hash(sim, design, build_args, make_variables, TIMESCALE, waves)
    sim_build = build_dir() / "sim" / sim / (f"{top}-{key}" + ("-waves" if waves else ""))
    with file_lock(sim_build.with_name(sim_build.name + ".lock")):
        if (sim_build / _STAMP).is_file():
            return sim_build, 0.0
        sources = [verilog]
        if sim == "icarus" and waves:
            dump = sim_build / f"{_WAVES_DUMP_MODULE}.v"
            write_atomically(dump, _icarus_dump_module(top))
            sources.append(dump)
        started = time.monotonic()
        make_flags = " ".join(filter(None, (os.environ.get("MAKEFLAGS"), *make_variables)))
        listener = _BUILD_LISTENER.get()
        shown = listener(sim, top, *estimate_build_seconds(sim, top)) if listener else nullcontext()
        try:
            with shown, _process_env({"MAKEFLAGS": make_flags} if make_variables else {}, ROOT):
                _runner(sim, top).build(
                    sources=sources,
                    hdl_toplevel=top,
                    build_dir=sim_build,
                    build_args=build_args,
                    timescale=TIMESCALE,
                    # Icarus traces through our own dump module; Verilator needs VM_TRACE=1.
                    waves=waves and sim == "verilator",
                    always=True,
                )
        except (RuntimeError, SystemExit) as error:
            raise SimulatorBuildError(
                f"{sim} could not build {top} from {verilog} ({error}); "
                "the compiler output (pytest: Captured stdout/stderr) says why"
            ) from error
        seconds = time.monotonic() - started
        stamp = {"sim": sim, "top": top, "verilog": str(verilog), "build_seconds": seconds}
        write_atomically(sim_build / _STAMP, json.dumps(stamp, indent=2))
    return sim_build, seconds


@contextmanager
def _process_env(overrides: Mapping[str, str], python_path: Path) -> Iterator[None]:
    """Temporarily adjust os.environ and sys.path for one cocotb runner call.

    cocotb's runner copies os.environ over its ``extra_env`` and sets the simulator's
    PYTHONPATH from sys.path, so both are set here instead. PYTEST_CURRENT_TEST is hidden
    because under pytest the runner calls sys.exit() on failure instead of returning,
    which would hide the failure reasons this module reports.
    """
    saved_env = dict(os.environ)
    saved_path = list(sys.path)
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    os.environ.update(overrides)
    sys.path.insert(0, str(python_path))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path


@contextmanager
def output_to_log(log_path: Path, *, echo: bool = False) -> Iterator[None]:
    """Send this process's (and so its children's) stdout and stderr to *log_path*.

    The redirection is of file descriptors 1 and 2, not of sys.stdout: the simulator is a
    subprocess that inherits them. With *echo*, a thread copies the output to the original
    stdout as well, as it arrives.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "wb") as log:
        copier = None
        if echo:
            read_end, write_end = os.pipe()
            copier = threading.Thread(target=_tee, args=(read_end, log, saved[0]), daemon=True)
            copier.start()
            target = write_end
        else:
            target = log.fileno()
        os.dup2(target, 1)
        os.dup2(target, 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            if copier is not None:
                os.close(write_end)  # the copier sees the end once the simulator is gone
                copier.join(timeout=10)
            os.close(saved[0])
            os.close(saved[1])


def _tee(read_end: int, log, echo_fd: int) -> None:
    with open(read_end, "rb", buffering=0) as source:
        while chunk := source.read(65536):
            log.write(chunk)
            log.flush()
            os.write(echo_fd, chunk)


def _text(element: ElementTree.Element | None) -> str:
    return (element.text or "").strip() if element is not None else ""


def _parse_case(case: ElementTree.Element) -> TestCaseResult:
    properties = {
        prop.get("name"): prop.get("value") for prop in case.iter("property") if prop.get("name")
    }
    sim_time = properties.get("sim_time_stop")
    found = (case.find(tag) for tag in ("failure", "error", "skipped"))
    outcome = next((element for element in found if element is not None), None)
    status = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(
        outcome.tag if outcome is not None else "", "passed"
    )
    details = "\n".join(filter(None, [_text(outcome), _text(case.find("system-err"))]))
    return TestCaseResult(
        name=case.get("name", "?"),
        status=status,
        message=outcome.get("message", "") if outcome is not None else "",
        details=details,
        sim_time_ns=float(sim_time) if sim_time else None,
    )


def parse_results(results_xml: Path) -> tuple[TestCaseResult, ...]:
    """Return every test case of a cocotb JUnit *results_xml* file."""
    root = ElementTree.parse(results_xml).getroot()
    return tuple(_parse_case(case) for case in root.iter("testcase"))


def _failure_message(
    label: str, cases: tuple[TestCaseResult, ...], crash: str, *, details: bool = True
) -> str:
    bad = [case for case in cases if case.status in ("failed", "error")]
    lines = [f"{label}: {len(bad)} of {len(cases)} cocotb test(s) failed"]
    for case in bad:
        headline = case.message.splitlines()[0] if case.message else ""
        lines.append(f"--- {case.name} ({case.status}): {headline}")
        if case.details and details:
            lines.append(case.details)
    if not cases:
        lines[0] = f"{label}: no cocotb test ran (check test_module and testcase names)"
    if crash:
        lines.append(f"simulator: {crash}")
    return "\n".join(lines)


def _failure(cases: tuple[TestCaseResult, ...], label: str, crash: str) -> str | None:
    """Return the failure message of a run, or None when it passed."""
    executed = [case for case in cases if case.status != "skipped"]
    if crash or not executed or any(case.status in ("failed", "error") for case in cases):
        return _failure_message(label, cases, crash)
    return None


def _testcase_list(testcase: str | list[str] | None) -> list[str] | None:
    if testcase is None:
        return None
    names = [testcase] if isinstance(testcase, str) else list(testcase)
    if not names or not all(isinstance(name, str) and name for name in names):
        raise ValueError(f"testcase must be a test name or a list of names, got {testcase!r}")
    return names


def _check_test_module(test_module: str, test_dir: Path) -> None:
    """Fail early, with a clear message, when a cocotb test module cannot be imported."""
    __tracebackhide__ = True
    for name in filter(None, (part.strip() for part in test_module.split(","))):
        package = name.split(".")[0]
        found = PathFinder.find_spec(package, [str(test_dir)]) or importlib.util.find_spec(package)
        if found is None:
            raise ValueError(f"cocotb test module {name!r} not found in {test_dir} or on sys.path")


def run_cocotb(
    *,
    top: str,
    test_module: str,
    sim: str,
    params: Mapping[str, Any] | None = None,
    testcase: str | list[str] | None = None,
    waves: bool = False,
    extra_env: Mapping[str, str] | None = None,
    test_dir: Path | None = None,
    seed: int | None = None,
    factory: Factory | None = None,
    log_path: Path | None = None,
    echo_log: bool = False,
) -> RunResult:
    """Export *top*, build it for *sim* (cached) and run cocotb *test_module* on it.

    *factory* replaces ``TOPS[top]`` (for designs that are not registered, e.g. in tests);
    *params* are its design parameters. *testcase* restricts the run to those test names.
    Waves are traced when *waves* is true or env WAVES=1; the file path is printed.
    *extra_env* reaches the test bench's os.environ; *test_dir* (default tests/cocotb)
    is put on its PYTHONPATH. With *log_path*, everything the build and the simulator print
    goes to that file instead of stdout (*echo_log*: to both), and a failure's
    ``details_path`` is that file. Raises :class:`CocotbTestFailure` when any test fails or
    errors, the simulator crashes, or no test ran.
    """
    __tracebackhide__ = True  # pytest: show the failure message, not this function's body

    if sim not in SIMULATORS:
        raise ValueError(f"Unknown simulator {sim!r}; choose one of: {', '.join(SIMULATORS)}")
    prepare(sim)
    started = time.monotonic()
    waves = waves or _env_flag("WAVES")
    names = _testcase_list(testcase)
    test_dir = Path(test_dir) if test_dir is not None else DEFAULT_TEST_DIR
    _check_test_module(test_module, test_dir)
    env = {str(key): str(value) for key, value in (extra_env or {}).items()}
    verilog = export_verilog(top, factory=factory, params=params)
    quiet = output_to_log(log_path, echo=echo_log) if log_path is not None else nullcontext()
    with quiet:
        try:
            return _build_and_run(
                top, test_module, sim, verilog, waves, names, env, test_dir, seed, started, log_path
            )
        except SimulatorBuildError as error:
            error.details_path = log_path  # the compiler's output is there
            raise


def _build_and_run(
    top: str,
    test_module: str,
    sim: str,
    verilog: Path,
    waves: bool,
    names: list[str] | None,
    env: dict[str, str],
    test_dir: Path,
    seed: int | None,
    started: float,
    log_path: Path | None,
) -> RunResult:
    """The part of :func:`run_cocotb` whose output may go to a log file."""
    __tracebackhide__ = True
    from cocotb_tools.runner import get_runner

    sim_build, build_seconds = _build(sim, top, verilog, waves)
    run_key = _short_hash(names, sorted(env.items()), seed, waves)
    run_dir = sim_build / "runs" / f"{test_module}-{run_key}"
    results_xml = run_dir / "results.xml"
    wave_path = run_dir / f"{top}.{wave_format(sim)}" if waves else None
    test_args = ["--trace-file", str(wave_path)] if waves and sim == "verilator" else []
    label = f"{test_module} on {sim} ({top})"
    crash = ""
    with file_lock(run_dir.with_name(run_dir.name + ".lock")):
        with _process_env({**env, "WAVES": "1" if waves else "0"}, test_dir):
            try:
                get_runner(sim).test(
                    test_module=test_module,
                    hdl_toplevel=top,
                    hdl_toplevel_lang="verilog",
                    build_dir=sim_build,
                    test_dir=run_dir,
                    results_xml=str(results_xml),
                    testcase=names,
                    seed=seed,
                    waves=waves,
                    test_args=test_args,
                    timescale=TIMESCALE,
                )
            except (RuntimeError, SystemExit) as error:
                # The simulator exited non-zero; the results file may still say why.
                crash = f"{type(error).__name__}: {error}"
        if not results_xml.is_file():
            raise CocotbTestFailure(
                f"{label}: simulation ended without a results file ({results_xml}); "
                f"{crash or 'the simulator output (pytest: Captured stdout) says why'}",
                summary=f"{label}: the simulator ended without results ({crash or 'no error'})",
                details_path=log_path or run_dir,
            )
        cases = parse_results(results_xml)

    if wave_path is not None:
        print(f"waves: {wave_path}" + ("" if wave_path.is_file() else " (not written!)"))
        if wave_path.suffix == ".vcd":
            print("note: VCD, not FST: install liblz4-dev for Verilator FST tracing")
    times = [case.sim_time_ns for case in cases if case.sim_time_ns is not None]
    result = RunResult(
        sim=sim,
        top=top,
        test_module=test_module,
        passed=sum(case.status == "passed" for case in cases),
        failed=sum(case.status in ("failed", "error") for case in cases),
        skipped=sum(case.status == "skipped" for case in cases),
        results_xml=results_xml,
        wave_path=wave_path,
        sim_time_ns=max(times) if times else None,
        wall_seconds=time.monotonic() - started,
        build_seconds=build_seconds,
        cases=cases,
    )
    message = _failure(cases, label, crash)
    if message is not None:
        summary = _failure_message(label, cases, crash, details=False)
        details = log_path or results_xml
        raise CocotbTestFailure(message, result, summary=summary, details_path=details)
    return result
