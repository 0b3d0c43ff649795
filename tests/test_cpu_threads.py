"""Hardware threads sharing one pipeline in the modelled CPU (tests/cocotb/cpu_threads_tb.py)
and the CPU-file keys that describe them (docs/cpus.md, "Hardware threads")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from macdma.sim.model.cpus import CpuFileError, load_cpu_file

CPU_DIR = Path(__file__).parent / "cpus"


def test_hardware_threads_share_one_pipeline(cocotb_run, sim):
    result = cocotb_run(top="macdma_soc", test_module="cpu_threads_tb", sim=sim)
    assert (result.failed, result.passed) == (0, 5)


def test_a_cpu_file_gives_its_threads_and_their_share():
    spec = load_cpu_file(CPU_DIR / "vpe-pair.toml")
    assert (spec.cores, spec.threads_per_pipeline, spec.thread_share) == (2, 2, 0.6)
    plain = load_cpu_file(CPU_DIR / "tcp-sender.toml")
    assert (plain.threads_per_pipeline, plain.thread_share) == (1, 1.0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"threads_per_pipeline": 4}, "threads_per_pipeline = 4: must be a whole number, 1..2"),
        ({"thread_share": 0.3}, "thread_share = 0.3: must be a number, 0.5..1"),
        ({"thread_share": None}, "thread_share is missing (with threads_per_pipeline = 2"),
        ({"cores": 3}, "cores = 3: must be a multiple of threads_per_pipeline (2)"),
        (
            {"threads_per_pipeline": None},
            "thread_share = 0.6: has no effect without threads_per_pipeline = 2",
        ),
    ],
)
def test_bad_thread_settings_stop_the_load_naming_them(tmp_path, change, message):
    lines = (CPU_DIR / "vpe-pair.toml").read_text().splitlines()
    for key, value in change.items():
        lines = [line for line in lines if not line.startswith(f"{key} =")]
        if value is not None:
            lines.insert(0, f"{key} = {value}")
    path = tmp_path / "cpu.toml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CpuFileError, match=re.escape(message)):
        load_cpu_file(path)
