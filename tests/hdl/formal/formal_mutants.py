"""Mutants of the real components, one planted bug per property class, for
tests/hdl/formal/test_proofs.py.

Each mutant is the shipped component with one behaviour changed, built without copying it:
a subclass that adds a statement after the component's own (the last assignment wins in
Amaranth), swaps one helper function while it elaborates, or wraps it. None of this is
part of the shipped HDL.
"""

from contextlib import contextmanager
from unittest import mock

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.fifo import AsyncFIFOBuffered

from macdma.hdl.bus.axi4_arbiter import Axi4ReadArbiter, Axi4WriteArbiter
from macdma.hdl.bus.axi_lite import RESP_OKAY
from macdma.hdl.bus.csr_bank import CsrBank, field_port
from macdma.hdl.dma import axi_mover, channel, prefetch_fifo, rx_channel, rx_fifo
from macdma.hdl.dma.axi_reader import AxiBurstReader
from macdma.hdl.dma.axi_writer import AxiBurstWriter
from macdma.hdl.dma.bursts import next_burst_beats
from macdma.hdl.dma.descriptor import DESCRIPTOR_BYTES, WRITEBACK_FIRST_WORD, Descriptor
from macdma.hdl.dma.irq import IrqController
from macdma.hdl.dma.prefetch_fifo import AsyncPrefetchFifo
from macdma.hdl.dma.rx_channel import RxDmaChannel
from macdma.hdl.dma.rx_fifo import RxFrameFifo
from macdma.hdl.dma.tx_channel import TxDmaChannel


@contextmanager
def _patched(module, name, replacement):
    with mock.patch.object(module, name, replacement):
        yield


class ReaderDropsValid(AxiBurstReader):
    """ARVALID falls in any cycle the slave does not take it (VALID dropped before READY)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        with m.If(self.axi.arvalid & ~self.axi.arready):
            m.d.sync += self.axi.arvalid.eq(0)
        return m


def _no_page_split(addr, beats_left, cap, beat_bytes):
    """The burst rule as if every burst started a page: the 4 KiB limit never applies."""
    return next_burst_beats(addr & 0, beats_left, cap, beat_bytes)


class WriterWithoutPageSplit(AxiBurstWriter):
    """The writer's bursts ignore the 4 KiB boundary (a burst split missing)."""

    def elaborate(self, platform):
        with _patched(axi_mover, "next_burst_beats", _no_page_split):
            return super().elaborate(platform)


class WriterStrobesEveryLane(AxiBurstWriter):
    """Every W beat strobes all four lanes, also outside the buffer (first and last beat)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.axi.wstrb.eq(0b1111)
        return m


class ReadArbiterShowsEveryR(Axi4ReadArbiter):
    """Master 0 sees every R beat, also those of master 1's bursts (a routing error)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.i0.rvalid.eq(self.o.rvalid)
        return m


class WriteArbiterSendsMaster0Data(Axi4WriteArbiter):
    """The W data on the merged port is always master 0's, also in master 1's bursts."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += self.o.wdata.eq(self.i0.wdata)
        return m


class CsrBankOkayEverywhere(CsrBank):
    """Reads of undefined offsets answer OKAY instead of SLVERR."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        with m.If(self.bus.arvalid & self.bus.arready):
            m.d.sync += self.bus.rresp.eq(RESP_OKAY)
        return m


class CsrBankClearsAllStatus(CsrBank):
    """Any write clears every IRQ_STATUS bit, not only the bits written with 1."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        block, reg = self.regmap.lookup("IRQ_STATUS")
        with m.If(self.bus.wvalid & self.bus.wready):
            for fld in reg.fields:
                m.d.sync += field_port(self, block, reg, fld).eq(0)
        return m


class IrqIntervalOneUsShort(IrqController):
    """The rate limit times each interval one µs shorter than IRQ_MIN_INTERVAL."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += m.submodules.rate_limit.us.eq(self.regs.min_interval.us - 1)
        return m


def _binary_encode(value, width):
    return Value.cast(value)[:width]


def _binary_decode(value):
    return Value.cast(value)


class FifoWithBinaryPointers(AsyncPrefetchFifo):
    """The pointers cross the clock domains in plain binary instead of Gray code."""

    def elaborate(self, platform):
        with (
            _patched(prefetch_fifo, "gray_encode", _binary_encode),
            _patched(prefetch_fifo, "gray_decode", _binary_decode),
        ):
            return super().elaborate(platform)


class RxFifoWithBinaryCounters(RxFrameFifo):
    """The RX FIFO's own counters (``taken``, the overflow count) cross in plain binary."""

    def elaborate(self, platform):
        with (
            _patched(rx_fifo, "gray_encode", _binary_encode),
            _patched(rx_fifo, "gray_decode", _binary_decode),
        ):
            return super().elaborate(platform)


def _half_memory(*, width, depth, **kwargs):
    """An AsyncFIFOBuffered with half the memory asked for (one more than a power of 2)."""
    return AsyncFIFOBuffered(width=width, depth=(depth - 1) // 2 + 1, **kwargs)


class RxFifoCountsMissingRoom(RxFrameFifo):
    """The RX FIFO counts room for a memory twice the size of the one it has (the room
    counting across the crossing over-counts)."""

    def elaborate(self, platform):
        with _patched(rx_fifo, "AsyncFIFOBuffered", _half_memory):
            return super().elaborate(platform)


class _ReaderWithRewrittenWord3(wiring.Component):
    """An AxiBurstReader whose output shows each descriptor's word 3 as :meth:`rewrite`
    changes it, whatever memory holds. Every read command is counted from its first beat, so
    a descriptor fetch (16-byte aligned) is hit exactly; TX fragment data gets every fourth
    word rewritten too, which no property looks at."""

    def __init__(self, data_width, addr_width, *args, **kwargs):
        self._inner = AxiBurstReader(data_width, addr_width, *args, **kwargs)
        super().__init__(wiring.Signature(dict(self._inner.signature.members)))

    def rewrite(self, word3):
        """The 32-bit word 3 the channel sees for ``word3`` in memory."""
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self._inner
        word = Signal(2)  # 32-bit beats: word index inside the descriptor
        with m.If(self.cmd.valid & self.cmd.ready):
            m.d.sync += word.eq(0)
        with m.Elif(self.o.valid & self.o.ready):
            m.d.sync += word.eq(word + 1)
        for path, member, value in self.signature.flatten(self):
            inner_value = inner
            for part in path:
                inner_value = (
                    inner_value[part] if isinstance(part, int) else getattr(inner_value, part)
                )
            if path == ("o", "payload"):
                # ``data`` is the payload's first field.
                data = inner_value.as_value()[:32]
                shown = Mux(word == 3, self.rewrite(data), data)[:32]
                m.d.comb += value.as_value().eq(Cat(shown, inner_value.as_value()[32:]))
            elif member.flow == wiring.Out:
                m.d.comb += value.eq(inner_value)
            else:
                m.d.comb += inner_value.eq(value)
        return m


def _word3_field(name):
    """``(start, stop)``: the bits of the descriptor field ``name`` inside word 3."""
    field = Descriptor.as_shape()[name]
    return field.offset - 96, field.offset - 96 + Shape.cast(field.shape).width


class _ReaderSeesOwn(_ReaderWithRewrittenWord3):
    """OWN always set: the channel behind it no longer sees which descriptors it owns."""

    def rewrite(self, word3):
        own, _ = _word3_field("own")
        return word3 | (1 << own)


class _ReaderSeesZeroLengthUnowned(_ReaderWithRewrittenWord3):
    """A descriptor of length 0 shows without OWN: the channel behind it stops there as at
    the ring's end, silently, instead of halting with an error."""

    def rewrite(self, word3):
        start, stop = _word3_field("length")
        own, _ = _word3_field("own")
        unowned = Cat(word3[:own], C(0, 1), word3[own + 1 :])
        return Mux(word3[start:stop] == 0, unowned, word3)


class RxChannelIgnoresOwn(RxDmaChannel):
    """The RX channel uses descriptors without OWN (it never sees OWN clear)."""

    def elaborate(self, platform):
        with _patched(channel, "AxiBurstReader", _ReaderSeesOwn):
            return super().elaborate(platform)


class _WriterWithRewrittenCommands(wiring.Component):
    """An AxiBurstWriter that serves each command as :meth:`rewrite` changes it."""

    def __init__(self, data_width, addr_width, *args, **kwargs):
        self._inner = AxiBurstWriter(data_width, addr_width, *args, **kwargs)
        self._beat_bytes = data_width // 8
        super().__init__(wiring.Signature(dict(self._inner.signature.members)))

    def rewrite(self, addr, length):
        """The ``(addr, length)`` the inner writer serves for a command's."""
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        m.submodules.inner = inner = self._inner
        for path, member, value in self.signature.flatten(self):
            inner_value = inner
            for part in path:
                inner_value = (
                    inner_value[part] if isinstance(part, int) else getattr(inner_value, part)
                )
            if path == ("cmd", "payload"):
                addr, length = self.rewrite(self.cmd.p.addr, self.cmd.p.length)
                m.d.comb += [inner.cmd.p.addr.eq(addr), inner.cmd.p.length.eq(length)]
            elif member.flow == wiring.Out:
                m.d.comb += value.eq(inner_value)
            else:
                m.d.comb += inner_value.eq(value)
        return m


class _WriterOneBeatLong(_WriterWithRewrittenCommands):
    """Writes one beat (4 bytes) more than each command asks: the length off by one beat.
    The extra beat carries the next word the channel staged."""

    def rewrite(self, addr, length):
        return addr, length + self._beat_bytes


#: A write-back without a timestamp: words 1..3 of the descriptor.
WRITEBACK_BYTES = DESCRIPTOR_BYTES - 4 * WRITEBACK_FIRST_WORD


class _WriterWritesBackPreviousEntry(_WriterWithRewrittenCommands):
    """Serves every command of a write-back's size (12 bytes, words 1..3) one ring entry
    (16 bytes) back: the write-back lands in the descriptor before (an index off by one)."""

    def rewrite(self, addr, length):
        return Mux(length == WRITEBACK_BYTES, addr - DESCRIPTOR_BYTES, addr), length


class RxChannelWritesPastBuffer(RxDmaChannel):
    """The RX channel's writes run one beat past what it staged: a buffer written past its
    end (and each write-back one word into the next ring entry)."""

    def elaborate(self, platform):
        with _patched(channel, "AxiBurstWriter", _WriterOneBeatLong):
            return super().elaborate(platform)


class RxChannelWritesBackPreviousEntry(RxDmaChannel):
    """The RX channel writes each buffer's write-back into the ring entry before it: one
    already handed back, or outside the ring."""

    def elaborate(self, platform):
        with _patched(channel, "AxiBurstWriter", _WriterWritesBackPreviousEntry):
            return super().elaborate(platform)


class TxChannelWritesBackPreviousEntry(TxDmaChannel):
    """The TX channel writes each descriptor's write-back into the ring entry before it."""

    def elaborate(self, platform):
        with _patched(channel, "AxiBurstWriter", _WriterWritesBackPreviousEntry):
            return super().elaborate(platform)


class TxChannelIgnoresOwn(TxDmaChannel):
    """The TX channel reads fragments of descriptors without OWN."""

    def elaborate(self, platform):
        with _patched(channel, "AxiBurstReader", _ReaderSeesOwn):
            return super().elaborate(platform)


class _ResetOverBeforeItsWrite:
    """Mixin of a channel whose STATUS.resetting reads 1 only while a read of the channel is
    still on the bus: the wind-down forgets the write in flight, so the driver sees the
    reset over and re-posts while a burst issued before the reset (buffer data, or a
    write-back) is still to land. The channel's own wind-down is unchanged."""

    def add_reset(self, m, core, quiet, **options):
        self._reset_hold, clear = super().add_reset(m, core, quiet, **options)
        return self._reset_hold, clear

    def add_movers(self, m):
        self._movers = super().add_movers(m)
        return self._movers

    def elaborate(self, platform):
        m = super().elaborate(platform)
        reader, _writer = self._movers
        m.d.comb += self.regs.status.resetting.eq(self._reset_hold & ~reader.cmd.ready)
        return m


class RxChannelResetForgetsWrite(_ResetOverBeforeItsWrite, RxDmaChannel):
    """The RX channel reports its reset over while a buffer write or write-back issued
    before it is still on the bus."""


class TxChannelResetForgetsWrite(_ResetOverBeforeItsWrite, TxDmaChannel):
    """The TX channel reports its reset over while a write-back issued before it is still
    on the bus."""


class RxChannelAcceptsSmallBuffers(RxDmaChannel):
    """The RX channel takes buffers of any length: its halt on one below 64 bytes is gone."""

    def elaborate(self, platform):
        with _patched(rx_channel, "MIN_RX_BUFFER_BYTES", 0):
            return super().elaborate(platform)


class TxChannelStallsOnZeroLength(TxDmaChannel):
    """The TX channel stops at a zero-length descriptor as at an empty ring: no halt, no
    error for the driver."""

    def elaborate(self, platform):
        with _patched(channel, "AxiBurstReader", _ReaderSeesZeroLengthUnowned):
            return super().elaborate(platform)


#: (proof name, mutant, what it breaks, the property file whose assertion must fail)
MUTANTS = [
    ("axi4_read_master", ReaderDropsValid, "ARVALID dropped before ARREADY", "axi4_properties.py"),
    (
        "axi4_write_master",
        WriterWithoutPageSplit,
        "burst across a 4 KiB boundary",
        "axi4_properties.py",
    ),
    (
        "axi4_write_strobes",
        WriterStrobesEveryLane,
        "strobes on bytes outside the buffer",
        "proofs.py",
    ),
    (
        "axi4_read_arbiter",
        ReadArbiterShowsEveryR,
        "an R beat routed to a master it does not belong to",
        "arbiter_proofs.py",
    ),
    (
        "axi4_write_arbiter",
        WriteArbiterSendsMaster0Data,
        "a W beat of one master written into another's burst",
        "arbiter_proofs.py",
    ),
    (
        "axi_lite_csr_slave",
        CsrBankOkayEverywhere,
        "OKAY for an undefined offset",
        "axi_lite_properties.py",
    ),
    ("irq_w1c", CsrBankClearsAllStatus, "a write clears IRQ_STATUS bits not written", "proofs.py"),
    (
        "irq_rate_limit",
        IrqIntervalOneUsShort,
        "an interrupt interval one µs short",
        "irq_proofs.py",
    ),
    (
        "fifo_gray_crossing",
        FifoWithBinaryPointers,
        "binary pointers across the clocks",
        "proofs.py",
    ),
    (
        "rx_fifo_crossing",
        RxFifoWithBinaryCounters,
        "binary counters across the RX FIFO's clocks",
        "crossing_proofs.py",
    ),
    (
        "rx_fifo_crossing",
        RxFifoCountsMissingRoom,
        "room counted that the RX FIFO's memory does not have",
        "crossing_proofs.py",
    ),
    (
        "rx_ownership",
        RxChannelIgnoresOwn,
        "a descriptor without OWN used",
        "ownership_properties.py",
    ),
    (
        "rx_buffer_ends",
        RxChannelWritesPastBuffer,
        "a buffer written one beat past its end",
        "ownership_properties.py",
    ),
    (
        "rx_multi_buffer",
        RxChannelWritesBackPreviousEntry,
        "a write-back written into the ring entry before",
        "ownership_properties.py",
    ),
    (
        "rx_ownership",
        RxChannelResetForgetsWrite,
        "a buffer write issued before a reset lands after the driver saw the reset over",
        "ownership_properties.py",
    ),
    (
        "rx_reset_winddown",
        RxChannelResetForgetsWrite,
        "a reset over while a write of the channel is still on the bus",
        "channel_proofs.py",
    ),
    (
        "rx_halts",
        RxChannelAcceptsSmallBuffers,
        "a buffer below 64 bytes used, no halt",
        "channel_proofs.py",
    ),
    (
        "tx_ownership",
        TxChannelIgnoresOwn,
        "a fragment of a descriptor without OWN read",
        "ownership_properties.py",
    ),
    (
        "tx_reset_winddown",
        TxChannelResetForgetsWrite,
        "a reset over while a write-back of the channel is still on the bus",
        "channel_proofs.py",
    ),
    (
        "tx_ownership_induction",
        TxChannelIgnoresOwn,
        "a fragment of a descriptor without OWN read",
        "ownership_properties.py",
    ),
    (
        "tx_ownership_induction",
        TxChannelWritesBackPreviousEntry,
        "a write-back written into the ring entry before",
        "ownership_properties.py",
    ),
    (
        "tx_ownership_induction",
        TxChannelResetForgetsWrite,
        "a reset over while a write-back of the channel is still on the bus",
        "channel_proofs.py",
    ),
    (
        "rx_ownership_induction",
        RxChannelWritesBackPreviousEntry,
        "a write-back written into the ring entry before",
        "rx_induction.py",
    ),
    (
        "rx_ownership_induction",
        RxChannelWritesPastBuffer,
        "a write handed to the writer one beat longer than its command",
        "rx_induction.py",
    ),
    (
        "rx_ownership_induction",
        RxChannelResetForgetsWrite,
        "a reset over while a write of the channel is still on the bus",
        "channel_proofs.py",
    ),
    (
        "tx_halts",
        TxChannelStallsOnZeroLength,
        "a zero-length descriptor taken as the ring's end: no halt",
        "channel_proofs.py",
    ),
]
