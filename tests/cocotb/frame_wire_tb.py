"""cocotb bench: the frame wire beside cocotbext-eth's GMII models
(tests/hdl/sim_wire/test_sim_wire.py).

On ``macdma_sim_wire_check`` the frame player drives ``gmii_rx*`` while a GmiiSource fed
the same frames drives ``ref_rx*``; the top counts every receive clock where the two pin
groups differ. A GmiiSource on ``src_tx*`` plays the MAC: the frame recorder and a
GmiiSink watch the same ``gmii_tx*`` pins. Each test compares, frame by frame, what the
two sides report: data, error flags, ``sim_time_start``/``sfd``/``end`` (ps), the times
``tx_complete`` and ``wait()`` came back, and the frame counts.

The link mode comes from env ``FRAME_WIRE_LINK`` (gmii_1000, mii_100, mii_10: MII with a
clock enable high one clock in ten).
"""

from __future__ import annotations

import os
import random
import struct
import zlib

import cocotb
from cocotb.triggers import ClockCycles, Timer, with_timeout
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame, GmiiSink, GmiiSource

from macdma.sim.benches.frame_wire import FramePhy
from macdma.sim.benches.gmii import GMII_1000, MII_10, MII_100

LINKS = {"gmii_1000": GMII_1000, "mii_100": MII_100, "mii_10": MII_10}
PREAMBLE = bytes([0x55] * 7 + [0xD5])


def _fcs(payload: bytes) -> bytes:
    return struct.pack("<L", zlib.crc32(payload))


def frames_to_send(rng: random.Random, jumbo: bool) -> list[GmiiFrame]:
    """Good frames of 60..1514 bytes (and a 9,000-byte one), then the wire's faults: rx_er
    on chosen bytes (the preamble's included), a bad FCS, runts, a cut-short frame, a
    frame without SFD, a one-byte frame."""
    frames = []
    sizes = [60, 61, 62, 63, 64, 65, 127, 128, 1514] + ([9000] if jumbo else [])
    for size in sizes:
        frames.append(GmiiFrame.from_payload(bytes(rng.getrandbits(8) for _ in range(size))))
    payload = bytes(rng.getrandbits(8) for _ in range(100))
    with_errors = GmiiFrame.from_payload(payload)
    with_errors.error = [0] * len(with_errors.data)
    for at in (3, 7, 8, 50, len(with_errors.data) - 1):
        with_errors.error[at] = 1
    frames.append(with_errors)
    error_to_end = GmiiFrame.from_payload(payload)
    error_to_end.error = [0] * 30 + [1]  # cocotbext-eth stretches the last flag to the end
    frames.append(error_to_end)
    bad_fcs = GmiiFrame.from_payload(payload)
    bad_fcs.data[-2] ^= 0x10
    frames.append(bad_fcs)
    frames.append(GmiiFrame(PREAMBLE + payload[:20] + _fcs(payload[:20])))  # runt
    frames.append(GmiiFrame(PREAMBLE + payload[:3]))  # runt without FCS
    frames.append(GmiiFrame(GmiiFrame.from_payload(payload).data[:40]))  # cut short
    frames.append(GmiiFrame(bytes([0x55] * 9)))  # no SFD
    frames.append(GmiiFrame(bytes([0xD5])))  # a lone SFD
    frames.append(GmiiFrame(bytes([0x0D, 0x55, 0x0D, 0xD5]) + payload[:64]))  # odd preambles
    return frames


class Sides:
    """Both wires on the check top: ``wire`` (FramePhy) and cocotbext-eth's models."""

    def __init__(self, dut, mode, ifg: int):
        self.dut, self.mode = dut, mode
        self.wire = FramePhy(dut, mode, ifg)
        self.ref_source = GmiiSource(
            dut.ref_rxd, dut.ref_rx_er, dut.ref_rx_dv, dut.rx_clk, dut.rx_rst, dut.rx_clk_enable
        )
        self.mac_source = GmiiSource(
            dut.src_txd, dut.src_tx_er, dut.src_tx_en, dut.tx_clk, dut.tx_rst, dut.tx_clk_enable
        )
        self.ref_sink = GmiiSink(
            dut.gmii_txd, dut.gmii_tx_er, dut.gmii_tx_en, dut.tx_clk, dut.tx_rst, dut.tx_clk_enable
        )
        for model in (self.ref_source, self.mac_source, self.ref_sink):
            model.mii_mode = mode.mii
            model.log.setLevel("WARNING")
        self.ref_source.ifg = self.mac_source.ifg = self.wire.rx_source.ifg

    async def start(self):
        dut = self.dut
        self.wire.start()
        # The models follow tx_rst/rx_rst, the frame wire its own reset.
        resets = (dut.tx_rst, dut.rx_rst, *self.wire.own_resets)
        for reset in resets:
            reset.value = 1
        await ClockCycles(dut.rx_clk, 4 * self.mode.enable_every)
        for reset in resets:
            reset.value = 0
        await ClockCycles(dut.rx_clk, 2 * self.mode.enable_every)
        # The top's comparison runs from time 0 through every test of the module.
        self.mismatches_before = int(dut.rx_mismatches.value)

    def set_ifg(self, symbols: int):
        self.ref_source.ifg = self.mac_source.ifg = self.wire.rx_source.ifg = symbols


def stamps(frame) -> tuple:
    return (frame.sim_time_start, frame.sim_time_sfd, frame.sim_time_end)


class Completions:
    """What ``tx_complete`` handed back, with the time it was called."""

    def __init__(self):
        self.frames: list[tuple] = []

    def __call__(self, frame):
        self.frames.append((get_sim_time("ps"), bytes(frame.data), stamps(frame)))


async def send_rx(sides: Sides, frames, *, spaced_ps: list[int] | None = None):
    """The same frames into both receive-side sources (all at once, or each after the
    given delay); return both sides' completions and the times each wait() returned."""
    ours, theirs = Completions(), Completions()
    for index, frame in enumerate(frames):
        delay_ps = spaced_ps[index % len(spaced_ps)] if spaced_ps else 0
        if delay_ps:
            await Timer(delay_ps, "ps")
        sides.wire.rx_source.send_nowait(GmiiFrame(frame, tx_complete=ours))
        sides.ref_source.send_nowait(GmiiFrame(frame, tx_complete=theirs))
    waited = {}

    async def wait(name, source):
        await source.wait()
        waited[name] = get_sim_time("ps")

    tasks = [
        cocotb.start_soon(wait("wire", sides.wire.rx_source)),
        cocotb.start_soon(wait("cocotbext", sides.ref_source)),
    ]
    for task in tasks:
        try:
            await with_timeout(task, 20, "ms")  # the slowest link: 7.2 ms for a jumbo frame
        except TimeoutError:
            raise AssertionError(
                f"wait() never came back: {waited} returned; {len(ours.frames)} frames "
                f"completed on the wire, {len(theirs.frames)} on cocotbext-eth, of {len(frames)}"
            ) from None
    return ours.frames, theirs.frames, waited


async def recv_tx(sides: Sides, count: int):
    ours, theirs = [], []
    for index in range(count):
        for name, sink, frames in (
            ("wire", sides.wire.tx_sink, ours),
            ("cocotbext", sides.ref_sink, theirs),
        ):
            try:
                frames.append(await with_timeout(sink.recv(), 20, "ms"))
            except TimeoutError:
                raise AssertionError(f"TX frame {index} never reached the {name} sink") from None
    return ours, theirs


def check_rx(sides: Sides, ours, theirs, waited, frames):
    assert len(ours) == len(theirs) == len(frames), (len(ours), len(theirs), len(frames))
    for index, (mine, ref) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == ref, f"RX frame {index}: wire {mine} != cocotbext {ref}"
    assert waited["wire"] == waited["cocotbext"], f"wait() returned at {waited}"
    mismatches = int(sides.dut.rx_mismatches.value) - sides.mismatches_before
    first = int(sides.dut.rx_first_mismatch.value)
    assert mismatches == 0, (
        f"receive pins differ on {mismatches} clocks (first of the run: {first})"
    )


def check_tx(ours, theirs):
    assert len(ours) == len(theirs)
    for index, (mine, ref) in enumerate(zip(ours, theirs, strict=True)):
        assert bytes(mine.data) == bytes(ref.data), (
            f"TX frame {index}: data differ\nwire      {bytes(mine.data).hex()}\n"
            f"cocotbext {bytes(ref.data).hex()}"
        )
        assert mine.error == ref.error, f"TX frame {index}: errors {mine.error} != {ref.error}"
        assert stamps(mine) == stamps(ref), (
            f"TX frame {index}: stamps {stamps(mine)} != {stamps(ref)}"
        )


def link():
    return LINKS[os.environ.get("FRAME_WIRE_LINK", "gmii_1000")]


def symbols(mode, byte_times: int) -> int:
    return byte_times * (2 if mode.mii else 1)


@cocotb.test()
async def test_rx(dut):
    """Frames into the SoC's receive pins: back to back at gaps of 12, 1 and 2 byte times,
    then one at a time after the wire went idle, at delays that fall on and between
    clock edges."""
    mode = link()
    sides = Sides(dut, mode, 12)
    await sides.start()
    frames = frames_to_send(random.Random(1), jumbo=True)
    for gap in (12, 1, 2):
        sides.set_ifg(symbols(mode, gap) if gap > 1 else gap)
        check_rx(sides, *(await send_rx(sides, frames)), frames)
    period_ps = mode.clock_period_ns * 1000
    # The first send comes from a timer in the time step of a receive clock edge (7
    # clocks after wait() came back on an edge), which both simulators run before the
    # edge: GmiiSource, woken on the edge, takes the frame there, and so must the wire.
    spaced = [period_ps * 7, period_ps * 3 + 1, 0, period_ps * 50 + period_ps // 2, 1000]
    short = frames[:4] + frames[-8:]
    check_rx(sides, *(await send_rx(sides, short, spaced_ps=spaced)), short)
    assert sides.wire.rx_source.frames_sent == 3 * len(frames) + len(short)


@cocotb.test()
async def test_tx(dut):
    """Frames on the SoC's transmit pins (a GmiiSource plays the MAC), gaps of 12, 1 and 2,
    rx_er-style tx_er flags and faults: the recorder against a GmiiSink on the same pins."""
    mode = link()
    sides = Sides(dut, mode, 12)
    await sides.start()
    frames = frames_to_send(random.Random(2), jumbo=mode is GMII_1000)
    for gap in (12, 1, 2):
        sides.set_ifg(symbols(mode, gap) if gap > 1 else gap)
        for frame in frames:
            sides.mac_source.send_nowait(frame)
        check_tx(*(await recv_tx(sides, len(frames))))
    assert sides.wire.tx_sink.empty() and sides.ref_sink.empty()
    assert sides.wire.tx_sink.frames_recorded == 3 * len(frames)


@cocotb.test()
async def test_full_duplex(dut):
    """Both directions at once at the standard gap."""
    mode = link()
    sides = Sides(dut, mode, 12)
    await sides.start()
    frames = frames_to_send(random.Random(3), jumbo=False)
    for frame in frames:
        sides.mac_source.send_nowait(frame)
    received = cocotb.start_soon(recv_tx(sides, len(frames)))
    check_rx(sides, *(await send_rx(sides, frames)), frames)
    check_tx(*(await received))
