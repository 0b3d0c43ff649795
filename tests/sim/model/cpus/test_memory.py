"""A CPU file's [memory] (sim/model/cpus/memory.py): the test CPU file's loads, a bad value
names its key and range, and a memory too slow for the SoC's ports is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from macdma.sim.model.cpus import CpuFileError, load_cpu

TEST_CPU = Path(__file__).parents[3] / "cpus" / "memory-system.toml"


def _cpu_file(tmp_path, **changes) -> Path:
    text = TEST_CPU.read_text()
    for key, value in changes.items():
        lines = [line for line in text.splitlines() if not line.startswith(f"{key} =")]
        if value is not None:
            lines.append(f"{key} = {value}")
        text = "\n".join(lines) + "\n"
    path = tmp_path / "mine.toml"
    path.write_text(text)
    return path


def test_the_test_cpu_files_memory_loads():
    memory = load_cpu(str(TEST_CPU)).memory
    assert memory.bytes_per_ns == 1.6
    timing = memory.timing(10.0)
    assert (timing.page_hit_cycles, timing.page_miss_cycles) == (2, 5)
    assert timing.beat_cost_x16 == 4  # 4 bytes at 16 bytes per clock: a quarter clock
    assert timing.cpu_beat_bytes_log2 == 4 and timing.cpu_beat_cost_x16 == 16
    assert load_cpu("ideal").memory is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("bus_bytes", 0, "memory.bus_bytes = 0: must be a whole number, 1..64 bytes"),
        ("bus_mhz", "nan", "memory.bus_mhz = nan: must be a number, 1..5000 MHz"),
        ("transfers_per_clock", 4,
         "memory.transfers_per_clock = 4: must be a whole number, one of 1, 2"),
        ("page_bytes", 3000, "memory.page_bytes = 3000: must be a power of two"),
        ("banks", 3, "memory.banks = 3: must be a whole number, one of 1, 2, 4, 8"),
        ("page_hit_ns", -1.0, "memory.page_hit_ns = -1.0: must be a number, 0..1000 ns"),
        ("page_miss_ns", 10.0, "memory.page_miss_ns = 10.0: must be at least page_hit_ns (15.0)"),
        ("turnaround_ns", None,
         "memory.turnaround_ns = None: missing (a read/write turnaround, 0..1000 ns)"),
        ("cpu_burst_bytes", 48, "memory.cpu_burst_bytes = 48: must be a power of two"),
        ("cpu_burst_bytes", 2048,
         "memory.cpu_burst_bytes = 2048: must be a whole number, 4..1024 bytes"),
        ("refresh_ns", 7800.0, "memory.refresh_ns = 7800.0: unknown key"),
    ],
)  # fmt: skip
def test_bad_memory_values_name_key_and_range(tmp_path, key, value, message):
    path = _cpu_file(tmp_path, **{key: value})
    with pytest.raises(CpuFileError) as error:
        load_cpu(str(path))
    assert message in str(error.value)
    assert str(path) in str(error.value)


def test_a_memory_too_slow_for_its_ports_is_refused():
    memory = load_cpu(str(TEST_CPU)).memory
    with pytest.raises(ValueError, match="page_hit_ns = 15.0 ns is 1500 SoC clocks"):
        memory.timing(0.01)
