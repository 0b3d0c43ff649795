"""The interrupt rate limit (IRQ_MIN_INTERVAL) of ``macdma_soc`` at line rate.

Both directions run back to back at 1 Gb/s with 1514-byte frames and per-frame interrupts
(IRQ_MODE EOP on both channels, tx_done and rx_done enabled). The host is an interrupt
handler and nothing else: it waits for the level ``irq`` line, reads IRQ_STATUS and clears
what it read, reaps both rings, re-posts the RX buffers and tops the TX ring up. No
polling: a frame is handled only if an interrupt reported it, so a lost cause shows as a
frame never reaped (the test times out) and the frame counts below cannot match.

The rises of ``irq`` are timed on the pin, in whole picoseconds. Measured: interrupts per
second while frames flow (rises - 1 over the time from the first rise to the last one
before the last TX frame left the wire) and the spacing of consecutive rises. Without a
limit the handler runs once per frame; with IRQ_MIN_INTERVAL = 125 the rate must be
8,000/s within 1% (rises 125 µs apart while causes keep arriving) and every frame is
still handled, the last ones within one interval of the end of the traffic.

Environment: SOC_IRQ_RATE_FRAMES (frames per direction, default 200; at least 30 so the
limited run spans >= 2 intervals), SOC_IRQ_RATE_JSON (write the measurements there).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.benches.soc import SocBench

TX_RING, RX_RING = 0x1000, 0x2000
RING_SIZE = 64
TX_DATA, RX_DATA = 0x10000, 0x80000
BUFFER_BYTES = 2048
FRAME_BYTES = 1514
INTERVAL_US = 125
DONE_CAUSES = regs.IRQ_STATUS_TX_DONE_MASK | regs.IRQ_STATUS_RX_DONE_MASK


def now_ps() -> int:
    return round(get_sim_time("ps"))


def payload(seq: int, direction: int) -> bytes:
    return random.Random(seq * 2 + direction).randbytes(FRAME_BYTES)


class InterruptDrivenHost:
    """The host as an interrupt handler only (see the module docstring).

    Members: ``rises_ps`` (every rising edge of ``irq``), ``statuses`` (each IRQ_STATUS
    value the handler read), ``tx_reaped`` / ``rx_frames`` (frames handled, in order),
    ``last_handled_ps``.
    """

    def __init__(self, bench: SocBench, tx_ring, rx_ring, frames: int):
        self.bench = bench
        self.tx_ring = tx_ring
        self.rx_ring = rx_ring
        self.frames = frames
        self.tx_posted = 0
        self.tx_reaped = 0
        self.rx_frames: list[bytes] = []
        self.rises_ps: list[int] = []
        self.statuses: list[int] = []
        self.last_handled_ps = 0
        cocotb.start_soon(self._time_rises())

    async def _time_rises(self):
        while True:
            await RisingEdge(self.bench.dut.irq)
            self.rises_ps.append(now_ps())

    @property
    def done(self) -> bool:
        return self.tx_reaped == self.frames and len(self.rx_frames) == self.frames

    def post_tx(self) -> bool:
        """Top the TX ring up from the frames not yet posted; True if any was posted."""
        posted = False
        while self.tx_posted < self.frames and self.tx_ring.room() >= 1:
            seq = self.tx_posted
            address = TX_DATA + (seq % RING_SIZE) * BUFFER_BYTES
            self.bench.memory.write(address, payload(seq, 0))
            self.tx_ring.post(Descriptor.tx(address, FRAME_BYTES, sop=True, eop=True))
            self.tx_posted += 1
            posted = True
        return posted

    async def open(self):
        for index in range(RING_SIZE - 1):
            self.rx_ring.post(Descriptor.rx(RX_DATA + index * BUFFER_BYTES, BUFFER_BYTES))
        await self.rx_ring.doorbell()
        self.post_tx()

    async def run(self):
        """The interrupt handler, until every frame of both directions was handled."""
        dut = self.bench.dut
        while not self.done:
            if not dut.irq.value:  # level-triggered: a line still high is served again
                await RisingEdge(dut.irq)
            status = await self.bench.read_reg(regs.IRQ_STATUS)
            self.statuses.append(status)
            await self.bench.write_reg(regs.IRQ_STATUS, status)
            self._reap_tx()
            if await self._reap_rx():
                await self.rx_ring.doorbell()
            if self.post_tx():
                await self.tx_ring.doorbell()
            self.last_handled_ps = now_ps()
            # Return from the handler: the registered line falls a cycle after the clear.
            await ClockCycles(dut.clk, 2)

    def _reap_tx(self):
        ring = self.tx_ring
        while ring.head != ring.tail and not ring.read(ring.head).own:
            written_back = ring.read(ring.head)
            assert written_back.done_length == FRAME_BYTES, f"TX write-back {written_back}"
            ring.head = (ring.head + 1) % ring.size
            self.tx_reaped += 1

    async def _reap_rx(self) -> bool:
        ring = self.rx_ring
        reposted = False
        while ring.head != ring.tail and not ring.read(ring.head).own:
            written_back = ring.read(ring.head)
            assert written_back.sop and written_back.eop and not written_back.error, (
                f"RX write-back {written_back}"
            )
            self.rx_frames.append(
                self.bench.memory.read(written_back.addr, written_back.frame_length)
            )
            ring.head = (ring.head + 1) % ring.size
            ring.post(Descriptor.rx(written_back.addr, BUFFER_BYTES))
            reposted = True
        return reposted


async def run_line_rate(dut, interval_us: int, frames: int) -> dict:
    """Both directions at line rate under ``interval_us``; check every frame; return the
    measurements."""
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    await bench.write_reg(regs.IRQ_MIN_INTERVAL, interval_us)
    eop = int(regs.IrqMode.EOP)
    await bench.write_reg(
        regs.IRQ_MODE, (eop << regs.IRQ_MODE_TX_MODE_SHIFT) | (eop << regs.IRQ_MODE_RX_MODE_SHIFT)
    )
    tx_ring = await bench.open_ring("TX", TX_RING, RING_SIZE)
    rx_ring = await bench.open_ring("RX", RX_RING, RING_SIZE)
    host = InterruptDrivenHost(bench, tx_ring, rx_ring, frames)
    await host.open()
    await bench.write_reg(regs.IRQ_ENABLE, DONE_CAUSES)
    for seq in range(frames):
        bench.rx_source.send_nowait(GmiiFrame.from_payload(payload(seq, 1)))
    await tx_ring.doorbell()

    # A frame takes 12.3 µs at line rate; the margin covers the last interval.
    timeout_us = frames * 13 + 2 * interval_us + 100
    await with_timeout(host.run(), timeout_us, "us")
    wire = [await bench.tx_sink.recv() for _ in range(frames)]
    await Timer(2 * interval_us + 1, "us")  # no interrupt may be left pending

    for seq, frame in enumerate(wire):
        assert frame.error is None and frame.check_fcs(), f"TX frame {seq} damaged"
        assert frame.get_payload() == payload(seq, 0), f"TX frame {seq} wrong or reordered"
    assert host.rx_frames == [payload(seq, 1) for seq in range(frames)], "RX frames wrong"
    counters = await bench.read_regs(
        "TX_FRAMES", "RX_FRAMES", "RX_DROPS", "RX_FIFO_OVERFLOWS", "STATS_TX_UNDERRUNS",
        "IRQ_COUNT", "IRQ_STATUS",
    )  # fmt: skip
    assert counters["TX_FRAMES"] == counters["RX_FRAMES"] == frames, counters
    assert counters["RX_DROPS"] == counters["RX_FIFO_OVERFLOWS"] == 0, counters
    assert counters["STATS_TX_UNDERRUNS"] == 0, counters
    assert counters["IRQ_STATUS"] == 0, "a cause was left unserved"
    assert counters["IRQ_COUNT"] == len(host.rises_ps), "IRQ_COUNT disagrees with the pin"
    assert all(status & DONE_CAUSES for status in host.statuses), "an interrupt with no cause"

    # While frames flow: from the first rise to the last one before the last frame ended.
    rises = host.rises_ps
    traffic_end_ps = max(round(frame.sim_time_end) for frame in wire)
    during = [t for t in rises if t <= traffic_end_ps]
    result = {
        "interval_us": interval_us,
        "frames_per_direction": frames,
        "irqs": len(rises),
        "irqs_during_traffic": len(during),
        "irqs_per_second": (len(during) - 1) / ((during[-1] - during[0]) * 1e-12),
        "frames_per_irq": 2 * frames / len(rises),
        "min_spacing_ns": min(b - a for a, b in zip(rises, rises[1:], strict=False)) / 1000,
        "max_spacing_during_traffic_ns": max(
            b - a for a, b in zip(during, during[1:], strict=False)
        )
        / 1000,
        "handler_runs": len(host.statuses),
        "traffic_end_to_last_handler_ns": (host.last_handled_ps - traffic_end_ps) / 1000,
    }
    dut._log.info("IRQ_MIN_INTERVAL %d µs: %s", interval_us, result)
    return result


def frames_from_env() -> int:
    frames = int(os.environ.get("SOC_IRQ_RATE_FRAMES", "200"))
    if frames < 30:
        raise ValueError(f"SOC_IRQ_RATE_FRAMES must be >= 30 (two intervals), not {frames}")
    return frames


def record(result: dict):
    path = os.environ.get("SOC_IRQ_RATE_JSON")
    if path:
        file = Path(path)
        results = json.loads(file.read_text()) if file.exists() else {}
        results[str(result["interval_us"])] = result
        file.write_text(json.dumps(results, indent=2))


@cocotb.test()
async def test_without_a_limit_each_frame_interrupts(dut):
    """IRQ_MIN_INTERVAL = 0: at line rate the handler runs about once per frame."""
    result = await run_line_rate(dut, 0, 30)
    record(result)
    # Two directions at 81,274 frames/s each; TX and RX completions that fall into one
    # handler run share an interrupt, so at least one interrupt per frame of one direction.
    assert result["irqs_per_second"] > 81_274, result
    assert result["frames_per_irq"] < 2.0, result


@cocotb.test()
async def test_interval_limits_the_rate_and_loses_no_cause(dut):
    """IRQ_MIN_INTERVAL = 125 µs: 8,000 interrupts/s within 1%, no rise closer than the
    interval, every frame handled, and the last causes served within one interval."""
    result = await run_line_rate(dut, INTERVAL_US, frames_from_env())
    record(result)
    interval_ns = INTERVAL_US * 1000
    assert abs(result["irqs_per_second"] - 8000) <= 80, result
    assert result["min_spacing_ns"] >= interval_ns, result
    # Causes arrive every few µs, so each interval's end finds one pending and fires.
    assert result["max_spacing_during_traffic_ns"] <= interval_ns + 10, result
    assert result["traffic_end_to_last_handler_ns"] <= interval_ns + 5_000, result
