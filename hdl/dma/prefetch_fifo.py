"""``AsyncPrefetchFifo``: a dual-clock FIFO whose read side never lets ``ready`` reach the RAM.

Amaranth's ``AsyncFIFO`` addresses its block RAM with the *next* read pointer, so the
consumer's read enable passes through the pointer increment into the RAM address in the
same cycle. A consumer whose ``ready`` settles late (a MAC at 125 MHz) then makes a path
that an ECP5 at speed grade 6 cannot close. Here the RAM is read ahead into a small queue
instead: its address is a register, its read is started from registered state only, its
data goes into a register before anything else, and the consumer takes words from the
queue, whose first word is a register too, so that taking it (``ready``) only enables
registers.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from ..gray import gray_decode, gray_encode

__all__ = ["AsyncPrefetchFifo", "QUEUE_DEPTH"]

#: Words read ahead of the consumer. Four keep a word moving on every read-side cycle: a
#: read takes two cycles to reach the queue (the RAM, then a register: an ECP5 block RAM
#: at speed grade 6 needs most of an 8 ns cycle to put its data out), so a read is
#: started while up to three words wait.
QUEUE_DEPTH = 4


class AsyncPrefetchFifo(wiring.Component):
    """Parameters
    ----------
    width : int
        Bits per word.
    depth : power of two, >= 4
        Words of RAM. Up to :data:`QUEUE_DEPTH` more wait in the read-side queue.
    w_domain, r_domain : str
        Clock domains of the write side and of the read side. Reset both together (the
        write side's view of the read pointer is undefined while only one is in reset).

    Members
    -------
    w_en, w_data : In; w_rdy : Out, ``w_domain``
        A word is written when ``w_en & w_rdy``. ``w_rdy`` is registered state only.
    w_level : Out, ``w_domain``
        Words in the RAM as the write side sees it: lags reads, never under-counts; the
        words already moved to the read-side queue are not counted.
    r : Out(stream.Signature(width)), ``r_domain``
        The words, in order. ``valid`` and ``payload`` come from registers; ``ready`` only
        updates the queue's registers.
    """

    def __init__(self, width: int, depth: int, *, w_domain: str, r_domain: str):
        if not isinstance(depth, int) or depth < 4 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two of at least 4, not {depth!r}")
        self._width = width
        self._depth = depth
        self._w_domain = w_domain
        self._r_domain = r_domain
        super().__init__(
            {
                "w_en": In(1),
                "w_data": In(width),
                "w_rdy": Out(1),
                "w_level": Out(range(depth + 1)),
                "r": Out(stream.Signature(width)),
            }
        )

    @property
    def depth(self) -> int:
        return self._depth

    def elaborate(self, platform):
        m = Module()
        abits = ceil_log2(self._depth)
        pbits = abits + 1  # one more bit tells a full RAM from an empty one
        w_domain, r_domain = self._w_domain, self._r_domain

        m.submodules.storage = storage = Memory(shape=self._width, depth=self._depth, init=[])
        w_port = storage.write_port(domain=w_domain)
        r_port = storage.read_port(domain=r_domain, transparent_for=())

        # ---- write side -----------------------------------------------------------------
        produce = Signal(pbits)
        produce_gray = Signal(pbits)
        fetch_gray_w = Signal(pbits)
        fetched_w = Signal(pbits)
        m.d[w_domain] += fetched_w.eq(gray_decode(fetch_gray_w))
        m.d.comb += [
            self.w_level.eq(produce - fetched_w),
            self.w_rdy.eq(self.w_level != self._depth),
            w_port.addr.eq(produce[:abits]),
            w_port.data.eq(self.w_data),
            w_port.en.eq(self.w_en & self.w_rdy),
        ]
        with m.If(self.w_en & self.w_rdy):
            m.d[w_domain] += [
                produce.eq(produce + 1),
                produce_gray.eq(gray_encode(produce + 1, pbits)),
            ]

        # ---- read side: read the RAM ahead into the queue ---------------------------------
        fetch = Signal(pbits)  # next RAM word to read; the RAM's address register
        fetch_gray = Signal(pbits)
        produce_gray_r = Signal(pbits)
        m.submodules.produce_sync = FFSynchronizer(
            produce_gray, produce_gray_r, o_domain=r_domain, reset_less=False
        )
        m.submodules.fetch_sync = FFSynchronizer(
            fetch_gray, fetch_gray_w, o_domain=w_domain, reset_less=False
        )

        m.submodules.queue = queue = DomainRenamer(r_domain)(
            _ReadAheadQueue(self._width, QUEUE_DEPTH)
        )
        answering = Signal()  # the read started last cycle is on r_port.data
        arriving = Signal()  # the read started two cycles ago is in ``ram_data``
        ram_data = Signal(self._width)
        start_read = Signal()
        in_flight = answering + arriving
        m.d.comb += [
            start_read.eq((fetch_gray != produce_gray_r) & (queue.level + in_flight < QUEUE_DEPTH)),
            # Always enabled: the RAM reads the word at ``fetch`` on every cycle, and only
            # a started read's data is kept, so no logic sits before the RAM's enable.
            r_port.addr.eq(fetch[:abits]),
            r_port.en.eq(1),
            queue.w_en.eq(arriving),
            queue.w_data.eq(ram_data),
        ]
        m.d[r_domain] += [
            answering.eq(start_read),
            arriving.eq(answering),
            ram_data.eq(r_port.data),
        ]
        with m.If(start_read):
            m.d[r_domain] += [fetch.eq(fetch + 1), fetch_gray.eq(gray_encode(fetch + 1, pbits))]

        m.d.comb += [
            self.r.valid.eq(queue.r_valid),
            self.r.payload.eq(queue.r_data),
            queue.r_en.eq(self.r.ready),
        ]
        return m


class _ReadAheadQueue(Elaboratable):
    """The read-ahead queue: ``depth`` words, the first in a register (``r_valid``,
    ``r_data``) and the others in a small LUT RAM behind it. ``r_en`` (take the first) only
    enables that register and the pointers; a word written while the register is free, or
    being freed, and nothing waits behind it goes straight into it, so a word is readable
    the cycle after it is written, as from a FIFO read without a register. ``level`` (words
    held) is registered state only. Never written when full.

    The LUT RAM's write enable is ``w_en`` alone: every word is written into the free slot
    at ``w_ptr`` and kept there (the pointer moves on) only if it does not go straight into
    the register. So ``r_en``, which comes from the consumer late in the cycle, reaches
    registers only and never the RAM's write enable (a path the Colorlight's tx clock
    missed 125 MHz on, 8.28 ns, when this was an Amaranth ``SyncFIFO``)."""

    def __init__(self, width: int, depth: int):
        self.w_en = Signal()
        self.w_data = Signal(width)
        self.r_valid = Signal()
        self.r_data = Signal(width)
        self.r_en = Signal()
        self.level = Signal(range(depth + 1))
        self._width = width
        self._depth = depth

    def elaborate(self, platform):
        m = Module()
        slots = self._depth - 1
        m.submodules.behind = behind = Memory(shape=self._width, depth=slots, init=[])
        write = behind.write_port()
        read = behind.read_port(domain="comb")
        w_ptr = Signal(range(slots))  # the free slot the next word is written into
        r_ptr = Signal(range(slots))  # the oldest word behind the register
        waiting = Signal(range(slots + 1))  # words behind the register

        # Behind the register holds words only while the register holds one too (a word
        # goes behind only if the register stays full), so the slot at ``w_ptr`` is free
        # whenever a word may come: the queue is never written when full.
        head_free = ~self.r_valid | self.r_en  # the register is free for the next cycle
        keep = self.w_en & ~(head_free & (waiting == 0))  # the word stays behind
        take = head_free & (waiting != 0)  # the oldest word behind moves to the register
        m.d.comb += [
            write.addr.eq(w_ptr),
            write.data.eq(self.w_data),
            write.en.eq(self.w_en),
            read.addr.eq(r_ptr),
            self.level.eq(waiting + self.r_valid),
        ]
        with m.If(head_free):
            m.d.sync += [
                self.r_data.eq(Mux(waiting != 0, read.data, self.w_data)),
                self.r_valid.eq((waiting != 0) | self.w_en),
            ]
        with m.If(keep):
            m.d.sync += w_ptr.eq(Mux(w_ptr == slots - 1, 0, w_ptr + 1))
        with m.If(take):
            m.d.sync += r_ptr.eq(Mux(r_ptr == slots - 1, 0, r_ptr + 1))
        m.d.sync += waiting.eq(waiting + keep - take)
        return m
