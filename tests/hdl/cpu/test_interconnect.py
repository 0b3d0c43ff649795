"""The soft core's interconnect in Amaranth's simulator (hdl/cpu/interconnect.py): the
Wishbone -> AXI4 bridge (single writes, cache line refills as one burst, a burst begun
mid-line, a burst the master ends early, an error response) and the address decoder's bus
error. The machine timer: tests/hdl/cpu/test_timer.py; the whole subsystem with VexRiscv:
tests/hdl/cpu/test_top.py."""

from amaranth import *
from amaranth.lib.wiring import connect
from amaranth.sim import Simulator
from axi_model import AxiMemory
from wishbone_master import burst_read, wishbone_cycle

from macdma.hdl.bus.axi4 import RESP_SLVERR
from macdma.hdl.cpu.interconnect import CACHE_LINE_WORDS, WishboneDecoder, WishboneToAxi4
from macdma.hdl.cpu.memory_map import FIRMWARE_PORT, TIMER, TIMER_REGISTERS
from macdma.hdl.cpu.timer import MachineTimer


def run_bridge(testbench, **memory):
    bridge = WishboneToAxi4()
    mem = AxiMemory(bridge.axi, data_width=32, size=1 << 12, seed=3, **memory)
    for index in range(len(mem.mem)):
        mem.mem[index] = (index * 37 + 11) & 0xFF
    sim = Simulator(bridge)
    sim.add_clock(1e-8)
    sim.add_process(mem.run)

    async def bench(ctx):
        await testbench(ctx, bridge.wb, mem)

    sim.add_testbench(bench)
    sim.run()
    return mem


def word_at(mem, address):
    return int.from_bytes(mem.mem[address : address + 4], "little")


def test_a_line_refill_is_one_axi_burst_with_back_pressure():
    seen = {}

    async def testbench(ctx, wb, mem):
        seen["words"], seen["errors"] = await burst_read(ctx, wb, 0x40, CACHE_LINE_WORDS)
        seen["expected"] = [word_at(mem, 4 * (0x40 + i)) for i in range(CACHE_LINE_WORDS)]

    mem = run_bridge(testbench, latency=3, ready_prob=0.5, valid_prob=0.5)
    assert seen["words"] == seen["expected"] and not any(seen["errors"])
    assert [(b.kind, b.addr, b.beats) for b in mem.monitor.bursts] == [("read", 0x100, 8)]


def test_a_burst_begun_mid_line_reads_to_the_line_end_and_an_early_end_is_drained():
    seen = {}

    async def testbench(ctx, wb, mem):
        seen["mid"], _ = await burst_read(ctx, wb, 0x45, 3)  # words 5..7 of the line
        # Two beats of a burst the bridge asked 8 for: the other 6 are drained.
        seen["early"], _ = await burst_read(ctx, wb, 0x80, 2)
        seen["after"], _ = await wishbone_cycle(ctx, wb, 0x90)
        seen["expected"] = [
            [word_at(mem, 4 * (0x45 + i)) for i in range(3)],
            [word_at(mem, 4 * (0x80 + i)) for i in range(2)],
            word_at(mem, 4 * 0x90),
        ]

    mem = run_bridge(testbench, ready_prob=0.7, valid_prob=0.7)
    assert [seen["mid"], seen["early"], seen["after"]] == seen["expected"]
    assert [(b.addr, b.beats) for b in mem.monitor.bursts] == [
        (0x114, 3),
        (0x200, 8),
        (0x240, 1),
    ]


def test_a_single_write_stores_its_lanes_and_an_error_ends_with_err():
    seen = {}

    async def testbench(ctx, wb, mem):
        before = word_at(mem, 0x20)
        _, seen["write_err"] = await wishbone_cycle(ctx, wb, 0x8, we=1, data=0xA1B2C3D4, sel=0b0110)
        seen["want"] = (before & 0xFF0000FF) | 0x00B2C300
        seen["word"] = word_at(mem, 0x20)
        _, seen["read_err"] = await wishbone_cycle(ctx, wb, 0x300 // 4)
        _, seen["burst_errs"] = await burst_read(ctx, wb, 0x300 // 4, 2)
        seen["after"], _ = await wishbone_cycle(ctx, wb, 0x10)
        seen["expected_after"] = word_at(mem, 0x40)

    mem = run_bridge(testbench, errors=[(0x300, 0x320, RESP_SLVERR)])
    assert not seen["write_err"] and seen["word"] == seen["want"]
    assert seen["read_err"] and seen["burst_errs"][0]
    assert seen["after"] == seen["expected_after"], "the bridge stuck after an error burst"
    assert [(b.kind, b.beats) for b in mem.monitor.bursts][0] == ("write", 1)


def test_the_decoder_answers_err_for_an_unmapped_address_and_routes_the_rest():
    decoder = WishboneDecoder({"timer": (TIMER,), "port": (FIRMWARE_PORT,)})
    m = Module()
    m.submodules.decoder = decoder
    m.submodules.timer = timer = MachineTimer()
    connect(m, decoder.timer, timer.bus)
    seen = {}

    async def testbench(ctx):
        _, seen["unmapped"] = await wishbone_cycle(ctx, decoder.bus, 0x1234_5678 >> 2)
        hi = (TIMER.base + TIMER_REGISTERS["MTIMECMP_HI"]) >> 2
        seen["cmp_hi"], seen["timer_err"] = await wishbone_cycle(ctx, decoder.bus, hi)

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert seen["unmapped"] == 1
    assert seen["timer_err"] == 0 and seen["cmp_hi"] == 0xFFFFFFFF
