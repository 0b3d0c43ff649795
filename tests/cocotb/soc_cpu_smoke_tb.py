"""``macdma_soc_cpu`` in brief, for Icarus (about 3,400 CPU cycles per second there): the
C driver sends two pktgen frames and receives two frames, intact (soc_cpu_tb.py has the
checks at length)."""

from __future__ import annotations

import cocotb
from cocotbext.eth import GmiiFrame
from soc_cpu_tb import check_pktgen_frame, run_tx, rx_frames

from macdma.firmware.c import abi
from macdma.sim.benches.cpu_soc import CpuSocBench


@cocotb.test()
async def cpu_smoke(dut):
    """Two frames out and two in."""
    bench, wire, results = await run_tx(dut, 2, 128, tx_ring=8, rx_ring=4)
    assert [check_pktgen_frame(f, 128, "smoke") for f in wire] == [0, 1]
    assert results["tx_packets"] == 2
    bench = CpuSocBench(dut)
    await bench.start(mode=abi.MODES["rx_sink"], frames=2, tx_ring=8, rx_ring=4)
    frames = rx_frames(5, seed=1)[2:4]
    await bench.wait_ready(timeout_us=20000)
    for data in frames:
        await bench.rx_source.send(GmiiFrame.from_payload(data))
    results = await bench.wait_exit(timeout_us=5000)
    log = bench.rx_log(2)
    assert [(e["length"], e["hash"]) for e in log] == [
        (len(d), abi.frame_hash(d)) for d in frames
    ], log
