"""DMA descriptors as the driver sees them in host memory.

This mirrors the hardware definition ``macdma.hdl.dma.descriptor.Descriptor`` (an Amaranth
``data.Struct``) without importing Amaranth: the driver model must not depend on the HDL.
``tests/hdl/dma/test_descriptor.py`` checks that both agree field by field. ``docs/descriptors.md``
describes the layout and the OWN hand-off protocol.

A descriptor is 16 bytes: four little-endian 32-bit words. The layout is given once, by
the :class:`Descriptor` dataclass fields and their ``(word, lsb, width)`` metadata; bits
no field covers are reserved (written 0, ignored when read).

Typical use::

    ring[i] = Descriptor.tx(addr, 1514, sop=True, eop=True, ioc=True).pack()
    done = Descriptor.unpack(ring[i])
    if not done.own:  # written back: done_length, frame_length, ... are valid
        ...

A real driver writes word 3 (which holds ``own``) last when posting, and reads it first
(then a read barrier) when reaping.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, fields
from enum import IntEnum
from typing import Any

__all__ = [
    "DESCRIPTOR_BYTES",
    "DESCRIPTOR_WORDS",
    "MAX_BUFFER_BYTES",
    "MIN_RX_BUFFER_BYTES",
    "WRITEBACK_BYTES",
    "WRITEBACK_FIRST_WORD",
    "WRITEBACK_OFFSET",
    "BitField",
    "Descriptor",
    "RxErrorCause",
    "extend_timestamp",
]

DESCRIPTOR_WORDS = 4
DESCRIPTOR_BYTES = 4 * DESCRIPTOR_WORDS
WORD_BITS = 32
#: ``length`` and ``done_length`` are 16 bits wide.
MAX_BUFFER_BYTES = 0xFFFF
#: Smaller RX buffers halt the RX channel (DmaErrorCode.RX_BUFFER_TOO_SMALL).
MIN_RX_BUFFER_BYTES = 64
#: The DMA writes back words 1..3 in one 12-byte burst, in address order, so word 3 (with
#: ``own``) lands last; word 0 (the address) is written only on the EOP write-back of a
#: timestamped frame, which is all 16 bytes from offset 0 (word 0 = the timestamp).
WRITEBACK_FIRST_WORD = 1
WRITEBACK_OFFSET = 4 * WRITEBACK_FIRST_WORD
WRITEBACK_BYTES = DESCRIPTOR_BYTES - WRITEBACK_OFFSET

_WORDS = struct.Struct("<4I")


class RxErrorCause(IntEnum):
    """Why the MAC marked a received frame bad (``Descriptor.rx_error``).

    Mirrors ``macdma.hdl.mac.frame.RxError``; one cause per frame, highest priority first.
    """

    NONE = 0
    PHY = 1  # rx_er asserted during the frame
    ALIGNMENT = 2  # odd number of nibbles (MII)
    OVERSIZE = 3  # longer than MAC_MAX_LEN (plus 4 for a VLAN tag)
    RUNT = 4  # shorter than 64 bytes including FCS
    FCS = 5  # frame check sequence mismatch


@dataclass(frozen=True)
class BitField:
    """Where a descriptor field lives: ``width`` bits from bit ``lsb`` of word ``word``."""

    name: str
    word: int
    lsb: int
    width: int
    doc: str = ""

    @property
    def offset(self) -> int:
        """Bit offset within the 128-bit descriptor (word 0 in the low bits)."""
        return WORD_BITS * self.word + self.lsb

    @property
    def max_value(self) -> int:
        return (1 << self.width) - 1

    @property
    def word_mask(self) -> int:
        """The field's bits in place within its 32-bit word."""
        return self.max_value << self.lsb


def _bits(word: int, lsb: int, width: int, doc: str) -> Any:
    default = False if width == 1 else 0
    return field(default=default, metadata={"bits": (word, lsb, width), "doc": doc})


@dataclass(frozen=True)
class Descriptor:
    """One ring entry. Every field defaults to 0 / False.

    The field order and the ``(word, lsb, width)`` of each field are the layout; see
    :meth:`layout`. One-bit fields are ``bool``; others are ``int``.
    """

    # Word 0: written by the driver; written back only as a timestamp (``timestamped``).
    addr: int = _bits(0, 0, 32, "Buffer address; low 32 bits of the timestamp if timestamped.")
    # Word 1: written back.
    done_length: int = _bits(1, 0, 16, "TX: bytes read. RX: bytes written into this buffer.")
    rx_csum: int = _bits(1, 16, 16, "RX, good frame EOP: sum from byte 14 (CHECKSUM_COMPLETE).")
    # Word 2: written back; 0 except on an RX EOP descriptor (and a timestamped TX EOP).
    frame_length: int = _bits(2, 0, 16, "RX, EOP descriptor: frame length without FCS.")
    rx_error: int = _bits(2, 16, 3, "RX, EOP descriptor: RxErrorCause of a bad frame.")
    rx_truncated: bool = _bits(2, 19, 1, "RX, EOP: tail lost (RX FIFO full or no descriptor).")
    csum_start: int = _bits(2, 20, 10, "TX, SOP: first frame byte the L4 checksum sums.")
    timestamped: bool = _bits(2, 30, 1, "EOP: word 0 holds the SFD time's low 32 bits, ns.")
    error: bool = _bits(2, 31, 1, "EOP descriptor of a bad frame.")
    # Word 3: written by the driver (last: it holds own); written back with own = 0.
    length: int = _bits(3, 0, 16, "TX: fragment bytes (>= 1). RX: buffer size (>= 64).")
    csum_offset: int = _bits(3, 16, 8, "TX, SOP: checksum position after csum_start.")
    ioc: bool = _bits(3, 24, 1, "Interrupt on completion (IRQ_MODE = PER_DESC).")
    csum_insert: bool = _bits(3, 25, 1, "TX, SOP: insert the L4 checksum (CHECKSUM_PARTIAL).")
    ip_csum_insert: bool = _bits(3, 26, 1, "TX, SOP: insert the IPv4 header checksum.")
    ts_request: bool = _bits(3, 27, 1, "TX, SOP: time-stamp this frame (SKBTX_HW_TSTAMP).")
    sop: bool = _bits(3, 28, 1, "Start of packet: TX set by the driver, RX set by the DMA.")
    eop: bool = _bits(3, 29, 1, "End of packet: TX set by the driver, RX set by the DMA.")
    own: bool = _bits(3, 31, 1, "1: owned by the DMA. The DMA clears it on write-back.")

    # -- layout ------------------------------------------------------------------------

    @classmethod
    def layout(cls) -> tuple[BitField, ...]:
        """Every field's position, in declaration order (ascending bit offset)."""
        return tuple(
            BitField(f.name, *f.metadata["bits"], doc=f.metadata["doc"]) for f in fields(cls)
        )

    # -- constructors ------------------------------------------------------------------

    @classmethod
    def tx(
        cls,
        addr: int,
        length: int,
        *,
        sop: bool,
        eop: bool,
        ioc: bool = False,
        csum_start: int = 0,
        csum_offset: int = 0,
        csum_insert: bool = False,
        ip_csum_insert: bool = False,
        ts_request: bool = False,
    ) -> Descriptor:
        """A TX fragment handed to the DMA (``own`` set). ``length`` is 1..65535 bytes.

        The checksum request (``csum_*``, ``ip_csum_insert``; docs/descriptors.md) belongs
        to the frame's first fragment: the hardware reads it only there.
        """
        if not isinstance(length, int) or not 1 <= length <= MAX_BUFFER_BYTES:
            raise ValueError(f"TX fragment length {length!r} must be 1..{MAX_BUFFER_BYTES}")
        requested = csum_insert or ip_csum_insert or csum_start or csum_offset
        if requested and not sop:
            raise ValueError(
                "A TX checksum request belongs on the SOP fragment (sop=True), "
                f"not on a fragment with sop={sop!r}"
            )
        if ts_request and not sop:
            raise ValueError(
                "A TX timestamp request belongs on the SOP fragment (sop=True), "
                f"not on a fragment with sop={sop!r}"
            )
        return cls(
            addr=addr,
            length=length,
            sop=sop,
            eop=eop,
            ioc=ioc,
            csum_start=csum_start,
            csum_offset=csum_offset,
            csum_insert=csum_insert,
            ip_csum_insert=ip_csum_insert,
            ts_request=ts_request,
            own=True,
        )._checked()

    @classmethod
    def rx(cls, addr: int, buffer_bytes: int, *, ioc: bool = False) -> Descriptor:
        """An empty RX buffer handed to the DMA (``own`` set); 64..65535 bytes."""
        if not isinstance(buffer_bytes, int) or not (
            MIN_RX_BUFFER_BYTES <= buffer_bytes <= MAX_BUFFER_BYTES
        ):
            raise ValueError(
                f"RX buffer size {buffer_bytes!r} must be {MIN_RX_BUFFER_BYTES}..{MAX_BUFFER_BYTES}"
            )
        return cls(addr=addr, length=buffer_bytes, ioc=ioc, own=True)._checked()

    # -- memory image ------------------------------------------------------------------

    def words(self) -> tuple[int, int, int, int]:
        """The four 32-bit words; reserved bits are 0. Raises ValueError on a value that
        does not fit its field."""
        words = [0] * DESCRIPTOR_WORDS
        for bf in self.layout():
            value = getattr(self, bf.name)
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, int) or not 0 <= value <= bf.max_value:
                raise ValueError(
                    f"Descriptor field {bf.name} = {value!r} does not fit in {bf.width} bit(s)"
                )
            words[bf.word] |= value << bf.lsb
        return tuple(words)  # type: ignore[return-value]

    def pack(self) -> bytes:
        """The 16 bytes the DMA sees in host memory."""
        return _WORDS.pack(*self.words())

    @classmethod
    def from_words(cls, words: tuple[int, ...] | list[int]) -> Descriptor:
        """Decode four 32-bit words; reserved bits are ignored."""
        if len(words) != DESCRIPTOR_WORDS:
            raise ValueError(f"A descriptor has {DESCRIPTOR_WORDS} words, not {len(words)}")
        values: dict[str, int | bool] = {}
        for bf in cls.layout():
            value = (words[bf.word] >> bf.lsb) & bf.max_value
            values[bf.name] = bool(value) if bf.width == 1 else value
        return cls(**values)  # type: ignore[arg-type]

    @classmethod
    def unpack(cls, data: bytes | bytearray | memoryview) -> Descriptor:
        """Decode the 16 bytes of a descriptor; reserved bits are ignored."""
        if len(data) != DESCRIPTOR_BYTES:
            raise ValueError(f"A descriptor is {DESCRIPTOR_BYTES} bytes, not {len(data)}")
        return cls.from_words(_WORDS.unpack(bytes(data)))

    @property
    def timestamp_low_ns(self) -> int | None:
        """The low 32 bits of the frame's PTP timestamp in ns (written back into word 0
        of a timestamped EOP descriptor), or None; :func:`extend_timestamp` widens it."""
        return self.addr if self.timestamped else None

    def _checked(self) -> Descriptor:
        self.words()  # raises ValueError naming a field whose value does not fit
        return self


def extend_timestamp(low_ns: int, reference_ns: int) -> int:
    """The 64-bit PTP time whose low 32 bits are ``low_ns`` and which lies nearest to
    ``reference_ns`` (a PHC reading taken within about 2 s of the stamped event, before or
    after it): what Linux drivers do with a timecounter. 2**32 ns is 4.29 s, so the
    answer is unambiguous while the reading is less than 2.1 s from the event."""
    if not isinstance(low_ns, int) or not 0 <= low_ns < 1 << 32:
        raise ValueError(f"low_ns must be a 32-bit unsigned value, not {low_ns!r}")
    if not isinstance(reference_ns, int) or not 0 <= reference_ns < 1 << 64:
        raise ValueError(f"reference_ns must be a 64-bit unsigned value, not {reference_ns!r}")
    delta = (low_ns - reference_ns) & 0xFFFF_FFFF
    if delta >= 1 << 31:
        delta -= 1 << 32
    return (reference_ns + delta) & 0xFFFF_FFFF_FFFF_FFFF


def _check_layout() -> None:
    """Fields fit their words, ascend and do not overlap (a bad edit fails at import)."""
    end = 0
    for bf in Descriptor.layout():
        if not (0 <= bf.word < DESCRIPTOR_WORDS and bf.lsb >= 0 and bf.width >= 1):
            raise ValueError(f"Descriptor field {bf.name} has a bad position {bf}")
        if bf.lsb + bf.width > WORD_BITS:
            raise ValueError(f"Descriptor field {bf.name} crosses a word boundary")
        if bf.offset < end:
            raise ValueError(f"Descriptor field {bf.name} overlaps the field before it")
        end = bf.offset + bf.width


_check_layout()
