"""``macdma``: the project's command line.

    macdma demo [--sim verilator|icarus] [--frames N] [--json FILE] [--waves]
    macdma run [--sim S] [--direction tx|rx|both] [--frame-size B] [--frames N]
               [--frags N] [--irq per-desc|eop|coalesce|polling|napi|dim]
               [--coalesce-frames N] [--coalesce-us US] [--poll-us US] [--budget N]
               [--burst-beats BEATS] [--prefetch N] [--tx-ring N] [--rx-ring N] [--rx-buf-bytes B]
               [--cpu NAME|FILE.toml] [--sys-mhz MHZ] [--link-mbps 10|100|1000]
               [--mem-latency-cycles CYCLES]
               [--tx-clean-budget N] [--irq-min-interval-us US] [--irq-core N]
               [--app-core N] [--tx-clean-lock queue|frozen] [--rx-per-irq N]
               [--linearize] [--waves] [--json FILE]
               [-v/--verbose]
    macdma regress [SWEEP.toml] [--quick] [--sim S] [--out DIR] [--force] [--jobs N]
                   [--scheduler ADDRESS|local:N] [--db PATH] [--baseline RUN]
    macdma compare RUN_A RUN_B | RUN --baseline RUN_A [--tolerance F] [--db PATH] [--out DIR]
    macdma bench [--sim verilator|icarus|both] [--frames N] [--only WORKLOAD] [--out FILE]

``demo`` builds the MAC, runs back-to-back 64-byte and 1518-byte frames through it in
both directions at 1000 Mb/s on a real simulator, and prints the throughput measured
from the GMII models' frame time stamps.

``run`` runs one scenario on the whole SoC with the driver model on a modelled CPU
(docs/driver-model.md) and prints throughput, line rate, IRQs, CPU load and latency;
while it runs, a progress display. The simulator's output goes to a log file whose path
is printed (``--verbose`` also streams it).

``regress`` runs a sweep of scenarios over all cores and writes JSON, CSV, a Markdown
report and plots, and checks the orderings physics demands (docs/regression.md), on the
local cores or a Dask cluster; every point goes into an SQLite results database.

``compare`` lists the points whose metrics moved between two runs (output folders or
commits in the results database).

``bench`` measures simulated ns per wall second of a bare GMII loopback and of the SoC
scenarios, and records them in build/bench/bench.json (docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from .cosim.failures import SIMULATION_ERRORS, failure_message
from .cosim.interrupts import ctrl_c_handling, stop_descendants
from .cosim.outputs import build_root_problem, unwritable_reason, write_or_rescue
from .cosim.progress import RunProgress, showing_build
from .cosim.runner import announcing_builds, run_cocotb
from .cosim.simulators import SIMULATORS
from .cosim.verilog import build_dir
from .regress import add_regress_parser, run_regress
from .regress.results_db import add_compare_parser, run_compare
from .run import knobs
from .run import scenario as scenario_module
from .run.bench import add_bench_parser, run_bench_command
from .soak.command import add_soak_parser, run_soak_command

DEMO_TOP = "macdma_eth_mac"
DEMO_MODULE = "macdma.sim.benches.mac_linerate"


class CommandParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line, not the usage block: ``macdma run:
    error: <message>`` and a hint to ``--help``, exit 2. Every subcommand's parser is one
    too (argparse makes subparsers of their parent's class)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n(`{self.prog} --help` lists the options)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 frames to time a rate, got {value}")
    return value


#: The subfolders of the build root each command writes (simulator models, logs, results).
BUILD_OUTPUTS = {
    "demo": ("sim",),
    "run": ("sim", "logs"),
    "regress": ("sim",),
    "soak": ("sim", "logs", "soak"),
    "bench": ("sim", "logs"),
}


def check_outputs(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Stop (exit 2) before any simulation when ``--json FILE``, ``--out DIR``, ``--db
    FILE`` or the build folder the command writes in cannot be written (tried for real:
    sim/cosim/outputs.py), so no result is computed only to be lost."""
    for option, folder in (("json", False), ("out", True), ("db", False)):
        path = getattr(args, option, None)
        if path is None or (option == "db" and args.command != "regress"):  # compare reads it
            continue
        folder = folder and not _is_file_out(args)
        reason = unwritable_reason(Path(path), folder=folder, make_parents=option == "db")
        if reason is not None:
            parser.error(f"--{option} {path}: cannot write the results there: {reason}")
    problem = build_root_problem(*BUILD_OUTPUTS.get(args.command, ()))
    if args.command in BUILD_OUTPUTS and problem is not None:
        parser.error(problem)


def _is_file_out(args: argparse.Namespace) -> bool:
    """``bench --out`` names a file (bench.json); every other ``--out`` a folder."""
    return args.command == "bench"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="macdma",
        description="macdma: simulate the Ethernet MAC and its DMA engine with a driver model "
        "on a modelled CPU, measure them, and compare the measurements.",
        epilog="'macdma COMMAND --help' describes a command and its options; README.md and "
        "docs/tutorial.md are the place to start.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="measure the MAC's line rate on a simulator",
        description="Build the MAC alone, send back-to-back 64-byte and 1518-byte frames "
        "through it in both directions at 1000 Mb/s on a real simulator, and print the "
        "throughput measured from the GMII models' frame time stamps (no DMA, no driver: "
        "'macdma run' simulates the whole SoC).",
    )
    demo.add_argument("--sim", choices=SIMULATORS, default="verilator", help="default: verilator")
    demo.add_argument(
        "--frames", type=_positive_int, default=200, help="frames per size and direction (200)"
    )
    demo.add_argument("--json", type=Path, help="also write the measurements to this file")
    demo.add_argument("--waves", action="store_true", help="trace an FST waveform")
    demo.set_defaults(demo_parser=demo)
    _add_run_parser(commands)
    add_regress_parser(commands)
    add_compare_parser(commands)
    add_bench_parser(commands)
    add_soak_parser(commands)
    return parser


def _add_run_parser(commands) -> None:
    run = commands.add_parser(
        "run",
        help="run one driver + SoC scenario and report throughput, IRQs, CPU and latency",
        description="Run the driver model on a modelled CPU against the SoC RTL. Every "
        "option is a Scenario knob (sim/run/scenario.py declares each once). The summary counts "
        "every frame lost or cut and says how; a frame lost with a hardware or driver "
        "counter is a measured outcome, so the exit status is still 0 (1 when the "
        "simulation fails, e.g. a frame lost with no counter).",
    )
    knobs.add_knob_options(run, scenario_module.Scenario)
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="stream the simulator's output (it always goes to the log file too)",
    )
    run.set_defaults(run_parser=run)


def scenario_from_args(args: argparse.Namespace):
    """The :class:`Scenario` of parsed ``run`` options (ValueError if inconsistent)."""
    return knobs.scenario_from_args(scenario_module.Scenario, args)


def run_log_path() -> Path:
    """A new log file for one ``macdma run``: build/logs/run-<time>-<pid>.log."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return build_dir() / "logs" / f"run-{stamp}-{os.getpid()}.log"


def run_run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        scenario = scenario_from_args(args)
    except ValueError as error:
        parser.error(str(error))  # exits 2 with the usage line
    log_path = run_log_path()
    print(f"macdma run: {scenario.describe()}", flush=True)
    print(f"log: {log_path}", flush=True)
    try:
        # Streaming the log and a live bar would garble each other: -v prints plain lines.
        with RunProgress(plain=args.verbose) as progress, announcing_builds(progress.building):
            # Looked up at the call: the tests put a stand-in for the simulation there.
            metrics = scenario_module.run_scenario(
                scenario, log_path=log_path, echo_log=args.verbose, on_progress=progress.update
            )
    except SIMULATION_ERRORS as error:
        print(failure_message("run", error), file=sys.stderr)
        return 1
    print()
    print(scenario_module.format_summary(metrics))
    if "waves" in metrics:
        print(f"waves: {metrics['waves']}")
    if "json_written" in metrics:
        print(f"metrics written to {metrics['json_written']}")
    return 0


def format_demo(results: dict) -> str:
    """The demo's table: one row per frame size and direction."""
    lines = [
        f"{'frame':>6} {'dir':>3} {'frames':>6} {'frames/s':>12} {'Mb/s':>8} "
        f"{'line rate':>9} {'gap (bytes)':>11}"
    ]
    for size in sorted(results, key=int):
        record = results[size]
        for rate in record["rates"]:
            gap = f"{rate['gap_bytes_min']:g}"
            if rate["gap_bytes_max"] != rate["gap_bytes_min"]:
                gap += f"..{rate['gap_bytes_max']:g}"
            lines.append(
                f"{size + ' B':>6} {rate['direction']:>3} {rate['frames']:>6} "
                f"{rate['frames_per_second']:>12,.0f} {rate['mbps']:>8.1f} "
                f"{rate['percent_of_line_rate']:>8.2f}% {gap:>11}"
            )
    return "\n".join(lines)


def _show_build_on_stdout(sim: str, top: str, estimate: float, rebuild: bool):
    return showing_build(sim, top, estimate, rebuild, stream=sys.stdout,
                         live=sys.stdout.isatty())  # fmt: skip


def run_demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        json_path = Path(scratch) / "demo.json"
        print(
            f"macdma demo: {args.frames} back-to-back frames per size and direction "
            f"through {DEMO_TOP} on {args.sim} (1000 Mb/s GMII, IFG 12)...",
            flush=True,
        )
        try:
            with announcing_builds(_show_build_on_stdout):
                result = run_cocotb(
                    top=DEMO_TOP,
                    test_module=DEMO_MODULE,
                    sim=args.sim,
                    waves=args.waves,
                    extra_env={"MACDMA_DEMO_FRAMES": args.frames, "MACDMA_DEMO_JSON": json_path},
                )
        except SIMULATION_ERRORS as error:
            print(failure_message("demo", error), file=sys.stderr)
            return 1
        results = json.loads(json_path.read_text())
    print()
    print(format_demo(results))
    rate = (result.sim_time_ns or 0) / max(result.wall_seconds - result.build_seconds, 1e-9)
    print(
        f"\n{result.sim_time_ns or 0:,.0f} simulated ns in {result.wall_seconds:.1f} s wall "
        f"(build {result.build_seconds:.1f} s; {rate:,.0f} sim ns per wall second)"
    )
    if args.json:
        written = write_or_rescue(args.json, json.dumps(results, indent=2), "the measurements")
        print(f"measurements written to {written}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    subparser = getattr(args, f"{args.command}_parser", parser)
    if unknown:  # named by the subcommand, whose --help lists what it takes
        subparser.error(f"unrecognized arguments: {' '.join(unknown)}")
    check_outputs(args, subparser)
    with ctrl_c_handling(args.command):
        try:
            return _dispatch(args)
        except SIMULATION_ERRORS as error:
            print(failure_message(args.command, error), file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            # The first Ctrl-C ended every process the command started (sim/cosim/interrupts.py);
            # this reaps what the command's own handling may have left.
            stop_descendants()
            print(f"macdma {args.command}: interrupted", file=sys.stderr)
            return 130


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo":
        return run_demo(args)
    if args.command == "run":
        return run_run(args, args.run_parser)
    if args.command == "regress":
        return run_regress(args, args.regress_parser)
    if args.command == "compare":
        return run_compare(args, args.compare_parser)
    if args.command == "bench":
        return run_bench_command(args)
    if args.command == "soak":
        return run_soak_command(args)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
