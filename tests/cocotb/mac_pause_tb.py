"""cocotb tests of 802.3x flow control in ``macdma_eth_mac`` (run on Icarus and Verilator).

PAUSE frames come from and go to cocotbext-eth's GMII models; every time is taken from
their per-frame stamps (``sim_time_start``/``sim_time_end``, in ps).
"""

import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, Timer, with_timeout
from cocotbext.axi import AxiStreamFrame
from cocotbext.eth import GmiiFrame

from macdma.hdl.mac.flow_control import (
    MAC_CONTROL_ETHERTYPE,
    PAUSE_MULTICAST_ADDRESS,
    PAUSE_OPCODE,
    QUANTUM_BIT_TIMES,
)
from macdma.sim.benches.gmii import GMII_1000, MII_100, LinkMode
from macdma.sim.benches.mac import FlowControl, MacBench

PEER = 0x02AABBCCDDEE  # the link partner's address (a locally administered one)
STATION = FlowControl().station
STAT_STROBES = (
    "stat_tx_mcf",
    "stat_tx_lfc_pkt",
    "stat_tx_lfc_xon",
    "stat_tx_lfc_xoff",
    "stat_rx_mcf",
    "stat_rx_lfc_pkt",
    "stat_rx_lfc_xon",
    "stat_rx_lfc_xoff",
)
#: Clocks from the end of a frame on a pin to an effect on the other path: the receiver's
#: delay line and decision FIFO, the pause timer, two synchronisers and the transmitter's
#: output register. Generous: the tests bound latency, they do not measure it.
REACTION_CLOCKS = 48


def payload(length: int, seed: int = 0) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def control_frame(
    quanta: int,
    *,
    dst: int = PAUSE_MULTICAST_ADDRESS,
    src: int = PEER,
    opcode: int = PAUSE_OPCODE,
) -> bytes:
    """A MAC control frame without padding and FCS (the GMII model adds both)."""
    return (
        dst.to_bytes(6, "big")
        + src.to_bytes(6, "big")
        + MAC_CONTROL_ETHERTYPE.to_bytes(2, "big")
        + opcode.to_bytes(2, "big")
        + quanta.to_bytes(2, "big")
    )


def padded(data: bytes) -> bytes:
    return data + bytes(max(0, 60 - len(data)))


def flagged_bad(frame: AxiStreamFrame) -> bool:
    """``tuser`` on the last beat (cocotbext-axi gives one value when all beats agree)."""
    tuser = frame.tuser if isinstance(frame.tuser, list) else [frame.tuser]
    return bool(tuser[-1])


def quanta_ps(mode: LinkMode, quanta: int) -> int:
    return quanta * QUANTUM_BIT_TIMES * mode.byte_time_ns * 1000 // 8


def slack_ps(mode: LinkMode, bench: MacBench) -> int:
    """The gap and preamble of the next frame plus the reaction latency."""
    clock_ps = mode.clock_period_ns * mode.enable_every * 1000
    return (bench.ifg + 8) * mode.byte_time_ns * 1000 + REACTION_CLOCKS * clock_ps


class StrobeCounter:
    """Counts the one-cycle ``stat_*`` strobes of the MAC."""

    def __init__(self, dut):
        self.counts = dict.fromkeys(STAT_STROBES, 0)
        for name in STAT_STROBES:
            clock = dut.tx_clk if name.startswith("stat_tx") else dut.rx_clk
            cocotb.start_soon(self._count(getattr(dut, name), clock, name))

    async def _count(self, signal, clock, name):
        while True:
            await RisingEdge(clock)
            if int(signal.value):
                self.counts[name] += 1


async def started(dut, mode: LinkMode = GMII_1000, **flow) -> tuple[MacBench, StrobeCounter]:
    bench = MacBench(dut, mode, flow_control=FlowControl(**flow))
    await bench.start()
    return bench, StrobeCounter(dut)


async def send_rx(bench: MacBench, data: bytes) -> GmiiFrame:
    """Put one frame on the receive wire and wait until it has gone; returns it stamped."""
    sent = []
    await bench.rx_source.send(GmiiFrame.from_payload(data, tx_complete=sent.append))
    while not sent:
        await ClockCycles(bench.dut.rx_clk, 8)
    return sent[0]


def gaps_ps(frames) -> list[int]:
    """Idle time between consecutive frames on the wire (end of FCS to next preamble)."""
    return [b.sim_time_start - a.sim_time_end for a, b in zip(frames, frames[1:], strict=False)]


def assert_intact(frames, payloads):
    for frame, data in zip(frames, payloads, strict=True):
        assert frame.error is None and frame.check_fcs(), "a frame was cut by the pause"
        assert frame.get_payload() == data, "a frame changed on its way through the pause"


@cocotb.test()
@cocotb.parametrize(mode=[GMII_1000, MII_100])
async def test_pause_stops_tx_for_its_quanta(dut, mode):
    """A PAUSE received while a frame is going out: that frame finishes, the next one waits
    the quanta (in 512-bit times at this link speed), then transmission resumes."""
    bench, strobes = await started(dut, mode, rx_pause=True)
    quanta = 100
    payloads = [payload(600, n) for n in range(5)]
    for data in payloads:
        bench.tx_source.send_nowait(AxiStreamFrame(data))
    await with_timeout(bench.tx_sink.wait(), 10, "ms")  # frame 0 is on the wire
    pause = await send_rx(bench, control_frame(quanta))
    frames = await with_timeout(bench.recv_tx(len(payloads)), 20, "ms")
    assert_intact(frames, payloads)

    gaps = gaps_ps(frames)
    long_gaps = [n for n, gap in enumerate(gaps) if gap > slack_ps(mode, bench)]
    assert len(long_gaps) == 1, f"expected one pause between frames, gaps (ps): {gaps}"
    before = frames[long_gaps[0]]
    assert before.sim_time_start < pause.sim_time_end <= before.sim_time_end, (
        "TX must stop at the end of the frame in progress when the PAUSE arrived"
    )
    pause_ps = gaps[long_gaps[0]]
    assert quanta_ps(mode, quanta) <= pause_ps <= quanta_ps(mode, quanta) + slack_ps(mode, bench), (
        f"paused {pause_ps} ps for {quanta} quanta ({quanta_ps(mode, quanta)} ps)"
    )
    assert bench.rx_sink.count() == 1, "a PAUSE not forwarded must reach the client"
    delivered = bench.rx_sink.recv_nowait()
    assert bytes(delivered.tdata) == padded(control_frame(quanta)), "the PAUSE changed"
    assert flagged_bad(delivered), "a PAUSE not forwarded reaches the client flagged bad"
    assert strobes.counts["stat_rx_mcf"] == 1
    assert strobes.counts["stat_rx_lfc_pkt"] == strobes.counts["stat_rx_lfc_xoff"] == 1
    assert strobes.counts["stat_rx_lfc_xon"] == 0
    counters = await bench.counters()
    assert counters["rx_frames_good"] == 1, "the PAUSE frame is still counted as received"
    assert int(dut.rx_lfc_req.value) == 0 and int(dut.stat_rx_lfc_paused.value) == 0


@cocotb.test()
async def test_xon_ends_a_pause_early(dut):
    """A PAUSE with the longest quanta, then an XON (quanta 0): TX resumes right after it."""
    mode = GMII_1000
    bench, strobes = await started(dut, mode, rx_pause=True)
    payloads = [payload(200, n) for n in range(3)]
    await send_rx(bench, control_frame(0xFFFF))
    await ClockCycles(dut.tx_clk, REACTION_CLOCKS)
    assert int(dut.rx_lfc_req.value) == 1 and int(dut.tx_pause_ack.value) == 1
    for data in payloads:
        bench.tx_source.send_nowait(AxiStreamFrame(data))
    await Timer(20, "us")
    assert bench.tx_sink.empty(), "a frame went out during the pause"
    xon = await send_rx(bench, control_frame(0))
    frames = await with_timeout(bench.recv_tx(len(payloads)), 1, "ms")
    assert_intact(frames, payloads)
    resumed_after_ps = frames[0].sim_time_start - xon.sim_time_end
    assert 0 < resumed_after_ps <= slack_ps(mode, bench), f"resumed {resumed_after_ps} ps after XON"
    assert strobes.counts["stat_rx_lfc_xoff"] == 1 and strobes.counts["stat_rx_lfc_xon"] == 1


def assert_pause_frame(frame: GmiiFrame, quanta: int):
    assert frame.error is None and frame.check_fcs(), "bad PAUSE frame on the wire"
    expected = control_frame(quanta, src=STATION)
    assert frame.get_payload() == expected + bytes(60 - len(expected)), (
        f"PAUSE frame {frame.get_payload().hex()} is not XOFF/XON with quanta {quanta:#x}"
    )


@cocotb.test()
@cocotb.parametrize(mode=[GMII_1000, MII_100])
async def test_tx_lfc_req_sends_xoff_refresh_and_xon(dut, mode):
    """tx_lfc_req rising sends an XOFF with cfg_tx_lfc_quanta, again every
    cfg_tx_lfc_refresh quanta while it stays high; falling sends an XON."""
    refresh = 40
    bench, strobes = await started(dut, mode, tx_pause=True, quanta=0x1234, refresh=refresh)
    dut.tx_lfc_req.value = 1
    first, second = await with_timeout(bench.recv_tx(2), 5, "ms")
    assert_pause_frame(first, 0x1234)
    assert_pause_frame(second, 0x1234)
    interval_ps = second.sim_time_start - first.sim_time_start
    assert (
        quanta_ps(mode, refresh) <= interval_ps <= quanta_ps(mode, refresh) + slack_ps(mode, bench)
    ), f"refresh after {interval_ps} ps, expected {quanta_ps(mode, refresh)} ps"
    assert int(dut.stat_tx_lfc_paused.value) == 1
    dut.tx_lfc_req.value = 0
    xon = await with_timeout(bench.tx_sink.recv(), 1, "ms")
    assert_pause_frame(xon, 0)
    await ClockCycles(dut.tx_clk, REACTION_CLOCKS)
    assert bench.tx_sink.empty(), "no refresh after the XON"
    assert int(dut.stat_tx_lfc_paused.value) == 0
    assert strobes.counts["stat_tx_lfc_pkt"] == strobes.counts["stat_tx_mcf"] == 3
    assert strobes.counts["stat_tx_lfc_xoff"] == 2 and strobes.counts["stat_tx_lfc_xon"] == 1


@cocotb.test()
async def test_pause_frames_go_out_while_tx_is_paused(dut):
    """tx_pause_req holds client frames at a frame boundary (tx_pause_ack), but a PAUSE the
    MAC must send still goes out; releasing it lets the client frames follow."""
    bench, _ = await started(dut, GMII_1000, tx_pause=True, quanta=7)
    dut.tx_pause_req.value = 1
    await ClockCycles(dut.tx_clk, 4)
    assert int(dut.tx_pause_ack.value) == 1
    payloads = [payload(100, n) for n in range(2)]
    for data in payloads:
        bench.tx_source.send_nowait(AxiStreamFrame(data))
    dut.tx_lfc_req.value = 1
    assert_pause_frame(await with_timeout(bench.tx_sink.recv(), 100, "us"), 7)
    await Timer(10, "us")
    assert bench.tx_sink.empty(), "a client frame went out while tx_pause_req was high"
    dut.tx_pause_req.value = 0
    assert_intact(await with_timeout(bench.recv_tx(2), 100, "us"), payloads)


@cocotb.test()
async def test_which_control_frames_are_flagged(dut):
    """Only frames matching the cfg_mcf_rx_* checks reach the client flagged bad (as
    eth_mac_1g delivers them); a unicast PAUSE counts once its check is on; forwarded ones
    come unflagged; the rest pass unchanged."""
    bench, strobes = await started(dut, GMII_1000, rx_pause=True, quanta=1)
    ordinary = payload(100, 3)
    passing = [
        control_frame(1, dst=STATION),  # unicast, but the unicast check is off
        control_frame(1, opcode=0x0002),  # not PAUSE, and the opcode is checked
        ordinary,
    ]
    for data in passing:
        await send_rx(bench, data)
    delivered = await with_timeout(bench.recv_rx(len(passing)), 100, "us")
    for frame, data in zip(delivered, passing, strict=True):
        assert bytes(frame.tdata) == padded(data), "frame changed"
        assert not flagged_bad(frame), "a frame that is no recognised control frame flagged"
    assert strobes.counts["stat_rx_mcf"] == 0

    bench.set_flow_control(FlowControl(rx_pause=True, check_ucast=True))
    await send_rx(bench, control_frame(1, dst=STATION))
    await send_rx(bench, ordinary)
    await bench.settle()
    assert bench.rx_sink.count() == 2, "the unicast PAUSE did not reach the client"
    unicast, after = bench.rx_sink.recv_nowait(), bench.rx_sink.recv_nowait()
    assert bytes(unicast.tdata) == padded(control_frame(1, dst=STATION))
    assert flagged_bad(unicast), "the unicast PAUSE was not flagged"
    assert bytes(after.tdata) == ordinary and not flagged_bad(after)
    assert strobes.counts["stat_rx_mcf"] == strobes.counts["stat_rx_lfc_pkt"] == 1

    bench.set_flow_control(FlowControl(rx_pause=True, forward=True))
    await send_rx(bench, control_frame(1))
    (forwarded,) = await with_timeout(bench.recv_rx(1), 100, "us")
    assert bytes(forwarded.tdata)[:18] == control_frame(1), "a forwarded PAUSE changed"
    assert not flagged_bad(forwarded), "a forwarded PAUSE flagged bad"
    await ClockCycles(dut.rx_clk, 2)  # its stat_rx_* strobes come with its last beat
    assert strobes.counts["stat_rx_mcf"] == strobes.counts["stat_rx_lfc_pkt"] == 2

    bench.set_flow_control(FlowControl())
    await send_rx(bench, control_frame(1))
    (unrecognised,) = await with_timeout(bench.recv_rx(1), 100, "us")
    assert bytes(unrecognised.tdata)[:18] == control_frame(1)
    assert not flagged_bad(unrecognised), "flagged with cfg_mcf_rx_enable low"
    assert strobes.counts["stat_rx_mcf"] == 2, "recognised with cfg_mcf_rx_enable low"
    counters = await bench.counters()
    assert counters["rx_frames_good"] == 7 and counters["rx_frames_bad"] == 0
