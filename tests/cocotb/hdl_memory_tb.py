"""cocotb bench for the HDL host memory's burst record and traffic meters
(tests/sim/benches/test_hdl_memory.py).

A bench-port ``Axi4Ram`` alone (``hdl_memory_ram``: its AXI4 slave as ``s_axi_*``, its
bench ports as ``mem_*``) with ``HdlHostMemory`` on it. Read and write bursts are offered
back to back from the first clock out of reset, on both channels at once, so the RAM
takes one on consecutive clocks and both directions in the same clock; the record must
hold every burst with its own address and length, in order, and agree with the RAM's
counters. The meters (``count_from_here``, read from the RAM's counters) must give, at
every sample, what the record holds at that moment, wherever in a time step the sample
and the meter's start fall.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import (
    ClockCycles,
    FallingEdge,
    First,
    ReadWrite,
    RisingEdge,
    Timer,
    ValueChange,
)

from macdma.sim.benches.bursts import RecordMeter
from macdma.sim.benches.hdl_memory import HdlHostMemory

SIZE = 16384


def _bursts(base: int, lengths: list[int]) -> list[tuple[int, int]]:
    """(address, beats) of consecutive bursts of ``lengths`` beats from ``base``."""
    bursts, addr = [], base
    for beats in lengths:
        bursts.append((addr, beats))
        addr += 4 * beats
    return bursts


async def _offer(dut, channel: str, bursts) -> None:
    """Offer ``bursts`` on the AR or AW channel, each from the clock after the previous
    one's handshake."""
    valid, ready = getattr(dut, f"s_axi_{channel}valid"), getattr(dut, f"s_axi_{channel}ready")
    for addr, beats in bursts:
        getattr(dut, f"s_axi_{channel}addr").value = addr
        getattr(dut, f"s_axi_{channel}len").value = beats - 1
        valid.value = 1
        await FallingEdge(dut.clk)  # READY is a register: settled mid-clock
        while not int(ready.value):
            await FallingEdge(dut.clk)
        await RisingEdge(dut.clk)  # the handshake
    valid.value = 0


async def _write_beats(dut, bursts) -> None:
    """Every write burst's beats on W, back to back (each beat's data its address)."""
    for addr, beats in bursts:
        for beat in range(beats):
            dut.s_axi_wdata.value = addr + 4 * beat
            dut.s_axi_wstrb.value = 0xF
            dut.s_axi_wlast.value = int(beat == beats - 1)
            dut.s_axi_wvalid.value = 1
            await FallingEdge(dut.clk)
            while not int(dut.s_axi_wready.value):
                await FallingEdge(dut.clk)
            await RisingEdge(dut.clk)
    dut.s_axi_wvalid.value = 0


async def _run(dut, latency: int, lengths: list[int]) -> None:
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    memory = HdlHostMemory(dut, SIZE, record_bursts=True)
    memory.latency_cycles = latency
    for name in ("arvalid", "awvalid", "wvalid"):
        getattr(dut, f"s_axi_{name}").value = 0
    for name in ("rready", "bready"):
        getattr(dut, f"s_axi_{name}").value = 1
    dut.rst.value = 1
    memory.start()
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    reads = _bursts(0x1000, lengths)
    writes = _bursts(0x2000, list(reversed(lengths)))
    offered = [
        cocotb.start_soon(_offer(dut, "ar", reads)),
        cocotb.start_soon(_offer(dut, "aw", writes)),
        cocotb.start_soon(_write_beats(dut, writes)),
    ]
    for task in offered:
        await task
    await ClockCycles(dut.clk, 20 + 2 * latency)
    await memory.check_record()
    recorded = {
        write: [(b.addr, b.beats) for b in memory.bursts if b.write == write]
        for write in (False, True)
    }
    assert recorded[False] == reads, f"read bursts recorded {recorded[False]}"
    assert recorded[True] == writes, f"write bursts recorded {recorded[True]}"
    for addr, beats in writes:
        got = memory.read(addr, 4 * beats)
        assert got == b"".join((addr + 4 * b).to_bytes(4, "little") for b in range(beats))


# Single-beat bursts (one taken every clock on each channel) with longer ones among them.
LENGTHS = [1] * 12 + [2, 1, 1, 3, 1, 4, 1, 1, 1, 2, 2, 1] + [1] * 8


@cocotb.test()
async def test_back_to_back_bursts_without_latency(dut):
    """At latency 0 the RAM takes a single-beat burst on every clock, on both channels."""
    await _run(dut, 0, LENGTHS)


@cocotb.test()
async def test_back_to_back_bursts_with_latency(dut):
    """At latency 3 each take waits for the previous burst; the record keeps up."""
    await _run(dut, 3, LENGTHS)


# The meters' address classes: some of the read bursts, some of the write bursts.
CLASSES = ((0x1004, 0x1020), (0x2010, 0x2040))


async def _where_in_a_step(dut, rng: random.Random) -> str:
    """Wait for a moment picked at random among those a bench wakes at: a rising or a
    falling clock edge (after it), a change of the read burst counter, a timer landing on
    a clock edge's time (before it) or between edges, or a step's ReadWrite phase."""
    kind = rng.choice(["rising", "falling", "counter", "timer-on-edge", "timer", "readwrite"])
    if kind == "rising":
        await RisingEdge(dut.clk)
    elif kind == "falling":
        await FallingEdge(dut.clk)
    elif kind == "counter":  # or a while later, once the reads are done
        await First(ValueChange(dut.mem_ar_bursts), Timer(40, "ns"))
    elif kind == "timer-on-edge":
        await RisingEdge(dut.clk)
        await Timer(10 * rng.randint(1, 3), "ns")
    elif kind == "timer":
        await Timer(rng.randint(1, 37), "ns")
    else:
        await Timer(rng.randint(1, 9), "ns")
        await ReadWrite()
    return kind


@cocotb.test(timeout_time=200, timeout_unit="us")
async def test_meters_count_what_the_record_holds(dut):
    """Meters started at random moments sample at random moments while bursts are taken
    back to back on both channels (one every clock at times): each sample's counts, and
    each meter's total at the end, equal a count of the record's bursts since the
    meter's start, as the record holds them at that moment."""
    rng = random.Random(38)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    memory = HdlHostMemory(dut, SIZE, record_bursts=True)
    for name in ("arvalid", "awvalid", "wvalid"):
        getattr(dut, f"s_axi_{name}").value = 0
    for name in ("rready", "bready"):
        getattr(dut, f"s_axi_{name}").value = 1
    dut.rst.value = 1
    memory.start()
    await ClockCycles(dut.clk, 4)  # the meters need the clock measured (three edges)
    dut.rst.value = 0
    lengths = [rng.choice([1, 1, 1, 2, 3, 4]) for _ in range(60)]
    reads = _bursts(0x1000, lengths)
    writes = _bursts(0x2000, list(reversed(lengths)))
    offered = [
        cocotb.start_soon(_offer(dut, "ar", reads)),
        cocotb.start_soon(_offer(dut, "aw", writes)),
        cocotb.start_soon(_write_beats(dut, writes)),
    ]
    pairs = []  # (where, the record's counts, the meter's counts)
    meters = []  # (record meter, HDL meter)
    kinds = set()
    while not all(task.done() for task in offered):
        kind = await _where_in_a_step(dut, rng)
        kinds.add(kind)
        if not meters or rng.random() < 0.15:
            meters.append((RecordMeter(memory.bursts, CLASSES), memory.count_from_here(CLASSES)))
        for reference, meter in meters:
            expected = await reference.total()

            def deliver(counts, kind=kind, expected=expected):
                pairs.append((kind, expected, counts))

            meter.sample(deliver)
    await ClockCycles(dut.clk, 20)
    await memory.check_record()
    totals = [(await reference.total(), await meter.total()) for reference, meter in meters]
    assert len(memory.bursts) == len(reads) + len(writes)
    assert len(kinds) == 6, f"woke only at {kinds}"
    assert len(meters) > 5 and len(pairs) > 200
    for kind, expected, counts in pairs:
        assert counts == expected, f"a sample after a {kind} wake-up: {counts} != {expected}"
    for expected, counts in totals:
        assert counts == expected, f"a meter's total: {counts} != {expected}"
    # Class 0 saw reads, class 1 writes.
    last = totals[0][0]
    assert all(last.class_bursts[i][i] for i in range(2)), last
