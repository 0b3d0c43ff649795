"""cocotb bench for the HDL host memory's burst record (tests/sim/benches/test_hdl_memory.py).

A bench-port ``Axi4Ram`` alone (``hdl_memory_ram``: its AXI4 slave as ``s_axi_*``, its
bench ports as ``mem_*``) with ``HdlHostMemory`` on it. Read and write bursts are offered
back to back from the first clock out of reset, on both channels at once, so the RAM
takes one on consecutive clocks and both directions in the same clock; the record must
hold every burst with its own address and length, in order, and agree with the RAM's
counters.
"""

from __future__ import annotations

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge

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
    memory = HdlHostMemory(dut, SIZE)
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
