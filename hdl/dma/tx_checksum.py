"""TX checksum insertion, the summing half: Linux CHECKSUM_PARTIAL on packed DMA words.

Ref: RFC 1071 (the Internet checksum), RFC 768 (a UDP checksum computed as 0 is sent as
0xFFFF), Linux ``CHECKSUM_PARTIAL`` (the stack leaves the pseudo-header sum in the
checksum field; the device sums from ``csum_start`` to the end of the frame and writes
the complement at ``csum_start + csum_offset``).

:class:`TxFrameChecksum` watches the words the TX FIFO stores (``sync`` domain) and, a few
cycles after a frame's last word, gives the two checksums it asked for:

* **L4** (``csum_insert``): the ones'-complement sum of the frame from byte
  ``csum_start`` to its end, complemented; 0 becomes 0xFFFF. For UDP that is RFC 768's
  rule; for TCP (and any other Internet checksum) 0x0000 and 0xFFFF are the same value in
  ones'-complement arithmetic, so a receiver accepts either.
* **IPv4 header** (``ip_csum_insert``): the header at byte :data:`IP_HEADER_START`, its
  length from IHL, the checksum field (bytes 24-25) taken as 0 whatever the frame holds.

The FIFO's read side puts them into the frame on its way to the MAC
(:class:`~macdma.hdl.dma.tx_fifo.TxFrameFifo`). A request the frame cannot honour (an
insert position not after the Ethernet header or past the frame's end; an IPv4 request on
a frame whose byte 14 is not version 4 with IHL >= 5, or shorter than its header) is
reported ``failed`` and nothing is inserted for it.

Words may carry fewer bytes than the bus is wide anywhere in a frame (a fragment's last
word), so a word's bytes may start at an odd frame offset. Such words are summed with
their byte roles swapped, into a second accumulator that is byte-swapped at the end
(RFC 1071 section 2(B): the sum is independent of byte order up to a swap).
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .packed import packed_layout

__all__ = [
    "IP_CSUM_POS",
    "IP_HEADER_START",
    "MIN_INSERT_POS",
    "TxChecksumRequest",
    "TxChecksumResult",
    "TxFrameChecksum",
]

#: The IPv4 header follows an untagged Ethernet header.
IP_HEADER_START = 14
#: Its checksum field: bytes 10-11 of the header.
IP_CSUM_POS = IP_HEADER_START + 10
#: An L4 checksum goes after the Ethernet header.
MIN_INSERT_POS = 14
#: Frame byte offsets (frames are at most 65535 bytes).
POS_BITS = 16
#: The unfolded sum of 65535 bytes of 0xFF fits 32 bits.
SUM_BITS = 32

#: What a frame asks for, from its SOP descriptor (docs/descriptors.md).
TxChecksumRequest = data.StructLayout({"start": 10, "offset": 8, "l4": 1, "ip": 1})

#: What the FIFO's read side needs to insert: per checksum whether to, where and what.
TxChecksumResult = data.StructLayout(
    {"l4": 1, "l4_pos": POS_BITS, "l4_csum": 16, "ip": 1, "ip_csum": 16}
)


def _fold(value):
    """Ones'-complement fold of an up-to-32-bit sum to 16 bits (two end-around carries)."""
    once = value[:16] + value[16:32]
    return (once[:16] + once[16])[:16]


def _swap(value):
    return Cat(value[8:16], value[:8])


class TxFrameChecksum(wiring.Component):
    """Sums the frames of a packed word stream it watches (it never holds the stream up).

    Parameters
    ----------
    data_width : 32 or 64
        Width of the words; one carries ``W = data_width // 8`` bytes from lane 0.

    Members
    -------
    i : In(stream of {data, count, last}, always ready)
        The words as stored, ``valid`` when one is taken. ``count`` bytes from lane 0
        (above W counts as W, 0 carries nothing); ``last`` ends the frame.
    request : In(TxChecksumRequest)
        Sampled with the frame's first word.
    cancel : In(1)
        With any word of the frame (its last included): the frame's result is not
        wanted (the FIFO sends it cut-through); ``result`` is still given, with ``valid``
        low.
    result : Out(stream TxChecksumResult, always ready)
        ``valid`` for one cycle, 3 cycles after the last word of a frame that asked for a
        checksum and was not cancelled. ``l4``/``ip`` say which checksums to insert.
    failed : Out(1)
        With ``result.valid``: part of the request could not be honoured (see the module
        docstring); its flag in ``result`` is 0.
    """

    def __init__(self, data_width: int = 32):
        if data_width not in (32, 64):
            raise ValueError(f"data_width must be 32 or 64, not {data_width!r}")
        self._data_width = data_width
        word = packed_layout(data_width)
        super().__init__(
            {
                "i": In(stream.Signature(word, always_ready=True)),
                "request": In(TxChecksumRequest),
                "cancel": In(1),
                "result": Out(stream.Signature(TxChecksumResult, always_ready=True)),
                "failed": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        beat_bytes = self._data_width // 8
        beat = self.i.p

        pos = Signal(POS_BITS)  # frame offset of this word's lane 0
        open_ = Signal()  # a frame's first word was seen, its last not yet
        request = Signal(TxChecksumRequest)
        cancelled = Signal()
        version_ihl = Signal(8)  # byte 14 of the frame
        ip_end = Signal(POS_BITS, init=IP_HEADER_START + 20)  # until byte 14 is seen
        # [L4, IP] sums of the words starting at an even / odd frame offset.
        acc = [
            [Signal(SUM_BITS, name=f"{kind}_{parity}") for parity in ("even", "odd")]
            for kind in ("l4", "ip")
        ]

        first = self.i.valid & ~open_
        req = Signal(TxChecksumRequest)
        m.d.comb += req.eq(Mux(first, self.request, request))
        count = Mux(beat.count > beat_bytes, beat_bytes, beat.count)

        # Per lane: its frame offset, whether it is in the L4 / IPv4 header region.
        l4_terms, ip_terms = [], []
        byte14 = Signal(8)
        sees_14 = Signal()
        for lane in range(beat_bytes):
            byte = beat.data.word_select(lane, 8)
            at = pos + lane
            present = count > lane
            shifted = byte << 8 if lane % 2 == 0 else byte
            in_l4 = present & (at >= req.start)
            in_ip = (
                present
                & (at >= IP_HEADER_START)
                & (at < ip_end)
                & (at != IP_CSUM_POS)
                & (at != IP_CSUM_POS + 1)
            )
            l4_terms.append(Mux(in_l4, shifted, 0))
            ip_terms.append(Mux(in_ip, shifted, 0))
            with m.If(present & (at == IP_HEADER_START)):
                m.d.comb += [sees_14.eq(1), byte14.eq(byte)]
        l4_word = sum(l4_terms)
        ip_word = sum(ip_terms)
        odd = pos[0]

        # Stage 1: the frame's four sums, its length and request, at its last word.
        s1_valid = Signal()
        s1 = {
            "acc": [[Signal(SUM_BITS, name=f"s1_{k}_{p}") for p in "eo"] for k in ("l4", "ip")],
            "length": Signal(POS_BITS + 1),
            "request": Signal(TxChecksumRequest),
            "version_ihl": Signal(8),
            "ip_end": Signal(POS_BITS),
        }
        m.d.sync += s1_valid.eq(0)
        with m.If(self.i.valid):
            new = [
                [acc[k][p] + Mux(odd == p, word, 0) for p in (0, 1)]
                for k, word in ((0, l4_word), (1, ip_word))
            ]
            vihl = Mux(sees_14, byte14, version_ihl)
            end = Mux(sees_14, IP_HEADER_START + 4 * byte14[:4], ip_end)
            with m.If(beat.last):
                m.d.sync += [
                    s1_valid.eq(req.l4 | req.ip),
                    s1["length"].eq(pos + count),
                    s1["request"].eq(req),
                    s1["version_ihl"].eq(vihl),
                    s1["ip_end"].eq(end),
                    pos.eq(0),
                    open_.eq(0),
                    cancelled.eq(0),
                    ip_end.eq(ip_end.init),
                ]
                m.d.sync += [s1["acc"][k][p].eq(new[k][p]) for k in (0, 1) for p in (0, 1)]
                m.d.sync += [acc[k][p].eq(0) for k in (0, 1) for p in (0, 1)]
            with m.Else():
                m.d.sync += [
                    pos.eq(pos + count),
                    open_.eq(1),
                    request.eq(req),
                    version_ihl.eq(vihl),
                    ip_end.eq(end),
                    cancelled.eq(cancelled | self.cancel),
                ]
                m.d.sync += [acc[k][p].eq(new[k][p]) for k in (0, 1) for p in (0, 1)]
        s1_cancelled = Signal()
        with m.If(self.i.valid & beat.last):
            m.d.sync += s1_cancelled.eq(cancelled | self.cancel)

        # Stage 2: each sum folded, the odd ones swapped back; the checks.
        s2_valid = Signal()
        s2_sum = [Signal(17, name="s2_l4"), Signal(17, name="s2_ip")]
        s2_l4_ok = Signal()
        s2_ip_ok = Signal()
        s2_request = Signal(TxChecksumRequest)
        l4_pos = Signal(POS_BITS + 1)
        m.d.comb += l4_pos.eq(s1["request"].start + s1["request"].offset)
        vihl = s1["version_ihl"]
        m.d.sync += [
            s2_valid.eq(s1_valid & ~s1_cancelled),
            s2_request.eq(s1["request"]),
            s2_l4_ok.eq((l4_pos >= MIN_INSERT_POS) & (l4_pos + 2 <= s1["length"])),
            s2_ip_ok.eq((vihl[4:] == 4) & (vihl[:4] >= 5) & (s1["ip_end"] <= s1["length"])),
        ]
        m.d.sync += [
            s2_sum[k].eq(_fold(s1["acc"][k][0]) + _swap(_fold(s1["acc"][k][1]))) for k in (0, 1)
        ]

        # Stage 3: the final fold, the complement, RFC 768's zero rule.
        l4_csum = ~(s2_sum[0][:16] + s2_sum[0][16])[:16]
        ip_csum = ~(s2_sum[1][:16] + s2_sum[1][16])[:16]
        do_l4 = s2_request.l4 & s2_l4_ok
        do_ip = s2_request.ip & s2_ip_ok
        m.d.sync += [
            self.result.valid.eq(s2_valid),
            self.result.p.l4.eq(do_l4),
            self.result.p.l4_pos.eq(s2_request.start + s2_request.offset),
            self.result.p.l4_csum.eq(Mux(l4_csum == 0, 0xFFFF, l4_csum)),
            self.result.p.ip.eq(do_ip),
            self.result.p.ip_csum.eq(ip_csum),
            self.failed.eq(s2_valid & ((s2_request.l4 & ~s2_l4_ok) | (s2_request.ip & ~s2_ip_ok))),
        ]
        return m
