"""Clock-crossing proof of the RX frame FIFO (:class:`~macdma.hdl.dma.rx_fifo.RxFrameFifo`).

The RX FIFO crosses from the MAC's ``rx`` clock to the DMA's ``sync`` clock through
Amaranth's ``AsyncFIFOBuffered`` and two Gray counters of its own (``taken``, the words the
DMA took, back to ``rx``; ``overflow_gray``, frames cut short, forward to ``sync``). The
harness runs it between two free, unrelated clocks (``multiclock on``) with any bytes from
the MAC and any back-pressure from the DMA, at 4 words of storage (the shipped minimum is
512; the parameter check is relaxed for the proof only, the logic is the same at any depth).
"""

from collections.abc import Callable
from unittest import mock

from amaranth import *
from amaranth.hdl import Assert, Assume, Cover

from ..dma import rx_fifo
from ..dma.rx_fifo import RxFrameFifo
from .gray import binary_of, distance, gray_of, in_order, one_bit_steps
from .internal import elaborated, internal_signal

__all__ = ["RxFifoCrossingHarness", "RX_FIFO_DEPTH_BYTES", "small_rx_fifo"]

#: Storage of the proof's RX FIFO: 16 bytes, 4 words of 32 bits (3-bit pointers in the
#: AsyncFIFO, 4-bit word counts), so every pointer wraps within a few dozen cycles.
RX_FIFO_DEPTH_BYTES = 16
RX_FIFO_DATA_WIDTH = 32


def _check_small_fifo_params(data_width, depth_bytes):
    if data_width not in (32, 64) or depth_bytes < 8 or depth_bytes & (depth_bytes - 1):
        raise ValueError(f"No RX FIFO of {data_width} bits x {depth_bytes} bytes for the proof")


def small_rx_fifo(make_dut: Callable = RxFrameFifo, depth_bytes: int = RX_FIFO_DEPTH_BYTES):
    """``make_dut(32, depth_bytes)`` with the shipped 2048-byte minimum lifted (the proof
    needs a FIFO whose pointers wrap within its depth; nothing in the logic depends on the
    minimum, which exists for line-rate frames)."""
    with mock.patch.object(rx_fifo, "check_fifo_params", _check_small_fifo_params):
        return make_dut(RX_FIFO_DATA_WIDTH, depth_bytes)


class RxFifoCrossingHarness(Elaboratable):
    """The RX frame FIFO between two free-running, unrelated clocks (``rx`` for the MAC,
    ``sync`` for the DMA), any MAC bytes, any DMA back-pressure.

    Properties: every Gray pointer that crosses (the AsyncFIFO's ``produce_w_gry`` and
    ``consume_r_gry``, the FIFO's own ``taken_gray`` and ``overflow_gray``) changes at most
    one bit per clock of its domain; the AsyncFIFO never holds more words than its memory
    nor fewer than none; and the overflow logic never hands it a word it has no room for
    (``w_en`` only with ``w_rdy``: a word the AsyncFIFO would drop silently), the property
    the room counting across the crossing is for.
    """

    def __init__(self, make_dut: Callable = RxFrameFifo):
        self._make_dut = make_dut
        self._free = []
        self._rx = ClockDomain("rx")
        self._sync = ClockDomain("sync")

    @property
    def ports(self):
        return [self._rx.clk, self._rx.rst, self._sync.clk, self._sync.rst, *self._free]

    def _any(self, width, name):
        signal = Signal(width, name=name)
        self._free.append(signal)
        return signal

    def elaborate(self, platform):
        m = Module()
        m.domains.rx = self._rx
        m.domains.sync = self._sync
        m.d.comb += [Assume(~self._rx.rst), Assume(~self._sync.rst)]
        dut = small_rx_fifo(self._make_dut)
        m.submodules.fifo = fragment = elaborated(dut)
        m.d.comb += [
            dut.i.valid.eq(self._any(1, "i_valid")),
            dut.i.payload.eq(self._any(len(dut.i.payload.as_value()), "i_payload")),
            dut.o.ready.eq(self._any(1, "o_ready")),
        ]

        def inner(name, within=None):
            path = "words.unbuffered" + (f".{within}" if within else "")
            return internal_signal(fragment, name, within=path)

        produce = inner("produce_w_bin")
        consume = inner("consume_r_bin")
        depth = dut.memory_words
        for domain, signal, name in (
            ("rx", inner("produce_w_gry"), "produce_w_gry"),
            ("sync", inner("consume_r_gry"), "consume_r_gry"),
            ("sync", internal_signal(fragment, "taken_gray"), "taken_gray"),
            ("rx", internal_signal(fragment, "overflow_gray"), "overflow_gray"),
        ):
            m.d.comb += Assert(one_bit_steps(m, domain, signal, name))

        # Words in the AsyncFIFO's memory: 0..depth, never "negative" (wrapped).
        level = Signal(len(produce), name="ram_level")
        # The word decided in the cycle before, written into the AsyncFIFO in this one.
        w_en = internal_signal(fragment, "w_en", domain="rxf")
        m.d.comb += [
            level.eq(produce - consume),
            Assert(level <= depth),
            Cover(level == depth),
            Cover(dut.o.valid & dut.o.ready & dut.o.p.last & dut.o.p.overflow),
            Cover(dut.o.valid & dut.o.ready & (produce[-1] != consume[-1])),
        ]
        # The room counted across the crossing is never more than there is: no word goes
        # to a full AsyncFIFO (which would drop it without a word to anyone).
        m.d.comb += Assert(~w_en | ~inner("w_full"))
        self._linking_invariants(m, fragment, inner, produce, consume, depth)
        self._room_invariants(m, fragment, inner, produce, w_en, depth)
        return m

    @staticmethod
    def _linking_invariants(m, fragment, inner, produce, consume, depth):
        """What k-induction needs to know of the reachable states: the start-up resets and
        the pointer copies on their way through the synchronizers."""

        def stages(within):
            return [internal_signal(fragment, f"stage{i}", within=within) for i in (0, 1)]

        # The reset synchronizers start asserted and only fall (the resets are held low),
        # stage 0 first; the sync side's two follow the rx side's (asynchronously set).
        sys_rst = stages("sys_reset_sync")
        flush = stages("flush_sync")
        read_rst = stages("words.unbuffered.rst_cdc")
        for first, second in (sys_rst, flush, read_rst):
            m.d.comb += Assert(~first | second)
        with m.If(sys_rst[1]):
            m.d.comb += Assert(flush[0] & flush[1] & read_rst[0] & read_rst[1])

        # Each Gray register encodes its binary counter.
        taken = internal_signal(fragment, "taken", domain="sync")
        overflow_count = internal_signal(fragment, "overflow_count")
        m.d.comb += [
            Assert(inner("produce_w_gry") == gray_of(produce)),
            Assert(inner("consume_r_gry") == gray_of(consume)),
            Assert(internal_signal(fragment, "taken_gray") == gray_of(taken)),
            Assert(internal_signal(fragment, "overflow_gray") == gray_of(overflow_count)),
        ]
        # While a reset is in progress, what it resets is still at its start value.
        produce_copies = [binary_of(inner(f"stage{i}", "produce_cdc")) for i in (1, 0)]
        consume_copies = [
            inner("consume_w_bin"),
            *(binary_of(inner(f"stage{i}", "consume_cdc")) for i in (1, 0)),
        ]
        with m.If(sys_rst[1]):
            m.d.comb += [Assert(produce == 0), Assert(overflow_count == 0)]
        with m.If(flush[1]):
            m.d.comb += Assert(taken == 0)
        with m.If(read_rst[0]):
            m.d.comb += Assert(produce_copies[1] == 0)
        with m.If(read_rst[1]):
            m.d.comb += [Assert(produce_copies[0] == 0), Assert(consume == 0)]
            m.d.comb += [Assert(copy == 0) for copy in consume_copies]
        # Every copy of a pointer in a synchronizer is a value the pointer had: the copies
        # and the pointers are in order, no further apart than the memory is deep.
        m.d.comb += [
            Assert(in_order(*consume_copies, consume, *produce_copies, produce)),
            Assert(distance(consume_copies[0], produce) <= depth),
        ]

    @staticmethod
    def _room_invariants(m, fragment, inner, produce, w_en, capacity):
        """What induction needs for the room property: every word decided is written, every
        word the DMA took was read out of the AsyncFIFO, and the rx side's copies of
        ``taken`` are snapshots no newer than the copies of the AsyncFIFO's read pointer."""
        bits = len(produce)
        written = internal_signal(fragment, "written")
        taken = internal_signal(fragment, "taken", domain="sync")
        buffered = internal_signal(fragment, "r_rdy", within="words", domain="sync")
        flush = [internal_signal(fragment, f"stage{i}", within="flush_sync") for i in (0, 1)]
        read_rst = [
            internal_signal(fragment, f"stage{i}", within="words.unbuffered.rst_cdc")
            for i in (0, 1)
        ]
        m.d.comb += [
            Assert(flush[0] == read_rst[0]),
            Assert(flush[1] == read_rst[1]),
            Assert((written - w_en)[:bits] == produce),
            Assert((taken + buffered)[:bits] == inner("consume_r_bin")),
        ]
        taken_copies = []
        for i in (0, 1):
            taken_copy = binary_of(internal_signal(fragment, f"stage{i}", within="taken_sync"))
            consume_copy = binary_of(inner(f"stage{i}", "consume_cdc"))
            m.d.comb += Assert(distance(taken_copy[:bits], consume_copy) <= 1)
            taken_copies.insert(0, taken_copy)
        # The rx side's copies of ``taken``, oldest first: ``taken_rx``, the half-decoded
        # pair, the synchronizer's stages; the room decision's ``used_q`` was computed from
        # a copy no newer than ``taken_rx``, and its flags from one older still.
        taken_rx = internal_signal(fragment, "taken_rx")
        taken_high = internal_signal(fragment, "taken_high")
        taken_low_gray = internal_signal(fragment, "taken_low_gray")
        split = len(taken_low_gray)
        taken_halves = Cat(binary_of(taken_low_gray) ^ taken_high[0].replicate(split), taken_high)
        used_q = internal_signal(fragment, "used_q")
        wrote_before = internal_signal(fragment, "wrote_before")
        count_bits = len(written)

        def count(value):  # a word count, modulo the counters' range
            return Value.cast(value)[:count_bits]

        m.d.comb += [
            Assert(
                in_order(
                    count(written - w_en - used_q),
                    taken_rx,
                    taken_halves,
                    *taken_copies,
                    taken,
                    count(written - w_en),
                )
            ),
            Assert(used_q <= capacity + 1),
            Assert(distance(taken_rx, written) <= capacity),
        ]
        for n in range(1, 5):
            flag = internal_signal(fragment, f"free_ge{n}")
            with m.If(flag):
                m.d.comb += Assert(
                    distance(taken_rx, count(written - w_en - wrote_before)) + n <= capacity
                )
