"""Export Amaranth tops to Verilog, with a content-keyed build cache.

A top is named by its entry in ``macdma.hdl.tops.TOPS`` (or given as a factory). Its Verilog
is cached under ``build/cache/verilog/<name>-<key>/<name>.v`` where the key hashes the name,
the design parameters, every .py file of the hdl/ package (and the factory's own source file
when it lives elsewhere), this module and the Amaranth version; an unchanged design is never
re-elaborated.

The text is Amaranth's Verilog with one rewrite (:func:`wake_processes_at_time_zero`) so that
it simulates alike on Icarus under -g2005 and -g2012 and on Verilator.

Command line (what ``make verilog`` runs)::

    python -m macdma.sim.cosim.verilog [--out build/verilog] [names...]
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT: Path = Path(__file__).resolve().parents[2]
"""The repository root: the folder holding hdl/, sim/, firmware/ and tests/."""

Factory = Callable[..., Any]


def build_dir() -> Path:
    """Return the build folder: ``<root>/build``, or env MACDMA_BUILD_DIR when set."""
    override = os.environ.get("MACDMA_BUILD_DIR")
    return Path(override).resolve() if override else ROOT / "build"


@contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive flock on *lock_path* (created if needed) for the with-block.

    Serialises pytest-xdist workers that build or export the same thing at the same time.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: Path, text: str) -> None:
    """Write *text* to *path* through a temporary file and a rename, so readers never
    see a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def registered_tops() -> dict[str, Factory]:
    """Return ``macdma.hdl.tops.TOPS``, imported on first use so this module loads without it."""
    try:
        # Here for start-up time: the tops load Amaranth and the whole HDL (seconds), which
        # a command that only reads the cache or the build folder does not need.
        from macdma.hdl.tops import TOPS
    except ModuleNotFoundError as error:
        if error.name not in ("macdma.hdl.tops", "macdma.hdl"):
            raise  # a real import error inside the hdl package must stay visible
        return {}
    return dict(TOPS)


def _resolve_factory(name: str, factory: Factory | None) -> Factory:
    if factory is not None:
        return factory
    tops = registered_tops()
    if name not in tops:
        known = ", ".join(sorted(tops)) or "(none: macdma.hdl.tops.TOPS is missing or empty)"
        raise KeyError(f"Unknown top {name!r}; registered tops: {known}")
    return tops[name]


def _hdl_dir() -> Path:
    spec = importlib.util.find_spec("macdma.hdl")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return ROOT / "hdl"


def _source_files(factory: Factory) -> list[Path]:
    """The Python files whose contents decide the Verilog: hdl/**.py, the factory's file and
    this module (it rewrites the converted text)."""
    files = sorted(_hdl_dir().rglob("*.py")) + [Path(__file__).resolve()]
    try:
        factory_file = inspect.getsourcefile(factory)
    except TypeError:  # a builtin or C-level callable has no source file
        factory_file = None
    if factory_file is not None and Path(factory_file).resolve() not in files:
        files.append(Path(factory_file).resolve())
    return files


def cache_key(name: str, factory: Factory, params: Mapping[str, Any]) -> str:
    """Return the 16-hex-digit cache key of top *name* built by *factory* with *params*."""
    digest = hashlib.sha256()
    digest.update(f"name={name}\n".encode())
    digest.update(f"factory={getattr(factory, '__qualname__', repr(factory))}\n".encode())
    digest.update(f"params={sorted(params.items())!r}\n".encode())
    digest.update(f"amaranth={importlib.metadata.version('amaranth')}\n".encode())
    for path in _source_files(factory):
        digest.update(f"file={path}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def elaborate_verilog(name: str, factory: Factory, params: Mapping[str, Any]) -> str:
    """Elaborate ``factory(**params)`` and return its Verilog text with module name *name*,
    followed by the component's ``extra_verilog`` (hand-written modules it instantiates)."""
    from amaranth.back import verilog  # for start-up time, as registered_tops' import

    component = factory(**params)
    text = wake_processes_at_time_zero(verilog.convert(component, name=name))
    check_no_idle_processes(text, name)
    return text + getattr(component, "extra_verilog", "")


# Yosys' write_verilog wakes the `always @*` blocks of a module at time 0 through one register
# per module, declared with an initialiser and read by a no-op first statement of each block:
#     reg \$auto$verilog_backend.cc:2355:dump_module$5  = 0;
#     always @* begin
#       if (\$auto$verilog_backend.cc:2355:dump_module$5 ) begin end
_TRIGGER_READ = re.compile(r"^[ \t]*always @\* begin\n[ \t]*if \((\\\S+ )\) begin end$", re.M)
_TRIGGER_DECLARATION = re.compile(r"^([ \t]*)reg (\\\S+ ) = 0;$", re.M)
_PROCESS_START = re.compile(r"^[ \t]*always @\* begin$", re.M)


def wake_processes_at_time_zero(text: str) -> str:
    """Make every ``always @*`` block of Yosys' Verilog run at time 0 on any simulator and
    language generation, by giving each module's wake-up register its first value in an
    ``initial`` statement instead of its declaration.

    Yosys declares ``reg T = 0;`` and reads ``T`` at the top of each block, so that ``T``
    going from X to 0 at time 0 runs them all once. Verilog-2005 makes that initialiser an
    assignment at time 0, so it does (Icarus -g2005). SystemVerilog gives a variable its
    initial value before time 0, with no event (Icarus -g2012, cocotb's default): a block
    whose inputs are constants or registers that reset leaves unchanged then never runs and
    its outputs stay X (an FSM's output decode, for one). ``reg T; initial T = 1'h0;`` is an
    assignment at time 0 under both: Icarus runs every ``always @*`` block up to its event
    control before any ``initial`` statement, so all of them see the change. Verilator
    evaluates every block at start-up either way; synthesis reads no initial value of ``T``
    (nothing drives it, nothing but the no-op reads it).

    Raises ValueError when a block does not read a wake-up register or the register's
    declaration is not the one expected: the text is not the Yosys output this relies on.
    """
    reads = _TRIGGER_READ.findall(text)
    blocks = len(_PROCESS_START.findall(text))
    if len(reads) != blocks:
        raise ValueError(
            f"{blocks - len(reads)} of {blocks} always @* blocks do not start by reading a "
            "wake-up register; the Verilog backend's output changed"
        )
    triggers = set(reads)

    def declare_without_initialiser(match: re.Match[str]) -> str:
        indent, trigger = match.groups()
        if trigger not in triggers:
            return match.group(0)
        found.add(trigger)
        return f"{indent}reg {trigger};\n{indent}initial {trigger} = 1'h0;"

    found: set[str] = set()
    text = _TRIGGER_DECLARATION.sub(declare_without_initialiser, text)
    if found != triggers:
        missing = ", ".join(sorted(triggers - found))
        raise ValueError(f"no `reg ... = 0;` declaration of wake-up register(s) {missing}")
    return text


# An ``always @*`` whose body assigns a constant: it reads no signal, so Icarus never runs it.
_IDLE_PROCESS = re.compile(
    r"^\s*always @\*\s*\n\s*([^\s=][^=]*?)\s*=\s*\d+'[bdh][0-9a-fA-F_]+;$", re.M
)


def check_no_idle_processes(text: str, name: str) -> None:
    """Refuse Verilog in which a signal's bits are set only by a constant in an
    ``always @*`` block: Icarus never runs such a block (it reads nothing), so those bits
    stay X there, while Verilator shows 0; the two simulators would disagree. The Verilog
    backend writes one when a comb signal is assigned part by part (e.g. a ``Signal(Struct)``
    with ``.eq`` per field); build the value as one expression instead."""
    idle = sorted(set(_IDLE_PROCESS.findall(text)))
    if idle:
        raise ValueError(
            f"{name}: Verilog sets {', '.join(idle)} only by a constant in an always @* "
            "block, which Icarus never runs (X there, 0 on Verilator); assign the signal "
            "whole from one expression"
        )


def _copy_if_changed(source: Path, destination: Path) -> None:
    text = source.read_text()
    if destination.is_file() and destination.read_text() == text:
        return  # keep the timestamp, so make and simulators see nothing new
    write_atomically(destination, text)


def export_verilog(
    name: str,
    factory: Factory | None = None,
    params: Mapping[str, Any] | None = None,
    out_dir: Path | None = None,
) -> Path:
    """Return the path of ``<name>.v`` for top *name*, elaborating it only on a cache miss.

    *factory* defaults to ``TOPS[name]``; *params* are its keyword design parameters. With
    *out_dir* the cached file is also copied to ``out_dir/<name>.v`` and that path returned.
    Safe to call from several processes at once (file lock + atomic rename).
    """
    params = dict(params or {})
    factory = _resolve_factory(name, factory)
    entry = build_dir() / "cache" / "verilog" / f"{name}-{cache_key(name, factory, params)}"
    cached = entry / f"{name}.v"
    with file_lock(entry.with_name(entry.name + ".lock")):
        if not cached.is_file():
            write_atomically(cached, elaborate_verilog(name, factory, params))
    if out_dir is None:
        return cached
    destination = Path(out_dir) / f"{name}.v"
    _copy_if_changed(cached, destination)
    return destination


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m macdma.sim.cosim.verilog",
        description="Write <out>/<top>.v for the named (default: every registered) top.",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default: <build>/verilog)"
    )
    parser.add_argument("names", nargs="*", help="tops from macdma.hdl.tops.TOPS")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: export tops, return a process exit code."""
    args = _parse_args(argv)
    tops = registered_tops()
    names = args.names or sorted(tops)
    if not names:
        print("error: no tops registered in macdma.hdl.tops.TOPS", file=sys.stderr)
        return 1
    unknown = [name for name in names if name not in tops]
    if unknown:
        known = ", ".join(sorted(tops)) or "(none)"
        print(f"error: unknown top(s) {', '.join(unknown)}; known: {known}", file=sys.stderr)
        return 2
    out_dir = args.out if args.out is not None else build_dir() / "verilog"
    for name in names:
        print(export_verilog(name, tops[name], out_dir=out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
