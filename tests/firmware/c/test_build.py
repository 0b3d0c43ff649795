"""The C firmware's build step (firmware/c/build.py) and the bench <-> firmware blocks
(firmware/c/abi.py): the image builds with the project's flags and is reused while
nothing that decides it changes; the generated headers carry the Python tables; a bad
configuration is refused by name."""

import shutil
import subprocess

import pytest

from macdma.firmware.c import abi, build
from macdma.firmware.descriptor import Descriptor
from macdma.hdl.cpu import memory_map


def test_the_image_builds_once_and_holds_the_blocks_the_bench_reads():
    first = build.build_firmware()
    stamp = (first.folder / "symbols.json").stat().st_mtime_ns
    again = build.build_firmware()
    assert again.folder == first.folder
    assert (again.folder / "symbols.json").stat().st_mtime_ns == stamp, "rebuilt for nothing"
    assert first.base == memory_map.RAM.base and 0 < len(first.image) <= first.ram_bytes
    for symbol in ("_start", "trap_entry", "fw_config", "fw_results", "fw_rx_log"):
        assert memory_map.RAM.contains(first.address(symbol)), symbol
    assert first.address("_start") == memory_map.RAM.base, "the reset vector is _start"
    # fw_config is loaded with the image (in .data): the start-up code zeroes only .bss.
    assert first.address("fw_config") < first.address("__bss_start")
    assert first.address("fw_results") >= first.address("__bss_start")
    with pytest.raises(KeyError, match="no symbol 'nothing'"):
        first.address("nothing")


def test_a_changed_source_changes_the_cache_key(tmp_path, monkeypatch):
    key = build.cache_key(build.DEFAULT_RAM_BYTES)
    copy = tmp_path / "c"
    shutil.copytree(build.SOURCE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(build, "SOURCE_DIR", copy)
    assert build.cache_key(build.DEFAULT_RAM_BYTES) == key
    (copy / "macdma.c").write_text((copy / "macdma.c").read_text() + "\n/* changed */\n")
    assert build.cache_key(build.DEFAULT_RAM_BYTES) != key
    assert build.cache_key(1 << 15) != build.cache_key(build.DEFAULT_RAM_BYTES)


def test_a_compiler_error_is_reported_with_its_output(tmp_path, monkeypatch):
    copy = tmp_path / "c"
    shutil.copytree(build.SOURCE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "main.c").write_text("int main(void) { return undeclared; }\n")
    monkeypatch.setattr(build, "SOURCE_DIR", copy)
    monkeypatch.setenv("MACDMA_BUILD_DIR", str(tmp_path / "build"))
    with pytest.raises(build.FirmwareBuildError, match="undeclared"):
        build.build_firmware()


def test_the_generated_headers_carry_the_python_tables():
    desc = build.descriptor_header()
    for field in Descriptor.layout():
        name = f"MACDMA_DESC_{field.name.upper()}"
        assert f"#define {name}_WORD {field.word}u" in desc
        assert f"#define {name}_MASK 0x{field.word_mask:08X}u" in desc
    cpu_map = build.memory_map_header(65536)
    for region in memory_map.REGIONS:
        assert f"#define CPU_{region.name}_BASE 0x{region.base:08X}u" in cpu_map
    header = abi.c_header()
    results = header[header.index("struct fw_results") :].split("};")[0]
    names = [line.split()[1].rstrip(";") for line in results.splitlines()[1:] if "uint32_t" in line]
    assert names == [field.name for field in abi.RESULT_FIELDS]


def test_a_bad_configuration_is_refused_by_name():
    words = abi.config_words(frames=7)
    assert words[abi.offset(abi.CONFIG_FIELDS, "frames") // 4] == 7
    assert words[0] == abi.CONFIG_MAGIC
    with pytest.raises(ValueError, match="no fw_config field framez"):
        abi.config_words(framez=7)
    with pytest.raises(ValueError, match="fw_config.frames must be a 32-bit"):
        abi.config_words(frames=-1)


def test_the_pktgen_frame_and_the_hash():
    frame = abi.pktgen_frame(0x01020304, 60)
    assert len(frame) == 60 and frame[:6] == abi.PKTGEN_DST and frame[12:14] == b"\x88\xb5"
    assert frame[16:20] == bytes([4, 3, 2, 1]) and frame[20] == (7 * 20 + 0x5A) & 0xFF
    # FNV-1a of the padded words: a trailing zero byte is invisible, a changed byte is not.
    assert abi.frame_hash(b"abc") == abi.frame_hash(b"abc\x00")
    assert abi.frame_hash(b"abc") != abi.frame_hash(b"abd")


IDLE_HARNESS = r"""
#include <stdio.h>
#include "idle.h"

/* A cycle counter that moves 5 per read, and one 1,000-cycle trap placed just before or
 * just after the counter's read number TRAP_AT. */
static volatile uint32_t irq_total;
static uint64_t clock_now;
static int reads, trap_at, trap_after;

static void trap(void) { clock_now += 1000; irq_total += 1000; }

static uint64_t cycles(void)
{
    reads++;
    if (reads == trap_at && !trap_after) trap();
    uint64_t now = (clock_now += 5);
    if (reads == trap_at && trap_after) trap();
    return now;
}

int main(void)
{
    for (trap_at = 1; trap_at <= 3; trap_at++)
        for (trap_after = 0; trap_after <= 1; trap_after++) {
            reads = 0;
            struct idle_mark mark = idle_sample(&irq_total, cycles);
            uint32_t idle = idle_since(&mark, &irq_total, cycles);
            printf("%d %d %u\n", trap_at, trap_after, idle);
        }
    return 0;
}
"""


def test_idle_time_never_counts_a_trap_taken_between_the_two_reads(tmp_path):
    """firmware/c/idle.h on the host: wherever a trap lands among the reads, the idle
    cycles are the span less the trap, never the trap itself and never a wrapped
    negative (the race that once reported -13,453,606 cycles per packet)."""
    source = tmp_path / "idle_harness.c"
    source.write_text(IDLE_HARNESS)
    binary = tmp_path / "idle_harness"
    compiled = subprocess.run(
        ["cc", "-O2", "-Wall", "-Werror", f"-I{build.SOURCE_DIR}", str(source), "-o", str(binary)],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr
    lines = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    idles = {tuple(map(int, line.split()[:2])): int(line.split()[2]) for line in lines.splitlines()}
    assert len(idles) == 6
    for (trap_at, after), idle in idles.items():
        assert 0 < idle < 1000, f"trap at read {trap_at} {'after' if after else 'before'}: {idle}"
