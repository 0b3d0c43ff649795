"""TX checksum insertion (CHECKSUM_PARTIAL) of ``macdma_soc``: scapy-built IPv4/IPv6,
UDP/TCP frames are posted as the Linux stack hands them over (pseudo-header sum in the L4
checksum field, the request in the SOP descriptor), in fragments that split the summed
region and the insert offset; the frames cocotbext-eth receives from the GMII wire must
be the reference's byte for byte, and scapy must accept their checksums."""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ClockCycles, with_timeout
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from tx_csum_reference import (
    CsumRequest,
    expected_tx,
    ones_complement_sum,
    partial_frame,
    scapy_verifies,
)

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.benches.soc import SocBench

TX_RING, TX_DATA = 0x1000, 0x10000
RING_SIZE = 64
ETHER = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
V4 = IP(src="192.0.2.1", dst="198.51.100.7")
V6 = IPv6(src="2001:db8::1", dst="2001:db8::2")


def on_wire(frame: bytes) -> bytes:
    return frame + bytes(max(0, 60 - len(frame)))  # the MAC pads short frames


def udp_zero() -> tuple[bytes, CsumRequest]:
    """UDP/IPv4 whose computed checksum is 0 (RFC 768: sent as 0xFFFF)."""
    frame, req = partial_frame(ETHER / V4 / UDP(sport=7, dport=9) / Raw(b"zero!!\0\0"))
    word = 0xFFFF - ones_complement_sum(frame[req.start :])
    return frame[:-2] + word.to_bytes(2, "big"), req


def cases() -> list[tuple[str, bytes, CsumRequest, list[int]]]:
    """(what, frame, request, fragment sizes)."""
    rng = random.Random(15)
    out = []
    packets = [
        ("IPv4/UDP", ETHER / V4 / UDP(sport=1000, dport=2000) / Raw(bytes(range(200)))),
        ("IPv4/TCP", ETHER / V4 / TCP(sport=80, dport=5555, seq=7) / Raw(b"x" * 999)),
        ("IPv6/UDP", ETHER / V6 / UDP(sport=53, dport=5353) / Raw(b"\xff" * 301)),
        ("IPv6/TCP", ETHER / V6 / TCP(sport=443, dport=4443) / Raw(bytes(range(256)) * 4)),
        ("IPv4/UDP odd", ETHER / V4 / UDP() / Raw(b"odd" * 31)),
        ("IPv4/TCP short", ETHER / V4 / TCP() / b"q"),
    ]
    for what, packet in packets:
        frame, req = partial_frame(packet)
        out.append((f"{what}, one fragment", frame, req, [len(frame)]))
        # Cuts right after csum_start, between the checksum's two bytes, and at random.
        insert = req.start + req.offset
        cuts = sorted({req.start + 1, insert + 1, rng.randrange(1, len(frame))} - {len(frame)})
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, len(frame)], strict=True)]
        out.append((f"{what}, fragments {sizes}", frame, req, sizes))
    frame, req = udp_zero()
    out.append(("UDP/IPv4 computed 0", frame, req, [21, len(frame) - 21]))
    plain = bytes(ETHER / V4 / UDP(chksum=0x1234) / Raw(b"plain" * 30))
    out.append(("no request", plain, CsumRequest(), [33, len(plain) - 33]))
    return out


def post(bench, ring, frame: bytes, req: CsumRequest, sizes: list[int], address: int) -> int:
    offset = 0
    for number, size in enumerate(sizes):
        chunk = frame[offset : offset + size]
        # Odd addresses: fragments are not aligned to the bus either.
        bench.memory.write(address + 1, chunk)
        first, last = number == 0, number == len(sizes) - 1
        request = {}
        if first:
            request = dict(csum_start=req.start, csum_offset=req.offset,
                           csum_insert=req.l4, ip_csum_insert=req.ip)  # fmt: skip
        ring.post(Descriptor.tx(address + 1, size, sop=first, eop=last, **request))
        address += (size + 64) & ~15
        offset += size
    return address


@cocotb.test()
async def test_tx_checksums_on_the_wire(dut):
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    features = await bench.read_reg(regs.ID_FEATURES)
    assert features & regs.ID_FEATURES_TX_CHECKSUM_MASK, "built without TX checksum"
    ring = await bench.open_ring("TX", TX_RING, RING_SIZE, burst_beats=16, prefetch=4)
    address = TX_DATA
    todo = cases()
    for _, frame, req, sizes in todo:
        address = post(bench, ring, frame, req, sizes, address)
    await ring.doorbell()
    for what, frame, req, _ in todo:
        got = await with_timeout(bench.tx_sink.recv(), 400, "us")
        assert got.check_fcs() and not got.error, f"{what}: bad frame on the wire"
        want, failed = expected_tx(frame, req)
        assert not failed
        assert got.get_payload() == on_wire(want), f"{what}: wire bytes differ"
        if req.l4:
            assert scapy_verifies(got.get_payload()[: len(frame)]), f"{what}: scapy rejects"
        else:
            assert got.get_payload() == on_wire(frame), f"{what}: changed without a request"
        if "computed 0" in what:
            at = req.start + req.offset
            assert got.get_payload()[at : at + 2] == b"\xff\xff", what
    for _ in range(sum(len(sizes) for *_, sizes in todo)):
        done = await ring.reap()
        assert not done.own and done.csum_start == 0 and not done.csum_insert, done
    assert await bench.read_reg(regs.STATS_TX_CSUM_SKIPPED) == 0


@cocotb.test()
async def test_cut_through_frame_is_sent_as_given_and_counted(dut):
    """A frame larger than the TX FIFO starts on the wire before it is whole, so its sum
    cannot be known: it leaves exactly as posted (FCS good) and STATS_TX_CSUM_SKIPPED
    counts it; the next frame, which fits, gets its checksums."""
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    features = await bench.read_reg(regs.ID_FEATURES)
    fifo_bytes = 1 << ((features & regs.ID_FEATURES_TX_FIFO_LOG2_MASK) >> 8)
    rng = random.Random(5)
    big, big_req = partial_frame(ETHER / V4 / UDP() / Raw(rng.randbytes(fifo_bytes + 600)))
    small, small_req = partial_frame(ETHER / V6 / TCP() / Raw(b"s" * 301))
    ring = await bench.open_ring("TX", TX_RING, RING_SIZE, burst_beats=64, prefetch=4)
    address = post(bench, ring, big, big_req, [4000] * (len(big) // 4000) + [len(big) % 4000],
                   TX_DATA)  # fmt: skip
    post(bench, ring, small, small_req, [len(small)], address)
    await ring.doorbell()
    got = await with_timeout(bench.tx_sink.recv(), 1000, "us")
    assert got.check_fcs() and not got.error
    assert got.get_payload() == big, "the cut-through frame was changed"
    got = await with_timeout(bench.tx_sink.recv(), 400, "us")
    assert got.get_payload() == on_wire(expected_tx(small, small_req)[0])
    assert scapy_verifies(got.get_payload())
    await ClockCycles(dut.clk, 50)
    assert await bench.read_reg(regs.STATS_TX_CSUM_SKIPPED) == 1
