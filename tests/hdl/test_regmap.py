"""The register map: validation, lookups, and the generated driver constants, C header and docs."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from macdma.firmware.driver import MAX_IRQ_MIN_INTERVAL_US
from macdma.hdl.bus.axi4 import MAX_BURST_BEATS
from macdma.hdl.dma.axi_mover import BURST_BEATS_BITS
from macdma.hdl.regmap import REGISTER_MAP
from macdma.hdl.regmodel import (
    Block,
    Enumeration,
    EnumValue,
    Field,
    Register,
    RegisterMap,
    cfg_error_register,
)
from macdma.sim.flows import regmap_gen
from macdma.sim.run.scenario import IRQ_MIN_INTERVAL_MAX_US

ROOT = Path(__file__).resolve().parents[2]


def _reg(name="R", offset=0, fields=None, **kw):
    return Register(name, offset, fields or (Field("f", (0, 8), "rw"),), **kw)


# -- validation --------------------------------------------------------------------------


def test_overlapping_fields_name_both():
    with pytest.raises(ValueError, match=r"Register CTRL: field b .* overlaps field a"):
        Register("CTRL", 0, (Field("a", (0, 4), "rw"), Field("b", (3, 2), "rw")))


def test_unaligned_offset():
    with pytest.raises(ValueError, match=r"Register CTRL: offset 0x6 is not 4-byte aligned"):
        Register("CTRL", 6, (Field("a", (0, 1), "rw"),))


def test_duplicate_field_register_and_block_names():
    with pytest.raises(ValueError, match=r"Register R: field 'a' is duplicated"):
        _reg(fields=(Field("a", (0, 1), "rw"), Field("a", (1, 1), "rw")))
    with pytest.raises(ValueError, match=r"Block B: register 'R' is duplicated"):
        Block("B", 0, (_reg("R", 0), _reg("R", 4)))
    with pytest.raises(ValueError, match=r"Block 'B' is duplicated"):
        RegisterMap((Block("B", 0, (_reg(),)), Block("B", 0x100, (_reg(),))))


def test_shared_offset_and_address():
    with pytest.raises(ValueError, match=r"Block B: registers R and S share offset 0x4"):
        Block("B", 0, (_reg("R", 4), _reg("S", 4)))
    with pytest.raises(ValueError, match=r"Registers A_R and B_S share address 0x10"):
        RegisterMap((Block("A", 0, (_reg("R", 0x10),)), Block("B", 0x10, (_reg("S", 0),))))


def test_reset_out_of_range():
    with pytest.raises(ValueError, match=r"Field speed: reset 16 does not fit in 4 bit"):
        Field("speed", (0, 4), "rw", reset=16)
    with pytest.raises(ValueError, match=r"Field size: reset 0 is not one of the valid values"):
        Field("size", (0, 13), "rw", reset=0, valid=range(2, 4097))


def test_bad_valid_sets():
    with pytest.raises(ValueError, match=r"Field f: valid value 300 does not fit in 8 bit"):
        Field("f", (0, 8), "rw", reset=1, valid=range(1, 301))
    with pytest.raises(ValueError, match=r"Field f: only rw fields can have valid values"):
        Field("f", (0, 8), "ro", valid=range(0, 3))
    with pytest.raises(ValueError, match=r"Field f: valid range range\(0, 64, 3\) must have"):
        Field("f", (0, 8), "rw", valid=range(0, 64, 3))
    with pytest.raises(ValueError, match=r"Field f: valid entry range\(5, 5\) is empty"):
        Field("f", (0, 8), "rw", valid=(0, range(5, 5)))


def test_field_shape_and_access_checks():
    with pytest.raises(ValueError, match=r"Field f: bits \(lsb=30, width=4\) do not fit"):
        Field("f", (30, 4), "rw")
    with pytest.raises(ValueError, match=r"Field f: access 'rc' is not one of"):
        Field("f", (0, 1), "rc")
    with pytest.raises(ValueError, match=r"Field go: a wo-pulse field must be 1 bit wide"):
        Field("go", (0, 2), "wo-pulse")
    with pytest.raises(ValueError, match=r"Field name 'Run' must be a lower_snake_case"):
        Field("Run", (0, 1), "rw")
    with pytest.raises(ValueError, match=r"Field mode: enum value BIG=4 does not fit in 2 bit"):
        Field("mode", (0, 2), "rw", enum=Enumeration("Mode", (EnumValue("BIG", 4),)))


def test_register_outside_window():
    with pytest.raises(ValueError, match=r"Register B_R at 0x1000 lies outside the 4096-byte"):
        RegisterMap((Block("B", 0xFFC, (_reg("R", 4),)),))


def test_port_name_collision():
    # Field "tail_written" of TAIL collides with TAIL's doorbell strobe port.
    tail = Register(
        "TAIL",
        0,
        (Field("tail", (0, 8), "rw"), Field("written", (8, 1), "rw")),
        write_strobe=True,
    )
    with pytest.raises(ValueError, match=r"CSR bank port 'b_tail_written' is duplicated"):
        RegisterMap((Block("B", 0, (tail,)),))


def test_cfg_error_must_be_generated():
    guarded = Block("B", 0x100, (_reg(fields=(Field("f", (0, 4), "rw", valid=range(16)),)),))
    stale = Register("CFG_ERROR", 0, (Field("other", (0, 1), "w1c"),))
    with pytest.raises(ValueError, match=r"Register CFG_ERROR must have one w1c field per"):
        RegisterMap((Block("ID", 0, (stale,)), guarded), cfg_error=("ID", "CFG_ERROR"))
    good = cfg_error_register("CFG_ERROR", 0, [guarded], "")
    RegisterMap((Block("ID", 0, (good,)), guarded), cfg_error=("ID", "CFG_ERROR"))


# -- the macdma map --------------------------------------------------------------------


def test_lookups():
    m = REGISTER_MAP
    assert m.address("ID") == 0x000
    assert m.address("TX_TAIL") == 0x110
    assert m.address("RX.TAIL") == 0x190
    assert m.address("IRQ_STATUS") == 0x200
    assert m.address("MAC_MAX_LEN") == 0x308
    assert m.address("STATS_RX_DROPPED_DISABLED") == 0x43C
    assert m.field_shift("IRQ_MODE", "rx_mode") == 8
    assert m.field_mask("IRQ_MODE", "rx_mode") == 0x300
    assert m.field_mask("TX_STATUS", "error_code") == 0xF0
    assert m.register("ID_VERSION").reset == 0x0000_0001
    assert m.register("TX_BURST_BEATS").reset == 16
    with pytest.raises(KeyError, match="No register 'TX_NOPE'"):
        m.address("TX_NOPE")


def test_the_burst_cap_register_spans_every_axi4_burst_length():
    """BURST_BEATS (the map, which stays importable without Amaranth) allows exactly the
    lengths an AXI4 INCR burst may have, and the movers' cap port is the register's width."""
    for key in ("TX_BURST_BEATS", "RX_BURST_BEATS"):
        field = REGISTER_MAP.field(key, "burst_beats")
        assert field.valid == (range(1, MAX_BURST_BEATS + 1),)
        assert field.width == BURST_BEATS_BITS == MAX_BURST_BEATS.bit_length()


def test_tx_and_rx_channels_share_one_layout():
    tx, rx = REGISTER_MAP.block("TX"), REGISTER_MAP.block("RX")
    assert (tx.base, rx.base) == (0x100, 0x180)

    def layout(block):  # everything but the docs, which name the direction
        return [
            (
                r.name,
                r.offset,
                r.write_strobe,
                [(f.name, f.bits, f.access, f.reset, f.valid) for f in r.fields],
            )
            for r in block.registers
        ]

    assert layout(tx) == layout(rx)


def test_cfg_error_has_one_bit_per_validated_field_in_map_order():
    cfg = REGISTER_MAP.register("ID_CFG_ERROR")
    names = [f.name for f in cfg.fields]
    assert names == [
        "tx_ring_base",
        "tx_ring_size",
        "tx_burst_beats",
        "tx_prefetch",
        "rx_ring_base",
        "rx_ring_size",
        "rx_burst_beats",
        "rx_prefetch",
        "irq_tx_coalesce_frames",
        "irq_rx_coalesce_frames",
        "irq_sys_clk_mhz",
        "irq_min_interval_us",
        "mac_ifg",
        "mac_max_len",
        "mdio_ctrl_clk_div",
    ]
    assert [f.lsb for f in cfg.fields] == list(range(len(names)))
    assert all(f.access == "w1c" and f.width == 1 for f in cfg.fields)


def test_valid_values_of_the_map():
    size = REGISTER_MAP.field("TX_RING_SIZE", "ring_size")
    assert [v for v in (0, 1, 2, 192, 4096, 4097) if size.accepts(v)] == [0, 2, 192, 4096]
    base = REGISTER_MAP.field("RX_RING_BASE", "ring_base")
    assert base.accepts(0x8000_0010) and not base.accepts(0x8000_0008)
    assert REGISTER_MAP.field("MAC_MAX_LEN", "mac_max_len").valid_text() == "64..16383"
    interval = REGISTER_MAP.field("IRQ_MIN_INTERVAL", "us")
    assert [v for v in (0, 1, 125, 10000, 10001) if interval.accepts(v)] == [0, 1, 125, 10000]


def test_driver_and_scenario_accept_the_intervals_the_hardware_accepts():
    # The driver (firmware, no register map at run time) states the bound itself.
    valid = REGISTER_MAP.field("IRQ_MIN_INTERVAL", "us").valid
    assert valid == (range(0, MAX_IRQ_MIN_INTERVAL_US + 1),)
    assert IRQ_MIN_INTERVAL_MAX_US == MAX_IRQ_MIN_INTERVAL_US


# -- generated outputs -------------------------------------------------------------------


def test_generated_files_are_up_to_date():
    result = subprocess.run(
        [sys.executable, "-m", "macdma.sim.flows.regmap_gen", "--check", "--root", str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_check_mode_detects_stale_and_missing_outputs(tmp_path):
    assert regmap_gen.main(["--check", "--root", str(tmp_path)]) == 1
    assert regmap_gen.main(["--root", str(tmp_path)]) == 0
    assert regmap_gen.main(["--check", "--root", str(tmp_path)]) == 0
    header = tmp_path / regmap_gen.C_OUTPUT
    header.write_text(header.read_text().replace("0x110u", "0x114u"))
    assert regmap_gen.stale_outputs(tmp_path) == [regmap_gen.C_OUTPUT]


def _all_constants(c_only=False):
    return {
        c.name: c.value
        for _title, _doc, items in regmap_gen.constants()
        for c in items
        if c.in_c or not c_only
    }


def test_c_header_compiles_and_agrees_with_the_map(tmp_path):
    cc = shutil.which("cc")
    assert cc is not None, "no C compiler `cc` on PATH (.ci/run installs g++, which brings it)"
    header = ROOT / regmap_gen.C_OUTPUT
    names = re.findall(r"^#define (MACDMA_\w+) ", header.read_text(), re.MULTILINE)
    assert "MACDMA_REGS_H" not in names  # the include guard has no value
    lines = ["#include <stdio.h>", '#include "macdma_regs.h"', '#include "macdma_regs.h"']
    lines.append("int main(void) {")
    lines += [f'    printf("%s %llu\\n", "{n}", (unsigned long long)({n}));' for n in names]
    lines += ["    return 0;", "}"]
    source = tmp_path / "use_all.c"
    source.write_text("\n".join(lines) + "\n")
    binary = tmp_path / "use_all"
    subprocess.run(
        [cc, "-std=c99", "-Wall", "-Wextra", "-Werror", "-I", str(header.parent), "-o"]
        + [str(binary), str(source)],
        check=True,
    )
    output = subprocess.run([str(binary)], check=True, capture_output=True, text=True).stdout
    printed = {name: int(value) for name, value in (line.split() for line in output.splitlines())}
    expected = {f"MACDMA_{name}": value for name, value in _all_constants(c_only=True).items()}
    assert printed == expected
    assert printed["MACDMA_TX_TAIL"] == 0x110
    assert printed["MACDMA_IRQ_STATUS_CFG_ERROR_MASK"] == 1 << 4
    assert printed["MACDMA_DMA_ERROR_CODE_RX_BUFFER_TOO_SMALL"] == 6


def test_python_constants_agree_with_the_map():
    from macdma.firmware import regs
    from macdma.hdl.regmodel import field_key, register_key

    for block, reg in REGISTER_MAP.iter_registers():
        key = register_key(block, reg)
        assert getattr(regs, key) == block.base + reg.offset
        assert regs.REGISTER_NAMES[block.base + reg.offset] == key
        for fld in reg.fields:
            fkey = field_key(block, reg, fld)
            assert getattr(regs, f"{fkey}_SHIFT") == fld.lsb
            assert getattr(regs, f"{fkey}_WIDTH") == fld.width
            assert getattr(regs, f"{fkey}_MASK") == fld.mask
            if not fld.hardware_supplied:
                assert getattr(regs, f"{fkey}_RESET_VALUE") == fld.reset
            if fld.valid is not None:
                assert getattr(regs, f"{fkey}_VALID") == fld.valid
                assert getattr(regs, f"{fkey}_MIN") == min(r[0] for r in fld.valid)
                assert getattr(regs, f"{fkey}_MAX") == max(r[-1] for r in fld.valid)
        if not all(f.hardware_supplied for f in reg.fields):
            assert getattr(regs, f"{key}_RESET_VALUE") == reg.reset
    assert regs.ID_RESET_VALUE == 0x4D444D41
    assert regs.MAC_MAX_LEN_RESET_VALUE == 1518
    assert regs.IRQ_TX_COALESCE_FRAMES_RESET_VALUE == 1
    assert regs.TX_RING_SIZE_VALID == (range(0, 1), range(2, 4097))
    assert (regs.TX_BURST_BEATS_MIN, regs.TX_BURST_BEATS_MAX) == (1, 256)
    assert regs.DmaErrorCode.ZERO_LENGTH_DESC == 5
    assert [m.name for m in regs.IrqMode] == ["PER_DESC", "EOP", "COALESCE", "NONE"]
    assert len(regs.REGISTER_NAMES) == sum(1 for _ in REGISTER_MAP.iter_registers())


def test_driver_constants_and_generator_import_without_amaranth():
    # A None entry in sys.modules makes any `import amaranth` raise ImportError.
    code = (
        "import sys; sys.modules['amaranth'] = None\n"
        "import macdma.firmware.regs as r, macdma.sim.flows.regmap_gen as g\n"
        "assert r.TX_TAIL == 0x110 and g.outputs()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_generated_python_is_ruff_clean():
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    assert ruff is not None, "ruff not installed (the dev extra brings it: make venv)"
    target = str(ROOT / regmap_gen.PYTHON_OUTPUT)
    # `ruff format` over the tree must not turn the generated file stale.
    subprocess.run([ruff, "format", "--check", "--quiet", target], check=True, cwd=ROOT)
    subprocess.run([ruff, "check", "--quiet", target], check=True, cwd=ROOT)


def test_docs_list_every_register_and_the_cfg_error_bits():
    text = (ROOT / regmap_gen.DOCS_OUTPUT).read_text()
    for block, reg in REGISTER_MAP.iter_registers():
        from macdma.hdl.regmodel import register_key

        assert f"| 0x{block.base + reg.offset:03X} | **{register_key(block, reg)}** |" in text
    assert "- bit 1: `tx_ring_size`" in text
    assert "| 6 | RX_BUFFER_TOO_SMALL |" in text
