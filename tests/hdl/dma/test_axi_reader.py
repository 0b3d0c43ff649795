"""AxiBurstReader (and the burst planner it uses) in Amaranth's simulator against AxiMemory."""

import random

import pytest
from amaranth import *
from amaranth.back import verilog
from amaranth.sim import Simulator
from mover_runs import check_command, run_reader
from unbuilt import rejected

from macdma.hdl.bus.axi4 import (
    RESP_DECERR,
    RESP_SLVERR,
    Axi4ReadSignature,
    Axi4Signature,
    Axi4WriteSignature,
)
from macdma.hdl.dma.axi_reader import AxiBurstReader
from macdma.hdl.dma.bursts import next_burst_beats, plan_bursts, transfer_beats

CAPS = [1, 2, 4, 8, 16, 32, 64, 128, 256]


def check_error_command(run, k, data_width=32):
    """Error ends the output with one data-less beat; nothing is requested after the error."""
    w = data_width // 8
    addr, length = run.commands[k]
    beats = [b for _, b in run.outputs[k]]
    *good, end = beats
    assert end == {"data": 0, "count": 0, "last": 1, "error": 1}
    got = bytearray()
    for beat in good:
        assert beat["count"] == w and not beat["last"] and not beat["error"]
        got += beat["data"].to_bytes(w, "little")
    assert len(got) < length
    assert got == run.memory.mem[addr : addr + len(got)], "data before the error must be right"
    bursts = [b for b in run.memory.monitor.bursts if b.command == k]
    bad = [b for b in bursts if b.resp_cycle is not None]
    assert bad, "the injected error was never answered"
    first_error = min(b.resp_cycle for b in bad)
    assert all(b.valid_cycle <= first_error for b in bursts), "AR issued after the error"
    plan = plan_bursts(addr, length, run.memory.monitor.cap, w)
    assert [(b.addr, b.beats) for b in bursts] == plan[: len(bursts)]


# ---- burst planner ------------------------------------------------------------------------


@pytest.mark.parametrize("beat_bytes", [4, 8])
def test_plan_bursts_rules(beat_bytes):
    rng = random.Random(beat_bytes)
    for _ in range(400):
        addr = rng.randrange(0, 1 << 20)
        length = rng.randrange(1, 1 << 16)
        cap = rng.choice(CAPS)
        plan = plan_bursts(addr, length, cap, beat_bytes)
        assert plan[0][0] == addr - addr % beat_bytes
        assert sum(n for _, n in plan) == transfer_beats(addr, length, beat_bytes)
        for (a, n), following in zip(plan, plan[1:] + [None], strict=True):
            assert 1 <= n <= cap
            assert a // 4096 == (a + n * beat_bytes - 1) // 4096
            if following is not None:
                assert following[0] == a + n * beat_bytes
                # Greedy: a burst is only short when the cap or a page boundary ends it.
                assert n == cap or (a + n * beat_bytes) % 4096 == 0


def test_next_burst_beats_matches_plan():
    addr, beats_left, cap = Signal(32), Signal(15), Signal(9)
    result = Signal(9)
    m = Module()
    m.d.comb += result.eq(next_burst_beats(addr, beats_left, cap, 4))
    cases = [(0xFFC, 5, 16), (0x1000, 3000, 256), (0xF00, 100, 0), (0xF00, 100, 300)]
    rng = random.Random(5)
    cases += [
        (rng.randrange(1 << 16) & ~3, rng.randrange(1, 16000), rng.choice(CAPS)) for _ in range(200)
    ]

    async def testbench(ctx):
        for a, n, c in cases:
            ctx.set(addr, a)
            ctx.set(beats_left, n)
            ctx.set(cap, c)
            expected = plan_bursts(a, n * 4, c, 4)[0][1]
            assert ctx.get(result) == expected, (hex(a), n, c)

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()


# ---- reader: data correctness ---------------------------------------------------------------


@pytest.mark.parametrize("data_width", [32, 64])
def test_every_small_length_at_every_offset(data_width):
    """Lengths 1..80 at start offsets 0..W-1 under random back-pressure everywhere."""
    w = data_width // 8
    commands = []
    rng = random.Random(data_width)
    for length in range(1, 81):
        for offset in range(w):
            commands.append((rng.randrange(0, 0xF000 // 64) * 64 + offset, length))
    run = run_reader(
        commands,
        data_width=data_width,
        cap=4,
        latency=2,
        ready_prob=0.7,
        valid_prob=0.7,
        out_ready_prob=0.7,
        cmd_valid_prob=0.8,
        seed=data_width,
    )
    for k in range(len(commands)):
        check_command(run, k, cap=4, data_width=data_width)


def test_small_lengths_back_to_back_without_stalls():
    commands = [(0x100 + 0x40 * n + n % 4, n) for n in range(1, 81)]
    run = run_reader(commands, cap=16)
    for k in range(len(commands)):
        check_command(run, k, cap=16)


@pytest.mark.parametrize("data_width", [32, 64])
def test_large_lengths(data_width):
    commands = [
        (0x0000 + off, length)
        for length in (1500, 1514, 9000)
        for off in range(0, data_width // 8, 3)
    ]
    run = run_reader(
        commands,
        data_width=data_width,
        cap=16,
        latency=3,
        ready_prob=0.8,
        valid_prob=0.8,
        out_ready_prob=0.8,
        seed=7,
    )
    for k in range(len(commands)):
        check_command(run, k, cap=16, data_width=data_width)


@pytest.mark.parametrize("cap", CAPS)
def test_every_burst_cap(cap):
    """Cap and the 4 KiB rule (checked by the monitor) across two page boundaries."""
    commands = [(0x0FF3, 2100), (0x1F00 + 1, 4500), (0x3FFE, 3)]
    run = run_reader(commands, cap=cap, latency=1, ready_prob=0.8, out_ready_prob=0.9, seed=cap)
    for k in range(len(commands)):
        check_command(run, k, cap=cap)


def test_page_crossings_with_long_bursts():
    commands = [(0x1000 - d, n) for d in (1, 2, 3, 4, 5, 63, 64, 65) for n in (2, 8, 70, 300)]
    run = run_reader(commands, cap=256, ready_prob=0.9, valid_prob=0.9, seed=11)
    for k in range(len(commands)):
        check_command(run, k, cap=256)


def test_output_backpressure_stops_the_bus():
    """With the consumer mostly stalled, nothing is lost and R beats are held, not dropped."""
    commands = [(0x203, 777), (0x1001, 64)]
    run = run_reader(commands, cap=8, out_ready_prob=0.1, seed=3)
    for k in range(len(commands)):
        check_command(run, k, cap=8)


def test_zero_length_answers_error_without_bus_access():
    run = run_reader([(0x100, 0), (0x101, 9)], cap=4)
    assert [b for _, b in run.outputs[0]] == [{"data": 0, "count": 0, "last": 1, "error": 1}]
    assert run.memory.monitor.for_command(0) == []
    check_command(run, 1, cap=4)


# ---- reader: errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("resp", [RESP_SLVERR, RESP_DECERR], ids=["slverr", "decerr"])
@pytest.mark.parametrize("where", ["first", "middle"])
@pytest.mark.parametrize("data_width", [32, 64])
def test_error_then_next_command_succeeds(resp, where, data_width):
    w = data_width // 8
    addr, length, cap = 0x2002, 600, 8
    bad = addr + 5 if where == "first" else addr + 4 * cap * w + 3
    commands = [(addr, length), (0x5001, 300), (0x2002, 40)]
    run = run_reader(
        commands,
        data_width=data_width,
        cap=cap,
        latency=4,
        ready_prob=0.8,
        valid_prob=0.8,
        out_ready_prob=0.8,
        errors=[(bad, bad + 1, resp)],
        seed=17,
    )
    check_error_command(run, 0, data_width)
    check_command(run, 1, cap=cap, data_width=data_width)
    # The same region again still fails: the error is the memory's, not a stuck reader.
    check_error_command(run, 2, data_width) if where == "first" else check_command(
        run, 2, cap=cap, data_width=data_width
    )


# ---- reader: throughput -----------------------------------------------------------------------


def reader_beats_per_cycle(cap, latency, length=1500, data_width=32):
    run = run_reader([(0x1000, length)], data_width=data_width, cap=cap, latency=latency)
    check_command(run, 0, cap=cap, data_width=data_width)
    beats = run.outputs[0]
    return len(beats) / (beats[-1][0] - run.accepted[0])


def test_throughput_sustains_one_beat_per_cycle(record_property):
    rate = reader_beats_per_cycle(cap=16, latency=0)
    record_property("reader_beats_per_cycle_burst16_lat0", rate)
    assert rate >= 0.95  # measured 0.992 over a 1500-byte command


def test_throughput_short_bursts_with_latency(record_property):
    """Four outstanding 2-beat bursts against an 8-cycle latency: measured and bounded."""
    rate = reader_beats_per_cycle(cap=2, latency=8)
    record_property("reader_beats_per_cycle_burst2_lat8", rate)
    # 4 bursts x 2 beats per (latency + AR turnaround) round trip.
    assert rate >= 0.6


def test_single_outstanding_is_slower_with_latency():
    fast = reader_beats_per_cycle(cap=2, latency=8)
    run = run_reader([(0x1000, 1500)], cap=2, latency=8, max_outstanding=1)
    check_command(run, 0, cap=2)
    slow = len(run.outputs[0]) / (run.outputs[0][-1][0] - run.accepted[0])
    assert slow < fast / 2


# ---- elaboration ------------------------------------------------------------------------------


@pytest.mark.parametrize("data_width", [32, 64])
def test_converts_to_verilog(data_width):
    dut = AxiBurstReader(data_width=data_width, addr_width=40)
    text = verilog.convert(dut, name="axi_burst_reader")
    assert "axi__arvalid" in text and "o__valid" in text


def test_port_members():
    dut = AxiBurstReader()
    Fragment.get(dut, None)  # elaborates it, so it is not reported as unused
    assert set(dut.signature.members) == {"cmd", "burst_beats", "o", "axi"}
    assert list(dut.axi.signature.members) == list(Axi4ReadSignature().members)
    full = list(Axi4Signature().members)
    assert full == list(Axi4WriteSignature().members) + list(Axi4ReadSignature().members)
    assert full[:9] == [
        "awid", "awaddr", "awlen", "awsize", "awburst", "awlock", "awcache", "awprot", "awvalid",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"data_width": 16}, "16"),
        ({"data_width": 128}, "128"),
        ({"addr_width": 11}, "11"),
        ({"addr_width": 65}, "65"),
        ({"max_outstanding": 0}, "0"),
    ],
)
def test_rejects_bad_parameters(kwargs, bad):
    with rejected(ValueError, bad):
        AxiBurstReader(**kwargs)
    if "max_outstanding" not in kwargs:
        with pytest.raises(ValueError, match=bad):
            Axi4Signature(**kwargs)
