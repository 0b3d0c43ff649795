"""CPU files (sim/model/cpus/): the shipped ones, loading a user's, and every way a file can be
wrong, each stopping before a simulation with the file, the key and the value named."""

from __future__ import annotations

import dataclasses
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from macdma.firmware.costs import CpuCosts
from macdma.sim.cli import main
from macdma.sim.model.cpu import CPU_PRESETS, PRESET_DRIVER_SETTINGS, cpu_preset
from macdma.sim.model.cpus import (
    CPU_DIR,
    CpuFileError,
    FittedConstant,
    load_cpu,
    load_cpu_file,
    shipped_cpus,
)
from macdma.sim.run.scenario import Scenario

ROOT = Path(__file__).resolve().parents[3]
COSTS = tuple(f.name for f in dataclasses.fields(CpuCosts))
# How a shipped constant cites its source: a field report, an estimate, a fit, a sum of
# other constants, or the file's header.
SOURCE = r"field report|estimate|fitted|=|see above"


def cpu_file(tmp_path: Path, text: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def valid_text(**top) -> str:
    """A complete CPU file; ``top`` replaces top-level lines (None drops one)."""
    lines = {"clock_mhz": "clock_mhz = 200.0", "cores": "cores = 1", **top}
    body = [line for line in lines.values() if line is not None]
    costs = [f"{name} = {10.0 * (index + 1)}" for index, name in enumerate(COSTS)]
    return "\n".join([*body, "", "[costs]", *costs, "", CACHES])


#: A valid [caches] table: two levels, non-coherent.
CACHES = """[caches]
line_bytes = 32
coherent_dma = false
[[caches.level]]
name = "L1"
size_kib = 32
clean = 5.0
invalidate = 5.0
clean_invalidate = 6.0
[[caches.level]]
name = "L2"
size_kib = 1024
clean = 25.0
invalidate = 25.0
clean_invalidate = 30.0
"""


def cost_line(name: str) -> str:
    """The line of cost ``name`` in :func:`valid_text`."""
    return f"{name} = {10.0 * (COSTS.index(name) + 1)}"


# -- shipped CPUs --------------------------------------------------------------------------


def test_shipped_cpus_are_the_presets_with_their_driver_settings():
    # (clock MHz, cores) of each shipped CPU; the field reports' CPUs: docs/field-reports.md
    assert {name: (spec.clock_mhz, spec.cores) for name, spec in CPU_PRESETS.items()} == {
        "armv7-noncoherent": (1000.0, 1),
        "ideal": (1000.0, 1),
        "imx6dl": (1000.0, 2),
        "imx6qp-lan743x": (1000.0, 4),
        "imx6sx": (1000.0, 1),
        "ipq806x": (1700.0, 2),
        "microblaze-66": (66.0, 1),
        "mips-router": (500.0, 1),
        "qca9558": (720.0, 1),
        "rockchip-stmmac": (1500.0, 4),
        "usb-nic-host": (2000.0, 1),
        "vexriscv": (100.0, 1),
        "xrx200": (500.0, 1),
        "zynqmp-axienet": (1200.0, 4),
    }
    assert tuple(CPU_PRESETS) == shipped_cpus()
    assert all(spec.shipped for spec in CPU_PRESETS.values())
    mips_driver = {"housekeeping_hz": 1000, "tx_clean_budget": 32}
    assert PRESET_DRIVER_SETTINGS == {"mips-router": mips_driver, "xrx200": mips_driver}
    assert cpu_preset("microblaze-66") == (66.0, CPU_PRESETS["microblaze-66"].costs)


@pytest.mark.parametrize("name", shipped_cpus())
def test_every_shipped_cost_names_its_source(name):
    """Each non-zero cost has a comment on its line or on the comment lines just above it,
    and the comments cite a field report by its id or say it is an estimate or fitted."""
    lines = (CPU_DIR / f"{name}.toml").read_text().splitlines()
    costs = load_cpu(name).costs
    start = lines.index(next(line for line in lines if line.startswith("[costs]")))
    end = next((i for i, line in enumerate(lines) if i > start and line.startswith("[")),
               len(lines))  # fmt: skip
    for cost in COSTS:
        if getattr(costs, cost) == 0:
            continue
        (index,) = [i for i in range(start, end) if re.match(rf"{cost}\s*=", lines[i])]
        comment = lines[index].partition("#")[2]
        above = index - 1
        while lines[above].startswith("#"):  # the comment block just above the key
            comment = lines[above] + " " + comment
            above -= 1
        assert re.search(SOURCE, comment), f"{name}: {cost}'s comment names no source"
    header = " ".join(line.lstrip("# ") for line in lines if line.startswith("#"))
    # A file stands for a field report's CPU, or for the real core it models (vexriscv).
    stands_for = r"field report [a-z0-9]+-[a-z0-9]+|the model of the real core"
    assert name == "ideal" or re.search(stands_for, header)
    assert "/work" not in header and "DESIGN.md" not in header


def test_a_copy_of_a_shipped_file_loads_as_a_users_cpu(tmp_path):
    copy = tmp_path / "my-blaze.toml"
    shutil.copy(CPU_DIR / "microblaze-66.toml", copy)
    spec = load_cpu(str(copy))
    shipped = load_cpu("microblaze-66")
    assert (spec.name, spec.path, spec.shipped) == ("my-blaze", copy.resolve(), False)
    assert (spec.clock_mhz, spec.costs, spec.digest) == (
        shipped.clock_mhz,
        shipped.costs,
        shipped.digest,
    )
    assert cpu_preset(str(copy)) == (66.0, shipped.costs)


def test_cores_default_to_one_and_integers_are_cycles(tmp_path):
    path = cpu_file(tmp_path, valid_text(cores=None).replace("10.0", "10"))
    spec = load_cpu_file(path)
    assert spec.cores == 1 and spec.costs.irq_entry_exit == 10.0 and spec.driver == {}


def test_the_cpu_files_ship_as_package_data():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "*.toml" in pyproject["tool"]["setuptools"]["package-data"]["macdma.sim.model.cpus"]
    assert (CPU_DIR / "__init__.py").exists()  # a package, so setup.py's find_packages has it


# -- bad files: each message names the file, the key and the value ---------------------------


BAD_FILES = [
    # (what is wrong, file text, the key and value the message must name, the problem)
    ("unknown top-level key", valid_text(speed="speed = 3"), "speed = 3", "unknown key"),
    (
        "unknown cost",
        valid_text().replace("[costs]", "[costs]\nmmio_reed = 40.0"),
        "costs.mmio_reed = 40.0",
        "unknown cost",
    ),
    (
        "negative cost",
        valid_text().replace("mmio_read = 20.0", "mmio_read = -20.0"),
        "costs.mmio_read = -20.0",
        "must be a number, 0..1000000 CPU cycles",
    ),
    ("missing clock", valid_text(clock_mhz=None), "clock_mhz is missing", "MHz"),
    ("clock as text", valid_text(clock_mhz='clock_mhz = "66"'), "clock_mhz = '66'", "number"),
    ("zero clock", valid_text(clock_mhz="clock_mhz = 0"), "clock_mhz = 0", "1..10000 MHz"),
    ("fractional cores", valid_text(cores="cores = 1.5"), "cores = 1.5", "whole number"),
    ("no cores", valid_text(cores="cores = 0"), "cores = 0", "a whole number, 1..64"),
    (
        "cost as text",
        valid_text().replace("mmio_write = 30.0", 'mmio_write = "30"'),
        "costs.mmio_write = '30'",
        "a number, 0..1000000 CPU cycles",
    ),
    (
        "cost as a bool",
        valid_text().replace("mmio_write = 30.0", "mmio_write = true"),
        "costs.mmio_write = True",
        "a number, 0..1000000 CPU cycles",
    ),
    (
        "missing cost",
        valid_text().replace(cost_line("timer_tick_overhead") + "\n", ""),
        "costs.timer_tick_overhead is missing",
        "every cost must be given",
    ),
    ("no [costs] table", "clock_mhz = 100.0\n", "the [costs] table is missing", "irq_entry_exit"),
    (
        "unknown driver setting",
        valid_text() + "[driver]\nburst_beats = 8\n",
        "driver.burst_beats = 8",
        "not a driver setting",
    ),
    (
        "driver setting out of range",
        valid_text() + "[driver]\ntx_clean_budget = 0\n",
        "driver.tx_clean_budget = 0",
        "out of range",
    ),
    (
        "description not text",
        valid_text(description="description = 5"),
        "description = 5",
        "string",
    ),
    ("not TOML", "clock_mhz = = 5\n", "not valid TOML", "line 1"),
    (
        "no [caches] table",
        valid_text().replace(CACHES, ""),
        "the [caches] table is missing",
        "coherent_dma",
    ),
    (
        "line not a power of two",
        valid_text().replace("line_bytes = 32", "line_bytes = 48"),
        "caches.line_bytes = 48",
        "power of two",
    ),
    (
        "coherence as text",
        valid_text().replace("coherent_dma = false", 'coherent_dma = "no"'),
        "caches.coherent_dma = 'no'",
        "true or false",
    ),
    (
        "non-coherent without levels",
        valid_text().replace(CACHES, "[caches]\nline_bytes = 32\ncoherent_dma = false\n"),
        "caches.coherent_dma = False",
        "needs the cache levels",
    ),
    (
        "negative line operation",
        valid_text().replace("clean_invalidate = 6.0", "clean_invalidate = -6.0"),
        "caches.level[1].clean_invalidate = -6.0",
        "0..10000 CPU cycles",
    ),
    (
        "level without its invalidate",
        valid_text().replace("invalidate = 25.0\n", ""),
        "caches.level[2].invalidate is missing",
        "a level gives",
    ),
    (
        "unknown cache key",
        valid_text().replace("line_bytes = 32", "line_bytes = 32\nways = 4"),
        "caches.ways = 4",
        "unknown key",
    ),
    (
        "fitted constant outside its bounds",
        valid_text()
        + '[fitted]\nrx_per_packet = { low = 10, high = 50, figure = "report x 100 Mb/s" }\n',
        f"costs.rx_per_packet = {10.0 * (COSTS.index('rx_per_packet') + 1)}",
        "outside its fitted bounds 10..50 (fitted to 'report x 100 Mb/s')",
    ),
    (
        "two constants fitted to one figure",
        valid_text()
        + "[fitted]\n"
        + 'irq_entry_exit = { low = 0, high = 100, figure = "report x 100 Mb/s" }\n'
        + 'mmio_read = { low = 0, high = 100, figure = "report x 100 Mb/s" }\n',
        "fitted.mmio_read.figure = 'report x 100 Mb/s'",
        "already fits irq_entry_exit: one calibration figure fits at most one constant",
    ),
    (
        "fitted cache operation outside its bounds",
        valid_text()
        + '[fitted]\n"caches.L2.invalidate" = { low = 40, high = 90, figure = "report y 9k" }\n',
        "caches.level[2].invalidate = 25.0",
        "outside its fitted bounds 40..90",
    ),
    (
        "fitted without a figure",
        valid_text() + "[fitted]\nirq_entry_exit = { low = 0, high = 100 }\n",
        "fitted.irq_entry_exit",
        "figure is missing",
    ),
    (
        "fitted bounds upside down",
        valid_text() + '[fitted]\nirq_entry_exit = { low = 100, high = 0, figure = "f" }\n',
        "fitted.irq_entry_exit",
        "low is above high",
    ),
    (
        "fitted thing that is not a cost",
        valid_text() + '[fitted]\nclock_mhz = { low = 1, high = 1000, figure = "f" }\n',
        "fitted.clock_mhz",
        "not a cost or a cache line operation",
    ),
]


@pytest.mark.parametrize(
    ("text", "named", "problem"),
    [case[1:] for case in BAD_FILES],
    ids=[case[0] for case in BAD_FILES],
)
def test_a_bad_file_is_refused_naming_file_key_and_value(tmp_path, text, named, problem):
    path = cpu_file(tmp_path, text)
    with pytest.raises(CpuFileError) as error:
        load_cpu(str(path))
    message = str(error.value)
    assert message.startswith(f"{path.resolve()}: "), message
    assert named in message and problem in message, message


def test_a_valid_file_is_accepted_by_the_same_checks(tmp_path):
    fitted = (
        '[fitted]\nirq_entry_exit = { low = 5, high = 50, figure = "report x 1 Mb/s" }\n'
        '"caches.L2.invalidate" = { low = 10, high = 40, figure = "report x 9k" }\n'
    )
    path = cpu_file(tmp_path, valid_text() + fitted + "[driver]\ntx_clean_budget = 8\n")
    spec = load_cpu(str(path))
    assert spec.driver == {"tx_clean_budget": 8}
    assert spec.fitted["irq_entry_exit"] == FittedConstant(5.0, 50.0, "report x 1 Mb/s")
    assert spec.fitted["caches.L2.invalidate"] == FittedConstant(10.0, 40.0, "report x 9k")
    assert (spec.caches.line_bytes, spec.caches.coherent_dma) == (32, False)
    levels = spec.caches.levels
    assert [(level.name, level.size_bytes, level.clean_invalidate) for level in levels] == [
        ("L1", 32 * 1024, 6.0),
        ("L2", 1024 * 1024, 30.0),
    ]
    assert spec.caches.post_dma_invalidate is True


@pytest.mark.parametrize("name", shipped_cpus())
def test_every_shipped_cache_constant_and_fit_names_its_source(name):
    """Every [caches] line carries a source (like the costs), and every fitted constant of a
    shipped file is one its file's comments call fitted, to the figure its entry names."""
    lines = (CPU_DIR / f"{name}.toml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[caches]"))
    end = next((i for i, line in enumerate(lines) if i > start and re.match(r"\[(?!\[)", line)
                and not line.startswith("[caches")), len(lines))  # fmt: skip
    for index in range(start + 1, end):
        line = lines[index]
        key = re.match(r"(\w+)\s*=", line)
        if not key or key.group(1) == "name":
            continue
        comment = line.partition("#")[2]
        above = index - 1
        while lines[above].startswith("#"):
            comment = lines[above] + " " + comment
            above -= 1
        if re.search(SOURCE + r"|TRM|manual|Linux", comment):
            continue
        raise AssertionError(f"{name}: [caches] {line!r} names no source")
    spec = load_cpu(name)
    text = "\n".join(lines)
    for fit in spec.fitted.values():
        assert re.search(rf"fitted to field report {re.escape(fit.figure.split()[0])}", text)


def test_unreadable_files_and_unknown_names(tmp_path):
    missing = tmp_path / "nothere.toml"
    with pytest.raises(CpuFileError, match=rf"{re.escape(str(missing))}: cannot read"):
        load_cpu(str(missing))
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    with pytest.raises(CpuFileError, match="cannot read the CPU file"):
        load_cpu(str(folder))
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe clock")
    with pytest.raises(CpuFileError, match="not UTF-8"):
        load_cpu(str(binary))
    with pytest.raises(CpuFileError, match=r"unknown CPU 'vax': not a shipped CPU \(armv7"):
        load_cpu("vax")


# -- the scenario and the command line ------------------------------------------------------


def test_scenario_takes_a_path_and_keeps_it_absolute(tmp_path, monkeypatch):
    cpu_file(tmp_path, valid_text())
    monkeypatch.chdir(tmp_path)
    scenario = Scenario(cpu="./mine.toml")
    assert scenario.cpu == str(tmp_path.resolve() / "mine.toml")
    assert Scenario.from_json(scenario.to_json()) == scenario
    assert Scenario(cpu="microblaze-66").cpu == "microblaze-66"


def test_scenario_refuses_a_bad_file_and_contexts_on_missing_cores(tmp_path):
    bad = cpu_file(tmp_path, valid_text(clock_mhz=None), "bad.toml")
    with pytest.raises(ValueError, match=rf"cpu: {re.escape(str(bad))}: clock_mhz is missing"):
        Scenario(cpu=str(bad))
    two = cpu_file(tmp_path, valid_text(cores="cores = 2"), "two.toml")
    assert Scenario(cpu=str(two), irq_core=1, app_core=0).irq_core == 1
    with pytest.raises(ValueError, match=r"app_core must be 0\.\.1 \(the CPU .* has 2 core"):
        Scenario(cpu=str(two), app_core=2)
    with pytest.raises(ValueError, match=r"irq_core must be 0\.\.0"):
        Scenario(cpu="ideal", irq_core=1)


def test_run_stops_on_a_bad_cpu_file_before_simulating(tmp_path, capsys, monkeypatch):
    def no_simulation(scenario):
        raise AssertionError("simulated despite a bad CPU file")

    monkeypatch.setattr("macdma.sim.run.scenario.run_scenario", no_simulation)
    bad = cpu_file(tmp_path, valid_text().replace("mmio_read = 20.0", "mmio_read = -1"))
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--cpu", str(bad)])
    assert exit_info.value.code == 2
    assert (
        f"{bad.resolve()}: costs.mmio_read = -1: must be a number, 0..1000000"
        in capsys.readouterr().err
    )


def test_sweeps_take_names_and_paths_and_refuse_bad_files(tmp_path):
    from macdma.sim.regress import expand, parse_sweep

    mine = cpu_file(tmp_path, valid_text())
    bad = cpu_file(tmp_path, valid_text(cores="cores = -1"), "bad.toml")

    def sweep(*cpus):
        experiment = {"name": "cpus", "fixed": {"frames": 4}, "sweep": {"cpu": list(cpus)}}
        return parse_sweep({"experiment": [experiment]})

    points = expand(sweep("ideal", str(mine)), sources="test")
    assert [p.scenario.cpu for p in points] == ["ideal", str(mine.resolve())]
    with pytest.raises(ValueError, match=rf"'cpus'.*{re.escape(str(bad))}: cores = -1"):
        expand(sweep("ideal", str(bad)), sources="test")


@pytest.mark.parametrize(
    ("change", "named", "problem"),
    [
        (("mmio_read = 20.0", "mmio_read = nan"), "costs.mmio_read = nan", "0..1000000 CPU cycles"),
        (("mmio_read = 20.0", "mmio_read = inf"), "costs.mmio_read = inf", "0..1000000 CPU cycles"),
        (("clock_mhz = 200.0", "clock_mhz = 1e30"), "clock_mhz = 1e+30", "1..10000 MHz"),
        (("clock_mhz = 200.0", "clock_mhz = 0.001"), "clock_mhz = 0.001", "1..10000 MHz"),
        (("clock_mhz = 200.0", "clock_mhz = nan"), "clock_mhz = nan", "1..10000 MHz"),
        (("cores = 1", "cores = 100000"), "cores = 100000", "1..64"),
    ],
)
def test_unusable_numbers_in_a_cpu_file_are_refused_with_their_range(
    tmp_path, change, named, problem
):
    # issue 42 §8: a cost of nan ran to the end with exit 0, inf timed out after 52 s
    text = valid_text()
    assert change[0] in text
    path = cpu_file(tmp_path, text.replace(change[0], change[1]))
    with pytest.raises(CpuFileError) as error:
        load_cpu(str(path))
    assert named in str(error.value) and problem in str(error.value), str(error.value)


def test_an_infinite_housekeeping_tick_is_refused(tmp_path):
    path = cpu_file(tmp_path, valid_text() + "[driver]\nhousekeeping_hz = inf\n")
    with pytest.raises(
        CpuFileError, match=r"driver.housekeeping_hz = inf: must be a number, 1\.\.100000 Hz"
    ):
        load_cpu(str(path))


@pytest.mark.parametrize("name", shipped_cpus())
def test_every_fitted_cost_is_bounded_or_its_file_says_why_not(name):
    """A cost whose comment says it was fitted has a [fitted] entry (bounds and figure), or
    the file says in so many words that it has none and why (a fit no bottom-up count
    allows: the model lacks a mechanism there)."""
    lines = (CPU_DIR / f"{name}.toml").read_text().splitlines()
    spec = load_cpu(name)
    start = lines.index(next(line for line in lines if line.startswith("[costs]")))
    end = next((i for i, line in enumerate(lines) if i > start and line.startswith("[")),
               len(lines))  # fmt: skip
    comments_after = " ".join(line for line in lines[end:] if line.startswith("#"))
    for index in range(start + 1, end):
        key = re.match(r"(\w+)\s*=", lines[index])
        if not key:
            continue
        block, above = lines[index].partition("#")[2], index - 1
        while lines[above].startswith("#"):
            block, above = lines[above] + " " + block, above - 1
        if "fitted to field report" not in block:
            continue
        cost = key.group(1)
        unbounded = cost in comments_after and re.search(
            r"has no bounds|No \[fitted\] entry", comments_after
        )
        assert cost in spec.fitted or unbounded, f"{name}: {cost} is fitted without bounds"
