"""Point keys: what a point's result depends on, hashed.

A point's key hashes its scenario's measured fields, the contents of its CPU file and the
simulated sources (:func:`source_hash`), so a re-run skips a point only when none of them
changed, and a code or CPU-file change reruns it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from ..model.cpus import load_cpu
from ..run.scenario import RTL_CPU, Scenario

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding hdl/ sim/ firmware/
# Inputs of a point's result besides the scenario: what is simulated. The reporting side
# (this package, the CLI) and the synthesis flow do not change a measurement.
SOURCE_DIRS = ("hdl", "firmware", "sim")
SOURCE_EXCLUDED = (
    "sim/cli.py",
    "sim/flows/synth.py",
    "sim/model/platform_serial.py",
)
SOURCE_EXCLUDED_DIRS = ("hdl/boards/", "sim/regress/sweeps/", "sim/regress/")
#: What the real core runs besides the Python sources: the C firmware and its linker
#: script (firmware/c/), and the generated register header it includes.
FIRMWARE_SOURCES = ("firmware/c", "firmware/include")
FIRMWARE_SUFFIXES = (".c", ".h", ".S", ".ld")
# Scenario fields that do not change what a run measures.
UNHASHED_FIELDS = ("json", "waves")
SCENARIO_FIELDS = tuple(f.name for f in dataclasses.fields(Scenario))


def source_hash(root: Path = PACKAGE_ROOT) -> str:
    """A hash of every simulated source (HDL, firmware, sim benches and runner)."""
    digest = hashlib.sha256()
    for folder in SOURCE_DIRS:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative in SOURCE_EXCLUDED or relative.startswith(SOURCE_EXCLUDED_DIRS):
                continue
            digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def firmware_digest(root: Path = PACKAGE_ROOT) -> str:
    """SHA-256 of the C firmware's sources (``vexriscv-rtl`` points run it): a change to
    the C driver changes what such a point measures, and :func:`source_hash` holds only
    Python files."""
    digest = hashlib.sha256()
    for folder in FIRMWARE_SOURCES:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in FIRMWARE_SUFFIXES:
                relative = path.relative_to(root).as_posix()
                digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cpu_digest(scenario: Scenario) -> str:
    """SHA-256 of the scenario's CPU file: editing a CPU file changes what a point measures,
    and the file is data, not part of :func:`source_hash`. For the real core
    (``vexriscv-rtl``), the firmware's instead (:func:`firmware_digest`)."""
    if scenario.cpu == RTL_CPU:
        return firmware_digest()
    return load_cpu(scenario.cpu).digest


def point_key(scenario: Scenario, sources: str) -> str:
    """The hash of a point's inputs: the scenario's measured fields, the contents of its CPU
    file and the sources."""
    inputs = {k: v for k, v in dataclasses.asdict(scenario).items() if k not in UNHASHED_FIELDS}
    text = json.dumps(
        {"scenario": inputs, "cpu": cpu_digest(scenario), "sources": sources}, sort_keys=True
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]
