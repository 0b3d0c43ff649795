"""Property-based tests (hypothesis) of the two file formats users write: a CPU file
(sim/model/cpus) and a sweep file (sim/regress/sweep_file.py). Any TOML near the CPU file's
schema or not, and any text as either file, is either accepted or rejected with a ValueError
whose message names the file; never another exception (a traceback).

TOML near the sweep file's schema included: ``defaults = 0``, ``experiment = [0]`` or
``metrics = 3`` are named errors, not tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from macdma.firmware.costs import CpuCosts
from macdma.sim.model.cpus import DRIVER_SETTINGS, load_cpu_file
from macdma.sim.regress import load_sweep

COST_NAMES = [name for name in CpuCosts.__dataclass_fields__]

scalars = st.one_of(
    st.integers(-5, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), inner, max_size=3),
    ),
    max_leaves=6,
)


def toml_value(value) -> str:
    """*value* as an inline TOML value (JSON's string escapes are TOML's basic strings')."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(table: dict) -> str:
    return "".join(f"{key} = {toml_value(value)}\n" for key, value in table.items())


def near(keys: list[str]):
    """Tables using mostly these keys (and sometimes others), with any values."""
    key = st.one_of(st.sampled_from(keys), st.from_regex(r"[a-z_]{1,10}", fullmatch=True))
    return st.dictionaries(key, values, max_size=len(keys) + 1)


cpu_tables = st.fixed_dictionaries(
    {},
    optional={
        "clock_mhz": st.one_of(st.floats(-10, 2000, allow_nan=False), values),
        "cores": st.one_of(st.integers(-1, 8), values),
        "description": values,
        "costs": st.one_of(near(COST_NAMES), values),
        "driver": st.one_of(near(list(DRIVER_SETTINGS)), values),
        "extra": values,
    },
)


def _loads_or_clear_error(load, path: Path) -> None:
    try:
        load(path)
    except ValueError as error:
        assert str(path.stem) in str(error) or str(path) in str(error), error


PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPERTY_SETTINGS
@given(table=cpu_tables)
def test_any_cpu_file_loads_or_names_its_error(table, tmp_path):
    path = tmp_path / "my-cpu.toml"
    path.write_text(toml_document(table))
    _loads_or_clear_error(load_cpu_file, path)


@PROPERTY_SETTINGS
@given(text=st.text(max_size=200))
def test_any_text_as_either_file_gives_a_clear_error(text, tmp_path):
    for name, load in (("cpu-file.toml", load_cpu_file), ("sweep-file.toml", load_sweep)):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        _loads_or_clear_error(load, path)


experiment = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.from_regex(r"[a-z0-9_]{1,8}", fullmatch=True), values),
        "fixed": st.one_of(near(["frames", "frame_size", "irq", "direction"]), values),
        "sweep": st.one_of(
            st.dictionaries(st.sampled_from(["frags", "burst", "irq"]), values), values
        ),
        "x": values,
        "series": values,
        "metrics": values,
        "reading": values,
        "title": values,
    },
)
sweep_tables = st.fixed_dictionaries(
    {},
    optional={
        "name": values,
        "description": values,
        "defaults": st.one_of(near(["frames", "sim", "cpu"]), values),
        "experiment": st.one_of(st.lists(st.one_of(experiment, values), max_size=3), values),
    },
)


@PROPERTY_SETTINGS
@given(table=sweep_tables)
def test_any_sweep_file_loads_or_names_its_error(table, tmp_path):
    path = tmp_path / "my-sweep.toml"
    path.write_text(toml_document(table))
    _loads_or_clear_error(load_sweep, path)
