"""TX checksum insertion in Amaranth's simulator: ``TxFrameChecksum`` alone, and through
``TxFrameFifo(checksum=True)`` from packed DMA words (sys clock) to MAC bytes (tx clock).
Frames come from scapy, split into fragments of random (odd) lengths, as the DMA packs
them: each fragment's last word may be partial, so words start at odd frame offsets."""

import random
import sys
from pathlib import Path

import pytest
from amaranth import *
from amaranth.sim import Simulator
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw

# The reference is shared with the SoC test bench, which runs with tests/cocotb on its path.
sys.path.insert(0, str(Path(__file__).parents[2] / "cocotb"))
from tx_csum_reference import (  # noqa: E402
    CsumRequest,
    expected_checksums,
    expected_tx,
    ones_complement_sum,
    partial_frame,
    scapy_verifies,
)

from macdma.hdl.dma.tx_checksum import TxFrameChecksum
from macdma.hdl.dma.tx_fifo import TxFrameFifo

TX_PERIOD = 8e-9
SYS_PERIOD = 24e-9  # 41.7 MHz, the Colorlight's system clock
ETHER = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
V4 = IP(src="192.0.2.1", dst="198.51.100.7")
V6 = IPv6(src="2001:db8::1", dst="2001:db8::2")


def fragment_beats(frame: bytes, sizes: list[int], width_bytes: int) -> list[dict]:
    """The DMA's packed words for a frame read as fragments of ``sizes`` bytes."""
    assert sum(sizes) == len(frame)
    beats, offset = [], 0
    for size in sizes:
        chunk = frame[offset : offset + size]
        offset += size
        for at in range(0, size, width_bytes):
            part = chunk[at : at + width_bytes]
            beats.append({"data": int.from_bytes(part, "little"), "count": len(part), "last": 0})
    beats[-1]["last"] = 1
    return beats


def random_split(length: int, rng: random.Random, pieces: int) -> list[int]:
    cuts = sorted(rng.sample(range(1, length), min(pieces - 1, length - 1)))
    return [b - a for a, b in zip([0, *cuts], [*cuts, length], strict=True)]


def scapy_cases() -> list[tuple[str, bytes, CsumRequest]]:
    """CHECKSUM_PARTIAL frames: IPv4/IPv6, UDP/TCP, odd lengths, IP options."""
    packets = [
        ("IPv4/UDP", ETHER / V4 / UDP(sport=1000, dport=2000) / Raw(bytes(range(200)))),
        ("IPv4/TCP", ETHER / V4 / TCP(sport=80, dport=5555, seq=7) / Raw(b"x" * 999)),
        ("IPv6/UDP", ETHER / V6 / UDP(sport=53, dport=5353) / Raw(b"\xff" * 301)),
        ("IPv6/TCP", ETHER / V6 / TCP(sport=443, dport=4443) / Raw(bytes(range(256)) * 4)),
        ("IPv4/UDP odd", ETHER / V4 / UDP() / Raw(b"odd" * 31)),
        ("IPv4+options/TCP", ETHER / IP(dst="192.0.2.9", options=b"\x01" * 8) / TCP() / b"q"),
    ]
    return [(what, *partial_frame(packet)) for what, packet in packets]


def udp_zero_case() -> tuple[bytes, CsumRequest]:
    """A UDP/IPv4 frame whose computed checksum is 0: its last two payload bytes make the
    sum over pseudo-header and segment 0xFFFF (RFC 768: it must be sent as 0xFFFF)."""
    frame, req = partial_frame(ETHER / V4 / UDP(sport=7, dport=9) / Raw(b"zero!!\0\0"))
    # The sum with the last two bytes 0, then the word that brings it to 0xFFFF.
    word = 0xFFFF - ones_complement_sum(frame[req.start :])
    frame = frame[:-2] + word.to_bytes(2, "big")
    assert ones_complement_sum(frame[req.start :]) == 0xFFFF
    return frame, req


# ---- TxFrameChecksum alone ------------------------------------------------------------


def run_checksum(frames, data_width, seed):
    """Feed (frame, request, sizes) with random gaps; return each frame's result."""
    dut = TxFrameChecksum(data_width)
    sim = Simulator(dut)
    sim.add_clock(SYS_PERIOD)
    rng = random.Random(seed)
    results = []

    async def feed(ctx):
        for frame, req, sizes in frames:
            for beat in fragment_beats(frame, sizes, data_width // 8):
                while rng.random() < 0.3:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick()
                ctx.set(dut.i.valid, 1)
                ctx.set(
                    dut.request,
                    {"start": req.start, "offset": req.offset, "l4": req.l4, "ip": req.ip},
                )
                for name, value in beat.items():
                    ctx.set(getattr(dut.i.p, name), value)
                await ctx.tick()
            ctx.set(dut.i.valid, 0)
            ctx.set(dut.request, {"start": 0, "offset": 0, "l4": 0, "ip": 0})  # sampled once
        for _ in range(8):
            await ctx.tick()

    async def watch(ctx):
        async for _, _, valid, failed, l4, pos, l4_csum, ip, ip_csum in ctx.tick().sample(
            dut.result.valid,
            dut.failed,
            dut.result.p.l4,
            dut.result.p.l4_pos,
            dut.result.p.l4_csum,
            dut.result.p.ip,
            dut.result.p.ip_csum,
        ):
            if valid:
                results.append((bool(failed), bool(l4), pos, l4_csum, bool(ip), ip_csum))

    sim.add_testbench(feed)
    sim.add_process(watch)
    sim.run_until(SYS_PERIOD * (sum(len(f) for f, _, _ in frames) + 200 * len(frames)))
    return results


@pytest.mark.parametrize("data_width", [32, 64])
def test_checksum_component_matches_the_reference(data_width):
    """Sums of scapy frames split at random odd offsets, plus requests the frame cannot
    hold (reported failed, nothing to insert)."""
    rng = random.Random(data_width)
    cases = [(frame, req) for _, frame, req in scapy_cases()]
    short, req = partial_frame(ETHER / V4 / UDP() / b"ab")
    cases += [
        (short, CsumRequest(start=req.start, offset=40, l4=True, ip=True)),  # past the end
        (short, CsumRequest(start=0, offset=4, l4=True)),  # inside the Ethernet header
        (bytes(ETHER / V6 / UDP() / b"v6"), CsumRequest(start=54, offset=6, ip=True)),  # not v4
        (bytes(ETHER / V4 / UDP() / b"x"), CsumRequest()),  # no request: no result
    ]
    frames = [(f, r, random_split(len(f), rng, rng.randint(1, 6))) for f, r in cases]
    got = run_checksum(frames, data_width, seed=data_width)
    asked = [(f, r) for f, r, _ in frames if r.l4 or r.ip]
    assert len(got) == len(asked)
    for (failed, l4, pos, l4_csum, ip, ip_csum), (frame, req) in zip(got, asked, strict=True):
        want = expected_checksums(frame, req)
        assert (failed, l4, ip) == (want["failed"], want["l4"], want["ip"]), req
        if l4:
            assert (pos, l4_csum) == (req.start + req.offset, want["l4_csum"]), req
        if ip:
            assert ip_csum == want["ip_csum"], req


# ---- through the TX FIFO ----------------------------------------------------------------


def run_fifo(frames, *, data_width=32, depth_bytes=4096, seed=0, ready_prob=1.0):
    """(frame, request, sizes) through TxFrameFifo(checksum=True): the bytes of each frame
    as the MAC gets them and the number of csum_skipped pulses."""
    dut = TxFrameFifo(data_width, depth_bytes, checksum=True)
    m = Module()
    m.submodules.dut = dut
    m.domains.sync = ClockDomain("sync")
    m.domains.tx = ClockDomain("tx")
    sim = Simulator(m)
    sim.add_clock(SYS_PERIOD, domain="sync")
    sim.add_clock(TX_PERIOD, domain="tx", phase=TX_PERIOD / 3)
    rng = random.Random(seed)
    received, skipped = [], [0]

    async def writer(ctx):
        for frame, req, sizes in frames:
            ctx.set(
                dut.i.p.meta.csum,
                {"start": req.start, "offset": req.offset, "l4": req.l4, "ip": req.ip},
            )
            for beat in fragment_beats(frame, sizes, data_width // 8):
                while rng.random() < 0.2:
                    ctx.set(dut.i.valid, 0)
                    await ctx.tick()
                ctx.set(dut.i.valid, 1)
                for name, value in beat.items():
                    ctx.set(getattr(dut.i.p, name), value)
                ctx.set(dut.i.p.error, 0)
                while True:
                    ready = ctx.get(dut.i.ready)
                    await ctx.tick()
                    if ready:
                        break
                # A later fragment's descriptor may carry anything: only the first is read.
                ctx.set(
                    dut.i.p.meta.csum,
                    {"start": rng.randrange(1024), "offset": 3, "l4": 1, "ip": 1},
                )
        ctx.set(dut.i.valid, 0)

    async def count_skipped(ctx):
        async for _, _, pulse in ctx.tick().sample(dut.csum_skipped):
            skipped[0] += pulse

    async def reader(ctx):
        current = bytearray()
        limit = 4 * sum(len(f) for f, _, _ in frames) + 2000 * len(frames)
        for _ in range(limit):
            if len(received) == len(frames):
                break
            ready = rng.random() < ready_prob
            ctx.set(dut.o.ready, ready)
            if ready and ctx.get(dut.o.valid):
                current.append(ctx.get(dut.o.p.data))
                if ctx.get(dut.o.p.last):
                    assert not ctx.get(dut.o.p.error)
                    received.append(bytes(current))
                    current = bytearray()
            await ctx.tick("tx")
        assert len(received) == len(frames), f"timeout: {len(received)} of {len(frames)} frames"

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.add_process(count_skipped)
    sim.run()
    return received, skipped[0]


@pytest.mark.parametrize("data_width", [32, 64])
def test_fifo_inserts_checksums_that_scapy_accepts(data_width):
    """IPv4/IPv6, UDP/TCP frames in 1..7 fragments of random lengths, some frames without
    a request in between (unchanged byte for byte), a UDP/IPv4 frame whose checksum is 0
    (sent as 0xFFFF), a slow MAC: every frame as the reference says, scapy accepts them."""
    rng = random.Random(10 + data_width)
    zero_frame, zero_req = udp_zero_case()
    cases = [*[(f, r) for _, f, r in scapy_cases()], (zero_frame, zero_req)]
    plain = bytes(ETHER / V4 / UDP(chksum=0x1234) / Raw(b"plain" * 30))
    frames = []
    for frame, req in cases:
        frames.append((frame, req, random_split(len(frame), rng, rng.randint(1, 7))))
        frames.append((plain, CsumRequest(), random_split(len(plain), rng, 3)))
    received, skipped = run_fifo(frames, data_width=data_width, seed=data_width, ready_prob=0.8)
    assert skipped == 0
    for (frame, req, sizes), got in zip(frames, received, strict=True):
        want, _ = expected_tx(frame, req)
        assert got == want, (req, sizes)
        if req.l4:
            assert scapy_verifies(got), req
        else:
            assert got == frame
    zero_at = zero_req.start + zero_req.offset
    assert received[-2][zero_at : zero_at + 2] == b"\xff\xff"


def test_cut_through_frame_is_sent_unchanged_and_counted():
    """A frame larger than the FIFO goes cut-through: its sum is not known before it
    starts, so nothing is inserted and csum_skipped pulses once; the frames around it
    (store-and-forward) still get their checksums."""
    rng = random.Random(3)
    big, big_req = partial_frame(ETHER / V4 / UDP() / Raw(rng.randbytes(3000)))
    small, small_req = partial_frame(ETHER / V4 / TCP() / Raw(b"s" * 101))
    frames = [
        (small, small_req, [len(small)]),
        (big, big_req, random_split(len(big), rng, 4)),
        (small, small_req, random_split(len(small), rng, 2)),
    ]
    received, skipped = run_fifo(frames, depth_bytes=2048, seed=3)
    assert skipped == 1
    assert received[1] == big  # as the driver gave it, pseudo-header sum and all
    for index in (0, 2):
        assert received[index] == expected_tx(small, small_req)[0]
        assert scapy_verifies(received[index])


def test_a_request_the_frame_cannot_hold_is_counted():
    frame, req = partial_frame(ETHER / V4 / UDP() / b"ab")
    bad = CsumRequest(start=req.start, offset=60, l4=True)
    received, skipped = run_fifo([(frame, bad, [len(frame)]), (frame, req, [len(frame)])])
    assert skipped == 1
    assert received == [frame, expected_tx(frame, req)[0]]
