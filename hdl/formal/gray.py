"""Gray-code helpers for the clock-crossing proofs: encode, decode, and the ordering of
pointer copies on their way through a synchronizer (the linking invariants)."""

from amaranth import *

__all__ = ["gray_of", "binary_of", "distance", "in_order", "one_bit_steps"]


def gray_of(value: Value) -> Value:
    """The Gray code of the binary ``value``."""
    value = Value.cast(value)
    return value ^ (value >> 1)


def binary_of(gray: Value) -> Value:
    """The binary value of the Gray code ``gray``."""
    gray = Value.cast(gray)
    return Cat(gray[i:].xor() for i in range(len(gray)))


def distance(older: Value, newer: Value) -> Value:
    """How far the pointer ``newer`` is ahead of ``older``, modulo the pointer range."""
    return (newer - older)[: len(Value.cast(older))]


def in_order(*values: Value) -> Value:
    """High if the pointers ``values`` (oldest first) are in order: walking from each to
    the next never wraps, so the steps add up to the distance from the first to the last."""
    return sum(distance(a, b) for a, b in zip(values, values[1:], strict=False)) == distance(
        values[0], values[-1]
    )


def one_bit_steps(m: Module, domain: str, gray: Signal, name: str) -> Value:
    """High if ``gray`` differs from its value at the previous edge of ``domain`` in at most
    one bit (a register of ``domain`` keeps that value)."""
    previous = Signal(len(gray), name=f"{name}_previous")
    m.d[domain] += previous.eq(gray)
    changed = gray ^ previous
    return (changed & (changed - 1)) == 0
