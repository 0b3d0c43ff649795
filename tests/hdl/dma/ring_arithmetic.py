"""The ring's fetch arithmetic written out plainly: how many descriptors a fetch reads from a
position, the reference the ring's RTL and its walker are checked against."""

from __future__ import annotations


def expected_fetch(position, tail, ring_size, prefetch, max_prefetch, limit):
    """PREFETCH with 0 as 1 and at most max_prefetch; never past the ring's end; up to the
    tail when it is inside the ring and not the position itself; within the limit."""
    count = min(max(prefetch, 1), max_prefetch, ring_size - position, limit)
    if tail < ring_size and tail != position:
        count = min(count, (tail - position) % ring_size)
    return count
