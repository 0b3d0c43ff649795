"""``macdma_soc``: a channel reset mid-traffic counts exactly the frames it discards.

TX_RESET_DISCARDS counts frames written back (the driver counts them sent) that a
TX_CTRL.reset flushed from the TX FIFO before the MAC started them; RX_RESET_DISCARDS
frames the RX channel took from the RX FIFO and had not written back any descriptor of
when RX_CTRL.reset took effect (docs/descriptors.md, "Channel reset"). Each test resets a
channel with frames in those states and checks that every frame is accounted for:
on the wire (or delivered), cut and counted, or counted as discarded, and nothing twice.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotbext.eth import GmiiFrame
from soc_rx_tb import RxDriver

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.sim.benches.guard import MemoryGuard
from macdma.sim.benches.soc import SocBench

TX_RING = 0x1000
RX_RING = 0x2000
TX_DATA = 0x10000
TX_FRAMES = 6
TX_FRAME_BYTES = 1000
RX_FRAMES = 10
RX_FRAME_BYTES = 80


def payload(seq: int, length: int) -> bytes:
    """A frame that names its sequence number in its first two bytes."""
    rng = random.Random(seq)
    return seq.to_bytes(2, "big") + bytes(rng.getrandbits(8) for _ in range(length - 2))


async def started(dut) -> SocBench:
    bench = SocBench(dut)
    await bench.start()
    return bench


async def wait_until(read, done, what: str, timeout_us: float = 200.0):
    """Poll ``read()`` every 100 ns until ``done(value)``; return the value."""
    for _ in range(int(timeout_us * 10)):
        value = await read()
        if done(value):
            return value
        await Timer(100, "ns")
    raise TimeoutError(f"{what}: not reached in {timeout_us} µs (last value {value})")


@cocotb.test()
async def test_tx_reset_discards_written_back_frames(dut):
    """Six 1000-byte frames, TX_CTRL.reset once three are written back: each written-back
    frame is on the wire intact, cut with tx_er (TX_DROPS) or in TX_RESET_DISCARDS, once."""
    bench = await started(dut)
    ring = await bench.open_ring("TX", TX_RING, 16, burst_beats=16, prefetch=4)
    frames = [payload(n, TX_FRAME_BYTES) for n in range(TX_FRAMES)]
    eop_index = []
    for n, data in enumerate(frames):
        address = TX_DATA + n * 0x800 + 1
        bench.memory.write(address, data)
        eop_index.append(ring.post(Descriptor.tx(address, len(data), sop=True, eop=True)))
    before = await bench.read_regs("TX_RESET_DISCARDS", "TX_DROPS", "TX_FRAMES")
    await ring.doorbell()
    await wait_until(
        lambda: bench.read_reg(regs.TX_FRAMES),
        lambda v: v - before["TX_FRAMES"] >= 3,
        "three TX frames written back",
    )
    await bench.write_reg(regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
    await Timer(40, "us")  # the wire drains whatever the MAC still had
    good, cut = [], 0
    while not bench.tx_sink.empty():
        frame = bench.tx_sink.recv_nowait()
        if frame.error is not None or not frame.check_fcs():
            cut += 1
        else:
            good.append(bytes(frame.get_payload()))
    after = await bench.read_regs("TX_RESET_DISCARDS", "TX_DROPS", "TX_FRAMES")
    discards = after["TX_RESET_DISCARDS"] - before["TX_RESET_DISCARDS"]
    drops = after["TX_DROPS"] - before["TX_DROPS"]
    # The frames the driver counts sent: written back, and the others TX_FRAMES counts.
    sent = after["TX_FRAMES"] - before["TX_FRAMES"]
    written_back = sum(not ring.read(index).own for index in eop_index)
    assert written_back <= sent, f"TX_FRAMES moved by {sent}, {written_back} written back"
    assert good == frames[: len(good)], "the frames on the wire are not the first ones, intact"
    assert drops == cut, f"TX_DROPS moved by {drops}, {cut} frames left the wire cut"
    assert sent == len(good) + cut + discards, (
        f"the driver counts {sent} frames sent: {len(good)} on the wire, {cut} cut, "
        f"TX_RESET_DISCARDS moved by {discards}"
    )
    assert len(good) + cut < sent, (
        "the reset discarded no written-back frame: the test did not reach its case"
    )

    # After the reset the counter stays put and traffic flows: post two frames from slot 0.
    ring = await bench.open_ring("TX", TX_RING, 16)
    for n in range(2):
        address = TX_DATA + n * 0x800 + 3
        bench.memory.write(address, frames[n])
        ring.post(Descriptor.tx(address, len(frames[n]), sop=True, eop=True))
    await ring.doorbell()
    for n in range(2):
        frame = await bench.tx_sink.recv()
        assert frame.check_fcs() and bytes(frame.get_payload()) == frames[n], f"frame {n}"
    final = await bench.read_reg(regs.TX_RESET_DISCARDS)
    assert final == after["TX_RESET_DISCARDS"], "TX_RESET_DISCARDS moved without a reset"


CUT_FRAME_BYTES = 1500  # 12 µs on the wire at 1 Gb/s: still being sent at the reset
RESET_BUSY = regs.TX_STATUS_HALTED_MASK | regs.TX_STATUS_RESETTING_MASK


async def send_one_and_reset(dut, *, fail_writeback: bool, hold_b: bool) -> dict:
    """One 1500-byte frame; once the MAC is sending it, TX_CTRL.reset as a driver's
    recovery does. ``fail_writeback``: host memory answers SLVERR to the frame's EOP
    write-back, which halts the channel (the halt is the driver's cue to reset);
    ``hold_b``: the write-back's B response is held until after the reset, so it lands
    late. Returns the wire's frames and the counters' moves."""
    bench = await started(dut)
    ring = await bench.open_ring("TX", TX_RING, 16)
    data = payload(7, CUT_FRAME_BYTES)
    bench.memory.write(TX_DATA + 1, data)
    index = ring.post(Descriptor.tx(TX_DATA + 1, len(data), sop=True, eop=True))
    names = (
        "TX_DROPS",
        "TX_RESET_DISCARDS",
        "STATS_TX_FRAMES_BAD",
        "STATS_TX_UNDERRUNS",
        "TX_FRAMES",
    )
    before = await bench.read_regs(*names)
    if fail_writeback:
        desc = ring.address(index)
        bench.memory.error_windows.append((desc, desc + 16, "w"))
    b_channel = bench.memory.write_if.b_channel
    b_channel.pause = hold_b
    await ring.doorbell()
    if fail_writeback:
        await wait_until(
            lambda: bench.read_reg(regs.TX_STATUS),
            lambda v: v & regs.TX_STATUS_HALTED_MASK,
            "the channel halted on the write-back error",
        )
        bench.memory.error_windows.clear()
    for _ in range(2000):  # the MAC starts the frame once it is whole in the TX FIFO
        if dut.gmii_tx_en.value == 1:
            break
        await Timer(10, "ns")
    else:
        raise TimeoutError("the MAC did not start the frame within 20 µs")
    await Timer(2, "us")  # the MAC is well into the frame, its write-back done or held
    written = [burst for burst in bench.memory.bursts if burst.write]
    assert len(written) == 1, f"the write-back did not reach the bus once: {written}"
    await bench.write_reg(regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
    await Timer(1, "us")
    b_channel.pause = False
    await wait_until(
        lambda: bench.read_reg(regs.TX_STATUS),
        lambda v: not v & RESET_BUSY,
        "TX reset done",
    )
    await Timer(20, "us")  # the wire has ended the cut frame and the counters moved
    frames = []
    while not bench.tx_sink.empty():
        frames.append(bench.tx_sink.recv_nowait())
    after = await bench.read_regs(*names)
    moved = {name: after[name] - before[name] for name in names}
    return {
        "frames": frames,
        "driver_dropped": driver_drops(moved["TX_FRAMES"], [ring.read(index).own]),
        **moved,
    }


def driver_drops(frames_counted: int, eop_owned: list[bool]) -> int:
    """The driver's rule after a TX channel reset (TxQueue.recover), for frames
    queued in ring order with their EOP descriptors' own bits: frames written back are
    sent; so are as many more of the oldest unreaped as TX_FRAMES moved by beyond those
    (frames the MAC started whose write-back never landed); the rest it drops and counts."""
    written_back = sum(not own for own in eop_owned)
    sent_unwritten = frames_counted - written_back
    assert 0 <= sent_unwritten <= len(eop_owned) - written_back, (
        f"TX_FRAMES moved by {frames_counted} with {written_back} of {len(eop_owned)} "
        "frames written back"
    )
    return len(eop_owned) - written_back - sent_unwritten


def check_cut_counted_once(result: dict) -> None:
    frames = result["frames"]
    assert len(frames) == 1, f"{len(frames)} frames on the wire, expected the one cut"
    frame = frames[0]
    assert frame.error is not None or not frame.check_fcs(), "the frame was not cut"
    assert result["STATS_TX_FRAMES_BAD"] == 1 and result["STATS_TX_UNDERRUNS"] == 1, result
    assert result["TX_RESET_DISCARDS"] == 0, result
    counted = result["TX_DROPS"] + result["driver_dropped"]
    assert counted == 1, (
        f"the cut frame was counted {counted} times: TX_DROPS moved by "
        f"{result['TX_DROPS']}, the driver dropped {result['driver_dropped']}"
    )


@cocotb.test()
async def test_tx_cut_frame_writeback_failed(dut):
    """The frame's EOP write-back fails (SLVERR) while the MAC sends it: the reset cuts it
    on the wire (STATS_TX_FRAMES_BAD, STATS_TX_UNDERRUNS). Its descriptor keeps own, but
    the MAC had started it, so TX_FRAMES counts it once the reset is over: the driver
    counts it sent, and TX_DROPS counts the cut: once."""
    result = await send_one_and_reset(dut, fail_writeback=True, hold_b=False)
    check_cut_counted_once(result)
    assert result["driver_dropped"] == 0 and result["TX_DROPS"] == 1, result
    assert result["TX_FRAMES"] == 1, result


SHORT_FRAME_BYTES = 100  # about 1 µs on the wire: over before its write-back's B response


@cocotb.test()
async def test_tx_frame_sent_before_its_writeback_failed_counts_once(dut):
    """A short frame leaves the wire intact while its EOP write-back's B response is held;
    then host memory answers it SLVERR, the channel halts, and the driver resets it. The
    frame was sent: TX_FRAMES counts it once the reset is over (its descriptor keeps
    own), so the driver counts it sent and drops nothing; nothing in TX_DROPS or
    TX_RESET_DISCARDS. (The soak's fault campaign found it counted twice: on the wire
    and dropped by the driver.)"""
    bench = await started(dut)
    ring = await bench.open_ring("TX", TX_RING, 16)
    data = payload(11, SHORT_FRAME_BYTES)
    bench.memory.write(TX_DATA + 3, data)
    index = ring.post(Descriptor.tx(TX_DATA + 3, len(data), sop=True, eop=True))
    names = ("TX_FRAMES", "TX_DROPS", "TX_RESET_DISCARDS", "STATS_TX_FRAMES_GOOD")
    before = await bench.read_regs(*names)
    desc = ring.address(index)
    bench.memory.error_windows.append((desc, desc + 16, "w"))
    b_channel = bench.memory.write_if.b_channel
    b_channel.pause = True
    await ring.doorbell()
    frame = await with_timeout(bench.tx_sink.recv(), 50, "us")
    assert frame.check_fcs() and bytes(frame.get_payload()) == data, "not on the wire intact"
    status = await bench.read_reg(regs.TX_STATUS)
    assert not status & regs.TX_STATUS_HALTED_MASK, "halted before the frame left: case missed"
    b_channel.pause = False
    await wait_until(
        lambda: bench.read_reg(regs.TX_STATUS),
        lambda v: v & regs.TX_STATUS_HALTED_MASK,
        "the channel halted on the write-back error",
    )
    bench.memory.error_windows.clear()
    await bench.write_reg(regs.TX_CTRL, regs.TX_CTRL_RESET_MASK)
    await wait_until(
        lambda: bench.read_reg(regs.TX_STATUS),
        lambda v: not v & RESET_BUSY,
        "TX reset done",
    )
    after = await bench.read_regs(*names)  # read as a driver does, once the reset is over
    moved = {name: after[name] - before[name] for name in names}
    assert ring.read(index).own, "the failed write-back cleared own"
    dropped = driver_drops(moved["TX_FRAMES"], [True])
    assert moved["STATS_TX_FRAMES_GOOD"] == 1, moved
    assert dropped == 0, (
        f"the frame on the wire intact was also dropped by the driver (counted twice): {moved}"
    )
    assert moved == {
        "TX_FRAMES": 1,
        "TX_DROPS": 0,
        "TX_RESET_DISCARDS": 0,
        "STATS_TX_FRAMES_GOOD": 1,
    }, moved
    await Timer(5, "us")
    assert await bench.read_reg(regs.TX_FRAMES) == after["TX_FRAMES"], "TX_FRAMES moved later"
    assert bench.tx_sink.empty(), "a frame on the wire after the reset"


@cocotb.test()
async def test_tx_cut_frame_writeback_landed(dut):
    """The frame's EOP write-back lands before the reset: the driver reaps the frame as
    sent, and the cut counts in TX_DROPS."""
    result = await send_one_and_reset(dut, fail_writeback=False, hold_b=False)
    check_cut_counted_once(result)
    assert result["driver_dropped"] == 0 and result["TX_DROPS"] == 1, result


@cocotb.test()
async def test_tx_cut_frame_writeback_lands_late(dut):
    """The frame's EOP write-back is on the bus at the reset (its B response held) and
    lands after it: the driver reaps the frame as sent, and the cut counts in TX_DROPS
    when the write-back lands."""
    result = await send_one_and_reset(dut, fail_writeback=False, hold_b=True)
    check_cut_counted_once(result)
    assert result["driver_dropped"] == 0 and result["TX_DROPS"] == 1, result


@cocotb.test()
async def test_tx_cut_through_underrun_counts_once(dut):
    """No reset: a frame larger than the TX FIFO goes cut-through, and host memory
    answers each burst 10 µs late, slower than the wire, so the frame underruns (cut with
    tx_er) before its last fragment is even read. TX_DROPS counts the cut when the MAC
    reports it, before the write-back; the write-back lands after it, the driver reaps
    the frame as sent, and nothing counts it again."""
    bench = await started(dut)
    features = await bench.read_reg(regs.ID_FEATURES)
    fifo_bytes = 1 << ((features & regs.ID_FEATURES_TX_FIFO_LOG2_MASK) >> 8)
    ring = await bench.open_ring("TX", TX_RING, 16, burst_beats=64, prefetch=4)
    data = payload(9, fifo_bytes + fifo_bytes // 2)
    pieces = [data[n : n + 4000] for n in range(0, len(data), 4000)]
    address, eop = TX_DATA, None
    for n, piece in enumerate(pieces):
        bench.memory.write(address, piece)
        last = n == len(pieces) - 1
        eop = ring.post(Descriptor.tx(address, len(piece), sop=n == 0, eop=last))
        address += len(piece)
    names = ("TX_DROPS", "STATS_TX_UNDERRUNS", "STATS_TX_FRAMES_BAD", "TX_FRAMES")
    before = await bench.read_regs(*names)
    bench.memory.latency_cycles = 1000
    await ring.doorbell()
    frame = await with_timeout(bench.tx_sink.recv(), 3000, "us")
    assert frame.error is not None or not frame.check_fcs(), "the frame did not underrun"
    await Timer(2, "us")  # the MAC's status of the cut has reached the counters
    cut = await bench.read_regs(*names)
    assert cut["TX_FRAMES"] == before["TX_FRAMES"], "written back before the cut: case missed"
    await wait_until(
        lambda: bench.read_reg(regs.TX_FRAMES),
        lambda v: v != before["TX_FRAMES"],
        "the frame's write-back",
        timeout_us=3000,
    )
    bench.memory.latency_cycles = 0
    await Timer(2, "us")
    after = await bench.read_regs(*names)
    moved = {name: after[name] - before[name] for name in names}
    assert moved == {"TX_DROPS": 1, "STATS_TX_UNDERRUNS": 1, "STATS_TX_FRAMES_BAD": 1,
                     "TX_FRAMES": 1}, moved  # fmt: skip
    # The MAC started the frame: the driver counts it sent whatever becomes of its
    # write-back (it landed: reaped; or it failed: TX_FRAMES after the reset), so the cut
    # is TX_DROPS's as soon as it is reported.
    assert cut["TX_DROPS"] == before["TX_DROPS"] + 1, "TX_DROPS did not count the cut"
    assert not ring.read(eop).own, "the driver would not reap the frame as sent"


def reap_written_back(driver: RxDriver) -> list[bytes]:
    """Frames (one buffer each) written back from ``driver.ring.head`` on, in ring order."""
    ring, frames = driver.ring, []
    while ring.head != ring.tail and not ring.read(ring.head).own:
        done = ring.read(ring.head)
        assert done.sop and done.eop, f"RX descriptor {ring.head}: not a whole frame: {done}"
        driver.posted_size.pop(ring.head)
        driver.guard.allow(done.addr, done.addr + done.done_length)
        driver.guard.allow_writeback(ring, ring.head)
        frames.append(bench_read(driver, done))
        ring.head = (ring.head + 1) % ring.size
    return frames


def bench_read(driver: RxDriver, done: Descriptor) -> bytes:
    return driver.bench.memory.read(done.addr, done.done_length)


@cocotb.test()
async def test_rx_reset_discards_frames_not_written_back(dut):
    """Small frames back to back while host memory answers slowly, so that frames wait in
    the channel's write queue; RX_CTRL.reset, then the ring re-posted: every frame sent is
    delivered intact (before or after the reset), counted as dropped, or counted in
    RX_RESET_DISCARDS, once."""
    bench = await started(dut)
    ring = await bench.open_ring("RX", RX_RING, 32, burst_beats=16, prefetch=4)
    # The guard only serves RxDriver's bookkeeping here: a data write in flight at the
    # reset lands in a buffer that is never written back, as docs/descriptors.md says.
    driver = RxDriver(bench, MemoryGuard(bench), ring)
    buffer_bytes = 256
    driver.post_many(31, buffer_bytes)
    await driver.doorbell()
    names = ("RX_RESET_DISCARDS", "RX_DROPS", "RX_FIFO_OVERFLOWS", "RX_FRAMES")
    before = await bench.read_regs(*names)
    bench.memory.latency_cycles = 300  # each burst waits 3 µs: writes queue up behind it
    frames = [payload(100 + n, RX_FRAME_BYTES) for n in range(RX_FRAMES)]
    for data in frames:
        await bench.rx_source.send(GmiiFrame.from_payload(data))
    await bench.rx_source.wait()
    await Timer(2, "us")
    await bench.write_reg(regs.RX_CTRL, regs.RX_CTRL_RESET_MASK)
    bench.memory.latency_cycles = 0
    await wait_until(
        lambda: bench.read_reg(regs.RX_STATUS),
        lambda v: not v & regs.RX_STATUS_HALTED_MASK,
        "RX reset done",
    )
    await Timer(5, "us")  # the write in flight at the reset lands
    delivered = reap_written_back(driver)
    middle = await bench.read_regs(*names)
    discards = middle["RX_RESET_DISCARDS"] - before["RX_RESET_DISCARDS"]

    # Re-post the whole ring from slot 0 and run: what waited in the RX FIFO comes in.
    driver.reset_ring()
    driver.post_many(31, buffer_bytes)
    await bench.write_reg(regs.RX_CTRL, regs.RX_CTRL_RUN_MASK)
    await driver.doorbell()
    await Timer(20, "us")
    delivered += reap_written_back(driver)
    after = await bench.read_regs(*names)
    dropped = sum(after[n] - before[n] for n in ("RX_DROPS", "RX_FIFO_OVERFLOWS"))
    seqs = [int.from_bytes(data[:2], "big") - 100 for data in delivered]
    for seq, data in zip(seqs, delivered, strict=True):
        assert 0 <= seq < RX_FRAMES and data == frames[seq], f"RX frame {seq} damaged"
    assert seqs == sorted(set(seqs)), f"RX frames out of order or twice: {seqs}"
    assert after["RX_RESET_DISCARDS"] == middle["RX_RESET_DISCARDS"], (
        "RX_RESET_DISCARDS moved without a reset"
    )
    assert len(delivered) + dropped + discards == RX_FRAMES, (
        f"{RX_FRAMES} frames sent: {len(delivered)} delivered, {dropped} dropped and counted, "
        f"RX_RESET_DISCARDS moved by {discards}"
    )
    assert discards >= 1, "the reset found no frame taken and not written back: case missed"
