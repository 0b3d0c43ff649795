"""CPUs as files: a modelled CPU described in TOML, shipped ones in this folder.

A CPU file gives the clock, the number of cores, every cost constant of
:class:`~macdma.firmware.costs.CpuCosts` (with a comment naming its source) and the driver
settings that belong with the set-up it stands for. The format is documented in
docs/cpus.md; the shipped files (``<name>.toml`` here) are examples of it::

    description = "66 MHz MicroBlaze, custom MAC/DMA IP"   # optional
    clock_mhz = 66.0                                       # required, 1..10000
    cores = 1                                              # optional, whole 1..64 (1)
    threads_per_pipeline = 2   # optional (1): the cores are hardware threads, in pairs
    thread_share = 0.6         # with 2: each thread's rate while its sibling issues too

    [costs]                # required: every CpuCosts field, CPU cycles, 0..1e6
    irq_entry_exit = 750.0
    ...

    [caches]               # required: the data caches the DMA API maintains
    line_bytes = 32
    coherent_dma = false   # true: the DMA snoops, the driver maintains nothing
    post_dma_invalidate = true  # optional (true): unmap/sync for the CPU invalidates again
    line_transfer = 100.0  # optional (0): cycles to take a line from another core's cache
    [[caches.level]]       # from the core outwards; cycles per line of one operation
    name = "L1"
    size_kib = 32
    clean = 4.0
    invalidate = 4.0
    clean_invalidate = 4.0

    [fitted]               # optional: the constants fitted to a figure, with bounds
    tx_per_packet = { low = 500, high = 3000, figure = "microblaze-frags frags0 232 Mb/s" }

    [driver]               # optional: DriverConfig settings of the set-up
    housekeeping_hz = 1000

:func:`load_cpu` takes a shipped name (``microblaze-66``) or a path to a ``.toml`` file.
Every problem stops the load with :class:`CpuFileError`, whose message names the file, the
key and the value. Each number's range is declared once below (:data:`CLOCK_MHZ`,
:data:`CORES`, :data:`COST_CYCLES`, :data:`LINE_BYTES`, :data:`CACHE_KIB`,
:data:`LINE_OP_CYCLES`, :data:`DRIVER_LIMITS`) as a
:class:`~macdma.sim.run.knobs.Knob`, whose check refuses NaN, infinities and values out of
range, as the scenario's knobs do. Pure Python (tomllib): no cocotb, so a sweep or the
command line can validate a CPU before any simulator starts.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from macdma.firmware.cache import CacheHierarchy, CacheLevel, CacheOp
from macdma.firmware.costs import CpuCosts
from macdma.firmware.driver import DriverConfig

from ...run.knobs import Knob
from .memory import MemorySpec, memory_spec

__all__ = [
    "CPU_DIR",
    "DRIVER_SETTINGS",
    "CpuFileError",
    "CpuSpec",
    "FittedConstant",
    "load_cpu",
    "load_cpu_file",
    "shipped_cpus",
]

#: The folder of the shipped CPU files (package data: pyproject.toml ships ``*.toml``).
CPU_DIR = Path(__file__).resolve().parent
CPU_SUFFIX = ".toml"

#: The DriverConfig fields a CPU file may set in ``[driver]``: the driver's own choices in
#: the set-up a file stands for. Ring sizes, bursts, the IRQ strategy and the clocks are
#: the scenario's, never the CPU's.
DRIVER_SETTINGS = ("housekeeping_hz", "tx_clean_budget", "dma_poll_us")

_TOP_KEYS = (
    "description", "clock_mhz", "cores", "threads_per_pipeline", "thread_share", "costs",
    "caches", "fitted", "driver", "memory",
)  # fmt: skip
_CACHE_KEYS = ("line_bytes", "coherent_dma", "post_dma_invalidate", "line_transfer", "level")
_LEVEL_KEYS = ("name", "size_kib", *(op.value for op in CacheOp))
_FITTED_KEYS = ("low", "high", "figure")

#: Most cores a CPU file may give (the scenario's core knobs take the same bound).
MAX_CORES = 64
#: The CPU clock: below 1 MHz a run would crawl for hours; above 10 GHz no CPU runs.
CLOCK_MHZ = Knob(float, "the CPU clock", unit="MHz", low=1, high=10_000)
CORES = Knob(int, "cores", low=1, high=MAX_CORES)
#: Hardware threads sharing one pipeline: 1 (every core its own) or 2 (a MIPS 34K's two
#: VPEs, an SMT pair); the model's rate rule is stated for a pair.
THREADS_PER_PIPELINE = Knob(int, "hardware threads per pipeline", low=1, high=2)
#: One thread's rate while its sibling issues too, as a fraction of the clock: 0.5 when
#: the two split every issue slot (no stall for the other to fill); 1.0 would be two
#: whole cores. Below 0.5 two threads would get less done than one.
THREAD_SHARE = Knob(float, "a hardware thread's share of the pipeline", low=0.5, high=1.0)
#: One cost constant: the shipped files' largest is ~43,000 cycles; a million cycles for
#: one unit of driver work (a packet, a byte) is no CPU's and would never finish a run.
COST_CYCLES = Knob(float, "a cost", unit="CPU cycles", low=0, high=1_000_000)
#: A cache line: 4 bytes is a word; no CPU has lines beyond 1 KiB (most have 32 or 64).
LINE_BYTES = Knob(int, "the cache line", unit="bytes", low=4, high=1024)
#: One cache level's size: 1 KiB .. 1 GiB.
CACHE_KIB = Knob(float, "a cache level's size", unit="KiB", low=1, high=1 << 20)
#: One maintenance operation on one line at one level: a few cycles for an L1 by-MVA
#: operation, tens to a few hundred for an outer controller's register write and wait;
#: 10,000 would be a millisecond per 100 lines on a 1 GHz core.
LINE_OP_CYCLES = Knob(float, "a cache line operation", unit="CPU cycles", low=0, high=10_000)
#: A line taken from another core's cache (a snoop through the SCU or the coherent
#: interconnect): tens to a few hundred cycles on the SoCs modelled; 10,000 would be
#: 10 us at 1 GHz, no coherent fabric's.
LINE_TRANSFER_CYCLES = Knob(
    float, "a cache line taken from another core", unit="CPU cycles", low=0, high=10_000
)
#: Ranges of the numeric ``[driver]`` settings beyond DriverConfig's own checks (which
#: take any positive tick rate, infinity included).
DRIVER_LIMITS = {"housekeeping_hz": Knob(float, "the housekeeping tick", unit="Hz", low=1,
                                         high=100_000)}  # fmt: skip


class CpuFileError(ValueError):
    """A CPU file that cannot be used; the message names the file, the key and the value."""


@dataclass(frozen=True)
class FittedConstant:
    """A cost fitted to one calibration figure: the plausible range it must stay in (a
    value outside means the model lacks a mechanism, so the load refuses it) and the
    figure it was fitted to (each figure fits at most one constant)."""

    low: float
    high: float
    figure: str


@dataclass(frozen=True)
class CpuSpec:
    """One modelled CPU, as loaded from its file.

    Members:
        name:        the shipped name, or the file name without ``.toml`` for a user's file.
        path:        the file it was loaded from (absolute).
        shipped:     True for a file of :data:`CPU_DIR`.
        clock_mhz:   the CPU clock (the one place it is stated).
        cores:       how many cores (the CPUs Linux sees: hardware threads, when
                     ``threads_per_pipeline`` is 2).
        threads_per_pipeline: 1, or 2 when each pair of cores shares one pipeline.
        thread_share: with 2, each thread's rate while its sibling issues too (0.5..1).
        costs:       the cost table, CPU cycles per unit of driver work.
        caches:      the data caches and what their maintenance costs per line.
        fitted:      the constants fitted to a calibration figure: by cost name, or
                     ``caches.<level>.<operation>`` for a cache line operation.
        driver:      DriverConfig settings of the set-up (keys of :data:`DRIVER_SETTINGS`).
        description: one line about the CPU ("" when the file gives none).
        digest:      SHA-256 of the file's bytes (what a result cache must key on).
        memory:      the ``[memory]`` table (sim/model/cpus/memory.py), or None.
    """

    name: str
    path: Path
    shipped: bool
    clock_mhz: float
    cores: int
    costs: CpuCosts
    caches: CacheHierarchy = field(default_factory=CacheHierarchy)
    fitted: dict[str, FittedConstant] = field(default_factory=dict)
    driver: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    digest: str = ""
    memory: MemorySpec | None = None
    threads_per_pipeline: int = 1
    thread_share: float = 1.0


def shipped_cpus() -> tuple[str, ...]:
    """Names of the shipped CPU files, sorted."""
    return tuple(sorted(path.stem for path in CPU_DIR.glob(f"*{CPU_SUFFIX}")))


def load_cpu(cpu: str) -> CpuSpec:
    """The CPU ``cpu`` names: a shipped name, or a path to a ``.toml`` file (any path that
    ends in ``.toml`` or contains a ``/``). :class:`CpuFileError` (a ValueError) otherwise."""
    if not isinstance(cpu, str) or not cpu:
        raise CpuFileError(f"a CPU is a shipped name or a path to a .toml file, not {cpu!r}")
    if cpu.endswith(CPU_SUFFIX) or "/" in cpu:
        return load_cpu_file(Path(cpu))
    if cpu not in shipped_cpus():
        raise CpuFileError(
            f"unknown CPU {cpu!r}: not a shipped CPU ({', '.join(shipped_cpus())}) and not a "
            f"path to a {CPU_SUFFIX} file"
        )
    return load_cpu_file(CPU_DIR / f"{cpu}{CPU_SUFFIX}")


def load_cpu_file(path: Path | str) -> CpuSpec:
    """Load and check one CPU file (see the module docstring for the format)."""
    path = Path(path).expanduser().resolve()
    where = str(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise CpuFileError(f"{where}: cannot read the CPU file: {error.strerror}") from None
    try:
        document = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise CpuFileError(f"{where}: not UTF-8 text: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise CpuFileError(f"{where}: not valid TOML: {error}") from None

    def fail(key: str, value: Any, problem: str) -> CpuFileError:
        return CpuFileError(f"{where}: {key} = {value!r}: {problem}")

    for key, value in document.items():
        if key not in _TOP_KEYS:
            raise fail(key, value, f"unknown key (a CPU file has: {', '.join(_TOP_KEYS)})")

    if "clock_mhz" not in document:
        raise CpuFileError(f"{where}: clock_mhz is missing (the CPU clock in MHz, a number > 0)")
    clock_mhz = _checked(CLOCK_MHZ, "clock_mhz", document["clock_mhz"], fail)
    cores = _checked(CORES, "cores", document.get("cores", 1), fail)
    threads, share = _threads(document, cores, fail, where)

    description = document.get("description", "")
    if not isinstance(description, str):
        raise fail("description", description, "must be a string")

    costs = _costs(document.get("costs"), fail, where)
    caches = _caches(document.get("caches"), fail, where)
    memory = memory_spec(document["memory"], fail) if "memory" in document else None
    fitted = _fitted(document.get("fitted", {}), costs, caches, fail, memory)
    driver = _driver_settings(document.get("driver", {}), fail)
    shipped = path.parent == CPU_DIR
    return CpuSpec(
        name=path.stem,
        path=path,
        shipped=shipped,
        clock_mhz=float(clock_mhz),
        cores=cores,
        costs=costs,
        caches=caches,
        fitted=fitted,
        driver=driver,
        description=description,
        digest=hashlib.sha256(raw).hexdigest(),
        memory=memory,
        threads_per_pipeline=threads,
        thread_share=share,
    )


def _threads(document: dict, cores: int, fail, where: str) -> tuple[int, float]:
    """(threads_per_pipeline, thread_share) of a CPU file: 1 and 1.0 unless it gives
    hardware threads, which need their share and an even number of cores."""
    threads = _checked(
        THREADS_PER_PIPELINE, "threads_per_pipeline", document.get("threads_per_pipeline", 1), fail
    )
    if threads == 1:
        if "thread_share" in document:
            raise fail(
                "thread_share", document["thread_share"],
                "has no effect without threads_per_pipeline = 2 (hardware threads sharing "
                "a pipeline); leave it out or give threads_per_pipeline",
            )  # fmt: skip
        return 1, 1.0
    if cores % threads:
        raise fail(
            "cores", cores,
            f"must be a multiple of threads_per_pipeline ({threads}): each pipeline's "
            "threads are cores of their own",
        )  # fmt: skip
    if "thread_share" not in document:
        raise CpuFileError(
            f"{where}: thread_share is missing (with threads_per_pipeline = {threads}: each "
            "thread's rate while its sibling issues too, 0.5..1 of the clock)"
        )
    share = _checked(THREAD_SHARE, "thread_share", document["thread_share"], fail)
    return threads, float(share)


def _checked(declared: Knob, key: str, value: Any, fail) -> Any:
    """``value`` if ``declared`` takes it, else the :class:`CpuFileError` naming ``key``."""
    try:
        return declared.check(key, value)
    except ValueError:
        kind = "a whole number" if declared.kind is int else "a number"
        raise fail(key, value, f"must be {kind}, {declared.limit_text()}") from None


def _costs(table: Any, fail, where: str) -> CpuCosts:
    names = tuple(f.name for f in fields(CpuCosts))
    if table is None:
        raise CpuFileError(f"{where}: the [costs] table is missing (it gives {', '.join(names)})")
    if not isinstance(table, dict):
        raise fail("costs", table, "must be a table ([costs])")
    for key, value in table.items():
        if key not in names:
            raise fail(f"costs.{key}", value, f"unknown cost (the costs are: {', '.join(names)})")
        _checked(COST_CYCLES, f"costs.{key}", value, fail)
    missing = [name for name in names if name not in table]
    if missing:
        raise CpuFileError(
            f"{where}: costs.{missing[0]} is missing (every cost must be given, 0 for none; "
            f"missing: {', '.join(missing)})"
        )
    return CpuCosts(**{name: float(table[name]) for name in names})


def _caches(table: Any, fail, where: str) -> CacheHierarchy:
    if table is None:
        raise CpuFileError(
            f"{where}: the [caches] table is missing (line_bytes, coherent_dma and a "
            f"[[caches.level]] per level; coherent_dma = true with no level for a DMA that "
            f"snoops)"
        )
    if not isinstance(table, dict):
        raise fail("caches", table, "must be a table ([caches])")
    for key, value in table.items():
        if key not in _CACHE_KEYS:
            known = ", ".join(_CACHE_KEYS)
            raise fail(f"caches.{key}", value, f"unknown key (caches has: {known})")
    for key in ("line_bytes", "coherent_dma"):
        if key not in table:
            raise CpuFileError(f"{where}: caches.{key} is missing")
    line_bytes = _checked(LINE_BYTES, "caches.line_bytes", table["line_bytes"], fail)
    if line_bytes & (line_bytes - 1):
        raise fail("caches.line_bytes", line_bytes, "must be a power of two")
    coherent = table["coherent_dma"]
    if not isinstance(coherent, bool):
        raise fail("caches.coherent_dma", coherent, "must be true or false")
    post_dma = table.get("post_dma_invalidate", True)
    if not isinstance(post_dma, bool):
        raise fail("caches.post_dma_invalidate", post_dma, "must be true or false")
    transfer = _checked(
        LINE_TRANSFER_CYCLES, "caches.line_transfer", table.get("line_transfer", 0.0), fail
    )
    levels = table.get("level", [])
    if not isinstance(levels, list):
        raise fail("caches.level", levels, "must be an array of tables ([[caches.level]])")
    parsed = []
    for number, level in enumerate(levels, start=1):
        key = f"caches.level[{number}]"
        if not isinstance(level, dict):
            raise fail(key, level, "must be a table ([[caches.level]])")
        for name, value in level.items():
            if name not in _LEVEL_KEYS:
                known = ", ".join(_LEVEL_KEYS)
                raise fail(f"{key}.{name}", value, f"unknown key (a level has: {known})")
        missing = [name for name in _LEVEL_KEYS if name not in level]
        if missing:
            known = ", ".join(_LEVEL_KEYS)
            raise CpuFileError(f"{where}: {key}.{missing[0]} is missing (a level gives {known})")
        if not isinstance(level["name"], str) or not level["name"]:
            raise fail(f"{key}.name", level["name"], "must be a non-empty string")
        size_kib = _checked(CACHE_KIB, f"{key}.size_kib", level["size_kib"], fail)
        ops = {
            op.value: float(_checked(LINE_OP_CYCLES, f"{key}.{op.value}", level[op.value], fail))
            for op in CacheOp
        }
        parsed.append(CacheLevel(name=level["name"], size_bytes=round(size_kib * 1024), **ops))
    if not coherent and not parsed:
        problem = "a non-coherent DMA needs the cache levels it maintains ([[caches.level]])"
        raise fail("caches.coherent_dma", coherent, problem)
    return CacheHierarchy(
        line_bytes=line_bytes,
        levels=tuple(parsed),
        coherent_dma=coherent,
        post_dma_invalidate=post_dma,
        line_transfer=float(transfer),
    )


def _fittable(
    costs: CpuCosts, caches: CacheHierarchy, memory: MemorySpec | None = None
) -> dict[str, tuple[str, float]]:
    """What a ``[fitted]`` entry may name: every cost (``rx_per_packet``), every cache
    line operation (``"caches.L2.invalidate"``) and every time of the ``[memory]`` table
    (``"memory.page_hit_ns"``), each with the key its value is read from and the value."""
    found = {name: (f"costs.{name}", getattr(costs, name)) for name in CpuCosts.cost_names()}
    if memory is not None:
        for key in ("page_hit_ns", "page_miss_ns", "turnaround_ns"):
            found[f"memory.{key}"] = (f"memory.{key}", getattr(memory, key))
    for number, level in enumerate(caches.levels, start=1):
        for op in CacheOp:
            found[f"caches.{level.name}.{op.value}"] = (
                f"caches.level[{number}].{op.value}",
                level.cost(op),
            )
    return found


def _fitted(
    table: Any, costs: CpuCosts, caches: CacheHierarchy, fail, memory: MemorySpec | None = None
) -> dict[str, FittedConstant]:
    if not isinstance(table, dict):
        raise fail("fitted", table, "must be a table ([fitted])")
    fittable = _fittable(costs, caches, memory)
    found: dict[str, FittedConstant] = {}
    figures: dict[str, str] = {}
    for name, entry in table.items():
        key = f"fitted.{name}"
        if name not in fittable:
            raise fail(
                key, entry,
                'not a cost or a cache line operation (a fitted constant is a cost, e.g. '
                'rx_per_packet, or "caches.<level>.<operation>")',
            )  # fmt: skip
        if not isinstance(entry, dict):
            raise fail(key, entry, "must be a table { low = ..., high = ..., figure = ... }")
        for part, value in entry.items():
            if part not in _FITTED_KEYS:
                known = ", ".join(_FITTED_KEYS)
                raise fail(f"{key}.{part}", value, f"unknown key (a fitted constant has: {known})")
        missing = [part for part in _FITTED_KEYS if part not in entry]
        if missing:
            problem = f"{missing[0]} is missing (a fitted constant gives its bounds and figure)"
            raise fail(key, entry, problem)
        low = _checked(COST_CYCLES, f"{key}.low", entry["low"], fail)
        high = _checked(COST_CYCLES, f"{key}.high", entry["high"], fail)
        if low > high:
            raise fail(key, entry, "low is above high")
        figure = entry["figure"]
        if not isinstance(figure, str) or not figure.strip():
            raise fail(f"{key}.figure", figure, "must name the calibration figure it was fitted to")
        if figure in figures:
            raise fail(
                f"{key}.figure", figure,
                f"already fits {figures[figure]}: one calibration figure fits at most one constant",
            )  # fmt: skip
        where, value = fittable[name]
        if not low <= value <= high:
            raise fail(
                where, value,
                f"outside its fitted bounds {low:g}..{high:g} (fitted to {figure!r}): a fit out "
                f"there means the model lacks a mechanism, not that the step costs that much",
            )  # fmt: skip
        figures[figure] = name
        found[name] = FittedConstant(float(low), float(high), figure)
    return found


def _driver_settings(table: Any, fail) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise fail("driver", table, "must be a table ([driver])")
    for key, value in table.items():
        if key not in DRIVER_SETTINGS:
            raise fail(
                f"driver.{key}",
                value,
                f"not a driver setting of a CPU file (those are: {', '.join(DRIVER_SETTINGS)})",
            )
        if key in DRIVER_LIMITS:
            _checked(DRIVER_LIMITS[key], f"driver.{key}", value, fail)
        try:
            DriverConfig(**{key: value})  # DriverConfig's own range and type checks
        except ValueError as error:
            raise fail(f"driver.{key}", value, str(error)) from None
    return dict(table)
