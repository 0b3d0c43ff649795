"""Ownership and memory-safety proofs of the DMA channels (:mod:`macdma.hdl.dma.rx_channel`,
:mod:`macdma.hdl.dma.tx_channel`): each channel with memory contents unconstrained (every
R beat of a descriptor fetch is free data), any doorbells, AXI4 slaves free within the
protocol, under :class:`~.ownership_properties.RingOwnershipProperties`."""

from collections.abc import Callable
from contextlib import nullcontext
from unittest import mock

from amaranth import *
from amaranth.hdl import Assert, Assume, Cover

from ..dma import rx_channel
from ..dma.channel import ERROR_CODES
from ..dma.descriptor import MIN_RX_BUFFER_BYTES, Descriptor
from ..dma.rx_channel import RxDmaChannel
from ..dma.tx_channel import TxDmaChannel
from ..mac.frame import RxError
from .axi4_properties import Axi4ReadProperties, Axi4WriteProperties
from .harness import Harness, drive_free
from .internal import elaborated, in_state, internal_signal, mover_fragment
from .mover_invariants import reader_count_invariants, writer_count_invariants
from .ownership_properties import RingOwnershipProperties
from .register_fifo import register_fifos
from .streams import free_stream_source

__all__ = [
    "RxOwnershipHarness",
    "RxMultiBufferHarness",
    "TxOwnershipHarness",
    "RxHaltHarness",
    "TxHaltHarness",
    "RxResetWindDownHarness",
    "TxResetWindDownHarness",
    "CHANNEL_ADDR_WIDTH",
    "MAX_RING",
]

#: Channel parameters of the ownership proofs: 32-bit data, 13-bit addresses (8 KiB: the
#: ring and the buffers share it, so a stray write can hit either), rings of 2..4 entries.
CHANNEL_ADDR_WIDTH = 13
MAX_RING = 4
#: Bursts each of a channel's movers keeps in flight (their default).
CHANNEL_MAX_OUTSTANDING = 4


class _ChannelHarness(Harness):
    """What both channel proofs share: the channel's ring (any 16-byte aligned base, 2 to
    :data:`MAX_RING` entries, inside the address space), held constant with BURST_BEATS; the
    channel running with polling off; free doorbells; free AXI4 slaves within the protocol,
    with the AXI4 master properties on both of the channel's interfaces."""

    #: Whose rules the write side's AXI4 checker asserts (see
    #: :class:`~.axi4_properties.Axi4WriteProperties`): the channel's, as a master.
    WRITE_RULES = "master"
    #: The same for the read side.
    READ_RULES = "master"
    #: Whether the harness puts :class:`~.ownership_properties.RingOwnershipProperties` on
    #: the channel.
    CHECK_OWNERSHIP = True
    #: Whether the channel is elaborated with :class:`~.register_fifo.RegisterFifo` for every
    #: ``SyncFIFO`` (so that linking invariants can name their entries).
    REGISTER_FIFOS = False
    #: Bursts the channel's movers keep in flight (their default unless a proof build
    #: elaborates them smaller).
    MAX_OUTSTANDING = CHANNEL_MAX_OUTSTANDING

    def __init__(self, make_dut: Callable, *, resets: bool = False):
        super().__init__()
        self._make_dut = make_dut
        self._resets = resets

    def ring(self, m, dut):
        """Set ``dut`` up as above; returns ``(ring_base, ring_size, read_props,
        write_props)``.

        With ``resets``, CTRL.run and the CTRL.reset strobe are free in every cycle (see
        :meth:`released`): the driver may stop, start and reset the channel at any time."""
        self.ring_base = ring_base = self.any_const(CHANNEL_ADDR_WIDTH, "ring_base")
        self.ring_size = ring_size = self.any_const(len(dut.regs.ring_size), "ring_size")
        burst_beats = self.any_const(len(dut.regs.burst_beats), "burst_beats")
        m.d.comb += [
            Assume(ring_base[:4] == 0),
            Assume((ring_size >= 2) & (ring_size <= MAX_RING)),
            Assume(ring_base + ring_size * 16 <= 2**CHANNEL_ADDR_WIDTH),
            dut.regs.ring_base.eq(ring_base),
            dut.regs.ring_size.eq(ring_size),
            dut.regs.burst_beats.eq(burst_beats),
            dut.regs.ctrl.run.eq(self.any_seq(1, "ctrl_run") if self._resets else 1),
            dut.regs.ctrl.reset.eq(self.any_seq(1, "ctrl_reset") if self._resets else 0),
            dut.regs.poll_us.eq(0),
            dut.sys_clk_mhz.eq(1),
            dut.regs.tail.eq(self.any_seq(len(dut.regs.tail), "tail")),
            dut.regs.tail_written.eq(self.any_seq(1, "tail_written")),
        ]
        read_names = ["arready", "rid", "rdata", "rresp", "rlast", "rvalid"]
        drive_free(self, m, dut.axi_read, read_names)
        drive_free(self, m, dut.axi_write, ["awready", "wready", "bid", "bresp", "bvalid"])
        read_props = Axi4ReadProperties(
            dut.axi_read,
            started=self.started,
            burst_beats=burst_beats,
            max_outstanding=self.MAX_OUTSTANDING,
            proven=self.READ_RULES,
        )
        write_props = Axi4WriteProperties(
            dut.axi_write,
            started=self.started,
            burst_beats=burst_beats,
            max_outstanding=self.MAX_OUTSTANDING,
            proven=self.WRITE_RULES,
        )
        # Elaborated here, so that linking invariants can find the checkers' records.
        m.submodules.read_props = self.read_props_fragment = elaborated(read_props)
        m.submodules.write_props = self.write_props_fragment = elaborated(write_props)
        self.write_props = write_props
        return ring_base, ring_size, read_props, write_props

    def released(self, m, dut):
        """For the ownership checker: high in the cycle a channel reset is over as the driver
        sees it, the first cycle after its CTRL.reset strobe in which STATUS.resetting reads
        0 (no new strobe in it). From then on the driver owns every descriptor and buffer
        again and may re-post them (docs/descriptors.md, "When the reset is over"). ``None``
        without ``resets``."""
        if not self._resets:
            return None
        if getattr(self, "_released", None) is not None:
            return self._released
        regs = dut.regs
        self.reset_waiting = waiting = Signal(name="reset_waiting")  # STATUS.resetting not 0 yet
        released = Signal(name="reset_released")
        m.d.comb += released.eq(waiting & ~regs.status.resetting & ~regs.ctrl.reset)
        with m.If(regs.ctrl.reset):
            m.d.sync += waiting.eq(1)
        with m.Elif(released):
            m.d.sync += waiting.eq(0)
        self._released = released
        return released

    def elaborate_dut(self, dut):
        """``dut`` elaborated (with register FIFOs if :attr:`REGISTER_FIFOS`)."""
        with register_fifos() if self.REGISTER_FIFOS else nullcontext():
            return elaborated(dut)


class RxOwnershipHarness(_ChannelHarness):
    """:class:`~macdma.hdl.dma.rx_channel.RxDmaChannel` (``prefetch`` descriptors per fetch,
    one unless told) with any frames on ``i`` and ``wait_for_buffers`` free in every cycle
    (a frame that finds no buffer may wait for one or be dropped, and the choice may change
    while it waits): it writes only into owned buffers and their write-back words.
    With ``resets`` (the default) CTRL.run and CTRL.reset are free in every cycle, and a
    reset the driver has seen over returns every entry to it (:meth:`released`).

    ``min_buffer_bytes`` lifts the channel's minimum buffer (64 bytes, below which it halts)
    to a smaller one for this build only, with the checker's ``min_length`` equal to it:
    a buffer then fills to its last byte within few cycles, so the bounded check reaches a
    buffer's end and a frame going on past it (the covers). The channel's logic does not
    depend on the value: it is only the threshold of its halt test.

    :meth:`build` returns the channel, the ownership checker and the read-side AXI4
    properties, for a harness that narrows the inputs further.
    """

    def __init__(
        self,
        make_dut: Callable = RxDmaChannel,
        *,
        min_buffer_bytes: int | None = None,
        prefetch: int = 1,
        resets: bool = True,
    ):
        if min_buffer_bytes is not None and not 1 <= min_buffer_bytes <= MIN_RX_BUFFER_BYTES:
            raise ValueError(
                f"min_buffer_bytes must be in 1..{MIN_RX_BUFFER_BYTES}, not {min_buffer_bytes!r}"
            )
        super().__init__(make_dut, resets=resets)
        self._min_buffer_bytes = min_buffer_bytes
        self._prefetch = prefetch

    def build(self, m):
        dut = self._make_dut(
            data_width=32, addr_width=CHANNEL_ADDR_WIDTH, max_prefetch=self._prefetch
        )
        min_length = MIN_RX_BUFFER_BYTES
        if self._min_buffer_bytes is None:
            m.submodules.dut = self.elaborate_dut(dut)
        else:
            min_length = self._min_buffer_bytes
            with mock.patch.object(rx_channel, "MIN_RX_BUFFER_BYTES", min_length):
                m.submodules.dut = self.elaborate_dut(dut)
        ring_base, ring_size, read_props, write_props = self.ring(m, dut)
        # The command the channel's writer serves (its W beats follow it: the writer takes
        # the next only when every B of this one is in). Its layout is {addr, length (16),
        # kind (1: a write-back), eop, ioc, sop}; the width check keeps a changed layout
        # from silently pointing at another bit.
        current = internal_signal(m.submodules.dut, "cur", within="core")
        if len(current) != CHANNEL_ADDR_WIDTH + 20:
            raise LookupError(f"RX channel's 'cur' is {len(current)} bits, not addr+20")
        writeback = current[CHANNEL_ADDR_WIDTH + 16]
        m.d.comb += [
            dut.regs.prefetch.eq(self._prefetch),
            dut.wait_for_buffers.eq(self.any_seq(1, "wait_for_buffers")),
        ]
        # The frame's cause and its PTP timestamp (any frame may come with one: a 16-byte
        # EOP write-back) are free: they ride in ``i``'s payload (meta).
        free_stream_source(self, m, dut.i, "i")
        if not self.CHECK_OWNERSHIP:
            return dut, None, read_props
        ownership = RingOwnershipProperties(
            read_props=read_props,
            write_props=write_props,
            read_bus=dut.axi_read,
            write_bus=dut.axi_write,
            ring_base=ring_base,
            ring_size=ring_size,
            min_length=min_length,
            max_ring=MAX_RING,
            writeback_writes=writeback,
            timestamp_word0=True,
            released=self.released(m, dut),
        )
        # Elaborated here, so that its assertions are made while build runs (a split
        # induction step files them under their group: hdl/formal/goals.py).
        m.submodules.ownership = elaborated(ownership)
        self.covers(m, dut, ownership, write_props)
        return dut, ownership, read_props

    def covers(self, m, dut, ownership, write_props):
        """The cases this proof shows reachable."""
        if self._min_buffer_bytes is None:
            m.d.comb += [
                # A frame's data written into an owned buffer; the frame complete, its EOP
                # descriptor written back and answered OKAY.
                Cover(write_props.w_accepted & (ownership.owned != 0) & ~ownership.handed_back),
                Cover(dut.events.frame_done),
            ]
        else:
            # The channel's data path (its FSM, found by name) in "Next": a buffer filled
            # to its last byte, its data queued; in "Spill": the frame goes on beyond it.
            data_state = internal_signal(m.submodules.dut, "data_state", within="core")
            m.d.comb += [
                Cover(in_state(data_state, "Next")),
                Cover(in_state(data_state, "Spill")),
            ]


class TxOwnershipHarness(_ChannelHarness):
    """:class:`~macdma.hdl.dma.tx_channel.TxDmaChannel` (two descriptors prefetched, any
    PREFETCH) with the TX FIFO side taking data at any pace. The channel's reader serves
    descriptor fetches and fragment reads; the channel's own ``reading_fragment`` register
    tells the checker which one an AR or R beat is. With ``resets`` (the default) CTRL.run,
    CTRL.reset and ``hold`` (the SoC's, while it resets the TX FIFO) are free in every
    cycle, as for RX."""

    def __init__(self, make_dut: Callable = TxDmaChannel, *, resets: bool = True):
        super().__init__(make_dut, resets=resets)

    def build(self, m):
        dut = self._make_dut(data_width=32, addr_width=CHANNEL_ADDR_WIDTH, max_prefetch=2)
        m.submodules.dut = fragment = self.elaborate_dut(dut)
        ring_base, ring_size, read_props, write_props = self.ring(m, dut)
        m.d.comb += [
            dut.regs.prefetch.eq(self.any_const(len(dut.regs.prefetch), "prefetch")),
            dut.o.ready.eq(self.any_seq(1, "o_ready")),
            # PTP: timestamps may come back at any time, with any request number.
            dut.ts_valid.eq(self.any_seq(1, "ts_valid")),
            dut.ts_id.eq(self.any_seq(len(dut.ts_id), "ts_id")),
        ]
        if self._resets:
            # The SoC holds the channel while it resets the TX FIFO after a CTRL.reset: any
            # hold, in any cycle.
            m.d.comb += dut.hold.eq(self.any_seq(1, "hold"))
        reading_fragment = internal_signal(fragment, "reading_fragment", within="core")
        if not self.CHECK_OWNERSHIP:
            return dut, None, read_props
        m.submodules.ownership = ownership = RingOwnershipProperties(
            read_props=read_props,
            write_props=write_props,
            read_bus=dut.axi_read,
            write_bus=dut.axi_write,
            ring_base=ring_base,
            ring_size=ring_size,
            min_length=1,
            max_ring=MAX_RING,
            fragment_reads=reading_fragment,
            buffer_writes=False,
            timestamp_word0=True,
            released=self.released(m, dut),
        )
        self.covers(m, ownership, read_props, reading_fragment)
        return dut, ownership, read_props

    def covers(self, m, ownership, read_props, reading_fragment):
        """The cases this proof shows reachable."""
        # The fragment read of an owned descriptor (step 11); its write-back (step 18),
        # beyond the bounded depth this proof can afford (docs/formal.md).
        m.d.comb += [
            Cover(read_props.ar_accepted & reading_fragment & (ownership.owned != 0)),
            # A descriptor written back: the W beat of its last word (OWN cleared).
            Cover(ownership.handed_back),
        ]


class RxMultiBufferHarness(RxOwnershipHarness):
    """:class:`RxOwnershipHarness` with buffers from 4 bytes and two descriptors per fetch,
    its inputs narrowed to the traffic that takes a frame across two buffers soonest: every
    descriptor fetched owned with a 4-byte buffer (its address still any), AXI slaves
    always ready, R beats as soon as allowed, every response OKAY, good frames that wait
    for a buffer rather than drop, no timestamps. Narrowing inputs only removes traces: a
    trace found here is one of the unconstrained channel, and the ownership checker, run
    to a depth the unconstrained proof cannot afford, watches the write-backs of both
    buffers. Cover: the EOP write-back of a frame that began in another buffer, answered
    OKAY, after two hand-backs (the first buffer's and this one's)."""

    def __init__(self, make_dut: Callable = RxDmaChannel, *, resets: bool = False):
        # Without channel resets by default: with them free, the 36-step cover of a frame
        # written back whole took over 13 minutes (6 before); rx_ownership has them.
        super().__init__(make_dut, min_buffer_bytes=4, prefetch=2, resets=resets)

    def build(self, m):
        dut, ownership, read_props = super().build(m)
        usable = Signal(Descriptor)
        m.d.comb += [usable.own.eq(1), usable.length.eq(4)]
        narrow_to_usable_descriptors(m, dut, read_props, usable)
        m.d.comb += [
            Assume(dut.i.p.meta.cause == RxError.NONE),
            Assume(dut.wait_for_buffers),
            Assume(~dut.i.p.meta.ts_valid),
        ]
        # The command the writer serves (layout: see RxOwnershipHarness.build).
        current = internal_signal(m.submodules.dut, "cur", within="core")
        first_buffer = current[CHANNEL_ADDR_WIDTH + 19]
        handed_back = Signal(2)
        with m.If(ownership.handed_back & (handed_back != 3)):
            m.d.sync += handed_back.eq(handed_back + 1)
        m.d.comb += Cover(dut.events.frame_done & ~first_buffer & (handed_back >= 2))


def narrow_to_tx_writeback(m, dut, read_props, *, unowned_too: bool = False) -> None:
    """Narrow a TX harness's inputs to the traffic that reaches a write-back soonest (the
    deep base case of :class:`~.channel_induction.TxInductionBaseCaseHarness`): every
    descriptor fetched owned, a one-frame 4-byte fragment (SOP and EOP, its address still
    any), or with ``unowned_too`` also one without OWN (the ring's end); AXI slaves always
    ready, R beats as soon as allowed, every response OKAY, the TX FIFO side always taking
    data, no timestamps. A trace found here is one of the unconstrained channel."""
    usable = Signal(Descriptor)
    m.d.comb += [usable.own.eq(1), usable.length.eq(4), usable.sop.eq(1), usable.eop.eq(1)]
    # The reader also reads fragments, whose data stays any.
    fetching = ~internal_signal(m.submodules.dut, "reading_fragment", within="core")
    narrow_to_usable_descriptors(m, dut, read_props, usable, fetching, unowned_too=unowned_too)
    m.d.comb += [Assume(dut.o.ready), Assume(~dut.ts_valid)]


class RxHaltHarness(RxOwnershipHarness):
    """:class:`RxOwnershipHarness` on descriptors it must refuse: word 3 of every descriptor
    fetched is OWN with a buffer of any length below the channel's 64-byte minimum (0
    included), words 0..2 any, every read answered OKAY, and frames wait for a buffer
    (``wait_for_buffers``); the AXI slaves' timing, the ring, the doorbells and the frames
    (errors and timestamps included) stay free. The channel must stop rather than use such a
    descriptor: once one is fetched it halts with RX_BUFFER_TOO_SMALL within :attr:`BOUND`
    cycles in which a frame's data waits, writes nothing at all (no AW: neither buffer nor
    write-back), and starts no read once halted. Cover: the halt."""

    #: Cycles with a frame's data waiting, from the fetch of a too-small descriptor to the
    #: halt (tight: 2 fails).
    BOUND = 3

    def __init__(self, make_dut: Callable = RxDmaChannel):
        # Running, never reset: the halt is what is proven, and only a reset ends it.
        super().__init__(make_dut, resets=False)

    def build(self, m):
        dut, _ownership, read_props = super().build(m)
        fetching_word3, word3 = _descriptor_word3(dut, read_props)
        m.d.comb += [
            Assume(~fetching_word3 | (word3.own & (word3.length < MIN_RX_BUFFER_BYTES))),
            Assume(dut.axi_read.rresp == 0),
            # Without flow control a frame that finds no usable buffer may be dropped, its
            # data taken without a buffer, for as long as it lasts.
            Assume(dut.wait_for_buffers),
        ]
        _assert_halts(
            self,
            m,
            dut,
            fetched=fetching_word3 & read_props.r_accepted,
            # A frame's data waits (a lost frame's marker, a last beat of no bytes, is taken
            # without a buffer).
            waiting=dut.i.valid & ~(dut.i.p.last & (dut.i.p.count == 0)),
            code=ERROR_CODES["RX_BUFFER_TOO_SMALL"],
            bound=self.BOUND,
        )

    def covers(self, m, dut, ownership, write_props):
        """The halt, covered by :func:`_assert_halts`."""


class TxHaltHarness(TxOwnershipHarness):
    """:class:`TxOwnershipHarness` on descriptors it must refuse: word 3 of every descriptor
    fetched is OWN with a fragment length of 0 (its flags any), words 0..2 any, every read
    answered OKAY, no timestamps; the AXI slaves' timing, the ring, PREFETCH, the doorbells
    and the TX FIFO side stay free. The channel must stop rather than use such a descriptor:
    once one is fetched it halts with ZERO_LENGTH_DESC within :attr:`BOUND` cycles in which
    no read is in flight (the rest of the fetch comes first, at the slave's pace), reads no
    fragment (the ownership checker), writes nothing (no AW), and starts no read once
    halted. Cover: the halt."""

    #: Cycles with no read in flight, from the fetch of a zero-length descriptor to the halt
    #: (tight: 2 fails).
    BOUND = 3

    def __init__(self, make_dut: Callable = TxDmaChannel):
        # Running, never reset: the halt is what is proven, and only a reset ends it.
        super().__init__(make_dut, resets=False)

    def build(self, m):
        dut, _ownership, read_props = super().build(m)
        fetching = ~internal_signal(m.submodules.dut, "reading_fragment", within="core")
        fetching_word3, word3 = _descriptor_word3(dut, read_props, fetching)
        m.d.comb += [
            Assume(~fetching_word3 | (word3.own & (word3.length == 0))),
            Assume(dut.axi_read.rresp == 0),
            # A timestamp answers a frame sent: there is none here.
            Assume(~dut.ts_valid),
        ]
        _assert_halts(
            self,
            m,
            dut,
            fetched=fetching_word3 & read_props.r_accepted,
            waiting=(read_props.outstanding == 0) & ~dut.axi_read.arvalid,
            code=ERROR_CODES["ZERO_LENGTH_DESC"],
            bound=self.BOUND,
        )

    def covers(self, m, ownership, read_props, reading_fragment):
        """The halt, covered by :func:`_assert_halts`."""


def _assert_halts(harness, m, dut, *, fetched, waiting, code, bound) -> None:
    """A channel that has fetched a descriptor it must refuse (``fetched``: the R beat of its
    word 3) stops: halted with ``code`` within ``bound`` cycles in which ``waiting`` holds
    from then on, with STATUS.error_code = ``code`` whenever halted, no AW ever, and no AR
    started once halted. Covers the halt."""
    refused = Signal()
    with m.If(fetched):
        m.d.sync += refused.eq(1)
    waited = Signal(range(bound + 2))
    with m.If(refused & waiting & ~dut.regs.status.halted & (waited <= bound)):
        m.d.sync += waited.eq(waited + 1)
    halted_before = harness.past(dut.regs.status.halted, "halted")
    arvalid_before = harness.past(dut.axi_read.arvalid, "arvalid")
    m.d.comb += [
        Assert(waited <= bound),
        Assert(~dut.regs.status.halted | (dut.regs.status.error_code == code)),
        Assert(~dut.axi_write.awvalid),
        Assert(~(halted_before & dut.axi_read.arvalid & ~arvalid_before)),
        Cover(dut.regs.status.halted & (dut.regs.status.error_code == code)),
    ]


def narrow_to_usable_descriptors(
    m, dut, read_props, usable, fetching=None, *, unowned_too: bool = False
) -> None:
    """Narrow a channel harness's inputs (:class:`RxMultiBufferHarness`,
    :func:`narrow_to_tx_writeback`): a ring of three entries (two posted at most), word 3 of
    every descriptor fetched (see :func:`_descriptor_word3`) equal to ``usable``'s (words
    0..2 still any), or with ``unowned_too`` any word 3 without OWN, AXI slaves always
    ready, R beats as soon as a read is outstanding, every response OKAY."""
    fetching_word3, word3 = _descriptor_word3(dut, read_props, fetching)
    allowed = word3.as_value()[96:] == usable.as_value()[96:]
    if unowned_too:
        allowed |= ~word3.own
    m.d.comb += [
        Assume(dut.regs.ring_size == 3),
        Assume(dut.axi_read.arready & (dut.axi_read.rresp == 0)),
        Assume(dut.axi_read.rvalid == (read_props.outstanding != 0)),
        Assume(~fetching_word3 | allowed),
        Assume(dut.axi_write.awready & dut.axi_write.wready & (dut.axi_write.bresp == 0)),
    ]


def _descriptor_word3(dut, read_props, fetching=None):
    """``(on_bus, word3)``: whether an R beat of a descriptor's word 3 is on the channel's
    read bus (any R beat at offset 12 of its 16 bytes, and ``fetching`` if given: TX also
    reads fragments), and that beat's data as a :class:`Descriptor` view (words 0..2 zero)."""
    on_bus = dut.axi_read.rvalid & (read_props.r_addr[2:4] == 3)
    if fetching is not None:
        on_bus &= fetching
    return on_bus, Descriptor(Cat(Const(0, 96), dut.axi_read.rdata))


class _ResetWindDown:
    """Mixin of an ownership harness (resets free, every other input as free as there) that
    proves, for ever, that a channel reset leaves nothing of the channel on the bus: in the
    cycle the driver sees the reset over (:meth:`_ChannelHarness.released`) no AR waits and
    no R beat is owed, no AW waits, no W beat and no B is owed. So no burst issued before a
    reset lands after it, in a buffer or descriptor the driver has re-posted.

    Proven by k-induction, with linking invariants: the reset's own state (a driver still
    waiting sees a new strobe, the reset's register, or a core reset since the strobe; the
    last two only while it waits); a core reset since the strobe holds nothing in its movers
    until the driver sees the reset over (one cycle on RX, the whole wind-down on TX); the
    reader's invariants (:func:`~.mover_invariants.reader_linking_invariants`) and the
    writer's counts
    (:func:`~.mover_invariants.writer_count_invariants`). The writer's AXI4 master rules are
    assumed here (proven on the writer itself, ``axi4_write_master``), the reader's asserted.
    Cover: a reset is over after a write that was on the bus when it was asked for."""

    WRITE_RULES = "neither"
    READ_RULES = "neither"
    CHECK_OWNERSHIP = False

    def build(self, m):
        dut, ownership, read_props = super().build(m)
        channel = m.submodules.dut
        released = self.released(m, dut)
        reader = mover_fragment(channel, "core.reader", "reader_state")
        writer = mover_fragment(channel, "core.writer", "writer_state")
        reader_count_invariants(m, reader, read_props, dut.axi_read)
        writer_count_invariants(m, writer, self.write_props_fragment, dut.axi_write)
        (read_bursts,) = read_props.bursts
        aw_open = internal_signal(self.write_props_fragment, "aw_open0")
        w_waiting = internal_signal(self.write_props_fragment, "w_bursts_level")
        w_done_open = internal_signal(self.write_props_fragment, "w_done_open0")
        # The channel's reset (DmaChannel.add_reset): its `resetting` register and the cycle
        # its core is reset (`clear`).
        resetting = internal_signal(channel, "resetting", domain="sync")
        clear = internal_signal(channel, "clear", domain="comb")
        # From the cycle after the core's reset until the driver sees the reset over: one
        # cycle on RX; on TX as long as the reset winds down (STATUS.resetting stays 1
        # until the TX FIFO's flush is over and the counters have taken its frames).
        self.cleared = cleared = Signal(name="cleared")
        with m.If(clear):
            m.d.sync += cleared.eq(1)
        with m.Elif(released | dut.regs.ctrl.reset):
            m.d.sync += cleared.eq(0)
        reader_in_flight = internal_signal(reader, "in_flight")
        writer_in_flight = internal_signal(writer, "in_flight")
        writer_state = internal_signal(writer, "writer_state")
        m.d.comb += [
            Assert(~self.reset_waiting | dut.regs.ctrl.reset | resetting | cleared),
            Assert(~(resetting | cleared) | self.reset_waiting),
        ]
        with m.If(cleared):
            m.d.comb += [
                Assert(reader_in_flight == 0),
                Assert(writer_in_flight == 0),
                Assert(in_state(writer_state, "Idle")),
            ]
        with m.If(released):
            m.d.comb += [
                Assert((read_bursts.level == 0) & ~dut.axi_read.arvalid),
                Assert((aw_open == 0) & ~dut.axi_write.awvalid),
                Assert((w_waiting == 0) & (w_done_open == 0) & ~dut.axi_write.wvalid),
            ]
        # A write on the bus when the reset was asked for, and the reset over after it.
        write_at_strobe = Signal()
        with m.If(dut.regs.ctrl.reset & (aw_open != 0)):
            m.d.sync += write_at_strobe.eq(1)
        m.d.comb += Cover(released & write_at_strobe)
        return dut, ownership, read_props

    def covers(self, *args):
        """The cover is :meth:`build`'s."""


class RxResetWindDownHarness(_ResetWindDown, RxOwnershipHarness):
    """:class:`_ResetWindDown` on :class:`RxOwnershipHarness` (resets free)."""

    def __init__(self, make_dut: Callable = RxDmaChannel):
        super().__init__(make_dut, resets=True)


class TxResetWindDownHarness(_ResetWindDown, TxOwnershipHarness):
    """:class:`_ResetWindDown` on :class:`TxOwnershipHarness` (resets free)."""

    def __init__(self, make_dut: Callable = TxDmaChannel):
        super().__init__(make_dut, resets=True)
