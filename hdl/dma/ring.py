"""The descriptor ring as a DMA channel walks it: the doorbell, the wrap, how many
descriptors one read may fetch, and the walker that reads them, defined once for both DMA
channels.

A ring is ``ring_size`` 16-byte descriptors from RING_BASE. The driver posts work by
writing TAIL (the doorbell): the index one past the last descriptor it handed over. The
channel reads descriptors from its position towards the tail, in reads of at most PREFETCH
descriptors that never wrap (a read past the ring's last descriptor would leave the ring).
:class:`DescriptorWalker` does that reading for a channel and hands it the owned
descriptors, in ring order, as a stream; the channel hands each back to it, as the driver
is to read it, and the walker turns it into the write at its ring entry.
"""

from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..regmap import REGISTER_MAP, RING_INDEX_BITS, RING_SIZE_BITS
from .descriptor import DESCRIPTOR_BYTES, Descriptor, DescriptorWriteback, pack_descriptor
from .packed import packed_layout

__all__ = [
    "DescriptorWalker",
    "RingDoorbell",
    "clamp_prefetch",
    "entry_address",
    "fetch_count",
    "ring_distance",
    "smallest",
    "wrap_increment",
]


#: PREFETCH's width (the register map's).
PREFETCH_BITS = REGISTER_MAP.field("TX_PREFETCH", "prefetch").width


def entry_address(ring_base: Value, index: Value, addr_width: int) -> Value:
    """Byte address of ring entry ``index``, ``addr_width`` bits. RING_BASE is 16-byte
    aligned (the register map rejects other values), so its low 4 bits are not read: every
    descriptor access is then aligned in the logic too, and the movers' byte-lane logic for
    it folds away."""
    return Cat(C(0, 4), ring_base[4:] + index)[:addr_width]


def wrap_increment(index: Value, ring_size: Value) -> Value:
    """The ring index after ``index``: 0 after the last one."""
    return Mux(index + 1 >= ring_size, 0, index + 1)


def ring_distance(start: Value, end: Value, ring_size: Value) -> Value:
    """Descriptors from ``start`` up to (not including) ``end``, going forward round the
    ring: 0 when they are equal."""
    return Mux(end >= start, end - start, end + ring_size - start)


def smallest(*values: Value) -> Value:
    """The smallest of ``values`` (unsigned)."""
    result = values[0]
    for value in values[1:]:
        result = Mux(value < result, value, result)
    return result


def clamp_prefetch(prefetch: Value, max_prefetch: int) -> Value:
    """PREFETCH as the channel honours it: 0 counts as 1, more than ``max_prefetch`` (the
    descriptors the channel can hold) as ``max_prefetch``."""
    return Mux(prefetch == 0, 1, Mux(prefetch > max_prefetch, max_prefetch, prefetch))


def fetch_count(
    *,
    position: Value,
    tail: Value,
    ring_size: Value,
    prefetch: Value,
    max_prefetch: int,
    limits: tuple = (),
) -> Value:
    """Descriptors one read may fetch from ``position`` (inside the ring): PREFETCH
    (:func:`clamp_prefetch`), no further than the ring's end, no further than ``tail``
    unless ``tail`` is ``position`` itself (then the read goes on to the ring's end: a
    poll re-reads descriptors the driver may have handed over without a doorbell), and no
    more than any of ``limits`` (the channel's own: room to hold them, ...). A tail outside
    the ring (RING_SIZE made smaller after the doorbell) is past the ring's end, so it
    limits nothing."""
    to_end = ring_size - position
    to_tail = ring_distance(position, tail, ring_size)
    tail_limit = Mux(to_tail != 0, to_tail, to_end)
    return smallest(clamp_prefetch(prefetch, max_prefetch), to_end, tail_limit, *limits)


class RingDoorbell(wiring.Component):
    """TAIL's write strobe, checked against the ring: a tail inside the ring is latched
    (``latched``) and rings (``rung``, in the cycle of the write); a tail at or beyond
    ``ring_size`` is ignored (the previous tail stays) and sets the sticky ``bad_tail``.
    The channel resets it with its own reset (a ``ResetInserter``): the latched tail and
    ``bad_tail`` return to 0.

    Members:
        ring_size:    ``In``: RING_SIZE.
        tail:         ``In``: TAIL.
        tail_written: ``In(1)``: the doorbell, TAIL's write strobe.
        latched:      ``Out``: the last good tail (a register).
        now:          ``Out``: the tail as of this cycle: a good doorbell's at once, else
                      ``latched``.
        rung:         ``Out(1)``: a good doorbell, this cycle.
        bad_tail:     ``Out(1)``: sticky, a doorbell had a tail outside the ring.
    """

    def __init__(self):
        super().__init__(
            {
                "ring_size": In(RING_SIZE_BITS),
                "tail": In(RING_INDEX_BITS),
                "tail_written": In(1),
                "latched": Out(RING_INDEX_BITS),
                "now": Out(RING_INDEX_BITS),
                "rung": Out(1),
                "bad_tail": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        inside = self.tail < self.ring_size
        m.d.comb += [
            self.rung.eq(self.tail_written & inside),
            self.now.eq(Mux(self.rung, self.tail, self.latched)),
        ]
        with m.If(self.rung):
            m.d.sync += self.latched.eq(self.tail)
        with m.If(self.tail_written & ~inside):
            m.d.sync += self.bad_tail.eq(1)
        return m


def walked_layout() -> data.StructLayout:
    """What the walker hands out: a descriptor (the fields the channel keeps; the others
    read 0) and its ring index."""
    return data.StructLayout({"index": RING_INDEX_BITS, "desc": Descriptor})


def writeback_layout() -> data.StructLayout:
    """A write-back the channel hands the walker: the ring index, the descriptor as the
    driver is to read it back, and whether word 0 (the frame's time) is written too."""
    return data.StructLayout({"index": RING_INDEX_BITS, "desc": Descriptor, "stamped": 1})


class DescriptorWalker(wiring.Component):
    """Reads a channel's descriptor ring and hands out the owned descriptors in ring order.

    The walker reads at its position (0 after reset) when the channel lets it (``enable``)
    and there is a reason to: descriptors posted up to the tail and no stall, or a ``kick``
    or a ``recheck`` pending. One read takes :func:`fetch_count` descriptors, limited by
    the free room of its store and by ``limit``. The owned descriptors of a read enter the
    store and move the position on; the first one without ``own`` ends the read's use (the
    rest is read and ignored) and stalls the walker until a ``wake`` or ``kick`` (or the
    next read a recheck forces). A read that fails (``beats`` ends with ``error``) reports
    ``error``; the descriptors of it already stored stay.

    Write-backs go the other way: the channel hands a used descriptor back on
    ``writeback`` ({index, desc, stamped}, its payload held until taken) and the walker
    turns it into the write at its ring entry (:class:`DescriptorWriteback`: words 1..3, or
    all four when stamped): a command on ``write`` and its data beats on ``write_data``,
    the command first (for a writer, which takes the command before the data) or, with
    ``data_first``, its beats first (for a queue whose command must not reach the writer
    before its data is staged). ``writeback`` is taken with the last of the two.

    The read's size is registered (the ring arithmetic is too long to feed the read command
    in the same cycle), so a read starts only after the walker has been idle for a cycle;
    it is computed on the store's level after this cycle's take, and what may change
    meanwhile (a later tail, more room) only allows more: ``read``'s length may grow while
    the command waits for ``ready`` (the channels' readers take it when idle, at once).

    Parameters
    ----------
    max_prefetch : 1..16
        Descriptors the store holds; PREFETCH is clamped to it.
    data_width : 32 or 64
        The reader's data width.
    addr_width : int
        The reader's address width.
    fields : tuple of str
        The :class:`Descriptor` fields the channel uses: only they are stored; the others
        read 0 on ``o``.
    data_first : bool
        A write-back's data beats go out before its command (default: after).

    Members
    -------
    ring_base, ring_size, prefetch : In
        RING_BASE (16-byte aligned), RING_SIZE (0: nothing is read), PREFETCH.
    tail : In(RING_INDEX_BITS)
        The good tail (:class:`RingDoorbell` ``latched``, or ``now``: a read for a new
        tail then starts in the cycle after its doorbell).
    enable : In(1)
        A read may start.
    limit : In(RING_SIZE_BITS)
        The channel's own limit on one read.
    wake : In(1)
        Strobe: the stall is over (TX's doorbell: reads go on up to the new tail).
    kick : In(1)
        Strobe: a doorbell (RX) or a poll; the next read goes ahead even without descriptors up
        to the tail (it reads from the position up to the ring's end, ``own`` is the only
        authority), and the stall is over. Kept until a read starts or, enabled, nothing
        may be read.
    recheck : In(1)
        Strobe: the channel needs a descriptor; the next read goes ahead as for ``kick``,
        and ``nothing_found`` tells when it found none.
    read : Out(stream {addr, length})
        The read command, to the reader's ``cmd``.
    beats : In(stream {data, count, last, error})
        The reader's output while the walker's read is the one in flight.
    o : Out(stream {index, desc})
        The owned descriptors in ring order, each with its ring index.
    stored : Out(1)
        An owned descriptor entered the store this cycle (it shows on ``o`` the next).
    fetched : Out(1)
        A descriptor was read (owned or not).
    error : Out(1)
        Strobe: a read failed (DESC_FETCH_BUS_ERROR).
    nothing_found : Out(1)
        Strobe: the ``recheck`` is answered by a read that stored no owned descriptor, or
        at once when nothing may be read (no room in the store, ``limit`` 0).
    idle : Out(1)
        No read started and not finished.
    writeback : In(stream {index, desc, stamped})
        A descriptor to write back to ring entry ``index``, as the driver is to read it.
    write : Out(stream {addr, length})
        The write-back's command, to the writer (or the channel's command queue).
    write_data : Out(stream {data, count, last})
        The write-back's data beats.
    """

    def __init__(
        self,
        *,
        max_prefetch: int,
        data_width: int,
        addr_width: int,
        fields: tuple,
        data_first: bool = False,
    ):
        if not isinstance(max_prefetch, int) or not 1 <= max_prefetch <= 16:
            raise ValueError(f"max_prefetch must be an integer in 1..16, not {max_prefetch!r}")
        if data_width not in (32, 64):
            raise ValueError(f"data_width must be 32 or 64, not {data_width!r}")
        layout = data.Layout.cast(Descriptor)
        unknown = set(fields) - {name for name, _ in layout}
        if unknown:
            raise ValueError(f"Descriptor has no field {sorted(unknown)[0]!r}")
        self._max_prefetch = max_prefetch
        self._data_width = data_width
        self._addr_width = addr_width
        self._kept = [(name, layout[name]) for name, _ in layout if name in fields]
        self._data_first = bool(data_first)
        command = stream.Signature(data.StructLayout({"addr": addr_width, "length": 16}))
        super().__init__(
            {
                "ring_base": In(REGISTER_MAP.field("TX_RING_BASE", "ring_base").width),
                "ring_size": In(RING_SIZE_BITS),
                "prefetch": In(PREFETCH_BITS),
                "tail": In(RING_INDEX_BITS),
                "enable": In(1),
                "limit": In(RING_SIZE_BITS),
                "wake": In(1),
                "kick": In(1),
                "recheck": In(1),
                "read": Out(command),
                "beats": In(stream.Signature(packed_layout(data_width, "error"))),
                "o": Out(stream.Signature(walked_layout())),
                "stored": Out(1),
                "fetched": Out(1),
                "error": Out(1),
                "nothing_found": Out(1),
                "idle": Out(1),
                "writeback": In(stream.Signature(writeback_layout())),
                "write": Out(command),
                "write_data": Out(stream.Signature(packed_layout(data_width))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        dw = self._data_width
        beat_bytes = dw // 8
        desc_beats = DESCRIPTOR_BYTES // beat_bytes
        ring_size = self.ring_size

        # ---- the store: the kept fields of the owned descriptors read ------------------------
        kept_width = sum(field.width for _, field in self._kept)
        m.submodules.store = store = fifo.SyncFIFO(width=kept_width, depth=self._max_prefetch)
        head_index = Signal(RING_INDEX_BITS)  # ring index of the descriptor on `o`
        taking = self.o.valid & self.o.ready
        with m.If(taking):
            m.d.sync += head_index.eq(wrap_increment(head_index, ring_size))
        kept_values = {}
        offset = 0
        for name, field in self._kept:
            kept_values[name] = store.r_data[offset : offset + field.width]
            offset += field.width
        m.d.comb += [
            self.o.valid.eq(store.r_rdy),
            self.o.p.index.eq(head_index),
            self.o.p.desc.eq(pack_descriptor(**kept_values)),
            store.r_en.eq(self.o.ready),
        ]

        # ---- what the next read may fetch ----------------------------------------------------
        position = Signal(RING_INDEX_BITS)  # the next descriptor to read
        kick = Signal()  # a kick waits to be served
        recheck_req = Signal()  # the channel's recheck waits to be served
        serving = Signal()  # the read in flight serves a recheck
        found = Signal()  # the read in flight stored a descriptor
        stalled = Signal()  # the last read met a descriptor without own
        level_after = store.level - taking
        free_slots = self._max_prefetch - level_after
        n_fetch = Signal(RING_SIZE_BITS)
        auto = Signal()  # posted descriptors wait to be read
        settled = Signal()  # idle for a cycle: n_fetch and auto are up to date
        m.d.sync += [
            n_fetch.eq(
                fetch_count(
                    position=position,
                    tail=self.tail,
                    ring_size=ring_size,
                    prefetch=self.prefetch,
                    max_prefetch=self._max_prefetch,
                    limits=(free_slots, self.limit),
                )
            ),
            auto.eq(
                (~stalled | self.wake)
                & (self.tail < ring_size)
                & (ring_distance(position, self.tail, ring_size) != 0)
            ),
            settled.eq(self.idle),
        ]
        force = kick | recheck_req
        may_read = self.enable & (ring_size != 0) & (position < ring_size)

        # ---- reading ---------------------------------------------------------------------------
        beat_in_desc = Signal(range(desc_beats))
        earlier_beats = Signal(8 * DESCRIPTOR_BYTES - dw)  # the descriptor's beats so far
        ignore_rest = Signal()  # a descriptor of this read had no own
        read_over = Signal()  # the read in flight ended (its last beat, or an error)
        with m.FSM(name="walker"):
            with m.State("Idle"):
                m.d.comb += self.idle.eq(1)
                with m.If(settled & may_read & (force | auto) & (n_fetch != 0)):
                    m.d.comb += [
                        self.read.valid.eq(1),
                        self.read.p.addr.eq(
                            entry_address(self.ring_base, position, self._addr_width)
                        ),
                        self.read.p.length.eq(n_fetch * DESCRIPTOR_BYTES),
                    ]
                    with m.If(self.read.ready):
                        m.d.sync += [
                            kick.eq(0),
                            recheck_req.eq(0),
                            serving.eq(recheck_req),
                            found.eq(0),
                            stalled.eq(0),
                            beat_in_desc.eq(0),
                            ignore_rest.eq(0),
                        ]
                        m.next = "Read"
                with m.Elif(settled & force):
                    # Nothing may be read now: a recheck is answered "nothing found".
                    m.d.sync += recheck_req.eq(0)
                    m.d.comb += self.nothing_found.eq(recheck_req)
                    with m.If(may_read):
                        m.d.sync += kick.eq(0)
            with m.State("Read"):
                beat = self.beats
                whole = Descriptor(Cat(earlier_beats, beat.p.data[:dw]))
                m.d.comb += beat.ready.eq(1)
                with m.If(beat.valid):
                    with m.If(beat.p.error):
                        m.d.comb += [self.error.eq(1), read_over.eq(1)]
                        m.next = "Idle"
                    with m.Else():
                        m.d.sync += [
                            earlier_beats.eq(whole.as_value()[dw:]),
                            beat_in_desc.eq(
                                Mux(beat_in_desc == desc_beats - 1, 0, beat_in_desc + 1)
                            ),
                        ]
                        with m.If(beat_in_desc == desc_beats - 1):
                            m.d.comb += self.fetched.eq(1)
                            with m.If(~ignore_rest & whole.own):
                                m.d.comb += [
                                    store.w_en.eq(1),
                                    store.w_data.eq(
                                        Cat(
                                            whole.as_value()[f.offset : f.offset + f.width]
                                            for _, f in self._kept
                                        )
                                    ),
                                    self.stored.eq(1),
                                ]
                                m.d.sync += found.eq(1)
                                m.d.sync += position.eq(wrap_increment(position, ring_size))
                            with m.Elif(~ignore_rest):
                                m.d.sync += [ignore_rest.eq(1), stalled.eq(1)]
                        with m.If(beat.p.last):
                            m.d.comb += read_over.eq(1)
                            m.next = "Idle"
        # A recheck answered by the read that served it, unless a newer one is pending (that
        # one waits for the next read).
        with m.If(read_over & serving & ~recheck_req & ~found & ~self.stored):
            m.d.comb += self.nothing_found.eq(1)

        # After the FSM, so that a wake, kick or recheck in the cycle a read starts is not
        # lost.
        with m.If(self.wake):
            m.d.sync += stalled.eq(0)
        with m.If(self.kick):
            m.d.sync += [kick.eq(1), stalled.eq(0)]
        with m.If(self.recheck):
            m.d.sync += recheck_req.eq(1)

        # ---- write-backs: a used descriptor back to its ring entry ---------------------------
        request = self.writeback
        encoded = DescriptorWriteback(request.p.desc, request.p.stamped, dw)
        command_given = Signal()
        beats_given = Signal(range(encoded.max_beats + 1))
        all_given = beats_given == encoded.beats
        last_beat = beats_given == encoded.beats - 1
        m.d.comb += [
            self.write.p.addr.eq(
                encoded.address(entry_address(self.ring_base, request.p.index, self._addr_width))
            ),
            self.write.p.length.eq(encoded.length),
            self.write_data.p.data.eq(encoded.beat(beats_given)),
            self.write_data.p.count.eq(Mux(last_beat, encoded.last_count, beat_bytes)),
            self.write_data.p.last.eq(last_beat),
        ]
        if self._data_first:
            m.d.comb += [
                self.write_data.valid.eq(request.valid & ~all_given),
                self.write.valid.eq(request.valid & all_given),
                request.ready.eq(all_given & self.write.ready),
            ]
        else:
            m.d.comb += [
                self.write.valid.eq(request.valid & ~command_given),
                self.write_data.valid.eq(request.valid & command_given & ~all_given),
                request.ready.eq(command_given & last_beat & self.write_data.ready),
            ]
        with m.If(self.write.valid & self.write.ready):
            m.d.sync += command_given.eq(1)
        with m.If(self.write_data.valid & self.write_data.ready):
            m.d.sync += beats_given.eq(beats_given + 1)
        with m.If(request.valid & request.ready):
            m.d.sync += [command_given.eq(0), beats_given.eq(0)]
        return m
