"""Bus-functional models for Amaranth simulations of the AXI4 data movers.

- :class:`AxiMemory`: an AXI4 slave over a ``bytearray`` with a per-burst latency, seeded random
  back-pressure on every slave-driven handshake, and error injection by address range. It binds
  to whichever halves (AR/R, AW/W/B) the interface has.
- :class:`BusMonitor`: records every burst and asserts the AXI rules the movers promise (cap,
  4 KiB, INCR, full-width size, WLAST placement, WSTRB inside the transfer, W never ahead of its
  AW, master payload stable while valid waits).
- :class:`StreamSource` / :class:`StreamSink`: ``lib.stream`` drivers with random valid/ready.

Every model is a free-running ``sim.add_process`` that samples at the clock edge, so handshakes
are decided exactly as the hardware sees them.
"""

import random
from collections import deque
from dataclasses import dataclass, field

from macdma.hdl.bus.axi4 import BURST_INCR, PAGE_BYTES, RESP_OKAY

__all__ = ["Burst", "BusMonitor", "AxiMemory", "StreamSource", "StreamSink"]


@dataclass
class Burst:
    """One burst seen on an address channel."""

    kind: str  # "read" or "write"
    addr: int
    beats: int
    size: int
    burst: int
    command: int  # index of the mover command it belongs to
    valid_cycle: int  # cycle its address became valid (the master decided to issue it)
    resp: int = RESP_OKAY  # worst response of the burst
    resp_cycle: int | None = None  # cycle the first bad response was handed to the master


@dataclass
class BusMonitor:
    """Checks and records bursts. Tests set ``cap`` and feed the current command window.

    ``command_of`` returns the index of the command in progress and ``windows[index]`` its
    byte range ``(addr, length)``.
    """

    beat_bytes: int
    cap: int = 256
    windows: list = field(default_factory=list)
    command_of: object = None
    bursts: list = field(default_factory=list)

    def address(self, kind, addr, length, size, burst, cycle, valid_cycle):
        beats = length + 1
        command = self.command_of() if self.command_of else 0
        record = Burst(kind, addr, beats, size, burst, command, valid_cycle)
        self.bursts.append(record)
        w = self.beat_bytes
        assert burst == BURST_INCR, f"{kind} burst type {burst} is not INCR at cycle {cycle}"
        assert 1 << size == w, f"{kind} burst size {1 << size} B is not the bus width {w} B"
        assert addr % w == 0, f"{kind} burst address {addr:#x} is not beat-aligned"
        assert beats <= self.cap, f"{kind} burst of {beats} beats exceeds the cap {self.cap}"
        assert addr // PAGE_BYTES == (addr + beats * w - 1) // PAGE_BYTES, (
            f"{kind} burst {addr:#x}+{beats}x{w} crosses a 4 KiB boundary"
        )
        if self.windows and command < len(self.windows):
            lo, n = self.windows[command]
            lo_beat = lo - lo % w
            hi_beat = (lo + n + w - 1) // w * w
            assert lo_beat <= addr and addr + beats * w <= hi_beat, (
                f"{kind} burst {addr:#x}+{beats}x{w} lies outside the transfer {lo:#x}+{n}"
            )
        return record

    def strobes(self, addr, wstrb, command):
        """WSTRB may only mark bytes inside the command's window."""
        if not self.windows or command >= len(self.windows):
            return
        lo, n = self.windows[command]
        for lane in range(self.beat_bytes):
            if wstrb >> lane & 1:
                assert lo <= addr + lane < lo + n, (
                    f"WSTRB lane {lane} at {addr + lane:#x} is outside {lo:#x}+{n}"
                )

    def for_command(self, command):
        return [(b.addr, b.beats) for b in self.bursts if b.command == command]


class AxiMemory:
    """AXI4 slave memory model bound to the master-view interface ``axi``.

    ``latency``: cycles between accepting a burst's address and the earliest first R beat
    (reads), or between the last W beat and the earliest B (writes); address acceptance is
    pipelined, so latencies of consecutive bursts overlap as in a real memory controller.
    ``ready_prob`` / ``valid_prob``: per-cycle probability that a ready (arready, awready,
    wready) or a response valid (rvalid, bvalid) is offered.
    ``errors``: ``(lo, hi, resp)`` byte ranges answered with ``resp``; reads per beat, writes
    per burst (a bad burst writes nothing).
    ``aw_waits_for_w``: hold AWREADY low until WVALID is seen (allowed by AXI4), to prove the
    master does not wait for AWREADY before offering W. The model itself accepts W beats only
    for AWs it has accepted.
    """

    def __init__(
        self,
        axi,
        *,
        data_width,
        size=1 << 16,
        latency=0,
        ready_prob=1.0,
        valid_prob=1.0,
        errors=(),
        seed=0,
        aw_waits_for_w=False,
    ):
        self.axi = axi
        self.beat_bytes = data_width // 8
        self.mem = bytearray(size)
        self.latency = latency
        self.ready_prob = ready_prob
        self.valid_prob = valid_prob
        self.errors = list(errors)
        self.rng = random.Random(seed)
        self.aw_waits_for_w = aw_waits_for_w
        self.monitor = BusMonitor(self.beat_bytes)
        self.has_read = hasattr(axi, "arvalid")
        self.has_write = hasattr(axi, "awvalid")
        self.r_beats = 0
        self.w_beats = 0
        self.cycle = 0

    def response(self, addr, beats=1):
        end = addr + beats * self.beat_bytes
        for lo, hi, resp in self.errors:
            if addr < hi and lo < end:
                return resp
        return RESP_OKAY

    def _offer(self, prob):
        return prob >= 1.0 or self.rng.random() < prob

    def _word(self, addr):
        assert 0 <= addr and addr + self.beat_bytes <= len(self.mem), f"{addr:#x} out of memory"
        return int.from_bytes(self.mem[addr : addr + self.beat_bytes], "little")

    async def run(self, ctx):
        axi = self.axi
        w = self.beat_bytes
        read_sigs = []
        write_sigs = []
        if self.has_read:
            read_sigs = [
                axi.arvalid, axi.araddr, axi.arlen, axi.arsize, axi.arburst, axi.rready,
            ]  # fmt: skip
        if self.has_write:
            write_sigs = [
                axi.awvalid, axi.awaddr, axi.awlen, axi.awsize, axi.awburst,
                axi.wvalid, axi.wdata, axi.wstrb, axi.wlast, axi.bready,
            ]  # fmt: skip
        n_read = len(read_sigs)

        # Slave-driven outputs as last set (what the master sees before the next edge).
        arready = rvalid = awready = wready = bvalid = 0
        r_resp = RESP_OKAY  # response of the R beat on offer
        r_pending = deque()  # [ready_cycle, Burst, beat index]
        aw_pending = deque()  # [Burst, beats received]
        b_pending = deque()  # [ready_cycle, resp]
        ar_wait = aw_wait = w_wait = None  # master payloads that must hold while valid waits
        ar_since = aw_since = None  # cycle the current address first became valid
        aw_accepted = w_bursts_started = 0  # for the "W never ahead of its AW" check
        w_mid_burst = False  # the next W beat continues a burst

        while True:
            _, _, *values = await ctx.tick().sample(*read_sigs, *write_sigs)
            self.cycle += 1
            cycle = self.cycle
            mon = self.monitor

            if self.has_read:
                arvalid, araddr, arlen, arsize, arburst, rready = values[:n_read]
                payload = (araddr, arlen, arsize, arburst)
                if ar_wait is not None:
                    assert arvalid and payload == ar_wait, f"AR dropped or changed at {cycle}"
                if arvalid and ar_since is None:
                    ar_since = cycle
                ar_wait = None
                if arvalid and arready:
                    burst = mon.address("read", *payload, cycle, ar_since)
                    r_pending.append([cycle + self.latency, burst, 0])
                    ar_since = None
                elif arvalid:
                    ar_wait = payload
                if rvalid and rready:
                    self.r_beats += 1
                    entry = r_pending[0]
                    if r_resp != RESP_OKAY and entry[1].resp_cycle is None:
                        entry[1].resp, entry[1].resp_cycle = r_resp, cycle
                    entry[2] += 1
                    if entry[2] == entry[1].beats:
                        r_pending.popleft()
                    rvalid = 0

            if self.has_write:
                (awvalid, awaddr, awlen, awsize, awburst, wvalid, wdata, wstrb, wlast, bready) = (
                    values[n_read:]
                )
                payload = (awaddr, awlen, awsize, awburst)
                if aw_wait is not None:
                    assert awvalid and payload == aw_wait, f"AW dropped or changed at {cycle}"
                if w_wait is not None:
                    assert wvalid and (wdata, wstrb, wlast) == w_wait, (
                        f"W dropped or changed at {cycle}"
                    )
                if wvalid and w_wait is None and not w_mid_burst:
                    # A burst's first W beat is newly offered: its AW must be (or have been) on
                    # the bus already.
                    w_bursts_started += 1
                    assert w_bursts_started <= aw_accepted + awvalid, (
                        f"W burst {w_bursts_started} offered before its AW at cycle {cycle}"
                    )
                if awvalid and aw_since is None:
                    aw_since = cycle
                aw_wait = w_wait = None
                if awvalid and awready:
                    burst = mon.address("write", *payload, cycle, aw_since)
                    burst.resp = self.response(awaddr, awlen + 1)
                    aw_pending.append([burst, 0])
                    aw_since = None
                    aw_accepted += 1
                elif awvalid:
                    aw_wait = payload
                if wvalid and wready:
                    self.w_beats += 1
                    entry = aw_pending[0]
                    burst, index = entry
                    addr = burst.addr + index * w
                    assert wlast == (index == burst.beats - 1), (
                        f"WLAST={wlast} on beat {index} of a {burst.beats}-beat burst"
                    )
                    mon.strobes(addr, wstrb, burst.command)
                    if burst.resp == RESP_OKAY:
                        for lane in range(w):
                            if wstrb >> lane & 1:
                                self.mem[addr + lane] = wdata >> (8 * lane) & 0xFF
                    entry[1] += 1
                    w_mid_burst = entry[1] != burst.beats
                    if entry[1] == burst.beats:
                        aw_pending.popleft()
                        b_pending.append([cycle + self.latency, burst])
                elif wvalid:
                    w_wait = (wdata, wstrb, wlast)
                if bvalid and bready:
                    burst = b_pending.popleft()[1]
                    if burst.resp != RESP_OKAY:
                        burst.resp_cycle = cycle
                    bvalid = 0

            # Decide what the slave offers in the next cycle.
            if self.has_read:
                arready = int(self._offer(self.ready_prob))
                ctx.set(axi.arready, arready)
                if not rvalid and r_pending and r_pending[0][0] <= cycle:
                    if self._offer(self.valid_prob):
                        ready_cycle, burst, index = r_pending[0]
                        addr = burst.addr + index * w
                        r_resp = self.response(addr)
                        rvalid = 1
                        ctx.set(axi.rdata, self._word(addr))
                        ctx.set(axi.rresp, r_resp)
                        ctx.set(axi.rlast, index == burst.beats - 1)
                ctx.set(axi.rvalid, rvalid)
            if self.has_write:
                awready = int(self._offer(self.ready_prob))
                if self.aw_waits_for_w:
                    # Legal AXI4 slave behaviour: AWREADY only once WVALID is seen.
                    awready &= int(wvalid)
                ctx.set(axi.awready, awready)
                wready = int(bool(aw_pending) and self._offer(self.ready_prob))
                ctx.set(axi.wready, wready)
                if not bvalid and b_pending and b_pending[0][0] <= cycle:
                    if self._offer(self.valid_prob):
                        bvalid = 1
                        ctx.set(axi.bresp, b_pending[0][1].resp)
                ctx.set(axi.bvalid, bvalid)


class StreamSource:
    """Drives a ``lib.stream`` interface from a queue of payloads (ints or dicts).

    ``accepted`` holds the cycle of every handshake.
    """

    def __init__(self, stream, *, valid_prob=1.0, seed=1):
        self.stream = stream
        self.queue = deque()
        self.valid_prob = valid_prob
        self.rng = random.Random(seed)
        self.accepted = []
        self.cycle = 0

    def send(self, payload):
        self.queue.append(payload)

    async def run(self, ctx):
        current = None
        while True:
            if current is None and self.queue:
                if self.valid_prob >= 1.0 or self.rng.random() < self.valid_prob:
                    current = self.queue.popleft()
                    ctx.set(self.stream.payload, current)
                    ctx.set(self.stream.valid, 1)
            _, _, ready = await ctx.tick().sample(self.stream.ready)
            self.cycle += 1
            if current is not None and ready:
                self.accepted.append(self.cycle)
                current = None
                ctx.set(self.stream.valid, 0)


class StreamSink:
    """Accepts a ``lib.stream`` interface with random ready and records ``fields`` of each beat.

    ``fields`` maps names to Values of the payload; ``beats`` gets ``(cycle, {name: int})``.
    It also asserts that the producer holds valid and payload until the handshake.
    """

    def __init__(self, stream, fields, *, ready_prob=1.0, seed=2):
        self.stream = stream
        self.names = list(fields)
        self.values = list(fields.values())
        self.ready_prob = ready_prob
        self.rng = random.Random(seed)
        self.beats = []
        self.ends = 0  # beats with last=1 (every beat if the payload has no `last`)
        self.cycle = 0

    async def run(self, ctx):
        has_last = "last" in self.names
        ready = 1 if self.ready_prob >= 1.0 else 0
        ctx.set(self.stream.ready, ready)
        waiting = None
        while True:
            _, _, valid, *values = await ctx.tick().sample(self.stream.valid, *self.values)
            self.cycle += 1
            if waiting is not None:
                assert valid and values == waiting, f"stream beat dropped/changed at {self.cycle}"
            waiting = None
            if valid and ready:
                beat = dict(zip(self.names, values, strict=True))
                self.beats.append((self.cycle, beat))
                if not has_last or beat["last"]:
                    self.ends += 1
            elif valid:
                waiting = values
            if self.ready_prob < 1.0:
                ready = int(self.rng.random() < self.ready_prob)
                ctx.set(self.stream.ready, ready)
