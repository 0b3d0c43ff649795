"""Axi4Ram in Amaranth's simulator: bursts, byte strobes, back-pressure, out-of-range."""

import random

import pytest
from amaranth.sim import Simulator
from unbuilt import rejected

from macdma.hdl.bus.axi4 import RESP_OKAY, RESP_SLVERR
from macdma.hdl.bus.axi4_ram import Axi4Ram

SIZE = 4096


async def write_burst(ctx, bus, addr, words, strobes=None, awid=0):
    strobes = strobes or [0xF] * len(words)
    ctx.set(bus.awaddr, addr)
    ctx.set(bus.awlen, len(words) - 1)
    ctx.set(bus.awid, awid)
    ctx.set(bus.awvalid, 1)
    await ctx.tick().until(bus.awready)
    ctx.set(bus.awvalid, 0)
    for index, (word, strobe) in enumerate(zip(words, strobes, strict=True)):
        ctx.set(bus.wdata, word)
        ctx.set(bus.wstrb, strobe)
        ctx.set(bus.wlast, index == len(words) - 1)
        ctx.set(bus.wvalid, 1)
        await ctx.tick().until(bus.wready)
    ctx.set(bus.wvalid, 0)
    ctx.set(bus.bready, 1)
    (bid, bresp) = await ctx.tick().sample(bus.bid, bus.bresp).until(bus.bvalid)
    ctx.set(bus.bready, 0)
    return bid, bresp


async def read_burst(ctx, bus, addr, beats, rng, arid=0):
    ctx.set(bus.araddr, addr)
    ctx.set(bus.arlen, beats - 1)
    ctx.set(bus.arid, arid)
    ctx.set(bus.arvalid, 1)
    await ctx.tick().until(bus.arready)
    ctx.set(bus.arvalid, 0)
    result = []
    while True:
        ready = rng.random() < 0.6
        ctx.set(bus.rready, ready)
        _, _, valid, data, resp, last, rid = await ctx.tick().sample(
            bus.rvalid, bus.rdata, bus.rresp, bus.rlast, bus.rid
        )
        if valid and ready:
            result.append((data, resp, rid))
            assert last == (len(result) == beats)
            if last:
                ctx.set(bus.rready, 0)
                return result


def run(testbench):
    dut = Axi4Ram(SIZE)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        await testbench(ctx, dut.axi)

    sim.add_testbench(bench)
    sim.run_until(1e-3)


def test_burst_write_then_read_with_back_pressure():
    rng = random.Random(1)
    words = [rng.getrandbits(32) for _ in range(16)]
    done = []

    async def bench(ctx, bus):
        assert await write_burst(ctx, bus, 0x100, words, awid=2) == (2, RESP_OKAY)
        beats = await read_burst(ctx, bus, 0x100, 16, rng, arid=3)
        assert [data for data, _, _ in beats] == words
        assert {(resp, rid) for _, resp, rid in beats} == {(RESP_OKAY, 3)}
        done.append(True)

    run(bench)
    assert done


def test_byte_strobes_write_only_their_bytes():
    done = []

    async def bench(ctx, bus):
        await write_burst(ctx, bus, 0x40, [0x11223344])
        await write_burst(ctx, bus, 0x40, [0xAABBCCDD], strobes=[0b0101])
        (beat,) = await read_burst(ctx, bus, 0x40, 1, random.Random(0))
        assert beat[0] == 0x11BB33DD
        done.append(True)

    run(bench)
    assert done


def test_out_of_range_answers_slverr_and_writes_nothing():
    done = []

    async def bench(ctx, bus):
        await write_burst(ctx, bus, 0x0, [0x5A5A5A5A])
        assert (await write_burst(ctx, bus, SIZE, [0xFFFFFFFF]))[1] == RESP_SLVERR
        beats = await read_burst(ctx, bus, SIZE, 2, random.Random(0))
        assert [resp for _, resp, _ in beats] == [RESP_SLVERR] * 2
        (beat,) = await read_burst(ctx, bus, 0x0, 1, random.Random(0))
        assert beat[:2] == (0x5A5A5A5A, RESP_OKAY)  # the alias at 0 was not written
        done.append(True)

    run(bench)
    assert done


@pytest.mark.parametrize("size", [1000, 2048, 3 << 12])
def test_bad_size_is_rejected(size):
    with rejected(ValueError, "size_bytes"):
        Axi4Ram(size)


def test_rid_stays_with_the_beat_waiting_for_rready():
    """A new burst accepted while the last beat of the previous one still waits for RREADY
    must not relabel that beat (two masters share the R channel through their IDs)."""
    done = []

    async def bench(ctx, bus):
        await write_burst(ctx, bus, 0x10, [0x1111, 0x2222])
        ctx.set(bus.rready, 0)
        ctx.set(bus.araddr, 0x10)
        ctx.set(bus.arlen, 0)
        ctx.set(bus.arid, 1)
        ctx.set(bus.arvalid, 1)
        await ctx.tick().until(bus.arready)
        ctx.set(bus.araddr, 0x14)
        ctx.set(bus.arid, 2)  # offered at once; taken while beat 1 waits
        await ctx.tick().until(bus.arready & bus.rvalid)
        ctx.set(bus.arvalid, 0)
        await ctx.tick()
        assert (ctx.get(bus.rvalid), ctx.get(bus.rid), ctx.get(bus.rdata)) == (1, 1, 0x1111)
        ctx.set(bus.rready, 1)
        _, _, valid, rid, data = await ctx.tick().sample(bus.rvalid, bus.rid, bus.rdata)
        assert (valid, rid, data) == (1, 1, 0x1111)
        rid, data = await ctx.tick().sample(bus.rid, bus.rdata).until(bus.rvalid)
        assert (rid, data) == (2, 0x2222)
        done.append(True)

    run(bench)
    assert done


def run_bench_ports(testbench):
    dut = Axi4Ram(SIZE, bench_ports=True)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        await testbench(ctx, dut)

    sim.add_testbench(bench)
    sim.run_until(1e-3)


def test_latency_delays_every_burst_and_each_burst_counts_once():
    done = []
    pulses = []

    async def bench(ctx, dut):
        bus = dut.axi
        ctx.set(dut.latency_cycles, 7)
        started = []

        async def count_cycles_to(signal):
            cycles = 0
            while not ctx.get(signal):
                await ctx.tick()
                cycles += 1
            return cycles

        await write_burst(ctx, bus, 0x80, [0xCAFE, 0xBEEF])
        ctx.set(bus.araddr, 0x80)
        ctx.set(bus.arlen, 1)
        ctx.set(bus.arvalid, 1)
        await ctx.tick().until(bus.arready)
        ctx.set(bus.arvalid, 0)
        ctx.set(bus.rready, 1)
        started.append(await count_cycles_to(bus.rvalid))
        assert started == [7 + 1]  # the latency, then the RAM's own clock
        assert ctx.get(bus.rdata) == 0xCAFE
        done.append(True)

    async def watch(ctx, dut):
        before = 0
        async for _, _, count, addr, length in ctx.tick().sample(
            dut.ar_bursts, dut.ar_burst_addr, dut.ar_burst_len
        ):
            if count != before:
                pulses.append(("ar", count - before, addr, length))
            before = count

    dut = Axi4Ram(SIZE, bench_ports=True)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def main(ctx):
        await bench(ctx, dut)

    async def monitor(ctx):
        await watch(ctx, dut)

    sim.add_testbench(main)
    sim.add_process(monitor)
    sim.run_until(1e-4)
    assert done
    assert pulses == [("ar", 1, 0x80, 1)]


@pytest.mark.parametrize(
    ("window", "addr", "expect"),
    [
        ((0x100, 0x104, 1, 0), 0x0FC, RESP_SLVERR),  # the burst's second word is inside
        ((0x100, 0x104, 1, 0), 0x104, RESP_OKAY),  # starts at the window's end
        ((0x100, 0x104, 0, 1), 0x100, RESP_OKAY),  # a write-only window
    ],
)
def test_error_window_answers_slverr_for_overlapping_reads(window, addr, expect):
    done = []

    async def bench(ctx, dut):
        start, end, reads, writes = window
        for name, value in zip(("start", "end", "read", "write"), window, strict=True):
            ctx.set(getattr(dut, f"err0_{name}"), value)
        beats = await read_burst(ctx, dut.axi, addr, 2, random.Random(0))
        assert [resp for _, resp, _ in beats] == [expect] * 2
        done.append(True)

    run_bench_ports(bench)
    assert done


def test_error_window_write_is_dropped():
    done = []

    async def bench(ctx, dut):
        bus = dut.axi
        await write_burst(ctx, bus, 0x200, [0x12345678])
        for name, value in zip(
            ("start", "end", "read", "write"), (0x200, 0x204, 0, 1), strict=True
        ):
            ctx.set(getattr(dut, f"err1_{name}"), value)
        assert (await write_burst(ctx, bus, 0x200, [0xFFFFFFFF]))[1] == RESP_SLVERR
        (beat,) = await read_burst(ctx, bus, 0x200, 1, random.Random(0))
        assert beat[:2] == (0x12345678, RESP_OKAY)
        done.append(True)

    run_bench_ports(bench)
    assert done


# -- bench timing: cocotbext-axi's AxiRam with the bench's per-burst latency ---------------


def run_timeline(testbench, latency: int):
    """Run ``testbench(ctx, dut)`` on a bench-port RAM at ``latency`` clocks per burst."""
    dut = Axi4Ram(SIZE, bench_ports=True)
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def bench(ctx):
        ctx.set(dut.latency_cycles, latency)
        await ctx.tick()  # out of reset: the sinks raise READY on the first clock
        await testbench(ctx, dut)

    sim.add_testbench(bench)
    sim.run_until(1e-4)


def test_bench_latency_overlaps_the_previous_bursts_queued_beats():
    """Two 4-beat reads offered back to back at 20 clocks per burst: the second AR is
    queued at once, and its latency counts from when the first burst's last beat enters
    the two-beat R queue (two clocks before it goes out), as AxiRam's read coroutine
    takes the next burst then: 4 + 20 - 2 clocks between the bursts' first beats."""
    latency, beats = 20, 4
    timeline = {"ar": [], "r": []}

    async def bench(ctx, dut):
        bus = dut.axi
        offered = [0x100, 0x200]
        ctx.set(bus.rready, 1)
        for clock in range(80):
            if offered:
                ctx.set(bus.araddr, offered[0])
                ctx.set(bus.arlen, beats - 1)
                ctx.set(bus.arvalid, 1)
            else:
                ctx.set(bus.arvalid, 0)
            _, _, arvalid, arready, rvalid = await ctx.tick().sample(
                bus.arvalid, bus.arready, bus.rvalid
            )
            if arvalid and arready:
                timeline["ar"].append(clock)
                offered.pop(0)
            if rvalid:
                timeline["r"].append(clock)

    run_timeline(bench, latency)
    first = timeline["ar"][0]
    assert timeline["ar"] == [first, first + 1], "the second AR waits in the queue"
    burst0 = [first + latency + 2 + beat for beat in range(beats)]
    burst1 = [burst0[0] + beats + latency - 2 + beat for beat in range(beats)]
    assert timeline["r"] == burst0 + burst1


def test_bench_write_queues_two_beats_during_the_latency():
    """AW and W offered together at 7 clocks per burst: the W queue takes two beats at
    once, WREADY drops until the latency ends and the write coroutine drains them, the
    rest stream, and B goes out two clocks after the last beat (AxiRam's B source)."""
    latency, words = 7, [0x11, 0x22, 0x33, 0x44]
    timeline = {"aw": [], "w": [], "b": []}

    async def bench(ctx, dut):
        bus = dut.axi
        left = list(words)
        aw_pending = True
        ctx.set(bus.bready, 1)
        for clock in range(40):
            ctx.set(bus.awaddr, 0x300)
            ctx.set(bus.awlen, len(words) - 1)
            ctx.set(bus.awvalid, aw_pending)
            ctx.set(bus.wvalid, bool(left))
            if left:
                ctx.set(bus.wdata, left[0])
                ctx.set(bus.wstrb, 0xF)
                ctx.set(bus.wlast, len(left) == 1)
            _, _, awready, wready, bvalid = await ctx.tick().sample(
                bus.awready, bus.wready, bus.bvalid
            )
            if aw_pending and awready:
                timeline["aw"].append(clock)
                aw_pending = False
            if left and wready:
                timeline["w"].append(clock)
                left.pop(0)
            if bvalid:
                timeline["b"].append(clock)
        ctx.set(bus.awvalid, 0)
        ctx.set(bus.wvalid, 0)
        got = await read_burst(ctx, bus, 0x300, len(words), random.Random(0))
        assert [data for data, _, _ in got] == words

    run_timeline(bench, latency)
    (aw,) = timeline["aw"]
    assert [clock - aw for clock in timeline["w"]] == [0, 1, latency + 2, latency + 3]
    assert [clock - aw for clock in timeline["b"]] == [latency + 5]


def test_bench_counts_back_to_back_bursts_on_both_channels_at_the_take():
    """Single-beat reads and writes offered on every clock at latency 0, and longer ones
    among them: the RAM takes a burst per direction on consecutive clocks, the counters
    count each once, in the clock it is taken (as AxiRam's coroutine takes it), and the
    address and length ports show each in turn. The burst record's reference."""
    lengths = [1, 1, 1, 1, 2, 1, 3, 1, 1, 4, 1, 1]
    offered = {"ar": [], "aw": []}
    addr = {"ar": 0x400, "aw": 0x800}
    for beats in lengths:
        for channel in offered:
            offered[channel].append((addr[channel], beats))
            addr[channel] += 4 * beats
    seen = {"ar": [], "aw": []}  # (address, beats, clock of the count)

    async def bench(ctx, dut):
        bus = dut.axi
        left = {channel: list(bursts) for channel, bursts in offered.items()}
        w_beats = [beat == beats - 1 for _, beats in offered["aw"] for beat in range(beats)]
        ctx.set(bus.rready, 1)
        ctx.set(bus.bready, 1)
        before = {"ar": 0, "aw": 0}
        for clock in range(120):
            for channel in ("ar", "aw"):
                pending = bool(left[channel])
                ctx.set(getattr(bus, f"{channel}valid"), pending)
                if pending:
                    ctx.set(getattr(bus, f"{channel}addr"), left[channel][0][0])
                    ctx.set(getattr(bus, f"{channel}len"), left[channel][0][1] - 1)
            ctx.set(bus.wvalid, bool(w_beats))
            if w_beats:
                ctx.set(bus.wstrb, 0xF)
                ctx.set(bus.wlast, w_beats[0])
            _, _, arready, awready, wready = await ctx.tick().sample(
                bus.arready, bus.awready, bus.wready
            )
            for channel, ready in (("ar", arready), ("aw", awready)):
                if left[channel] and ready:
                    left[channel].pop(0)
            if w_beats and wready:
                w_beats.pop(0)
            for channel in ("ar", "aw"):
                count = ctx.get(getattr(dut, f"{channel}_bursts"))
                assert count - before[channel] in (0, 1), "one take per clock"
                if count != before[channel]:
                    addr = ctx.get(getattr(dut, f"{channel}_burst_addr"))
                    beats = ctx.get(getattr(dut, f"{channel}_burst_len")) + 1
                    seen[channel].append((addr, beats, clock))
                before[channel] = count

    run_timeline(bench, 0)
    for channel in ("ar", "aw"):
        assert [(a, b) for a, b, _ in seen[channel]] == offered[channel], channel
        clocks = [clock for _, _, clock in seen[channel]]
        assert clocks[:4] == list(range(clocks[0], clocks[0] + 4)), (
            f"{channel}: the first single-beat bursts are taken on consecutive clocks"
        )
    assert seen["ar"][0][2] == seen["aw"][0][2], "both directions take in the same clock"


def test_bench_counters_count_beats_and_address_classes_at_the_take():
    """Back-to-back bursts of 1..4 beats on both channels, with address class 0 over some
    of the read bursts and class 1 over some of the write bursts and one read: after every
    clock each direction's burst, beat and per-class counters equal the sums over the
    bursts taken so far (the address and length ports naming the takes), ``took`` says
    whether that clock's edge took one, and ``cycles`` counts the edges."""
    lengths = [1, 3, 1, 1, 2, 4, 1, 1, 2, 1, 1, 4, 1]
    offered = {"ar": [], "aw": []}
    addr = {"ar": 0x400, "aw": 0x800}
    for beats in lengths:
        for channel in offered:
            offered[channel].append((addr[channel], beats))
            addr[channel] += 4 * beats
    classes = [(0x404, 0x420), (0x810, 0x830)]
    reads_in_class1 = 0x800  # a read there too: classes count both directions
    offered["ar"].append((reads_in_class1 + 0x10, 2))
    checked = []

    def expected(taken, address_class, what):
        start, end = address_class
        inside = [(a, b) for a, b in taken if start <= a < end]
        return len(inside) if what == "bursts" else sum(b for _, b in inside)

    async def bench(ctx, dut):
        bus = dut.axi
        for index, (start, end) in enumerate(classes):
            ctx.set(getattr(dut, f"class{index}_start"), start)
            ctx.set(getattr(dut, f"class{index}_end"), end)
        left = {channel: list(bursts) for channel, bursts in offered.items()}
        w_beats = [beat == beats - 1 for _, beats in offered["aw"] for beat in range(beats)]
        ctx.set(bus.rready, 1)
        ctx.set(bus.bready, 1)
        taken = {"ar": [], "aw": []}
        cycles = ctx.get(dut.cycles)
        for _ in range(150):
            for channel in ("ar", "aw"):
                pending = bool(left[channel])
                ctx.set(getattr(bus, f"{channel}valid"), pending)
                if pending:
                    ctx.set(getattr(bus, f"{channel}addr"), left[channel][0][0])
                    ctx.set(getattr(bus, f"{channel}len"), left[channel][0][1] - 1)
            ctx.set(bus.wvalid, bool(w_beats))
            if w_beats:
                ctx.set(bus.wstrb, 0xF)
                ctx.set(bus.wlast, w_beats[0])
            _, _, arready, awready, wready = await ctx.tick().sample(
                bus.arready, bus.awready, bus.wready
            )
            for channel, ready in (("ar", arready), ("aw", awready)):
                if left[channel] and ready:
                    left[channel].pop(0)
            if w_beats and wready:
                w_beats.pop(0)
            cycles += 1
            assert ctx.get(dut.cycles) == cycles, "one cycle per clock edge"
            for channel in ("ar", "aw"):
                count = ctx.get(getattr(dut, f"{channel}_bursts"))
                took = ctx.get(getattr(dut, f"{channel}_took"))
                assert count - len(taken[channel]) == took, f"{channel}: took {took}"
                if took:
                    taken[channel].append(
                        (
                            ctx.get(getattr(dut, f"{channel}_burst_addr")),
                            ctx.get(getattr(dut, f"{channel}_burst_len")) + 1,
                        )
                    )
                assert ctx.get(getattr(dut, f"{channel}_beats")) == sum(
                    b for _, b in taken[channel]
                ), f"{channel} beats"
                for index, address_class in enumerate(classes):
                    for what in ("bursts", "beats"):
                        got = ctx.get(getattr(dut, f"{channel}_class{index}_{what}"))
                        want = expected(taken[channel], address_class, what)
                        assert got == want, f"{channel} class {index} {what}: {got} != {want}"
            checked.append(taken)
        assert taken == offered

    run_timeline(bench, 0)
    assert checked
