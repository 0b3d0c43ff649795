"""Ethernet frame constants and the byte stream that carries frames inside the MAC.

A frame travels through the MAC as a stream of :class:`ByteBeat`: one byte per beat,
``last`` on its final byte, and ``error`` on that final byte meaning *abort* (towards
the wire) or *bad frame* (from the wire). The FCS is never part of this stream: the MAC
appends it on transmit and checks and strips it on receive.
"""

from amaranth.lib import data, enum
from amaranth.lib.crc import catalog

PREAMBLE_BYTE = 0x55
SFD_BYTE = 0xD5
PREAMBLE_LENGTH = 7  # bytes of 0x55 before the SFD, as IEEE 802.3 clause 35 sends them
FCS_LENGTH = 4
MIN_FRAME_LENGTH = 64  # destination address through FCS
MIN_DATA_LENGTH = MIN_FRAME_LENGTH - FCS_LENGTH  # shorter frames are zero-padded to this
VLAN_TAG_LENGTH = 4
VLAN_TPID = 0x8100
DEFAULT_IFG_BYTES = 12
DEFAULT_MAX_FRAME_LENGTH = 1518
#: The largest jumbo frame supported end to end, without FCS (as the common 9216-byte
#: jumbo MTU of switches; MAC_MAX_LEN must then be at least this plus the FCS).
MAX_JUMBO_FRAME_BYTES = 9216

#: CRC-32 of IEEE 802.3, one byte per step. ``crc`` is sent least significant byte first.
ETHERNET_CRC = catalog.CRC32_ETHERNET(data_width=8)


#: TX timestamp requests (PTP) are numbered 1..7 (0 = none), cycling, so that a time coming
#: back from the MAC is only ever taken by the write-back of the frame it was latched for.
TS_ID_BITS = 3


class ByteBeat(data.Struct):
    """One byte of a frame on the MAC's client streams."""

    data: 8
    last: 1
    error: 1


class TxByteBeat(data.Struct):
    """One byte of a frame to transmit, entering the MAC: a :class:`ByteBeat` that also
    carries the frame's PTP timestamp request (0, or its number), read with the frame's
    first byte by a MAC built with PTP (:mod:`.ptp`) and ignored otherwise."""

    data: 8
    last: 1
    error: 1
    ts_request: TS_ID_BITS


class TxStatus(data.Struct):
    """What happened to one transmitted frame (reported once, after its last symbol).

    ``length`` counts the bytes on the wire after the SFD: data, padding and FCS.
    """

    length: 16
    aborted: 1  # the client flagged an error on the last beat: sent with tx_er
    underrun: 1  # the client ran dry mid-frame: cut short with tx_er


class RxError(enum.Enum, shape=3):
    """Why a received frame is bad; one cause per frame, highest priority first."""

    NONE = 0
    PHY = 1  # rx_er asserted during the frame
    ALIGNMENT = 2  # the frame ended on half a byte (MII: odd number of nibbles)
    OVERSIZE = 3  # longer than the configured maximum (plus 4 for a VLAN tag)
    RUNT = 4  # shorter than 64 bytes including FCS
    FCS = 5  # frame check sequence mismatch


class RxFrameMeta(data.Struct):
    """What the receive path knows of a frame as a whole. It rides in the payload of the
    frame's last beat (meaningful there only), so ``connect()`` carries it with the bytes
    from the MAC through the RX FIFO to the DMA. Each stage fills its own field and passes
    the others on: the MAC ``cause``, the PTP timestamper (:mod:`.ptp`) ``ts_ns`` and
    ``ts_valid``, the RX FIFO ``csum``; a field no stage of a build fills stays 0.
    """

    cause: RxError  # why the frame is bad (NONE for a good one)
    csum: 16  # CHECKSUM_COMPLETE sum from byte 14 on (macdma.hdl.dma.rx_checksum)
    ts_ns: 32  # low 32 bits of the frame's SFD time (PTP)
    ts_valid: 1  # ts_ns is this frame's


class RxByteBeat(data.Struct):
    """One byte of a received frame leaving the MAC: a :class:`ByteBeat` whose last beat
    also carries the frame's :class:`RxFrameMeta`."""

    data: 8
    last: 1
    error: 1
    meta: RxFrameMeta


class RxStatus(data.Struct):
    """What happened to one received frame; ``length`` includes the FCS."""

    length: 16
    error: RxError
