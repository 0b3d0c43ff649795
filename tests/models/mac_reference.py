"""Reference frames for MAC tests, built with zlib (never with the code under test)."""

import random
import struct
import zlib

PREAMBLE = bytes([0x55] * 7 + [0xD5])


def fcs(payload: bytes) -> bytes:
    """The IEEE 802.3 FCS of ``payload`` as sent on the wire (LSB first)."""
    return struct.pack("<I", zlib.crc32(payload))


def padded(payload: bytes, min_length: int = 60) -> bytes:
    return payload + bytes(max(0, min_length - len(payload)))


def wire_frame(payload: bytes) -> bytes:
    """What a transmitter puts after the SFD: padded payload and FCS."""
    body = padded(payload)
    return body + fcs(body)


def make_payload(length: int, seed: int = 0) -> bytes:
    """A deterministic payload: a destination/source header, then random bytes."""
    rng = random.Random(seed * 100003 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))
