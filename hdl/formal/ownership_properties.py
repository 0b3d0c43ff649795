"""Ownership and memory safety of a DMA channel: writes only where a fetched, owned
descriptor allows, reads only inside the ring.

The descriptor protocol (docs/descriptors.md): the driver hands a descriptor over by
setting OWN; from then until the DMA writes it back (OWN cleared, in the last beat of the
write-back burst) the DMA may write the descriptor's buffer and its write-back words, and
nothing else. The checker learns every descriptor the channel fetches by watching the
R beats of its descriptor reads (memory contents are unconstrained: any data may arrive),
and checks every strobed byte of every W beat against what it learnt.
"""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.utils import exact_log2

from ..dma.descriptor import DESCRIPTOR_BYTES, WRITEBACK_FIRST_WORD

__all__ = ["RingOwnershipProperties"]


class RingOwnershipProperties(Elaboratable):
    """Memory safety of a DMA channel with a descriptor ring of at most ``max_ring`` entries.

    Parameters:
        read_props, write_props: the channel's :class:`~.axi4_properties.Axi4ReadProperties`
                   (descriptor fetches) and :class:`~.axi4_properties.Axi4WriteProperties`
                   (buffer writes and write-backs); their beat addresses are used here.
        read_bus, write_bus: the channel's AXI4 read and write interfaces.
        ring_base, ring_size: the ring registers (held constant by the harness).
        min_length: a descriptor whose length is below this is not usable (RX: 64 bytes).
        max_ring:  entries the checker tracks (the harness keeps ``ring_size`` at most this).
        fragment_reads: for a channel whose reader also reads buffers (TX): high while the
                   reader serves a buffer read, not a descriptor fetch. ``None``: every
                   read is a descriptor fetch (RX).
        buffer_writes: the channel writes buffers (RX); if not (TX), only write-backs.
        writeback_writes: for a channel that writes buffers: high while its writer serves a
                   write-back, not buffer data. Only a write-back's last word ends an
                   entry's ownership: a buffer may overlap the ring (memory is any data),
                   and the channel's data write there does not hand anything back.
                   ``None``: every write is a write-back (TX).
        timestamp_word0: the channel may also write word 0 of an entry it owns (the PTP
                   timestamp of a timestamped EOP write-back, 16 bytes at offset 0).
        released:  high in the cycle a channel reset is over (STATUS.resetting read 0 again
                   after 1): from that cycle on the driver owns every entry again and may
                   re-post it (docs/descriptors.md, "When the reset is over"), so the checker
                   forgets every entry it had learnt, for that cycle's W beats already.
                   ``None``: the channel is never reset.

    Asserted: every descriptor fetch (AR) lies inside the ring ``[ring_base, ring_base +
    16 * ring_size)``, every buffer read (AR) inside the beats of an owned entry's buffer;
    every byte a W beat strobes is inside the buffer ``[addr, addr + length)`` (if the
    channel writes buffers) or inside the write-back words (descriptor bytes 4..15, or
    0..15 with ``timestamp_word0``) of a
    ring entry last fetched with OWN set and ``length >= min_length``, not yet written back.
    """

    def __init__(
        self,
        *,
        read_props,
        write_props,
        read_bus,
        write_bus,
        ring_base,
        ring_size,
        min_length: int,
        max_ring: int,
        fragment_reads=None,
        buffer_writes: bool = True,
        writeback_writes=None,
        timestamp_word0: bool = False,
        released=None,
    ):
        self._first_writeback_byte = 0 if timestamp_word0 else 4 * WRITEBACK_FIRST_WORD
        self._read_props = read_props
        self._write_props = write_props
        self._read_bus = read_bus
        self._write_bus = write_bus
        self._ring_base = ring_base
        self._ring_size = ring_size
        self._min_length = min_length
        self._max_ring = max_ring
        self._fragment_reads = fragment_reads
        self._buffer_writes = buffer_writes
        if buffer_writes and writeback_writes is None:
            raise ValueError("a channel that writes buffers needs writeback_writes")
        self._writeback_writes = writeback_writes
        self._released = C(0, 1) if released is None else released
        #: Per ring entry: the DMA owns it (for covers and linking invariants).
        self.owned = Signal(max_ring)
        #: A W beat writes the last word (OWN) of a ring entry: its write-back ends.
        self.handed_back = Signal()
        entries = range(max_ring)
        #: What the checker learnt of each ring entry (for linking invariants): owned (OWN
        #: and a usable length, not yet written back; ``owned`` is this but 0 in the cycle a
        #: reset is over), the buffer address and length of its last fetch.
        self.learnt = Signal(max_ring, name="learnt")
        self.buf_addr = [Signal(32, name=f"buf_addr{i}") for i in entries]
        self.buf_length = [Signal(16, name=f"buf_length{i}") for i in entries]

    def elaborate(self, platform):
        m = Module()
        rd = self._read_bus
        wr = self._write_bus
        addr_width = len(rd.araddr)
        beat_bytes = len(rd.rdata) // 8
        base = self._ring_base
        ring_end = base + self._ring_size * DESCRIPTOR_BYTES

        # ---- learn each fetched descriptor -------------------------------------------------
        entries = range(self._max_ring)
        buf_addr = Array(self.buf_addr)
        buf_length = Array(self.buf_length)
        r_addr = self._read_props.r_addr
        r_offset = (r_addr - base)[:addr_width]
        r_entry = r_offset[4:]
        r_word = r_offset[2:4]
        good_beat = self._read_props.r_accepted & (rd.rresp == 0)
        fragment = C(0, 1) if self._fragment_reads is None else self._fragment_reads
        good_beat = good_beat & ~fragment
        # 32-bit beats: word 0 (buffer address) and word 3 (length, OWN) arrive separately.
        assert beat_bytes == 4, "the ownership checker reads descriptors as 32-bit beats"
        # What the checker learnt, and what it allows this cycle: nothing learnt before the
        # cycle a reset is over.
        learnt = self.learnt
        owned = self.owned
        m.d.comb += owned.eq(Mux(self._released, 0, learnt))
        with m.If(self._released):
            m.d.sync += learnt.eq(0)
        with m.If(good_beat & (r_entry < self._max_ring)):
            with m.If(r_word == 0):
                m.d.sync += buf_addr[r_entry].eq(rd.rdata)
            with m.If(r_word == 3):
                length = rd.rdata[0:16]
                own = rd.rdata[31]
                m.d.sync += buf_length[r_entry].eq(length)
                for i in entries:
                    with m.If(r_entry == i):
                        m.d.sync += learnt[i].eq(own & (length >= self._min_length))

        # ---- reads only inside the ring, or inside an owned buffer's beats ----------------
        ar_bytes = (rd.arlen + 1) * beat_bytes
        ar_end = rd.araddr + ar_bytes
        in_ring = (rd.araddr >= base) & (ar_end <= ring_end)
        in_owned_buffer = C(0, 1)
        for i in entries:
            # The beats holding the buffer: its first byte's beat up to its last byte's.
            first_beat = buf_addr[i][:addr_width] & ~(beat_bytes - 1)
            offset = (rd.araddr - first_beat)[:addr_width]
            span = buf_addr[i][: exact_log2(beat_bytes)] + buf_length[i]
            in_owned_buffer = in_owned_buffer | (
                owned[i] & (offset + ar_bytes <= span + beat_bytes - 1)
            )
        with m.If(rd.arvalid):
            m.d.comb += Assert(Mux(fragment, in_owned_buffer, in_ring))

        # ---- every strobed byte is allowed -------------------------------------------------
        w_addr = self._write_props.w_addr
        for lane in range(beat_bytes):
            byte = (w_addr + lane)[:addr_width]
            allowed = C(0, 1)
            for i in entries:
                in_buffer = ((byte - buf_addr[i])[:addr_width]) < buf_length[i]
                entry_offset = (byte - (base + i * DESCRIPTOR_BYTES))[:addr_width]
                in_writeback = (entry_offset >= self._first_writeback_byte) & (
                    entry_offset < DESCRIPTOR_BYTES
                )
                if not self._buffer_writes:
                    in_buffer = C(0, 1)
                allowed = allowed | (owned[i] & (in_buffer | in_writeback))
            with m.If(wr.wvalid & wr.wstrb[lane]):
                m.d.comb += Assert(allowed)

        # The write-back's last word (OWN cleared) hands the entry back to the driver.
        w_offset = (w_addr - base)[:addr_width]
        writeback = C(1, 1) if self._writeback_writes is None else self._writeback_writes
        m.d.comb += self.handed_back.eq(
            self._write_props.w_accepted
            & writeback
            & wr.wstrb[3]
            & (w_offset < self._ring_size * DESCRIPTOR_BYTES)
            & (w_offset[2:4] == 3)
        )
        with m.If(self.handed_back):
            for i in entries:
                with m.If(w_offset[4:] == i):
                    m.d.sync += learnt[i].eq(0)
        return m
