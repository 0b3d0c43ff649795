"""The test frames of every bench that drives the SoC (``macdma run``'s traffic models, the
soft core's run, ``macdma soak``): one format, one generator, one parser.

A frame is an Ethernet header whose source MAC ends in the frame's family (:data:`TX_SOURCE`,
:data:`RX_SOURCE`, ...), the IEEE local experimental EtherType, a 32-bit sequence number,
then bytes drawn from a generator seeded by the family and the sequence number alone. So a
frame's bytes follow from ``(family, seq, size)``: a receiver rebuilds the frame it expects
and compares byte for byte, and a seed replays a run exactly.

Pure Python (no cocotb): the format is unit-tested without a simulator
(tests/sim/run/test_frames.py).
"""

from __future__ import annotations

import random
import struct

ETHERTYPE = 0x88B5  # IEEE local experimental
#: The families, told apart by the last byte of the source MAC: frames the SoC sends (TX),
#: frames the far end sends it (RX), stream's acknowledgements (ACK) and the soak's
#: deliberately bad frames of a wire fault (BAD), which must never arrive as good.
TX_SOURCE, RX_SOURCE, ACK_SOURCE, BAD_SOURCE = 0x01, 0x02, 0x03, 0x04
FAMILY_OFFSET = 11  # the family's byte: the source MAC's last
SEQ_OFFSET = 14  # the sequence number, after the EtherType
HEADER_BYTES = SEQ_OFFSET + 4
#: Each family's generators are seeded apart: the seed is seq * FAMILIES + family, and a
#: family is one byte.
FAMILIES = 256


def make_frame(family: int, seq: int, size: int) -> bytes:
    """``size`` bytes of frame ``seq`` of ``family`` (a byte): Ethernet header, the
    sequence number, then bytes derived from both (a frame shorter than the header is the
    header's first ``size`` bytes)."""
    if not 0 <= family < FAMILIES:
        raise ValueError(f"a frame family is one byte (0..{FAMILIES - 1}), got {family!r}")
    if not 0 <= seq < 1 << 32:
        raise ValueError(f"a sequence number is 32 bits, got {seq!r}")
    header = bytes([0x02, 0, 0, 0, 0, 0x10, 0x02, 0, 0, 0, 0, family])
    header += struct.pack(">HI", ETHERTYPE, seq)
    body = random.Random(seq * FAMILIES + family).randbytes(max(0, size - HEADER_BYTES))
    return (header + body)[:size]


def frame_seq(data: bytes) -> int | None:
    """The sequence number of a frame made by :func:`make_frame`; None when ``data`` is too
    short to hold one."""
    if len(data) < HEADER_BYTES:
        return None
    return struct.unpack(">I", data[SEQ_OFFSET:HEADER_BYTES])[0]


def frame_family(data: bytes) -> int | None:
    """The family byte of a frame made by :func:`make_frame`; None when ``data`` is too
    short to hold it."""
    return data[FAMILY_OFFSET] if len(data) > FAMILY_OFFSET else None


def split(data: bytes, sizes: list[int] | tuple[int, ...]) -> list[bytes]:
    """``data`` cut into consecutive fragments of ``sizes`` bytes (the fragments a stack
    hands to the driver's xmit); ValueError when the sizes do not add up to ``data``."""
    if sum(sizes) != len(data):
        raise ValueError(f"fragments of {list(sizes)} bytes do not make a {len(data)}-byte frame")
    parts, offset = [], 0
    for size in sizes:
        parts.append(data[offset : offset + size])
        offset += size
    return parts
