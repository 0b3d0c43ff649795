"""RX checksum (CHECKSUM_COMPLETE) of ``macdma_soc``: real IPv4/IPv6, UDP/TCP frames built
with scapy arrive from the GMII wire; each EOP descriptor's ``rx_csum`` must be the RFC 1071
sum of the frame from byte 14, and from it alone (as Linux does with CHECKSUM_COMPLETE)
the IPv4 header and L4 checksums must verify, or fail where scapy was told to corrupt them.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import Timer, with_timeout
from cocotbext.eth import GmiiFrame
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from tx_csum_reference import ones_complement_sum

from macdma.firmware import regs
from macdma.firmware.descriptor import Descriptor
from macdma.hdl.dma.rx_checksum import RX_CHECKSUM_START_BYTES
from macdma.sim.benches.gmii import GMII_1000
from macdma.sim.benches.soc import SocBench

RX_RING, RX_DATA = 0x2000, 0x40000
RING_SIZE = 64
ETHER = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
V4 = IP(src="192.0.2.1", dst="198.51.100.7")
V6 = IPv6(src="2001:db8::1", dst="2001:db8::2")


def subtract(total: int, part: int) -> int:
    """Ones'-complement ``total - part`` (how the stack removes bytes from a csum)."""
    return ones_complement_sum((total + (~part & 0xFFFF)).to_bytes(4, "big"))


def l4_verifies(frame: bytes, complete: int) -> bool:
    """Verify the frame's IPv4 header and UDP/TCP checksum from the complete sum alone,
    reading only headers (what the stack does with CHECKSUM_COMPLETE)."""
    network = frame[RX_CHECKSUM_START_BYTES:]
    if frame[12:14] == b"\x08\x00":
        header_bytes = (network[0] & 0xF) * 4
        header_sum = ones_complement_sum(network[:header_bytes])
        if header_sum != 0xFFFF:
            return False
        if int.from_bytes(network[6:8], "big") & 0x3FFF:
            return True  # a fragment (MF or an offset): L4 is checked after reassembly
        total_length = int.from_bytes(network[2:4], "big")
        l4_length = total_length - header_bytes
        protocol = network[9]
        pseudo = network[12:20] + bytes([0, protocol]) + l4_length.to_bytes(2, "big")
        if protocol == 17 and network[header_bytes + 6 : header_bytes + 8] == b"\0\0":
            return True  # UDP over IPv4 without a checksum: nothing to verify
        padding = network[total_length:]
        l4_sum = subtract(subtract(complete, header_sum), ones_complement_sum(padding))
    else:
        header_bytes = 40
        l4_length = int.from_bytes(network[4:6], "big")
        protocol = network[6]
        pseudo = network[8:40] + l4_length.to_bytes(4, "big") + bytes([0, 0, 0, protocol])
        l4_sum = subtract(complete, ones_complement_sum(network[:header_bytes]))
    total = ones_complement_sum(
        l4_sum.to_bytes(2, "big") + ones_complement_sum(pseudo).to_bytes(2, "big")
    )
    return total == 0xFFFF


def frames_to_check() -> list[tuple[str, bytes, bool]]:
    """(what, frame without FCS, whether its checksums are right)."""
    cases = [
        ("IPv4/UDP", ETHER / V4 / UDP(sport=1000, dport=2000) / Raw(bytes(range(200))), True),
        ("IPv4/TCP", ETHER / V4 / TCP(sport=80, dport=5555, seq=7) / Raw(b"x" * 999), True),
        ("IPv6/UDP", ETHER / V6 / UDP(sport=53, dport=5353) / Raw(b"\xff" * 301), True),
        ("IPv6/TCP", ETHER / V6 / TCP(sport=443, dport=4443) / Raw(bytes(range(256)) * 4), True),
        ("IPv4/UDP, odd length", ETHER / V4 / UDP() / Raw(b"odd" * 31), True),
        ("IPv4/UDP, no checksum (0)", ETHER / V4 / UDP(chksum=0) / Raw(b"zero" * 20), True),
        ("IPv4/UDP, short, padded", ETHER / V4 / UDP() / Raw(b"ab"), True),
        ("IPv4/UDP, bad L4 checksum", ETHER / V4 / UDP(chksum=0x1234) / Raw(b"bad" * 40), False),
        ("IPv4/TCP, bad IP checksum", ETHER / IP(dst="192.0.2.9", chksum=1) / TCP() / b"q", False),
        ("IPv4 fragment", ETHER / IP(dst="192.0.2.9", flags="MF", frag=0) / Raw(b"f" * 96), True),
    ]
    frames = []
    for what, packet, good in cases:
        data = bytes(packet)
        frames.append((what, data + bytes(max(0, 60 - len(data))), good))
    return frames


@cocotb.test()
@cocotb.parametrize(buffer_bytes=[2048, 256])
async def test_rx_csum_of_scapy_frames(dut, buffer_bytes):
    """Each frame's rx_csum is its RFC 1071 sum from byte 14, also when it spans several
    RX buffers; good checksums verify from it, corrupted ones do not."""
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    features = await bench.read_reg(regs.ID_FEATURES)
    assert features & regs.ID_FEATURES_RX_CHECKSUM_MASK, "built without RX checksum"
    ring = await bench.open_ring("RX", RX_RING, RING_SIZE, burst_beats=16, prefetch=4)
    for index in range(RING_SIZE - 1):
        ring.post(Descriptor.rx(RX_DATA + index * 2048, buffer_bytes))
    await ring.doorbell()
    cases = frames_to_check()
    for _, data, _ in cases:
        bench.rx_source.send_nowait(GmiiFrame.from_payload(data))
    for what, data, good in cases:
        chain = [await with_timeout(ring.reap(), 1, "ms")]
        while not chain[-1].eop:
            assert chain[-1].rx_csum == 0, f"{what}: rx_csum on a non-EOP descriptor"
            chain.append(await with_timeout(ring.reap(), 1, "ms"))
        received = b"".join(bytes(bench.memory.read(d.addr, d.done_length)) for d in chain)
        eop = chain[-1]
        assert received == data and not eop.error, f"{what}: frame damaged"
        expected = ones_complement_sum(data[RX_CHECKSUM_START_BYTES:])
        assert eop.rx_csum == expected, f"{what}: rx_csum {eop.rx_csum:#06x}, not {expected:#06x}"
        assert l4_verifies(data, eop.rx_csum) == good, f"{what}: verification from rx_csum"
    await Timer(1, "us")


@cocotb.test()
async def test_rx_csum_is_zero_for_a_bad_frame(dut):
    """A frame with a bad FCS is delivered flagged, with rx_csum 0."""
    bench = SocBench(dut, GMII_1000)
    await bench.start()
    ring = await bench.open_ring("RX", RX_RING, RING_SIZE)
    ring.post(Descriptor.rx(RX_DATA, 2048))
    await ring.doorbell()
    frame = GmiiFrame.from_payload(bytes(ETHER / V4 / UDP() / Raw(b"x" * 100)))
    frame.data[-1] ^= 0xFF  # the FCS's last byte
    bench.rx_source.send_nowait(frame)
    eop = await with_timeout(ring.reap(), 1, "ms")
    assert eop.eop and eop.error and eop.rx_csum == 0, eop
