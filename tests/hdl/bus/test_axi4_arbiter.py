"""Axi4ReadArbiter / Axi4WriteArbiter in Amaranth's simulator.

Real AxiBurstReader / AxiBurstWriter instances sit behind the arbiter; the arbiter's output
drives either :class:`axi_model.AxiMemory` (in-order slave; an :func:`id_tracker` process adds
the RID/BID it does not drive) or :class:`ReorderMemory` (returns R beats of different IDs
interleaved per beat and B responses of different IDs out of order). Monitors check round-robin
fairness, zero-latency pass-through, ID composition and that W follows the AW order.
"""

import random
from collections import deque
from dataclasses import dataclass, field

import pytest
from amaranth import *
from amaranth.back import verilog
from amaranth.lib import wiring
from amaranth.sim import Simulator
from axi_model import AxiMemory, StreamSink, StreamSource
from unbuilt import elaborate, rejected

from macdma.hdl.bus.axi4 import (
    BURST_INCR,
    RESP_DECERR,
    RESP_OKAY,
    RESP_SLVERR,
    Axi4Signature,
    Axi4WriteSignature,
    connect_read_write,
)
from macdma.hdl.bus.axi4_arbiter import Axi4ReadArbiter, Axi4WriteArbiter
from macdma.hdl.dma.axi_reader import AxiBurstReader
from macdma.hdl.dma.axi_writer import AxiBurstWriter

MEM_SIZE = 1 << 16
REGION = 0x5000  # bytes of memory owned by each master


# ---- slave-side helpers -------------------------------------------------------------------------


def id_tracker(axi):
    """AxiMemory answers in order but leaves RID/BID at 0: drive them from the accepted IDs."""
    has_read, has_write = hasattr(axi, "arvalid"), hasattr(axi, "awvalid")

    async def run(ctx):
        r_ids, w_ids, b_ids = deque(), deque(), deque()
        sigs = []
        if has_read:
            sigs += [axi.arvalid, axi.arready, axi.arid, axi.rvalid, axi.rready, axi.rlast]
        if has_write:
            sigs += [axi.awvalid, axi.awready, axi.awid, axi.wvalid, axi.wready, axi.wlast]
            sigs += [axi.bvalid, axi.bready]
        while True:
            _, _, *v = await ctx.tick().sample(*sigs)
            if has_read:
                arvalid, arready, arid, rvalid, rready, rlast, *v = v
                if arvalid and arready:
                    r_ids.append(arid)
                if rvalid and rready and rlast:
                    r_ids.popleft()
                if r_ids:
                    ctx.set(axi.rid, r_ids[0])
            if has_write:
                awvalid, awready, awid, wvalid, wready, wlast, bvalid, bready = v
                if awvalid and awready:
                    w_ids.append(awid)
                if wvalid and wready and wlast:
                    b_ids.append(w_ids.popleft())
                if bvalid and bready:
                    b_ids.popleft()
                if b_ids:
                    ctx.set(axi.bid, b_ids[0])

    return run


class ReorderMemory:
    """AXI4 slave that reorders across IDs: every R beat and every B response is picked at
    random among the IDs that have one ready (per ID strictly in order, as AXI requires), so R
    bursts of different IDs interleave beat by beat. W follows AW order. ``errors`` as in
    AxiMemory (reads per beat, writes per burst; a bad write burst writes nothing).
    ``w_first``: also accept W beats before their AW (buffered; legal AXI4 slave behaviour),
    so whole W bursts can complete before the slave takes the address."""

    def __init__(self, axi, *, data_width, latency=0, ready_prob=1.0, valid_prob=1.0,
                 errors=(), seed=0, w_first=False, aw_ready_prob=None):  # fmt: skip
        self.axi = axi
        self.w = data_width // 8
        self.mem = bytearray(MEM_SIZE)
        self.latency = latency
        self.ready_prob = ready_prob
        self.valid_prob = valid_prob
        self.errors = list(errors)
        self.rng = random.Random(seed)
        self.w_first = w_first
        self.aw_ready_prob = ready_prob if aw_ready_prob is None else aw_ready_prob
        self.w_early = 0  # W beats accepted while no AW was waiting for them
        self.switches = 0  # R beats whose ID differs from the previous R beat's ID

    def _resp(self, addr, nbytes):
        for lo, hi, resp in self.errors:
            if addr < hi and lo < addr + nbytes:
                return resp
        return RESP_OKAY

    def _p(self, prob):
        return prob >= 1.0 or self.rng.random() < prob

    async def run(self, ctx):
        axi, w = self.axi, self.w
        has_read, has_write = hasattr(axi, "arvalid"), hasattr(axi, "awvalid")
        sigs = []
        if has_read:
            sigs += [axi.arvalid, axi.arid, axi.araddr, axi.arlen, axi.rready]
        if has_write:
            sigs += [axi.awvalid, axi.awid, axi.awaddr, axi.awlen]
            sigs += [axi.wvalid, axi.wdata, axi.wstrb, axi.wlast, axi.bready]
        reads = {}  # id -> deque([ready_cycle, addr, beats, index])
        aw = deque()  # [id, addr, beats, index]
        w_buf = deque()  # (wdata, wstrb, wlast) accepted ahead of their AW
        bs = {}  # id -> deque([ready_cycle, resp])
        arready = awready = wready = 0
        r_off = b_off = None  # ID of the R beat / B response on offer
        last_rid = None
        cycle = 0
        while True:
            _, _, *v = await ctx.tick().sample(*sigs)
            cycle += 1
            if has_read:
                arvalid, arid, araddr, arlen, rready, *v = v
                if arvalid and arready:
                    q = reads.setdefault(arid, deque())
                    q.append([cycle + self.latency, araddr, arlen + 1, 0])
                if r_off is not None and rready:
                    head = reads[r_off][0]
                    head[3] += 1
                    if head[3] == head[2]:
                        reads[r_off].popleft()
                    r_off = None
                arready = int(self._p(self.ready_prob))
                ctx.set(axi.arready, arready)
                if r_off is None:
                    ready = [i for i, q in reads.items() if q and q[0][0] <= cycle]
                    if ready and self._p(self.valid_prob):
                        r_off = self.rng.choice(ready)
                        self.switches += last_rid is not None and r_off != last_rid
                        last_rid = r_off
                        _, addr, beats, index = reads[r_off][0]
                        a = addr + index * w
                        ctx.set(axi.rid, r_off)
                        ctx.set(axi.rdata, int.from_bytes(self.mem[a : a + w], "little"))
                        ctx.set(axi.rresp, self._resp(a, w))
                        ctx.set(axi.rlast, index == beats - 1)
                ctx.set(axi.rvalid, r_off is not None)
            if has_write:
                awvalid, awid, awaddr, awlen, wvalid, wdata, wstrb, wlast, bready = v
                if awvalid and awready:
                    aw.append([awid, awaddr, awlen + 1, 0])
                if wvalid and wready:
                    self.w_early += not aw
                    w_buf.append((wdata, wstrb, wlast))
                while aw and w_buf:
                    wdata, wstrb, wlast = w_buf.popleft()
                    head = aw[0]
                    bid, addr, beats, index = head
                    assert wlast == (index == beats - 1), f"WLAST {wlast} on beat {index}"
                    a = addr + index * w
                    if self._resp(addr, beats * w) == RESP_OKAY:
                        for lane in range(w):
                            if wstrb >> lane & 1:
                                self.mem[a + lane] = wdata >> (8 * lane) & 0xFF
                    head[3] += 1
                    if head[3] == beats:
                        aw.popleft()
                        resp = self._resp(addr, beats * w)
                        bs.setdefault(bid, deque()).append([cycle + self.latency, resp])
                if b_off is not None and bready:
                    bs[b_off].popleft()
                    b_off = None
                awready = int(self._p(self.aw_ready_prob))
                room = len(w_buf) < 16 if self.w_first else bool(aw)
                wready = int(room and self._p(self.ready_prob))
                ctx.set(axi.awready, awready)
                ctx.set(axi.wready, wready)
                if b_off is None:
                    ready = [i for i, q in bs.items() if q and q[0][0] <= cycle]
                    if ready and self._p(self.valid_prob):
                        b_off = self.rng.choice(ready)
                        ctx.set(axi.bid, b_off)
                        ctx.set(axi.bresp, bs[b_off][0][1])
                ctx.set(axi.bvalid, b_off is not None)


# ---- arbiter-side monitors ----------------------------------------------------------------------


@dataclass
class ArbiterLog:
    grants: list = field(default_factory=list)  # master index of every address handshake
    contended: int = 0  # grants made while another master was also requesting
    aw_order: list = field(default_factory=list)  # masters in output AW order
    w_order: list = field(default_factory=list)  # master of every output W burst (at WLAST)


def address_monitor(arb, kind, log, *, passthrough):
    """Round-robin and ID checks on the AR or AW channel; ``passthrough``: a request from any
    master shows on the output in the same cycle (no added latency)."""
    n, id_in = arb.n, arb.id_width_in
    o = arb.o
    ins = arb.inputs

    def sig(bus, name):
        return getattr(bus, kind + name)

    async def run(ctx):
        waited = [0] * n
        sigs = [sig(o, "valid"), sig(o, "ready"), sig(o, "id"), sig(o, "addr")]
        for inp in ins:
            sigs += [sig(inp, "valid"), sig(inp, "ready"), sig(inp, "id"), sig(inp, "addr")]
        while True:
            _, _, ovalid, oready, oid, oaddr, *v = await ctx.tick().sample(*sigs)
            ivalid = v[0::4]
            iready = v[1::4]
            if passthrough:
                assert ovalid or not any(ivalid), "a request was not passed through at once"
            if ovalid and oready:
                k = oid >> id_in
                assert k < n and ivalid[k] and iready[k], f"{kind} grant to idle master {k}"
                assert oid & ((1 << id_in) - 1) == v[4 * k + 2], f"{kind}id lower bits"
                assert oaddr == v[4 * k + 3], f"{kind}addr of master {k}"
                assert sum(iready[j] and ivalid[j] for j in range(n)) == 1
                log.grants.append(k)
                if kind == "aw":
                    log.aw_order.append(k)
                others = [j for j in range(n) if j != k and ivalid[j]]
                log.contended += bool(others)
                for j in others:
                    waited[j] += 1
                    assert waited[j] <= n - 1, f"master {j} passed over {waited[j]} times"
                waited[k] = 0
            else:
                assert not any(ivalid[j] and iready[j] for j in range(n)), "phantom handshake"

    return run


def w_monitor(arb, log):
    """Every output W beat comes from exactly one input handshake; record each burst's master."""
    o, ins = arb.o, arb.inputs

    async def run(ctx):
        sigs = [o.wvalid, o.wready, o.wlast, o.wdata]
        for inp in ins:
            sigs += [inp.wvalid, inp.wready, inp.wdata]
        burst_src = None
        while True:
            _, _, ovalid, oready, olast, odata, *v = await ctx.tick().sample(*sigs)
            src = [j for j in range(len(ins)) if v[3 * j] and v[3 * j + 1]]
            if ovalid and oready:
                assert len(src) == 1 and v[3 * src[0] + 2] == odata, f"W source {src}"
                assert burst_src in (None, src[0]), "a W burst mixes masters"
                burst_src = src[0]
                if olast:
                    log.w_order.append(burst_src)
                    burst_src = None
            else:
                assert not src, "W accepted from a master but not forwarded"

    return run


def simulate(top, processes, testbench_done, limit):
    elapsed = 0

    async def testbench(ctx):
        nonlocal elapsed
        while not testbench_done():
            await ctx.tick()
            elapsed += 1
            assert elapsed < limit, "arbiter system hung"
        for _ in range(10):
            await ctx.tick()

    sim = Simulator(top)
    sim.add_clock(1e-8)
    for process in processes:
        sim.add_process(process)
    sim.add_testbench(testbench)
    sim.run()
    return elapsed


def make_slave(axi, slave, **kw):
    if slave == "memory":
        mem = AxiMemory(axi, size=MEM_SIZE, **kw)
        return mem, [mem.run, id_tracker(axi)]
    mem = ReorderMemory(axi, **kw)
    return mem, [mem.run]


def random_commands(rng, n, count, w, *, max_len=700):
    """``count`` commands per master inside its own REGION; disjoint within the region too."""
    per_master = []
    for k in range(n):
        cmds, cursor = [], 0x100 + k * REGION
        for _ in range(count):
            length = rng.randint(1, max_len)
            addr = cursor + rng.randrange(w)
            cmds.append((addr, length))
            cursor = (addr + length + 2 * w + 31) // 32 * 32
        assert cursor <= 0x100 + (k + 1) * REGION
        per_master.append(cmds)
    return per_master


# ---- read system --------------------------------------------------------------------------------


class ReadSystem(Elaboratable):
    def __init__(self, n, data_width, max_outstanding):
        self.arb = Axi4ReadArbiter(n, data_width=data_width)
        self.movers = [
            AxiBurstReader(data_width, max_outstanding=max_outstanding) for _ in range(n)
        ]

    def elaborate(self, platform):
        m = Module()
        m.submodules.arb = self.arb
        for k, mover in enumerate(self.movers):
            m.submodules[f"reader{k}"] = mover
            wiring.connect(m, mover.axi, self.arb.inputs[k])
        return m


def run_reads(
    commands, *, n=2, data_width=32, cap=8, slave="memory", out_ready_prob=1.0,
    max_outstanding=4, seed=0, **slave_kw,
):  # fmt: skip
    """``commands[k]`` is the list of ``(addr, length)`` read by master k. Returns the output
    beats per master per command, the arbiter log and the slave."""
    top = ReadSystem(n, data_width, max_outstanding)
    arb = top.arb
    mem, procs = make_slave(arb.o, slave, data_width=data_width, seed=seed, **slave_kw)
    mem.mem[:] = random.Random(seed).randbytes(MEM_SIZE)
    log = ArbiterLog()
    procs.append(address_monitor(arb, "ar", log, passthrough=True))
    sinks = []
    for k, mover in enumerate(top.movers):
        src = StreamSource(mover.cmd, seed=seed * 10 + k)
        for addr, length in commands[k]:
            src.send({"addr": addr, "length": length})
        sink = StreamSink(
            mover.o,
            {f: getattr(mover.o.p, f) for f in ("data", "count", "last", "error")},
            ready_prob=out_ready_prob,
            seed=seed * 10 + 5 + k,
        )
        sinks.append(sink)
        procs += [src.run, sink.run]

    async def set_caps(ctx):
        for mover in top.movers:
            ctx.set(mover.burst_beats, cap)

    procs.append(set_caps)
    total = sum(length for cmds in commands for _, length in cmds)
    done = lambda: all(s.ends == len(c) for s, c in zip(sinks, commands, strict=True))  # noqa: E731
    simulate(top, procs, done, limit=total * 3 + 4000)

    outputs = []
    for k, sink in enumerate(sinks):
        per_cmd = [[] for _ in commands[k]]
        index = 0
        for _, beat in sink.beats:
            per_cmd[index].append(beat)
            index += beat["last"]
        outputs.append(per_cmd)
    return outputs, log, mem


def check_read(beats, expected, w):
    got = bytearray()
    for i, beat in enumerate(beats):
        assert beat["error"] == 0, "unexpected read error"
        assert beat["last"] == (i == len(beats) - 1)
        got += beat["data"].to_bytes(w, "little")[: beat["count"]]
    assert bytes(got) == expected, "read data differs"


def check_all_reads(commands, outputs, mem, w, failed=()):
    for k, cmds in enumerate(commands):
        for c, (addr, length) in enumerate(cmds):
            if (k, c) in failed:
                last = outputs[k][c][-1]
                assert last["error"] == 1 and last["last"] == 1 and last["count"] == 0
            else:
                check_read(outputs[k][c], bytes(mem.mem[addr : addr + length]), w)


# ---- write system -------------------------------------------------------------------------------


class WriteSystem(Elaboratable):
    def __init__(self, n, data_width, max_outstanding, w_fifo_depth=8):
        self.arb = Axi4WriteArbiter(n, data_width=data_width, w_fifo_depth=w_fifo_depth)
        self.movers = [
            AxiBurstWriter(data_width, max_outstanding=max_outstanding) for _ in range(n)
        ]

    def elaborate(self, platform):
        m = Module()
        m.submodules.arb = self.arb
        for k, mover in enumerate(self.movers):
            m.submodules[f"writer{k}"] = mover
            wiring.connect(m, mover.axi, self.arb.inputs[k])
        return m


def packed_beats(payload, w):
    chunks = [payload[i : i + w] for i in range(0, len(payload), w)]
    return [
        {"data": int.from_bytes(c, "little"), "count": len(c), "last": int(i == len(chunks) - 1)}
        for i, c in enumerate(chunks)
    ]


def run_writes(
    commands, *, n=2, data_width=32, cap=8, slave="memory", in_valid_prob=1.0,
    max_outstanding=4, w_fifo_depth=8, seed=0, **slave_kw,
):  # fmt: skip
    """Returns (payloads per master, done errors per master, initial memory, log, slave)."""
    rng = random.Random(seed)
    w = data_width // 8
    top = WriteSystem(n, data_width, max_outstanding, w_fifo_depth)
    arb = top.arb
    mem, procs = make_slave(arb.o, slave, data_width=data_width, seed=seed, **slave_kw)
    mem.mem[:] = rng.randbytes(MEM_SIZE)
    initial = bytes(mem.mem)
    log = ArbiterLog()
    procs += [address_monitor(arb, "aw", log, passthrough=False), w_monitor(arb, log)]
    payloads, dones = [], []
    for k, mover in enumerate(top.movers):
        cmd = StreamSource(mover.cmd, seed=seed * 10 + k)
        data_in = StreamSource(mover.i, valid_prob=in_valid_prob, seed=seed * 10 + 3 + k)
        mine = []
        for addr, length in commands[k]:
            payload = rng.randbytes(length)
            mine.append(payload)
            cmd.send({"addr": addr, "length": length})
            for beat in packed_beats(payload, w):
                data_in.send(beat)
        payloads.append(mine)
        done = StreamSink(mover.done, {"error": mover.done.p.error}, seed=seed * 10 + 6 + k)
        dones.append(done)
        procs += [cmd.run, data_in.run, done.run]

    async def set_caps(ctx):
        for mover in top.movers:
            ctx.set(mover.burst_beats, cap)

    procs.append(set_caps)
    total = sum(length for cmds in commands for _, length in cmds)
    finished = lambda: all(d.ends == len(c) for d, c in zip(dones, commands, strict=True))  # noqa: E731
    simulate(top, procs, finished, limit=total * 3 + 4000)
    assert log.aw_order == log.w_order, "W bursts did not follow the AW order"
    errors = [[b["error"] for _, b in d.beats] for d in dones]
    return payloads, errors, initial, log, mem


def check_writes(commands, payloads, initial, mem, failed=()):
    expected = bytearray(initial)
    for k, cmds in enumerate(commands):
        for c, (addr, _) in enumerate(cmds):
            if (k, c) not in failed:
                expected[addr : addr + len(payloads[k][c])] = payloads[k][c]
    for k, c in failed:
        addr, length = commands[k][c]
        for i in range(length):
            assert mem.mem[addr + i] in (payloads[k][c][i], initial[addr + i])
            expected[addr + i] = mem.mem[addr + i]
    if mem.mem != expected:
        first = next(i for i in range(MEM_SIZE) if mem.mem[i] != expected[i])
        raise AssertionError(f"memory differs first at {first:#x}")


# ---- tests: reads -------------------------------------------------------------------------------

STRESS = [
    dict(latency=0),
    dict(latency=3, ready_prob=0.6, valid_prob=0.6),
    dict(latency=12, ready_prob=0.8, valid_prob=0.4),
]


@pytest.mark.parametrize("stress", range(len(STRESS)))
@pytest.mark.parametrize("slave", ["memory", "reorder"])
def test_two_readers_concurrent(slave, stress):
    seed = 11 + stress
    rng = random.Random(seed)
    commands = random_commands(rng, 2, 6, 4)
    outputs, log, mem = run_reads(
        commands, slave=slave, seed=seed, out_ready_prob=0.8, cap=rng.choice([2, 4, 16]),
        **STRESS[stress],
    )  # fmt: skip
    check_all_reads(commands, outputs, mem, 4)
    assert set(log.grants) == {0, 1}
    assert log.contended > 0, "the two readers never competed"
    if slave == "reorder":
        assert mem.switches > 0, "the slave never interleaved the two masters"


def test_three_readers_64bit_reordered():
    """Non-power-of-two n (2 index bits, index 3 unused) and a 64-bit bus."""
    rng = random.Random(5)
    commands = random_commands(rng, 3, 4, 8, max_len=500)
    outputs, log, mem = run_reads(
        commands, n=3, data_width=64, slave="reorder", latency=4, ready_prob=0.5,
        valid_prob=0.7, seed=5,
    )  # fmt: skip
    check_all_reads(commands, outputs, mem, 8)
    assert set(log.grants) == {0, 1, 2}


def test_read_fairness_under_continuous_load():
    """Both readers always have ARs queued (slow ARREADY): grants alternate strictly."""
    commands = [[(0x100, 4000)], [(0x100 + REGION, 4000)]]
    outputs, log, mem = run_reads(
        commands, cap=4, seed=3, ready_prob=0.25, latency=2, max_outstanding=8
    )
    check_all_reads(commands, outputs, mem, 4)
    # Only the part where both are still requesting matters: until one finished its bursts.
    counts = [log.grants.count(k) for k in range(2)]
    assert counts == [250, 250]
    assert log.contended > 0.9 * len(log.grants), log.contended
    both = log.grants[: 2 * min(counts)]
    assert all(both[i] != both[i + 1] for i in range(len(both) - 1)), "not round-robin"


@pytest.mark.parametrize("slave", ["memory", "reorder"])
def test_read_error_goes_to_its_master_only(slave):
    commands = [
        [(0x100, 300), (0x800, 200), (0x1000, 64)],
        [(0x100 + REGION, 300), (0x800 + REGION, 200), (0x1000 + REGION, 64)],
    ]
    # Master 0's second command hits a bad range; master 1 reads the same offsets error-free.
    outputs, log, mem = run_reads(
        commands, slave=slave, seed=4, latency=2, ready_prob=0.7,
        errors=[(0x840, 0x848, RESP_SLVERR)],
    )  # fmt: skip
    check_all_reads(commands, outputs, mem, 4, failed={(0, 1)})


# ---- tests: writes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "slave,stress",
    [("memory", 0), ("memory", 1), ("memory", 2), ("reorder", 1), ("reorder", 2)],
)
def test_two_writers_concurrent(slave, stress):
    seed = 21 + stress
    rng = random.Random(seed)
    commands = random_commands(rng, 2, 6, 4)
    payloads, errors, initial, log, mem = run_writes(
        commands, slave=slave, seed=seed, in_valid_prob=0.8, cap=rng.choice([2, 4, 16]),
        **STRESS[stress],
    )  # fmt: skip
    assert errors == [[0] * 6, [0] * 6]
    check_writes(commands, payloads, initial, mem)
    # AWs of the two masters really interleaved (several switches in the AW order).
    switches = sum(a != b for a, b in zip(log.aw_order, log.aw_order[1:], strict=False))
    assert switches >= 4 and log.contended > 0


def test_write_slave_waits_for_wvalid_before_awready():
    rng = random.Random(7)
    commands = random_commands(rng, 2, 5, 4, max_len=300)
    payloads, errors, initial, log, mem = run_writes(
        commands, seed=7, cap=4, latency=2, ready_prob=0.7, aw_waits_for_w=True
    )
    assert errors == [[0] * 5, [0] * 5]
    check_writes(commands, payloads, initial, mem)


def test_write_slave_takes_whole_w_bursts_before_aw():
    """The slave buffers W ahead of AW and takes AW rarely: a burst's W can pass completely
    (early, from the master whose AW is on offer) before its AW handshake."""
    rng = random.Random(13)
    commands = random_commands(rng, 2, 5, 4, max_len=200)
    payloads, errors, initial, log, mem = run_writes(
        commands, slave="reorder", seed=13, cap=2, latency=1, w_first=True, aw_ready_prob=0.2
    )
    assert errors == [[0] * 5, [0] * 5]
    check_writes(commands, payloads, initial, mem)
    assert mem.w_early > 10


def test_write_small_fifo_throttles_without_deadlock():
    rng = random.Random(8)
    commands = random_commands(rng, 2, 4, 4, max_len=200)
    payloads, errors, initial, log, mem = run_writes(
        commands, seed=8, cap=2, w_fifo_depth=1, ready_prob=0.6, in_valid_prob=0.5,
        aw_waits_for_w=True,
    )  # fmt: skip
    check_writes(commands, payloads, initial, mem)


def test_write_fairness_under_continuous_load():
    commands = [[(0x100, 2000)], [(0x100 + REGION, 2000)]]
    payloads, errors, initial, log, mem = run_writes(
        commands, cap=4, seed=9, ready_prob=0.3, max_outstanding=8
    )
    check_writes(commands, payloads, initial, mem)
    assert [log.grants.count(k) for k in range(2)] == [125, 125]
    assert log.contended > 0.8 * len(log.grants), log.contended


@pytest.mark.parametrize("slave", ["memory", "reorder"])
def test_write_error_goes_to_its_master_only(slave):
    commands = [
        [(0x200, 100), (0x900, 100), (0x1200, 40)],
        [(0x200 + REGION, 100), (0x900 + REGION, 100), (0x1200 + REGION, 40)],
    ]
    payloads, errors, initial, log, mem = run_writes(
        commands, slave=slave, seed=10, latency=3, ready_prob=0.7,
        errors=[(REGION + 0x940, REGION + 0x944, RESP_DECERR)],
    )  # fmt: skip
    assert errors == [[0, 0, 0], [0, 1, 0]]
    check_writes(commands, payloads, initial, mem, failed={(1, 1)})


class ScriptedWriteMaster:
    """Raw write master that may offer a burst's W beats before (or without waiting for) its AW,
    and uses both IDs 0 and 1. Records the BIDs it receives."""

    def __init__(self, axi, bursts, *, w_lead, seed):
        self.axi = axi
        self.bursts = bursts  # (id, addr, payload words)
        self.w_lead = w_lead  # cycles W is offered before the first AW
        self.rng = random.Random(seed)
        self.bids = []
        self.bresps = []

    async def run(self, ctx):
        axi = self.axi
        ctx.set(axi.bready, 1)
        ctx.set(axi.awsize, 2)
        ctx.set(axi.awburst, BURST_INCR)
        aws = deque(self.bursts)
        ws = deque(
            (word, i == len(words) - 1)
            for _, _, words in self.bursts
            for i, word in enumerate(words)
        )
        aw_on = w_on = False
        cycle = 0
        while True:
            if not aw_on and aws and cycle >= self.w_lead and self.rng.random() < 0.5:
                bid, addr, words = aws.popleft()
                ctx.set(axi.awid, bid)
                ctx.set(axi.awaddr, addr)
                ctx.set(axi.awlen, len(words) - 1)
                ctx.set(axi.awvalid, 1)
                aw_on = True
            if not w_on and ws and self.rng.random() < 0.7:
                word, last = ws.popleft()
                ctx.set(axi.wdata, word)
                ctx.set(axi.wstrb, 0xF)
                ctx.set(axi.wlast, last)
                ctx.set(axi.wvalid, 1)
                w_on = True
            _, _, awready, wready, bvalid, bid, bresp = await ctx.tick().sample(
                axi.awready, axi.wready, axi.bvalid, axi.bid, axi.bresp
            )
            cycle += 1
            if aw_on and awready:
                aw_on = False
                ctx.set(axi.awvalid, 0)
            if w_on and wready:
                w_on = False
                ctx.set(axi.wvalid, 0)
            if bvalid:
                self.bids.append(bid)
                self.bresps.append(bresp)


@pytest.mark.parametrize("slave", ["memory", "aw_waits_for_w", "w_first"])
def test_scripted_masters_w_before_aw(slave):
    """Master 1 offers W long before any AW; its W must wait for its own AW grant while
    master 0's bursts pass, and every BID (lower bit = master's AWID) reaches its owner.
    ``w_first``: the slave takes whole W bursts before their AW, so a master's next burst's W
    (offered independently of its AW) must not slip out while the previous AW still waits."""
    rng = random.Random(12)
    arb = Axi4WriteArbiter(2)
    if slave == "w_first":
        mem = ReorderMemory(arb.o, data_width=32, latency=1, ready_prob=0.8, seed=12,
                            w_first=True, aw_ready_prob=0.15)  # fmt: skip
        procs = [mem.run]
    else:
        mem = AxiMemory(arb.o, data_width=32, size=MEM_SIZE, latency=1, ready_prob=0.6,
                        seed=12, aw_waits_for_w=slave == "aw_waits_for_w")  # fmt: skip
        procs = [mem.run, id_tracker(arb.o)]
    masters, expected = [], bytearray(MEM_SIZE)
    for k in range(2):
        bursts = []
        for b in range(12):
            words = [rng.getrandbits(32) for _ in range(rng.randint(1, 6))]
            addr = k * REGION + 0x100 + b * 0x40
            bursts.append((b & 1, addr, words))
            for i, word in enumerate(words):
                expected[addr + 4 * i : addr + 4 * i + 4] = word.to_bytes(4, "little")
        masters.append(ScriptedWriteMaster(arb.inputs[k], bursts, w_lead=8 * k, seed=k))
    log = ArbiterLog()
    procs += [w_monitor(arb, log)]
    procs += [address_monitor(arb, "aw", log, passthrough=False)]
    procs += [m.run for m in masters]
    simulate(arb, procs, lambda: all(len(m.bids) == 12 for m in masters), limit=2000)
    assert log.aw_order == log.w_order
    assert log.w_order[:1] == [0], "master 1's early W overtook master 0"
    for k, m in enumerate(masters):
        assert m.bids == [b & 1 for b in range(12)], f"master {k} BIDs {m.bids}"
        assert m.bresps == [RESP_OKAY] * 12
        for _, addr, words in m.bursts:
            assert mem.mem[addr : addr + 4 * len(words)] == expected[addr : addr + 4 * len(words)]


# ---- structure ----------------------------------------------------------------------------------


def test_members_and_id_widths():
    arb = Axi4ReadArbiter(3, addr_width=40, data_width=64, id_width_in=2)
    assert [name for name, _ in arb.signature.members.items()] == ["i0", "i1", "i2", "o"]
    assert arb.inputs == (arb.i0, arb.i1, arb.i2)
    assert arb.o.signature.id_width == 4 and arb.i1.signature.id_width == 2
    assert arb.o.signature.addr_width == 40 and arb.o.signature.data_width == 64
    warb = Axi4WriteArbiter(2)
    assert warb.o.signature == Axi4WriteSignature(32, 32, 2)
    single = Axi4WriteArbiter(1)
    assert single.o.signature.id_width == 1
    elaborate(arb, warb, single)


@pytest.mark.parametrize(
    "cls,kwargs,text",
    [
        (Axi4ReadArbiter, dict(n=0), "0"),
        (Axi4ReadArbiter, dict(n=17), "17"),
        (Axi4ReadArbiter, dict(n=2.0), "2.0"),
        (Axi4WriteArbiter, dict(id_width_in=0), "0"),
        (Axi4ReadArbiter, dict(id_width_in=31, n=4), "31"),
        (Axi4ReadArbiter, dict(data_width=16), "16"),
        (Axi4WriteArbiter, dict(addr_width=8), "8"),
        (Axi4WriteArbiter, dict(w_fifo_depth=0), "0"),
    ],
)
def test_bad_parameters(cls, kwargs, text):
    with rejected(ValueError, text):
        cls(**kwargs)


class Soc(Elaboratable):
    """The intended use: reader + writer per channel, two channels onto one full m_axi."""

    def __init__(self):
        self.m_axi = Axi4Signature(32, 32, 2).create(path=("m_axi",))
        self.rd = Axi4ReadArbiter(2)
        self.wr = Axi4WriteArbiter(2)
        self.readers = [AxiBurstReader() for _ in range(2)]
        self.writers = [AxiBurstWriter() for _ in range(2)]

    def elaborate(self, platform):
        m = Module()
        m.submodules.rd, m.submodules.wr = self.rd, self.wr
        for k in range(2):
            m.submodules[f"r{k}"] = self.readers[k]
            m.submodules[f"w{k}"] = self.writers[k]
            wiring.connect(m, self.readers[k].axi, self.rd.inputs[k])
            wiring.connect(m, self.writers[k].axi, self.wr.inputs[k])
        connect_read_write(m, bus=self.m_axi, read=self.rd.o, write=self.wr.o)
        return m


@pytest.mark.parametrize("n", [1, 2, 3])
def test_verilog_export(n):
    for cls in (Axi4ReadArbiter, Axi4WriteArbiter):
        text = verilog.convert(cls(n, data_width=64), name=f"{cls.__name__.lower()}{n}")
        assert "module" in text
        if n == 2:
            assert "o__arid" in text or "o__awid" in text
            assert "i1__" in text


def test_verilog_export_soc():
    soc = Soc()
    ports = [getattr(soc.m_axi, name) for name in soc.m_axi.signature.members]
    text = verilog.convert(soc, name="soc", ports=ports)
    assert "m_axi__arid" in text and "m_axi__bid" in text
