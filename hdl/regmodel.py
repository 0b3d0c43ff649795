"""The register model: the classes a register map is written in.

Plain dataclasses, no Amaranth, so the generator (:mod:`macdma.sim.flows.regmap_gen`), the driver
model and the docs may use a map without building HDL. macdma's own map, the data, is
:mod:`macdma.hdl.regmap`; the CSR bank (:class:`macdma.hdl.bus.csr_bank.CsrBank`) turns any
:class:`RegisterMap` into hardware.

Structure
---------
A :class:`RegisterMap` holds :class:`Block` s (a name and a base byte address); a block
holds 32-bit :class:`Register` s at 4-byte aligned offsets from its base; a register holds
:class:`Field` s (``bits=(lsb, width)``). Field access kinds:

``"rw"``        read/write; the CSR bank drives the value to the hardware.
``"ro"``        read-only; the hardware supplies the value (or it is a constant of the map
                when ``constant=True``). Writing a register made only of ``ro`` fields is
                an error (SLVERR).
``"w1c"``       sticky status: the hardware sets bits, software clears them by writing 1.
``"wo-pulse"``  writing 1 pulses a one-cycle strobe to the hardware; reads as 0.

A ``rw`` field may carry ``valid``: the values the hardware accepts (a union of ranges,
given as ints and/or ``range`` objects; a ``range`` step must be a power of two dividing
its start, i.e. an alignment). The CSR bank rejects a write of any other value (the
field keeps its old value) and sets the field's bit in the sticky ``CFG_ERROR``
register, whose fields are generated from every validated field in map order.

Composed names
--------------
A register's *key* is ``<BLOCK>_<REGISTER>``, except that the block prefix is not
repeated when the register name already starts with it: block ``IRQ`` register
``IRQ_STATUS`` has the key ``IRQ_STATUS`` (not ``IRQ_IRQ_STATUS``), block ``ID`` register
``ID`` has the key ``ID``. A field's key is ``<register key>_<FIELD>``, except that a
field named like its register (the usual single-field register) has the register key.
The keys in lower case (:func:`port_name`) name the CFG_ERROR bits and are every field's
flat, unique name (:meth:`RegisterMap.port_names`: a map in which two coincide is
refused); the generated driver constants and C defines use the keys in upper case. The CSR
bank groups its ports by block and register instead (``bank.tx.ctrl.run``; the naming rule
is in :mod:`macdma.hdl.bus.csr_bank`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "ACCESS_KINDS",
    "EnumValue",
    "Enumeration",
    "Field",
    "Register",
    "Block",
    "RegisterMap",
    "cfg_error_register",
    "register_key",
    "field_key",
    "port_name",
    "validated_fields",
    "REGISTER_BITS",
    "REGISTER_BYTES",
]

Access = Literal["rw", "ro", "w1c", "wo-pulse"]
ACCESS_KINDS: tuple[str, ...] = ("rw", "ro", "w1c", "wo-pulse")

REGISTER_BITS = 32
REGISTER_BYTES = REGISTER_BITS // 8

_UPPER_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LOWER_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _check_name(kind: str, name: object, pattern: re.Pattern[str], case: str) -> None:
    if not isinstance(name, str) or not pattern.match(name):
        raise ValueError(f"{kind} name {name!r} must be a {case} identifier")


@dataclass(frozen=True)
class EnumValue:
    """One named value of an :class:`Enumeration`."""

    name: str
    value: int
    doc: str = ""

    def __post_init__(self) -> None:
        _check_name("Enum value", self.name, _UPPER_NAME, "UPPER_SNAKE_CASE")
        if not isinstance(self.value, int) or self.value < 0:
            raise ValueError(f"Enum value {self.name}: value {self.value!r} must be an int >= 0")


@dataclass(frozen=True)
class Enumeration:
    """Named values of a field, shared by every field that uses it.

    ``name`` is CamelCase; it becomes an ``IntEnum`` in ``firmware/regs.py`` and the
    ``MACDMA_<UPPER_SNAKE_NAME>_<VALUE>`` defines in the C header.
    """

    name: str
    values: tuple[EnumValue, ...]
    doc: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.match(r"^[A-Z][A-Za-z0-9]*$", self.name):
            raise ValueError(f"Enumeration name {self.name!r} must be CamelCase")
        object.__setattr__(self, "values", tuple(self.values))
        if not self.values:
            raise ValueError(f"Enumeration {self.name} has no values")
        _reject_duplicates(f"Enumeration {self.name}: value name", (v.name for v in self.values))
        _reject_duplicates(f"Enumeration {self.name}: value", (str(v.value) for v in self.values))

    @property
    def snake_name(self) -> str:
        """``DmaErrorCode`` -> ``DMA_ERROR_CODE``."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.name).upper()


def _reject_duplicates(what: str, names: Iterable[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{what} {name!r} is duplicated")
        seen.add(name)


def _normalise_valid(owner: str, valid: object) -> tuple[range, ...]:
    """Turn ``valid`` (an int, a range, or an iterable of those) into a tuple of ranges."""
    items = [valid] if isinstance(valid, (int, range)) else list(valid)  # type: ignore[call-overload]
    ranges: list[range] = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (int, range)):
            raise ValueError(f"{owner}: valid entry {item!r} must be an int or a range")
        rng = range(item, item + 1) if isinstance(item, int) else item
        if len(rng) == 0:
            raise ValueError(f"{owner}: valid entry {item!r} is empty")
        if rng.step < 1:
            raise ValueError(f"{owner}: valid range {item!r} must count upwards")
        if rng.step > 1 and (rng.step & (rng.step - 1) or rng.start % rng.step):
            raise ValueError(
                f"{owner}: valid range {item!r} must have a power-of-two step that divides "
                "its start (an alignment), so the hardware can check it with a bit mask"
            )
        if rng.start < 0:
            raise ValueError(f"{owner}: valid range {item!r} includes negative values")
        ranges.append(rng)
    if not ranges:
        raise ValueError(f"{owner}: valid is empty; use valid=None for no restriction")
    return tuple(ranges)


@dataclass(frozen=True)
class Field:
    """A bit field of a register.

    Members:
        name:     lower_snake_case, unique within the register.
        bits:     ``(lsb, width)``.
        access:   one of :data:`ACCESS_KINDS`.
        reset:    value after reset (for ``ro`` fields: the constant when ``constant``).
        doc:      what the field means, one or two sentences.
        valid:    ``rw`` only: the accepted values (see the module docstring) or None.
        enum:     optional :class:`Enumeration` naming the values.
        constant: ``ro`` only: the value is ``reset``, fixed by the map (no hardware port).
    """

    name: str
    bits: tuple[int, int]
    access: Access
    reset: int = 0
    doc: str = ""
    valid: tuple[range, ...] | None = None
    enum: Enumeration | None = None
    constant: bool = False

    def __post_init__(self) -> None:
        _check_name("Field", self.name, _LOWER_NAME, "lower_snake_case")
        if (
            not isinstance(self.bits, tuple)
            or len(self.bits) != 2
            or not all(isinstance(b, int) for b in self.bits)
        ):
            raise ValueError(f"Field {self.name}: bits {self.bits!r} must be (lsb, width)")
        lsb, width = self.bits
        if lsb < 0 or width < 1 or lsb + width > REGISTER_BITS:
            raise ValueError(
                f"Field {self.name}: bits (lsb={lsb}, width={width}) do not fit a "
                f"{REGISTER_BITS}-bit register"
            )
        if self.access not in ACCESS_KINDS:
            raise ValueError(
                f"Field {self.name}: access {self.access!r} is not one of {ACCESS_KINDS}"
            )
        if self.access == "wo-pulse" and width != 1:
            raise ValueError(f"Field {self.name}: a wo-pulse field must be 1 bit wide")
        if not isinstance(self.reset, int) or not 0 <= self.reset < (1 << width):
            raise ValueError(
                f"Field {self.name}: reset {self.reset!r} does not fit in {width} bit(s)"
            )
        if self.access == "wo-pulse" and self.reset != 0:
            raise ValueError(f"Field {self.name}: a wo-pulse field must reset to 0")
        if self.constant and self.access != "ro":
            raise ValueError(f"Field {self.name}: only ro fields can be constant")
        if self.valid is not None:
            if self.access != "rw":
                raise ValueError(f"Field {self.name}: only rw fields can have valid values")
            valid = _normalise_valid(f"Field {self.name}", self.valid)
            object.__setattr__(self, "valid", valid)
            top = max(r[-1] for r in valid)
            if top >= 1 << width:
                raise ValueError(
                    f"Field {self.name}: valid value {top} does not fit in {width} bit(s)"
                )
            if not self.accepts(self.reset):
                raise ValueError(
                    f"Field {self.name}: reset {self.reset} is not one of the valid values "
                    f"({self.valid_text()})"
                )
        if self.enum is not None:
            for value in self.enum.values:
                if value.value >= 1 << width:
                    raise ValueError(
                        f"Field {self.name}: enum value {value.name}={value.value} does not "
                        f"fit in {width} bit(s)"
                    )

    @property
    def lsb(self) -> int:
        return self.bits[0]

    @property
    def width(self) -> int:
        return self.bits[1]

    @property
    def msb(self) -> int:
        return self.bits[0] + self.bits[1] - 1

    @property
    def mask(self) -> int:
        """The field's bits in place within the register word."""
        return ((1 << self.width) - 1) << self.lsb

    @property
    def shift(self) -> int:
        return self.lsb

    @property
    def hardware_supplied(self) -> bool:
        """True for ``ro`` fields whose value comes from a hardware port."""
        return self.access == "ro" and not self.constant

    def accepts(self, value: int) -> bool:
        """Whether the CSR bank accepts ``value`` for this field."""
        if not 0 <= value < 1 << self.width:
            return False
        return self.valid is None or any(value in r for r in self.valid)

    def valid_text(self) -> str:
        """Human-readable valid values, e.g. ``0, 2..4096`` or ``0..0xFFFFFFF0, multiple of 16``."""
        if self.valid is None:
            return ""
        parts = []
        for rng in self.valid:
            first, last = rng[0], rng[-1]

            def fmt(v: int) -> str:
                return f"0x{v:X}" if v > 0xFFFF else str(v)

            if first == last:
                parts.append(fmt(first))
            elif rng.step == 1:
                parts.append(f"{fmt(first)}..{fmt(last)}")
            else:
                parts.append(f"{fmt(first)}..{fmt(last)}, multiple of {rng.step}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Register:
    """A 32-bit register at ``offset`` bytes from its block's base.

    ``write_strobe`` asks the CSR bank for an ``<register key>_written`` output that pulses
    for one cycle after every accepted write (e.g. a doorbell).
    """

    name: str
    offset: int
    fields: tuple[Field, ...]
    doc: str = ""
    write_strobe: bool = False

    def __post_init__(self) -> None:
        _check_name("Register", self.name, _UPPER_NAME, "UPPER_SNAKE_CASE")
        object.__setattr__(self, "fields", tuple(self.fields))
        if not isinstance(self.offset, int) or self.offset < 0:
            raise ValueError(f"Register {self.name}: offset {self.offset!r} must be an int >= 0")
        if self.offset % REGISTER_BYTES:
            raise ValueError(
                f"Register {self.name}: offset 0x{self.offset:X} is not {REGISTER_BYTES}-byte "
                "aligned"
            )
        if not self.fields:
            raise ValueError(f"Register {self.name} has no fields")
        _reject_duplicates(f"Register {self.name}: field", (f.name for f in self.fields))
        ordered = sorted(self.fields, key=lambda f: f.lsb)
        for lower, upper in zip(ordered, ordered[1:], strict=False):
            if upper.lsb <= lower.msb:
                raise ValueError(
                    f"Register {self.name}: field {upper.name} (bits {upper.msb}:{upper.lsb}) "
                    f"overlaps field {lower.name} (bits {lower.msb}:{lower.lsb})"
                )
        if self.write_strobe and self.read_only:
            raise ValueError(f"Register {self.name}: a read-only register cannot be written")

    @property
    def reset(self) -> int:
        """The register word after reset (hardware-supplied fields count as 0)."""
        return sum(f.reset << f.lsb for f in self.fields if not f.hardware_supplied)

    @property
    def read_only(self) -> bool:
        """True if every field is ``ro``: a write is an error (SLVERR)."""
        return all(f.access == "ro" for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"Register {self.name} has no field {name!r}")


@dataclass(frozen=True)
class Block:
    """A group of registers at ``base`` (a byte address in the CSR window)."""

    name: str
    base: int
    registers: tuple[Register, ...]
    doc: str = ""

    def __post_init__(self) -> None:
        _check_name("Block", self.name, _UPPER_NAME, "UPPER_SNAKE_CASE")
        object.__setattr__(self, "registers", tuple(self.registers))
        if not isinstance(self.base, int) or self.base < 0 or self.base % REGISTER_BYTES:
            raise ValueError(f"Block {self.name}: base {self.base!r} must be a 4-aligned int >= 0")
        if not self.registers:
            raise ValueError(f"Block {self.name} has no registers")
        _reject_duplicates(f"Block {self.name}: register", (r.name for r in self.registers))
        offsets: dict[int, str] = {}
        for reg in self.registers:
            if reg.offset in offsets:
                raise ValueError(
                    f"Block {self.name}: registers {offsets[reg.offset]} and {reg.name} "
                    f"share offset 0x{reg.offset:X}"
                )
            offsets[reg.offset] = reg.name

    def register(self, name: str) -> Register:
        for reg in self.registers:
            if reg.name == name:
                return reg
        raise KeyError(f"Block {self.name} has no register {name!r}")

    def address(self, register: str) -> int:
        return self.base + self.register(register).offset


def register_key(block: Block, register: Register) -> str:
    """``<BLOCK>_<REGISTER>`` without repeating a block prefix the register already has."""
    if register.name == block.name or register.name.startswith(block.name + "_"):
        return register.name
    return f"{block.name}_{register.name}"


def field_key(block: Block, register: Register, fld: Field) -> str:
    """Upper-case key of a field; a field named like its register has the register key."""
    key = register_key(block, register)
    if fld.name.upper() == register.name:
        return key
    return f"{key}_{fld.name.upper()}"


def port_name(block: Block, register: Register, fld: Field | None = None) -> str:
    """Flat name of a register or field: the lower-case register key, or field key when
    ``fld`` is given (``tx_ctrl_run``); CFG_ERROR bits are named by it. The CSR bank's
    ports are grouped by block and register instead (:mod:`macdma.hdl.bus.csr_bank`)."""
    if fld is None:
        return register_key(block, register).lower()
    return field_key(block, register, fld).lower()


@dataclass(frozen=True)
class RegisterMap:
    """The complete map: blocks in a ``window_bytes`` CSR window.

    ``cfg_error`` names the ``(block, register)`` whose w1c fields record rejected writes
    (one per validated field, see :func:`cfg_error_register`); ``cfg_error_irq`` names the
    ``(block, register, field)`` of the w1c interrupt cause the CSR bank sets whenever it
    rejects a write. Both are optional for small maps.
    """

    blocks: tuple[Block, ...]
    window_bytes: int = 4096
    cfg_error: tuple[str, str] | None = None
    cfg_error_irq: tuple[str, str, str] | None = None
    _by_key: dict[str, tuple[Block, Register]] = field(
        init=False, repr=False, compare=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "blocks", tuple(self.blocks))
        if self.window_bytes <= 0 or self.window_bytes & (self.window_bytes - 1):
            raise ValueError(f"window_bytes {self.window_bytes} must be a power of two")
        _reject_duplicates("Block", (b.name for b in self.blocks))
        addresses: dict[int, str] = {}
        for block, reg in self.iter_registers():
            key = register_key(block, reg)
            address = block.base + reg.offset
            if address + REGISTER_BYTES > self.window_bytes:
                raise ValueError(
                    f"Register {key} at 0x{address:X} lies outside the "
                    f"{self.window_bytes}-byte window"
                )
            if address in addresses:
                raise ValueError(
                    f"Registers {addresses[address]} and {key} share address 0x{address:X}"
                )
            addresses[address] = key
            if key in self._by_key:
                raise ValueError(f"Register key {key} is used twice")
            self._by_key[key] = (block, reg)
        _reject_duplicates("CSR bank port", self.port_names())
        if self.cfg_error is not None:
            block_name, reg_name = self.cfg_error
            cfg = self.block(block_name).register(reg_name)
            expected = cfg_error_register(reg_name, cfg.offset, self.blocks, cfg.doc)
            if cfg.fields != expected.fields:
                raise ValueError(
                    f"Register {reg_name} must have one w1c field per validated field, in map "
                    "order: build it with cfg_error_register()"
                )
        if self.cfg_error_irq is not None:
            block_name, reg_name, field_name = self.cfg_error_irq
            if self.block(block_name).register(reg_name).field(field_name).access != "w1c":
                raise ValueError(f"cfg_error_irq {self.cfg_error_irq} must name a w1c field")

    # -- lookups ---------------------------------------------------------------------
    def iter_registers(self) -> Iterator[tuple[Block, Register]]:
        for block in self.blocks:
            for reg in block.registers:
                yield block, reg

    def block(self, name: str) -> Block:
        for block in self.blocks:
            if block.name == name:
                return block
        raise KeyError(f"No block {name!r}")

    def lookup(self, key: str) -> tuple[Block, Register]:
        """Find a register by key (``"TX_RING_SIZE"``) or by ``"BLOCK.REGISTER"``."""
        if "." in key:
            block_name, reg_name = key.split(".", 1)
            block = self.block(block_name)
            return block, block.register(reg_name)
        try:
            return self._by_key[key]
        except KeyError:
            raise KeyError(f"No register {key!r}") from None

    def register(self, key: str) -> Register:
        return self.lookup(key)[1]

    def address(self, key: str) -> int:
        """Byte address of a register in the CSR window."""
        block, reg = self.lookup(key)
        return block.base + reg.offset

    def field(self, key: str, name: str) -> Field:
        return self.register(key).field(name)

    def field_mask(self, key: str, name: str) -> int:
        return self.field(key, name).mask

    def field_shift(self, key: str, name: str) -> int:
        return self.field(key, name).shift

    def is_cfg_error(self, block: Block, register: Register) -> bool:
        """True for the CFG_ERROR register, whose bits the CSR bank itself sets."""
        return self.cfg_error == (block.name, register.name)

    def validated_fields(self) -> list[tuple[Block, Register, Field]]:
        return validated_fields(self.blocks)

    def port_names(self) -> list[str]:
        """The flat name (:func:`port_name`) of every port the CSR bank has for this map:
        fields, w1c ``_set`` ports and ``_written`` strobes; they must be unique."""
        names: list[str] = []
        for block, reg in self.iter_registers():
            for fld in reg.fields:
                if fld.access == "ro" and fld.constant:
                    continue
                names.append(port_name(block, reg, fld))
                if fld.access == "w1c" and not self.is_cfg_error(block, reg):
                    names.append(port_name(block, reg, fld) + "_set")
            if reg.write_strobe:
                names.append(port_name(block, reg) + "_written")
        return names


def validated_fields(blocks: Iterable[Block]) -> list[tuple[Block, Register, Field]]:
    """Every field with ``valid`` set, in map order (block, register, field order)."""
    return [
        (block, reg, fld)
        for block in blocks
        for reg in block.registers
        for fld in reg.fields
        if fld.valid is not None
    ]


def cfg_error_register(name: str, offset: int, blocks: Iterable[Block], doc: str) -> Register:
    """The sticky CFG_ERROR register: bit ``i`` is the ``i``-th validated field in map order.

    Each field is named after the lower-case key of the field it guards
    (``tx_ring_size`` guards TX.RING_SIZE.ring_size).
    """
    guarded = validated_fields(blocks)
    if len(guarded) > REGISTER_BITS:
        raise ValueError(f"{len(guarded)} validated fields do not fit one CFG_ERROR register")
    fields = tuple(
        Field(
            port_name(block, reg, fld),
            (bit, 1),
            "w1c",
            doc=f"A write to {field_key(block, reg, fld)} was rejected "
            f"(valid: {fld.valid_text()}).",
        )
        for bit, (block, reg, fld) in enumerate(guarded)
    )
    return Register(name, offset, fields, doc)
