"""Channel ownership by k-induction: the linking invariants that tie the ownership checker's
table (:class:`~.ownership_properties.RingOwnershipProperties`) to the channel's own state,
so that the ownership properties of :mod:`.channel_proofs` hold in every reachable state,
past every write-back and across channel resets at any time.

The channel is elaborated with register FIFOs (:mod:`.register_fifo`) so that the invariants
can name the walker's stored descriptors and the writer's burst lengths. The invariants are
assertions: k-induction proves them together with the ownership properties.

TX: proven by k-induction at k = 1 (about 8 minutes of CPU; docs/formal.md, "Ownership by
induction, TX"), ``tx_ownership_induction`` in ``make formal``; its mutants run the deep
base case of :class:`TxInductionBaseCaseHarness`. RX: :mod:`.rx_induction`, proven goal by
goal (:mod:`.goals`).
"""

from collections.abc import Callable
from functools import partial
from unittest import mock

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import data

from ..dma import channel as dma_channel
from ..dma.axi_reader import AxiBurstReader
from ..dma.axi_writer import AxiBurstWriter
from ..dma.descriptor import Descriptor
from ..dma.tx_channel import WALKED_FIELDS, TxDmaChannel
from .channel_proofs import (
    CHANNEL_ADDR_WIDTH,
    CHANNEL_MAX_OUTSTANDING,
    TxOwnershipHarness,
    _ResetWindDown,
    narrow_to_tx_writeback,
)
from .internal import in_state, internal_signal, mover_fragment, subfragment
from .mover_invariants import props_depth
from .register_fifo import FifoView

__all__ = ["TxOwnershipInductionHarness", "TxInductionBaseCaseHarness"]

#: Bits of the offsets the invariants compute (addresses and byte counts, no wrap).
_WIDE = 20


def _stored_fields(fields) -> dict:
    """``name -> (offset, width)`` of the walker's store entry (the kept
    :class:`~macdma.hdl.dma.descriptor.Descriptor` fields, in layout order)."""
    layout = data.Layout.cast(Descriptor)
    offsets = {}
    offset = 0
    for name, field in layout:
        if name in fields:
            offsets[name] = (offset, field.width)
            offset += field.width
    return offsets


class _Ring:
    """Ring-index arithmetic modulo RING_SIZE, and the checker's table indexed by entry."""

    def __init__(self, base, size, ownership):
        self.base = base
        self.size = size
        self.learnt = ownership.learnt
        self.buf_addr = Array(ownership.buf_addr)
        self.buf_length = Array(ownership.buf_length)

    def add(self, index, k) -> Value:
        """``index + k`` round the ring (``0 <= k < size``)."""
        total = index.as_unsigned() + k
        return Mux(total >= self.size, total - self.size, total)[: len(self.size)]

    def address(self, index) -> Value:
        """Byte address of entry ``index`` (RING_BASE is 16-byte aligned)."""
        return (self.base + (index << 4))[:CHANNEL_ADDR_WIDTH]

    def owned(self, index) -> Value:
        return self.learnt.bit_select(index, 1)


def _offset(address, origin) -> Value:
    """``address - origin`` in the channel's address space (wrapping)."""
    return (address - origin)[:CHANNEL_ADDR_WIDTH]


class _ReaderInvariants:
    """The linking invariants of a channel's reader, shared by the TX and RX induction
    harnesses (the ring walker's descriptor fetches are the same on both)."""

    def _reader_invariants(
        self,
        m,
        reader,
        read_props,
        rd,
        ring,
        reading,
        reading_fragment,
        fetch_room,
        stored,
        position,
        head_index,
        beat_in_desc,
        earlier_beats,
        ignore_rest,
        store_level,
        min_length=1,
        store_depth=2,
    ):
        """The reader's command: a descriptor fetch from the head's entry (walker in Read),
        of at most ``fetch_room`` entries, or the fragment of the head's descriptor (main
        FSM in Data; ``reading_fragment`` ``None``: a reader that only fetches, RX's).
        ``min_length``: the shortest usable descriptor (the checker's); ``store_depth``: the
        descriptors the walker holds (the most one fetch reads)."""

        def sig(name):
            return internal_signal(reader, name)

        state = sig("reader_state")
        next_addr = sig("ar_next_addr")
        beats_left = sig("ar_beats_left")
        out_bytes_left = sig("out_bytes_left")
        start_lane = sig("start_lane")
        have_held = sig("have_held")
        held = sig("held")
        failed = sig("failed")
        (bursts,) = read_props.bursts
        (r_beat,) = read_props.r_beats
        m.d.comb += Assert(Mux(bursts.level == 0, r_beat == 0, r_beat <= bursts.head("len")))
        m.d.comb += Assert(sig("in_flight") <= self.MAX_OUTSTANDING)
        states = ("Idle", "Stream Data", "Flush", "Drain", "Report Error")
        m.d.comb += Assert(Cat(in_state(state, name) for name in states).any())
        with m.If(in_state(state, "Idle") | in_state(state, "Report Error")):
            m.d.comb += Assert((beats_left == 0) | failed)
        streaming = in_state(state, "Stream Data")
        flushing = in_state(state, "Flush")
        draining = in_state(state, "Drain")

        # ---- a descriptor fetch ---------------------------------------------------------------
        start = ring.address(head_index)
        total = Signal(_WIDE, name="fetch_bytes")  # the fetch's length
        m.d.comb += total.eq(_offset(next_addr, start) + (beats_left << 2))
        consumed = Signal(_WIDE, name="fetch_consumed")  # bytes handed to the walker
        m.d.comb += consumed.eq(total - out_bytes_left)
        # Descriptors this fetch stored (the store is empty when a fetch starts).
        stored_here = store_level
        # The next R beat's offset from the fetch's start: what the walker has, plus the
        # beat the reader holds back.
        next_r = Signal(_WIDE, name="fetch_next_r")
        with m.If(draining | in_state(state, "Report Error")):
            m.d.comb += next_r.eq(
                Mux(
                    bursts.level != 0,
                    _offset(bursts.head("addr"), start) + (r_beat << 2),
                    Mux(rd.arvalid, _offset(rd.araddr, start), _offset(next_addr, start)),
                )
            )
        with m.Else():
            m.d.comb += next_r.eq(consumed + (have_held << 2))
        # The fetch's bursts (accepted, on the bus, to come) follow each other from next_r.
        chain = [next_r - (r_beat << 2)]
        for age in range(bursts.depth):
            with m.If(reading & (age < bursts.level)):
                m.d.comb += Assert(_offset(bursts.entry("addr", age), start) == chain[-1])
            chain.append(
                Mux(
                    age < bursts.level,
                    chain[-1] + ((bursts.entry("len", age) + 1) << 2),
                    chain[-1],
                )
            )
        after_queue = chain[-1]
        after_ar = Mux(rd.arvalid, after_queue + ((rd.arlen + 1) << 2), after_queue)
        with m.If(reading):
            m.d.comb += [
                Assert(start_lane == 0),
                Assert(total[:4] == 0),
                Assert(total >= 16),
                Assert(total <= 16 * store_depth),
                Assert((total >> 4) <= fetch_room),
                Assert(after_ar == _offset(next_addr, start)),
                Assert(~in_state(state, "Report Error") | (read_props.outstanding == 0)),
            ]
            with m.If(rd.arvalid):
                m.d.comb += Assert(_offset(rd.araddr, start) == after_queue)
            with m.If(streaming | flushing):
                m.d.comb += [
                    Assert(~failed),
                    Assert(consumed[:2] == 0),
                    Assert(out_bytes_left != 0),
                    Assert(out_bytes_left <= total),
                ]
                with m.If(~ignore_rest):
                    m.d.comb += Assert(consumed == (stored_here << 4) + (beat_in_desc << 2))
                with m.Else():
                    m.d.comb += [
                        Assert(consumed >= (stored_here + 1) << 4),
                        Assert(consumed[2:4] == beat_in_desc),
                    ]
                # The beat the reader holds is what the checker learnt from it.
                held_entry = ring.add(head_index, consumed[4:6])
                usable = (held[:16] != 0) if min_length == 1 else (held[:16] >= min_length)
                with m.If(have_held & (consumed[2:4] == 0)):
                    m.d.comb += Assert(ring.buf_addr[held_entry] == held)
                with m.If(have_held & (consumed[2:4] == 3)):
                    m.d.comb += [
                        Assert(ring.buf_length[held_entry] == held[:16]),
                        Assert(ring.owned(held_entry) == (held[31] & usable)),
                    ]
                # The descriptor the walker is reading: its word 0 as the checker has it.
                for beat in (1, 2, 3):
                    word0 = earlier_beats[32 * (3 - beat) : 32 * (4 - beat)]
                    with m.If(~ignore_rest & (beat_in_desc == beat)):
                        m.d.comb += Assert(ring.buf_addr[position] == word0)
            with m.If(flushing):
                m.d.comb += [Assert(have_held), Assert(bursts.level == 0), Assert(~rd.arvalid)]
            with m.If(draining):
                m.d.comb += [
                    Assert(failed),
                    Assert(next_r >= stored_here << 4),
                ]

        if reading_fragment is not None:
            self._fragment_invariants(m, reader, rd, reading_fragment, stored)

    def _fragment_invariants(self, m, reader, rd, reading_fragment, stored):
        """A fragment read: the reader's command is the head descriptor's buffer."""
        state = internal_signal(reader, "reader_state")
        next_addr = internal_signal(reader, "ar_next_addr")
        beats_left = internal_signal(reader, "ar_beats_left")
        start_lane = internal_signal(reader, "start_lane")
        frag_addr = stored(0, "addr")[:CHANNEL_ADDR_WIDTH]
        first = Cat(C(0, 2), frag_addr[2:])
        frag_beats = (frag_addr[:2] + stored(0, "length") + 3) >> 2
        issued = Signal(_WIDE, name="fragment_beats_issued")
        m.d.comb += issued.eq(frag_beats - beats_left)
        with m.If(reading_fragment & ~in_state(state, "Idle")):
            m.d.comb += [
                Assert(start_lane == frag_addr[:2]),
                Assert(beats_left <= frag_beats),
                Assert(_offset(next_addr, first) == (issued << 2)[:CHANNEL_ADDR_WIDTH]),
            ]
            with m.If(rd.arvalid):
                m.d.comb += [
                    Assert(((rd.araddr + ((rd.arlen + 1) << 2))[:CHANNEL_ADDR_WIDTH]) == next_addr),
                    Assert(rd.arlen + 1 <= issued),
                ]


class _SmallerMovers:
    """Mixin of a channel harness: the channel's movers built with :attr:`MAX_OUTSTANDING`
    bursts in flight when it is below their default (a smaller proof build, which finds
    induction counterexamples sooner)."""

    def elaborate_dut(self, dut):
        """The channel (with register FIFOs), and movers of :attr:`MAX_OUTSTANDING` bursts."""
        if self.MAX_OUTSTANDING == CHANNEL_MAX_OUTSTANDING:
            return super().elaborate_dut(dut)
        movers = {
            "AxiBurstReader": partial(AxiBurstReader, max_outstanding=self.MAX_OUTSTANDING),
            "AxiBurstWriter": partial(AxiBurstWriter, max_outstanding=self.MAX_OUTSTANDING),
        }
        with mock.patch.multiple(dma_channel, **movers):
            return super().elaborate_dut(dut)


class TxOwnershipInductionHarness(
    _SmallerMovers, _ReaderInvariants, _ResetWindDown, TxOwnershipHarness
):
    """:class:`~.channel_proofs.TxOwnershipHarness` (resets free, every input free) with the
    ownership checker, proven by k-induction: the wind-down invariants of
    :class:`~.channel_proofs._ResetWindDown` and the TX linking invariants of
    :meth:`linking_invariants`. The movers' AXI4 master rules are assumed here (proven on the
    movers themselves, and on this channel by the bounded ``tx_ownership``).
    ``max_outstanding`` below the movers' 4 builds them smaller (proof build only)."""

    CHECK_OWNERSHIP = True
    REGISTER_FIFOS = True
    #: Whether the linking invariants are asserted (the proof); without them the harness has
    #: the proof's environment and its other assertions (a base case's bounded check).
    LINKING = True

    def __init__(
        self, make_dut: Callable = TxDmaChannel, *, max_outstanding: int = CHANNEL_MAX_OUTSTANDING
    ):
        super().__init__(make_dut)
        #: Bursts the channel's movers keep in flight: their default, or fewer for a
        #: smaller proof build (2: the checkers' queues hold 3 bursts, not 5).
        self.MAX_OUTSTANDING = max_outstanding

    def build(self, m):
        dut, ownership, read_props = super().build(m)
        if self.LINKING:
            self.linking_invariants(m, dut, ownership, read_props)
        return dut, ownership, read_props

    def covers(self, m, ownership, read_props, reading_fragment):
        TxOwnershipHarness.covers(self, m, ownership, read_props, reading_fragment)

    def linking_invariants(self, m, dut, ownership, read_props):
        channel = m.submodules.dut
        core = subfragment(channel, "core")
        walker = subfragment(channel, "core.walker")
        reader = mover_fragment(channel, "core.reader", "reader_state")
        writer = mover_fragment(channel, "core.writer", "writer_state")
        store = FifoView(channel, "core.walker.store")
        w_lengths = FifoView(writer, "w_bursts")
        ring = _Ring(self.ring_base, self.ring_size, ownership)
        rd, wr = dut.axi_read, dut.axi_write
        reader_state = internal_signal(reader, "reader_state")
        reader_idle = in_state(reader_state, "Idle")
        fields = _stored_fields(WALKED_FIELDS)

        def stored(age, name):
            offset, width = fields[name]
            return store.entry(age)[offset : offset + width]

        def sig(fragment, name, **kwargs):
            return internal_signal(fragment, name, **kwargs)

        position = sig(walker, "position")
        head_index = sig(walker, "head_index")
        beat_in_desc = sig(walker, "beat_in_desc")
        earlier_beats = sig(walker, "earlier_beats")
        ignore_rest = sig(walker, "ignore_rest")
        walker_state = sig(walker, "walker_state")
        reading = in_state(walker_state, "Read")
        tx_state = sig(core, "tx_channel_state")
        reading_fragment = sig(core, "reading_fragment")
        wb_busy = sig(core, "wb_busy")
        wb_index = sig(core, "wb_index")
        wb_handed = sig(core, "wb_handed")
        wb_cmd_sent = sig(core, "wb_cmd_sent")
        poll_running = sig(channel, "running", within="core.poll_timer")
        level = store.level

        # ---- the walker's store: owned descriptors of the ring entries from the head ----------
        m.d.comb += [
            Assert(store.consistent),
            Assert(w_lengths.consistent),
            Assert(~poll_running),  # POLL_US is 0: no poll reads past the tail
            Assert(position < ring.size),
            Assert(head_index < ring.size),
            Assert(position == ring.add(head_index, level)),
        ]
        for age in range(store.depth):
            entry = ring.add(head_index, age)
            length = stored(age, "length")
            with m.If(age < level):
                m.d.comb += [
                    Assert(ring.owned(entry) == (length != 0)),
                    Assert(ring.buf_addr[entry] == stored(age, "addr")),
                    Assert(ring.buf_length[entry] == length),
                ]

        # ---- the next fetch: only up to the tail (no poll, no recheck on TX), so never the
        # entry being written back, just before the head.
        latched = sig(channel, "latched", within="core.doorbell")
        n_fetch = sig(walker, "n_fetch")
        auto = sig(walker, "auto")
        m.d.comb += [
            Assert(latched < ring.size),
            Assert(~sig(walker, "kick")),
            Assert(~sig(walker, "recheck_req")),
        ]
        # (n_fetch and auto are registered: from the last cycle, up to date once idle for one)
        with m.If(~reading & sig(walker, "settled") & auto):
            m.d.comb += [
                Assert(n_fetch + level <= 2),
                Assert(n_fetch + position <= ring.size - (position == 0)),
            ]

        # ---- the write-back: of the entry before the head, owned until its last word -------
        with m.If(wb_busy):
            m.d.comb += [
                Assert(wb_index == ring.add(head_index, ring.size - 1)),
                Assert(level < ring.size),
            ]
            with m.If(~wb_handed):
                m.d.comb += Assert(ring.owned(wb_index))

        # The walker's half of the write-back agrees with the channel's.
        command_given = sig(walker, "command_given")
        beats_given = sig(walker, "beats_given")
        wb_waiting = (sig(core, "wb_ts_id") != 0) & ~sig(core, "wb_stamped")
        in_beats_left = internal_signal(writer, "in_beats_left")
        with m.If(~wb_busy | ~wb_cmd_sent | wb_handed):
            m.d.comb += [Assert(~command_given), Assert(beats_given == 0)]
        with m.If(wb_busy & wb_cmd_sent):
            m.d.comb += Assert(~wb_waiting)
            with m.If(~wb_handed):
                m.d.comb += [
                    Assert(command_given),
                    Assert(beats_given + in_beats_left == 3 + sig(core, "wb_stamped")),
                ]

        # ---- the main FSM -------------------------------------------------------------------
        states = ("Next", "Data", "Hand Off", "Halting", "Abort")
        m.d.comb += Assert(Cat(in_state(tx_state, s) for s in states).any())
        with m.If(in_state(tx_state, "Data") | in_state(tx_state, "Hand Off")):
            m.d.comb += [Assert(level != 0), Assert(stored(0, "length") != 0)]

        with m.If(reading):
            m.d.comb += [
                # (a halt, a zero-length descriptor stored may move it on: not to Data)
                Assert(~in_state(tx_state, "Data") & ~in_state(tx_state, "Hand Off")),
                Assert(~reading_fragment),
                Assert(~reader_idle),
            ]
        with m.If(~reader_idle):
            m.d.comb += Assert(Mux(reading_fragment, in_state(tx_state, "Data"), reading))
        with m.If(in_state(tx_state, "Data")):
            m.d.comb += Assert(reading_fragment)

        self._reader_invariants(
            m,
            reader,
            read_props,
            rd,
            ring,
            reading,
            reading_fragment,
            # Entries a fetch from the head's may cover: up to the ring's end, and not the
            # write-back's entry, the ring's last while the head is at entry 0.
            ring.size - head_index - (wb_busy & (head_index == 0)),
            stored,
            position,
            head_index,
            beat_in_desc,
            earlier_beats,
            ignore_rest,
            level,
        )
        self._writer_invariants(
            m,
            writer,
            w_lengths,
            wr,
            ring,
            wb_busy,
            wb_index,
            wb_handed,
            wb_cmd_sent,
            sig(core, "wb_stamped"),
        )

        # ---- a channel reset: its core reset holds nothing until the driver sees it over ---
        with m.If(self.cleared):
            m.d.comb += [
                Assert(level == 0),
                Assert(~wb_busy),
                Assert(in_state(tx_state, "Next")),
                Assert(~dut.regs.status.halted),
                Assert(~sig(core, "in_frame")),
                # A fetch may start in the wind-down's last cycle: nothing of it on the bus
                # before the driver sees the reset over.
                Assert(~reading | ~dut.regs.status.resetting),
                Assert((read_props.bursts[0].level == 0) & ~rd.arvalid),
                Assert(reader_idle | in_state(reader_state, "Stream Data")),
                Assert(reader_idle | ~reading_fragment),
                Assert(~reading | (sig(reader, "ar_next_addr") == ring.address(head_index))),
            ]

    def _writer_invariants(
        self, m, writer, w_lengths, wr, ring, wb_busy, wb_index, wb_handed, wb_cmd_sent, stamped
    ):
        """The writer's command: the write-back of entry ``wb_index``, inside its 16 bytes."""

        def sig(name):
            return internal_signal(writer, name)

        state = sig("writer_state")
        next_addr = sig("aw_next_addr")
        beats_left = sig("aw_beats_left")
        start_lane = sig("start_lane")
        in_beats_left = sig("in_beats_left")
        w_active = sig("w_active")
        w_beats_after = sig("w_beats_after")
        in_flight = sig("in_flight")
        failed = sig("failed")
        props = self.write_props_fragment
        w_level = internal_signal(props, "w_bursts_level")
        w_done_open = internal_signal(props, "w_done_open0")
        w_beat = self.write_props.w_beat
        start = ring.address(wb_index)
        idle = in_state(state, "Idle")
        states = ("Idle", "Transfer", "Report")
        m.d.comb += Assert(Cat(in_state(state, name) for name in states).any())
        m.d.comb += Assert(idle == ~(wb_busy & wb_cmd_sent))
        with m.If(in_state(state, "Report")):
            m.d.comb += Assert(in_beats_left == 0)
        # W beats the issued bursts still owe, from the writer's own records.
        owed = Mux(w_active, w_beats_after + 1, 0)
        for age in range(w_lengths.depth):
            owed = owed + Mux(age < w_lengths.level, w_lengths.entry(age) + 1, 0)
        with m.If(~idle):
            m.d.comb += [
                Assert(start_lane == 0),
                Assert(_offset(next_addr, start) + (beats_left << 2) == 16),
                # After a bad B, the input the issued bursts do not need is dropped.
                Assert(
                    Mux(
                        failed & (owed == 0),
                        in_beats_left <= beats_left,
                        in_beats_left == owed + beats_left,
                    )
                ),
                Assert(wb_handed == (in_beats_left == 0)),
            ]
            with m.If(wr.awvalid):
                m.d.comb += [
                    Assert(((wr.awaddr + ((wr.awlen + 1) << 2))[:CHANNEL_ADDR_WIDTH]) == next_addr),
                    Assert(_offset(wr.awaddr, start) < 16),
                ]
        # The checker's W bursts (shown, W beats not all accepted) follow each other from the
        # next W beat's offset, which is the writer's input so far; an AW shown this cycle
        # (queued from the next) comes after them; they end where the issuer goes on.
        queue, head_len = _write_queue(props)
        aw_shown = wr.awvalid & ~internal_signal(props, "past_aw_waiting")
        frontier = Signal(_WIDE, name="w_frontier")
        m.d.comb += frontier.eq(16 - (in_beats_left << 2))
        chain = [frontier - (w_beat << 2)]
        for age, (addr, length) in enumerate(queue):
            with m.If(~idle & (age < w_level)):
                m.d.comb += Assert(_offset(addr, start) == chain[-1])
            chain.append(Mux(age < w_level, chain[-1] + ((length + 1) << 2), chain[-1]))
        end = Mux(aw_shown, chain[-1] + ((wr.awlen + 1) << 2), chain[-1])
        m.d.comb += Assert(Mux(w_level == 0, w_beat == 0, w_beat <= head_len))
        with m.If(~idle):
            with m.If(aw_shown):
                m.d.comb += Assert(_offset(wr.awaddr, start) == chain[-1])
            with m.If((w_level != 0) | aw_shown):
                m.d.comb += Assert(end == _offset(next_addr, start))
            m.d.comb += Assert(((w_level != 0) | aw_shown) == (w_active | (w_lengths.level != 0)))
            # Every burst in flight holds at least one beat of the command issued so far.
            first_beat = 1 - stamped
            m.d.comb += Assert(in_flight + first_beat <= (_offset(next_addr, start) >> 2))
        rd_pointer = internal_signal(props, "w_bursts_rd")
        wr_pointer = internal_signal(props, "w_bursts_wr")
        depth = len(queue)
        wrapped = Mux(
            rd_pointer + w_level >= depth, rd_pointer + w_level - depth, rd_pointer + w_level
        )
        m.d.comb += [
            Assert(rd_pointer < depth),
            Assert(w_level <= depth),
            Assert(wr_pointer == wrapped),
            Assert(in_flight <= self.MAX_OUTSTANDING),
            # The writer's bursts in flight: those whose W beats are not all gone (its FIFO
            # of lengths and the active one: the checker's bursts shown), and those waiting
            # for B only.
            Assert(w_lengths.level + w_active == w_level + aw_shown),
            Assert(in_flight == w_lengths.level + w_active + w_done_open),
        ]


class TxInductionBaseCaseHarness(TxOwnershipInductionHarness):
    """:class:`TxOwnershipInductionHarness` for a deep base case: the bounded check its
    mutants run. The proof closes at k = 1, whose base case cannot reach a mutant's first
    wrong access (a fragment read at step 11, a write-back at step 16 at the earliest);
    this harness reaches them cheaply. It is the proof's harness (the same channel build,
    the same assumptions, the movers' AXI4 rules assumed, the ownership and wind-down
    assertions) without the linking invariants, on inputs narrowed as
    :func:`~.channel_proofs.narrow_to_tx_writeback`'s (a ring of three, slaves always ready, R
    beats as soon as allowed, OKAY, the TX FIFO always taking data, no timestamps), except
    that a descriptor fetched may also be one without OWN, and CTRL.run, CTRL.reset and
    ``hold`` stay free. A trace that breaks an assertion here is one of the proof's own
    inputs that breaks the same assertion of the proof at the same step (or one of its
    linking invariants before): the proof's base case at that depth fails on it."""

    LINKING = False

    def build(self, m):
        dut, ownership, read_props = super().build(m)
        narrow_to_tx_writeback(m, dut, read_props, unowned_too=True)
        return dut, ownership, read_props


def _write_queue(props_fragment):
    """``([(addr, len), ...], head_len)``: the write checker's queue of bursts awaiting W
    beats, oldest first (valid while its age is below the checker's ``w_bursts_level``)."""
    rd = internal_signal(props_fragment, "w_bursts_rd")
    depth = props_depth(props_fragment, "w_bursts_len")
    addrs = Array(internal_signal(props_fragment, f"w_bursts_addr{i}") for i in range(depth))
    lens = Array(internal_signal(props_fragment, f"w_bursts_len{i}") for i in range(depth))
    queue = []
    for age in range(depth):
        index = rd + age
        index = Mux(index >= depth, index - depth, index)
        queue.append((addrs[index], lens[index]))
    return queue, lens[rd]
