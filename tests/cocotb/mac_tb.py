"""cocotb tests of ``macdma_eth_mac`` on the GMII/MII pins (run on Icarus and Verilator)."""

import random
import struct
import zlib

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, with_timeout
from cocotbext.axi import AxiStreamFrame
from cocotbext.eth import GmiiFrame

from macdma.sim.benches.gmii import GMII_1000, MII_10, MII_100, LinkMode, rx_rate, tx_rate
from macdma.sim.benches.mac import MacBench

PREAMBLE = bytes([0x55] * 7 + [0xD5])
TX_LENGTHS = list(range(1, 65)) + [512, 1500, 1514]


def payload(length: int, seed: int = 0) -> bytes:
    rng = random.Random(seed * 7919 + length)
    return bytes(rng.getrandbits(8) for _ in range(length))


def padded(data: bytes) -> bytes:
    return data + bytes(max(0, 60 - len(data)))


def with_fcs(data: bytes) -> bytes:
    return data + struct.pack("<I", zlib.crc32(data))


def assert_tx_frame(frame: GmiiFrame, sent: bytes):
    assert frame.error is None, f"tx_er set in a good frame: {frame.error}"
    assert frame.check_fcs(), "bad FCS on the wire"
    assert frame.get_payload() == padded(sent), f"payload mismatch for {len(sent)}-byte frame"


async def started(dut, mode: LinkMode = GMII_1000, **kwargs) -> MacBench:
    bench = MacBench(dut, mode, **kwargs)
    await bench.start()
    return bench


async def tx_every_length(dut, mode: LinkMode, lengths):
    bench = await started(dut, mode)
    for length in lengths:
        await bench.tx_source.send(AxiStreamFrame(payload(length)))
    frames = await with_timeout(bench.recv_tx(len(lengths)), 20, "ms")
    for frame, length in zip(frames, lengths, strict=True):
        assert_tx_frame(frame, payload(length))
    counters = await bench.counters()
    assert counters["tx_frames_good"] == len(lengths)
    assert counters["tx_bytes_good"] == sum(max(n, 60) + 4 for n in lengths)
    assert counters["tx_frames_bad"] == 0


async def rx_every_length(dut, mode: LinkMode, lengths, max_length=1518):
    bench = await started(dut, mode, max_length=max_length)
    for length in lengths:
        await bench.rx_source.send(GmiiFrame.from_payload(payload(length, 1)))
    frames = await with_timeout(bench.recv_rx(len(lengths)), 50, "ms")
    for frame, length in zip(frames, lengths, strict=True):
        assert frame.tuser in (0, None) or not any(_as_list(frame.tuser)), "good frame flagged bad"
        assert bytes(frame.tdata) == padded(payload(length, 1))
    counters = await bench.counters()
    assert counters["rx_frames_good"] == len(lengths) and counters["rx_frames_bad"] == 0
    assert counters["rx_bytes_good"] == sum(max(n, 60) + 4 for n in lengths)


def _as_list(tuser):
    return tuser if isinstance(tuser, list) else [tuser]


def frame_is_bad(frame) -> bool:
    """tuser (bit 0) on the last beat marks a bad frame."""
    return bool(_as_list(frame.tuser)[-1]) if frame.tuser is not None else False


@cocotb.test()
async def test_tx_every_length(dut):
    """TX: payloads of 1..64, 512, 1500, 1514 bytes come out padded, with a good FCS."""
    await tx_every_length(dut, GMII_1000, TX_LENGTHS)


@cocotb.test()
async def test_rx_every_length(dut):
    """RX: the same lengths from the wire arrive without FCS, unflagged."""
    await rx_every_length(dut, GMII_1000, TX_LENGTHS)


@cocotb.test()
async def test_jumbo_frames(dut):
    """9000-byte payloads both ways when the maximum length allows them."""
    bench = await started(dut, max_length=9018)
    jumbo = payload(9000, 5)
    await bench.tx_source.send(AxiStreamFrame(jumbo))
    await bench.rx_source.send(GmiiFrame.from_payload(jumbo))
    (tx_frame,) = await with_timeout(bench.recv_tx(1), 1, "ms")
    assert_tx_frame(tx_frame, jumbo)
    (rx_frame,) = await with_timeout(bench.recv_rx(1), 1, "ms")
    assert bytes(rx_frame.tdata) == jumbo and not frame_is_bad(rx_frame)


@cocotb.test()
async def test_tx_preamble_on_the_pins(dut):
    """The transmitter sends exactly 7 preamble bytes and the SFD (own pin monitor: the
    GMII sink model drops the first preamble symbol, so it cannot check this)."""
    bench = await started(dut)
    await bench.tx_source.send(AxiStreamFrame(payload(60)))
    symbols = []
    while len(symbols) < 10:
        await RisingEdge(dut.tx_clk)
        if int(dut.gmii_tx_en.value):
            symbols.append(int(dut.gmii_txd.value))
    assert bytes(symbols[:8]) == PREAMBLE, f"preamble on the pins: {bytes(symbols[:8]).hex()}"
    assert bytes(symbols[8:10]) == payload(60)[:2]


async def line_rate(dut, mode: LinkMode, length: int, count: int, ifg: int = 12):
    """Back-to-back frames both ways; every gap must equal the IFG and the rate be 100%."""
    bench = await started(dut, mode, ifg=ifg)
    data = [payload(length, n) for n in range(count)]
    tx_frames, rx_frames = await with_timeout(bench.back_to_back(data), 50, "ms")
    for frame, item in zip(tx_frames, data, strict=True):
        assert_tx_frame(frame, item)
    for frame, item in zip(rx_frames, data, strict=True):
        assert bytes(frame.tdata) == padded(item) and not frame_is_bad(frame)
    assert len(bench.rx_last_times_ps) == count
    frame_bytes = max(length, 60) + 4
    for rate in (
        tx_rate(tx_frames, mode, ifg),
        rx_rate(bench.rx_last_times_ps, frame_bytes, mode, ifg),
    ):
        assert rate.frame_bytes == frame_bytes
        assert set(rate.gaps_bytes) == {max(ifg, 1)}, (
            f"{rate.direction} gaps: {set(rate.gaps_bytes)}"
        )
        assert abs(rate.percent_of_line_rate - 100.0) < 1e-9, f"{rate.direction}: {rate}"
        dut._log.info(
            "%s %s, %d-byte frames: %.2f%% of line rate, %.1f Mb/s",
            mode.name,
            rate.direction,
            frame_bytes,
            rate.percent_of_line_rate,
            rate.mbps,
        )


@cocotb.test()
async def test_line_rate_minimum_frames(dut):
    """64-byte frames back to back both ways at 1000 Mb/s: gaps equal the IFG, 100%."""
    await line_rate(dut, GMII_1000, 60, 200)


@cocotb.test()
async def test_line_rate_maximum_frames(dut):
    """1518-byte frames back to back both ways at 1000 Mb/s."""
    await line_rate(dut, GMII_1000, 1514, 12)


@cocotb.test()
@cocotb.parametrize(ifg=[1, 8, 20])
async def test_line_rate_other_ifg(dut, ifg):
    """A runtime IFG other than 12 is kept exactly (both the MAC's and the wire model's)."""
    await line_rate(dut, GMII_1000, 100, 20, ifg=ifg)


@cocotb.test()
async def test_mii_100_both_ways(dut):
    """100 Mb/s MII (nibbles, 25 MHz): frames intact, gaps equal the IFG, full rate."""
    await line_rate(dut, MII_100, 60, 12)


@cocotb.test()
async def test_mii_10_with_clock_enable(dut):
    """10 Mb/s: MII nibbles on a 25 MHz clock enabled 1 in 10, full rate, exact gaps."""
    await line_rate(dut, MII_10, 60, 4)


@cocotb.test()
async def test_mii_lengths(dut):
    """MII: short, padded and full-size frames both ways."""
    bench = await started(dut, MII_100)
    lengths = [1, 45, 60, 61, 1514]
    for length in lengths:
        await bench.tx_source.send(AxiStreamFrame(payload(length)))
        await bench.rx_source.send(GmiiFrame.from_payload(payload(length, 1)))
    tx_frames = await with_timeout(bench.recv_tx(len(lengths)), 5, "ms")
    rx_frames = await with_timeout(bench.recv_rx(len(lengths)), 5, "ms")
    for frame, length in zip(tx_frames, lengths, strict=True):
        assert_tx_frame(frame, payload(length))
    for frame, length in zip(rx_frames, lengths, strict=True):
        assert bytes(frame.tdata) == padded(payload(length, 1)) and not frame_is_bad(frame)


@cocotb.test()
@cocotb.parametrize(every=[2, 5])
async def test_gmii_clock_enable(dut, every):
    """GMII with a clock enable of 1 in N: the MAC moves only on enabled clocks, gaps in
    enabled byte times still equal the IFG, and frames are intact both ways."""
    await line_rate(
        dut, LinkMode(f"GMII, enable 1 in {every}", 8, mii=False, enable_every=every), 60, 10
    )


def corrupt_fcs(data: bytes) -> GmiiFrame:
    frame = GmiiFrame.from_payload(data)
    frame.data[-1] ^= 0x80
    return frame


def with_rx_er(data: bytes, position: int) -> GmiiFrame:
    frame = GmiiFrame.from_payload(data)
    frame.error = [0] * len(frame.data)
    frame.error[8 + position] = 1
    return frame


def runt(data: bytes) -> GmiiFrame:
    """A frame shorter than 64 bytes with a correct FCS."""
    return GmiiFrame.from_raw_payload(with_fcs(data[:40]))


def oversize(data: bytes) -> GmiiFrame:
    return GmiiFrame.from_payload(data + payload(1515 - len(data), 9))


def no_sfd(data: bytes) -> GmiiFrame:
    """Carrier with preamble but garbage instead of an SFD: never delivered."""
    return GmiiFrame(b"\x55\x55\x55\x13" + data)


def short_preamble(data: bytes) -> GmiiFrame:
    """A good frame with 2 preamble bytes instead of 7."""
    return GmiiFrame(b"\x55\x55\xd5" + with_fcs(padded(data)))


#: kind -> (make the wire frame, delivered?, good?, counter it must increment)
RX_CASES = {
    "good": (GmiiFrame.from_payload, True, True, "rx_frames_good"),
    "short_preamble": (short_preamble, True, True, "rx_frames_good"),
    "bad_fcs": (corrupt_fcs, True, False, "rx_fcs_errors"),
    "rx_er": (lambda d: with_rx_er(d, len(d) // 2), True, False, "rx_phy_errors"),
    "runt": (runt, True, False, "rx_runts"),
    "oversize": (oversize, True, False, "rx_oversize"),
    "no_sfd": (no_sfd, False, False, "rx_preamble_errors"),
}


@cocotb.test()
@cocotb.parametrize(kind=[k for k in RX_CASES if k != "good"])
async def test_rx_bad_input_flagged_counted_next_delivered(dut, kind):
    """Each malformed frame is flagged on its last beat (or, without an SFD, not delivered),
    counted once in its own counter, pulses the status outputs, and the next good frame
    still arrives intact."""
    make, delivered, good, counter = RX_CASES[kind]
    bench = await started(dut)
    data = payload(100, 3)
    await bench.rx_source.send(make(data))
    await bench.rx_source.send(GmiiFrame.from_payload(payload(70, 4)))
    frames = await with_timeout(bench.recv_rx(2 if delivered else 1), 1, "ms")
    if delivered:
        assert frame_is_bad(frames[0]) != good, f"{kind}: flagged bad={frame_is_bad(frames[0])}"
    assert bytes(frames[-1].tdata) == payload(70, 4) and not frame_is_bad(frames[-1])
    await bench.settle()
    counters = await bench.counters()
    assert counters[counter] == (2 if good else 1), f"{counter} = {counters[counter]}"
    assert counters["rx_frames_bad"] == (0 if good or not delivered else 1)
    assert counters["rx_frames_good"] == (2 if good else 1)
    bad = 0 if good or not delivered else 1
    assert bench.pulses["rx_error_bad_frame"] == bad
    assert bench.pulses["rx_error_bad_fcs"] == int(kind == "bad_fcs")


@cocotb.test()
async def test_rx_mii_odd_nibble_is_alignment_error(dut):
    """MII: a frame that ends on half a byte is flagged and counted as an alignment error."""
    bench = await started(dut, MII_100)
    raw = PREAMBLE + with_fcs(padded(payload(64)))
    nibbles = [n for b in raw for n in (b & 15, b >> 4)] + [0x3]
    for nibble in nibbles:
        dut.gmii_rxd.value = nibble
        dut.gmii_rx_dv.value = 1
        await RisingEdge(dut.rx_clk)
    dut.gmii_rx_dv.value = 0
    await bench.rx_source.send(GmiiFrame.from_payload(payload(70, 4)))
    frames = await with_timeout(bench.recv_rx(2), 1, "ms")
    assert frame_is_bad(frames[0])
    assert bytes(frames[1].tdata) == payload(70, 4) and not frame_is_bad(frames[1])
    assert (await bench.counters())["rx_alignment_errors"] == 1


@cocotb.test()
async def test_tx_abort_sends_tx_er(dut):
    """tuser on the last beat: the frame goes out with tx_er, no receiver would take it."""
    bench = await started(dut)
    await bench.tx_source.send(AxiStreamFrame(payload(80), tuser=[0] * 79 + [1]))
    await bench.tx_source.send(AxiStreamFrame(payload(64, 1)))
    aborted, good = await with_timeout(bench.recv_tx(2), 1, "ms")
    assert aborted.error is not None and aborted.error[-1] == 1
    assert_tx_frame(good, payload(64, 1))
    counters = await bench.counters()
    assert (counters["tx_frames_bad"], counters["tx_frames_good"]) == (1, 1)


@cocotb.test()
async def test_tx_underrun_aborts_and_counts(dut):
    """The client runs dry mid-frame: the frame is cut with tx_er, the underrun is counted
    and pulsed, the rest of that frame is discarded and the next frame is intact."""
    bench = await started(dut)
    await bench.tx_source.send(AxiStreamFrame(payload(300)))
    await bench.tx_source.send(AxiStreamFrame(payload(64, 1)))
    await RisingEdge(dut.gmii_tx_en)
    await ClockCycles(dut.tx_clk, 40)
    bench.tx_source.pause = True
    await ClockCycles(dut.tx_clk, 5)
    bench.tx_source.pause = False
    cut, good = await with_timeout(bench.recv_tx(2), 1, "ms")
    assert cut.error is not None and cut.error[-1] == 1
    assert len(cut.get_payload(strip_fcs=False)) < 300
    assert_tx_frame(good, payload(64, 1))
    counters = await bench.counters()
    assert counters["tx_underruns"] == 1 and counters["tx_frames_bad"] == 1
    assert bench.pulses["tx_error_underflow"] == 1


@cocotb.test()
async def test_rx_random_mix(dut):
    """600 random good and bad frames with random gaps: every one accounted for, in order."""
    rng = random.Random(2026)
    bench = await started(dut)
    kinds = list(RX_CASES)
    weights = [8, 1, 1, 1, 1, 1, 1]
    expected = []
    expected_counts = {}

    def random_gap(_frame):
        bench.rx_source.ifg = rng.randint(1, 40)

    for n in range(600):
        kind = rng.choices(kinds, weights)[0]
        make, delivered, good, counter = RX_CASES[kind]
        length = rng.choice([rng.randint(46, 200), rng.randint(46, 200), rng.randint(200, 1514)])
        data = payload(length, n)
        frame = make(data)
        frame.tx_complete = random_gap
        bench.rx_source.send_nowait(frame)
        expected_counts[counter] = expected_counts.get(counter, 0) + 1
        if delivered:
            expected.append((kind, padded(data) if good else None))
    frames = await with_timeout(bench.recv_rx(len(expected)), 100, "ms")
    for index, (frame, (kind, data)) in enumerate(zip(frames, expected, strict=True)):
        if data is None:
            assert frame_is_bad(frame), f"frame {index} ({kind}) not flagged bad"
        else:
            assert not frame_is_bad(frame), f"frame {index} ({kind}) flagged bad"
            assert bytes(frame.tdata) == data, f"frame {index} ({kind}) corrupted"
    await bench.settle()
    counters = await bench.counters()
    for counter, count in expected_counts.items():
        assert counters[counter] == count, f"{counter}: {counters[counter]} != {count}"
    bad = sum(1 for kind, data in expected if data is None)
    assert counters["rx_frames_bad"] == bad
    assert bench.pulses["rx_error_bad_frame"] == bad
    assert bench.rx_sink.empty()


@cocotb.test()
async def test_tx_random_mix(dut):
    """300 frames of random length, some aborted, with random idle time between them:
    every frame on the wire, in order, aborted ones with tx_er, the rest intact."""
    rng = random.Random(7)
    bench = await started(dut)
    sent = []
    for n in range(300):
        length = rng.choice([rng.randint(1, 200), rng.randint(1, 1514)])
        abort = rng.random() < 0.15
        sent.append((payload(length, n), abort))

    async def client():
        for data, abort in sent:
            tuser = [0] * (len(data) - 1) + [1] if abort else None
            await bench.tx_source.send(AxiStreamFrame(data, tuser=tuser))
            if rng.random() < 0.5:
                await bench.tx_source.wait()
                await ClockCycles(dut.tx_clk, rng.randint(1, 100))

    cocotb.start_soon(client())
    frames = await with_timeout(bench.recv_tx(len(sent)), 100, "ms")
    for index, (frame, (data, abort)) in enumerate(zip(frames, sent, strict=True)):
        if abort:
            assert frame.error is not None and frame.error[-1] == 1, f"frame {index}"
        else:
            assert_tx_frame(frame, data)
    counters = await bench.counters()
    assert counters["tx_frames_bad"] == sum(abort for _, abort in sent)
    assert counters["tx_frames_good"] == sum(not abort for _, abort in sent)
