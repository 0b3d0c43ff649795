"""The macdma register map: the one source of truth for every control/status register.

This module is data plus a few small dataclasses; it imports nothing from Amaranth, so
the generator (:mod:`macdma.hdl.regmap_gen`) and anything else may use it without HDL.
From it are built:

* the CSR bank (:class:`macdma.hdl.bus.axi_lite.CsrBank`),
* the driver constants ``firmware/regs.py`` and the C header
  ``firmware/include/macdma_regs.h``,
* the documentation ``docs/registers.md``.

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
CSR bank ports use the keys in lower case (:func:`port_name`); the generated driver
constants and C defines use them in upper case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from .mac.counters import CHECKSUM_COUNTERS, FLOW_CONTROL_COUNTERS, RX_COUNTERS, TX_COUNTERS

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
    "DMA_ERROR_CODE",
    "IRQ_MODE",
    "REGISTER_MAP",
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
    """CSR bank port name: the lower-case register key, or field key when ``fld`` is given."""
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
        """Every CSR bank port name this map produces (besides the bus)."""
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


# =====================================================================================
# The macdma map
# =====================================================================================

DMA_ERROR_CODE = Enumeration(
    "DmaErrorCode",
    (
        EnumValue("NONE", 0, "No error."),
        EnumValue("DESC_FETCH_BUS_ERROR", 1, "AXI error response while fetching a descriptor."),
        EnumValue("DATA_READ_BUS_ERROR", 2, "AXI error response while reading frame data."),
        EnumValue("DATA_WRITE_BUS_ERROR", 3, "AXI error response while writing frame data."),
        EnumValue("WRITEBACK_BUS_ERROR", 4, "AXI error response while writing a descriptor back."),
        EnumValue("ZERO_LENGTH_DESC", 5, "A descriptor owned by the DMA has buffer length 0."),
        EnumValue("RX_BUFFER_TOO_SMALL", 6, "An RX descriptor's buffer is shorter than 64 bytes."),
    ),
    "Why a DMA channel halted (STATUS.error_code).",
)

IRQ_MODE = Enumeration(
    "IrqMode",
    (
        EnumValue("PER_DESC", 0, "Set *_done for each descriptor written back with its IOC flag."),
        EnumValue(
            "EOP", 1, "Set *_done when the last descriptor of a frame (EOP) is written back."
        ),
        EnumValue("COALESCE", 2, "Set *_done after COALESCE.frames frames or COALESCE.timer_us."),
        EnumValue("NONE", 3, "The DMA never sets *_done: the driver polls the descriptors."),
    ),
    "When a DMA channel raises its *_done interrupt cause (IRQ_MODE).",
)

_COUNTER_DOC = "32-bit counter, wraps; cleared by reset only."


def _whole(
    name: str,
    offset: int,
    access: Access,
    doc: str,
    width: int = 32,
    write_strobe: bool = False,
    **field_args,
) -> Register:
    """A register holding a single field named like the register."""
    fld = Field(name.lower(), (0, width), access, doc=doc, **field_args)
    return Register(name, offset, (fld,), doc, write_strobe=write_strobe)


def _dma_channel_block(name: str, base: int, direction: str) -> Block:
    """TX and RX DMA channels share one layout; ``direction`` is "TX" or "RX"."""
    tx = direction == "TX"
    drops_doc = (
        "TX underruns: frames aborted because frame data did not arrive in time."
        if tx
        else "RX frames dropped because no descriptor was owned by the DMA."
    )
    overflow_doc = "Always 0 on TX." if tx else "RX frames dropped because the RX FIFO overflowed."
    registers = (
        Register(
            "CTRL",
            0x00,
            (
                Field("run", (0, 1), "rw", doc="1: the channel processes descriptors."),
                Field(
                    "reset",
                    (1, 1),
                    "wo-pulse",
                    doc="Write 1: channel reset; clears the error code and halt, returns HEAD "
                    "to 0. The ring registers keep their values. TX also empties the TX FIFO "
                    "(a frame being sent ends with tx_er) and resumes 200 system clocks "
                    "later; STATUS.running reads 0 meanwhile.",
                ),
            ),
            "Channel control.",
        ),
        Register(
            "STATUS",
            0x04,
            (
                Field("running", (0, 1), "ro", doc="The channel is enabled and not halted."),
                Field("halted", (1, 1), "ro", doc="The channel stopped on an error."),
                Field(
                    "bad_tail",
                    (2, 1),
                    "ro",
                    doc="A TAIL write was not less than RING_SIZE and was ignored; sticky "
                    "until CTRL.reset.",
                ),
                Field(
                    "error_code",
                    (4, 4),
                    "ro",
                    doc="Why the channel halted; cleared by CTRL.reset.",
                    enum=DMA_ERROR_CODE,
                ),
            ),
            "Channel status.",
        ),
        _whole(
            "RING_BASE",
            0x08,
            "rw",
            "Byte address of descriptor 0 of the ring in host memory; 16-byte aligned.",
            valid=range(0, 1 << 32, 16),
        ),
        _whole(
            "RING_SIZE",
            0x0C,
            "rw",
            "Number of descriptors in the ring (any count, not only powers of two); "
            "0 = not configured.",
            width=13,
            valid=(0, range(2, 4097)),
        ),
        _whole(
            "TAIL",
            0x10,
            "rw",
            "Index one past the last descriptor handed to the DMA; writing it rings the "
            "doorbell. Every 12-bit value is accepted here: the DMA engine ignores a value "
            "not less than RING_SIZE and sets STATUS.bad_tail.",
            width=12,
            write_strobe=True,
        ),
        _whole("HEAD", 0x14, "ro", "Index of the next descriptor the DMA will process.", 12),
        _whole(
            "POLL_US",
            0x18,
            "rw",
            "Interval in µs at which the DMA re-reads the descriptor at HEAD without a "
            "doorbell; 0 = off.",
            width=16,
        ),
        _whole(
            "BURST_BEATS",
            0x1C,
            "rw",
            "Maximum AXI burst length in data beats.",
            width=9,
            reset=16,
            valid=range(1, 257),
        ),
        _whole(
            "PREFETCH",
            0x20,
            "rw",
            "Descriptors fetched per descriptor read; the hardware may clamp it to "
            "FEATURES.max_prefetch.",
            width=5,
            reset=1,
            valid=range(1, 17),
        ),
        _whole("DESC_FETCHED", 0x28, "ro", f"Descriptors fetched. {_COUNTER_DOC}"),
        _whole(
            "BURSTS",
            0x2C,
            "ro",
            "AXI bursts of frame data issued (TX: fragment reads; RX: buffer writes); "
            f"descriptor fetches and write-backs are not counted. {_COUNTER_DOC}",
        ),
        _whole("BYTES", 0x30, "ro", f"Frame data bytes moved. {_COUNTER_DOC}"),
        _whole("FRAMES", 0x34, "ro", f"Frames completed. {_COUNTER_DOC}"),
        _whole("DROPS", 0x38, "ro", f"{drops_doc} {_COUNTER_DOC}"),
        _whole("FIFO_OVERFLOWS", 0x3C, "ro", f"{overflow_doc} {_COUNTER_DOC}"),
    )
    return Block(name, base, registers, f"{direction} DMA channel.")


def _coalesce(name: str, offset: int, direction: str) -> Register:
    return Register(
        name,
        offset,
        (
            Field(
                "frames",
                (0, 8),
                "rw",
                reset=1,
                valid=range(1, 256),
                doc=f"Coalesce mode: raise {direction.lower()}_done after this many frames.",
            ),
            Field(
                "timer_us",
                (16, 16),
                "rw",
                doc=f"Coalesce mode: raise {direction.lower()}_done this many µs after the "
                "first uncounted frame; 0 = no timer.",
            ),
        ),
        f"{direction} interrupt coalescing (used when IRQ_MODE selects COALESCE).",
    )


def _irq_cause_fields(access: Access, doc: str) -> tuple[Field, ...]:
    causes = (
        ("tx_done", "TX descriptors completed (per IRQ_MODE.tx_mode)."),
        ("rx_done", "RX descriptors completed (per IRQ_MODE.rx_mode)."),
        ("tx_error", "The TX channel halted on an error."),
        ("rx_error", "The RX channel halted on an error."),
        ("cfg_error", "A register write was rejected (see CFG_ERROR)."),
    )
    return tuple(
        Field(cause, (bit, 1), access, doc=f"{doc}{cause_doc}")
        for bit, (cause, cause_doc) in enumerate(causes)
    )


def _flow_control_registers() -> tuple[Register, ...]:
    """802.3x PAUSE: the MAC_ADDR_* and MAC_FC_* registers of the MAC block."""
    return (
        _whole(
            "MAC_ADDR_LO",
            0x0C,
            "rw",
            "Station address, its last four bytes: 02:AA:BB:CC:DD:EE is 0xBBCCDDEE. The "
            "source of the PAUSE frames sent; the destination checked with "
            "MAC_FC_CTRL.check_ucast.",
        ),
        _whole(
            "MAC_ADDR_HI",
            0x10,
            "rw",
            "Station address, its first two bytes: 02:AA:BB:CC:DD:EE is 0x02AA.",
            width=16,
        ),
        Register(
            "MAC_FC_CTRL",
            0x14,
            (
                Field(
                    "rx_pause",
                    (0, 1),
                    "rw",
                    doc="1: received PAUSE frames (to 01-80-C2-00-00-01, EtherType 0x8808, "
                    "opcode 0x0001) stop the transmitter for their quanta, at a frame "
                    "boundary, and leave the RX stream.",
                ),
                Field(
                    "tx_pause",
                    (1, 1),
                    "rw",
                    doc="1: the MAC sends an XOFF when the RX FIFO reaches "
                    "MAC_FC_WATER.high (and while xoff is 1), refreshed every "
                    "MAC_FC_QUANTA.refresh quanta, and an XON once it drains below "
                    "MAC_FC_WATER.low; and a frame that finds no RX buffer posted waits "
                    "in the RX FIFO for one instead of being dropped (RX_DROPS).",
                ),
                Field(
                    "forward",
                    (2, 1),
                    "rw",
                    doc="1: recognised MAC control frames still go to the RX DMA.",
                ),
                Field(
                    "check_ucast",
                    (3, 1),
                    "rw",
                    doc="1: PAUSE frames sent to the station address (MAC_ADDR_*) count too.",
                ),
                Field(
                    "xoff",
                    (4, 1),
                    "rw",
                    doc="1: ask the peer to pause regardless of the RX FIFO (with tx_pause); "
                    "writing 0 sends the XON unless the FIFO is still above the low mark.",
                ),
            ),
            "802.3x flow control. Quasi-static: change it while the MAC is idle.",
        ),
        Register(
            "MAC_FC_QUANTA",
            0x18,
            (
                Field(
                    "quanta",
                    (0, 16),
                    "rw",
                    reset=0xFFFF,
                    doc="Pause time sent in each XOFF, in quanta of 512 bit times.",
                ),
                Field(
                    "refresh",
                    (16, 16),
                    "rw",
                    reset=0x7FFF,
                    doc="While the XOFF condition lasts, resend the XOFF every this many "
                    "quanta (keep it below quanta); 0 = never.",
                ),
            ),
            "PAUSE frames sent.",
        ),
        Register(
            "MAC_FC_WATER",
            0x1C,
            (
                Field(
                    "high",
                    (0, 16),
                    "rw",
                    reset=1024,
                    doc="RX FIFO bytes at or above which the MAC sends an XOFF. Leave room "
                    "for about two full frames above it: the one arriving and the one the "
                    "peer starts before the XOFF reaches it.",
                ),
                Field(
                    "low",
                    (16, 16),
                    "rw",
                    reset=512,
                    doc="RX FIFO bytes below which an XOFF in force is revoked by an XON; "
                    "keep it below high.",
                ),
            ),
            "RX FIFO watermarks for sending PAUSE frames (bytes, rounded down to whole "
            "AXI data words).",
        ),
        Register(
            "MAC_FC_STATUS",
            0x20,
            (
                Field(
                    "rx_paused",
                    (0, 1),
                    "ro",
                    doc="A received PAUSE is holding the transmitter (its quanta are running).",
                ),
                Field(
                    "xoff_sent",
                    (1, 1),
                    "ro",
                    doc="The MAC is asking the peer to pause (an XOFF went out, no XON yet).",
                ),
            ),
            "802.3x flow control status.",
        ),
    )


def _build_register_map() -> RegisterMap:
    tx = _dma_channel_block("TX", 0x100, "TX")
    rx = _dma_channel_block("RX", 0x180, "RX")
    irq = Block(
        "IRQ",
        0x200,
        (
            Register(
                "IRQ_STATUS",
                0x00,
                _irq_cause_fields("w1c", ""),
                "Interrupt causes; sticky, write 1 to clear. The irq output is "
                "IRQ_STATUS & IRQ_ENABLE, so re-enabling with a cause pending fires at once.",
            ),
            Register(
                "IRQ_ENABLE",
                0x04,
                _irq_cause_fields("rw", "Enable: "),
                "Interrupt enables, one per IRQ_STATUS cause.",
            ),
            Register(
                "IRQ_MODE",
                0x08,
                (
                    Field("tx_mode", (0, 2), "rw", doc="When tx_done is set.", enum=IRQ_MODE),
                    Field("rx_mode", (8, 2), "rw", doc="When rx_done is set.", enum=IRQ_MODE),
                ),
                "Completion interrupt mode per channel.",
            ),
            _coalesce("TX_COALESCE", 0x0C, "TX"),
            _coalesce("RX_COALESCE", 0x10, "RX"),
            _whole(
                "SYS_CLK_MHZ",
                0x14,
                "rw",
                "System clock frequency in MHz, for the µs timers.",
                width=10,
                reset=100,
                valid=range(1, 1001),
            ),
            _whole("IRQ_COUNT", 0x18, "ro", f"Rising edges of the irq output. {_COUNTER_DOC}"),
            Register(
                "MIN_INTERVAL",
                0x1C,
                (
                    Field(
                        "us",
                        (0, 16),
                        "rw",
                        # 10 ms: the longest interval e1000's InterruptThrottleRate
                        # accepts (100 interrupts/s).
                        valid=range(0, 10001),
                        doc="After the irq output rises it cannot rise again for this many "
                        "µs; causes arriving meanwhile stay pending in IRQ_STATUS and raise "
                        "irq when the interval ends (125 = at most 8,000 interrupts/s). "
                        "0 = no limit; writing 0 ends a running interval.",
                    ),
                ),
                "Interrupt rate limit: the minimum interval between rising edges of irq "
                "(an interrupt throttle rate).",
            ),
        ),
        "Interrupt status, enables and moderation.",
    )
    mac = Block(
        "MAC",
        0x300,
        (
            Register(
                "MAC_CTRL",
                0x00,
                (
                    Field("tx_enable", (0, 1), "rw", doc="1: the MAC transmits frames."),
                    Field("rx_enable", (1, 1), "rw", doc="1: the MAC receives frames."),
                    Field(
                        "mii_select",
                        (2, 1),
                        "rw",
                        doc="1: 4-bit MII nibble mode (10/100 Mb/s); 0: 8-bit GMII.",
                    ),
                ),
                "MAC control.",
            ),
            _whole(
                "MAC_IFG",
                0x04,
                "rw",
                "Inter-frame gap in byte times.",
                width=8,
                reset=12,
                valid=range(1, 256),
            ),
            _whole(
                "MAC_MAX_LEN",
                0x08,
                "rw",
                "Maximum frame length in bytes including FCS; VLAN-tagged frames may be 4 "
                "bytes longer. Longer RX frames count as oversize.",
                width=16,
                reset=1518,
                valid=range(64, 16384),
            ),
            *_flow_control_registers(),
        ),
        "Ethernet MAC configuration.",
    )
    mdio = Block(
        "MDIO",
        0x380,
        (
            Register(
                "MDIO_CTRL",
                0x00,
                (
                    Field(
                        "clk_div",
                        (0, 8),
                        "rw",
                        reset=32,
                        valid=range(2, 256),
                        doc="Half an MDC period in system clocks: MDC = sys_clk / (2 * "
                        "clk_div). Keep MDC at or below 2.5 MHz (802.3 22.2.2.11): clk_div >= "
                        "sys_clk_MHz / 5; the reset value 32 is safe up to a 160 MHz system "
                        "clock. Read data is sampled 3 system clocks before MDC rises, so the "
                        "PHY's MDC-to-MDIO delay (at most 300 ns) must stay under 2 * clk_div - "
                        "3 system clocks: true at 2.5 MHz MDC from a 30 MHz system clock up. "
                        "Sampled when a frame starts.",
                    ),
                ),
                "MDIO (PHY management) control.",
            ),
            Register(
                "MDIO_CMD",
                0x04,
                (
                    Field("data", (0, 16), "rw", doc="Write frames: the 16 data bits."),
                    Field("reg", (16, 5), "rw", doc="PHY register address."),
                    Field("phy", (21, 5), "rw", doc="PHY address."),
                    Field("write", (26, 1), "rw", doc="1: a write frame; 0: a read frame."),
                ),
                "A clause 22 management frame: every write to this register starts one "
                "(write the whole word). A write while MDIO_STATUS.busy starts nothing, sets "
                "MDIO_STATUS.cmd_ignored and only updates the fields read back here.",
                write_strobe=True,
            ),
            Register(
                "MDIO_STATUS",
                0x08,
                (
                    Field(
                        "read_data",
                        (0, 16),
                        "ro",
                        doc="The data of the last read frame; valid once busy is 0.",
                    ),
                    Field(
                        "busy",
                        (16, 1),
                        "ro",
                        doc="A frame is being clocked out; 1 from the cycle after the "
                        "MDIO_CMD write.",
                    ),
                    Field(
                        "cmd_ignored",
                        (17, 1),
                        "w1c",
                        doc="Sticky: an MDIO_CMD write arrived while busy and started no "
                        "frame; write 1 to clear.",
                    ),
                ),
                "MDIO (PHY management) status.",
            ),
        ),
        "MDIO master for PHY management (IEEE 802.3 clause 22): MDC and MDIO pins of the SoC.",
    )
    counters = {**TX_COUNTERS, **RX_COUNTERS, **FLOW_CONTROL_COUNTERS, **CHECKSUM_COUNTERS}
    stats_names = [(name.upper(), doc) for name, doc in counters.items()]
    stats = Block(
        "STATS",
        0x400,
        tuple(
            _whole(name, 4 * index, "ro", f"{doc} {_COUNTER_DOC}")
            for index, (name, doc) in enumerate(stats_names)
        ),
        "MAC statistics.",
    )
    # CFG_ERROR is generated from the validated fields of every other block.
    identity = Block(
        "ID",
        0x000,
        (
            _whole("ID", 0x000, "ro", 'Identifier "MDMA".', reset=0x4D444D41, constant=True),
            Register(
                "VERSION",
                0x004,
                (
                    Field("minor", (0, 8), "ro", reset=1, constant=True, doc="Minor version."),
                    Field("major", (8, 8), "ro", reset=0, constant=True, doc="Major version."),
                ),
                "Register map version.",
            ),
            Register(
                "FEATURES",
                0x008,
                (
                    Field("data_bytes", (0, 4), "ro", doc="AXI data bus width in bytes (4 or 8)."),
                    Field("tx_fifo_log2", (8, 4), "ro", doc="log2 of the TX FIFO depth in bytes."),
                    Field("rx_fifo_log2", (16, 4), "ro", doc="log2 of the RX FIFO depth in bytes."),
                    Field(
                        "max_prefetch", (24, 4), "ro", doc="Largest PREFETCH the hardware honours."
                    ),
                    Field(
                        "flow_control",
                        (28, 1),
                        "ro",
                        doc="1: 802.3x flow control is built in (the MAC_FC_* registers act).",
                    ),
                    Field(
                        "rx_checksum",
                        (29, 1),
                        "ro",
                        doc="1: RX EOP descriptors carry rx_csum, the frame's ones'-complement "
                        "sum from byte 14 (CHECKSUM_COMPLETE).",
                    ),
                    Field(
                        "tx_checksum",
                        (30, 1),
                        "ro",
                        doc="1: TX checksum insertion is built in: a SOP descriptor's csum_insert "
                        "and ip_csum_insert act (CHECKSUM_PARTIAL).",
                    ),
                ),
                "Build parameters, supplied by the hardware.",
            ),
            cfg_error_register(
                "CFG_ERROR",
                0x00C,
                (tx, rx, irq, mac, mdio, stats),
                "Sticky record of rejected writes, one bit per validated field in map order; "
                "write 1 to clear. A rejected write leaves the field unchanged, still answers "
                "OKAY, and sets IRQ_STATUS.cfg_error.",
            ),
            _whole("SCRATCH", 0x010, "rw", "Free for software; no effect on the hardware."),
        ),
        "Identification, build features and configuration errors.",
    )
    return RegisterMap(
        (identity, tx, rx, irq, mac, mdio, stats),
        window_bytes=4096,
        cfg_error=("ID", "CFG_ERROR"),
        cfg_error_irq=("IRQ", "IRQ_STATUS", "cfg_error"),
    )


REGISTER_MAP: RegisterMap = _build_register_map()
