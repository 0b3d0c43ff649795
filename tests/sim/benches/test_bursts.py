"""The burst counts both host memory models give the metrics (sim/benches/bursts.py): the
counts of a burst record per direction and address class, and a meter over a growing
record."""

from __future__ import annotations

import asyncio

import pytest

from macdma.sim.benches.bursts import BurstRecord, RecordMeter, TrafficCounts, count_bursts

RING = (0x1000, 0x1100)  # one address class: a descriptor ring of 256 bytes


def test_counts_are_per_direction_and_the_start_address_decides_the_class():
    bursts = [
        BurstRecord(write=False, addr=0x1000, beats=4, size=2),  # in the ring
        BurstRecord(write=True, addr=0x10F0, beats=8, size=2),  # starts in it, ends past it
        BurstRecord(write=True, addr=0x1100, beats=2, size=3),  # the class's end: outside
        BurstRecord(write=False, addr=0x0FFC, beats=1, size=2),  # just before it
    ]
    counts = count_bursts(bursts, (RING,))
    assert counts.bursts == (2, 2)
    assert counts.beats == (5, 10)
    assert counts.bytes == (5 * 4, 8 * 4 + 2 * 8)
    assert counts.class_bursts == ((1, 1),)
    assert counts.class_beats == ((4, 8),)


def test_counts_add_and_subtract_field_by_field():
    a = TrafficCounts((1, 2), (3, 4), (5, 6), ((1, 0),), ((2, 0),))
    b = TrafficCounts((1, 1), (1, 1), (4, 4), ((0, 1),), ((0, 3),))
    assert (a + b) - b == a
    assert (a - b).beats == (2, 3) and (a + b).class_beats == ((2, 3),)


def test_a_meter_counts_what_was_recorded_after_it_was_made():
    record = [BurstRecord(write=False, addr=0x1000, beats=4, size=2)]  # before the meter
    meter = RecordMeter(record, (RING,))
    record.append(BurstRecord(write=True, addr=0x1010, beats=2, size=2))
    seen: list[TrafficCounts] = []
    meter.sample(seen.append)
    assert seen[0].bursts == (0, 1) and seen[0].class_beats == ((0, 2),)
    record.append(BurstRecord(write=False, addr=0x2000, beats=16, size=2))
    total = asyncio.run(meter.total())
    assert total.bursts == (1, 1) and total.beats == (16, 2)
    assert total.class_bursts == ((0, 1),)  # 0x2000 is outside the ring


def test_a_meter_refuses_a_record_cleared_under_it():
    record = [BurstRecord(write=False, addr=0, beats=1, size=2)] * 3
    meter = RecordMeter(record, ())
    record.clear()
    with pytest.raises(RuntimeError, match="cleared"):
        meter.sample(lambda counts: None)
