"""``macdma``: the project's command line.

    macdma demo [--sim verilator|icarus] [--frames N] [--json FILE] [--waves]

``demo`` builds the MAC, runs back-to-back 64-byte and 1518-byte frames through it in
both directions at 1000 Mb/s on a real simulator, and prints the throughput measured
from the GMII models' frame time stamps.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from .runner import CocotbTestFailure, run_cocotb
from .simulators import SIMULATORS, SimulatorNotFound

DEMO_TOP = "macdma_eth_mac"
DEMO_MODULE = "macdma.sim.benches.mac_linerate"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 frames to time a rate, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="macdma", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="measure the MAC's line rate on a simulator")
    demo.add_argument("--sim", choices=SIMULATORS, default="verilator", help="default: verilator")
    demo.add_argument(
        "--frames", type=_positive_int, default=200, help="frames per size and direction (200)"
    )
    demo.add_argument("--json", type=Path, help="also write the measurements to this file")
    demo.add_argument("--waves", action="store_true", help="trace an FST waveform")
    return parser


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


def run_demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        json_path = Path(scratch) / "demo.json"
        print(
            f"macdma demo: {args.frames} back-to-back frames per size and direction "
            f"through {DEMO_TOP} on {args.sim} (1000 Mb/s GMII, IFG 12)...",
            flush=True,
        )
        try:
            result = run_cocotb(
                top=DEMO_TOP,
                test_module=DEMO_MODULE,
                sim=args.sim,
                waves=args.waves,
                extra_env={"MACDMA_DEMO_FRAMES": args.frames, "MACDMA_DEMO_JSON": json_path},
            )
        except (CocotbTestFailure, SimulatorNotFound) as error:
            print(f"macdma demo failed: {error}", file=sys.stderr)
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
        args.json.write_text(json.dumps(results, indent=2))
        print(f"measurements written to {args.json}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return run_demo(args)
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
