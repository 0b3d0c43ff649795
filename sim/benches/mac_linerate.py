"""cocotb module behind ``macdma demo``: back-to-back minimum and maximum frames through
``macdma_eth_mac`` both ways at 1000 Mb/s, timed on the wire models.

Parameters come from the environment: MACDMA_DEMO_FRAMES (frames per size and
direction) and MACDMA_DEMO_JSON (where results are merged in, one entry per size).
"""

import json
import os
from pathlib import Path

import cocotb
from cocotb.triggers import with_timeout

from macdma.sim.benches.gmii import GMII_1000, rx_rate, tx_rate
from macdma.sim.benches.mac import MacBench

SIZES = {64: 60, 1518: 1514}  # Ethernet frame size -> bytes the client hands over


@cocotb.test()
@cocotb.parametrize(frame_size=list(SIZES))
async def measure_line_rate(dut, frame_size):
    """Measure TX and RX throughput of back-to-back frames of one size."""
    frames = int(os.environ.get("MACDMA_DEMO_FRAMES", "100"))
    bench = MacBench(dut, GMII_1000)
    await bench.start()
    payload = bytes(n & 0xFF for n in range(SIZES[frame_size]))
    tx_frames, rx_frames = await with_timeout(bench.back_to_back([payload] * frames), 100, "ms")
    delivered_intact = all(bytes(f.tdata) == payload for f in rx_frames)
    sent_intact = all(f.check_fcs() and f.get_payload() == payload for f in tx_frames)
    rates = [
        tx_rate(tx_frames, GMII_1000, bench.ifg),
        rx_rate(bench.rx_last_times_ps, frame_size, GMII_1000, bench.ifg),
    ]
    record = {
        "frame_size": frame_size,
        "link_mbps": GMII_1000.line_rate_mbps,
        "ifg_bytes": bench.ifg,
        "intact": delivered_intact and sent_intact,
        "rates": [rate.as_dict() for rate in rates],
    }
    path = os.environ.get("MACDMA_DEMO_JSON")
    if path:
        results = json.loads(Path(path).read_text()) if Path(path).is_file() else {}
        results[str(frame_size)] = record
        Path(path).write_text(json.dumps(results, indent=2))
    assert record["intact"], "frames corrupted"
