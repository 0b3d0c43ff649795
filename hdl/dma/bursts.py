"""Burst planning shared by the AXI4 data movers.

A transfer of ``length`` bytes at byte address ``addr`` is carried by beats of ``beat_bytes``
bytes starting at the beat-aligned address ``addr & ~(beat_bytes - 1)``; the unused lanes of
the first and last beat are masked (writes) or dropped (reads). Bursts are taken greedily: each
one is as long as allowed by the runtime cap, by the beats still needed, and by the next 4 KiB
boundary (an AXI4 burst must never cross one). Because every burst starts beat-aligned, the
boundary always falls on a beat edge.

:func:`next_burst_beats` is the hardware form; :func:`plan_bursts` is the same rule in plain
Python for models, metrics (AXI bursts per frame) and tests.
"""

from amaranth import *
from amaranth.utils import exact_log2

from ..bus.axi4 import MAX_BURST_BEATS, PAGE_BYTES

__all__ = ["transfer_beats", "next_burst_beats", "plan_bursts"]


def transfer_beats(addr: int, length: int, beat_bytes: int) -> int:
    """Number of bus beats that carry ``length`` bytes starting at byte address ``addr``."""
    if length < 1:
        raise ValueError(f"Transfer length must be at least 1 byte, not {length!r}")
    return (addr % beat_bytes + length + beat_bytes - 1) // beat_bytes


def next_burst_beats(addr: Value, beats_left: Value, cap: Value, beat_bytes: int) -> Value:
    """Length in beats (1..256) of the next burst, as a combinational Amaranth expression.

    ``addr`` is the beat-aligned start address of the burst, ``beats_left`` (>= 1) the beats the
    transfer still needs and ``cap`` the runtime ``burst_beats`` register. A cap of 0 is read as
    1 and a cap above 256 as 256, so a bad register value can never produce an illegal AxLEN.
    """
    page_bits = exact_log2(PAGE_BYTES)
    # Index of the burst's first beat inside its 4 KiB page; the beats left until the boundary
    # are then 1 .. PAGE_BYTES / beat_bytes.
    beat_in_page = addr[exact_log2(beat_bytes) : page_bits]
    to_page_end = Const(PAGE_BYTES // beat_bytes, page_bits + 1) - beat_in_page
    safe_cap = Mux(cap == 0, 1, Mux(cap > MAX_BURST_BEATS, MAX_BURST_BEATS, cap))
    limit = Mux(beats_left < safe_cap, beats_left, safe_cap)
    return Mux(to_page_end < limit, to_page_end, limit)


def plan_bursts(addr: int, length: int, cap: int, beat_bytes: int) -> list[tuple[int, int]]:
    """The bursts ``(beat-aligned address, beats)`` a mover issues for one transfer."""
    cap = min(max(cap, 1), MAX_BURST_BEATS)
    beat_addr = addr - addr % beat_bytes
    beats_left = transfer_beats(addr, length, beat_bytes)
    bursts = []
    while beats_left:
        to_page_end = (PAGE_BYTES - beat_addr % PAGE_BYTES) // beat_bytes
        beats = min(cap, beats_left, to_page_end)
        bursts.append((beat_addr, beats))
        beat_addr += beats * beat_bytes
        beats_left -= beats
    return bursts
