"""RX ownership by k-induction: the linking invariants that tie the ownership checker's table
to the RX channel's state (the ring walker's store, HEAD and ``inflight``, the data path's
current buffer, the command queue to the AXI writer and the command it serves), for the
ownership properties of :class:`~.channel_proofs.RxOwnershipHarness` with resets free.

Proven by k-induction at k = 1 on the build ``RX_INDUCTION_BUILD`` of :mod:`.proofs`
(movers of 2 bursts, a command queue of 2), the step split into goals (:mod:`.goals`: each
group of assertions with the others held in the cycle before, a few lemmas in the same
cycle), one task per goal: ``rx_ownership_induction`` in ``make formal`` (docs/formal.md,
"Ownership by induction, RX").
"""

import sys
from collections.abc import Callable
from contextlib import nullcontext
from unittest import mock

from amaranth import *
from amaranth.hdl import Assert, Assume
from amaranth.lib import data

from ..dma import rx_channel
from ..dma.descriptor import MIN_RX_BUFFER_BYTES, Descriptor
from ..dma.rx_channel import CHUNK_BEATS, RxDmaChannel
from ..mac.frame import RxError
from ..regmap import RING_INDEX_BITS
from . import channel_induction, channel_proofs, mover_invariants, ownership_properties
from .channel_induction import (
    _WIDE,
    _offset,
    _ReaderInvariants,
    _Ring,
    _SmallerMovers,
    _stored_fields,
    _write_queue,
)
from .channel_proofs import (
    CHANNEL_ADDR_WIDTH,
    CHANNEL_MAX_OUTSTANDING,
    RxOwnershipHarness,
    _ResetWindDown,
    narrow_to_usable_descriptors,
)
from .goals import GoalSplit
from .internal import in_state, internal_signal, mover_fragment, subfragment
from .register_fifo import FifoView

__all__ = ["RxOwnershipInductionHarness", "RxInductionBaseCaseHarness"]

#: The modules whose assertions a split step files under groups (:mod:`.goals`): this one's
#: linking invariants, the reader's (shared with TX), the wind-down's, the movers' counts
#: and the ownership checker's.
#: Groups whose assertions are proven one at a time (each its own goal): the checker's
#: read and strobe rules, and the writer's state against its command, which as whole goals
#: had not answered in 20 minutes (1.5 and 1.9 min of CPU at load 13) while each alone
#: takes seconds.
ONE_BY_ONE = ("ownership_properties", "writer")
#: Lemmas of the split (:class:`~.goals.GoalSplit`): what the checker's strobe rule needs
#: of the same cycle, the writer's strobes inside the command it serves, that command
#: inside an owned entry's buffer or write-back words, and nothing on the bus as a reset
#: ends.
LEMMAS = ("writer strobes", "command served", "channel_proofs")
_ASSERTING_MODULES = (
    sys.modules[__name__],
    channel_induction,
    channel_proofs,
    mover_invariants,
    ownership_properties,
)

#: The walker's store on RX: the descriptor fields the channel keeps.
_RX_FIELDS = ("addr", "length", "ioc")
#: The RX channel's write command (``cmdq``'s entries and ``cur``), as laid out there.
_COMMAND = data.StructLayout(
    {"addr": CHANNEL_ADDR_WIDTH, "length": 16, "kind": 1, "eop": 1, "ioc": 1, "sop": 1}
)
_KIND_WB = 1
#: The data path's states in which a buffer is open: loaded and its write-back not queued.
_OPEN_STATES = ("Fill", "Next", "Spill", "Wait Spill", "Write Back")


def named_command(m, value, name) -> Signal:
    """``value`` (a queue entry picked by a pointer) as a signal of its own."""
    signal = Signal(len(value), name=name)
    m.d.comb += signal.eq(value)
    return signal


class RxOwnershipInductionHarness(
    _SmallerMovers, _ReaderInvariants, _ResetWindDown, RxOwnershipHarness
):
    """:class:`~.channel_proofs.RxOwnershipHarness` (resets free, every input free, one
    descriptor prefetched) with the ownership checker, the wind-down invariants of
    :class:`~.channel_proofs._ResetWindDown` and the RX linking invariants of
    :meth:`linking_invariants`, for k-induction. The movers' AXI4 master rules are assumed
    (as on TX)."""

    CHECK_OWNERSHIP = True
    REGISTER_FIFOS = True
    #: Whether the linking invariants are built (the proof); without them the harness has
    #: the proof's environment and its other assertions (a base case's bounded check).
    LINKING = True
    #: The groups of assertions kept (:class:`~.goals.GoalSplit`'s ``keep``); ``None``:
    #: every one (the proof).
    KEEP = None

    def __init__(
        self,
        make_dut: Callable = RxDmaChannel,
        *,
        max_outstanding: int = CHANNEL_MAX_OUTSTANDING,
        cmd_queue_depth: int | None = None,
        goal: str | None = None,
    ):
        super().__init__(make_dut, resets=True)
        #: The group of assertions this build proves (the others its hypotheses: see
        #: :mod:`.goals`); ``None``: every assertion at once.
        self.goal = goal
        #: Bursts the channel's movers keep in flight (fewer: a smaller proof build).
        self.MAX_OUTSTANDING = max_outstanding
        #: The command queue's depth in a smaller proof build (None: the channel's).
        self._cmd_queue_depth = cmd_queue_depth

    def elaborate_dut(self, dut):
        """The channel as :class:`_SmallerMovers` builds it, with a command queue of
        ``cmd_queue_depth`` entries if given (a smaller proof build)."""
        depth = self._cmd_queue_depth
        with (
            nullcontext()
            if depth is None
            else mock.patch.object(rx_channel, "CMD_QUEUE_DEPTH", depth)
        ):
            return super().elaborate_dut(dut)

    def build(self, m):
        self.split = split = GoalSplit(
            self.goal, keep=self.KEEP, one_by_one=ONE_BY_ONE, lemmas=LEMMAS
        )
        with split.patched(_ASSERTING_MODULES):
            dut, ownership, read_props = super().build(m)
            if self.LINKING:
                self.linking_invariants(m, dut, ownership, read_props)
        split.hypotheses(m)
        return dut, ownership, read_props

    def covers(self, m, dut, ownership, write_props):
        RxOwnershipHarness.covers(self, m, dut, ownership, write_props)

    def linking_invariants(self, m, dut, ownership, read_props):
        channel = m.submodules.dut
        core = subfragment(channel, "core")
        walker = subfragment(channel, "core.walker")
        reader = mover_fragment(channel, "core.reader", "reader_state")
        writer = mover_fragment(channel, "core.writer", "writer_state")
        store = FifoView(channel, "core.walker.store")
        cmdq = FifoView(channel, "core.cmdq")
        ring = _Ring(self.ring_base, self.ring_size, ownership)
        fields = _stored_fields(_RX_FIELDS)
        min_length = ownership._min_length

        def sig(fragment, name, **kwargs):
            return internal_signal(fragment, name, **kwargs)

        def stored(age, name):
            offset, width = fields[name]
            return store.entry(age)[offset : offset + width]

        def dec(index):
            """``index - 1`` round the ring."""
            return Mux(index == 0, ring.size - 1, index - 1)[:RING_INDEX_BITS]

        position = sig(walker, "position")
        head_index = sig(walker, "head_index")
        walker_state = sig(walker, "walker_state")
        reading = in_state(walker_state, "Read")
        level = store.level
        head = dut.regs.head
        inflight = sig(core, "inflight")
        halted = dut.regs.status.halted

        split = self.split
        split.section("store")
        # ---- the walker's store and the entries in the DMA's hands -----------------------
        # inflight counts the owned descriptors stored and not yet written back: the entries
        # from HEAD up to the walker's position.
        distance = Mux(position >= head, position - head, position + ring.size - head)
        m.d.comb += [
            Assert(store.consistent),
            Assert(cmdq.consistent),
            Assert(position < ring.size),
            Assert(head_index < ring.size),
            Assert(head < ring.size),
            Assert(position == ring.add(head_index, level)),
            Assert(inflight < ring.size),
            Assert(inflight == distance),
        ]
        for age in range(store.depth):
            entry = ring.add(head_index, age)
            length = stored(age, "length")
            with m.If(age < level):
                m.d.comb += [
                    Assert(ring.owned(entry) == (length >= min_length)),
                    Assert(ring.buf_addr[entry] == stored(age, "addr")),
                    Assert(ring.buf_length[entry] == length),
                ]

        split.section("buffer")
        # ---- the data path's buffer ------------------------------------------------------
        data_state = sig(core, "data_state")
        open_buffer = Cat(in_state(data_state, name) for name in _OPEN_STATES).any()
        buf_idx = sig(core, "buf_idx")
        buf_addr = sig(core, "buf_addr")
        buf_len = sig(core, "buf_len")
        buf_left = sig(core, "buf_left")
        chunk_addr = sig(core, "chunk_addr")
        chunk_n = sig(core, "chunk_n")
        writer_busy = ~in_state(sig(writer, "writer_state"), "Idle")
        used = buf_len - buf_left
        with m.If(open_buffer):
            m.d.comb += Assert((buf_len >= min_length) | halted)
        with m.If(open_buffer & (buf_len >= min_length)):
            m.d.comb += [
                Assert(ring.owned(buf_idx)),
                Assert(ring.buf_addr[buf_idx] == buf_addr),
                Assert(ring.buf_length[buf_idx] == buf_len),
                Assert(buf_left <= buf_len),
                Assert(chunk_n <= used),
                Assert(chunk_n <= CHUNK_BEATS * 4),
                Assert(_offset(chunk_addr, buf_addr) == (used - chunk_n)[:CHANNEL_ADDR_WIDTH]),
            ]
        loaded = (
            open_buffer
            | in_state(data_state, "Load")
            | in_state(data_state, "Discard")
            | (cmdq.level != 0)
            | writer_busy
        )
        with m.If(loaded):
            m.d.comb += Assert(buf_idx == ring.add(head_index, ring.size - 1))
        data_states = (
            "Idle", "Wait Start", "Wait Buffer", "Drop", "Discard", "Fill", "Next", "Spill",
            "Wait Spill", "Write Back", "Load",
        )  # fmt: skip
        m.d.comb += Assert(Cat(in_state(data_state, name) for name in data_states).any())
        # A spill's write-back, and the load after it, come once the next buffer is stored.
        wb_eop = sig(core, "wb_eop")
        spilling = (in_state(data_state, "Write Back") & ~wb_eop) | in_state(data_state, "Load")
        with m.If(spilling):
            m.d.comb += Assert(level != 0)

        split.section("command order")
        # ---- the commands: each for the entry it belongs to ---------------------------------
        # Oldest to newest, the queue holds a buffer's data chunks, then its write-back, then
        # the next buffer's, ...; the newest belong to the open buffer, or, with none open, end
        # with the write-back of the last one loaded. So, counted from the newest, each
        # write-back moves one entry back.
        current = _COMMAND(sig(core, "cur"))

        def named(value, name):  # a signal per step, so that the chain does not unfold
            signal = Signal(RING_INDEX_BITS, name=name)
            m.d.comb += signal.eq(value)
            return signal

        entry = named(ring.add(buf_idx, C(0, 1) | ~open_buffer), "cmd_entry_after")
        queued_wbs = []
        for age in reversed(range(cmdq.depth)):
            command = _COMMAND(named_command(m, cmdq.entry(age), f"cmd_{age}"))
            valid = age < cmdq.level
            is_wb = valid & (command.kind == _KIND_WB)
            queued_wbs.append(is_wb)
            entry = named(Mux(is_wb, dec(entry), entry), f"cmd_entry_{age}")
            with m.If(valid), split.group(f"command {age}"):
                self._command_inside(m, ring, command, entry, min_length)
        # With no buffer open, the newest command is the last buffer's write-back.
        newest_age = (cmdq.level - 1)[: len(cmdq.level)]
        newest = _COMMAND(named_command(m, cmdq.entry(newest_age), "cmd_newest"))
        with m.If(~open_buffer):
            with m.If(cmdq.level != 0):
                m.d.comb += Assert(newest.kind == _KIND_WB)
            with m.Elif(writer_busy):
                m.d.comb += Assert(current.kind == _KIND_WB)
        # The command the writer serves comes before them all.
        cur_wb = writer_busy & (current.kind == _KIND_WB)
        cur_entry = named(Mux(cur_wb, dec(entry), entry), "cur_entry")
        in_beats_left = sig(writer, "in_beats_left")
        with m.If(writer_busy), split.group("command served"):
            self._command_inside(
                m, ring, current, cur_entry, min_length, owned=(in_beats_left != 0) | ~cur_wb
            )
        # HEAD is the write-back awaited next: the one the writer serves, or the oldest
        # queued, or the open buffer's; with none of them, the walker's head (a bad B
        # leaves HEAD behind, halted with nothing more issued).
        # A write-back answered with an error leaves HEAD behind (halted: after a halt on a
        # too-small buffer the queue still drains, so more may follow). The harness counts
        # them since the core's last reset.
        lag = Signal(3, name="wb_failures")
        writer_failed = in_state(sig(writer, "writer_state"), "Report") & sig(writer, "failed")
        with m.If(sig(channel, "clear", domain="comb")):
            m.d.sync += lag.eq(0)
        with m.Elif(writer_failed & (current.kind == _KIND_WB) & (lag != 7)):
            m.d.sync += lag.eq(lag + 1)
        # HEAD is the write-back awaited next: the one the writer serves, or the oldest
        # queued, or the open buffer's; with none of them, the walker's head; less those
        # that failed.
        expected = named(Mux(loaded, cur_entry, head_index), "head_expected")
        # The entries loaded and not written back, from HEAD up to the walker's head: one
        # per write-back still to land or failed, and the open buffer's.
        loaded_entries = Mux(head_index >= head, head_index - head, head_index + ring.size - head)
        split.section("head")
        m.d.comb += [
            Assert(lag < ring.size),
            Assert(head == Mux(expected >= lag, expected - lag, expected + ring.size - lag)),
            Assert(loaded_entries == sum(queued_wbs) + cur_wb + open_buffer + lag),
            # ... counted without the ring's wrap: never a whole ring in the DMA's hands.
            Assert(inflight == sum(queued_wbs) + cur_wb + open_buffer + lag + level),
        ]

        split.section("writer")
        self._writer_invariants(m, writer, FifoView(writer, "w_bursts"), dut.axi_write, current)

        split.section("fetch")
        # ---- the fetch: from the head's entry, never into the entries in the DMA's hands ----
        # Never the whole ring in the DMA's hands: a fetch leaves one entry out, counting the
        # descriptors it stored already in ``inflight``.
        free_entries = ring.size - 1 - inflight + level
        self._reader_invariants(
            m,
            reader,
            read_props,
            dut.axi_read,
            ring,
            reading,
            None,
            Mux(free_entries < ring.size - head_index, free_entries, ring.size - head_index),
            stored,
            position,
            head_index,
            sig(walker, "beat_in_desc"),
            sig(walker, "earlier_beats"),
            sig(walker, "ignore_rest"),
            level,
            min_length,
            store.depth,
        )
        with m.If(reading):
            m.d.comb += Assert(level == 0)
        # The next fetch's size (registered: up to date once the walker has been idle for a
        # cycle) leaves the entries in the DMA's hands alone and stays inside the ring.
        n_fetch = sig(walker, "n_fetch")
        with m.If(~reading & sig(walker, "settled")):
            m.d.comb += [
                Assert(n_fetch + level <= store.depth),
                Assert(n_fetch + inflight < ring.size),
                Assert(n_fetch + position <= ring.size),
            ]
        with m.If(~in_state(sig(reader, "reader_state"), "Idle")):
            m.d.comb += Assert(reading)

        split.section("cleared")
        # ---- a channel reset: its core reset holds nothing until the driver sees it over ---
        with m.If(self.cleared):
            m.d.comb += [
                Assert(level == 0),
                Assert(cmdq.level == 0),
                Assert(inflight == 0),
                Assert(~halted),
                Assert(in_state(data_state, "Idle")),
                # The walker, reset since, has started no fetch: the cycle after the core's
                # reset the read size is not settled, and a new strobe holds it.
                Assert(~reading),
                Assert(in_state(sig(reader, "reader_state"), "Idle")),
                Assert((read_props.bursts[0].level == 0) & ~dut.axi_read.arvalid),
            ]
        split.section(None)

    def _writer_invariants(self, m, writer, w_lengths, wr, command):
        """The writer serves ``command`` (``cur``: any byte address and length): its bursts,
        the checker's record of them and its W beats' byte position follow from the
        command, so that every strobed byte is one of the command's."""

        def sig(name):
            return internal_signal(writer, name)

        state = sig("writer_state")
        idle = in_state(state, "Idle")
        next_addr = sig("aw_next_addr")
        beats_left = sig("aw_beats_left")
        start_lane = sig("start_lane")
        in_beats_left = sig("in_beats_left")
        w_bytes_left = sig("w_bytes_left")
        w_first = sig("w_first")
        w_active = sig("w_active")
        w_beats_after = sig("w_beats_after")
        in_flight = sig("in_flight")
        failed = sig("failed")
        props = self.write_props_fragment
        w_level = internal_signal(props, "w_bursts_level")
        w_done_open = internal_signal(props, "w_done_open0")
        w_beat = self.write_props.w_beat
        length = command.length
        lane = command.addr[:2]
        start = Cat(C(0, 2), command.addr[2:])  # the command's first beat
        beats = Signal(_WIDE, name="cmd_w_beats")  # its W beats
        inputs = Signal(_WIDE, name="cmd_in_beats")  # its input beats
        m.d.comb += [beats.eq((lane + length + 3) >> 2), inputs.eq((length + 3) >> 2)]
        # Offset (bytes, from ``start``) of the next W beat: its W beats so far, times 4.
        frontier = Signal(_WIDE, name="cmd_w_frontier")
        m.d.comb += frontier.eq(
            Mux(w_first, 0, Mux(w_bytes_left == 0, beats << 2, length - w_bytes_left + lane))
        )
        w_done = frontier >> 2
        owed = Mux(w_active, w_beats_after + 1, 0)
        for age in range(w_lengths.depth):
            owed = owed + Mux(age < w_lengths.level, w_lengths.entry(age) + 1, 0)
        states = ("Idle", "Transfer", "Report")
        m.d.comb += Assert(Cat(in_state(state, name) for name in states).any())
        with m.If(in_state(state, "Report")):
            m.d.comb += Assert(in_beats_left == 0)
        with m.If(~idle & (length != 0)):
            m.d.comb += [
                Assert(start_lane == lane),
                Assert(next_addr[:2] == 0),
                Assert(_offset(next_addr, start) + (beats_left << 2) == beats << 2),
                Assert(w_bytes_left <= length),
                Assert(~w_first | (w_bytes_left == length)),
                Assert(w_first | (frontier[:2] == 0)),
                Assert(w_first | (w_bytes_left < length)),
                Assert(w_done <= beats),
                Assert(owed + beats_left + w_done == beats),
                # After a bad B, the input the issued bursts do not need is dropped.
                Assert(
                    Mux(
                        failed & (owed == 0),
                        in_beats_left <= inputs - Mux(w_done < inputs, w_done, inputs),
                        in_beats_left == inputs - Mux(w_done < inputs, w_done, inputs),
                    )
                ),
                Assert(in_flight <= (_offset(next_addr, start) >> 2)),
            ]
            self.split.section("writer aw")
            with m.If(wr.awvalid):
                m.d.comb += Assert(
                    ((wr.awaddr + ((wr.awlen + 1) << 2))[:CHANNEL_ADDR_WIDTH]) == next_addr
                )
        self.split.section("writer strobes")
        # Each strobed byte is one of the command's (what the ownership checker needs of
        # the writer; the invariants above are what makes it inductive).
        w_addr = self.write_props.w_addr
        with m.If(~idle & wr.wvalid):
            for lane in range(4):
                with m.If(wr.wstrb[lane]):
                    m.d.comb += Assert(_offset(w_addr + lane, command.addr) < length)
        self.split.section("writer bursts")
        # The checker's bursts awaiting W beats (and an AW shown this cycle) follow each
        # other from the next W beat and end where the issuer goes on.
        queue, head_len = _write_queue(props)
        aw_shown = wr.awvalid & ~internal_signal(props, "past_aw_waiting")
        chain = [frontier - (w_beat << 2)]
        for age, (addr, burst_len) in enumerate(queue):
            with m.If(~idle & (age < w_level)):
                m.d.comb += Assert(_offset(addr, start) == chain[-1])
            chain.append(Mux(age < w_level, chain[-1] + ((burst_len + 1) << 2), chain[-1]))
        end = Mux(aw_shown, chain[-1] + ((wr.awlen + 1) << 2), chain[-1])
        m.d.comb += Assert(Mux(w_level == 0, w_beat == 0, w_beat <= head_len))
        with m.If(~idle):
            with m.If(aw_shown):
                m.d.comb += Assert(_offset(wr.awaddr, start) == chain[-1])
            with m.If((w_level != 0) | aw_shown):
                m.d.comb += Assert(end == _offset(next_addr, start))
            m.d.comb += Assert(((w_level != 0) | aw_shown) == (w_active | (w_lengths.level != 0)))
        with m.If(idle):
            m.d.comb += [Assert(w_level == 0), Assert(~wr.wvalid)]
        rd_pointer = internal_signal(props, "w_bursts_rd")
        wr_pointer = internal_signal(props, "w_bursts_wr")
        depth = len(queue)
        wrapped = Mux(
            rd_pointer + w_level >= depth, rd_pointer + w_level - depth, rd_pointer + w_level
        )
        m.d.comb += [
            Assert(w_lengths.consistent),
            Assert(rd_pointer < depth),
            Assert(w_level <= depth),
            Assert(wr_pointer == wrapped),
            Assert(in_flight <= self.MAX_OUTSTANDING),
            Assert(w_lengths.level + w_active == w_level + aw_shown),
            Assert(in_flight == w_lengths.level + w_active + w_done_open),
        ]

    @staticmethod
    def _command_inside(m, ring, command, entry, min_length, owned=None):
        """``command`` (a data chunk or a write-back) lies inside the buffer, or the
        write-back words, of ring entry ``entry``, owned by the checker while ``owned``."""
        with m.If(C(1, 1) if owned is None else owned):
            m.d.comb += Assert(ring.owned(entry))
        with m.If(command.kind == _KIND_WB):
            start = ring.address(entry)
            m.d.comb += Assert(
                Mux(
                    command.length == 16,
                    command.addr == start,
                    (command.length == 12) & (command.addr == (start + 4)[:CHANNEL_ADDR_WIDTH]),
                )
            )
        with m.Else():
            offset = _offset(command.addr, ring.buf_addr[entry])
            m.d.comb += [
                Assert(command.length != 0),
                # The data path writes in chunks of at most CHUNK_BEATS beats.
                Assert(command.length <= CHUNK_BEATS * 4),
                Assert(offset + command.length <= ring.buf_length[entry]),
                Assert(ring.buf_length[entry] >= min_length),
            ]


class RxInductionBaseCaseHarness(RxOwnershipInductionHarness):
    """:class:`RxOwnershipInductionHarness` for a deep base case, the bounded check its
    mutants run (as :class:`~.channel_induction.TxInductionBaseCaseHarness` on TX): the
    proof's harness (the same channel build with register FIFOs, the same assumptions, the
    movers' AXI4 rules assumed, the ownership and wind-down assertions, and of the linking
    invariants the writer's: its bursts and strobes those of the command it serves; the
    others are left out, each step of a bounded check costs more with them) on narrowed
    inputs: a ring of three, word 3 of every descriptor fetched either owned with a
    64-byte buffer (the channel's minimum; its address any) or not owned (the ring's end),
    AXI slaves always ready, R beats as soon as allowed, every response OKAY, good frames
    that wait for a buffer, no timestamps; CTRL.run and CTRL.reset stay free. A trace that
    breaks an assertion here is one of the proof's own inputs that breaks the same
    assertion of the proof at the same step (or another of its assertions before): the
    proof's base case at that depth fails on it."""

    KEEP = (
        "ownership_properties",
        "channel_proofs",
        "mover_invariants",
        "writer",
        "writer aw",
        "writer strobes",
        "writer bursts",
    )

    def build(self, m):
        dut, ownership, read_props = super().build(m)
        usable = Signal(Descriptor)
        m.d.comb += [usable.own.eq(1), usable.length.eq(MIN_RX_BUFFER_BYTES)]
        narrow_to_usable_descriptors(m, dut, read_props, usable, unowned_too=True)
        m.d.comb += [
            Assume(dut.i.p.meta.cause == RxError.NONE),
            Assume(dut.wait_for_buffers),
            Assume(~dut.i.p.meta.ts_valid),
        ]
        return dut, ownership, read_props
