"""The AXI movers' runs in Amaranth's simulator: one reader or writer against an AXI memory
model, the bus traffic recorded, and the checks of one command's bursts; shared by each
mover's tests and their property tests."""

from __future__ import annotations

import random
from dataclasses import dataclass

from amaranth import *
from amaranth.sim import Simulator
from axi_model import AxiMemory, StreamSink, StreamSource

from macdma.hdl.dma.axi_reader import AxiBurstReader
from macdma.hdl.dma.axi_writer import AxiBurstWriter
from macdma.hdl.dma.bursts import plan_bursts, transfer_beats


@dataclass
class ReadRun:
    commands: list
    outputs: list  # per command: list of (cycle, beat dict)
    accepted: list  # cycle each command was accepted
    memory: AxiMemory
    cycles: int


def run_reader(
    commands,
    *,
    data_width=32,
    cap=16,
    latency=0,
    ready_prob=1.0,
    valid_prob=1.0,
    out_ready_prob=1.0,
    cmd_valid_prob=1.0,
    errors=(),
    seed=0,
    max_outstanding=4,
):
    dut = AxiBurstReader(data_width=data_width, max_outstanding=max_outstanding)
    mem = AxiMemory(
        dut.axi,
        data_width=data_width,
        latency=latency,
        ready_prob=ready_prob,
        valid_prob=valid_prob,
        errors=errors,
        seed=seed,
    )
    mem.mem[:] = random.Random(seed).randbytes(len(mem.mem))
    source = StreamSource(dut.cmd, valid_prob=cmd_valid_prob, seed=seed + 1)
    for addr, length in commands:
        source.send({"addr": addr, "length": length})
    sink = StreamSink(
        dut.o,
        {name: getattr(dut.o.p, name) for name in ("data", "count", "last", "error")},
        ready_prob=out_ready_prob,
        seed=seed + 2,
    )
    mem.monitor.cap = cap
    mem.monitor.windows = list(commands)
    mem.monitor.command_of = lambda: len(source.accepted) - 1

    # Generous bound: every beat could be slowed by every random stall, plus per-burst latency.
    w = data_width // 8
    beats = sum(transfer_beats(a, max(n, 1), w) + 2 for a, n in commands)
    bursts = sum(len(plan_bursts(a, max(n, 1), cap, w)) for a, n in commands)
    slowest = min(ready_prob, valid_prob, out_ready_prob, cmd_valid_prob)
    limit = int(beats * 4 / slowest) + (len(commands) + bursts) * (latency + 20) * 4 + 200
    elapsed = 0

    async def testbench(ctx):
        nonlocal elapsed
        ctx.set(dut.burst_beats, cap)
        while sink.ends < len(commands):
            await ctx.tick()
            elapsed += 1
            assert elapsed < limit, f"reader hung: {sink.ends}/{len(commands)} commands done"
        # A few idle cycles so a stray AR or extra output beat would still be caught.
        for _ in range(8):
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(mem.run)
    sim.add_process(source.run)
    sim.add_process(sink.run)
    sim.add_testbench(testbench)
    sim.run()

    outputs = [[] for _ in commands]
    index = 0
    for cycle, beat in sink.beats:
        assert index < len(commands), "output beat after the last command"
        outputs[index].append((cycle, beat))
        index += beat["last"]
    return ReadRun(list(commands), outputs, source.accepted, mem, elapsed)


def check_command(run, k, *, cap, data_width=32):
    """Byte-exact packed output and the exact planned bursts for a successful command."""
    w = data_width // 8
    addr, length = run.commands[k]
    beats = [b for _, b in run.outputs[k]]
    assert beats, f"command {k} produced no output"
    got = bytearray()
    for i, beat in enumerate(beats):
        final = i == len(beats) - 1
        assert beat["error"] == 0, f"command {k} ({addr:#x}+{length}) failed unexpectedly"
        assert beat["last"] == final
        assert beat["count"] == w or (final and 1 <= beat["count"] <= w), beat
        assert beat["data"] >> (8 * beat["count"]) == 0, "lanes above count must be zero"
        got += beat["data"].to_bytes(w, "little")[: beat["count"]]
    assert got == run.memory.mem[addr : addr + length], f"command {k}: {addr:#x}+{length}"
    assert run.memory.monitor.for_command(k) == plan_bursts(addr, length, cap, w)


@dataclass
class WriteRun:
    commands: list  # (addr, bytes)
    done: list  # error flag per command
    done_cycles: list
    accepted: list  # cycle each command was accepted
    input_cycles: list  # cycle of every input beat handshake
    initial: bytes
    memory: AxiMemory
    cycles: int


def packed_beats(payload, w):
    """The writer's input: bytes from lane 0, full beats except the last."""
    chunks = [payload[i : i + w] for i in range(0, len(payload), w)]
    return [
        {
            "data": int.from_bytes(chunk, "little"),
            "count": len(chunk),
            "last": int(i == len(chunks) - 1),
        }
        for i, chunk in enumerate(chunks)
    ]


def run_writer(
    commands,
    *,
    data_width=32,
    cap=16,
    latency=0,
    ready_prob=1.0,
    valid_prob=1.0,
    in_valid_prob=1.0,
    done_ready_prob=1.0,
    errors=(),
    seed=0,
    max_outstanding=4,
    aw_waits_for_w=False,
):
    """``commands`` is a list of ``(addr, length)``; the payloads are random bytes."""
    w = data_width // 8
    rng = random.Random(seed)
    dut = AxiBurstWriter(data_width=data_width, max_outstanding=max_outstanding)
    mem = AxiMemory(
        dut.axi,
        data_width=data_width,
        latency=latency,
        ready_prob=ready_prob,
        valid_prob=valid_prob,
        errors=errors,
        seed=seed,
        aw_waits_for_w=aw_waits_for_w,
    )
    mem.mem[:] = rng.randbytes(len(mem.mem))
    initial = bytes(mem.mem)
    cmd = StreamSource(dut.cmd, seed=seed + 1)
    data_in = StreamSource(dut.i, valid_prob=in_valid_prob, seed=seed + 2)
    with_data = []
    for addr, length in commands:
        payload = rng.randbytes(length)
        with_data.append((addr, payload))
        cmd.send({"addr": addr, "length": length})
        for beat in packed_beats(payload, w):
            data_in.send(beat)
    done = StreamSink(dut.done, {"error": dut.done.p.error}, ready_prob=done_ready_prob, seed=3)
    mem.monitor.cap = cap
    mem.monitor.windows = list(commands)
    mem.monitor.command_of = lambda: len(cmd.accepted) - 1

    beats = sum(transfer_beats(a, max(n, 1), w) + 2 for a, n in commands)
    bursts = sum(len(plan_bursts(a, max(n, 1), cap, w)) for a, n in commands)
    slowest = min(ready_prob, valid_prob, in_valid_prob, done_ready_prob)
    limit = int(beats * 4 / slowest) + (len(commands) + bursts) * (latency + 20) * 4 + 200
    elapsed = 0

    async def testbench(ctx):
        nonlocal elapsed
        ctx.set(dut.burst_beats, cap)
        while done.ends < len(commands):
            await ctx.tick()
            elapsed += 1
            assert elapsed < limit, f"writer hung: {done.ends}/{len(commands)} commands done"
        for _ in range(8):
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_process(mem.run)
    sim.add_process(cmd.run)
    sim.add_process(data_in.run)
    sim.add_process(done.run)
    sim.add_testbench(testbench)
    sim.run()

    assert len(done.beats) == len(commands), "exactly one done per command"
    assert not data_in.queue, "the writer left input beats unconsumed"
    return WriteRun(
        with_data,
        [beat["error"] for _, beat in done.beats],
        [cycle for cycle, _ in done.beats],
        cmd.accepted,
        data_in.accepted,
        initial,
        mem,
        elapsed,
    )


def check_memory(run, *, failed=()):
    """Written bytes exact, every other byte untouched; a failed command may leave its own
    window partly written (each byte old or new), never anything outside it."""
    expected = bytearray(run.initial)
    for k, (addr, payload) in enumerate(run.commands):
        if k not in failed:
            expected[addr : addr + len(payload)] = payload
    got = run.memory.mem
    for k in failed:
        addr, payload = run.commands[k]
        for i, byte in enumerate(payload):
            assert got[addr + i] in (byte, run.initial[addr + i]), f"command {k} byte {i}"
            expected[addr + i] = got[addr + i]
    if got != expected:
        first = next(i for i in range(len(got)) if got[i] != expected[i])
        raise AssertionError(f"memory differs first at {first:#x}")


def check_commands(run, *, cap, data_width=32, failed=()):
    w = data_width // 8
    assert run.done == [int(k in failed) for k in range(len(run.commands))]
    check_memory(run, failed=failed)
    for k, (addr, payload) in enumerate(run.commands):
        bursts = [b for b in run.memory.monitor.bursts if b.command == k]
        plan = plan_bursts(addr, len(payload), cap, w)
        if k in failed:
            errors = [b.resp_cycle for b in bursts if b.resp_cycle is not None]
            assert errors, "the injected error was never answered"
            assert all(b.valid_cycle <= min(errors) for b in bursts), "AW issued after the error"
            assert [(b.addr, b.beats) for b in bursts] == plan[: len(bursts)]
        else:
            assert [(b.addr, b.beats) for b in bursts] == plan
