"""AxiBurstWriter in Amaranth's simulator against AxiMemory, with a byte-exact memory guard."""

import pytest
from amaranth import *
from amaranth.back import verilog
from mover_runs import check_commands, check_memory, run_writer
from unbuilt import rejected

from macdma.hdl.bus.axi4 import RESP_DECERR, RESP_SLVERR, Axi4WriteSignature
from macdma.hdl.dma.axi_writer import AxiBurstWriter
from macdma.hdl.dma.bursts import plan_bursts

CAPS = [1, 2, 4, 8, 16, 32, 64, 128, 256]


# ---- data correctness ---------------------------------------------------------------------------


@pytest.mark.parametrize("data_width", [32, 64])
def test_every_small_length_at_every_offset(data_width):
    w = data_width // 8
    commands = []
    for length in range(1, 81):
        for offset in range(w):
            # Disjoint windows, so a misdirected byte shows up in the memory guard.
            commands.append((0x400 + len(commands) * 96 + offset, length))
    run = run_writer(
        commands,
        data_width=data_width,
        cap=4,
        latency=2,
        ready_prob=0.7,
        valid_prob=0.7,
        in_valid_prob=0.7,
        done_ready_prob=0.7,
        seed=data_width,
    )
    check_commands(run, cap=4, data_width=data_width)


def test_small_lengths_back_to_back_without_stalls():
    commands = [(0x100 + 0x60 * n + n % 4, n) for n in range(1, 81)]
    run = run_writer(commands, cap=16)
    check_commands(run, cap=16)


@pytest.mark.parametrize("data_width", [32, 64])
def test_large_lengths(data_width):
    commands = []
    base = 0x100
    for length in (1500, 1514, 9000):
        for off in range(0, data_width // 8, 3):
            commands.append((base + off, length))
            base += length + 64
    run = run_writer(
        commands,
        data_width=data_width,
        cap=16,
        latency=3,
        ready_prob=0.8,
        valid_prob=0.8,
        in_valid_prob=0.8,
        seed=7,
    )
    check_commands(run, cap=16, data_width=data_width)


@pytest.mark.parametrize("cap", CAPS)
def test_every_burst_cap(cap):
    """Cap and the 4 KiB rule (checked by the monitor) across two page boundaries."""
    commands = [(0x0FF3, 2100), (0x1F00 + 1, 4500), (0x3FFE, 3)]
    run = run_writer(commands, cap=cap, latency=1, ready_prob=0.8, in_valid_prob=0.9, seed=cap)
    check_commands(run, cap=cap)


def test_page_crossings_with_long_bursts():
    commands = []
    for page, d in enumerate((1, 2, 3, 4, 5, 63, 64, 65)):
        for slot, n in enumerate((2, 8, 70, 300)):
            commands.append((0x1000 * (page + 1) + 0x400 * slot - d, n))
    run = run_writer(commands, cap=256, ready_prob=0.9, valid_prob=0.9, seed=11)
    check_commands(run, cap=256)


def test_zero_length_reports_error_without_bus_access():
    run = run_writer([(0x100, 0), (0x101, 9)], cap=4)
    assert run.done == [1, 0]
    assert run.memory.monitor.for_command(0) == []
    check_memory(run, failed=(0,))


# ---- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("resp", [RESP_SLVERR, RESP_DECERR], ids=["slverr", "decerr"])
@pytest.mark.parametrize("where", ["first", "middle"])
@pytest.mark.parametrize("data_width", [32, 64])
def test_error_then_next_command_succeeds(resp, where, data_width):
    w = data_width // 8
    addr, length, cap = 0x2002, 600, 8
    bad = addr + 5 if where == "first" else addr + 4 * cap * w + 3
    commands = [(addr, length), (0x5001, 300), (0x6003, 41)]
    run = run_writer(
        commands,
        data_width=data_width,
        cap=cap,
        latency=4,
        ready_prob=0.8,
        valid_prob=0.8,
        in_valid_prob=0.8,
        errors=[(bad, bad + 1, resp)],
        seed=17,
    )
    check_commands(run, cap=cap, data_width=data_width, failed=(0,))
    # The failing command stopped early: fewer bursts than planned were issued.
    assert len(run.memory.monitor.for_command(0)) < len(plan_bursts(addr, length, cap, w))


def test_error_with_single_outstanding_burst_drops_the_rest_of_the_input():
    """With one burst in flight the B error is seen before any other AW: almost all input is
    dropped, yet the producer's stream is fully consumed and the next command is clean."""
    commands = [(0x2000, 2000), (0x3001, 77)]
    run = run_writer(
        commands, cap=4, latency=6, errors=[(0x2000, 0x2001, RESP_SLVERR)], max_outstanding=1
    )
    check_commands(run, cap=4, failed=(0,))
    assert run.memory.monitor.for_command(0) == [(0x2000, 4)]


def test_slave_that_waits_for_wvalid_before_awready():
    """AXI4 lets a slave hold AWREADY until WVALID: the writer must offer W without AWREADY."""
    commands = [(0x1002, 100), (0x2000, 64), (0x3003, 5)]
    dut_run = run_writer(commands, cap=4, latency=2, ready_prob=0.8, aw_waits_for_w=True)
    check_commands(dut_run, cap=4)


# ---- throughput ---------------------------------------------------------------------------------


def writer_beats_per_cycle(cap, latency, length=1500, data_width=32, max_outstanding=4):
    run = run_writer(
        [(0x1000, length)],
        data_width=data_width,
        cap=cap,
        latency=latency,
        max_outstanding=max_outstanding,
    )
    check_commands(run, cap=cap, data_width=data_width)
    beats = len(run.input_cycles)
    return beats / (run.input_cycles[-1] - run.accepted[0]), beats / (
        run.done_cycles[0] - run.accepted[0]
    )


def test_throughput_sustains_one_beat_per_cycle(record_property):
    data_rate, command_rate = writer_beats_per_cycle(cap=16, latency=0)
    record_property("writer_beats_per_cycle_burst16_lat0", data_rate)
    # measured 0.995 data / 0.987 command beats per cycle over a 1500-byte command
    assert data_rate >= 0.95 and command_rate >= 0.95


def test_throughput_short_bursts_with_latency(record_property):
    data_rate, command_rate = writer_beats_per_cycle(cap=2, latency=8)
    record_property("writer_beats_per_cycle_burst2_lat8", data_rate)
    assert data_rate >= 0.6
    slow, _ = writer_beats_per_cycle(cap=2, latency=8, max_outstanding=1)
    assert slow < data_rate / 2


# ---- elaboration --------------------------------------------------------------------------------


@pytest.mark.parametrize("data_width", [32, 64])
def test_converts_to_verilog(data_width):
    dut = AxiBurstWriter(data_width=data_width, addr_width=40)
    text = verilog.convert(dut, name="axi_burst_writer")
    assert "axi__awvalid" in text and "done__valid" in text


def test_port_members():
    dut = AxiBurstWriter()
    Fragment.get(dut, None)  # elaborates it, so it is not reported as unused
    assert set(dut.signature.members) == {"cmd", "burst_beats", "i", "done", "axi"}
    assert list(dut.axi.signature.members) == list(Axi4WriteSignature().members)


@pytest.mark.parametrize(
    "kwargs, bad",
    [
        ({"data_width": 16}, "16"),
        ({"addr_width": 70}, "70"),
        ({"max_outstanding": 17}, "17"),
    ],
)
def test_rejects_bad_parameters(kwargs, bad):
    with rejected(ValueError, bad):
        AxiBurstWriter(**kwargs)
