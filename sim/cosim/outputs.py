"""Where the commands write, checked before any work and never lost after it.

Every file or folder a command will write is tried before the first simulation
(:func:`unwritable_reason`: the folder is created and a probe file written and removed
there; a file is opened for appending, or created and removed), since permissions alone
do not tell (``/proc`` accepts no new file whatever they say; a read-only mount ignores
them). A result computed after that check is never lost: :func:`write_or_rescue` writes it
to its place or, when that fails after all (a full disk, a removed folder), to a rescue
file that works, and says where.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .verilog import build_dir

__all__ = ["RESCUE_FOLDER", "build_root_problem", "unwritable_reason", "write_or_rescue"]

#: Under the build root: where a result goes when its own path failed at write time.
RESCUE_FOLDER = "rescued"


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def unwritable_reason(path: Path, *, folder: bool, make_parents: bool = False) -> str | None:
    """Why *path* (a file, or a *folder* created with its missing parents) cannot be
    written, or None. Tried for real: a folder is created and a probe file written and
    removed in it; an existing file is opened for appending (its content unchanged), a
    new one created and removed. A file's folder must exist unless *make_parents* (the
    command creates it: the results database's)."""
    path = Path(path)
    if path.exists() and folder != path.is_dir():
        return f"{path} is {'not a folder' if folder else 'a folder'}"
    parent = path if folder else path.parent
    if not folder and not make_parents and not parent.exists():
        return f"folder {parent} does not exist"
    existing = _nearest_existing(parent)
    if not existing.is_dir():
        return f"{existing} is not a folder"
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return f"folder {parent} cannot be created: {_reason(error)}"
    try:
        return _probe(path, parent, folder)
    finally:  # a check leaves nothing behind: the folders it made go again
        made = parent
        while made != existing:
            try:
                made.rmdir()
            except OSError:
                break
            made = made.parent


def _probe(path: Path, parent: Path, folder: bool) -> str | None:
    """Write and remove a probe file in the folder *parent*, or open/create the file."""
    try:
        if folder:
            handle, probe = tempfile.mkstemp(prefix=".macdma-probe-", dir=parent)
            os.close(handle)
            os.unlink(probe)
        elif path.exists():
            with open(path, "ab"):
                pass
        else:
            with open(path, "xb"):
                pass
            path.unlink()
    except OSError as error:
        where = parent if folder else path
        return f"{where} is not writable: {_reason(error)}"
    return None


def build_root_problem(*subfolders: str) -> str | None:
    """Why the build root (:func:`~macdma.sim.cosim.verilog.build_dir`: the repository's build/,
    or ``MACDMA_BUILD_DIR``) cannot take what a command writes in ``subfolders`` of it
    (``sim``: the simulator models, ``logs``), or None."""
    root = build_dir()
    for name in subfolders or ("",):
        reason = unwritable_reason(root / name, folder=True)
        if reason is not None:
            return (
                f"cannot write under the build folder {root} ({reason}): make it writable, "
                "or set MACDMA_BUILD_DIR to a folder that is"
            )
    return None


def _rescue_paths(path: Path) -> list[Path]:
    name = path.name or "results"
    stamp = f"{os.getpid()}-{name}"
    return [build_dir() / RESCUE_FOLDER / stamp, Path(tempfile.gettempdir()) / f"macdma-{stamp}"]


def write_or_rescue(path: Path | str, text: str, what: str) -> Path:
    """Write *text* (*what*: "metrics", "the report") to *path*; if that fails, to the
    first rescue file that works (build/rescued/, then the system's temporary folder),
    saying so on stderr. Returns the path written; OSError only when nothing worked."""
    path = Path(path)
    try:
        path.write_text(text)
        return path
    except OSError as error:
        failure = f"cannot write {what} to {path} ({_reason(error)})"
    for rescue in _rescue_paths(path):
        try:
            rescue.parent.mkdir(parents=True, exist_ok=True)
            rescue.write_text(text)
        except OSError:
            continue
        print(f"{failure}; written to {rescue} instead", file=sys.stderr, flush=True)
        return rescue
    raise OSError(f"{failure}, nor to any rescue file ({', '.join(map(str, _rescue_paths(path)))})")
