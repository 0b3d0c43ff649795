"""802.3x flow control of ``macdma_soc``: an overloaded receiver pushes back with PAUSE.

The link partner is played by the bench: it sends frames back to back on the receive wire
and honours the PAUSE frames the SoC puts on its transmit wire (it starts no frame while
paused). The host posts RX buffers more slowly than the wire brings frames, so the
receiver is overloaded; without flow control frames are dropped, with it the SoC pauses
the partner and every frame arrives.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.benches.pausing_peer import PausingPeer
from macdma.sim.benches.soc import SocBench

RX_RING = 0x2000
RX_DATA = 0x40000
BUFFER_BYTES = 1536
RING_SIZE = 8
FRAME_BYTES = 1000
FRAMES = 40
#: The host re-posts one buffer this long after reaping a frame: about 40% of the
#: 1000 Mb/s wire's frame rate at 1000-byte frames, so the receiver is overloaded.
SERVICE_NS = 20_000
STATION = 0x02AABBCCDDEE


def payload(length: int, seed: int) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


async def slow_host(bench: SocBench, ring, received: list[bytes]):
    """Reaps frames for ever, re-posting each buffer SERVICE_NS after its frame arrived."""
    while True:
        index = ring.head
        done = await ring.reap(timeout_us=1e9)
        assert done.eop and not done.error, f"descriptor {index}: {done}"
        received.append(bytes(bench.memory.read(done.addr, done.done_length)))
        await Timer(SERVICE_NS, "ns")
        ring.post(Descriptor.rx(RX_DATA + index * BUFFER_BYTES, BUFFER_BYTES))
        await ring.doorbell()


async def overload(dut, flow_control: bool) -> dict:
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    await bench.write_reg(regs.MAC_ADDR_HI, STATION >> 32)
    await bench.write_reg(regs.MAC_ADDR_LO, STATION & 0xFFFF_FFFF)
    fc_ctrl = regs.MAC_FC_CTRL_RX_PAUSE_MASK | regs.MAC_FC_CTRL_TX_PAUSE_MASK
    await bench.write_reg(regs.MAC_FC_CTRL, fc_ctrl if flow_control else 0)
    ring = await bench.open_ring("RX", RX_RING, RING_SIZE)
    for index in range(RING_SIZE - 1):
        ring.post(Descriptor.rx(RX_DATA + index * BUFFER_BYTES, BUFFER_BYTES))
    await ring.doorbell()

    peer = PausingPeer(bench.rx_source, bench.tx_sink, GMII_1000.byte_time_ns, STATION)
    peer.start()
    received: list[bytes] = []
    host = cocotb.start_soon(slow_host(bench, ring, received))
    frames = [payload(FRAME_BYTES, n) for n in range(FRAMES)]
    started_ps = get_sim_time("ps")
    for data in frames:
        peer.send_nowait(GmiiFrame.from_payload(data))
    await with_timeout(peer.wait(), 100, "ms")
    await Timer(5, "us")  # the last frame through the MAC and into the FIFO
    counts = await bench.read_regs("RX_DROPS", "RX_FIFO_OVERFLOWS", "STATS_RX_FRAMES_GOOD")
    assert counts["STATS_RX_FRAMES_GOOD"] == FRAMES, "the MAC did not see every frame"
    expected = FRAMES - counts["RX_DROPS"] - counts["RX_FIFO_OVERFLOWS"]
    waited_us = 0
    while len(received) < expected:
        await Timer(1, "us")
        waited_us += 1
        assert waited_us < 10_000, f"{len(received)} of {expected} frames reaped"
    elapsed_ps = get_sim_time("ps") - started_ps
    host.cancel()
    final = await bench.read_regs(
        "RX_FRAMES", "RX_DROPS", "RX_FIFO_OVERFLOWS", "STATS_TX_XOFF", "STATS_TX_XON"
    )
    accounted = final["RX_FRAMES"] + final["RX_DROPS"] + final["RX_FIFO_OVERFLOWS"]
    assert (
        accounted == FRAMES == len(received) + counts["RX_DROPS"] + counts["RX_FIFO_OVERFLOWS"]
    ), f"frames unaccounted for: {final}, {len(received)} reaped"
    result = {
        **final,
        "pause_frames_seen": len(peer.pauses),
        "other_tx_frames": peer.tx_frames_unread,
        "peer_paused_us": peer.stalled_ps / 1e6,
        "goodput_mbps": len(received) * FRAME_BYTES * 8 / (elapsed_ps / 1e6),
        "xoff": final["STATS_TX_XOFF"],
        "xon": final["STATS_TX_XON"],
        "received": received,
        "frames": frames,
    }
    dut._log.info(
        "flow control %s: %d frames delivered, %d dropped, %d FIFO overflows, "
        "%d PAUSE frames (%d XOFF, %d XON), peer paused %.1f us, %.1f Mb/s delivered",
        "on" if flow_control else "off",
        final["RX_FRAMES"],
        final["RX_DROPS"],
        final["RX_FIFO_OVERFLOWS"],
        len(peer.pauses),
        final["STATS_TX_XOFF"],
        final["STATS_TX_XON"],
        result["peer_paused_us"],
        result["goodput_mbps"],
    )
    return result


@cocotb.test()
async def test_overload_without_flow_control_drops(dut):
    """Flow control off: the partner never pauses, frames without a buffer are dropped,
    and every frame is either delivered intact or counted as dropped."""
    result = await overload(dut, flow_control=False)
    assert result["RX_DROPS"] > 0, "the overload did not overload"
    assert result["pause_frames_seen"] == 0 and result["xoff"] == 0
    received = result["received"]
    sent = set(result["frames"])
    assert all(data in sent for data in received), "a delivered frame was corrupted"


@cocotb.test()
async def test_overload_with_flow_control_pauses_instead(dut):
    """Flow control on: the SoC sends XOFF at the RX FIFO's high mark and XON below the
    low mark, the partner pauses, nothing is dropped and every frame arrives in order."""
    result = await overload(dut, flow_control=True)
    assert result["RX_DROPS"] == 0 and result["RX_FIFO_OVERFLOWS"] == 0, result
    assert result["received"] == result["frames"], "frames lost or reordered"
    assert result["xoff"] >= 1 and result["xon"] >= 1, "no XOFF/XON pair was sent"
    assert result["pause_frames_seen"] == result["xoff"] + result["xon"]
    assert result["other_tx_frames"] == 0, "the SoC sent a frame that is not a PAUSE"
    assert result["peer_paused_us"] > 0, "the partner never had to wait"
