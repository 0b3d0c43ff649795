"""The DMA descriptor: one 16-byte entry of a TX or RX ring in host memory.

:class:`Descriptor` is the single hardware definition of the layout. Host memory holds it
as four little-endian 32-bit words; bit ``32 * w + b`` of the struct is bit ``b`` of word
``w``, so a ``Descriptor`` view over the 128 bits read from memory (word 0 in the low bits)
decodes it directly. The driver model mirrors it in ``firmware/descriptor.py`` (plain
Python, no Amaranth); ``tests/hdl/dma/test_descriptor.py`` checks that the two agree field by field.
``docs/descriptors.md`` describes the hand-off protocol.

Fields named ``reserved_*`` are padding: the driver writes 0, the DMA writes 0 on
write-back and ignores them on fetch.
"""

from amaranth import C, Cat, Mux, Value
from amaranth.lib import data

from ..mac.frame import RxError
from .packed import pack_struct

__all__ = [
    "DESCRIPTOR_BYTES",
    "DESCRIPTOR_WORDS",
    "MAX_BUFFER_BYTES",
    "MIN_RX_BUFFER_BYTES",
    "WRITEBACK_FIRST_WORD",
    "Descriptor",
    "DescriptorWriteback",
    "pack_descriptor",
]

DESCRIPTOR_WORDS = 4
DESCRIPTOR_BYTES = 4 * DESCRIPTOR_WORDS
#: ``length`` and ``done_length`` are 16 bits wide.
MAX_BUFFER_BYTES = 0xFFFF
#: Smaller RX buffers halt the RX channel (DmaErrorCode.RX_BUFFER_TOO_SMALL): a minimum
#: frame must never need more than one buffer just because the driver posted tiny ones.
MIN_RX_BUFFER_BYTES = 64
#: The DMA writes back words 1..3 (12 bytes at descriptor offset 4, one burst, so the word
#: holding ``own`` lands last); word 0 keeps the posted address, except on the EOP
#: write-back of a timestamped frame, which is all 16 bytes (word 0 = the timestamp).
WRITEBACK_FIRST_WORD = 1


class Descriptor(data.Struct):
    """One ring entry, word 0 in bits 31:0 through word 3 in bits 127:96.

    Word 0 (driver writes; the DMA reads it, and overwrites it only with a timestamp):
        addr:         buffer byte address, any alignment (TX fragment or RX buffer). On
                      the EOP write-back of a timestamped frame (``timestamped`` = 1) it
                      holds the low 32 bits of the frame's PTP timestamp in ns instead.
    Word 1 (DMA writes back):
        done_length:  TX: fragment bytes read; RX: bytes written into this buffer.
        rx_csum:      RX, EOP descriptor of a good frame, with RX checksum built in: the
                      16-bit ones'-complement sum of the frame from byte 14 on
                      (CHECKSUM_COMPLETE, :mod:`macdma.hdl.dma.rx_checksum`); 0 otherwise.
    Word 2 (DMA writes back; 0 except on the EOP descriptor of an RX frame, and
    ``timestamped`` on a timestamped TX EOP descriptor):
        frame_length: RX: the whole frame's length in bytes, without FCS.
        rx_error:     RX: the MAC's cause for a bad frame (:class:`~macdma.hdl.mac.frame.RxError`).
        rx_truncated: RX: the frame lost its tail (RX FIFO overflow, or no descriptor mid-frame).
        error:        the frame is bad (``rx_error`` != NONE or ``rx_truncated``).
        csum_start:   TX, SOP descriptor, read on fetch (written back 0): the frame byte
                      where the L4 checksum's sum starts (Linux CHECKSUM_PARTIAL
                      ``csum_start``, counted from the Ethernet header).
        timestamped:  EOP descriptor (RX or TX): word 0 holds the low 32 bits of the
                      frame's SFD time in ns (:mod:`macdma.hdl.mac.ptp`); the write-back
                      was then 16 bytes at offset 0.
    Word 3 (driver writes, OWN last; DMA reads, then writes it back with ``own`` = 0):
        length:       TX: fragment bytes (>= 1); RX: buffer size (>= 64).
        csum_offset:  TX, SOP descriptor (written back 0): where the checksum goes, in
                      bytes after ``csum_start`` (Linux ``csum_offset``).
        ioc:          interrupt on completion (IRQ_MODE = PER_DESC).
        csum_insert:  TX, SOP descriptor (written back 0): insert the L4 checksum
                      (:mod:`macdma.hdl.dma.tx_checksum`; builds with TX checksum).
        ip_csum_insert: TX, SOP descriptor (written back 0): insert the IPv4 header
                      checksum (header at byte 14, its length from IHL).
        ts_request:   TX, SOP descriptor (written back 0): time-stamp this frame
                      (SKBTX_HW_TSTAMP); its EOP write-back waits for the SFD time.
        sop, eop:     start / end of packet. TX: set by the driver on the first / last
                      fragment of a frame. RX: written by the DMA on the first / last buffer
                      of a frame (the driver posts them as 0; they are ignored on fetch).
        own:          1: the DMA owns the descriptor. The driver sets it when handing over;
                      the DMA clears it on write-back and never uses a descriptor without it.

    Bits 23:16 of word 2 (``rx_error``, ``rx_truncated`` and the low 4 bits of TX's
    ``csum_start``) are the RX *status byte*; TX defines no status and writes word 2 as 0
    (but ``timestamped``).

    Why the control word (with ``own``) is last: the DMA writes words 1..3 back in one
    INCR burst, whose beats reach memory in address order. With ``own`` in the last word a
    driver polling ``own`` can never see it cleared while the lengths and status are still
    stale (the rule of e1000/igb, whose "descriptor done" bit is in the last dword).
    """

    # Word 0
    addr: 32
    # Word 1
    done_length: 16
    rx_csum: 16
    # Word 2
    frame_length: 16
    rx_error: RxError
    rx_truncated: 1
    csum_start: 10
    timestamped: 1
    error: 1
    # Word 3
    length: 16
    csum_offset: 8
    ioc: 1
    csum_insert: 1
    ip_csum_insert: 1
    ts_request: 1
    sop: 1
    eop: 1
    reserved_w3_30: 1
    own: 1


# Checked at import so that an edit of the struct cannot silently change the ring stride.
if Descriptor.as_shape().size != 8 * DESCRIPTOR_BYTES:
    raise RuntimeError(
        f"Descriptor is {Descriptor.as_shape().size} bits, not {8 * DESCRIPTOR_BYTES}"
    )


def pack_descriptor(**fields) -> Descriptor:
    """A :class:`Descriptor` view of ``fields`` (name -> value; every other field 0), built
    as one concatenation (:func:`~.packed.pack_struct`) rather than a signal assigned field
    by field."""
    return Descriptor(pack_struct(Descriptor, **fields))


class DescriptorWriteback:
    """A descriptor written back to its ring entry, the way the ring walker writes it: words
    1..3 (12 bytes at offset 4, one burst, so the word with ``own`` lands last), or all four
    words (16 bytes at offset 0) when ``stamped`` (word 0 then holds the frame's time).

    Parameters
    ----------
    written : Descriptor
        The descriptor as the driver reads it back (:func:`pack_descriptor`).
    stamped : Value
        Word 0 is written too.
    data_width : 32 or 64
        The AXI writer's data width.

    Attributes
    ----------
    length, beats, last_count : Value
        The write's bytes, its data beats and the bytes of its last beat.
    max_beats : int
        Data beats of the longest write-back (all four words).
    """

    def __init__(self, written: Descriptor, stamped: Value, data_width: int):
        beat_bytes = data_width // 8
        short_bytes = DESCRIPTOR_BYTES - 4 * WRITEBACK_FIRST_WORD
        short_beats = -(-short_bytes // beat_bytes)
        words = written.as_value()
        short = Cat(words[32 * WRITEBACK_FIRST_WORD :], C(0, 32 * WRITEBACK_FIRST_WORD))
        self._data = Mux(stamped, words, short)
        self._stamped = stamped
        self._data_width = data_width
        self.max_beats = DESCRIPTOR_BYTES // beat_bytes
        self.length = Mux(stamped, DESCRIPTOR_BYTES, short_bytes)
        self.beats = Mux(stamped, self.max_beats, short_beats)
        self.last_count = Mux(stamped, beat_bytes, short_bytes - (short_beats - 1) * beat_bytes)

    def address(self, entry: Value) -> Value:
        """The write's address, for the ring entry at byte address ``entry`` (16-byte
        aligned: the offset fills its low bits, no adder)."""
        offset = Mux(self._stamped, C(0, 4), C(4 * WRITEBACK_FIRST_WORD, 4))
        return Cat(offset, entry[4:])

    def beat(self, index: Value) -> Value:
        """The data of beat ``index`` (0 .. ``beats`` - 1)."""
        return self._data.word_select(index, self._data_width)
