"""cocotb module behind the loopback row of ``macdma bench``: back-to-back frames from a
GmiiSource through ``macdma_gmii_loopback`` into a GmiiSink.

Env ``MACDMA_BENCH_FRAMES`` and ``MACDMA_BENCH_FRAME_BYTES`` size the run;
``MACDMA_BENCH_RECORD`` names the JSON file the module writes (simulated ns, wall
seconds of the simulation alone, frames seen and their rate from the sink's stamps).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import cocotb
from cocotb.triggers import ClockCycles, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.sim.benches.gmii import GMII_1000, GmiiPhy, tx_rate

IFG_BYTES = 12
FRAMES_ENV = "MACDMA_BENCH_FRAMES"
FRAME_BYTES_ENV = "MACDMA_BENCH_FRAME_BYTES"
RECORD_ENV = "MACDMA_BENCH_RECORD"


@cocotb.test()
async def loopback(dut):
    """Send the frames through the wire; every one must come back intact and in order."""
    wall_started = time.monotonic()
    frames = int(os.environ.get(FRAMES_ENV, "200"))
    frame_bytes = int(os.environ.get(FRAME_BYTES_ENV, "1514"))
    phy = GmiiPhy(dut, GMII_1000, IFG_BYTES)
    phy.start()
    dut.tx_rst.value = dut.rx_rst.value = 1
    await ClockCycles(dut.rx_clk, 4)
    dut.tx_rst.value = dut.rx_rst.value = 0
    await ClockCycles(dut.rx_clk, 4)
    payloads = [bytes((seq + n) & 0xFF for n in range(frame_bytes)) for seq in range(frames)]
    for payload in payloads:
        phy.rx_source.send_nowait(GmiiFrame.from_payload(payload))
    slot_ns = (8 + frame_bytes + 4 + IFG_BYTES) * GMII_1000.byte_time_ns
    received = await with_timeout(_receive(phy, frames), round(2 * frames * slot_ns + 10_000), "ns")
    damaged = [
        seq
        for seq, (frame, payload) in enumerate(zip(received, payloads, strict=True))
        if not frame.check_fcs() or bytes(frame.get_payload()) != payload
    ]
    rate = tx_rate(received, GMII_1000, IFG_BYTES)
    record = {
        "frames": len(received),
        "frame_bytes": frame_bytes,
        "percent_of_line_rate": rate.percent_of_line_rate,
        "sim_ns": get_sim_time("ns"),
        "wall_seconds": time.monotonic() - wall_started,
    }
    path = os.environ.get(RECORD_ENV)
    if path:
        Path(path).write_text(json.dumps(record))
    assert not damaged, f"{len(damaged)} frame(s) damaged on the loopback; first: {damaged[0]}"


async def _receive(phy: GmiiPhy, frames: int) -> list:
    return [await phy.tx_sink.recv() for _ in range(frames)]
