"""Generate the driver constants, the C header and the register documentation from the map.

Outputs (paths relative to the repository root):

* ``firmware/regs.py``                Python constants for the driver model (no Amaranth).
* ``firmware/include/macdma_regs.h``  the same as C ``#define`` s.
* ``docs/registers.md``               one table per block.

Usage::

    python -m macdma.sim.flows.regmap_gen            # (re)write the outputs
    python -m macdma.sim.flows.regmap_gen --check    # exit 1 if any output is stale

Constant names (Python without, C with the ``MACDMA_`` prefix), using the register and
field keys of :mod:`macdma.hdl.regmodel`:

* ``<BLOCK>_BASE``: block base address; ``<REG>``: register byte address;
  ``<REG>_RESET_VALUE``: the register word after reset (omitted when every field is
  supplied by the hardware);
* ``<FIELD>_SHIFT``, ``<FIELD>_WIDTH``, ``<FIELD>_MASK`` (in place) and
  ``<FIELD>_RESET_VALUE`` (not shifted; omitted for hardware-supplied fields);
* for a field the hardware validates: ``<FIELD>_MIN`` and ``<FIELD>_MAX``, its smallest
  and largest valid values, and in Python ``<FIELD>_VALID``, the valid values as a tuple
  of ranges (the map's own), so software checks a value as the hardware will;
* enumerations: a Python ``IntEnum`` per :class:`~macdma.hdl.regmodel.Enumeration`, and
  ``MACDMA_<ENUM>_<VALUE>`` in C (``MACDMA_DMA_ERROR_CODE_ZERO_LENGTH_DESC``).

This module is pure Python: it imports the map, never Amaranth.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from macdma.hdl.regmap import REGISTER_MAP
from macdma.hdl.regmodel import (
    Block,
    Enumeration,
    Field,
    Register,
    RegisterMap,
    field_key,
    register_key,
)

__all__ = [
    "Constant",
    "constants",
    "enumerations",
    "render_python",
    "render_c_header",
    "render_markdown",
    "outputs",
    "main",
]

GENERATOR = "python -m macdma.sim.flows.regmap_gen"
SOURCE = "hdl/regmap.py"
PYTHON_OUTPUT = Path("firmware/regs.py")
C_OUTPUT = Path("firmware/include/macdma_regs.h")
DOCS_OUTPUT = Path("docs/registers.md")
C_PREFIX = "MACDMA_"


@dataclass(frozen=True)
class Constant:
    """One generated constant; ``hex_digits`` is 0 for decimal rendering. A value that is
    a tuple of ranges (``<FIELD>_VALID``) is Python only."""

    name: str
    value: int | tuple[range, ...]
    hex_digits: int = 0

    def python(self) -> str:
        if isinstance(self.value, tuple):
            items = ", ".join(self._python_range(r) for r in self.value)
            return f"({items},)" if len(self.value) == 1 else f"({items})"
        return self._python_int(self.value)

    def _python_int(self, value: int) -> str:
        return f"0x{value:0{self.hex_digits}X}" if self.hex_digits else str(value)

    def _python_range(self, values: range) -> str:
        step = f", {values.step}" if values.step != 1 else ""
        return f"range({self._python_int(values.start)}, {self._python_int(values.stop)}{step})"

    @property
    def in_c(self) -> bool:
        return not isinstance(self.value, tuple)

    def c(self) -> str:
        if self.hex_digits:
            return f"0x{self.value:0{self.hex_digits}X}u"
        return f"{self.value}u"


def _hardware_supplied(reg: Register) -> bool:
    return all(f.hardware_supplied for f in reg.fields)


def _register_constants(block: Block, reg: Register) -> list[Constant]:
    key = register_key(block, reg)
    out = [Constant(key, block.base + reg.offset, 3)]
    if not _hardware_supplied(reg):
        out.append(Constant(f"{key}_RESET_VALUE", reg.reset, 8))
    for fld in reg.fields:
        fkey = field_key(block, reg, fld)
        out += [
            Constant(f"{fkey}_SHIFT", fld.shift),
            Constant(f"{fkey}_WIDTH", fld.width),
            Constant(f"{fkey}_MASK", fld.mask, 8),
        ]
        if not fld.hardware_supplied:
            out.append(Constant(f"{fkey}_RESET_VALUE", fld.reset, 8 if fld.width == 32 else 0))
        if fld.valid is not None:
            digits = 8 if fld.width == 32 else 0
            out += [
                Constant(f"{fkey}_MIN", min(r[0] for r in fld.valid), digits),
                Constant(f"{fkey}_MAX", max(r[-1] for r in fld.valid), digits),
                Constant(f"{fkey}_VALID", fld.valid, digits),
            ]
    return out


def constants(regmap: RegisterMap = REGISTER_MAP) -> list[tuple[str, str, list[Constant]]]:
    """The flat constants, grouped as ``(title, doc, constants)``; names are unique.

    A single-field register's field constants share names with the register's (same
    key); identical duplicates are emitted once, a conflicting one raises ValueError.
    """
    seen: dict[str, int] = {}
    groups: list[tuple[str, str, list[Constant]]] = []

    def take(items: list[Constant]) -> list[Constant]:
        kept = []
        for const in items:
            if const.name in seen:
                if seen[const.name] != const.value:
                    raise ValueError(f"Generated constant {const.name} is defined twice")
                continue
            seen[const.name] = const.value
            kept.append(const)
        return kept

    window = Constant("WINDOW_BYTES", regmap.window_bytes, 3)
    groups.append(("CSR window", "Size of the register window in bytes.", take([window])))
    for block in regmap.blocks:
        base = Constant(f"{block.name}_BASE", block.base, 3)
        groups.append((f"{block.name} block", block.doc, take([base])))
        for reg in block.registers:
            title = f"{register_key(block, reg)} (0x{block.base + reg.offset:03X})"
            doc = reg.doc
            for fld in reg.fields:
                if fld.enum is not None:
                    doc += f" {fld.name} values: {fld.enum.name}."
            groups.append((title, doc, take(_register_constants(block, reg))))
    for enum in enumerations(regmap):
        items = [Constant(f"{enum.snake_name}_{v.name}", v.value) for v in enum.values]
        groups.append((f"enum {enum.name}", enum.doc, take(items)))
    return groups


def enumerations(regmap: RegisterMap = REGISTER_MAP) -> list[Enumeration]:
    """Every distinct enumeration used by the map, in order of first use."""
    found: dict[str, Enumeration] = {}
    for _block, reg in regmap.iter_registers():
        for fld in reg.fields:
            if fld.enum is None:
                continue
            if fld.enum.name in found and found[fld.enum.name] != fld.enum:
                raise ValueError(f"Two different enumerations are named {fld.enum.name}")
            found.setdefault(fld.enum.name, fld.enum)
    return list(found.values())


def _comment_lines(text: str, prefix: str, width: int = 96) -> list[str]:
    return [prefix + line for line in textwrap.wrap(text, width - len(prefix))]


# -- firmware/regs.py --------------------------------------------------------------------


def render_python(regmap: RegisterMap = REGISTER_MAP) -> str:
    lines = [
        '"""macdma register map: addresses, field shifts/masks and reset values.',
        "",
        f"GENERATED by `{GENERATOR}` from {SOURCE}; do not edit.",
        "Pure Python (no Amaranth): the driver model imports it.",
        '"""',
        "",
        "from enum import IntEnum",
    ]
    for title, doc, items in constants(regmap):
        if title.startswith("enum "):
            continue  # rendered as IntEnum classes below
        lines += ["", f"# {title}"]
        lines += _comment_lines(doc, "# ")
        lines += [f"{const.name} = {const.python()}" for const in items]
    lines += ["", "", "# Register byte address -> register key, e.g. for MMIO traces."]
    lines.append("REGISTER_NAMES: dict[int, str] = {")
    for block, reg in regmap.iter_registers():
        lines.append(f'    0x{block.base + reg.offset:03X}: "{register_key(block, reg)}",')
    lines.append("}")
    for enum in enumerations(regmap):
        lines += ["", "", f"class {enum.name}(IntEnum):"]
        lines.append(f'    """{enum.doc}"""' if enum.doc else f'    """{enum.name}."""')
        lines.append("")
        for value in enum.values:
            lines += _comment_lines(value.doc, "    # ")
            lines.append(f"    {value.name} = {value.value}")
    return "\n".join(lines) + "\n"


# -- firmware/include/macdma_regs.h ------------------------------------------------------


def render_c_header(regmap: RegisterMap = REGISTER_MAP) -> str:
    guard = "MACDMA_REGS_H"
    lines = [
        "/* macdma register map: addresses, field shifts/masks and reset values.",
        f" * GENERATED by `{GENERATOR}` from {SOURCE}; do not edit. */",
        f"#ifndef {guard}",
        f"#define {guard}",
    ]
    for title, doc, items in constants(regmap):
        lines += ["", f"/* {title}"]
        lines += _comment_lines(doc, " * ")
        lines[-1] += " */"
        lines += [f"#define {C_PREFIX}{const.name} {const.c()}" for const in items if const.in_c]
    lines += ["", f"#endif /* {guard} */"]
    return "\n".join(lines) + "\n"


# -- docs/registers.md ---------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _bits(fld: Field) -> str:
    return str(fld.lsb) if fld.width == 1 else f"{fld.msb}:{fld.lsb}"


def _reset_text(fld: Field) -> str:
    if fld.hardware_supplied:
        return "hw"
    if fld.width >= 32 or fld.reset > 0xFFFF:
        return f"0x{fld.reset:08X}"
    return str(fld.reset)


def _valid_cell(fld: Field) -> str:
    if fld.enum is not None:
        return f"[{fld.enum.name}](#{fld.enum.name.lower()})"
    return fld.valid_text()


def render_markdown(regmap: RegisterMap = REGISTER_MAP) -> str:
    lines = [
        "# macdma registers",
        "",
        f"<!-- GENERATED by `{GENERATOR}` from `{SOURCE}`; do not edit. -->",
        "",
        f"32-bit registers in a {regmap.window_bytes}-byte window behind an AXI4-Lite slave "
        "(`macdma.hdl.bus.csr_bank.CsrBank`). Offsets are byte addresses in the window.",
        "",
        "Access: **rw** read/write; **ro** read-only (writing a register of only ro fields "
        "answers SLVERR); **w1c** sticky, set by the hardware, write 1 to clear (a hardware "
        "set in the same cycle wins); **wo-pulse** write 1 for a one-cycle strobe, reads 0. "
        "Reset **hw** means the hardware supplies the value.",
        "",
        "Undefined offsets answer SLVERR (read data 0). WSTRB selects the bytes written. A "
        "write of a value outside a field's *Valid values* is rejected: the field keeps its "
        "old value, the response is still OKAY, and the field's bit in CFG_ERROR and "
        "IRQ_STATUS.cfg_error are set.",
    ]
    header = [
        "",
        "| Offset | Register | Field | Bits | Access | Reset | Valid values | Meaning |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for block in regmap.blocks:
        lines += ["", f"## {block.name} (base 0x{block.base:03X})"]
        if block.doc:
            lines += ["", block.doc]
        lines += header
        for reg in block.registers:
            fields = sorted(reg.fields, key=lambda f: f.lsb)
            for index, fld in enumerate(fields):
                meaning = fld.doc
                if index == 0 and reg.doc and reg.doc != fld.doc:
                    meaning = f"*{reg.doc}* {fld.doc}"
                if index == 0 and reg.write_strobe:
                    meaning += " Writing it pulses `_written` to the hardware."
                first = index == 0
                cells = [
                    f"0x{block.base + reg.offset:03X}" if first else "",
                    f"**{register_key(block, reg)}**" if first else "",
                    fld.name,
                    _bits(fld),
                    fld.access,
                    _reset_text(fld),
                    _valid_cell(fld),
                    meaning,
                ]
                lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if regmap.cfg_error is not None:
        block_name, reg_name = regmap.cfg_error
        cfg = regmap.block(block_name).register(reg_name)
        lines += [
            "",
            f"## {reg_name} bit order",
            "",
            "One bit per field with valid values, in map order (block, register, field):",
            "",
        ]
        lines += [f"- bit {fld.lsb}: `{fld.name}`" for fld in cfg.fields]
    lines += ["", "## Enumerations"]
    for enum in enumerations(regmap):
        lines += ["", f"### {enum.name}", "", enum.doc, "", "| Value | Name | Meaning |"]
        lines.append("|---|---|---|")
        lines += [f"| {v.value} | {v.name} | {_cell(v.doc)} |" for v in enum.values]
    return "\n".join(lines) + "\n"


# -- command line -----------------------------------------------------------------------


def outputs(regmap: RegisterMap = REGISTER_MAP) -> dict[Path, str]:
    """Relative output path -> generated text."""
    return {
        PYTHON_OUTPUT: render_python(regmap),
        C_OUTPUT: render_c_header(regmap),
        DOCS_OUTPUT: render_markdown(regmap),
    }


def stale_outputs(root: Path, regmap: RegisterMap = REGISTER_MAP) -> list[Path]:
    """Outputs under ``root`` that are missing or differ from what the map generates."""
    stale = []
    for path, text in outputs(regmap).items():
        target = root / path
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            stale.append(path)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=GENERATOR, description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="only report stale outputs (exit status 1)"
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path(__file__).resolve().parents[2],
        help="repository root (default: the checkout this module lives in)",
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_outputs(args.root)
        for path in stale:
            print(f"stale: {path} (run `{GENERATOR}`)", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs().items():
        target = args.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
