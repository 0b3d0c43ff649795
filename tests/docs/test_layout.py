"""tests/ mirrors the source tree (docs/layout.md, docs/testing.md "Where the tests are").

- Every source module with behaviour (one that defines a function or method) has a test
  module of its name in the mirrored folder: hdl/dma/rx_fifo.py -> tests/hdl/dma/test_rx_fifo.py.
  The name may go on with an aspect after an underscore (tests/hdl/test_soc_rx.py tests
  hdl/soc.py's receive path) and may name a subpackage (tests/sim/model/test_cpus.py: the
  package sim/model/cpus/) or the folder itself (tests/firmware/test_firmware_layout.py: the
  driver model as a whole). A module without one is listed below with the reason.
- Every test module names a source module that way (docs/ count as the source of
  tests/docs/: test_tutorial.py checks docs/tutorial.md).
- Helpers shared by the test modules are modules not named ``test_*``; no test module
  imports another. A helper's folder is on pytest's ``pythonpath``, and helper names are
  unique across tests/ (they are imported by bare name). At tests/ root only helpers several
  folders use; the cocotb benches of the tests are all in tests/cocotb/, the models they
  drive the RTL with in tests/models/, and every bench left in sim/ is one a command runs.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
#: The source packages, whose every module the check walks.
SOURCE_PACKAGES = ("hdl", "firmware", "sim")
#: The source folders tests/ mirrors: the packages, and docs/ for the checks of what the
#: docs state.
SOURCE_FOLDERS = (*SOURCE_PACKAGES, "docs")
#: Folders of tests/ that hold what tests use, never a test module: the cocotb benches,
#: the bus and PHY models, data files.
SUPPORT_FOLDERS = ("cocotb", "models", "cpus", "data")

#: Test modules whose subject is a helper of the tests, not a source module.
TESTS_OF_HELPERS = {
    "tests/sim/cosim/test_cocotb_cases.py": "tests/cocotb_cases.py (cocotb tests as subtests)",
}
#: Source modules with no behaviour of their own: constants, layouts, re-exports, a
#: package's docstring. The check holds each to it: one that gains a function needs a test
#: module.
WITHOUT_BEHAVIOUR = {
    "hdl/__init__.py": "package docstring",
    "hdl/boards/__init__.py": "package docstring",
    "hdl/bus/__init__.py": "package docstring",
    "hdl/counters.py": "the statistics counters' names and meanings (data)",
    "hdl/cpu/__init__.py": "package docstring",
    "hdl/dma/__init__.py": "package docstring",
    "hdl/formal/__init__.py": "package docstring",
    "hdl/mac/__init__.py": "package docstring",
    "hdl/mac/frame.py": "frame constants and stream layouts (data)",
    "hdl/sim_wire/__init__.py": "package docstring",
    "hdl/tops.py": "the table of exported tops (data)",
    "firmware/__init__.py": "package docstring",
    "firmware/c/__init__.py": "package docstring",
    "firmware/netdev.py": "the NetDevice protocol: the device's members its parts use",
    "firmware/stats.py": "the driver's statistics records (dataclasses without methods)",
    "sim/__init__.py": "package docstring",
    "sim/benches/__init__.py": "package docstring",
    "sim/benches/limit/__init__.py": "package docstring",
    "sim/cosim/__init__.py": "package docstring",
    "sim/flows/__init__.py": "package docstring",
    "sim/model/__init__.py": "package docstring",
    "sim/regress/__init__.py": "re-exports the regression's entry points",
    "sim/run/__init__.py": "package docstring",
    "sim/soak/__init__.py": "package docstring",
}
#: Generated source: checked against its generator, not tested on its own.
GENERATED = {
    "firmware/regs.py": "written by sim/flows/regmap_gen.py from hdl/regmap.py",
}
#: Source modules with behaviour and no test module of their name yet, and the tests that
#: exercise them. Each is a gap to close (a test module of its name makes the entry stale).
WITHOUT_TEST_MODULE = {
    # firmware/
    "firmware/c/abi.py": "through the built image: tests/firmware/c/test_build.py",
    "firmware/descriptor.py": "against the HDL layout: tests/hdl/dma/test_descriptor.py",
    "firmware/platform.py": "the driver's door to the machine: every driver test's platform",
    # hdl/
    "hdl/boards/boards.py": "tests/hdl/boards/test_top.py, tests/sim/flows/test_synth.py",
    "hdl/boards/pll.py": "tests/sim/flows/test_synth.py (the boards' clocks)",
    "hdl/boards/uart.py": "tests/hdl/boards/test_uart_bridge.py",
    "hdl/bus/axi4.py": "signatures; every AXI4 component's tests",
    "hdl/bus/axi_lite.py": "signatures; tests/hdl/bus/test_csr_bank.py",
    "hdl/bus/cpu_traffic.py": "tests/hdl/bus/test_host_memory_system.py (its bench)",
    "hdl/cpu/firmware_port.py": "tests/hdl/cpu/test_top.py (the C driver's console and exit)",
    "hdl/cpu/memory_map.py": "tests/hdl/cpu/test_interconnect.py, test_timer.py",
    "hdl/cpu/ram.py": "tests/hdl/cpu/test_top.py, tests/sim/flows/test_synth.py",
    "hdl/cpu/subsystem.py": "tests/hdl/cpu/test_top.py",
    "hdl/cpu/vexriscv.py": "tests/hdl/cpu/test_top.py, tests/sim/flows/test_synth.py",
    "hdl/cpu/wishbone.py": "signatures; tests/hdl/cpu/test_interconnect.py",
    "hdl/dma/bursts.py": "tests/hdl/dma/test_axi_reader.py (plan_bursts, next_burst_beats)",
    "hdl/dma/channel.py": "tests/hdl/dma/test_tx_channel.py, test_rx_channel.py",
    "hdl/dma/packed.py": "tests/hdl/dma/test_descriptor.py, test_rx_fifo.py",
    "hdl/dma/us_timer.py": "tests/hdl/dma/test_irq.py",
    "hdl/flatten.py": "every exported top (tests/sim/cosim/test_verilog_export.py)",
    "hdl/formal/arbiter_proofs.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/axi4_properties.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/axi_lite_properties.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/channel_induction.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/channel_proofs.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/crossing_proofs.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/gray.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/harness.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/internal.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/irq_proofs.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/mover_invariants.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/ownership_properties.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/queue.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/register_fifo.py": "tests/hdl/formal/test_proofs.py",
    "hdl/formal/streams.py": "tests/hdl/formal/test_proofs.py",
    "hdl/gray.py": "tests/hdl/dma/test_tx_fifo.py, tests/hdl/mac/test_ptp_clock.py",
    "hdl/hostmem_top.py": "tests/sim/benches/test_hdl_memory.py, the scenario tests",
    "hdl/mac/gmii.py": "signatures; tests/hdl/mac/test_tx.py, test_rx.py",
    "hdl/mac/stats.py": "tests/hdl/mac/test_rx.py",
    "hdl/regmodel.py": "tests/hdl/test_regmap.py, tests/hdl/bus/test_csr_bank.py",
    "hdl/sim_wire/player.py": "tests/hdl/sim_wire/test_sim_wire.py",
    "hdl/sim_wire/recorder.py": "tests/hdl/sim_wire/test_sim_wire.py",
    # sim/
    "sim/benches/cpu_port.py": "tests/hdl/bus/test_host_memory_system.py (its bench)",
    "sim/benches/cpu_soc.py": "tests/hdl/cpu/test_top.py (tests/cocotb/soc_cpu_tb.py)",
    "sim/benches/frame_wire.py": "tests/hdl/sim_wire/test_sim_wire.py",
    "sim/benches/gmii.py": "the MAC's and the SoC's cocotb tests (tests/cocotb/)",
    "sim/benches/guard.py": "the SoC's cocotb tests, tests/hdl/dma/test_axi_mover_properties.py",
    "sim/benches/loopback.py": "tests/sim/run/test_bench.py",
    "sim/benches/loopback_tb.py": "tests/sim/run/test_bench.py",
    "sim/benches/mac.py": "tests/hdl/mac/test_mac.py, test_mac_lfc.py, test_mac_pause.py",
    "sim/benches/mac_linerate.py": "none: `macdma demo` runs it, no test does",
    "sim/benches/pausing_peer.py": "tests/hdl/test_soc_pause.py",
    "sim/benches/soc.py": "the SoC's cocotb tests (tests/hdl/test_soc*.py) and scenarios",
    "sim/cosim/failures.py": "tests/sim/test_cli_errors.py",
    "sim/cosim/simulators.py": "tests/sim/cosim/test_runner.py, every simulator test",
    "sim/flows/formal.py": "tests/hdl/formal/test_proofs.py",
    "sim/flows/regmap_gen.py": "tests/hdl/test_regmap.py (the generated files are current)",
    "sim/regress/failures.py": "tests/sim/regress/test_report_notes.py",
    "sim/regress/metrics.py": "tests/sim/regress/test_command.py, test_expectations.py",
    "sim/regress/plots.py": "tests/sim/regress/test_command.py, test_report_notes.py",
    "sim/regress/pool.py": "tests/sim/regress/test_command.py (the real --quick sweep)",
    "sim/regress/report_content.py": "tests/sim/regress/test_report_notes.py, test_report_html.py",
    "sim/regress/screenshot.py": "tests/sim/regress/test_report_notes.py (a picture of it)",
    "sim/regress/results_csv.py": "tests/sim/regress/test_command.py (CSV and report)",
    "sim/regress/selection.py": "tests/sim/regress/test_expectations.py",
    "sim/run/scenario_tb.py": "tests/sim/run/test_scenario_*.py (every scenario on the RTL)",
    "sim/soak/coverage.py": "tests/sim/soak/test_soak_tb.py (the CI profile's coverage goal)",
}


def _defines_a_function(module: Path) -> bool:
    tree = ast.parse(module.read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(tree))


def source_modules(root: Path) -> list[Path]:
    """Every Python module of the source packages."""
    return sorted(p for folder in SOURCE_PACKAGES for p in (root / folder).rglob("*.py"))


def _test_modules(tests: Path) -> list[Path]:
    return sorted(tests.rglob("test_*.py"))


def subject(test_module: Path, tests: Path) -> Path | None:
    """The source a test module names: ``test_<name>[_<aspect>].py`` in tests/<folder>/
    names the module, other source file or subpackage <name> of <folder>, or <folder>
    itself. None when it names nothing."""
    folder = test_module.parent.relative_to(tests)
    if not folder.parts or folder.parts[0] not in SOURCE_FOLDERS:
        return None
    source_folder = tests.parent / folder
    if not source_folder.is_dir():
        return None
    name = test_module.stem.removeprefix("test_")
    candidates = [(source_folder.name, source_folder)]
    for entry in source_folder.iterdir():
        if entry.name.startswith((".", "__")) or entry.name == "__pycache__":
            continue
        stem = entry.stem if entry.is_file() else entry.name
        candidates.append((stem.replace("-", "_"), entry))
    # The longest name wins; at equal length a file over its folder (hdl/mac/mac.py, not
    # hdl/mac/), a Python module over another file (limit/harness.py, not harness.cpp).
    named = [(len(stem), entry != source_folder, entry.suffix == ".py", entry)
             for stem, entry in candidates
             if name == stem or name.startswith(stem + "_")]  # fmt: skip
    return max(named, key=lambda match: match[:3])[3] if named else None


def _tested_modules(tests: Path) -> set[Path]:
    """The source modules some test module names (a package: its ``__init__.py``)."""
    tested = set()
    for module in _test_modules(tests):
        named = subject(module, tests)
        if named is not None:
            tested.add(named / "__init__.py" if named.is_dir() else named)
    return tested


def modules_without_test_module(root: Path, exempt: set[str]) -> list[str]:
    """Source modules with behaviour that no test module names and no list exempts."""
    tested = _tested_modules(root / "tests")
    return [str(p.relative_to(root)) for p in source_modules(root)
            if p not in tested and str(p.relative_to(root)) not in exempt
            and _defines_a_function(p)]  # fmt: skip


def _unnamed_test_modules(tests: Path) -> list[str]:
    return [str(m.relative_to(tests.parent)) for m in _test_modules(tests)
            if subject(m, tests) is None]  # fmt: skip


def test_every_source_module_with_behaviour_has_a_test_module_of_its_name():
    exempt = WITHOUT_BEHAVIOUR.keys() | GENERATED.keys() | WITHOUT_TEST_MODULE.keys()
    missing = modules_without_test_module(ROOT, exempt)
    assert not missing, (
        "source modules with behaviour and no test module of their name "
        f"(tests/<folder>/test_<module>[_<aspect>].py): {missing}"
    )
    assert len(source_modules(ROOT)) > 150, "the walk found too few source modules to be right"


def test_every_test_module_names_a_source_module():
    unnamed = [m for m in _unnamed_test_modules(TESTS) if m not in TESTS_OF_HELPERS]
    assert not unnamed, (
        "test modules whose name names no module, subpackage or folder of the source folder "
        f"they mirror: {unnamed}"
    )
    assert len(_test_modules(TESTS)) > 100, "the walk found too few test modules to be right"


def test_the_exemptions_hold():
    """Each listed module exists; one without behaviour defines no function; one without a
    test module has none (a test module written for it makes the entry stale)."""
    wrong = [f"{name}: not found" for name in WITHOUT_BEHAVIOUR.keys() | GENERATED.keys()
             | WITHOUT_TEST_MODULE.keys() if not (ROOT / name).is_file()]  # fmt: skip
    wrong += [f"{name}: defines a function, so it has behaviour to test"
              for name in WITHOUT_BEHAVIOUR
              if (ROOT / name).is_file() and _defines_a_function(ROOT / name)]  # fmt: skip
    tested = {str(p.relative_to(ROOT)) for p in _tested_modules(TESTS)}
    wrong += [f"{name}: has a test module now (remove it from WITHOUT_TEST_MODULE)"
              for name in WITHOUT_TEST_MODULE if name in tested]  # fmt: skip
    wrong += [f"{name}: not found" for name in TESTS_OF_HELPERS if not (ROOT / name).is_file()]
    assert not wrong, f"stale or wrong layout exemptions: {wrong}"


def test_the_checks_name_a_planted_module(tmp_path):
    """A source module with a function and no test module, and a test module named after
    nothing, are each named; a constants module and an aspect-named test module are not."""
    (tmp_path / "hdl" / "dma").mkdir(parents=True)
    (tmp_path / "hdl" / "dma" / "ring.py").write_text("def walk():\n    return 1\n")
    (tmp_path / "hdl" / "dma" / "fifo.py").write_text("def push():\n    return 1\n")
    (tmp_path / "hdl" / "dma" / "layouts.py").write_text("WIDTH = 32\n")
    (tmp_path / "tests" / "hdl" / "dma").mkdir(parents=True)
    (tmp_path / "tests" / "hdl" / "dma" / "test_ring_walker.py").write_text("")
    (tmp_path / "tests" / "hdl" / "dma" / "test_rx_path.py").write_text("")
    assert modules_without_test_module(tmp_path, set()) == ["hdl/dma/fifo.py"]
    assert modules_without_test_module(tmp_path, {"hdl/dma/fifo.py"}) == []
    assert _unnamed_test_modules(tmp_path / "tests") == ["tests/hdl/dma/test_rx_path.py"]


def _imported_names(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
    return names


def _helpers() -> list[Path]:
    """The helper modules of the tests: not test modules, benches, models or conftest."""
    return sorted(
        path
        for path in TESTS.rglob("*.py")
        if not path.name.startswith("test_")
        and path.name != "conftest.py"
        and path.relative_to(TESTS).parts[0] not in ("cocotb",)
    )


def test_helpers_are_importable_by_their_bare_name_and_no_test_module_imports_another():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    on_path = {ROOT / folder for folder in config["tool"]["pytest"]["ini_options"]["pythonpath"]}
    off_path = sorted({str(h.parent.relative_to(ROOT)) for h in _helpers()
                       if h.parent not in on_path})  # fmt: skip
    assert not off_path, f"folders holding helpers but not on pytest's pythonpath: {off_path}"
    stems = [h.stem for h in _helpers()]
    twice = sorted({stem for stem in stems if stems.count(stem) > 1})
    assert not twice, f"helper names used twice in tests/ (imported by bare name): {twice}"
    importers = {str(m.relative_to(TESTS)): sorted(n for n in _imported_names(m)
                                                   if n.startswith("test_"))
                 for m in _test_modules(TESTS)}  # fmt: skip
    importers = {name: imported for name, imported in importers.items() if imported}
    assert not importers, f"test modules importing test modules (share a helper): {importers}"


def test_every_test_module_sits_in_the_folder_of_a_source_folder():
    misplaced = []
    for module in _test_modules(TESTS):
        folder = module.parent.relative_to(TESTS)
        if (
            folder == Path(".")
            or folder.parts[0] in SUPPORT_FOLDERS
            or folder.parts[0] == "tests"
            or not (ROOT / folder).is_dir()
        ):
            misplaced.append(str(module.relative_to(ROOT)))
    assert not misplaced, f"test modules outside a folder mirroring a source folder: {misplaced}"


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
    """A cocotb bench (``*_tb.py``, not a test module) of the tests is in tests/cocotb/; one
    in sim/ is run by a command, so a module of sim/ other than itself names it."""
    stray = [str(p.relative_to(ROOT)) for p in TESTS.rglob("*_tb.py")
             if p.parent.name != "cocotb" and not p.name.startswith("test_")]  # fmt: skip
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
