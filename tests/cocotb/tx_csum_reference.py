"""What TX checksum insertion must do to a frame, written from docs/descriptors.md (not from
the RTL), and CHECKSUM_PARTIAL frames built with scapy, as the Linux stack hands them over.
Shared by the Amaranth-simulator tests and the SoC cocotb test."""

from __future__ import annotations

from dataclasses import dataclass

IP_START = 14
IP_CSUM = 24


def ones_complement_sum(data: bytes) -> int:
    """RFC 1071: 16-bit big-endian words, an odd last byte padded with 0, folded."""
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[n : n + 2], "big") for n in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


@dataclass(frozen=True)
class CsumRequest:
    """The SOP descriptor's request."""

    start: int = 0
    offset: int = 0
    l4: bool = False
    ip: bool = False


def expected_checksums(frame: bytes, req: CsumRequest) -> dict:
    """Which checksums are inserted and their values; ``failed``: part of the request is
    not honoured (docs/descriptors.md, TX checksum)."""
    pos = req.start + req.offset
    l4_ok = pos >= IP_START and pos + 2 <= len(frame)
    vihl = frame[IP_START] if len(frame) > IP_START else 0
    header = 4 * (vihl & 0xF)
    ip_ok = vihl >> 4 == 4 and header >= 20 and IP_START + header <= len(frame)
    head = bytearray(frame[IP_START : IP_START + header])
    head[10:12] = b"\0\0"
    l4_csum = ~ones_complement_sum(frame[req.start :]) & 0xFFFF
    return {
        "failed": (req.l4 and not l4_ok) or (req.ip and not ip_ok),
        "l4": req.l4 and l4_ok,
        "l4_csum": l4_csum or 0xFFFF,
        "ip": req.ip and ip_ok,
        "ip_csum": ~ones_complement_sum(bytes(head)) & 0xFFFF,
    }


def expected_tx(frame: bytes, req: CsumRequest) -> tuple[bytes, bool]:
    """(the frame as it must leave, whether the request is reported not honoured)."""
    sums = expected_checksums(frame, req)
    out = bytearray(frame)
    if sums["ip"]:
        out[IP_CSUM : IP_CSUM + 2] = sums["ip_csum"].to_bytes(2, "big")
    if sums["l4"]:  # after the IPv4 header's: it wins where they overlap
        pos = req.start + req.offset
        out[pos : pos + 2] = sums["l4_csum"].to_bytes(2, "big")
    return bytes(out), sums["failed"]


def partial_frame(packet) -> tuple[bytes, CsumRequest]:
    """A scapy Ether/IP(v6)/UDP|TCP packet as CHECKSUM_PARTIAL hands it to a driver: the
    L4 checksum field holds the folded pseudo-header sum, the IPv4 header checksum field
    garbage (the hardware must ignore it); the request to fill both in."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether

    data = bytearray(bytes(packet))
    network = Ether(bytes(data)).payload  # built: IHL and lengths filled in
    if isinstance(network, IP):
        header = 4 * network.ihl if network.ihl else 20
        l4_length = len(data) - IP_START - header
        pseudo = data[26:34] + bytes([0, network.proto]) + l4_length.to_bytes(2, "big")
        is_v4 = True
    elif isinstance(network, IPv6):
        header = 40
        l4_length = len(data) - IP_START - header
        pseudo = data[22:54] + l4_length.to_bytes(4, "big") + bytes([0, 0, 0, network.nh])
        is_v4 = False
    else:
        raise ValueError(f"partial_frame needs IPv4 or IPv6, not {type(network).__name__}")
    start = IP_START + header
    offset = {UDP: 6, TCP: 16}[type(network.payload)]
    data[start + offset : start + offset + 2] = ones_complement_sum(bytes(pseudo)).to_bytes(
        2, "big"
    )
    if is_v4:
        data[IP_CSUM : IP_CSUM + 2] = b"\xde\xad"
    return bytes(data), CsumRequest(start=start, offset=offset, l4=True, ip=is_v4)


def scapy_verifies(frame: bytes) -> bool:
    """scapy's own verdict on the frame's IPv4 header and UDP/TCP checksums: its
    checksum of the received header, and of the pseudo-header plus segment (in4_chksum /
    in6_chksum), must come out 0."""
    from scapy.layers.inet import IP, in4_chksum
    from scapy.layers.inet6 import IPv6, in6_chksum
    from scapy.layers.l2 import Ether
    from scapy.utils import checksum

    packet = Ether(frame)
    network = packet.payload
    if isinstance(network, IP):
        if checksum(bytes(network)[: 4 * network.ihl]) != 0:
            return False
        segment = bytes(network.payload)[: network.len - 4 * network.ihl]
        return in4_chksum(network.proto, network, segment) == 0
    assert isinstance(network, IPv6)
    segment = bytes(network.payload)[: network.plen]
    return in6_chksum(network.nh, network, segment) == 0
