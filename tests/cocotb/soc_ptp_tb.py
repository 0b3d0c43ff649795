"""PTP (IEEE 1588) in ``macdma_soc``: the hardware clock through its registers, and the
RX and TX SFD timestamps in descriptors against cocotbext-eth's ``sim_time_sfd`` stamps of
the same frames.

Reference: the bench watches the AXI4-Lite read channel and notes the clock edge at which
each PTP_TIME_LO read address is accepted, the cycle whose clock value the register bank
returns. That ties PTP time to simulation time exactly (at the nominal increment the clock
counts simulated ns), so the latency of each capture is measured, not assumed.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor, extend_timestamp
from macdma.hdl.mac.ptp import INCREMENT_FRACTION_BITS
from macdma.sim.benches.gmii import GMII_1000, MII_10, MII_100, LinkMode
from macdma.sim.benches.soc import SocBench

RX_RING, RX_DATA = 0x2000, 0x40000
TX_RING, TX_DATA = 0x3000, 0x80000
RING_SIZE = 64
SYS_CLK_NS = 10
MODES = {"1000": GMII_1000, "100": MII_100, "10": MII_10}


def frame_payload(index: int, length: int = 100) -> bytes:
    """A frame whose bytes say which one it is."""
    head = bytes.fromhex("02000000000102000000000288f7") + index.to_bytes(2, "big")
    return head + bytes((index + n) & 0xFF for n in range(length - len(head)))


def send(bench: SocBench, frame: GmiiFrame) -> GmiiFrame:
    """Queue ``frame`` on the RX wire; return the source's own copy, which it stamps."""
    bench.rx_source.send_nowait(frame)
    return bench.rx_source.queue._queue[-1]


class PtpReference:
    """Maps PTP time to simulation time from PTP_TIME_LO reads the bench watches."""

    def __init__(self, bench: SocBench):
        self.bench = bench
        self.dut = bench.dut
        self.accepted_ps: list[int] = []
        self.address = regs.PTP_TIME_LO
        cocotb.start_soon(self._watch())

    async def _watch(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            if (
                int(dut.s_axil_arvalid.value)
                and int(dut.s_axil_arready.value)
                and int(dut.s_axil_araddr.value) == self.address
            ):
                self.accepted_ps.append(get_sim_time("ps"))

    async def read_time(self) -> int:
        """gettime64: TIME_LO (which latches TIME_HI), then TIME_HI."""
        low = await self.bench.read_reg(regs.PTP_TIME_LO)
        high = await self.bench.read_reg(regs.PTP_TIME_HI)
        return high << 32 | low

    async def offset_ns(self) -> float:
        """PTP ns minus simulated ns, at the nominal increment: the value returned is the
        clock as updated by the edge one system period before the accepting edge."""
        value = await self.read_time()
        edge_ns = self.accepted_ps[-1] / 1000 - SYS_CLK_NS
        return value - edge_ns


async def started_bench(dut, mode: LinkMode = GMII_1000) -> SocBench:
    bench = SocBench(dut, mode, sys_clk_ns=SYS_CLK_NS)
    await bench.start()
    features = await bench.read_reg(regs.ID_FEATURES)
    assert features & regs.ID_FEATURES_PTP_MASK, "built without PTP"
    return bench


@cocotb.test()
async def test_clock_set_step_and_time_latch(dut):
    """settime64 loads the clock; adjtime steps add to it at once; TIME_HI is the high
    word of the instant TIME_LO was read, also across a carry into it."""
    bench = await started_bench(dut)
    reference = PtpReference(bench)
    nominal = await bench.read_reg(regs.PTP_NOMINAL)
    assert nominal == SYS_CLK_NS << INCREMENT_FRACTION_BITS
    assert await bench.read_reg(regs.PTP_INCREMENT) == 0  # 0: the nominal increment

    async def set_time(ns: int):
        await bench.write_reg(regs.PTP_SET_LO, ns & 0xFFFF_FFFF)
        await bench.write_reg(regs.PTP_SET_HI, ns >> 32)
        await bench.write_reg(regs.PTP_CMD, regs.PTP_CMD_SET_MASK)

    start = 0x1234_5678_9ABC_DEF0
    await set_time(start)
    now = await reference.read_time()
    assert start < now < start + 1000, f"after set {start:#x}: {now:#x}"

    # Steps: the elapsed time around a step, less that of the same reads without one.
    async def elapsed(step_ns: int | None) -> int:
        before = await reference.read_time()
        if step_ns is not None:
            await bench.write_reg(regs.PTP_STEP, step_ns & 0xFFFF_FFFF)
            await bench.write_reg(regs.PTP_CMD, regs.PTP_CMD_STEP_MASK)
        else:
            await bench.write_reg(regs.ID_SCRATCH, 0)  # the same bus traffic, no step
            await bench.write_reg(regs.ID_SCRATCH, 0)
        return await reference.read_time() - before

    plain = await elapsed(None)
    for step_ns in (1_000_000, -500_000, 2_000_000_000, -2_000_000_000):
        assert await elapsed(step_ns) - plain == step_ns, f"step {step_ns}"

    # The carry from TIME_LO into TIME_HI, read in pairs straddling it.
    carry = (7 << 32) - 400
    await set_time(carry)
    readings = [await reference.read_time() for _ in range(12)]
    assert readings == sorted(readings), [hex(r) for r in readings]
    assert readings[0] >= carry and readings[-1] > 7 << 32
    assert readings[-1] - readings[0] < 12 * 1000, [hex(r) for r in readings]


@cocotb.test()
@cocotb.parametrize(ppb=[0, 100_000, -100_000, 12_345])
async def test_clock_rate_follows_the_increment(dut, ppb):
    """adjfine: with PTP_INCREMENT = nominal * (1 + ppb / 1e9) the clock advances over
    20,000 system clocks by that many increments, within 1 ns (the fraction's floor)."""
    bench = await started_bench(dut)
    reference = PtpReference(bench)
    nominal = await bench.read_reg(regs.PTP_NOMINAL)
    increment = round(nominal * (1 + ppb / 1e9))
    await bench.write_reg(regs.PTP_INCREMENT, increment)
    cycles = 20_000

    async def span(wait_cycles: int) -> int:
        await RisingEdge(dut.clk)
        first = await reference.read_time()
        await ClockCycles(dut.clk, wait_cycles)
        return await reference.read_time() - first

    # The reads' own duration is the same in both spans: their difference is the wait.
    moved_ns = await span(cycles) - await span(0)
    expected_ns = cycles * increment / (1 << INCREMENT_FRACTION_BITS)
    assert abs(moved_ns - expected_ns) <= 2, f"{ppb} ppb: {moved_ns} ns, not {expected_ns:.3f}"
    if ppb:
        nominal_ns = cycles * SYS_CLK_NS
        assert abs((moved_ns - nominal_ns) - nominal_ns * ppb / 1e9) <= 2


async def _latencies(bench, reference, pairs) -> list[float]:
    offset = await reference.offset_ns()
    phc_now = await reference.read_time()
    latencies = []
    for low_ns, sfd_ps in pairs:
        full = extend_timestamp(low_ns, phc_now)
        latencies.append(full - (sfd_ps / 1000 + offset))
    return latencies


def latency_window_ns(direction: str, mode: LinkMode) -> tuple[float, float]:
    """Where a capture's latency beyond the cocotbext-eth stamp must lie (docs/mac.md,
    "PTP"): the crossing to ``sync`` takes one to two system clocks (AsyncFIFO pointer
    synchroniser and latch) and one PHY clock on the way in; the window is one system
    clock plus one PHY clock wide. RX also waits one PHY clock for the SFD symbol's
    input register. On TX the sink stamps the first symbol at the enabled clock edge
    after it reached the pins, one symbol clock after the capture's reference."""
    sys_ns, phy_ns = SYS_CLK_NS, mode.clock_period_ns
    if direction == "RX":
        low = phy_ns + sys_ns
    else:
        low = sys_ns - mode.clock_period_ns * mode.enable_every
    return low, low + sys_ns + phy_ns


def _check_window(what: str, latencies: list[float], direction: str, mode: LinkMode):
    """Every latency lies in the documented window."""
    low, high = latency_window_ns(direction, mode)
    assert all(low <= latency <= high for latency in latencies), (
        f"{what}: latencies {latencies} ns outside [{low}, {high}]"
    )
    cocotb.log.info(
        "%s latency: min %.1f ns, max %.1f ns, mean %.1f ns over %d frames (window %s..%s)",
        what,
        min(latencies),
        max(latencies),
        sum(latencies) / len(latencies),
        len(latencies),
        low,
        high,
    )


@cocotb.test()
@cocotb.parametrize(speed=list(MODES))
async def test_rx_timestamps(dut, speed):
    """Each good frame's EOP descriptor carries its SFD time: against the source's
    ``sim_time_sfd`` every frame's latency lies in one window; bad frames get none and
    with PTP_CTRL.rx_timestamp off no frame gets one."""
    mode = MODES[speed]
    bench = await started_bench(dut, mode)
    reference = PtpReference(bench)
    await bench.write_reg(regs.PTP_SET_HI, 3)
    await bench.write_reg(regs.PTP_CMD, regs.PTP_CMD_SET_MASK)
    await bench.write_reg(regs.PTP_CTRL, regs.PTP_CTRL_RX_TIMESTAMP_MASK)
    ring = await bench.open_ring("RX", RX_RING, RING_SIZE)
    for index in range(RING_SIZE - 1):
        ring.post(Descriptor.rx(RX_DATA + index * 2048, 2048))
    await ring.doorbell()

    count = 6 if speed == "10" else 12
    frames = [GmiiFrame.from_payload(frame_payload(n, 64 + 37 * n)) for n in range(count)]
    bad = GmiiFrame.from_payload(frame_payload(99))
    bad.data[-1] ^= 0xFF  # a bad FCS
    sent = [send(bench, frame) for frame in frames[: count // 2] + [bad] + frames[count // 2 :]]
    bad = sent[count // 2]
    timeout_ms = 30 if speed == "10" else 3
    pairs = []
    for frame in sent:
        eop = await with_timeout(ring.reap(timeout_us=timeout_ms * 1000), timeout_ms, "ms")
        assert eop.eop, eop
        if frame is bad:
            assert eop.error and not eop.timestamped, eop
            continue
        assert not eop.error and eop.timestamped, eop
        pairs.append((eop.timestamp_low_ns, frame.sim_time_sfd))
    _check_window(f"RX {mode.name}", await _latencies(bench, reference, pairs), "RX", mode)
    assert await bench.read_reg(regs.PTP_RX_UNSTAMPED) == 0

    await bench.write_reg(regs.PTP_CTRL, 0)
    await Timer(1, "us")
    bench.rx_source.send_nowait(GmiiFrame.from_payload(frame_payload(7)))
    eop = await with_timeout(ring.reap(timeout_us=timeout_ms * 1000), timeout_ms, "ms")
    assert not eop.timestamped and eop.addr == RX_DATA + (len(frames) + 1) * 2048, eop


@cocotb.test()
async def test_rx_fifo_losses_do_not_shift_timestamps(dut):
    """Frames the RX FIFO cuts short or loses whole (host memory too slow) take their
    timestamps with them: every frame delivered whole carries its own SFD time."""
    mode = GMII_1000
    bench = await started_bench(dut, mode)
    reference = PtpReference(bench)
    await bench.write_reg(regs.PTP_CTRL, regs.PTP_CTRL_RX_TIMESTAMP_MASK)
    ring = await bench.open_ring("RX", RX_RING, RING_SIZE, burst_beats=4, prefetch=1)
    for index in range(RING_SIZE - 1):
        ring.post(Descriptor.rx(RX_DATA + index * 2048, 2048))
    await ring.doorbell()
    bench.memory.latency_cycles = 150  # per burst: far slower than the wire
    frames = {}
    for n in range(40):
        frame = GmiiFrame.from_payload(frame_payload(n, 60 + (n * 53) % 700))
        frames[n] = send(bench, frame)
    pairs = []
    delivered = 0
    while True:
        try:
            eop = await with_timeout(ring.reap(timeout_us=5000), 5, "ms")
        except TimeoutError:
            break
        assert eop.sop and eop.eop, "frames fit one buffer"
        data = bytes(bench.memory.read(RX_DATA + (ring.head - 1) % RING_SIZE * 2048, 16))
        index = int.from_bytes(data[14:16], "big")
        if eop.error:
            assert eop.rx_truncated and not eop.timestamped, eop
            continue
        delivered += 1
        assert eop.timestamped, f"frame {index} delivered whole without its time"
        pairs.append((eop.timestamp_low_ns, frames[index].sim_time_sfd))
    bench.memory.latency_cycles = 0
    overflows = await bench.read_reg(regs.RX_FIFO_OVERFLOWS)
    assert overflows > 0 and delivered > 0, (overflows, delivered)
    assert await bench.read_reg(regs.PTP_RX_UNSTAMPED) == 0
    latencies = await _latencies(bench, reference, pairs)
    _check_window("RX with FIFO losses", latencies, "RX", mode)


@cocotb.test()
@cocotb.parametrize(speed=list(MODES))
async def test_tx_timestamps(dut, speed):
    """A frame whose SOP descriptor asks (ts_request) gets its SFD time on the wire in
    its EOP write-back, also with several fragments; others get none."""
    mode = MODES[speed]
    bench = await started_bench(dut, mode)
    reference = PtpReference(bench)
    ring = await bench.open_ring("TX", TX_RING, RING_SIZE)
    count = 4 if speed == "10" else 8
    plan = []  # (payload, fragments, asks)
    for n in range(count):
        payload = frame_payload(n, 60 + 91 * n)
        plan.append((payload, 1 + n % 3, n % 4 != 3))
    address = TX_DATA
    for payload, fragments, asks in plan:
        bench.memory.write(address, payload)
        cut = [len(payload) * k // fragments for k in range(fragments + 1)]
        for k in range(fragments):
            ring.post(
                Descriptor.tx(
                    address + cut[k],
                    cut[k + 1] - cut[k],
                    sop=k == 0,
                    eop=k == fragments - 1,
                    ts_request=asks and k == 0,
                )
            )
        address += 4096
    await ring.doorbell()
    timeout_ms = 30 if speed == "10" else 3
    pairs = []
    for payload, fragments, asks in plan:
        wire = await with_timeout(bench.tx_sink.recv(), timeout_ms, "ms")
        assert wire.get_payload() == payload
        for k in range(fragments):
            done = await with_timeout(ring.reap(timeout_us=timeout_ms * 1000), timeout_ms, "ms")
            last = k == fragments - 1
            assert done.eop == last and done.timestamped == (asks and last), done
            assert not done.ts_request, "ts_request is written back 0"
        if asks:
            pairs.append((done.timestamp_low_ns, wire.sim_time_sfd))
    _check_window(f"TX {mode.name}", await _latencies(bench, reference, pairs), "TX", mode)
    assert await bench.read_reg(regs.PTP_TX_UNSTAMPED) == 0


@cocotb.test()
async def test_tx_reset_while_waiting_for_a_timestamp(dut):
    """With the MAC's transmitter off a frame that asked never gets its time: a channel
    reset drops the waiting write-back (counted in PTP_TX_UNSTAMPED) and the channel
    works again, stamping the next frame."""
    bench = await started_bench(dut)
    reference = PtpReference(bench)
    await bench.write_reg(regs.MAC_CTRL, regs.MAC_CTRL_RX_ENABLE_MASK)  # TX off
    ring = await bench.open_ring("TX", TX_RING, 8)
    payload = frame_payload(1)
    bench.memory.write(TX_DATA, payload)
    ring.post(Descriptor.tx(TX_DATA, len(payload), sop=True, eop=True, ts_request=True))
    await ring.doorbell()
    await Timer(20, "us")
    assert ring.read(0).own, "written back without its time"
    await bench.write_reg(regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
    await Timer(5, "us")
    assert await bench.read_reg(regs.PTP_TX_UNSTAMPED) == 1
    assert await bench.read_reg(regs.TX_HEAD) == 0

    await bench.configure_mac()  # TX on again
    ring = await bench.open_ring("TX", TX_RING, 8)
    ring.post(Descriptor.tx(TX_DATA, len(payload), sop=True, eop=True, ts_request=True))
    await ring.doorbell()
    wire = await with_timeout(bench.tx_sink.recv(), 1, "ms")
    # Nothing of the flushed frame reaches the wire: with TX off the MAC took none of its
    # bytes (it took two, sent as a runt with tx_er once TX was on, before issue 17).
    assert wire.error is None or not any(wire.error), "a runt of the flushed frame"
    done = await with_timeout(ring.reap(), 1, "ms")
    assert wire.get_payload() == payload and done.timestamped, done
    _check_window(
        "TX after reset",
        await _latencies(bench, reference, [(done.timestamp_low_ns, wire.sim_time_sfd)]),
        "TX",
        GMII_1000,
    )
