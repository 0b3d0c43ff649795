"""``macdma_eth_mac`` as a drop-in ``eth_mac_1g``: link-level flow control both ways.

Modelled on the scenario verilog-ethernet's own bench runs on ``eth_mac_1g`` (its
``run_test_lfc``), so a design built around that core keeps working: 32 frames each way
at once, a PAUSE from the link partner among the received ones, and two pulses on
``tx_lfc_req`` (an XOFF and an XON each). ``eth_mac_1g`` delivers a recognised MAC control
frame that is not forwarded (``cfg_mcf_rx_forward`` 0) to ``rx_axis`` flagged bad
(``tuser`` on its last beat); clients of that core, and its bench, expect it there.

Runs at 1000 Mb/s GMII, 100 Mb/s MII and both with a clock enable of 1 in 4, on Icarus
and Verilator. Times come from cocotbext-eth's per-frame stamps (ps).
"""

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout
from cocotbext.axi import AxiStreamFrame
from cocotbext.eth import GmiiFrame

from macdma.hdl.mac.flow_control import (
    MAC_CONTROL_ETHERTYPE,
    PAUSE_MULTICAST_ADDRESS,
    PAUSE_OPCODE,
    QUANTUM_BIT_TIMES,
)
from macdma.hdl.mac.frame import MIN_DATA_LENGTH
from macdma.sim.benches.gmii import GMII_1000, MII_100, LinkMode
from macdma.sim.benches.mac import FlowControl, MacBench

GMII_ENABLED_1_IN_4 = LinkMode("GMII, enable 1 in 4", 8, mii=False, enable_every=4)
MII_ENABLED_1_IN_4 = LinkMode("MII, enable 1 in 4", 8, mii=True, enable_every=4)

PEER = 0xDAD1D2D3D4D5  # the link partner
FRAMES_EACH_WAY = 32
PAUSE_AFTER = 16  # the PAUSE follows received frame number 16 (counting from 0)
PAUSE_QUANTA = 100
PAYLOAD_BYTES = 128
EXPERIMENTAL_ETHERTYPE = 0x8000  # any EtherType that is not MAC control
XOFF_QUANTA = 0xFFFF
#: Refresh interval of the XOFFs the MAC sends: far longer than a tx_lfc_req pulse, so
#: each pulse sends exactly one XOFF and one XON.
REFRESH_QUANTA = 0x7F00
PULSE_CLOCKS = 1000  # tx clocks before each tx_lfc_req pulse, and its length
#: Clocks from a frame's end on a pin to its effect on the other path (receiver delay,
#: pause timer, synchronisers, the transmitter's registers); bounds, does not measure.
REACTION_CLOCKS = 48

STROBES = (
    "stat_rx_mcf",
    "stat_rx_lfc_pkt",
    "stat_rx_lfc_xoff",
    "stat_rx_lfc_xon",
    "stat_tx_mcf",
    "stat_tx_lfc_pkt",
    "stat_tx_lfc_xoff",
    "stat_tx_lfc_xon",
)


def ethernet_frame(dst: int, src: int, ethertype: int, body: bytes) -> bytes:
    """A frame without padding and FCS: addresses, EtherType, then ``body``."""
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ethertype.to_bytes(2, "big") + body


def data_frame(dst: int, src: int, seed: int) -> bytes:
    body = bytes((seed + n) % 256 for n in range(PAYLOAD_BYTES))
    return ethernet_frame(dst, src, EXPERIMENTAL_ETHERTYPE, body)


def pause_frame(src: int, quanta: int) -> bytes:
    body = PAUSE_OPCODE.to_bytes(2, "big") + quanta.to_bytes(2, "big")
    return ethernet_frame(PAUSE_MULTICAST_ADDRESS, src, MAC_CONTROL_ETHERTYPE, body)


def padded(data: bytes) -> bytes:
    return data + bytes(max(0, MIN_DATA_LENGTH - len(data)))


def flagged_bad(frame: AxiStreamFrame) -> bool:
    """``tuser`` on the last beat (cocotbext-axi gives one value when all beats agree)."""
    tuser = frame.tuser if isinstance(frame.tuser, list) else [frame.tuser]
    return bool(tuser[-1])


def is_mac_control(data: bytes) -> bool:
    return int.from_bytes(data[12:14], "big") == MAC_CONTROL_ETHERTYPE


class StrobeCount:
    """Counts the MAC's one-cycle ``stat_*`` strobes, each pulse a rising edge (two never
    come in consecutive clocks: each is one per frame)."""

    def __init__(self, dut):
        self.counts = dict.fromkeys(STROBES, 0)
        for name in STROBES:
            cocotb.start_soon(self._count(getattr(dut, name), name))

    async def _count(self, signal, name):
        while True:
            await RisingEdge(signal)
            self.counts[name] += 1


async def pulse_tx_lfc_req(dut):
    """``tx_lfc_req`` high for PULSE_CLOCKS, after PULSE_CLOCKS low."""
    await ClockCycles(dut.tx_clk, PULSE_CLOCKS)
    dut.tx_lfc_req.value = 1
    await ClockCycles(dut.tx_clk, PULSE_CLOCKS)
    dut.tx_lfc_req.value = 0


def quanta_ps(mode: LinkMode, quanta: int) -> int:
    return quanta * QUANTUM_BIT_TIMES * mode.byte_time_ns * 1000 // 8


@cocotb.test()
@cocotb.parametrize(mode=[GMII_1000, MII_100, GMII_ENABLED_1_IN_4, MII_ENABLED_1_IN_4])
async def test_lfc_both_ways(dut, mode):
    """32 frames each way; a PAUSE (100 quanta) after received frame 16 reaches rx_axis
    flagged bad, in its place, and holds the transmitter for its quanta; two tx_lfc_req
    pulses send XOFF, XON, XOFF, XON between the client frames, which all arrive intact."""
    flow = FlowControl(rx_pause=True, tx_pause=True, quanta=XOFF_QUANTA, refresh=REFRESH_QUANTA)
    bench = MacBench(dut, mode, flow_control=flow)
    await bench.start()
    strobes = StrobeCount(dut)
    station = flow.station

    to_send = [data_frame(PEER, station, n) for n in range(FRAMES_EACH_WAY)]
    to_receive = [data_frame(station, PEER, n + 1) for n in range(FRAMES_EACH_WAY)]
    to_receive.insert(PAUSE_AFTER + 1, pause_frame(PEER, PAUSE_QUANTA))
    received_on_wire = []
    for data in to_send:
        bench.tx_source.send_nowait(AxiStreamFrame(data))
    for data in to_receive:
        bench.rx_source.send_nowait(
            GmiiFrame.from_payload(data, tx_complete=received_on_wire.append)
        )

    # Everything, both ways, with the pause: well under this many byte times.
    frame_bytes = 8 + len(to_send[0]) + 4 + bench.ifg
    budget_ns = (3 * FRAMES_EACH_WAY * frame_bytes + 2 * PAUSE_QUANTA * 64) * mode.byte_time_ns

    await pulse_tx_lfc_req(dut)
    if not int(dut.rx_lfc_req.value):
        await with_timeout(RisingEdge(dut.rx_lfc_req), budget_ns, "ns")
    await pulse_tx_lfc_req(dut)

    await with_timeout(bench.rx_source.wait(), budget_ns, "ns")
    await bench.settle()
    assert bench.rx_sink.count() == len(to_receive), (
        f"rx_axis delivered {bench.rx_sink.count()} of the {len(to_receive)} frames received:"
        " a PAUSE that is not forwarded must still reach it, flagged bad, as in eth_mac_1g"
    )
    delivered = [bench.rx_sink.recv_nowait() for _ in to_receive]
    for number, (frame, data) in enumerate(zip(delivered, to_receive, strict=True)):
        got = bytes(frame.tdata)
        if is_mac_control(data):
            assert got == padded(data), f"rx frame {number}: the PAUSE changed: {got.hex()}"
            assert flagged_bad(frame), (
                f"rx frame {number}: a PAUSE not forwarded must reach rx_axis flagged bad"
            )
        else:
            assert got == data, f"rx frame {number} is not the frame sent in its place"
            assert not flagged_bad(frame), f"rx frame {number}: a good frame flagged bad"

    client_frames, pause_frames = [], []

    def sort_tx(frame):
        assert frame.error is None and frame.check_fcs(), "a frame left damaged"
        kind = pause_frames if is_mac_control(frame.get_payload()) else client_frames
        kind.append(frame)

    while len(client_frames) < len(to_send):
        sort_tx(await with_timeout(bench.tx_sink.recv(), budget_ns, "ns"))
    await bench.settle(frame_bytes)  # a PAUSE of ours may still follow the last one
    while not bench.tx_sink.empty():
        sort_tx(bench.tx_sink.recv_nowait())
    assert len(client_frames) == len(to_send), "more client frames left than were sent"
    for frame, data in zip(client_frames, to_send, strict=True):
        assert frame.get_payload() == data, "a client frame changed or left out of order"
    quanta_sent = [int.from_bytes(f.get_payload()[16:18], "big") for f in pause_frames]
    assert quanta_sent == [XOFF_QUANTA, 0, XOFF_QUANTA, 0], (
        f"two tx_lfc_req pulses must send XOFF, XON, XOFF, XON; quanta sent: {quanta_sent}"
    )
    for frame in pause_frames:
        assert frame.get_payload()[:16] == pause_frame(station, 0)[:16], (
            "a PAUSE the MAC sent has the wrong addresses, EtherType or opcode"
        )

    # The received PAUSE held the client frames for its quanta: one gap between client
    # frames spans it, and the next frame started no earlier than the quanta after it.
    pause = received_on_wire[PAUSE_AFTER + 1]
    long_gaps = [
        (before, after)
        for before, after in zip(client_frames, client_frames[1:], strict=False)
        if after.sim_time_start - before.sim_time_end >= quanta_ps(mode, PAUSE_QUANTA)
    ]
    assert len(long_gaps) == 1, f"expected one pause between client frames, got {len(long_gaps)}"
    before, after = long_gaps[0]
    assert before.sim_time_end >= pause.sim_time_start, "TX stopped before the PAUSE arrived"
    held_ps = after.sim_time_start - pause.sim_time_end
    clock_ps = mode.clock_period_ns * mode.enable_every * 1000
    # At most: the frame in progress, one PAUSE of ours, their gaps and preambles.
    slack_ps = 2 * frame_bytes * mode.byte_time_ns * 1000 + REACTION_CLOCKS * clock_ps
    assert quanta_ps(mode, PAUSE_QUANTA) <= held_ps <= quanta_ps(mode, PAUSE_QUANTA) + slack_ps, (
        f"client frames held {held_ps} ps after the PAUSE, for {PAUSE_QUANTA} quanta"
    )

    assert bench.rx_sink.empty(), "more frames delivered than were received"
    assert int(dut.rx_lfc_req.value) == 0, "the received PAUSE is still in force"
    counts = strobes.counts
    assert counts["stat_rx_mcf"] == counts["stat_rx_lfc_pkt"] == counts["stat_rx_lfc_xoff"] == 1
    assert counts["stat_rx_lfc_xon"] == 0
    assert counts["stat_tx_mcf"] == counts["stat_tx_lfc_pkt"] == 4
    assert counts["stat_tx_lfc_xoff"] == counts["stat_tx_lfc_xon"] == 2
    # The flag says "not for the client", not "damaged": the wire's verdict stands.
    counters = await bench.counters()
    assert counters["rx_frames_good"] == len(to_receive), "the PAUSE is a good frame received"
    assert counters["rx_frames_bad"] == 0
    assert bench.pulses["rx_error_bad_frame"] == 0, "rx_error_bad_frame pulsed for the PAUSE"
    assert counters["tx_frames_good"] == len(to_send) + 4
