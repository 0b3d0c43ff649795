"""tests/ mirrors the source tree (docs/layout.md, docs/testing.md): every test module sits
in the folder of tests/ named as the source folder it tests (tests/hdl/dma/ for hdl/dma/),
none at tests/ root, where only helpers shared by several folders live; the cocotb benches
of the tests are all in tests/cocotb/, the models they drive the RTL with in tests/models/,
and every bench left in sim/ is one a command runs."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
#: Folders of tests/ that hold what tests use, never a test module: the cocotb benches,
#: the bus and PHY models, data files.
SUPPORT_FOLDERS = ("cocotb", "models", "cpus", "data")


def _test_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def _imported_names(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return names


def test_every_test_module_sits_in_the_folder_of_a_source_folder():
    misplaced = []
    for module in _test_modules():
        folder = module.parent.relative_to(TESTS)
        if (
            folder == Path(".")
            or folder.parts[0] in SUPPORT_FOLDERS
            or folder.parts[0] == "tests"
            or not (ROOT / folder).is_dir()
        ):
            misplaced.append(str(module.relative_to(ROOT)))
    assert not misplaced, f"test modules outside a folder mirroring a source folder: {misplaced}"
    assert len(_test_modules()) > 100, "the walk found too few test modules to be right"


def test_a_helper_at_the_root_is_shared_by_several_folders():
    """A module at tests/ root that only one folder's tests import belongs in that folder."""
    helpers = [path for path in TESTS.glob("*.py") if path.name != "conftest.py"]
    assert helpers, "no shared helper found at tests/ root"
    users: dict[str, set[Path]] = {path.stem: set() for path in helpers}
    for module in TESTS.rglob("*.py"):
        for name in _imported_names(module) & users.keys():
            users[name].add(module.parent)
    lonely = {name: sorted(str(f.relative_to(TESTS)) for f in folders)
              for name, folders in users.items() if len(folders) < 2}  # fmt: skip
    assert not lonely, f"root helpers used by one folder only (move them there): {lonely}"


def test_cocotb_benches_are_in_one_place():
    """A cocotb bench (``*_tb.py``) of the tests is in tests/cocotb/; one in sim/ is run by
    a command, so a module of sim/ other than itself names it."""
    stray = [str(p.relative_to(ROOT)) for p in TESTS.rglob("*_tb.py") if p.parent.name != "cocotb"]
    assert not stray, f"cocotb benches outside tests/cocotb/: {stray}"
    sim_sources = {path: path.read_text() for path in (ROOT / "sim").rglob("*.py")}
    unused = []
    for bench in (ROOT / "sim").rglob("*_tb.py"):
        dotted = ".".join(bench.relative_to(ROOT).with_suffix("").parts)
        named = any(
            dotted in text or f'"{bench.stem}"' in text
            for path, text in sim_sources.items()
            if path != bench
        )
        if not named:
            unused.append(str(bench.relative_to(ROOT)))
    assert not unused, f"benches in sim/ that no command runs (test-only: tests/cocotb/): {unused}"
