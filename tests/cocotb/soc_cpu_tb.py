"""``macdma_soc_cpu``: the C driver (firmware/c/) on the soft core moves frames through the
SoC RTL, checked on the wire by cocotbext-eth's GMII models.

- ``cpu_tx_frames_intact``: the pktgen loop sends SOC_CPU_TX_FRAMES frames with 0..16
  extra fragments under each IRQ strategy; every frame arrives once, in order, with a good
  FCS and exactly the bytes abi.pktgen_frame gives, and the driver reaped them all.
- ``cpu_rx_frames_intact``: SOC_CPU_RX_FRAMES frames of 60..1514 bytes (random contents,
  paced so the sink keeps up) reach the RX sink through chained 256-byte buffers of an
  8-entry ring under each IRQ strategy (the buffers come round while their lines may still
  be cached); its log has every frame's length and hash, and nothing was dropped.
- ``cpu_bad_descriptor_recovers``: the driver posts frame 10's SOP descriptor with length
  0 (its planted fault); the TX channel halts with ZERO_LENGTH_DESC, the ISR records it,
  resets the channel, drops what was queued and goes on: the frames on the wire are intact
  and in order, frame 10 is not among them, every frame is accounted for (on the wire,
  dropped by the driver, flushed from the TX FIFO by the reset, or cut by it with tx_er),
  and the frames after the recovery all arrive.

Environment: SOC_CPU_TX_FRAMES (default 24), SOC_CPU_RX_FRAMES (default 24).
"""

from __future__ import annotations

import os
import random

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotbext.eth import GmiiFrame

from macdma.firmware import regs
from macdma.firmware.c import abi
from macdma.sim.benches.cpu_soc import CpuSocBench

TX_FRAMES = int(os.environ.get("SOC_CPU_TX_FRAMES", "24"))
RX_FRAMES = int(os.environ.get("SOC_CPU_RX_FRAMES", "24"))
# Eight 256-byte buffers: 2 KiB, half the data cache, so every buffer comes back to the
# DMA while the core may still hold its lines: a missing invalidation shows.
RX_RING = 8
RX_BUF_BYTES = 256
# Between RX frames: enough for the sink to copy and hash a 1514-byte frame at 100 MHz
# and post its six buffers again before the next one arrives (measured: up to about 8,000
# cycles from the EOP interrupt to the refill; a frame that finds no buffer is cut, and
# the log shows it).
RX_PACE_US = 150
FAULT_FRAME = 10


async def receive(bench: CpuSocBench, count: int, timeout_us: float) -> list[GmiiFrame]:
    return [await with_timeout(bench.tx_sink.recv(), timeout_us, "us") for _ in range(count)]


def check_pktgen_frame(frame: GmiiFrame, frame_bytes: int, what: str) -> int:
    """The frame's sequence number, after checking it is an intact pktgen frame."""
    assert frame.check_fcs() and not frame.error, f"{what}: bad FCS or tx_er on the wire"
    payload = frame.get_payload()
    offset = abi.PKTGEN_SEQ_OFFSET
    seq = int.from_bytes(payload[offset : offset + 4], "little")
    want = abi.pktgen_frame(seq, frame_bytes)
    differs = [i for i, (a, b) in enumerate(zip(payload, want, strict=False)) if a != b]
    assert payload == want, (
        f"{what} (seq {seq}): {len(payload)} bytes on the wire, {len(want)} expected, "
        f"first difference at {differs[0] if differs else None}"
    )
    return seq


async def run_tx(dut, frames: int, frame_bytes: int, **config):
    """Start pktgen; return the bench, the frames on the wire and the results."""
    bench = CpuSocBench(dut)
    await bench.start(mode=abi.MODES["tx_pktgen"], frames=frames, frame_bytes=frame_bytes, **config)
    await bench.wait_ready()
    wire = await receive(bench, frames, timeout_us=2000)
    results = await bench.wait_exit(timeout_us=500)
    return bench, wire, results


@cocotb.test()
@cocotb.parametrize(
    (
        ("strategy", "extra_frags", "frame_bytes"),
        [
            ("per-desc", 3, 1514),
            ("eop", 0, 1514),
            ("coalesce", 5, 1000),
            ("polling", 16, 1514),
            ("napi", 1, 60),
        ],
    )
)
async def cpu_tx_frames_intact(dut, strategy: str, extra_frags: int, frame_bytes: int):
    config = {"strategy": abi.STRATEGIES[strategy], "extra_frags": extra_frags}
    if strategy == "coalesce":
        config.update(coalesce_frames=4, coalesce_us=20)
    bench, wire, results = await run_tx(dut, TX_FRAMES, frame_bytes, **config)
    seqs = [check_pktgen_frame(f, frame_bytes, f"{strategy} frame {i}") for i, f in enumerate(wire)]
    assert seqs == list(range(TX_FRAMES)), f"{strategy}: sequence on the wire {seqs}"
    assert results["tx_packets"] == TX_FRAMES and results["tx_bytes"] == TX_FRAMES * frame_bytes
    assert results["tx_dropped"] == 0 and results["dma_errors"] == 0
    if strategy == "polling":
        assert results["irqs"] == 0 and results["timer_irqs"] > 0, results
    else:
        assert results["irqs"] > 0 and bench.irq_rises > 0, (
            f"{strategy}: {results['irqs']} ISR runs, {bench.irq_rises} rises of irq"
        )
    cycles = results["cycles_lo"] | results["cycles_hi"] << 32
    dut._log.info(
        f"TX {strategy}, {1 + extra_frags} fragments, {frame_bytes} B: {TX_FRAMES} frames, "
        f"{cycles} cycles, {results['irqs']} IRQs, {results['timer_irqs']} timer IRQs, "
        f"{results['queue_stops']} queue stops, {cycles // TX_FRAMES} cycles per frame"
    )


def rx_frames(count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    sizes = [60, 1514, 512, 513, 1024] + [rng.randint(60, 1514) for _ in range(count - 5)]
    return [bytes.fromhex("020000000001") + rng.randbytes(size - 6) for size in sizes[:count]]


@cocotb.test()
@cocotb.parametrize(strategy=list(abi.STRATEGIES))
async def cpu_rx_frames_intact(dut, strategy: str):
    config = {
        "mode": abi.MODES["rx_sink"],
        "frames": RX_FRAMES,
        "strategy": abi.STRATEGIES[strategy],
        "rx_buf_bytes": RX_BUF_BYTES,
        "rx_ring": RX_RING,
        "poll_us": 10,
    }
    if strategy == "coalesce":
        config.update(coalesce_frames=4, coalesce_us=20)
    bench = CpuSocBench(dut)
    await bench.start(**config)
    await bench.wait_ready()
    frames = rx_frames(RX_FRAMES, seed=len(strategy))
    for data in frames:
        await bench.rx_source.send(GmiiFrame.from_payload(data))
        await Timer(RX_PACE_US, "us")
    results = await bench.wait_exit(timeout_us=500)
    log = bench.rx_log(results["rx_logged"])
    assert results["rx_logged"] == RX_FRAMES, f"{strategy}: {results}"
    for index, (entry, data) in enumerate(zip(log, frames, strict=True)):
        # A cut frame (no buffer in time: the sink too slow) shows here as a short length.
        buffers = -(-len(data) // RX_BUF_BYTES)
        logged = (entry["length"], entry["hash"], entry["status"])
        assert logged == (len(data), abi.frame_hash(data), 1 | buffers << 8), (
            f"{strategy}: frame {index} ({len(data)} bytes) logged as {entry}"
        )
    assert results["rx_packets"] == RX_FRAMES and results["rx_errors"] == 0
    assert results["rx_bytes"] == sum(len(data) for data in frames)
    assert results["rx_dropped"] == 0 and results["rx_dropped_hw"] == 0, results
    cycles = results["cycles_lo"] | results["cycles_hi"] << 32
    dut._log.info(
        f"RX {strategy}: {RX_FRAMES} frames, {cycles} cycles, {results['irq_cycles']} in the "
        f"trap handler, {results['irqs']} IRQs, {results['timer_irqs']} timer IRQs"
    )


@cocotb.test()
async def cpu_bad_descriptor_recovers(dut):
    frames, frame_bytes = 30, 1514
    bench = CpuSocBench(dut)
    await bench.start(
        mode=abi.MODES["tx_pktgen"],
        frames=frames,
        frame_bytes=frame_bytes,
        extra_frags=1,
        fault_zero_length_frame=FAULT_FRAME,
    )
    await bench.wait_ready()
    results = await bench.wait_exit(timeout_us=3000)
    await Timer(20, "us")  # the firmware waited for the MAC: nothing more comes
    wire = []
    while not bench.tx_sink.empty():
        wire.append(bench.tx_sink.recv_nowait())
    assert results["dma_errors"] == 1 and results["last_error_channel"] == 0, results
    assert results["last_error_code"] == regs.DmaErrorCode.ZERO_LENGTH_DESC, results
    assert results["tx_dropped"] >= 1, results
    assert results["tx_packets"] + results["tx_dropped"] == frames, results
    good = [f for f in wire if f.check_fcs() and not f.error]
    # A frame the MAC was sending when the reset emptied the TX FIFO leaves cut (tx_er).
    cut = len(wire) - len(good)
    seqs = [check_pktgen_frame(f, frame_bytes, f"frame {i}") for i, f in enumerate(good)]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), f"out of order: {seqs}"
    assert FAULT_FRAME not in seqs, f"the zero-length frame went out: {seqs}"
    assert cut <= 1, f"{cut} cut frames on the wire"
    assert len(good) + cut == frames - results["tx_dropped"] - results["tx_reset_discards"], (
        f"{len(good)} good and {cut} cut frames on the wire; {results}"
    )
    # Before the fault, a prefix went out (the reset flushes what waited in the TX FIFO);
    # recovered: the last frame went out.
    before = [seq for seq in seqs if seq < FAULT_FRAME]
    assert before == list(range(len(before))) and seqs[-1] == frames - 1, seqs
    dut._log.info(
        f"recovered: {results['tx_dropped']} dropped, {results['tx_reset_discards']} "
        f"flushed by the reset, {cut} cut, {len(good)} of {frames} on the wire; seqs {seqs}"
    )
